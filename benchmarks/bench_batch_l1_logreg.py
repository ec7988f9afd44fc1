"""Peer benchmark: batch L1-regularised logistic regression (and, with ``--loss squared``, the
Lasso), timed as a user waits for it.

For each point (dataset, lam = ratio * lam_max, intercept or not) every solver minimises
the same objective

    P(w, b) = (1/n) sum_i log(1 + exp(-y_i (x_i . w + b))) + lam ||w||_1

(``--loss squared``: (1/(2n)) sum_i (x_i . w + b - y_i)^2 + lam ||w||_1, y the labels in
{-1, +1} as the target, as benchopt's Lasso runs on classification sets; peers: scikit-learn's
``Lasso``, skglm's and celer's ``Lasso``, glmnet's ``ElasticNet(alpha=1)``, results in
``batch_lasso.{md,json}``)
(b unpenalised, b = 0 without intercept), and we record the wall time of the whole
``fit()`` call it needs to reach a relative suboptimality (P - P*) / P* <= 1e-2, 1e-4
and 1e-6. Every solution is evaluated with ``l1scale.problems.Problem.objective``.

Every solver, l1scale included, is fitted from scratch at a decreasing ladder of its own
tolerances, each fit in a forked child (killed at ``--fit-timeout``) on the same CSR
matrix; the time to a target is the smallest wall time of a fit whose solution meets it
(median of 3 repeats for fits under 0.5 s). l1scale is the public estimator,
``SparseLogisticRegression(lam=lam, tol=tol, fit_intercept=..., max_iter=10000,
solver="cd").fit(X, y)``; its Numba compile is done by a warm-up fit in the parent before
the children fork, and reported apart. Ratios are l1scale's time over the fastest peer's.

For l1scale only, three diagnostics per point: the tol=1e-6 fit's wall time over the time
at which its own History first met 1e-6 ("certifies late", target <= 1.5), the share of
that fit spent outside the solver (target <= 10%), and its fit time at tol=1e-2 over its
fit time at tol=1e-6 (target <= 0.4).

See benchmarks/README.md.
"""

from __future__ import annotations

from _common import (
    DATA_DIR,
    DATASETS,
    REPO,
    RESULTS_DIR,
    FitTimeout,
    call_in_child,
    dataset_name,
    jsonable,
    load_dataset,
    machine_info,
    package_versions,
    repo_on_path,
    single_thread,
    timed_median,
)

# Single-threaded BLAS / OpenMP / Numba for a fair single-thread comparison. Must be set
# before numpy is imported; an explicit setting in the environment wins.
single_thread()
repo_on_path()

import argparse
import datetime
import importlib
import json
import math
import os
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from l1scale import SparseLinearRegression, SparseLogisticRegression
from l1scale.problems import Problem
from l1scale.solvers.cd import CoordinateDescent

TARGETS = (1e-2, 1e-4, 1e-6)
KEYS = tuple(f"{t:g}" for t in TARGETS)  # "0.01", "0.0001", "1e-06": the JSON keys
LABELS = dict(zip(KEYS, ("1e-2", "1e-4", "1e-6"), strict=True))
MISS_NAMES = {"fit_over_history": "fit/history", "outside_share": "outside", "tol2_over_tol6": "tol 1e-2/1e-6"}
# Report targets: l1scale time / fastest peer's time at a suboptimality target, and the
# l1scale diagnostics (all "<=").
RATIO_GOALS = {"0.01": 1.0, "1e-06": 0.5}
DIAG_GOALS = {"fit_over_history": 1.5, "outside_share": 0.10, "tol2_over_tol6": 0.4}
L1_TOLS = tuple(10.0**-k for k in range(1, 11))  # l1scale's ladder, 1e-1 .. 1e-10
DIAG_TOL, LOOSE_TOL = 1e-6, 1e-2  # the l1scale fits of the diagnostics (always run)

# Default protocol: dataset -> fit an intercept? (news20 is its seeded 75% training split)
PROTOCOL = {"earn": True, "a9a": True, "news20": False, "mnist10k": True}
DEFAULT_DATASETS = ("earn", "a9a", "news20", "mnist10k")
DEFAULT_RATIOS = (0.1, 0.01, 0.001)
QUICK_DATASETS = ("a9a", "earn")
QUICK_RATIOS = (0.1, 0.01)

SOLVERS = ("l1scale", "liblinear", "sk-liblinear", "sk-saga", "sk-lasso", "skglm", "celer", "glmnet")
SOLVER_LABELS = {
    "sk-lasso": "sklearn Lasso",
    "l1scale": "l1scale",
    "liblinear": "liblinear -s 6",
    "sk-liblinear": "sklearn liblinear",
    "sk-saga": "sklearn saga",
    "skglm": "skglm",
    "celer": "celer",
    "glmnet": "glmnet",
}


@dataclass(frozen=True)
class LossSpec:
    """What the benchmark runs for one loss: its name in ``Problem``, the l1scale estimator, the
    peers it is compared with, the objective as the report writes it, and the results' stem."""

    name: str
    estimator: type
    solvers: tuple
    objective: str
    stem: str
    title: str


LOSSES = {
    "logistic": LossSpec(
        "logistic",
        SparseLogisticRegression,
        ("l1scale", "liblinear", "sk-liblinear", "sk-saga", "skglm", "celer", "glmnet"),
        "`P(w,b) = (1/n) sum_i log(1+exp(-y_i (x_i.w + b))) + lam ||w||_1`",
        "batch_l1_logreg",
        "Batch L1-regularised logistic regression",
    ),
    "squared": LossSpec(
        "squared",
        SparseLinearRegression,
        ("l1scale", "sk-lasso", "skglm", "celer", "glmnet"),
        "`P(w,b) = (1/(2n)) sum_i (x_i.w + b - y_i)^2 + lam ||w||_1` (the Lasso; y the labels in {-1, +1})",
        "batch_lasso",
        "Batch Lasso",
    ),
}

# The peers fitted at a plain ladder of tolerances 10^-k: solver -> (the powers k, its ``Peers`` method).
PLAIN_LADDERS = {
    "sk-lasso": (range(1, 12), "sklearn_lasso"),
    "skglm": (range(2, 12), "skglm"),
    "celer": (range(2, 12), "celer"),
    "glmnet": (range(2, 13), "glmnet"),
}

VERSIONED = (
    "numpy",
    "scipy",
    "numba",
    "scikit-learn",
    "joblib",
    "liblinear-official",
    "skglm",
    "celer",
    "python-glmnet",
    "l1scale",
)


class _Stop(Exception):
    """Raised from the CD callback to end the reference run early (its History is kept)."""


def _quiet():
    warnings.simplefilter("ignore")


# --------------------------------------------------------------------------- bookkeeping
@dataclass
class Setting:
    """One point (dataset, ratio, intercept): the problem, P*, and every fit."""

    problem: Problem
    p_best: float  # best objective known so far (updated by every fit)
    lower_bound: float = -np.inf  # best certified dual value (lower bound on P*)
    runs: dict = field(default_factory=dict)  # solver -> list of fit dicts
    notes: dict = field(default_factory=dict)  # solver -> note

    def record(self, solver, **run):
        self.runs.setdefault(solver, []).append(run)
        obj = run.get("objective")
        if obj is not None and np.isfinite(obj):
            self.p_best = min(self.p_best, obj)

    def subopt(self, obj):
        return (obj - self.p_best) / abs(self.p_best)


# --------------------------------------------------------------------------- l1scale: warm-up, reference
def _tiny_problem():
    X = sp.random(40, 6, density=0.5, random_state=0, format="csr")
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    return X, np.where(np.arange(40) % 2 == 0, -1.0, 1.0)


def l1scale_warm_up(spec):
    """Tiny fits of ``spec``'s estimator (with and without intercept) in this process, so that the
    forked fits inherit the compiled (or cache-loaded) Numba code: returns the first fit's compile
    seconds and the warm-up's wall seconds."""
    X, y = _tiny_problem()
    t0 = time.perf_counter()
    compile_s = None
    with warnings.catch_warnings():
        _quiet()
        for fi in (True, False):
            m = spec.estimator(lam_ratio=0.1, tol=1e-6, max_iter=50, fit_intercept=fi, solver="cd").fit(X, y)
            if compile_s is None:
                compile_s = float(_result(m).timings.get("compile", float("nan")))
        Problem(X, y, spec.name, lam_ratio=0.1).objective(np.ravel(m.coef_), 0.0)
    return {"compile_s": compile_s, "first_call_wall_s": time.perf_counter() - t0}


def l1scale_point_warm_up(X, y, ratio, intercept, spec):
    """Untimed fits of one point (tol 1e-1 and 1e-6) in this process, before its forked timed fits:
    a fit loads (or compiles) the Numba code of the paths it takes, which differ with the data and
    lam (the row start, the repeated rows, the factorisations), and the tiny warm-up reaches few of
    them. Without this, each timed child loaded them again at its first fit: 40-85 ms on earn, a9a
    and news20 (2026-12-02: a forked child's first fit against its second), kept out of the fits
    repeated under --repeat-below by their median but not out of the single longer ones. Returns
    the seconds it took."""
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        _quiet()
        for tol in (1e-1, 1e-6):
            spec.estimator(lam_ratio=ratio, tol=tol, max_iter=10000, fit_intercept=intercept, solver="cd").fit(X, y)
    return time.perf_counter() - t0


def l1scale_cold_compile():
    """Compile time of the first l1scale fit with an empty Numba cache, in a fresh process
    (NUMBA_CACHE_DIR pointed at a new temporary folder)."""
    import tempfile

    code = (
        "import time, numpy as np, scipy.sparse as sp; t=time.perf_counter(); "
        "from l1scale import SparseLogisticRegression as S; "
        "t_imp=time.perf_counter()-t; X=sp.random(40,6,density=0.5,random_state=0,format='csr'); "
        "y=np.where(np.arange(40)%2==0,-1.0,1.0); t=time.perf_counter(); "
        "m=S(lam_ratio=0.1,tol=1e-6,max_iter=50,solver='cd').fit(X,y); w=time.perf_counter()-t; "
        "r=m.result_[0] if isinstance(m.result_, list) else m.result_; "
        "print(r.timings['compile'], t_imp, w)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=tmp, PYTHONPATH=str(REPO))
        try:
            out = subprocess.run(
                [sys.executable, "-c", code],
                check=False,
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
                cwd=str(REPO),
            )
            compile_s, import_s, wall_s = (float(v) for v in out.stdout.split()[-3:])
            return {"compile_s": compile_s, "import_s": import_s, "first_fit_wall_s": wall_s}
        except Exception as e:  # noqa: BLE001 - informational only
            return {"error": f"{type(e).__name__}: {e}"}


def _result(model):
    """The solver Result of a binary fit (``result_`` is a list for several classes)."""
    res = model.result_
    return res[0] if isinstance(res, list) else res


def reference_run(problem, *, tol, max_iter, budget_s, stop_rel_gap):
    """A tight CD solve (keyword arguments only, so new solver parameters keep their defaults),
    stopped from its ``callback(iteration, history)`` once the budget is spent or the
    certified relative gap is <= stop_rel_gap. Returns a summary of its History."""
    holder = {}

    def callback(it, history):
        holder["h"] = history
        obj, cert = history.objective[-1], history.certificate[-1]
        if history.time[-1] > budget_s:
            raise _Stop("budget")
        if np.isfinite(cert) and cert <= stop_rel_gap * abs(obj):
            raise _Stop("gap")

    try:
        res = CoordinateDescent(tol=tol, max_iter=max_iter, callback=callback).solve(problem)
        h, why, final = res.history, res.stop_reason, res.objective
    except _Stop as e:
        h, why, final = holder["h"], f"stopped early ({e})", np.inf
    obj = np.asarray(h.objective, dtype=float)
    cert = np.asarray(h.certificate, dtype=float)
    dual = obj - cert  # nan where the iteration was not certified
    best = int(np.argmin(obj))
    return {
        "objective": float(min(obj[best], final)),
        "lower_bound": float(np.nanmax(dual)) if np.isfinite(dual).any() else -np.inf,
        "nnz": int(h.nnz[best]),
        "iters": len(obj),
        "time": float(h.time[-1]),
        "stop": why,
    }


# --------------------------------------------------------------------------- liblinear
def liblinear_fit(ll, prob, C, eps, intercept):
    opts = f"-s 6 -c {C!r} -e {eps!r} -q" + (" -B 1 -R" if intercept else "")
    return ll.train(prob, ll.parameter(opts))


def liblinear_solution(model, d, intercept):
    w, b = model.get_decfun()
    w = np.asarray(w, dtype=np.float64)[:d]
    sign = 1.0 if model.get_labels()[0] == 1 else -1.0  # decision > 0 <=> first label
    return sign * w, (sign * float(b) if intercept else 0.0)


def liblinear_check_R(ll):
    """Does this liblinear accept an unregularised bias (-R) with -s 6?"""
    try:
        p = ll.parameter("-s 6 -B 1 -R -q")
        return bool(getattr(p, "regularize_bias", 1) == 0), ""
    except Exception as e:  # noqa: BLE001 - depends on the installed version
        return False, f"-R rejected: {e}"


# --------------------------------------------------------------------------- glmnet
def glmnet_path_solution(model, d, intercept):
    """(coefs (K, d), intercepts (K,)) of a python-glmnet LogitNet fit, one row per lambda it
    fitted (``lambda_path_``; K may be short of the path asked for), signed for class +1; of an
    ElasticNet fit, as they are."""
    K = len(model.lambda_path_)
    if not hasattr(model, "classes_"):
        b = np.asarray(model.intercept_path_).reshape(K) if intercept else np.zeros(K)
        return np.asarray(model.coef_path_).reshape(d, K).T, b
    coefs = np.asarray(model.coef_path_).reshape(-1, d, K)[0].T
    b = np.asarray(model.intercept_path_).reshape(-1, K)[0] if intercept else np.zeros(K)
    sign = 1.0 if list(model.classes_).index(1.0) == 1 else -1.0
    return sign * coefs, sign * b


# --------------------------------------------------------------------------- the solvers' fits
class Peers:
    """Builds each solver's input once per dataset and times one fit (a whole ``fit()`` call,
    median of ``--repeats`` when under ``--repeat-below`` s): returns (seconds, w, b, extra)."""

    def __init__(self, X_csr, y, args, spec):
        self.spec = spec
        self.X_csr = X_csr
        self.y = y
        self.n, self.d = X_csr.shape
        self.args = args
        self._ll_prob = None

    def timed(self, fit):
        return timed_median(fit, self.args.repeats, self.args.repeat_below)

    @staticmethod
    def _signed(m, intercept):
        """(w, b) for class +1 of a scikit-learn-style binary classifier (of a regressor: its own)."""
        sign = 1.0 if not hasattr(m, "classes_") or list(m.classes_).index(1.0) == 1 else -1.0
        w = sign * np.asarray(m.coef_, dtype=np.float64).reshape(-1)
        b = sign * float(np.atleast_1d(m.intercept_)[0]) if intercept else 0.0
        return w, b

    # l1scale: the public estimator
    def l1scale(self, lam, intercept, tol, keep_history=False):
        def fit():
            return self.spec.estimator(
                lam=lam, tol=tol, fit_intercept=intercept, max_iter=self.args.l1_max_iter, solver="cd"
            ).fit(self.X_csr, self.y)

        t, m, times = self.timed(fit)
        w, b = self._signed(m, intercept)
        res = _result(m)
        timings = dict(getattr(res, "timings", None) or {})
        extra = {
            "times": times,
            "n_iter": int(np.max(m.n_iter_)),
            "stop": getattr(res, "stop_reason", ""),
            "solve_s": timings.get("solve"),
            "compile_s": timings.get("compile"),
        }
        if keep_history:
            extra["history"] = {
                "time": [float(v) for v in res.history.time],
                "objective": [float(v) for v in res.history.objective],
            }
        return t, w, b, extra

    # liblinear-official
    def liblinear_problem(self):
        from liblinear import liblinearutil as ll

        # For the reference solve only: built once (with or without bias: -B is a train option).
        if self._ll_prob is None:
            self._ll_prob = ll.problem(self.y, self.X_csr)
        return self._ll_prob

    def liblinear(self, lam, intercept, eps):
        from liblinear import liblinearutil as ll

        # The problem is built inside the timed call: a user's data reach liblinear as a matrix,
        # and its conversion into liblinear's rows is part of the wait (as l1scale's layout is).
        t, m, times = self.timed(
            lambda: liblinear_fit(ll, ll.problem(self.y, self.X_csr), 1.0 / (self.n * lam), eps, intercept)
        )
        w, b = liblinear_solution(m, self.d, intercept)
        return t, w, b, {"times": times}

    # scikit-learn
    def sklearn(self, solver, lam, intercept, tol, max_iter):
        from sklearn.linear_model import LogisticRegression

        kw = {"intercept_scaling": self.args.sk_intercept_scaling} if solver == "liblinear" and intercept else {}

        def fit():
            return LogisticRegression(
                C=1.0 / (self.n * lam),
                l1_ratio=1.0,
                solver=solver,
                tol=tol,
                fit_intercept=intercept,
                max_iter=max_iter,
                random_state=0,
                **kw,
            ).fit(self.X_csr, self.y)

        t, m, times = self.timed(fit)
        w, b = self._signed(m, intercept)
        return t, w, b, {"times": times, "n_iter": int(np.max(m.n_iter_))}

    # scikit-learn's Lasso (cyclic coordinate descent, its duality-gap stop)
    def sklearn_lasso(self, lam, intercept, tol):
        from sklearn.linear_model import Lasso

        def fit():
            return Lasso(alpha=lam, tol=tol, fit_intercept=intercept, max_iter=100000).fit(self.X_csr, self.y)

        t, m, times = self.timed(fit)
        w, b = self._signed(m, intercept)
        return t, w, b, {"times": times, "n_iter": int(np.max(m.n_iter_))}

    # skglm
    def skglm(self, lam, intercept, tol):
        from skglm import Lasso as SkglmLasso
        from skglm import SparseLogisticRegression as SkglmLR

        model = SkglmLasso if self.spec.name == "squared" else SkglmLR

        def fit():
            # On the CSR matrix every solver gets: skglm converts it to CSC inside fit, as
            # l1scale does (until 2026-11-24 it was handed a CSC copy made outside the timing).
            return model(alpha=lam, fit_intercept=intercept, tol=tol, max_iter=100, max_epochs=1000).fit(
                self.X_csr, self.y
            )

        t, m, times = self.timed(fit)
        w, b = self._signed(m, intercept)
        return t, w, b, {"times": times, "n_iter": int(np.max(getattr(m, "n_iter_", -1)))}

    # celer: its LogisticRegression has no intercept (sum-form objective with 1/C = n * lam); its
    # Lasso has one (mean form, alpha = lam)
    def celer(self, lam, intercept, tol):
        from celer import Lasso as CelerLasso
        from celer import LogisticRegression as CelerLR

        if self.spec.name == "squared":
            t, m, times = self.timed(
                lambda: CelerLasso(alpha=lam, tol=tol, fit_intercept=intercept, max_iter=100).fit(self.X_csr, self.y)
            )
            w, b = self._signed(m, intercept)
            return t, w, b, {"times": times}

        def fit():
            return CelerLR(C=1.0 / (self.n * lam), tol=tol, fit_intercept=False, max_iter=100).fit(self.X_csr, self.y)

        t, m, times = self.timed(fit)
        w, _ = self._signed(m, False)
        return t, w, 0.0, {"times": times}

    # python-glmnet: -(1/n) loglik (ElasticNet: RSS / (2n)) + lambda ||w||_1 with standardize=False
    def glmnet(self, lam, intercept, tol):
        from glmnet import ElasticNet, LogitNet

        model = ElasticNet if self.spec.name == "squared" else LogitNet

        def fit():
            return model(
                alpha=1.0,
                lambda_path=np.array([lam]),
                standardize=False,
                fit_intercept=intercept,
                tol=tol,
                max_iter=100000,
                n_splits=0,
            ).fit(self.X_csr, self.y)

        t, m, times = self.timed(fit)
        coefs, bs = glmnet_path_solution(m, self.d, intercept)
        return t, coefs[-1], float(bs[-1]), {"times": times}


def run_ladder(setting, solver, tols, fit, budget_s, fit_timeout, key="tol", required=()):
    """Fit with each tolerance in turn (loosest first), each in a forked child; stop once a fit
    meets the tightest target w.r.t. the best objective known, once a fit runs past fit_timeout
    (it is killed) or fails, or once budget_s seconds of fits are spent (no new fit is started);
    the tolerances in ``required`` are always tried (unless a fit is killed or fails)."""
    spent, tried = 0.0, set()
    for tol in tols:
        tried.add(tol)
        try:
            t, w, b, extra = call_in_child(partial(fit, tol), fit_timeout)
        except FitTimeout as e:
            setting.record(solver, **{key: tol}, time=None, objective=None, error=str(e), killed_at=fit_timeout)
            setting.notes[solver] = f"{key}={tol:g} fit killed after {fit_timeout:g} s"
            break
        except Exception as e:  # noqa: BLE001 - a failing peer must not end the benchmark
            msg = " ".join(str(e).split())
            setting.record(solver, **{key: tol}, time=None, objective=None, error=msg)
            setting.notes[solver] = f"error at {key}={tol:g}: {msg[:100]}"
            break
        obj = setting.problem.objective(w, b) if np.all(np.isfinite(w)) and np.isfinite(b) else float("inf")
        setting.record(solver, **{key: tol}, time=t, objective=obj, nnz=int(np.count_nonzero(w)), **extra)
        spent += sum(extra.get("times", [t]))
        if not tried.issuperset(required):
            continue
        if setting.subopt(obj) <= min(TARGETS):
            break
        if spent >= budget_s:
            setting.notes[solver] = f"no new fit after {spent:.0f} s of fits (budget {budget_s:g} s)"
            break


# --------------------------------------------------------------------------- one point
def reference(setting, X, peers, lam, intercept, solvers, args):
    """P*: a tight l1scale CD solve (in a child, killed at --ref-budget + 60 s), certified by its
    duality gap; liblinear at a tight eps when that certificate is not tight enough."""
    s, problem = setting, setting.problem
    ref = {}
    try:
        cd = call_in_child(
            partial(
                reference_run,
                problem,
                tol=args.ref_tol,
                max_iter=args.ref_max_iter,
                budget_s=args.ref_budget,
                stop_rel_gap=args.ref_stop_gap,
            ),
            args.ref_budget + 60,
        )
        s.p_best, s.lower_bound = cd["objective"], cd["lower_bound"]
        ref.update(
            cd_objective=cd["objective"],
            cd_stop=cd["stop"],
            cd_iters=cd["iters"],
            cd_time=cd["time"],
            cd_rel_gap=(cd["objective"] - cd["lower_bound"]) / abs(cd["objective"]),
            nnz_star=cd["nnz"],
        )
    except Exception as e:  # noqa: BLE001 - liblinear (or the fits) give P* then
        ref.update(cd_error=" ".join(str(e).split()), cd_rel_gap=np.inf)
    if not ref["cd_rel_gap"] <= args.ref_gap and "liblinear" in solvers:
        from liblinear import liblinearutil as ll

        prob = peers.liblinear_problem()

        def fit():
            t0 = time.perf_counter()
            m = liblinear_fit(ll, prob, 1.0 / (X.shape[0] * lam), args.ref_liblinear_eps, intercept)
            return (time.perf_counter() - t0,) + liblinear_solution(m, X.shape[1], intercept)

        try:
            t_ll, w, b = call_in_child(fit, args.ref_liblinear_timeout)
            cert = problem.certificate(w, b)  # gap at the optimal intercept for w
            p_ll = problem.objective(w, b)
            if p_ll < s.p_best:
                ref["nnz_star"] = int(np.count_nonzero(w))
            s.p_best = min(s.p_best, p_ll, cert.objective)
            s.lower_bound = max(s.lower_bound, cert.objective - cert.value)
            ref.update(
                liblinear_eps=args.ref_liblinear_eps,
                liblinear_objective=p_ll,
                liblinear_time=t_ll,
                liblinear_rel_gap=cert.relative,
            )
        except Exception as e:  # noqa: BLE001
            ref.update(liblinear_eps=args.ref_liblinear_eps, liblinear_error=" ".join(str(e).split()))
    ref["p_ref"] = s.p_best
    ref["rel_gap"] = (s.p_best - s.lower_bound) / abs(s.p_best) if np.isfinite(s.p_best) else None
    return ref


def run_point(X, y, peers, ratio, intercept, solvers, args, log):
    problem = Problem(X, y, peers.spec.name, lam_ratio=ratio, fit_intercept=intercept)
    lam = problem.lam
    s = Setting(problem=problem, p_best=np.inf)
    info = {"lam": lam, "lam_max": lam / ratio, "ratio": ratio, "intercept": intercept}

    # 1. reference
    ref = reference(s, X, peers, lam, intercept, solvers, args)
    p_ref = s.p_best
    log(
        f"    ref P*={s.p_best:.12g}  certified rel gap {ref['rel_gap'] if ref['rel_gap'] is not None else np.nan:.1e}"
        + (f"  (CD: {ref['cd_stop']}, {ref['cd_iters']} it, {ref['cd_time']:.2f}s)" if "cd_stop" in ref else "")
        + (f"  CD failed: {ref['cd_error'][:120]}" if "cd_error" in ref else "")
        + (
            f"; liblinear eps={args.ref_liblinear_eps:g} {ref['liblinear_time']:.2f}s"
            if "liblinear_time" in ref
            else ""
        )
        + (f"; liblinear: {ref['liblinear_error'][:80]}" if "liblinear_error" in ref else "")
    )

    # 2. every solver's ladder of tolerances
    tols_ll = [10.0**-k for k in range(1, 10)]
    for solver in solvers:
        t_start = time.perf_counter()
        if solver == "l1scale":
            run_ladder(
                s,
                solver,
                L1_TOLS,
                lambda t: peers.l1scale(lam, intercept, t, keep_history=t == DIAG_TOL),
                args.budget,
                args.fit_timeout,
                required=(LOOSE_TOL, DIAG_TOL),
            )
        elif solver == "liblinear":
            if intercept and not args.liblinear_R_ok:
                s.notes[solver] = "n/a: " + args.liblinear_R_msg
                continue
            run_ladder(
                s,
                solver,
                tols_ll,
                lambda e: peers.liblinear(lam, intercept, e),
                args.budget,
                args.fit_timeout,
                key="eps",
            )
        elif solver == "sk-liblinear":
            run_ladder(
                s,
                solver,
                tols_ll,
                lambda t: peers.sklearn("liblinear", lam, intercept, t, 1000),
                args.budget,
                args.fit_timeout,
            )
            if intercept:
                s.notes.setdefault(solver, f"bias penalised (intercept_scaling={args.sk_intercept_scaling:g})")
        elif solver == "sk-saga":
            # Estimate the cost of one epoch, then cap every fit at ~saga_run_budget seconds.
            try:
                t1, *_ = call_in_child(lambda: peers.sklearn("saga", lam, intercept, 1e-30, 2), args.fit_timeout)
            except Exception:  # noqa: BLE001
                t1 = args.fit_timeout
            if t1 >= args.saga_run_budget:
                s.record(
                    solver,
                    tol=None,
                    time=None,
                    objective=None,
                    killed_at=t1,
                    error=f"2 epochs took {t1:.1f} s >= --saga-run-budget",
                )
                s.notes[solver] = f"skipped: 2 epochs take {t1:.1f} s"
                continue
            epochs = int(max(2, min(100000, 2 * args.saga_run_budget / max(t1, 1e-4))))
            s.notes[solver] = f"max_iter={epochs} epochs (~{args.saga_run_budget:g} s per fit)"
            run_ladder(
                s,
                solver,
                [10.0**-k for k in range(2, 8)],
                partial(lambda e, t: peers.sklearn("saga", lam, intercept, t, e), epochs),
                args.saga_budget,
                args.fit_timeout,
            )
        elif solver in PLAIN_LADDERS:
            if solver == "celer" and intercept and peers.spec.name != "squared":
                s.notes[solver] = "n/a: celer's LogisticRegression cannot fit an intercept"
                continue
            if solver == "glmnet" and not args.glmnet_ok:
                s.notes[solver] = "n/a: " + args.glmnet_msg
                continue
            powers, method = PLAIN_LADDERS[solver]
            fit = getattr(peers, method)
            run_ladder(
                s,
                solver,
                [10.0**-k for k in powers],
                lambda t, fit=fit: fit(lam, intercept, t),
                args.budget,
                args.fit_timeout,
            )
        runs = s.runs.get(solver, [])
        best = min((r["objective"] for r in runs if r.get("objective") is not None), default=float("nan"))
        log(
            f"    {solver}: {len(runs)} fits, {time.perf_counter() - t_start:.1f}s, best subopt "
            f"{s.subopt(best):.1e}" + (f"  [{s.notes[solver]}]" if solver in s.notes else "")
        )

    # 3. times to target, against the final P* (the best objective any fit reached)
    p_star = s.p_best
    best_by = {
        sv: min((r["objective"] for r in runs if r.get("objective") is not None), default=np.inf)
        for sv, runs in s.runs.items()
    }
    best_by["reference"] = min(ref.get("cd_objective", np.inf), ref.get("liblinear_objective", np.inf))
    ranked = sorted(best_by.items(), key=lambda kv: kv[1])
    info["best_by_solver"] = dict(ranked)
    info["second_best"] = None
    others = [
        kv
        for kv in ranked[1:]
        if kv[0] not in ("reference", ranked[0][0]) and not (ranked[0][0] == "reference" and kv[0] == "l1scale")
    ]
    if others:
        info["second_best"] = {"solver": others[0][0], "rel_diff": (others[0][1] - p_star) / abs(p_star)}
    out = dict(
        info,
        p_star=p_star,
        p_star_solver=ranked[0][0] if ranked else "",
        p_star_rel_gap=(p_star - s.lower_bound) / abs(p_star),
        reference=ref,
        p_star_improved_over_ref=(p_ref - p_star) / abs(p_star),
        solvers={},
    )
    for solver in solvers:
        runs = s.runs.get(solver, [])
        for r in runs:  # every fit's suboptimality against the final P*
            if r.get("objective") is not None:
                r["subopt"] = (r["objective"] - p_star) / abs(p_star)
        # Longest fit tried: a target never met is reported as "> longest".
        longest = max([r["time"] if r.get("time") is not None else r.get("killed_at", 0.0) for r in runs], default=None)
        entry = {"runs": runs, "note": s.notes.get(solver, ""), "time_to": {}, "longest_s": longest}
        for target, key in zip(TARGETS, KEYS, strict=True):
            t = min((r["time"] for r in runs if r.get("subopt") is not None and r["subopt"] <= target), default=np.inf)
            entry["time_to"][key] = None if not np.isfinite(t) else float(t)
        if s.notes.get(solver, "").startswith("n/a"):
            entry["time_to"] = dict.fromkeys(KEYS, "n/a")
        out["solvers"][solver] = entry
    out["summary"] = summarise(out, solvers)
    return out


# --------------------------------------------------------------------------- summary of a point
def _l1scale_diagnostics(entry, p_star):
    """The three l1scale diagnostics of one point, from its tol=1e-6 and tol=1e-2 fits."""
    runs = {r.get("tol"): r for r in entry["runs"]}
    diag = dict.fromkeys(
        ("fit_s", "history_s", "solve_s", "compile_s", "fit_over_history", "outside_share", "tol2_s", "tol2_over_tol6")
    )
    r6, r2 = runs.get(DIAG_TOL), runs.get(LOOSE_TOL)
    if r6 is not None and r6.get("time") is not None:
        fit_s = r6["time"]
        diag.update(fit_s=fit_s, solve_s=r6.get("solve_s"), compile_s=r6.get("compile_s"))
        h = r6.get("history") or {}
        obj = np.asarray(h.get("objective", []), dtype=float)
        hit = np.flatnonzero((obj - p_star) / abs(p_star) <= DIAG_TOL)
        if hit.size:
            diag["history_s"] = float(h["time"][hit[0]])
            if diag["history_s"] > 0:
                diag["fit_over_history"] = fit_s / diag["history_s"]
        if r6.get("solve_s") is not None:
            diag["outside_share"] = (fit_s - r6["solve_s"] - (r6.get("compile_s") or 0.0)) / fit_s
        if r2 is not None and r2.get("time") is not None:
            diag["tol2_s"] = r2["time"]
            diag["tol2_over_tol6"] = r2["time"] / fit_s
    return diag


def summarise(row, solvers):
    """Fastest peer and l1scale / fastest-peer ratio at each target, and l1scale's diagnostics.

    A ratio is ``{"value", "bound", "peer", "peer_s"}``: bound "" (both met the target),
    "<" (no peer met it: the ratio is below l1scale's time / the shortest of the peers'
    longest fits), ">" (l1scale did not: above its longest fit / the fastest peer's time)."""
    peers = [s for s in solvers if s != "l1scale" and row["solvers"][s]["time_to"].get(KEYS[0]) != "n/a"]
    l1 = row["solvers"].get("l1scale")
    out = {"fastest": {}, "ratio": {}, "diag": None}
    for key in KEYS:
        times = {s: row["solvers"][s]["time_to"][key] for s in peers}
        met = {s: t for s, t in times.items() if isinstance(t, float)}
        fastest = min(met, key=met.get) if met else None
        out["fastest"][key] = {"solver": fastest, "time": met[fastest]} if fastest else None
        r = {"value": None, "bound": "", "peer": fastest, "peer_s": met.get(fastest)}
        if l1 is not None:
            a, la = l1["time_to"][key], l1.get("longest_s")
            longest_peer = min(
                (row["solvers"][s]["longest_s"] for s in peers if row["solvers"][s]["longest_s"]), default=None
            )
            if isinstance(a, float) and fastest:
                r["value"] = a / met[fastest]
            elif isinstance(a, float) and longest_peer:
                r.update(value=a / longest_peer, bound="<")
            elif a is None and fastest and la:
                r.update(value=la / met[fastest], bound=">")
        out["ratio"][key] = r
    if l1 is not None:
        out["diag"] = _l1scale_diagnostics(l1, row["p_star"])
    return out


def _meets(value, goal, bound=""):
    """True / False whether ``value`` (with its bound) is <= goal; None when unknown."""
    if value is None:
        return None
    if bound == "<":
        return True if value <= goal else None
    if bound == ">":
        return False if value >= goal else None
    return value <= goal


def misses(row):
    """Names of the report targets this point misses (or cannot tell)."""
    summ, out = row["summary"], []
    for key, goal in RATIO_GOALS.items():
        r = summ["ratio"].get(key)
        if r is None:
            continue
        ok = _meets(r["value"], goal, r["bound"])
        if ok is not True:
            out.append(f"ratio {LABELS[key]}" + ("" if ok is False else " (?)"))
    diag = summ.get("diag") or {}
    for name, goal in DIAG_GOALS.items():
        if diag and _meets(diag.get(name), goal) is not True:
            out.append(MISS_NAMES[name] + ("" if diag.get(name) is not None else " (?)"))
    return out


# --------------------------------------------------------------------------- reporting
def fmt_tol(t):
    """1e-06 -> "1e-6" (a power of ten), else ``:g``."""
    if not (t and t > 0):
        return f"{t}"
    k = math.log10(t)
    return f"1e{round(k)}" if abs(k - round(k)) < 1e-9 else f"{t:g}"


def fmt_seconds(v, longest=None):
    if v == "n/a":
        return "n/a"
    if v is None:
        return f">{longest:.2g}" if longest else "—"
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


def fmt_ratio(r, goal=None):
    if r is None or r["value"] is None:
        return "—"
    txt = f"{r['bound']}{r['value']:.2f}"
    return f"**{txt}**" if goal is not None and _meets(r["value"], goal, r["bound"]) is False else txt


def _fmt_diag(v, goal, pct=False):
    if v is None:
        return "—"
    txt = f"{100 * v:.1f}%" if pct else f"{v:.2f}"
    return f"**{txt}**" if v > goal else txt


def _fmt_peer(f):
    return "—" if not f else f"{SOLVER_LABELS.get(f['solver'], f['solver'])} {fmt_seconds(f['time'])}"


def write_markdown(path, results, meta):
    solvers = meta["solvers"]
    args = meta["args"]
    spec = LOSSES[meta.get("loss", "logistic")]
    L = [f"# {spec.title}: what a user waits for, l1scale vs peers\n"]
    L.append(
        f"Objective (all solvers): {spec.objective}, "
        "b unpenalised; `lam = ratio * lam_max`. Every solution is evaluated with l1scale's "
        "`Problem.objective`. Times are wall seconds of a whole `fit()` call (a fresh fit per tolerance, "
        "each in a forked child; median of 3 for fits under "
        f"{args['repeat_below']:g} s), for l1scale as for every peer: the time to a target is the smallest "
        "time of a fit whose solution has relative suboptimality `(P - P*)/P*` at most the target. "
        "`>X` = not reached, the longest fit tried took X s; `n/a` = the solver cannot solve this "
        "problem (see notes). Ratios: l1scale time / fastest peer's time (< 1: l1scale faster); `<r`: "
        "no peer met the target (r = l1scale / the shortest of the peers' longest fits), `>r`: l1scale "
        "did not (r = its longest fit / the fastest peer).\n"
    )

    # ---- summary
    L.append("## Summary\n")
    L.append(
        f"Targets: l1scale / fastest peer <= {RATIO_GOALS['0.01']:g} at 1e-2 and <= {RATIO_GOALS['1e-06']:g} "
        f"at 1e-6; l1scale's tol=1e-6 fit: fit time / time its History first met 1e-6 <= "
        f"{DIAG_GOALS['fit_over_history']:g} (`fit/history`), time outside the solver <= "
        f"{100 * DIAG_GOALS['outside_share']:.0f}% of the fit (`outside`: fit - Result.timings solve - "
        f"compile); fit time at tol=1e-2 / at tol=1e-6 <= {DIAG_GOALS['tol2_over_tol6']:g} (`tol 1e-2/1e-6`). "
        "Misses in **bold**.\n"
    )
    hdr = [
        "data",
        "lam/lam_max",
        "intercept",
        "l1scale s 1e-2 / 1e-4 / 1e-6",
        "fastest peer 1e-2",
        "fastest peer 1e-4",
        "fastest peer 1e-6",
        "ratio 1e-2",
        "ratio 1e-4",
        "ratio 1e-6",
        "fit/history",
        "outside",
        "tol 1e-2/1e-6",
        "misses",
    ]
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|" + "---|" * len(hdr))
    n_checks = n_miss = 0
    for ds, rows in results.items():
        for r in rows:
            summ = r["summary"]
            l1 = r["solvers"].get("l1scale")
            l1_cell = " / ".join(fmt_seconds(l1["time_to"][k], l1.get("longest_s")) for k in KEYS) if l1 else "—"
            diag = summ.get("diag") or {}
            miss = misses(r) if l1 else []
            n_checks += (len(RATIO_GOALS) + len(DIAG_GOALS)) if l1 else 0
            n_miss += len(miss)
            cells = [ds, f"{r['ratio']:g}", "yes" if r["intercept"] else "no", l1_cell]
            cells += [_fmt_peer(summ["fastest"][k]) for k in KEYS]
            cells += [fmt_ratio(summ["ratio"][k], RATIO_GOALS.get(k)) for k in KEYS]
            cells += [
                _fmt_diag(diag.get("fit_over_history"), DIAG_GOALS["fit_over_history"]),
                _fmt_diag(diag.get("outside_share"), DIAG_GOALS["outside_share"], pct=True),
                _fmt_diag(diag.get("tol2_over_tol6"), DIAG_GOALS["tol2_over_tol6"]),
            ]
            cells.append(", ".join(miss) if miss else "none")
            L.append("| " + " | ".join(cells) + " |")
    L.append("")
    if "l1scale" in solvers:
        L.append(
            f"{n_miss} of {n_checks} target checks missed or undecided (`(?)`: a time or a ratio bound "
            "does not tell).\n"
        )

    # ---- setup
    m = meta["machine"]
    L.append("## Setup\n")
    L.append(f"- Date: {meta['date']}; command: `{meta['command']}`; total {meta.get('total_wall_s', 0):.0f} s")
    L.append(
        f"- Machine: {m.get('Model name', '?')}, {m.get('CPU(s)', '?')} CPUs, RAM {m.get('RAM', '?')}; "
        f"{m['platform']}, Python {m['python']}. The machine is shared with other work, so timings carry noise."
    )
    L.append(
        "- Threads: "
        + ", ".join(f"{k}={v}" for k, v in m["threads"].items())
        + " (single-threaded comparison; every solver here runs on one core)."
    )
    L.append("- Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    cw, cold = meta["l1scale_compile"], meta.get("l1scale_compile_cold", {})
    L.append(
        f"- l1scale JIT: the warm-up fits in the parent took {cw['first_call_wall_s']:.2f} s "
        f"({cw['compile_s'] or 0:.2f} s of Numba compile / cache load; Numba's on-disk cache was warm); "
        f"with an empty cache (fresh process, NUMBA_CACHE_DIR=new folder) the first fit compiles for "
        f"{cold.get('compile_s', float('nan')):.2f} s. The timed fits are forked from the warmed-up parent, "
        "so neither is in the times below (each fit's own compile time is recorded, and is ~0). "
        + (
            f"Before each point's timed fits, two untimed l1scale fits of it (tol 1e-1 and 1e-6) in the parent load "
            f"the code of the paths its fits take ({meta['l1scale_point_warm_up_s']:.1f} s in all): a child's first "
            "fit loaded it again otherwise (40-85 ms). "
            if "l1scale_point_warm_up_s" in meta
            else ""
        )
        + f"skglm's Numba warm-up fit: {meta.get('skglm_compile_s', float('nan')):.2f} s, also excluded."
    )
    L.append(
        f"- l1scale: `{spec.estimator.__name__}(lam=lam, tol=tol, fit_intercept=..., max_iter={args['l1_max_iter']}, "
        "solver='cd').fit(X, y)` on the CSR matrix every peer gets, tol 1e-1 .. 1e-10 "
        "(the ladder stops as the peers' do, but the tol=1e-2 and tol=1e-6 fits are always run: the diagnostics "
        "use them). `fit/history`: the tol=1e-6 fit's wall time over the `result_.history.time` at which its "
        "objective first met 1e-6 (same fit); `outside`: (fit wall - `result_.timings['solve']` - "
        "`['compile']`) / fit wall."
    )
    if spec.name == "squared":
        L.append(
            "- Peers: a fresh fit per tolerance (sklearn `Lasso(alpha=lam, max_iter=100000)` tol 1e-1..1e-11, its "
            "cyclic coordinate descent stopped by its duality gap; skglm `Lasso(alpha=lam, max_iter=100, "
            "max_epochs=1000)` and celer `Lasso(alpha=lam, max_iter=100)` tol 1e-2..1e-11; glmnet "
            "`ElasticNet(alpha=1, lambda_path=[lam], standardize=False, n_splits=0)` thresh 1e-2..1e-12: the same "
            "mean-form objective for all). A ladder stops once the 1e-6 target is met, once a fit is killed at "
            f"{args['fit_timeout']:g} s (or fails), or when {args['budget']:g} s of fits are spent. Every solver "
            "gets the same CSR matrix; its conversions are inside the timed call. Not timed: reading the data. "
            "liblinear and saga have no Lasso."
        )
    else:
        L.append(
            "- Peers: a fresh fit per tolerance (liblinear eps 1e-1..1e-9; sklearn liblinear tol 1e-1..1e-9; "
            "saga tol 1e-2..1e-7 with max_iter set so that one fit takes ~--saga-run-budget s; skglm / celer "
            "tol 1e-2..1e-11; glmnet thresh 1e-2..1e-12). A ladder stops once the 1e-6 target is met, once a fit "
            f"is killed at {args['fit_timeout']:g} s (or fails), or when {args['budget']:g} s of fits are spent "
            f"(saga: {args['saga_budget']:g} s). Every solver gets the same CSR matrix; its conversions (l1scale's "
            "and skglm's to CSC, liblinear's `problem`) are inside the timed call (before 2026-11-24 skglm got a CSC "
            "copy and liblinear its `problem` outside the timing). Not timed: reading the data."
        )
        L.append(
            "- liblinear: `-s 6 -c 1/(n lam)`, with intercept `-B 1 -R` (unregularised bias). "
            "sklearn liblinear penalises the bias (`intercept_scaling="
            f"{args['sk_intercept_scaling']:g}`), so with an intercept it solves a slightly different problem. "
            "celer: `C = 1/(n lam)`, no intercept support. skglm: `SparseLogisticRegression(alpha=lam)` (mean form). "
            "glmnet: `LogitNet(alpha=1, lambda_path=[lam], standardize=False, n_splits=0)` (mean form)."
        )
    L.append(
        f"- P*: l1scale `CoordinateDescent(tol={args['ref_tol']:g})` (stopped from its callback at "
        f"{args['ref_budget']:g} s or once the certified relative gap is <= {args['ref_stop_gap']:g}); "
        + (
            f"if its certified relative duality gap exceeds {args['ref_gap']:g}, also liblinear at "
            f"eps={args['ref_liblinear_eps']:g} (killed at {args['ref_liblinear_timeout']:g} s); "
            if "liblinear" in solvers
            else ""
        )
        + "P* is finally the lowest objective any fit reached (`P* from`). `gap(P*)` is (P* - best dual value)/P*, "
        "a certificate that P* is that close to the true optimum (`none`: no certificate); `next best` is the "
        "best objective of another solver, relative to P*: two independent solvers agreeing is the practical "
        "check on P*."
    )
    for note in meta.get("notes", []):
        L.append(f"- {note}")
    L.append("")

    # ---- per dataset
    for ds, rows in results.items():
        desc = DATASETS.get(ds, ("", 0, ds))[2]
        L.append(f"## {ds}: {desc} (n={rows[0]['n']:,}, d={rows[0]['d']:,}, nnz={rows[0]['nnz']:,})\n")
        L.append("Seconds to 1e-2 / 1e-4 / 1e-6.\n")
        hdr = ["lam/lam_max", "intercept"] + [SOLVER_LABELS[s] for s in solvers]
        if "l1scale" in solvers:
            hdr += ["ratio to fastest peer 1e-2 / 1e-4 / 1e-6"]
        L.append("| " + " | ".join(hdr) + " |")
        L.append("|" + "---|" * len(hdr))
        for r in rows:
            cells = [f"{r['ratio']:g}", "yes" if r["intercept"] else "no"]
            for s in solvers:
                tt, longest = r["solvers"][s]["time_to"], r["solvers"][s].get("longest_s")
                cells.append(" / ".join(fmt_seconds(tt[k], longest) for k in KEYS))
            if "l1scale" in solvers:
                cells.append(" / ".join(fmt_ratio(r["summary"]["ratio"][k], RATIO_GOALS.get(k)) for k in KEYS))
            L.append("| " + " | ".join(cells) + " |")
        L.append("")
        if "l1scale" in solvers:
            L.append("<details><summary>l1scale fits: wall s (suboptimality) per tol</summary>\n")
            tols = sorted(
                {r.get("tol") for row in rows for r in row["solvers"]["l1scale"]["runs"] if r.get("tol") is not None},
                reverse=True,
            )
            hdr = ["lam/lam_max", "intercept"] + [f"tol {fmt_tol(t)}" for t in tols] + ["tol 1e-6: solve s, n_iter"]
            L.append("| " + " | ".join(hdr) + " |")
            L.append("|" + "---|" * len(hdr))
            for row in rows:
                by = {r.get("tol"): r for r in row["solvers"]["l1scale"]["runs"]}
                cells = [f"{row['ratio']:g}", "yes" if row["intercept"] else "no"]
                for t in tols:
                    r = by.get(t)
                    if r is None:
                        cells.append("")
                    elif r.get("time") is None:
                        cells.append(r.get("error", "failed")[:40])
                    else:
                        cells.append(f"{fmt_seconds(r['time'])} ({max(r['subopt'], 0):.0e})")
                r6 = by.get(DIAG_TOL) or {}
                cells.append(f"{r6['solve_s']:.3f}, {r6.get('n_iter')}" if r6.get("solve_s") is not None else "")
                L.append("| " + " | ".join(cells) + " |")
            L.append("\n</details>\n")
        L.append("| lam/lam_max | intercept | lam | P* | P* from | gap(P*) | next best | nnz(w*) | notes |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            sb = r.get("second_best")
            nb = f"{SOLVER_LABELS.get(sb['solver'], sb['solver'])} +{sb['rel_diff']:.0e}" if sb else ""
            gap = r["p_star_rel_gap"]
            notes = "; ".join(
                f"{SOLVER_LABELS[s]}: {r['solvers'][s]['note']}"
                for s in solvers
                if r["solvers"][s]["note"] and not r["solvers"][s]["note"].startswith("max_iter=")
            )
            certified = gap is not None and gap <= 1e-8
            confirmed = sb is not None and sb["rel_diff"] is not None and sb["rel_diff"] <= 1e-7
            if not (certified or confirmed):
                notes = (
                    "**P\\* neither certified (gap) nor matched by a second solver to 1e-7: the 1e-6 "
                    "column is measured against the best solver's own value** ; " + notes
                )
            src = r["p_star_solver"]
            src = "l1scale (reference run)" if src == "reference" else SOLVER_LABELS.get(src, src)
            L.append(
                f"| {r['ratio']:g} | {'yes' if r['intercept'] else 'no'} | {r['lam']:.4g} | {r['p_star']:.10g} | "
                f"{src} | {'none' if gap is None else f'{gap:.0e}'} | {nb} | "
                f"{r['reference'].get('nnz_star', '')} | {notes} |"
            )
        L.append("")
    path.write_text("\n".join(L) + "\n")


# --------------------------------------------------------------------------- main
def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--datasets", default=",".join(DEFAULT_DATASETS), help=f"comma-separated, from {sorted(DATASETS)}")
    p.add_argument(
        "--ratios", default=",".join(f"{r:g}" for r in DEFAULT_RATIOS), help="lam / lam_max values, comma-separated"
    )
    p.add_argument(
        "--intercept",
        choices=("protocol", "no", "yes", "both"),
        default="protocol",
        help=f"'protocol': per dataset {PROTOCOL}",
    )
    p.add_argument(
        "--loss",
        choices=sorted(LOSSES),
        default="logistic",
        help="logistic (results batch_l1_logreg.*) or squared, the Lasso (batch_lasso.*)",
    )
    p.add_argument(
        "--solvers",
        default=None,
        help=f"comma-separated, from {list(SOLVERS)} (default: the loss's peers, all of them)",
    )
    p.add_argument("--out", default=str(RESULTS_DIR), help="output folder")
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"subset for development: datasets {QUICK_DATASETS}, ratios {QUICK_RATIOS} "
        "(overrides --datasets/--ratios) and writes *_quick.{md,json}",
    )
    p.add_argument(
        "--from-json", metavar="JSON", help="only re-render the markdown of an earlier run's JSON (written next to it)"
    )
    p.add_argument("--data-dir", default=DATA_DIR)
    p.add_argument(
        "--cache-dir",
        default="/tmp/l1scale_bench_cache",
        help="where parsed datasets are cached as .npz ('' to disable)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=16.0,
        help="seconds of fits per solver and point after which no new fit is started",
    )
    p.add_argument("--fit-timeout", type=float, default=8.0, help="a single fit is killed after this many seconds")
    p.add_argument("--saga-run-budget", type=float, default=3.0, help="approximate seconds of one saga fit")
    p.add_argument("--saga-budget", type=float, default=8.0, help="--budget for saga")
    p.add_argument("--repeats", type=int, default=3, help="repeats of a fit that takes < --repeat-below s (median)")
    p.add_argument("--repeat-below", type=float, default=0.5)
    p.add_argument("--l1-max-iter", type=int, default=10000, help="l1scale's max_iter")
    p.add_argument("--ref-tol", type=float, default=1e-12)
    p.add_argument("--ref-max-iter", type=int, default=10000)
    p.add_argument("--ref-budget", type=float, default=10.0, help="seconds cap of the reference CD solve")
    p.add_argument(
        "--ref-stop-gap",
        type=float,
        default=1e-11,
        help="the reference CD solve also stops once its relative duality gap is below this",
    )
    p.add_argument(
        "--ref-gap",
        type=float,
        default=1e-9,
        help="relative duality gap the reference must reach before liblinear is called in",
    )
    p.add_argument("--ref-liblinear-eps", type=float, default=1e-9)
    p.add_argument("--ref-liblinear-timeout", type=float, default=10.0)
    p.add_argument(
        "--sk-intercept-scaling",
        type=float,
        default=100.0,
        help="sklearn liblinear penalises the bias; a large scaling makes that penalty small",
    )
    return p.parse_args(argv)


def peer_warm_ups(solvers, args, meta, spec):
    """What is usable among the optional peers, and their untimed first calls (skglm's Numba compile,
    celer's one-off import costs)."""
    args.liblinear_R_ok, args.liblinear_R_msg = False, "liblinear not installed"
    if "liblinear" in solvers:
        try:
            from liblinear import liblinearutil as ll

            args.liblinear_R_ok, args.liblinear_R_msg = liblinear_check_R(ll)
        except ImportError as e:
            solvers.remove("liblinear")
            meta["notes"].append(f"liblinear-official not importable ({e}); left out")
    args.glmnet_ok, args.glmnet_msg = True, ""
    if "glmnet" in solvers:
        try:
            importlib.import_module("glmnet")
        except ImportError as e:
            args.glmnet_ok, args.glmnet_msg = False, f"python-glmnet not importable ({e})"
            meta["notes"].append(args.glmnet_msg)
    Xs, ys = _tiny_problem()
    if "skglm" in solvers:
        from skglm import Lasso as SkglmLasso
        from skglm import SparseLogisticRegression as SkglmLR

        t0 = time.perf_counter()
        with warnings.catch_warnings():
            _quiet()
            for fi in (False, True):
                (SkglmLasso if spec.name == "squared" else SkglmLR)(alpha=0.01, fit_intercept=fi).fit(Xs, ys)
        meta["skglm_compile_s"] = time.perf_counter() - t0
    if "celer" in solvers:
        from celer import Lasso as CelerLasso
        from celer import LogisticRegression as CelerLR

        with warnings.catch_warnings():
            _quiet()
            CelerLasso(alpha=0.01).fit(Xs, ys) if spec.name == "squared" else CelerLR(C=1.0).fit(Xs, ys)


def main(argv=None):
    args = parse_args(argv)
    if args.from_json:
        src = Path(args.from_json)
        blob = json.loads(src.read_text())
        write_markdown(src.with_suffix(".md"), blob["results"], blob["meta"])
        print(f"wrote {src.with_suffix('.md')}")
        return
    if args.quick:
        datasets, ratios = list(QUICK_DATASETS), list(QUICK_RATIOS)
    else:
        datasets = [dataset_name(d.strip()) for d in args.datasets.split(",") if d.strip()]
        ratios = [float(r) for r in args.ratios.split(",") if r.strip()]
    spec = LOSSES[args.loss]
    solvers = list(spec.solvers) if args.solvers is None else [s.strip() for s in args.solvers.split(",") if s.strip()]
    for s in solvers:
        if s not in spec.solvers:
            raise SystemExit(f"unknown solver {s!r} for loss {spec.name!r}; choose from {list(spec.solvers)}")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = spec.stem + ("_quick" if args.quick else "")

    def log(msg):
        print(msg, flush=True)

    meta = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join(["python", "benchmarks/bench_batch_l1_logreg.py"] + (argv or sys.argv[1:])),
        "machine": machine_info(),
        "versions": package_versions(VERSIONED),
        "args": vars(args),
        "loss": spec.name,
        "solvers": solvers,
        "datasets": datasets,
        "ratios": ratios,
        "targets": list(TARGETS),
        "ratio_goals": RATIO_GOALS,
        "diag_goals": DIAG_GOALS,
        "notes": [],
    }

    # Warm-up fits in this process (the forked fits inherit the compiled code), reported apart.
    meta["l1scale_compile"] = l1scale_warm_up(spec)
    meta["l1scale_compile_cold"] = l1scale_cold_compile()
    log(
        f"l1scale warm-up: {meta['l1scale_compile']['first_call_wall_s']:.2f}s "
        f"(compile/cache-load {meta['l1scale_compile']['compile_s'] or 0:.2f}s); cold compile (empty Numba cache) "
        f"{meta['l1scale_compile_cold'].get('compile_s', float('nan')):.2f}s"
    )
    peer_warm_ups(solvers, args, meta, spec)

    results = {}
    t_all = time.perf_counter()
    for ds in datasets:
        t0 = time.perf_counter()
        X, y = load_dataset(ds, args.data_dir, args.cache_dir)
        if not sp.issparse(X):  # a dense generated set: every solver gets the same CSR matrix here too
            X = sp.csr_matrix(X)
        log(f"{ds}: n={X.shape[0]} d={X.shape[1]} nnz={X.nnz} (loaded in {time.perf_counter() - t0:.1f}s)")
        peers = Peers(X, y, args, spec)
        intercepts = {"protocol": [PROTOCOL.get(ds, True)], "both": [False, True], "no": [False], "yes": [True]}[
            args.intercept
        ]
        rows = []
        for intercept in intercepts:
            for ratio in ratios:
                log(f"  {ds} ratio={ratio:g} intercept={intercept}")
                if "l1scale" in solvers:
                    meta["l1scale_point_warm_up_s"] = meta.get("l1scale_point_warm_up_s", 0.0) + l1scale_point_warm_up(
                        X, y, ratio, intercept, spec
                    )
                t1 = time.perf_counter()
                r = run_point(X, y, peers, ratio, intercept, solvers, args, log)
                r.update(dataset=ds, n=X.shape[0], d=X.shape[1], nnz=int(X.nnz), wall_s=time.perf_counter() - t1)
                rows.append(r)
                summ = r["summary"]
                log(
                    "    -> "
                    + "  ".join(
                        f"{s}: " + "/".join(fmt_seconds(r["solvers"][s]["time_to"][k]) for k in KEYS) for s in solvers
                    )
                    + "   ratio "
                    + "/".join(fmt_ratio(summ["ratio"][k]) for k in KEYS)
                    + (f"   misses: {', '.join(misses(r)) or 'none'}" if "l1scale" in solvers else "")
                    + f"   ({r['wall_s']:.0f}s)"
                )
                results[ds] = rows  # keep partial results on disk
                meta["total_wall_s"] = time.perf_counter() - t_all
                _dump(out_dir, stem, results, meta)
    meta["total_wall_s"] = time.perf_counter() - t_all
    _dump(out_dir, stem, results, meta)
    log(f"done in {meta['total_wall_s']:.0f}s: {out_dir / (stem + '.md')}")


def _dump(out_dir, stem, results, meta):
    (out_dir / f"{stem}.json").write_text(json.dumps(jsonable({"meta": meta, "results": results}), indent=1))
    write_markdown(out_dir / f"{stem}.md", results, meta)


if __name__ == "__main__":
    main()
