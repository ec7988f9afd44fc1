#!/usr/bin/env python
"""What multi-scale FISTA's gain over FISTA depends on (Qin et al., Table 7, every MNIST digit).

Qin et al. report that multi-scale FISTA (Algorithm 1: the quadratic model scaled by the
Hessian's diagonal, eq. 7) needs 62%, 53%, 26% and 25% of plain FISTA's iterations on
mnist10k at 0.5, 0.2, 0.1 and 0.05 lam_max. Our Table 7 (bench_kernel_logreg.py) has the digit
'3' at 136%, 56%, 41% and 43%; a held-out digit gave 96% and 89% at 0.2 and 0.1. This script
asks why, on the same protocol for every digit 0-9 (one-vs-rest):

- data: the MNIST test set (10,000 digits, pixels in [0, 1]), the seeded 7,000 / 3,000 split of
  bench_kernel_logreg.py, RandomFourierFeatures(D = 1,000, sigma = median distance of 1,000
  training rows, random_state=0), intercept, lam = 0.2 and 0.1 lam_max;
- counted the paper's way: CGD first (gap 1e-6), then each FISTA to its first iterate at or
  below CGD's objective (or its own gap 1e-6), capped at --max-iter iterations;
- variants: plain FISTA (eq. 6); multi-scale FISTA (eq. 7); and an ablation, multi-scale FISTA
  whose diagonal is replaced by its mean at each iteration (the same driver, the same monotone
  rule, one scalar instead of one scale per feature);
- explanations measured at CGD's solution: the condition number of the reduced Hessian on the
  support (intercept eliminated) before and after Jacobi scaling, and how far the mean curvature
  sum_i c_i loss''_i x_ij^2 fell from the start (intercept only) to the solution;
- a control where per-feature scaling should matter: the same features with each column
  multiplied by 10^u, u uniform in [-1, 1] (seed 0): column scales spread over two decades.

    .venv/bin/python benchmarks/bench_multiscale_fista.py            # ~20 min on one core
    .venv/bin/python benchmarks/bench_multiscale_fista.py --digits 3,1 --ratios 0.2

Writes benchmarks/results/multiscale_fista.{md,json}.
"""

from __future__ import annotations

from _common import (
    DATA_DIR,
    RESULTS_DIR,
    command_line,
    machine,
    repo_on_path,
    rerender,
    single_thread,
    utc_now,
    versions,
)

single_thread()  # before numpy is imported
repo_on_path()

import argparse
import gzip
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

IMAGES, LABELS = "mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz"
TOL = 1e-6
PAPER = {0.2: 52.82, 0.1: 26.13}  # Table 7, mnist10k: multi-scale / plain FISTA iterations (%)
VARIANTS = ("plain", "eq7", "scalar")
SCALED_DIGITS = (3, 1, 5)


def read_idx(path):
    """An array from the MNIST idx format (big-endian dims, then unsigned bytes)."""
    with gzip.open(path) as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def features(data_dir, seed):
    """(Z: random Fourier features of the 7,000 training rows, digit labels, sigma)."""
    from scipy.spatial.distance import pdist

    from l1scale.data.features import RandomFourierFeatures

    X = read_idx(Path(data_dir) / IMAGES).reshape(10000, -1) / 255.0
    digits = read_idx(Path(data_dir) / LABELS)
    train = np.random.default_rng(seed).permutation(len(digits))[:7000]
    Xtr = X[train]
    sample = np.random.default_rng(seed).choice(len(Xtr), size=1000, replace=False)
    sigma = float(np.median(pdist(Xtr[sample])))
    Z = RandomFourierFeatures(n_components=1000, sigma=sigma, random_state=0).fit(Xtr).transform(Xtr)
    return Z, digits[train], sigma


def scalar_passes(problem):
    """The driver's passes with the diagonal replaced by its mean (the ablation)."""
    from l1scale.solvers.proximal import InMemoryPasses

    class ScalarPasses(InMemoryPasses):
        def gradient(self, zw, b, curvature):
            out = super().gradient(zw, b, curvature)
            if out[3] is not None:
                out[3][:] = out[3].mean()
            return out

    return ScalarPasses(problem)


def paper_count(result, p_ref):
    """First iteration at P <= P_ref, or the solver's own stop at gap 1e-6 if earlier; None if neither."""
    hit = np.flatnonzero(np.asarray(result.history.objective) <= p_ref)
    first = int(hit[0]) + 1 if hit.size else None
    if result.converged:
        return result.n_iter if first is None else min(first, result.n_iter)
    return first


def explain(Z, y, problem, coef, intercept):
    """Conditioning of the support's reduced Hessian, with and without Jacobi scaling, and the
    fall of the mean curvature from the intercept-only start to the solution."""
    c = problem.c

    def curvature(z):
        s = 1.0 / (1.0 + np.exp(-y * z))
        return c * s * (1.0 - s)

    D = curvature(Z @ coef + intercept)
    support = np.flatnonzero(coef)
    A = np.column_stack([Z[:, support], np.ones(len(y))])
    H = A.T @ (D[:, None] * A)
    reduced = H[:-1, :-1] - np.outer(H[:-1, -1], H[-1, :-1]) / H[-1, -1]  # the intercept eliminated
    ev = np.linalg.eigvalsh(reduced)
    scale = np.sqrt(np.diag(reduced))
    ev_j = np.linalg.eigvalsh(reduced / np.outer(scale, scale))
    p0 = np.clip(np.average(y > 0, weights=c), 1e-12, 1 - 1e-12)
    D0 = curvature(np.full(len(y), np.log(p0 / (1 - p0))))
    h0, h1 = (D0[:, None] * Z**2).sum(0), (D[:, None] * Z**2).sum(0)
    return {
        "support": int(support.size),
        "kappa": float(ev[-1] / ev[0]),
        "kappa_jacobi": float(ev_j[-1] / ev_j[0]),
        "diag_cv_support": float(scale.std() ** 2 / np.mean(scale**2)) if support.size else 0.0,
        "curvature_fall": float(h1.mean() / h0.mean()),
        "column_h_cv": float(h1.std() / h1.mean()),
    }


def run_case(Z, y, ratio, max_iter, variants=VARIANTS, with_explain=True):
    from l1scale.problems import Problem
    from l1scale.solvers import FISTA, CoordinateGradientDescent, MultiscaleFISTA

    problem = Problem(Z, y, lam_ratio=ratio)
    ref = CoordinateGradientDescent(tol=TOL, max_iter=5000).solve(problem)
    row = {"ratio": ratio, "p_cgd": float(ref.objective), "cgd_iters": int(ref.n_iter)}
    for v in variants:
        t0 = time.perf_counter()
        if v == "plain":
            res = FISTA(tol=TOL, max_iter=max_iter).solve(problem)
        elif v == "eq7":
            res = MultiscaleFISTA(tol=TOL, max_iter=max_iter).solve(problem)
        else:
            res = MultiscaleFISTA(tol=TOL, max_iter=max_iter).solve(problem, passes=scalar_passes(problem))
        row[v] = {
            "iters": paper_count(res, ref.objective),
            "n_iter": int(res.n_iter),
            "seconds": time.perf_counter() - t0,
        }
    if with_explain:
        row.update(explain(Z, y, problem, ref.coef, ref.intercept))
    return row


def pct(row, v):
    a, b = row[v]["iters"], row["plain"]["iters"]
    return 100.0 * a / b if a and b else None


def fmt_pct(x, censored=False):
    return "-" if x is None else f"{x:.0f}%" + (" (cap)" if censored else "")


def _plain_cell(row, setup):
    """Plain FISTA's count, or '> cap' when it reached neither CGD's objective nor gap 1e-6."""
    return row["plain"]["iters"] or f"> {setup['max_iter']} (cap)"


def render(doc):
    s = doc["setup"]
    L = [
        "# What multi-scale FISTA's gain depends on (Qin et al., Table 7, every MNIST digit)\n",
        f"- date: {doc['date']}",
        f"- command: `{doc['command']}`",
        f"- machine: {doc['machine']}",
        f"- versions: {doc['versions']}",
        f"- total wall time: {doc.get('total_seconds', 0):.0f} s\n",
        (
            f"Protocol: bench_kernel_logreg.py's, for each digit one-vs-rest: MNIST test set, seeded 7,000-row training "
            f"split, RandomFourierFeatures D = 1,000 (sigma = {s['sigma']:.4g}), intercept; iterations counted the paper's "
            f"way (first iterate at or below CGD's objective at gap 1e-6, or the solver's own gap 1e-6; cap "
            f"{s['max_iter']}). 'scalar': multi-scale FISTA with its diagonal replaced by the diagonal's mean (one "
            "scale for every feature). Ratios are % of plain FISTA's iterations.\n"
        ),
        "## Every digit\n",
        (
            "| digit | lam / lam_max | plain iters | multi-scale (eq. 7) | scalar ablation | paper | support | "
            "kappa (support) | kappa after Jacobi | mean curvature at solution / at start |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in doc["digits"]:
        L.append(
            f"| {row['digit']} | {row['ratio']} | {_plain_cell(row, s)} | "
            f"{row['eq7']['iters']} ({fmt_pct(pct(row, 'eq7'))}) | {row['scalar']['iters']} "
            f"({fmt_pct(pct(row, 'scalar'))}) | {PAPER.get(row['ratio'], '-')}% | {row['support']} | "
            f"{row['kappa']:.1f} | {row['kappa_jacobi']:.1f} | {row['curvature_fall']:.2f} |"
        )
    ratios = sorted({r["ratio"] for r in doc["digits"]}, reverse=True)
    for ratio in ratios:
        rows = [r for r in doc["digits"] if r["ratio"] == ratio and pct(r, "eq7")]
        if rows:
            e = [pct(r, "eq7") for r in rows]
            a = [pct(r, "scalar") for r in rows if pct(r, "scalar")]
            L.append(
                f"\nAt {ratio} lam_max, over {len(rows)} digits: multi-scale median {np.median(e):.0f}% "
                f"(range {min(e):.0f}-{max(e):.0f}%), scalar ablation median {np.median(a):.0f}% "
                f"(range {min(a):.0f}-{max(a):.0f}%); paper {PAPER.get(ratio, '-')}%."
            )
    L.append("\n## Column scales spread over two decades (each column x 10^u, u ~ U[-1, 1])\n")
    L.append("| digit | lam / lam_max | plain iters | multi-scale (eq. 7) | scalar ablation |")
    L.append("|---|---|---|---|---|")
    for row in doc["scaled"]:
        L.append(
            f"| {row['digit']} | {row['ratio']} | {_plain_cell(row, s)} | "
            f"{row['eq7']['iters']} ({fmt_pct(pct(row, 'eq7'))}) | {row['scalar']['iters']} "
            f"({fmt_pct(pct(row, 'scalar'))}) |"
        )
    L.append("\n" + doc.get("reading", ""))
    return "\n".join(L) + "\n"


READING = """## Reading

- **Per-feature scaling does nothing on these features; the gain is an adaptive step size.** Random
  Fourier features all have the same scale, and at the solution the diagonal of the support's Hessian
  is constant to within about 1%: Jacobi scaling leaves its condition number where it was (the two
  kappa columns). What multi-scale FISTA changes is its *step*: mu / H_jj with H_jj the current
  curvature, which falls as the fit sharpens (last column), while plain FISTA keeps the step 1/L its
  backtracking found at the start, where the curvature is largest (the paper's backtracking never
  lets the step grow). The ablation, one scalar (the diagonal's mean) instead of the diagonal, does as
  well as the diagonal: medians 65% against 86% at 0.2 lam_max, 52% against 54% at 0.1.
- **So the gain depends on how far the curvature falls along the path, and on luck.** It falls further
  at the smaller lam (to 0.39-0.60 of its start, against 0.56-0.77), and the gain is larger there
  (median 54% against 86%). Digit by digit the counts are erratic: FISTA's progress is not monotone,
  and two variants that take nearly the same steps can differ 2x (digit 5 at 0.2: 108% with the
  diagonal, 61% with its mean). Digit '3', the one bench_kernel_logreg.py uses (56% and 41%), is one
  of the most favourable; the paper's 26% at 0.1 lam_max is below every digit here (39-87%).
- **Columns on different scales rescue it only when the support spans them.** With every column
  multiplied by 10^u, u ~ U[-1, 1], the diagonal helps on none of three digits (92%, 162%, 109%): a
  large column buys the same fit for a smaller weight, so the L1 solution keeps large columns only
  (their scales lie within 4.7-10 for digit 3, 5.9-10 for digit 1 and 4.9-10 for digit 5, against
  0.1-10 over all columns), and on the support the scales are alike again. Where the support does span
  several scales (tests/test_proximal.py: 60 columns over four decades at 0.05 lam_max), multi-scale
  FISTA needs 7-29% of FISTA's iterations: that is where the diagonal, and not only the step, pays.
- What we keep: multi-scale FISTA as the paper wrote it (eq. 7 by default, eq. 8 by name), documented
  as an adaptive-step FISTA rather than a preconditioned one. For speed, the batch solvers `cd` and
  `cgd` are the ones to use (`cgd` needs 54-155 iterations where either FISTA needs 250-3,000 here)."""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--out", default=str(RESULTS_DIR))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--digits", default="0,1,2,3,4,5,6,7,8,9")
    ap.add_argument("--ratios", default="0.2,0.1")
    ap.add_argument("--max-iter", type=int, default=3000)
    ap.add_argument("--from-json", help="only re-render the markdown of an earlier run")
    args = ap.parse_args(argv)
    if args.from_json:
        return rerender(args.from_json, render)
    warnings.simplefilter("ignore")
    t_start = time.perf_counter()
    Z, digits, sigma = features(args.data_dir, args.seed)
    doc = {
        "date": utc_now(),
        "command": command_line(sys.argv[1:] if argv is None else argv),
        "machine": machine(),
        "versions": versions(),
        "setup": {
            "seed": args.seed,
            "n_train": int(Z.shape[0]),
            "D": int(Z.shape[1]),
            "sigma": sigma,
            "max_iter": args.max_iter,
        },
        "digits": [],
        "scaled": [],
        "reading": READING,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def save():
        doc["total_seconds"] = time.perf_counter() - t_start
        (out / "multiscale_fista.json").write_text(json.dumps(doc, indent=1))
        (out / "multiscale_fista.md").write_text(render(doc))

    ratios = [float(r) for r in args.ratios.split(",")]
    chosen = [int(d) for d in args.digits.split(",")]
    for digit in chosen:
        y = np.where(digits == digit, 1.0, -1.0)
        for ratio in ratios:
            row = {"digit": digit, **run_case(Z, y, ratio, args.max_iter)}
            doc["digits"].append(row)
            print(f"-- digit {digit} {ratio}: " + " ".join(f"{v} {row[v]['iters']}" for v in VARIANTS), flush=True)
            save()
    spread = 10.0 ** np.random.default_rng(args.seed).uniform(-1.0, 1.0, Z.shape[1])
    for digit in [d for d in SCALED_DIGITS if d in chosen]:
        y = np.where(digits == digit, 1.0, -1.0)
        row = {"digit": digit, **run_case(Z * spread, y, ratios[0], args.max_iter, with_explain=False)}
        doc["scaled"].append(row)
        print(f"-- scaled digit {digit}: " + " ".join(f"{v} {row[v]['iters']}" for v in VARIANTS), flush=True)
        save()
    save()
    print(f"wrote {out / 'multiscale_fista.md'} ({doc['total_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
