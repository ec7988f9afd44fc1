"""exp and log in a form the compiler vectorises, for the logistic loss's passes over the margins.

A batch solver's pass over the n margins (a line search's trial point, an intercept's Newton
step, a certificate's conjugate) costs an exp and a log or log1p a row for the logistic loss, and
those dominate it. Numba calls the C library's scalar ``exp`` and ``log1p`` (8-9 ns a value on a
host without AVX-512), and a loop that calls them is never vectorised; NumPy's ufuncs run them on
SIMD registers only where the CPU has AVX-512 (about 1 ns a value), and at the C library's speed
elsewhere (5-9 ns measured on this project's AVX2 host). The functions here are written in
arithmetic and bit operations only, inlined into the loops that use them, so LLVM vectorises
those loops on whatever vector unit the host has (1.5-2 ns a value for each on the AVX2 host),
and a pass forms its margins, exps, logs and loss terms in one loop instead of four.

The methods are the classic ones of Sun's fdlibm (whose coefficients, minimax polynomials on the
reduced ranges, are used here): exp by x = k ln 2 + r, |r| <= ln 2 / 2, with ln 2 split in two
parts so that r is exact, exp(r) from a rational form of degree 5 in r^2, and 2^k built from its
bits; log by x = 2^k (1 + f), sqrt(2)/2 <= 1 + f < sqrt(2), log(1 + f) = 2 atanh(f / (2 + f))
from a polynomial of degree 7 in s^2. Each is within 1 unit in the last place of NumPy's over the
ranges they serve (``tests/test_vector_math.py`` checks millions of values and the ends of each
range). Only the ranges the logistic loss needs are supported, so no branch is needed for
overflow: ``exp_nonpositive`` takes x <= 0, ``log1p_unit`` and ``log_unit`` take values in
[0, 1]. NaN goes through as NaN.

The kernels that inline these need ``error_model="numpy"``: under Numba's default (Python's),
every float division checks its divisor for zero to raise ZeroDivisionError, and that branch
keeps the loop scalar. Numba's on-disk cache of a kernel is keyed on its own module's source, not on
the inlined functions': after an edit here, delete the ``__pycache__/*.nbi`` and ``*.nbc`` files of
the modules that inline them (an installed release's files are all new, so its caches are too).
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["exp_nonpositive", "log1p_unit", "log_unit"]


@intrinsic
def _float_from_bits(typingctx, bits):
    """The float64 whose IEEE 754 bits are the int64 ``bits`` (a bit cast, no conversion)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def _bits_of_float(typingctx, x):
    """The IEEE 754 bits of the float64 ``x``, as an int64 (a bit cast, no conversion)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


# ln 2 = _LN2_HI + _LN2_LO, _LN2_HI with its last 32 bits zero: k _LN2_HI is exact for |k| < 2^32.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
# Adding 1.5 2^52 rounds to an integer, which then sits in the low bits of the sum's mantissa.
_ROUNDER = 6755399441055744.0
_ROUNDER_BITS = 0x4338000000000000
# Below this exp(x) rounds to 0 (the smallest subnormal is exp(-744.44)).
_EXP_LOW = -746.0
_TWO_MINUS_54 = 5.551115123125783e-17
# exp(r) = 1 + 2 r / (2 - R(r)), R(r) = r - r^2 (P1 + r^2 (P2 + ...)) (fdlibm's e_exp.c).
_P1 = 1.66666666666666019037e-01
_P2 = -2.77777777770155933842e-03
_P3 = 6.61375632143793436117e-05
_P4 = -1.65339022054652515390e-06
_P5 = 4.13813679705723846039e-08
# log(1 + f) = f - f^2 / 2 + s (f^2 / 2 + R(s^2)), s = f / (2 + f) (fdlibm's e_log.c).
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_SQRT2 = 1.4142135623730951
_SQRT2_MINUS_1 = 0.41421356237309503
_TINY = 2.2250738585072014e-308  # the smallest normal float64
_TWO_54 = 18014398509481984.0
_TWO_52 = 4503599627370496.0
_TWO_52_BITS = 0x4330000000000000
_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _log_core(f, k):
    """log(2^k (1 + f)) for sqrt(2)/2 - 1 <= f < sqrt(2) - 1 and k a float holding an integer."""
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    odd = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    even = w * (_LG2 + w * (_LG4 + w * _LG6))
    half_f2 = 0.5 * f * f
    return k * _LN2_HI - ((half_f2 - (s * (half_f2 + odd + even) + k * _LN2_LO)) - f)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def exp_nonpositive(x):
    """exp(x) for x <= 0 (within 1 ulp; subnormal results within one subnormal spacing, 0 below
    -746 where exp(x) rounds to 0)."""
    xc = _EXP_LOW if x < _EXP_LOW else x  # noqa: FURB136 (max(x, low) would turn NaN into low)
    shifted = xc * _INV_LN2 + _ROUNDER
    k = shifted - _ROUNDER  # round(x / ln 2), an integer in [-1076, 0]
    hi = xc - k * _LN2_HI
    lo = k * _LN2_LO
    r = hi - lo
    t = r * r
    c = r - t * (_P1 + t * (_P2 + t * (_P3 + t * (_P4 + t * _P5))))
    exp_r = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    # 2^k from its bits (the integer k is the low bits of ``shifted``'s); below 2^-1000 as
    # 2^(k + 54) 2^-54, since 2^k's exponent field would leave its range.
    subnormal = k < -1000.0
    lift = 54 if subnormal else 0
    two_k = _float_from_bits((_bits_of_float(shifted) - _ROUNDER_BITS + 1023 + lift) << 52)
    value = (exp_r * two_k) * (_TWO_MINUS_54 if subnormal else 1.0)
    return 0.0 if x < _EXP_LOW else value


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def log1p_unit(e):
    """log(1 + e) for 0 <= e <= 1 (within 1 ulp), e.g. e = exp(-|m|) in the logistic loss."""
    upper = e >= _SQRT2_MINUS_1
    # Above sqrt(2) - 1: 1 + e = 2 (1 + f) with f = (e - 1) / 2. e - 1 rounds for e < 1/2; its
    # rounding error (exact, by Fast2Sum) enters as the first-order term error / (1 + e).
    t = e - 1.0
    error = e - (t + 1.0)
    f = 0.5 * t if upper else e
    k = 1.0 if upper else 0.0
    correction = error / (1.0 + e) if upper else 0.0
    return _log_core(f, k) + correction


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def log_unit(x):
    """log(x) for 0 <= x <= 1 (within 1 ulp; -inf at 0), e.g. the logistic conjugate's t log t."""
    tiny = x < _TINY
    scaled = x * _TWO_54 if tiny else x  # subnormals made normal
    bits = _bits_of_float(scaled)
    exponent_field = (bits >> 52) & 0x7FF
    # The exponent as a float without an int-to-float conversion (AVX2 has none for int64).
    k = _float_from_bits(exponent_field | _TWO_52_BITS) - _TWO_52 - 1023.0
    m = _float_from_bits((bits & _MANTISSA) | _ONE_BITS)  # in [1, 2)
    upper = m > _SQRT2
    m = 0.5 * m if upper else m
    k = k + 1.0 if upper else k
    k = k - 54.0 if tiny else k
    value = _log_core(m - 1.0, k)
    return value if x > 0.0 else (-math.inf if x == 0.0 else math.nan)
