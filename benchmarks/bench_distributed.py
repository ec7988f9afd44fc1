#!/usr/bin/env python
"""Distributed training on Dask (issue 7): time per pass and in total against the number of
workers, and the per-pass overhead against a single process.

Two data sets, each split into 8 partitions written as binary chunk caches (what the
workers read):

* **news20** (the binary 20 Newsgroups set, d = 588,937), persisted in worker memory;
* a **generated** sparse text-like set (``l1scale.data.synthetic.iter_sparse_text_chunks``)
  whose CSR arrays are larger than one worker's memory budget (``--worker-memory``, the
  workers' ``memory_limit``): ``persist="auto"`` then keeps nothing in memory and every pass
  re-reads the partitions from disk.

For each: RMMP and FISTA in one process on the same rows (in memory for news20, streamed
from the same caches for the generated set), then on a LocalCluster of worker processes
(1 and 2 workers, one thread each). Per pass (RMMP) or iteration (FISTA): the wall time,
its split into compute (map over the partitions), reduce (tree reduction and transfer) and
driver, and the overhead = distributed time per pass - single-process time per pass. The
fixed cost of a pass is also measured alone: an empty map over the 8 partitions plus the
tree reduction ("round trip").

    .venv/bin/python benchmarks/bench_distributed.py            # ~6 minutes
    .venv/bin/python benchmarks/bench_distributed.py --quick    # smaller generated set, news20 RMMP only

Writes benchmarks/results/distributed.{md,json} (``_quick`` with --quick).
"""

from __future__ import annotations

from _common import DATA_DIR, RESULTS_DIR, command_line, load_svmlight_cached, machine, repo_on_path, single_thread, \
    utc_now, versions

single_thread()  # before numpy is imported (the workers inherit the environment)
repo_on_path()

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

NEWS20 = ("news20/news20_bydate_binary.svm.bz2", 588937)


def write_partitions(chunks_of, parts, directory):
    """``parts`` chunk caches ``directory/part-i`` from ``chunks_of(i)`` (a list of (X, y))."""
    from l1scale.data.stream import Stream, write_cache

    paths = []
    for i in range(parts):
        path = os.path.join(directory, f"part-{i}")
        chunks = chunks_of(i)
        write_cache(Stream.from_generator(lambda c=chunks: iter(c), n_features=chunks[0][0].shape[1]), path)
        paths.append(path)
    return paths


def news20_partitions(directory, parts, cache_dir):
    X, y = load_svmlight_cached(os.path.join(DATA_DIR, NEWS20[0]), NEWS20[1], cache_dir, "news20")
    bounds = [round(i * X.shape[0] / parts) for i in range(parts + 1)]
    paths = write_partitions(lambda i: [(X[bounds[i]:bounds[i + 1]], y[bounds[i]:bounds[i + 1]])], parts, directory)
    return paths, X, y


def generated_partitions(directory, parts, n, d, nnz_per_row):
    from l1scale.data.synthetic import iter_sparse_text_chunks

    gen = iter_sparse_text_chunks(n, d, chunk_rows=n // parts // 4, random_state=0, nnz_per_row=nnz_per_row)
    chunks = list(gen)
    per = len(chunks) // parts
    paths = write_partitions(lambda i: chunks[i * per:(i + 1) * per], parts, directory)
    return paths, sum(c[0].nnz for c in chunks)


def per_pass(history):
    t = history.time
    return [b - a for a, b in zip([0.0] + t[:-1], t)]


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


def summarise(res, label, workers, seconds):
    h = res.history
    row = {"run": label, "workers": workers, "passes": res.n_iter, "rows": len(h), "converged": bool(res.converged),
           "objective": float(res.objective), "nnz": res.nnz, "total_s": seconds,
           "per_pass_s": median(per_pass(h)[1:]) if len(h) > 1 else h.time[0]}
    if h.compute_time:
        row.update(compute_s=median(h.compute_time[1:]), reduce_s=median(h.reduce_time[1:]),
                   driver_s=median(h.driver_time[1:]))
    return row


def run_single(name, kind, problem_of, cfg):
    from l1scale.solvers.proximal import FISTA
    from l1scale.solvers.sketch import ReducedMemoryMultiPass

    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        res = ReducedMemoryMultiPass(max_active=cfg["k"], max_iter=cfg["passes"]).solve(problem_of("stream"))
        out.append(summarise(res, "rmmp", 0, time.perf_counter() - t))
        if cfg["fista"]:
            t = time.perf_counter()
            res = FISTA(tol=1e-12, max_iter=cfg["fista"], check_every=5).solve(problem_of("memory"))
            out.append(summarise(res, "fista", 0, time.perf_counter() - t))
    return out


def _noop(stream, spec):
    import numpy as np

    return np.zeros(1)


def run_cluster(workers, paths, cfg, memory_limit, persist):
    from distributed import Client, LocalCluster

    from l1scale.distributed import DaskDataset, DaskProblem, solve
    from l1scale.solvers.proximal import FISTA
    from l1scale.solvers.sketch import ReducedMemoryMultiPass

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                           memory_limit=memory_limit)
    client = Client(cluster)
    out = []
    try:
        t = time.perf_counter()
        ds = DaskDataset.from_files(paths, client, persist=persist)
        made = time.perf_counter() - t
        lam = {"lam_ratio": cfg["lam_ratio"]}
        # Warm-up: every worker loads the Numba caches (not counted in the passes).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ReducedMemoryMultiPass(max_active=cfg["k"], max_iter=1).solve(DaskProblem(ds, "logistic", **lam))
        trips = []
        problem = DaskProblem(ds, "logistic", **lam)
        for _ in range(10):
            s = time.perf_counter()
            problem.map_reduce(_noop, what="noop")
            trips.append(time.perf_counter() - s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            res = ReducedMemoryMultiPass(max_active=cfg["k"], max_iter=cfg["passes"]).solve(
                DaskProblem(ds, "logistic", **lam))
            out.append(summarise(res, "rmmp", workers, time.perf_counter() - t))
            if cfg["fista"]:
                t = time.perf_counter()
                res = solve(FISTA(tol=1e-12, max_iter=cfg["fista"], check_every=5), DaskProblem(ds, "logistic", **lam))
                out.append(summarise(res, "fista", workers, time.perf_counter() - t))
        for row in out:
            row.update(persisted=ds.persisted, dataset_s=made, round_trip_s=median(trips))
        ds.close()
    finally:
        client.close()
        cluster.close()
    return out


def render(doc):
    L = ["# Distributed training on Dask (issue 7)\n",
         f"{doc['date']}, `{doc['command']}`  ", f"{doc['machine']}  ", f"{doc['versions']}\n",
         "Each data set in 8 partitions (binary chunk caches). 'workers 0' is one process without Dask "
         "(news20 in memory; the generated set streamed from the same caches). LocalCluster of worker "
         "processes, one thread each, on a 2-core machine shared with other work: the 2-worker runs share "
         "the two cores with the driver and the scheduler. Per pass: median over the passes after the "
         "first; overhead = distributed - single-process time per pass; round trip = an empty map over "
         "the 8 partitions + tree reduction + gather.\n"]
    for ds in doc["datasets"]:
        L.append(f"## {ds['name']}\n\n{ds['description']}\n")
        L.append("| solver | workers | persisted | passes | per pass (s) | compute / reduce / driver (s) | "
                 "overhead per pass (s) | round trip (s) | total (s) | objective |")
        L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        single = {r["run"]: r for r in ds["runs"] if r["workers"] == 0}
        for r in ds["runs"]:
            split = (f"{r['compute_s']:.3f} / {r['reduce_s']:.3f} / {r['driver_s']:.3f}" if "compute_s" in r else "")
            over = f"{r['per_pass_s'] - single[r['run']]['per_pass_s']:+.3f}" if r["workers"] else ""
            L.append(f"| {r['run']} | {r['workers'] or 'one process'} | {r.get('persisted', '')} | {r['passes']} | "
                     f"{r['per_pass_s']:.3f} | {split} | {over} | "
                     f"{r['round_trip_s']:.3f} | " if r["workers"] else
                     f"| {r['run']} | one process | | {r['passes']} | {r['per_pass_s']:.3f} | | | | ")
            L[-1] += f"{r['total_s']:.2f} | {r['objective']:.10g} |"
        L.append("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=600_000, help="rows of the generated set")
    ap.add_argument("--d", type=int, default=100_000)
    ap.add_argument("--nnz-per-row", type=float, default=50)
    ap.add_argument("--worker-memory", default="512MiB", help="each worker's memory_limit (its budget)")
    ap.add_argument("--out", default=str(RESULTS_DIR))
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "l1scale-bench"))
    args = ap.parse_args(argv)
    if args.quick:
        args.n = 100_000
    from l1scale.data.stream import Stream
    from l1scale.problem import Problem
    from l1scale.stream_problem import StreamProblem

    doc = {"date": utc_now(), "command": command_line(sys.argv[1:]), "machine": machine(),
           "versions": versions(("numpy", "scipy", "numba", "dask", "distributed", "l1scale")), "datasets": []}
    with tempfile.TemporaryDirectory() as tmp:
        paths, X, y = news20_partitions(os.path.join(tmp, "news20"), 8, args.cache_dir)
        cfg = {"k": 2000, "passes": 8, "lam_ratio": 0.1, "fista": 0 if args.quick else 20}
        yb = (y > 0).astype(float)

        def news_problem(kind):
            if kind == "memory":
                return Problem(X.tocsc(), 2 * yb - 1, "logistic", lam_ratio=cfg["lam_ratio"])
            return StreamProblem(Stream.from_arrays(X, yb), "logistic", lam_ratio=cfg["lam_ratio"])

        runs = run_single("news20", "memory", news_problem, cfg)
        for workers in (1, 2):
            print(f"news20, {workers} worker(s) ...", flush=True)
            runs += run_cluster(workers, paths, cfg, "2GiB", "auto")
        doc["datasets"].append({"name": "news20", "description": f"n = {X.shape[0]:,}, d = {X.shape[1]:,}, "
                                f"nnz = {X.nnz:,} ({16 * X.nnz / 2**20:.0f} MiB as CSR); RMMP k = 2000 at "
                                f"lam_ratio 0.1 ({cfg['passes']} passes at most), FISTA {cfg['fista']} iterations; "
                                "workers' memory_limit 2 GiB (persisted).", "runs": runs})
        X = y = yb = None  # free the memory before the generated set
        print(json.dumps(runs, indent=1), flush=True)

        gpaths, nnz = generated_partitions(os.path.join(tmp, "generated"), 8, args.n, args.d, args.nnz_per_row)
        gcfg = {"k": 1000, "passes": 6, "lam_ratio": 0.05, "fista": 0 if args.quick else 10}

        def gen_problem(kind):
            from l1scale.data.stream import Stream as S

            def chunks():
                for p in gpaths:
                    yield from S.from_cache(p)
            stream = S.from_generator(chunks, n_features=args.d)
            if kind == "memory":  # FISTA needs the rows in memory in one process: the same rows, loaded
                import numpy as np
                import scipy.sparse as sp

                parts = list(stream)
                return Problem(sp.vstack([c.X for c in parts]).tocsc(), np.concatenate([c.y for c in parts]),
                               "logistic", lam_ratio=gcfg["lam_ratio"])
            return StreamProblem(stream, "logistic", lam_ratio=gcfg["lam_ratio"])

        runs = run_single("generated", "stream", gen_problem, gcfg)
        for workers in (1, 2):
            print(f"generated, {workers} worker(s) ...", flush=True)
            runs += run_cluster(workers, gpaths, gcfg, args.worker_memory, False)
        doc["datasets"].append({"name": "generated", "description": (
            f"n = {args.n:,}, d = {args.d:,}, nnz = {nnz:,}: {16 * nnz / 2**20:.0f} MiB as CSR, more than one "
            f"worker's memory budget (memory_limit {args.worker_memory}, of which a worker process with numpy, "
            f"scipy, numba and l1scale loaded takes about 250 MiB); persist=False: every pass re-reads the "
            f"partitions from disk (the page cache); RMMP k = 1000 at lam_ratio 0.05, {gcfg['passes']} passes at "
            f"most, FISTA {gcfg['fista']} iterations (its single-process run holds the rows in memory)."), "runs": runs})
        print(json.dumps(runs, indent=1), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if args.quick else ""
    (out / f"distributed{suffix}.json").write_text(json.dumps(doc, indent=1))
    (out / f"distributed{suffix}.md").write_text(render(doc))
    print(f"wrote {out / f'distributed{suffix}.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
