"""CSR <-> CSC conversion of a canonical matrix by one counting pass and one scatter (two
scatters through column blocks where the matrix is wide), and a compressed matrix into a dense
Fortran-ordered array by one scatter.

scipy's ``tocsc`` / ``tocsr`` keep the index type they are given: a matrix read by
``load_svmlight_file`` (int64 indices) converts into int64 arrays, which every later pass of
a solver then reads at 16 bytes per stored value instead of 12. Here the new index arrays
are int32 wherever the values fit (``index_dtype``), the values are cast to the layout's type
in the same scatter, and the loop is compiled for the types at hand. Measured on this
project's 2-core host, best of 15, a CSR matrix to CSC (earn 687k values, a9a 452k,
mnist10k 1.5M, news20 6.6M over 589k columns): from int64 indices scipy 14.2 / 5.5 / 36.8 /
186 ms, this 7.0 / 1.9 / 19.3 / 175 ms; from int32 indices scipy 6.0 / 1.8 / 23.5 / 90 ms,
this 5.5 / 1.7 / 15.0 / 75 ms.

A scatter writes each value at its column's next free position: one write stream per column.
Where the columns are many (earn's 27,901, news20's 589k) those streams' cache lines, and the
pages they lie in, do not stay in cache, and most writes miss. A wide matrix is therefore
scattered twice (:func:`_transpose_blocked`, a radix pass): first into blocks of
``2**shift`` consecutive columns (about :data:`BLOCKS` streams, which stay in cache), each
value written at its final block's next free position with its column within the block beside
it; then each block, small enough for the second-level cache, is scattered into its columns.
Both passes keep the rows' order, so the result is the same arrays to the bit, canonical.
Measured (2026-12-03, medians of 7 interleaved, CSR to CSC): earn 4.5-5.4 -> 3.5-3.8 ms, news20
87-101 -> 53-56 ms, 50,000 hashed rows of 40 values over 2**20 columns 40 -> 17 ms, over 16,384
columns 21 -> 12 ms; in whole fits the conversion of earn 5.1-5.8 -> 3.8-4.2 ms and of news20 78-81
-> 46-61 ms, the same arrays. mnist10k (784 columns, each row's pixels close together) stays
below the threshold, where the single scatter is faster.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["BLOCKED_MIN_COLUMNS", "BLOCKS", "block_shift", "densified_columns", "transposed_arrays"]

#: A matrix with at least this many columns of the new layout (and as many stored values) is
#: transposed through column blocks (``_transpose_blocked``); below it the columns' write streams
#: stay in cache and the single scatter is faster (mnist10k, 784 columns: 3.9 ms against 7.9).
BLOCKED_MIN_COLUMNS = 4096
#: About this many blocks in the first pass (a power of two columns each, at least 2**6).
BLOCKS = 128


def block_shift(n_minor: int, nnz: int) -> int:
    """log2 of the columns per block for the blocked transposition of a matrix with ``n_minor``
    columns in the new layout and ``nnz`` stored values, or -1 for the single scatter."""
    if n_minor < BLOCKED_MIN_COLUMNS or nnz < BLOCKED_MIN_COLUMNS:
        return -1
    return max(6, int(np.ceil(np.log2(n_minor / BLOCKS))))


def transposed_arrays(data, indices, indptr, n_minor: int, dtype, index, shift=None):
    """The arrays (data, indices, indptr) of the other compressed layout of a canonical matrix
    (each major slice's minor indices strictly increasing): its ``n_minor`` slices, each with
    its major indices in increasing order, so the result is canonical too.

    Parameters
    ----------
    data, indices, indptr : ndarray
        The compressed arrays (CSR: rows are the major slices).
    n_minor : int
        The other dimension (CSR: the number of columns).
    dtype : dtype
        The type of the new values.
    index : dtype
        The type of the new ``indices`` and ``indptr`` (they must hold the major dimension
        and the number of stored values).
    shift : int, optional
        log2 of the columns per block of a blocked transposition, -1 for the single scatter
        (default: :func:`block_shift`'s choice). Every choice gives the same arrays.
    """
    nnz = int(indptr[-1])
    new_indptr = np.zeros(n_minor + 1, dtype=index)
    new_indices = np.empty(nnz, dtype=index)
    new_data = np.empty(nnz, dtype=dtype)
    shift = block_shift(n_minor, nnz) if shift is None else int(shift)
    if shift < 0:
        _transpose(data, indices, indptr, new_data, new_indices, new_indptr)
    else:
        # The column within its block, stored beside each value between the two passes.
        within = np.empty(nnz, dtype=np.uint16 if shift <= 16 else np.uint32)
        _transpose_blocked(data, indices, indptr, new_data, new_indices, new_indptr, shift, within)
    return new_data, new_indices, new_indptr


@njit(cache=True, nogil=True)
def _counted(indices, indptr, new_indptr):
    """new_indptr as the other layout's (each minor slice's values counted, then summed)."""
    nnz = np.uint64(indptr[indptr.shape[0] - 1])
    one = np.uint64(1)
    k = np.uint64(0)
    while k < nnz:
        new_indptr[np.uint64(indices[k]) + one] += 1
        k += one
    for j in range(new_indptr.shape[0] - 1):
        new_indptr[j + 1] += new_indptr[j]


@njit(cache=True, nogil=True)
def _transpose(data, indices, indptr, new_data, new_indices, new_indptr):
    """Fill the other layout's arrays: count each minor slice's values, then place each value
    at its slice's next free position, visiting the major slices in order."""
    _counted(indices, indptr, new_indptr)
    n_major = indptr.shape[0] - 1
    one = np.uint64(1)
    free = new_indptr[:-1].copy()  # of the index type: news20's 589k positions then fit in cache
    for i in range(n_major):
        k = np.uint64(indptr[i])
        end = np.uint64(indptr[i + 1])
        while k < end:  # a while loop: Numba compiles range() over mixed index types less tightly
            j = np.uint64(indices[k])
            p = np.uint64(free[j])
            new_indices[p] = i
            new_data[p] = data[k]
            free[j] = p + one
            k += one


@njit(cache=True, nogil=True)
def _transpose_blocked(data, indices, indptr, new_data, new_indices, new_indptr, shift, within):
    """:func:`_transpose` by two scatters: each value to its block of ``2**shift`` minor slices
    (at the block's next free position in the new arrays, in the major slices' order, its slice
    within the block in ``within``), then each block's values to their slices (through a
    scratch copy of the block). The same arrays as one scatter."""
    _counted(indices, indptr, new_indptr)
    n_major = indptr.shape[0] - 1
    n_minor = new_indptr.shape[0] - 1
    one = np.uint64(1)
    width = np.uint64(1) << np.uint64(shift)
    n_blocks = (n_minor + int(width) - 1) >> shift
    block_free = np.empty(n_blocks, dtype=np.uint64)
    largest = 0
    for b in range(n_blocks):
        block_free[b] = new_indptr[b << shift]
        largest = max(largest, int(new_indptr[min((b + 1) << shift, n_minor)] - new_indptr[b << shift]))
    mask = width - one
    for i in range(n_major):
        k = np.uint64(indptr[i])
        end = np.uint64(indptr[i + 1])
        while k < end:
            j = np.uint64(indices[k])
            b = j >> np.uint64(shift)
            p = block_free[b]
            new_indices[p] = i
            new_data[p] = data[k]
            within[p] = j & mask
            block_free[b] = p + one
            k += one
    scratch_indices = np.empty(largest, dtype=new_indices.dtype)
    scratch_data = np.empty(largest, dtype=new_data.dtype)
    free = np.empty(int(width), dtype=np.uint64)
    for b in range(n_blocks):
        first = b << shift
        last = min(first + int(width), n_minor)
        start, stop = np.uint64(new_indptr[first]), np.uint64(new_indptr[last])
        q = np.uint64(0)
        while q < stop - start:
            scratch_indices[q] = new_indices[start + q]
            scratch_data[q] = new_data[start + q]
            q += one
        for c in range(last - first):
            free[c] = new_indptr[first + c]
        q = np.uint64(0)
        while q < stop - start:
            c = np.uint64(within[start + q])
            p = free[c]
            new_indices[p] = scratch_indices[q]
            new_data[p] = scratch_data[q]
            free[c] = p + one
            q += one


def densified_columns(data, indices, indptr, shape, rows_major: bool) -> np.ndarray:
    """The dense Fortran-ordered float64 array (``shape``: (rows, columns)) of a CSR
    (``rows_major``) or CSC matrix's arrays, duplicates summed, indices in any order: one
    scatter over the stored values into zeros (scipy's ``toarray(order="F")`` converts a CSR
    matrix to CSC first; on MADELON, 1M values, 6-7 ms against about 1 ms here)."""
    out = np.zeros(shape, order="F")
    n_rows = shape[0]
    if out.size:
        _densify(np.asarray(data, dtype=np.float64), indices, indptr, n_rows, rows_major, out.reshape(-1, order="F"))
    return out


@njit(cache=True, nogil=True)
def _densify(data, indices, indptr, n_rows, rows_major, out):
    """out[column * n_rows + row] += each stored value (``out``: the Fortran array's ravel)."""
    one = np.uint64(1)
    stride = np.uint64(n_rows)
    for a in range(indptr.shape[0] - 1):
        k = np.uint64(indptr[a])
        end = np.uint64(indptr[a + 1])
        major = np.uint64(a)
        while k < end:
            minor = np.uint64(indices[k])
            if rows_major:
                out[minor * stride + major] += data[k]
            else:
                out[major * stride + minor] += data[k]
            k += one
