"""Fast chunked reader and writer of svmlight / libsvm text files.

Format: one example per line, ``label idx:value idx:value ... [# comment]``, with
strictly increasing indices. Also accepted: a ``qid:N`` token right after the
label (skipped, as scikit-learn does), blank lines and comment-only lines (they
still count for line numbers). Plain, gzip, bzip2 and xz files are read
transparently; the compression is detected from the file's magic bytes, so a
compressed file is read whatever its name (and a plain one named ``*.gz`` too).

The text is read ``chunk_bytes`` at a time and parsed by Numba kernels
(:mod:`l1scale.data._svmlight_parse`); values are converted exactly as Python's
``float`` does, so the result equals ``sklearn.datasets.load_svmlight_file``'s
to the bit. Every malformed line raises :class:`~l1scale.exceptions.DataFormatError`
naming the file and the 1-based line; nothing is skipped silently.

``zero_based="auto"`` follows scikit-learn: the file is zero-based when any index
is 0, one-based otherwise. :func:`load_svmlight` decides after reading; the
streaming :func:`iter_svmlight_chunks` must decide before its first chunk, so it
pre-scans the whole file once (a fast scan, but compressed files are decompressed
twice) and learns the width at the same time. Pass ``zero_based`` and
``n_features`` to stream in a single pass.

Parsing is what a streamed pass waits for, so text is parsed in two threads where the
process may use two CPUs (:func:`parse_threads`; ``L1SCALE_PARSE_THREADS`` overrides),
a bounded few blocks ahead of the reader, in order.
"""

from __future__ import annotations

import bz2
import collections
import concurrent.futures
import gzip
import io
import lzma
import math
import numbers
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, NamedTuple

import numpy as np

from ..exceptions import DataFormatError
from . import _svmlight_parse as _k
from ._svmlight_write import SvmlightWriter, make_csr

__all__ = ["dump_svmlight", "iter_svmlight_chunks", "load_svmlight"]

_MAGIC = (
    (b"\x1f\x8b", lambda raw: gzip.GzipFile(fileobj=raw, mode="rb")),
    (b"BZh", lambda raw: bz2.BZ2File(raw, mode="rb")),
    (b"\xfd7zXZ\x00", lambda raw: lzma.LZMAFile(raw, mode="rb")),  # noqa: SIM115 - closed by open_source
)

_MESSAGES = {
    _k.ERR_MISSING_LABEL: "missing label: the line starts with a feature 'idx:value'",
    _k.ERR_BAD_LABEL: "label is not a number",
    _k.ERR_NONFINITE_LABEL: "label is NaN or infinite",
    _k.ERR_NO_COLON: "token without ':' (expected idx:value)",
    _k.ERR_BAD_INDEX: "feature index is not a non-negative integer",
    _k.ERR_NEGATIVE_INDEX: "negative feature index",
    _k.ERR_ZERO_INDEX: "feature index 0 in a file read as one-based (zero_based=False)",
    _k.ERR_DUPLICATE_INDEX: "duplicate feature index {a}",
    _k.ERR_UNSORTED_INDEX: "feature indices not increasing: {a} after {b}",
    _k.ERR_BAD_VALUE: "value of feature {a} is not a number",
    _k.ERR_NONFINITE_VALUE: "value of feature {a} is NaN or infinite",
}


class _Block(NamedTuple):
    """Parsed rows: CSR arrays (indptr starts at 0), labels and 1-based line numbers."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    labels: np.ndarray
    line_nos: np.ndarray


# --------------------------------------------------------------------------- input


class _Prefixed(io.RawIOBase):
    """A non-seekable stream whose first bytes were already read (to sniff the magic)."""

    def __init__(self, head: bytes, raw):
        self._head, self._raw = head, raw

    def readable(self):
        return True

    def readinto(self, b):
        if self._head:
            n = min(len(b), len(self._head))
            b[:n], self._head = self._head[:n], self._head[n:]
            return n
        data = self._raw.read(len(b))
        b[: len(data)] = data
        return len(data)


def source_name(source) -> str:
    if hasattr(source, "read"):
        return str(getattr(source, "name", "<stream>"))
    return os.fspath(source)


@contextmanager
def open_source(source) -> Iterator[IO[bytes]]:
    """Open a path or wrap a binary file object, decompressing by magic bytes."""
    if hasattr(source, "read"):
        raw, owned = source, False
        if isinstance(source, io.TextIOBase):
            raise TypeError(f"{source_name(source)}: open svmlight files in binary mode ('rb')")
    else:
        raw, owned = open(os.fspath(source), "rb"), True  # noqa: SIM115 - closed in the finally below
    try:
        if hasattr(raw, "peek"):
            head = raw.peek(6)[:6]
        elif raw.seekable():
            start = raw.tell()
            head = raw.read(6)
            raw.seek(start)
        else:
            head = raw.read(6)
            raw = io.BufferedReader(_Prefixed(head, raw))
        opener = next((o for magic, o in _MAGIC if head.startswith(magic)), None)
        f = raw if opener is None else opener(raw)
        try:
            yield f
        finally:
            if f is not raw:
                f.close()  # closes the decompressor only, never the caller's object
    finally:
        if owned:
            raw.close()


def _iter_text(f, chunk_bytes: int) -> Iterator[np.ndarray]:
    """Yield uint8 views of whole lines, about ``chunk_bytes`` of text each."""
    pending: list = []  # pieces of the current incomplete line(s)
    while True:
        piece = f.read(chunk_bytes)
        if not piece:
            break
        cut = piece.rfind(b"\n") + 1
        if cut == 0:  # a line longer than chunk_bytes: keep reading
            pending.append(piece)
            continue
        pending.append(memoryview(piece)[:cut])
        block = b"".join(pending)
        pending = [piece[cut:]] if cut < len(piece) else []
        yield np.frombuffer(block, dtype=np.uint8)
    tail = b"".join(pending)
    if tail:
        yield np.frombuffer(tail, dtype=np.uint8)


def _parse_text(buf, first_line: int, strict: bool, name: str) -> tuple[_Block, int, int, int]:
    """Parse one buffer of whole lines; returns (block, last line, min index, max index)."""
    n_lines, n_colons = _k.count_bytes(buf)
    data = np.empty(n_colons, dtype=np.float64)
    indices = np.empty(n_colons, dtype=np.int64)
    indptr = np.empty(n_lines + 2, dtype=np.int64)
    labels = np.empty(n_lines + 1, dtype=np.float64)
    line_nos = np.empty(n_lines + 1, dtype=np.int64)
    slow = np.empty((0, 3), dtype=np.int64)
    n_rows, line, slow, st = _k.parse_block(buf, first_line, strict, data, indices, indptr, labels, line_nos, slow)
    # Slow tokens all precede a kernel error: convert them first so the first bad line is reported.
    block = _Block(data, indices, indptr[: n_rows + 1], labels, line_nos[:n_rows])
    _convert_slow(buf, slow[: st[_k.S_NSLOW]], block, int(line), name)
    if st[_k.S_ERR] != _k.ERR_NONE:
        msg = _MESSAGES[int(st[_k.S_ERR])].format(a=int(st[_k.S_ERR_A]), b=int(st[_k.S_ERR_B]))
        raise DataFormatError(msg, path=name, line=int(line))
    nnz = int(st[_k.S_NNZ])
    block = _Block(data[:nnz], indices[:nnz], indptr[: n_rows + 1], labels[:n_rows], line_nos[:n_rows])
    return block, int(line), int(st[_k.S_MIN]), int(st[_k.S_MAX])


def _convert_slow(buf, slow, block: _Block, last_line: int, name: str) -> None:
    """Exact conversion of the rare tokens the kernel left over (more than 19
    digits, subnormal or overflowing values): one Python ``float`` call each."""
    for target, start, end in slow.tolist():
        value = float(buf[start:end].tobytes())
        if target < 0:
            row = -target - 1
        else:
            row = int(np.searchsorted(block.indptr, target, "right")) - 1
        if not math.isfinite(value):
            what = "label" if target < 0 else f"value of feature {block.indices[target]}"
            line = int(block.line_nos[row]) if row < block.line_nos.size else last_line  # row being parsed
            raise DataFormatError(f"{what} is NaN or infinite", path=name, line=line)
        if target < 0:
            block.labels[row] = value
        else:
            block.data[target] = value


def parse_threads() -> int:
    """Threads that parse svmlight text: ``$L1SCALE_PARSE_THREADS``, else 2 when this process
    may run on two CPUs or more (parsing is what a streamed pass waits for: a learning
    kernel takes a few percent of it), else 1."""
    value = os.environ.get("L1SCALE_PARSE_THREADS")
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise ValueError(f"L1SCALE_PARSE_THREADS must be a positive integer, got {value!r}") from None
    return 2 if len(os.sched_getaffinity(0)) >= 2 else 1


def _iter_blocks(source, chunk_bytes: int, strict: bool) -> Iterator[tuple[_Block, int, int]]:
    """Parse a file block by block, in order: (block with raw indices, min index, max index)."""
    name = source_name(source)
    with open_source(source) as f:
        for block, _, lo, hi in _in_order(
            _iter_text(f, chunk_bytes), lambda buf, line: _parse_text(buf, line, strict, name)
        ):
            yield block, lo, hi


def _in_order(texts, work):
    """``work(buf, first_line)`` of each buffer of whole lines, in order: in
    :func:`parse_threads` threads (the kernels release the GIL), at most ``threads + 1``
    buffers ahead of the consumer (bounded memory). Each buffer's first line number is
    counted before its work starts, so errors name the same line as a sequential parse;
    an error is raised when its buffer's turn comes, after every result before it."""
    threads = parse_threads()
    line = 0
    if threads == 1:
        for buf in texts:
            result = work(buf, line)
            line += int(_k.count_bytes(buf)[0])
            yield result
        return
    pending: collections.deque = collections.deque()
    with concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="l1scale-parse") as pool:
        try:
            for buf in texts:
                pending.append(pool.submit(work, buf, line))
                line += int(_k.count_bytes(buf)[0])
                if len(pending) > threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:  # the consumer stopped early, or an error: start nothing more
            for future in pending:
                future.cancel()


def scan_labels(source, chunk_bytes: int = 16 << 20) -> Iterator[tuple[np.ndarray, int]]:
    """The labels of an svmlight file, block by block, with the number of feature tokens
    of each block, parsing labels only (about 4x faster than a parse; in threads as the
    parse): ``(labels, nnz)``.

    Labels are checked exactly as the parser checks them (a bad, missing or non-finite
    label is a DataFormatError naming the file and line); feature tokens are counted, not
    checked: the passes that parse them report their errors.
    """
    name = source_name(source)
    with open_source(source) as f:
        yield from _in_order(_iter_text(f, chunk_bytes), lambda buf, line: _labels_of(buf, line, name))


def _labels_of(buf, first_line: int, name: str) -> tuple[np.ndarray, int]:
    """(labels, feature tokens) of one buffer of whole lines."""
    n_lines = _k.count_bytes(buf)[0] + 1
    labels = np.empty(n_lines, dtype=np.float64)
    line_nos = np.empty(n_lines, dtype=np.int64)
    st = np.zeros(_k.N_SLOTS, dtype=np.int64)
    n_rows, line, slow = _k.scan_labels(buf, first_line, labels, line_nos, st, np.empty((0, 3), dtype=np.int64))
    for target, start, end in slow[: st[_k.S_NSLOW]].tolist():  # labels of more than 19 digits
        value = float(buf[start:end].tobytes())
        if not math.isfinite(value):
            raise DataFormatError("label is NaN or infinite", path=name, line=int(line_nos[-target - 1]))
        labels[-target - 1] = value
    if st[_k.S_ERR] != _k.ERR_NONE:
        raise DataFormatError(_MESSAGES[int(st[_k.S_ERR])], path=name, line=int(line))
    return labels[:n_rows], int(st[_k.S_NNZ])


def _prescan(source, chunk_bytes: int, need_max: bool) -> tuple[int, int]:
    """Smallest and largest raw index in the file (early stop at 0 unless need_max)."""
    is_object = hasattr(source, "read")
    if is_object and not source.seekable():
        raise ValueError(
            f"{source_name(source)}: zero_based='auto' needs a second pass over "
            "the data; pass zero_based=True/False (and n_features) for a non-seekable input"
        )
    start = source.tell() if is_object else None
    lo, hi = _k._NO_INDEX, -1
    with open_source(source) as f:
        for buf in _iter_text(f, chunk_bytes):
            b_lo, b_hi = _k.scan_indices(buf, need_max)
            lo, hi = min(lo, b_lo), max(hi, b_hi)
            if lo == 0 and not need_max:
                break
    if start is not None:
        source.seek(start)
    return lo, hi


def resolve_layout(source, zero_based="auto", n_features=None, chunk_bytes: int = 16 << 20, need_width: bool = False):
    """Decide ``zero_based`` and the width before streaming ``source``.

    Returns ``(zero_based: bool, n_features: int or None)``. Pre-scans the file
    (one extra pass, stopping early when it can) when ``zero_based="auto"``, or
    when ``need_width`` and ``n_features`` is None; otherwise reads nothing and
    ``n_features`` may stay None.
    """
    zero_based = _check_zero_based(zero_based)
    need_max = n_features is None and (need_width or zero_based == "auto")
    if zero_based != "auto" and not need_max:
        return bool(zero_based), n_features
    lo, hi = _prescan(source, chunk_bytes, need_max=need_max)
    zero = lo == 0 if zero_based == "auto" else bool(zero_based)
    if need_max:
        n_features = max(hi + (1 if zero else 0), 0)
    return zero, n_features


def _check_zero_based(zero_based):
    """Validate ``zero_based``; returns "auto" or a plain bool."""
    if isinstance(zero_based, str) and zero_based == "auto":
        return "auto"
    if zero_based not in (True, False):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    return bool(zero_based)


def _check_n_features(n_features):
    if n_features is None:
        return None
    if isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral) or n_features < 0:
        raise ValueError(f"n_features must be a non-negative integer or None, got {n_features!r}")
    return int(n_features)


def _check_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    return dtype


def _to_columns(block: _Block, offset: int, n_features, name: str) -> None:
    """Turn raw indices into columns in place and check them against n_features."""
    if offset:
        np.subtract(block.indices, offset, out=block.indices)
    if n_features is None or block.indices.size == 0:
        return
    bad = block.indices >= n_features
    if bad.any():
        k = int(np.argmax(bad))
        row = int(np.searchsorted(block.indptr, k, "right")) - 1
        raw = int(block.indices[k]) + offset
        raise DataFormatError(
            f"feature index {raw} exceeds n_features={n_features}" + (" (one-based file)" if offset else ""),
            path=name,
            line=int(block.line_nos[row]),
        )


def _concat(blocks: list) -> _Block:
    if len(blocks) == 1:
        return blocks[0]
    if not blocks:
        empty_f, empty_i = np.empty(0), np.empty(0, dtype=np.int64)
        return _Block(empty_f, empty_i, np.zeros(1, dtype=np.int64), empty_f, empty_i)
    shifts = np.cumsum([0] + [b.indptr[-1] for b in blocks[:-1]])
    indptr = np.concatenate([blocks[0].indptr[:1]] + [b.indptr[1:] + s for b, s in zip(blocks, shifts)])
    return _Block(
        *(np.concatenate([getattr(b, f) for b in blocks]) for f in ("data", "indices")),
        indptr,
        *(np.concatenate([getattr(b, f) for b in blocks]) for f in ("labels", "line_nos")),
    )


def _rebatch(blocks: Iterator[_Block], chunk_rows: int) -> Iterator[_Block]:
    """Regroup blocks into blocks of exactly ``chunk_rows`` rows (the last may be shorter)."""
    pending: list = []
    rows = 0
    for block in blocks:
        pending.append(block)
        rows += block.labels.size
        if rows < chunk_rows:
            continue
        merged, start = _concat(pending), 0
        while rows - start >= chunk_rows:
            yield _slice(merged, start, start + chunk_rows)
            start += chunk_rows
        pending, rows = [_slice(merged, start, rows)], rows - start
    if rows:
        yield _concat(pending)


def _slice(block: _Block, a: int, b: int) -> _Block:
    lo, hi = block.indptr[a], block.indptr[b]
    return _Block(
        block.data[lo:hi], block.indices[lo:hi], block.indptr[a : b + 1] - lo, block.labels[a:b], block.line_nos[a:b]
    )


def iter_svmlight_chunks(
    path, *, n_features=None, zero_based="auto", dtype=np.float64, chunk_bytes: int = 16 << 20, chunk_rows=None
):
    """Stream an svmlight file as row chunks in bounded memory.

    Parameters
    ----------
    path : str, path-like or binary file object
        Plain, .gz, .bz2 or .xz text (detected from the content).
    n_features : int, optional
        Width of every chunk. A feature beyond it raises DataFormatError. When
        None and ``zero_based="auto"``, the width comes from the pre-scan; when
        None and ``zero_based`` is given, each chunk is as wide as the largest
        column seen so far (pass ``n_features`` when streaming).
    zero_based : bool or "auto"
        Whether file indices start at 0. ``"auto"`` pre-scans the file once.
    dtype : float32 or float64
        dtype of X's values (labels are always float64).
    chunk_bytes : int
        Amount of text read and parsed at a time.
    chunk_rows : int, optional
        Emit chunks of exactly this many rows (the last may be shorter) instead
        of one chunk per ``chunk_bytes`` of text.

    Yields
    ------
    X : scipy.sparse.csr_matrix, int64 indices
        Never empty: text holding only blank or comment lines yields nothing.
    y : ndarray of float64

    Notes
    -----
    The pre-scan (``zero_based="auto"``) runs when this function is called;
    a non-seekable file object then raises ValueError.
    """
    zero_based = _check_zero_based(zero_based)
    dtype, n_features = _check_dtype(dtype), _check_n_features(n_features)
    if chunk_bytes < 1 or (chunk_rows is not None and chunk_rows < 1):
        raise ValueError("chunk_bytes and chunk_rows must be positive")
    zero_based, n_features = resolve_layout(path, zero_based, n_features, chunk_bytes)
    return _iter_chunks(path, n_features, zero_based, dtype, chunk_bytes, chunk_rows)


def _iter_chunks(path, n_features, zero_based, dtype, chunk_bytes, chunk_rows):
    name, offset, width = source_name(path), 0 if zero_based else 1, 0

    def columns():
        for block, _, _ in _iter_blocks(path, chunk_bytes, strict=not zero_based):
            _to_columns(block, offset, n_features, name)
            yield block

    blocks = columns() if chunk_rows is None else _rebatch(columns(), chunk_rows)
    for block in blocks:
        if block.labels.size == 0:  # only blank or comment lines in this piece of text
            continue
        if block.indices.size:
            width = max(width, int(block.indices.max()) + 1)
        shape = (block.labels.size, width if n_features is None else n_features)
        yield make_csr(block.data.astype(dtype, copy=False), block.indices, block.indptr, shape), block.labels


def load_svmlight(
    path, *, n_features=None, zero_based="auto", dtype=np.float64, return_line_numbers=False, return_zero_based=False
):
    """Load a whole svmlight file.

    Parameters
    ----------
    path : str, path-like or binary file object
        Plain, .gz, .bz2 or .xz text (detected from the content).
    n_features : int, optional
        Width of X; a larger feature index raises DataFormatError. Default: the
        largest column + 1 (0 when the file has no feature at all).
    zero_based : bool or "auto"
        As scikit-learn: "auto" means zero-based when some index is 0.
    dtype : float32 or float64
        dtype of X's values.
    return_line_numbers : bool
        Also return the 1-based line number of each row.
    return_zero_based : bool
        Also return the index base the file was read with (``zero_based="auto"``
        resolved): a model records it, so that its test files are read alike.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features), int64 indices and indptr
    y : ndarray of float64, shape (n_samples,)
    line_numbers : ndarray of int64, shape (n_samples,)
        Only with ``return_line_numbers=True``.
    zero_based : bool
        Only with ``return_zero_based=True`` (after ``line_numbers`` when both are asked).
    """
    zero_based = _check_zero_based(zero_based)
    dtype, n_features = _check_dtype(dtype), _check_n_features(n_features)
    blocks, lo = [], _k._NO_INDEX
    for block, b_lo, _ in _iter_blocks(path, 16 << 20, strict=zero_based is False):
        blocks.append(block)
        lo = min(lo, b_lo)
    whole = _concat(blocks)
    del blocks
    if zero_based == "auto":
        zero_based = lo == 0
    _to_columns(whole, 0 if zero_based else 1, n_features, source_name(path))
    width = n_features if n_features is not None else (int(whole.indices.max()) + 1 if whole.indices.size else 0)
    X = make_csr(whole.data.astype(dtype, copy=False), whole.indices, whole.indptr, (whole.labels.size, width))
    out = (X, whole.labels) + ((whole.line_nos,) if return_line_numbers else ())
    return out + ((bool(zero_based),) if return_zero_based else ())


def dump_svmlight(X, y, path, *, zero_based=False, comment=None) -> None:
    """Write X and y as an svmlight file, atomically.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Stored entries of a sparse X are written (explicit zeros included);
        zeros of a dense X are not.
    y : array-like of shape (n_samples,)
        Labels; integral values are written without a decimal point.
    path : str or path-like
        Destination; ``.gz``, ``.bz2`` and ``.xz`` names are compressed. The file
        is written under a temporary name in the same directory and renamed
        into place, so a failure never leaves a partial file.
    zero_based : bool
        Write column j as index j (True) or j + 1 (False, the libsvm convention).
    comment : str, optional
        Written first, each line prefixed with ``# ``.

    Notes
    -----
    Values are written as the shortest string that reads back to the same
    float64 (Python's ``repr``), so a dump/load round trip is exact.
    """
    with SvmlightWriter(path, zero_based=zero_based, comment=comment) as writer:
        writer.write(X, y)
