"""The training data of ``train`` with a streaming solver (mp, rmmp, online, truncated_gradient,
sgd_cumulative, smidas) as a Stream, read in passes."""

from __future__ import annotations

import itertools
import shutil
import tempfile

import numpy as np

from ..data import Chunk, Stream, iter_svmlight_chunks, iter_vw_chunks, write_cache
from ._data import (
    data_format,
    is_stdin,
    stdin_bytes,
    stdin_zero_based,
    too_wide,
    zero_index_hint,
)
from ._params import DEFAULT_HASH_BITS, check_no_layout_flag, zero_based_value


class _WidthKnown(Stream):
    """A Stream that calls ``on_width(n_features)`` once, at the first chunk it yields:
    the moment an svmlight file's width is known (the estimator's label scan), before
    any pass is solved."""

    on_width = None

    def __iter__(self):
        for chunk in super().__iter__():
            if self.on_width is not None:
                hook, self.on_width = self.on_width, None
                hook(self.n_features)
            yield chunk


class _PipeSource:
    """A Stream source over text that can be read once (standard input): the chunks of one
    parse, their width growing with the largest index seen (svmlight without --n-features)
    and final at the end of the pass. ``write_cache`` spools it into a chunk cache."""

    def __init__(self, chunks, n_features, name):
        self._chunks, self.n_features, self._name = chunks, n_features, name
        self._read = False

    def describe(self):
        return self._name

    def chunks(self):
        if self._read:
            raise RuntimeError(f"{self._name} can be read only once")  # write_cache makes one pass
        self._read = True
        width = 0
        for chunk in self._chunks:
            width = max(width, chunk.X.shape[1])
            yield chunk
        if self.n_features is None:
            self.n_features = width


def _stdin_chunks(*, zero_based, n_features, fmt, hash_bits):
    """The chunks of standard input as they are parsed, and their width when known (VW:
    2**hash_bits; svmlight: ``n_features``, else None)."""
    if fmt == "vw":
        bits = DEFAULT_HASH_BITS if hash_bits is None else hash_bits
        return iter_vw_chunks(stdin_bytes(), hash_bits=bits), 1 << bits
    chunks = (
        Chunk(X, y)
        for X, y in iter_svmlight_chunks(stdin_bytes(), n_features=n_features, zero_based=stdin_zero_based(zero_based))
    )
    return chunks, n_features


def spool_stdin(cache, chunks, width, *, zero_based=None, fmt="svmlight"):
    """Standard input's ``chunks`` (:func:`_stdin_chunks`) written into the chunk cache
    ``cache`` (one pass, bounded memory); returns the Stream of the cache, which every pass
    of the fit then reads.

    A fit that makes a label pass (the classes, n and the weights; lam_max for
    --lam-ratio), or more than one pass, reads its data more than once, and a pipe can be
    read only once: such a fit of ``-`` goes through a chunk cache. svmlight text is read
    one-based unless ``zero_based`` (it cannot be pre-scanned); Vowpal Wabbit text
    (``fmt="vw"``) is hashed into 2**``hash_bits`` columns.
    """
    with zero_index_hint("-", stdin_zero_based(zero_based) if fmt != "vw" else True):
        return write_cache(Stream(_PipeSource(chunks, None if fmt == "vw" else width, "<stdin>")), cache)


class StdinCache:
    """Where ``train -`` spools standard input: ``--cache DIR`` (kept), else a temporary
    directory (under $TMPDIR) removed by :meth:`close` (call it in a ``finally``)."""

    def __init__(self, cache):
        self.temporary = cache is None
        self.path = tempfile.mkdtemp(prefix="l1scale-stdin-") if cache is None else cache

    def close(self):
        if self.temporary:
            shutil.rmtree(self.path, ignore_errors=True)


def train_stream(
    path, *, zero_based=None, n_features=None, cache=None, on_width=None, fmt="auto", hash_bits=None, one_pass=False
):
    """The training data as a :class:`~l1scale.data.Stream` (never loaded whole), and the
    classes to declare to the fit (or None: the fit's label pass finds them).

    An svmlight file is read with ``Stream.from_svmlight`` (``cache``: the binary chunk
    cache its first pass writes and later passes read); a cache directory with
    ``Stream.from_cache`` (a narrower one is widened to ``n_features``); a Vowpal Wabbit
    file (``fmt``: as ``--format``) with ``Stream.from_vw``, hashed into 2**``hash_bits``
    columns (default 18), with the same ``cache``.

    ``-`` (standard input): with ``one_pass`` (a one-pass fit that needs no label pass, of
    known width) and two labels among the first chunk's rows, the pipe itself, read once
    as the fit learns, with those two labels as the declared classes (a later row with
    another label is an error naming it); else it is first spooled into the chunk cache
    ``cache`` (:func:`spool_stdin`; required here: a StdinCache's path).

    ``on_width(n_features)`` is called once, when the width is known (the first chunk).
    The fitted estimator's ``stream_scan_`` has the size, nonzeros and labels of the data.
    """
    fmt = data_format(path, fmt)
    if is_stdin(path):
        chunks, width = _stdin_chunks(zero_based=zero_based, n_features=n_features, fmt=fmt, hash_bits=hash_bits)
        with zero_index_hint("-", stdin_zero_based(zero_based) if fmt != "vw" else True):
            first = next(chunks, None)
        if first is None:
            _no_examples()
        chunks = itertools.chain([first], chunks)
        labels = np.unique(first.y)
        if one_pass and width is not None and labels.shape[0] == 2:
            stream = _WidthKnown(_PipeSource(chunks, width, "<stdin>"))
            stream.on_width = on_width
            return stream, labels
        spooled = spool_stdin(cache, chunks, width, zero_based=zero_based, fmt=fmt)
        stream = _WidthKnown.from_cache(cache, n_features=n_features)
        stream.on_width = on_width
        return (stream if spooled.n_samples else _no_examples()), None
    if fmt == "vw":
        stream = _WidthKnown.from_vw(path, DEFAULT_HASH_BITS if hash_bits is None else hash_bits, cache=cache)
    elif fmt == "cache":
        check_no_layout_flag(zero_based, path)
        width = Stream.from_cache(path).n_features
        if n_features is not None and width > n_features:
            raise too_wide(path, width, f"--n-features {n_features}")
        stream = _WidthKnown.from_cache(path, n_features=n_features)
    else:
        stream = _WidthKnown.from_svmlight(
            path, n_features=n_features, zero_based=zero_based_value(zero_based), cache=cache
        )
    stream.on_width = on_width
    return stream, None


def _no_examples():
    import click

    raise click.ClickException("-: no examples on standard input")


def stream_zero_based(stream, path, flag, fmt):
    """The index base the training stream's svmlight text was read with (recorded in the
    model), or None for a cache directory or VW data."""
    from ..data.svmlight import resolve_layout

    if fmt != "svmlight":
        return None
    if is_stdin(path):
        return stdin_zero_based(flag)
    if flag is not None:
        return bool(flag)
    resolved = getattr(getattr(stream, "_source", None), "zero_based", "auto")  # set by the first pass's pre-scan
    if isinstance(resolved, bool):
        return resolved
    # A complete --cache answered the first pass, so the text was never scanned: scan it now
    # (stopping at the first index 0).
    return resolve_layout(path, "auto", n_features=1)[0]
