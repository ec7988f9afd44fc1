"""Stochastic solvers with their default rates: relative suboptimality after 50 epochs (issue 16).

For every data set in the shared data (rows subsampled to ``--rows``, seed 0; news20 with
``--news20``) and the synthetic text generator, at 0.1 and 0.01 lam_max, with and without
intercept, logistic loss: (P(w) - P*) / P*, P* from ``cd`` at tol 1e-10. Each online solver
runs 50 passes, ``holdout=0`` (every row learned from), stream order (``shuffle=False``):

- before: the fixed default rates of the previous release, given explicitly (truncated
  gradient eta0 = 0.5 with VW's power_t = 0.5; SGD-C eta0 = 0.5, a = 2; SMIDAS eta = 0.1,
  eta_intercept = 0.03, eta / (1 + z) at pass z);
- after: the defaults (``schedule="auto"``: the rate calibrated on the data, decayed
  geometrically across passes).

SCD (unchanged: its per-column curvature bound was already the default) runs 50 epochs.

    python benchmarks/bench_stochastic_defaults.py [--rows 5000] [--news20] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

from _common import DATA_DIR, RESULTS_DIR, repo_on_path, single_thread

single_thread()
repo_on_path()

import numpy as np

SETS = {
    "a9a": ("a9a/a9a.bz2", 123),
    "w8a": ("w8a/w8a.bz2", 300),
    "magic04": ("magic04/magic04.svm.bz2", 10),
    "spambase": ("spambase/spambase.svm.bz2", 57),
    "madelon": ("madelon/madelon.bz2", 500),
    "arcene": ("arcene/arcene.bz2", 10000),
    "splice": ("splice/splice_scale.bz2", 60),
    "mnist10k_3vsrest": ("mnist/mnist10k_3vsrest.bz2", 784),
    "earn": ("reuters21578/modapte_earn_train.svm.bz2", 27901),
    "news20": ("news20/news20_bydate_binary.svm.bz2", 588937),
}
EPOCHS = 50


def load(name, rows, data_dir):
    from sklearn.datasets import load_svmlight_file

    if name == "text":
        from l1scale.data.synthetic import make_sparse_text

        return make_sparse_text(rows, 20000, random_state=0)
    path, d = SETS[name]
    X, y = load_svmlight_file(os.path.join(data_dir, path), n_features=d)
    X, y = X.tocsr(), np.where(y > 0, 1.0, -1.0)
    if X.shape[0] > rows:
        keep = np.sort(np.random.default_rng(0).choice(X.shape[0], rows, replace=False))
        X, y = X[keep], y[keep]
    return X, y


def solvers():
    from l1scale.solvers.scd import StochasticCD
    from l1scale.solvers.sgd import CumulativePenaltySGD
    from l1scale.solvers.smidas import SMIDAS
    from l1scale.solvers.truncated import TruncatedGradient

    kw = {"max_iter": EPOCHS, "holdout": 0}
    return {
        "scd": (None, lambda: StochasticCD(tol=1e-12, max_iter=EPOCHS)),
        "sgd_cumulative": (lambda: CumulativePenaltySGD(eta0=0.5, **kw), lambda: CumulativePenaltySGD(**kw)),
        "smidas": (lambda: SMIDAS(eta=0.1, **kw), lambda: SMIDAS(**kw)),
        "truncated_gradient": (lambda: TruncatedGradient(eta0=0.5, **kw), lambda: TruncatedGradient(**kw)),
    }


def suboptimality(make, X, y, problem, p_star, fit_intercept):
    from l1scale.data.stream import Stream
    from l1scale.exceptions import DivergenceError
    from l1scale.problems import StreamProblem

    solver = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if solver.data_access == "stream":
                stream = StreamProblem(Stream.from_arrays(X, y), "logistic", problem.lam, fit_intercept=fit_intercept)
                res = solver.solve(stream)
            else:
                res = solver.solve(problem)
        except DivergenceError:
            return float("inf")
    return float((problem.objective(res.coef, res.intercept) - p_star) / p_star)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--news20", action="store_true", help="include news20 (slow: d = 588,937)")
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--out", default=str(RESULTS_DIR))
    args = ap.parse_args(argv)
    from l1scale.problems import Problem
    from l1scale.solvers.cd import CoordinateDescent

    names = [n for n in SETS if n != "news20" or args.news20] + ["text"]
    rows = []
    for name in names:
        X, y = load(name, args.rows, args.data_dir)
        for ratio in (0.1, 0.01):
            for fit_intercept in (True, False):
                problem = Problem(X, y, "logistic", lam_ratio=ratio, fit_intercept=fit_intercept)
                p_star = CoordinateDescent(tol=1e-10, max_iter=1000).solve(problem).objective
                for solver, (before, after) in solvers().items():
                    t0 = time.perf_counter()
                    row = {
                        "data": name,
                        "n": int(X.shape[0]),
                        "lam_ratio": ratio,
                        "fit_intercept": fit_intercept,
                        "solver": solver,
                        "before": None
                        if before is None
                        else suboptimality(before, X, y, problem, p_star, fit_intercept),
                        "after": suboptimality(after, X, y, problem, p_star, fit_intercept),
                    }
                    row["seconds"] = time.perf_counter() - t0
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "stochastic_defaults.json"), "w") as f:
        json.dump({"rows": rows, "epochs": EPOCHS, "max_rows": args.rows}, f, indent=1)
    with open(os.path.join(args.out, "stochastic_defaults.md"), "w") as f:
        f.write(table(rows, args.rows))


def table(rows, max_rows):
    fmt = lambda v: "-" if v is None else ("diverged" if not np.isfinite(v) else f"{max(v, 0.0):.1e}")
    out = [
        "# Stochastic solvers with default rates (issue 16)",
        "",
        (
            f"Relative suboptimality (P - P*) / P* after {EPOCHS} epochs (passes), logistic loss, rows subsampled to "
            f"{max_rows} (seed 0), P* from `cd` at tol 1e-10. before: the previous fixed default rates; after: "
            '`schedule="auto"` (rate calibrated on the data). Target: 1e-3. Generated by '
            "`benchmarks/bench_stochastic_defaults.py`."
        ),
        "",
        "| data | lam / lam_max | intercept | solver | before | after |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        out.append(
            f"| {r['data']} | {r['lam_ratio']} | {'yes' if r['fit_intercept'] else 'no'} | {r['solver']} | "
            f"{fmt(r['before'])} | {fmt(r['after'])} |"
        )
    hit = sum(1 for r in rows if r["after"] <= 1e-3)
    out += ["", f"After: {hit} of {len(rows)} runs within 1e-3.", ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
