"""Penalties: L1 and elastic net.

    penalty(w) = lam * ( l1_ratio * ||w||_1 + (1 - l1_ratio) / 2 * ||w||_2^2 )

``l1_ratio`` is the ``alpha`` of ALGORITHMS.md section 1 (named as in
scikit-learn, where ``alpha`` is the strength). A Penalty never sees the loss.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

__all__ = ["DEFAULT_LAM_RATIO", "L1", "ElasticNet", "Regularization", "soft_threshold"]

#: lam as a fraction of lam_max when an estimator is given neither lam nor lam_ratio.
DEFAULT_LAM_RATIO = 0.01


def soft_threshold(x, threshold):
    """``sign(x) * max(|x| - threshold, 0)``, elementwise."""
    return np.sign(x) * np.maximum(np.abs(x) - threshold, 0.0)


class ElasticNet:
    """Elastic-net penalty ``lam * (l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2)``.

    Parameters
    ----------
    lam : float
        Strength, > 0, in the mean-loss form of the objective.
    l1_ratio : float
        Mix in (0, 1]; 1 is the pure L1 penalty (the Lasso).
    """

    def __init__(self, lam: float, l1_ratio: float = 1.0):
        if not isinstance(lam, numbers.Real) or not np.isfinite(lam) or lam <= 0:
            raise ValueError(f"lam must be a finite number > 0, got lam={lam!r}")
        if not isinstance(l1_ratio, numbers.Real) or not (0.0 < l1_ratio <= 1.0):
            raise ValueError(f"l1_ratio must be in (0, 1], got l1_ratio={l1_ratio!r}")
        self.lam = float(lam)
        self.l1_ratio = float(l1_ratio)

    @property
    def l1(self) -> float:
        """The weight of ||w||_1: ``lam * l1_ratio``."""
        return self.lam * self.l1_ratio

    @property
    def l2(self) -> float:
        """The weight of ||w||^2 / 2: ``lam * (1 - l1_ratio)``."""
        return self.lam * (1.0 - self.l1_ratio)

    def value(self, w) -> float:
        # ||w||^2 summed by NumPy, not a BLAS dot: OpenBLAS runs a dot of more than 10,000
        # entries on all its threads, and when the cores are busy (other processes, or solves in
        # threads) waking them costs milliseconds (measured: 16-28 ms for w @ w over 27,901
        # weights on a loaded 2-core machine, 0.05 ms summed by NumPy).
        w = np.asarray(w)
        return self.l1 * float(np.abs(w).sum()) + 0.5 * self.l2 * float(np.square(w).sum())

    def prox(self, v, step: float):
        """argmin_w ||w - v||^2 / (2 step) + penalty(w)."""
        return soft_threshold(np.asarray(v, dtype=np.float64), step * self.l1) / (1.0 + step * self.l2)

    def subdifferential_distance(self, w, grad):
        """Distance from ``-grad`` to the subdifferential of the penalty at ``w``, per coordinate.

        Zero for every coordinate exactly at a minimiser of ``f + penalty`` when
        ``grad`` is the gradient of the smooth part ``f``.
        """
        w = np.asarray(w, dtype=np.float64)
        g = np.asarray(grad, dtype=np.float64) + self.l2 * w
        return np.where(w != 0.0, np.abs(g + self.l1 * np.sign(w)), np.maximum(np.abs(g) - self.l1, 0.0))

    def lam_max_scale(self) -> float:
        """lam_max = ||X^T loss'(y, z0)||_inf / n divided by this (only the L1 part can zero w)."""
        return self.l1_ratio

    def conjugate_of_negative(self, v) -> float:
        """g*(-v) for v = X^T r / n, where g is this penalty; the dual needs it.

        For pure L1 it is 0 when ||v||_inf <= lam (the caller rescales r to make it so).
        """
        if self.l2 == 0.0:
            excess = np.max(np.abs(v), initial=0.0) - self.l1
            return 0.0 if excess <= 1e-12 * max(self.l1, 1.0) else np.inf
        excess = np.maximum(np.abs(v) - self.l1, 0.0)
        return float(excess @ excess) / (2.0 * self.l2)

    def __repr__(self):
        return f"{type(self).__name__}(lam={self.lam!r}, l1_ratio={self.l1_ratio!r})"


def L1(lam: float) -> ElasticNet:
    """The pure L1 penalty ``lam * ||w||_1``."""
    return ElasticNet(lam, 1.0)


def _outside_the_package():
    """``warnings.warn`` keywords that point a warning at the first caller outside l1scale (the
    user's code), however deep in the package it was raised."""
    import os
    import sys

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(2), 2  # level 1: the function that warns; 2: its caller
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return {"stacklevel": level}


class Regularization:
    """How strong the penalty is, as the user gave it: ``lam`` directly, or ``lam_ratio`` times
    lam_max (which only the problem can compute), with ``l1_ratio``. Validated once, here, for
    every problem kind; :meth:`resolve` turns it into the ElasticNet once lam_max is known.

    Parameters
    ----------
    lam, lam_ratio : float, optional
        Exactly one, finite and > 0. ``lam_ratio >= 1`` puts lam at or above lam_max, where
        w = 0 is optimal: it warns (``UserWarning``), as the model it gives has no nonzero weight.
    l1_ratio : float, default 1.0
        In (0, 1].
    """

    def __init__(self, lam=None, lam_ratio=None, l1_ratio=1.0):
        if (lam is None) == (lam_ratio is None):
            raise ValueError("give exactly one of lam and lam_ratio")
        for name, value in (("lam", lam), ("lam_ratio", lam_ratio)):
            if value is not None and (not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0):
                raise ValueError(f"{name} must be a finite number > 0, got {name}={value!r}")
        ElasticNet(1.0, l1_ratio)  # validates l1_ratio (before lam_max divides by it)
        if lam_ratio is not None and lam_ratio >= 1:
            warnings.warn(
                f"lam_ratio={lam_ratio!r} >= 1 puts lam at or above lam_max, where w = 0 is optimal: the "
                "model will have no nonzero weight (an intercept only). Give lam_ratio < 1 (the default is "
                f"{DEFAULT_LAM_RATIO}; 0.1 keeps a few features), or choose lam by cross-validation "
                "(SparseLogisticRegressionCV, `l1scale path`).",
                UserWarning,
                **_outside_the_package(),
            )
        self.lam = None if lam is None else float(lam)
        self.lam_ratio = None if lam_ratio is None else float(lam_ratio)
        self.l1_ratio = float(l1_ratio)

    @property
    def needs_lam_max(self) -> bool:
        """Whether lam is a fraction of lam_max (given as ``lam_ratio``)."""
        return self.lam is None

    def penalty(self) -> ElasticNet | None:
        """The penalty of a given ``lam``; None while it waits for lam_max."""
        return None if self.lam is None else ElasticNet(self.lam, self.l1_ratio)

    def resolve(self, lam_max: float) -> ElasticNet:
        """The penalty, lam = lam_ratio * lam_max (or the given lam). lam_max = 0 (w = 0 optimal
        for every lam, e.g. constant features or targets) gives lam = lam_ratio: the same model."""
        if self.lam is not None:
            return ElasticNet(self.lam, self.l1_ratio)
        lam = self.lam_ratio * float(lam_max)
        return ElasticNet(lam if lam > 0 else self.lam_ratio, self.l1_ratio)
