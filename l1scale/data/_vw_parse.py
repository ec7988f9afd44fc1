"""Numba kernels of the Vowpal Wabbit text reader and of feature hashing (private).

The driver (:mod:`l1scale.data.vw`) sizes the output arrays with
:func:`count_bytes`, calls :func:`parse_block` on a ``uint8`` buffer of whole
lines, converts the few numbers the kernel leaves over (see below), and turns the
returned error code into a :class:`~l1scale.exceptions.DataFormatError`.

Hashing is MurmurHash3 x86_32 (:func:`murmur3_32`, equal to
``sklearn.utils.murmurhash3_32(key, seed, positive=True)``) wrapped in Vowpal
Wabbit's two hashers (:func:`hash_name`): ``strings`` (VW's default: a name made
only of the digits 0-9 hashes to its integer value plus the seed, any other name
to murmur3 of its bytes) and ``all`` (murmur3 of every name).

Numbers are parsed by :func:`l1scale.data._svmlight_parse.parse_number` (exactly
Python's ``float``); tokens it leaves to the driver (more than 19 significant
digits, subnormal or overflowing) are recorded in a ``slow`` table. Numba's
on-disk cache only watches this file: after editing ``_svmlight_parse.py``,
delete this module's ``__pycache__/*.nbi`` (or touch this file) so that the
kernels here are recompiled.

Numba has no mutable scalar arguments, so the kernels share a small ``int64``
state vector whose slots are named by the ``S_*`` constants.

The kernels are compiled without Numba's reference counting (``_nrt=False``): with it,
every call of a helper increfs and decrefs each array argument (atomic operations the
refcount pruner cannot remove from branchy code), which cost more than parsing a short
line (about 250 ns per line, 30 ns per feature). So no kernel here allocates or returns
an array: the driver passes every buffer, the state vector and the slow table in.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.core.cpu import CPUTargetOptions

from ._svmlight_parse import NUM_BAD, NUM_NONFINITE, NUM_OK, NUM_SLOW, parse_number

_NL, _COLON, _BAR, _QUOTE, _SPACE, _TAB, _CR = 10, 58, 124, 39, 32, 9, 13

_U0, _U5, _U8, _U10 = np.uint64(0), np.uint64(5), np.uint64(8), np.uint64(10)
_U13, _U15, _U16, _U24 = np.uint64(13), np.uint64(15), np.uint64(16), np.uint64(24)
_M32 = np.uint64(0xFFFFFFFF)
_C1, _C2, _C3 = np.uint64(0xCC9E2D51), np.uint64(0x1B873593), np.uint64(0xE6546B64)
_F1, _F2 = np.uint64(0x85EBCA6B), np.uint64(0xC2B2AE35)

# Error codes returned in st[S_ERR]; the driver maps them to messages.
ERR_NONE = 0
ERR_NO_LABEL = 1
ERR_BAD_LABEL = 2
ERR_NONFINITE_LABEL = 3
ERR_BAD_WEIGHT = 4
ERR_NEGATIVE_WEIGHT = 5
ERR_INITIAL = 6
ERR_LABEL_WORDS = 7
ERR_NS_NAME = 8
ERR_BAD_SCALE = 9
ERR_NONFINITE_SCALE = 10
ERR_SLOW_SCALE = 11
ERR_BAD_VALUE = 12
ERR_NONFINITE_VALUE = 13
ERR_SLOW_FULL = 14  # the slow table is full: the driver parses the block again with a larger one

# Slots of the state vector.
S_POS, S_NNZ, S_NSLOW, S_ERR, S_ERR_A, S_ERR_B, S_WEIGHTED, S_WORDS = range(8)
N_SLOTS = S_WORDS + 6  # S_WORDS...: (start, end) of the first three words before '|'


# Kinds of slow tokens (column 0 of the slow table: kind, row, target, start, end).
SLOW_LABEL, SLOW_WEIGHT, SLOW_VALUE = 0, 1, 2

# Rows longer than this are sorted by a (stabilised) heapsort, shorter ones by insertion.
_SHORT_ROW = 32

# Kernel options: cached, and without reference counting where this Numba has the option.
_JIT = {"cache": True, **({"_nrt": False} if hasattr(CPUTargetOptions, "_nrt") else {})}


@njit(**_JIT)
def _rotl32(x, r):
    return ((x << r) | (x >> (np.uint64(32) - r))) & _M32


@njit(**_JIT)
def _mix_k(k):
    k = (k * _C1) & _M32
    k = _rotl32(k, _U15)
    return (k * _C2) & _M32


@njit(**_JIT)
def murmur3_32(buf, start, end, seed):
    """MurmurHash3 x86_32 of ``buf[start:end]`` (uint8) with a uint64 ``seed`` < 2**32.

    Returns a uint64 below 2**32.
    """
    h = seed & _M32
    p = start
    for _ in range((end - start) // 4):
        k = (
            np.uint64(buf[p])
            | (np.uint64(buf[p + 1]) << _U8)
            | (np.uint64(buf[p + 2]) << _U16)
            | (np.uint64(buf[p + 3]) << _U24)
        )
        h ^= _mix_k(k)
        h = _rotl32(h, _U13)
        h = (h * _U5 + _C3) & _M32
        p += 4
    rem = (end - start) & 3
    if rem > 0:
        k = _U0
        if rem == 3:
            k ^= np.uint64(buf[p + 2]) << _U16
        if rem >= 2:
            k ^= np.uint64(buf[p + 1]) << _U8
        k ^= np.uint64(buf[p])
        h ^= _mix_k(k)
    h ^= np.uint64(end - start)
    h ^= h >> _U16
    h = (h * _F1) & _M32
    h ^= h >> _U13
    h = (h * _F2) & _M32
    return h ^ (h >> _U16)


@njit(**_JIT)
def hash_name(buf, start, end, seed, hash_all):
    """Vowpal Wabbit's hash of the name ``buf[start:end]`` (uint64, modulo 2**64).

    ``hash_all``: murmur3 with ``seed``. Otherwise VW's ``strings`` hasher: bytes
    up to 0x20 are trimmed at both ends, an empty name hashes to ``seed``, a name
    of digits only to its integer value + ``seed``, any other to murmur3.
    """
    if hash_all:
        return murmur3_32(buf, start, end, seed)
    while start < end and buf[start] <= 32:
        start += 1
    while end > start and buf[end - 1] <= 32:
        end -= 1
    value = _U0
    for p in range(start, end):
        c = buf[p]
        if c < 48 or c > 57:
            return murmur3_32(buf, start, end, seed)
        value = value * _U10 + np.uint64(c - 48)
    return value + seed


@njit(**_JIT)
def hash_names(buf, offsets, seeds, hash_all, mask, out):
    """Column of each name ``buf[offsets[i]:offsets[i + 1]]`` hashed with ``seeds[i]``.

    buf : uint8[n]; offsets : int64[m + 1]; seeds : uint64[m]; mask : uint64 (2**b - 1);
    out : int64[m], written.
    """
    for i in range(out.shape[0]):
        out[i] = hash_name(buf, offsets[i], offsets[i + 1], seeds[i], hash_all) & mask


@njit(**_JIT)
def _is_space(c):
    # ASCII whitespace except newline: space, \t, \v, \f, \r.
    return c == _SPACE or (c >= 9 and c <= 13 and c != _NL)


@njit(**_JIT)
def _ends_token(buf, pos, end):
    """True at the end of a feature or namespace token: line end, whitespace or '|'."""
    return pos >= end or _is_space(buf[pos]) or buf[pos] == _BAR


@njit(**_JIT)
def count_bytes(buf):
    """Number of newlines and of whitespace bytes: bounds on rows and on features."""
    newlines = spaces = 0
    for c in buf:
        newlines += c == _NL
        spaces += c == _SPACE or (c >= 9 and c <= 13 and c != _NL)
    return newlines, spaces


@njit(**_JIT)
def _push_slow(slow, st, kind, row, target, start, end):
    """Record a number for exact conversion by the driver (ERR_SLOW_FULL when ``slow`` is full).

    The table has a fixed size, so that no kernel returns an array (reference counting
    at every call costs more than the parse of a short line).
    """
    k = st[S_NSLOW]
    if k == slow.shape[0]:
        st[S_ERR] = ERR_SLOW_FULL
        return
    slow[k, 0], slow[k, 1], slow[k, 2], slow[k, 3], slow[k, 4] = kind, row, target, start, end
    st[S_NSLOW] = k + 1


@njit(**_JIT)
def _label_number(buf, start, end, kind, row, st, out, slow):
    """Parse the label word (kind SLOW_LABEL) or the importance word into ``out[row]``."""
    value, stop, status = parse_number(buf, start, end)
    if status == NUM_SLOW and stop == end:
        _push_slow(slow, st, kind, row, row, start, end)
    elif status == NUM_NONFINITE:
        st[S_ERR] = ERR_NONFINITE_LABEL if kind == SLOW_LABEL else ERR_NEGATIVE_WEIGHT
    elif status == NUM_BAD or stop != end:
        st[S_ERR] = ERR_BAD_LABEL if kind == SLOW_LABEL else ERR_BAD_WEIGHT
    elif kind == SLOW_WEIGHT and value < 0:
        st[S_ERR] = ERR_NEGATIVE_WEIGHT
    out[row] = value


@njit(**_JIT)
def _label_section(buf, pos, stop, row, st, labels, weights, slow):
    """Parse ``label [importance] [tag]`` in ``buf[pos:stop]`` (``stop``: the first '|'
    or the line's end); a last word touching ``stop`` or starting with ' is the tag."""
    count, last_start, last_end = 0, -1, -1
    while True:
        while pos < stop and _is_space(buf[pos]):
            pos += 1
        if pos >= stop:
            break
        last_start = pos
        while pos < stop and not _is_space(buf[pos]):
            pos += 1
        if count < 3:
            st[S_WORDS + 2 * count], st[S_WORDS + 2 * count + 1] = last_start, pos
        last_end = pos
        count += 1
    if count > 0 and (last_end == stop or buf[last_start] == _QUOTE):
        count -= 1  # the tag: ignored
    if count == 0 or count > 3:
        st[S_ERR] = ERR_NO_LABEL if count == 0 else ERR_LABEL_WORDS
        return
    if count == 3:
        st[S_ERR] = ERR_INITIAL
        return
    _label_number(buf, st[S_WORDS], st[S_WORDS + 1], SLOW_LABEL, row, st, labels, slow)
    weights[row] = 1.0
    if count == 2 and st[S_ERR] == ERR_NONE:
        st[S_WEIGHTED] = 1
        _label_number(buf, st[S_WORDS + 2], st[S_WORDS + 3], SLOW_WEIGHT, row, st, weights, slow)


@njit(**_JIT)
def _namespace(buf, pos, end, st, hash_seed, default_hash, hash_all):
    """Parse a namespace header after its '|'. Returns (hash, scale, position after it)."""
    if _ends_token(buf, pos, end):
        return default_hash, 1.0, pos
    if buf[pos] == _COLON:
        st[S_ERR] = ERR_NS_NAME
        return _U0, 1.0, pos
    start = pos
    while not _ends_token(buf, pos, end) and buf[pos] != _COLON:
        pos += 1
    channel = hash_name(buf, start, pos, hash_seed, hash_all)
    scale = 1.0
    if pos < end and buf[pos] == _COLON:
        scale, pos, status = parse_number(buf, pos + 1, end)
        if status == NUM_NONFINITE:
            st[S_ERR] = ERR_NONFINITE_SCALE
        elif status == NUM_BAD or not _ends_token(buf, pos, end):
            st[S_ERR] = ERR_BAD_SCALE
        elif status == NUM_SLOW:
            st[S_ERR] = ERR_SLOW_SCALE
    return channel, scale, pos


@njit(**_JIT)
def _features(buf, pos, end, row, channel, scale, mask, hash_all, st, data, indices, slow):
    """Parse ``name[:value]`` tokens of one namespace up to the next '|' or the line's end.

    A feature's column is ``hash_name(name, channel) & mask``; an empty name (``:value``)
    is VW's anonymous feature, column ``(channel + k) & mask`` for the k-th one of the
    namespace. Zero values are dropped. Returns (pos, whether a value is slow).
    """
    nnz, anon, has_slow = st[S_NNZ], 0, False
    while True:
        while pos < end and _is_space(buf[pos]):
            pos += 1
        if pos >= end or buf[pos] == _BAR:
            break
        start = pos
        while not _ends_token(buf, pos, end) and buf[pos] != _COLON:
            pos += 1
        if pos > start:
            col = hash_name(buf, start, pos, channel, hash_all) & mask
        else:
            col = (channel + np.uint64(anon)) & mask
            anon += 1
        value, status, name_end = 1.0, NUM_OK, pos
        if pos < end and buf[pos] == _COLON:
            value, pos, status = parse_number(buf, pos + 1, end)
            if status == NUM_NONFINITE or status == NUM_BAD or not _ends_token(buf, pos, end):
                st[S_ERR] = ERR_NONFINITE_VALUE if status == NUM_NONFINITE else ERR_BAD_VALUE
            elif status == NUM_SLOW:  # placeholder 1.0: the driver multiplies in the exact value
                _push_slow(slow, st, SLOW_VALUE, row, nnz, name_end + 1, pos)
                value, has_slow = 1.0, True
        value *= scale
        if st[S_ERR] == ERR_NONE and not math.isfinite(value):
            st[S_ERR] = ERR_NONFINITE_VALUE
        if st[S_ERR] != ERR_NONE:
            st[S_ERR_A], st[S_ERR_B] = start, name_end  # the name, for the error message
            return pos, has_slow
        if value != 0.0 or status == NUM_SLOW:
            data[nnz], indices[nnz] = value, col
            nnz += 1
    st[S_NNZ] = nnz
    return pos, has_slow


@njit(**_JIT)
def _sift_down(keys, values, a, root, size):
    """Restore the max-heap ``keys[a:a + size]`` below ``root`` (moving ``values`` along)."""
    while True:
        child = 2 * root + 1
        if child >= size:
            return
        if child + 1 < size and keys[a + child] < keys[a + child + 1]:
            child += 1
        if keys[a + root] >= keys[a + child]:
            return
        keys[a + root], keys[a + child] = keys[a + child], keys[a + root]
        values[a + root], values[a + child] = values[a + child], values[a + root]
        root = child


@njit(**_JIT)
def _sort_row(data, indices, a, b):
    """Sort entries ``a:b`` by column, stably, in place (no allocation)."""
    if b - a <= _SHORT_ROW:
        for i in range(a + 1, b):
            col, value, j = indices[i], data[i], i
            while j > a and indices[j - 1] > col:
                indices[j], data[j] = indices[j - 1], data[j - 1]
                j -= 1
            indices[j], data[j] = col, value
        return
    for k in range(a, b):  # columns < 2**31: the position in the low bits makes it stable
        indices[k] = (indices[k] << 32) | (k - a)
    for root in range((b - a) // 2 - 1, -1, -1):
        _sift_down(indices, data, a, root, b - a)
    for size in range(b - a - 1, 0, -1):
        indices[a], indices[a + size] = indices[a + size], indices[a]
        data[a], data[a + size] = data[a + size], data[a]
        _sift_down(indices, data, a, 0, size)
    for k in range(a, b):
        indices[k] >>= 32


@njit(**_JIT)
def sort_sum(data, indices, a, b):
    """Sort entries ``a:b`` by column (stable), sum duplicates, drop zeros. Returns the new end."""
    _sort_row(data, indices, a, b)
    w = a
    for j in range(a, b):
        if w > a and indices[w - 1] == indices[j]:
            data[w - 1] += data[j]
        else:
            indices[w], data[w] = indices[j], data[j]
            w += 1
    out = a
    for j in range(a, w):
        if data[j] != 0.0:
            indices[out], data[out] = indices[j], data[j]
            out += 1
    return out


@njit(**_JIT)
def finish_rows(data, indices, indptr, fix):
    """Apply :func:`sort_sum` to the rows where ``fix`` is True and close the gaps.

    data : float64[nnz]; indices : int64[nnz]; indptr : int64[rows + 1] (updated);
    fix : bool[rows]. Returns the new nnz.
    """
    w, a = 0, indptr[0]
    for r in range(fix.shape[0]):
        b = indptr[r + 1]
        stop = sort_sum(data, indices, a, b) if fix[r] else b
        for k in range(a, stop):
            data[w], indices[w] = data[k], indices[k]
            w += 1
        indptr[r + 1], a = w, b
    return w


@njit(**_JIT)
def _parse_line(buf, pos, end, row, mask, hash_all, hash_seed, default_hash, st, data, indices, labels, weights, slow):
    """Parse one non-blank line ``buf[pos:end]``. Returns whether a value is slow."""
    bar = pos
    while bar < end and buf[bar] != _BAR:
        bar += 1
    stop = bar - 1 if bar == end and bar > pos and buf[bar - 1] == _CR else bar
    _label_section(buf, pos, stop, row, st, labels, weights, slow)
    pos, row_slow = bar, False
    while pos < end and st[S_ERR] == ERR_NONE:  # here buf[pos] == '|'
        channel, scale, pos = _namespace(buf, pos + 1, end, st, hash_seed, default_hash, hash_all)
        if st[S_ERR] == ERR_NONE:
            pos, value_slow = _features(buf, pos, end, row, channel, scale, mask, hash_all, st, data, indices, slow)
            row_slow = row_slow or value_slow
    return row_slow


@njit(**_JIT)
def parse_block(
    buf,
    first_line,
    hash_bits,
    hash_all,
    hash_seed,
    default_hash,
    data,
    indices,
    indptr,
    labels,
    weights,
    line_nos,
    slow,
    st,
):
    """Parse whole lines of Vowpal Wabbit text into hashed CSR rows.

    Parameters
    ----------
    buf : uint8[n]
        Text; every line complete (the last may lack its newline).
    first_line : int
        Number of lines before ``buf`` in the file (line numbers are 1-based).
    hash_bits : int; hash_all : bool; hash_seed, default_hash : uint64
        Columns are hashes modulo 2**hash_bits; ``default_hash`` seeds the default namespace.
    data : float64[cap]; indices : int64[cap]
        Output values and columns; ``cap`` >= number of whitespace bytes.
    indptr : int64[rows_cap + 1]; labels, weights : float64[rows_cap]; line_nos : int64[rows_cap]
        Output rows; ``rows_cap`` >= number of newlines + 1. weights[r] is 1.0 without importance.
    slow : int64[k, 5]
        Table of numbers left to the driver: (kind SLOW_*, row, target, start, end),
        target being the row for labels and weights, the position in ``data`` for values.
        When it fills up, parsing stops with ERR_SLOW_FULL.
    st : int64[N_SLOTS]
        State, reset here: S_NNZ, S_NSLOW (rows of ``slow`` used), S_ERR (ERR_*),
        S_ERR_A/S_ERR_B (span of the offending feature name), S_WEIGHTED (a line has
        an importance).

    Returns
    -------
    n_rows : int
    line : int
        Last line number reached (the offending line on error).

    Rows holding a slow value are left unsorted (see :func:`finish_rows`); the others
    are sorted by column, duplicates summed and zeros dropped.
    """
    st[:] = 0
    mask = np.uint64((1 << hash_bits) - 1)
    n = buf.shape[0]
    pos, line, row = 0, first_line, 0
    indptr[0] = 0
    while pos < n:
        line += 1
        end = pos
        while end < n and buf[end] != _NL:
            end += 1
        if end - pos >= 3 and buf[pos] == 0xEF and buf[pos + 1] == 0xBB and buf[pos + 2] == 0xBF:
            pos += 3  # UTF-8 byte order mark, skipped as VW does
        start = pos
        while start < end and _is_space(buf[start]):
            start += 1
        if start < end:
            row_slow = _parse_line(
                buf, pos, end, row, mask, hash_all, hash_seed, default_hash, st, data, indices, labels, weights, slow
            )
            if st[S_ERR] != ERR_NONE:
                return row, line
            if not row_slow:
                st[S_NNZ] = sort_sum(data, indices, indptr[row], st[S_NNZ])
            line_nos[row] = line
            row += 1
            indptr[row] = st[S_NNZ]
        pos = end + 1
    return row, line
