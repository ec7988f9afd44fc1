"""In-memory design matrices: dense, CSR and CSC as plain arrays.

Kernels are written once against two accessors, in the manner of lightning's
``dataset_fast``: ``column(...)`` for coordinate methods and ``row(...)`` for
stochastic and streaming methods. Both return ``(positions, values)`` views:

- sparse: the slice of ``indices`` and ``data`` for that column (row);
- dense: ``positions`` is a shared ``arange`` and ``values`` a contiguous slice of
  the Fortran-ordered (C-ordered) array, so the same loop serves both layouts.

Layouts are converted once (CSC for columns, CSR for rows, int64 indices so
there is no 2^31 limit on nnz), never per iteration.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit

__all__ = ["Matrix", "as_columns", "as_rows", "column", "row"]


class Matrix(NamedTuple):
    """Arrays of one layout, as jitted kernels take them.

    Attributes
    ----------
    data : ndarray of float64
        Nonzero values (sparse) or the raveled array (dense).
    indices : ndarray of int64
        Row (column) index of each stored value; ``arange`` of the other dimension when dense.
    indptr : ndarray of int64, shape (n_major + 1,)
        Start of each column (row) in ``data``.
    dense : bool
        Whether the layout is dense.
    shape : tuple of int
        (n_samples, n_features).
    """

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    dense: bool
    shape: tuple

    @property
    def arrays(self):
        """``(data, indices, indptr, dense)``: the arguments of ``column`` / ``row``."""
        return self.data, self.indices, self.indptr, self.dense

    @property
    def nnz(self) -> int:
        return int(self.data.shape[0])


def _as_sparse_layout(X, fmt: str, dtype) -> Matrix:
    X = X.asformat(fmt, copy=False)
    if not X.has_canonical_format:
        X = X.copy()  # never sort or merge the caller's matrix in place
        X.sum_duplicates()
    data = np.ascontiguousarray(X.data, dtype=dtype)
    return Matrix(data, X.indices.astype(np.int64), X.indptr.astype(np.int64), False, X.shape)


def as_columns(X, dtype=np.float64) -> Matrix:
    """Column layout: CSC for sparse input, Fortran order for dense input."""
    if sp.issparse(X):
        return _as_sparse_layout(X, "csc", dtype)
    X = np.asfortranarray(X, dtype=dtype)
    n, d = X.shape
    return Matrix(X.ravel(order="F"), np.arange(n, dtype=np.int64),
                  np.arange(0, (d + 1) * n, n, dtype=np.int64)[: d + 1], True, (n, d))


def as_rows(X, dtype=np.float64) -> Matrix:
    """Row layout: CSR for sparse input, C order for dense input."""
    if sp.issparse(X):
        return _as_sparse_layout(X, "csr", dtype)
    X = np.ascontiguousarray(X, dtype=dtype)
    n, d = X.shape
    return Matrix(X.ravel(order="C"), np.arange(d, dtype=np.int64),
                  np.arange(0, (n + 1) * d, d, dtype=np.int64)[: n + 1], True, (n, d))


@njit(cache=True, inline="always")
def column(data, indices, indptr, dense, j):
    """(row positions, values) of column ``j`` in a column layout."""
    start, end = indptr[j], indptr[j + 1]
    if dense:
        return indices, data[start:end]
    return indices[start:end], data[start:end]


# The two layouts are the same arrays with the roles of rows and columns swapped.
row = column
