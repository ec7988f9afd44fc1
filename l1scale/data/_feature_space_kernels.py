"""Numba kernels of :mod:`l1scale.data.feature_spaces`.

Every kernel is ``@njit(cache=True, nogil=True)``: FCL's writer thread calls the block
kernels while the trainer thread runs its own kernels, and both only run in parallel
when neither holds the GIL. Blocks come out as CSC (``indptr`` int64, ``rows`` int32,
``vals`` float64) with rows ascending in each column; full transforms as CSR with int64
column indices, ascending in each row.

DNA codes are uint8 A, C, G, T = 0..3; a pattern digit 4 is the wildcard '?'. Products
take the input as CSR (sorted indices, no explicit zeros) plus its CSC structure.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# ---------------------------------------------------------------------------- DNA


@njit(cache=True, nogil=True)
def _window_codes(codes, i, k, d, out, e):
    """Write the 2^(d-1) codes of the patterns matching codes[i, k:k+d] into
    out[e:e+2^(d-1)], ascending: each digit t doubles the list, every code c becoming
    (5c + base, 5c + 4), and '?' = 4 is the largest digit, so order is kept. The doubling
    runs backwards in place (slot u is read before slots 2u, 2u+1 are written)."""
    out[e] = codes[i, k]
    size = 1
    for t in range(1, d):
        base = codes[i, k + t]
        for u in range(size - 1, -1, -1):
            c = out[e + u] * 5
            out[e + 2 * u] = c + base
            out[e + 2 * u + 1] = c + 4
        size *= 2


@njit(cache=True, nogil=True)
def dna_block(codes, k, d):
    """CSC block of the patterns at start position ``k``.

    codes : uint8 (n, L). Column c (0 <= c < 4 * 5^(d-1)) is the pattern whose base-5
    digits are c (most significant first). Returns (indptr, rows, vals, bad_row): bad_row
    is the first row holding a code > 3 in the window (then the arrays are empty), or -1.
    """
    n = codes.shape[0]
    half = 1 << (d - 1)  # patterns matching one window: any subset of digits 1..d-1 made '?'
    m = 4 * 5 ** (d - 1)
    cols = np.empty(n * half, dtype=np.int64)
    counts = np.zeros(m + 1, dtype=np.int64)
    for i in range(n):
        for t in range(d):
            if codes[i, k + t] > 3:
                return np.zeros(1, np.int64), np.empty(0, np.int32), np.empty(0, np.float64), i
        _window_codes(codes, i, k, d, cols, i * half)
        for e in range(i * half, (i + 1) * half):
            counts[cols[e] + 1] += 1
    # counting sort by column; rows stay ascending because rows are visited in order
    for c in range(m):
        counts[c + 1] += counts[c]
    fill = counts[:-1].copy()
    rows = np.empty(n * half, dtype=np.int32)
    for e in range(n * half):
        c = cols[e]
        rows[fill[c]] = e // half
        fill[c] += 1
    return counts, rows, np.ones(n * half), -1


@njit(cache=True, nogil=True)
def dna_rows(codes, positions, d):
    """Full CSR of the DNA space over ``positions`` (int64, ascending); each window's
    codes ascend and windows are blocks in order, so rows come out sorted without a sort."""
    n = codes.shape[0]
    half = 1 << (d - 1)
    m = 4 * 5 ** (d - 1)
    per_row = positions.shape[0] * half
    indptr = np.arange(n + 1).astype(np.int64) * per_row
    indices = np.empty(n * per_row, dtype=np.int64)
    e = 0
    for i in range(n):
        for r in range(positions.shape[0]):
            k = positions[r]
            _window_codes(codes, i, k, d, indices, e)
            for u in range(e, e + half):
                indices[u] += r * m
            e += half
    return indptr, indices, np.ones(n * per_row)


@njit(cache=True, nogil=True)
def dna_select(codes, starts, patterns):
    """CSR (n, q) of the q patterns ``patterns`` (int64 (q, d), 4 = '?') at ``starts`` (q,)."""
    n = codes.shape[0]
    q, d = patterns.shape
    counts = np.zeros(n + 1, dtype=np.int64)
    buf = np.empty(min(n * q, 1 << 22), dtype=np.int64)
    e = 0
    for i in range(n):
        for t in range(q):
            ok = True
            for s in range(d):
                b = patterns[t, s]
                if b != 4 and b != codes[i, starts[t] + s]:
                    ok = False
                    break
            if ok:
                if e == buf.shape[0]:  # grow geometrically: the output size is unknown
                    bigger = np.empty(2 * buf.shape[0] + 1, dtype=np.int64)
                    for copied in range(e):  # a loop: a slice assigned an array compiles a shape check
                        bigger[copied] = buf[copied]
                    buf = bigger
                buf[e] = t
                e += 1
        counts[i + 1] = e
    indices = buf[:e].copy()
    return counts, indices, np.ones(e)


# ---------------------------------------------------------------------------- products


@njit(cache=True, nogil=True)
def _binom(a, b):
    """C(a, b) for small b, exactly in int64 (each partial product is itself a binomial)."""
    if b < 0 or a < b:
        return np.int64(0)
    c = np.int64(1)
    for q in range(1, b + 1):
        c = c * (a - b + q) // q
    return c


@njit(cache=True, nogil=True)
def _tails_count(q, degree, include_inputs):
    """Monomials x_a * (multiset of size t of q indices >= a), t = 1 - include_inputs .. degree - 1."""
    total = np.int64(0)
    for t in range(0 if include_inputs else 1, degree):
        total += _binom(q - 1 + t, t)
    return total


@njit(cache=True, nogil=True)
def _emit_row(a, p0, p1, indices, data, degree, include_inputs, deg_off, out_cols, out_vals, e):
    """Write the monomials of one row whose smallest index is ``a`` (the row's nonzeros
    indices[p0:p1], with indices[p0] == a); local column = deg_off[t] + colex rank of the
    tail multiset (v_1 <= ... <= v_t, v = index - a): sum_i C(v_i + i - 1, i)."""
    xa = data[p0]
    if include_inputs:
        out_cols[e] = 0
        out_vals[e] = xa
        e += 1
    idx = np.empty(max(degree - 1, 1), dtype=np.int64)
    for t in range(1, degree):
        idx[:t] = p0  # odometer over non-decreasing positions in the row
        while True:
            c = deg_off[t]
            v = xa
            for s in range(t):
                c += _binom(indices[idx[s]] - a + s, s + 1)
                v *= data[idx[s]]
            out_cols[e] = c
            out_vals[e] = v
            e += 1
            s = t - 1
            while s >= 0 and idx[s] == p1 - 1:
                s -= 1
            if s < 0:
                break
            idx[s] += 1
            idx[s + 1 : t] = idx[s]
    return e


@njit(cache=True, nogil=True)
def _find(indices, lo, hi, a):
    """Position of ``a`` in the sorted indices[lo:hi] (it is there)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < a:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def products_block_nnz(indptr, indices, col_ptr, col_rows, a, degree, include_inputs):
    """Exact nnz of block ``a`` (closed form per row: no monomial is generated)."""
    nnz = np.int64(0)
    for r in range(col_ptr[a], col_ptr[a + 1]):
        i = col_rows[r]
        p0 = _find(indices, indptr[i], indptr[i + 1], a)
        nnz += _tails_count(indptr[i + 1] - p0, degree, include_inputs)
    return nnz


@njit(cache=True, nogil=True)
def products_block(indptr, indices, data, col_ptr, col_rows, a, degree, include_inputs, deg_off, m):
    """CSC block of the m monomials whose smallest index is ``a``: only the rows with
    x_ia != 0 (CSC column a) and their nonzeros at indices >= a are visited."""
    lo, hi = col_ptr[a], col_ptr[a + 1]
    nnz = products_block_nnz(indptr, indices, col_ptr, col_rows, a, degree, include_inputs)
    cols = np.empty(nnz, dtype=np.int64)
    vals = np.empty(nnz, dtype=np.float64)
    owner = np.empty(nnz, dtype=np.int32)
    e = 0
    for r in range(lo, hi):
        i = col_rows[r]
        p0 = _find(indices, indptr[i], indptr[i + 1], a)
        e1 = _emit_row(a, p0, indptr[i + 1], indices, data, degree, include_inputs, deg_off, cols, vals, e)
        owner[e:e1] = i
        e = e1
    counts = np.zeros(m + 1, dtype=np.int64)
    for e in range(nnz):
        counts[cols[e] + 1] += 1
    for c in range(m):
        counts[c + 1] += counts[c]
    fill = counts[:-1].copy()
    rows = np.empty(nnz, dtype=np.int32)
    out = np.empty(nnz, dtype=np.float64)
    for e in range(nnz):  # stable counting sort: rows stay ascending within each column
        c = cols[e]
        rows[fill[c]] = owner[e]
        out[fill[c]] = vals[e]
        fill[c] += 1
    return counts, rows, out


@njit(cache=True, nogil=True)
def products_rows(indptr, indices, data, degree, include_inputs, deg_off, block_start):
    """Full CSR of the products space, columns ascending in each row; deg_off is the
    (n_inputs, degree) table of per-block offsets of each tail size."""
    n = indptr.shape[0] - 1
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        tot = np.int64(0)
        for p0 in range(indptr[i], indptr[i + 1]):
            tot += _tails_count(indptr[i + 1] - p0, degree, include_inputs)
        out_ptr[i + 1] = out_ptr[i] + tot
    cols = np.empty(out_ptr[n], dtype=np.int64)
    vals = np.empty(out_ptr[n], dtype=np.float64)
    for i in range(n):
        e = out_ptr[i]
        for p0 in range(indptr[i], indptr[i + 1]):
            a = indices[p0]
            e0 = e
            e = _emit_row(a, p0, indptr[i + 1], indices, data, degree, include_inputs, deg_off[a], cols, vals, e)
            # the odometer walks the tails in lex order, the index map is colex: sort the block
            order = np.argsort(cols[e0:e], kind="mergesort")
            sorted_cols, sorted_vals = cols[e0:e][order], vals[e0:e][order]
            for moved in range(e - e0):  # a loop: a slice assigned an array compiles a shape check
                cols[e0 + moved] = sorted_cols[moved] + block_start[a]
                vals[e0 + moved] = sorted_vals[moved]
    return out_ptr, cols, vals


@njit(cache=True, nogil=True)
def products_select(indptr, indices, data, monomials):
    """CSR (n, q) of the monomials (int64 (q, degree), indices ascending, padded with -1)."""
    n = indptr.shape[0] - 1
    q, width = monomials.shape
    counts = np.zeros(n + 1, dtype=np.int64)
    cols = np.empty(0, dtype=np.int64)
    vals = np.empty(0, dtype=np.float64)
    e = 0
    for i in range(n):
        lo, hi = indptr[i], indptr[i + 1]
        for t in range(q):
            v = 1.0
            for s in range(width):
                b = monomials[t, s]
                if b < 0:
                    break
                p = _find(indices, lo, hi, b)
                if p == hi or indices[p] != b:
                    v = 0.0
                    break
                v *= data[p]
            if v != 0.0:
                if e == cols.shape[0]:
                    grow = 2 * e + 1024
                    c2 = np.empty(grow, dtype=np.int64)
                    v2 = np.empty(grow, dtype=np.float64)
                    c2[:e] = cols[:e]
                    v2[:e] = vals[:e]
                    cols, vals = c2, v2
                cols[e] = t
                vals[e] = v
                e += 1
        counts[i + 1] = e
    return counts, cols[:e].copy(), vals[:e].copy()


# ---------------------------------------------------------------------------- random Fourier


@njit(cache=True, nogil=True)
def fourier_dense(indptr, indices, data, omega, offset, scale):
    """Row-major (n, q) values scale * cos(x_i . omega[:, t] + offset[t]); omega (n_inputs, q)
    may be a column slice of the full matrix (rows contiguous: the inner loop is)."""
    n = indptr.shape[0] - 1
    q = omega.shape[1]
    out = np.empty((n, q), dtype=np.float64)
    acc = np.empty(q, dtype=np.float64)
    for i in range(n):
        acc[:] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            x = data[p]
            row = omega[indices[p]]
            for t in range(q):
                acc[t] += x * row[t]
        for t in range(q):
            out[i, t] = scale * np.cos(acc[t] + offset[t])
    return out


@njit(cache=True, nogil=True)
def fourier_block(indptr, indices, data, omega, offset, j0, m, scale):
    """CSC block of the m dense columns j0 .. j0+m-1 over all n rows."""
    n = indptr.shape[0] - 1
    dense = fourier_dense(indptr, indices, data, omega[:, j0 : j0 + m], offset[j0 : j0 + m], scale)
    vals = np.empty(n * m, dtype=np.float64)
    rows = np.empty(n * m, dtype=np.int32)
    for t in range(m):
        for i in range(n):
            vals[t * n + i] = dense[i, t]
            rows[t * n + i] = i
    return np.arange(m + 1).astype(np.int64) * n, rows, vals
