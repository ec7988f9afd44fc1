"""In-memory design matrices: dense, CSR and CSC as plain arrays.

Kernels are written once against two accessors, in the manner of lightning's
``dataset_fast``: ``column(...)`` for coordinate methods and ``row(...)`` for
stochastic and streaming methods. Both return ``(positions, values)`` views:

- sparse: the slice of ``indices`` and ``data`` for that column (row);
- dense: ``positions`` is a shared ``arange`` and ``values`` a contiguous slice of
  the Fortran-ordered (C-ordered) array, so the same loop serves both layouts.

Layouts are converted once (CSC for columns, CSR for rows), never per iteration; a matrix
already in the layout (canonical, float64 values, or a Fortran / C ordered float64 array) is
taken without a copy, so ``column_matrix`` converts X once for any number of
:class:`~l1scale.problems.Problem` built on it (one-vs-rest, cross-validation folds, paths).

Index arrays are int32 where every value fits (:func:`index_dtype`: indices and ``indptr``
below 2^31, as scipy itself stores them) and int64 beyond, or when given int64: scipy's int32
arrays are taken as they are, with no int64 copy (earn: 0.5 ms of a 17 ms fit; news20: 14 ms
and 20 MB), and the kernels read 12 bytes per stored value instead of 16. ``indices`` and
``indptr`` always share one type: scipy's own routines (``tocoo``) refuse a matrix that mixes
them, and each kernel is compiled once per type.

The kernels here are ``nogil``: solves in threads (``n_jobs``) run them in parallel.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit

from ._transpose import densified_columns, transposed_arrays
from .validation import check_sparse_structure

__all__ = [
    "CHECKED_MARK",
    "DENSE_SHARE",
    "Matrix",
    "as_columns",
    "as_rows",
    "column",
    "column_dots",
    "column_dots_and_norms",
    "column_matrix",
    "column_matrix_rows",
    "column_moments",
    "column_norms",
    "column_weighted_dot_and_sum",
    "columns_axpy",
    "dense_enough",
    "index_dtype",
    "matrix_of",
    "repeated_columns",
    "row",
    "row_matrix",
    "verified_repeats",
]


class Matrix(NamedTuple):
    """Arrays of one layout, as jitted kernels take them.

    Attributes
    ----------
    data : ndarray of float64
        Nonzero values (sparse) or the raveled array (dense).
    indices : ndarray of int32 or int64 (:func:`index_dtype`)
        Row (column) index of each stored value; ``arange`` of the other dimension when dense.
    indptr : ndarray of the type of ``indices``, shape (n_major + 1,)
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


_INT32_MAX = int(np.iinfo(np.int32).max)


def index_dtype(largest: int, *given):
    """The type of a layout's ``indices`` and ``indptr``: int32 when ``largest`` (the largest
    value they hold: the other dimension, or the number of stored values) fits in it and none of
    the ``given`` arrays is int64 already (taken without a copy), else int64."""
    if any(a.dtype == np.int64 for a in given) or largest > _INT32_MAX:
        return np.int64
    return np.int32


def _as_sparse_layout(X, fmt: str, dtype, checked: bool) -> Matrix:
    # Before scipy's conversion, which trusts the index arrays as the kernels do.
    if not checked:
        check_sparse_structure(X)
    # The check above (or the caller's) has set the flag of a canonical X without a scan.
    canonical = X.format in ("csr", "csc") and X.has_canonical_format
    if canonical and X.format != fmt and X.dtype.kind in "biuf":
        # A CSR <-> CSC conversion of a canonical matrix, by our own scatter (canonical too),
        # into int32 index arrays wherever they fit (``_transpose``: 2x scipy's on int64 input).
        n_major, n_minor = X.shape if X.format == "csr" else X.shape[::-1]
        index = index_dtype(max(n_major, X.nnz))
        data, indices, indptr = transposed_arrays(X.data, X.indices, X.indptr, n_minor, dtype, index)
        return Matrix(data, indices, indptr, False, X.shape)
    X = X.asformat(fmt, copy=False)
    if not X.has_canonical_format:
        X = X.copy()  # never sort or merge the caller's matrix in place
        X.sum_duplicates()
    # Copies only what is not yet of the kernels' types: a canonical matrix of this
    # format with float64 values and int32 or int64 indices is taken as is.
    data = np.ascontiguousarray(X.data, dtype=dtype)
    index = index_dtype(max(X.shape[0 if fmt == "csc" else 1], X.nnz), X.indices, X.indptr)
    indices = np.ascontiguousarray(X.indices, dtype=index)
    indptr = np.ascontiguousarray(X.indptr, dtype=index)
    return Matrix(data, indices, indptr, False, X.shape)


def _as_dense_layout(X, order: str, dtype) -> Matrix:
    # Columns of a Fortran array (rows of a C array) are contiguous slices of its
    # ravel; the shared arange stands in for the positions a sparse layout stores.
    X = np.asarray(X, dtype=dtype, order=order)
    n_major, n_minor = X.shape if order == "C" else X.shape[::-1]
    index = index_dtype(n_major * n_minor)
    indptr = np.arange(0, (n_major + 1) * n_minor, max(n_minor, 1), dtype=np.int64)[: n_major + 1].astype(index)
    return Matrix(X.ravel(order=order), np.arange(n_minor, dtype=index), indptr, True, X.shape)


#: A sparse X that stores at least this share of its n x d entries is laid out dense in
#: columns (:func:`dense_enough`). Its dense array takes 8 bytes an entry, where CSC takes 12-16
#: a stored value: at most 1.33 times the CSC's memory at this share, less above 2/3. The dense
#: columns are read as contiguous slices that the compiler vectorises, with no index per value.
#: Measured (2026-12-03, this project's 2-core host), whole CD fits of a CSR X at 0.1 / 0.01 /
#: 0.001 lam_max, tol 1e-2 and 1e-6, against the same X passed as a Fortran array: MADELON
#: (2,000 x 500, 100% stored) 0.09 -> 0.04 s and 0.20 -> 0.11 s at 0.01 and 0.001 lam_max,
#: ARCENE (54%) 1.2-2.3x, magic04 and splice (100%) 1.3-2x faster dense; Spambase (23%) level;
#: MNIST (19%) 1.2-1.5x slower dense.
DENSE_SHARE = 0.5


def dense_enough(X) -> bool:
    """Whether a sparse X stores at least :data:`DENSE_SHARE` of its entries (duplicates
    counted: a bound that a canonical X meets exactly)."""
    n_rows, n_cols = X.shape
    return n_rows * n_cols > 0 and X.nnz >= DENSE_SHARE * n_rows * n_cols


def _as_densified_layout(X, dtype, checked: bool) -> Matrix:
    if not checked:
        check_sparse_structure(X)
    if X.format not in ("csr", "csc"):
        X = X.tocsc()  # COO, BSR, ...: scipy's conversion, then the scatter
    array = densified_columns(X.data, X.indices, X.indptr, X.shape, rows_major=X.format == "csr")
    return _as_dense_layout(array, "F", dtype)


def as_columns(X, dtype=np.float64, *, checked=False) -> Matrix:
    """Column layout: CSC for sparse input, Fortran order for dense input and for a sparse X
    dense enough (:func:`dense_enough`). ``checked``: the caller has just checked a sparse X's
    index arrays (``check_sparse_structure``), so they are not scanned again (a Problem checks
    its design first: one scan per fit, not two)."""
    if not sp.issparse(X):
        return _as_dense_layout(X, "F", dtype)
    if dense_enough(X):
        return _as_densified_layout(X, dtype, checked)
    return _as_sparse_layout(X, "csc", dtype, checked)


def as_rows(X, dtype=np.float64, *, checked=False) -> Matrix:
    """Row layout: CSR for sparse input, C order for dense input (``checked`` as in :func:`as_columns`)."""
    return _as_sparse_layout(X, "csr", dtype, checked) if sp.issparse(X) else _as_dense_layout(X, "C", dtype)


def matrix_of(columns: Matrix):
    """The matrix over a column layout's own arrays (no copy), for products ``X @ w`` and
    ``X.T @ r``: a Fortran-ordered array (dense), or a CSC matrix that keeps the layout's
    index arrays as they are (scipy's constructor may copy them into another type)."""
    if columns.dense:
        return columns.data.reshape(columns.shape, order="F")
    M = sp.csc_matrix(columns.shape, dtype=columns.data.dtype)
    M.data, M.indices, M.indptr = columns.data, columns.indices, columns.indptr
    M.has_canonical_format = True  # the layout is canonical (sorted, no duplicates)
    return M


# The attribute that marks a matrix made by :func:`column_matrix` from a checked one: a
# Problem built on it does not check it again (see ``problems.memory.check_design``).
CHECKED_MARK = "_l1scale_checked"


def column_matrix(X, dtype=np.float64, *, checked=False):
    """X converted once into the column layout, as a matrix (:func:`matrix_of`):
    ``as_columns`` of the result, and so every Problem built on it, copies nothing.

    ``checked``: the caller has just checked X (index arrays and finite values, as an
    estimator's ``validate_data`` does); a sparse result, a new matrix object that only the
    library holds, is then marked so, and the Problems built on it do not scan it again."""
    M = matrix_of(as_columns(X, dtype, checked=checked))
    if checked and sp.issparse(M):
        setattr(M, CHECKED_MARK, True)
    return M


def row_matrix(X, dtype=np.float64, *, checked=False):
    """A sparse X in the row layout (CSR), as a new matrix object over :func:`as_rows`' arrays (no
    copy for a canonical CSR X of float64 values), marked as :func:`column_matrix` marks its
    result: what an estimator hands to the one Problem of a fit, which then converts to
    columns only what its solver reads (``problems.memory.Problem``)."""
    layout = as_rows(X, dtype, checked=checked)
    M = sp.csr_matrix(layout.shape, dtype=layout.data.dtype)
    M.data, M.indices, M.indptr = layout.data, layout.indices, layout.indptr
    M.has_canonical_format = True  # the layout is canonical (sorted, no duplicates)
    if checked:
        setattr(M, CHECKED_MARK, True)
    return M


def column_matrix_rows(X_columns, rows):
    """The column matrix of ``X[rows]`` from X's column matrix (:func:`column_matrix`), for
    the training rows of a cross-validation fold: a sparse X's rows are taken from its CSC
    arrays by one nogil pass (:func:`_rows_of_columns`), with no row indexing of a CSR matrix
    and no CSR -> CSC conversion per fold (earn, a fold of 80% of the rows: 4.5 -> 3.8 ms, and
    the threads that run the other folds' solves are not held up by the GIL meanwhile).

    ``rows``: strictly increasing row indices (scikit-learn's KFold and StratifiedKFold give
    them; any other order, or a repeated row, is taken by ``X[rows]`` and a conversion). The
    result keeps X's check: a matrix marked by ``column_matrix(..., checked=True)`` gives a
    marked one (its values are a subset of checked values)."""
    rows = np.asarray(rows)
    if rows.size == 0:
        rows = rows.astype(np.int64)  # np.asarray([]) is a float array
    n = X_columns.shape[0]
    increasing = rows.ndim == 1 and (rows.shape[0] < 2 or bool(np.all(rows[1:] > rows[:-1])))
    in_range = rows.shape[0] == 0 or (rows.dtype.kind in "iu" and rows[0] >= 0 and rows[-1] < n)
    checked = bool(getattr(X_columns, CHECKED_MARK, False))
    if isinstance(X_columns, np.ndarray) and X_columns.ndim == 2 and X_columns.flags.f_contiguous:
        # The rows of a Fortran array in Fortran order, in one copy (X[rows] is C-ordered, and its
        # column layout would copy it again): a dense X's folds, and a sparse X dense enough.
        return column_matrix(X_columns.T[:, rows].T, checked=checked)
    if not (sp.issparse(X_columns) and X_columns.format == "csc" and increasing and in_range):
        return column_matrix(X_columns[rows], checked=checked)
    position = np.full(n, -1, dtype=np.int64)
    position[rows] = np.arange(rows.shape[0], dtype=np.int64)
    data, indices, indptr = _rows_of_columns(X_columns.data, X_columns.indices, np.asarray(X_columns.indptr), position)
    M = matrix_of(Matrix(data, indices, indptr, False, (int(rows.shape[0]), X_columns.shape[1])))
    if checked:
        setattr(M, CHECKED_MARK, True)
    return M


@njit(cache=True, nogil=True)
def _rows_of_columns(data, indices, indptr, position):
    """CSC arrays (data, indices, indptr) of the rows i with ``position[i] >= 0``, renumbered
    ``position[i]`` (increasing with i, so each column stays sorted): one pass to count each
    column's kept values, one to copy them. Both without a branch on the row (a CV fold keeps 80%
    of them at random, and mispredicted branches doubled the time: earn 2.7 -> 1.4 ms, a9a 1.3 ->
    0.6 ms, news20 25 -> 17 ms): every value is written, and the next kept one overwrites it."""
    d = indptr.shape[0] - 1
    new_indptr = np.zeros(d + 1, dtype=indptr.dtype)  # as X's: fewer values, the same type
    total = 0
    for j in range(d):
        for p in range(np.uint64(indptr[j]), np.uint64(indptr[j + 1])):  # unsigned: no wrap-around checks
            total += position[np.uint64(indices[p])] >= 0
        new_indptr[j + 1] = total
    # One slot more: the place a dropped value after the last kept one is written to.
    new_data = np.empty(total + 1, dtype=data.dtype)
    new_indices = np.empty(total + 1, dtype=indices.dtype)  # row numbers only fall
    q = np.uint64(0)
    for j in range(d):
        for p in range(np.uint64(indptr[j]), np.uint64(indptr[j + 1])):
            k = position[np.uint64(indices[p])]
            new_data[q] = data[p]
            new_indices[q] = k
            q += np.uint64(k >= 0)
    return new_data[:total], new_indices[:total], new_indptr


@njit(cache=True, nogil=True, inline="always")
def column(data, indices, indptr, dense, j):
    """(row positions, values) of column ``j`` in a column layout."""
    start, end = indptr[j], indptr[j + 1]
    if dense:
        return indices, data[start:end]
    return indices[start:end], data[start:end]


# The two layouts are the same arrays with the roles of rows and columns swapped.
row = column


# The hot loops over one column: a dense column is read by position, with no index array to load,
# so the compiler vectorises it (the same reading in multinomial_cd's model sweeps made its whole
# fit on digits 1.5x faster). Each layout's loop is a function of its own, and the public helper
# only picks one: written as one body with both loops, the helper inlined into a loop over many
# short sparse columns compiled to code 3x slower. A sparse loop runs over unsigned positions: a
# signed index is checked for wrapping around at every read (Numba's negative indexing), which
# slowed the long columns' loops by a third. news20 (589k columns, 4.9M values): CD's certifying
# pass 50-64 -> 14-18 ms, its curvature pass 63-81 -> 51-63 ms, 100 support-Newton CG products on
# 1,375 columns 139-190 -> 150-169 ms; the same sums in the same order.


@njit(cache=True, nogil=True, inline="always")
def column_moments(data, indices, indptr, dense, j, r, D):
    """(sum_i r_i x_ij, sum_i D_i x_ij^2) over column j: the loss gradient and the diagonal
    curvature of coordinate j, given r = c loss' and D = c loss'' on the margins."""
    if dense:
        return _dense_moments(data, indptr, j, r, D)
    return _sparse_moments(data, indices, indptr, j, r, D)


# The sums a CD sweep takes over one dense column at a time (the moments, the weighted dots) are
# summed in four interleaved partial sums, rows i = 0, 1, 2, 3 (mod 4), added pairwise at the end:
# four independent chains of additions where one chain made the loop wait on each addition, in an
# order fixed by the column's length alone (the same sums on every machine and every call).
# 200,000 x 40 dense: the moments over all columns 7.0 -> 4.6 ms.


@njit(cache=True, nogil=True, inline="always")
def _dense_moments(data, indptr, j, r, D):
    x = data[indptr[j] : indptr[j + 1]]
    n = x.shape[0]
    g0 = g1 = g2 = g3 = h0 = h1 = h2 = h3 = 0.0
    i = 0
    while i + 4 <= n:
        v0, v1, v2, v3 = x[i], x[i + 1], x[i + 2], x[i + 3]
        g0 += r[i] * v0
        g1 += r[i + 1] * v1
        g2 += r[i + 2] * v2
        g3 += r[i + 3] * v3
        h0 += D[i] * v0 * v0
        h1 += D[i + 1] * v1 * v1
        h2 += D[i + 2] * v2 * v2
        h3 += D[i + 3] * v3 * v3
        i += 4
    while i < n:
        g0 += r[i] * x[i]
        h0 += D[i] * x[i] * x[i]
        i += 1
    return (g0 + g1) + (g2 + g3), (h0 + h1) + (h2 + h3)


@njit(cache=True, nogil=True, inline="always")
def _sparse_moments(data, indices, indptr, j, r, D):
    acc_g, acc_h = 0.0, 0.0
    for p in range(np.uint64(indptr[j]), np.uint64(indptr[j + 1])):
        i = np.uint64(indices[p])
        acc_g += r[i] * data[p]
        acc_h += D[i] * data[p] * data[p]
    return acc_g, acc_h


@njit(cache=True, nogil=True, inline="always")
def column_dot(data, indices, indptr, dense, j, r):
    """sum_i r_i x_ij over column j."""
    if dense:
        return _dense_dot(data, indptr, j, r)
    return _sparse_dot(data, indices, indptr, j, r)


@njit(cache=True, nogil=True, inline="always")
def _dense_dot(data, indptr, j, r):
    start = indptr[j]
    acc = 0.0
    for i in range(indptr[j + 1] - start):
        acc += r[i] * data[start + i]
    return acc


@njit(cache=True, nogil=True, inline="always")
def _sparse_dot(data, indices, indptr, j, r):
    acc = 0.0
    for p in range(np.uint64(indptr[j]), np.uint64(indptr[j + 1])):
        acc += r[np.uint64(indices[p])] * data[p]
    return acc


@njit(cache=True, nogil=True, inline="always")
def column_weighted_dot(data, indices, indptr, dense, j, D, v, acc):
    """acc + sum_i x_ij D_i v_i over column j (a sparse column's summed onto acc in its order, a
    dense one's in four partial sums, then added to acc)."""
    if dense:
        return _dense_weighted_dot(data, indptr, j, D, v, acc)
    return _sparse_weighted_dot(data, indices, indptr, j, D, v, acc)


@njit(cache=True, nogil=True, inline="always")
def _dense_weighted_dot(data, indptr, j, D, v, acc):
    x = data[indptr[j] : indptr[j + 1]]
    n = x.shape[0]
    a0 = a1 = a2 = a3 = 0.0
    i = 0
    while i + 4 <= n:
        a0 += x[i] * D[i] * v[i]
        a1 += x[i + 1] * D[i + 1] * v[i + 1]
        a2 += x[i + 2] * D[i + 2] * v[i + 2]
        a3 += x[i + 3] * D[i + 3] * v[i + 3]
        i += 4
    while i < n:
        a0 += x[i] * D[i] * v[i]
        i += 1
    return acc + ((a0 + a1) + (a2 + a3))


@njit(cache=True, nogil=True, inline="always")
def _sparse_weighted_dot(data, indices, indptr, j, D, v, acc):
    for p in range(np.uint64(indptr[j]), np.uint64(indptr[j + 1])):
        i = np.uint64(indices[p])
        acc += data[p] * D[i] * v[i]
    return acc


@njit(cache=True, nogil=True, inline="always")
def column_weighted_dot_and_sum(data, indices, indptr, dense, j, D, v):
    """(sum_i x_ij D_i v_i, sum_i x_ij D_i) over column j, in one read of it."""
    acc, total = 0.0, 0.0
    if dense:  # in four partial sums each (see _dense_moments)
        x = data[indptr[j] : indptr[j + 1]]
        n = x.shape[0]
        a0 = a1 = a2 = a3 = t0 = t1 = t2 = t3 = 0.0
        i = 0
        while i + 4 <= n:
            d0, d1, d2, d3 = x[i] * D[i], x[i + 1] * D[i + 1], x[i + 2] * D[i + 2], x[i + 3] * D[i + 3]
            a0 += d0 * v[i]
            a1 += d1 * v[i + 1]
            a2 += d2 * v[i + 2]
            a3 += d3 * v[i + 3]
            t0 += d0
            t1 += d1
            t2 += d2
            t3 += d3
            i += 4
        while i < n:
            xd = x[i] * D[i]
            a0 += xd * v[i]
            t0 += xd
            i += 1
        acc, total = (a0 + a1) + (a2 + a3), (t0 + t1) + (t2 + t3)
    else:
        for p in range(np.uint64(indptr[j]), np.uint64(indptr[j + 1])):
            i = np.uint64(indices[p])
            xd = data[p] * D[i]
            acc += xd * v[i]
            total += xd
    return acc, total


@njit(cache=True, nogil=True, inline="always")
def column_axpy(data, indices, indptr, dense, j, a, z):
    """z += a x_j (column j); returns the column's stored entries (the nonzeros read)."""
    if dense:
        _dense_axpy(data, indptr, j, a, z)
    else:
        _sparse_axpy(data, indices, indptr, j, a, z)
    return indptr[j + 1] - indptr[j]


@njit(cache=True, nogil=True, inline="always")
def _dense_axpy(data, indptr, j, a, z):
    # Through a slice: vectorised, where indexing data by position was not (3x faster).
    x = data[indptr[j] : indptr[j + 1]]
    for i in range(x.shape[0]):
        z[i] += a * x[i]


@njit(cache=True, nogil=True, inline="always")
def _sparse_axpy(data, indices, indptr, j, a, z):
    for p in range(np.uint64(indptr[j]), np.uint64(indptr[j + 1])):
        z[np.uint64(indices[p])] += a * data[p]


# Many dense columns against one vector. A column's sum is a chain of dependent additions (the order
# is kept, so no vector lanes), and the loop waits on it; four columns summed side by side are four
# independent chains that share each read of the vector. Each column is still summed in row order,
# as column_dot sums it: the same sums to the bit. Columns are read through one-dimensional slices,
# which the compiler vectorises where indexing ``data`` by position did not (here and in
# columns_axpy). A 200,000 x 40 dense X: X^T r 6.7 -> 2.6 ms, X w over 20 columns 6.3 -> 2.0 ms.
@njit(cache=True, nogil=True)
def column_dots(data, indices, indptr, dense, cols, r, out):
    """out[q] = sum_i r_i x_{i, cols[q]} for the columns ``cols``, bit for bit what
    :func:`column_dot` gives each of them (dense columns four at a time)."""
    if not dense:
        for q in range(cols.shape[0]):
            out[q] = _sparse_dot(data, indices, indptr, cols[q], r)
        return
    m, n = cols.shape[0], r.shape[0]
    q = 0
    while q + 4 <= m:
        s0, s1, s2, s3 = indptr[cols[q]], indptr[cols[q + 1]], indptr[cols[q + 2]], indptr[cols[q + 3]]
        x0, x1, x2, x3 = data[s0 : s0 + n], data[s1 : s1 + n], data[s2 : s2 + n], data[s3 : s3 + n]
        a0 = a1 = a2 = a3 = 0.0
        for i in range(n):
            ri = r[i]
            a0 += ri * x0[i]
            a1 += ri * x1[i]
            a2 += ri * x2[i]
            a3 += ri * x3[i]
        out[q], out[q + 1], out[q + 2], out[q + 3] = a0, a1, a2, a3
        q += 4
    while q < m:
        out[q] = _dense_dot(data, indptr, cols[q], r)
        q += 1


# Rows of z updated by all the columns before the next rows: z's block stays in the first-level
# cache instead of being read and written once per column.
DENSE_AXPY_BLOCK_ROWS = 4096


@njit(cache=True, nogil=True)
def columns_axpy(data, indices, indptr, dense, cols, a, z):
    """z += sum_q a[q] x_{cols[q]}; each z_i gets the columns' terms in the order of ``cols``,
    as successive :func:`column_axpy` calls add them (the same z to the bit). Dense columns
    go a block of rows at a time. Returns the
    columns' stored entries (the nonzeros read)."""
    reads = 0
    for q in range(cols.shape[0]):
        reads += indptr[cols[q] + 1] - indptr[cols[q]]
    if not dense:
        for q in range(cols.shape[0]):
            _sparse_axpy(data, indices, indptr, cols[q], a[q], z)
        return reads
    n = z.shape[0]
    for first in range(0, n, DENSE_AXPY_BLOCK_ROWS):
        b = min(DENSE_AXPY_BLOCK_ROWS, n - first)
        block = z[first : first + b]
        for q in range(cols.shape[0]):
            aq, start = a[q], indptr[cols[q]] + first
            source = data[start : start + b]
            for i in range(b):
                block[i] += aq * source[i]
    return reads


@njit(cache=True, nogil=True)
def dense_columns(data, indptr, cols, n):
    """The columns ``cols`` of a dense column layout copied into the rows of a C-ordered
    (len(cols), n) array: the operand of BLAS products over a working set's columns."""
    out = np.empty((cols.shape[0], n))
    for q in range(cols.shape[0]):
        start = indptr[cols[q]]
        for i in range(n):
            out[q, i] = data[start + i]
    return out


def repeated_columns(columns: Matrix, dots, norms):
    """Columns that repeat an earlier one exactly: for each column, the lowest index of a column
    equal to it (the same rows and the same values, bit for bit), as an int64 array ``rep``
    (rep[j] == j: the first of its kind), or None when no two nonempty columns are equal.

    Candidates come from a sketch that hashes what two equal columns share and is cheap to read:
    the number of stored values, ``dots`` and ``norms`` (any two sums over each column computed in
    one order, such as the null model's gradient and the column norms: equal columns give them bit
    for bit) and up to :data:`SKETCH_ENTRIES` entries (row and value) spread along the column; then
    a d-slot hash table. Each candidate is then compared with its representative entry by entry
    (:func:`verified_repeats`: one read of the candidates' columns and their representatives'), so
    that a solver may take them for equal: any sum over a repeat, read in its stored order, is its
    representative's to the bit, whatever the vector (CD leaves them out of every solve of a path
    and checks nothing after).

    Text features repeat often (n-grams met in one document only: news20's uni- and bigrams,
    254k of 589k columns), and so do genotypes in linkage and one-hot codes of identical
    groupings."""
    rep = np.arange(columns.shape[1], dtype=np.int64)
    found = _first_of_sketch(
        columns.data.view(np.uint64),
        columns.indices,
        columns.indptr,
        columns.dense,
        np.ascontiguousarray(dots, dtype=np.float64).view(np.uint64),
        np.ascontiguousarray(norms, dtype=np.float64).view(np.uint64),
        rep,
    )
    return verified_repeats(columns, rep) if found else None


def verified_repeats(columns: Matrix, rep):
    """``rep`` (for each column, the index of a column it is taken to repeat; rep[j] == j: none)
    with every pair that is not equal entry by entry undone (rep[j] = j), in place; None when no
    repeat is left. Two columns are equal when they store the same rows with the same values, bit
    for bit (so that any sum over them in their stored order is the same to the bit)."""
    found = _undo_unequal(columns.data.view(np.uint64), columns.indices, columns.indptr, columns.dense, rep)
    return rep if found else None


# Entries of a column read into its sketch, spread evenly from its first to its last.
SKETCH_ENTRIES = 8
# Multipliers of the sketch's hash (odd 64-bit constants: golden-ratio and MurmurHash3 / xxHash ones).
_HASH_ROW, _HASH_MIX = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)


@njit(cache=True, nogil=True, inline="always")
def _mixed(x):
    x *= _HASH_MIX
    return x ^ (x >> np.uint64(29))


@njit(cache=True, nogil=True)
def _first_of_sketch(bits, indices, indptr, dense, dot_bits, norm_bits, rep):
    """Fills ``rep`` (see :func:`repeated_columns`; it enters as 0 .. d - 1); returns the number
    of repeats. The table packs a hash's high 32 bits and the column in one word and is at most
    2/3 full (8 bytes a slot: news20's 589k columns in 8 MB)."""
    d = rep.shape[0]
    hashes = np.empty(d, dtype=np.uint64)
    for j in range(d):
        start, nnz = indptr[j], indptr[j + 1] - indptr[j]
        h = _mixed(np.uint64(nnz)) + _mixed(dot_bits[j] + _HASH_ROW) + _mixed(norm_bits[j] ^ _HASH_ROW)
        last = -1
        for k in range(SKETCH_ENTRIES):
            p = (k * (nnz - 1)) // (SKETCH_ENTRIES - 1) if nnz > 1 else 0
            if nnz == 0 or p == last:
                continue
            last = p
            row = p if dense else indices[start + p]
            h += _mixed(np.uint64(row) * _HASH_ROW + bits[start + p])
        hashes[j] = h
    size = 2
    while 2 * size < 3 * d:
        size *= 2
    mask = np.uint64(size - 1)
    low = np.uint64(0xFFFFFFFF)
    table = np.zeros(size, dtype=np.uint64)  # (hash >> 32) << 32 | (column + 1); 0: empty
    found = 0
    for j in range(d):
        if indptr[j + 1] == indptr[j]:
            continue  # an empty column is never in a model
        h = hashes[j]
        tag = h >> np.uint64(32)
        slot = h & mask
        while table[slot] != 0:
            entry = table[slot]
            i = np.int64(entry & low) - 1
            if entry >> np.uint64(32) == tag and hashes[i] == h:
                rep[j] = i
                found += 1
                break
            slot = (slot + np.uint64(1)) & mask
        if rep[j] == j:
            table[slot] = (tag << np.uint64(32)) | np.uint64(j + 1)
    return found


@njit(cache=True, nogil=True)
def _undo_unequal(bits, indices, indptr, dense, rep):
    """Sets rep[j] = j where column j differs from column rep[j] (stored counts, rows or the
    values' bits); returns how many repeats are left."""
    left = 0
    for j in range(rep.shape[0]):
        k = rep[j]
        if k == j:
            continue
        start_j, start_k, nnz = indptr[j], indptr[k], indptr[j + 1] - indptr[j]
        equal = nnz == indptr[k + 1] - start_k
        for p in range(nnz if equal else 0):
            if bits[start_j + p] != bits[start_k + p] or (not dense and indices[start_j + p] != indices[start_k + p]):
                equal = False
                break
        if equal:
            left += 1
        else:
            rep[j] = j
    return left


@njit(cache=True, nogil=True)
def column_norms(data, indices, indptr, dense, c, out):
    """out[j] = sqrt(sum_i c_i x_ij^2) for every column of a column layout. Shapes: c (n,), out (d,)."""
    for j in range(out.shape[0]):
        out[j] = np.sqrt(column_moments(data, indices, indptr, dense, j, c, c)[1])


@njit(cache=True, nogil=True)
def column_dots_and_norms(data, indices, indptr, dense, r, c, dots, norms):
    """dots[j] = sum_i r_i x_ij and norms[j] = sqrt(sum_i c_i x_ij^2) for every column, in one
    read of the columns (lam_max's gradient at the null model and the weighted column norms).
    Shapes: r, c (n,); dots, norms (d,)."""
    for j in range(dots.shape[0]):
        acc_r, acc_c = column_moments(data, indices, indptr, dense, j, r, c)
        dots[j] = acc_r
        norms[j] = np.sqrt(acc_c)
