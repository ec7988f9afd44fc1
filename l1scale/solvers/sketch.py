"""Multi-pass quadratic-sketch solvers: MP and RMMP (Balakrishnan & Madigan, sec. 5).

Both minimise the streamed problem of :class:`~l1scale.problems.StreamProblem`

    P(w, b) = (1/W) sum_i s_i loss(y_i, x_i . w + b) + lam (l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2)

(logistic, probit or squared loss; the paper's gamma is W * lam * l1_ratio) by repeating

1. a pass over the stream at the fixed point beta_z = (w, b): every term of the
   log-likelihood is replaced by its Taylor polynomial a_i c^2 + b_i c at
   c_hat = x_i . beta_z, with a_i = -s_i loss''/2 and b_i = s_i (loss'' c_hat - loss')
   (Appendix A's a_i, b_i for y in {0, 1}), summed into the sketch Psi = sum a_i x x^T,
   theta = sum b_i x on the set S of coordinates; the same pass gives the exact loss,
   and its gradient on all d coordinates, at beta_z;
2. the L1 optimality (KKT) conditions checked with that gradient: the solver stops
   there, at beta_z, with the violation as its certificate;
3. beta_{z+1} = modified Shooting on (Psi_S, theta_S), warm-started at beta_z.

MP keeps S = every coordinate (Psi dense for small d, else only the pairs that occur
together in some example). RMMP (Algorithm 3) keeps |S| <= k (``max_active``): Psi_S
is k x k, and Omega = 2 Psi' beta + theta on all d coordinates comes from the
gradient (Appendix B: Omega_j = -sum_i s_i loss'_i x_ij - 2 Psi_jj beta_j); the next S
holds the nonzeros of beta_{z+1}, then the coordinates with |Omega_j| >= tau gamma
(largest first), then the previous S while room remains. Memory is O(d + k^2),
whatever n. The intercept is one more coordinate, unpenalised and always in S.

A pass is a map over chunks (:func:`pass_statistics`) followed by a sum
(:class:`PassStatistics` add), so a distributed backend can run the map on partitions.
If a pass finds the objective higher than at the previous point (the undamped
quadratic step overshot: the paper never needed it, we check), the step is halved
and the pass repeated. With ``checkpoint=PATH`` the state is written atomically
after each pass, and a run started with the same checkpoint resumes there
(:mod:`l1scale.checkpoint`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit

from ..checkpoint import Checkpoint, problem_fingerprint, solver_fingerprint
from ..exceptions import ConvergenceWarning
from ..losses import loss_derivative, loss_value
from ..penalties import ElasticNet
from ..problems.base import ProblemLike
from .base import History, Result, Solver, Timer
from .shooting import Sketch, shooting, taylor_terms

__all__ = ["MultiPass", "PassStatistics", "ReducedMemoryMultiPass", "pass_statistics"]

_DENSE_SKETCH_MAX = 4096  # MP keeps Psi dense up to this many coordinates ("auto")


# ----------------------------------------------------------------------------- the map


@njit(cache=True)
def _chunk_kernel(
    kind, data, indices, indptr, dense, y, s, beta, b, slot, intercept_slot, psi, theta, grad, a_out, c_out
):
    """One chunk at the fixed point (beta, b); returns (loss sum, intercept gradient sum).

    Shapes: y, s, a_out, c_out (rows,); beta, grad, slot (d,); psi (k, k) F-order or (0, 0);
    theta (k,). ``slot[j]`` is j's position in S or -1; ``intercept_slot`` that of the
    intercept (-1 without one). Adds s_i loss'_i x_i to grad, a_i x x^T on S to psi,
    b_i x on S to theta; stores a_i and b_i in a_out, c_out (for sparse sketches).
    """
    loss_sum = 0.0
    grad_b = 0.0
    k = psi.shape[0]
    gather_pos = np.empty(k, dtype=np.int64)
    gather_val = np.empty(k)
    for i in range(y.shape[0]):
        start, end = indptr[i], indptr[i + 1]
        z = b
        for p in range(np.uint64(start), np.uint64(end)):  # unsigned: no wrap-around checks
            j = p - np.uint64(start) if dense else np.uint64(indices[p])
            z += data[p] * beta[j]
        loss_sum += s[i] * loss_value(kind, y[i], z)
        sg = s[i] * loss_derivative(kind, y[i], z)
        grad_b += sg
        a, c = taylor_terms(kind, y[i], s[i], z)
        a_out[i] = a
        c_out[i] = c
        m = 0
        for p in range(np.uint64(start), np.uint64(end)):  # unsigned: no wrap-around checks
            j = p - np.uint64(start) if dense else np.uint64(indices[p])
            grad[j] += sg * data[p]
            if k > 0 and slot[j] >= 0 and data[p] != 0.0:
                gather_pos[m] = slot[j]
                gather_val[m] = data[p]
                m += 1
        if k == 0:
            continue
        if intercept_slot >= 0:
            gather_pos[m] = intercept_slot
            gather_val[m] = 1.0
            m += 1
        for q in range(m):
            pq = gather_pos[q]
            vq = gather_val[q]
            theta[pq] += c * vq
            avq = a * vq
            for r in range(m):
                psi[gather_pos[r], pq] += avq * gather_val[r]
    return loss_sum, grad_b


@dataclass
class PassStatistics:
    """The sufficient statistics of one pass at a fixed point (sums over rows).

    Attributes
    ----------
    loss_sum : float
        sum_i s_i loss(y_i, z_i).
    grad : ndarray (d,)
        sum_i s_i loss'(y_i, z_i) x_i.
    grad_intercept : float
        sum_i s_i loss'(y_i, z_i).
    theta : ndarray (k,)
        theta on the sketch set S.
    psi : ndarray (k, k) or scipy.sparse matrix
        Psi on S (with its diagonal).
    rows, nnz : int
        Rows and nonzeros of X read.
    """

    loss_sum: float
    grad: np.ndarray
    grad_intercept: float
    theta: np.ndarray
    psi: object
    rows: int
    nnz: int

    def __add__(self, other: PassStatistics) -> PassStatistics:
        return PassStatistics(
            self.loss_sum + other.loss_sum,
            self.grad + other.grad,
            self.grad_intercept + other.grad_intercept,
            self.theta + other.theta,
            self.psi + other.psi,
            self.rows + other.rows,
            self.nnz + other.nnz,
        )


def _augmented(X: sp.csr_matrix, intercept: bool) -> sp.csr_matrix:
    return sp.hstack([X, np.ones((X.shape[0], 1))], format="csr") if intercept else X


def pass_statistics(problem: ProblemLike, rows, y, s, beta, b, active, *, sparse_sketch=False):
    """The map: statistics of one chunk at (beta, b) with the sketch on ``active``.

    Parameters
    ----------
    problem : ProblemLike
        The stream problem (kind ``"stream"``) the chunk is from (its loss, width and intercept).
    rows : Matrix
        The chunk in row layout.
    y, s : ndarray (rows,)
    beta : ndarray (d,)
    b : float
    active : ndarray of int64
        Sketch set S: coordinates 0..d-1 and d for the intercept.
    sparse_sketch : bool
        Psi over all coordinates as a sparse matrix (MP on wide data); ``active`` is then ignored.
    """
    d = problem.n_features
    grad = np.zeros(d)
    a = np.empty(y.shape[0])
    c = np.empty(y.shape[0])
    if sparse_sketch:
        slot = np.full(d, -1, dtype=np.int64)
        k, intercept_slot = 0, -1
    else:
        slot, intercept_slot = _slots(active, d)
        k = active.shape[0]
    psi = np.zeros((k, k), order="F")
    theta = np.zeros(k)
    loss_sum, grad_b = _chunk_kernel(
        problem.loss.kernel_id, *rows.arrays, y, s, beta, float(b), slot, intercept_slot, psi, theta, grad, a, c
    )
    if sparse_sketch:
        X = (
            sp.csr_matrix((rows.data, rows.indices, rows.indptr), shape=rows.shape)
            if not rows.dense
            else sp.csr_matrix(rows.data.reshape(rows.shape))
        )
        Xa = _augmented(X, problem.fit_intercept)
        psi = (Xa.T @ sp.diags(a) @ Xa).tocsc()
        theta = Xa.T @ c
    return PassStatistics(loss_sum, grad, grad_b, theta, psi, y.shape[0], rows.nnz)


def _slots(active, d):
    slot = np.full(d, -1, dtype=np.int64)
    feats = active < d
    slot[active[feats]] = np.flatnonzero(feats)
    where = np.flatnonzero(~feats)
    return slot, int(where[0]) if where.size else -1


# ----------------------------------------------------------------------------- the driver


class MultiPass(Solver):
    """MP: full sketch per pass, one modified Shooting solve after it (sec. 5).

    Parameters
    ----------
    tol : float, default 1e-6
        Stop when the KKT violation at the pass's point is <= tol * lam * l1_ratio
        (and the intercept's gradient <= tol * lam * l1_ratio).
    max_iter : int, default 50
        Passes over the data (the label scan not counted).
    shooting_tol : float, default 1e-10
        Shooting's relative-change tolerance (the paper used 1e-6; tighter costs
        little next to a pass and lets the passes reach tol).
    max_sweeps : int, default 10000
    sketch : {"auto", "dense", "sparse"}
        Psi as a dense matrix or only the pairs that occur ("auto": dense up to 4096 coordinates).
    checkpoint : str or path-like, optional
        File holding the state after each pass (written atomically); an existing one is
        resumed, and one written for other data or parameters is refused with a
        :class:`~l1scale.exceptions.CheckpointError` (see :mod:`l1scale.checkpoint`).
    checkpoint_interval : float, default 0
        Least seconds between two checkpoint writes (0: after every pass).
    callback : callable, optional
        ``callback(pass, history)`` after each pass.
    verbose : int
    """

    name = "mp"
    resumable = True  # takes checkpoint= (l1scale.checkpoint)
    data_access = "stream"
    requires = ("smooth", "curvature_kernel")

    def __init__(
        self,
        tol=1e-6,
        max_iter=50,
        *,
        shooting_tol=1e-10,
        max_sweeps=10000,
        sketch="auto",
        checkpoint=None,
        checkpoint_interval=0.0,
        callback=None,
        verbose=0,
        random_state=None,
    ):
        if sketch not in ("auto", "dense", "sparse"):
            raise ValueError(f"sketch={sketch!r}; choose 'auto', 'dense' or 'sparse'")
        self.tol, self.max_iter = float(tol), int(max_iter)
        self.shooting_tol, self.max_sweeps, self.sketch = float(shooting_tol), int(max_sweeps), sketch
        self.checkpoint, self.callback, self.verbose = checkpoint, callback, verbose
        self.checkpoint_interval = float(checkpoint_interval)

    # -- what MP and RMMP do differently
    def _fingerprint(self, problem):
        return {**solver_fingerprint(self, sparse_sketch=self._sparse(problem)), **problem_fingerprint(problem)}

    def _sparse(self, problem) -> bool:
        m = problem.n_features + problem.fit_intercept
        return self.sketch == "sparse" or (self.sketch == "auto" and m > _DENSE_SKETCH_MAX)

    def _initial_active(self, problem, beta):
        return np.arange(problem.n_features + problem.fit_intercept, dtype=np.int64)

    def _next_active(self, problem, active, beta_new, omega_zero, gamma):
        return active

    # -- one pass
    def _pass(self, problem, beta, b, active):
        """The pass's statistics summed over all rows: the map over chunks and the sum here, or
        on a cluster when the problem is ``distributed`` (``l1scale.distributed.DaskProblem``)."""
        sparse = self._sparse(problem)
        if problem.distributed:
            return problem.run_pass(beta, b, active, sparse_sketch=sparse)
        total = None
        for rows, y, s, _ in problem.chunks():
            part = pass_statistics(problem, rows, y, s, beta, b, active, sparse_sketch=sparse)
            total = part if total is None else total + part
        return total

    def solve(self, problem: ProblemLike, coef_init=None, intercept_init=None) -> Result:
        """Minimise ``problem`` (kind ``"stream"``, distributed or not); see the module docstring."""
        self.check_problem(problem)
        timer = Timer()
        d, W = problem.n_features, problem.weight_sum
        ck = (
            None
            if self.checkpoint is None
            else Checkpoint(self.checkpoint, self._fingerprint(problem), self.checkpoint_interval)
        )
        state = None if ck is None else ck.load()
        history = History()
        if state is None:
            beta = np.zeros(d) if coef_init is None else np.array(coef_init, dtype=np.float64).reshape(d)
            b = problem.intercept_only() if intercept_init is None else float(intercept_init)
            active = self._initial_active(problem, beta)
            start, prev, halvings = 1, None, 0
        else:
            beta, b = state.array("beta", (d,)), state.scalar("b")
            active = state.indices("active", d + problem.fit_intercept)
            start, halvings = state.scalar("next_pass", int, 1), state.scalar("halvings", int, 0)
            prev = (
                None
                if not state.scalar("has_prev", bool)
                else (state.array("prev_beta", (d,)), state.scalar("prev_b"), state.scalar("prev_objective"))
            )
            state.history(history)
            timer.exclude(-state.scalar("elapsed"))
            if problem.penalty is None:  # lam_ratio, resolved by the first pass of the saved run
                problem.penalty = ElasticNet(state.scalar("lam", float, 0.0), problem.l1_ratio)
        accesses = history.data_accesses[-1] if len(history) else 0
        stop_reason, converged, viol, objective = "max_iter", False, np.inf, np.nan
        best = None  # the best point evaluated: returned when the run does not converge
        prev_viol, step_active = np.inf, None  # the active set of the step that led to (beta, b)
        z = start - 1
        for z in range(start, self.max_iter + 1):
            stats = self._pass(problem, beta, b, active)
            accesses += stats.nnz
            v, vb = stats.grad / W, stats.grad_intercept / W
            if problem.penalty is None:
                problem.resolve_lam(v)  # lam_ratio: this first pass is at (0, b0)
            pen = problem.penalty
            objective = stats.loss_sum / W + pen.value(beta)
            viol = float(np.max(pen.subdifferential_distance(beta, v), initial=0.0))
            if problem.fit_intercept:
                viol = max(viol, abs(vb))
            history.append(
                objective=objective,
                certificate=viol,
                nnz=np.count_nonzero(beta),
                time=timer(),
                data_accesses=accesses,
                active=int(np.count_nonzero(active < d)),
                **(problem.last_pass_times if problem.distributed else {}),
            )  # distributed: the pass's time split
            self._report(z, active, beta, objective, viol, pen, timer)
            if best is None or objective < best[2]:
                best = (beta, b, objective, viol)
            if self.callback is not None:
                self.callback(z, history)
            if viol <= self.tol * pen.l1:
                stop_reason, converged = "kkt", True
                break
            if prev is not None and objective > prev[2] + 1e-13 * abs(prev[2]):
                # The quadratic step overshot: go half way back and pass again.
                halvings += 1
                beta, b = 0.5 * (prev[0] + beta), 0.5 * (prev[1] + b)
                if halvings > 60:
                    stop_reason = "line_search"
                    break
                self._save(ck, problem, beta, b, active, z + 1, prev, halvings, history, timer)
                continue
            if z == self.max_iter:
                break
            beta_new, b_new = self._shoot(problem, stats, beta, b, active)
            # The last step, made on this same active set, reduced neither the objective nor
            # the KKT violation?
            no_progress = (
                prev is not None
                and np.array_equal(step_active, active)
                and objective >= prev[2] - 1e-15 * abs(prev[2])
                and viol >= (1.0 - 1e-6) * prev_viol
            )
            prev, prev_viol, step_active = (beta, b, objective), viol, active
            omega_zero = np.abs(stats.grad)  # |Omega_j| where beta_j = 0
            next_active = self._next_active(problem, active, beta_new, omega_zero, W * pen.l1)
            if np.array_equal(next_active, active) and (no_progress or (np.array_equal(beta_new, beta) and b_new == b)):
                # Same active set and no progress: the passes have reached the best point
                # this active set allows (RMMP with a support larger than max_active).
                stop_reason = "stalled"
                break
            active, beta, b = next_active, beta_new, b_new
            self._save(ck, problem, beta, b, active, z + 1, prev, halvings, history, timer)
        if not converged and best is not None:
            beta, b, objective, viol = best
        if not converged:
            why = {
                "max_iter": f"after {z} passes; raise max_iter",
                "line_search": "and the step halvings ran out",
                "stalled": "and the passes stopped moving",
            }[stop_reason]
            warnings.warn(
                f"{self.name}: KKT violation {viol:.3g} > tol * lam = {self.tol * problem.penalty.l1:.3g} "
                + why
                + self._hint(),
                ConvergenceWarning,
                stacklevel=3,
            )
        return Result(
            coef=beta,
            intercept=float(b),
            objective=float(objective),
            n_iter=int(z),
            converged=converged,
            stop_reason=stop_reason,
            certificate_name="kkt",
            certificate=viol,
            relative_certificate=viol / problem.penalty.l1,
            history=history,
            timings={"solve": timer(), "compile": timer.compiled()},
        )

    def _hint(self) -> str:
        return ""

    def _shoot(self, problem, stats, beta, b, active):
        """beta_{z+1}: Shooting on the sketch of this pass, warm-started at (beta, b)."""
        d, W, pen = problem.n_features, problem.weight_sum, problem.penalty
        sketch = Sketch.from_matrix(stats.psi)
        is_feat = active < d
        start = np.where(is_feat, beta[np.minimum(active, d - 1)], b)
        gamma = np.where(is_feat, W * pen.l1, 0.0)
        rho = np.where(is_feat, W * pen.l2, 0.0)
        beta_s, _, sweeps, ok = shooting(
            sketch, stats.theta, gamma, start, rho=rho, tol=self.shooting_tol, max_sweeps=self.max_sweeps
        )
        if not ok:
            warnings.warn(
                f"{self.name}: Shooting stopped after {sweeps} sweeps without reaching "
                f"shooting_tol={self.shooting_tol:g}",
                ConvergenceWarning,
                stacklevel=4,
            )
        beta_new = np.zeros(d)
        beta_new[active[is_feat]] = beta_s[is_feat]
        b_new = float(beta_s[~is_feat][0]) if problem.fit_intercept else 0.0
        return beta_new, b_new

    def _save(self, ck, problem, beta, b, active, next_pass, prev, halvings, history, timer):
        if ck is None or not ck.due():
            return
        state = {
            "beta": beta,
            "b": b,
            "active": active,
            "next_pass": next_pass,
            "halvings": halvings,
            "lam": problem.penalty.lam,
            "elapsed": timer(),
            "has_prev": prev is not None,
            "prev_beta": beta if prev is None else prev[0],
            "prev_b": 0.0 if prev is None else prev[1],
            "prev_objective": 0.0 if prev is None else prev[2],
            "history": history.as_dict(),
        }
        ck.save(state)

    def _report(self, z, active, beta, objective, viol, pen, timer):
        if self.verbose:
            print(
                f"{self.name} pass {z:3d}  active {active.shape[0]:6d}  nnz {np.count_nonzero(beta):6d}  "
                f"objective {objective:.10g}  kkt/lam {viol / pen.l1:.3e}  {timer():7.2f}s",
                flush=True,
            )


class ReducedMemoryMultiPass(MultiPass):
    """RMMP: MP with the sketch kept on an active set of at most ``max_active`` coordinates
    (Algorithm 3); memory O(d + k^2).

    Parameters
    ----------
    max_active : int, default 2000
        k: the most features in the active set (the intercept comes on top).
    tau : float, default 0.8
        Coordinates with |Omega_j| >= tau * gamma join the active set while room remains.
    tol, max_iter, shooting_tol, max_sweeps, checkpoint, checkpoint_interval, callback, verbose
        As for :class:`MultiPass`.
    """

    name = "rmmp"

    @classmethod
    def from_estimator(cls, settings):
        """As every solver, with the estimator's ``max_active`` when it gives one."""
        kw = {} if settings.max_active is None else {"max_active": settings.max_active}
        return cls(
            tol=settings.tol,
            max_iter=settings.max_iter,
            checkpoint=settings.checkpoint,
            callback=settings.callback,
            verbose=settings.verbose,
            **kw,
        )

    def __init__(
        self,
        tol=1e-6,
        max_iter=50,
        *,
        max_active=2000,
        tau=0.8,
        shooting_tol=1e-10,
        max_sweeps=10000,
        checkpoint=None,
        checkpoint_interval=0.0,
        callback=None,
        verbose=0,
        random_state=None,
    ):
        super().__init__(
            tol,
            max_iter,
            shooting_tol=shooting_tol,
            max_sweeps=max_sweeps,
            sketch="dense",
            checkpoint=checkpoint,
            checkpoint_interval=checkpoint_interval,
            callback=callback,
            verbose=verbose,
        )
        if int(max_active) < 1:
            raise ValueError(f"max_active must be >= 1, got {max_active!r}")
        if not 0 < tau <= 1:
            raise ValueError(f"tau must be in (0, 1], got {tau!r}")
        self.max_active, self.tau = int(max_active), float(tau)

    def _sparse(self, problem) -> bool:
        return False

    def _hint(self) -> str:
        return f"; the solution may need more than max_active={self.max_active} features"

    def _initial_active(self, problem, beta):
        d = problem.n_features
        feats = np.flatnonzero(beta)[: self.max_active]
        extra = [d] if problem.fit_intercept else []
        return np.concatenate([feats, extra]).astype(np.int64)

    def _next_active(self, problem, active, beta_new, omega_zero, gamma):
        """Nonzeros of beta_new, then |Omega_j| >= tau gamma (largest first), then the old S."""
        d, k = problem.n_features, self.max_active
        chosen = np.flatnonzero(beta_new)
        room = k - chosen.shape[0]
        if room > 0:
            score = omega_zero.copy()
            score[chosen] = -1.0
            candidates = np.flatnonzero(score >= self.tau * gamma)
            if candidates.shape[0] > room:
                top = np.argpartition(-score[candidates], room - 1)[:room]
                candidates = candidates[top]
            chosen = np.concatenate([chosen, candidates])
            room = k - chosen.shape[0]
        if room > 0:
            old = active[active < d]
            old = old[~np.isin(old, chosen)][:room]
            chosen = np.concatenate([chosen, old])
        chosen = np.sort(chosen)
        return np.concatenate([chosen, [d] if problem.fit_intercept else []]).astype(np.int64)
