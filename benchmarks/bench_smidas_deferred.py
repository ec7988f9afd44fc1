"""SMIDAS with deferred shrinks against Algorithm 3 as written: the same iterates' quality, O(nnz) work.

On the 48 settings of ``bench_stochastic_defaults.py`` (every shared data set but news20,
subsampled to ``--rows`` with seed 0, and the synthetic text generator at three sizes; 0.1 and
0.01 lam_max, with and without intercept; logistic loss; P* from ``cd`` at tol 1e-10), SMIDAS with
every default for 50 passes learning from every row (``holdout=0``), twice:

- exact: ``SMIDAS(exact=True)``, the L1 shrink of the whole support of theta and ||theta||_p
  recomputed after every example (O(nnz(x_i) + nnz(theta)) per example);
- deferred: the default, ``exact=False``: the shrink of the coordinates an example does not
  touch is owed, and paid by the whole support once the coordinates updated reach its size
  (O(nnz(x_i)) per example, amortised).

Reported: relative suboptimality (P - P*) / P* of each, their ratio, the seconds of each solve,
and the support work (``state.support_work``, coordinate updates) per nonzero read
(``History.data_accesses``).

    python benchmarks/bench_smidas_deferred.py [--rows 3000] [--sets a9a,earn] [--out benchmarks/results]
    python benchmarks/bench_smidas_deferred.py --render   # rewrite the page from the JSON
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

from _common import DATA_DIR, RESULTS_DIR, command_line, machine, repo_on_path, single_thread, utc_now, versions

single_thread()
repo_on_path()

import numpy as np
from bench_stochastic_defaults import EPOCHS, SETS, TEXT_SIZES, settings

NAME = "smidas_deferred"


def _solve(X, y, problem, p_star, fit_intercept, exact):
    from l1scale.data.stream import Stream
    from l1scale.problems import StreamProblem
    from l1scale.solvers.smidas import SMIDAS

    stream = StreamProblem(Stream.from_arrays(X, y), "logistic", problem.lam, fit_intercept=fit_intercept)
    solver = SMIDAS(max_iter=EPOCHS, holdout=0, exact=exact)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        res = solver.solve(stream)
        seconds = time.perf_counter() - t0
    return {
        "subopt": float((problem.objective(res.coef, res.intercept) - p_star) / p_star),
        "seconds": round(seconds, 3),
        "work": int(solver.state_.support_work),
        "reads": int(res.history.data_accesses[-1]),
        "nnz": int(np.count_nonzero(res.coef)),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--out", default=str(RESULTS_DIR))
    ap.add_argument("--sets", help="comma-separated subset of the data sets (default: all but news20)")
    ap.add_argument("--render", action="store_true", help="only rewrite the .md page from the existing JSON")
    args = ap.parse_args(argv)
    path = os.path.join(args.out, NAME + ".json")
    if args.render:
        with open(path) as f:
            doc = json.load(f)
    else:
        names = [n for n in SETS if n != "news20"] + list(TEXT_SIZES)
        run = names if not args.sets else [n for n in names if n in args.sets.split(",")]
        t0 = time.perf_counter()
        rows = []
        for name, X, y, ratio, fit_intercept, problem, p_star in settings(run, args.rows, args.data_dir):
            row = {"data": name, "shape": list(X.shape), "lam_ratio": ratio, "fit_intercept": fit_intercept}
            for key, exact in (("exact", True), ("deferred", False)):
                row[key] = _solve(X, y, problem, p_star, fit_intercept, exact)
            rows.append(row)
            print(json.dumps(row), flush=True)
        doc = {
            "rows": rows,
            "max_rows": args.rows,
            "date": utc_now(),
            "command": command_line(sys.argv[1:] if argv is None else argv),
            "machine": machine(),
            "versions": versions(),
            "total_seconds": round(time.perf_counter() - t0, 1),
        }
        os.makedirs(args.out, exist_ok=True)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
    with open(os.path.join(args.out, NAME + ".md"), "w") as f:
        f.write(table(doc))


def table(doc):
    rows = doc["rows"]
    out = [
        "# SMIDAS: deferred shrinks (the default) against Algorithm 3 as written",
        "",
        (
            f"SMIDAS with every default, {EPOCHS} passes, every row learned from (`holdout=0`); rows subsampled to "
            f"{doc['max_rows']} (seed 0), logistic loss, the settings of the stochastic-defaults page. Exact: "
            "`SMIDAS(exact=True)` (the whole support of theta shrunk and ||theta||_p recomputed after every example). "
            "Deferred: the default (the shrink of the coordinates an example does not touch owed, and paid by the "
            "whole support once the coordinates updated reach its size). Suboptimality (P - P*) / P*, P* from `cd` "
            "at tol 1e-10; seconds of the solve; support work (coordinate updates) per nonzero read. "
            "Generated by `benchmarks/bench_smidas_deferred.py`."
        ),
        "",
        f"- Date: {doc['date']}; command: `{doc['command']}`; total {doc['total_seconds']} s",
        f"- Machine: {doc['machine']}; single thread",
        f"- Versions: {doc['versions']}",
        "",
        (
            "| data | n x d | lam / lam_max | intercept | exact | deferred | deferred / exact | exact s | deferred s "
            "| speed-up | work / read exact | work / read deferred |"
        ),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        e, d = r["exact"], r["deferred"]
        ratio = d["subopt"] / e["subopt"] if e["subopt"] > 0 else float("nan")
        out.append(
            f"| {r['data']} | {r['shape'][0]:,} x {r['shape'][1]:,} | {r['lam_ratio']} | "
            f"{'yes' if r['fit_intercept'] else 'no'} | {e['subopt']:.2e} | {d['subopt']:.2e} | {ratio:.3f} | "
            f"{e['seconds']:.2f} | {d['seconds']:.2f} | {e['seconds'] / max(d['seconds'], 1e-9):.1f}x | "
            f"{e['work'] / e['reads']:.2f} | {d['work'] / d['reads']:.2f} |"
        )
    ratios = [r["deferred"]["subopt"] / r["exact"]["subopt"] for r in rows if r["exact"]["subopt"] > 0]
    speed = [r["exact"]["seconds"] / max(r["deferred"]["seconds"], 1e-9) for r in rows]
    per_read = [r["deferred"]["work"] / r["deferred"]["reads"] for r in rows]
    hit = lambda key: sum(1 for r in rows if r[key]["subopt"] <= 1e-3)
    out += [
        "",
        (
            f"- Suboptimality, deferred / exact: {min(ratios):.3f} to {max(ratios):.3f} over {len(ratios)} settings; "
            f"within 1e-3: {hit('exact')} (exact) and {hit('deferred')} (deferred) of {len(rows)}."
        ),
        (
            f"- Speed-up of the whole solve: {min(speed):.1f}x to {max(speed):.1f}x (median {np.median(speed):.1f}x); "
            f"support work per nonzero read, deferred: {min(per_read):.2f} to {max(per_read):.2f}."
        ),
        "",
    ]
    return "\n".join(out)


if __name__ == "__main__":
    main()
