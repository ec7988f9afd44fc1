"""Names of a model's columns: read from a names (vocabulary) file, or given to hashed slots.

A names file holds one name per line (plain, gzip, bzip2 or xz; UTF-8). For svmlight data,
line k names the k-th feature: index k of a one-based file, index k - 1 of a zero-based one,
that is column k - 1 of the model either way (the index base the model records). For Vowpal
Wabbit data, whose features are hashed into ``2**b`` columns, each line is a feature as VW
writes it in ``--invert_hash`` output: ``name`` for the default namespace, ``ns^name`` for
namespace ``ns``; it names the slot the feature hashes to (:func:`~l1scale.data.hash_feature`).
Slots no line hashes to have the empty name ``""``; a slot several names hash to (a
collision: they share one weight) is named by all of them joined with ``|``, in the order of
the file (``|`` cannot occur in a VW feature name).
"""

from __future__ import annotations

import os

import numpy as np

from .data.svmlight import open_source
from .data.vw import hash_features

__all__ = ["COLLISION_SEPARATOR", "hashed_slot_names", "read_feature_names"]

#: Joins the names of the features that hash to one slot.
COLLISION_SEPARATOR = "|"


def read_feature_names(path) -> list[str]:
    """The names in ``path``, one per line (compressed files are detected by their magic bytes).

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    list of str
        In the order of the file; a trailing newline and a carriage return are stripped.

    Raises
    ------
    ValueError
        An empty file, an empty line, a duplicated name or bytes that are not UTF-8; the
        message names the file and the line.
    """
    path = os.fspath(path)
    with open_source(path) as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: feature names must be UTF-8 text") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    names = [line.removesuffix("\r") for line in lines]
    if not names:
        raise ValueError(f"{path}: no feature names (an empty file)")
    seen = {}
    for k, name in enumerate(names, start=1):
        if not name.strip():
            raise ValueError(f"{path}:{k}: empty feature name (one name per line)")
        if name in seen:
            raise ValueError(f"{path}:{k}: feature name {name!r} repeats line {seen[name]}")
        seen[name] = k
    return names


def hashed_slot_names(names, hash_bits: int) -> list[str]:
    """Names of the ``2**hash_bits`` slots of Vowpal Wabbit data hashed as ``load_vw`` does.

    Parameters
    ----------
    names : sequence of str
        Features as ``name`` (default namespace) or ``ns^name``.
    hash_bits : int

    Returns
    -------
    list of str of length ``2**hash_bits``
        ``""`` for a slot no name hashes to; the names of colliding features joined with
        :data:`COLLISION_SEPARATOR`.
    """
    by_namespace: dict = {}
    for position, entry in enumerate(names):
        namespace, caret, name = entry.partition("^")
        if not caret:
            namespace, name = None, entry
        by_namespace.setdefault(namespace, []).append((position, name))
    slot_of = np.empty(len(names), dtype=np.int64)
    for namespace, entries in by_namespace.items():
        hashed = hash_features([[name] for _, name in entries], hash_bits=hash_bits, namespace=namespace)
        slot_of[[position for position, _ in entries]] = hashed.indices
    slots = [""] * (1 << hash_bits)
    for entry, slot in zip(names, slot_of.tolist()):
        slots[slot] = entry if not slots[slot] else slots[slot] + COLLISION_SEPARATOR + entry
    return slots
