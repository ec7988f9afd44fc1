"""Numba kernels of the svmlight reader (private).

The reader works on a ``uint8`` buffer holding whole lines of text. The Python
driver (:mod:`l1scale.data.svmlight`) sizes the output arrays with
:func:`count_bytes`, calls :func:`parse_block`, and turns the returned error code
into a :class:`~l1scale.exceptions.DataFormatError`.

Numbers are converted to the float64 that Python's ``float`` returns for the same
text (and so scikit-learn's loader): an exact fast path for short mantissas
(Clinger), the Eisel-Lemire algorithm for up to 19 significant digits, and status
``NUM_SLOW`` for the rare rest (more digits, subnormal or overflowing results,
exact halfway ambiguities): such tokens are recorded in a ``slow`` table and the
driver converts them with ``float``.

All reader kernels live in this one module on purpose: Numba's on-disk cache
(``cache=True``) is invalidated by edits to a function's own file only, so a
kernel calling into another module would keep stale machine code after that
module changes.

Numba has no mutable scalar arguments, so the kernels share a small ``int64``
state vector whose slots are named by the ``S_*`` constants.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# Bytes that matter to the grammar.
_NL, _HASH, _COLON, _DOT, _PLUS, _MINUS, _SPACE = 10, 35, 58, 46, 43, 45, 32

# Status of one number conversion.
NUM_OK, NUM_SLOW, NUM_BAD, NUM_NONFINITE = 0, 1, 2, 3

# Exact powers of ten for the Clinger fast path (all exactly representable).
_P10_EXACT = np.array([10.0**k for k in range(23)])
_TWO53 = np.uint64(1 << 53)

# 128-bit mantissas of 10**q, truncated (rounded down), normalised so that the
# top bit is set; row = q - _P10_MIN, columns = (high 64 bits, low 64 bits).
_P10_MIN, _P10_MAX = -348, 347


def _powers_of_ten_128() -> np.ndarray:
    table = np.empty((_P10_MAX - _P10_MIN + 1, 2), dtype=np.uint64)
    for q in range(_P10_MIN, _P10_MAX + 1):
        if q >= 0:
            m = 5**q
            shift = 128 - m.bit_length()
            m = m << shift if shift >= 0 else m >> -shift
        else:
            p = 5**-q
            m = (1 << (127 + p.bit_length())) // p
        table[q - _P10_MIN, 0] = m >> 64
        table[q - _P10_MIN, 1] = m & ((1 << 64) - 1)
    return table


_P10_128 = _powers_of_ten_128()

# Typed constants: numba promotes mixed int64/uint64 arithmetic to float.
_U0, _U1, _U3, _U9, _U10 = np.uint64(0), np.uint64(1), np.uint64(3), np.uint64(9), np.uint64(10)
_U32, _U53, _U63 = np.uint64(32), np.uint64(53), np.uint64(63)
_U1FF = np.uint64(0x1FF)
_MASK32 = np.uint64(0xFFFFFFFF)

_WORD_INF = np.frombuffer(b"inf", dtype=np.uint8)
_WORD_INFINITY = np.frombuffer(b"infinity", dtype=np.uint8)
_WORD_NAN = np.frombuffer(b"nan", dtype=np.uint8)


@njit(cache=True)
def _is_space(c):
    # ASCII whitespace except newline: space, \t, \v, \f, \r (as bytes.split()).
    return c == _SPACE or (c >= 9 and c <= 13 and c != _NL)


@njit(cache=True)
def _is_delim(c):
    """True for a byte that ends a token: whitespace, newline or comment start."""
    return c == _SPACE or (c >= 9 and c <= 13) or c == _HASH


@njit(cache=True)
def _is_digit(c):
    return c >= 48 and c <= 57


@njit(cache=True)
def _skip_token(buf, pos, n):
    while pos < n and not _is_delim(buf[pos]):
        pos += 1
    return pos


@njit(cache=True)
def _mul64(a, b):
    """Full 128-bit product of two uint64 as (high, low)."""
    a_lo, a_hi = a & _MASK32, a >> _U32
    b_lo, b_hi = b & _MASK32, b >> _U32
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (p0 >> _U32) + (p1 & _MASK32) + (p2 & _MASK32)
    hi = p3 + (p1 >> _U32) + (p2 >> _U32) + (mid >> _U32)
    return hi, a * b


@njit(cache=True)
def _clz64(x):
    n = 0
    for shift in (32, 16, 8, 4, 2, 1):
        if x >> np.uint64(64 - shift) == _U0:
            n += shift
            x = x << np.uint64(shift)
    return n


@njit(cache=True)
def _eisel_lemire(man, exp10):
    """Correctly rounded ``man * 10**exp10`` for a nonzero uint64 ``man``.

    Returns ``(value, ok)``; ``ok`` is False where the algorithm cannot decide
    (ambiguous halfway case, subnormal or overflowing result, exponent out of
    table); the caller then falls back to an exact conversion. Port of Go's
    ``strconv.eiselLemire64`` (Lemire 2021, "Number parsing at a gigabyte per second").
    """
    if exp10 < _P10_MIN or exp10 > _P10_MAX:
        return 0.0, False
    clz = _clz64(man)
    man = man << np.uint64(clz)
    ret_exp2 = ((217706 * exp10) >> 16) + 64 + 1023 - clz
    x_hi, x_lo = _mul64(man, _P10_128[exp10 - _P10_MIN, 0])
    if (x_hi & _U1FF) == _U1FF and x_lo + man < man:
        y_hi, y_lo = _mul64(man, _P10_128[exp10 - _P10_MIN, 1])
        m_hi, m_lo = x_hi, x_lo + y_hi
        if m_lo < x_lo:
            m_hi += _U1
        if (m_hi & _U1FF) == _U1FF and m_lo + _U1 == _U0 and y_lo + man < man:
            return 0.0, False
        x_hi, x_lo = m_hi, m_lo
    msb = x_hi >> _U63
    mant = x_hi >> (msb + _U9)
    ret_exp2 -= 1 - np.int64(msb)
    if x_lo == _U0 and (x_hi & _U1FF) == _U0 and (mant & _U3) == _U1:
        return 0.0, False
    mant = (mant + (mant & _U1)) >> _U1
    if (mant >> _U53) > _U0:
        mant = mant >> _U1
        ret_exp2 += 1
    if ret_exp2 <= 0 or ret_exp2 >= 0x7FF:
        return 0.0, False
    return math.ldexp(float(mant), ret_exp2 - 1075), True


@njit(cache=True)
def _decimal_to_float(man, exp10, dropped):
    """``man * 10**exp10`` correctly rounded, or status NUM_SLOW when unsure."""
    if man == _U0:
        return 0.0, NUM_OK
    if dropped:  # a nonzero digit beyond the 19th: needs the exact conversion
        return 0.0, NUM_SLOW
    if man <= _TWO53 and exp10 >= -22 and exp10 <= 22:
        # Both operands exact, so one IEEE operation rounds correctly (Clinger).
        f = float(man)
        if exp10 >= 0:
            return f * _P10_EXACT[exp10], NUM_OK
        return f / _P10_EXACT[-exp10], NUM_OK
    value, ok = _eisel_lemire(man, exp10)
    return value, (NUM_OK if ok else NUM_SLOW)


@njit(cache=True)
def _match_word(buf, pos, end, word):
    if end - pos != word.shape[0]:
        return False
    for i in range(word.shape[0]):
        if (buf[pos + i] | 32) != word[i]:
            return False
    return True


@njit(cache=True)
def _is_nonfinite_word(buf, pos, n):
    """True when buf[pos:] spells inf, infinity or nan (any case) up to a delimiter."""
    end = _skip_token(buf, pos, n)
    return (
        _match_word(buf, pos, end, _WORD_INF)
        or _match_word(buf, pos, end, _WORD_INFINITY)
        or _match_word(buf, pos, end, _WORD_NAN)
    )


@njit(cache=True)
def _parse_exponent(buf, pos, n):
    """Parse ``[+-]digits`` after an 'e'. Returns (exponent, pos, ok)."""
    sign = 1
    if pos < n and (buf[pos] == _MINUS or buf[pos] == _PLUS):
        sign = -1 if buf[pos] == _MINUS else 1
        pos += 1
    start, e = pos, 0
    while pos < n and _is_digit(buf[pos]):
        if e < 1_000_000:  # saturate: beyond this the result is 0 or inf anyway
            e = e * 10 + (buf[pos] - 48)
        pos += 1
    return sign * e, pos, pos > start


@njit(cache=True)
def parse_number(buf, pos, n):
    """Parse a decimal number starting at ``buf[pos]``.

    Returns ``(value, end, status)``; ``end`` is the position after the number
    syntax (the caller checks that a delimiter follows); status is one of NUM_*.
    """
    neg = False
    if pos < n and (buf[pos] == _MINUS or buf[pos] == _PLUS):
        neg = buf[pos] == _MINUS
        pos += 1
    man, nd, exp10, ndigits, dropped, in_frac = _U0, 0, 0, 0, False, False
    while pos < n:
        c = buf[pos]
        if c == _DOT and not in_frac:
            in_frac = True
        elif _is_digit(c):
            ndigits += 1
            if nd < 19:  # keep up to 19 significant digits: fits in uint64
                man = man * _U10 + np.uint64(c - 48)
                nd += man != _U0
                exp10 -= in_frac
            else:
                exp10 += not in_frac
                dropped = dropped or c != 48
        else:
            break
        pos += 1
    if ndigits == 0:
        return 0.0, pos, (NUM_NONFINITE if (not in_frac and _is_nonfinite_word(buf, pos, n)) else NUM_BAD)
    if pos < n and (buf[pos] | 32) == 101:  # 'e' or 'E'
        e, pos, ok = _parse_exponent(buf, pos + 1, n)
        if not ok:
            return 0.0, pos, NUM_BAD
        exp10 += e
    value, status = _decimal_to_float(man, exp10, dropped)
    return (-value if neg else value), pos, status


# Error codes returned in st[S_ERR]; the driver maps them to messages.
ERR_NONE = 0
ERR_MISSING_LABEL = 1
ERR_BAD_LABEL = 2
ERR_NONFINITE_LABEL = 3
ERR_NO_COLON = 4
ERR_BAD_INDEX = 5
ERR_NEGATIVE_INDEX = 6
ERR_ZERO_INDEX = 7
ERR_DUPLICATE_INDEX = 8
ERR_UNSORTED_INDEX = 9
ERR_BAD_VALUE = 10
ERR_NONFINITE_VALUE = 11

# Slots of the state vector.
S_POS, S_NNZ, S_NSLOW, S_ERR, S_ERR_A, S_ERR_B, S_MIN, S_MAX = range(8)
N_SLOTS = 8
_NO_INDEX = np.iinfo(np.int64).max

# Largest index accepted; more digits than this are reported as a bad index.
_INDEX_LIMIT = 10**17


@njit(cache=True)
def _skip_spaces(buf, pos, n):
    while pos < n and _is_space(buf[pos]):
        pos += 1
    return pos


@njit(cache=True)
def _next_line(buf, pos, n):
    """Position just after the newline at or after ``pos`` (``n`` at the end)."""
    while pos < n and buf[pos] != _NL:
        pos += 1
    return min(pos + 1, n)


@njit(cache=True)
def _is_qid(buf, pos, n):
    return pos + 3 < n and buf[pos] == 113 and buf[pos + 1] == 105 and buf[pos + 2] == 100 and buf[pos + 3] == _COLON


@njit(cache=True)
def parse_index(buf, pos, n):
    """Parse the ``idx`` of ``idx:value``. Returns (idx, position after ':', error code)."""
    start, idx, bad = pos, 0, False
    if pos < n and buf[pos] == _PLUS:
        pos += 1
    while pos < n and buf[pos] != _COLON and not _is_delim(buf[pos]):
        if _is_digit(buf[pos]) and idx < _INDEX_LIMIT:
            idx = idx * 10 + (buf[pos] - 48)
        else:
            bad = True
        pos += 1
    if pos >= n or buf[pos] != _COLON:
        return 0, pos, ERR_NO_COLON
    if buf[start] == _MINUS:
        return 0, pos + 1, ERR_NEGATIVE_INDEX
    if bad or pos == start or (pos == start + 1 and buf[start] == _PLUS):
        return 0, pos + 1, ERR_BAD_INDEX
    return idx, pos + 1, ERR_NONE


@njit(cache=True)
def _push_slow(slow, st, target, start, end):
    """Record a token for exact conversion by the driver; grows ``slow`` as needed."""
    k = st[S_NSLOW]
    if k == slow.shape[0]:
        bigger = np.empty((2 * k + 64, 3), dtype=np.int64)
        for r in range(k):  # a loop: an array assigned to a slice compiles a shape check (2.5 s)
            bigger[r, 0], bigger[r, 1], bigger[r, 2] = slow[r, 0], slow[r, 1], slow[r, 2]
        slow = bigger
    slow[k, 0], slow[k, 1], slow[k, 2] = target, start, end
    st[S_NSLOW] = k + 1
    return slow


@njit(cache=True)
def _parse_label(buf, pos, n, row, st, labels, slow):
    """Parse the label of ``row`` at ``pos``; sets st[S_POS] or st[S_ERR]."""
    start = pos
    value, pos, status = parse_number(buf, pos, n)
    if status != NUM_NONFINITE and pos < n and not _is_delim(buf[pos]):
        status = NUM_BAD
    if status == NUM_BAD:
        end = _skip_token(buf, start, n)
        colon = False
        for k in range(start, end):
            colon = colon or buf[k] == _COLON
        st[S_ERR] = ERR_MISSING_LABEL if colon else ERR_BAD_LABEL
    elif status == NUM_NONFINITE:
        st[S_ERR] = ERR_NONFINITE_LABEL
    elif status == NUM_SLOW:
        slow = _push_slow(slow, st, -(row + 1), start, pos)
    labels[row] = value
    st[S_POS] = pos
    return slow


@njit(cache=True)
def _index_error(idx, prev, strict):
    if strict and idx == 0:
        return ERR_ZERO_INDEX
    if idx == prev:
        return ERR_DUPLICATE_INDEX
    if idx < prev:
        return ERR_UNSORTED_INDEX
    return ERR_NONE


@njit(cache=True, inline="always")
def _fast_feature(buf, pos, n):
    """The common ``idx:value`` token (decimal index; value ``[-+]digits[.digits]`` of at
    most 19 digits, exactly convertible by one IEEE operation, then a delimiter) in one
    scan: returns (idx, value, end, ok). ``ok`` False leaves the token to the general
    path (parse_index, parse_number), which checks and reports everything.

    Nearly every token of real files takes this path, at about twice the speed of the
    general one. Its result is exact: at most 15 digits make an integer mantissa below
    2**53 and at most 22 fraction digits an exact power of ten, so the one division
    rounds correctly (Clinger), as ``float`` does."""
    p, idx = pos, 0
    while p < n and p - pos < 17:
        d = np.int64(buf[p]) - 48
        if d < 0 or d > 9:
            break
        idx = idx * 10 + d
        p += 1
    if p == pos or p >= n or buf[p] != _COLON:
        return 0, 0.0, pos, False
    p += 1
    neg = False
    if p < n and (buf[p] == _MINUS or buf[p] == _PLUS):
        neg = buf[p] == _MINUS
        p += 1
    start, man, frac, dot = p, np.int64(0), 0, False
    while p < n:
        c = buf[p]
        d = np.int64(c) - 48
        if d >= 0 and d <= 9:
            man = man * 10 + d
            frac += dot
        elif c == _DOT and not dot:
            dot = True
        else:
            break
        p += 1
    digits = p - start - dot
    if digits == 0 or digits > 15 or frac > 22 or (p < n and not _is_delim(buf[p])):
        return 0, 0.0, pos, False  # an exponent, long mantissa or any oddity: the general path
    value = float(man) / _P10_EXACT[frac] if frac else float(man)
    return idx, (-value if neg else value), p, True


@njit(cache=True)
def _parse_features(buf, pos, n, strict, st, data, indices, slow):
    """Parse ``idx:value`` tokens up to the end of the line (or a comment)."""
    nnz0 = nnz = st[S_NNZ]
    prev, first = -1, True
    while True:
        pos = _skip_spaces(buf, pos, n)
        if pos >= n or buf[pos] == _NL or buf[pos] == _HASH:
            break
        if first and _is_qid(buf, pos, n):  # query id: skipped, as scikit-learn does
            pos, first = _skip_token(buf, pos, n), False
            continue
        first = False
        idx, value, end, ok = _fast_feature(buf, pos, n)
        if ok and idx > prev and (idx > 0 or not strict):
            data[nnz], indices[nnz] = value, idx
            nnz += 1
            prev, pos = idx, end
            continue
        idx, pos, err = parse_index(buf, pos, n)
        if err == ERR_NONE:
            err = _index_error(idx, prev, strict)
        st[S_ERR_A], st[S_ERR_B] = idx, prev
        if err != ERR_NONE:
            st[S_ERR] = err
            return slow
        start = pos
        value, pos, status = parse_number(buf, pos, n)
        if status != NUM_NONFINITE and pos < n and not _is_delim(buf[pos]):
            status = NUM_BAD
        if status == NUM_BAD or status == NUM_NONFINITE:
            st[S_ERR] = ERR_BAD_VALUE if status == NUM_BAD else ERR_NONFINITE_VALUE
            return slow
        if status == NUM_SLOW:
            slow = _push_slow(slow, st, nnz, start, pos)
        data[nnz], indices[nnz] = value, idx
        nnz += 1
        prev = idx
    if nnz > nnz0:  # indices are increasing: first and last are the row's extremes
        st[S_MIN] = min(st[S_MIN], indices[nnz0])
        st[S_MAX] = max(st[S_MAX], prev)
    st[S_NNZ], st[S_POS] = nnz, pos
    return slow


@njit(cache=True)
def count_bytes(buf):
    """Number of newlines and of colons in ``buf``: bounds on rows and on nnz."""
    newlines = colons = 0
    for c in buf:
        newlines += c == _NL
        colons += c == _COLON
    return newlines, colons


@njit(cache=True, nogil=True)  # run in threads (svmlight._in_order)
def parse_block(buf, first_line, strict, data, indices, indptr, labels, line_nos, slow):
    """Parse whole lines of svmlight text.

    Parameters
    ----------
    buf : uint8[n]
        Text; every line complete (the last may lack its newline).
    first_line : int
        Number of lines before ``buf`` in the file (line numbers are 1-based).
    strict : bool
        Reject index 0 (the file is declared one-based).
    data : float64[cap]; indices : int64[cap]
        Output values and raw file indices; ``cap`` >= number of colons.
    indptr : int64[rows_cap + 1]; labels : float64[rows_cap]; line_nos : int64[rows_cap]
        Output rows; ``rows_cap`` >= number of newlines + 1.
    slow : int64[k, 3]
        Initial table of tokens left to the driver (target, start, end), where
        target >= 0 is a position in ``data`` and -(row + 1) a label.

    Returns
    -------
    n_rows : int
    line : int
        Last line number reached (the offending line on error).
    slow : int64[m, 3]
        The (possibly grown) slow table; st[S_NSLOW] rows are used.
    st : int64[N_SLOTS]
        State: S_NNZ, S_ERR (ERR_*), S_ERR_A/S_ERR_B (details), S_MIN/S_MAX (raw index range).
    """
    st = np.zeros(N_SLOTS, dtype=np.int64)
    st[S_MIN], st[S_MAX] = _NO_INDEX, -1
    n = buf.shape[0]
    pos, line, row = 0, first_line, 0
    indptr[0] = 0
    while pos < n:
        line += 1
        pos = _skip_spaces(buf, pos, n)
        if pos < n and buf[pos] != _NL and buf[pos] != _HASH:
            slow = _parse_label(buf, pos, n, row, st, labels, slow)
            if st[S_ERR] == ERR_NONE:
                slow = _parse_features(buf, st[S_POS], n, strict, st, data, indices, slow)
            if st[S_ERR] != ERR_NONE:
                return row, line, slow, st
            line_nos[row] = line
            row += 1
            indptr[row] = st[S_NNZ]
            pos = st[S_POS]
        pos = _next_line(buf, pos, n)
    return row, line, slow, st


@njit(cache=True)
def scan_indices(buf, need_max):
    """Smallest and largest raw feature index in well-formed ``idx:value`` tokens.

    Used to resolve ``zero_based="auto"`` (and the width) before streaming.
    Malformed tokens are ignored here: the real parse reports them. Stops at
    the first index 0 unless ``need_max``. Returns (min, max); (_NO_INDEX, -1)
    when there is no index.
    """
    n = buf.shape[0]
    pos, lo, hi = 0, _NO_INDEX, -1
    while pos < n:
        pos = _skip_token(buf, _skip_spaces(buf, pos, n), n)  # the label
        first = True
        while True:
            pos = _skip_spaces(buf, pos, n)
            if pos >= n or buf[pos] == _NL or buf[pos] == _HASH:
                break
            if not (first and _is_qid(buf, pos, n)):
                idx, pos, err = parse_index(buf, pos, n)
                if err == ERR_NONE:
                    lo, hi = min(lo, idx), max(hi, idx)
                    if lo == 0 and not need_max:
                        return lo, hi
            first = False
            pos = _skip_token(buf, pos, n)
        pos = _next_line(buf, pos, n)
    return lo, hi


@njit(cache=True, nogil=True)  # run in threads (svmlight._in_order)
def scan_labels(buf, first_line, labels, line_nos, st, slow):
    """The labels of whole lines of svmlight text, and a count of their features, without
    parsing the features: the label pass of a streaming fit (classes, counts, weights, n,
    nnz) at close to memory speed. A feature token is counted as one nonzero (a ``qid:``
    token first on the line is not, as in :func:`parse_block`); its syntax is left to the
    passes that parse it.

    Returns ``(n_rows, line, slow)`` as :func:`parse_block`; ``st[S_NNZ]`` holds the count
    of feature tokens and ``st[S_ERR]`` a label error (``line`` is then the offending line).
    """
    n = buf.shape[0]
    pos, line, row = 0, first_line, 0
    tokens = st[S_NNZ]
    while pos < n:
        line += 1
        pos = _skip_spaces(buf, pos, n)
        if pos < n and buf[pos] != _NL and buf[pos] != _HASH:
            slow = _parse_label(buf, pos, n, row, st, labels, slow)
            if st[S_ERR] != ERR_NONE:
                st[S_NNZ] = tokens
                return row, line, slow
            pos = st[S_POS]
            line_nos[row] = line
            row += 1
            first = True
            while True:
                pos = _skip_spaces(buf, pos, n)
                if pos >= n or buf[pos] == _NL or buf[pos] == _HASH:
                    break
                if not (first and _is_qid(buf, pos, n)):
                    tokens += 1
                first = False
                pos = _skip_token(buf, pos, n)
        pos = _next_line(buf, pos, n)
    st[S_NNZ] = tokens
    return row, line, slow
