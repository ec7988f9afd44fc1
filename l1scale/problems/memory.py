"""The problem held in memory (X dense, CSR or CSC), validated once: :class:`Problem`.

    P(w, b) = sum_i c_i * loss(y_i, x_i . w + b)  +  lam * ( l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2 )

with c_i = s_i / sum(s) (sample weights s, default 1, so the loss term is a
mean) and an unpenalised intercept b when ``fit_intercept`` (ALGORITHMS.md
section 1). Optimality is certified by the duality gap (Koh, Kim & Boyd 2007,
sec. 2.3) for losses with a known conjugate, by the KKT violation otherwise.

Also here: the validation of designs, labels and weights, and the intercept-only solves,
which the other problems share.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.special import ndtri

from .._clock import Timer
from ..data.memory import (
    CHECKED_MARK,
    as_columns,
    as_rows,
    column_dots_and_norms,
    column_matrix_rows,
    matrix_of,
    repeated_columns,
)
from ..data.repeated_rows import distinct_columns, distinct_rows, distinct_rows_of_columns
from ..data.rows import row_correlations, row_dots_and_norms
from ..data.validation import check_sparse_structure
from ..losses import get_loss, weighted_conjugate, weighted_conjugate_at, weighted_derivatives, weighted_value
from ..penalties import Regularization
from .base import Certificate, InMemoryProblemBase

__all__ = [
    "CENTRE_RATIO",
    "Problem",
    "RowGroups",
    "centred_design",
    "centring_offsets",
    "check_design",
    "check_labels",
    "check_sample_weight",
    "lam_max",
    "newton_intercept",
    "null_correlation",
    "null_intercept",
    "optimal_intercept",
]


#: A column whose |mean| exceeds this many standard deviations is worth centring (a solver that
#: learns with an intercept may take it as x_ij - mean_j: see :func:`centring_offsets`).
CENTRE_RATIO = 5.0


def centring_offsets(mean, variance, ratio=None):
    """The offsets of the columns worth centring (d,): the mean of each column whose mean is more
    than ``ratio`` (default :data:`CENTRE_RATIO`) times its standard deviation in size, 0 for
    the others.

    Such an offset stretches the curvature along the columns' common mean by about the ratio
    squared, which first-order and coordinate methods follow slowly; with an intercept, learning
    x_ij - mean_j instead (the intercept absorbing mean . w) is the same problem without it. A
    column whose fraction f of rows hold one value has |mean| / std = sqrt(f / (1 - f)): 5 needs
    f > 0.96, so sparse and one-hot features are left alone. Measured on the shared sets
    (3,000-row samples): madelon's columns qualify (496 of 500; their |mean| / std is 5-800),
    elsewhere a few (arcene 30 of 10,000, up to 6.9; magic04 one, 6.1; none of a9a's, up to
    4.1). At 1 (every column whose mean exceeds its spread) the online solvers lost their 1e-3
    on a9a at 0.01 lam_max and the sorted magic04; at 10 madelon's columns of ratio 5-10 stayed
    uncentred and its runs at 5-6e-3 (benchmarks/results/stochastic_defaults.md). SCD and DetCD take 1
    (``solvers.scd.CENTRE_RATIO``: a binary column set in more than half the rows; 13 of a9a's)."""
    ratio = CENTRE_RATIO if ratio is None else ratio
    mean = np.asarray(mean, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(mean * mean > ratio**2 * np.maximum(variance, 0.0), mean, 0.0)


def centred_design(X, offsets):
    """X - 1 offsets^T: the columns with a nonzero offset centred, in X's own layout (a sparse X
    has those columns filled in; a dense one stays dense). Shared by ``Problem.centred`` and the
    online solvers' centred chunks."""
    if not sp.issparse(X):
        return np.asarray(X, dtype=np.float64) - offsets
    cols = np.flatnonzero(offsets)
    n, k = X.shape[0], cols.shape[0]
    shift = sp.csr_matrix(
        (
            np.tile(offsets[cols], n),
            np.tile(cols, n),
            np.arange(0, n * k + 1, k) if k else np.zeros(n + 1, dtype=np.int64),
        ),
        shape=X.shape,
    )
    return (X.tocsr() - shift).asformat(X.format if X.format in ("csr", "csc") else "csr")


def check_design(X, name="X"):
    """Validate a design matrix: 2-D, numeric, finite. Returns CSC/CSR/ndarray as float64.

    A sparse matrix is checked in one pass (index arrays, finite values, canonical format:
    ``data.validation.check_sparse_structure``); one that the library made itself from a
    checked matrix (``data.memory.column_matrix(X, checked=True)``, what an estimator hands to
    the Problems of one fit) is taken as it is."""
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D")
        if getattr(X, CHECKED_MARK, False):
            return X
        check_sparse_structure(X, name, finite=True)  # before anything reads X through its indices
        if X.format in ("csr", "csc"):
            return X
        data = X.data
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array, got shape {X.shape}")
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise ValueError(f"{name} must be numeric, got dtype {X.dtype}")
        data = X
    if data.size and not np.isfinite(data).all():
        bad = np.argwhere(~np.isfinite(X.toarray() if sp.issparse(X) else X))[0]
        raise ValueError(f"{name} contains NaN or infinity (first at row {bad[0]}, column {bad[1]})")
    return X


def check_labels(y, loss, n_samples):
    """Labels as float64: in {-1, +1} for classification losses, finite reals otherwise."""
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if y.shape[0] != n_samples:
        raise ValueError(f"y has {y.shape[0]} labels but X has {n_samples} rows")
    if not np.isfinite(y).all():
        raise ValueError(f"y contains NaN or infinity (first at index {np.flatnonzero(~np.isfinite(y))[0]})")
    if loss.is_classification:
        # Compared, not sorted: np.unique's sort was 0.15 ms of each a9a fit (32,561 labels).
        positive = y == 1.0
        if not (positive | (y == -1.0)).all():
            values = np.unique(y)
            raise ValueError(f"loss {loss.name!r} needs labels y in {{-1, +1}}, got values {values[:5]}")
        if y.shape[0] and (positive.all() or not positive.any()):
            raise ValueError(f"y has only one class ({y[0]:g}); a classifier needs two")
    return y


def check_sample_weight(sample_weight, n_samples):
    """Normalised weights c = s / sum(s) (uniform when None)."""
    if sample_weight is None:
        return np.full(n_samples, 1.0 / n_samples)
    s = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
    if s.shape[0] != n_samples:
        raise ValueError(f"sample_weight has {s.shape[0]} entries but X has {n_samples} rows")
    if not np.isfinite(s).all() or (s < 0).any():
        raise ValueError("sample_weight must be finite and non-negative")
    total = s.sum()
    if total <= 0:
        raise ValueError("sample_weight must have a positive sum")
    return s / total


def newton_intercept(derivatives, b=0.0, tol=1e-13, max_iter=100) -> float:
    """The minimiser of a smooth convex function of the intercept b, given
    ``derivatives(b) -> (h(b), h'(b))`` of its monotone derivative h.

    Safeguarded Newton: Newton steps inside a bracket that always holds the root,
    bisection when a step leaves it (curvature can vanish for the squared hinge), a
    geometric walk while there is no bracket and no curvature. Once |h(b)| <= 1e-8 the
    Newton step is returned without evaluating h again (quadratic convergence puts it at
    rounding level; callers that need it checked pass over their margins anyway). Each
    solver supplies h its own way: NumPy sums, a jitted kernel, a map over partitions.
    """
    lo, hi = -np.inf, np.inf
    for _ in range(max_iter):
        grad, curv = derivatives(b)
        if grad > 0:
            hi = b
        else:
            lo = b
        if abs(grad) <= tol:
            return b
        step = b - grad / curv if curv > 1e-300 else np.nan
        if abs(grad) <= 1e-8 and lo < step < hi:
            return step
        if np.isfinite(lo) and np.isfinite(hi):
            if not (lo < step < hi):
                step = 0.5 * (lo + hi)
            if hi - lo <= 1e-15 * max(1.0, abs(b)):
                return b
        elif not np.isfinite(step):
            # No bracket yet and no curvature: walk out geometrically.
            step = b + (-1.0 if grad > 0 else 1.0) * max(1.0, 2.0 * abs(b))
        b = step
    return b


def optimal_intercept(loss, y, c, z, b=0.0, tol=1e-13, max_iter=100):
    """The b minimising sum_i c_i loss(y_i, z_i + b) for fixed margins z (w fixed)."""
    if loss.kernel_id >= 0 and loss.curvature_kernel is not None:
        # Each Newton step one jitted pass (nogil, no temporaries), not eight NumPy calls.
        kind = loss.kernel_id
        y, c, z = (np.ascontiguousarray(a, dtype=np.float64) for a in (y, c, z))
        return newton_intercept(lambda b: weighted_derivatives(kind, y, z, b, c), b, tol, max_iter)
    return newton_intercept(
        lambda b: (_wsum(c, loss.derivative(y, z + b)), _wsum(c, loss.curvature(y, z + b))), b, tol, max_iter
    )


def null_intercept(loss, y, c) -> float:
    """b0, the b minimising sum_i c_i loss(y_i, b) (w = 0; c sums to 1): the log-odds (logistic),
    ndtri of the positive weight (probit) and the weighted mean (squared) in closed form, a 1-D
    Newton solve for other losses (the closed forms spare a solve its five passes of exps)."""
    if loss.name == "squared":
        return _wsum(c, y)
    p = float(c[y > 0].sum())
    if 0.0 < p < 1.0 and loss.name == "logistic":
        return float(np.log(p / (1.0 - p)))
    if 0.0 < p < 1.0 and loss.name == "probit":
        return float(ndtri(p))
    return optimal_intercept(loss, y, c, np.zeros(y.shape[0]))


def lam_max(X, y, loss="logistic", *, l1_ratio=1.0, fit_intercept=True, sample_weight=None):
    """Smallest lam for which w = 0 is optimal.

    ``||X^T (c * loss'(y, b0))||_inf / l1_ratio`` where b0 = 0 without intercept and
    the intercept-only optimum with one.
    """
    loss = get_loss(loss)
    X = check_design(X)
    y = check_labels(y, loss, X.shape[0])
    c = check_sample_weight(sample_weight, X.shape[0])
    return null_correlation(X, y, loss, c, fit_intercept) / l1_ratio


def null_correlation(X, y, loss, c, fit_intercept) -> float:
    """``||X^T (c * loss'(y, b0))||_inf`` for validated data (c summing to 1): the largest
    correlation with the residual of the null model (b0 = 0 without intercept, the
    intercept-only optimum with one); w = 0 is optimal for every l1 penalty at least this."""
    b0 = null_intercept(loss, y, c) if fit_intercept else 0.0
    v = np.asarray(X.T @ (c * loss.derivative(y, np.full(X.shape[0], b0))), dtype=np.float64)
    return float(np.max(np.abs(v), initial=0.0))


class RowGroups(NamedTuple):
    """A problem over the distinct rows of another (:meth:`Problem.distinct_rows`).

    Attributes
    ----------
    problem : Problem
        Over the distinct rows, each weighted by the sum of its group's weights.
    group : ndarray of int64 (n_samples,)
        For each row of the original problem, its row in ``problem``.
    seconds : float
        What finding them took, in the call that found them (0 in later calls: they are kept).
    conversion_seconds : float
        What making the distinct rows' column layout took, in that call (0 in later calls).
    """

    problem: Problem
    group: np.ndarray
    seconds: float
    conversion_seconds: float


class Problem(InMemoryProblemBase):
    """Data + labels + loss + penalty + weights + intercept, validated once, held in memory.

    A :class:`~l1scale.problems.base.ProblemLike` of kind ``"memory"``: solvers read its columns
    (``columns``, ``X``), labels ``y`` and normalised weights ``c``. A canonical CSR X is kept in
    its row layout (``rows``) and converted to columns on the first read of ``columns`` or ``X``:
    lam_max, the column norms, margins and certificates read the rows until then, and CD's row
    start (``solvers._row_start``) converts only the few columns a model at a large lam can use.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix, shape (n_samples, n_features)
    y : ndarray, shape (n_samples,)
        In {-1, +1} for classification losses.
    loss : str or Loss
    lam : float, optional
        Strength in the mean-loss form; exactly one of ``lam`` / ``lam_ratio``.
    lam_ratio : float, optional
        lam as a fraction of ``lam_max``.
    l1_ratio : float, default 1.0
    fit_intercept : bool, default True
    sample_weight : ndarray, optional
    """

    kind = "memory"
    distributed = False

    def __init__(
        self, X, y, loss="logistic", lam=None, *, lam_ratio=None, l1_ratio=1.0, fit_intercept=True, sample_weight=None
    ):
        self.loss = get_loss(loss)
        X = check_design(X)
        self.n_samples, self.n_features = X.shape
        self.y = check_labels(y, self.loss, self.n_samples)
        self.c = check_sample_weight(sample_weight, self.n_samples)
        self.fit_intercept = bool(fit_intercept)
        self._derived = {}  # computed once from the data, shared with with_lam's copies
        # A canonical CSR X is kept as it is and converted to columns only when a solver first
        # reads them (``columns``): a solve whose model uses a few columns reads the rest from
        # the rows (``rows``; CD's row start). Anything else is converted now; no copy when X is
        # already in the column layout (``data.memory.column_matrix``: one conversion for the
        # problems of one-vs-rest, folds and paths).
        self._source = X
        self.rows = None
        if sp.issparse(X) and X.format == "csr" and X.has_canonical_format:
            self.rows = as_rows(X, checked=True)  # check_design checked its index arrays
        else:
            self.columns = as_columns(X, checked=True)
        reg = Regularization(lam, lam_ratio, l1_ratio)
        self.penalty = reg.resolve(self.lam_max(l1_ratio)) if reg.needs_lam_max else reg.penalty()

    # ------------------------------------------------------------------ layouts
    @property
    def columns(self):
        """The column layout (:class:`~l1scale.data.memory.Matrix`: CSC or Fortran-ordered), made
        from the rows on first use and shared with ``with_lam``'s copies."""
        if "columns" not in self._derived:
            timer = Timer()  # less the conversion kernels' compilation (``_clock``)
            self._derived["columns"] = as_columns(self._source, checked=True)
            self._derived["conversion_seconds"] = timer()
        return self._derived["columns"]

    @columns.setter
    def columns(self, value):
        self._derived["columns"] = value
        self._derived.pop("X", None)

    @property
    def X(self):
        """The matrix for products ``X @ w`` and ``X^T r`` over ``columns``' own arrays: scipy CSC
        or Fortran-ordered dense (made on first use, as ``columns``)."""
        if "X" not in self._derived:
            self._derived["X"] = matrix_of(self.columns)
        return self._derived["X"]

    @property
    def conversion_seconds(self) -> float:
        """Seconds spent converting the rows to columns, once made on a read of ``columns`` (0
        otherwise): a solver reports them apart from its solve (``Result.timings["convert"]``)."""
        return self._derived.get("conversion_seconds", 0.0)

    @property
    def has_columns(self) -> bool:
        """Whether the column layout is made (a CSR problem's is made on first use)."""
        return "columns" in self._derived

    @property
    def rows_only(self) -> bool:
        """Whether the problem holds its rows and has not made its columns yet: what reads all of
        X then reads the rows."""
        return self.rows is not None and not self.has_columns

    def _products(self):
        """The matrix for products: the column matrix once made, else the CSR X (scipy's
        products read either layout in one pass)."""
        return self._source if self.rows_only else self.X

    # ------------------------------------------------------------------ basics
    def lam_max(self, l1_ratio=None) -> float:
        """lam_max for these data (see :func:`lam_max`)."""
        l1_ratio = self.penalty.l1_ratio if l1_ratio is None else l1_ratio
        return float(np.max(np.abs(self.null_gradient()), initial=0.0)) / l1_ratio

    def null_gradient(self):
        """The loss gradient X^T (c * loss'(y, b0)) at w = 0 and the intercept-only optimum b0
        (b0 = 0 without intercept), computed once per data set, in the same read of the columns
        as :meth:`column_norms` (lam_max's, and a solve's first working set from w = 0)."""
        if "null_gradient" not in self._derived:
            r0 = self.c * self.loss.derivative(self.y, np.full(self.n_samples, self.null_intercept()))
            dots, norms = np.empty(self.n_features), np.empty(self.n_features)
            if self.rows_only:
                row_dots_and_norms(*self.rows.arrays[:3], r0, self.c, dots, norms)
            else:
                column_dots_and_norms(*self.columns.arrays, r0, self.c, dots, norms)
            self._derived["null_gradient"] = dots
            self._derived.setdefault("column_norms", norms)
        return self._derived["null_gradient"]

    def column_norms(self):
        """``sqrt(sum_i c_i x_ij^2)`` for every column j, computed once per data set (from the
        rows, with :meth:`null_gradient`, while the columns are not made)."""
        if "column_norms" not in self._derived and self.rows_only:
            self.null_gradient()
        return super().column_norms()

    def restricted(self, cols, matrix):
        """The same problem over the columns ``cols`` only, whose CSC matrix is ``matrix`` (made
        by the caller, e.g. ``data.rows.columns_of_rows``): the same labels, weights, loss and
        penalty objects, so that a (w, b) zero off ``cols`` has the same objective in both."""
        other = copy.copy(self)
        other._derived = {}
        other._source, other.rows = matrix, None
        other.n_features = int(np.asarray(cols).shape[0])
        other.columns = as_columns(matrix, checked=True)
        return other

    def row_correlations(self, v):
        """X^T v, read from the rows in one pass (``data.rows.row_correlations``): (d,)."""
        v = np.ascontiguousarray(v, dtype=np.float64)
        out = np.empty(self.n_features)
        row_correlations(*self.rows.arrays[:3], v, out)
        return out

    def repeated_columns(self):
        """For each column, the lowest index of a column that likely repeats it, or None
        (:func:`l1scale.data.memory.repeated_columns`, sketched from the null model's gradient and
        the column norms, each summed in one order); computed once."""
        if "repeated_columns" not in self._derived:
            self._derived["repeated_columns"] = repeated_columns(
                self.columns, self.null_gradient(), self.column_norms()
            )
        return self._derived["repeated_columns"]

    def distinct_rows(self, columns=False):
        """The same problem over its distinct rows, or None (:class:`RowGroups`).

        Rows equal in their columns, values and label are found (``data.repeated_rows``) once per
        data set, in the row layout of a CSR X not yet converted to columns, and with ``columns``
        in the column layout otherwise (a narrow one only: its search reads every value, where
        the rows' signatures decide from two per row), and kept only where at least
        ``repeated_rows.MIN_SHARE`` of the rows repeat another. The problem over them weighs each by the sum of its rows' weights:
        the same objective at every (w, b), the same lam_max and the same dual (a dual point of
        the distinct rows, repeated over each group, has the same value here). The returned
        problem has this one's penalty and shares its data with every lam's (``with_lam``)."""
        key = "distinct_rows" if self.rows_only or not columns else "distinct_rows_of_columns"
        if key == "distinct_rows_of_columns" and self._derived.get("distinct_rows") is not None:
            key = "distinct_rows"  # found in the rows before they were converted
        fresh = key not in self._derived
        if fresh:
            found = None
            timer = Timer()
            if self.rows_only:
                groups = distinct_rows(self.rows, self.y, self.c)
            elif columns:
                groups = distinct_rows_of_columns(self.columns, self.y, self.c)
            else:
                groups = None
            searched = timer()
            if groups is not None:
                if self.rows_only:
                    matrix = distinct_columns(self.rows, groups.first)
                else:
                    matrix = column_matrix_rows(self.X, groups.first)
                merged = copy.copy(self)
                merged._derived = {"distinct_rows": None, "distinct_rows_of_columns": None}
                merged._source, merged.rows = matrix, None
                merged.columns = as_columns(matrix, checked=True)
                merged.n_samples = matrix.shape[0]
                merged.y, merged.c = groups.y, groups.c
                found = RowGroups(merged, groups.group, searched, timer() - searched)
            self._derived[key] = found
        found = self._derived[key]
        if found is None:
            return None
        merged = copy.copy(found.problem)
        merged.penalty = self.penalty
        if not fresh:
            found = found._replace(seconds=0.0, conversion_seconds=0.0)
        return found._replace(problem=merged)

    def null_intercept(self) -> float:
        """b0: the optimal intercept of the null model w = 0 (0 without an intercept), computed once."""
        if "null_intercept" not in self._derived:
            self._derived["null_intercept"] = null_intercept(self.loss, self.y, self.c) if self.fit_intercept else 0.0
        return self._derived["null_intercept"]

    def column_offsets(self, ratio=None):
        """The c-weighted means of the columns worth centring (:func:`centring_offsets` at
        ``ratio``, default :data:`CENTRE_RATIO`), 0 for the others (d,); the columns' means and
        spreads are computed once per data set."""
        if "column_moments" not in self._derived:
            mean = np.asarray(self._products().T @ self.c, dtype=np.float64).reshape(-1)
            self._derived["column_moments"] = (mean, self.column_norms() ** 2 - mean * mean)
        return centring_offsets(*self._derived["column_moments"], ratio)

    def centred(self, offsets):
        """The same problem with column j taken as x_j - offsets[j] (a column of nonzero offset is
        then stored whole): with an intercept, the same objective once the intercept is
        b + offsets . w, and the same dual (sum_i c_i u_i = 0 makes X^T (c u) the same). Shares
        y, c, the loss and the penalty; the columns are new."""
        if not self.fit_intercept:
            raise ValueError("centred columns change the problem without an intercept")
        offsets = np.asarray(offsets, dtype=np.float64).reshape(self.n_features)
        other = copy.copy(self)
        other._derived = {}
        other._source, other.rows = None, None
        other.columns = as_columns(centred_design(self._products(), offsets), checked=True)
        return other

    def margins(self, w, b=0.0):
        return self._products() @ w + b

    def objective(self, w, b=0.0, z=None) -> float:
        """P(w, b); pass the margins ``z`` when already known."""
        z = self.margins(w, b) if z is None else z
        return float(self.c @ self.loss.value(self.y, z)) + self.penalty.value(w)

    def optimal_intercept(self, z_without_b, b=0.0) -> float:
        return optimal_intercept(self.loss, self.y, self.c, z_without_b, b)

    # ------------------------------------------------------------------ certificates
    def certificate(self, w, b=0.0) -> Certificate:
        """Duality gap (losses with a conjugate) or KKT violation (others) at (w, b).

        With an intercept, the gap is taken at the intercept that is optimal for this w
        (a 1-D solve), which makes sum_i c_i u_i = 0 as the dual requires.
        """
        w = np.asarray(w, dtype=np.float64)
        X = self._products()
        z = X @ w
        if self.fit_intercept and self.loss.has_conjugate:
            b = self.optimal_intercept(z, b)
        z = z + b
        u = self.loss.derivative(self.y, z)
        v = X.T @ (self.c * u)
        return self.certificate_from(w, b, z, u, v)

    def dual_value(self, u) -> float:
        """The dual objective at ``u`` (loss' units, one entry per sample), after the rescaling that
        makes it feasible (ALGORITHMS.md section 1): a lower bound on P*, so that
        ``objective(w, b) - dual_value(u)`` bounds the suboptimality of any (w, b). With an
        intercept the dual needs ``sum_i c_i u_i = 0``; a point that misses it (beyond rounding)
        bounds nothing: -inf. Losses without a conjugate: NotImplementedError."""
        if not self.loss.has_conjugate:
            raise NotImplementedError(f"loss {self.loss.name!r} has no conjugate: it has no dual")
        u = np.asarray(u, dtype=np.float64).reshape(self.n_samples)
        cu = self.c * u
        if self.fit_intercept and abs(float(cu.sum())) > 1e-9 * max(float(np.abs(cu).sum()), 1e-300):
            return -np.inf
        return float(self._dual(None, u, np.asarray(self._products().T @ cu).ravel()))

    def certificate_from(self, w, b, z, u, v, *, primal=None, residual=None) -> Certificate:
        """The certificate from quantities a solver already has.

        Parameters
        ----------
        w : ndarray (n_features,)
        b : float
        z : ndarray (n_samples,)  margins X w + b
        u : ndarray (n_samples,) or None
            loss'(y, z); None to have it computed from z (in one jitted pass with the
            conjugate, without a temporary).
        v : ndarray (n_features,) X^T (c * u), the gradient of the loss term
        primal : float, optional
            P(w, b) when the caller already knows it.
        residual : ndarray (n_samples,), optional
            c * loss'(y, z), when the solver keeps it with z (and u is None): the conjugate
            then reads it instead of evaluating loss' again.
        """
        if primal is None:
            primal = self._loss_sum(z) + self.penalty.value(w)
        primal = float(primal)
        if self.loss.has_conjugate:
            gap = primal - self._dual(z, u, v, residual)
            return Certificate("duality_gap", gap, gap / max(abs(primal), 1e-300), primal)
        viol = float(np.max(self.penalty.subdifferential_distance(w, v), initial=0.0))
        if self.fit_intercept:
            u = self.loss.derivative(self.y, z) if u is None else u
            viol = max(viol, abs(_wsum(self.c, u)))
        return Certificate("kkt", viol, viol / self.penalty.l1, primal)

    def _loss_sum(self, z) -> float:
        """sum_i c_i loss(y_i, z_i)."""
        return _loss_sum(self.loss, self.y, self.c, z)

    def _dual(self, z, u, v, residual=None) -> float:
        return dual_value(self.loss, self.penalty, self.y, self.c, z, u, v, residual)


def gap_certificate(loss, penalty, y, c, z, w, v) -> Certificate:
    """The duality gap at (w, b) from what a pass over the rows gives, for any layout (a
    Problem's columns, a stream's chunks): the margins z = X w + b (b optimal for w when there
    is an intercept: the dual needs sum_i c_i loss'_i = 0) and the loss gradient
    v = X^T (c loss'(y, z)). P(w, b) - D(u), u = loss'(y, z) rescaled into the dual feasible set."""
    primal = _loss_sum(loss, y, c, z) + penalty.value(w)
    gap = primal - dual_value(loss, penalty, y, c, z, None, v)
    return Certificate("duality_gap", gap, gap / max(abs(primal), 1e-300), primal)


def _loss_sum(loss, y, c, z) -> float:
    """sum_i c_i loss(y_i, z_i)."""
    if loss.kernel_id >= 0:
        return float(weighted_value(loss.kernel_id, y, np.asarray(z, dtype=np.float64), c))
    return _wsum(c, loss.value(y, z))


def _conjugate_sum(loss, y, c, z, u, scale, residual=None) -> float:
    """sum_i c_i f_i*(scale * u_i): u = residual / c when the residual c * loss'(y, z) is
    given, else loss'(y, z) when u is not given."""
    kind = loss.kernel_id
    if kind >= 0:
        if residual is not None:
            return float(weighted_conjugate_at(kind, y, residual, c, scale, True))
        if u is not None:
            return float(weighted_conjugate_at(kind, y, np.asarray(u, dtype=np.float64), c, scale, False))
        return float(weighted_conjugate(kind, y, np.asarray(z, dtype=np.float64), c, scale))
    u = loss.derivative(y, z) if u is None else np.asarray(u, dtype=np.float64)
    f = loss.conjugate(y, scale * u)
    # Rows of zero weight do not enter the dual (and may sit outside the domain).
    return _wsum(c, np.where(c != 0.0, f, 0.0))


def dual_value(loss, penalty, y, c, z, u, v, residual=None) -> float:
    """The dual objective at u = loss'(y, z) (or the given u, or residual / c), made feasible:
    rescaled so that ||X^T (c u)||_inf <= lam1 (v = X^T (c u): the scale factor is <= 1, so u
    stays inside the conjugate's domain), or with the elastic net's conjugate of -v."""
    residual = residual if u is None else None
    if penalty.l2 == 0.0:
        return -_conjugate_sum(loss, y, c, z, u, dual_scale(penalty, v), residual)
    return -_conjugate_sum(loss, y, c, z, u, 1.0, residual) - penalty.conjugate_of_negative(v)


def dual_scale(penalty, v) -> float:
    """The factor that makes a residual with correlations v = X^T (c u) dual feasible:
    min(1, lam1 / ||v||_inf) for the L1 penalty (ALGORITHMS.md section 1); 1 for the elastic
    net, whose dual takes any point."""
    if penalty.l2 != 0.0:
        return 1.0
    return min(1.0, penalty.l1 / max(_max_abs(np.asarray(v, dtype=np.float64).ravel()), 1e-300))


@njit(cache=True, nogil=True)
def _max_abs(v):
    """max_i |v_i| (0 for none; NaN if any is), without the temporary of ``np.abs`` (solvers call it
    several times a solve on d correlations)."""
    top = 0.0
    for i in range(v.shape[0]):
        a = abs(v[i])
        if a > top:
            top = a
        elif a != a:
            return np.nan
    return top


def _wsum(c, x) -> float:
    """sum_i c_i x_i without a BLAS call (multi-threaded BLAS dots of length n cost
    milliseconds when the cores are busy)."""
    return float(np.sum(c * x))
