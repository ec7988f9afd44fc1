"""Passes over a row layout (CSR) that give what a column layout would: the sums of every
column, correlations X^T v, and a few columns copied out.

A sparse X arrives as CSR from most readers (svmlight, scikit-learn's vectorisers), and the
column solvers convert it to CSC (``_transpose``), a scatter of every stored value into new
memory: on news20 (4.9M values over 589k columns) 75-110 ms, four to six passes over the rows.
A solve whose model will use a few columns needs that conversion only for them: these passes
let it read the rest from the rows (``problems.memory.Problem``'s row start). Each scatters
into d-long outputs; on this project's host a pass over news20's rows takes about as long as
the same sums over its columns (20 against 18 ms), and earn's half as long (1.0 against 2.2 ms).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

from .memory import Matrix, index_dtype

__all__ = ["columns_of_rows", "row_correlations", "row_dots_and_norms"]


@njit(cache=True, nogil=True)
def row_dots_and_norms(data, indices, indptr, r, c, dots, norms):
    """dots[j] = sum_i r_i x_ij and norms[j] = sqrt(sum_i c_i x_ij^2) for every column, read row
    by row (``memory.column_dots_and_norms`` from a row layout). Two equal columns get equal
    sums to the bit (the same terms in the same order). Shapes: r, c (n,); dots, norms (d,)."""
    dots[:] = 0.0
    norms[:] = 0.0
    for i in range(indptr.shape[0] - 1):
        ri, ci = r[i], c[i]
        k, end = indptr[i], indptr[i + 1]
        while k < end:
            j, x = indices[k], data[k]
            dots[j] += ri * x
            norms[j] += ci * x * x
            k += 1
    for j in range(norms.shape[0]):
        norms[j] = np.sqrt(norms[j])


@njit(cache=True, nogil=True)
def row_correlations(data, indices, indptr, V, out):
    """out[j, q] = sum_i V[i, q] x_ij for every column j and each of the m vectors in V's
    columns (V (n, m), out (d, m), both C-ordered). The m sums of a column share a cache line,
    yet two vectors measured 1.4-2.4x one on news20: CD's row start correlates one."""
    out[:] = 0.0
    m = V.shape[1]
    for i in range(indptr.shape[0] - 1):
        k, end = indptr[i], indptr[i + 1]
        while k < end:
            j, x = indices[k], data[k]
            for q in range(m):
                out[j, q] += V[i, q] * x
            k += 1


@njit(cache=True, nogil=True)
def _count_selected(indices, selected, counts):
    """counts[selected[j]] += 1 for every stored value: the selected columns' counts land at their
    slot + 1, the others' all at 0. Without a branch on whether a column is selected (a fifth to a
    third of them are, in no order the predictor can follow): earn 3.2 -> 1.4 ms, news20 30 -> 12 ms."""
    for k in range(indices.shape[0]):
        counts[selected[indices[k]]] += 1


@njit(cache=True, nogil=True)
def _scatter_selected(data, indices, indptr, selected, sub_indptr, sub_data, sub_indices):
    """The selected columns' values (selected[j] = slot + 1; 0: not selected), row by row, each at its
    column's next free position (rows in increasing order: the result is canonical). A branchless
    scatter, writing the others to a spare slot, measured no faster."""
    free = sub_indptr[:-1].copy()
    for i in range(indptr.shape[0] - 1):
        k, end = indptr[i], indptr[i + 1]
        while k < end:
            s = selected[indices[k]]
            if s > 0:
                p = free[s - 1]
                sub_indices[p] = i
                sub_data[p] = data[k]
                free[s - 1] = p + 1
            k += 1


def columns_of_rows(rows: Matrix, cols, max_nnz=None):
    """The CSC matrix of the columns ``cols`` (strictly increasing) of a CSR layout, copied out in
    two passes over its index array (count, then scatter); None, after the first pass only, when
    they hold more than ``max_nnz`` stored values."""
    n, d = rows.shape
    cols = np.asarray(cols, dtype=np.int64)
    selected = np.zeros(d, dtype=np.int32 if cols.shape[0] < 2**31 - 1 else np.int64)
    selected[cols] = np.arange(1, cols.shape[0] + 1, dtype=selected.dtype)
    counts = np.zeros(cols.shape[0] + 1, dtype=np.int64)
    _count_selected(rows.indices, selected, counts)
    counts[0] = 0  # the columns not selected
    np.cumsum(counts, out=counts)
    nnz = int(counts[-1])
    if max_nnz is not None and nnz > max_nnz:
        return None
    index = index_dtype(max(n, nnz))
    sub_indptr = counts.astype(index)
    sub_data, sub_indices = np.empty(nnz), np.empty(nnz, dtype=index)
    _scatter_selected(rows.data, rows.indices, rows.indptr, selected, sub_indptr, sub_data, sub_indices)
    M = sp.csc_matrix((n, cols.shape[0]), dtype=np.float64)
    M.data, M.indices, M.indptr = sub_data, sub_indices, sub_indptr
    M.has_canonical_format = True
    return M
