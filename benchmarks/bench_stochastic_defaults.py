"""Stochastic solvers with their default rates: relative suboptimality after 50 epochs (issue 16).

For every data set in the shared data (rows subsampled to ``--rows``, seed 0; news20 with
``--news20``) and the synthetic text generator at three sizes (1,000 x 5,000, ``--rows`` x 20,000, 10,000 x
100,000: ``TEXT_SIZES``), at 0.1 and 0.01 lam_max, with and without
intercept, logistic loss: (P(w) - P*) / P*, P* from ``cd`` at tol 1e-10. Each online solver
runs 50 passes, ``holdout=0`` (every row learned from):

- before: the defaults before issue 16's second round: per-feature rates (D_j = 1 / RMS of
  feature j's nonzero values squared), the calibrated rate decayed geometrically to 1/1000 of
  itself, rows in stream order, no centred columns (``shuffle=False``, ``AUTO_RATE_FACTOR = 1``,
  ``AUTO_FINAL_FRACTION = 1000``, ``CENTRE_RATIO`` beyond any column's);
- after: the defaults (rows shuffled every pass, the first pass one octave above the calibrated
  rate, decaying to 1/300 of it, dense columns far from zero learned centred).

DetCD runs 50 epochs (d greedy steps each, every one a full X^T r) on the sets of at most
``DETCD_MAX_FEATURES`` features: before, Algorithm 2's step on the chosen coordinate
(``curvature="column"``, the first default); after, the default safeguarded Newton step on it. SCD runs 50 epochs: before, Algorithm 2 as first defaulted (uniform draws, ``sampling="uniform"``,
and the step on the per-column curvature bound, ``curvature="column"``); after, the defaults: the
safeguarded Newton step on the coordinate's own curvature (``curvature="newton"``) and active
sampling (``sampling="active"``: each epoch draws from the coordinates that can move at its start,
for as many stored values as two passes, after the gradient pass that picks them).

    python benchmarks/bench_stochastic_defaults.py [--rows 3000] [--news20] [--out benchmarks/results]
    python benchmarks/bench_stochastic_defaults.py --solvers scd --merge   # rerun SCD's rows only
    python benchmarks/bench_stochastic_defaults.py --solvers smidas --sets arcene --merge   # and one set's
    python benchmarks/bench_stochastic_defaults.py --solvers sklearn_saga,sklearn_sgd --merge   # the peers only
    python benchmarks/bench_stochastic_defaults.py --render   # rewrite the page from the JSON (new notes)

The peers run on the same rows, each for the same 50 epochs and minimising the same objective
(:data:`PEERS`): scikit-learn's SAGA (``LogisticRegression(l1_ratio=1, solver="saga", C=1 / (n lam))``,
Defazio et al.'s variance-reduced proximal SGD, the stochastic L1 solver scikit-learn recommends
for large data) and ``SGDClassifier(loss="log_loss", penalty="l1", alpha=lam)`` (plain SGD with
the truncated cumulative penalty and its ``"optimal"`` rate), both with their default rates,
``max_iter=50`` and the stopping test off (``tol`` 0 / None) so that both run all 50 epochs.
Vowpal Wabbit is not among them: its ``--l1`` penalises the constant and truncates by its own
approximation, so its weights do not minimise this objective (``bench_vw_throughput.py`` compares
it on throughput and test loss instead).
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
# The synthetic text generator at three sizes: (rows, features); None = --rows.
TEXT_SIZES = {"text_1k": (1000, 5000), "text": (None, 20000), "text_10k": (10000, 100000)}


def load(name, rows, data_dir):
    from sklearn.datasets import load_svmlight_file

    if name in TEXT_SIZES:
        from l1scale.data.synthetic import make_sparse_text

        n, d = TEXT_SIZES[name]
        return make_sparse_text(rows if n is None else n, d, random_state=0)
    path, d = SETS[name]
    X, y = load_svmlight_file(os.path.join(data_dir, path), n_features=d)
    X, y = X.tocsr(), np.where(y > 0, 1.0, -1.0)
    if X.shape[0] > rows:
        keep = np.sort(np.random.default_rng(0).choice(X.shape[0], rows, replace=False))
        X, y = X[keep], y[keep]
    return X, y


def settings(names, rows, data_dir):
    """Every (name, X, y, lam ratio, fit_intercept, problem, P*) of the page's grid over the data sets
    ``names``: 0.1 and 0.01 lam_max, with and without intercept, logistic loss, P* from ``cd`` at
    tol 1e-10 (``bench_estimator_online_defaults.py`` runs the same grid)."""
    from l1scale.problems import Problem
    from l1scale.solvers.cd import CoordinateDescent

    for name in names:
        X, y = load(name, rows, data_dir)
        for ratio in (0.1, 0.01):
            for fit_intercept in (True, False):
                problem = Problem(X, y, "logistic", lam_ratio=ratio, fit_intercept=fit_intercept)
                p_star = CoordinateDescent(tol=1e-10, max_iter=1000).solve(problem).objective
                yield name, X, y, ratio, fit_intercept, problem, p_star


# DetCD's epoch is d greedy steps, each a full X^T r: it runs where d is at most this (an epoch on
# arcene, earn or the text sets would be 5,000-100,000 passes over the data).
DETCD_MAX_FEATURES = 1000


def solvers():
    from l1scale.solvers.scd import GreedyCD, StochasticCD
    from l1scale.solvers.sgd import CumulativePenaltySGD
    from l1scale.solvers.smidas import SMIDAS
    from l1scale.solvers.truncated import TruncatedGradient

    kw = {"max_iter": EPOCHS, "holdout": 0}

    def previous(cls):
        """The defaults before the shuffled passes and the octave above the calibrated rate."""

        def make():
            solver = cls(shuffle=False, **kw)
            solver.solve = _with_previous_rates(solver.solve)
            return solver

        return make

    return {
        "scd": (
            lambda: StochasticCD(tol=1e-12, max_iter=EPOCHS, curvature="column", sampling="uniform"),
            lambda: StochasticCD(tol=1e-12, max_iter=EPOCHS),
        ),
        "detcd": (
            lambda: GreedyCD(tol=1e-12, max_iter=EPOCHS, curvature="column"),
            lambda: GreedyCD(tol=1e-12, max_iter=EPOCHS),
        ),
        "sgd_cumulative": (previous(CumulativePenaltySGD), lambda: CumulativePenaltySGD(**kw)),
        "smidas": (previous(SMIDAS), lambda: SMIDAS(**kw)),
        "truncated_gradient": (previous(TruncatedGradient), lambda: TruncatedGradient(**kw)),
    }


def _sklearn_saga(X, y, lam, fit_intercept):
    """scikit-learn's SAGA for 50 epochs at its default step (1 / (4 max_i ||x_i||^2 + ...))."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(
        l1_ratio=1.0,
        C=1.0 / (X.shape[0] * lam),
        solver="saga",
        fit_intercept=fit_intercept,
        max_iter=EPOCHS,
        tol=0.0,
        random_state=0,
    ).fit(_int32_indices(X), y)
    return model.coef_.ravel(), float(model.intercept_[0]) if fit_intercept else 0.0


def _sklearn_sgd(X, y, lam, fit_intercept):
    """scikit-learn's SGDClassifier, L1, for 50 epochs at its default ("optimal") rate."""
    from sklearn.linear_model import SGDClassifier

    model = SGDClassifier(
        loss="log_loss",
        penalty="l1",
        alpha=lam,
        fit_intercept=fit_intercept,
        max_iter=EPOCHS,
        tol=None,
        random_state=0,
    ).fit(_int32_indices(X), y)
    return model.coef_.ravel(), float(model.intercept_[0]) if fit_intercept else 0.0


def _int32_indices(X):
    """scikit-learn's SAGA takes sparse matrices with 32-bit indices only."""
    if hasattr(X, "indices"):
        X = X.copy()
        X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    return X


# The peers of the page: name -> fit(X, y, lam, fit_intercept) -> (coef, intercept).
PEERS = {"sklearn_saga": _sklearn_saga, "sklearn_sgd": _sklearn_sgd}


def peer_suboptimality(fit, X, y, problem, p_star, fit_intercept):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coef, intercept = fit(X, y, problem.lam, fit_intercept)
    value = problem.objective(coef, intercept)
    return float((value - p_star) / p_star) if np.isfinite(value) else float("inf")


def _with_previous_rates(solve):
    """``solve`` with online_base's AUTO_RATE_FACTOR = 1 and AUTO_FINAL_FRACTION = 1000 (the
    rates of the first per-feature defaults), no centred columns (CENTRE_RATIO beyond any
    column's), no calibration on the loss alone (LOSS_ALONE_FALLBACK) and SMIDAS's p the paper's
    2 ln d (smidas.AUTO_P beyond it), restored afterwards."""
    from l1scale.solvers import online_base, smidas

    patched = (
        (online_base, "AUTO_RATE_FACTOR", 1.0),
        (online_base, "AUTO_FINAL_FRACTION", 1000.0),
        (online_base, "CENTRE_RATIO", 1e150),
        (online_base, "LOSS_ALONE_FALLBACK", False),
        (smidas, "AUTO_P", np.inf),
    )

    def run(*args, **kwargs):
        saved = [getattr(module, name) for module, name, _ in patched]
        for module, name, value in patched:
            setattr(module, name, value)
        try:
            return solve(*args, **kwargs)
        finally:
            for (module, name, _), value in zip(patched, saved, strict=True):
                setattr(module, name, value)

    return run


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
    ap.add_argument("--sets", help="comma-separated subset of the data sets (default: all)")
    ap.add_argument(
        "--merge", action="store_true", help="keep the other solvers' (and data sets') rows of the existing results"
    )
    ap.add_argument("--render", action="store_true", help="only rewrite the .md page from the existing JSON")
    args = ap.parse_args(argv)
    if args.render:
        with open(os.path.join(args.out, "stochastic_defaults.json")) as f:
            saved = json.load(f)
        with open(os.path.join(args.out, "stochastic_defaults.md"), "w") as f:
            f.write(table(saved["rows"], saved["max_rows"]))
        return
    every = {**solvers(), **PEERS}
    chosen = every if not args.solvers else {k: v for k, v in every.items() if k in args.solvers.split(",")}

    names = [n for n in SETS if n != "news20" or args.news20] + list(TEXT_SIZES)
    run = names if not args.sets else [n for n in names if n in args.sets.split(",")]
    rows = []
    for name, X, y, ratio, fit_intercept, problem, p_star in settings(run, args.rows, args.data_dir):
        for solver, how in chosen.items():
            if solver == "detcd" and X.shape[1] > DETCD_MAX_FEATURES:
                continue
            t0 = time.perf_counter()
            row = {"data": name, "n": int(X.shape[0]), "lam_ratio": ratio, "fit_intercept": fit_intercept}
            if solver in PEERS:
                row |= {"solver": solver, "before": None}
                row["after"] = peer_suboptimality(how, X, y, problem, p_star, fit_intercept)
            else:
                before, after = how
                row["solver"] = solver
                row["before"] = None if before is None else suboptimality(before, X, y, problem, p_star, fit_intercept)
                row["after"] = suboptimality(after, X, y, problem, p_star, fit_intercept)
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
            print(json.dumps(row), flush=True)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "stochastic_defaults.json")
    if args.merge and os.path.exists(path):
        with open(path) as f:
            kept = [r for r in json.load(f)["rows"] if r["solver"] not in chosen or r["data"] not in run]
        order = {name: k for k, name in enumerate(every)}
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
            f"{max_rows} (seed 0), P* from `cd` at tol 1e-10. Online solvers, before: the previous defaults "
            "(per-feature rates, the calibrated rate decaying to 1/1000 of itself, rows in stream order); after: "
            "the defaults (rows shuffled every pass, the first pass one octave above the calibrated rate, decaying "
            "to 1/300 of it; dense columns whose |mean| exceeds 5 standard deviations learned centred, with an "
            "intercept; SMIDAS's link p = min(2 ln d, 3), where before it was the paper's 2 ln d). SCD, before: "
            '`curvature="column", sampling="uniform"` (Algorithm 2: uniform draws, '
            "the bound-based step); after: the defaults (the safeguarded Newton step, and active sampling: each "
            "epoch draws from the coordinates that can move at its start, for two passes' worth of stored values "
            "after the gradient pass that picks them; columns whose |mean| exceeds their standard deviation learned "
            "centred with an intercept, and moved in offset-free pairs without one). DetCD, on the sets of at most "
            f'{DETCD_MAX_FEATURES} features (its epoch is d full gradients): before, `curvature="column"` (the '
            "bound's step on the chosen coordinate); after, the default safeguarded Newton step on it, each epoch "
            "extrapolated along its move while that lowers P. "
            "Peers (no before column), on the same rows for the same 50 epochs, the same objective, their default "
            'rates: `sklearn_saga`, scikit-learn\'s `LogisticRegression(l1_ratio=1, solver="saga")`, and '
            '`sklearn_sgd`, `SGDClassifier(loss="log_loss", penalty="l1")`, both with the stopping test off. '
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
    online = [r for r in rows if r["before"] is not None and r["solver"] not in ("scd", "detcd")]
    hit_b = sum(1 for r in online if r["before"] <= 1e-3)
    hit_a = sum(1 for r in online if r["after"] <= 1e-3)
    out += ["", f"Online solvers: {hit_b} of {len(online)} before, {hit_a} of {len(online)} after.", "", NOTES]
    return "\n".join(out)


NOTES = """## Beside scikit-learn's stochastic L1 solvers

Both peers minimise this page's objective (C = 1 / (n lam) for SAGA, alpha = lam for SGDClassifier) for the
same 50 epochs from w = 0 at their default rates, with their stopping tests off (`tol` 0 / None), so that
each row compares what a user gets from each library's defaults. Within 1e-3: SAGA 23 of 48 rows,
SGDClassifier 4, against SGD-C 33, SMIDAS 32, truncated gradient 26 and SCD 48.

- SAGA (Defazio et al.'s variance-reduced proximal SGD, scikit-learn's stochastic L1 solver for large data)
  converges linearly where the problem is well conditioned and there is no intercept: there it ends at
  1e-5-1e-15 where our online solvers end at 1e-4-1e-7, both within the target. With an intercept it meets
  the target only on earn, the text sets at 0.1 lam_max (and the largest at 0.01) and a9a at 0.01; it misses
  on magic04 and spambase (0.09-0.15), w8a (0.16, 0.59), mnist (0.12, 0.28), splice (2.6e-3, 1.7e-2),
  madelon (3.5e-3, 5.6e-2) and a9a at 0.1 (1.3e-3). Our online defaults meet it on those rows but w8a and
  mnist at 0.01 (all three), w8a at 0.1 (SGD-C 1.7e-3, truncated gradient 2.4e-3), mnist at 0.1 (SMIDAS
  3.2e-3, truncated gradient 2.0e-3) and madelon at 0.1 (truncated gradient 1.5e-3). Its one step, 1 / (3 L) with L from the
  largest row, is far too short for the small columns of the unscaled sets, which our per-feature rates
  take care of, and the intercept moves along the columns' means, which our centred columns remove.
- Rows that SAGA meets and our online defaults miss: text 10,000 x 100,000 at 0.01 lam_max (SAGA 7.3e-4 and
  9.4e-5 with and without intercept; SGD-C 1.5e-3, SMIDAS 2.5e-3, truncated gradient 3.8e-3), text 1,000 x
  5,000 at 0.1 (SMIDAS without intercept, truncated gradient) and earn at 0.01 (truncated gradient). SCD
  missed only a9a at 0.01 with intercept where SAGA meets it (1.2e-3 against 4.4e-4), and now meets it
  too (6.4e-4, its frequent columns centred).
- Rows that neither meets: arcene, madelon at 0.01 and without intercept at 0.1, w8a and mnist at 0.01 with
  intercept, the text sets at 0.01 but the largest. SAGA ends there 5.6e-2-1.3 (w8a 0.59, mnist 0.28,
  madelon 5.6e-2, arcene 0.07-1.3, text 6.6e-3-0.15). Variance reduction removes the gradient noise, and what is
  left on these rows is conditioning: a preconditioned SAGA written for the measurement (our per-feature rates
  D_j, step c / L over the rescaled rows, c = 1/3, 1, 3, 50 epochs) did not reach 1e-3 on any of them either
  (best of the three c: w8a at 0.01 with intercept 4.6e-2, mnist 7.6e-3, madelon at 0.01 without 3.8e-2,
  arcene at 0.01 0.60, text at 0.01 1.2e-2, text 1,000 x 5,000 6.5e-2), while it did lift mnist at 0.1 with
  intercept to 1.2e-5 and earn at 0.01 to 1e-9.
- The online defaults' two rate constants, measured again over all 48 rows (the text sizes included) for SGD-C
  and truncated gradient, rows within 1e-3 for (first-pass factor, final fraction): (2, 300), the defaults, 33 and
  26; (2, 1000) 31 and 27; (3, 300) and (4, 300) 32 and 21; (2, 100) 33 and 18. No pair meets more rows for
  both, and none reaches the rows SAGA meets and they miss (text 10,000 x 100,000 at 0.01 lam_max).
- More epochs, SGD-C's 15 missed rows with the same defaults (the rate decaying to 1/300 over however many
  passes are asked), suboptimality after 50 / 200 / 500 passes: w8a with intercept at 0.1 lam_max 1.7e-3 / 8.1e-5
  / 1.9e-5, at 0.01 3.0e-2 / 2.9e-3 / 6.4e-4; mnist with intercept at 0.01 7.4e-2 / 8.6e-3 / 6.6e-4; text
  3,000 x 20,000 at 0.01 2.2e-2 / 2.9e-3 / 5.4e-4 (1.9e-2 / 2.4e-3 / 4.7e-4 without intercept); text 10,000 x
  100,000 at 0.01 1.5e-3 / 2.6e-4 / 1.2e-4 (9.8e-5 without); text 1,000 x 5,000 at 0.01 9.9e-2 / 2.5e-2 / 7.0e-3
  (3.8e-3 without); madelon without intercept at 0.1 3.2e-2 / 2.9e-2 / 2.4e-2, at 0.01 0.15 / 0.15 / 0.14;
  arcene 0.18-1.0 at 50 passes, 3.3e-2-0.44 at 500. So 7 of the 15 are slow rather than stuck (500 passes of
  10,000 rows took 7 s), and madelon without intercept and arcene are where neither more passes nor variance
  reduction gets a first-order stochastic method to 1e-3.
- SGDClassifier's "optimal" rate, 1 / (alpha (t + t0)), is set by the penalty: at these lam it is large
  enough to diverge on the dense unscaled sets (madelon, arcene, mnist with intercept: objectives 10-10^6 times
  the optimum) and decays too fast elsewhere (1e-2-1e-1 on most rows); 4 rows meet the target.

## What changed, and what still misses

SCD, this round (2026-12-01, late): **pair moves on columns of large offset without an intercept**
(`scd._pair_step`, under the default Newton steps; `StochasticCD.pair_steps`). Without an intercept a column whose
|mean| exceeds its standard deviation cannot be learned centred, and every step on it shifts all the margins by
about its mean: single-coordinate steps then zig-zag along the valley of the columns' shared offset (madelon: 500
columns of mean about 480, spread about 25). After each step on such a feature j, a partner k is drawn uniformly
from the active features of large offset and the pair moves along w_j += t, w_k -= rho t, rho = mean_j / mean_k,
which leaves sum_j mean_j w_j, the margins' common shift, where it is: the margins move along x_j - rho x_k, whose
offsets cancel, at t from the quadratic model of the loss along it plus the exact penalty (piecewise, kinks where
either weight reaches zero), halved until Armijo's condition holds (no move where none does). The pair's reads
count against the epoch's two passes. madelon at 0.01 lam_max without intercept 6.9e-2 -> 6.3e-5 (at 0.1
1.1e-5 -> 0), arcene at 0.01 without 1.1e-4 -> 5.7e-7, magic04 at 0.01 without 8.8e-11 -> 4e-16; a9a at 0.01
without, whose frequent one-hot levels qualify, 2.0e-4 -> 4.2e-4 (a stricter ratio of 5 for the pairs kept a9a at
2.0e-4 but lost arcene's gain, 8.9e-5, and magic04's); on the text sets without intercept the words set in more
than half the rows qualify (11 of 5,000 at 1,000 x 5,000): at 0.01 lam_max 3.3e-4 -> 6.7e-5 (1,000 x 5,000),
5.6e-5 -> 7.7e-5 (3,000 x 20,000), 1.9e-8 -> 2.3e-9 (10,000 x 100,000); with an intercept, without such columns and under
Algorithm 2's steps nothing changes, bit for bit. SCD 47 -> 48 of 48.

SMIDAS, this round: **the link's p is min(2 ln d, max(3, 2 ln(k / n))) under calibrated rates**, k the
mean nonzeros of a row and n the rows (`smidas.auto_p`; the paper's 2 ln d stays with `schedule="paper"`, a
given `eta` or `p=`, and is the "before" column here). With p = 2 ln d (17 at d = 5,000, 20.5 on earn),
w_j ~ |theta_j|^(p-1) moves only the largest few coordinates of theta, so a solution with tens to hundreds of
weights is learned slowly. For rows of k nonzeros and a solution of s, the p-norm bound (p - 1) ||x||_p^2
||w*||_q^2 is least near p = 2 ln(k / s); s is unknown before the solve, but at most n, hence the floor
2 ln(k / n), which only wide dense data with few rows reach (arcene: k = 5,400, n = 100, p = 8; every other
set here takes 3). 29 -> 32 of 48 within 1e-3 (w8a at 0.1 with intercept 2.4e-2 -> 9.1e-4, earn at 0.01
without 2.3e-3 -> 7.7e-5, text_1k at 0.1 with intercept 2.8e-2 -> 8.0e-4), and the misses on sparse rows fell
10-35x: text at 0.01 lam_max 0.47 -> 3.2e-2, text_10k at 0.01 8.7e-2 -> 2.5e-3, text_1k at 0.01 1.7 -> 0.12,
w8a at 0.01 with intercept 0.43 -> 3.6e-2. Lost (misses before and after): arcene at 0.1 lam_max 2.2e-2 ->
4.1e-2 with intercept, 1.1e-2 -> 2.2e-2 without (at 0.01 it gained, 0.36 -> 0.30 and 0.47 -> 0.29); madelon
without intercept 2.0e-2 -> 3.1e-2 and 0.12 -> 0.14; mnist at 0.1 with intercept 2.7e-3 -> 3.2e-3. Measured
first over every setting, 50 passes, p given: 3 and 4 were best on the sparse sets (4: text at 0.01 6.8e-2
against 3.2e-2 for 3, w8a at 0.01 with intercept 1.9e-2 against 3.6e-2); 6 lay between them and 2 ln d; p = 2
(the identity link: truncated SGD) did worse than 3-4 on most (text_1k at 0.1 3.1e-3, earn at 0.01 without
intercept 2.2e-3); on arcene p = 3 gave 0.15, 7.2e-2, 0.75 and 0.58, p = 8 the values above. Rules from the
rows alone (the paper's argument with a row's nonzeros, or its participation ratio ||x||_2^2 / ||x||_inf^2, in
place of d: p = 2 ln k) give 5-9 on the sparse sets, where 3-4 measured better: those ignore the solution's
support, which at these lam is comparable to a row's nonzeros.

Online solvers, the round before: **a calibration that says nothing is done again on the loss alone.** When no
rate's trial epoch ends below the sample objective it started from, Bottou's search would keep the smallest
rate it tried; unless w = 0 is optimal on the sample (lam >= lam_max) it is then repeated without the L1 penalty (in the trials, truncated gradient's gravity
included, and in their objective). Truncated gradient keeps no memory of its shrinks, so where the gradient
noise dwarfs lam (madelon's dense centred columns at 0.1 lam_max: |x_ij g| 10-50 against lam 0.85) one
epoch from w = 0 leaves dust whose penalty puts every rate above the zero model: it took 2e-7 and stayed at
the zero model for 50 passes (3.5e-2); now 6.4e-3 and 1.5e-3. Always calibrating on the loss alone, measured
first, lost 9 of truncated gradient's 26 rows within 1e-3 (earn, w8a, the text sets at 0.1: the penalised
objective keeps the rate down where the noise would leave dust).

DetCD, this round (2026-12-01): **extrapolated epochs** (`scd._extrapolated`, under its default Newton
steps). After each epoch the iterate moves on along that epoch's move, v + t (v - v_start) with its margins, at
the largest t of 1, 2, 4, ... 64 (or up to where a duplicated weight reaches zero) that keeps lowering P: the loss
at the moved margins plus the L1 term, linear in v >= 0, O(n + d) a trial and no pass over X; where none lowers
P nothing moves, so no epoch gains less than before. On nearly collinear columns single-coordinate steps zig-zag
along a narrow valley and an epoch's move points along it: madelon at 0.01 lam_max without intercept (500
columns of mean about 480, which centring would make another problem without an intercept) 2.1e-2 -> 4.7e-4,
DetCD 27 -> 28 of 28; its other 27 rows were at rounding level and are. SCD keeps its epochs as they are: its
active epochs' moves (two passes' worth of random draws) extrapolated so left madelon at 0.01 without intercept
at 6.8e-2 (6.9e-2 without; extrapolating the signed weights instead of the duplicated ones, 3.9e-2), though
they took its other madelon rows from 1e-5-7e-6 to 1e-7; SCD stays at 47 of 48.

SCD and DetCD, this round (2026-11-30): **more columns centred**. They now centre a column whose |mean|
exceeds its standard deviation (`scd.CENTRE_RATIO` = 1; a binary column set in more than half the rows,
whose centred copy then stores at most twice its values), where they shared the online solvers' 5 (at 1 the
online solvers lost a9a and magic04). a9a's one-hot blocks sum to the intercept's column, and their
frequent levels (13 of 123 columns) centred take most of that coupling away: SCD on a9a at 0.01 lam_max
with intercept 1.2e-3 -> 6.4e-4; arcene at 0.01 with intercept 1.2e-4 -> 1.0e-5, mnist at 0.01 1.7e-4 ->
5.7e-5, text 1,000 x 5,000 at 0.01 2.7e-4 -> 2.8e-5; no row worse. The epochs read up to 15% more
values (the centred columns are stored whole). SCD 46 -> 47 of 48; DetCD stays at 27 of 28 (it reaches
1e-12 on the rows it met, 5-6x sooner on madelon and magic04 at 0.1, up to 14% later on mnist). What still
misses: madelon at 0.01 without intercept (SCD 6.9e-2, DetCD 2.1e-2), where centring would change the
problem.

SCD and DetCD, the round before: **centred columns**, as the online solvers had them the round before. Under
the default Newton steps (`curvature="newton"`), with an intercept, the columns whose |mean| exceeds 5
standard deviations (`problems.memory.centring_offsets`, the same criterion; c-weighted means) are
learned as x_ij - mean_j, the intercept absorbing mean . w: the same problem (the same margins, and
the same dual: sum_i c_i u_i = 0), without the coupling that makes every step on such a column
shift all the margins by about its mean, which the intercept must then take back. madelon with
intercept: SCD at 0.1 lam_max 3.6e-5 -> 0 (to rounding), at 0.01 6.0e-2 -> 2.6e-5; DetCD at 0.01
2.1e-2 -> 5.1e-9. The rows where a few columns qualify moved within the target (arcene at 0.01
with intercept 9.7e-5 -> 1.2e-4, text at 0.01 with intercept 1.1e-4 -> 4.2e-4, text_10k 3.1e-8 ->
6.8e-7). SCD 45 -> 46 of 48, DetCD 26 -> 27 of 28. Algorithm 2's steps (`curvature="column"` or
`"paper"`, the Figure 1 reproduction) keep the raw columns. What still misses: SCD on a9a at 0.01
with intercept (1.2e-3; one-hot blocks beside the intercept) and madelon at 0.01 without intercept
(SCD 6.9e-2, DetCD 2.1e-2), where centring would change the problem.

SCD, two rounds before: **active sampling** (`sampling="active"`, the default). Each epoch starts from the
gradient X^T r that the epoch's certificate computes anyway (now counted in the data accesses: one
pass) and draws from the coordinates that can move there (v_j > 0 or g_j < 0, and the intercept: a
step on any other is exactly zero): half of the features' draws uniform, half in proportion to how
far each violates optimality (adaptive importance sampling by the gap, Perekrestenko, Cevher & Jaggi
2017), the intercept four times as often as an average active feature. It stops once its steps have
read two passes' worth of stored values, so that an epoch costs about what a uniform one reads (two
passes for the 2d gradients, plus the moves). And under the default `curvature="newton"` the
intercept takes the features' safeguarded Newton step on its column of ones (it was Algorithm 2's
step on beta = 1/4, far too short where the loss is flat, e.g. with few positives).

Measured on this page's rows, each change on its own (random_state=0; three seeds where noted):
- active draws, uniform over the active coordinates: where the support is a small part of the
  features the epochs go to it: arcene at 0.01 lam_max 1.2e-2 / 9.7e-3 -> 2.6e-4 / 2.2e-4 (with /
  without intercept), madelon at 0.1 4.3e-3 / 2.3e-3 -> 6.0e-4 / 6.6e-5; 30 -> 35 of 40 (the page
  before the text sizes were added);
- the intercept's Newton step: mnist at 0.01 with intercept 3.4e-3 -> 8.2e-4; 35 -> 36 of 40;
- half the draws by violation (then the intercept at the uniform share): text 1,000 x 5,000 at 0.01
  1.7e-3 / 1.6e-3 -> 2.9e-4 / 3.3e-4, a9a at 0.01 without intercept 2.0e-3 -> 2.0e-4 (three seeds
  each: 1.0-1.7e-3 -> 2.1-3.5e-4 and 1.8-2.3e-3 -> 2.1e-5-2.0e-4); with an intercept it lost on mnist
  at 0.01 (6.5-8.2e-4 -> 6.8e-4-1.4e-3) until the intercept was drawn more: at 2 / 4 / 8 / 16 times an
  average feature mnist gave 2.6-4.7e-4 / 1.2-2.4e-4 / 1.7-2.4e-4 / 0.9-1.7e-4 and text (3,000 x
  20,000) 3.4-5.6e-4 / 1.1-2.2e-4 / 0.6-0.8e-4 / 0.2-0.5e-4, while a9a at 0.01 with intercept stayed at
  1.2-2.7e-3 and small text went from 2.1-2.8e-4 to 3.1-4.2e-4 at 8-16 times: 4 was kept.

SCD then met the target on 45 of the 48 rows (28 with the first defaults), and no row that met it
before missed it. What still missed: a9a at 0.01 with intercept (1.2e-3) and madelon at 0.01
(6.0e-2, 6.9e-2): coupled directions (a9a's one-hot blocks beside the intercept; madelon's nearly
collinear columns, its 20 informative features and their linear combinations) that single-coordinate
steps follow slowly whatever the sampling; `cd` solves them.

DetCD came on the page then, on the sets of at most 1,000 features (an epoch is d greedy steps, each a
full X^T r). With its first default (Algorithm 2's step on the chosen coordinate, on the curvature
bound) 25 of 28 rows were within 1e-3: it missed w8a at 0.01 lam_max with intercept (2.1e-2; the
intercept was right to 3e-2, the error sat in features seen in 2 of the 3,000 rows whose optimal
weights are about 5, which steps on the bound, beta = 1/4 where the loss is nearly flat, approach
slowly: 200 epochs reached 8.6e-4) and madelon at 0.01 (2.4e-2). Its default is now
`curvature="newton"`: the coordinate is still chosen by the paper's rule (the guaranteed decrease on
the bound), and SCD's safeguarded Newton step is taken on it, never shorter than the bound's: w8a at
0.01 with intercept 2.1e-2 -> 0 (to rounding), 26 of 28; madelon at 0.01 (2.1e-2, the collinear
columns) still misses. On arcene, earn and the text sets one epoch would be 10,000-200,000 passes over
the data.

Online solvers, this round: **centred columns** (with an intercept and the calibrated per-feature
rates, in a fresh solve). A column whose |mean| exceeds 5 standard deviations is learned as
x_ij - mean_j, the intercept absorbing mean . w: the same problem, without the curvature such offsets
put along the columns' common mean, which no rate overcomes in 50 passes. madelon with intercept
(500 columns of mean about 480, |mean| / std 10-800): at 0.1 lam_max SGD-C 3.4e-2 -> 5.6e-5, SMIDAS
2.2e-2 -> 1.7e-4 (truncated gradient stays at 3.5e-2); at 0.01 SGD-C, SMIDAS and truncated gradient
0.12-0.15 -> 2.5e-4 / 9.4e-4 / 4.7e-4. 83 -> 88 of 144 online rows. On the other sets a few columns
qualify (magic04's one column at 6.1, arcene's 30 above 5, the synthetic text's most common tokens);
their rows moved by at most 2.3x either way (text at 0.1 with intercept, SMIDAS 3.7e-4 -> 8.4e-4;
arcene at 0.1, SMIDAS 3.9e-2 -> 2.2e-2) and none crossed the target. The threshold: at 1 (every
column whose mean exceeds its spread: a9a's frequent one-hot columns, magic04's seven) a9a at 0.01
lam_max and the sorted magic04 lost their 1e-3; at 10 madelon's 14 columns of ratio 5-10 stayed
uncentred and its rows stayed at 5-6e-3. Without intercept centring would change the problem.

The page now has the synthetic text generator at three sizes (1,000 x 5,000, 3,000 x 20,000 and
10,000 x 100,000, `TEXT_SIZES`). Small text at 0.01 lam_max is the hardest row for the online
solvers (SGD-C and truncated gradient 8e-2-1e-1, SMIDAS 1.4-1.7: 50 passes over 1,000 rows are 50,000
steps for 5,000 features); at 10,000 x 100,000 SGD-C and truncated gradient reach 1.5e-3-3.9e-3 at
0.01 and SMIDAS 8.7e-2.

Online solvers, the round before (before = the previous defaults, whose "after" column this page showed
until now, reproduced bit for bit; after = the defaults now): 47 -> 75 of 120 runs within 1e-3, no run
that met the target misses it now. Two changes, both measured on every row of this table:

- **Shuffled passes** (`shuffle=None` is True with a calibrated rate): the rows of each chunk are
  taken in a new random order every pass. The files are sorted (magic04 by class; w8a has 16% positives
  in its first 500 sampled rows and none in its last 500), and in stream order the last rows of each
  pass pull the weights their way: magic04 with intercept at 0.1 lam_max, SGD-C 7.7e-3 -> 1.9e-7,
  truncated gradient 1.9e-2 -> 2.3e-5; w8a with intercept 7.4e-2 -> 9.5e-3. Alone: 47 -> 65 of 120;
  one row lost the target (earn at 0.1 lam_max with intercept, truncated gradient 1.00e-3 ->
  1.11e-3; 7.7e-4 with the rate change below) and none got worse by more than 2.2x (splice 0.1 with
  intercept, SGD-C 1.9e-6 -> 4.2e-6).
- **The first pass one octave above the calibrated rate, decaying to 1/300 of it** (was: the
  calibrated rate, decaying to 1/1000): with shuffled passes the remaining misses were far from the
  optimum, not noisy. On w8a with intercept at 0.01 lam_max (shuffled) the calibrated rate times
  0.3 / 1 / 3 gave 2.3e-1 / 5.5e-2 / 6.4e-2 (SGD-C) and 200 passes 1.1e-2; the error sits in rare
  features (2-17 of 3,000 rows) whose optimal weights are 5-11 and which the decaying rate has not
  carried there; averaging the last 25 passes' iterates made these runs slightly worse (5.5e-2 ->
  5.6e-2 etc.). Grid over (factor, final fraction) on all 120 rows, shuffled: (1, 1000) 65, (1, 100)
  65, (1.5, 100) 70, (2, 100) 69, (2, 200) 73, (2, 300) 75, (2, 500) 75, (3, 300) 74, (3, 1000) 75.
  The larger rate costs truncated gradient on the rows it already met (magic04, splice, w8a without
  intercept: 2e-5 -> 1-2e-4), none of them beyond 1e-3. The octave is not taken when its calibration
  epoch diverged.

Tried and dropped this round: averaging the end-of-pass iterates over the last half of the passes
(Polyak-Ruppert at the pass level; worse on every row tried at the calibrated rate, and at 2-4 times
it better only on noise-limited rows that met the target anyway, magic04 and spambase with
intercept, by 1.3-2x: the missing runs are biased, not noisy); larger
rates for rare features, D_j times (n / nnz_j)^(1/4) or (n / nnz_j)^(1/2), on top of the new defaults
(74 and 70 of 120 against 75: w8a with intercept at 0.1, SGD-C, 1.7e-3 -> 3-4e-4, but earn at 0.01
with intercept, SMIDAS, 2.2e-4 -> 3e-2-1e-1 and text at 0.1, truncated gradient, 6.4e-4 -> 0.22);
starting the intercept at the intercept-only optimum (no change: it gets there in the first pass);
centring the features (measured by hand on dense copies, with the new defaults, before building
it lazily): mnist with intercept at 0.01 lam_max SGD-C 7.4e-2 -> 3.0e-2, but truncated gradient
6.9e-2 -> 7.8e-2, SMIDAS 7.4e-2 -> 0.88, w8a with intercept worse for all three (SGD-C at 0.01:
3.0e-2 -> 8.7e-2), so lazy centring was not built. Per-step tail averaging inside the kernels was
not tried (the misses are not noise-limited). 200 passes instead of 50 bring the misses on w8a and
mnist with intercept down 3-10x (mnist 0.01, SGD-C: 7.4e-2 -> 8.6e-3; there the weights are about
half their optimal values and the intercept 3 off): they need more passes or curvature, not
another rate.

Measured after this table and dropped (the defaults and the columns above are unchanged):

- **Per-coordinate adaptive rates (AdaGrad, Vowpal Wabbit's `--adaptive`)**, prototyped as a Numba
  kernel for truncated gradient and SGD-C: rate_j = eta / sqrt(sum of coordinate j's squared gradients
  so far) (the intercept alike), times the pass decay, the L1 step at each coordinate's own rate. It stays
  lazy and exact: the sum moves only when feature j occurs, so rate_j is constant between two visits and
  the shrinks owed since the last one compose to one by eta lam (C - c_j) / sqrt(G_j) (C the running sum
  of the pass factors); the lazy weights equal an eager dense loop's to 6e-14 (w8a, 400 rows, 5 passes).
  On the 40 problems of this table (same rows, same P*), with eta calibrated as now (Bottou's search on
  the sample, 2^k around 1, one epoch from w = 0, twice the best, decaying to 1/300): 13 of 40 within 1e-3 (16 with the
  per-feature D_j on top, eta_j = eta sqrt(D_j)) against 23 (truncated gradient) and 27 (SGD-C) now; no
  run that misses now meets the target, 7-14 that meet it now miss (pure AdaGrad, no pass decay: 3-6 of
  40; decay to 1/30: 12-14). At the best eta of a 2^k grid for each run (an oracle): 23 of 40, as many
  as the same kernel without AdaGrad at its own best rate, and within 2x of it either way on the misses:
  w8a with intercept 1.9e-3 (without AdaGrad 2.4e-3) at 0.1 and 5.4e-2 (4.0e-2) at 0.01 lam_max, mnist
  with intercept 1.6e-3 (2.0e-3) and 8.2e-2 (3.0e-2), text at 0.01 1.6-1.9e-2 (2.0-2.1e-2); only
  truncated gradient on earn at 0.01 with intercept gets under 1e-3 (2.0e-3 -> 7.5e-4). With SGD-C's
  cumulative penalty at the per-coordinate rates (best eta) it was worse still (w8a with intercept at 0.1: 3.1e-2
  against 1.7e-3 now; mnist with intercept at 0.01: 0.30 against 7.4e-2). Why: AdaGrad gives a feature
  seen in nnz_j of n rows a rate about (n / nnz_j)^(1/2) times a frequent one's, the frequency-scaled
  rates dropped in the previous round, with the same failure on tf-idf: a rare feature jumps by about
  eta at each visit and is shrunk back between visits (earn at 0.1 lam_max without intercept: 471
  nonzeros against 11 at the optimum, 2.3e-2); and the one-epoch calibration misjudges eta when the
  rates shrink as 1/sqrt(visits) over 50 passes (earn 0.1: 0.25 against the best 4; text at 0.1 lam_max:
  3e-5, which leaves w = 0, 0.22, where the best eta gives 6e-4). The slow directions of w8a and mnist
  with intercept are not a matter of per-coordinate gradient scale: the best eta does not reach them.
  SMIDAS was not tried: its p-norm link already sets each coordinate's step, and AdaGrad on theta would
  replace the mirror map.
- **A constant rate with iterate averaging** (the per-feature kernel at a constant rate, the iterates
  averaged every 30 steps over the last 25 passes), at the best rate for each run: w8a with intercept
  1.3e-2 at 0.1 and 3.2e-2 at 0.01 lam_max (decaying rate, at its best: 2.4e-3, 4.0e-2), mnist with
  intercept 1.9e-2 and 4.5e-2 (2.0e-3, 3.0e-2), text at 0.01 3.8e-2 (2.1e-2), earn at 0.01 4.5e-2
  (2.0e-3), a9a at 0.01 with intercept 3.7e-3 (9.5e-5): the average of constant-rate iterates keeps a
  bias of the order of the rate and carries small nonzeros, and the decaying rate wins on every run but
  one (w8a at 0.01).

Still missing the target (online solvers, after):

- intercept with rare features of large optimal weight (w8a with intercept: 1.7e-3-2.4e-3 at 0.1,
  3e-2-4.3e-2 at 0.01 lam_max) and mnist with intercept (2e-3-3e-3 at 0.1, 7e-2 at 0.01): the slow
  directions are features seen in a handful of rows (w8a) and the intercept with the pixels' large
  mean (mnist); a diagonal rate bounded by the rows' curvature does not reach them in 50 passes;
- small lam on text (synthetic text at 0.01 lam_max: 2e-2 for SGD-C and truncated gradient, 3.2e-2
  for SMIDAS; 1.5-3.9e-3 at 10,000 x 100,000, SMIDAS 2.5e-3);
- madelon and arcene (dense, correlated; arcene has n = 100): 1e-2-1 for every online solver (on
  madelon the calibrated rate is not the best one: the per-feature kernel at its best rate reaches
  4-6e-3 at 0.1 lam_max and 5e-2 at 0.01, still short); madelon with intercept is met since the
  centred columns (the notes at the top), except truncated gradient at 0.1 lam_max (3.5e-2);
- truncated gradient on tf-idf text (earn 0.01 lam_max: 2e-3; mnist 0.01 without intercept 3.4e-3).

Previous round: the per-feature rates (D_j = 1 / RMS of feature j's nonzero values, squared; the L1
step scaled alike) fixed the unscaled UCI sets without intercept (spambase 0 -> 6 of 6, magic04 0 ->
2) and spambase with intercept (0 -> 3 of 6): 34 -> 47 of 120 against one rate for all features
(`precondition=False`). Dropped then: 1 / max_i x_ij^2 (VW's normalised updates), 1 / mean_i x_ij^2
over all rows, choosing between one rate and per-feature rates by the calibration sample's one-epoch
objective, and a final rate of 1/100 or 1/10,000 of the calibrated one in stream order.

SCD (not rerun this round; its rows are carried): the default step is a safeguarded Newton step on
the coordinate's own curvature sum_i c_i loss''(z_i) x_ij^2 (+ lam2), halved until Armijo's condition
holds and never shorter than Algorithm 2's step on the bound, which is the fallback. Where the loss
is far flatter than its bound (tf-idf text, well-separated rows, small lam) the bound's steps are
orders of magnitude too short: earn at 0.01 lam_max goes from 9e-3 to 3e-10 (intercept), w8a from
1e-1 to 1.5e-4, mnist 0.1 from 5e-3 to 9e-5; 22 -> 30 of 40 runs within 1e-3. What still misses is
coupling, not curvature: a9a at 0.01 lam_max (one-hot blocks beside the intercept: 4-5e-3), madelon
(dense, 500 correlated columns: 2e-3 to 7e-2), arcene at 0.01 (n = 100, d = 10,000: 1e-2) and mnist
at 0.01 with intercept (4.5e-3). Single-coordinate steps cannot move along such directions quickly;
the batch solver `cd` (Newton steps on working sets) is the one for them.
"""


if __name__ == "__main__":
    sys.exit(main())
