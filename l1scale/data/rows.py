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

from ._transpose import transposed_arrays
from .memory import Matrix, index_dtype

__all__ = ["columns_of_rows", "row_correlations", "row_dots_and_norms"]


@njit(cache=True, nogil=True)
def row_dots_and_norms(data, indices, indptr, r, c, dots, norms):
    """dots[j] = sum_i r_i x_ij and norms[j] = sqrt(sum_i c_i x_ij^2) for every column, read row
    by row (``memory.column_dots_and_norms`` from a row layout). Two equal columns get equal
    sums to the bit (the same terms in the same order). Shapes: r, c (n,); dots, norms (d,)."""
    dots[:] = 0.0
    norms[:] = 0.0
    one = np.uint64(1)
    for i in range(indptr.shape[0] - 1):
        ri, ci = r[i], c[i]
        k, end = np.uint64(indptr[i]), np.uint64(indptr[i + 1])
        while k < end:
            j, x = np.uint64(indices[k]), data[k]
            dots[j] += ri * x
            norms[j] += ci * x * x
            k += one
    for j in range(norms.shape[0]):
        norms[j] = np.sqrt(norms[j])


@njit(cache=True, nogil=True)
def row_correlations(data, indices, indptr, v, out):
    """out[j] = sum_i v_i x_ij for every column j, read row by row (X^T v from a row layout).
    Shapes: v (n,), out (d,).

    One vector: with V (n, m) and out (d, m) (m sums of a column in one cache line) the pass
    over news20's rows took 15.5 ms for m = 1 against 9 ms for this loop, and two vectors cost
    1.4-2.4x one (CD's row start correlates one)."""
    out[:] = 0.0
    one = np.uint64(1)
    for i in range(indptr.shape[0] - 1):
        vi = v[i]
        k, end = np.uint64(indptr[i]), np.uint64(indptr[i + 1])
        while k < end:
            out[np.uint64(indices[k])] += vi * data[k]
            k += one


@njit(cache=True, nogil=True)
def _filter_rows(data, indices, indptr, selected_bits, max_nnz, sub_indptr, sub_cols, sub_data):
    """The selected columns' values row by row (bit j % 8 of ``selected_bits[j // 8]`` set: j
    selected), as a CSR matrix: row i's values in sub_data[sub_indptr[i]:sub_indptr[i + 1]], in
    X's order, with their column indices in X (sub_cols). Returns their number, or -1 as soon as
    it exceeds ``max_nnz`` (sub_cols and sub_data hold max_nnz + 1 entries).

    Branchless: every value is written at the next free position, which advances only past a
    selected one (a fifth to a third of the values are, in no order the predictor can follow).
    The test reads a bitmap (news20's 589k columns: 74 kB, in L2) and the kept values' slots
    are looked up after (:func:`_slots`), on the fifth that is kept: news20 at 0.1 lam_max (its
    1,161 columns) 17.6 -> 12.2 ms against a slot map of int32 read for every value (2.4 MB).
    With a branch and a counting pass before it (to place the values straight into columns),
    earn at 0.1 lam_max took 3.3 ms for its 55 columns, news20 30 ms."""
    p, cap, one = np.uint64(0), np.uint64(max_nnz), np.uint64(1)
    sub_indptr[0] = 0
    for i in range(indptr.shape[0] - 1):
        k, end = np.uint64(indptr[i]), np.uint64(indptr[i + 1])
        while k < end:
            j = np.uint64(indices[k])
            sub_cols[p] = j
            sub_data[p] = data[k]
            p += (np.uint64(selected_bits[j >> np.uint64(3)]) >> (j & np.uint64(7))) & one
            if p > cap:
                return np.int64(-1)
            k += one
        sub_indptr[i + 1] = p
    return np.int64(p)


@njit(cache=True, nogil=True)
def _slots(sub_cols, nnz, slot):
    """sub_cols[:nnz] (columns of X) replaced by their slots among the selected (slot[j])."""
    for q in range(nnz):
        sub_cols[q] = slot[np.uint64(sub_cols[q])]


def columns_of_rows(rows: Matrix, cols, max_nnz=None):
    """The CSC matrix of the columns ``cols`` (strictly increasing) of a CSR layout: one pass over
    the rows keeps their values (a CSR matrix over ``cols``, in sequential writes), whose
    transposition then scatters only those. None, as soon as the pass has kept more than
    ``max_nnz`` stored values."""
    n, d = rows.shape
    cols = np.asarray(cols, dtype=np.int64)
    nnz_all = rows.data.shape[0]
    cap = nnz_all if max_nnz is None else int(min(max_nnz, nnz_all))
    index = index_dtype(max(n, d, cap + 1))
    selected = np.zeros(d, dtype=bool)
    selected[cols] = True
    bits = np.packbits(selected, bitorder="little")
    sub_indptr = np.empty(n + 1, dtype=index)
    sub_cols, sub_values = np.empty(cap + 1, dtype=index), np.empty(cap + 1)
    nnz = _filter_rows(rows.data, rows.indices, rows.indptr, bits, cap, sub_indptr, sub_cols, sub_values)
    if nnz < 0:
        return None
    slot = np.zeros(d, dtype=index)
    slot[cols] = np.arange(cols.shape[0], dtype=index)
    _slots(sub_cols, nnz, slot)
    data, indices, indptr = transposed_arrays(
        sub_values[:nnz], sub_cols[:nnz], sub_indptr, cols.shape[0], np.float64, index_dtype(max(n, nnz))
    )
    M = sp.csc_matrix((n, cols.shape[0]), dtype=np.float64)
    M.data, M.indices, M.indptr = data, indices, indptr
    M.has_canonical_format = True
    return M
