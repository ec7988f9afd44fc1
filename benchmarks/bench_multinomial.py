"""Peer benchmark: multinomial (softmax) L1 logistic regression, timed as a user waits for it.

For each data set, at lam = ratio * lam_max, every solver minimises the same objective

    P(W, b) = (1/n) sum_i [ log sum_k exp(x_i . W_k + b_k) - (x_i . W_{y_i} + b_{y_i}) ] + lam ||W||_1

(b unpenalised), and we record the wall time of the whole fit it needs to reach a relative
suboptimality (P - P*) / P* <= 1e-2, 1e-4 and 1e-6; P* is a solve of l1scale's
``multinomial_cd`` at tol 1e-13 (certified: its duality gap is reported). Every solution is
evaluated with ``l1scale.problems.multinomial.MultinomialProblem.objective``.

Every solver is fitted from scratch at a decreasing ladder of its own tolerances, each fit in
a forked child (killed at ``--fit-timeout``); the time to a target is the smallest wall time
of a fit whose solution meets it (median of 3 repeats for fits under 0.5 s). Peers:

- l1scale: ``SparseLogisticRegression(lam=lam, solver="multinomial_cd", multi_class="multinomial",
  tol=tol)`` (before that parameter existed: the problem built and solved by
  ``MultinomialCD``, which is what the estimator does); its compile is done in the parent first.
- scikit-learn: ``LogisticRegression(solver="saga", C=1/(n lam), l1_ratio=1, tol=tol)``
  (multinomial for more than two classes);
- glmnet (python-glmnet's ``LogitNet``, Fortran ``lognet``, ungrouped multinomial,
  ``standardize=False``): a path of 20 lams from lam_max down to lam, as glmnet is run (a lone
  lam fails to converge in ``lognet``); its time is the whole path's.

Two classes (splice): scikit-learn and glmnet fit the binary logistic model, whose optimum
equals the two-class softmax's at the same lam (pure L1); their models are evaluated on the
binary objective. Ratios are l1scale's time over the fastest peer's (< 1: l1scale is faster).

Run: ``python benchmarks/bench_multinomial.py`` (about 10 minutes; ``--quick`` for a smoke run).
"""

from __future__ import annotations

from _common import (
    DATA_DIR,
    RESULTS_DIR,
    FitTimeout,
    call_in_child,
    jsonable,
    machine_info,
    package_versions,
    repo_on_path,
    single_thread,
    timed_median,
    utc_now,
)

single_thread()
repo_on_path()

import argparse
import gzip
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from l1scale.problems.memory import Problem
from l1scale.problems.multinomial import MultinomialProblem
from l1scale.solvers.multinomial import MultinomialCD

TARGETS = (1e-2, 1e-4, 1e-6)
LADDERS = {
    "l1scale": (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8),
    "sklearn_saga": (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7),
    "glmnet": (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10),
}


# ----------------------------------------------------------------------------- data
def load(name, data_dir):
    """(X, y, note) of a data set: scikit-learn's wine (standardised) and digits (/16), the
    splice file and the 10,000 MNIST test digits (/255, CSR) of ``data_dir``."""
    from sklearn.datasets import load_digits, load_svmlight_file, load_wine

    if name == "wine":
        X, y = load_wine(return_X_y=True)
        return (X - X.mean(axis=0)) / X.std(axis=0), y, "standardised"
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return X / 16.0, y, "pixels / 16"
    if name == "splice":
        X, y = load_svmlight_file(os.path.join(data_dir, "splice", "splice_scale.bz2"), n_features=60)
        return _int32(X), y, "two classes"
    if name == "mnist10k":
        folder = os.path.join(data_dir, "mnist")
        with gzip.open(os.path.join(folder, "t10k-images-idx3-ubyte.gz")) as f:
            X = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784) / 255.0
        with gzip.open(os.path.join(folder, "t10k-labels-idx1-ubyte.gz")) as f:
            y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
        return _int32(sp.csr_matrix(X)), y, "MNIST test set, pixels / 255, CSR"
    raise ValueError(f"unknown data set {name!r}")


def _int32(X):
    """CSR with 32-bit indices (scikit-learn's saga takes no other)."""
    X = sp.csr_matrix(X)
    return sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)


# ----------------------------------------------------------------------------- fits
def fit_l1scale(X, y, lam, tol):
    try:
        from l1scale import SparseLogisticRegression

        model = SparseLogisticRegression(
            lam=lam, solver="multinomial_cd", multi_class="multinomial", tol=tol, max_iter=10_000
        ).fit(X, y)
        return model.coef_, model.intercept_
    except TypeError:  # an estimator without multi_class: what it would do
        result = MultinomialCD(tol=tol, max_iter=10_000).solve(MultinomialProblem(X, y, lam))
        return result.coef, result.intercept


def fit_saga(X, y, lam, tol):
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(solver="saga", C=1.0 / (X.shape[0] * lam), l1_ratio=1.0, tol=tol, max_iter=100_000)
    model.fit(X, y)
    return model.coef_, model.intercept_


def fit_glmnet(X, y, lam, tol, lam_max):
    from glmnet import LogitNet

    path = lam_max * np.geomspace(1.0, lam / lam_max, 20)
    model = LogitNet(alpha=1.0, lambda_path=path, standardize=False, tol=tol, max_iter=100_000, n_splits=0)
    model.fit(X, y)
    if not np.isclose(model.lambda_path_[-1], lam, rtol=1e-9):
        raise RuntimeError(f"glmnet stopped the path at lam {model.lambda_path_[-1]:.3g}, not {lam:.3g}")
    return model.coef_path_[:, :, -1], model.intercept_path_[:, -1]


def objective(problem, X, y, coef, intercept):
    """P at a model: the softmax objective, or for one row of coefficients (a binary model of two
    classes) the binary logistic objective, whose optimum is the same."""
    coef, intercept = np.atleast_2d(coef), np.atleast_1d(intercept)
    if coef.shape[0] == 1:
        labels = np.where(y == problem.classes[1], 1.0, -1.0)
        return Problem(X, labels, lam=problem.lam).objective(coef[0], float(intercept[0]))
    return problem.objective(coef, intercept)


def run_ladder(name, fit, tols, problem, X, y, p_star, args, log):
    rows = []
    for tol in tols:

        def one(tol=tol):
            seconds, (coef, intercept), _ = timed_median(lambda: fit(tol), 3, 0.5)
            return seconds, objective(problem, X, y, coef, intercept)

        try:
            seconds, value = call_in_child(one, args.fit_timeout)
        except FitTimeout:
            log(f"    {name} tol={tol:g}: killed at {args.fit_timeout:.0f} s")
            rows.append({"tol": tol, "seconds": None, "subopt": None, "error": "timeout"})
            break
        except RuntimeError as e:
            log(f"    {name} tol={tol:g}: {e}")
            rows.append({"tol": tol, "seconds": None, "subopt": None, "error": str(e)})
            continue
        subopt = (value - p_star) / abs(p_star)
        rows.append({"tol": tol, "seconds": seconds, "subopt": subopt})
        log(f"    {name} tol={tol:g}: {seconds:.3f} s, (P - P*)/P* = {subopt:.2e}")
        if subopt <= min(TARGETS) * 0.1:
            break  # tighter tolerances time nothing new
    times = {}
    for target in TARGETS:
        met = [r["seconds"] for r in rows if r["seconds"] is not None and r["subopt"] <= target]
        times[f"{target:g}"] = min(met) if met else None
    return {"ladder": rows, "time_to": times}


def run_dataset(name, ratio, peers, args, log):
    X, y, note = load(name, args.data_dir)
    problem = MultinomialProblem(X, y, lam_ratio=ratio)
    lam, lam_max = problem.lam, problem.lam_max()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = MultinomialCD(tol=1e-13, max_iter=5000).solve(problem)
    log(
        f"{name}: n={X.shape[0]} d={X.shape[1]} K={problem.n_classes} lam={lam:.4g} ({ratio:g} lam_max); "
        f"P*={ref.objective:.12g}, relative gap {ref.relative_certificate:.1e}, nnz {ref.nnz} "
        f"({time.perf_counter() - t0:.2f} s)"
    )
    fits = {
        "l1scale": lambda tol: fit_l1scale(X, y, lam, tol),
        "sklearn_saga": lambda tol: fit_saga(X, y, lam, tol),
        "glmnet": lambda tol: fit_glmnet(X, y, lam, tol, lam_max),
    }
    row = {
        "dataset": name,
        "note": note,
        "n": X.shape[0],
        "d": X.shape[1],
        "n_classes": problem.n_classes,
        "nnz_X": int(sp.csr_matrix(X).nnz),
        "lam_ratio": ratio,
        "lam": lam,
        "p_star": ref.objective,
        "p_star_relative_gap": ref.relative_certificate,
        "nnz_W": ref.nnz,
        "solvers": {},
    }
    for peer in peers:
        row["solvers"][peer] = run_ladder(peer, fits[peer], LADDERS[peer], problem, X, y, ref.objective, args, log)
    ours = row["solvers"]["l1scale"]["time_to"]
    row["ratio_to_fastest_peer"] = {}
    for key, mine in ours.items():
        others = [row["solvers"][p]["time_to"][key] for p in peers if p != "l1scale"]
        others = [t for t in others if t is not None]
        row["ratio_to_fastest_peer"][key] = mine / min(others) if (mine is not None and others) else None
    return row


# ----------------------------------------------------------------------------- report
def _s(v):
    return "-" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.1f}")


def _r(v):
    return "-" if v is None else f"{v:.2f}"


def write_markdown(path, rows, meta):
    lines = [
        "# Multinomial L1 logistic regression: l1scale vs scikit-learn saga vs glmnet",
        "",
        (
            "Written by `benchmarks/bench_multinomial.py` (its docstring says what is timed and how). "
            f"{meta['date']}; {meta['machine']['Model name']}, single thread; {meta['command']}."
        ),
        "",
        (
            "Wall time (s) of the whole fit to a relative suboptimality (P - P\\*)/P\\* <= target; "
            "'-': no fit of the ladder reached it (or it was killed at the time limit). "
            "Ratio: l1scale's time over the fastest peer's (< 1: l1scale is faster). "
            "glmnet's times are a 20-lam path's (its way of reaching one lam)."
        ),
        "",
        "| data | n x d, K | lam / lam_max | nnz(W*) | target | l1scale | saga | glmnet | ratio |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        for i, target in enumerate(TARGETS):
            key = f"{target:g}"
            head = (
                f"| {row['dataset']} | {row['n']} x {row['d']}, {row['n_classes']} | {row['lam_ratio']:g} | "
                f"{row['nnz_W']} "
                if i == 0
                else "| | | | "
            )
            cells = [
                _s(row["solvers"].get(p, {}).get("time_to", {}).get(key)) for p in ("l1scale", "sklearn_saga", "glmnet")
            ]
            lines.append(
                f"{head}| {target:.0e} | " + " | ".join(cells) + f" | {_r(row['ratio_to_fastest_peer'][key])} |"
            )
    lines += [
        "",
        "P\\* is certified: l1scale's solve at tol 1e-13 (relative duality gap per data set: "
        + ", ".join(f"{r['dataset']} {r['p_star_relative_gap']:.0e}" for r in rows)
        + "). Every ladder fit (tolerance, seconds, suboptimality) is in `multinomial.json`.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".",
        "",
    ]
    Path(path).write_text("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=DATA_DIR)
    parser.add_argument("--out", default=str(RESULTS_DIR))
    parser.add_argument("--fit-timeout", type=float, default=60.0)
    parser.add_argument("--quick", action="store_true", help="wine and digits only, short time limit")
    parser.add_argument("--peers", default="l1scale,sklearn_saga,glmnet")
    args = parser.parse_args(argv)
    peers = args.peers.split(",")
    points = [("wine", 0.02), ("digits", 0.02), ("digits", 0.005), ("splice", 0.02), ("mnist10k", 0.05)]
    if args.quick:
        points, args.fit_timeout = points[:2], min(args.fit_timeout, 20.0)
    started = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - started:7.1f} s] {msg}", flush=True)

    fit_l1scale(*load("wine", args.data_dir)[:2], 0.05, 1e-3)  # compile in the parent: children inherit it
    rows = [run_dataset(name, ratio, peers, args, log) for name, ratio in points]
    meta = {
        "date": utc_now(),
        "command": "python benchmarks/bench_multinomial.py" + (" --quick" if args.quick else ""),
        "machine": machine_info(),
        "versions": package_versions(("numpy", "scipy", "numba", "scikit-learn", "python-glmnet")),
        "seconds": time.perf_counter() - started,
    }
    out = Path(args.out)
    stem = "multinomial_quick" if args.quick else "multinomial"
    (out / f"{stem}.json").write_text(json.dumps(jsonable({"meta": meta, "results": rows}), indent=1))
    write_markdown(out / f"{stem}.md", rows, meta)
    log(f"written {out / stem}.md and .json")


if __name__ == "__main__":
    main()
