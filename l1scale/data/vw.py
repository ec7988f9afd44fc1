"""Feature hashing of named features, and Vowpal Wabbit's text format.

Hashing
-------
A feature ``name`` of namespace ``ns`` goes to column ``hash(name, seed=hash(ns)) mod 2**b``
(``b = hash_bits``, 1 to 31), where ``hash`` is one of Vowpal Wabbit's two hashers:

* ``"strings"`` (the default, as VW's ``--hash strings``): a name made only of the digits
  0-9 hashes to its integer value plus the seed (so ``|f 12`` is column
  ``(12 + hash("f")) mod 2**b``); any other name to MurmurHash3 x86_32 of its UTF-8 bytes
  with the seed. Bytes up to 0x20 at either end of a name are ignored, as in VW.
* ``"all"`` (VW's ``--hash all``): MurmurHash3 x86_32 of every name.

The namespace's own hash is ``hash(ns, seed=hash_seed)``; the default namespace (a ``|``
followed by a space, or ``namespace=None``) has hash 0, or ``murmur3("", hash_seed)``
when ``hash_seed`` is not 0. MurmurHash3 here is ``sklearn.utils.murmurhash3_32(key,
seed, positive=True)``, compiled with Numba for the parser's hot loop.

These are exactly Vowpal Wabbit's (9.x) feature indices modulo ``2**b`` for
``-b b [--hash all] [--hash_seed s]``, for named and anonymous (``:value``) features:
a model's columns can be matched to VW's weights. What VW adds and we do not: the
constant feature (our estimators fit the intercept), and, in VW's weight array, the
stride of its reductions (we are a plain linear model). Collisions are summed (as
scikit-learn's ``FeatureHasher``; there is no alternating sign, as in VW), and entries
that sum to zero are dropped.

Vowpal Wabbit text
------------------
One example per line::

    label [importance] [tag]|namespace[:scale] name[:value] name ... |namespace2 ...

* ``label``: any finite number (-1/1 or 0/1 for classification, the estimators map
  labels). ``importance``: a non-negative number, returned as ``sample_weight``
  (``None`` for a chunk where no line has one; 1.0 for the lines without one).
* ``tag``: the last word before the first ``|`` when it touches the ``|`` (or ends the
  line when there is no ``|``), or any last word starting with ``'``; it is ignored.
  As in VW, ``1|f a`` therefore has a tag ``1`` and no label, which is an error here.
* ``|name`` starts a namespace, ``|`` followed by a space the default namespace;
  ``|name:2.0`` multiplies the values of its features by 2.0.
* ``name:value`` is a feature with that value, ``name`` alone has value 1, ``:value``
  is VW's anonymous feature (the k-th one of a namespace takes column
  ``(hash(ns) + k) mod 2**b``). Zero values are dropped; repeated features are summed.

Every malformed line raises :class:`~l1scale.exceptions.DataFormatError` naming the file
and the 1-based line: a missing or non-numeric label, a negative or non-numeric
importance, a third label word (VW's initial prediction, not supported), a value after
``:`` that is not a number (VW 9 would hash ``name:word`` as a categorical feature; here
it is an error), NaN or infinite numbers, ``|:`` without a namespace name, an empty file.
Blank (whitespace-only) lines are skipped and counted. Numbers are converted exactly as
Python's ``float`` (VW rounds them to float32).

Files may be plain, gzip, bzip2 or xz (detected from the magic bytes, as for svmlight) and
are read ``chunk_bytes`` of text at a time by Numba kernels (:mod:`._vw_parse`).
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..exceptions import DataFormatError
from . import _vw_parse as _k
from . import svmlight as _svm
from ._svmlight_write import as_csr64, atomic_file, format_rows, make_csr
from .chunk_cache import CachedFileSource
from .chunks import Chunk

__all__ = ["dump_vw", "hash_feature", "hash_features", "iter_vw_chunks", "load_vw"]

HASHERS = ("strings", "all")

_MESSAGES = {
    _k.ERR_NO_LABEL: "no label (a last word touching '|' or the end of the line is a tag, as in Vowpal Wabbit)",
    _k.ERR_BAD_LABEL: "label is not a number",
    _k.ERR_NONFINITE_LABEL: "label is NaN or infinite",
    _k.ERR_BAD_WEIGHT: "importance weight is not a number",
    _k.ERR_NEGATIVE_WEIGHT: "importance weight is negative, NaN or infinite",
    _k.ERR_INITIAL: "a third word before '|' (Vowpal Wabbit's initial prediction) is not supported",
    _k.ERR_LABEL_WORDS: "more than 'label importance tag' before the first '|'",
    _k.ERR_NS_NAME: "namespace name expected after '|', got ':'",
    _k.ERR_BAD_SCALE: "namespace scale after ':' is not a number",
    _k.ERR_NONFINITE_SCALE: "namespace scale is NaN or infinite",
    _k.ERR_SLOW_SCALE: "namespace scale with more than 19 significant digits or subnormal is not supported",
    _k.ERR_BAD_VALUE: "value of feature {name!r} after ':' is not a number",
    _k.ERR_NONFINITE_VALUE: "value of feature {name!r} (times its namespace scale) is NaN or infinite",
}


# ---------------------------------------------------------------------- validation


def _check_hash_bits(hash_bits) -> int:
    if isinstance(hash_bits, bool) or not isinstance(hash_bits, numbers.Integral) or not 1 <= hash_bits <= 31:
        raise ValueError(f"hash_bits must be an integer from 1 to 31, got {hash_bits!r}")
    return int(hash_bits)


def _check_hasher(hash) -> bool:
    """Validate ``hash``; returns whether it is "all"."""
    if hash not in HASHERS:
        raise ValueError(f"hash must be one of {HASHERS}, got {hash!r}")
    return hash == "all"


def _check_seed(hash_seed) -> np.uint64:
    if isinstance(hash_seed, bool) or not isinstance(hash_seed, numbers.Integral) or not 0 <= hash_seed < 2**32:
        raise ValueError(f"hash_seed must be an integer from 0 to 2**32 - 1, got {hash_seed!r}")
    return np.uint64(hash_seed)


def _encode(name, what="feature name") -> bytes:
    if isinstance(name, str):
        return name.encode("utf-8")
    if isinstance(name, (bytes, bytearray)):
        return bytes(name)
    raise TypeError(f"{what}s must be str or bytes, got {type(name).__name__}: {name!r}")


def _default_hash(hash_seed: np.uint64) -> np.uint64:
    """Hash of the default namespace (VW: 0, or murmur3 of "" when a seed is given)."""
    if hash_seed == 0:
        return np.uint64(0)
    return np.uint64(_k.murmur3_32(np.empty(0, dtype=np.uint8), 0, 0, hash_seed))


def _namespace_hash(namespace, hash_all: bool, hash_seed: np.uint64) -> np.uint64:
    if namespace is None or namespace == "" or namespace == b"":
        return _default_hash(hash_seed)
    key = np.frombuffer(_encode(namespace, "namespace"), dtype=np.uint8)
    return np.uint64(_k.hash_name(key, 0, key.size, hash_seed, hash_all))


# ------------------------------------------------------------------- Python hashing


def hash_feature(name, namespace=None, *, hash_bits: int = 18, hash: str = "strings", hash_seed: int = 0) -> int:
    """Column of the feature ``name`` of ``namespace`` in a space of ``2**hash_bits``.

    Parameters
    ----------
    name : str or bytes
        Feature name (non-empty; str is hashed as UTF-8).
    namespace : str, bytes or None
        Namespace name; None (or "") is the default namespace (``| name`` in a VW file).
    hash_bits : int, 1 to 31
    hash : "strings" or "all"
        Vowpal Wabbit's hasher (see the module docstring).
    hash_seed : int
        VW's ``--hash_seed``.

    Returns
    -------
    int
        The column, equal to VW's feature index modulo ``2**hash_bits``.
    """
    return int(_hash_many([name], namespace, hash_bits, hash, hash_seed)[0])


def _hash_many(names, namespace, hash_bits, hash, hash_seed) -> np.ndarray:
    hash_bits, hash_all, seed = _check_hash_bits(hash_bits), _check_hasher(hash), _check_seed(hash_seed)
    encoded = [_encode(n) for n in names]
    if any(len(e) == 0 for e in encoded):
        raise ValueError("empty feature name")
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    buf = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    seeds = np.full(len(encoded), _namespace_hash(namespace, hash_all, seed), dtype=np.uint64)
    out = np.empty(len(encoded), dtype=np.int64)
    _k.hash_names(buf, offsets, seeds, hash_all, np.uint64((1 << hash_bits) - 1), out)
    return out


def hash_features(
    names, values=None, hash_bits: int = 18, *, namespace=None, hash: str = "strings", hash_seed: int = 0
) -> sp.csr_matrix:
    """Hash rows of named features into a CSR matrix of width ``2**hash_bits``.

    Parameters
    ----------
    names : sequence of rows
        A row is a sequence of feature names (str or bytes), or a mapping
        ``{name: value}`` (then ``values`` must be None).
    values : sequence of rows of numbers, optional
        ``values[i][j]`` is the value of ``names[i][j]``; default 1 for every name.
    hash_bits, namespace, hash, hash_seed
        As in :func:`hash_feature`: each column equals ``hash_feature(name, namespace, ...)``,
        the column the same feature gets in a VW file read by :func:`load_vw`.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (len(names), 2**hash_bits), float64 values, int64 indices
        Sorted indices; values of names colliding in one column (or repeated) are summed,
        and zero sums and zero values are dropped, as :func:`load_vw` does.
    """
    flat_names, flat_values, counts = [], [], []
    for i, row in enumerate(names):
        if isinstance(row, (str, bytes)):
            raise TypeError(f"row {i} of names is a single {type(row).__name__}; give a sequence of names per row")
        if hasattr(row, "items"):
            if values is not None:
                raise TypeError("values must be None when rows are mappings {name: value}")
            keys, vals = list(row.keys()), list(row.values())
        else:
            keys = list(row)
            vals = [1.0] * len(keys) if values is None else list(values[i])
            if len(vals) != len(keys):
                raise ValueError(f"row {i} has {len(keys)} names and {len(vals)} values")
        flat_names += keys
        flat_values += vals
        counts.append(len(keys))
    if values is not None and len(values) != len(counts):
        raise ValueError(f"names has {len(counts)} rows, values has {len(values)}")
    columns = _hash_many(flat_names, namespace, hash_bits, hash, hash_seed)
    data = np.asarray(flat_values, dtype=np.float64).reshape(-1)
    if not np.isfinite(data).all():
        raise ValueError("values contain NaN or infinite numbers")
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    nnz = _k.finish_rows(data, columns, indptr, np.ones(len(counts), dtype=np.bool_))
    return make_csr(data[:nnz], columns[:nnz], indptr, (len(counts), 1 << hash_bits))


# ------------------------------------------------------------------------ VW reader


class _Options(NamedTuple):
    hash_bits: int
    hash_all: bool
    hash_seed: np.uint64
    default_hash: np.uint64


def _options(hash_bits, hash, hash_seed) -> _Options:
    seed = _check_seed(hash_seed)
    return _Options(_check_hash_bits(hash_bits), _check_hasher(hash), seed, _default_hash(seed))


class _Block(NamedTuple):
    """Parsed rows: CSR arrays (indptr starts at 0), labels, weights or None, line numbers."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    labels: np.ndarray
    weights: np.ndarray | None
    line_nos: np.ndarray


def _parse_text(buf, first_line: int, opt: _Options, name: str) -> tuple[_Block, int]:
    """Parse one buffer of whole lines; returns (block, last line number)."""
    n_lines, n_spaces = _k.count_bytes(buf)
    data = np.empty(n_spaces, dtype=np.float64)
    indices = np.empty(n_spaces, dtype=np.int64)
    indptr = np.empty(n_lines + 2, dtype=np.int64)
    labels, weights = np.empty(n_lines + 1), np.empty(n_lines + 1)
    line_nos = np.empty(n_lines + 1, dtype=np.int64)
    slow, st = np.empty((256, 5), dtype=np.int64), np.zeros(_k.N_SLOTS, dtype=np.int64)
    while True:
        n_rows, line = _k.parse_block(
            buf,
            first_line,
            opt.hash_bits,
            opt.hash_all,
            opt.hash_seed,
            opt.default_hash,
            data,
            indices,
            indptr,
            labels,
            weights,
            line_nos,
            slow,
            st,
        )
        if st[_k.S_ERR] != _k.ERR_SLOW_FULL:
            break
        slow = np.empty((8 * slow.shape[0], 5), dtype=np.int64)  # rare: parse the block again
    n_rows, line, slow = int(n_rows), int(line), slow[: st[_k.S_NSLOW]]
    # Slow numbers all precede a kernel error: convert them first so the first bad line is reported.
    _convert_slow(buf, slow, data, labels, weights, line_nos, n_rows, line, name)
    err = int(st[_k.S_ERR])
    if err != _k.ERR_NONE:
        feature = bytes(buf[st[_k.S_ERR_A] : st[_k.S_ERR_B]]).decode("utf-8", "replace")
        raise DataFormatError(_MESSAGES[err].format(name=feature), path=name, line=line)
    indptr = indptr[: n_rows + 1]
    nnz = int(st[_k.S_NNZ])
    if slow.shape[0] and (slow[:, 0] == _k.SLOW_VALUE).any():
        fix = np.zeros(n_rows, dtype=np.bool_)
        fix[slow[slow[:, 0] == _k.SLOW_VALUE, 1]] = True
        nnz = int(_k.finish_rows(data, indices, indptr, fix))
    block = _Block(
        data[:nnz],
        indices[:nnz],
        indptr,
        labels[:n_rows],
        weights[:n_rows] if st[_k.S_WEIGHTED] else None,
        line_nos[:n_rows],
    )
    return block, line


def _convert_slow(buf, slow, data, labels, weights, line_nos, n_rows, last_line, name) -> None:
    """Exact conversion of the rare numbers the kernel left over: one Python ``float`` each."""
    for kind, row, target, start, end in slow.tolist():
        value = float(bytes(buf[start:end]))
        line = int(line_nos[row]) if row < n_rows else last_line
        if kind == _k.SLOW_LABEL:
            if not math.isfinite(value):
                raise DataFormatError(_MESSAGES[_k.ERR_NONFINITE_LABEL], path=name, line=line)
            labels[target] = value
        elif kind == _k.SLOW_WEIGHT:
            if not (math.isfinite(value) and value >= 0):
                raise DataFormatError(_MESSAGES[_k.ERR_NEGATIVE_WEIGHT], path=name, line=line)
            weights[target] = value
        else:
            value *= data[target]  # the kernel stored the namespace scale there
            if not math.isfinite(value):
                raise DataFormatError(
                    _MESSAGES[_k.ERR_NONFINITE_VALUE].format(name=_name_before(buf, start - 1)), path=name, line=line
                )
            data[target] = value


def _name_before(buf, colon: int) -> str:
    """The feature name ending at ``buf[colon]`` (a ':')."""
    start = colon
    while start > 0 and buf[start - 1] not in b" \t\r\v\f\n|":
        start -= 1
    return bytes(buf[start:colon]).decode("utf-8", "replace")


def _iter_blocks(source, opt: _Options, chunk_bytes: int) -> Iterator[_Block]:
    """Parse a file block by block (blocks of blank lines only are skipped); an empty file raises."""
    name = _svm.source_name(source)
    line, rows = 0, 0
    with _svm.open_source(source) as f:
        for buf in _svm._iter_text(f, chunk_bytes):
            block, line = _parse_text(buf, line, opt, name)
            if block.labels.size:
                rows += block.labels.size
                yield block
    if rows == 0:
        raise DataFormatError("no example in the file" + (" (it is empty)" if line == 0 else ""), path=name)


def _to_chunk(block: _Block, width: int, dtype) -> Chunk:
    X = make_csr(block.data.astype(dtype, copy=False), block.indices, block.indptr, (block.labels.size, width))
    return Chunk(X, block.labels, block.weights)


def iter_vw_chunks(
    path,
    *,
    hash_bits: int = 18,
    hash: str = "strings",
    hash_seed: int = 0,
    dtype=np.float64,
    chunk_bytes: int = 16 << 20,
) -> Iterator[Chunk]:
    """Stream a Vowpal Wabbit text file as hashed row chunks in bounded memory.

    Parameters
    ----------
    path : str, path-like or binary file object
        Plain, .gz, .bz2 or .xz text (detected from the content).
    hash_bits : int, 1 to 31
        X has ``2**hash_bits`` columns.
    hash : "strings" or "all"; hash_seed : int
        Vowpal Wabbit's hasher and ``--hash_seed`` (see the module docstring).
    dtype : float32 or float64
        dtype of X's values (labels and weights are float64).
    chunk_bytes : int
        Amount of text read and parsed at a time; it sets the chunk sizes.

    Yields
    ------
    Chunk
        ``X`` CSR (int64 indices, sorted, duplicates summed), ``y`` float64 labels,
        ``sample_weight``: the importance weights, or None when no line of the chunk
        has one. Never empty.
    """
    opt, dtype = _options(hash_bits, hash, hash_seed), _svm._check_dtype(dtype)
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}")
    return (_to_chunk(b, 1 << opt.hash_bits, dtype) for b in _iter_blocks(path, opt, chunk_bytes))


def load_vw(
    path,
    *,
    hash_bits: int = 18,
    hash: str = "strings",
    hash_seed: int = 0,
    dtype=np.float64,
    return_line_numbers: bool = False,
):
    """Load a whole Vowpal Wabbit text file (see :func:`iter_vw_chunks`).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, 2**hash_bits), int64 indices and indptr
    y : ndarray of float64, shape (n_samples,)
    sample_weight : ndarray of float64, shape (n_samples,), or None when no line has an importance
    line_numbers : ndarray of int64, shape (n_samples,)
        Only with ``return_line_numbers=True``.
    """
    opt, dtype = _options(hash_bits, hash, hash_seed), _svm._check_dtype(dtype)
    blocks = list(_iter_blocks(path, opt, 16 << 20))
    weighted = any(b.weights is not None for b in blocks)
    shifts = np.cumsum([0] + [b.indptr[-1] for b in blocks[:-1]])
    indptr = np.concatenate([np.zeros(1, dtype=np.int64)] + [b.indptr[1:] + s for b, s in zip(blocks, shifts)])
    data = np.concatenate([b.data for b in blocks]).astype(dtype, copy=False)
    X = make_csr(data, np.concatenate([b.indices for b in blocks]), indptr, (indptr.size - 1, 1 << opt.hash_bits))
    y = np.concatenate([b.labels for b in blocks])
    w = None
    if weighted:
        w = np.concatenate([np.ones(b.labels.size) if b.weights is None else b.weights for b in blocks])
    if return_line_numbers:
        return X, y, w, np.concatenate([b.line_nos for b in blocks])
    return X, y, w


# ------------------------------------------------------------------------ VW writer


def _number_text(v: np.ndarray) -> np.ndarray:
    """Shortest round-trip text of each float64, integral values without '.0'."""
    txt = v.astype("S32")
    integral = (v == np.round(v)) & (np.abs(v) < 2**53)
    if integral.any():
        txt[integral] = v[integral].astype(np.int64).astype("S32")
    return txt


def dump_vw(X, y, path, *, namespace: str = "f", sample_weight=None) -> None:
    """Write X and y as Vowpal Wabbit text, atomically, column ``j`` as feature ``j``.

    Each row becomes ``label [importance] |namespace j:value ...`` (stored entries of a
    sparse X, explicit zeros included; nonzeros of a dense X). Reading the file back with
    :func:`load_vw` gives ``X @ H`` where ``H[j, hash_feature(str(j), namespace)] = 1``;
    with ``hash="strings"`` a digit name ``j`` hashes to ``j + hash(namespace)``, so for
    ``2**hash_bits`` >= the width there are no collisions and the columns are only rotated.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    path : str or path-like
        ``.gz``, ``.bz2`` and ``.xz`` names are compressed.
    namespace : str
        Namespace of the features; "" writes them in the default namespace (``| j:v``).
    sample_weight : array-like of shape (n_samples,), optional
        Written as the importance weight of each line where it is not 1.
    """
    X = as_csr64(X)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must be 1-D with {X.shape[0]} entries, got shape {y.shape}")
    if not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinite values")
    ns = _encode(namespace, "namespace")
    if any(c in ns for c in b" \t\r\n\v\f:|"):
        raise ValueError(f"namespace {namespace!r} contains whitespace, ':' or '|'")
    head = _number_text(y)
    if sample_weight is not None:
        w = np.asarray(sample_weight, dtype=np.float64)
        if w.shape != y.shape or not (np.isfinite(w).all() and (w >= 0).all()):
            raise ValueError(f"sample_weight must hold {y.shape[0]} finite non-negative numbers")
        w_txt = np.char.add(b" ", _number_text(w))
        w_txt[w == 1.0] = b""  # the default importance is not written
        head = np.char.add(head, w_txt)
    # The row formatter strips a final ".0" from this text: a space protects such a namespace.
    head = np.char.add(head, b" |" + ns + (b" " if ns.endswith(b".0") or not ns else b""))
    width = head.dtype.itemsize + 1
    head = head.astype(f"S{width}").view(np.uint8).reshape(-1, width)
    indptr, a, n = X.indptr, 0, X.shape[0]
    with atomic_file(path) as f:
        while a < n:
            b = min(n, a + (1 << 16), max(a + 1, int(np.searchsorted(indptr, indptr[a] + (1 << 20), "right")) - 1))
            values = X.data[indptr[a] : indptr[b]].astype("S32").view(np.uint8).reshape(-1, 32)
            out = np.empty((b - a) * (width + 1) + values.shape[0] * (32 + 22), dtype=np.uint8)
            size = format_rows(head[a:b], values, X.indices, indptr, a, b, 0, out)
            f.write(out[:size].data)
            a = b


# ----------------------------------------------------------------- Stream source


class VWSource(CachedFileSource):
    """Source of :meth:`Stream.from_vw`: a VW text file, hashed, with an optional chunk cache."""

    def __init__(self, path, hash_bits, hash, hash_seed, dtype, chunk_bytes, cache):
        self.opt, self.dtype = _options(hash_bits, hash, hash_seed), _svm._check_dtype(dtype)
        if chunk_bytes < 1:
            raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}")
        self.path = os.fspath(path)
        if not os.path.isfile(self.path):
            raise FileNotFoundError(2, "no such Vowpal Wabbit file", self.path)
        self.n_features = 1 << self.opt.hash_bits
        self.chunk_bytes = chunk_bytes
        self.requested = {
            "format": "vw",
            "hash_bits": self.opt.hash_bits,
            "hash": hash,
            "hash_seed": int(hash_seed),
            "dtype": self.dtype.name,
        }
        self.cache = None if cache is None else os.fspath(cache)

    def describe(self):
        return f"vw {self.path!r}, hash_bits={self.opt.hash_bits}" + (
            "" if self.cache is None else f", cache={self.cache!r}"
        )

    def _parse(self):
        for block in _iter_blocks(self.path, self.opt, self.chunk_bytes):
            yield _to_chunk(block, self.n_features, self.dtype)
