"""Multinomial (softmax) L1 logistic regression: proximal Newton steps solved by coordinate
descent, on growing working sets of features, certified by the duality gap.

Minimises (:class:`~l1scale.problems.multinomial.MultinomialProblem`)

    P(W, b) = sum_i c_i [ lse(x_i W + b) - (x_i W + b)_{y_i} ] + lam1 ||W||_1 + lam2/2 ||W||_F^2

over W (n_features x K) and unpenalised intercepts b (K), lam1 = lam l1_ratio,
lam2 = lam (1 - l1_ratio).

The method is newGLMNET's (Yuan, Ho & Lin 2012; the binary solver ``cd.py``) with the full
multinomial Hessian in the model, as Friedman, Hastie & Tibshirani's glmnet does per class but
without its class-by-class outer loop:

1. at (W, b), with P = softmax(Z), R = c (P - Y) and D = c P (1 - P), one pass over the columns
   gives the gradient G = X^T R + lam2 W and the exact diagonal H_jk = sum_i c_i x_ij^2 p_ik (1 - p_ik)
   (+ lam2 + nu) of the Hessian; a row of W that is zero and whose K gradients are well inside
   lam1 is shrunk away (liblinear's shrinking, by rows);
2. the quadratic model  <G, Delta> + 1/2 sum_i c_i dz_i^T (diag p_i - p_i p_i^T) dz_i
   + lam1 ||W + Delta||_1  (dz_i = Delta^T x_i + db: the cross-class terms included) is minimised
   by cyclic CD, feature rows in random order and each row's K coordinates in turn, the
   intercepts as K more coordinates. Keeping dz and s_i = p_i . dz_i up to date makes each
   coordinate's model gradient one read of its column, so a sweep costs K nnz(X_ws) multiply-adds;
3. Armijo line search on P along Delta (the loss change summed term by term).

Around it, the working sets of the binary solver (celer): each round passes over every
feature, certifies, and picks the rows of W to work on (every nonzero row, then the zero rows
closest to violating optimality, (lam1 - max_k |G_jk|) / ||x_j||_c), of a size that doubles
when the gap did not halve; Newton steps on the working set run until its largest violation
is below 0.3 times that of the full pass. When the working set would hold every feature, each
Newton step is itself a full pass and is certified.

Certificate at every full pass: the duality gap of the best dual point seen, each the residual
P - Y rescaled into the dual feasible set, at intercepts made exactly optimal first (a K-dimensional
Newton solve), which puts the residual in the dual's constraint sum_i c_i (P_i - Y_i) = 0.

Handed a binary :class:`~l1scale.problems.Problem` (logistic loss, labels -1 / +1), the solver
returns the binary CD solver's solution: the two-class softmax model is equivalent (with
W = (w0, w1) the loss depends on v = w1 - w0 only, and min ||w0||_1 + ||w1||_1 over w1 - w0 = v is
||v||_1, min of the squared norms ||v||^2 / 2, so at lam1' = lam1, lam2' = 2 lam2 its optimum is the
binary optimum v = w1 - w0, b = b1 - b0; tested), and the binary solver finds it without a second
copy of every weight.
"""

from __future__ import annotations

import numpy as np

from ..problems.multinomial import MultinomialProblem
from . import _multinomial_kernels as kernels
from ._dual import columns_nnz
from ._multinomial_newton import newton_dual_value
from ._working_sets import smallest_scores
from .base import History, Solver, Timer, certified_result
from .cd import CoordinateDescent

__all__ = ["MultinomialCD"]

_EPS = float(np.finfo(np.float64).eps)


class _State:
    """The iterate (W, b) and what the driver keeps at it: margins Z, P, c P, R, D, the
    per-example losses, their sum and the penalty; trial buffers for the line search."""

    def __init__(self, problem, W, b):
        n, K = problem.n_samples, problem.n_classes
        self.problem = problem
        self.W, self.b = W, b
        self.Z, self.Z_new = np.zeros((n, K)), np.empty((n, K))
        self.P, self.CP, self.R, self.D = (np.empty((n, K)) for _ in range(4))
        self.lv, self.lv_new, self.p = np.empty(n), np.empty(n), np.empty(K)
        self.loss_sum, self.pen, self.reads, self.centered = 0.0, 0.0, 0, False
        self.refresh()

    @property
    def objective(self) -> float:
        return self.loss_sum + self.pen

    def refresh(self):
        """Margins from scratch (from the nonzero rows of W), then :meth:`recenter`."""
        pen = self.problem.penalty
        self.reads += kernels.support_margins(*self.problem.columns.arrays, self.W, self.b, self.Z)
        self.pen = pen.l1 * float(np.abs(self.W).sum()) + 0.5 * pen.l2 * float(np.vdot(self.W, self.W))
        self.recenter()

    def recenter(self):
        """Intercepts made optimal for W (when fitted); P, R, D and the losses at the margins."""
        problem = self.problem
        if problem.fit_intercept:
            self.Z -= self.b
            self.b = problem.optimal_intercept(self.Z, self.b)
            self.Z += self.b
        self.update()
        self.centered = True

    def update(self):
        p = self.problem
        self.loss_sum = kernels.state_at(self.Z, p.y, p.c, self.P, self.CP, self.R, self.D, self.lv)


class MultinomialCD(Solver):
    """Multinomial L1 (elastic-net) logistic regression by proximal-Newton coordinate descent on
    working sets, certified by the duality gap (see the module docstring for the method).

    Minimises  P(W, b) = sum_i c_i [lse(x_i W + b) - (x_i W + b)_{y_i}] + lam1 ||W||_1 + lam2/2 ||W||_F^2
    for a :class:`~l1scale.problems.multinomial.MultinomialProblem`, and the binary logistic
    objective (as the equivalent two-class softmax) for a logistic :class:`~l1scale.problems.Problem`.
    Its Result has ``coef`` of shape (n_classes, n_features) and ``intercept`` (n_classes,),
    centred to sum zero (the softmax does not see a common shift), for a multinomial problem.

    Parameters
    ----------
    tol : float, default 1e-6
        Stop when the duality gap <= tol * P.
    max_iter : int, default 200
        Newton steps, over all rounds.
    max_inner : int, default 1000
        CD sweeps per quadratic model.
    random_state : int, default 0
        Seed of the row order.
    callback : callable, optional
        Called as ``callback(iteration, history)`` after each iteration.
    verbose : int, default 0
    working_set : bool, default True
        Solve on growing working sets of features (False: every Newton step passes over every
        feature, with shrinking).
    """

    name = "multinomial_cd"
    data_access = "columns"
    requires = ("smooth", "has_conjugate")
    #: Fits the multinomial model (the estimators' ``multi_class="multinomial"``).
    multinomial = True
    sigma = 0.01
    max_line_search = 30
    # Inexact Newton: each model solved until its violations sum to at most
    # min(forcing, (vsum / vsum_first) ** forcing_power) times the outer ones (measured on digits
    # and wine: a fixed fraction converges linearly, power 1 over-solves the early models).
    forcing = 0.1
    forcing_power = 0.5
    inner_shrinking = True
    # Offer the dual point of the support's Newton step when the residual's certificate misses tol.
    newton_dual = True
    first_working_set = 100
    working_set_fraction = 0.3

    def __init__(
        self, tol=1e-6, max_iter=200, max_inner=1000, random_state=0, callback=None, verbose=0, working_set=True
    ):
        self.tol = tol
        self.max_iter = max_iter
        self.max_inner = max_inner
        self.random_state = random_state
        self.callback = callback
        self.verbose = verbose
        self.working_set = working_set

    def check_problem(self, problem):
        super().check_problem(problem)
        if not isinstance(problem, MultinomialProblem) and (
            problem.kind != "memory" or problem.loss.name != "logistic"
        ):
            raise ValueError(
                f"solver {self.name!r} fits the softmax loss (a MultinomialProblem) or a binary logistic "
                f"Problem held in memory, not loss {problem.loss.name!r} over a {problem.kind!r} problem"
            )

    # ------------------------------------------------------------------ entry points
    def solve(self, problem, coef_init=None, intercept_init=None):
        """Minimise P from (coef_init, intercept_init) (zero by default): shapes (n_classes,
        n_features) and (n_classes,) for a multinomial problem, (n_features,) and a float for a
        binary one."""
        self.check_problem(problem)
        if not isinstance(problem, MultinomialProblem):
            return self._solve_binary(problem, coef_init, intercept_init)
        timer = Timer()
        d, K = problem.n_features, problem.n_classes
        W = np.zeros((d, K))
        if coef_init is not None:
            W[:] = np.asarray(coef_init, dtype=np.float64).reshape(K, d).T
        b = np.zeros(K)
        if intercept_init is not None and problem.fit_intercept:
            b[:] = np.asarray(intercept_init, dtype=np.float64).reshape(K)
        kernels.seed(0 if self.random_state is None else int(self.random_state) % (2**32))
        return self._solve(problem, _State(problem, W, b), timer)

    def _solve_binary(self, problem, coef_init, intercept_init):
        """A binary logistic Problem: the binary CD solver's optimum is the two-class softmax's
        (module docstring), found without the second class's copy of every weight (splice: a
        third of the time of the softmax solve)."""
        solver = CoordinateDescent(
            tol=self.tol,
            max_iter=self.max_iter,
            max_inner=self.max_inner,
            random_state=self.random_state,
            callback=self.callback,
            verbose=self.verbose,
            working_set=self.working_set,
        )
        return solver.solve(problem, coef_init, intercept_init)

    # ------------------------------------------------------------------ the solve
    def _solve(self, problem, st, timer):
        n, d, K = problem.n_samples, problem.n_features, problem.n_classes
        arrays = problem.columns.arrays
        lam1, lam2 = problem.penalty.l1, problem.penalty.l2
        fit_intercept = problem.fit_intercept
        W = st.W
        Wpd = W.copy()
        G, H = np.zeros((d, K)), np.ones((d, K))
        dZ, S, db = np.zeros((K, n)), np.zeros(n), np.zeros(K)  # dZ class-major (the sweeps' order)
        active = np.empty(d, dtype=np.int64)
        skip = np.zeros((d, K), dtype=np.bool_)
        every = np.arange(d, dtype=np.int64)
        norms = problem.column_norms()
        history = History()
        best_dual, cert = -np.inf, None
        it, recorded, full, first_step, failed, stalled = 0, -1, True, False, False, False
        ws, ws_size, ws_target, last_gap, vmax_prev, stalls = every, self.first_working_set, np.inf, np.inf, np.inf, 0
        stop_reason, converged, vsum_first = "max_iter", False, None
        while True:
            everything = not self.working_set or d <= ws_size
            if fit_intercept and not st.centered and (full or everything):
                st.recenter()  # intercepts optimal for W before a certificate
            objective = st.objective
            cols = every if full else ws
            checked_only = full and not everything
            shrink_at = vmax_prev / n if not checked_only else np.inf
            m, vmax, vsum, nnz, vzero = kernels.outer_pass(
                *arrays, cols, st.R, st.D, W, lam1, lam2, shrink_at, not checked_only, G, H, active
            )
            st.reads += columns_nnz(problem.columns, cols)
            gb = st.R.sum(axis=0) if fit_intercept else np.zeros(K)
            gmax = float(np.max(np.abs(gb)))
            vmax, vsum = max(vmax, gmax), vsum + float(np.abs(gb).sum())
            if full:
                G_loss = G if lam2 == 0.0 else G - lam2 * W
                best_dual = max(best_dual, problem.dual(st.P, G_loss))
                cert = problem.gap_certificate(objective, best_dual)
                newton = None
                if cert.relative > self.tol and self.newton_dual:
                    # The dual point of the support's Newton step (``_multinomial_newton``).
                    value, reads, newton = newton_dual_value(problem, st, G_loss, H, vzero, objective, self.tol)
                    st.reads += reads
                    if value > best_dual:
                        best_dual = value
                        cert = problem.gap_certificate(objective, best_dual)
                recorded = self._record(history, it, objective, cert.value, nnz, timer, st, m, recorded)
                if cert.relative <= self.tol:
                    stop_reason, converged = cert.name, True
                    if newton is not None:
                        # Certified by the Newton point's dual: take that step too (one line search;
                        # P only falls, and the model's own residual comes close to certifying).
                        it += self._polish(problem, st, newton, G, gb)
                    break
                if it >= self.max_iter or failed or stalls >= 2:
                    break
                if not everything:
                    rows_nnz = int(np.count_nonzero(np.any(W != 0.0, axis=1)))
                    grow = cert.value > 0.5 * last_gap
                    last_gap = cert.value
                    ws = self._working_set(W, G_loss, norms, lam1, min(d, ws_size))
                    ws_target = self.working_set_fraction * vmax
                    ws_size = max(self.first_working_set, 2 * rows_nnz, 2 * ws_size if grow else 0)
                    full, first_step, vmax_prev = False, True, np.inf
                    continue
            else:
                if (vmax <= ws_target and not first_step) or it >= self.max_iter or stalled or failed:
                    full, stalled = True, False
                    continue
                first_step = False
                recorded = self._record(history, it, objective, np.nan, nnz, timer, st, m, recorded)
            # The Newton direction on active[:m] (and the intercepts), then the line search.
            dZ[:] = 0.0
            S[:] = 0.0
            db[:] = 0.0
            Hb = st.D.sum(axis=0) + kernels.NU
            Pt, CPt = np.ascontiguousarray(st.P.T), np.ascontiguousarray(st.CP.T)
            # Inexact Newton with a forcing term that shrinks with the violations (superlinear
            # convergence); inner shrinking, then one sweep over every coordinate to confirm.
            vsum_first = vsum if vsum_first is None else vsum_first
            target = vsum * min(self.forcing, (vsum / vsum_first) ** self.forcing_power)
            skip[active[:m]] = False
            inner_shrink, sweeps = np.inf, 0
            while sweeps < self.max_inner:
                mv, ms, reads = kernels.model_sweep(
                    *arrays, active, m, G, H, W, Wpd, dZ, S, Pt, CPt, lam1, lam2, inner_shrink, skip
                )
                sweeps += 1
                st.reads += reads
                if fit_intercept:
                    gbm = kernels.intercept_sweep(gb, Hb, db, dZ, S, Pt, CPt)
                    ms, mv = ms + gbm, max(mv, gbm)
                if ms <= target:
                    if np.isinf(inner_shrink) or not self.inner_shrinking:
                        break
                    inner_shrink = np.inf  # the shrunk model is solved: check every coordinate once more
                    skip[active[:m]] = False
                else:
                    inner_shrink = mv / max(m, 1) if self.inner_shrinking else np.inf
            step, loss_change, pen_change = self._line_search(problem, st, active[:m], G, gb, Wpd, dZ, db)
            it += 1
            rows = active[:m]
            if step is None:
                failed, full = True, True
                Wpd[rows] = W[rows]
                st.refresh()
                continue
            st.b = st.b + step * db
            st.Z, st.Z_new = st.Z_new, st.Z
            st.lv, st.lv_new = st.lv_new, st.lv
            st.update()
            st.pen += pen_change
            Wpd[rows] = W[rows]
            vmax_prev = vmax
            if -(loss_change + pen_change) <= 8 * _EPS * abs(objective):
                stalls += 1
                stalled, full = True, True
                st.refresh()
            else:
                stalls, st.centered = 0, False
        final_W = W.copy()
        Zx = np.empty_like(st.Z)
        kernels.support_margins(*arrays, W, st.b, Zx)
        final = problem.loss_sum(Zx) + st.pen
        cert = problem.gap_certificate(final, best_dual)
        if recorded == it:
            history.objective[-1], history.certificate[-1] = final, cert.value
        elif converged:  # a final Newton step after the certifying pass
            nnz = int(np.count_nonzero(W))
            recorded = self._record(history, it, final, cert.value, nnz, timer, st, 0, recorded)
        if self.verbose:
            print(f"multinomial_cd: {it} Newton steps, {len(history)} rows")
        result = certified_result(
            self,
            coef=final_W.T.copy(),
            intercept=0.0,
            n_iter=it,
            converged=converged,
            stop_reason=stop_reason,
            cert=cert,
            history=history,
            timer=timer,
            line_search_failed=failed or stalls >= 2,
            line_search_message=(
                "the objective stopped decreasing (float64 resolution) before the certificate reached tol"
                if stalls >= 2 and not failed
                else "line search failed to decrease the objective"
            ),
        )
        result.intercept = st.b - st.b.mean()  # (n_classes,): the softmax does not see a common shift
        return result

    def _record(self, history, it, objective, certificate, nnz, timer, st, m, recorded):
        if recorded == it:
            return recorded
        history.append(
            objective=objective, certificate=certificate, nnz=nnz, time=timer(), data_accesses=st.reads, active=m
        )
        if self.callback is not None:
            self.callback(it, history)
        if self.verbose:
            print(f"multinomial_cd iter {it:4d}  P={objective:.12g}  gap={certificate:.3e}  nnz={nnz}  active={m}")
        return it

    @staticmethod
    def _working_set(W, G_loss, norms, lam1, size):
        """The ``size`` rows of W closest to entering: every nonzero row, then the zero rows by
        (lam1 - max_k |G_jk|) / ||x_j||_c (negative: violating optimality)."""
        nonzero = np.any(W != 0.0, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(nonzero, -np.inf, (lam1 - np.max(np.abs(G_loss), axis=1)) / norms)
        return smallest_scores(np.arange(W.shape[0], dtype=np.int64), score, size)

    def _polish(self, problem, st, newton, G, gb):
        """Take the Newton step ``newton = (V, db)`` with the line search; returns 1 if taken."""
        V, db = newton
        rows = np.flatnonzero(np.any(V != 0.0, axis=1))
        Wpd = st.W.copy()
        Wpd[rows] += V[rows]
        change = np.empty_like(st.Z)
        st.reads += kernels.support_margins(*problem.columns.arrays, V, db, change)
        dZ = np.ascontiguousarray(change.T)
        step, _, pen_change = self._line_search(problem, st, rows, G, gb, Wpd, dZ, db)
        if step is None:
            return 0
        st.b = st.b + step * db
        st.Z, st.Z_new = st.Z_new, st.Z
        st.lv, st.lv_new = st.lv_new, st.lv
        st.update()
        st.pen += pen_change
        return 1

    def _line_search(self, problem, st, rows, G, gb, Wpd, dZ, db):
        """Largest step in {1, 1/2, ...} with P(W + s Delta) - P(W) <= sigma s Delta_model,
        Delta_model = <G, Delta> + gb . db + lam1 (||W + Delta||_1 - ||W||_1). On success W holds
        the new rows, the trial margins and losses are in st.Z_new, st.lv_new.
        Returns (step, loss change, penalty change), or (None, 0, 0)."""
        pen = problem.penalty
        lam1, lam2 = pen.l1, pen.l2
        W = st.W
        W0 = W[rows]
        step_dir = Wpd[rows] - W0
        abs0, sq0 = float(np.abs(W0).sum()), float(np.vdot(W0, W0))
        delta = float(np.vdot(G[rows], step_dir)) + float(gb @ db) + lam1 * (float(np.abs(Wpd[rows]).sum()) - abs0)
        slack = 8 * _EPS * abs(st.objective)
        step = 1.0
        for _ in range(self.max_line_search):
            loss_change = kernels.trial_losses(st.Z, dZ, step, problem.y, problem.c, st.lv, st.Z_new, st.lv_new, st.p)
            Wt = W0 + step * step_dir
            pen_change = lam1 * (float(np.abs(Wt).sum()) - abs0) + 0.5 * lam2 * (float(np.vdot(Wt, Wt)) - sq0)
            if loss_change + pen_change <= self.sigma * step * delta + slack:
                W[rows] = Wt
                return step, loss_change, pen_change
            step *= 0.5
        return None, 0.0, 0.0
