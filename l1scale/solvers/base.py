"""What every solver shares: the Result it returns, its History, and the
declaration of what it needs from the problem (checked before any compiling)."""

from __future__ import annotations

import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._clock import Timer
from ..exceptions import ConvergenceWarning
from ..problems.base import ProblemLike

__all__ = ["EstimatorSettings", "History", "Result", "Solver", "Timer", "certified_result", "compiled_once"]


@dataclass
class History:
    """One row per iteration (batch solvers) or per pass (streaming solvers).

    Attributes
    ----------
    objective, certificate : list of float
        P(w, b) and the duality gap (or KKT violation) at the start of the iteration.
    nnz : list of int
        Nonzero coefficients.
    time : list of float
        Seconds since the solver started (compile time and a conversion of the data excluded).
    data_accesses : list of int
        Cumulative number of nonzeros of X read.
    active : list of int
        Size of the active (working) set, where the solver has one (RMMP: |S|).
    examples, progressive_loss, holdout_loss : list
        Online solvers: examples seen so far, the pass's progressive-validation loss
        (each example scored before it is learned from) and its holdout loss.
    compute_time, reduce_time, driver_time : list of float
        Distributed runs (:mod:`l1scale.distributed`): seconds of each pass spent in the map
        over the partitions, in the tree reduction (and transfer to the driver), and on the
        driver since the previous pass.
    """

    objective: list = field(default_factory=list)
    certificate: list = field(default_factory=list)
    nnz: list = field(default_factory=list)
    time: list = field(default_factory=list)
    data_accesses: list = field(default_factory=list)
    active: list = field(default_factory=list)
    examples: list = field(default_factory=list)
    progressive_loss: list = field(default_factory=list)
    holdout_loss: list = field(default_factory=list)
    compute_time: list = field(default_factory=list)
    reduce_time: list = field(default_factory=list)
    driver_time: list = field(default_factory=list)

    def append(
        self,
        *,
        objective,
        certificate,
        nnz,
        time,
        data_accesses,
        active=None,
        examples=None,
        progressive_loss=None,
        holdout_loss=None,
        compute_time=None,
        reduce_time=None,
        driver_time=None,
    ):
        for name, value in (
            ("active", active),
            ("examples", examples),
            ("progressive_loss", progressive_loss),
            ("holdout_loss", holdout_loss),
            ("compute_time", compute_time),
            ("reduce_time", reduce_time),
            ("driver_time", driver_time),
        ):
            if value is not None:
                getattr(self, name).append(value)
        self.objective.append(float(objective))
        self.certificate.append(float(certificate))
        self.nnz.append(int(nnz))
        self.time.append(float(time))
        self.data_accesses.append(int(data_accesses))

    def __len__(self):
        return len(self.objective)

    def as_dict(self) -> dict:
        return {k: list(v) for k, v in self.__dict__.items()}


@dataclass
class Result:
    """What a solver returns.

    Attributes
    ----------
    coef : ndarray of shape (n_features,)
    intercept : float
    objective : float
        P(coef, intercept) at the end.
    n_iter : int
        Outer iterations (batch) or passes (streaming).
    converged : bool
        Whether the stopping criterion was reached (rather than max_iter).
    stop_reason : str
        ``"duality_gap"``, ``"kkt"``, ``"max_iter"``, ``"line_search"`` or ``"stalled"``
        (a streaming solver whose passes stopped changing anything).
    certificate_name : str
        ``"duality_gap"`` or ``"kkt"``.
    certificate : float
        Its final value (absolute).
    relative_certificate : float
        Gap / objective, or KKT violation / lam.
    history : History
    timings : dict
        Seconds spent: ``{"solve": ..., "compile": ...}``; CD adds ``"convert"``, the seconds it
        spent converting a CSR problem's rows to columns (or copying some out), kept out of
        ``"solve"`` and of the History's clock.
    loss_gradient : ndarray of shape (n_features,) or None
        ``X^T (c * loss'(y, z))`` at the returned point on the features the solver last
        passed over (0 on those it screened out), where it has it (CD): a path hands it to
        the next solve, which picks its first working set from it without a pass over the data.
        After a final support-Newton step (CD's Newton dual point), bounds on it in absolute
        value, exact on the support; after CD's row start (a CSR problem solved over a few
        columns copied out), bounds on the columns not copied.
    dual_point : ndarray of shape (n_samples,) or None
        The dual point behind a ``"duality_gap"`` certificate, where the solver keeps one (CD):
        ``certificate == objective - problem.dual_value(dual_point)`` to rounding, so that
        anyone can check the gap without trusting the solver.
    """

    coef: np.ndarray
    intercept: float
    objective: float
    n_iter: int
    converged: bool
    stop_reason: str
    certificate_name: str
    certificate: float
    relative_certificate: float
    history: History
    timings: dict
    loss_gradient: np.ndarray | None = None
    dual_point: np.ndarray | None = None

    @property
    def nnz(self) -> int:
        return int(np.count_nonzero(self.coef))


@dataclass(frozen=True)
class EstimatorSettings:
    """What an estimator's parameters say to the solver it builds (:meth:`Solver.from_estimator`):
    one naming for every solver, whatever its constructor calls them (``max_iter`` is FCL's
    ``max_sweeps`` and DCL's ``max_epochs``)."""

    tol: float = 1e-6
    max_iter: int = 200
    random_state: object = None
    checkpoint: object = None
    callback: object = None
    verbose: int = 0
    max_active: int | None = None
    cache_bytes: object = None
    in_memory: bool = True  # the data are held in memory (a streamed fit: False)


class Solver:
    """Base class: a solver declares what it needs and solves a problem
    (:class:`~l1scale.problems.base.ProblemLike`) of the kind it reads.

    Class attributes
    ----------------
    name : str
    data_access : str
        ``"columns"`` or ``"rows"`` (a problem of kind ``"memory"``), ``"stream"`` (kind
        ``"stream"``: passes) or ``"generated"`` (kind ``"generated"``).
    requires : tuple of str
        Loss attributes that must be true or not None (``"smooth"``, ``"curvature_kernel"``, ...).
    needs_label_pass : bool
        Whether a streamed solve reads n, W, b0 or lam_max before its first pass. A solver
        that does not learns from a StreamProblem with declared classes, which makes no
        label pass (one pass over a pipe).
    """

    name = ""
    data_access = "columns"
    requires: tuple = ()
    needs_label_pass = True

    def check_problem(self, problem: ProblemLike):
        """Raise a ValueError naming what the problem's loss lacks for this solver."""
        loss = problem.loss
        missing = [attr for attr in self.requires if not getattr(loss, attr, None)]
        if missing:
            raise ValueError(
                f"solver {self.name!r} cannot minimise loss {loss.name!r}: it needs the loss to have "
                + ", ".join(missing)
            )
        if self.needs_label_pass and problem.kind == "stream" and problem.scan is None:
            raise ValueError(
                f"solver {self.name!r} needs the label pass (n, W and b0 before its first pass); "
                "declared classes (no label pass) are for truncated_gradient and online"
            )

    @classmethod
    def from_estimator(cls, settings: EstimatorSettings) -> Solver:
        """The solver an estimator's parameters ask for. Default: ``tol``, ``max_iter`` and
        ``random_state`` as they are, ``checkpoint`` when the solver is resumable."""
        kw = {"callback": settings.callback, "verbose": settings.verbose}
        if settings.checkpoint is not None and getattr(cls, "resumable", False):
            kw["checkpoint"] = settings.checkpoint
        return cls(tol=settings.tol, max_iter=settings.max_iter, random_state=settings.random_state, **kw)

    def solve(self, problem: ProblemLike, coef_init=None, intercept_init=None):  # pragma: no cover - interface
        raise NotImplementedError


def compiled_once(warm_up):
    """Decorator for a function that compiles (or loads from Numba's cache) a solver's kernels on
    tiny inputs, for a solver whose kernels must be compiled before its threads start (FCL's
    writers and trainer: see ``_clock`` for the others, whose kernels compile at first use). It
    runs once per process, and the call returns the seconds it took (0.0 afterwards).

    Thread-safe: solves in threads (``n_jobs``) that start together run it once; the
    others wait for it to finish (and return 0.0) instead of compiling again or
    solving with kernels half loaded. A warm-up that raises is tried again next call."""
    done = False
    lock = threading.Lock()

    def run() -> float:
        nonlocal done
        if done:
            return 0.0
        with lock:
            if done:  # another thread finished it while this one waited
                return 0.0
            start = time.perf_counter()
            warm_up()
            done = True
            return time.perf_counter() - start

    run.__doc__ = warm_up.__doc__
    return run


def certified_result(
    solver,
    *,
    coef,
    intercept,
    n_iter,
    converged,
    stop_reason,
    cert,
    history,
    timer,
    line_search_failed=False,
    line_search_message="line search failed to decrease the objective",
    warn=True,
) -> Result:
    """The Result of a batch solver that stops on a certificate (``cert``: a problem.Certificate),
    with the ConvergenceWarning that says why it stopped short, if it did (not with ``warn=False``:
    a solve stopped to be handed on, whose Result the caller continues)."""
    if not warn:
        pass
    elif line_search_failed and not converged:
        stop_reason = "line_search"
        warnings.warn(
            f"{solver.name}: {line_search_message}; stopping at relative {cert.name} {cert.relative:.2e}",
            ConvergenceWarning,
            stacklevel=3,
        )
    elif not converged:
        warnings.warn(
            f"{solver.name} did not reach tol={solver.tol:g} in max_iter={solver.max_iter} iterations "
            f"(relative {cert.name} {cert.relative:.2e}); increase max_iter or tol",
            ConvergenceWarning,
            stacklevel=3,
        )
    return Result(
        coef=np.asarray(coef, dtype=np.float64),
        intercept=float(intercept),
        objective=cert.objective,
        n_iter=int(n_iter),
        converged=converged,
        stop_reason=stop_reason,
        certificate_name=cert.name,
        certificate=cert.value,
        relative_certificate=cert.relative,
        history=history,
        timings={"solve": timer(), "compile": timer.compiled()},
    )
