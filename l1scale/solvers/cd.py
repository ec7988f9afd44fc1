"""Batch coordinate descent: newGLMNET Newton steps on growing working sets, with
gap-safe screening and a certificate from the best of several dual points.

Minimises, for any smooth loss (ALGORITHMS.md section 1),

    P(w, b) = sum_i c_i loss(y_i, x_i . w + b) + lam1 ||w||_1 + lam2/2 ||w||^2

(lam1 = lam * l1_ratio, lam2 = lam * (1 - l1_ratio), c_i = s_i / sum(s)).

The Newton step is that of Yuan, Ho & Lin (2012), "An improved GLMNET for
L1-regularized logistic regression", following liblinear's ``solve_l1r_lr`` (``-s 6``):

1. at (w, b), with r = c * loss'(y, z) and D = c * loss''(y, z) at hand, one pass over
   the columns gives the gradient g = X^T r + lam2 w and the diagonal
   H_jj = (X^T diag(D) X)_jj + lam2 + nu; a zero weight with |g_j| < lam1 - M/n
   (M: the largest violation of the previous iteration) is shrunk away;
2. the quadratic model  g.d + d^T H d / 2 + lam1 ||w + d||_1  is minimised by cyclic CD
   (random order, inner shrinking), the unpenalised intercept as one more coordinate;
3. Armijo line search on P along d (step halving, the L1 change in the decrease), the
   change of the loss summed term by term so that it stays accurate near the optimum.

Around it, the outer loop of celer / skglm / Blitz (Massias, Gramfort & Salmon 2018;
Johnson & Guestrin 2015): each *round* makes one pass over every feature not screened
out, certifies, screens, and picks a working set: the nonzero weights plus the zero
weights closest to violating optimality (smallest (lam1 - |g_j|) / ||x_j||_c), of a size
that at least doubles each round. Newton steps restricted to the working set then run
until the sub-problem's own duality gap (or KKT violation) is below a fraction of the
full one (KKT violation on the working set below 0.3 times that of the last full pass).
When the working set would hold every remaining feature, each Newton step is itself a full
pass and is certified.

Once the support has settled (it changed by at most 5% since the last iteration) and
violates optimality more than any zero weight, the step is instead a Newton step on the
support, solved by preconditioned conjugate gradients and projected onto the orthant of w
(``_support_newton``): coordinate descent on an ill-conditioned model (correlated text
features) needs thousands of sweeps where CG needs a few hundred products, and the
support's KKT violations then fall quadratically.

Certificates (``_dual.DualPoints``): the duality gap of the best dual point seen (any
feasible dual point bounds P* from below), each new one the rescaled residual at an
iterate; the KKT violation for losses without a conjugate (probit). The rescaled residual's
gap falls only as the square root of the suboptimality (one violated KKT condition shrinks all
of it), so when it misses tol while no zero weight violates optimality by more than tol lam1,
the residual that the quadratic model predicts at the support's Newton point is offered too
(``_newton_dual.NewtonDual``): its correlations meet the support's KKT conditions, and its
gap is about the suboptimality itself; when it certifies, that Newton step is taken and the
solve stops. While the support still changes, the quadratic model's own minimiser gives such a
point (``_model_dual.ModelDual``): once a model over every feature in play (at a tight tol, a
working set's holding most of the features in play) predicts a small decrease, it is solved on
tightly and the residual it predicts is offered after the step. The
best dual point is returned (``Result.dual_point``), so that anyone can check the gap
(``Problem.dual_value``). A certificate is taken at every full pass (it costs one pass over the n margins on top of the gradient
pass), so that ``tol`` stops the solve as soon as it can. With an intercept, b is made
exactly optimal for w before each full pass (a 1-D Newton solve on the margins, itself a
descent step), so that sum_i c_i u_i = 0 as the dual needs. Gap-safe screening removes,
for the rest of the solve, zero weights that the gap proves zero at the optimum. The
margins are maintained incrementally; they are recomputed from the nonzero weights when
the objective stops moving and at the end, so that the returned objective is exact.
"""

from __future__ import annotations

import copy

import numpy as np

from .. import checkpoint as checkpoints
from .._clock import CompileClock
from ..losses import weighted_terms_along
from ..problems.base import Certificate
from . import _cd_kernels as kernels
from . import _covariance as covariance
from . import _local_model as local_model
from ._cd_state import Iterate, Loop, restore_state, saved_state
from ._dual import DualPoints, SequentialScreening, columns_nnz
from ._gram_cache import GramCache
from ._model_dual import ModelDual
from ._newton_dual import NewtonDual
from ._repeats import Repeats, folded, left_out, over_every_row, with_repeats
from ._row_dual import RowDual
from ._row_start import row_start
from ._support_factor import STALE_MAX_FRESH, SupportFactor
from ._support_newton import (
    CG_MAX_PRODUCTS,
    budgeted_products,
    factorisation_pays,
    product_reads,
    support_newton_step,
)
from ._violator_dual import ViolatorDual
from ._working_sets import closest_to_entering
from .base import History, Solver, Timer, certified_result

__all__ = ["CoordinateDescent"]

_EPS = float(np.finfo(np.float64).eps)
# The returned objective is the maintained margins' where their rounding provably moves it by at
# most this fraction of tol, relative (``Iterate.objective_within``); else they are summed afresh.
OBJECTIVE_RTOL = 1e-3
# The stop_reason of a CD solve stopped to go on on the Lasso's covariances (never returned to a caller).
_TO_COVARIANCES = "to_covariances"
_NO_GRAM = np.empty((0, 0))  # a model solved without a Gram matrix given (``_cd_kernels.newton_direction``)


class CoordinateDescent(Solver):
    """newGLMNET coordinate descent on working sets, with screening: the reference batch solver.

    Minimises  P(w, b) = sum_i c_i loss(y_i, x_i . w + b) + lam1 ||w||_1 + lam2/2 ||w||^2
    (see the module docstring for the method).

    Parameters
    ----------
    tol : float, default 1e-6
        Stop when the duality gap <= tol * P (or KKT violation <= tol * lam1 for
        losses without a conjugate).
    max_iter : int, default 200
        Newton steps, over all rounds.
    max_inner : int, default 1000
        CD sweeps per quadratic model.
    random_state : int, default 0
        Seed of the coordinate order.
    callback : callable, optional
        Called as ``callback(iteration, history)`` after each iteration.
    verbose : int, default 0
    working_set : bool, default True
        Solve on growing working sets (False: every Newton step passes over every
        feature that is not screened out, with liblinear's shrinking).
    screening : bool, default True
        Gap-safe screening (losses with a conjugate).
    support_newton : bool, default True
        When the certificate misses tol, offer the dual point of a Newton step on the
        support (and take the step when it lowers P); False: the rescaled residual only.
    deduplicate : bool, default True
        On wide sparse data (at least as many columns as rows) with the plain L1 penalty,
        solve over one column of each group of equal columns (the lowest index; see
        :meth:`_distinct_columns`): the same optimal value and margins, the group's weight on
        that column. On a CSR problem where at least 5% of the rows repeat another (equal
        columns, values and label), solve over one row of each group weighted by the group's
        weight (:meth:`_distinct_rows`): the same objective, optimum and dual.
    checkpoint : str or path-like, optional
        File holding the complete state of the solve (iterate, margins, working set,
        screened features, best dual point, the coordinate order's random state, History),
        written atomically at the start of an iteration, at most every
        ``checkpoint_interval`` seconds; an existing one is resumed, and the resumed run
        ends with the coefficients of an uninterrupted one, bit for bit. One written for
        other data or parameters is refused (:mod:`l1scale.checkpoint`). Without it the
        solve does no checkpoint work at all.
    checkpoint_interval : float, default 5
        Least seconds between two checkpoint writes (each costs O(n + d) bytes).
    """

    name = "cd"
    resumable = True  # takes checkpoint= (l1scale.checkpoint)
    data_access = "columns"
    requires = ("smooth", "curvature_kernel")
    # Armijo constant and the most step halvings (liblinear's sigma, max_num_linesearch).
    sigma = 0.01
    max_line_search = 30
    # Inexact Newton forcing: the model is also solved until its violations sum to at
    # most this fraction of the outer ones. liblinear's inner tolerance alone (inner_eps
    # times the first violation, tightened only when a model takes one sweep) stalls on
    # ill-conditioned models, which never take one sweep: each Newton step then only
    # shaves the violation down to that fixed tolerance.
    forcing = 0.25
    # Working sets: the first size, and the fraction of the last full pass's largest KKT
    # violation to which each sub-problem is solved (celer solves to 0.3 times the gap).
    first_working_set = 100
    # The least first working set of a path's warm start (``_first_size``).
    first_strong_set = 10
    # A path stops carrying its gap-safe screening (``_dual.SequentialScreening``) once this many
    # lams in a row screened no feature out: lam only decreases along it, so proofs only get rarer,
    # and each lam's screen and update cost passes of conjugates over the rows (50-lam paths to
    # 0.001 lam_max: the 200,000 x 40 dense set screened nothing after its 7th lam, 2 conjugate
    # passes of 1.1 ms a lam after it; the rare-positives set never screened anything; earn
    # nothing after its 42nd).
    screening_patience = 3
    # The support counts as settled (a Newton step on it pays) when it changed by at most
    # this fraction of its size since the last iteration.
    settled_fraction = 0.05
    # A support-Newton step whose line search cut it below newton_cut while zero weights still
    # violated optimality by a tenth of the largest violation (the support is not the
    # optimum's yet) defers the next until the largest violation is newton_backoff times its
    # own. Measured on news20 (the benchmark's split) at 0.001 lam_max, nonzeros read at tol
    # 1e-1 / 1e-2 / 1e-4 / 1e-6: 1286M / 1791M / 8134M / 10676M -> 834M / 1306M / 5883M /
    # 10395M (steps cut to 1/1000 of their length there had cost 100-200 CG products each);
    # deferring after any cut step instead: 11.2G at 1e-6, and a backoff to 0.1: 66G (the
    # endgame's steps, cut or not, are what converges).
    newton_cut, newton_backoff = 0.25, 0.5
    # Support-Newton CG (steps and NewtonDual's tries) off the Gram matrix reads at most
    # newton_budget times what the solve read since the last certificate (rent or buy: a step
    # right after one gets the least, 5 products), the least doubling after each budget-stopped
    # CG whose step went the whole way (its system wants more products: near-duplicate columns)
    # and back to 5 once one converges or a step is cut short (its direction was in doubt). A
    # NewtonDual try stopped by its budget hands its direction to the step only if it certified.
    # Measured, nonzeros read at tol 1e-2 / 1e-4 / 1e-6: news20 (the benchmark's split) at 0.01
    # lam_max 226M / 910M / 1076M -> 91M / 740M / 849M, at 0.001 1306M / 5883M / 10395M -> 1042M
    # / 2522M / 12268M; 48 synthetic text points 70.9G -> 54.4G (single points -54% to +29%);
    # the 132-point ladder unchanged (its supports are solved on their Gram matrices).
    # Without the escalation: the near-duplicate solve of the tests stalls (300 steps, not 47).
    newton_budget, newton_escalation = 2.0, 2.0
    # Where the loss's curvature does not move (the squared loss), the support's Newton system is
    # factorised at its first solve if that costs at most this many CG products (``_direct``).
    factorise_within = CG_MAX_PRODUCTS
    # Rent or buy (``_direct``): the support's Newton system is factorised once the CG solves on a
    # support that has settled have read this fraction of what the factorisation costs. Not the
    # whole of it (the textbook's 2-competitive rule): the solves that count are budget-capped
    # ones (5, then 26, then 135 products on news20's 2,860 bigrams at 0.001 lam_max), each the
    # sign of a system CG will not solve, and a factorisation also gives the exact Newton dual
    # point that certifies. Measured, whole fits in process (median of 3): news20 at 0.001
    # lam_max to 1e-2 / 1e-4 / 1e-6 0.88 / 0.94 / 0.95x at 0.5, 0.92 / 0.92 / 0.76x at 0.2
    # (nonzeros read to 1e-6 1,842M -> 1,469M); news20 at 0.01 and 0.1, earn, a9a and mnist10k
    # level (0.88-1.11x, within the host's noise); the 50-lam paths on earn and news20 level.
    factorise_after = 0.2
    # ... and within one CG solve: CG that has bought the system's Gram matrix (its products had
    # read as much as the matrix costs) and has not converged once its products there cost this
    # fraction of the matrix's factorisation factorises it (``_support_newton``), and the next
    # systems are factorised too, each preconditioned by the last (``_direct``). None: CG only.
    # Dense correlated columns (genotypes in linkage blocks, 2,000 x 50,000 at 0.01 lam_max): a
    # Newton system on 1,220 weights took 162 products (0.56 s) where 46 and the factorisation
    # of the matrix they had built took 0.37 s, and the next two systems 3 and 4 products,
    # preconditioned, instead of 144 and 164: the fit 3.36 -> 2.41 s.
    factorise_gram_after = 0.2
    # On dense X a path's next lam starts with the last lam's model Gram-matrix price (``gram_first``):
    # where that model was solved on its Gram matrix (built by BLAS there), the next lam's first model,
    # on nearly the same coordinates, buys its own at once instead of after two sweeps over n rows.
    # 50-lam logistic paths to 1e-4, in process: 200,000 x 40 dense correlated columns 0.81x (3.2 ->
    # 2.6 s; a lam's model is one Newton step on ~20 coordinates), 5,000 x 300 dense 0.90x, mnist10k
    # as a dense array and genotype-like 2,000 x 50,000 (12 lams) level, the same objectives. Not on
    # sparse X: there the first models of a lam converge in a few sweeps, and the carry cost earn's
    # path 1.11-1.13x and mnist10k's 1.25x.
    dense_path_gram = True
    working_set_fraction = 0.3
    # Largest model solved on its Gram matrix, and largest support whose Newton system is factorised
    # once CG cannot solve it (``_support_factor``): (gram_max + 1)^2 floats, 72 MB.
    gram_max = 3000
    # Offer the dual point of the Newton step's quadratic model (``_model_dual``).
    model_dual = True
    # ... in a working set's rounds too (``_model_dual_over``) at tol <= ws_model_dual_tol, when the
    # working set holds at least ws_model_dual_share of the features in play (and at most gram_max).
    ws_model_dual_tol, ws_model_dual_share = 1e-4, 0.5
    # ... and at any tol in a warm start's first round (a path's lam from the last one's gradient),
    # which starts near its optimum: there the model's point certifies the lam in one Newton step
    # where the rescaled residual needed a second round. 50-lam logistic paths, in process: the
    # generated tall dense set (200,000 x 40) to tol 1e-3 / 1e-2 0.70x / 0.87x (62 -> 50 Newton
    # steps at 1e-3), a9a's to 1e-3 0.92x; earn's, mnist10k's, news20's and the rare-positives
    # set's level (0.96-1.03x).
    ws_model_dual_warm = True
    # ... and at a looser tol, once the working set's model, solved on its Gram matrix, predicts a
    # decrease of P within ws_model_dual_near * tol |P| (the step after it then nearly certifies;
    # ``_model_dual_over``).
    ws_model_dual_near = 0.5
    # Offer the residual corrected along its violators (``_violator_dual``).
    violator_dual = True
    # Offer the residual made feasible row by row (``_row_dual``).
    row_dual = True
    # A working set's round takes a certificate on a copy of its iterate once its steps have read
    # this many passes over the features in play since the last one (``_peek``; np.inf: never).
    certify_after = 8.0

    def __init__(
        self,
        tol=1e-6,
        max_iter=200,
        max_inner=1000,
        random_state=0,
        callback=None,
        verbose=0,
        working_set=True,
        screening=True,
        support_newton=True,
        checkpoint=None,
        checkpoint_interval=checkpoints.DEFAULT_INTERVAL,
        deduplicate=True,
    ):
        self.tol = tol
        self.max_iter = max_iter
        self.max_inner = max_inner
        self.random_state = random_state
        self.callback = callback
        self.verbose = verbose
        self.working_set = working_set
        self.screening = screening
        self.support_newton = support_newton
        self.checkpoint = checkpoint
        self.checkpoint_interval = checkpoint_interval
        self.deduplicate = deduplicate

    def solve(self, problem, coef_init=None, intercept_init=None, *, gradient_init=None):
        """Minimise P from (coef_init, intercept_init) (zero by default).

        ``gradient_init``, the loss gradient at the start (a previous Result's
        ``loss_gradient``, e.g. the last lam of a path), picks the first working set without
        a pass over the data (strong rules' role in glmnet); nothing is certified from it."""
        self.check_problem(problem)
        compiled = CompileClock()  # the kernels are compiled at their first call (``_clock``)
        result = self._solve_from(problem, coef_init, intercept_init, gradient_init)
        result.timings["compile"] = compiled()
        return result

    def _solve_from(self, problem, coef_init, intercept_init, gradient_init):
        """:meth:`solve`, its compile seconds not counted."""
        groups = self._distinct_rows(problem, on_covariances=gradient_init is None)
        if groups is not None:
            result = self._solve_from(groups.problem, coef_init, intercept_init, gradient_init)
            return over_every_row(result, groups)
        converted = getattr(problem, "conversion_seconds", 0.0)
        gram_limit = np.inf
        if gradient_init is None and covariance.applies(problem, self):
            return self._on_covariances(problem, coef_init, converted)
        if gradient_init is None:
            gram_limit = covariance.gram_limit(problem, self)
        result = self._cd_solve(problem, coef_init, intercept_init, gradient_init, gram_limit)
        if result.stop_reason != _TO_COVARIANCES:
            return result
        # A model wanted a Gram matrix that costs a large share of S: the Lasso goes on on S instead.
        return self._on_covariances(problem, result.coef, converted, before=result)

    def _on_covariances(self, problem, coef_init, converted, before=None):
        """The Lasso on its covariances from ``coef_init`` (:meth:`_covariance_solve`), and where
        its point misses tol, CD from there (not limited: it may buy its Gram matrices); a CD solve
        handed over (``before``) is counted in the Result's iterations and seconds either way."""
        result, start = self._covariance_solve(problem, coef_init, converted, before)
        if result is not None:
            return result
        result = self._cd_solve(problem, *start, None)
        if before is not None:
            result.n_iter += before.n_iter
            result.timings["solve"] += before.timings["solve"]
            result.timings["convert"] += before.timings.get("convert", 0.0)
        return result

    def _cd_solve(self, problem, coef_init, intercept_init, gradient_init, gram_limit=np.inf):
        """:meth:`solve` by CD's Newton steps; stopped (``stop_reason`` ``_TO_COVARIANCES``, no
        warning) before a quadratic model buys a Gram matrix dearer than ``gram_limit``."""
        timer = Timer()
        converted, copied = getattr(problem, "conversion_seconds", 0.0), 0.0
        if coef_init is None and intercept_init is None and gradient_init is None:
            # A CSR problem whose model can use only a few columns: solved over those, copied out,
            # and certified from the rows (``_row_start``); else it goes on from where that left.
            result, start, copied = row_start(self, problem, timer)
            if result is not None:
                return result
            if start is not None:
                coef_init, intercept_init, gradient_init = start
        if gradient_init is None and coef_init is None and self.working_set:
            # From w = 0 the first working set comes from the gradient there, read in the same
            # pass as the column norms (and shared with lam_max): no separate first pass.
            gradient_init = problem.null_gradient()
        kernels.seed(0 if self.random_state is None else int(self.random_state) % (2**32))
        repeats = Repeats.of(self._distinct_columns(problem))
        pt = Iterate(problem, folded(coef_init, repeats), intercept_init)
        # A CSR problem's conversion to columns, made by now (the margins read them), is kept out
        # of the solve's clock and reported apart (with a row start's copy, which the row start
        # kept out), as the estimator's conversion before the solve used to be.
        converting = getattr(problem, "conversion_seconds", 0.0) - converted
        timer.exclude(converting)
        result, _, _ = self._solve(problem, pt, timer, gradient_init, left_out(None, repeats), gram_limit=gram_limit)
        result.timings["convert"] = copied + converting
        return with_repeats(result, repeats)

    def prepare_path(self, problem, n_lams):
        """Build what ``n_lams`` solves on the problem's data share, before threads solve a path's
        segments (each a :meth:`solve_path` of its own): the loss gradient at zero and the column
        norms, and the Lasso's covariances where they pay for the whole path (``_covariance``)."""
        groups = self._distinct_rows(problem, columns=True, n_solves=n_lams)
        problem = problem if groups is None else groups.problem
        problem.null_gradient()
        if covariance.applies(problem, self, n_solves=n_lams):
            covariance.covariances(problem)

    def solve_path(self, problem, lams, coef_init=None, intercept_init=None):
        """Solve at each lam of a decreasing sequence, each from the last solution: yields one Result
        per lam (each with its own certificate and its ``timings["solve"]``).

        What a sequence of :meth:`solve` calls would do, plus what carrying one iterate allows:
        the margins, losses and residuals go on from one lam to the next (no recomputation); the
        first working set comes from the last solution's gradient (glmnet's strong rules' role;
        the certifying passes are the KKT check); and gap-safe screening is carried along the
        path (``_dual.SequentialScreening``): the features the last solution's residual proves
        zero at the new lam are left out of every pass of its solve.

        Parameters
        ----------
        problem : Problem
            The data, loss, weights and l1_ratio (its own lam is not used).
        lams : array of float, decreasing
        coef_init, intercept_init : the start of the first solve (zero by default).
        """
        self.check_problem(problem)
        compiled = CompileClock()  # each lam's since the last (the first's: since the call)
        for result in self._path_from(problem, lams, coef_init, intercept_init):
            result.timings["compile"] = compiled()
            yield result
            compiled = CompileClock()

    def _path_from(self, problem, lams, coef_init, intercept_init):
        """:meth:`solve_path`, its compile seconds not counted."""
        groups = self._distinct_rows(problem, columns=True, n_solves=len(lams))
        if groups is not None:
            for result in self._path_from(groups.problem, lams, coef_init, intercept_init):
                yield over_every_row(result, groups)
                groups = groups._replace(seconds=0.0, conversion_seconds=0.0)  # counted at the first lam
            return
        converted = getattr(problem, "conversion_seconds", 0.0)
        if covariance.applies(problem, self, n_solves=len(lams)):
            # The Lasso on its covariances: each lam from the last one's weights, no pass over X
            # but the certificate's (a lam not certified on them: CD from there).
            # (The intercept is eliminated there: each lam's comes from its weights.)
            coef = None if coef_init is None else np.asarray(coef_init, dtype=np.float64).copy()
            for lam in lams:
                lam_problem = problem.with_lam(float(lam))
                result = self._on_covariances(lam_problem, coef, converted)
                converted = getattr(lam_problem, "conversion_seconds", 0.0)
                coef = result.coef.copy()
                yield result
            return
        kernels.seed(0 if self.random_state is None else int(self.random_state) % (2**32))
        repeats = Repeats.of(self._distinct_columns(problem))
        pt = Iterate(problem.with_lam(float(lams[0])), folded(coef_init, repeats), intercept_init)
        carried = SequentialScreening(problem) if self.screening and problem.loss.has_conjugate else None
        gradient, previous_l1 = None, None
        fruitless = 0  # lams in a row whose screening left no feature out
        for lam in lams:
            timer = Timer()
            lam_problem = problem.with_lam(float(lam))
            pt.set_problem(lam_problem)
            screened = None
            if carried is not None and gradient is not None:
                screened = carried.screen(lam_problem, pt.w, pt.b, pt.z, pt.objective)
                fruitless = fruitless + 1 if screened is not None and not screened.any() else 0
                if fruitless >= self.screening_patience:
                    carried = None  # the rest of the path is not screened (screening_patience)
            if gradient is None and coef_init is None and self.working_set:
                gradient = problem.null_gradient()
            result, kept, residual_dual = self._solve(
                lam_problem, pt, timer, gradient, left_out(screened, repeats), previous_l1
            )
            previous_l1 = lam_problem.penalty.l1
            result.coef = result.coef.copy()  # the iterate goes on to the next lam
            if carried is not None:
                carried.update(
                    lam_problem, pt.w, pt.b, pt.z, pt.objective, pt.r, result.loss_gradient, kept, residual_dual
                )
            gradient = result.loss_gradient
            yield with_repeats(result, repeats)

    def _solve(self, problem, pt, timer, gradient_init, screened=None, previous_l1=None, gram_limit=np.inf):
        n, d = problem.n_samples, problem.n_features
        arrays = problem.columns.arrays
        lam1, lam2 = problem.penalty.l1, problem.penalty.l2
        fit_intercept = problem.fit_intercept
        w, wpd = pt.w, pt.w.copy()
        g, H = np.zeros(d), np.ones(d)
        active = np.empty(d, dtype=np.int64)
        # The features in play: all, less those a caller proved zero (a path's carried screening).
        kept = np.arange(d, dtype=np.int64) if screened is None else np.flatnonzero(~screened).astype(np.int64)
        norms = problem.column_norms()
        dual = DualPoints(problem)
        newton_dual = NewtonDual(self.tol, self.verbose, self.gram_max, enabled=self.support_newton)
        model_dual = ModelDual(self.tol, enabled=self.model_dual)
        violator_dual = ViolatorDual(self.tol, self.gram_max, enabled=self.violator_dual)
        row_dual = RowDual(self.tol, enabled=self.row_dual)
        history = History()
        if pt.gram_cache is None:
            pt.gram_cache = GramCache(problem, self.gram_max)
        # A path's next lam factorises as the last one ended: for good where CG stopped at its cap
        # there, else while the last factorisation reaches the support (``_direct``).
        st = Loop(kept=kept, ws_size=self.first_working_set, direct=pt.factorise, gram_factorised=pt.factorise_near)
        if arrays[3] and self.dense_path_gram:
            st.gram_first = pt.gram_first  # the last lam's model price: its Gram matrix bought at once
        stop_reason, converged, cert = "max_iter", False, None
        # The rescaled residual's dual value when the solve ends at its last certifying pass's point.
        residual_dual = None
        polish = None  # the loss gradient's bounds after a final support-Newton step, when one is taken
        ck, saved = checkpoints.start(self, problem)
        # What a path's iterate had read at its earlier lams (a resumed solve's count is its own).
        reads_before = pt.reads if saved is None else 0
        peeked = 0  # pt.reads after the last certificate taken in the middle of a round (_peek)
        if saved is not None:
            gradient_init = None  # the saved state says where the solve stands
        if gradient_init is not None and self.working_set:
            # The first working set from the given gradient: the nonzero weights, then the
            # features closest to violating optimality. The first full pass certifies.
            nnz = int(np.count_nonzero(w))
            g_loss = np.asarray(gradient_init, dtype=np.float64)
            g_init, wk = g_loss[st.kept] + lam2 * w[st.kept], w[st.kept]
            st.ws_size = min(st.kept.shape[0], self._first_size(nnz, g_init, wk, lam1, previous_l1))
            if st.ws_size < st.kept.shape[0]:
                viol = np.where(wk != 0.0, np.abs(g_init + lam1 * np.sign(wk)), np.abs(g_init) - lam1)
                st.ws = closest_to_entering(st.kept, w, g_loss, norms, lam1, st.ws_size)
                st.ws_target = self._round_target(max(float(viol.max()), 0.0), lam1, warm=nnz > 0)
                st.full_pass, st.first_step = False, True
                st.warm_round = True  # a path's lam: its first round starts near the optimum
        if saved is not None:
            restore_state(saved, problem, pt, wpd, g, H, dual, history, timer, st)
        while True:
            if ck is not None and ck.due():  # the state at the top of an iteration says all that follows
                ck.save(saved_state(pt, wpd, g, H, st, dual, history, timer))
            everything = not self.working_set or st.kept.shape[0] <= st.ws_size
            if fit_intercept and not pt.centered and (st.full_pass or everything):
                pt.recenter()  # b optimal for w before a certificate (sum_i c_i u_i = 0)
            # A round's steps that have read certify_after passes over the features in play since
            # the last certificate are followed by one on a copy of the iterate (``_peek``).
            since = pt.reads - max(st.certified_reads, reads_before, peeked)
            # (Not with a checkpoint: a resumed solve would take them at other iterations.)
            peek = (
                ck is None
                and not (st.full_pass or everything or st.first_step)
                and since >= self.certify_after * columns_nnz(problem.columns, st.kept)
            )
            objective = pt.objective
            newton = None  # the support-Newton direction at this point, when solved for its dual point
            cols = st.kept if st.full_pass else st.ws
            shrink_at = st.vmax_prev / n if (everything or not st.full_pass) else np.inf
            # nnz: the support lies in cols (the working set holds every nonzero weight).
            checked_only = st.full_pass and not everything  # no step is taken from this pass
            if checked_only:
                m = cols.shape[0]
                vmax, vsum, nnz, vzero = kernels.check_pass(*arrays, cols, pt.r, w, lam1, lam2, g)
            else:
                m, vmax, vsum, nnz, vzero = kernels.outer_pass(
                    *arrays, cols, pt.r, pt.D, w, lam1, lam2, shrink_at, g, H, active
                )
            pt.reads += columns_nnz(problem.columns, cols)
            g_b = float(pt.r.sum()) if fit_intercept else 0.0
            vmax, vsum = max(vmax, abs(g_b)), vsum + abs(g_b)
            if st.full_pass:
                g_loss = g if lam2 == 0.0 else g - lam2 * w
                cert = dual.certificate(w, pt.b, pt.z, g_loss, st.kept, objective, pt.r)
                if row_dual.pays(dual, cert):
                    # (From this lam's start along a path: an iterate carries the earlier lams' reads.)
                    cert = row_dual.certificate(
                        pt, dual, st.kept, g_loss, cert, pt.reads - max(st.certified_reads, reads_before)
                    )
                    if self.verbose > 1:
                        print(f"   rows' dual point: relative gap {cert.relative:.3e}")
                if cert.relative > self.tol and violator_dual.pays(dual, cert):
                    # At most what the round since the last certificate read (rent or buy).
                    budget = pt.reads - st.certified_reads
                    cert = violator_dual.certificate(pt, dual, st.kept, g_loss, cert, budget)
                    if self.verbose > 1:
                        print(f"   violators' dual point: relative gap {cert.relative:.3e}")
                if cert.relative > self.tol and newton_dual.pays(pt, dual, vzero, nnz, g_loss, H, st.kept, objective):
                    support = st.kept[w[st.kept] != 0.0]
                    cap = self._newton_products(problem, support, pt, st)
                    before = pt.reads
                    cert, newton = newton_dual.certificate(
                        pt,
                        dual,
                        st.kept,
                        g_loss,
                        H,
                        vmax / lam1,
                        objective,
                        cap,
                        self._direct(problem, support, st, pt.factor)
                        or factorisation_pays(problem, support, self.gram_max),
                        self.factorise_gram_after,
                    )
                    st.newton_spent += pt.reads - before
                    st.gram_factorised = st.gram_factorised or self._factorised_after_cg(pt)
                    if newton[1].capped and cap < CG_MAX_PRODUCTS:  # stopped by its budget
                        st.newton_least *= self.newton_escalation
                        newton = newton if cert.relative <= self.tol else None
                st.certified_reads = pt.reads
                if st.recorded != st.it:
                    st.recorded = self._record(history, st.it, objective, cert.value, nnz, timer, pt, m)
                if cert.relative <= self.tol:
                    stop_reason, converged = cert.name, True
                    residual_dual = dual.residual_dual if newton is None else None
                    if newton is not None:
                        polish = newton_dual.polish(pt, newton, H, g_loss, st.kept, norms, vmax / lam1)
                        st.it += polish is not None
                    break
                # A step that no longer moves P (float resolution) ends the solve unless the
                # certificate still halves: KKT violations can fall below what P resolves.
                if (
                    st.it >= self.max_iter
                    or st.failed
                    or (st.stalled and everything and cert.value > 0.5 * st.stall_cert)
                ):
                    st.failed = st.failed or st.stalled
                    residual_dual = dual.residual_dual
                    break
                if st.stalled:
                    st.stall_cert = cert.value
                st.stalled = False
                if self.screening:
                    out = dual.screen(st.kept, w, norms, objective, lam1)
                    if out.any():
                        dropped, st.kept = st.kept[out], st.kept[~out]
                        if not checked_only:  # the step below uses this pass: drop them from it too
                            left = active[:m][~np.isin(active[:m], dropped)]
                            m = left.shape[0]
                            active[:m] = left
                everything = not self.working_set or st.kept.shape[0] <= st.ws_size
                if everything:
                    st.ws = st.kept
                    if checked_only:  # the step needs the curvature: pass again, with it
                        continue
                else:
                    st.ws = closest_to_entering(st.kept, w, g_loss, norms, lam1, st.ws_size)
                    st.ws_target = self._round_target(vmax, lam1)
                    st.full_pass, st.first_step = False, True
                    st.warm_round = False
                    # celer's pruning: twice the support, or twice the last size when the gap
                    # did not halve (a working set too small to make progress).
                    grow = cert.value > 0.5 * st.last_gap
                    st.last_gap = cert.value
                    st.ws_size = min(
                        st.kept.shape[0], max(self.first_working_set, 2 * nnz, 2 * st.ws_size if grow else 0)
                    )
                    st.vmax_prev, st.vsum_init, st.inner_eps = np.inf, None, 1.0
                    continue
            else:
                if (vmax <= st.ws_target and not st.first_step) or st.it >= self.max_iter or st.stalled or st.failed:
                    st.full_pass = True
                    continue
                st.first_step = False
                if peek:
                    cert, g_peek = self._peek(pt, dual, row_dual, st.kept, since)
                    peeked = pt.reads
                    if g_peek is not None:  # pt is now the certified copy (b optimal for w)
                        objective = cert.objective
                        st.recorded = self._record(history, st.it, objective, cert.value, nnz, timer, pt, m)
                        stop_reason, converged = cert.name, True
                        residual_dual = dual.residual_dual
                        g[st.kept] = g_peek[st.kept]  # the returned point's gradient (loss_gradient)
                        break
                if st.recorded != st.it:
                    st.recorded = self._record(history, st.it, objective, np.nan, nnz, timer, pt, m)
            support = cols[w[cols] != 0.0]
            # Settled: the support changed by at most a few percent since the last iteration
            # (features hovering at zero keep changing while the rest is done); after a CG solve
            # that stopped at its cap (an ill-conditioned support: news20 at 0.001 lam_max, 3,000
            # bigrams), and once its systems are factorised, at most a fifth of that, since each
            # such step costs hundreds of products (or a factorisation) and pays only once the
            # support has stopped moving (news20 at 0.001 lam_max: nonzeros read to 1e-2 4.9G ->
            # 2.0G, to 1e-4 6.0G -> 3.9G, to 1e-6 13.3G -> 14.4G; where CG converges, as on a9a,
            # earn and mnist10k, nothing changes).
            fraction = self.settled_fraction / (5.0 if st.cg_capped or st.direct else 1.0)
            changed = -1 if st.last_support is None else kernels.changed_count(support, st.last_support)
            settled = 0 <= changed <= fraction * support.shape[0] and support.shape[0] > 0
            st.last_support = support
            if not self._spend_carries(changed, support.shape[0]):
                st.newton_spent = 0
            if self.support_newton and settled and vzero < vmax and st.full_newton_step and vmax <= st.newton_below:
                # The support has settled and violates optimality more than any zero weight:
                # a Newton step on the support (smooth there) instead of CD. After a step cut
                # short by weights reaching zero, a CD step comes next (it moves them properly).
                direction = None
                if st.full_pass and newton is not None and np.array_equal(newton[0], support):
                    direction = newton[1]  # solved at this point for the certificate's dual point
                # (Otherwise, should the certificate's dual point have been factorised at this very
                # point, pt.factor solves the same system again: support_newton_direction.)
                cap = CG_MAX_PRODUCTS if direction is not None else self._newton_products(problem, support, pt, st)
                # A step that would carry at most as many weights across zero as a settled support
                # may change re-solves the rest with them at zero (_support_newton.orthant_refined).
                step, reads, capped = support_newton_step(
                    pt,
                    support,
                    H,
                    vmax / lam1,
                    verbose=self.verbose,
                    gram_max=self.gram_max,
                    direction=direction,
                    max_products=cap,
                    settled=fraction,
                    direct=self._direct(problem, support, st, pt.factor),
                    factorise_after=self.factorise_gram_after,
                )
                st.cg_capped = capped and cap >= CG_MAX_PRODUCTS
                # CG that cannot solve the support's system in its whole cap of products will not
                # solve the next one either (the support is settled): from then on the system is
                # factorised, an exact step for the price of about one capped solve (news20 at
                # 0.001 lam_max: 2,862 bigrams; each capped step made 15-25% of an exact step's
                # progress, and the certificate waited for the last of them).
                st.direct = st.direct or (st.cg_capped and support.shape[0] <= self.gram_max)
                st.gram_factorised = st.gram_factorised or self._factorised_after_cg(pt)
                st.newton_spent += reads
                budget_stopped = capped and cap < CG_MAX_PRODUCTS
                st.newton_least = (
                    st.newton_least * self.newton_escalation if budget_stopped and step == 1.0 else Loop.newton_least
                )
                pt.reads += reads
                st.full_newton_step = step == 1.0
                if step < self.newton_cut and vzero >= 0.1 * vmax:
                    # Cut this short, the step says the support or its signs are not the
                    # optimum's yet: the next waits until CD has halved the violations.
                    st.newton_below = self.newton_backoff * vmax
                st.it += 1
                if step > 0.0:
                    wpd[support] = w[support]
                    st.vmax_prev = vmax
                    pt.centered = False
                    continue
                pt.recenter()  # r and D at the current point again; CD takes this iteration
                st.it -= 1
            st.full_newton_step = True
            if st.vsum_init is None:
                st.vsum_init = vsum
            # Newton direction on the shrunk working set, then the line search along it.
            pt.xTd[:] = 0.0  # the model's iterate starts at d = 0
            model = kernels.QuadraticModel(g, H, w, wpd, pt.xTd, pt.D, g_b)
            most, on_gram = self._model_dual_over(problem, cols, st, everything)
            inner = kernels.InnerSettings(
                lam1,
                lam2,
                fit_intercept,
                min(st.inner_eps * st.vsum_init, self.forcing * vsum),
                self.max_inner,
                st.gram_first,
                self.gram_max,
                *model_dual.inner_settings(problem, dual.has_dual, objective, most),
                gram_limit,
                on_gram,
                # A tight solve on the Gram matrix sweeps on past its cap within a pass over the
                # features in play and the Gram matrix's price (what the next outer iteration reads).
                float(columns_nnz(problem.columns, st.kept)) if most > 0.0 else -np.inf,
            )
            # Where the curvature does not move (the squared loss), the last model's Gram matrix serves
            # this one over the columns they share (``_gram_cache``).
            cached = pt.gram_cache.lookup(pt, active, m, st.gram_first > 0.0)
            d_b, sweeps, inner_reads, gram_price, tight, gram = local_model.newton_direction(
                *arrays, active, m, model, inner, _NO_GRAM if cached is None else cached
            )
            if gram_price < 0.0:  # it would have bought a Gram matrix dearer than gram_limit
                pt.reads += inner_reads
                wpd[active[:m]] = w[active[:m]]  # the model's iterate is dropped
                stop_reason = _TO_COVARIANCES
                if cert is None:
                    cert = Certificate("none", np.nan, np.nan, objective)
                break
            pt.gram_cache.store(active, m, gram)
            used_gram = gram_price > 0.0
            st.gram_first = gram_price  # an ill-conditioned model: the next one likely is too
            pt.reads += inner_reads
            if self.verbose > 1:
                print(f"   CD on the model: {m} coordinates, {sweeps} sweeps{' (Gram)' if used_gram else ''}")
            if sweeps == 1:
                st.inner_eps *= 0.25
            # Solved on for its dual point: the residual it predicts, formed before the line
            # search moves r and D to the new point, is offered once the step is taken.
            model_point = model_corr = None
            if tight:
                model_point, model_corr, m, d_b, gram_price = model_dual.grown_point(
                    pt, dual, model, inner, active, m, cols, st.kept, d_b, gram_price, gram, objective, self.verbose
                )
                st.gram_first = gram_price
            step, loss_change, pen_change = self._line_search(pt, active, m, model, d_b)
            st.it += 1
            if step is None:
                # No step: certify where we are (margins afresh), then stop.
                st.failed, st.full_pass = True, True
                wpd[active[:m]] = w[active[:m]]
                pt.refresh()
                continue
            kernels.take_step(active, m, w, wpd, step)
            pt.b += step * d_b
            pt.accept()
            pt.loss_sum += loss_change
            pt.pen += pen_change
            st.vmax_prev = vmax
            if model_point is not None:
                cert = model_dual.certificate(pt, dual, model_point, model_corr, st.kept, pt.objective)
                if self.verbose > 1:
                    print(f"   model's dual point: relative gap {cert.relative:.3e}")
                if cert.relative <= self.tol:
                    stop_reason, converged = cert.name, True
                    polish = model_dual.gradient(pt, st.kept)
                    break
            if -(loss_change + pen_change) <= 8 * _EPS * abs(objective):
                # The objective no longer moves (float resolution): margins afresh, certify.
                st.stalled, st.full_pass = True, True
                pt.refresh()
            else:
                pt.centered = False
        final = pt.objective_within(OBJECTIVE_RTOL * self.tol)
        if cert.name == "duality_gap":
            cert = Certificate.duality_gap(final, dual.best_dual)
        else:
            cert = cert._replace(objective=final)
        if st.recorded == st.it:  # the last row is the returned point: its exact values
            history.objective[-1], history.certificate[-1] = final, cert.value
        elif polish is not None:
            st.recorded = self._record(history, st.it, final, cert.value, int(np.count_nonzero(w)), timer, pt, 0)
        if self.verbose:
            print(f"cd: {st.it} Newton steps, {len(history)} rows, {st.kept.shape[0]} of {d} features kept")
        result = certified_result(
            self,
            coef=w,
            intercept=pt.b,
            n_iter=st.it,
            converged=converged,
            stop_reason=stop_reason,
            cert=cert,
            history=history,
            timer=timer,
            line_search_failed=st.failed,
            warn=stop_reason != _TO_COVARIANCES,
        )
        loss_gradient = np.zeros(d)
        if polish is None:
            loss_gradient[st.kept] = g[st.kept] - lam2 * w[st.kept]  # the last full pass was at this point
        else:
            loss_gradient[st.kept] = polish
        result.loss_gradient = loss_gradient
        if cert.name == "duality_gap" and dual.best_point is not None:
            result.dual_point = dual.best_point.copy()
        # A path's next lam starts factorising if this one ended so: by CG's cap, for good; by rent or
        # buy or after a CG solve, while that factorisation can precondition the next systems (a
        # support more than a few weights away pays rent again: the 50-lam paths at tol 1e-4, earn
        # 0.91x, a9a 0.86x, mnist10k 0.91x, generated data with 1% positives 0.71x, news20 1.01x
        # (at tol 1e-3 1.12x); where each lam factorised its support of ~2,500 weights at 0.25 s
        # there, CG now often converges in 12-33 products before rent or buy).
        pt.factorise = st.direct
        pt.gram_first = st.gram_first
        pt.factorise_near = st.last_support is not None and self._direct(problem, st.last_support, st, pt.factor)
        return result, st.kept, residual_dual

    def _covariance_solve(self, problem, coef_init, converted, before=None):
        """The Lasso on its covariances (``_covariance``): (a Result certified by the problem's own
        duality gap, None) or, when that gap misses tol (the covariance form's sums round where the
        residual is tiny against y), (None, the point reached) for CD to go on from. ``converted``:
        the problem's ``conversion_seconds`` before the caller's first read of its columns (the
        conversion's seconds since are reported apart, ``timings["convert"]``). ``before``: the
        Result of a CD solve handed over here, whose History, iterations and seconds this one's
        continue."""
        timer = Timer()
        history = History() if before is None else copy.deepcopy(before.history)
        spent = 0.0 if before is None else before.timings["solve"]
        iterations = 0 if before is None else before.n_iter
        read = before.history.data_accesses[-1] if before is not None and len(before.history) else 0
        d = problem.n_features
        w = np.zeros(d) if coef_init is None else np.array(coef_init, dtype=np.float64).reshape(d)
        built = problem.has_derived("covariances")
        cov = covariance.covariances(problem)
        reads = read + (0 if built else cov.work)  # a path's later lams find them built

        def record(sweep, objective, gap):
            history.append(
                objective=objective,
                certificate=gap,
                nnz=int(np.count_nonzero(w)),
                time=spent + timer(),
                data_accesses=reads + sweep * d,
                active=d,
            )
            if self.callback is not None:
                self.callback(iterations + sweep, history)

        max_sweeps = min(covariance.MAX_SWEEPS, 100 * self.max_iter)
        b, sweeps = covariance.solve(problem, w, self.tol, max_sweeps, record)
        cert, b, gradient, u = covariance.certified_point(problem, w, b)
        if cert.relative > self.tol:
            return None, (w, b)
        result = certified_result(
            self,
            coef=w,
            intercept=b,
            n_iter=iterations + sweeps,
            converged=True,
            stop_reason=cert.name,
            cert=cert,
            history=history,
            timer=timer,
        )
        result.loss_gradient = gradient
        result.dual_point = u
        result.timings["solve"] += spent
        result.timings["convert"] = getattr(problem, "conversion_seconds", 0.0) - converted
        if self.verbose:
            print(f"cd: the Lasso on its covariances, {sweeps} sweeps, relative gap {cert.relative:.3e}")
        return result, None

    def _distinct_rows(self, problem, columns=False, n_solves=1, on_covariances=True):
        """The problem over its distinct rows (``Problem.distinct_rows``), or None: the solve then
        runs over every row.

        Rows equal in their columns, values and label add the same term to the loss at every
        iterate; the problem with one row per group, weighted by the group's weight, has the same
        objective, optimum, lam_max and dual value, and every pass of the solve (its margins,
        gradients, Gram matrices, line searches and certificates) reads fewer rows. Categorical
        data repeat rows: a9a (UCI Adult, one-hot) has 26,008 distinct rows of 32,561, and its
        fits took 0.78-0.81x the time on them (3 lams x tol 1e-2 and 1e-6, interleaved); text
        almost never does (earn 2%: left as it is, for the 0.1 ms the search costs). A CSR
        problem not yet converted to columns is searched in its rows; a column layout (CSC,
        dense, and so one-vs-rest's and cross-validation's problems) only for a path
        (``columns``: its search reads every value, 4 ms on a9a, paid once for every lam; a
        single fit on a9a's CSC gained nothing from it, 1.0x over six points). The result is the same problem's: the dual point is
        given for every row (each group's value repeated); the search's seconds are the solve's
        (as :meth:`_distinct_columns`' are), the distinct rows' conversion to columns is reported
        in ``timings["convert"]`` (as a CSR problem's is). Not where the Lasso is solved on its
        covariances (``_covariance``, for ``n_solves`` solves; ``on_covariances``: whether a
        single solve may be): S is built once and the rows are read only by the certificates (a9a's
        Lasso fits, 5 ms from its CSR rows, took 10 ms with the search and the distinct rows'
        conversion)."""
        if not self.deduplicate or not hasattr(problem, "distinct_rows"):
            return None
        if on_covariances and covariance.applies(problem, self, n_solves=n_solves):
            return None
        return problem.distinct_rows(columns=columns)

    def _distinct_columns(self, problem):
        """The representatives of the problem's repeated columns (``Problem.repeated_columns``),
        or None: the solve then runs over every column.

        Equal columns x_a = x_b make the L1 problem degenerate: only w_a + w_b moves the margins,
        so CD's models and the support's Newton system are singular along w_a - w_b (news20's
        uni- and bigrams: 254k of 589k columns repeat another; its support-Newton CG stops at its
        cap), and every pass reads the repeats for nothing. With the plain L1 penalty the problem
        over one column of each group has the same optimal value (the weights of a group share a
        sign at every optimum, so putting their sum on one column keeps both the margins and the
        L1 norm), and the same dual: a repeat's correlation with any residual is its
        representative's, so the certificate over the representatives holds for every column.
        The repeats are left out like screened features. They are found by a sketch of each column
        and then compared with their representatives entry by entry (``data.memory.repeated_columns``:
        one read of the candidates' columns, once per data set), so that a repeat's correlation with
        any dual point is its representative's to the bit, and the certificate holds for it with
        nothing checked after the solve (when the check was made after each solve, it was a read of
        the repeats' columns at every lam of a path: 1-3% of earn's and news20's). Not with an L2
        term, whose optimum splits a group's weight evenly; not on dense layouts (few columns, rarely
        repeated) or on narrow data (fewer columns than rows: repeats are rare features there, and
        a fit spends less)."""
        if not (self.deduplicate and problem.penalty.l2 == 0.0) or problem.n_features < problem.n_samples:
            return None
        columns, detect = getattr(problem, "columns", None), getattr(problem, "repeated_columns", None)
        if columns is None or detect is None or columns.dense:
            return None
        return detect()

    def _peek(self, pt, dual, row_dual, kept, budget):
        """A certificate in the middle of a working set's round, taken on a copy of the iterate
        with b made optimal for w: the gradient over the features in play (one pass), the rescaled
        residual and, where it pays, the residual made feasible row by row, offered to a dual of
        their own. Where it certifies, ``pt`` and ``dual`` take the copy's state and its points;
        where it misses, nothing of the solve changes (its iterate, rounds and screening go on as
        if it had not been taken) but the nonzeros it read. Returns (the certificate, X^T r +
        lam2 w on ``kept`` when it certified, else None)."""
        problem = pt.problem
        lam1, lam2 = problem.penalty.l1, problem.penalty.l2
        copy_pt = pt.recentered_copy()
        g_peek = np.zeros(problem.n_features)
        kernels.check_pass(*problem.columns.arrays, kept, copy_pt.r, copy_pt.w, lam1, lam2, g_peek)
        copy_pt.reads += columns_nnz(problem.columns, kept)
        g_loss = g_peek if lam2 == 0.0 else g_peek - lam2 * copy_pt.w
        own = DualPoints(problem)
        objective = copy_pt.objective
        cert = own.certificate(copy_pt.w, copy_pt.b, copy_pt.z, g_loss, kept, objective, copy_pt.r)
        if row_dual.pays(own, cert):
            cert = row_dual.certificate(copy_pt, own, kept, g_loss, cert, budget)
        pt.reads = copy_pt.reads
        if self.verbose > 1:
            print(f"   a certificate within the round: relative gap {cert.relative:.3e}")
        if cert.relative > self.tol:
            return cert, None
        vars(pt).update(vars(copy_pt))
        dual.adopt(own)
        return dual.best(cert, objective), g_peek

    def _record(self, history, it, objective, certificate, nnz, timer, pt, m):
        history.append(
            objective=objective, certificate=certificate, nnz=nnz, time=timer(), data_accesses=pt.reads, active=m
        )
        if self.callback is not None:
            self.callback(it, history)
        if self.verbose:
            print(
                f"cd iter {it:4d}  P={objective:.12g}  cert={certificate:.3e}  nnz={nnz}  active={m}  t={timer():.3f}s"
            )
        return it

    def _first_size(self, nnz, g_init, w_kept, lam1, previous_l1):
        """The size of the first working set from a given gradient: at least ``first_working_set``
        and twice the support; along a path (``previous_l1``, the last lam's), the support plus
        the zero weights that glmnet's sequential strong rule keeps, |g_j| >= 2 lam1 - previous_l1
        (Tibshirani et al. 2012), at least ``first_strong_set``: a warm start's support is nearly
        the new one, and the floor of a cold start would put ~100 of the densest columns in every
        lam's models (earn's 50-lam path: 7% less time at tol 1e-2 and 1e-6, 1% at 1e-4). The
        full pass that ends the round checks every feature, as glmnet's KKT check does."""
        if previous_l1 is None or nnz == 0:
            return max(self.first_working_set, 2 * nnz)
        strong = int(np.count_nonzero((w_kept == 0.0) & (np.abs(g_init) >= 2.0 * lam1 - previous_l1)))
        return max(self.first_strong_set, nnz + strong)

    def _newton_products(self, problem, support, pt, st):
        """CG's cap of products for a support-Newton solve at this point (``newton_budget``;
        infinite: the full cap)."""
        if self.newton_budget == np.inf:
            return CG_MAX_PRODUCTS
        budget = self.newton_budget * (pt.reads - st.certified_reads)
        return budgeted_products(problem, support, self.gram_max, budget, st.newton_least)

    @staticmethod
    def _spend_carries(changed, size):
        """Whether rent or buy (:meth:`_direct`) keeps counting the support-Newton solves' reads
        across a move of ``changed`` weights (-1: no support before) to a support of ``size``: while a
        factorisation made on one support would precondition the other's system (its new weights
        bordered, at most ``STALE_MAX_FRESH``, and most of it shared: ``SupportFactor.preconditioner``).
        Reset on any move beyond "settled", mnist10k at 0.1 lam_max (56-60 weights, a few moving
        each step) never bought one, and its last two solves took 43 products each."""
        return 0 <= changed <= min(STALE_MAX_FRESH, size // 2)

    def _model_dual_over(self, problem, cols, st, everything):
        """(most, on_gram): how far the model over ``cols`` may predict P to fall and still be
        solved on for its dual point (``_model_dual``), relative to |P| (``inf`` where
        ``ModelDual``'s own reach applies, 0 where it is not offered), and whether only once the
        model is solved on its Gram matrix.

        Always for a model over every feature in play (``everything``). A working set's leaves
        features out, which may violate at its point (the rescaling then pays for them), and its
        correlations cost a pass over every feature in play: offered only where the working set
        holds at least ``ws_model_dual_share`` of the features in play and at most ``gram_max``
        (a model the Gram matrix can hold), for a loss whose curvature moves, and then at tol <=
        ``ws_model_dual_tol``, in a warm start's first round (``ws_model_dual_warm``: a path's
        lam, whose first round starts near the optimum), or at a looser tol once the model
        predicts a decrease within ``ws_model_dual_near * tol`` and is solved on its Gram matrix
        (the step after it then nearly certifies, and the tight solve's sweeps cost O(m^2) each).
        Without those two bounds, at 1e-2 the tries came early, each a tight model solve and that
        pass (mnist10k at 0.01 lam_max to 1e-2 81 -> 142 ms); without the second, on dense
        3,000 x 300 problems the tight solves bought Gram matrices of 200 coordinates for a
        certificate one cheap step would have given (to 1e-1 and 1e-2, 17M -> 32M nonzeros read).
        With both, nonzeros read at tol 1e-1 / 1e-2 / 1e-3 on the eleven batch points: a9a at
        0.01 lam_max 11.4M / 19.0M / 23.1M -> 11.4M / 16.4M / 19.1M (a Newton step fewer at 1e-2
        and 1e-3; the last round's model, 110 of 123 features, certified 1e-5), the other 31 fits
        the same reads (mnist10k at 0.01 to 1e-3 would gain 165M -> 135M without the second
        bound: its model is solved by sweeps there); the generated text sets the same. The hashed clicks of the
        benchmark (20,000 x 1,000,000, models of 15,000-17,000 features) qualified without the
        ``gram_max`` cap, and their tight solves by CD sweeps bought nothing: at 0.01 lam_max to
        1e-4 4.5 -> 6.3 s. Counted in features, not in values: on generated text
        (``make_sparse_text``) the working sets of frequent words hold half the values in play,
        and their tight solves bought Gram matrices that did not certify (5,000 x 50,000 at 0.01
        lam_max to 1e-4: 65M -> 1,580M nonzeros read and Gram work, 1,000 x 20,000 to 1e-6 40 ->
        90 ms); counted in features, those fits read what they read without it. The squared
        loss's model is the problem on the working set, whose point is the residual the step then
        reaches: the tight solve only adds sweeps (the Lasso on earn at 0.001 lam_max to 1e-4 137
        -> 191 ms).

        Measured with the rule at tol <= 1e-4, whole fits in process (median of 7, against it
        off): a9a at 0.01 lam_max to 1e-6 43.1 -> 31.5 ms (a Newton step fewer), to 1e-4 32.2 ->
        28.7 ms, mnist10k at 0.01 to 1e-6 155 -> 131 ms (two fewer), news20 at 0.1 to 1e-6 7 -> 5
        Newton steps (the same time); a9a's 50-lam logistic path to 1e-4 / 1e-6 505 / 640 -> 456
        / 535 ms, mnist10k's to 1e-4 3.61 -> 3.33 s; the other batch points, earn's path and the
        generated text level."""
        if everything:
            return np.inf, False
        if problem.loss.constant_curvature:
            return 0.0, False
        if not self.ws_model_dual_share * st.kept.shape[0] <= cols.shape[0] <= self.gram_max:
            return 0.0, False
        if self.tol <= self.ws_model_dual_tol or (st.warm_round and self.ws_model_dual_warm):
            return np.inf, False
        return self.ws_model_dual_near * self.tol, True

    @staticmethod
    def _factorised_after_cg(pt):
        """Whether the iterate's factorisation was made from the Gram matrix a CG solve had built
        (``support_newton_direction``'s rent or buy): the next systems are then factorised too, each
        new one preconditioned by the last (``_direct``), as once CG stops at its cap. (One carried
        from a path's last lam made that lam's solves factorise, and so this one's while it reaches:
        ``pt.factorise_near``.)"""
        return pt.factor is not None and pt.factor.after_cg

    def _direct(self, problem, support, st, factor):
        """Whether the support's Newton system is factorised (``_support_factor``): from a CG solve
        that stopped at its whole cap on (``st.direct``), or one that factorised the Gram matrix it had
        bought (``st.gram_factorised``, ``factorise_gram_after``) while the iterate's factorisation
        ``factor`` can precondition this support's system (``SupportFactor.reaches``: a support that
        moved farther, as when a working set doubles, goes back to rent or buy; generated data with 1%
        positives, 50,000 x 5,000: supports of 800, then 1,600, then 2,400 weights were all factorised
        after one CG solve had been, 0.3 s each where CG took 5-25 products; fits 2-2.5x faster since,
        every benchmark point's and path's iterates the same), and also, rent or buy, while the
        support-Newton solves since the support last moved farther than a factorisation's reach as a
        preconditioner have read (``st.newton_spent``) at least ``factorise_after`` times
        what factorising its system would cost (supports of at most ``gram_max`` weights; news20 at
        0.001 lam_max: 650 products over eight steps came before the capped one, 1.9 s against a
        0.7 s factorisation, after which the next steps' CG is preconditioned by it and takes a few
        products; mnist10k at 0.1 lam_max: two solves of 43 products, then one, preconditioned).
        Where CG converges in a few products (a9a, earn) the solve ends first.

        With a loss whose curvature does not move (the squared loss), the system is factorised at
        once wherever that costs at most one capped CG solve (``CG_MAX_PRODUCTS`` products over the
        support's columns): the matrix is then the same at every later point, so the factorisation
        solves each later step on that support exactly and preconditions the next supports' systems,
        where rent or buy would first spend a whole CG solve and then count again after every move
        of the support (``factorise_within``: that cost in products). Lasso fits, interleaved:
        news20 at 0.01 lam_max to 1e-6 2.0 -> 1.1 s (a first CG solve of 147 products on 2,279
        bigrams, then 59 and a factorisation), earn at 0.001 to 1e-6 215 -> 129 ms; the other points
        of the Lasso benchmark level."""
        k = support.shape[0]
        if st.gram_factorised and not (factor is not None and factor.reaches(support)):
            st.gram_factorised = False  # that factorisation cannot precondition this support's system
        direct = st.direct or st.gram_factorised
        if direct or not 0 < k <= self.gram_max:
            return direct
        constant = problem.loss.constant_curvature
        if not constant and st.newton_spent < self.factorise_after * SupportFactor.least_work(problem, support):
            return False
        work = SupportFactor.estimated_work(problem, support)  # one counting pass over the support's columns
        if constant and work <= self.factorise_within * product_reads(problem, support):
            return True
        return st.newton_spent >= self.factorise_after * work

    def _round_target(self, vmax, lam1, warm=False):
        """The largest KKT violation on the working set at which a round ends: a fraction of the
        last full pass's (celer's 0.3 of the gap). The first round of a warm start (a path's next
        lam: its working set, from the last solution's gradient, holds the support) also goes down
        to sqrt(tol) lam1, so that its full pass can certify tol instead of opening another round
        (earn's 50-lam path at tol 1e-4: 15% fewer reads; a cold solve's first working set is a
        guess, and solving it that far costs more than it saves)."""
        target = self.working_set_fraction * vmax
        return min(target, np.sqrt(self.tol) * lam1) if warm else target

    def _line_search(self, pt, active, m, model, d_b):
        """Largest step in {1, 1/2, ...} with P(w + s d) - P(w) <= sigma s Delta,
        Delta = g.d + g_b d_b + lam1 (||w + d||_1 - ||w||_1).

        The trial's margins, losses, r and D are left in pt.z_new, pt.lv_new, pt.r, pt.D.
        Returns (step, loss change, penalty change), or (None, 0, 0) on failure."""
        problem, (g, _, w, wpd, _, _, g_b, _) = pt.problem, model
        kind, y, c = problem.loss.kernel_id, problem.y, problem.c
        lam1, lam2 = problem.penalty.l1, problem.penalty.l2
        delta = kernels.model_decrease(active, m, g, w, wpd, lam1) + g_b * d_b
        # Rounding allowance: near the optimum both sides are at float resolution.
        slack = 8 * _EPS * abs(pt.objective)
        step = 1.0
        for _ in range(self.max_line_search):
            loss_change = weighted_terms_along(kind, y, pt.z, pt.xTd, step, c, pt.lv, pt.z_new, pt.lv_new, pt.r, pt.D)
            pen_change = kernels.penalty_change(active, m, w, wpd, step, lam1, lam2)
            if loss_change + pen_change <= self.sigma * step * delta + slack:
                return step, loss_change, pen_change
            step *= 0.5
        return None, 0.0, 0.0
