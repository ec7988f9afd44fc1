"""The logistic loss's passes over the margins with their exps and logs vectorised.

Every pass of a batch solver over the n margins (the line search's trial point, the intercept's
Newton steps, the objective, the dual's conjugate) costs one exp and one log or log1p a row for
the logistic loss, and those dominate it: Numba calls the C library's scalar exp and log1p
(4 and 9 ns a value on this project's host), where NumPy's ufuncs run them on SIMD registers
(0.8 and 1.1 ns a value where the CPU has AVX-512; about the C library's speed where it has not).
Each pass here is therefore three steps: a Numba loop that writes the arguments of the exps or
logs into an array, NumPy's ufunc on that array in place, and a Numba loop for the rest of
the formula (the same operations, in the same order, as the scalar kernels of
:mod:`l1scale.losses`, whose dispatchers call these for the logistic loss). Only the exp and the
log are NumPy's own: results agree with the scalar kernels to a few units in the last place.
"""

from __future__ import annotations

import numpy as np
from numba import njit

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


@njit(cache=True, nogil=True)
def _negative_margins_along(y, z, dz, step, z_new, out):
    """z_new = z + step dz and out = -|y z_new| (the exps' arguments)."""
    for i in range(z.shape[0]):
        zi = z[i] + step * dz[i]
        z_new[i] = zi
        out[i] = -abs(y[i] * zi)


@njit(cache=True, nogil=True)
def _terms_from_exps(y, z_new, c, lv, lv_new, e, D):
    """lv_new (holding log1p(e) on entry) becomes the loss, e (exp(-|m|)) becomes r = c loss',
    D = c loss''; returns sum_i c_i (lv_new_i - lv_i) (lv empty: sum_i c_i lv_new_i)."""
    based = lv.shape[0] > 0
    total = 0.0
    for i in range(z_new.shape[0]):
        yi = y[i]
        m = yi * z_new[i]
        ei = e[i]
        q = 1.0 / (1.0 + ei)
        # Selects, not branches (the sign of m follows no pattern; the loop then vectorises), with
        # the scalar kernel's values: x - 0.0 is x, and -y * 1.0 is -y.
        v = lv_new[i] - min(m, 0.0)
        d1 = -yi * (ei if m > 0.0 else 1.0) * q
        lv_new[i] = v
        e[i] = c[i] * d1
        D[i] = c[i] * (ei * q * q)
        total += c[i] * (v - (lv[i] if based else 0.0))
    return total


def logistic_terms_along(y, z, dz, step, c, lv, z_new, lv_new, r, D):
    """:func:`l1scale.losses.weighted_terms_along` for the logistic loss (r serves as scratch)."""
    _negative_margins_along(y, z, dz, step, z_new, r)
    np.exp(r, out=r)
    np.log1p(r, out=lv_new)
    return _terms_from_exps(y, z_new, c, lv, lv_new, r, D)


@njit(cache=True, nogil=True)
def _negative_margins(y, z, b, out, z_b):
    """out = -|y (z + b)| (the exps' arguments), and z_b = z + b unless z_b is empty."""
    keep = z_b.shape[0] > 0
    for i in range(z.shape[0]):
        zi = z[i] + b
        if keep:
            z_b[i] = zi
        out[i] = -abs(y[i] * zi)


@njit(cache=True, nogil=True)
def _slopes_from_exps(y, z, b, c, e):
    grad, curv = 0.0, 0.0
    for i in range(z.shape[0]):
        yi = y[i]
        m = yi * (z[i] + b)
        ei = e[i]
        q = 1.0 / (1.0 + ei)
        d1 = -yi * (ei if m > 0.0 else 1.0) * q
        grad += c[i] * d1
        curv += c[i] * (ei * q * q)
    return grad, curv


def logistic_derivatives(y, z, b, c):
    """:func:`l1scale.losses.weighted_derivatives` for the logistic loss."""
    e = np.empty(z.shape[0])
    _negative_margins(y, z, float(b), e, _NONE)
    np.exp(e, out=e)
    return _slopes_from_exps(y, z, float(b), c, e)


@njit(cache=True, nogil=True)
def _value_from_logs(y, z, b, c, log1p_e, lv):
    """sum_i c_i (loss(y_i, z_i + b) - lv_i) from log1p(exp(-|m_i|)) (lv empty: no baseline)."""
    based = lv.shape[0] > 0
    total = 0.0
    for i in range(z.shape[0]):
        v = log1p_e[i] - min(y[i] * (z[i] + b), 0.0)
        total += c[i] * (v - (lv[i] if based else 0.0))
    return total


def _value_sum(y, z, b, c, lv):
    t = np.empty(z.shape[0])
    _negative_margins(y, z, b, t, _NONE)
    np.exp(t, out=t)
    np.log1p(t, out=t)
    return _value_from_logs(y, z, b, c, t, lv)


def logistic_value_sum(y, z, c):
    """:func:`l1scale.losses.weighted_value` for the logistic loss."""
    return _value_sum(y, z, 0.0, c, _NONE)


def logistic_value_change(y, zw, b, c, lv):
    """:func:`l1scale.solvers.proximal.loss_change` for the logistic loss: sum_i c_i (loss(y_i, zw_i
    + b) - lv_i), term by term."""
    return _value_sum(y, zw, float(b), c, lv)


def logistic_terms_at(y, zw, b, c, z, lv, r, D):
    """:func:`l1scale.solvers.proximal.margin_loss_terms` for the logistic loss: at z = zw + b, lv =
    loss, r = c loss', D = c loss''; returns sum_i c_i lv_i (r serves as scratch)."""
    _negative_margins(y, zw, float(b), r, z)
    np.exp(r, out=r)
    np.log1p(r, out=lv)
    return _terms_from_exps(y, z, c, _NONE, lv, r, D)


@njit(cache=True, nogil=True, inline="always")
def _conjugate_argument(y, u, c, scale, weighted, i):
    """t = -y scale u_i (u_i = r_i / c_i when ``weighted``), as the scalar conjugate forms it."""
    ui = u[i] / c[i] if weighted else u[i]
    return -y[i] * (scale * ui)


@njit(cache=True, nogil=True)
def _conjugate_arguments(y, u, c, scale, weighted, logs):
    """logs[0] = t and logs[1] = 1 - t on the rows of positive weight (0.5 elsewhere: finite, and
    weighted by zero), to be replaced by their logs; False when a row leaves the domain [0, 1]."""
    for i in range(u.shape[0]):
        if c[i] != 0.0:
            t = _conjugate_argument(y, u, c, scale, weighted, i)
            if t < 0.0 or t > 1.0:
                return False
            logs[0, i], logs[1, i] = t, 1.0 - t
        else:
            logs[0, i], logs[1, i] = 0.5, 0.5
    return True


@njit(cache=True, nogil=True)
def _conjugate_from_logs(y, u, c, scale, weighted, logs):
    """sum_i c_i (t log t + (1 - t) log(1 - t)) (x log x = 0 at x = 0), t formed again as in
    :func:`_conjugate_arguments` and the logs read from ``logs``."""
    total = 0.0
    for i in range(u.shape[0]):
        ci = c[i]
        if ci != 0.0:
            t = _conjugate_argument(y, u, c, scale, weighted, i)
            s = 1.0 - t
            a = t * logs[0, i] if t > 0.0 else 0.0
            b = s * logs[1, i] if s > 0.0 else 0.0
            total += ci * (a + b)
    return total


def _conjugate_sum(y, u, c, scale, weighted, logs):
    """:func:`logistic_conjugate_sum` with the scratch ``logs`` (2, n) given."""
    scale = float(scale)
    if not _conjugate_arguments(y, u, c, scale, weighted, logs):
        return np.inf
    with np.errstate(divide="ignore"):  # log 0 = -inf at the domain's ends, weighted by 0 there
        np.log(logs, out=logs)
    return _conjugate_from_logs(y, u, c, scale, weighted, logs)


def logistic_conjugate_sum(y, u, c, scale, weighted):
    """:func:`l1scale.losses.weighted_conjugate_at` for the logistic loss. (One scratch array for
    the logs of both terms: two arrays of n freed at each call cost the C library's allocator
    a trim of the heap and n / 512 page faults each on the next, 100 us at n = 32,561.)"""
    return _conjugate_sum(y, u, c, scale, weighted, np.empty((2, u.shape[0])))


@njit(cache=True, nogil=True)
def _derivatives_from_exps(y, z, e):
    """e (exp(-|y z|) on entry) becomes loss'(y, z)."""
    for i in range(z.shape[0]):
        yi = y[i]
        ei = e[i]
        if yi * z[i] > 0.0:
            e[i] = -yi * ei / (1.0 + ei)
        else:
            e[i] = -yi / (1.0 + ei)


def logistic_conjugate_sum_at_margins(y, z, c, scale):
    """:func:`l1scale.losses.weighted_conjugate` for the logistic loss: at u = loss'(y, z)."""
    scratch = np.empty((3, z.shape[0]))
    u = scratch[0]
    _negative_margins(y, z, 0.0, u, _NONE)
    np.exp(u, out=u)
    _derivatives_from_exps(y, z, u)
    return _conjugate_sum(y, u, c, scale, False, scratch[1:])
