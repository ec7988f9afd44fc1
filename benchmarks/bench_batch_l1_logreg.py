#!/usr/bin/env python
"""Peer benchmark: batch L1-regularised logistic regression.

For each dataset x lam ratio (lam = ratio * lam_max) x {no intercept, intercept},
every solver minimises the same objective

    P(w, b) = (1/n) sum_i log(1 + exp(-y_i (x_i . w + b))) + lam ||w||_1

(b unpenalised, b = 0 without intercept), and we record the wall time it needs
to reach a relative suboptimality (P - P*) / P* <= 1e-4 and <= 1e-6.
Every solution is evaluated with ``l1scale.problem.Problem.objective``.

* l1scale CD: times read off the solver's own History (first outer iteration
  whose objective meets the target), best of ``--cd-runs`` runs; the Numba
  compile / cache-load time of the first call in the process is reported apart.
* Peers (liblinear -s 6, scikit-learn liblinear / saga, skglm, celer, glmnet)
  have no history: each is run from scratch with a decreasing tolerance
  sequence, and the time to a target is the smallest wall time of a run whose
  solution meets it.

See benchmarks/README.md.
"""

from __future__ import annotations

from _common import (DATA_DIR, REPO, RESULTS_DIR, THREAD_VARS, git_revision, load_svmlight_cached, repo_on_path,
                     single_thread)

# Single-threaded BLAS / OpenMP for a fair single-thread comparison. Must be set
# before numpy is imported; an explicit setting in the environment wins.
single_thread()
repo_on_path()

import argparse
import datetime
import importlib
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from l1scale.problem import Problem  # noqa: E402
from l1scale.solvers.cd import CoordinateDescent  # noqa: E402

TARGETS = (1e-4, 1e-6)

# name -> (path under the data dir, n_features from INDEX.md, description)
DATASETS = {
    "a9a": ("a9a/a9a.bz2", 123, "a9a (UCI Adult), train"),
    "earn": ("reuters21578/modapte_earn_train.svm.bz2", 27901, "Reuters-21578 ModApte 'earn', train"),
    "mnist": ("mnist/mnist10k_3vsrest.bz2", 784, "MNIST test 10k, 3 vs rest"),
    "news20": ("news20/news20_bydate_binary.svm.bz2", 588937, "20 Newsgroups binary uni+bigram TF-IDF"),
}
DEFAULT_DATASETS = ("a9a", "earn", "mnist", "news20")
QUICK_DATASETS = ("a9a", "earn")
QUICK_RATIOS = (0.1, 0.01)

SOLVERS = ("l1scale", "liblinear", "sk-liblinear", "sk-saga", "skglm", "celer", "glmnet")
SOLVER_LABELS = {
    "l1scale": "l1scale CD",
    "liblinear": "liblinear -s 6",
    "sk-liblinear": "sklearn liblinear",
    "sk-saga": "sklearn saga",
    "skglm": "skglm",
    "celer": "celer",
    "glmnet": "glmnet",
}


class _Stop(Exception):
    """Raised from the CD callback to end a run early (its History is kept)."""


# --------------------------------------------------------------------------- data
def load_dataset(name, data_dir, cache_dir):
    """(X CSR float64, y in {-1,+1}); parsed svmlight cached as .npz in cache_dir."""
    path, d, _ = DATASETS[name]
    X, y = load_svmlight_cached(Path(data_dir) / path, d, cache_dir, name)
    # 32-bit indices: scikit-learn's liblinear/saga reject int64 ones.
    X = sp.csr_matrix((X.data.astype(np.float64), X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                      shape=X.shape)
    X.sort_indices()
    y = np.where(np.asarray(y) > 0, 1.0, -1.0)
    return X, y


# --------------------------------------------------------------------------- bookkeeping
@dataclass
class Setting:
    """One (dataset, ratio, intercept) cell: the problem, P*, and every run."""

    problem: Problem
    p_best: float  # best objective known so far (updated by every run)
    lower_bound: float = -np.inf  # best certified dual value (lower bound on P*)
    runs: dict = field(default_factory=dict)  # solver -> list of run dicts
    notes: dict = field(default_factory=dict)  # solver -> note

    def record(self, solver, **run):
        self.runs.setdefault(solver, []).append(run)
        obj = run.get("objective")
        if obj is not None and np.isfinite(obj):
            self.p_best = min(self.p_best, obj)

    def subopt(self, obj):
        return (obj - self.p_best) / abs(self.p_best)


def _quiet():
    warnings.simplefilter("ignore")


def timed_best(fn, repeats, quick_s):
    """Run fn() (returns model); repeat up to `repeats` times while a run takes < quick_s."""
    best_t, out = np.inf, None
    for k in range(max(1, repeats)):
        t0 = time.perf_counter()
        res = fn()
        t = time.perf_counter() - t0
        if t < best_t:
            best_t, out = t, res
        if t >= quick_s:
            break
    return best_t, out


class FitTimeout(Exception):
    pass


def call_in_child(fn, timeout):
    """Run fn() in a forked child process and return its (picklable) result; the child is
    killed after `timeout` seconds (FitTimeout). The fit is timed inside the child, so the
    fork itself is not counted; peers have no time limit of their own, hence this."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child():
        try:
            with warnings.catch_warnings():
                _quiet()
                res = fn()
            send.send(("ok", res))
        except BaseException as e:  # report every failure to the parent
            send.send(("err", f"{type(e).__name__}: {e}"))
        finally:
            send.close()

    proc = ctx.Process(target=child, daemon=True)
    proc.start()
    send.close()
    try:
        if not recv.poll(timeout):
            proc.kill()
            raise FitTimeout(f"fit killed after {timeout:.0f} s")
        try:
            status, res = recv.recv()
        except EOFError:
            status, res = "err", f"child process died (exit code {proc.exitcode})"
    finally:
        proc.join()
        recv.close()
    if status == "err":
        raise RuntimeError(res)
    return res


# --------------------------------------------------------------------------- l1scale CD
def cd_warm_up():
    """First CD call of the process on a tiny problem: returns its compile/cache-load time."""
    rng = np.random.default_rng(0)
    X = sp.random(40, 6, density=0.5, random_state=0, format="csr")
    y = np.where(rng.random(40) < 0.5, -1.0, 1.0)
    t0 = time.perf_counter()
    res = CoordinateDescent(tol=1e-6, max_iter=50).solve(Problem(X, y, lam_ratio=0.1))
    wall = time.perf_counter() - t0
    return {"compile_s": float(res.timings.get("compile", float("nan"))), "first_call_wall_s": wall}


def cd_cold_compile():
    """Compile time of the l1scale kernels with an empty Numba cache, in a fresh process
    (NUMBA_CACHE_DIR pointed at a new temporary folder)."""
    import tempfile

    code = ("import time, numpy as np, scipy.sparse as sp; t=time.perf_counter(); "
            "from l1scale.problem import Problem; from l1scale.solvers.cd import CoordinateDescent; "
            "t_imp=time.perf_counter()-t; X=sp.random(40,6,density=0.5,random_state=0,format='csr'); "
            "y=np.where(np.arange(40)%2==0,-1.0,1.0); "
            "r=CoordinateDescent(tol=1e-6,max_iter=50).solve(Problem(X,y,lam_ratio=0.1)); "
            "print(r.timings['compile'], t_imp)")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=tmp, PYTHONPATH=str(REPO))
        try:
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                 timeout=600, cwd=str(REPO))
            compile_s, import_s = (float(v) for v in out.stdout.split())
            return {"compile_s": compile_s, "import_s": import_s}
        except Exception as e:  # informational only
            return {"error": f"{type(e).__name__}: {e}"}


def cd_history_run(problem, *, tol, max_iter, budget_s, stop_obj=None, stop_rel_gap=None):
    """Run CD; stop early (via its callback) once the budget is spent, the objective is
    <= stop_obj, or the relative certificate is <= stop_rel_gap. Returns (History, Result|None)."""
    holder = {}

    def callback(it, history):
        holder["h"] = history
        t, obj, cert = history.time[-1], history.objective[-1], history.certificate[-1]
        if t > budget_s:
            raise _Stop("budget")
        if stop_obj is not None and obj <= stop_obj:
            raise _Stop("target")
        if stop_rel_gap is not None and cert <= stop_rel_gap * abs(obj):
            raise _Stop("gap")

    solver = CoordinateDescent(tol=tol, max_iter=max_iter, callback=callback)
    try:
        res = solver.solve(problem)
        return res.history, res, res.stop_reason
    except _Stop as e:
        return holder["h"], None, f"stopped early ({e})"


def history_lower_bound(history):
    """Best dual value seen along a CD run: objective - duality gap at each iterate."""
    obj, cert = np.asarray(history.objective), np.asarray(history.certificate, dtype=float)
    dual = obj - cert  # nan where the iteration was not certified
    return float(np.nanmax(dual)) if np.isfinite(dual).any() else -np.inf


# --------------------------------------------------------------------------- liblinear
def liblinear_fit(ll, prob, C, eps, intercept):
    opts = f"-s 6 -c {C!r} -e {eps!r} -q" + (" -B 1 -R" if intercept else "")
    param = ll.parameter(opts)
    return ll.train(prob, param)


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
    except Exception as e:  # pragma: no cover - depends on installed version
        return False, f"-R rejected: {e}"


# --------------------------------------------------------------------------- peer runners
class Peers:
    """Builds each peer's input once per dataset and runs one fit, returning (seconds, w, b)."""

    def __init__(self, X_csr, y, args):
        self.X_csr = X_csr
        self.X_csc = X_csr.tocsc()
        self.y = y
        self.n, self.d = X_csr.shape
        self.args = args
        self._ll = None
        self._ll_prob = {}

    def liblinear_problem(self, intercept):
        from liblinear import liblinearutil as ll

        if intercept not in self._ll_prob:  # built once, not timed
            self._ll_prob[intercept] = ll.problem(self.y, self.X_csr)
        return self._ll_prob[intercept]

    # liblinear-official
    def liblinear(self, lam, intercept, eps):
        from liblinear import liblinearutil as ll

        prob = self.liblinear_problem(intercept)
        C = 1.0 / (self.n * lam)
        t, m = timed_best(lambda: liblinear_fit(ll, prob, C, eps, intercept), self.args.repeats, self.args.repeat_below)
        w, b = liblinear_solution(m, self.d, intercept)
        return t, w, b, {}

    # scikit-learn
    def sklearn(self, solver, lam, intercept, tol, max_iter):
        from sklearn.linear_model import LogisticRegression

        kw = {}
        if solver == "liblinear" and intercept:
            kw["intercept_scaling"] = self.args.sk_intercept_scaling
        C = 1.0 / (self.n * lam)

        def fit():
            m = LogisticRegression(C=C, l1_ratio=1.0, solver=solver, tol=tol, fit_intercept=intercept,
                                   max_iter=max_iter, random_state=0, **kw)
            return m.fit(self.X_csr, self.y)

        t, m = timed_best(fit, self.args.repeats, self.args.repeat_below)
        i = list(m.classes_).index(1.0)
        sign = 1.0 if i == 1 else -1.0
        w = sign * np.asarray(m.coef_[0], dtype=np.float64)
        b = sign * float(np.atleast_1d(m.intercept_)[0]) if intercept else 0.0
        return t, w, b, {"n_iter": int(np.max(m.n_iter_))}

    # skglm
    def skglm(self, lam, intercept, tol):
        from skglm import SparseLogisticRegression

        def fit():
            return SparseLogisticRegression(alpha=lam, fit_intercept=intercept, tol=tol, max_iter=100,
                                            max_epochs=1000).fit(self.X_csc, self.y)

        t, m = timed_best(fit, self.args.repeats, self.args.repeat_below)
        w, b = self._signed(m, intercept)
        return t, w, b, {"n_iter": int(np.max(getattr(m, "n_iter_", -1)))}

    # celer (no intercept support; sum-form objective with 1/C = n * lam)
    def celer(self, lam, intercept, tol):
        from celer import LogisticRegression

        def fit():
            return LogisticRegression(C=1.0 / (self.n * lam), tol=tol, fit_intercept=False,
                                      max_iter=100).fit(self.X_csr, self.y)

        t, m = timed_best(fit, self.args.repeats, self.args.repeat_below)
        w, _ = self._signed(m, False)
        return t, w, 0.0, {}

    # python-glmnet: -(1/n) loglik + lambda ||w||_1 with standardize=False
    def glmnet(self, lam, intercept, tol):
        from glmnet import LogitNet

        def fit():
            return LogitNet(alpha=1.0, lambda_path=np.array([lam]), standardize=False, fit_intercept=intercept,
                            tol=tol, max_iter=100000, n_splits=0).fit(self.X_csr, self.y)

        t, m = timed_best(fit, self.args.repeats, self.args.repeat_below)
        coef = np.asarray(m.coef_path_).reshape(-1, self.d, len(m.lambda_path_))[0, :, -1]
        b = float(np.asarray(m.intercept_path_).reshape(-1)[-1]) if intercept else 0.0
        sign = 1.0 if list(m.classes_).index(1.0) == 1 else -1.0
        return t, sign * coef, sign * b, {}

    @staticmethod
    def _signed(m, intercept):
        classes = list(m.classes_)
        sign = 1.0 if classes.index(1.0) == 1 else -1.0
        w = sign * np.asarray(m.coef_, dtype=np.float64).reshape(-1)
        b = sign * float(np.atleast_1d(m.intercept_)[0]) if intercept else 0.0
        return w, b


def run_sequence(setting, solver, tols, fit, budget_s, fit_timeout, key="tol"):
    """Fit with each tolerance in turn (loosest first); stop once a run meets the
    tightest target w.r.t. the best objective known, once a fit runs past fit_timeout
    (it is killed), or once budget_s seconds of fits are spent (no new fit is started)."""
    spent = 0.0
    for tol in tols:
        try:
            t, w, b, extra = call_in_child(lambda: fit(tol), fit_timeout)
        except FitTimeout as e:
            setting.record(solver, **{key: tol}, time=None, objective=None, error=str(e), killed_at=fit_timeout)
            setting.notes[solver] = f"{key}={tol:g} fit killed after {fit_timeout:g} s"
            break
        except Exception as e:  # a failing peer must not end the benchmark
            msg = " ".join(str(e).split())
            setting.record(solver, **{key: tol}, time=None, objective=None, error=msg)
            setting.notes[solver] = f"error at {key}={tol:g}: {msg[:100]}"
            break
        obj = setting.problem.objective(w, b) if np.all(np.isfinite(w)) and np.isfinite(b) else float("inf")
        setting.record(solver, **{key: tol}, time=t, objective=obj, nnz=int(np.count_nonzero(w)), **extra)
        spent += t
        if setting.subopt(obj) <= min(TARGETS):
            break
        if spent >= budget_s:
            setting.notes[solver] = f"no new fit after {spent:.0f} s of fits (budget {budget_s:g} s)"
            break


# --------------------------------------------------------------------------- one setting
def run_setting(X, y, peers, ratio, intercept, solvers, args, log):
    problem = Problem(X, y, lam_ratio=ratio, fit_intercept=intercept)
    lam = problem.lam
    s = Setting(problem=problem, p_best=np.inf)
    info = {"lam": lam, "lam_max": lam / ratio, "ratio": ratio, "intercept": intercept}

    # 1. reference: CD at tol=1e-12; certify with the duality gap; fall back on liblinear.
    with warnings.catch_warnings():
        _quiet()
        h, res, why = cd_history_run(problem, tol=args.ref_tol, max_iter=args.ref_max_iter, budget_s=args.ref_budget,
                                     stop_rel_gap=args.ref_stop_gap)
    p_cd = float(np.min(h.objective))
    s.p_best = p_cd
    s.lower_bound = history_lower_bound(h)
    info["nnz_star"] = int(h.nnz[int(np.argmin(h.objective))])
    ref = {"cd_objective": p_cd, "cd_stop": why, "cd_iters": len(h.objective), "cd_time": h.time[-1],
           "cd_rel_gap": (p_cd - s.lower_bound) / abs(p_cd)}
    if not ref["cd_rel_gap"] <= args.ref_gap and "liblinear" in solvers:
        # The CD reference is not certified tightly enough: add a tight liblinear solve.
        from liblinear import liblinearutil as ll

        prob = peers.liblinear_problem(intercept)

        def fit():
            t0 = time.perf_counter()
            m = liblinear_fit(ll, prob, 1.0 / (X.shape[0] * lam), args.ref_liblinear_eps, intercept)
            return (time.perf_counter() - t0,) + liblinear_solution(m, X.shape[1], intercept)

        try:
            t_ll, w, b = call_in_child(fit, args.ref_liblinear_timeout)
            cert = problem.certificate(w, b)  # gap at the optimal intercept for w
            p_ll = problem.objective(w, b)
            s.p_best = min(s.p_best, p_ll, cert.objective)
            s.lower_bound = max(s.lower_bound, cert.objective - cert.value)
            if p_ll < p_cd:
                info["nnz_star"] = int(np.count_nonzero(w))
            ref.update(liblinear_eps=args.ref_liblinear_eps, liblinear_objective=p_ll, liblinear_time=t_ll,
                       liblinear_rel_gap=cert.relative)
        except Exception as e:
            ref.update(liblinear_eps=args.ref_liblinear_eps, liblinear_error=" ".join(str(e).split()))
    ref["p_ref"] = s.p_best
    ref["rel_gap"] = (s.p_best - s.lower_bound) / abs(s.p_best)
    log(f"    ref P*={s.p_best:.12g}  certified rel gap {ref['rel_gap']:.1e}  (CD: {why}, "
        f"{ref['cd_iters']} it, {ref['cd_time']:.2f}s, rel gap {ref['cd_rel_gap']:.1e}"
        + (f"; liblinear eps={args.ref_liblinear_eps:g} {ref['liblinear_time']:.2f}s" if "liblinear_objective" in ref else "")
        + (f"; liblinear eps={args.ref_liblinear_eps:g}: {ref['liblinear_error']}" if "liblinear_error" in ref else "")
        + ")")

    # 2a. l1scale CD: history of --cd-runs runs, stopped once well past the 1e-6 target.
    if "l1scale" in solvers:
        budget = args.fit_timeout
        for k in range(args.cd_runs):
            with warnings.catch_warnings():
                _quiet()
                h, res, why = cd_history_run(problem, tol=args.cd_tol, max_iter=args.cd_max_iter,
                                             budget_s=budget, stop_obj=s.p_best * (1 + 1e-8),
                                             stop_rel_gap=1e-8)
            if k == 0 and why == "stopped early (budget)":
                # The run is deterministic (fixed seed): when the first run never met the 1e-6
                # target, later runs only need to go as far as its 1e-4 point (if any).
                obj = np.asarray(h.objective)
                hit = np.flatnonzero((obj - s.p_best) / abs(s.p_best) <= max(TARGETS))
                budget = 1.5 * h.time[hit[0]] + 0.5 if hit.size else 0.0
                if budget <= 0.0:
                    s.record("l1scale", run=k, time=h.time[-1], objective=float(np.min(h.objective)),
                             stop=why, history={"time": list(h.time), "objective": list(h.objective),
                                                "certificate": list(h.certificate), "nnz": list(h.nnz)})
                    break
            s.record("l1scale", run=k, time=h.time[-1], objective=float(np.min(h.objective)),
                     stop=why, history={"time": list(h.time), "objective": list(h.objective),
                                        "certificate": list(h.certificate), "nnz": list(h.nnz)})
        log(f"    l1scale: {len(h.time)} it, last run {h.time[-1]:.3f}s ({why})")

    # 2b. peers
    tols_ll = [10.0 ** -k for k in range(1, 10)]
    for solver in solvers:
        t_start = time.perf_counter()
        if solver == "liblinear":
            if intercept and not args.liblinear_R_ok:
                s.notes[solver] = "n/a: " + args.liblinear_R_msg
                continue
            run_sequence(s, solver, tols_ll, lambda e: peers.liblinear(lam, intercept, e), args.budget,
                         args.fit_timeout, key="eps")
        elif solver == "sk-liblinear":
            run_sequence(s, solver, tols_ll, lambda t: peers.sklearn("liblinear", lam, intercept, t, 1000),
                         args.budget, args.fit_timeout)
            if intercept:
                s.notes.setdefault(solver, f"bias penalised (intercept_scaling={args.sk_intercept_scaling:g})")
        elif solver == "sk-saga":
            # Estimate the cost of one epoch, then cap every run at ~saga_run_budget seconds.
            try:
                t1, *_ = call_in_child(lambda: peers.sklearn("saga", lam, intercept, 1e-30, 2), args.fit_timeout)
            except Exception:
                t1 = args.fit_timeout
            if t1 >= args.saga_run_budget:
                s.record(solver, tol=None, time=None, objective=None, killed_at=t1,
                         error=f"2 epochs took {t1:.1f} s >= --saga-run-budget")
                s.notes[solver] = f"skipped: 2 epochs take {t1:.1f} s"
                continue
            epochs = int(max(2, min(100000, 2 * args.saga_run_budget / max(t1, 1e-4))))
            s.notes[solver] = f"max_iter={epochs} epochs (~{args.saga_run_budget:g} s per fit)"
            run_sequence(s, solver, [10.0 ** -k for k in range(2, 8)],
                         lambda t: peers.sklearn("saga", lam, intercept, t, epochs), args.saga_budget,
                         args.fit_timeout)
        elif solver == "skglm":
            run_sequence(s, solver, [10.0 ** -k for k in range(2, 12)], lambda t: peers.skglm(lam, intercept, t),
                         args.budget, args.fit_timeout)
        elif solver == "celer":
            if intercept:
                s.notes[solver] = "n/a: celer's LogisticRegression cannot fit an intercept"
                continue
            run_sequence(s, solver, [10.0 ** -k for k in range(2, 12)], lambda t: peers.celer(lam, intercept, t),
                         args.budget, args.fit_timeout)
        elif solver == "glmnet":
            if not args.glmnet_ok:
                s.notes[solver] = "n/a: " + args.glmnet_msg
                continue
            run_sequence(s, solver, [10.0 ** -k for k in range(2, 13)], lambda t: peers.glmnet(lam, intercept, t),
                         args.budget, args.fit_timeout)
        if solver != "l1scale":
            runs = s.runs.get(solver, [])
            best = min((r["objective"] for r in runs if r.get("objective") is not None), default=float("nan"))
            log(f"    {solver}: {len(runs)} runs, {time.perf_counter() - t_start:.1f}s, best subopt "
                f"{s.subopt(best):.1e}" + (f"  [{s.notes[solver]}]" if solver in s.notes else ""))

    # 3. times to target, against the final P* (the best objective any run reached)
    p_star = s.p_best
    best_by = {sv: min((r["objective"] for r in runs if r.get("objective") is not None), default=np.inf)
               for sv, runs in s.runs.items()}
    best_by["l1scale (reference run)"] = min(best_by.get("l1scale", np.inf), p_cd)
    if "liblinear_objective" in ref:
        best_by["liblinear"] = min(best_by.get("liblinear", np.inf), ref["liblinear_objective"])
    ranked = sorted(best_by.items(), key=lambda kv: kv[1])
    ranked = [kv for kv in ranked if kv[0] != "l1scale"] if ranked and ranked[0][0] == "l1scale (reference run)" \
        else [kv for kv in ranked if kv[0] != "l1scale (reference run)"]
    info["best_by_solver"] = {k: v for k, v in ranked}
    info["second_best"] = {"solver": ranked[1][0], "rel_diff": (ranked[1][1] - p_star) / abs(p_star)} \
        if len(ranked) > 1 else None
    out = dict(info, p_star=p_star, p_star_solver=ranked[0][0] if ranked else "", p_star_rel_gap=(p_star - s.lower_bound) / abs(p_star), reference=ref,
               p_star_improved_over_ref=(ref["p_ref"] - p_star) / abs(p_star), solvers={})
    for solver in solvers:
        runs = s.runs.get(solver, [])
        # Longest fit (or run) tried: a target never met is reported as "> longest".
        longest = max([r["time"] if r.get("time") is not None else r.get("killed_at", 0.0) for r in runs],
                      default=None)
        entry = {"runs": runs, "note": s.notes.get(solver, ""), "time_to": {}, "longest_s": longest}
        for target in TARGETS:
            key = f"{target:g}"
            if solver == "l1scale":
                times = []
                for r in runs:
                    obj = np.asarray(r["history"]["objective"])
                    hit = np.flatnonzero((obj - p_star) / abs(p_star) <= target)
                    times.append(r["history"]["time"][hit[0]] if hit.size else np.inf)
                t = min(times, default=np.inf)
            else:
                t = min((r["time"] for r in runs if r.get("objective") is not None
                         and (r["objective"] - p_star) / abs(p_star) <= target), default=np.inf)
            entry["time_to"][key] = None if not np.isfinite(t) else float(t)
        if solver in s.notes and s.notes[solver].startswith("n/a"):
            entry["time_to"] = {f"{t:g}": "n/a" for t in TARGETS}
        out["solvers"][solver] = entry
    return out


# --------------------------------------------------------------------------- reporting
def machine_info():
    info = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in lscpu.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket"):
                info[k.strip()] = v.strip()
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
        info["RAM"] = f"{kb / 2**20:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    info["threads"] = {v: os.environ.get(v) for v in THREAD_VARS}
    return info


def versions():
    out = {}
    for dist in ("numpy", "scipy", "numba", "scikit-learn", "liblinear-official", "skglm", "celer",
                 "python-glmnet", "l1scale"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    rev = git_revision()
    if rev is not None:
        out["l1scale git"] = rev
    return out


def _fmt_t(v, longest=None):
    if v == "n/a":
        return "n/a"
    if v is None:
        return f">{longest:.2g}" if longest else "—"
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


def write_markdown(path, results, meta):
    L = []
    L.append("# Batch L1-regularised logistic regression: l1scale CD vs peers\n")
    L.append("Objective (all solvers): `P(w,b) = (1/n) sum_i log(1+exp(-y_i (x_i.w + b))) + lam ||w||_1`, "
             "b unpenalised; `lam = ratio * lam_max`. Every solution is evaluated with l1scale's "
             "`Problem.objective`. Cells: wall seconds to reach relative suboptimality "
             "`(P - P*)/P* <= 1e-4 / <= 1e-6`; `>X` = not reached: no fit (l1scale: no run) met it and the longest "
             "one tried ran X s (a fit is killed at the --fit-timeout); "
             "`n/a` = the solver cannot solve this problem (see notes). "
             "`ratio` = l1scale time / liblinear time (< 1: l1scale faster).\n")
    m = meta["machine"]
    L.append("## Setup\n")
    L.append(f"- Date: {meta['date']}; command: `{meta['command']}`")
    L.append(f"- Machine: {m.get('Model name', '?')}, {m.get('CPU(s)', '?')} CPUs "
             f"({m.get('Core(s) per socket', '?')} cores/socket, {m.get('Thread(s) per core', '?')} thread/core), "
             f"RAM {m.get('RAM', '?')}; {m['platform']}, Python {m['python']}. "
             "The machine is shared with other work, so timings carry noise.")
    L.append("- Threads: " + ", ".join(f"{k}={v}" for k, v in m["threads"].items())
             + " (single-threaded comparison; every solver here runs on one core).")
    L.append("- Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    cw = meta["l1scale_compile"]
    cold = meta.get("l1scale_compile_cold", {})
    L.append(f"- l1scale JIT: first call of the process {cw['compile_s']:.2f} s of Numba compile / cache load "
             f"(first tiny solve {cw['first_call_wall_s']:.2f} s wall; Numba's on-disk cache was warm); "
             f"with an empty cache (fresh process, NUMBA_CACHE_DIR=new folder) the compile takes "
             f"{cold.get('compile_s', float('nan')):.2f} s. Both are "
             "excluded from the l1scale times below (History time excludes it). "
             f"skglm's Numba warm-up fit: {meta.get('skglm_compile_s', float('nan')):.2f} s, also excluded.")
    L.append(f"- l1scale: best of {meta['args']['cd_runs']} runs (each stopped at {meta['args']['fit_timeout']:g} s), time of the first outer iteration whose "
             "objective meets the target (its History; includes its per-iteration duality-gap computation). "
             "Problem construction (column layout) is not timed, nor is building liblinear's problem.")
    L.append("- Peers: fresh fit per tolerance (liblinear eps 1e-1..1e-9; sklearn tol 1e-1..1e-9 (liblinear), "
             "1e-2..1e-7 (saga, max_iter set so that one fit takes ~--saga-run-budget s); skglm / celer tol 1e-2..1e-11; glmnet thresh 1e-2..1e-12); the time to a target "
             "is the smallest wall time of a fit whose solution meets it; the sequence stops once the 1e-6 target "
             f"is met, once a fit is killed at {meta['args']['fit_timeout']:g} s, or when "
             f"{meta['args']['budget']:g} s of fits are spent (saga: {meta['args']['saga_budget']:g} s). A fit under "
             f"{meta['args']['repeat_below']:g} s is repeated up to {meta['args']['repeats']}x (best kept).")
    L.append("- liblinear: `-s 6 -c 1/(n lam)`, with intercept `-B 1 -R` (unregularised bias). "
             "sklearn liblinear penalises the bias (`intercept_scaling="
             f"{meta['args']['sk_intercept_scaling']:g}`), so with an intercept it solves a slightly different problem. "
             "celer: `C = 1/(n lam)`, no intercept support. skglm: `SparseLogisticRegression(alpha=lam)` (mean form). "
             "glmnet: `LogitNet(alpha=1, lambda_path=[lam], standardize=False, n_splits=0)` (mean form).")
    L.append(f"- P*: l1scale CD at tol=1e-12 (stopped at {meta['args']['ref_budget']:g} s or once the certified "
             f"relative gap is <= {meta['args']['ref_stop_gap']:g}); if its certified relative duality gap exceeds "
             f"{meta['args']['ref_gap']:g}, also liblinear at eps={meta['args']['ref_liblinear_eps']:g} "
             f"(killed at {meta['args']['ref_liblinear_timeout']:g} s); "
             "P* is finally the lowest objective any run reached (`P* from`). `gap(P*)` is (P* - best dual value)/P*, "
             "a certificate that P* is that close to the true optimum (the dual point is the rescaled gradient, "
             "which can be loose at small lam; `none` = l1scale never computed one and liblinear was not run or "
             "timed out); `next best` is the best objective of another solver, relative to P*: "
             "two independent solvers agreeing is the practical check on P*.")
    if meta.get("notes"):
        for note in meta["notes"]:
            L.append(f"- {note}")
    L.append("")
    solvers = meta["solvers"]
    for ds, rows in results.items():
        L.append(f"## {ds}: {DATASETS[ds][2]} (n={rows[0]['n']:,}, d={rows[0]['d']:,}, nnz={rows[0]['nnz']:,})\n")
        hdr = ["lam/lam_max", "intercept"] + [SOLVER_LABELS[s] for s in solvers]
        if "l1scale" in solvers and "liblinear" in solvers:
            hdr += ["ratio l1scale/liblinear"]
        L.append("| " + " | ".join(hdr) + " |")
        L.append("|" + "---|" * len(hdr))
        for r in rows:
            cells = [f"{r['ratio']:g}", "yes" if r["intercept"] else "no"]
            for s in solvers:
                tt, longest = r["solvers"][s]["time_to"], r["solvers"][s].get("longest_s")
                cells.append(f"{_fmt_t(tt['0.0001'], longest)} / {_fmt_t(tt['1e-06'], longest)}")
            if "l1scale" in solvers and "liblinear" in solvers:
                rat = []
                for key in ("0.0001", "1e-06"):
                    a, b = r["solvers"]["l1scale"]["time_to"][key], r["solvers"]["liblinear"]["time_to"][key]
                    la = r["solvers"]["l1scale"].get("longest_s")
                    lb = r["solvers"]["liblinear"].get("longest_s")
                    if isinstance(a, float) and isinstance(b, float) and b > 0:
                        rat.append(f"{a / b:.2f}")
                    elif isinstance(a, float) and b is None and lb:
                        rat.append(f"<{a / lb:.2f}")
                    elif a is None and isinstance(b, float) and la:
                        rat.append(f">{la / b:.2f}")
                    else:
                        rat.append("—")
                cells.append(" / ".join(rat))
            L.append("| " + " | ".join(cells) + " |")
        L.append("")
        L.append("| lam/lam_max | intercept | lam | P* | P* from | gap(P*) | next best | nnz(w*) | notes |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            sb = r.get("second_best")
            nb = f"{SOLVER_LABELS.get(sb['solver'], sb['solver'])} +{sb['rel_diff']:.0e}" if sb else ""
            gap = r["p_star_rel_gap"]
            notes = "; ".join(f"{SOLVER_LABELS[s]}: {r['solvers'][s]['note']}" for s in solvers
                              if r["solvers"][s]["note"] and not r["solvers"][s]["note"].startswith("max_iter="))
            certified = gap is not None and np.isfinite(gap) and gap <= 1e-8
            confirmed = sb is not None and sb["rel_diff"] is not None and sb["rel_diff"] <= 1e-7
            if not (certified or confirmed):
                notes = ("**P\\* neither certified (gap) nor matched by a second solver to 1e-7: the 1e-6 "
                         "column is measured against the best solver's own value** ; " + notes)
            L.append(f"| {r['ratio']:g} | {'yes' if r['intercept'] else 'no'} | {r['lam']:.4g} | {r['p_star']:.10g} | "
                     f"{SOLVER_LABELS.get(r['p_star_solver'], r['p_star_solver'])} | "
                     f"{'none' if gap is None or not np.isfinite(gap) else f'{gap:.0e}'} | {nb} | "
                     f"{r.get('nnz_star', '')} | {notes} |")
        L.append("")
    path.write_text("\n".join(L) + "\n")


# --------------------------------------------------------------------------- main
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--datasets", default=",".join(DEFAULT_DATASETS),
                   help=f"comma-separated, from {sorted(DATASETS)}")
    p.add_argument("--ratios", default="0.1,0.01,0.001", help="lam / lam_max values, comma-separated")
    p.add_argument("--intercept", choices=("both", "no", "yes"), default="both")
    p.add_argument("--solvers", default=",".join(SOLVERS), help=f"comma-separated, from {list(SOLVERS)}")
    p.add_argument("--out", default=str(RESULTS_DIR), help="output folder")
    p.add_argument("--quick", action="store_true",
                   help=f"subset for development: datasets {QUICK_DATASETS}, ratios {QUICK_RATIOS} "
                        "(overrides --datasets/--ratios) and writes *_quick.{md,json}")
    p.add_argument("--from-json", metavar="JSON",
                   help="only re-render the markdown of an earlier run's JSON (written next to it)")
    p.add_argument("--data-dir", default=DATA_DIR)
    p.add_argument("--cache-dir", default="/tmp/l1scale_bench_cache",
                   help="where parsed datasets are cached as .npz ('' to disable)")
    p.add_argument("--budget", type=float, default=16.0,
                   help="seconds of fits per solver and setting after which no new fit is started")
    p.add_argument("--fit-timeout", type=float, default=8.0,
                   help="a single peer fit (or l1scale run) is killed (stopped) after this many seconds")
    p.add_argument("--saga-run-budget", type=float, default=3.0, help="approximate seconds of one saga fit")
    p.add_argument("--saga-budget", type=float, default=8.0, help="--budget for saga")
    p.add_argument("--repeats", type=int, default=3, help="repeats of a peer fit that takes < --repeat-below s")
    p.add_argument("--repeat-below", type=float, default=0.5)
    p.add_argument("--cd-runs", type=int, default=3, help="l1scale runs (best time kept)")
    p.add_argument("--cd-tol", type=float, default=1e-9)
    p.add_argument("--cd-max-iter", type=int, default=1000)
    p.add_argument("--ref-tol", type=float, default=1e-12)
    p.add_argument("--ref-max-iter", type=int, default=10000)
    p.add_argument("--ref-budget", type=float, default=10.0, help="seconds cap of the reference CD solve")
    p.add_argument("--ref-stop-gap", type=float, default=1e-11,
                   help="the reference CD run also stops once its relative duality gap is below this")
    p.add_argument("--ref-gap", type=float, default=1e-9,
                   help="relative duality gap the reference must reach before liblinear is called in")
    p.add_argument("--ref-liblinear-eps", type=float, default=1e-9)
    p.add_argument("--ref-liblinear-timeout", type=float, default=10.0)
    p.add_argument("--sk-intercept-scaling", type=float, default=100.0,
                   help="sklearn liblinear penalises the bias; a large scaling makes that penalty small")
    return p.parse_args(argv)


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
        datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
        ratios = [float(r) for r in args.ratios.split(",") if r.strip()]
    for d in datasets:
        if d not in DATASETS:
            raise SystemExit(f"unknown dataset {d!r}; choose from {sorted(DATASETS)}")
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    for s in solvers:
        if s not in SOLVERS:
            raise SystemExit(f"unknown solver {s!r}; choose from {list(SOLVERS)}")
    intercepts = {"both": [False, True], "no": [False], "yes": [True]}[args.intercept]
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = "batch_l1_logreg" + ("_quick" if args.quick else "")

    def log(msg):
        print(msg, flush=True)

    meta = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "command": " ".join(["python", "benchmarks/bench_batch_l1_logreg.py"] + (argv or sys.argv[1:])),
            "machine": machine_info(), "versions": versions(), "args": vars(args), "solvers": solvers,
            "datasets": datasets, "ratios": ratios, "notes": []}

    # First CD call in the process: its compile / cache-load time, reported apart.
    meta["l1scale_compile"] = cd_warm_up()
    meta["l1scale_compile_cold"] = cd_cold_compile()
    log(f"l1scale first call: compile/cache-load {meta['l1scale_compile']['compile_s']:.2f}s; "
        f"cold compile (empty Numba cache) {meta['l1scale_compile_cold'].get('compile_s', float('nan')):.2f}s")

    # Optional peers: what is usable.
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
    if "skglm" in solvers:  # Numba warm-up of skglm, excluded from its times
        from skglm import SparseLogisticRegression

        Xs = sp.random(40, 6, density=0.5, random_state=0, format="csc")
        ys = np.where(np.arange(40) % 2 == 0, -1.0, 1.0)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            _quiet()
            for fi in (False, True):
                SparseLogisticRegression(alpha=0.01, fit_intercept=fi).fit(Xs, ys)
        meta["skglm_compile_s"] = time.perf_counter() - t0
    # celer's first call also has one-off import costs; do it untimed.
    if "celer" in solvers:
        from celer import LogisticRegression as _CLR

        with warnings.catch_warnings():
            _quiet()
            _CLR(C=1.0).fit(sp.random(40, 6, density=0.5, random_state=0, format="csr"),
                            np.where(np.arange(40) % 2 == 0, -1.0, 1.0))

    results = {}
    t_all = time.perf_counter()
    for ds in datasets:
        t0 = time.perf_counter()
        X, y = load_dataset(ds, args.data_dir, args.cache_dir)
        log(f"{ds}: n={X.shape[0]} d={X.shape[1]} nnz={X.nnz} (loaded in {time.perf_counter() - t0:.1f}s)")
        peers = Peers(X, y, args)
        rows = []
        for intercept in intercepts:
            for ratio in ratios:
                log(f"  {ds} ratio={ratio:g} intercept={intercept}")
                t1 = time.perf_counter()
                r = run_setting(X, y, peers, ratio, intercept, solvers, args, log)
                r.update(dataset=ds, n=X.shape[0], d=X.shape[1], nnz=int(X.nnz))
                r["wall_s"] = time.perf_counter() - t1
                rows.append(r)
                tt = {s: r["solvers"][s]["time_to"] for s in solvers}
                log("    -> " + "  ".join(f"{s}: {_fmt_t(v['0.0001'])}/{_fmt_t(v['1e-06'])}" for s, v in tt.items())
                    + f"   ({r['wall_s']:.0f}s)")
                # keep partial results on disk
                results[ds] = rows
                meta["total_wall_s"] = time.perf_counter() - t_all
                _dump(out_dir, stem, results, meta)
    meta["total_wall_s"] = time.perf_counter() - t_all
    _dump(out_dir, stem, results, meta)
    log(f"done in {meta['total_wall_s']:.0f}s: {out_dir / (stem + '.md')}")


def _jsonable(o):
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, (np.floating, float)):
        return float(o) if np.isfinite(o) else None
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.bool_,)):
        return bool(o)
    return o


def _dump(out_dir, stem, results, meta):
    meta_json = dict(meta, args={k: v for k, v in meta["args"].items()})
    (out_dir / f"{stem}.json").write_text(json.dumps(_jsonable({"meta": meta_json, "results": results}), indent=1))
    write_markdown(out_dir / f"{stem}.md", results, meta)


if __name__ == "__main__":
    main()
