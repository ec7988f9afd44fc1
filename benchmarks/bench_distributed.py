"""Distributed training on Dask (issues 7 and 13): time per pass and in total against the number of
workers, and the per-pass overhead against a single process.

Two data sets, each split into 8 partitions written as binary chunk caches (what the
workers read):

* **news20** (the binary 20 Newsgroups set, d = 588,937), persisted in worker memory;
* a **generated** sparse text-like set (``l1scale.data.synthetic.iter_sparse_text_chunks``)
  whose CSR arrays are larger than one worker's memory budget (``--worker-memory``, the
  workers' ``memory_limit``): ``persist="auto"`` then keeps nothing in memory and every pass
  re-reads the partitions from disk.

For each: RMMP and FISTA in one process on the same rows (in memory for news20, streamed
from the same caches for the generated set), then on a cluster of 1, 2 and 4 worker
processes with one thread each, started the way a user starts a real cluster (issue 13):
``dask scheduler --host 127.0.0.1 --port 0 --no-dashboard --scheduler-file F`` and, per
worker, ``dask worker ADDRESS --nworkers 1 --nthreads 1 --memory-limit M`` (each a separate
process with its nanny), the driver joining with ``Client(ADDRESS)``. ``--cluster local``
uses a ``LocalCluster(processes=True)`` instead (issue 7's measurement; the same worker
processes, started by the driver). Per pass (RMMP) or iteration (FISTA): the wall time,
its split into compute (map over the partitions), reduce (tree reduction and transfer) and
driver, and the overhead = distributed time per pass - single-process time per pass. The
fixed cost of a pass is also measured alone: an empty map over the 8 partitions plus the
tree reduction ("round trip").

    .venv/bin/python benchmarks/bench_distributed.py            # ~8 minutes
    .venv/bin/python benchmarks/bench_distributed.py --quick    # smaller generated set, RMMP only
    .venv/bin/python benchmarks/bench_distributed.py --workers 1 2 --cluster local

Writes benchmarks/results/distributed.{md,json} (``_quick`` with --quick, ``_local`` with
--cluster local).
"""

from __future__ import annotations

from _common import (
    DATA_DIR,
    RESULTS_DIR,
    command_line,
    load_svmlight_cached,
    machine,
    repo_on_path,
    single_thread,
    utc_now,
    versions,
)

single_thread()  # before numpy is imported (the workers inherit the environment)
repo_on_path()

import argparse
import contextlib
import json
import os
import signal
import subprocess
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
    paths = write_partitions(lambda i: [(X[bounds[i] : bounds[i + 1]], y[bounds[i] : bounds[i + 1]])], parts, directory)
    return paths, X, y


def generated_partitions(directory, parts, n, d, nnz_per_row):
    from l1scale.data.synthetic import iter_sparse_text_chunks

    gen = iter_sparse_text_chunks(n, d, chunk_rows=n // parts // 4, random_state=0, nnz_per_row=nnz_per_row)
    chunks = list(gen)
    per = len(chunks) // parts
    paths = write_partitions(lambda i: chunks[i * per : (i + 1) * per], parts, directory)
    return paths, sum(c[0].nnz for c in chunks)


def per_pass(history):
    t = history.time
    return [b - a for a, b in zip([0.0] + t[:-1], t)]


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


def summarise(res, label, workers, seconds):
    h = res.history
    row = {
        "run": label,
        "workers": workers,
        "passes": res.n_iter,
        "rows": len(h),
        "converged": bool(res.converged),
        "objective": float(res.objective),
        "nnz": res.nnz,
        "total_s": seconds,
        "per_pass_s": median(per_pass(h)[1:]) if len(h) > 1 else h.time[0],
    }
    if h.compute_time:
        row.update(
            compute_s=median(h.compute_time[1:]), reduce_s=median(h.reduce_time[1:]), driver_s=median(h.driver_time[1:])
        )
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


def _dask_command(what):
    """``dask scheduler`` / ``dask worker``: the console script of this environment."""
    script = os.path.join(os.path.dirname(sys.executable), "dask")
    if os.access(script, os.X_OK):
        return [script, what]
    return [sys.executable, "-m", f"distributed.cli.dask_{what}"]


@contextlib.contextmanager
def dask_worker_cluster(workers, memory_limit, directory):
    """The address of a scheduler and ``workers`` worker processes started as separate
    commands (``dask scheduler``, ``dask worker``), each in its own process group, all
    killed at the end. Their logs: ``directory/{scheduler,worker-i}.log``."""
    from _common import REPO

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    procs = []

    def start(name, args):
        with open(os.path.join(directory, f"{name}.log"), "wb") as log:
            procs.append(
                subprocess.Popen(
                    args,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    env=env,
                )
            )

    info = os.path.join(directory, "scheduler.json")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(info)
    try:
        start(
            "scheduler",
            [
                *_dask_command("scheduler"),
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                info,
            ],
        )
        deadline = time.monotonic() + 120
        address = None
        while address is None:
            with contextlib.suppress(FileNotFoundError, ValueError, KeyError), open(info) as fh:
                address = json.load(fh)["address"]
            if address is None:
                if procs[0].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"dask scheduler did not start (see {directory}/scheduler.log)")
                time.sleep(0.1)
        for i in range(workers):
            start(
                f"worker-{i}",
                [
                    *_dask_command("worker"),
                    address,
                    "--nworkers",
                    "1",
                    "--nthreads",
                    "1",
                    "--memory-limit",
                    memory_limit,
                    "--host",
                    "127.0.0.1",
                    "--no-dashboard",
                    "--name",
                    f"worker-{i}",
                    "--death-timeout",
                    "60",
                ],
            )
        yield address
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
        for p in procs:
            p.wait()


@contextlib.contextmanager
def connected(kind, workers, memory_limit):
    """(client, seconds to start the cluster and see every worker) for ``kind``: "dask-worker"
    (separate commands) or "local" (LocalCluster of worker processes)."""
    from distributed import Client, LocalCluster

    t = time.perf_counter()
    if kind == "local":
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0", memory_limit=memory_limit
        )
        client = Client(cluster)
        try:
            yield client, time.perf_counter() - t
        finally:
            client.close()
            cluster.close()
        return
    with (
        tempfile.TemporaryDirectory(prefix="l1scale-dask-") as logs,
        dask_worker_cluster(workers, memory_limit, logs) as address,
    ):
        client = Client(address, timeout=120)
        try:
            client.wait_for_workers(workers, timeout=120)
            yield client, time.perf_counter() - t
        finally:
            client.close()


def run_cluster(workers, paths, cfg, memory_limit, persist, kind="dask-worker"):
    with connected(kind, workers, memory_limit) as (client, started):
        out = _run_on(client, workers, paths, cfg, persist)
        for row in out:
            row.update(cluster=kind, start_s=started)
        return out


def _run_on(client, workers, paths, cfg, persist):
    from l1scale.distributed import DaskDataset, DaskProblem, solve
    from l1scale.solvers.proximal import FISTA
    from l1scale.solvers.sketch import ReducedMemoryMultiPass

    out = []
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
            DaskProblem(ds, "logistic", **lam)
        )
        out.append(summarise(res, "rmmp", workers, time.perf_counter() - t))
        if cfg["fista"]:
            t = time.perf_counter()
            res = solve(FISTA(tol=1e-12, max_iter=cfg["fista"], check_every=5), DaskProblem(ds, "logistic", **lam))
            out.append(summarise(res, "fista", workers, time.perf_counter() - t))
    for row in out:
        row.update(persisted=ds.persisted, dataset_s=made, round_trip_s=median(trips))
    ds.close()
    return out


CLUSTERS = {
    "dask-worker": (
        "the way a real cluster is started (issue 13): `dask scheduler --host 127.0.0.1 --port 0 "
        "--no-dashboard --scheduler-file F`, then one `dask worker ADDRESS --nworkers 1 --nthreads 1 "
        "--memory-limit M` command per worker (separate processes, each with its nanny), the driver "
        "joining with `Client(ADDRESS)`. These rows supersede issue 7's, measured on a "
        "LocalCluster(processes=True) (the same kind of worker processes, started by the driver; "
        "`--cluster local` measures those again: distributed_local.md)"
    ),
    "local": (
        "by the driver as a LocalCluster(processes=True) (issue 7's measurement; distributed.md has the same "
        "runs on separate `dask scheduler` / `dask worker` commands)"
    ),
}


def render(doc):
    cluster = doc.get("cluster", "local")
    counts = ", ".join(str(w) for w in doc.get("worker_counts", (1, 2)))
    L = [
        "# Distributed training on Dask (issues 7 and 13)\n",
        f"{doc['date']}, `{doc['command']}`  ",
        f"{doc['machine']}  ",
        f"{doc['versions']}\n",
        (
            "Each data set in 8 partitions (binary chunk caches). 'one process' is one process without Dask "
            "(news20 in memory; the generated set streamed from the same caches), the reference of the overhead. "
            f"Clusters of {counts} worker processes with one thread each, started {CLUSTERS[cluster]}. "
            "On this 2-core machine shared with other work, the workers share the two cores with the driver and "
            "the scheduler: with 2 and 4 workers read the rows as overhead, not as speed-up (4 workers on 2 cores "
            "are over-subscribed). Per pass: median over the passes after the first; overhead = distributed - "
            "single-process time per pass; round trip = an empty map over the 8 partitions + tree reduction + "
            "gather (the fixed cost of a pass); start = seconds from launching the cluster to every worker "
            "registered.\n"
        ),
    ]
    for ds in doc["datasets"]:
        L.append(f"## {ds['name']}\n\n{ds['description']}\n")
        L.append(
            "| solver | workers | persisted | passes | per pass (s) | compute / reduce / driver (s) | "
            "overhead per pass (s) | round trip (s) | start (s) | total (s) | objective |"
        )
        L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        single = {r["run"]: r for r in ds["runs"] if r["workers"] == 0}
        for r in ds["runs"]:
            if not r["workers"]:
                L.append(
                    f"| {r['run']} | one process | | {r['passes']} | {r['per_pass_s']:.3f} | | | | | "
                    f"{r['total_s']:.2f} | {r['objective']:.10g} |"
                )
                continue
            split = f"{r['compute_s']:.3f} / {r['reduce_s']:.3f} / {r['driver_s']:.3f}" if "compute_s" in r else ""
            over = f"{r['per_pass_s'] - single[r['run']]['per_pass_s']:+.3f}"
            start = f"{r['start_s']:.1f}" if "start_s" in r else ""
            L.append(
                f"| {r['run']} | {r['workers']} | {r.get('persisted', '')} | {r['passes']} | "
                f"{r['per_pass_s']:.3f} | {split} | {over} | {r['round_trip_s']:.3f} | {start} | "
                f"{r['total_s']:.2f} | {r['objective']:.10g} |"
            )
        L.append("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=600_000, help="rows of the generated set")
    ap.add_argument("--d", type=int, default=100_000)
    ap.add_argument("--nnz-per-row", type=float, default=50)
    ap.add_argument("--worker-memory", default="512MiB", help="each worker's memory_limit (its budget)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="worker counts")
    ap.add_argument(
        "--cluster",
        choices=sorted(CLUSTERS),
        default="dask-worker",
        help="dask-worker: `dask scheduler` and `dask worker` commands; local: a LocalCluster",
    )
    ap.add_argument("--out", default=str(RESULTS_DIR))
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "l1scale-bench"))
    args = ap.parse_args(argv)
    if args.quick:
        args.n = 100_000
    from l1scale.data.stream import Stream
    from l1scale.problems import Problem, StreamProblem

    doc = {
        "date": utc_now(),
        "command": command_line(sys.argv[1:]),
        "machine": machine(),
        "versions": versions(("numpy", "scipy", "numba", "dask", "distributed", "l1scale")),
        "datasets": [],
        "cluster": args.cluster,
        "worker_counts": args.workers,
    }
    with tempfile.TemporaryDirectory() as tmp:
        paths, X, y = news20_partitions(os.path.join(tmp, "news20"), 8, args.cache_dir)
        cfg = {"k": 2000, "passes": 8, "lam_ratio": 0.1, "fista": 0 if args.quick else 20}
        yb = (y > 0).astype(float)

        def news_problem(kind):
            if kind == "memory":
                return Problem(X.tocsc(), 2 * yb - 1, "logistic", lam_ratio=cfg["lam_ratio"])
            return StreamProblem(Stream.from_arrays(X, yb), "logistic", lam_ratio=cfg["lam_ratio"])

        runs = run_single("news20", "memory", news_problem, cfg)
        for workers in args.workers:
            print(f"news20, {workers} worker(s) ...", flush=True)
            runs += run_cluster(workers, paths, cfg, "2GiB", "auto", args.cluster)
        doc["datasets"].append(
            {
                "name": "news20",
                "description": f"n = {X.shape[0]:,}, d = {X.shape[1]:,}, "
                f"nnz = {X.nnz:,} ({16 * X.nnz / 2**20:.0f} MiB as CSR); RMMP k = 2000 at "
                f"lam_ratio 0.1 ({cfg['passes']} passes at most), FISTA {cfg['fista']} iterations; "
                "workers' memory_limit 2 GiB (persisted).",
                "runs": runs,
            }
        )
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
                return Problem(
                    sp.vstack([c.X for c in parts]).tocsc(),
                    np.concatenate([c.y for c in parts]),
                    "logistic",
                    lam_ratio=gcfg["lam_ratio"],
                )
            return StreamProblem(stream, "logistic", lam_ratio=gcfg["lam_ratio"])

        runs = run_single("generated", "stream", gen_problem, gcfg)
        for workers in args.workers:
            print(f"generated, {workers} worker(s) ...", flush=True)
            runs += run_cluster(workers, gpaths, gcfg, args.worker_memory, False, args.cluster)
        doc["datasets"].append(
            {
                "name": "generated",
                "description": (
                    f"n = {args.n:,}, d = {args.d:,}, nnz = {nnz:,}: {16 * nnz / 2**20:.0f} MiB as CSR, more than one "
                    f"worker's memory budget (memory_limit {args.worker_memory}, of which a worker process with numpy, "
                    f"scipy, numba and l1scale loaded takes about 250 MiB); persist=False: every pass re-reads the "
                    f"partitions from disk (the page cache); RMMP k = 1000 at lam_ratio 0.05, {gcfg['passes']} passes at "
                    f"most, FISTA {gcfg['fista']} iterations (its single-process run holds the rows in memory)."
                ),
                "runs": runs,
            }
        )
        print(json.dumps(runs, indent=1), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    suffix = ("_quick" if args.quick else "") + ("_local" if args.cluster == "local" else "")
    (out / f"distributed{suffix}.json").write_text(json.dumps(doc, indent=1))
    (out / f"distributed{suffix}.md").write_text(render(doc))
    print(f"wrote {out / f'distributed{suffix}.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
