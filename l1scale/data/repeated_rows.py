"""Rows that repeat one another, found in the row layout, and the column layout of the distinct ones.

Two rows with the same values in the same columns, the same label and (for the weights) any
weight, contribute ``c_i loss(y_i, z_i)`` with the same margin: the objective is that of one
row of weight ``c_i + c_k``. Categorical data repeat rows often (a9a, UCI Adult one-hot encoded:
32,561 rows, 26,008 distinct with their labels), text almost never (earn: 2%). A solver that
reads every row several times per iteration gains what the repeats weigh.

Finding them costs one pass over the rows' values, so it is tried only where it can pay: first a
signature of each row read from its ends alone (its length, its first and last column and value,
its label), O(1) per row; rows with distinct signatures are distinct, and where fewer than
``min_share`` of the rows could repeat one another the search stops there (earn: 0.15 ms). Then
every row's values are hashed, and rows of equal hashes are compared value by value, so that
only rows equal to the bit are merged.

Every position read per stored value is unsigned (a column layout's columns are read through
``memory.column``, as the solvers read theirs): Numba checks a signed index for wrapping around
(a negative one counts from the end), a branch per read that kept these loops from being
compiled tightly. Measured on a9a, medians of 30 interleaved with the signed loops (2026-12-02,
this project's 2-core host): the search in the rows 3.0 -> 2.4 ms, in the columns (CSC) 5.4-6.7
-> 4.1-4.2 ms, the distinct rows' column layout 2.1-2.6 -> 1.7-1.8 ms (its scatter alone 2.3 ->
1.3 ms); the same groups and the same arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit

from .memory import Matrix, column, index_dtype

__all__ = [
    "COLUMNS_MAX",
    "MIN_SHARE",
    "PROBE_COLUMNS",
    "ROW_VALUES_MAX",
    "DistinctRows",
    "distinct_columns",
    "distinct_rows",
    "distinct_rows_of_columns",
]

#: Rows are merged only when at least this share of them repeat another: below it, the pass that
#: finds them and the copy of the distinct ones cost about what the solve saves.
MIN_SHARE = 0.05

_EMPTY = np.int64(-1)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_ODD = np.uint64(0xFF51AFD7ED558CCD)


class DistinctRows(NamedTuple):
    """The distinct rows of a CSR layout, as found by :func:`distinct_rows`.

    Attributes
    ----------
    first : ndarray of int64 (n_distinct,)
        The first row of each group, increasing (:func:`distinct_columns` makes their matrix).
    y : ndarray (n_distinct,)
        Their labels.
    c : ndarray (n_distinct,)
        Their weights: the sum of the weights of the rows each stands for.
    group : ndarray of int64 (n_samples,)
        For each row, the distinct row that stands for it.
    """

    first: np.ndarray
    y: np.ndarray
    c: np.ndarray
    group: np.ndarray


@njit(cache=True, nogil=True)
def _mix(h):
    """A 64-bit finaliser (splitmix64's): every input bit reaches every output bit."""
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return h


@njit(cache=True, nogil=True)
def _fold(bits):
    """A value's bits with the high half folded onto the low one: the values met most (small
    integers, 0.5) differ only in their exponent and top mantissa bits, which the multiplications
    of a hash chain carry out of the word."""
    v = np.uint64(bits)
    return v ^ (v >> np.uint64(32)) ^ (v >> np.uint64(52))


@njit(cache=True, nogil=True)
def _signatures(indices, indptr, value_bits, y_bits, out):
    """Each row's signature from its ends: its length, first and last column and value, label."""
    one = np.uint64(1)
    for i in range(indptr.shape[0] - 1):
        start, end = np.uint64(indptr[i]), np.uint64(indptr[i + 1])
        h = _mix(end - start + _GOLDEN) ^ np.uint64(y_bits[i])
        if end > start:
            h = _mix(h + np.uint64(indices[start])) ^ _fold(value_bits[start])
            h = _mix(h + np.uint64(indices[end - one])) ^ _fold(value_bits[end - one])
        out[i] = _mix(h)


@njit(cache=True, nogil=True)
def _count_distinct(hashes):
    """The number of distinct values among ``hashes`` (open addressing, linear probing)."""
    size = 1
    while size < 2 * hashes.shape[0]:
        size *= 2
    mask = np.uint64(size - 1)
    table = np.empty(size, dtype=np.uint64)
    used = np.zeros(size, dtype=np.bool_)
    distinct = 0
    for i in range(hashes.shape[0]):
        h = hashes[i]
        slot = h & mask
        while used[slot] and table[slot] != h:
            slot = (slot + np.uint64(1)) & mask
        if not used[slot]:
            used[slot] = True
            table[slot] = h
            distinct += 1
    return distinct


@njit(cache=True, nogil=True)
def _equal_rows(indices, indptr, value_bits, y_bits, i, k):
    """Whether rows i and k hold the same columns, the same values (to the bit) and labels."""
    start, end, other = np.uint64(indptr[i]), np.uint64(indptr[i + 1]), np.uint64(indptr[k])
    if y_bits[i] != y_bits[k] or end - start != np.uint64(indptr[k + 1]) - other:
        return False
    one = np.uint64(1)
    while start < end:
        if indices[start] != indices[other] or value_bits[start] != value_bits[other]:
            return False
        start += one
        other += one
    return True


@njit(cache=True, nogil=True)
def _row_hashes(indices, indptr, value_bits, y_bits, hashes, counts):
    """Each row's hash over its label, columns and values (one multiply per value, in two chains
    side by side: a finaliser per value cost 3x as much, one chain 1.5x), and its number of
    values."""
    one, two = np.uint64(1), np.uint64(2)
    for i in range(indptr.shape[0] - 1):
        start, end = np.uint64(indptr[i]), np.uint64(indptr[i + 1])
        h, h2 = np.uint64(y_bits[i]), _GOLDEN
        k = start
        while k + one < end:
            h = (h ^ _fold(value_bits[k])) * _ODD + np.uint64(indices[k])
            h2 = (h2 ^ _fold(value_bits[k + one])) * _ODD + np.uint64(indices[k + one])
            k += two
        if k < end:
            h = (h ^ _fold(value_bits[k])) * _ODD + np.uint64(indices[k])
        counts[i] = end - start
        hashes[i] = _mix(h ^ _mix(h2) ^ _mix(end - start))


@njit(cache=True, nogil=True)
def _verify_rows(indices, indptr, value_bits, y_bits, rep):
    """Rows that differ from their candidate (a collision of hashes) get rep[i] = i."""
    for i in range(rep.shape[0]):
        if rep[i] != i and not _equal_rows(indices, indptr, value_bits, y_bits, rep[i], i):
            rep[i] = i


@njit(cache=True, nogil=True)
def _transpose_rows(data, indices, indptr, first, new_data, new_indices, new_indptr):
    """The CSC arrays of the rows ``first`` of a CSR layout (row g of the result: row first[g]),
    canonical (each column's rows increasing, as ``first`` is): one counting pass over those
    rows, then one scatter, as ``data._transpose`` does for a whole matrix."""
    one = np.uint64(1)
    for g in range(first.shape[0]):
        i = first[g]
        k, end = np.uint64(indptr[i]), np.uint64(indptr[i + 1])
        while k < end:
            new_indptr[np.uint64(indices[k]) + one] += 1
            k += one
    for j in range(new_indptr.shape[0] - 1):
        new_indptr[j + 1] += new_indptr[j]
    free = new_indptr[:-1].copy()
    for g in range(first.shape[0]):
        i = first[g]
        k, end = np.uint64(indptr[i]), np.uint64(indptr[i + 1])
        while k < end:
            j = np.uint64(indices[k])
            p = np.uint64(free[j])
            new_indices[p] = g
            new_data[p] = data[k]
            free[j] = p + one
            k += one


@njit(cache=True, nogil=True)
def _column_signatures(value_bits, indices, indptr, dense, probes, y_bits, out):
    """Each row's signature from a few columns (``probes``) of a column layout: its values there
    (absent: none) and its label."""
    n = out.shape[0]
    for i in range(n):
        out[i] = np.uint64(y_bits[i]) ^ _GOLDEN
    for j in probes:
        rows, bits = column(value_bits, indices, indptr, dense, j)
        for p in range(rows.shape[0]):
            i = np.uint64(rows[p])
            out[i] = (out[i] ^ _fold(bits[p])) * _ODD + np.uint64(j)
    for i in range(n):
        out[i] = _mix(out[i])


@njit(cache=True, nogil=True)
def _column_hashes(value_bits, indices, indptr, dense, y_bits, hashes, counts):
    """Each row's hash over its values in column order (a row's values are met in increasing
    column order, as in its CSR row) and its number of stored values."""
    n = hashes.shape[0]
    for i in range(n):
        hashes[i] = np.uint64(y_bits[i])
        counts[i] = 0
    for j in range(indptr.shape[0] - 1):
        rows, bits = column(value_bits, indices, indptr, dense, j)
        for p in range(rows.shape[0]):
            i = np.uint64(rows[p])
            hashes[i] = (hashes[i] ^ _fold(bits[p])) * _ODD + np.uint64(j)
            counts[i] += 1
    for i in range(n):
        hashes[i] = _mix(hashes[i] ^ _mix(np.uint64(counts[i])))


@njit(cache=True, nogil=True)
def _candidates(hashes, counts, y_bits, rep):
    """rep[i]: the first row of equal hash, number of values and label (i itself if none)."""
    n = hashes.shape[0]
    size = 1
    while size < 2 * n:
        size *= 2
    mask = np.uint64(size - 1)
    table = np.full(size, _EMPTY)
    for i in range(n):
        h = hashes[i]
        slot = h & mask
        while True:
            k = table[slot]
            if k == _EMPTY:
                table[slot] = i
                rep[i] = i
                break
            if hashes[k] == h and counts[k] == counts[i] and y_bits[k] == y_bits[i]:
                rep[i] = k
                break
            slot = (slot + np.uint64(1)) & mask


@njit(cache=True, nogil=True)
def _verify_columns(value_bits, indices, indptr, dense, rep):
    """Rows whose values differ from their candidate's somewhere (a collision of hashes) get
    rep[i] = i. Column by column, each row's value there is noted (with the column, so that a
    row absent from it is told apart), then each row's value is compared with its candidate's;
    with equal numbers of values, all equal means equal rows (a binary search of the candidate
    in each column cost 2.5x as much on a9a)."""
    n = rep.shape[0]
    bad = np.zeros(n, dtype=np.bool_)
    seen_in = np.full(n, -1, dtype=np.int64)  # the last column in which each row has a value
    seen = np.empty(n, dtype=np.uint64)
    for j in range(indptr.shape[0] - 1):
        rows, bits = column(value_bits, indices, indptr, dense, j)
        for p in range(rows.shape[0]):
            i = np.uint64(rows[p])
            seen_in[i] = j
            seen[i] = bits[p]
        for p in range(rows.shape[0]):
            i = np.uint64(rows[p])
            r = np.uint64(rep[i])
            if r != i and (seen_in[r] != j or seen[r] != bits[p]):
                bad[i] = True
    for i in range(n):
        if bad[i]:
            rep[i] = i


@njit(cache=True, nogil=True)
def _number(rep, c, group, first, weights):
    """Groups numbered by first occurrence from each row's representative (the first row of its
    group, rep[r] == r); their first rows and the sums of their weights. Returns their number."""
    distinct = 0
    for i in range(rep.shape[0]):
        r = rep[i]
        if r == i:
            group[i], first[distinct], weights[distinct] = distinct, i, c[i]
            distinct += 1
        else:
            g = group[r]
            group[i] = g
            weights[g] += c[i]
    return distinct


#: Columns read for a column layout's signatures (the densest ones: those that tell rows apart most).
PROBE_COLUMNS = 4
#: A column layout is searched only when it is narrow: at most this many columns and this many
#: stored values per row on average (one-hot and binary codings: a9a 123 and 14, w8a 300 and 12;
#: small dense tables). Its search reads every stored value, where the rows' signatures read two
#: per row; on text, which rarely repeats a row, that cost 3.6 ms on earn and 51 ms on news20.
COLUMNS_MAX, ROW_VALUES_MAX = 4096, 64


def distinct_rows_of_columns(columns: Matrix, y, c, min_share=MIN_SHARE):
    """:func:`distinct_rows` for a column layout (CSC or Fortran-ordered dense) of at most
    ``COLUMNS_MAX`` columns and ``ROW_VALUES_MAX`` stored values per row (else None): the
    signatures come from the ``PROBE_COLUMNS`` columns of most stored values; the hashes from one
    pass over the columns; each row of a group is then checked against the group's first row
    value by value (a collision of hashes keeps its row apart)."""
    data, indices, indptr, dense = columns.arrays
    n, d = columns.shape
    stored = int(indptr[-1])
    if n < 2 or d == 0 or d > COLUMNS_MAX or stored > ROW_VALUES_MAX * n:
        return None
    value_bits, y_bits, most = _bits(data, y, n, min_share)
    hashes = np.empty(n, dtype=np.uint64)
    sizes = np.diff(np.asarray(indptr))
    probes = np.argsort(sizes)[::-1][:PROBE_COLUMNS].astype(np.int64)
    _column_signatures(value_bits, indices, indptr, dense, probes, y_bits, hashes)
    if _count_distinct(hashes) > most:
        return None
    counts = np.empty(n, dtype=np.int64)
    _column_hashes(value_bits, indices, indptr, dense, y_bits, hashes, counts)
    return _grouped(
        hashes, counts, y, y_bits, c, most, lambda rep: _verify_columns(value_bits, indices, indptr, dense, rep)
    )


def distinct_rows(rows: Matrix, y, c, min_share=MIN_SHARE):
    """The distinct rows of a canonical CSR layout ``rows`` with labels ``y`` and weights ``c``
    (rows equal in their columns, values and label, whatever their weights), or None when fewer
    than ``min_share`` of the rows repeat another (a dense layout: None).

    Returns
    -------
    DistinctRows or None
    """
    if rows.dense:
        return None
    data, indices, indptr = rows.data, rows.indices, rows.indptr
    n = indptr.shape[0] - 1
    if n < 2:
        return None
    value_bits, y_bits, most = _bits(data, y, n, min_share)
    hashes = np.empty(n, dtype=np.uint64)
    _signatures(indices, indptr, value_bits, y_bits, hashes)
    if _count_distinct(hashes) > most:
        return None
    counts = np.empty(n, dtype=np.int64)
    _row_hashes(indices, indptr, value_bits, y_bits, hashes, counts)
    return _grouped(
        hashes, counts, y, y_bits, c, most, lambda rep: _verify_rows(indices, indptr, value_bits, y_bits, rep)
    )


def _bits(data, y, n, min_share):
    """The values' and labels' bits (labels +0.0 and -0.0, equal numbers, given equal bits), and
    the most distinct rows among ``n`` for which merging is still worth it."""
    value_bits = data.view(np.uint64) if data.dtype == np.float64 else data.astype(np.float64).view(np.uint64)
    y_bits = (np.asarray(y, dtype=np.float64) + 0.0).view(np.uint64)
    return value_bits, y_bits, int(np.floor((1.0 - min_share) * n))


def _grouped(hashes, counts, y, y_bits, c, most, verify):
    """The groups of rows of equal hash, number of values and label, once ``verify(rep)`` has
    kept apart the rows that differ from their candidate ``rep[i]`` (the first row of equal hash,
    number and label); None when there are more than ``most``."""
    n = hashes.shape[0]
    rep = np.empty(n, dtype=np.int64)
    _candidates(hashes, counts, y_bits, rep)
    if np.count_nonzero(rep == np.arange(n)) > most:
        return None
    verify(rep)
    group, first, weights = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n)
    n_distinct = int(_number(rep, np.ascontiguousarray(c, dtype=np.float64), group, first, weights))
    if n_distinct > most:
        return None
    first = first[:n_distinct].copy()
    return DistinctRows(first, np.asarray(y)[first], weights[:n_distinct].copy(), group)


def distinct_columns(rows: Matrix, first):
    """The column layout (a canonical CSC matrix) of the rows ``first`` (increasing) of a CSR
    layout: straight from the rows, by one count and one scatter (a copy of the rows first, then
    the conversion, cost 1.7x as much on a9a)."""
    data, indices, indptr = rows.data, rows.indices, rows.indptr
    nnz = int((indptr[first + 1] - indptr[first]).sum())
    index = index_dtype(max(first.shape[0], nnz))
    new_data, new_indices = np.empty(nnz, dtype=np.float64), np.empty(nnz, dtype=index)
    new_indptr = np.zeros(rows.shape[1] + 1, dtype=index)
    _transpose_rows(data, indices, indptr, first, new_data, new_indices, new_indptr)
    matrix = sp.csc_matrix((first.shape[0], rows.shape[1]), dtype=np.float64)
    matrix.data, matrix.indices, matrix.indptr = new_data, new_indices, new_indptr
    matrix.has_canonical_format = True
    return matrix
