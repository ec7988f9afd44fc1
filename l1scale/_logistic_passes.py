"""The logistic loss's passes over the margins, each one vectorised loop.

Every pass of a batch solver over the n margins (the line search's trial point, the intercept's
Newton steps, the objective, the dual's conjugate) costs one exp and one log or log1p a row for
the logistic loss, and those dominate it. Each pass here forms a row's margin, its exp and log
(:mod:`l1scale._vector_math`: arithmetic that LLVM vectorises, within 1 ulp of NumPy's) and the
rest of the formula in one loop that writes only arrays, so that the whole loop runs on the host's
vector unit; a second loop sums what the pass returns (a sum in order cannot be vectorised
without reordering it, and summing in the first loop would keep that one scalar). The formulas
are those of the scalar kernels of :mod:`l1scale.losses`, whose dispatchers call these for the
logistic loss; results agree with them to a few units in the last place.

Measured on the project's AVX2 host (n = 9,603, one core): a line search's terms pass 15-20 ->
about 8 ns a row, where it was three steps (a Numba loop writing the exps' arguments, NumPy's
exp and log1p ufuncs in place, a Numba loop for the rest; NumPy's ufuncs are vectorised only
where the CPU has AVX-512, 5-9 ns a value without it). The kernels need ``error_model="numpy"``
(see :mod:`l1scale._vector_math`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._vector_math import exp_nonpositive, log1p_unit, log_unit

__all__ = [
    "logistic_conjugate_sum",
    "logistic_conjugate_sum_at_margins",
    "logistic_derivatives",
    "logistic_terms_along",
    "logistic_terms_at",
    "logistic_value_change",
    "logistic_value_sum",
]

# An optional array left out (Numba takes no None for an array): an empty one. As a baseline, the
# sums below are then of the losses themselves; as margins to keep, none are written.
_NONE = np.empty(0)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _slope_and_curvature(yi, zi, e):
    """(loss', loss'') of the logistic loss at margin zi, label yi, given e = exp(-|yi zi|): with
    q = 1 / (1 + e), -yi (e if yi zi > 0 else 1) q and e q^2. Selects, not branches (the sign of
    the margin follows no pattern), with the scalar kernels' values."""
    q = 1.0 / (1.0 + e)
    return -yi * (e if yi * zi > 0.0 else 1.0) * q, e * q * q


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _value_and_exp(yi, zi):
    """(loss(yi, zi), e): the logistic loss log1p(e) - min(m, 0), m = yi zi, e = exp(-|m|)."""
    m = yi * zi
    e = exp_nonpositive(-abs(m))
    return log1p_unit(e) - min(m, 0.0), e


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _slope_and_curvature_at(yi, zi):
    """(loss', loss'') of the logistic loss at margin zi, label yi."""
    return _slope_and_curvature(yi, zi, exp_nonpositive(-abs(yi * zi)))


@njit(cache=True, nogil=True)
def _weighted_sum(c, v, baseline):
    """sum_i c_i (v_i - baseline_i), in order (baseline empty: sum_i c_i v_i)."""
    total = 0.0
    if baseline.shape[0] > 0:
        for i in range(v.shape[0]):
            total += c[i] * (v[i] - baseline[i])
    else:
        for i in range(v.shape[0]):
            total += c[i] * v[i]
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def _terms(y, z, dz, step, c, z_new, lv_new, r, D):
    """z_new = z + step dz (dz empty: z_new = z + step), and there lv_new = loss, r = c loss',
    D = c loss''. Two loops: the exps and logs (r holding the exps), then r and D from them; one
    loop writing all four arrays stays scalar (LLVM checks at run time that the arrays it writes
    do not overlap those it reads, and gives up past eight such checks). A select on dz's presence
    would read dz[i] from an empty array once vectorised, hence a loop for each case."""
    if dz.shape[0] > 0:
        for i in range(z.shape[0]):
            zi = z[i] + step * dz[i]
            z_new[i] = zi
            lv_new[i], r[i] = _value_and_exp(y[i], zi)
    else:
        for i in range(z.shape[0]):
            zi = z[i] + step
            z_new[i] = zi
            lv_new[i], r[i] = _value_and_exp(y[i], zi)
    for i in range(z.shape[0]):
        slope, curvature = _slope_and_curvature(y[i], z_new[i], r[i])
        r[i] = c[i] * slope
        D[i] = c[i] * curvature


def logistic_terms_along(y, z, dz, step, c, lv, z_new, lv_new, r, D):
    """:func:`l1scale.losses.weighted_terms_along` for the logistic loss."""
    _terms(y, z, dz, float(step), c, z_new, lv_new, r, D)
    return _weighted_sum(c, lv_new, lv)


def logistic_terms_at(y, zw, b, c, z, lv, r, D):
    """:func:`l1scale.solvers.proximal.margin_loss_terms` for the logistic loss: at z = zw + b, lv =
    loss, r = c loss', D = c loss''; returns sum_i c_i lv_i."""
    _terms(y, zw, _NONE, float(b), c, z, lv, r, D)
    return _weighted_sum(c, lv, _NONE)


@njit(cache=True, nogil=True, error_model="numpy")
def _slopes(y, z, b, c, scratch):
    """scratch[0] = c loss'(y, z + b), scratch[1] = c loss''(y, z + b)."""
    for i in range(z.shape[0]):
        slope, curvature = _slope_and_curvature_at(y[i], z[i] + b)
        scratch[0, i] = c[i] * slope
        scratch[1, i] = c[i] * curvature


@njit(cache=True, nogil=True)
def _sums(scratch):
    grad, curv = 0.0, 0.0
    for i in range(scratch.shape[1]):
        grad += scratch[0, i]
        curv += scratch[1, i]
    return grad, curv


def logistic_derivatives(y, z, b, c):
    """:func:`l1scale.losses.weighted_derivatives` for the logistic loss."""
    scratch = np.empty((2, z.shape[0]))
    _slopes(y, z, float(b), c, scratch)
    return _sums(scratch)


@njit(cache=True, nogil=True, error_model="numpy")
def _values(y, z, b, out):
    """out = loss(y, z + b)."""
    for i in range(z.shape[0]):
        out[i], _ = _value_and_exp(y[i], z[i] + b)


def logistic_value_sum(y, z, c):
    """:func:`l1scale.losses.weighted_value` for the logistic loss."""
    out = np.empty(z.shape[0])
    _values(y, z, 0.0, out)
    return _weighted_sum(c, out, _NONE)


def logistic_value_change(y, zw, b, c, lv):
    """:func:`l1scale.solvers.proximal.loss_change` for the logistic loss: sum_i c_i (loss(y_i, zw_i
    + b) - lv_i), term by term."""
    out = np.empty(zw.shape[0])
    _values(y, zw, float(b), out)
    return _weighted_sum(c, out, lv)


@njit(cache=True, nogil=True, error_model="numpy")
def _conjugate_terms(y, u, c, scale, weighted, out):
    """out = t log t + (1 - t) log(1 - t) (x log x = 0 at x = 0), t = -y scale u_i (u_i = r_i / c_i
    when ``weighted``), on the rows of positive weight (0 elsewhere); False when such a row leaves
    the domain [0, 1] (the conjugate is then infinite)."""
    outside = False
    for i in range(u.shape[0]):
        ci = c[i]
        ui = u[i] / ci if weighted else u[i]
        t = -y[i] * (scale * ui)
        s = 1.0 - t
        a = t * log_unit(t) if t > 0.0 else 0.0
        b = s * log_unit(s) if s > 0.0 else 0.0
        kept = ci != 0.0
        outside = outside | (kept & ((t < 0.0) | (t > 1.0)))
        out[i] = a + b if kept else 0.0
    return not outside


def _conjugate_sum(y, u, c, scale, weighted, out):
    """sum_i c_i f*(scale u_i), the terms written to ``out`` (not u: a loop writing the array it
    reads is not vectorised, LLVM's overlap check sends it to its scalar version)."""
    if not _conjugate_terms(y, u, c, float(scale), weighted, out):
        return np.inf
    return _weighted_sum(c, out, _NONE)


def logistic_conjugate_sum(y, u, c, scale, weighted):
    """:func:`l1scale.losses.weighted_conjugate_at` for the logistic loss: sum_i c_i f*(scale u_i)."""
    return _conjugate_sum(y, u, c, scale, weighted, np.empty(u.shape[0]))


@njit(cache=True, nogil=True, error_model="numpy")
def _derivatives(y, z, out):
    """out = loss'(y, z)."""
    for i in range(z.shape[0]):
        slope, _ = _slope_and_curvature_at(y[i], z[i])
        out[i] = slope


def logistic_conjugate_sum_at_margins(y, z, c, scale):
    """:func:`l1scale.losses.weighted_conjugate` for the logistic loss: at u = loss'(y, z)."""
    # One scratch array for both (two arrays of n freed at each call cost the C library's
    # allocator a trim of the heap and n / 512 page faults each on the next, 100 us at n = 32,561).
    scratch = np.empty((2, z.shape[0]))
    _derivatives(y, z, scratch[0])
    return _conjugate_sum(y, scratch[0], c, scale, False, scratch[1])
