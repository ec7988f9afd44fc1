"""The multinomial (softmax) problem held in memory: :class:`MultinomialProblem`.

With K classes, a coefficient matrix W (n_features x K, one column per class) and
intercepts b (K,),

    P(W, b) = sum_i c_i [ log sum_k exp(x_i . W_k + b_k) - (x_i . W_{y_i} + b_{y_i}) ]
              + lam ( l1_ratio ||W||_1 + (1 - l1_ratio)/2 ||W||_F^2 ),

c_i = s_i / sum(s), the L1 (elastic-net) penalty on every entry of W, the intercepts never
penalised (ALGORITHMS.md section 1, with the softmax loss :class:`~l1scale.losses.Softmax`).
It is scikit-learn's multinomial ``LogisticRegression(penalty="l1")`` at C = 1 / (n lam)
and glmnet's ``family="multinomial"`` (ungrouped) at lambda = lam, alpha = l1_ratio.

Certificate: the duality gap. The loss of row i, f_i(z) = lse(z) - z_{y_i}, has the
conjugate f_i*(u) = sum_k q_k log q_k, q = u + e_{y_i} in the simplex. At (W, b) with
b optimal for W (a K-dimensional Newton solve, which makes sum_i c_i (P_i - Y_i) = 0 as
the dual's intercept constraint needs), the residual U = P - Y (P = softmax of the
margins, Y the one-hot labels) rescaled to dual feasibility, s U with
s = min(1, lam1 / ||X^T (c U)||_inf) (pure L1; elastic net: s = 1 and the penalty's
conjugate), gives

    D = - sum_i c_i f_i*(s U_i) - g*(-X^T (c s U)),   gap = P - D >= 0,

zero exactly at the optimum; s U_i + e_{y_i} = s P_i + (1 - s) e_{y_i} stays in the simplex.

Coefficients are passed as scikit-learn lays them out, ``coef`` of shape (n_classes,
n_features) and ``intercept`` (n_classes,); solvers work on W = coef.T.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..data.memory import as_columns, matrix_of
from ..losses import Softmax, softmax_conjugate_sum, softmax_row, softmax_terms
from ..penalties import Regularization
from .base import Certificate, InMemoryProblemBase
from .memory import check_design, check_sample_weight, dual_scale

__all__ = ["MultinomialProblem", "optimal_intercepts"]

_SOFTMAX = Softmax()


def optimal_intercepts(Z_without_b, y, c, b=None, tol=1e-13, max_iter=100):
    """The intercepts b (K,) minimising sum_i c_i loss(y_i, z_i + b) for fixed margins.

    Damped Newton on the K-dimensional convex problem: gradient g = sum_i c_i (p_i - e_{y_i}),
    Hessian H = sum_i c_i (diag p_i - p_i p_i^T), singular along the ones (the loss is
    invariant to b + t 1), so the step solves (H + 11^T / K) d = -g (g is orthogonal to the
    ones), halved until the loss decreases (taken whole once the gradient is below 1e-8, where
    the loss changes below its rounding). Returns b centred to sum zero. One jitted call: the
    solver runs it before every certificate, and on small problems (wine: 178 rows) NumPy's
    per-call overhead was a third of the fit.
    """
    Zw = np.ascontiguousarray(Z_without_b, dtype=np.float64)
    K = Zw.shape[1]
    b = np.zeros(K) if b is None else np.array(b, dtype=np.float64).reshape(K)
    y = np.ascontiguousarray(y, dtype=np.int64)
    c = np.ascontiguousarray(c, dtype=np.float64)
    return _newton_intercepts(Zw, y, c, b, float(tol), int(max_iter))


@njit(cache=True, nogil=True)
def _softmax_at(Zw, b, y, c, P, lv, z):
    """sum_i c_i loss(y_i, Zw_i + b), with P = softmax(Zw + b) row by row (z: a (K,) scratch row)."""
    total = 0.0
    for i in range(Zw.shape[0]):
        for k in range(b.shape[0]):
            z[k] = Zw[i, k] + b[k]
        lv[i] = softmax_row(z, P[i]) - z[y[i]]
        total += c[i] * lv[i]
    return total


@njit(cache=True, nogil=True)
def _newton_intercepts(Zw, y, c, b, tol, max_iter):
    """:func:`optimal_intercepts`' damped Newton iteration (see there)."""
    n, K = Zw.shape
    counts = np.zeros(K)
    for i in range(n):
        counts[y[i]] += c[i]
    P, P_new, lv, z = np.empty((n, K)), np.empty((n, K)), np.empty(n), np.empty(K)
    value = _softmax_at(Zw, b, y, c, P, lv, z)
    g, H, trial = np.empty(K), np.empty((K, K)), np.empty(K)
    for _ in range(max_iter):
        H[:, :] = 1.0 / K
        g[:] = -counts
        for i in range(n):
            ci = c[i]
            for k in range(K):
                cp = ci * P[i, k]
                g[k] += cp
                H[k, k] += cp
                for m in range(K):
                    H[k, m] -= cp * P[i, m]
        gmax = np.max(np.abs(g))
        if gmax <= tol:
            break
        d = -np.linalg.solve(H, g)
        if gmax <= 1e-8:
            # Near the optimum the full Newton step is safe (quadratic convergence) and the
            # loss changes below its rounding, where a line search would only see noise.
            b = b + d
            value = _softmax_at(Zw, b, y, c, P, lv, z)
            continue
        slope = g @ d
        step, accepted = 1.0, False
        for _ in range(60):
            for k in range(K):
                trial[k] = b[k] + step * d[k]
            v_new = _softmax_at(Zw, trial, y, c, P_new, lv, z)
            if v_new <= value + 1e-4 * step * slope + 4e-16 * abs(value):
                b = trial.copy()
                P, P_new = P_new, P
                value, accepted = v_new, True
                break
            step *= 0.5
        if not accepted:
            break
    return b - b.mean()


class MultinomialProblem(InMemoryProblemBase):
    """Data + class labels + elastic-net penalty + weights + intercepts, validated once, in memory.

    A :class:`~l1scale.problems.base.ProblemLike` of kind ``"memory"`` whose loss is the
    softmax (:class:`~l1scale.losses.Softmax`): the multinomial solver
    (:class:`~l1scale.solvers.multinomial.MultinomialCD`) reads its ``columns``, ``y`` (class
    codes), ``Y`` (one-hot) and ``c``. The objective is in the module docstring.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix, shape (n_samples, n_features)
    y : array, shape (n_samples,)
        Any labels; ``classes`` are their sorted unique values (at least two), ``y`` their codes.
    lam : float, optional
        Strength in the mean-loss form; exactly one of ``lam`` / ``lam_ratio``.
    lam_ratio : float, optional
        lam as a fraction of :meth:`lam_max`.
    l1_ratio : float, default 1.0
    fit_intercept : bool, default True
    sample_weight : ndarray, optional
        Every class needs a positive total weight (with intercepts, a class of weight zero
        would send its intercept to minus infinity).
    """

    kind = "memory"
    distributed = False
    loss = _SOFTMAX

    def __init__(self, X, y, lam=None, *, lam_ratio=None, l1_ratio=1.0, fit_intercept=True, sample_weight=None):
        X = check_design(X)
        self.n_samples, self.n_features = X.shape
        y = np.asarray(y).reshape(-1)
        if y.shape[0] != self.n_samples:
            raise ValueError(f"y has {y.shape[0]} labels but X has {self.n_samples} rows")
        if y.dtype.kind == "f" and not np.isfinite(y).all():
            raise ValueError("y contains NaN or infinity")
        self.classes, codes = np.unique(y, return_inverse=True)
        if self.classes.shape[0] < 2:
            raise ValueError(f"y has only one class ({self.classes[0]!r}); a classifier needs at least two")
        self.n_classes = int(self.classes.shape[0])
        self.y = codes.astype(np.int64).reshape(-1)
        self.c = check_sample_weight(sample_weight, self.n_samples)
        self.class_weights = np.bincount(self.y, weights=self.c, minlength=self.n_classes)
        if fit_intercept and (self.class_weights <= 0).any():
            empty = self.classes[np.flatnonzero(self.class_weights <= 0)[0]].item()
            raise ValueError(f"sample_weight: class {empty!r} has zero total weight; its intercept has no minimum")
        self.Y = np.zeros((self.n_samples, self.n_classes))
        self.Y[np.arange(self.n_samples), self.y] = 1.0
        self.fit_intercept = bool(fit_intercept)
        self._derived = {}
        self.columns = as_columns(X, checked=True)  # check_design checked its index arrays
        self.X = matrix_of(self.columns)
        reg = Regularization(lam, lam_ratio, l1_ratio)
        self.penalty = reg.resolve(self.lam_max(l1_ratio)) if reg.needs_lam_max else reg.penalty()

    # ------------------------------------------------------------------ basics
    def null_intercepts(self):
        """The intercepts optimal at W = 0: log of the weighted class frequencies (centred);
        zeros without intercepts."""
        if not self.fit_intercept:
            return np.zeros(self.n_classes)
        b0 = np.log(self.class_weights)
        return b0 - b0.mean()

    def null_gradient(self):
        """The loss gradient X^T (c (P0 - Y)) at W = 0 and the intercept-only optimum, shape
        (n_features, n_classes) (computed once per data set)."""
        if "null_gradient" not in self._derived:
            b0 = self.null_intercepts()
            p0 = np.exp(b0 - b0.max())
            p0 /= p0.sum()
            R0 = self.c[:, None] * (p0[None, :] - self.Y)
            self._derived["null_gradient"] = np.asarray(self.X.T @ R0)
        return self._derived["null_gradient"]

    def lam_max(self, l1_ratio=None) -> float:
        """The smallest lam for which W = 0 is optimal: ``max_jk |X^T (c (P0 - Y))|_jk / l1_ratio``."""
        l1_ratio = self.penalty.l1_ratio if l1_ratio is None else l1_ratio
        return float(np.max(np.abs(self.null_gradient()), initial=0.0)) / l1_ratio

    def _coef(self, coef, intercept):
        """(W = coef.T, b) checked: coef (n_classes, n_features), intercept (n_classes,) or None."""
        W = np.asarray(coef, dtype=np.float64)
        if W.shape != (self.n_classes, self.n_features):
            raise ValueError(
                f"coef must have shape (n_classes, n_features) = {(self.n_classes, self.n_features)}, got {W.shape}"
            )
        b = np.zeros(self.n_classes) if intercept is None else np.asarray(intercept, dtype=np.float64).reshape(-1)
        if b.shape != (self.n_classes,):
            raise ValueError(f"intercept must have shape (n_classes,) = ({self.n_classes},), got {b.shape}")
        return W.T, b

    def margins(self, coef, intercept=None):
        """Z = X coef^T + intercept, shape (n_samples, n_classes)."""
        W, b = self._coef(coef, intercept)
        return np.ascontiguousarray(self.X @ W) + b

    def loss_sum(self, Z) -> float:
        """sum_i c_i loss(y_i, Z_i)."""
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        return float(softmax_terms(Z, self.y, self.c, np.empty_like(Z), np.empty(Z.shape[0])))

    def objective(self, coef, intercept=None) -> float:
        """P(W, b) for ``coef`` (n_classes, n_features) and ``intercept`` (n_classes,)."""
        return self.loss_sum(self.margins(coef, intercept)) + self.penalty.value(np.ravel(coef))

    def optimal_intercept(self, Z_without_b, b=None):
        """The intercepts optimal for fixed margins (:func:`optimal_intercepts`)."""
        return optimal_intercepts(Z_without_b, self.y, self.c, b)

    # ------------------------------------------------------------------ certificate
    def certificate(self, coef, intercept=None) -> Certificate:
        """The duality gap at (coef, intercept); with intercepts, taken at the intercepts that are
        optimal for this coef (which makes the residual meet the dual's constraint)."""
        W, b = self._coef(coef, intercept)
        Zw = np.ascontiguousarray(self.X @ W)
        if self.fit_intercept:
            b = self.optimal_intercept(Zw, b)
        Z = Zw + b
        P, lv = np.empty_like(Z), np.empty(self.n_samples)
        loss = softmax_terms(Z, self.y, self.c, P, lv)
        G = np.asarray(self.X.T @ (self.c[:, None] * (P - self.Y)))
        return self.certificate_from(W, P, G, loss + self.penalty.value(W.ravel()))

    def dual(self, P, G) -> float:
        """D at the residual P - Y (rescaled to feasibility); ``G = X^T (c (P - Y))``, (d, K)."""
        pen = self.penalty
        if pen.l2 == 0.0:
            return -float(softmax_conjugate_sum(P, self.y, self.c, dual_scale(pen, G)))
        return -float(softmax_conjugate_sum(P, self.y, self.c, 1.0)) - pen.conjugate_of_negative(np.ravel(G))

    def certificate_from(self, W, P, G, primal, best_dual=-np.inf) -> Certificate:
        """The gap from what a solver has: P = softmax of the margins at intercepts optimal for
        W, ``G = X^T (c (P - Y))`` (d, K), the primal value; ``best_dual`` a dual value already
        reached (any dual point bounds the optimum from below)."""
        return self.gap_certificate(primal, max(self.dual(P, G), best_dual))

    @staticmethod
    def gap_certificate(primal, dual) -> Certificate:
        """The Certificate of a primal and a dual value (:meth:`Certificate.duality_gap`)."""
        return Certificate.duality_gap(primal, dual)
