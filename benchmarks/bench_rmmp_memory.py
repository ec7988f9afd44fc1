#!/usr/bin/env python
"""RMMP memory is O(d + k^2), independent of n: a stream 10x longer costs no more memory.

A synthetic sparse text-like data set (``l1scale.data.synthetic.iter_sparse_text_chunks``,
the same distribution and planted model for both sizes, same d) is streamed through
``Stream.from_generator``, so no more than one chunk of it is ever in memory, and
``ReducedMemoryMultiPass`` solves L1 logistic regression on it, for n rows and for
``factor * n`` rows. Each size runs in a fresh subprocess (so the sizes do not contaminate
each other's peaks), which measures

* the tracemalloc peak (every Python and NumPy allocation) from just before the
  StreamProblem is built (label scan) to the end of ``solve``;
* the peak RSS of the run (the kernel's VmHWM, reset through ``/proc/self/clear_refs``
  after imports and a tiny warm-up solve that loads the Numba caches; the process's
  ``ru_maxrss`` is kept in the JSON), and the resident size before the run, so the
  increment is what the run itself added.

A control solves the same rows held in memory (``make_sparse_text`` + ``Stream.from_arrays``):
the same instrument must see that one grow with n.

The growth from n to factor * n must be below 10% (it is checked and reported).
Next to the measurements, the O(d + k^2) accounting: one length-d float64 vector
(beta, gradient, |Omega|, ...), the int64 slot map, one (k+1)^2 sketch, one chunk, and what
X would take if it were held in memory (CSR: 16 bytes per nonzero).

    .venv/bin/python benchmarks/bench_rmmp_memory.py            # n = 50,000 and 500,000, d = 100,000
    .venv/bin/python benchmarks/bench_rmmp_memory.py --quick    # n = 5,000 and 50,000, d = 20,000

Writes benchmarks/results/rmmp_memory.{md,json} (``_quick`` suffix with --quick).
"""

from __future__ import annotations

from _common import (
    MIB,
    RESULTS_DIR,
    command_line,
    machine,
    peak_rss_mib,
    repo_on_path,
    rerender,
    reset_peak_rss,
    run_worker,
    serve_worker,
    single_thread,
    status_mib,
    utc_now,
    versions,
)

single_thread()  # before numpy is imported
repo_on_path()

import argparse
import contextlib
import io
import json
import re
import sys
import time
from pathlib import Path

MARK = "RMMP_MEMORY_RESULT "
GROWTH_LIMIT = 0.10


# ----------------------------------------------------------------------------- worker
def worker(cfg: dict) -> dict:
    """One size, in this (fresh) process."""
    import tracemalloc
    import warnings

    from l1scale.data.stream import Stream
    from l1scale.data.synthetic import iter_sparse_text_chunks, make_sparse_text
    from l1scale.problems import StreamProblem
    from l1scale.solvers.sketch import ReducedMemoryMultiPass

    n, d = cfg["n"], cfg["d"]
    gen_kw = dict(nnz_per_row=cfg["nnz_per_row"], n_informative=cfg["n_informative"])

    def stream_of(rows, width, **kw):
        return Stream.from_generator(
            lambda: iter_sparse_text_chunks(rows, width, chunk_rows=cfg["chunk_rows"], random_state=cfg["seed"], **kw),
            n_features=width,
        )

    # Warm-up: load (or compile) the Numba kernels on a tiny stream.
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        ReducedMemoryMultiPass(tol=1e-3, max_iter=3, max_active=10).solve(
            StreamProblem(stream_of(500, 200, nnz_per_row=10, n_informative=20), "logistic", lam_ratio=0.1)
        )
    rss_before_peak, rss_before_now = peak_rss_mib(), status_mib("VmRSS")
    hwm_reset = reset_peak_rss()

    log = io.StringIO()
    tracemalloc.start()
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(log):
        warnings.simplefilter("always")
        if cfg.get("source") == "arrays":  # the control: the same rows held in memory
            X, y = make_sparse_text(n, d, random_state=cfg["seed"], **gen_kw)
            stream = Stream.from_arrays(X, y, chunk_rows=cfg["chunk_rows"])
        else:
            stream = stream_of(n, d, **gen_kw)
        problem = StreamProblem(stream, "logistic", lam_ratio=cfg["lam_ratio"])
        t_scan = time.perf_counter() - t0
        solver = ReducedMemoryMultiPass(
            tol=cfg["tol"], max_iter=cfg["max_iter"], max_active=cfg["max_active"], tau=cfg["tau"], verbose=1
        )
        res = solver.solve(problem)
    wall = time.perf_counter() - t0
    _, tm_peak = tracemalloc.get_traced_memory()
    rss_peak_process = peak_rss_mib()
    rss_peak = status_mib("VmHWM") if hwm_reset else rss_peak_process
    # The data source alone: one plain pass over the same stream (the chunk and the
    # generator's buffers), for the accounting.
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    for _chunk in problem.stream:
        pass
    del _chunk
    src_peak = tracemalloc.get_traced_memory()[1] - base
    if cfg.get("source") == "arrays":
        del X, y, stream
    tracemalloc.stop()
    actives = [int(m) for m in re.findall(r"active\s+(\d+)", log.getvalue())]
    h = res.history
    nnz_pass = h.data_accesses[0] if len(h) else 0
    return {
        "n": n,
        "d": d,
        "nnz": int(nnz_pass),
        "lam": float(problem.lam),
        "lam_max": float(problem.lam_max()),
        "passes": int(res.n_iter),
        "converged": bool(res.converged),
        "stop_reason": res.stop_reason,
        "kkt_over_lam": float(res.relative_certificate),
        "objective": float(res.objective),
        "support": int(res.nnz),
        "max_active_seen": max(actives) if actives else 0,
        "seconds_total": wall,
        "seconds_scan": t_scan,
        "seconds_solve": float(res.timings["solve"]),
        "tracemalloc_peak_mib": tm_peak / MIB,
        "tracemalloc_source_pass_mib": src_peak / MIB,
        "rss_peak_mib": rss_peak,
        "rss_peak_process_mib": rss_peak_process,
        "rss_peak_is_run_only": hwm_reset,
        "rss_before_peak_mib": rss_before_peak,
        "rss_before_now_mib": rss_before_now,
        "rss_increment_mib": rss_peak - rss_before_now,
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    }


def run_size(cfg: dict) -> dict:
    """One size in a fresh subprocess (``worker``); adds its wall time as ``subprocess_seconds``."""
    t0 = time.perf_counter()
    out, proc = run_worker(__file__, cfg, MARK)
    wall = time.perf_counter() - t0
    if out is not None:
        out["subprocess_seconds"] = wall
        return out
    raise RuntimeError(
        f"worker for n={cfg['n']} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    )


# ----------------------------------------------------------------------------- report
def render(doc: dict) -> str:
    cfg, runs = doc["config"], doc["runs"]
    small, large = runs[0], runs[-1]
    d, k = cfg["d"], cfg["max_active"]
    L = []
    L.append("# RMMP memory: a 10x longer stream, the same memory\n")
    L.append(
        "`ReducedMemoryMultiPass` (L1 logistic regression, intercept, tol = "
        f"{cfg['tol']:g} on the KKT violation / lam) on synthetic sparse text-like data streamed from "
        "`iter_sparse_text_chunks` through `Stream.from_generator` (one chunk alive at a time; "
        "every pass regenerates the rows, identically). Same d, same distribution and planted model, "
        f"n = {small['n']:,} and {large['n']:,} rows. Each size runs in a fresh subprocess.\n"
    )
    L.append("## Setup\n")
    L.append(f"- Date: {doc['date']}; command: `{doc['command']}`")
    L.append(f"- Machine: {doc['machine']}; {doc['versions']}")
    L.append(
        f"- Data: d = {d:,}, nnz_per_row = {cfg['nnz_per_row']} (mean), n_informative = "
        f"{cfg['n_informative']}, chunk_rows = {cfg['chunk_rows']:,}, random_state = {cfg['seed']}"
    )
    L.append(
        f"- Solver: `ReducedMemoryMultiPass(tol={cfg['tol']:g}, max_active={k}, tau={cfg['tau']:g}, "
        f"max_iter={cfg['max_iter']})`, "
        f"`StreamProblem(..., lam_ratio={cfg['lam_ratio']:g})` (lam resolved by the first pass of each size)"
    )
    L.append(
        "- tracemalloc peak: from just before the StreamProblem (its label scan) to the end of `solve`. "
        "Peak RSS: the subprocess's peak resident size (VmHWM) during the run, the mark reset "
        "(`/proc/self/clear_refs`) after imports and a tiny warm-up solve (Numba caches loaded); the "
        "process's all-time `ru_maxrss` is in the JSON. 'RSS before' = resident size after that warm-up, so "
        "'RSS increment' = peak RSS - RSS before is what the run added. Times include tracemalloc's "
        "overhead.\n"
    )
    L.append("## Results\n")
    L.append(
        "| n | nnz(X) | lam/lam_max | passes (+1 label scan) | converged | support | max active (incl. intercept) "
        "| seconds | tracemalloc peak (MiB) | a plain pass over the source alone (MiB) | peak RSS (MiB) | RSS before (MiB) | RSS increment (MiB) "
        "| X held in memory would be (MiB) |"
    )
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        held = (16 * r["nnz"] + 8 * (r["n"] + 1) + 8 * r["n"]) / MIB
        L.append(
            f"| {r['n']:,} | {r['nnz']:,} | {cfg['lam_ratio']:g} | {r['passes']} | "
            f"{'yes' if r['converged'] else 'no (' + r['stop_reason'] + ')'} | {r['support']} | "
            f"{r['max_active_seen']} | {r['seconds_total']:.1f} | {r['tracemalloc_peak_mib']:.1f} | "
            f"{r['tracemalloc_source_pass_mib']:.1f} | "
            f"{r['rss_peak_mib']:.1f} | {r['rss_before_now_mib']:.1f} | {r['rss_increment_mib']:.1f} | "
            f"{held:.0f} |"
        )
    g = doc["growth"]
    L.append("")
    L.append(
        f"**Growth from n = {small['n']:,} to {large['n']:,} ({large['n'] / small['n']:.0f}x the rows):** "
        f"tracemalloc peak {g['tracemalloc_peak']:+.1%}, peak RSS {g['rss_peak']:+.1%}, "
        f"RSS increment {g['rss_increment']:+.1%} (limit: < {GROWTH_LIMIT:.0%}). "
        f"Verdict: **{'PASS' if doc['pass'] else 'FAIL'}** (tracemalloc and peak RSS both below the limit). "
        f"Holding X instead would have grown by "
        f"{(16 * (large['nnz'] - small['nnz'])) / MIB:,.0f} MiB.\n"
    )
    ctl = doc.get("controls") or []
    if len(ctl) == 2:
        c0, c1 = ctl
        L.append(
            "**Control (the instrument sees n when n is there):** the same rows, solver and settings, but "
            "the data generated whole by `make_sparse_text` and held in memory (`Stream.from_arrays`): "
            f"tracemalloc peak {c0['tracemalloc_peak_mib']:.0f} -> {c1['tracemalloc_peak_mib']:.0f} MiB "
            f"({c1['tracemalloc_peak_mib'] / c0['tracemalloc_peak_mib'] - 1:+.0%}), peak RSS "
            f"{c0['rss_peak_mib']:.0f} -> {c1['rss_peak_mib']:.0f} MiB "
            f"({c1['rss_peak_mib'] / c0['rss_peak_mib'] - 1:+.0%}); the passes and solution are the "
            f"streamed runs' ({c0['passes']} / {c1['passes']} passes, support {c0['support']} / "
            f"{c1['support']}).\n"
        )
    L.append(
        "The RSS increment moves by a few MiB from run to run (allocator arenas); it is not part of the verdict.\n"
    )
    L.append("## The O(d + k^2) accounting\n")
    kk = max(r["max_active_seen"] for r in runs)
    chunk_nnz = cfg["chunk_rows"] * cfg["nnz_per_row"]
    items = [
        (
            (
                "one length-d float64 vector (beta, previous beta, gradient, its per-chunk part, \\|Omega\\|, candidate "
                "scores)"
            ),
            8 * d,
        ),
        ("the int64 slot map (feature -> position in S)", 8 * d),
        (f"one sketch Psi_S, \\|S\\|^2 float64 with \\|S\\| = {kk} (max_active = {k} + intercept)", 8 * kk * kk),
        (
            f"one chunk of {cfg['chunk_rows']:,} rows (~{chunk_nnz:,} nonzeros: float64 value + int64 index)",
            16 * chunk_nnz + 8 * (cfg["chunk_rows"] + 1),
        ),
    ]
    L.append("| item | bytes | MiB |")
    L.append("|---|---|---|")
    for name, b in items:
        L.append(f"| {name} | {b:,} | {b / MIB:.2f} |")
    L.append("")
    src = max(r["tracemalloc_source_pass_mib"] for r in runs)
    model = (10 * 8 * d + 4 * 8 * kk * kk) / MIB + src
    L.append(
        "None of these depends on n. From the code (`l1scale/solvers/sketch.py`), a pass holds at its peak "
        "a handful of length-d vectors at once (the running gradient sum, the chunk's part and their sum, beta, "
        "the previous beta, the slot map; after the pass |Omega|, the candidate scores and the new beta) and a "
        "few (|S|)^2 matrices (the running Psi_S, the chunk's part and their sum; Shooting's copy), plus what "
        "the data source holds during a pass (the chunk, the generator's block buffers and its O(d) tables: "
        f"measured alone at {src:.1f} MiB). So about 10 d-vectors + 4 sketches + the source = "
        f"{model:.0f} MiB, against a measured tracemalloc peak of "
        f"{small['tracemalloc_peak_mib']:.0f} / {large['tracemalloc_peak_mib']:.0f} MiB; whereas "
        f"X itself is {16 * small['nnz'] / MIB:.0f} MiB at n = {small['n']:,} and "
        f"{16 * large['nnz'] / MIB:.0f} MiB at n = {large['n']:,}. The peak RSS is dominated by the interpreter, "
        "NumPy/SciPy and the loaded Numba code (the 'RSS before' column).\n"
    )
    if any(r["warnings"] for r in runs):
        L.append("## Warnings\n")
        for r in runs:
            for w in r["warnings"]:
                L.append(f"- n = {r['n']:,}: {w}")
        L.append("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50_000, help="rows of the smaller stream")
    ap.add_argument("--factor", type=int, default=10, help="the larger stream has factor * n rows")
    ap.add_argument("--d", type=int, default=100_000)
    ap.add_argument("--nnz-per-row", type=float, default=50)
    ap.add_argument("--n-informative", type=int, default=1000)
    ap.add_argument("--lam-ratio", type=float, default=0.02)
    ap.add_argument(
        "--max-active",
        type=int,
        default=600,
        help="k; the default is below the first active set of both sizes, so |S| = k in both",
    )
    ap.add_argument(
        "--tau",
        type=float,
        default=0.5,
        help="RMMP's tau (paper: 0.8); 0.5 widens the candidate set so that |S| fills k at both sizes",
    )
    ap.add_argument("--chunk-rows", type=int, default=10_000)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--max-iter", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--quick", action="store_true", help="n = 5,000 / 50,000, d = 20,000, max_active = 300, lam_ratio = 0.05"
    )
    ap.add_argument("--out", default=str(RESULTS_DIR))
    ap.add_argument(
        "--no-control",
        dest="control",
        action="store_false",
        help="skip the control runs (the same rows held in memory: make_sparse_text + Stream.from_arrays)",
    )
    ap.add_argument("--from-json", help="only re-render the markdown of an earlier run")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        return serve_worker(worker, args.worker, MARK)

    out = Path(args.out)
    suffix = "_quick" if args.quick else ""
    if args.from_json:
        return rerender(args.from_json, render)
    if args.quick:
        args.n, args.d, args.max_active, args.n_informative, args.lam_ratio = 5_000, 20_000, 300, 50, 0.05
        args.chunk_rows = 2_000
    cfg = {
        "d": args.d,
        "nnz_per_row": args.nnz_per_row,
        "n_informative": args.n_informative,
        "lam_ratio": args.lam_ratio,
        "max_active": args.max_active,
        "chunk_rows": args.chunk_rows,
        "tol": args.tol,
        "max_iter": args.max_iter,
        "seed": args.seed,
        "tau": args.tau,
    }
    runs = []
    for n in (args.n, args.factor * args.n):
        print(f"n = {n:,} ...", flush=True)
        r = run_size({**cfg, "n": n})
        print(
            f"  passes {r['passes']} converged {r['converged']} support {r['support']} "
            f"|S| {r['max_active_seen']}  {r['seconds_total']:.1f}s  tracemalloc peak "
            f"{r['tracemalloc_peak_mib']:.1f} MiB  peak RSS {r['rss_peak_mib']:.1f} MiB "
            f"(before {r['rss_before_now_mib']:.1f})",
            flush=True,
        )
        runs.append(r)
    controls = []
    if args.control:
        for n in (args.n, args.factor * args.n):
            print(f"control (data held in memory, Stream.from_arrays): n = {n:,} ...", flush=True)
            r = run_size({**cfg, "n": n, "source": "arrays"})
            print(
                f"  passes {r['passes']} tracemalloc peak {r['tracemalloc_peak_mib']:.1f} MiB  peak RSS "
                f"{r['rss_peak_mib']:.1f} MiB",
                flush=True,
            )
            controls.append(r)
    small, large = runs
    growth = {
        key: large[key] / small[key] - 1.0 for key in ("tracemalloc_peak_mib", "rss_peak_mib", "rss_increment_mib")
    }
    growth = {
        "tracemalloc_peak": growth["tracemalloc_peak_mib"],
        "rss_peak": growth["rss_peak_mib"],
        "rss_increment": growth["rss_increment_mib"],
    }
    ok = growth["tracemalloc_peak"] < GROWTH_LIMIT and growth["rss_peak"] < GROWTH_LIMIT
    doc = {
        "date": utc_now(),
        "command": command_line(sys.argv[1:]),
        "machine": machine(with_ram=False),
        "versions": versions(),
        "config": {**cfg, "n": args.n, "factor": args.factor},
        "runs": runs,
        "controls": controls,
        "growth": growth,
        "growth_limit": GROWTH_LIMIT,
        "pass": ok,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rmmp_memory{suffix}.json").write_text(json.dumps(doc, indent=1))
    (out / f"rmmp_memory{suffix}.md").write_text(render(doc))
    print(
        f"growth: tracemalloc {growth['tracemalloc_peak']:+.1%}, peak RSS {growth['rss_peak']:+.1%}, "
        f"RSS increment {growth['rss_increment']:+.1%} -> {'PASS' if ok else 'FAIL'}; "
        f"wrote {out / f'rmmp_memory{suffix}.md'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
