"""Regularisation-path benchmark: l1scale's warm-started path vs glmnet's, and n_jobs speed-ups.

Path: a 50-lam grid from lam_max down to 1e-3 lam_max (``l1scale.path.lam_grid``; lam_max
of ``Problem(X, y, lam=1.0, fit_intercept=...)``), the same grid given to

* ``l1scale.path.regularization_path(X, y, lams=grid, tol=tol, fit_intercept=..., max_iter=10000)``
  (each lam warm-started from the previous solution), and
* ``glmnet.LogitNet(alpha=1, lambda_path=grid, standardize=False, tol=tol, n_splits=0,
  fit_intercept=...)`` (glmnet's own warm-started path),

(``--loss squared``: the Lasso path, ``regularization_path(X, y, "squared", ...)`` against
``glmnet.ElasticNet(alpha=1, ...)``, the labels as the target, into ``path_lasso.{md,json}``)
each whole call timed in a forked child (median of 3 when under ``--repeat-below`` s), on
earn (with intercept), news20 (its seeded 75% training split, no intercept) and two generated
sets, with intercept: ``tall`` (200,000 x 40 dense, as an array) and ``rare`` (50,000 x 5,000
binary, 1% positive, nearly separable: ``_common.tall_dense``, ``_common.rare_positives``). A path's
quality is its worst relative suboptimality over the 50 lams, against a reference path
(l1scale at tol=1e-10, or any better solution found); each solver's tolerance comes from a
ladder (loosest first), and the one reported for a target is the loosest whose path has
worst suboptimality <= 1e-4 (and <= 1e-6 when reached). Ratio: l1scale / glmnet.

n_jobs: ``SparseLogisticRegression(lam_ratio=0.01, multi_class="ovr", n_jobs=1 vs 2)`` one-vs-rest on MNIST
digits 0-3 (4 classes), ``SparseLogisticRegressionCV(cv=5, n_lams=20, n_jobs=1 vs 2)`` on earn, and
``regularization_path(X, y, lams=grid, tol=1e-4, n_jobs=1 vs 2)`` on earn's 50-lam grid (its segments in
threads). Threads run the nogil kernels; BLAS / OpenMP / Numba stay at one thread each.

See benchmarks/README.md.
"""

from __future__ import annotations

from _common import (
    DATA_DIR,
    DATASETS,
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

single_thread()  # before numpy is imported (n_jobs runs Python threads over nogil kernels)
repo_on_path()

import argparse
import contextlib
import datetime
import gzip
import json
import os
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from bench_batch_l1_logreg import (
    LOSSES,
    VERSIONED,
    fmt_ratio,
    fmt_seconds,
    fmt_tol,
    glmnet_path_solution,
    l1scale_warm_up,
)
from joblib import parallel_config

from l1scale import SparseLogisticRegression
from l1scale.path import SparseLogisticRegressionCV, lam_grid, regularization_path
from l1scale.problems import Problem

N_LAMS, LAM_MIN_RATIO = 50, 1e-3
TARGETS = (1e-4, 1e-6)
KEYS = tuple(f"{t:g}" for t in TARGETS)  # "0.0001", "1e-06"
RATIO_GOAL = 0.5  # l1scale / glmnet at worst subopt 1e-4
PROTOCOL = {"earn": True, "news20": False, "tall": True, "rare": True}  # dataset -> intercept
QUICK_DATASETS = ("earn",)
LADDERS = {"l1scale": tuple(10.0**-k for k in range(2, 10)), "glmnet": tuple(10.0**-k for k in range(2, 13))}
LABELS = {"l1scale": "l1scale regularization_path", "glmnet": "glmnet LogitNet"}


# --------------------------------------------------------------------------- the two paths
def l1scale_path(X, y, grid, intercept, tol, max_iter, loss="logistic"):
    path = regularization_path(X, y, loss, lams=grid, tol=tol, fit_intercept=intercept, max_iter=max_iter)
    return (
        path.coef_path,  # sparse (K, d): what the path holds
        path.intercepts,
        {"n_iter": int(np.sum(path.n_iter)), "max_rel_certificate": float(np.max(path.certificates))},
    )


def glmnet_path(X, y, grid, intercept, tol, loss="logistic"):
    from glmnet import ElasticNet, LogitNet

    m = (ElasticNet if loss == "squared" else LogitNet)(
        alpha=1.0, lambda_path=grid, standardize=False, tol=tol, max_iter=100000, n_splits=0, fit_intercept=intercept
    ).fit(X, y)
    return m


def timed_path(solver, X, y, grid, intercept, tol, args):
    """Run in a child: the whole call timed (median of --repeats when short); returns
    (seconds, coefs as CSR (K, d), intercepts (K,), extra)."""
    d = X.shape[1]
    if solver == "l1scale":
        t, (coefs, b, extra), times = timed_median(
            lambda: l1scale_path(X, y, grid, intercept, tol, args.l1_max_iter, args.loss),
            args.repeats,
            args.repeat_below,
        )
    else:
        t, m, times = timed_median(
            lambda: glmnet_path(X, y, grid, intercept, tol, args.loss), args.repeats, args.repeat_below
        )
        coefs, b = glmnet_path_solution(m, d, intercept)
        extra = {"n_lams_fitted": int(coefs.shape[0])}
    return t, sp.csr_matrix(coefs), np.asarray(b, dtype=float), dict(extra, times=times)


class PathObjectives:
    """P_k(w_k, b_k) at every lam of the grid, with ``Problem.objective`` over X converted to the
    column layout once (+inf at lams a path did not reach and where P is NaN)."""

    def __init__(self, X, y, grid, intercept, loss="logistic"):
        try:
            from l1scale.data.memory import column_matrix

            self.Xc = column_matrix(X)
        except ImportError:
            self.Xc = X.tocsc()
        self.y, self.grid, self.intercept, self.loss = y, grid, intercept, loss

    def __call__(self, coefs, intercepts):
        out = np.full(self.grid.size, np.inf)
        for k in range(min(self.grid.size, coefs.shape[0])):
            w = np.asarray(coefs[k].toarray()).ravel() if sp.issparse(coefs) else coefs[k]
            out[k] = Problem(
                self.Xc, self.y, self.loss, lam=float(self.grid[k]), fit_intercept=self.intercept
            ).objective(w, float(intercepts[k]))
        return np.where(np.isnan(out), np.inf, out)


def run_dataset(name, args, log):
    X, y = load_dataset(name, args.data_dir, args.cache_dir)
    intercept = PROTOCOL.get(name, True) if args.intercept == "protocol" else args.intercept == "yes"
    lam_max = Problem(X, y, args.loss, lam=1.0, fit_intercept=intercept).lam_max()
    grid = lam_grid(lam_max, N_LAMS, LAM_MIN_RATIO)
    nnz = int(X.nnz) if sp.issparse(X) else int(np.count_nonzero(X))  # the tall set is a dense array
    log(f"{name}: n={X.shape[0]} d={X.shape[1]} nnz={nnz} intercept={intercept} lam_max={lam_max:.4g}")
    objectives = PathObjectives(X, y, grid, intercept, args.loss)
    out = {
        "dataset": name,
        "n": X.shape[0],
        "d": X.shape[1],
        "nnz": nnz,
        "intercept": intercept,
        "lam_max": lam_max,
        "grid": grid,
        "solvers": {},
        "notes": {},
    }

    # Reference: a tight l1scale path; P*_k improves with any better solution found later.
    t0 = time.perf_counter()
    try:
        ref = call_in_child(
            partial(
                timed_path,
                "l1scale",
                X,
                y,
                grid,
                intercept,
                args.ref_tol,
                argparse.Namespace(**dict(vars(args), repeats=1)),
            ),
            args.ref_timeout,
        )
        p_star = objectives(ref[1], ref[2])
        out["reference"] = {
            "tol": args.ref_tol,
            "seconds": ref[0],
            "max_rel_certificate": ref[3].get("max_rel_certificate"),
            "nnz_last": int(ref[1][-1].nnz),
            "not_finite_at": np.flatnonzero(~np.isfinite(p_star)).tolist(),
        }
    except (FitTimeout, RuntimeError) as e:
        p_star = np.full(grid.size, np.inf)
        out["reference"] = {"tol": args.ref_tol, "error": " ".join(str(e).split())}
    log(
        f"  reference l1scale path tol={args.ref_tol:g}: {time.perf_counter() - t0:.1f}s "
        + (
            f"(max certified rel gap {out['reference']['max_rel_certificate']:.1e})"
            if "error" not in out["reference"]
            else out["reference"]["error"]
        )
    )

    runs = {s: [] for s in args.solvers}
    for solver in args.solvers:
        spent = 0.0
        for tol in LADDERS[solver]:
            try:
                t, coefs, b, extra = call_in_child(
                    partial(timed_path, solver, X, y, grid, intercept, tol, args), args.fit_timeout
                )
            except FitTimeout as e:
                runs[solver].append({"tol": tol, "time": None, "error": str(e), "killed_at": args.fit_timeout})
                out["notes"][solver] = f"tol={tol:g} path killed after {args.fit_timeout:g} s"
                break
            except RuntimeError as e:
                msg = " ".join(str(e).split())
                runs[solver].append({"tol": tol, "time": None, "error": msg})
                out["notes"][solver] = f"error at tol={tol:g}: {msg[:100]}"
                break
            obj = objectives(coefs, b)
            p_star = np.fmin(p_star, obj)
            runs[solver].append(
                {
                    "tol": tol,
                    "time": t,
                    "objectives": obj,
                    "nnz_last": int(coefs[-1].nnz) if coefs.shape[0] else 0,
                    "not_finite_at": np.flatnonzero(~np.isfinite(obj)).tolist(),
                    **extra,
                }
            )
            spent += sum(extra["times"])
            worst = _worst(obj, p_star)
            log(f"  {solver} tol={tol:g}: {t:.3f}s  worst subopt {worst:.1e}")
            if worst <= min(TARGETS):
                break
            if spent >= args.budget:
                out["notes"][solver] = f"no new path after {spent:.0f} s (budget {args.budget:g} s)"
                break

    # Worst suboptimality of every path against the final P*_k; the loosest tol meeting each target.
    out["p_star"] = p_star
    for solver, rs in runs.items():
        for r in rs:
            if r.get("time") is None:
                continue
            sub = _subopt(r.pop("objectives"), p_star)
            k = int(np.argmax(sub))
            r.update(
                worst_subopt=float(sub[k]), worst_at_ratio=float(grid[k] / lam_max), median_subopt=float(np.median(sub))
            )
        entry = {
            "runs": rs,
            "note": out["notes"].get(solver, ""),
            "at": {},
            "longest_s": max((r["time"] or r.get("killed_at", 0.0) for r in rs), default=None),
        }
        for target, key in zip(TARGETS, KEYS, strict=True):
            ok = [r for r in rs if r.get("worst_subopt") is not None and r["worst_subopt"] <= target]
            entry["at"][key] = {"tol": ok[0]["tol"], "time": ok[0]["time"]} if ok else None
        out["solvers"][solver] = entry
    out["ratio"] = {}
    for key in KEYS:
        e_l1, e_gl = (out["solvers"].get(s, {}) for s in ("l1scale", "glmnet"))
        a, b = e_l1.get("at", {}).get(key), e_gl.get("at", {}).get(key)
        r = {"value": None, "bound": ""}
        if a and b:
            r["value"] = a["time"] / b["time"]
        elif a and e_gl.get("longest_s"):  # glmnet's time to the target is above its longest path
            r.update(value=a["time"] / e_gl["longest_s"], bound="<")
        elif b and e_l1.get("longest_s"):
            r.update(value=e_l1["longest_s"] / b["time"], bound=">")
        out["ratio"][key] = r
    return out


def _subopt(obj, p_star):
    """(P_k - P*_k) / P*_k at every lam (+inf where P_k is not finite)."""
    obj = np.asarray(obj, dtype=float)
    with np.errstate(invalid="ignore"):
        sub = (obj - p_star) / np.abs(p_star)
    return np.where(np.isfinite(obj), sub, np.inf)


def _worst(obj, p_star):
    return float(np.max(_subopt(obj, p_star)))


# --------------------------------------------------------------------------- n_jobs
def load_mnist_digits(data_dir, digits=(0, 1, 2, 3)):
    """MNIST test images of the given digits from the canonical idx files: (X CSR, pixels / 255
    in [0, 1]; labels)."""
    folder = Path(data_dir) / "mnist"
    with gzip.open(folder / "t10k-images-idx3-ubyte.gz", "rb") as f:
        raw = f.read()
    magic, n, rows, cols = np.frombuffer(raw[:16], dtype=">i4")
    if magic != 2051:
        raise ValueError(f"not an idx3 image file (magic {magic})")
    images = np.frombuffer(raw[16:], dtype=np.uint8).reshape(n, rows * cols)
    with gzip.open(folder / "t10k-labels-idx1-ubyte.gz", "rb") as f:
        raw = f.read()
    magic, m = np.frombuffer(raw[:8], dtype=">i4")
    if magic != 2049 or m != n:
        raise ValueError(f"not the labels of the images (magic {magic}, {m} labels for {n} images)")
    labels = np.frombuffer(raw[8:], dtype=np.uint8)
    keep = np.isin(labels, digits)
    return sp.csr_matrix(images[keep] / 255.0), labels[keep].astype(np.int64)


def _speedup_case(make, X, y, args, backend=None):
    """Median fit seconds with n_jobs=1 and 2 (each in a child), or why not. ``backend``: the
    n_jobs=2 fits under ``joblib.parallel_config(backend=backend)`` (a process backend: its
    workers' first start, a fit before the timed ones, is reported as ``first_s``; the CPU
    seconds are then the child's alone, not its workers')."""
    out = {"load_avg_before": os.getloadavg()[0]}
    coefs = {}
    for n_jobs in (1, 2):
        try:
            make(n_jobs)  # TypeError here: the estimator has no n_jobs parameter
        except TypeError as e:
            return dict(out, error=f"n_jobs not available ({e})")
        chosen = backend if n_jobs > 1 else None

        def fit(n_jobs=n_jobs, chosen=chosen):
            def one():  # the process's CPU seconds (every thread) next to the wall seconds
                c0 = time.process_time()
                return make(n_jobs).fit(X, y), time.process_time() - c0

            with parallel_config(backend=chosen) if chosen else contextlib.nullcontext():
                first = None
                if chosen:
                    t0 = time.perf_counter()
                    one()
                    first = time.perf_counter() - t0
                t, (m, cpu), times = timed_median(one, args.njobs_repeats, np.inf)
            if chosen:  # the workers stop (and joblib's shared folders go) before the child exits
                from joblib.externals.loky import get_reusable_executor

                get_reusable_executor().shutdown(wait=True)
            return t, cpu, times, np.atleast_2d(m.coef_).copy(), first

        try:
            t, cpu, times, coefs[n_jobs], first = call_in_child(
                fit, args.fit_timeout * max(1, args.njobs_repeats + 1), daemon=chosen is None
            )
        except (FitTimeout, RuntimeError) as e:
            return dict(out, error=" ".join(str(e).split()))
        out[f"n_jobs={n_jobs}"] = {"time": t, "cpu_s": None if chosen else cpu, "times": times, "first_s": first}
    out["speedup"] = out["n_jobs=1"]["time"] / out["n_jobs=2"]["time"]
    out["max_coef_diff"] = float(np.max(np.abs(coefs[1] - coefs[2])))
    out["load_avg_after"] = os.getloadavg()[0]
    return out


def run_njobs(args, log):
    res = {}
    X, y = load_mnist_digits(args.data_dir)
    log(f"n_jobs: MNIST digits 0-3: n={X.shape[0]} d={X.shape[1]} nnz={X.nnz}")
    res["ovr"] = dict(
        _speedup_case(lambda k: SparseLogisticRegression(lam_ratio=0.01, multi_class="ovr", n_jobs=k), X, y, args),
        data=f"MNIST test digits 0-3 (n={X.shape[0]:,}, d={X.shape[1]}, 4 classes)",
        call="SparseLogisticRegression(lam_ratio=0.01, multi_class='ovr', n_jobs=k).fit(X, y)",
    )
    log(f"  one-vs-rest: {_fmt_speedup(res['ovr'])}")
    X, y = load_dataset("earn", args.data_dir, args.cache_dir)
    res["cv"] = dict(
        _speedup_case(lambda k: SparseLogisticRegressionCV(cv=5, n_lams=20, n_jobs=k), X, y, args),
        data=f"earn (n={X.shape[0]:,}, d={X.shape[1]:,}, binary)",
        call="SparseLogisticRegressionCV(cv=5, n_lams=20, n_jobs=k).fit(X, y)",
    )
    log(f"  CV: {_fmt_speedup(res['cv'])}")
    res["cv_loky"] = dict(
        _speedup_case(lambda k: SparseLogisticRegressionCV(cv=5, n_lams=20, n_jobs=k), X, y, args, backend="loky"),
        data=f"earn (n={X.shape[0]:,}, d={X.shape[1]:,}, binary), in two loky worker processes",
        call="with joblib.parallel_config(backend='loky'): SparseLogisticRegressionCV(cv=5, n_lams=20, n_jobs=k).fit(X, y)",
    )
    log(f"  CV in processes: {_fmt_speedup(res['cv_loky'])}")
    grid = lam_grid(Problem(X, y, lam=1.0, fit_intercept=True).lam_max(), N_LAMS, LAM_MIN_RATIO)
    res["path"] = dict(
        _speedup_case(lambda k: _PathFit(grid, k), X, y, args),
        data=f"earn (n={X.shape[0]:,}, d={X.shape[1]:,}, binary), the {N_LAMS}-lam grid above",
        call="regularization_path(X, y, lams=grid, tol=1e-4, n_jobs=k)",
    )
    log(f"  path: {_fmt_speedup(res['path'])}")
    return res


class _PathFit:
    """``regularization_path`` as an estimator for ``_speedup_case``: ``fit`` keeps the path's
    coefficients as ``coef_`` (n_jobs=2 solves its grid's segments in threads, the second from
    zero: it agrees with n_jobs=1 to tol, so the coefficients differ within it)."""

    def __init__(self, grid, n_jobs):
        self.grid, self.n_jobs = grid, n_jobs

    def fit(self, X, y):
        self.coef_ = regularization_path(X, y, lams=self.grid, tol=1e-4, n_jobs=self.n_jobs).coefs
        return self


def _fmt_speedup(c):
    if "error" in c:
        return c["error"]
    two = c["n_jobs=2"]
    return (
        f"n_jobs=1 {c['n_jobs=1']['time']:.3f}s, n_jobs=2 {two['time']:.3f}s ({_fmt_cpu(two)}), speed-up "
        f"{c['speedup']:.2f}x, max |coef diff| {c['max_coef_diff']:.1e}, load {c['load_avg_before']:.1f}"
    )


def _fmt_cpu(two):
    """The n_jobs=2 fit's CPU / wall, or its workers' first start under a process backend."""
    if two.get("cpu_s") is None:
        first = two.get("first_s")
        return "processes" + (f"; their first fit {first:.2f} s" if first is not None else "")
    return f"CPU/wall {two['cpu_s'] / two['time']:.2f}"


# --------------------------------------------------------------------------- report
def _fmt_sub(v):
    return "inf" if v is None else f"{max(v, 0.0):.1e}"


def _fmt_at(at):
    return "not reached" if not at else f"{fmt_seconds(at['time'])} (tol {fmt_tol(at['tol'])})"


def write_markdown(path, blob):
    meta, paths, njobs = blob["meta"], blob.get("paths", {}), blob.get("njobs")
    args = meta["args"]
    lasso = args.get("loss", "logistic") == "squared"
    glmnet_name = "ElasticNet" if lasso else "LogitNet"
    labels = dict(LABELS, glmnet=f"glmnet {glmnet_name}")
    L = [
        "# Lasso regularisation path: l1scale vs glmnet\n"
        if lasso
        else "# Regularisation path: l1scale vs glmnet, and n_jobs speed-ups\n"
    ]
    if lasso:
        L.append(
            "The squared loss, `P(w,b) = (1/(2n)) sum_i (x_i.w + b - y_i)^2 + lam ||w||_1`, the labels as the "
            'target: `regularization_path(X, y, "squared", ...)` against glmnet\'s `ElasticNet(alpha=1)`.\n'
        )
    if paths:
        L.append(
            f"A {N_LAMS}-lam grid from lam_max down to {LAM_MIN_RATIO:g} lam_max (`l1scale.path.lam_grid`), "
            "the same `lambda_path` for both solvers; wall seconds of the whole call, single thread, each "
            f"in a forked child (median of {args['repeats']} under {args['repeat_below']:g} s). A path meets a "
            "target when its worst relative suboptimality over the 50 lams, `max_k (P_k - P*_k)/P*_k`, is at "
            "most the target; `P*_k` is the reference path's objective (l1scale at "
            f"tol={args['ref_tol']:g}) or any lower one found. Each solver's tolerance is the loosest of its "
            f"ladder that meets the target. Target: l1scale / glmnet <= {RATIO_GOAL:g} at 1e-4.\n"
        )
        L.append(
            "| data | intercept | n x d | l1scale at 1e-4 | glmnet at 1e-4 | ratio 1e-4 | l1scale at 1e-6 | "
            "glmnet at 1e-6 | ratio 1e-6 |"
        )
        L.append("|---|---|---|---|---|---|---|---|---|")
        if meta.get("paths_from"):  # an n_jobs-only run that kept an earlier run's path figures
            L.insert(-2, f"(From {meta['paths_from']}.)\n")
        for ds, r in paths.items():
            s = r["solvers"]
            cells = [ds, "yes" if r["intercept"] else "no", f"{r['n']:,} x {r['d']:,}"]
            for key in KEYS:
                cells += [_fmt_at(s.get(sv, {}).get("at", {}).get(key)) for sv in ("l1scale", "glmnet")]
                cells.append(fmt_ratio(r["ratio"].get(key), RATIO_GOAL if key == KEYS[0] else None))
            L.append("| " + " | ".join(cells) + " |")
        L.append("")
        for ds, origin in meta.get("paths_kept", {}).items():  # a run of other data sets kept these
            L.append(f"({ds}: from {origin}.)\n")
    if njobs:
        L.append("## n_jobs speed-ups\n")
        if meta.get("njobs_from"):  # a paths-only run that kept an earlier run's n_jobs figures
            L.append(f"(From {meta['njobs_from']}.)\n")
        L.append(
            "Wall seconds of the whole fit, median of "
            f"{meta.get('njobs_repeats') or args['njobs_repeats']} (each in a forked child); speed-up = time(n_jobs=1) / time(n_jobs=2). "
            "The binary problems (one-vs-rest classes, CV folds) and a path's segments (`l1scale.path.path_segments`; "
            "the second starts from zero, so that path agrees with n_jobs=1 to tol, not to the bit: every lam of both is "
            "certified to tol 1e-4, and its coefficients differ where the objective is flat) run in joblib "
            "threads over the nogil kernels; "
            "BLAS / OpenMP / Numba keep one thread each. The CV in processes runs its folds in joblib's loky workers "
            "(`joblib.parallel_config(backend='loky')`), in a child that may start them, timed after one fit that "
            "starts them (its time given: importing l1scale and loading the compiled kernels in each worker). "
            "`CPU s / wall s`: the fit's process CPU seconds (all "
            "threads) over its wall seconds, ~2 when both threads ran all along. `load` = the 1-minute load "
            "average before / after "
            f"(the machine has {meta['machine'].get('CPU(s)', '?')} CPUs and is shared: a busy core caps the "
            "speed-up).\n"
        )
        L.append(
            "| case | data | n_jobs=1 s | n_jobs=2 s | speed-up | CPU s / wall s, n_jobs=2 | max abs coef diff | load |"
        )
        L.append("|---|---|---|---|---|---|---|---|")
        for name, c in njobs.items():
            head = f"`{c.get('call', name)}` | {c.get('data', '')}"
            if "error" in c:
                L.append(f"| {head} | {c['error']} | | | | | {c['load_avg_before']:.1f} |")
                continue
            two = c["n_jobs=2"]
            L.append(
                f"| {head} | {c['n_jobs=1']['time']:.3f} | {two['time']:.3f} | {c['speedup']:.2f}x | "
                f"{_fmt_cpu(two)} | {c['max_coef_diff']:.1e} | {c['load_avg_before']:.1f} / "
                f"{c['load_avg_after']:.1f} |"
            )
        L.append("")
    m = meta["machine"]
    L.append("## Setup\n")
    L.append(f"- Date: {meta['date']}; command: `{meta['command']}`; total {meta.get('total_wall_s', 0):.0f} s")
    L.append(
        f"- Machine: {m.get('Model name', '?')}, {m.get('CPU(s)', '?')} CPUs, RAM {m.get('RAM', '?')}; "
        f"{m['platform']}, Python {m['python']}. Shared with other work: timings carry noise."
    )
    L.append("- Threads: " + ", ".join(f"{k}={v}" for k, v in m["threads"].items()))
    L.append("- Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    L.append(
        f"- l1scale: `regularization_path(X, y, lams=grid, tol=tol, fit_intercept=..., "
        f"max_iter={args['l1_max_iter']})` on the CSR matrix (tol: relative duality gap of each lam), ladder "
        "tol 1e-1..1e-9; its Numba code is compiled by a warm-up fit in the parent "
        f"({meta['l1scale_compile']['first_call_wall_s']:.2f} s, not timed). glmnet: `{glmnet_name}(alpha=1, "
        "lambda_path=grid, standardize=False, tol=tol, max_iter=100000, n_splits=0, fit_intercept=...)` on "
        "the same CSR matrix (it makes its own CSC copy, timed), ladder tol 1e-2..1e-12. A ladder stops at "
        f"worst subopt <= 1e-6, when a path is killed at {args['fit_timeout']:g} s, or after "
        f"{args['budget']:g} s of paths. "
        + (
            "Both minimise (1/(2n)) sum (x.w + b - y)^2 + lam ||w||_1 (glmnet's Gaussian objective, the same). "
            "l1scale's iterations: CD's Newton steps, or, where the Lasso is solved on its covariances "
            "(few columns: S cheap to build for the whole path), its sweeps over S."
            if lasso
            else "Both minimise (1/n) sum log(1 + exp(-y (x.w + b))) + lam ||w||_1 "
            "(glmnet: deviance / 2n + lam ||w||_1, the same)."
        )
    )
    L.append("")
    for ds, r in paths.items():
        L.append(f"## {ds}: {DATASETS[ds][2]} (n={r['n']:,}, d={r['d']:,}, nnz={r['nnz']:,})\n")
        ref = r["reference"]
        bad = ", ".join(f"{r['grid'][k] / r['lam_max']:.3g}" for k in ref.get("not_finite_at") or [])
        bad = (
            f"; **its objective is not finite at lam/lam_max = {bad}** (P*_k there: the best other path's)"
            if bad
            else ""
        )
        L.append(
            f"lam_max = {r['lam_max']:.6g}, intercept: {'yes' if r['intercept'] else 'no'}. Reference: "
            + (
                f"l1scale path at tol={ref['tol']:g}, {ref['seconds']:.2f} s, largest certified relative gap "
                f"{ref['max_rel_certificate']:.1e}, {ref['nnz_last']} nonzeros at the last lam{bad}."
                if "error" not in ref
                else f"failed ({ref['error']}); P*_k is the best solution found."
            )
            + "\n"
        )
        L.append(
            "| solver | tol | wall s | worst subopt | at lam/lam_max | median subopt | nnz at last lam | "
            "fitted lams / iterations |"
        )
        L.append("|---|---|---|---|---|---|---|---|")
        for solver, e in r["solvers"].items():
            for run in e["runs"]:
                if run.get("time") is None:
                    L.append(f"| {labels[solver]} | {fmt_tol(run['tol'])} | {run.get('error', '')} | | | | | |")
                    continue
                fitted = (
                    f"{run['n_lams_fitted']} lams" if "n_lams_fitted" in run else f"{run.get('n_iter', '')} iterations"
                )
                bad = f" (P not finite at {len(run['not_finite_at'])} lams)" if run.get("not_finite_at") else ""
                L.append(
                    f"| {labels[solver]} | {fmt_tol(run['tol'])} | {fmt_seconds(run['time'])} | "
                    f"{_fmt_sub(run['worst_subopt'])}{bad} | {run['worst_at_ratio']:.3g} | "
                    f"{_fmt_sub(run['median_subopt'])} | {run['nnz_last']} | {fitted} |"
                )
        notes = [f"{labels[s]}: {n}" for s, n in r["notes"].items() if n]
        L.append("\n" + ("Notes: " + "; ".join(notes) + "\n" if notes else ""))
    path.write_text("\n".join(L) + "\n")


# --------------------------------------------------------------------------- main
def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--datasets", default=",".join(PROTOCOL), help=f"comma-separated, from {sorted(DATASETS)}")
    p.add_argument(
        "--intercept", choices=("protocol", "no", "yes"), default="protocol", help=f"'protocol': per dataset {PROTOCOL}"
    )
    p.add_argument("--solvers", default="l1scale,glmnet", help="comma-separated, from l1scale, glmnet")
    p.add_argument(
        "--loss",
        choices=sorted(LOSSES),
        default="logistic",
        help="logistic (path.*) or squared, the Lasso path against glmnet's ElasticNet (path_lasso.*; paths only)",
    )
    p.add_argument("--parts", default="path,njobs", help="comma-separated: path (the path timings), njobs")
    p.add_argument(
        "--quick", action="store_true", help=f"datasets {QUICK_DATASETS} only; writes path_quick.{{md,json}}"
    )
    p.add_argument("--out", default=str(RESULTS_DIR), help="output folder")
    p.add_argument("--from-json", metavar="JSON", help="only re-render the markdown of an earlier run's JSON")
    p.add_argument("--data-dir", default=DATA_DIR)
    p.add_argument(
        "--cache-dir",
        default="/tmp/l1scale_bench_cache",
        help="where parsed datasets are cached as .npz ('' to disable)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=240.0,
        help="seconds of paths per solver and dataset after which no new path is started",
    )
    p.add_argument("--fit-timeout", type=float, default=120.0, help="a path (or n_jobs fit) is killed after this")
    p.add_argument("--repeats", type=int, default=3, help="repeats of a path that takes < --repeat-below s (median)")
    p.add_argument("--repeat-below", type=float, default=1.0)
    p.add_argument("--njobs-repeats", type=int, default=3, help="fits per n_jobs value (median)")
    p.add_argument("--l1-max-iter", type=int, default=10000, help="max_iter of each l1scale solve on the path")
    p.add_argument("--ref-tol", type=float, default=1e-10, help="tol of the reference l1scale path")
    p.add_argument("--ref-timeout", type=float, default=600.0, help="the reference path is killed after this")
    return p.parse_args(argv)


def _carry_previous(previous_json, blob, parts, datasets):
    """A run of some parts keeps the other parts' figures from the previous result file (the page
    says which run they are from), so that the page always shows both the paths and n_jobs; a
    run of the paths on some data sets keeps the other data sets' paths alike (``paths_kept``:
    data set -> the run they are from). Called before the run writes anything (each dataset's
    results are written as they come)."""
    if not previous_json.exists():
        return
    previous = json.loads(previous_json.read_text())
    origin = previous.get("meta", {})
    if "path" in parts:
        kept = origin.get("paths_kept", {})
        for ds, result in (previous.get("paths") or {}).items():
            if ds not in datasets:
                blob["paths"][ds] = result
                blob["meta"].setdefault("paths_kept", {})[ds] = (
                    kept.get(ds) or origin.get("paths_from") or (f"the run of {origin.get('date', '?')}")
                )
    for part, key, note in (("path", "paths", "paths_from"), ("njobs", "njobs", "njobs_from")):
        if part in parts or not previous.get(key):
            continue
        blob[key] = previous[key]
        if key == "njobs":  # the kept figures are medians of that run's repeats, not of this one's
            blob["meta"]["njobs_repeats"] = origin.get("njobs_repeats") or origin.get("args", {}).get("njobs_repeats")
        blob["meta"][note] = origin.get(note) or (
            f"the run of {origin.get('date', '?')} (this run measured the {' and '.join(sorted(parts))} only)"
        )


def main(argv=None):
    args = parse_args(argv)
    if args.from_json:
        src = Path(args.from_json)
        write_markdown(src.with_suffix(".md"), json.loads(src.read_text()))
        print(f"wrote {src.with_suffix('.md')}")
        return
    datasets = (
        list(QUICK_DATASETS) if args.quick else [dataset_name(d.strip()) for d in args.datasets.split(",") if d.strip()]
    )
    args.solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    for s in args.solvers:
        if s not in LADDERS:
            raise SystemExit(f"unknown solver {s!r}; choose from {list(LADDERS)}")
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = ("path_lasso" if args.loss == "squared" else "path") + ("_quick" if args.quick else "")
    if args.loss == "squared":
        parts.discard("njobs")  # the n_jobs cases are logistic fits

    def log(msg):
        print(msg, flush=True)

    meta = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join(["python", "benchmarks/bench_path.py"] + (argv or sys.argv[1:])),
        "machine": machine_info(),
        "versions": package_versions(VERSIONED),
        "args": vars(args),
        "datasets": datasets,
        "n_lams": N_LAMS,
        "lam_min_ratio": LAM_MIN_RATIO,
    }
    meta["l1scale_compile"] = l1scale_warm_up(LOSSES[args.loss])
    blob = {"meta": meta, "paths": {}, "njobs": None}
    _carry_previous(out_dir / f"{stem}.json", blob, parts, datasets)
    t_all = time.perf_counter()

    def dump():
        meta["total_wall_s"] = time.perf_counter() - t_all
        (out_dir / f"{stem}.json").write_text(json.dumps(jsonable(blob), indent=1))
        write_markdown(out_dir / f"{stem}.md", jsonable(blob))

    if "path" in parts:
        if "glmnet" in args.solvers:
            try:
                import glmnet  # noqa: F401
            except ImportError as e:
                args.solvers.remove("glmnet")
                log(f"python-glmnet not importable ({e}): left out")
        for ds in datasets:
            blob["paths"][ds] = run_dataset(ds, args, log)
            dump()
    if "njobs" in parts:
        blob["njobs"] = run_njobs(args, log)
    dump()
    log(f"done in {meta['total_wall_s']:.0f}s: {out_dir / (stem + '.md')}")


if __name__ == "__main__":
    main()
