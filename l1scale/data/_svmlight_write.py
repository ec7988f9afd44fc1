"""svmlight writer (private): CSR normalisation, Numba row formatter (atomic files: ``l1scale._atomic``).

Values are formatted by NumPy's shortest round-trip repr (``astype("S32")``, C
code) and assembled into lines by :func:`format_rows`, so no Python loop runs
per value.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

from .. import _atomic
from ..exceptions import DataFormatError

_NL, _COLON, _DOT, _SPACE = 10, 58, 46, 32


def make_csr(data, indices, indptr, shape, *, sorted_indices=True) -> sp.csr_matrix:
    """CSR matrix that keeps int64 ``indices``/``indptr`` (the constructor would downcast)."""
    X = sp.csr_matrix(shape, dtype=data.dtype)
    X.data, X.indices, X.indptr = data, indices, indptr
    X.has_sorted_indices = sorted_indices
    return X


def atomic_file(path):
    """Context manager giving a binary file that appears at ``path`` only on success,
    compressed by ``path``'s extension (.gz, .bz2, .xz): :func:`l1scale._atomic.atomic_file`."""
    return _atomic.atomic_file(path, compress=True)


def as_csr64(X) -> sp.csr_matrix:
    """Canonical CSR copy-or-view of X with float64 values and int64 indices."""
    if not sp.issparse(X):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        X = sp.csr_matrix(X)
    X = sp.csr_matrix(X)  # any sparse format -> CSR (no copy when already CSR)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # also sorts: the format needs increasing indices
    data = X.data.astype(np.float64, copy=False)
    if not np.isfinite(data).all():
        raise DataFormatError("X contains NaN or infinite values; svmlight cannot hold them")
    return make_csr(data, X.indices.astype(np.int64, copy=False), X.indptr.astype(np.int64, copy=False), X.shape)


class SvmlightWriter:
    """Write svmlight rows chunk by chunk into one atomically created file.

    Use as a context manager: the file appears at ``path`` only when the block
    exits without an exception.
    """

    _BLOCK_NNZ, _BLOCK_ROWS, _WIDTH = 1 << 20, 1 << 16, 32  # repr of a float64 has <= 24 chars

    def __init__(self, path, *, zero_based=False, comment=None):
        self._offset = 0 if zero_based else 1
        self._out = _atomic.AtomicFile(path, compress=True)
        if comment:
            text = comment.decode() if isinstance(comment, bytes) else str(comment)
            self._guarded(self._out.file.write, "".join(f"# {line}\n" for line in text.splitlines()).encode())

    def _guarded(self, fn, *args):
        """Run ``fn``; on any error drop the temporary file before re-raising."""
        try:
            return fn(*args)
        except BaseException as exc:
            self._out.abort()
            if isinstance(exc, OSError):  # a full disk: say so, naming the file
                new = _atomic.disk_full_error(self._out.path, exc)
                if new is not exc:
                    raise new from exc
            raise

    def write(self, X, y) -> None:
        """Append the rows of X (dense or sparse) with labels y.

        Called outside a ``with`` block, a failure here discards the file.
        """
        self._guarded(self._write, X, y)

    def _write(self, X, y) -> None:
        X = as_csr64(X)
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must be 1-D with {X.shape[0]} entries, got shape {y.shape}")
        if not np.isfinite(y).all():
            raise DataFormatError("y contains NaN or infinite values")
        indptr, a = X.indptr, 0
        while a < X.shape[0]:
            by_nnz = int(np.searchsorted(indptr, indptr[a] + self._BLOCK_NNZ, "right")) - 1
            b = min(X.shape[0], a + self._BLOCK_ROWS, max(a + 1, by_nnz))
            w = self._WIDTH
            labels = y[a:b].astype(f"S{w}").view(np.uint8).reshape(b - a, w)
            values = X.data[indptr[a] : indptr[b]].astype(f"S{w}").view(np.uint8).reshape(-1, w)
            out = np.empty((b - a) * (w + 1) + values.shape[0] * (w + 22), dtype=np.uint8)
            n = format_rows(labels, values, X.indices, indptr, a, b, self._offset, out)
            self._out.file.write(out[:n].data)
            a = b

    def close(self) -> None:
        """Finish the file and move it into place."""
        self._out.commit()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self._out.commit()
        else:
            self._out.abort()


@njit(cache=True)
def _put_repr(out, pos, text):
    """Copy a NUL-padded float repr, writing integral values without '.0'."""
    length = 0
    while length < text.shape[0] and text[length] != 0:
        length += 1
    if length >= 2 and text[length - 2] == _DOT and text[length - 1] == 48:
        length -= 2
    for i in range(length):
        out[pos + i] = text[i]
    return pos + length


@njit(cache=True)
def _put_int(out, pos, value):
    """Write a non-negative integer in decimal."""
    start = pos
    while True:
        out[pos] = 48 + value % 10
        value //= 10
        pos += 1
        if value == 0:
            break
    out[start:pos] = out[start:pos][::-1].copy()
    return pos


@njit(cache=True)
def format_rows(label_txt, value_txt, indices, indptr, row_start, row_end, offset, out):
    """Write rows ``row_start:row_end`` of a CSR matrix as svmlight lines.

    Parameters
    ----------
    label_txt : uint8[n_rows, w]
        NUL-padded repr of each label of the block.
    value_txt : uint8[block_nnz, w]
        NUL-padded repr of each stored value of the block (from indptr[row_start]).
    indices, indptr : int64 arrays of the whole matrix.
    offset : int
        Added to each column (1 for one-based files).
    out : uint8[cap]
        Output buffer, large enough.

    Returns
    -------
    int
        Number of bytes written.
    """
    pos, base = 0, indptr[row_start]
    for i in range(row_start, row_end):
        pos = _put_repr(out, pos, label_txt[i - row_start])
        for k in range(indptr[i], indptr[i + 1]):
            out[pos] = _SPACE
            pos = _put_int(out, pos + 1, indices[k] + offset)
            out[pos] = _COLON
            pos = _put_repr(out, pos + 1, value_txt[k - base])
        out[pos] = _NL
        pos += 1
    return pos
