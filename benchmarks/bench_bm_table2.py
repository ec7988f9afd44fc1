#!/usr/bin/env python
"""Balakrishnan & Madigan with the paper's protocol: Table 2 (MP and Online on simulated
data, from beta = 0 as printed) and a Table 4 style RMMP k sweep where the support exceeds k.

Part 1, Table 2. The paper's simulated data (``make_bm_simulated``: d = 11 = an intercept
column of ones + 10 N(0, 1) features, Table 1's beta_true, t = 10,000), probit at gamma = 10
and logistic at gamma = 100 (sum form; our lam = gamma / t). The paper's objective (4)
penalises all of beta, the intercept included, so the main runs fit X with its column of
ones and no separate intercept (``fit_intercept=False``); the same runs with an
unpenalised intercept are reported beside them. Every run is the paper's rule passed
explicitly (never a library default):

- batch: CD at tol 1e-12 (the paper's EM / BBR column);
- MP (sec. 5) from beta = 0 (``intercept_init=0.0``; with the penalised intercept
  column beta = 0 is the library's start as well), Shooting tolerance 1e-6 (the paper's),
  no KKT stop (tol = 0): the iterate after each of the first passes' Shooting solves;
- MP from the intercept-only point (the library's start with a free intercept), for the
  record;
- Online, Algorithm 2 as printed: constant gamma from the first example
  (``schedule="constant"``), block 1, Shooting to 1e-6 with no sweep cap that binds;
  and, beside it, Online with sec. 4.1's two heuristics (``schedule="linear"``, and
  ``block=100``).

The measure is the paper's: the L1 norm of (iterate - batch estimate), intercept included.
Five seeds of the data; seed 0's coefficients are printed beside the paper's Table 2.

Part 2, RMMP k sweep (Table 4 style): RMMP from beta = 0 (S empty, as in Algorithm 3),
tau = 0.8 (the paper's), KKT tolerance 1e-6, on data whose support exceeds the smaller
k's: ModApte 'earn' (our features) at lam_ratio 0.01 and 0.003 and news20 binary at
lam_ratio 0.02. For each k: L1 distance to the batch solution after 8 passes (Table 4's
z = 8) and at the end, passes to converge or the stall, the relative objective error.

    .venv/bin/python benchmarks/bench_bm_table2.py            # both parts (~5 min, news20 the most)
    .venv/bin/python benchmarks/bench_bm_table2.py --quick    # Table 2 + earn only

Writes benchmarks/results/bm_table2.{json,md,png} (``_quick`` with --quick).
"""

from __future__ import annotations

from _common import (
    DATA_DIR,
    RESULTS_DIR,
    command_line,
    jsonable,
    machine,
    repo_on_path,
    single_thread,
    utc_now,
    versions,
)

single_thread()  # before numpy is imported
repo_on_path()

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

SEEDS = (0, 1, 2, 3, 4)
N_SIM = 10000
SHOOTING_TOL = 1e-6  # the paper's (sec. 7)
TAU = 0.8  # the paper's (sec. 7)
SIM_SETTINGS = (("probit", 10.0), ("logistic", 100.0))
MP_SOLVES = 4  # iterates shown (the paper shows 3)

# The paper's Table 2 (rows: the 11 components of beta, intercept first, as Table 1's beta_true).
PAPER_T2 = {
    "probit": {
        "batch": [0.252, 0.764, -0.318, 0.834, 0.894, -0.304, -0.782, -0.039, -0.036, 0, -0.327],
        "online": [0.250, 0.764, -0.314, 0.821, 0.880, -0.297, -0.770, -0.039, -0.036, 0, -0.322],
        "mp": [
            [0.207, 0.614, -0.263, 0.667, 0.719, -0.243, -0.627, -0.037, -0.029, 0, -0.266],
            [0.250, 0.755, -0.314, 0.824, 0.884, -0.301, -0.773, -0.039, -0.036, 0, -0.324],
            [0.252, 0.764, -0.318, 0.834, 0.894, -0.304, -0.782, -0.039, -0.036, 0, -0.327],
        ],
        "dist": {"online": 0.074, "mp": [0.878, 0.050, 0.0]},
    },
    "logistic": {
        "batch": [0.178, 0.450, -0.124, 0.713, 0.656, 0, -0.511, 0, 0, 0, -0.030],
        "online": [0.174, 0.435, -0.120, 0.689, 0.634, 0, -0.493, 0, 0, 0, -0.029],
        "mp": [
            [0.168, 0.422, -0.1161, 0.666, 0.613, 0, -0.477, 0, 0, 0, -0.028],
            [0.178, 0.450, -0.124, 0.712, 0.655, 0, -0.510, 0, 0, 0, -0.030],
            [0.178, 0.450, -0.124, 0.713, 0.656, 0, -0.511, 0, 0, 0, -0.030],
        ],
        "dist": {"online": 0.0872, "mp": [0.172, 0.003, 0.0]},
    },
}
BETA_TRUE = [0.259, 0.761, -0.360, 0.876, 0.913, -0.302, -0.820, 0, 0, 0, -0.319]

# Part 2: (data set, label, lam_ratio, ks); "mp" = k large enough for every active set.
SWEEPS = {
    "earn": [
        ("lam_ratio=0.01", 0.01, [1000, 100, 40, 30, 27, 20]),
        ("lam_ratio=0.003", 0.003, [3000, 300, 120, 90, 60]),
    ],
    "news20": [("lam_ratio=0.02", 0.02, [4000, 2000, 1000, 800, 600, 300])],
}
PAPER_T4 = (
    "Paper, Table 4 (ModApte 'earn', gamma = 10, BBR support 150, first active set ~3,000): L1 distance to BBR "
    "after z = 8 passes 1.4e-3 (k = 3120, = MP), 0.047 (k = 2000), 0.044 (1000), 0.048 (600), 0.048 (300); "
    "RMMP k = 300 needs ~15 passes against MP's ~7 (sec. 7.1)."
)


# ============================================================================ part 1
def _l1(coef, b, ref):
    return float(np.abs(coef - ref[0]).sum() + abs(b - ref[1]))


def table2_setting(link, gamma, seed, penalised_intercept):
    from l1scale.data.stream import Stream
    from l1scale.data.synthetic import make_bm_simulated
    from l1scale.problems import Problem, StreamProblem
    from l1scale.solvers.bm_online import OnlineSketch
    from l1scale.solvers.cd import CoordinateDescent
    from l1scale.solvers.sketch import MultiPass

    class RecordingMP(MultiPass):
        """MP that keeps the iterate after each Shooting solve (beta_1, beta_2, ...)."""

        def _shoot(self, *args):
            out = super()._shoot(*args)
            self.iterates.append((out[0].copy(), out[1]))
            return out

    X, y = make_bm_simulated(N_SIM, link=link, add_intercept=penalised_intercept, random_state=seed)
    fi = not penalised_intercept
    lam = gamma / X.shape[0]

    def stream():
        return StreamProblem(Stream.from_arrays(X, y, chunk_rows=2500), link, lam, fit_intercept=fi)

    batch = CoordinateDescent(tol=1e-12, max_iter=1000).solve(Problem(X, y, link, lam, fit_intercept=fi))
    ref = (batch.coef, batch.intercept)

    def full(coef, b):  # the 11 components, intercept first (as the paper's rows)
        return [float(v) for v in (coef if penalised_intercept else np.r_[b, coef])]

    out = {"batch": full(*ref), "batch_certificate": float(batch.relative_certificate)}
    starts = {"mp_zero": 0.0} if penalised_intercept else {"mp_zero": 0.0, "mp_intercept_only": None}
    for key, init in starts.items():
        mp = RecordingMP(tol=0.0, max_iter=MP_SOLVES + 1, shooting_tol=SHOOTING_TOL)
        mp.iterates = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = mp.solve(stream(), intercept_init=init if fi else None)
        out[key] = {
            "iterates": [full(c, b) for c, b in mp.iterates],
            "dist": [_l1(c, b, ref) for c, b in mp.iterates],
            "passes_evaluated": len(res.history),  # > solves + 1 when a step was halved
            "objective": [float(v) for v in res.history.objective],
        }
    onlines = {
        "online_constant": dict(schedule="constant", block=1),  # Algorithm 2 as printed
        "online_linear": dict(schedule="linear", block=1),  # sec. 4.1, first heuristic
        "online_linear_block100": dict(schedule="linear", block=100),  # both heuristics
    }
    for key, kw in onlines.items():
        res = OnlineSketch(shooting_tol=SHOOTING_TOL, max_sweeps=100000, **kw).solve(stream())
        out[key] = {"coef": full(res.coef, res.intercept), "dist": _l1(res.coef, res.intercept, ref)}
    return out


def part1():
    out = {}
    for link, gamma in SIM_SETTINGS:
        for pen in (True, False):
            key = f"{link}|{'penalised' if pen else 'free'}"
            out[key] = {"link": link, "gamma": gamma, "penalised_intercept": pen, "seeds": {}}
            for seed in SEEDS:
                t0 = time.perf_counter()
                out[key]["seeds"][seed] = table2_setting(link, gamma, seed, pen)
                print(f"table 2 {key} seed {seed}: {time.perf_counter() - t0:.1f} s", flush=True)
    return out


# ============================================================================ part 2
def load(name, data_dir):
    import scipy.sparse as sp

    from l1scale.data.svmlight import load_svmlight

    rel, d = {
        "earn": ("reuters21578/modapte_earn_train.svm.bz2", 27901),
        "news20": ("news20/news20_bydate_binary.svm.bz2", 588937),
    }[name]
    X, y = load_svmlight(str(Path(data_dir) / rel), n_features=d, zero_based=False)
    return sp.csr_matrix(X), np.where(np.asarray(y) > 0, 1.0, -1.0)


def k_sweep(name, X, y, label, lam_ratio, ks, max_iter):
    from l1scale.data.stream import Stream
    from l1scale.problems import Problem, StreamProblem
    from l1scale.solvers.cd import CoordinateDescent
    from l1scale.solvers.sketch import ReducedMemoryMultiPass

    problem = Problem(X, y, lam_ratio=lam_ratio)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = CoordinateDescent(tol=1e-10, max_iter=2000).solve(problem)
    lam = problem.penalty.lam
    p_star = float(ref.objective)
    support = np.flatnonzero(ref.coef)
    rec = {"label": label, "lam_ratio": lam_ratio, "lam": lam, "gamma": lam * X.shape[0], "support": int(support.size)}
    rec["P_star"] = p_star
    # The first pass's active set without the cap k: |Omega_j| = |sum_i loss'_i x_ij| >= tau gamma at
    # beta = 0 with b = 0 (the paper's start) and with b at the intercept-only optimum (the library's).
    n = X.shape[0]
    gamma = n * lam
    b0 = float(np.log(np.mean(y > 0) / np.mean(y < 0)))
    for key, b in (("first_active_zero", 0.0), ("first_active_intercept_only", b0)):
        dloss = -y / (1.0 + np.exp(y * b))
        rec[key] = int(np.count_nonzero(np.abs(X.T @ dloss) >= TAU * gamma))
    runs = []
    for k in ks:

        class Tracked(ReducedMemoryMultiPass):
            """RMMP that measures, at every pass, the L1 distance of the point evaluated."""

            def _pass(self, problem_, beta, b, active):
                self.dists.append(float(np.abs(beta - ref.coef).sum() + abs(b - ref.intercept)))
                return super()._pass(problem_, beta, b, active)

        solver = Tracked(tol=1e-6, max_iter=max_iter, max_active=k, tau=TAU)
        solver.dists = []
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = solver.solve(
                StreamProblem(Stream.from_arrays(X, y, chunk_rows=4096), "logistic", lam), intercept_init=0.0
            )
        secs = time.perf_counter() - t0
        h = res.history
        sup = set(np.flatnonzero(res.coef).tolist())
        # Distance after z = 8 passes: the point evaluated at pass 9 (8 Shooting solves) or the end.
        d8 = solver.dists[8] if len(solver.dists) > 8 else None
        runs.append(
            {
                "k": k,
                "passes": int(res.n_iter),
                "converged": bool(res.converged),
                "stop_reason": res.stop_reason,
                "rel_objective": (float(res.objective) - p_star) / abs(p_star),
                "dist_final": float(np.abs(res.coef - ref.coef).sum() + abs(res.intercept - ref.intercept)),
                "dist_after_8": d8,
                "dists": solver.dists,
                "objective": [float(v) for v in h.objective],
                "kkt_over_lam": [float(v) / lam for v in h.certificate],
                "active": [int(v) for v in h.active],
                "support": len(sup),
                "support_symdiff": len(sup ^ set(support.tolist())),
                "seconds": secs,
                "warnings": [str(w.message)[:200] for w in caught],
            }
        )
        print(
            f"{name} {label} k={k}: {res.n_iter} passes, {res.stop_reason}, rel obj {runs[-1]['rel_objective']:.2e}, "
            f"dist8 {d8}, {secs:.1f} s",
            flush=True,
        )
    rec["runs"] = runs
    return rec


def part2(data_dir, datasets, max_iter):
    out = {}
    for name in datasets:
        X, y = load(name, data_dir)
        out[name] = {"n": int(X.shape[0]), "d": int(X.shape[1]), "nnz": int(X.nnz), "settings": []}
        for label, ratio, ks in SWEEPS[name]:
            out[name]["settings"].append(k_sweep(name, X, y, label, ratio, ks, max_iter))
    return out


# ============================================================================ report
def _f(v, fmt="{:.3g}"):
    return "-" if v is None else fmt.format(v)


def rel8(run, st):
    """(P - P*)/P* after 8 Shooting solves (the point evaluated by pass 9), None if the run ended sooner."""
    obj = run["objective"]
    return (obj[8] - st["P_star"]) / abs(st["P_star"]) if len(obj) > 8 else None


def render(doc) -> str:
    L = [
        "# Balakrishnan & Madigan with the paper's protocol: Table 2 and an RMMP k sweep\n",
        f"- Date: {doc['date']}; command: `{doc['command']}`",
        f"- Machine: {doc['machine']}; {doc['versions']}",
        (
            "- Every run passes the paper's rule explicitly: Shooting tolerance 1e-6, tau = 0.8, MP / RMMP from beta = 0, "
            "Online with a constant gamma (Algorithm 2 as printed); no library default is used.\n"
        ),
        "## Table 2: simulated data (d = 11, t = 10,000), MP from beta = 0 and Online\n",
        (
            "The paper's objective (4) penalises every component of beta, the intercept (a column of ones) included: "
            "that is our main reading (*penalised*). With an unpenalised intercept (*free*) the distances are "
            "within a few per cent of these. Distance = the paper's L1 norm of (estimate - batch estimate), "
            "intercept included; ours: mean over seeds 0-4 (min-max in brackets).\n"
        ),
    ]
    p1 = doc["part1"]
    for link, gamma in SIM_SETTINGS:
        paper = PAPER_T2[link]
        L.append(f"### {link}, gamma = {gamma:g} (lam = gamma / t = {gamma / N_SIM:g})\n")
        L.append(
            "| run | paper | paper / \\|\\|beta_batch\\|\\|_1 | ours, penalised intercept | ours / \\|\\|beta_batch\\|\\|_1 "
            "| ours, free intercept |\n|---|---|---|---|---|---|"
        )
        kp, kf = f"{link}|penalised", f"{link}|free"
        paper_norm = float(np.abs(paper["batch"]).sum())

        def cell(key, getter, relative=False):
            vals = []
            for s in p1[key]["seeds"].values():
                v = getter(s)
                if v is not None:
                    vals.append(v / np.abs(s["batch"]).sum() if relative else v)
            if not vals:
                return "-"
            if relative:
                return f"{100 * np.mean(vals):.2g}%"
            return f"{np.mean(vals):.3g} ({min(vals):.2g}-{max(vals):.2g})"

        def row(name, pv, getter):
            prel = "-" if pv is None else f"{100 * pv / paper_norm:.2g}%"
            L.append(
                f"| {name} | {_f(pv)} | {prel} | {cell(kp, getter)} | {cell(kp, getter, True)} | {cell(kf, getter)} |"
            )

        row(
            "Online, constant gamma (Algorithm 2 as printed)",
            paper["dist"]["online"],
            lambda s: s["online_constant"]["dist"],
        )
        row("Online, linear gamma schedule (sec. 4.1)", None, lambda s: s["online_linear"]["dist"])
        row("Online, linear schedule + blocks of 100 (sec. 4.1)", None, lambda s: s["online_linear_block100"]["dist"])

        def mp_dist(m, z):
            return lambda s: s[m]["dist"][z] if m in s and z < len(s[m]["dist"]) else None

        for z in range(MP_SOLVES):
            pv = paper["dist"]["mp"][z] if z < 3 else None
            row(f"MP from beta = 0, after Shooting solve {z + 1} (paper: z = {z + 1})", pv, mp_dist("mp_zero", z))
        for z in range(MP_SOLVES):
            row(f"MP from the intercept-only point, after solve {z + 1}", None, mp_dist("mp_intercept_only", z))
        halved = sum(
            s[m]["passes_evaluated"] > MP_SOLVES + 1
            for key in (kp, kf)
            for s in p1[key]["seeds"].values()
            for m in ("mp_zero", "mp_intercept_only")
            if m in s
        )
        L.append(f"\nMP step halvings (the library's safeguard, not in the paper) in these runs: {halved}.\n")
        # seed 0 coefficients beside the paper's
        s0 = p1[kp]["seeds"][0] if 0 in p1[kp]["seeds"] else p1[kp]["seeds"]["0"]
        L.append(
            "Seed 0, penalised intercept, coefficients beside the paper's (rows: intercept, then the 10 slopes):\n"
        )
        L.append(
            "| beta_true | paper batch | ours batch | paper Online | ours Online (constant) | paper MP z=1 | ours solve 1 | ours solve 2 "
            "| paper MP z=2 | ours solve 3 | paper MP z=3 | ours solve 4 |\n|" + "---|" * 12
        )
        it = s0["mp_zero"]["iterates"]
        for r in range(11):
            L.append(
                "| "
                + " | ".join(
                    f"{v:.3f}"
                    for v in (
                        BETA_TRUE[r],
                        paper["batch"][r],
                        s0["batch"][r],
                        paper["online"][r],
                        s0["online_constant"]["coef"][r],
                        paper["mp"][0][r],
                        it[0][r],
                        it[1][r],
                        paper["mp"][1][r],
                        it[2][r],
                        paper["mp"][2][r],
                        it[3][r],
                    )
                )
                + " |"
            )
        L.append("")
    if doc.get("part2"):
        L.append("## RMMP k sweep (Table 4 style): RMMP from beta = 0 where the support exceeds k\n")
        L.append(PAPER_T4 + "\n")
        L.append(
            "Ours: logistic, unpenalised intercept, lam in mean form (gamma = n lam), reference = CD at tol 1e-10; "
            "RMMP with tau = 0.8, KKT tolerance 1e-6 lam, at most "
            f"{doc['max_iter']} passes, from beta = 0 (first pass: S = the intercept only). *dist* = L1 distance to the "
            "reference (intercept included); *after 8* = after 8 Shooting solves (Table 4's z = 8); *|S| after pass 1* "
            "= the active set the first pass chose, cut to k (MP's path is followed when k covers it).\n"
        )
        for name, ds in doc["part2"].items():
            L.append(f"### {name} (n = {ds['n']:,}, d = {ds['d']:,}, nnz = {ds['nnz']:,})\n")
            for st in ds["settings"]:
                L.append(
                    f"**{st['label']}**: lam = {st['lam']:.4g} (gamma = {st['gamma']:.3g}), support of the optimum "
                    f"{st['support']}, P* = {st['P_star']:.10g}; the first pass's active set before the cut to k: "
                    f"{st['first_active_zero']} features from beta = 0 (the paper's start; "
                    f"{st['first_active_intercept_only']} from the intercept-only point).\n"
                )
                L.append(
                    "| k | k / support | \\|S\\| after pass 1 | passes | stop | dist after 8 | rel. obj. after 8 | dist at the end "
                    "| rel. obj. at the end | support (sym. diff.) | seconds |\n|---|---|---|---|---|---|---|---|---|---|---|"
                )
                for r in st["runs"]:
                    first = r["active"][1] if r.get("active") and len(r["active"]) > 1 else None
                    L.append(
                        f"| {r['k']} | {r['k'] / max(st['support'], 1):.2f} | {_f(first, '{}')} | {r['passes']} | "
                        f"{r['stop_reason']} | {_f(r['dist_after_8'])} | {_f(rel8(r, st))} | {r['dist_final']:.3g} | "
                        f"{r['rel_objective']:.2e} | {r['support']} ({r['support_symdiff']}) | {r['seconds']:.1f} |"
                    )
                L.append("")
    L.append(doc.get("discussion", ""))
    return "\n".join(L) + "\n"


def plot(doc, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sets = [(n, st) for n, ds in (doc.get("part2") or {}).items() for st in ds["settings"]]
    if not sets:
        return False
    fig, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 4), squeeze=False)
    for ax, (name, st) in zip(axes[0], sets):
        for r in st["runs"]:
            rel = [max((v - st["P_star"]) / abs(st["P_star"]), 1e-16) for v in r["objective"]]
            ax.semilogy(range(1, len(rel) + 1), rel, marker=".", label=f"k={r['k']} ({r['stop_reason']})")
        ax.set_title(f"{name} {st['label']} (support {st['support']})")
        ax.set_xlabel("pass")
        ax.set_ylabel("(P - P*) / P*")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


DISCUSSION = """## Paper vs ours, explained

**1. MP from beta = 0 lags the paper's printed z by one Shooting solve; the start is not the cause.**
Paper (z = 1, 2, 3): probit 0.878, 0.050, 0; logistic 0.172, 0.003, 0. Ours after solves 1-4: probit 2.38, 0.964,
0.178, 0.0061; logistic 1.09, 0.184, 0.0059, 6e-6. As fractions of ||beta_batch||_1 the paper's z = 1 is 19% (probit)
and 6.5% (logistic) away; our solve 1 is 52% and 30% away, our solve 2 21% and 5.0%. The paper's z = 1 column is a
uniform ~80% (probit) / ~94% (logistic) shrink of the batch estimate, which a first solve from beta = 0 cannot give:
the curvature of the log-likelihood at c = 0 (probit 2 phi(0)^2 = 0.64, logistic 1/4) is the largest it ever takes,
so the first quadratic model over-estimates the curvature about twice on these data and its solution lands about
half-way (our seed 0: every coefficient of solve 1 is 0.49-0.72 of the batch value). Our reading: MP's text
initialises beta_0 = 0 and z = 1 and then takes the approximations 'at the fixed value beta_z', so one pass (at
beta_0) precedes the pass labelled z = 1 and the column z shows beta_{z+1}. With that shift logistic agrees (0.184 vs
0.172, 0.0059 vs 0.003, 6e-6 vs 0), and probit agrees at z = 1 (0.964 vs 0.878) but then converges 3-4x slower than
the paper (0.178 vs 0.050; after solve 4, 0.006, i.e. a difference of 0.001 in several printed digits, vs 0). That
last factor is not explained: not by the data draw (five seeds give 0.16-0.20), not by the intercept (a free
intercept gives the same), not by step halvings (none happened); the paper's EM reference (Figueiredo & Jain's EM,
its own tolerance) cannot be checked. MP from the intercept-only point (the library's start with a free intercept)
gives 2.34, 0.948, 0.173, 0.0058: within 2% of the run from beta = 0, so the issue's attribution of the lag to the
starting point was wrong; no solver option is needed to start at beta = 0 (pass `intercept_init=0.0` to
`MultiPass.solve` / `ReducedMemoryMultiPass.solve`; with the intercept as a penalised column of ones beta = 0 is the
start anyway).
The paper's logistic batch estimate at gamma = 100 is much more shrunk than ours (||beta||_1 2.66 against 3.69; the
paper zeroes the true -0.302 coefficient, ours keeps it at -0.23) although our data follow the paper's description
(Table 1's beta_true, x ~ N(0, 1), t = 10,000) and our probit batch estimate matches the paper's closely (||beta||_1
4.6 vs 4.55). We do not know why (BBR's prior scale convention is one candidate); the relative column above removes
the scale from the comparison.

**2. Online with a constant gamma (Algorithm 2 as printed) is 3.5-4.6x further from batch than the paper's Online
column.** Probit 0.264 (0.21-0.30) vs 0.074; logistic 0.405 (0.38-0.43) vs 0.0872. With gamma at its final value
from the first example, the first estimates are zero or strongly shrunk (gamma = 100 against the likelihood of a
handful of examples), and the quadratic approximations taken at them stay in the sketch for good: Algorithm 2 never
revisits an example. Sec. 4.1's first heuristic, gamma_i growing linearly with i ('less regularization of the first
few observations'), gives 0.069 / 0.024, the paper's size (0.074 / 0.087); with blocks of 100 as well, 0.028 /
0.017. So the paper's Online column is consistent with its heuristics, not with a constant gamma; the paper says the
heuristics help 'in experiments not reported here' and does not say which run Table 2 shows. The library's Online
default is the linear schedule.

**3. RMMP k sweep: the cost of a small k appears only within ~10-50% of the support, not at 2-13x as in the paper.**
Paper, Table 4 (ModApte earn, gamma = 10, BBR support 150, first active set ~3,120): after z = 8, L1 distance 1.4e-3
for MP (k = 3120) and 0.044-0.048 for k = 2000...300; k = 300 (2x the support) needs ~15 passes against MP's ~7. Ours:
the first pass from beta = 0 picks 1,723 (earn, lam_ratio 0.01, support 27), 4,356 (earn, 0.003, support 76) and
20,635 (news20, 0.02, support 773) features, cut to k. RMMP needs the same passes as with a large k down to k = 1.1-1.6x
the support (earn 10 and 11, news20 9-10), one pass more at k = the support (earn k = 27: 11; news20 k = 800: 11), and
below the support it cannot converge: it stops 'stalled' with a ConvergenceWarning naming max_active, at 3e-3, 8e-4
and 1e-3 relative objective (the paper: k must be 'bigger than the final number of nonzero components'). After 8
solves the distance grows as k shrinks (earn 0.01: 9.4e-4 at k = 1000, 1.2e-3 at 100, 2.2e-3 at 40, 0.016 at 30,
0.043 at 27), the paper's pattern (1.4e-3 for MP, ~0.045 for a cut k), but at k much closer to the support. The
paper does not say how it cuts S to k; ours keeps the nonzeros of beta, then the largest |Omega_j| (at beta = 0 the
features' correlation with the residual), then the previous S, which finds the support's features early. Our
features (L2-normalised TF-IDF, 27,901 terms) also give a much sparser model than the paper's at a given gamma
(streaming.md), so the paper's gamma = 10 (150 nonzeros) has no exact counterpart; lam_ratio 0.003 (76 nonzeros) is
the closest. On news20 the L1 distance is not a useful measure: 256,870 columns are exact duplicates (twins), w* is
not unique and solutions of equal objective (to 1e-15) are ~52 apart in L1; the relative objective is the measure
there (< 1e-15 at convergence for every k >= 800).
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="Table 2 and earn only")
    ap.add_argument("--datasets", default=None, help="comma list of earn,news20 for part 2 ('' to skip it)")
    ap.add_argument("--max-iter", type=int, default=40, help="most RMMP passes")
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--out", default=str(RESULTS_DIR))
    ap.add_argument("--from-json", help="only re-render the markdown and the figure of an earlier run")
    args = ap.parse_args(argv)
    stem = "bm_table2_quick" if args.quick else "bm_table2"
    out = Path(args.out)
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text())
    else:
        datasets = ["earn"] if args.quick else ["earn", "news20"]
        if args.datasets is not None:
            datasets = [d for d in args.datasets.split(",") if d]
        doc = {
            "date": utc_now(),
            "command": command_line(sys.argv[1:] if argv is None else argv),
            "machine": machine(),
            "versions": versions(),
            "max_iter": args.max_iter,
            "part1": part1(),
            "part2": part2(args.data_dir, datasets, args.max_iter),
        }
    doc["discussion"] = DISCUSSION
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(jsonable(doc), indent=1))
    (out / f"{stem}.md").write_text(render(doc))
    plot(doc, out / f"{stem}.png")
    print(f"wrote {out / stem}.{{json,md,png}}")


if __name__ == "__main__":
    main()
