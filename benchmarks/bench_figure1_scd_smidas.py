#!/usr/bin/env python
"""Figure 1 of Shalev-Shwartz & Tewari (2009): SCD, DetCD, SMIDAS and truncated gradient,
objective against data accesses.

Every solver minimises the paper's problem, L1 logistic regression without intercept
(the paper's Eq. (1) has none; its Figure 1 curves start at log 2 = 0.693, the logistic
loss of w = 0),

    P(w) = (1/m) sum_i log(1 + exp(-y_i x_i . w)) + lam ||w||_1,

on the same in-memory data, and records P after every epoch (SCD), step (DetCD) or pass
(SMIDAS, truncated gradient) against the cumulative number of nonzeros of X read
(``History.data_accesses``, the paper's x-axis), up to one fixed budget of
``--budget`` x nnz(X) accesses for all. P* = CoordinateDescent(tol=1e-10).

Data (the paper's RCV1 CCAT is not available here; Reuters-21578 'earn' stands in):

* ``earn``: Reuters-21578 ModApte 'earn' train (tf-idf, rows of unit norm), lam = 0.05 lam_max;
* ``earn_small``: the same at the paper's REUTERS lam = 1e-6;
* ``magic04s``: MAGIC gamma telescope, its 10 features min-max scaled to [-1, 1] (the paper
  assumes x in [-1, 1]^d), plus 1,000 random 0/1 features with P(1) = 0.05; lam = 1e-4;
* ``magic04d``: the same with 1,000 random +-1 features (fully dense); lam = 1e-4.

SMIDAS and truncated gradient have a learning rate: as in the paper, each is run over a grid
of powers of 10 (extended by up to two decades while the best rate sits at an edge) with two
schedules, the paper's constant rate and eta / (1 + pass), and the run with the lowest final
objective is shown. Both take the rows in one fixed random order (seeded).

    .venv/bin/python benchmarks/bench_figure1_scd_smidas.py            # 4 settings, budget 20 nnz(X)
    .venv/bin/python benchmarks/bench_figure1_scd_smidas.py --quick    # earn + magic04s, budget 5, small grid
    .venv/bin/python benchmarks/bench_figure1_scd_smidas.py --settings magic04d --budget 30

Writes benchmarks/results/figure1.{md,json,png} (``_quick`` suffix with --quick).
"""

from __future__ import annotations

from _common import (
    DATA_DIR,
    RESULTS_DIR,
    git,
    load_svmlight_cached,
    machine,
    repo_on_path,
    single_thread,
    utc_now,
    versions,
)

single_thread()  # before numpy is imported
repo_on_path()

import argparse
import hashlib
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

REF_TOL = 1e-10
EARN = ("reuters21578/modapte_earn_train.svm.bz2", 27901)
MAGIC = ("magic04/magic04.svm.bz2", 10)
ARCENE = ("arcene/arcene.bz2", 10000)
# The paper's search for the rate of SMIDAS and TruncGrad: "over the range 1e-6 to 1e-1 in exponentially
# increasing step sizes" (sec. 4), a constant rate; extended by a decade (at most twice) when the best is at an edge.
PAPER_GRID = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1]

# setting -> data, lam or lam_ratio, label, initial learning-rate grids (powers of 10)
SETTINGS = {
    "earn": {
        "data": "earn",
        "lam_ratio": 0.05,
        "label": "Reuters earn, lam = 0.05 lam_max",
    },
    "earn_small": {
        "data": "earn",
        "lam": 1e-6,
        "label": "Reuters earn, lam = 1e-6 (paper's REUTERS lam)",
    },
    "magic04s": {
        "data": "magic04s",
        "lam": 1e-4,
        "label": "MAGIC04S (sparse), lam = 1e-4",
    },
    "arcene_2": {
        "data": "arcene",
        "lam": 1e-2,
        "label": "ARCENE, lam = 1e-2 (paper's top-middle panel)",
        "budget": 200,
    },
    "arcene_6": {
        "data": "arcene",
        "lam": 1e-6,
        "label": "ARCENE, lam = 1e-6 (paper's bottom-left panel)",
        "budget": 200,
    },
    "magic04d": {
        "data": "magic04d",
        "lam": 1e-4,
        "label": "MAGIC04D (dense), lam = 1e-4",
    },
}
QUICK = {
    "settings": ["earn", "magic04s"],
    "budget": 5,
    "grid": {
        "earn": {"smidas": [1.0, 10.0], "truncgrad": [0.1, 1.0]},
        "magic04s": {"smidas": [0.1, 1.0], "truncgrad": [1e-2, 1e-1]},
    },
}
SCHEDULES = ("const",)  # the paper's constant rate (the grid); the library's default runs once beside it
METHODS = (
    "scd_paper",
    "detcd_paper",
    "smidas",
    "truncgrad",
    "scd",
    "detcd",
    "smidas_auto",
    "truncgrad_auto",
    "cd",
)
# The paper's series (its beta = 1/4, its constant rates) and the library's (tuned) defaults beside them.
PAPER_SERIES = ("scd_paper", "detcd_paper", "smidas", "truncgrad")
DEFAULT_SERIES = ("scd", "detcd", "smidas_auto", "truncgrad_auto")
LABELS = {
    "scd": "SCD (library: column curvature)",
    "scd_paper": "SCD (paper's beta = 1/4)",
    "detcd": "DetCD (library: column curvature)",
    "detcd_paper": "DetCD (paper's beta = 1/4)",
    "smidas": "SMIDAS (paper: best constant eta)",
    "truncgrad": "TruncGrad (paper: best constant eta)",
    "smidas_auto": "SMIDAS (library default rates)",
    "truncgrad_auto": "TruncGrad (library default rates)",
    "cd": "CD (newGLMNET, reference)",
}
STYLE = {
    "scd": ("C0", "--"),
    "scd_paper": ("C0", "-"),
    "detcd": ("C1", "--"),
    "detcd_paper": ("C1", "-"),
    "smidas": ("C2", "-"),
    "truncgrad": ("C3", "-"),
    "smidas_auto": ("C2", "--"),
    "truncgrad_auto": ("C3", "--"),
    "cd": ("0.5", ":"),
}
CHECKPOINTS = (0.1, 0.25, 0.5, 1.0)  # fractions of the budget reported in the tables


# ============================================================================ data
def load_data(name, data_dir, seed, cache_dir):
    """(X, y, description) for 'earn', 'magic04s' or 'magic04d'. X is CSR, or a dense
    ndarray for magic04d; y in {-1, +1}."""
    from sklearn.datasets import load_svmlight_file

    if name == "arcene":
        rel, d = ARCENE
        X, y = load_svmlight_file(str(Path(data_dir) / rel), n_features=d)
        X = sp.csr_matrix(X, dtype=np.float64)
        scale = np.asarray(abs(X).max(axis=0).todense()).ravel()
        scale[scale == 0] = 1.0
        X = sp.csr_matrix(X @ sp.diags(1.0 / scale))  # column max-abs: x in [0, 1]^d, the paper's assumption
        return (
            X,
            np.where(y > 0, 1.0, -1.0),
            (
                "integer mass-spectrometry features, each column divided by its max |x_ij| (the paper assumes "
                "x in [-1, 1]^d and does not say how it scaled ARCENE)"
            ),
        )
    if name == "earn":
        rel, d = EARN
        X, y = load_svmlight_cached(Path(data_dir) / rel, d, cache_dir, "earn")
        return X, np.where(y > 0, 1.0, -1.0), "tf-idf rows of unit L2 norm, as in the data set"
    rel, d = MAGIC
    M, y = load_svmlight_file(str(Path(data_dir) / rel), n_features=d)
    M = M.toarray()
    lo, hi = M.min(axis=0), M.max(axis=0)
    M = 2.0 * (M - lo) / (hi - lo) - 1.0  # min-max to [-1, 1], column by column
    n = M.shape[0]
    rng = np.random.default_rng(seed)
    if name == "magic04s":
        R = (rng.random((n, 1000)) < 0.05).astype(np.float64)
        X = sp.csr_matrix(np.hstack([M, R]))
        desc = "10 MAGIC features min-max scaled to [-1, 1] + 1,000 random 0/1 features, P(1) = 0.05"
    else:
        R = np.where(rng.random((n, 1000)) < 0.5, -1.0, 1.0)
        X = np.ascontiguousarray(np.hstack([M, R]))
        desc = "10 MAGIC features min-max scaled to [-1, 1] + 1,000 random +-1 features, P(+1) = 0.5"
    return X, np.where(y > 0, 1.0, -1.0), desc


def nnz_of(X):
    return int(X.nnz) if sp.issparse(X) else int(np.count_nonzero(X))


# ============================================================================ runs
class _Budget(Exception):
    """Raised from a batch solver's callback once the access budget is spent."""


def _curve_from_history(h, upto=None):
    k = len(h.objective) if upto is None else upto
    return {
        "accesses": [int(a) for a in h.data_accesses[:k]],
        "objective": [float(v) for v in h.objective[:k]],
        "nnz": [int(v) for v in h.nnz[:k]],
        "time": [float(v) for v in h.time[:k]],
    }


def run_batch(method, problem, budget_accesses, seed):
    """SCD / DetCD until the first history row at or past the budget (stopped from the callback)."""
    from l1scale.solvers.scd import GreedyCD, StochasticCD

    curvature = "paper" if method.endswith("_paper") else "column"
    seen = {}

    def stop(it, history):
        seen["h"] = history
        if history.data_accesses[-1] >= budget_accesses:
            raise _Budget

    if method.startswith("scd"):
        # Algorithm 2's uniform draws (the default samples the coordinates that can move).
        solver = StochasticCD(
            tol=1e-15, max_iter=10**7, random_state=seed, curvature=curvature, sampling="uniform", callback=stop
        )
    else:
        solver = GreedyCD(tol=1e-15, max_iter=10**7, epoch_size=1, curvature=curvature, callback=stop)
    t0 = time.perf_counter()
    stop_reason = "budget"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = solver.solve(problem)
            seen["h"] = res.history
            stop_reason = res.stop_reason
        except _Budget:
            pass
    out = _curve_from_history(seen["h"])
    out.update(seconds=time.perf_counter() - t0, stop_reason=stop_reason, params={"curvature": curvature})
    return out


def make_online(method, schedule, eta, n, passes):
    from l1scale.solvers.smidas import SMIDAS
    from l1scale.solvers.truncated import TruncatedGradient

    if schedule == "auto":  # the library's defaults (rates calibrated on the data)
        if method == "smidas":
            return SMIDAS(shuffle=False, max_iter=passes, holdout=0)
        return TruncatedGradient(sparsifier="truncated", max_iter=passes, holdout=0)
    # the paper's rules, every one passed explicitly: a constant rate eta (no decay within or across passes)
    if method == "smidas":
        return SMIDAS(
            eta=eta, eta_decay=0.0, eta_intercept=0.0, schedule="paper", shuffle=False, max_iter=passes, holdout=0
        )
    # the paper's truncated gradient (the variant 'corresponding to SMIDAS'): theta = inf, K = 1, gravity = lam
    return TruncatedGradient(
        sparsifier="truncated",
        K=1,
        theta=None,
        eta0=eta,
        power_t=0.0,
        t0=1.0,
        pass_decay=1.0,
        schedule="paper",
        max_iter=passes,
        holdout=0,
    )


def run_online(method, schedule, eta, problem, stream_problem, passes, n, p0):
    """One SMIDAS / TruncGrad run of ``passes`` passes; P(w) from Problem.objective after each pass."""
    solver = make_online(method, schedule, eta, n, passes)
    objs, nnzs = [], []

    def record(z, history):
        st = solver.state_
        coef = st.coef
        v = problem.objective(coef, st.intercept)
        objs.append(v if np.isfinite(v) else float("inf"))
        nnzs.append(int(np.count_nonzero(coef)))

    solver.callback = record
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            res = solver.solve(stream_problem)
    h = res.history
    out = {
        "accesses": [0] + [int(a) for a in h.data_accesses],
        "objective": [p0] + objs,
        "nnz": [0] + nnzs,
        "time": [0.0] + [float(t) for t in h.time],
        "seconds": time.perf_counter() - t0,
        "stop_reason": res.stop_reason,
        "params": {"eta": eta, "schedule": schedule},
    }
    if method == "smidas":
        out["support_work"] = int(solver.state_.support_work)
    if schedule == "auto":  # the rate the calibration chose
        chosen = solver.eta if method == "smidas" else solver.eta0
        out["params"]["eta"] = float(chosen) if chosen is not None else float("nan")
    return out


def tune_online(method, grid0, problem, stream_problem, passes, n, p0, extend, log):
    """Runs over the grid for both schedules (extending a decade at an edge, up to ``extend``
    times per schedule); returns (all runs, best run)."""
    runs = []
    for schedule in SCHEDULES:
        grid = sorted(grid0)
        done = {}
        extensions = 0
        while True:
            for eta in grid:
                if eta in done:
                    continue
                r = run_online(method, schedule, eta, problem, stream_problem, passes, n, p0)
                done[eta] = r
                runs.append(r)
                log(
                    f"   {method:9s} {schedule:5s} eta={eta:<8g} final P={r['objective'][-1]:.6g} "
                    f"nnz={r['nnz'][-1]} ({r['seconds']:.1f} s)"
                )
            finals = {e: done[e]["objective"][-1] for e in grid}
            best = min(grid, key=lambda e: finals[e])
            if extensions >= extend or not np.isfinite(finals[best]):
                break
            if best == grid[0]:
                grid.insert(0, grid[0] / 10.0)
            elif best == grid[-1]:
                grid.append(grid[-1] * 10.0)
            else:
                break
            extensions += 1
    best = min(runs, key=lambda r: r["objective"][-1])
    return runs, best


def reference(problem, key, cache_dir, use_cache):
    """P* = CoordinateDescent(tol=1e-10), cached on disk by the data and lam."""
    from l1scale.solvers.cd import CoordinateDescent

    path = Path(cache_dir) / f"ref_{key}.json"
    if use_cache and path.exists():
        out = json.loads(path.read_text())
        out["cached"] = True
        return out
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = CoordinateDescent(tol=REF_TOL, max_iter=1000).solve(problem)
    out = {
        "objective": float(res.objective),
        "nnz": int(np.count_nonzero(res.coef)),
        "n_iter": int(res.n_iter),
        "relative_gap": float(res.relative_certificate),
        "converged": bool(res.converged),
        "seconds": time.perf_counter() - t0,
        "cached": False,
        "curve": {
            **_curve_from_history(res.history),
            "seconds": time.perf_counter() - t0,
            "stop_reason": res.stop_reason,
            "params": {"tol": REF_TOL},
        },
    }
    path.write_text(json.dumps(out))
    return out


def _data_key(X, y, lam):
    h = hashlib.sha1()
    if sp.issparse(X):
        for a in (X.data, X.indices, X.indptr):
            h.update(np.ascontiguousarray(a).tobytes())
    else:
        h.update(np.ascontiguousarray(X).tobytes())
    h.update(y.tobytes())
    h.update(repr(float(lam)).encode())
    return h.hexdigest()[:16]


def warm_up():
    """Compile / load the Numba kernels on a tiny problem, so that no run's seconds include it."""
    from l1scale.data.stream import Stream
    from l1scale.problems import Problem, StreamProblem

    rng = np.random.default_rng(0)
    for X in (sp.random(200, 30, density=0.2, random_state=0, format="csr"), rng.standard_normal((200, 30))):
        y = np.where(rng.random(200) < 0.5, -1.0, 1.0)
        pr = Problem(X, y, lam=0.01, fit_intercept=False)
        spb = StreamProblem(Stream.from_arrays(X, y, chunk_rows=200), "logistic", lam=0.01, fit_intercept=False)
        for m in ("scd", "scd_paper", "detcd"):
            run_batch(m, pr, 3 * nnz_of(X), 0)
        for m in ("smidas", "truncgrad"):
            for s in (*SCHEDULES, "auto"):
                run_online(m, s, 0.1, pr, spb, 2, 200, float(np.log(2)))
        from l1scale.solvers.cd import CoordinateDescent

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            CoordinateDescent(tol=1e-6, max_iter=5).solve(pr)


# ============================================================================ analysis
def value_at(curve, accesses):
    """The objective of the last record at or before ``accesses`` (None if none)."""
    best = None
    for a, v in zip(curve["accesses"], curve["objective"]):
        if a <= accesses:
            best = v
        else:
            break
    return best


def rel(v, pstar):
    return None if v is None else (v - pstar) / pstar


def analyse(st):
    """Checkpoint tables and the paper's orderings for one setting (added to ``st``)."""
    pstar, nnz, budget = st["pstar"], st["nnz"], st["budget"]
    curves = st["curves"]
    table = {}
    for m, c in curves.items():
        table[m] = {str(f): rel(value_at(c, f * budget * nnz), pstar) for f in CHECKPOINTS}
    st["checkpoints"] = table
    # online accesses counted like SCD's (two reads of x_i per example: margin and update)
    doubled = {}
    for m in ("smidas", "truncgrad", "smidas_auto", "truncgrad_auto"):
        if m in curves:
            doubled[m] = {str(f): rel(value_at(curves[m], f * budget * nnz / 2.0), pstar) for f in CHECKPOINTS}
    st["checkpoints_online_x2"] = doubled
    checks = []

    def lower(a, b, f, tab_b=None):
        va, vb = table[a][str(f)], (tab_b or table)[b][str(f)]
        return va is not None and vb is not None and va < vb

    name = st["key"]
    if st["data"] == "earn" and "scd" in curves:
        for scd, group in (("scd_paper", PAPER_SERIES), ("scd", DEFAULT_SERIES)):
            if scd not in curves:
                continue
            others = [m for m in group if m != scd and m in curves]
            per_f = {str(f): all(lower(scd, o, f) for o in others) for f in CHECKPOINTS}
            per_f2 = {
                str(f): all(lower(scd, o, f, doubled if o in doubled else None) for o in others) for f in CHECKPOINTS
            }
            fB = str(CHECKPOINTS[-1])
            pairs = {o: lower(scd, o, fB) for o in others}
            pairs2 = {o: lower(scd, o, fB, doubled if o in doubled else None) for o in others}
            checks.append(
                {
                    "claim": f"{LABELS[scd]} below "
                    + ", ".join(LABELS[o] for o in others)
                    + f" per data access ({name})",
                    "holds_at": per_f,
                    "holds_at_online_x2": per_f2,
                    "below_at_budget": pairs,
                    "below_at_budget_online_x2": pairs2,
                    "holds": per_f[str(CHECKPOINTS[-1])],
                }
            )
    if st["data"] == "magic04d" and {"smidas", "truncgrad"} <= set(curves):
        per_f = {str(f): lower("smidas", "truncgrad", f) for f in CHECKPOINTS}
        checks.append(
            {
                "claim": "SMIDAS beats TruncGrad on dense MAGIC04D",
                "holds_at": per_f,
                "holds": per_f[str(CHECKPOINTS[-1])],
            }
        )
    if st["data"] == "arcene" and {"smidas", "truncgrad", "scd_paper", "detcd_paper"} <= set(curves):
        if st["lam"] >= 1e-3:
            per_f = {str(f): lower("smidas", "truncgrad", f) for f in CHECKPOINTS}
            claim = "SMIDAS much better than TruncGrad on ARCENE at the large lam (paper's constant rates)"
        else:
            per_f = {}
            for f in CHECKPOINTS:
                a_, b_ = table["smidas"][str(f)], table["truncgrad"][str(f)]
                per_f[str(f)] = a_ is not None and b_ is not None and a_ <= 2.0 * b_
            claim = "SMIDAS competitive with TruncGrad on ARCENE at the small lam (rel. subopt. <= 2x TruncGrad's)"
        checks.append({"claim": claim, "holds_at": per_f, "holds": per_f[str(CHECKPOINTS[-1])]})
        per_f = {str(f): lower("scd_paper", "detcd_paper", f) for f in CHECKPOINTS}
        checks.append(
            {
                "claim": "SCD does well and DetCD is slow on ARCENE (paper's beta: SCD below DetCD)",
                "holds_at": per_f,
                "holds": per_f[str(CHECKPOINTS[-1])],
            }
        )
    if st["data"] == "magic04s" and {"smidas", "truncgrad"} <= set(curves):
        per_f = {}
        for f in CHECKPOINTS:
            a, b = table["truncgrad"][str(f)], table["smidas"][str(f)]
            per_f[str(f)] = a is not None and b is not None and a <= 2.0 * b
        checks.append(
            {
                "claim": "TruncGrad competitive on sparse MAGIC04S (rel. subopt. <= 2x SMIDAS's)",
                "holds_at": per_f,
                "holds": per_f[str(CHECKPOINTS[-1])],
            }
        )
    st["checks"] = checks


# ============================================================================ output
def _fmt(v):
    if v is None:
        return "-"
    if v <= 0:
        return f"{v:.1e}" if v < 0 else "0"
    return f"{v:.2e}"


def _git():
    try:
        rev = git("rev-parse", "--short", "HEAD").strip()
        dirty = git("status", "--porcelain", "l1scale", "benchmarks/bench_figure1_scd_smidas.py").splitlines()
        return {"commit": rev, "uncommitted_l1scale": [ln[3:] for ln in dirty if ln.strip()]}
    except OSError:
        return {"commit": "?", "uncommitted_l1scale": []}


def plot(doc, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sts = doc["settings"]
    k = len(sts)
    cols = 2 if k > 1 else 1
    rows = math.ceil(k / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.4 * rows), squeeze=False)
    for ax, st in zip(axes.flat, sts):
        nnz, pstar = st["nnz"], st["pstar"]
        floor = 1e-12
        for m in METHODS:
            if m not in st["curves"]:
                continue
            c = st["curves"][m]
            x = np.array(c["accesses"], dtype=float) / nnz
            yv = np.maximum((np.array(c["objective"]) - pstar) / pstar, floor)
            color, ls = STYLE[m]
            label = LABELS[m]
            if m in ("smidas", "truncgrad"):
                p = c["params"]
                label += f" (eta={p['eta']:g}, {p['schedule']})"
            ax.semilogy(x, yv, color=color, ls=ls, marker="." if len(x) < 40 else None, ms=4, lw=1.4, label=label)
        ax.set_xlim(0, st["budget"] * 1.02)
        lows = [min(c["objective"]) for m, c in st["curves"].items() if m != "cd"]
        if lows:
            ax.set_ylim(bottom=max(floor, (min(lows) - pstar) / pstar / 5.0))
        ax.set_xlabel(f"data accesses / nnz(X)   (nnz(X) = {nnz:,})")
        ax.set_ylabel("(P - P*) / P*")
        ax.set_title(
            f"{st['label']}\nn={st['n']:,}, d={st['d']:,}, P*={pstar:.5g}, nnz(w*)={st['reference']['nnz']}",
            fontsize=9.5,
        )
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7.5, loc="upper right")
    for ax in list(axes.flat)[k:]:
        ax.axis("off")
    fig.suptitle(
        "Shalev-Shwartz & Tewari (2009) Figure 1 with l1scale: L1 logistic regression, "
        "relative suboptimality vs data accesses",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(doc) -> str:
    L = []
    a = L.append
    a("# Figure 1 of Shalev-Shwartz & Tewari (2009): SCD, DetCD, SMIDAS, truncated gradient\n")
    a(
        "L1 logistic regression without intercept, the paper's problem (its Eq. (1) has no bias; its Figure 1 "
        "curves start at log 2 = 0.693, the logistic loss of w = 0, so the loss is logistic, not squared): "
        "`P(w) = (1/m) sum_i log(1 + exp(-y_i x_i.w)) + lam ||w||_1`. Each solver's objective is plotted against "
        "the cumulative number of nonzeros of X it has read (`History.data_accesses`), up to the same budget of "
        f"{doc['budget']:g} x nnz(X) for all (ARCENE: 200). P\\* = `CoordinateDescent(tol=1e-10)` (relative duality gap "
        "<= 1e-10).\n"
    )
    a(f"![Figure 1]({Path(doc['png']).name})\n")
    a("## Setup\n")
    g = doc["git"]
    dirty = g["uncommitted_l1scale"]
    a(f"- Date: {doc['date']}; command: `{doc['command']}`; total wall time {doc['seconds_total']:.0f} s.")
    a(
        f"- Machine: {doc['machine']}; {doc['versions']}; l1scale git {g['commit']}"
        + (
            f" **plus uncommitted changes** ({', '.join(dirty)})"
            if dirty
            else " (no uncommitted changes in l1scale/ or this script)"
        )
        + "."
    )
    a(
        f"- Seed {doc['seed']}: the MAGIC random features (`numpy.random.default_rng(seed)`), the row order of the "
        "online methods (one permutation of the rows, `default_rng(seed + 1)`, the same for every pass and run), "
        "SCD's coordinate draws (`random_state=seed`)."
    )
    a("- Solvers, as implemented in l1scale (module docstrings):")
    a(
        "  - **SCD** `StochasticCD(random_state=seed)`: Algorithm 2, duplicated features, one epoch = 2d "
        "coordinate draws; history after each epoch. Its default step uses a per-column curvature bound "
        "`beta_j = sum_i x_ij^2 / (4 m)`; **SCD (paper's beta)** (`curvature='paper'`) uses the paper's "
        "`beta = 1/4` (data in [-1, 1]). Data accesses: column j read for g_j and again for the margin "
        "update when the step is nonzero."
    )
    a(
        "  - **DetCD** `GreedyCD(epoch_size=1)`: the coordinate of largest guaranteed decrease; each step "
        "computes the full gradient X^T r (nnz(X) accesses); history after every step. Same two curvatures."
    )
    a(
        "  - **SMIDAS** `SMIDAS(eta, eta_decay, shuffle=False, holdout=0)`: Algorithm 3, p = 2 ln d. "
        "**TruncGrad** `TruncatedGradient(sparsifier='truncated', theta=inf, K=1, gravity=lam, eta0, power_t, t0, "
        "holdout=0)`, the variant 'corresponding to SMIDAS' (SMIDAS with p = 2). Both through "
        "`StreamProblem(Stream.from_arrays(X[perm], y[perm], chunk_rows=m), lam=lam, fit_intercept=False)`; "
        "one pass = m examples = nnz(X) accesses; P(w) = `Problem.objective(coef)` after every pass."
    )
    a(
        "  - **Two series.** *The paper's* (solid lines): SCD and DetCD with the paper's beta = 1/4 "
        "(`curvature='paper'`), SMIDAS and TruncGrad with a **constant** rate (`schedule='paper'`, SMIDAS "
        "`eta_decay=0`, TruncGrad `power_t=0, pass_decay=1`, all passed explicitly) searched as the paper did, "
        "over 1e-6 ... 1e-1 in powers of 10 (extended by a decade, at most twice, while the best sits at an edge), "
        "the run of lowest objective at the end of the budget plotted and every run listed below. *The library's "
        "defaults* (dashed): SCD / DetCD with the per-column curvature, SMIDAS / TruncGrad with no rate given "
        "(`schedule='auto'`: the rate calibrated on the data and decayed across passes; one run each)."
    )
    a(
        "- The paper's REUTERS is RCV1 CCAT (m = 806,791, d = 378,452, 9.8e7 nonzeros, lam = 1e-6). **RCV1 is not "
        "available here**; Reuters-21578 ModApte 'earn' (train; tf-idf, rows of unit norm) stands in, at "
        "lam = 0.05 lam_max (a sparse, non-trivial model) and at the paper's lam = 1e-6 (nearly unregularised on "
        "this much smaller set: P\\* ~ 0.006, ~600 features)."
    )
    a(
        "- ARCENE (the paper's two middle panels, lam = 1e-2 and 1e-6): the 100 training rows, 10,000 integer "
        "features; each column divided by its largest |x_ij| so that x is in [0, 1]^d (the paper assumes "
        "[-1, 1]^d and does not say how it scaled ARCENE). Budget 200 x nnz(X) (the paper's panels run to "
        "about 460 and 2,200 x nnz(X))."
    )
    a(
        "- MAGIC04S / MAGIC04D: the 10 MAGIC features **min-max scaled to [-1, 1]** (the paper assumes "
        "x in [-1, 1]^d), then 1,000 random features: 0/1 with P(1) = 0.05 (S), +-1 with probability 1/2 (D). "
        "lam = 1e-4, the value in the paper's MAGIC panel titles (its text says 'all plots for the MAGIC datasets "
        "are for lam = 10^-3'; the two disagree). At lam = 1e-4 most random features enter w\\* (they fit noise "
        "of size ~1/sqrt(m)), as they must at any lam below ~4e-3."
    )
    a("")
    for st in doc["settings"]:
        ref = st["reference"]
        a(f"## {st['key']}: {st['label']}\n")
        a(
            f"n = {st['n']:,}, d = {st['d']:,}, nnz(X) = {st['nnz']:,} (density {st['density']:.2%}); {st['desc']}. "
            f"lam = {st['lam']:.4g} (lam_max = {st['lam_max']:.4g}, ratio {st['lam'] / st['lam_max']:.3g}). "
            f"P\\* = {st['pstar']:.10g}, nnz(w\\*) = {ref['nnz']} (CD: {ref['n_iter']} iterations, relative gap "
            f"{ref['relative_gap']:.1e}, {ref['seconds']:.1f} s{', cached' if ref.get('cached') else ''}). "
            f"P(0) = {st['p0']:.6f}. Budget {st['budget']:g} x nnz(X) = {st['budget'] * st['nnz']:.3g} accesses.\n"
        )
        a(
            "Relative suboptimality (P - P\\*)/P\\* of the last record at or before the given fraction of the "
            "budget (x nnz(X) accesses), final nnz(w), records, solver seconds:\n"
        )
        heads = [f"{f * st['budget']:g}" for f in CHECKPOINTS]
        a("| solver | " + " | ".join(f"@ {h}" for h in heads) + " | nnz(w) | records | seconds | parameters |")
        a("|---|" + "---|" * (len(heads) + 4))
        for m in METHODS:
            if m not in st["curves"]:
                continue
            c = st["curves"][m]
            row = [_fmt(st["checkpoints"][m][str(f)]) for f in CHECKPOINTS]
            par = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in c["params"].items())
            a(
                f"| {LABELS[m]} | " + " | ".join(row) + f" | {c['nnz'][-1]} | {len(c['objective'])} | "
                f"{c['seconds']:.1f} | {par} |"
            )
        a("")
        for m in ("smidas", "truncgrad"):
            runs = st.get("tuning", {}).get(m)
            if not runs:
                continue
            a(f"{LABELS[m]} learning-rate grid (final (P - P\\*)/P\\* at the budget; **bold** = chosen):\n")
            etas = sorted({r["params"]["eta"] for r in runs})
            a("| schedule | " + " | ".join(f"eta={e:g}" for e in etas) + " |")
            a("|---|" + "---|" * len(etas))
            best = st["curves"][m]["params"]
            for s in SCHEDULES:
                cells = []
                for e in etas:
                    r = next((r for r in runs if r["params"]["eta"] == e and r["params"]["schedule"] == s), None)
                    if r is None:
                        cells.append("")
                        continue
                    v = _fmt(rel(r["final"], st["pstar"]))
                    cells.append(f"**{v}**" if (e == best["eta"] and s == best["schedule"]) else v)
                a(f"| {s} | " + " | ".join(cells) + " |")
            secs = sum(r["seconds"] for r in runs)
            a(f"\n({len(runs)} runs, {secs:.0f} s in all.)\n")
        for ch in st["checks"]:
            at = ", ".join(f"{float(f) * st['budget']:g}: {'yes' if v else 'no'}" for f, v in ch["holds_at"].items())
            line = f"- *{ch['claim']}*: **{'holds' if ch['holds'] else 'does not hold'}** at the budget (by checkpoint: {at})"
            if "holds_at_online_x2" in ch:
                at2 = ", ".join(
                    f"{float(f) * st['budget']:g}: {'yes' if v else 'no'}" for f, v in ch["holds_at_online_x2"].items()
                )
                line += f"; with the online methods' accesses doubled ({at2})"
            a(line + ".")
        a("")
    if doc.get("verdict"):
        a("## Does the paper's ordering hold?\n")
        a(doc["verdict"])
        a("")
    a("## Notes\n")
    a(
        "- **Data accesses count every read of a stored x_ij, for every solver.** SCD/DetCD read column j for g_j "
        "and again for the margin update; SMIDAS and TruncGrad read x_i to score an example and again to learn "
        "from it. The paper does not say which it counted (reads per step, or nonzeros per example would halve "
        "every curve alike). As a sensitivity check the tables also test the SCD orderings with the online "
        "methods' accesses doubled ('online_x2')."
    )
    a(
        "- SMIDAS's cost per example is O(nnz(x_i)) amortised, as the paper states: the L1 shrink of the "
        "coordinates an example does not touch is owed and paid by the whole support once the updates reach its "
        "size (`l1scale/solvers/smidas.py`; until 2026-11-30 every example shrank the whole support, "
        "O(nnz(x_i) + nnz(theta)), which `SMIDAS(exact=True)` still does). Data accesses do not include that "
        "support work (`support_work` in the JSON)."
    )
    a(
        "- *CD (newGLMNET, reference)*: l1scale's `CoordinateDescent` (Newton steps with inner cyclic CD and "
        "shrinking) run to the reference tolerance; not in the paper's figure, shown for scale (its curve leaves "
        "the bottom of the panels)."
    )
    a(
        "- Seconds are wall times on a shared 2-core machine and only indicative; the paper's and our x-axis is "
        "data accesses. DetCD's per-step certificate (one X^T r) is monitoring and not counted, as in "
        "`l1scale.solvers.scd`."
    )
    a(
        "- A possible reason SCD trails the tuned online methods on earn (our reading, not tested here): w\\* has "
        "16 (lam = 0.05 lam_max) or 602 (lam = 1e-6) nonzeros among 2d = 55,802 duplicated coordinates, and every "
        "uniform draw reads its column to compute g_j even when the coordinate stays at 0, so most of SCD's "
        "accesses go to coordinates that do not move; an online pass instead moves every weight of every row. "
        "The paper's RCV1 CCAT (m = 806,791 > d) at lam = 1e-6 has far more examples per feature than earn "
        "(m = 9,603 < d = 27,901)."
    )
    a(
        "- **Paper vs ours, explained.** (1) *SCD with the paper's beta = 1/4 on earn*: the step 1/beta assumes "
        "the curvature along coordinate j, (beta / m) sum_i x_ij^2, is beta, i.e. columns with mean square 1. "
        "On earn's unit-norm TF-IDF rows the column mean squares are 8e-6 (median), 7e-5 (90th percentile) and "
        "1.7e-2 (largest), so beta = 1/4 overstates the curvature 60 to 10^5 times and SCD's steps are that much "
        "too short: it ends at 0.98 (0.05 lam_max) and 96 (lam = 1e-6) relative suboptimality where the "
        "per-column bound gives 0.028 and 3.4. The paper's RCV1 CCAT (not available here) is also unit-norm "
        "TF-IDF; its REUTERS panel shows every method far from the optimum at 2e9 accesses (SCD ~0.35-0.4 from "
        "0.69), so its claim is about a ranking early in the run, which we do not see on earn with either series. "
        "(2) *ARCENE*, columns scaled to [0, 1], column mean squares 0.08 (median) to 0.66: beta = 1/4 is only "
        "1.5-13x too large, and there the paper's ordering largely holds: with the paper's rules SCD is the lowest "
        "at lam = 1e-2 (1.1e-2, SMIDAS 4.3e-2, DetCD 9.3e-2, TruncGrad 0.22) and DetCD is far slower at both lam, "
        "as the paper says; at lam = 1e-6 SMIDAS (best constant eta = 10, outside the paper's 1e-6 ... 1e-1) is "
        "below SCD (1.0 vs 7.0), and SMIDAS is not 'worse than TruncGrad' there but better (1.0 vs 15). "
        "(3) *The rate range*: the best constant rate is above the paper's range (1e-1) for SMIDAS on earn (1, "
        "10) and ARCENE at 1e-6 (10), for TruncGrad on earn at 1e-6 (10): the grid was extended as described; "
        "kept to the paper's range, the online methods would look worse and SCD relatively better, which may be "
        "part of the paper's ranking on REUTERS. (4) *The library's defaults* (dashed) are ahead of the paper's "
        "series almost everywhere on the online side (earn SMIDAS 2.9e-3 vs 4.8e-3, TruncGrad 5.8e-3 vs 2.7e-2; "
        "MAGIC04S TruncGrad 4.8e-3 vs 2.9e-2), but not on ARCENE, where the calibrated rates are far too small "
        "for TruncGrad (0.43 at lam = 1e-2 against 0.22) and SMIDAS at lam = 1e-6: with 100 rows of ~5,400 "
        "nonzeros each, a calibration on the data's largest row norm is pessimistic."
    )
    a("- One run per solver (seed fixed): SCD's curve and the online methods' ranking can move with the seed.")
    return "\n".join(L) + "\n"


def _pairs(d, value):
    names = [LABELS[k] for k, v in d.items() if bool(v) == value]
    return ", ".join(names) if names else "none"


def verdict(doc) -> str:
    """A paragraph per claim, with numbers, from the checks."""
    checks = [(st["key"], c) for st in doc["settings"] for c in st["checks"]]
    out = []
    if checks:
        held = [f"{c['claim']}" for _, c in checks if c["holds"]]
        failed = [f"{c['claim']}" for _, c in checks if not c["holds"]]
        out.append(
            f"In short ({len(held)} of {len(checks)} claims hold at the budget): holds: "
            + ("; ".join(held) if held else "none")
            + ". Does not hold: "
            + ("; ".join(failed) if failed else "none")
            + "."
        )
    for st in doc["settings"]:
        T = st["checkpoints"]
        fB = str(CHECKPOINTS[-1])
        B = st["budget"]
        if st["data"] == "earn":
            parts = [f"{LABELS[m]} {_fmt(T[m][fB])}" for m in METHODS if m in T]
            c = next((c for c in st["checks"] if c["claim"].startswith("SCD (library")), None)
            cp = next((c for c in st["checks"] if c["claim"].startswith("SCD (paper's beta")), None)
            s = f"**{st['key']}** (text; relative suboptimality at {B:g} x nnz(X): " + ", ".join(parts) + "): "
            if c:
                s += (
                    f"library SCD below the library's other defaults per data access "
                    f"**{'holds' if c['holds'] else 'does not hold'}** at the "
                    f"budget ({sum(c['holds_at'].values())}/{len(CHECKPOINTS)} checkpoints; "
                    f"{sum(c['holds_at_online_x2'].values())}/{len(CHECKPOINTS)} with online accesses doubled); "
                    "at the budget SCD is below "
                    + _pairs(c["below_at_budget"], True)
                    + " and not below "
                    + _pairs(c["below_at_budget"], False)
                    + " (online accesses doubled: not below "
                    + _pairs(c["below_at_budget_online_x2"], False)
                    + ")"
                )
            if cp:
                s += (
                    f"; the paper's series (SCD with beta = 1/4 against DetCD with beta = 1/4 and the best constant "
                    f"rates): **{'holds' if cp['holds'] else 'does not hold'}**, SCD below all at "
                    f"{sum(cp['holds_at'].values())}/{len(CHECKPOINTS)} checkpoints "
                    f"({sum(cp['holds_at_online_x2'].values())}/{len(CHECKPOINTS)} with online accesses doubled)"
                )
            out.append(s + ".")
        else:
            if not st["checks"]:
                continue
            sm, tg = T["smidas"][fB], T["truncgrad"][fB]
            line = " ".join(
                f"**{st['key']}**: {c['claim']}: **{'holds' if c['holds'] else 'does not hold'}** "
                f"({sum(c['holds_at'].values())}/{len(CHECKPOINTS)} checkpoints)."
                for c in st["checks"]
            )
            line += (
                f" At {B:g} x nnz(X), the paper's series: SMIDAS {_fmt(sm)}, TruncGrad {_fmt(tg)}, "
                f"SCD {_fmt(T['scd_paper'][fB])}, DetCD {_fmt(T['detcd_paper'][fB])}; the library's defaults: "
                + ", ".join(f"{LABELS[m]} {_fmt(T[m][fB])}" for m in DEFAULT_SERIES if m in T)
                + "."
            )
            if st["data"] == "magic04d" and T["scd"][fB] is not None and tg is not None:
                line += (
                    " The paper also remarks that on MAGIC04D TruncGrad minimises the objective better than "
                    f"SCD (SCD finding slightly sparser w): here TruncGrad {_fmt(tg)} vs SCD {_fmt(T['scd'][fB])}"
                    f" ({'agrees' if tg < T['scd'][fB] else 'disagrees'})."
                )
            out.append(line)
    return "\n\n".join(out)


# ============================================================================ main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="earn + magic04s, budget 5 x nnz(X), 2-value grids")
    ap.add_argument("--settings", default=None, help="comma list of " + ",".join(SETTINGS))
    ap.add_argument(
        "--budget",
        type=float,
        default=None,
        help="data accesses per solver, in units of nnz(X) "
        "(default 20; 5 with --quick); must be an integer for the online passes",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--extend", type=int, default=None, help="grid extensions per schedule (default 2; 0 with --quick)")
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--work-dir", default="/tmp/l1scale_bench_figure1", help="parsed data and P* cache")
    ap.add_argument("--no-cache", action="store_true", help="recompute P* even when cached")
    ap.add_argument("--out", default=str(RESULTS_DIR))
    ap.add_argument("--from-json", help="only re-render the markdown and the figure of an earlier run")
    args = ap.parse_args(argv)

    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text())
        for st in doc["settings"]:
            analyse(st)
        doc["verdict"] = verdict(doc)
        Path(args.from_json).write_text(json.dumps(doc, indent=1))
        plot(doc, Path(args.from_json).with_suffix(".png"))
        Path(args.from_json).with_suffix(".md").write_text(render(doc))
        return 0

    from l1scale.data.stream import Stream
    from l1scale.problems import Problem, StreamProblem

    t_start = time.perf_counter()
    names = args.settings.split(",") if args.settings else (QUICK["settings"] if args.quick else list(SETTINGS))
    for nm in names:
        if nm not in SETTINGS:
            ap.error(f"unknown setting {nm!r}; choose from {', '.join(SETTINGS)}")
    budget_default = QUICK["budget"] if args.quick else 20
    budget = args.budget if args.budget is not None else budget_default
    extend = args.extend if args.extend is not None else (0 if args.quick else 2)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if args.quick else ""
    doc = {
        "date": utc_now(),
        "command": "python "
        + " ".join(["benchmarks/bench_figure1_scd_smidas.py"] + (sys.argv[1:] if argv is None else list(argv))),
        "machine": machine(),
        "versions": versions(("numpy", "scipy", "numba", "scikit-learn", "matplotlib", "l1scale"), with_git=False),
        "git": _git(),
        "seed": args.seed,
        "budget": budget,
        "ref_tol": REF_TOL,
        "png": str(out / f"figure1{suffix}.png"),
        "settings": [],
    }

    def log(msg):
        print(f"[{time.perf_counter() - t_start:6.1f}s] {msg}", flush=True)

    def save(final=False):
        doc["seconds_total"] = time.perf_counter() - t_start
        if final:
            doc["verdict"] = verdict(doc)
        (out / f"figure1{suffix}.json").write_text(json.dumps(doc, indent=1))
        (out / f"figure1{suffix}.md").write_text(render(doc))
        if final:
            plot(doc, out / f"figure1{suffix}.png")

    warm_up()
    log("warm-up (Numba kernels) done")
    loaded = {}
    for name in names:
        cfg = SETTINGS[name]
        if cfg["data"] not in loaded:
            loaded.clear()
            loaded[cfg["data"]] = load_data(cfg["data"], args.data_dir, args.seed, work)
        X, y, desc = loaded[cfg["data"]]
        budget = cfg.get("budget", budget_default) if args.budget is None else args.budget
        passes = round(budget)
        n, d = X.shape
        nnz = nnz_of(X)
        problem = Problem(X, y, lam=1.0, fit_intercept=False)
        lam_max = problem.lam_max()
        lam = cfg["lam"] if "lam" in cfg else cfg["lam_ratio"] * lam_max
        problem = Problem(X, y, lam=lam, fit_intercept=False)
        p0 = problem.objective(np.zeros(d))
        log(f"== {name}: n={n:,} d={d:,} nnz={nnz:,} lam={lam:.4g} (lam_max={lam_max:.4g})")
        ref = reference(problem, f"{name}_{_data_key(X, y, lam)}", work, not args.no_cache)
        log(
            f"   P*={ref['objective']:.12g} nnz*={ref['nnz']} ({ref['seconds']:.1f} s"
            f"{', cached' if ref['cached'] else ''})"
        )
        st = {
            "key": name,
            "data": cfg["data"],
            "label": cfg["label"],
            "desc": desc,
            "n": n,
            "d": d,
            "nnz": nnz,
            "density": nnz / (n * d),
            "lam": lam,
            "lam_max": lam_max,
            "p0": p0,
            "budget": budget,
            "reference": ref,
            "pstar": ref["objective"],
            "curves": {},
            "tuning": {},
        }
        doc["settings"].append(st)
        if "curve" in ref:
            st["curves"]["cd"] = ref.pop("curve")
        for m in ("scd", "scd_paper", "detcd", "detcd_paper"):
            c = run_batch(m, problem, budget * nnz, args.seed)
            st["curves"][m] = c
            log(
                f"   {m:11s} records={len(c['objective'])} accesses={c['accesses'][-1] / nnz:.1f} nnz(X) "
                f"final P={c['objective'][-1]:.6g} ({c['seconds']:.1f} s)"
            )
        perm = np.random.default_rng(args.seed + 1).permutation(n)
        stream_problem = StreamProblem(
            Stream.from_arrays(X[perm], y[perm], chunk_rows=n), "logistic", lam=lam, fit_intercept=False
        )
        grids = QUICK["grid"][name] if args.quick and name in QUICK["grid"] else {}
        for m in ("smidas", "truncgrad"):
            auto = run_online(m, "auto", None, problem, stream_problem, passes, n, p0)
            st["curves"][m + "_auto"] = auto
            log(f"   {m} (library default, eta={auto['params']['eta']:.3g}) final P={auto['objective'][-1]:.6g}")
            runs, best = tune_online(m, grids.get(m, PAPER_GRID), problem, stream_problem, passes, n, p0, extend, log)
            st["tuning"][m] = [
                {
                    "params": r["params"],
                    "final": r["objective"][-1],
                    "seconds": r["seconds"],
                    "nnz": r["nnz"][-1],
                    **({"support_work": r["support_work"]} if "support_work" in r else {}),
                }
                for r in runs
            ]
            st["curves"][m] = best
            log(
                f"   {m}: best eta={best['params']['eta']:g} {best['params']['schedule']} "
                f"final P={best['objective'][-1]:.6g}"
            )
        lowest = min(min(c["objective"]) for c in st["curves"].values())
        if lowest < st["pstar"]:
            log(f"   note: a run reached {lowest:.12g} < P*; P* lowered to it")
            st["pstar_from_cd"], st["pstar"] = st["pstar"], lowest
        analyse(st)
        del stream_problem, problem
        save()
    save(final=True)
    log(f"wrote {out / f'figure1{suffix}.md'} (+ .json, .png)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
