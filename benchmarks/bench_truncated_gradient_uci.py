#!/usr/bin/env python
"""Truncated gradient on UCI data with 1,000 random binary features (Langford, Li & Zhang, sec. 5).

The paper's first two experiments, side by side in one run:

* every data set gets 1,000 random binary features (value 1 with probability 0.05,
  seeded) appended to its own;
* L1 logistic regression (unpenalised intercept) by five methods, each sweeping its
  sparsity parameter:

  ``tg_k1``       truncated gradient, theta = inf, K = 1 (the paper's Figure 1 setting), gravity g;
  ``tg``          truncated gradient, theta = inf, K = 10 (Figure 2, (i)), gravity g;
  ``tg_theta_g``  truncated gradient, theta = g, K = 10 (Figure 2, (ii)), gravity g;
  ``rounding``    coefficient rounding, K = 10 (Figure 2, (iii)), threshold theta;
  ``subgradient`` L1 subgradient, K = 10 (Figure 2, (iv)), gravity g;
  ``cd_lasso``    batch L1 (the paper's Lasso, (v)): our CoordinateDescent on a lam path,
                  warm-started from the previous lam;

* learning rate, number of passes and sparsity parameter chosen jointly by k-fold
  cross-validation on the training part (default 3 folds): per method, the sparsest
  setting whose mean CV accuracy is >= 99% of the best of the method's least-regularised (dense) model
  (the paper's "accuracy reduced by no more than 1%", taken relative), refitted on the
  whole training part and scored on the test part: fraction of the d + 1000 features
  removed, test accuracy, and the AUC ratio AUC(sparse) / AUC(dense) (Figure 1 right).

    .venv/bin/python benchmarks/bench_truncated_gradient_uci.py           # 5 data sets, ~9 min on 2 cores
    .venv/bin/python benchmarks/bench_truncated_gradient_uci.py --quick   # spambase + splice, 2 folds (~20 s)
    .venv/bin/python benchmarks/bench_truncated_gradient_uci.py --datasets a9a --methods tg,cd_lasso

Writes benchmarks/results/truncated_gradient_uci.{md,json,png} (``_quick`` suffix with --quick).
"""

from __future__ import annotations

from _common import DATA_DIR, RESULTS_DIR, command_line, machine, repo_on_path, single_thread, utc_now, versions

single_thread()  # before numpy is imported
repo_on_path()

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

# name -> (train file, test file or None, n_features, label)
DATASETS = {
    "spambase": ("spambase/spambase.svm.bz2", None, 57, "UCI Spambase"),
    "magic04": ("magic04/magic04.svm.bz2", None, 10, "UCI MAGIC gamma telescope"),
    "a9a": ("a9a/a9a.bz2", "a9a/a9a.t.bz2", 123, "UCI Adult (LIBSVM a9a, binarised)"),
    "splice": ("splice/splice_scale.bz2", None, 60, "splice (LIBSVM splice_scale)"),
    "w8a": ("w8a/w8a.bz2", None, 300, "w8a (LIBSVM, Platt)"),
    "madelon": ("madelon/madelon.bz2", "madelon/madelon.t.bz2", 500, "UCI Madelon (NIPS 2003)"),
    "arcene": ("arcene/arcene.bz2", "arcene/arcene.t.bz2", 10000, "UCI ARCENE (NIPS 2003)"),
}
QUICK_DATASETS = ("spambase", "splice")
STANDARDISE = ("spambase", "magic04", "madelon", "arcene")
LOSSES = ("squared", "logistic")  # the paper's (VW's square loss) first, logistic as the second panel
MAX_TRAIN = 5000  # training rows kept (seeded subsample) so that 10-fold CV over the whole grid stays affordable
METHODS = {
    "tg_k1": ("truncated gradient, theta = inf, K = 1 (Fig. 1)", "truncated", 1, "inf"),
    "tg": ("truncated gradient, theta = inf, K = 10", "truncated", 10, "inf"),
    "tg_theta_g": ("truncated gradient, theta = g, K = 10", "truncated", 10, "g"),
    "rounding": ("rounding, K = 10", "rounding", 10, None),
    "subgradient": ("L1 subgradient, K = 10, final rounding at eta_T K g", "l1_subgradient", 10, None),
    "cd_lasso": ("batch L1 (CD path, warm-started)", None, None, None),
}
N_RANDOM, P_RANDOM = 1000, 0.05
LOSS_TOL = 0.01  # accuracy may fall to (1 - LOSS_TOL) x the dense model's
PASS_DECAY = 0.8  # learning rate x 0.8 per pass, constant within a pass (the paper's multi-pass mode)
ETA_GRID = (0.1, 0.3, 1.0)  # eta0 = c / mean ||x_i||^2 (train part)
MAX_PASSES = 10
GRAVITY_FRACTIONS = np.geomspace(10.0, 1e-3, 13)  # g = f * lam_max (per-example lam); plus g = 0 (dense)
CD_FRACTIONS = np.geomspace(1.0, 1e-3, 13)  # lam = f * lam_max; the last is the "dense" model
ROUND_FRACTIONS = np.geomspace(1.0, 1e-3, 13)  # theta = f * max|w_dense|; plus theta = 0 (dense)
NOTES = (
    "**Why truncated gradient with theta = inf keeps the random features (spambase, a9a).** Its selected models keep "
    "most of the 1,000 random features, but at the scale of the last learning steps, not of real weights: on "
    "spambase at g = 0.046 lam_max (c = 0.1, 10 passes, eta_T = 1.25e-4; measured separately with this "
    "script's `online_fit`), 987 random weights are nonzero, median |w| 2.5e-4 and max 1.1e-3, while the median "
    "original weight is 9.3e-2; none exceeds 10 eta_T. Each random feature occurs every ~20 examples and gets a "
    "gradient kick eta |loss'| each time, while the truncation in between removes only ~20 eta g; unless g is "
    "near |loss'| / 20 (which also removes real features: 0.2 lam_max gives 76% accuracy on spambase) the "
    "weight is a random walk that is rarely exactly 0 when training stops. The batch Lasso (cd_lasso) at the "
    "same lam has no random feature at all (spambase lam = 0.032 lam_max: 42 nonzeros, all original, "
    "test accuracy 0.909). This dust is what the per-step T1 of ALGORITHMS.md sec. 4 (which TruncatedGradient "
    "implements exactly) leaves when training stops; the paper ran its experiments in Vowpal Wabbit with a "
    "square loss and does not say how it counted nonzeros, and we did not find which difference explains its "
    "> 90%. A final rounding at the scale of eta_T (as done here for the subgradient) would remove the dust; "
    "the library offers none for theta = inf. The "
    "rounding-style methods (theta = g, rounding, and the subgradient with its final rounding) cut the dust "
    "and do reach > 90% on most sets.\n\n"
    "**w8a** has 97.1% negatives: the 1%-accuracy criterion (0.99 x 0.975 = 0.965) admits the empty model, so "
    "its 'removed' column is meaningless; the AUC ratio (0.54-0.94) shows the loss. The criterion of the "
    "paper only makes sense for balanced sets; its Big_Ads result was stated as an error increase instead.\n\n"
    "**Lasso (cd_lasso)**: as in the paper's Figure 2 it is the best at the sparse end (spambase 26 features, "
    "a9a 13, magic04 3 at <= 1.3% loss) and overfits at the dense end (its dense model is below SGD's on "
    "spambase and splice, which also makes its 1% criterion lenient there: the selected model beats it). CD on w8a + random features is slow at small lam (229 s for 4 paths down to "
    "1e-3 lam_max; a single path to 1e-4 lam_max takes ~80 s, 29 s for the last lam alone)."
)
NOTES_SQUARED = (
    "**Square loss, the paper's protocol: what changes and what does not.** With VW's square loss and 10-fold CV "
    "over rate, gravity and passes, truncated gradient with theta = inf and K = 1 removes more than 90% of the "
    "features on magic04 (94%, up from 77% with the logistic loss) and w8a (the empty model, see below), and "
    "27-47% on spambase, a9a, splice, madelon and 1% on arcene (100 training rows: every gravity that removes "
    "features there costs more than 1% CV accuracy): the paper's > 90% on all but one set is still not reproduced. "
    "The square loss is not what kept the random features: the same dust as with the logistic loss (see the "
    "logistic page's note) stays, weights of the size of the last steps on random features that occur every ~20 "
    "examples, and the 1%-accuracy criterion (made in CV, as the paper did) admits them because they cost no "
    "accuracy. Differences that remain and that we could not test: the paper's VW (its rate schedule "
    "eta_t = eta (t0 / (t0 + t))^power_t within a pass and the decay across passes were both tuned; here the "
    "decay is fixed at 0.8 per pass), its grids (not published), its eleven UCI sets (we have seven here, of "
    "which ad, the paper's 71%, is not one), and how it counted features (a final rounding of the dust, as "
    "VW's readable model prints 6 digits, would remove it). Rounding and the Lasso reach > 90% on six of the "
    "seven sets (AUC ratio 0.97-1.2, magic04's rounding 0.78); theta = g and the subgradient only on magic04 "
    "(and the empty w8a model): with the square loss their selected gravities are small.\n\n"
    "**w8a** (97% negatives; training part subsampled to 5,000 rows): every method's selected model is the "
    "empty one (accuracy of the majority class is within 1% of the dense model's), so 100% removed is "
    "meaningless there; the AUC ratio (0.57-0.63) shows the loss.\n\n"
    "**Figure 2 (AUC against nonzeros, K = 10)**: see the lower panels of the figure: theta = g follows rounding "
    "and, at the sparse end, the Lasso, as the paper says; theta = inf is the densest of the online methods at a "
    "given gravity (the dust), so it is not 'consistently competitive' at the sparse end here, though its AUC "
    "at the selected point is within 2.1% of the dense model's on every set but w8a (the empty model)."
)
NOTES_BY_LOSS = {"logistic": NOTES, "squared": NOTES_SQUARED}
PAPER = (
    "Paper (Langford, Li & Zhang 2009, sec. 5, Figure 1; K = 1, theta = inf, square loss in VW, 10-fold CV): "
    "on eleven UCI sets with 1,000 random binary features added, truncated gradient removed more than 90% of "
    "the features within 1% accuracy loss on all but one (ad: 71%); the AUC ratio with/without "
    "sparsification was 'often above 98%'. Figure 2 (K = 10): truncated gradient (theta = inf) is competitive "
    "with or better than the other online methods, theta = g behaves like rounding, and the Lasso is similar "
    "at the sparse end and worse (overfits) at the dense end."
)


# ============================================================================ data
def load(name, data_dir, seed, max_train=None):
    from l1scale.data.svmlight import load_svmlight

    train, test, d, _ = DATASETS[name]
    X, y = load_svmlight(str(Path(data_dir) / train), n_features=d)
    X = sp.csr_matrix(X)
    rng = np.random.default_rng(seed)
    if test is not None:
        Xt, yt = load_svmlight(str(Path(data_dir) / test), n_features=d)
        Xt = sp.csr_matrix(Xt)
        split = f"given test file {Path(test).name}"
    else:
        perm = rng.permutation(X.shape[0])
        cut = (2 * X.shape[0]) // 3
        tr, te = np.sort(perm[:cut]), np.sort(perm[cut:])
        X, Xt, y, yt = X[tr], X[te], y[tr], y[te]
        split = f"seeded random 2/3 train - 1/3 test split (seed {seed})"
    if max_train and X.shape[0] > max_train:
        keep = np.sort(rng.permutation(X.shape[0])[:max_train])
        X, y = X[keep], y[keep]
        split += f"; training part subsampled to {max_train:,} rows (seeded)"
    # spambase, magic04, madelon, arcene (dense, heavy-tailed measurements): standardised to zero mean and unit
    # variance on the training part. a9a and w8a (binary) and splice_scale (in [-1, 1]) are left as they are.
    if name in STANDARDISE:
        Xd, Xtd = X.toarray(), Xt.toarray()
        mu, sd = Xd.mean(axis=0), Xd.std(axis=0)
        sd[sd == 0] = 1.0
        X, Xt = sp.csr_matrix((Xd - mu) / sd), sp.csr_matrix((Xtd - mu) / sd)

    # 1,000 random binary features, P(1) = 0.05, independent of the labels.
    def noise(n):
        return sp.csr_matrix((rng.random((n, N_RANDOM)) < P_RANDOM).astype(np.float64))

    X = sp.hstack([X, noise(X.shape[0])], format="csr")
    Xt = sp.hstack([Xt, noise(Xt.shape[0])], format="csr")
    X.sort_indices()
    Xt.sort_indices()
    return X, np.where(y > 0, 1.0, -1.0), Xt, np.where(yt > 0, 1.0, -1.0), split, d


# ============================================================================ models
def scores(X, coef, b):
    return X @ coef + b


def evaluate(X, y, coef, b, d_orig, loss="logistic"):
    from l1scale.metrics import accuracy, roc_auc

    z = scores(X, coef, b)
    pred = np.where(z > 0, 1.0, -1.0)
    nz = np.flatnonzero(coef)
    return {
        "acc": accuracy(y, pred),
        "auc": roc_auc(y, z),
        "nnz": int(nz.size),
        "nnz_orig": int((nz < d_orig).sum()),
        "nnz_random": int((nz >= d_orig).sum()),
        "loss": float(np.mean(np.logaddexp(0.0, -y * z)) if loss == "logistic" else 0.5 * np.mean((z - y) ** 2)),
    }


def online_fit(X, y, method, param, eta0, passes, callback=None, loss="logistic"):
    """One online run; ``param`` is g (gravity methods) or theta (rounding).
    ``callback(pass, coef, intercept)`` after every pass, with the model as it would be returned."""
    from l1scale.data.stream import Stream
    from l1scale.problems import StreamProblem
    from l1scale.solvers.truncated import TruncatedGradient

    _, sparsifier, K, theta = METHODS[method]
    if sparsifier == "rounding":
        kw = {"gravity": 0.0, "theta": param}
    else:
        kw = {"gravity": param}
        if theta == "g":
            kw["theta"] = param
    # Every rule passed explicitly (the paper's, not the library's defaults): constant rate within a pass,
    # x PASS_DECAY across passes, t0 = 1.
    solver = TruncatedGradient(
        sparsifier=sparsifier,
        K=K,
        eta0=eta0,
        power_t=0.0,
        t0=1.0,
        pass_decay=PASS_DECAY,
        schedule="paper",
        max_iter=passes,
        holdout=0,
        **kw,
    )

    def finish(z, coef):
        if sparsifier == "l1_subgradient" and param > 0:
            # The paper's subgradient method rounds to zero at the end of training (ALGORITHMS.md sec. 4):
            # weights within the last penalty step eta_T K g are oscillating around 0.
            coef = np.where(np.abs(coef) <= eta0 * PASS_DECAY ** (z - 1) * K * param, 0.0, coef)
        return coef

    if callback is not None:
        solver.callback = lambda z, hist: callback(z, finish(z, solver.state_.coef), solver.state_.intercept)
    problem = StreamProblem(Stream.from_arrays(X, y, chunk_rows=20000), loss, lam=1.0)  # lam unused: gravity given
    from l1scale.exceptions import DivergenceError

    try:
        res = solver.solve(problem)
    except DivergenceError:
        # A rate too large for this loss (the square loss diverges at c = 1 on some sets): the passes
        # not reached keep CV accuracy 0, and the model is the zero model.
        return np.zeros(X.shape[1]), 0.0
    return finish(res.n_iter, res.coef), res.intercept


def cd_path(X, y, lams, loss="logistic"):
    """Warm-started CD along decreasing lams: list of (coef, intercept)."""
    from l1scale.exceptions import ConvergenceWarning
    from l1scale.problems import Problem
    from l1scale.solvers.cd import CoordinateDescent

    out, coef, b = [], None, None
    solver = CoordinateDescent(tol=1e-4, max_iter=100)
    for lam in lams:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = solver.solve(Problem(X, y, loss, lam=float(lam)), coef_init=coef, intercept_init=b)
        coef, b = res.coef, res.intercept
        out.append((coef.copy(), float(b)))
    return out


def folds_of(n, k, seed):
    perm = np.random.default_rng(seed + 1000).permutation(n)
    return [np.sort(f) for f in np.array_split(perm, k)]


def cv_grid(X, y, folds, d_orig, method, values, etas, loss="logistic"):
    """Mean CV accuracy and nnz over (eta0, value, passes 1..MAX_PASSES): arrays (len(etas), len(values), MAX_PASSES)."""
    acc = np.zeros((len(folds), len(etas), len(values), MAX_PASSES))
    nnz = np.zeros_like(acc)
    for f, val in enumerate(folds):
        tr = np.setdiff1d(np.arange(X.shape[0]), val)
        Xtr, ytr, Xv, yv = X[tr], y[tr], X[val], y[val]
        for a, eta0 in enumerate(etas):
            if method == "cd_lasso":
                for k, (coef, b) in enumerate(cd_path(Xtr, ytr, values, loss)):
                    pred = np.where(Xv @ coef + b > 0, 1.0, -1.0)
                    acc[f, a, k, :], nnz[f, a, k, :] = np.mean(pred == yv), np.count_nonzero(coef)
                continue
            for k, v in enumerate(values):

                def cb(z, coef, b, f=f, a=a, k=k):
                    pred = np.where(Xv @ coef + b > 0, 1.0, -1.0)
                    acc[f, a, k, z - 1], nnz[f, a, k, z - 1] = np.mean(pred == yv), np.count_nonzero(coef)

                online_fit(Xtr, ytr, method, v, eta0, MAX_PASSES, callback=cb, loss=loss)
    return acc.mean(axis=0), nnz.mean(axis=0)


def sweep_values(method, lam_max, w_dense_max):
    if method == "cd_lasso":
        return list(CD_FRACTIONS * lam_max)
    if method == "rounding":
        return list(ROUND_FRACTIONS * w_dense_max) + [0.0]
    return list(GRAVITY_FRACTIONS * lam_max) + [0.0]


def best_of(acc, nnz, mask=None):
    """Index (a, k, p) of the largest accuracy (ties: fewer nonzeros, fewer passes, smaller eta)."""
    cells = [
        (a, k, p)
        for a in range(acc.shape[0])
        for k in range(acc.shape[1])
        for p in range(acc.shape[2])
        if mask is None or mask[a, k, p]
    ]
    return max(cells, key=lambda c: (round(acc[c], 9), -nnz[c], -c[2], -c[0]))


def run_dataset(name, args):
    from l1scale.problems import lam_max as lam_max_of

    t_start = time.perf_counter()
    loss = args.loss
    X, y, Xt, yt, split, d_orig = load(name, args.data_dir, args.seed, args.max_train)
    d_total = X.shape[1]
    mean_sq = float(np.asarray(X.multiply(X).sum(axis=1)).mean())
    lmax = float(lam_max_of(X, y, loss))
    folds = folds_of(X.shape[0], args.folds, args.seed)
    etas = [c / mean_sq for c in ETA_GRID]
    print(
        f"== {name}: train {X.shape[0]:,} test {Xt.shape[0]:,} d {d_orig}+{N_RANDOM} "
        f"mean||x||^2 {mean_sq:.3g} lam_max {lmax:.3g}",
        flush=True,
    )
    # Plain SGD (gravity 0): its CV-best rate sets the scale of the rounding thresholds.
    t0 = time.perf_counter()
    acc0, nnz0 = cv_grid(X, y, folds, d_orig, "tg", [0.0], etas, loss)
    a0, _, p0 = best_of(acc0, nnz0)
    w_dense, _ = online_fit(X, y, "tg", 0.0, etas[a0], p0 + 1, loss=loss)
    w_dense_max = float(np.abs(w_dense).max())
    print(
        f"   plain SGD: CV best c = {ETA_GRID[a0]}, {p0 + 1} passes, CV acc {acc0[a0, 0, p0]:.4f} "
        f"({time.perf_counter() - t0:.1f} s)",
        flush=True,
    )
    ds = {
        "name": name,
        "label": DATASETS[name][3],
        "split": split,
        "n_train": int(X.shape[0]),
        "n_test": int(Xt.shape[0]),
        "d_orig": d_orig,
        "d_total": d_total,
        "nnz_train": int(X.nnz),
        "positives_train": float((y > 0).mean()),
        "mean_sq_norm": mean_sq,
        "lam_max": lmax,
        "sgd": {
            "c": ETA_GRID[a0],
            "eta0": etas[a0],
            "passes": p0 + 1,
            "cv_acc": float(acc0[a0, 0, p0]),
            "cv_acc_grid": acc0[:, 0, :].tolist(),
        },
        "w_dense_max": w_dense_max,
        "methods": {},
    }
    for method in args.methods:
        t0 = time.perf_counter()
        cd = method == "cd_lasso"
        values = sweep_values(method, lmax, w_dense_max)
        m_etas = [float("nan")] if cd else etas
        acc, nnz = cv_grid(X, y, folds, d_orig, method, values, m_etas, loss)
        t_cv = time.perf_counter() - t0
        dense_k = len(values) - 1  # g = 0 / theta = 0 / the smallest lam
        only_dense = np.zeros(acc.shape, dtype=bool)
        only_dense[:, dense_k, :] = True
        dense_cell = best_of(acc, nnz, only_dense)
        limit = (1.0 - LOSS_TOL) * acc[dense_cell]
        sel_cell = min(
            (
                (a, k, p)
                for a in range(acc.shape[0])
                for k in range(acc.shape[1])
                for p in range(acc.shape[2])
                if acc[a, k, p] >= limit
            ),
            key=lambda c: (nnz[c], -acc[c], c[2], c[0]),
        )

        def refit(cell):
            a, k, p = cell
            coef, b = online_fit(X, y, method, values[k], m_etas[a], p + 1, loss=loss)
            e = evaluate(Xt, yt, coef, b, d_orig, loss)
            return {
                "param": float(values[k]),
                "param_over_ref": float(values[k] / (w_dense_max if method == "rounding" else lmax)),
                "c": ETA_GRID[a],
                "passes": p + 1,
                "cv_acc": float(acc[cell]),
                "cv_nnz": float(nnz[cell]),
                **{"test_" + kk: vv for kk, vv in e.items()},
            }

        # The curve: every sweep value at its CV-best (eta0, passes), refitted on the whole training part.
        if cd:
            sweep = []
            for k, (coef, b) in enumerate(cd_path(X, y, values, loss)):
                e = evaluate(Xt, yt, coef, b, d_orig, loss)
                sweep.append(
                    {
                        "param": float(values[k]),
                        "param_over_ref": float(values[k] / lmax),
                        "c": None,
                        "passes": None,
                        "cv_acc": float(acc[0, k, 0]),
                        "cv_nnz": float(nnz[0, k, 0]),
                        **{"test_" + kk: vv for kk, vv in e.items()},
                    }
                )
            selected = sweep[sel_cell[1]]
        else:
            sweep = []
            for k in range(len(values)):
                mask = np.zeros(acc.shape, dtype=bool)
                mask[:, k, :] = True
                sweep.append(refit(best_of(acc, nnz, mask)))
            selected = refit(sel_cell)
        dense = sweep[dense_k]
        # Test-side (oracle) choice, for reference: the sparsest point of the curve within 1% of the dense test accuracy.
        tok = [r for r in sweep if r["test_acc"] >= (1.0 - LOSS_TOL) * dense["test_acc"]]
        orc = min(tok, key=lambda r: (r["test_nnz"], -r["test_acc"]))
        m = {
            "label": METHODS[method][0],
            "sweep": sweep,
            "dense_index": dense_k,
            "selected": selected,
            "selected_index": int(sel_cell[1]),
            "frac_removed": 1.0 - selected["test_nnz"] / d_total,
            "frac_random_removed": 1.0 - selected["test_nnz_random"] / N_RANDOM,
            "acc_loss_rel": 1.0 - selected["test_acc"] / dense["test_acc"],
            "auc_ratio": selected["test_auc"] / dense["test_auc"],
            "oracle": orc,
            "oracle_frac_removed": 1.0 - orc["test_nnz"] / d_total,
            "oracle_auc_ratio": orc["test_auc"] / dense["test_auc"],
            "seconds_cv": t_cv,
            "seconds": time.perf_counter() - t0,
        }
        ds["methods"][method] = m
        sel = selected
        print(
            f"   {method:12s} dense acc {dense['test_acc']:.4f} auc {dense['test_auc']:.4f} nnz {dense['test_nnz']:5d} | "
            f"sel {sel['param_over_ref']:.3g} c {sel['c']} p {sel['passes']}: acc {sel['test_acc']:.4f} "
            f"auc {sel['test_auc']:.4f} nnz {sel['test_nnz']:5d} ({sel['test_nnz_orig']} + {sel['test_nnz_random']}) "
            f"removed {m['frac_removed']:.1%} auc ratio {m['auc_ratio']:.3f} | oracle {m['oracle_frac_removed']:.1%} "
            f"[{m['seconds']:.1f} s]",
            flush=True,
        )
    ds["seconds"] = time.perf_counter() - t_start
    return ds


# ============================================================================ report
def render(doc) -> str:
    L = ["# Truncated gradient on UCI data + 1,000 random binary features (seed 3, Langford, Li & Zhang)\n"]
    L.append(
        f"Generated by `{doc['command']}` on {doc['date']}.  \nMachine: {doc['machine']}.  \n"
        f"Versions: {doc['versions']}.  \nTotal run time: {doc.get('seconds', float('nan')):.0f} s.\n"
    )
    L.append("## Protocol\n")
    L.append(
        f"* Data: each set with {N_RANDOM:,} random binary features appended (value 1 with probability "
        f"{P_RANDOM}, independent of the labels, seeded: `--seed {doc['seed']}`). spambase, magic04, madelon and "
        "arcene (dense measurements) standardised to zero mean and unit variance on the training part; a9a and "
        "w8a (binary) and splice_scale (already in [-1, 1]) unchanged; the random features are 0/1. "
        "Train/test: a9a, madelon and arcene use their test / validation files; the others a seeded random "
        "2/3 - 1/3 split.\n"
        + (
            "* Loss: **square loss** (the paper's: its VW implementation is least squares), 0.5 (x.w + b - y)^2 "
            "with y in {-1, +1} and an unpenalised intercept, every method; prediction sign(x.w + b).\n"
            if doc.get("loss", "logistic") == "squared"
            else "* Loss: logistic with an unpenalised intercept for every method (the paper ran VW's square "
            "loss: see truncated_gradient_uci.md for that panel).\n"
        )
        + (
            f"* Training rows: at most {doc['max_train']:,} per set (a seeded subsample of larger training parts: "
            "magic04, a9a, w8a) so that 10-fold CV over the whole grid (3 rates x 14 sparsity values x 10 passes x "
            "6 methods) stays within minutes on 2 shared cores; the test parts are whole.\n"
            if doc.get("max_train")
            else ""
        )
        + f"* Learning rate and passes: chosen jointly with the sparsity parameter by {doc['folds']}-fold CV on the "
        f"training part (as the paper did, with 10 folds), eta0 = c / mean ||x_i||^2 with c in {list(ETA_GRID)}, "
        f"passes 1..{MAX_PASSES} (read off one {MAX_PASSES}-pass run after each pass); constant rate within a pass, "
        f"x {PASS_DECAY} per pass (`power_t=0, pass_decay={PASS_DECAY}, schedule='paper'`, passed explicitly; the "
        'paper\'s "decaying learning rate across passes"; the paper also tuned the decay, here it is fixed); no '
        "holdout.\n"
        "* Sparsity sweep (per method): gravity g = f x lam_max with f = 10 ... 1e-3 (13 values, geometric) and "
        "g = 0 (truncated gradient, theta = g, subgradient); rounding threshold theta = f x max|w| of the dense "
        "SGD model, f = 1 ... 1e-3 (13 values) and theta = 0; CD: lam = f x lam_max, f = 1 ... 1e-3 (13 values; smaller lam costs minutes on w8a), "
        "path warm-started, relative duality gap tol 1e-4). K = 10 for Figure 2's four online methods, K = 1 for "
        "`tg_k1` (Figure 1's setting). The library's L1 subgradient does not round at the end (its docstring "
        "says so), so the benchmark zeroes the weights with |w_j| <= eta_T K g (the amplitude of the last "
        "penalty step, the oscillation around 0) after training, as ALGORITHMS.md sec. 4 prescribes.\n"
        f"* Selection (the paper's criterion, made in CV as the paper did): the (c, passes, sweep value) with the "
        f"fewest mean CV nonzeros whose mean CV accuracy is >= {1 - LOSS_TOL:.2f} x the best CV accuracy of the "
        "method's least-regularised model (g = 0, theta = 0, or the smallest lam; over c and passes), refitted on the whole training part and scored on the test part. "
        "*removed* = 1 - nnz(w) / (d + 1000); *acc loss* = 1 - acc / acc(dense), relative; *AUC ratio* = test "
        "AUC of the selected model / test AUC of the dense one. *oracle* columns: the same choice made on the test "
        "curve (for reference, optimistic).\n"
    )
    L.append("## Paper vs ours\n")
    L.append(PAPER + "\n")
    L.append(
        "| data set | n train / test | d + 1000 | method | dense: test acc, AUC | selected: c, passes | "
        "test acc (loss) | nnz (orig + random) | **removed** | **AUC ratio** | oracle removed / AUC ratio | s |"
    )
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for ds in doc["datasets"]:
        first = True
        for key, m in ds["methods"].items():
            dense, sel = m["sweep"][m["dense_index"]], m["selected"]
            head = (
                f"| {ds['name']} | {ds['n_train']:,} / {ds['n_test']:,} | {ds['d_orig']} + 1000 |"
                if first
                else "| | | |"
            )
            first = False
            cp = "-" if sel["c"] is None else f"{sel['c']}, {sel['passes']}"
            L.append(
                f"{head} {key} | {dense['test_acc']:.4f}, {dense['test_auc']:.4f} | {cp} | "
                f"{sel['test_acc']:.4f} ({m['acc_loss_rel']:+.2%}) | "
                f"{sel['test_nnz']} ({sel['test_nnz_orig']} + {sel['test_nnz_random']}) | "
                f"**{m['frac_removed']:.1%}** | **{m['auc_ratio']:.3f}** | "
                f"{m['oracle_frac_removed']:.1%} / {m['oracle_auc_ratio']:.3f} | {m['seconds']:.0f} |"
            )
    L.append("")
    L.append(
        "*loss* = relative test-accuracy loss vs the method's dense model (positive = worse); c: eta0 = c / "
        "mean ||x||^2. Online methods' dense model (g = 0 or theta = 0) is plain SGD, the same for all five "
        "up to the CV choice of (c, passes); CD's dense model is lam = 1e-3 lam_max.\n"
    )
    if doc.get("summary"):
        L.append("## Do the paper's claims hold?\n")
        L.append(doc["summary"] + "\n")
        if {ds["name"] for ds in doc["datasets"]} >= {"spambase", "a9a", "w8a"}:
            L.append(NOTES_BY_LOSS[doc.get("loss", "logistic")] + "\n")
        if doc.get("loss", "logistic") == "logistic":
            L.append(
                "This logistic panel is the earlier run (3-fold CV, five sets, whole training parts), kept as the "
                "second panel; the paper's protocol (square loss, 10-fold CV, seven sets) is "
                "[truncated_gradient_uci.md](truncated_gradient_uci.md).\n"
            )
    if doc.get("png"):
        L.append(f"![test accuracy vs features kept]({doc['png']})\n")
    L.append("## Sweeps (test part, models refitted on the whole training part)\n")
    for ds in doc["datasets"]:
        L.append(f"### {ds['name']}: {ds['label']}; {ds['split']}\n")
        L.append(
            f"Plain SGD CV choice: c = {ds['sgd']['c']} (eta0 = {ds['sgd']['eta0']:.4g}), "
            f"{ds['sgd']['passes']} passes, CV accuracy {ds['sgd']['cv_acc']:.4f}; lam_max = "
            f"{ds['lam_max']:.4g}; max|w| of the dense SGD model {ds['w_dense_max']:.3g}; "
            f"{ds['seconds']:.0f} s.\n"
        )
        for key, m in ds["methods"].items():
            pname = (
                "theta / max|w_dense|" if key == "rounding" else ("lam" if key == "cd_lasso" else "g") + " / lam_max"
            )
            L.append(f"<details><summary>{key}: {m['label']}</summary>\n")
            L.append(f"| {pname} | c, passes (CV) | CV acc | CV nnz | test acc | test AUC | nnz (orig + random) |")
            L.append("|---|---|---|---|---|---|---|")
            for k, r in enumerate(m["sweep"]):
                mark = (" **(selected g/theta/lam)**" if k == m["selected_index"] else "") + (
                    " (dense)" if k == m["dense_index"] else ""
                )
                cp = "-" if r["c"] is None else f"{r['c']}, {r['passes']}"
                L.append(
                    f"| {r['param_over_ref']:.3g}{mark} | {cp} | {r['cv_acc']:.4f} | {r['cv_nnz']:.0f} | "
                    f"{r['test_acc']:.4f} | {r['test_auc']:.4f} | {r['test_nnz']} ({r['test_nnz_orig']} + "
                    f"{r['test_nnz_random']}) |"
                )
            L.append("\n</details>\n")
    return "\n".join(L)


def summary(doc) -> str:
    rows = [(ds["name"], k, m) for ds in doc["datasets"] for k, m in ds["methods"].items()]
    if not rows:
        return ""
    parts = []
    for key in METHODS:
        ms = [(n, m) for n, k, m in rows if k == key]
        if not ms:
            continue
        over90 = [n for n, m in ms if m["frac_removed"] > 0.90]
        auc98 = [n for n, m in ms if m["auc_ratio"] > 0.98]
        removed = ", ".join(f"{n} {100 * m['frac_removed']:.0f}%" for n, m in ms)
        ratios = ", ".join(f"{m['auc_ratio']:.3f}" for n, m in ms)
        parts.append(
            f"`{key}`: removed > 90% on {len(over90)}/{len(ms)} sets "
            f"({removed}); AUC ratio > 0.98 on {len(auc98)}/{len(ms)} ({ratios})."
        )
    return " ".join(parts)


def plot(doc, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    dss = doc["datasets"]
    fig, axes = plt.subplots(2, len(dss), figsize=(3.6 * len(dss), 6.6), squeeze=False)
    for ax, ds in zip(axes[1], dss):  # Figure 2: AUC against nonzeros, K = 10 methods and the Lasso
        for key, m in ds["methods"].items():
            if key == "tg_k1":
                continue
            pts = sorted((max(r["test_nnz"], 0.8), r["test_auc"]) for r in m["sweep"])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=key)
        ax.set_xscale("log")
        ax.set_xlabel("features kept (nnz w)")
        aucs = [r["test_auc"] for m in ds["methods"].values() for r in m["sweep"] if r["test_nnz"] > 0]
        if aucs:
            ax.set_ylim(max(min(aucs), max(aucs) - 0.2), max(aucs) + 0.01)
    axes[1][0].set_ylabel("test AUC (Figure 2)")
    axes[1][-1].legend(fontsize=6, loc="lower right")
    for ax, ds in zip(axes[0], dss):
        for key, m in ds["methods"].items():
            pts = sorted((max(r["test_nnz"], 0.8), r["test_acc"]) for r in m["sweep"])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=key)
            sel = m["selected"]
            ax.plot([max(sel["test_nnz"], 0.8)], [sel["test_acc"]], "k*", ms=7)
        ax.set_xscale("log")
        ax.axvline(ds["d_orig"], color="grey", lw=0.6, ls=":")
        ax.set_title(f"{ds['name']} (d = {ds['d_orig']} + 1000)")
        ax.set_xlabel("features kept (nnz w)")
        accs = [r["test_acc"] for m in ds["methods"].values() for r in m["sweep"] if r["test_nnz"] > 0]
        if accs:
            top = max(accs)
            ax.set_ylim(max(min(accs), top - 0.15), top + 0.01)
    axes[0][0].set_ylabel("test accuracy")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle(
        f"{doc.get('loss', 'logistic')} loss. Top: test accuracy vs features kept, * = CV choice within 1% accuracy "
        "loss (Figure 1), dotted: d of the original data. Bottom: test AUC vs features kept (Figure 2)",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path.name


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="spambase + splice, 2 folds")
    ap.add_argument("--datasets", default=None, help="comma list of " + ",".join(DATASETS))
    ap.add_argument("--methods", default=None, help="comma list of " + ",".join(METHODS))
    ap.add_argument("--folds", type=int, default=None, help="CV folds (default 10, the paper's; 2 with --quick)")
    ap.add_argument("--loss", choices=LOSSES, default="squared", help="squared: the paper's (VW); logistic: 2nd panel")
    ap.add_argument("--max-train", type=int, default=MAX_TRAIN, help="training rows kept (seeded subsample)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--out", default=str(RESULTS_DIR))
    ap.add_argument("--from-json", help="only re-render the markdown (and PNG) of an earlier run")
    args = ap.parse_args(argv)

    if args.from_json:
        p = Path(args.from_json)
        doc = json.loads(p.read_text())
        doc["summary"] = summary(doc)
        doc["png"] = plot(doc, p.with_suffix(".png"))
        p.with_suffix(".md").write_text(render(doc))
        return 0
    names = args.datasets.split(",") if args.datasets else list(QUICK_DATASETS if args.quick else DATASETS)
    args.methods = args.methods.split(",") if args.methods else list(METHODS)
    for m in args.methods:
        if m not in METHODS:
            ap.error(f"unknown method {m!r}")
    args.folds = args.folds or (2 if args.quick else 10)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = (
        "truncated_gradient_uci"
        + ("" if args.loss == "squared" else f"_{args.loss}")
        + ("_quick" if args.quick else "")
    )
    doc = {
        "date": utc_now(),
        "command": command_line(argv or sys.argv[1:]),
        "machine": machine(),
        "versions": versions(),
        "seed": args.seed,
        "folds": args.folds,
        "loss": args.loss,
        "max_train": args.max_train,
        "loss_tol": LOSS_TOL,
        "pass_decay": PASS_DECAY,
        "eta_grid": list(ETA_GRID),
        "max_passes": MAX_PASSES,
        "paper": PAPER,
        "datasets": [],
    }
    t0 = time.perf_counter()

    def save():
        doc["seconds"] = time.perf_counter() - t0
        doc["summary"] = summary(doc)
        (out / f"{stem}.json").write_text(json.dumps(doc, indent=1))
        (out / f"{stem}.md").write_text(render(doc))

    # Compile the kernels once, outside the timings.
    Xw = sp.random(200, 30, density=0.2, format="csr", random_state=0)
    yw = np.where(np.arange(200) % 2, 1.0, -1.0)
    for mkey in ("tg", "tg_theta_g", "rounding", "subgradient"):
        online_fit(Xw, yw, mkey, 1e-3, 0.1, 2, loss=args.loss)
    cd_path(Xw, yw, [0.01], args.loss)
    for name in names:
        doc["datasets"].append(run_dataset(name, args))
        save()
    doc["png"] = plot(doc, out / f"{stem}.png")
    save()
    print(f"wrote {out / f'{stem}.md'} ({doc['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
