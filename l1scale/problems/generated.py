"""GeneratedProblem: the L1 problem over a generated feature space that is never materialised.

The twin of :class:`~l1scale.problems.Problem` for feature cached loops (ALGORITHMS.md
sec. 6): the design matrix is Phi = phi(raw), p candidate columns produced block by
block by a :class:`~l1scale.data.feature_spaces.FeatureSpace`, and the problem is

    P(w, b) = sum_i c_i loss(y_i, phi(x_i) . w + b) + lam ||w||_1,   c_i = s_i / sum(s),

the library's mean form (the paper's ||w||_1 + C sum_i loss is this one times C n, lam = 1/(C n)).
Only pure L1: the paper's problem, and what lets a zero column stay out of memory.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..losses import get_loss
from ..penalties import ElasticNet, Regularization
from .base import Certificate
from .memory import check_labels, check_sample_weight, optimal_intercept

__all__ = ["GeneratedProblem"]

_FEW_COLUMNS = 1000  # margins: above this support size, generate whole blocks


class GeneratedProblem:
    """Raw inputs, a feature space over them, labels, loss, weights and lam, validated once.

    A :class:`~l1scale.problems.base.ProblemLike` of kind ``"generated"``: solvers read the columns
    of the space (``space``, ``raw``) block by block; its certificate (the KKT violation over every
    column, as FCL's) and lam_max each cost one sweep over the blocks.

    Parameters
    ----------
    space : FeatureSpace
        Fitted here on ``raw`` (``space.fit(raw)``) unless already fitted on it.
    raw : array-like
        What the space consumes (DNA codes, an input matrix).
    y : ndarray (n,)
        Labels in {-1, +1} (classification losses) or real targets (squared loss).
    loss : str or Loss, default "logistic"
        A smooth loss (the trainer's Newton steps need its curvature).
    lam, lam_ratio : float
        lam in mean form, or a fraction of lam_max (which costs one sweep over the space).
    fit_intercept : bool, default True
    sample_weight : ndarray (n,), optional
    """

    kind = "generated"
    distributed = False

    def __init__(
        self, space, raw, y, loss="logistic", lam=None, *, lam_ratio=None, fit_intercept=True, sample_weight=None
    ):
        self.loss = get_loss(loss)
        if not self.loss.smooth:
            raise ValueError(f"loss {self.loss.name!r} is not smooth: feature cached loops take Newton steps")
        if not hasattr(space, "n_features_"):
            space.fit(raw)
        # Validated and laid out once: every block and transform reads this.
        self.space, self.raw, self.raw_input = space, space.prepare(raw), raw
        self.n_features = int(space.n_features_)
        n = self.raw.n
        self.n_samples = n
        self.y = check_labels(np.asarray(y, dtype=np.float64), self.loss, n)
        self.c = check_sample_weight(sample_weight, n)
        self.fit_intercept = bool(fit_intercept)
        self.l1_ratio = 1.0
        self._regularization = Regularization(lam, lam_ratio)
        self._penalty = self._regularization.penalty()

    @property
    def lam(self) -> float:
        if self._penalty is None:  # lam_ratio: lam_max is computed once, when lam is first asked for
            self._penalty = self._regularization.resolve(self.lam_max())
        return self._penalty.lam

    @property
    def penalty(self) -> ElasticNet | None:
        """The L1 penalty; None while ``lam_ratio`` waits for lam_max (asking for ``lam`` resolves it)."""
        return self._penalty

    def intercept_only(self) -> float:
        """b0, the optimal intercept at w = 0 (0 without an intercept)."""
        z = np.zeros(self.n_samples)
        return optimal_intercept(self.loss, self.y, self.c, z) if self.fit_intercept else 0.0

    def lam_max(self) -> float:
        """max_j |sum_i c_i loss'(y_i, b0) phi_j(x_i)|: one sweep over every block."""
        if not hasattr(self, "_lam_max"):
            r = self.c * self.loss.derivative(self.y, np.full(self.n_samples, self.intercept_only()))
            gmax = 0.0
            for k in range(self.space.n_blocks_):
                g = self._block(k).T @ r
                gmax = max(gmax, float(np.max(np.abs(g), initial=0.0)))
            self._lam_max = float(gmax)
        return self._lam_max

    def margins(self, coef, intercept=0.0) -> np.ndarray:
        """phi(raw) . coef + intercept, generating only the columns where coef is nonzero: chosen
        columns one by one for a small support, else the blocks that hold any of them (a chosen
        column can cost O(n) to generate where a block costs its nonzeros)."""
        coef = np.asarray(coef, dtype=np.float64)
        support = np.flatnonzero(coef)
        z = np.full(self.n_samples, float(intercept))
        if support.size <= _FEW_COLUMNS:
            if support.size:
                z += self.space.transform(self.raw, columns=support) @ coef[support]
            return z
        for k in range(self.space.n_blocks_):
            j0, j1 = self.space.block_range(k)
            if coef[j0:j1].any():
                z += self._block(k) @ coef[j0:j1]
        return z

    def _block(self, k):
        """Block k of the generated columns as a CSC matrix (its columns j0 .. j1 - 1)."""
        j0, j1 = self.space.block_range(k)
        _, indptr, rows, vals = self.space.column_block(self.raw, k)
        return sp.csc_matrix((vals, rows, indptr), shape=(self.n_samples, j1 - j0))

    def objective(self, coef, intercept=0.0) -> float:
        z = self.margins(coef, intercept)
        return float(np.dot(self.c, self.loss.value(self.y, z)) + self.lam * np.abs(coef).sum())

    def certificate(self, coef, intercept=0.0) -> Certificate:
        """The KKT violation at (coef, intercept) over every column of the space, as FCL certifies
        its result: the largest distance from minus the loss gradient to lam's subdifferential
        (one sweep over the blocks), and with an intercept |its gradient|; relative to lam.
        ``intercept`` is taken as given (not made optimal)."""
        coef = np.asarray(coef, dtype=np.float64)
        lam = self.lam
        pen = self._penalty
        z = self.margins(coef, intercept)
        r = self.c * self.loss.derivative(self.y, z)
        viol = 0.0
        for k in range(self.space.n_blocks_):
            j0, j1 = self.space.block_range(k)
            g = self._block(k).T @ r
            viol = max(viol, float(np.max(pen.subdifferential_distance(coef[j0:j1], g), initial=0.0)))
        if self.fit_intercept:
            viol = max(viol, abs(float(np.sum(r))))
        primal = float(np.dot(self.c, self.loss.value(self.y, z)) + lam * np.abs(coef).sum())
        return Certificate("kkt", viol, viol / lam, primal)
