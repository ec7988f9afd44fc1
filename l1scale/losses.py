"""Losses on margins: value, derivative, curvature and convex conjugate.

A loss never sees X: it works on margins ``z = x . w + b`` and labels ``y``.
Labels are in {-1, +1} for the classification losses and real for
``squared``.  Each loss is defined once, as Numba-compiled scalar functions
(``_<name>_value(y, z)`` and friends) that jitted solver kernels can call, and
exposed to Python drivers as cached NumPy ufuncs built from those same scalars,
so the formulas cannot drift apart. The solvers' passes over the margins
(``weighted_terms_along``, ``weighted_value``, ``weighted_derivatives``,
``weighted_conjugate``, ``weighted_conjugate_at``) run those scalars in Numba loops,
except for the logistic loss, whose passes run as vectorised loops with exps and logs
written for them (``_logistic_passes``, ``_vector_math``: the same formulas, 2-4x faster
a pass). The kernels are ``nogil``, so solves in threads (``n_jobs``) run in parallel.

Conventions (ALGORITHMS.md section 1):

========  ==========================  =====================  =====================
loss      value                       d/dz                   d2/dz2
========  ==========================  =====================  =====================
logistic  log(1 + exp(-y z))          -y / (1 + exp(y z))    p (1 - p), p = expit(z)
probit    -log Phi(y z)               -y phi(z) / Phi(y z)   lam(m) (m + lam(m)), m = y z
squared   (z - y)^2 / 2               z - y                  1
sq_hinge  max(0, 1 - y z)^2           -2 y max(0, 1 - y z)   2 where y z < 1
hinge     max(0, 1 - y z)             -y where y z < 1       (not smooth)
========  ==========================  =====================  =====================

All of them are evaluated in forms that stay finite and accurate for
|z| of 50 and far beyond (log1p/expit tricks, the Mills ratio for probit).
"""

from __future__ import annotations

import math
import threading

import numpy as np
from numba import njit, vectorize

from ._logistic_passes import (
    logistic_conjugate_sum,
    logistic_conjugate_sum_at_margins,
    logistic_derivatives,
    logistic_terms_along,
    logistic_value_sum,
)

__all__ = ["LOSSES", "Hinge", "Logistic", "Loss", "Probit", "Softmax", "Squared", "SquaredHinge", "get_loss"]

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# Below this margin Phi(m) is computed through the Mills ratio: erfc starts to
# lose relative accuracy to underflow long before it reaches zero.
_MILLS_SWITCH = -5.0


# --------------------------------------------------------------------------- logistic
@njit(cache=True, nogil=True, inline="always")
def _logistic_value(y, z):
    m = y * z
    if m > 0.0:
        return math.log1p(math.exp(-m))
    return -m + math.log1p(math.exp(m))


@njit(cache=True, nogil=True, inline="always")
def _logistic_derivative(y, z):
    m = y * z
    if m > 0.0:
        e = math.exp(-m)
        return -y * e / (1.0 + e)
    return -y / (1.0 + math.exp(m))


@njit(cache=True, nogil=True, inline="always")
def _logistic_curvature(y, z):
    e = math.exp(-abs(z))
    return e / ((1.0 + e) * (1.0 + e))


@njit(cache=True, nogil=True, inline="always")
def _xlogx(t):
    return t * math.log(t) if t > 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def _logistic_conjugate(y, u):
    # f*(u) for z -> log(1 + exp(-y z)); finite only for t = -y u in [0, 1].
    t = -y * u
    if t < 0.0 or t > 1.0:
        return math.inf
    return _xlogx(t) + _xlogx(1.0 - t)


# --------------------------------------------------------------------------- probit
@njit(cache=True, nogil=True, inline="always")
def _mills_ratio(t):
    """R(t) = Phi(-t) / phi(t) for t >= 5, by its continued fraction
    1 / (t + 1 / (t + 2 / (t + 3 / (t + ...)))), evaluated backwards."""
    acc = t
    for k in range(80, 0, -1):
        acc = t + k / acc
    return 1.0 / acc


@njit(cache=True, nogil=True, inline="always")
def _log_ndtr(m):
    if m < _MILLS_SWITCH:
        return -0.5 * m * m - _LOG_SQRT_2PI + math.log(_mills_ratio(-m))
    if m > 0.0:
        return math.log1p(-0.5 * math.erfc(m / _SQRT2))
    return math.log(0.5 * math.erfc(-m / _SQRT2))


@njit(cache=True, nogil=True, inline="always")
def _inverse_mills(m):
    """phi(m) / Phi(m), accurate for every finite m."""
    if m < _MILLS_SWITCH:
        return 1.0 / _mills_ratio(-m)
    return math.exp(-0.5 * m * m - _LOG_SQRT_2PI) / (0.5 * math.erfc(-m / _SQRT2))


@njit(cache=True, nogil=True, inline="always")
def _probit_value(y, z):
    return -_log_ndtr(y * z)


@njit(cache=True, nogil=True, inline="always")
def _probit_derivative(y, z):
    return -y * _inverse_mills(y * z)


@njit(cache=True, nogil=True, inline="always")
def _probit_curvature(y, z):
    m = y * z
    lam = _inverse_mills(m)
    c = lam * (m + lam)
    # Exact value is in (0, 1); clip the rounding of m + lam for very negative m.
    return min(max(c, 0.0), 1.0)


# --------------------------------------------------------------------------- squared
@njit(cache=True, nogil=True, inline="always")
def _squared_value(y, z):
    return 0.5 * (z - y) * (z - y)


@njit(cache=True, nogil=True, inline="always")
def _squared_derivative(y, z):
    return z - y


@njit(cache=True, nogil=True, inline="always")
def _squared_curvature(y, z):
    return 1.0


@njit(cache=True, nogil=True, inline="always")
def _squared_conjugate(y, u):
    return 0.5 * u * u + u * y


# --------------------------------------------------------------------------- squared hinge
@njit(cache=True, nogil=True, inline="always")
def _sq_hinge_value(y, z):
    s = 1.0 - y * z
    return s * s if s > 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def _sq_hinge_derivative(y, z):
    s = 1.0 - y * z
    return -2.0 * y * s if s > 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def _sq_hinge_curvature(y, z):
    # Generalised Hessian (liblinear's choice): 2 on the active side, 0 beyond.
    return 2.0 if y * z < 1.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def _sq_hinge_conjugate(y, u):
    # sup_z u z - max(0, 1 - y z)^2 = y u + u^2 / 4 for y u <= 0, +inf otherwise.
    if y * u > 0.0:
        return math.inf
    return y * u + 0.25 * u * u


# --------------------------------------------------------------------------- hinge
@njit(cache=True, nogil=True, inline="always")
def _hinge_value(y, z):
    s = 1.0 - y * z
    return max(0.0, s)


@njit(cache=True, nogil=True, inline="always")
def _hinge_derivative(y, z):
    # A subgradient: -y on the active side (including the kink), 0 beyond.
    return -y if y * z <= 1.0 else 0.0


# --------------------------------------------------------------------------- ufuncs
# NumPy ufuncs over the scalar kernels above: what Python drivers call (``Loss.value`` and
# the others). Each is built (its loop compiled, or loaded from Numba's cache) on first use:
# building all 17 at import took 1.2-1.8 s of every ``import l1scale`` (the command line, each
# joblib worker process), where a fit calls one or two of them, if any. The scalar functions
# are written out one by one at module level because Numba cannot cache a ufunc whose Python
# function is made in a factory.
_SIG = ["float64(float64, float64)"]


class _LazyUfunc:
    """``vectorize(_SIG, cache=True)(scalar)``, built on the first call (once, whatever the threads)."""

    _lock = threading.Lock()

    def __init__(self, scalar):
        self.scalar, self._ufunc = scalar, None
        self.__name__ = self.__qualname__ = scalar.__name__.removeprefix("_each_")
        self.__doc__ = f"Elementwise {self.__name__}(y, z) (a NumPy ufunc, float64)."

    def __call__(self, *args, **kwargs):
        if self._ufunc is None:
            with self._lock:
                if self._ufunc is None:
                    self._ufunc = vectorize(_SIG, cache=True)(self.scalar)
        return self._ufunc(*args, **kwargs)

    def __repr__(self):
        return f"<lazy ufunc {self.__name__}>"


def _each_logistic_value(y, z):
    return _logistic_value(y, z)


logistic_value = _LazyUfunc(_each_logistic_value)


def _each_logistic_derivative(y, z):
    return _logistic_derivative(y, z)


logistic_derivative = _LazyUfunc(_each_logistic_derivative)


def _each_logistic_curvature(y, z):
    return _logistic_curvature(y, z)


logistic_curvature = _LazyUfunc(_each_logistic_curvature)


def _each_logistic_conjugate(y, u):
    return _logistic_conjugate(y, u)


logistic_conjugate = _LazyUfunc(_each_logistic_conjugate)


def _each_probit_value(y, z):
    return _probit_value(y, z)


probit_value = _LazyUfunc(_each_probit_value)


def _each_probit_derivative(y, z):
    return _probit_derivative(y, z)


probit_derivative = _LazyUfunc(_each_probit_derivative)


def _each_probit_curvature(y, z):
    return _probit_curvature(y, z)


probit_curvature = _LazyUfunc(_each_probit_curvature)


def _each_squared_value(y, z):
    return _squared_value(y, z)


squared_value = _LazyUfunc(_each_squared_value)


def _each_squared_derivative(y, z):
    return _squared_derivative(y, z)


squared_derivative = _LazyUfunc(_each_squared_derivative)


def _each_squared_curvature(y, z):
    return _squared_curvature(y, z)


squared_curvature = _LazyUfunc(_each_squared_curvature)


def _each_squared_conjugate(y, u):
    return _squared_conjugate(y, u)


squared_conjugate = _LazyUfunc(_each_squared_conjugate)


def _each_sq_hinge_value(y, z):
    return _sq_hinge_value(y, z)


sq_hinge_value = _LazyUfunc(_each_sq_hinge_value)


def _each_sq_hinge_derivative(y, z):
    return _sq_hinge_derivative(y, z)


sq_hinge_derivative = _LazyUfunc(_each_sq_hinge_derivative)


def _each_sq_hinge_curvature(y, z):
    return _sq_hinge_curvature(y, z)


sq_hinge_curvature = _LazyUfunc(_each_sq_hinge_curvature)


def _each_sq_hinge_conjugate(y, u):
    return _sq_hinge_conjugate(y, u)


sq_hinge_conjugate = _LazyUfunc(_each_sq_hinge_conjugate)


def _each_hinge_value(y, z):
    return _hinge_value(y, z)


hinge_value = _LazyUfunc(_each_hinge_value)


def _each_hinge_derivative(y, z):
    return _hinge_derivative(y, z)


hinge_derivative = _LazyUfunc(_each_hinge_derivative)


# --------------------------------------------------------------------------- dispatch
# Jitted solver kernels take the loss as a small integer (``Loss.kernel_id``) and
# branch here, once per element: Numba cannot cache kernels that take functions
# as arguments, and this keeps every solver kernel written once for all losses.
# Adding a loss means adding its scalars and one branch below, no solver change.
LOGISTIC, PROBIT, SQUARED, SQUARED_HINGE, HINGE = 0, 1, 2, 3, 4


@njit(cache=True, nogil=True, inline="always")
def loss_value(kind, y, z):
    if kind == LOGISTIC:
        return _logistic_value(y, z)
    if kind == PROBIT:
        return _probit_value(y, z)
    if kind == SQUARED:
        return _squared_value(y, z)
    if kind == SQUARED_HINGE:
        return _sq_hinge_value(y, z)
    return _hinge_value(y, z)


@njit(cache=True, nogil=True, inline="always")
def loss_derivative(kind, y, z):
    if kind == LOGISTIC:
        return _logistic_derivative(y, z)
    if kind == PROBIT:
        return _probit_derivative(y, z)
    if kind == SQUARED:
        return _squared_derivative(y, z)
    if kind == SQUARED_HINGE:
        return _sq_hinge_derivative(y, z)
    return _hinge_derivative(y, z)


@njit(cache=True, nogil=True, inline="always")
def loss_curvature(kind, y, z):
    if kind == LOGISTIC:
        return _logistic_curvature(y, z)
    if kind == PROBIT:
        return _probit_curvature(y, z)
    if kind == SQUARED:
        return 1.0
    if kind == SQUARED_HINGE:
        return _sq_hinge_curvature(y, z)
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def loss_derivative_curvature(kind, y, z):
    """(loss'(y, z), loss''(y, z)) together: the logistic loss's from one exp, exp(-|y z|) =
    exp(-|z|) for labels y = +-1, so that both are :func:`loss_derivative`'s and
    :func:`loss_curvature`'s values to the bit (kernels that update r and D at each moved margin
    save an exp per row)."""
    if kind == LOGISTIC:
        e = math.exp(-abs(z))
        derivative = -y * e / (1.0 + e) if y * z > 0.0 else -y / (1.0 + e)
        return derivative, e / ((1.0 + e) * (1.0 + e))
    return loss_derivative(kind, y, z), loss_curvature(kind, y, z)


@njit(cache=True, nogil=True, inline="always")
def conjugate_domain_clip(kind, y, u):
    """The point of the conjugate's (closed) domain nearest to u: logistic -y u in [0, 1],
    squared hinge y u <= 0, squared: all of R (probit and hinge: u unchanged)."""
    if kind == LOGISTIC:
        return -y * min(max(-y * u, 0.0), 1.0)
    if kind == SQUARED_HINGE:
        return u if y * u <= 0.0 else 0.0
    return u


@njit(cache=True, nogil=True, inline="always")
def loss_conjugate(kind, y, u):
    """Convex conjugate of z -> loss(y, z) at u; NaN for losses without one."""
    if kind == LOGISTIC:
        return _logistic_conjugate(y, u)
    if kind == SQUARED:
        return _squared_conjugate(y, u)
    if kind == SQUARED_HINGE:
        return _sq_hinge_conjugate(y, u)
    return math.nan


@njit(cache=True, nogil=True, inline="always")
def loss_terms(kind, y, z):
    """(value, derivative, curvature) at one margin; the logistic branch shares one exp."""
    if kind == LOGISTIC:
        m = y * z
        e = math.exp(-abs(m))
        q = 1.0 / (1.0 + e)
        if m > 0.0:
            return math.log1p(e), -y * e * q, e * q * q
        return math.log1p(e) - m, -y * q, e * q * q
    return loss_value(kind, y, z), loss_derivative(kind, y, z), loss_curvature(kind, y, z)


@njit(cache=True, nogil=True)
def _weighted_terms_along(kind, y, z, dz, step, c, lv, z_new, lv_new, r, D):
    """At z_new = z + step dz: lv_new = loss, r = c loss', D = c loss''; one pass.

    Returns sum_i c_i (lv_new_i - lv_i), summed term by term so that the change
    stays accurate when it is far below the loss itself (line searches near the
    optimum). Shapes: all (n,). With lv = 0 it returns the weighted loss.
    """
    total = 0.0
    for i in range(z.shape[0]):
        zi = z[i] + step * dz[i]
        v, d1, d2 = loss_terms(kind, y[i], zi)
        z_new[i] = zi
        lv_new[i] = v
        r[i] = c[i] * d1
        D[i] = c[i] * d2
        total += c[i] * (v - lv[i])
    return total


@njit(cache=True, nogil=True)
def _weighted_value(kind, y, z, c):
    """sum_i c_i loss(y_i, z_i). Shapes (n,)."""
    total = 0.0
    for i in range(z.shape[0]):
        total += c[i] * loss_value(kind, y[i], z[i])
    return total


@njit(cache=True, nogil=True)
def _weighted_conjugate(kind, y, z, c, scale):
    """sum_i c_i f_i*(scale * loss'(y_i, z_i)): the loss part of the dual at the scaled
    residuals (rows of zero weight are skipped). Shapes (n,)."""
    total = 0.0
    for i in range(z.shape[0]):
        if c[i] != 0.0:
            total += c[i] * loss_conjugate(kind, y[i], scale * loss_derivative(kind, y[i], z[i]))
    return total


@njit(cache=True, nogil=True)
def _weighted_conjugate_at(kind, y, u, c, scale, weighted):
    """sum_i c_i f_i*(scale * u_i) over the rows of positive weight, at a given dual point u in
    loss' units, or (``weighted``) at u_i = r_i / c_i for a residual r = c * loss'(y, z) that a
    solver keeps with its margins: no loss' to evaluate (one exp a row less than
    :func:`weighted_conjugate`, half its time for the logistic loss). Shapes (n,)."""
    total = 0.0
    for i in range(u.shape[0]):
        ci = c[i]
        if ci != 0.0:
            ui = u[i] / ci if weighted else u[i]
            total += ci * loss_conjugate(kind, y[i], scale * ui)
    return total


@njit(cache=True, nogil=True)
def weighted_terms(kind, y, z, c, r, D):
    """One pass over the margins: r = c * loss', D = c * loss''; returns sum c * loss.

    Shapes: y, z, c, r, D (n,).
    """
    total = 0.0
    for i in range(z.shape[0]):
        total += c[i] * loss_value(kind, y[i], z[i])
        r[i] = c[i] * loss_derivative(kind, y[i], z[i])
        D[i] = c[i] * loss_curvature(kind, y[i], z[i])
    return total


@njit(cache=True, nogil=True, inline="always")
def loss_slopes(kind, y, z):
    """(derivative, curvature) at one margin; the logistic branch shares one exp (the
    intercept's Newton solve evaluates them n times per step, and the exps are its cost)."""
    if kind == LOGISTIC:
        m = y * z
        e = math.exp(-abs(m))
        q = 1.0 / (1.0 + e)
        return (-y * e * q if m > 0.0 else -y * q), e * q * q
    return loss_derivative(kind, y, z), loss_curvature(kind, y, z)


@njit(cache=True, nogil=True)
def _weighted_derivatives(kind, y, z, b, c):
    """(sum_i c_i loss'(y_i, z_i + b), sum_i c_i loss''(y_i, z_i + b)): the first two derivatives
    in b of the weighted loss, in one pass (the intercept's Newton solve). Shapes (n,)."""
    grad, curv = 0.0, 0.0
    for i in range(z.shape[0]):
        d1, d2 = loss_slopes(kind, y[i], z[i] + b)
        grad += c[i] * d1
        curv += c[i] * d2
    return grad, curv


@njit(cache=True, nogil=True)
def weighted_value_along(kind, y, z, dz, step, c):
    """sum_i c_i loss(y_i, z_i + step dz_i), without forming z + step dz. Shapes (n,)."""
    total = 0.0
    for i in range(z.shape[0]):
        total += c[i] * loss_value(kind, y[i], z[i] + step * dz[i])
    return total


# --------------------------------------------------------------------------- passes over the margins
# The solvers' passes over the n margins, for every loss: the scalar kernels above, except for the
# logistic loss, whose passes run vectorised (``_logistic_passes``: 2-4x faster a pass).


def weighted_terms_along(kind, y, z, dz, step, c, lv, z_new, lv_new, r, D):
    """At z_new = z + step dz: lv_new = loss, r = c loss', D = c loss''; one pass.

    Returns sum_i c_i (lv_new_i - lv_i), summed term by term so that the change
    stays accurate when it is far below the loss itself (line searches near the
    optimum). Shapes: all (n,). With lv = 0 it returns the weighted loss.
    """
    if kind == LOGISTIC:
        return logistic_terms_along(y, z, dz, step, c, lv, z_new, lv_new, r, D)
    return _weighted_terms_along(kind, y, z, dz, step, c, lv, z_new, lv_new, r, D)


def weighted_value(kind, y, z, c):
    """sum_i c_i loss(y_i, z_i). Shapes (n,)."""
    if kind == LOGISTIC:
        return logistic_value_sum(y, z, c)
    return _weighted_value(kind, y, z, c)


def weighted_conjugate(kind, y, z, c, scale):
    """sum_i c_i f_i*(scale * loss'(y_i, z_i)): the loss part of the dual at the scaled
    residuals (rows of zero weight are skipped). Shapes (n,)."""
    if kind == LOGISTIC:
        return logistic_conjugate_sum_at_margins(y, z, c, scale)
    return _weighted_conjugate(kind, y, z, c, scale)


def weighted_conjugate_at(kind, y, u, c, scale, weighted):
    """sum_i c_i f_i*(scale * u_i) over the rows of positive weight, at a given dual point u in
    loss' units, or (``weighted``) at u_i = r_i / c_i for a residual r = c * loss'(y, z) that a
    solver keeps with its margins: no loss' to evaluate (one exp a row less than
    :func:`weighted_conjugate`). Shapes (n,)."""
    if kind == LOGISTIC:
        return logistic_conjugate_sum(y, u, c, scale, weighted)
    return _weighted_conjugate_at(kind, y, u, c, scale, weighted)


def weighted_derivatives(kind, y, z, b, c):
    """(sum_i c_i loss'(y_i, z_i + b), sum_i c_i loss''(y_i, z_i + b)): the first two derivatives
    in b of the weighted loss, in one pass (the intercept's Newton solve). Shapes (n,)."""
    if kind == LOGISTIC:
        return logistic_derivatives(y, z, b, c)
    return _weighted_derivatives(kind, y, z, b, c)


class Loss:
    """A loss of the margin, ``loss(y, z)``, with what solvers may ask of it.

    Attributes
    ----------
    name : str
        The name used by estimators and the CLI.
    smooth : bool
        Whether the derivative is continuous (required by Newton-type solvers).
    has_conjugate : bool
        Whether ``conjugate`` is known, so that the duality gap certifies optimality;
        otherwise solvers certify with the KKT violation.
    curvature_bound : float or None
        A global upper bound on the second derivative (``beta`` of seed 1).
    constant_curvature : bool
        Whether the second derivative is the same at every margin (the squared loss): then
        c * loss'' does not move with the iterate, nor does any Newton model's curvature.
    is_classification : bool
        Labels must be in {-1, +1}.
    """

    name: str = ""
    smooth = True
    has_conjugate = True
    curvature_bound: float | None = None
    constant_curvature = False
    is_classification = True
    # jitted scalar kernels for solver kernels, and the ufuncs over them
    # (None where the loss lacks them)
    value_kernel = derivative_kernel = curvature_kernel = conjugate_kernel = None
    kernel_id: int = -1  # the loss's branch in loss_value / loss_derivative / ...
    _value = _derivative = _curvature = _conjugate = None

    def value(self, y, z):
        """Elementwise loss(y, z)."""
        return self._value(np.asarray(y, dtype=np.float64), np.asarray(z, dtype=np.float64))

    def derivative(self, y, z):
        """Elementwise d loss / d z."""
        return self._derivative(np.asarray(y, dtype=np.float64), np.asarray(z, dtype=np.float64))

    def curvature(self, y, z):
        """Elementwise d^2 loss / d z^2 (generalised Hessian where it jumps)."""
        if self._curvature is None:
            raise NotImplementedError(f"loss {self.name!r} has no curvature (it is not smooth)")
        return self._curvature(np.asarray(y, dtype=np.float64), np.asarray(z, dtype=np.float64))

    def conjugate(self, y, u):
        """Elementwise convex conjugate of z -> loss(y, z), evaluated at u (inf outside its domain)."""
        if self._conjugate is None:
            raise NotImplementedError(
                f"loss {self.name!r} has no known conjugate; certify with the KKT violation instead"
            )
        return self._conjugate(np.asarray(y, dtype=np.float64), np.asarray(u, dtype=np.float64))

    def __repr__(self):
        return f"{type(self).__name__}()"

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))


class Logistic(Loss):
    """Logistic loss ``log(1 + exp(-y z))``, y in {-1, +1}."""

    name = "logistic"
    kernel_id = LOGISTIC
    curvature_bound = 0.25
    value_kernel = _logistic_value
    derivative_kernel = _logistic_derivative
    curvature_kernel = _logistic_curvature
    conjugate_kernel = _logistic_conjugate
    _value = staticmethod(logistic_value)
    _derivative = staticmethod(logistic_derivative)
    _curvature = staticmethod(logistic_curvature)
    _conjugate = staticmethod(logistic_conjugate)


class Probit(Loss):
    """Probit loss ``-log Phi(y z)``, y in {-1, +1}; no closed-form conjugate."""

    name = "probit"
    kernel_id = PROBIT
    has_conjugate = False
    curvature_bound = 1.0
    value_kernel = _probit_value
    derivative_kernel = _probit_derivative
    curvature_kernel = _probit_curvature
    _value = staticmethod(probit_value)
    _derivative = staticmethod(probit_derivative)
    _curvature = staticmethod(probit_curvature)


class Squared(Loss):
    """Squared loss ``(z - y)^2 / 2`` for regression (the Lasso)."""

    name = "squared"
    kernel_id = SQUARED
    curvature_bound = 1.0
    constant_curvature = True
    is_classification = False
    value_kernel = _squared_value
    derivative_kernel = _squared_derivative
    curvature_kernel = _squared_curvature
    conjugate_kernel = _squared_conjugate
    _value = staticmethod(squared_value)
    _derivative = staticmethod(squared_derivative)
    _curvature = staticmethod(squared_curvature)
    _conjugate = staticmethod(squared_conjugate)


class SquaredHinge(Loss):
    """Squared hinge loss ``max(0, 1 - y z)^2`` (L2-loss SVM), y in {-1, +1}."""

    name = "squared_hinge"
    kernel_id = SQUARED_HINGE
    curvature_bound = 2.0
    value_kernel = _sq_hinge_value
    derivative_kernel = _sq_hinge_derivative
    curvature_kernel = _sq_hinge_curvature
    conjugate_kernel = _sq_hinge_conjugate
    _value = staticmethod(sq_hinge_value)
    _derivative = staticmethod(sq_hinge_derivative)
    _curvature = staticmethod(sq_hinge_curvature)
    _conjugate = staticmethod(sq_hinge_conjugate)


class Hinge(Loss):
    """Hinge loss ``max(0, 1 - y z)``; not smooth, for online (subgradient) methods only."""

    name = "hinge"
    kernel_id = HINGE
    smooth = False
    has_conjugate = False
    value_kernel = _hinge_value
    derivative_kernel = _hinge_derivative
    _value = staticmethod(hinge_value)
    _derivative = staticmethod(hinge_derivative)


LOSSES = {cls.name: cls for cls in (Logistic, Probit, Squared, SquaredHinge, Hinge)}
_INSTANCES: dict[str, Loss] = {}


def get_loss(loss) -> Loss:
    """Return the Loss for a name (or pass a Loss through).

    Raises
    ------
    ValueError
        For an unknown name, listing the known ones.
    """
    if isinstance(loss, Loss):
        return loss
    if loss not in LOSSES:
        raise ValueError(f"loss={loss!r} is not a known loss; choose one of {sorted(LOSSES)}")
    if loss not in _INSTANCES:
        _INSTANCES[loss] = LOSSES[loss]()
    return _INSTANCES[loss]


# --------------------------------------------------------------------------- softmax (multinomial)
# The multinomial loss of one example works on its row of K margins z (one per class) and
# its class k = y_i:  loss(k, z) = log sum_l exp(z_l) - z_k,  gradient p - e_k with
# p = softmax(z), Hessian diag(p) - p p^T (Boehning's bound: (I - 11^T / K) / 2). Its
# conjugate is the negative entropy on the simplex: loss*(k, u) = sum_l q_l log q_l with
# q = u + e_k in the simplex (inf outside), so the duality gap certifies the multinomial
# model as the logistic conjugate does the binary one.


@njit(cache=True, nogil=True, inline="always")
def softmax_row(z, p):
    """p = softmax(z) for one row (shape (K,)), overflow-free; returns log sum exp(z)."""
    top = z[0]
    for k in range(1, z.shape[0]):
        top = max(top, z[k])
    total = 0.0
    for k in range(z.shape[0]):
        p[k] = math.exp(z[k] - top)
        total += p[k]
    for k in range(z.shape[0]):
        p[k] /= total
    return top + math.log(total)


@njit(cache=True, nogil=True)
def softmax_terms(Z, y, c, P, lv):
    """Per-example losses lv_i = log sum_l exp(Z_il) - Z_{i,y_i} and P = softmax(Z) row by row.

    Shapes: Z, P (n, K); y (n,) int64 class codes; c, lv (n,). Returns sum_i c_i lv_i."""
    total = 0.0
    for i in range(Z.shape[0]):
        lv[i] = softmax_row(Z[i], P[i]) - Z[i, y[i]]
        total += c[i] * lv[i]
    return total


@njit(cache=True, nogil=True)
def softmax_conjugate_sum(P, y, c, scale):
    """sum_i c_i loss*(y_i, scale (P_i - e_{y_i})) = sum_i c_i sum_l q_il log q_il with
    q_i = scale P_i + (1 - scale) e_{y_i} (in the simplex for P_i in it and scale in [0, 1]).
    Rows of zero weight do not enter. Shapes: P (n, K); y, c (n,)."""
    total = 0.0
    for i in range(P.shape[0]):
        if c[i] == 0.0:
            continue
        acc = 0.0
        for k in range(P.shape[1]):
            q = scale * P[i, k] + ((1.0 - scale) if k == y[i] else 0.0)
            acc += _xlogx(q)
        total += c[i] * acc
    return total


class Softmax(Loss):
    """The multinomial (softmax, cross-entropy) loss of a row of K margins ``z``:
    ``log sum_l exp(z_l) - z_y``, labels y the class codes 0..K-1.

    Not a loss of one margin: :class:`~l1scale.problems.MultinomialProblem` and the
    multinomial solver use it; the margin solvers (which need ``curvature_kernel``) refuse it.
    ``curvature_bound`` is Boehning's bound on the Hessian ``diag(p) - p p^T``, 1/2.
    """

    name = "multinomial"
    curvature_bound = 0.5

    @staticmethod
    def _rows(y, Z):
        Z = np.ascontiguousarray(np.atleast_2d(np.asarray(Z, dtype=np.float64)))
        y = np.asarray(y, dtype=np.int64).reshape(-1)
        if y.shape[0] != Z.shape[0] or (y.size and (y.min() < 0 or y.max() >= Z.shape[1])):
            raise ValueError(f"y must hold one class code in [0, {Z.shape[1]}) per row of Z")
        return y, Z

    def value(self, y, z):
        """Per-row loss, shape (n,), for margins ``z`` of shape (n, K)."""
        y, Z = self._rows(y, z)
        lv, P = np.empty(Z.shape[0]), np.empty_like(Z)
        softmax_terms(Z, y, np.ones(Z.shape[0]), P, lv)
        return lv

    def probabilities(self, z):
        """softmax of each row of ``z`` (n, K)."""
        Z = np.atleast_2d(np.asarray(z, dtype=np.float64))
        E = np.exp(Z - Z.max(axis=1, keepdims=True))
        return E / E.sum(axis=1, keepdims=True)

    def derivative(self, y, z):
        """The gradient ``softmax(z_i) - e_{y_i}`` of each row, shape (n, K)."""
        y, Z = self._rows(y, z)
        G = self.probabilities(Z)
        G[np.arange(Z.shape[0]), y] -= 1.0
        return G

    def curvature(self, y, z):
        """The diagonal of each row's Hessian, ``p (1 - p)``, shape (n, K)."""
        P = self.probabilities(z)
        return P * (1.0 - P)

    def conjugate(self, y, u):
        """Per-row conjugate ``sum_l q_l log q_l``, q = u_i + e_{y_i}; inf where q leaves the simplex."""
        y, U = self._rows(y, u)
        Q = U.copy()
        Q[np.arange(U.shape[0]), y] += 1.0
        tol = 1e-12
        inside = (-tol <= Q).all(axis=1) & (np.abs(Q.sum(axis=1) - 1.0) <= 1e-9)
        Q = np.clip(Q, 0.0, None)
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = np.where(Q > 0.0, Q * np.log(np.where(Q > 0.0, Q, 1.0)), 0.0).sum(axis=1)
        return np.where(inside, ent, np.inf)
