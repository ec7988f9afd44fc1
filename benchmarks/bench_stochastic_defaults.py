"""Stochastic solvers with their default rates: relative suboptimality after 50 epochs (issue 16).

For every data set in the shared data (rows subsampled to ``--rows``, seed 0; news20 with
``--news20``) and the synthetic text generator, at 0.1 and 0.01 lam_max, with and without
intercept, logistic loss: (P(w) - P*) / P*, P* from ``cd`` at tol 1e-10. Each online solver
runs 50 passes, ``holdout=0`` (every row learned from), stream order (``shuffle=False``):

- before: ``schedule="auto"`` as first released (one rate calibrated on the data for every
  feature, decayed geometrically across passes), i.e. ``precondition=False``;
- after: the defaults (the same calibration with per-feature rates, D_j = 1 / RMS of feature j's
  nonzero values squared: diagonal preconditioning).

SCD runs 50 epochs: before, Algorithm 2's step on the per-column curvature bound
(``curvature="column"``, the first default); after, the default safeguarded Newton step on the
coordinate's own curvature (``curvature="newton"``).

    python benchmarks/bench_stochastic_defaults.py [--rows 3000] [--news20] [--out benchmarks/results]
    python benchmarks/bench_stochastic_defaults.py --solvers scd --merge   # rerun SCD's rows only
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
        "scd": (
            lambda: StochasticCD(tol=1e-12, max_iter=EPOCHS, curvature="column"),
            lambda: StochasticCD(tol=1e-12, max_iter=EPOCHS),
        ),
        "sgd_cumulative": (lambda: CumulativePenaltySGD(precondition=False, **kw), lambda: CumulativePenaltySGD(**kw)),
        "smidas": (lambda: SMIDAS(precondition=False, **kw), lambda: SMIDAS(**kw)),
        "truncated_gradient": (
            lambda: TruncatedGradient(precondition=False, **kw),
            lambda: TruncatedGradient(**kw),
        ),
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
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--news20", action="store_true", help="include news20 (slow: d = 588,937)")
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--out", default=str(RESULTS_DIR))
    ap.add_argument("--solvers", help="comma-separated subset of the solvers (default: all)")
    ap.add_argument("--merge", action="store_true", help="keep the other solvers' rows of the existing results")
    args = ap.parse_args(argv)
    chosen = solvers() if not args.solvers else {k: v for k, v in solvers().items() if k in args.solvers.split(",")}
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
                for solver, (before, after) in chosen.items():
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
    path = os.path.join(args.out, "stochastic_defaults.json")
    if args.merge and os.path.exists(path):
        with open(path) as f:
            kept = [r for r in json.load(f)["rows"] if r["solver"] not in chosen]
        order = {name: k for k, name in enumerate(solvers())}
        key = lambda r: (names.index(r["data"]), -r["lam_ratio"], not r["fit_intercept"], order[r["solver"]])
        rows = sorted(kept + rows, key=key)
    with open(path, "w") as f:
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
            f'{max_rows} (seed 0), P* from `cd` at tol 1e-10. Online solvers, before: `schedule="auto"` as first '
            "released (one calibrated rate for all features; `precondition=False`); after: the defaults (per-feature "
            'rates). SCD, before: `curvature="column"` (the bound-based step); after: the default safeguarded Newton '
            "step. "
            "Target: 1e-3. Generated by `benchmarks/bench_stochastic_defaults.py`."
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
    out += ["", "Runs within 1e-3, per solver:", "", "| solver | before | after |", "| --- | --- | --- |"]
    for name in dict.fromkeys(r["solver"] for r in rows):
        mine = [r for r in rows if r["solver"] == name]
        before = "-" if mine[0]["before"] is None else sum(1 for r in mine if r["before"] <= 1e-3)
        out.append(
            f"| {name} | {before} of {len(mine)} | {sum(1 for r in mine if r['after'] <= 1e-3)} of {len(mine)} |"
        )
    online = [r for r in rows if r["before"] is not None and r["solver"] != "scd"]
    hit_b = sum(1 for r in online if r["before"] <= 1e-3)
    hit_a = sum(1 for r in online if r["after"] <= 1e-3)
    out += ["", f"Online solvers: {hit_b} of {len(online)} before, {hit_a} of {len(online)} after.", "", NOTES]
    return "\n".join(out)


NOTES = """## What changed, and what still misses

The per-feature rates (D_j = 1 / RMS of feature j's nonzero values, squared; the L1 step scaled alike)
fix the unscaled UCI sets without intercept (spambase 0 -> 6 of 6, magic04 0 -> 2) and spambase with
intercept (0 -> 3 of 6); binary data (a9a, w8a, splice) have D = 1 and are unchanged; the before column
is `precondition=False`, which reproduces the first `"auto"` bit for bit. Alternatives measured on
spambase, magic04, a9a, w8a, mnist and earn and dropped: 1 / max_i x_ij^2 (VW's normalised updates:
spambase with intercept stays at 3e-2-1e-1), 1 / mean_i x_ij^2 over all rows (rare features get huge
rates: earn's truncated gradient 0.4-0.9), choosing between one rate and per-feature rates by the
calibration sample's one-epoch objective (picked the worse one on magic04), and a final rate of
1/100 or 1/10,000 instead of 1/1000 of the calibrated one (no consistent gain).

Still missing the target:

- intercept + features of large mean (magic04, mnist, w8a, madelon with intercept): the unpenalised
  intercept and mostly-positive features share one ill-conditioned direction that no diagonal rate
  reaches. Centring the features by hand (dense copies) moves magic04 with intercept from 7.7e-3 to
  1.3e-5 (SGD-C, 0.1 lam_max) and from 1.9e-2 to 9e-4 (truncated gradient); on w8a and mnist it helps
  only partly (7e-2 -> 1e-2). Centring inside the stream solvers makes each step dense
  (O(d), or O(number of frequent features) if only those are centred): not done.
- small lam (w8a, mnist, text at 0.01 lam_max): 1e-2-1e-1 after 50 decaying passes.
- madelon, arcene (dense, correlated; arcene has n = 100): 1e-2-1e-1 for every online solver.
- truncated gradient on tf-idf text (earn): the rare words' large values get small rates; 0.1 lam_max
  with intercept goes from 1.2e-4 to 1.0e-3, 0.01 lam_max from 4.5e-3 to 1.1e-2.

Iterate averaging (issue item 2) was not tried for lack of time.

SCD: the default step is now a safeguarded Newton step on the coordinate's own curvature
sum_i c_i loss''(z_i) x_ij^2 (+ lam2), halved until Armijo's condition holds and never shorter than
Algorithm 2's step on the bound, which is the fallback. Where the loss is far flatter than its bound
(tf-idf text, well-separated rows, small lam) the bound's steps are orders of magnitude too short:
earn at 0.01 lam_max goes from 9e-3 to 3e-10 (intercept), w8a from 1e-1 to 1.5e-4, mnist 0.1 from
5e-3 to 9e-5; 22 -> 30 of 40 runs within 1e-3. What still misses is coupling, not curvature:
a9a at 0.01 lam_max (one-hot blocks beside the intercept: 4-5e-3), madelon (dense, 500 correlated
columns: 2e-3 to 7e-2), arcene at 0.01 (n = 100, d = 10,000: 1e-2) and mnist at 0.01 with
intercept (4.5e-3). Single-coordinate steps cannot move along such directions quickly; the batch
solver `cd` (Newton steps on working sets) is the one for them.
"""


if __name__ == "__main__":
    sys.exit(main())
