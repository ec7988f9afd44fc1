#!/usr/bin/env python
"""Throughput of online L1 logistic regression: Vowpal Wabbit's truncated gradient vs our TruncatedGradient.

Same data, same passes, same update:

* the data are written once as VW text with :func:`l1scale.data.vw.dump_vw` (column j is
  feature ``j`` of namespace ``f``); VW hashes them with ``-b BITS`` and we read the same file
  with ``Stream.from_vw(path, hash_bits=BITS, cache=DIR)``, whose columns are VW's indices
  (rotated, no collisions since 2**BITS >= d);
* VW: ``--sgd --loss_function logistic -l ETA --power_t 0.5 --l1 G --holdout_off --passes N
  --cache_file F -b BITS`` (plain SGD: no adaptive / normalised / invariant updates, so that
  the update is ours: w -= eta_t loss'(y, z) x with eta_t = ETA t^-0.5);
  ours: ``TruncatedGradient(sparsifier="truncated", gravity=G, K=1, eta0=ETA, power_t=0.5, t0=1,
  max_iter=N, holdout=0)`` on ``StreamProblem(Stream.from_vw(..., cache=DIR))``;
  both: logistic loss, N passes, no holdout, gravity G per example (VW's --l1 adds
  eta_t * l1 to its running gravity at every example, as our g).
* Timing. VW: three runs of its driver (``python -m vowpalwabbit``, the same C++ driver as the
  ``vw`` binary): (1) ``-d train.vw -c -k --passes 1`` parses the text and writes its cache
  (learning as it goes); (2) ``--cache_file F --passes N`` and (3) ``--passes 1`` from the cache;
  seconds per cached pass = (t2 - t3) / (N - 1), which cancels process start, model set-up and
  writing. Ours: the label scan of ``StreamProblem`` parses the text and writes our chunk cache
  (no learning); the solve then reads the cache on every pass; seconds per cached pass = the
  solve's time / N (JIT compile excluded: warmed up first). Examples per second = n / seconds per pass.
* Where our time goes (profile of one pass): reading the cache alone (``Stream.from_cache``:
  ``np.load`` of the chunks), the checked chunks of ``StreamProblem.chunks`` (adds label mapping
  and the NaN / label checks), and the kernel alone (``_truncated_rows`` on chunks held in memory).
* Quality on a test set (a9a.t; a seeded 80/20 split for news20 and the synthetic set): log loss,
  AUC, accuracy from the margins (VW: ``-t -i model -r raw``), and nnz(w) (VW: ``--readable_model``,
  its constant feature excluded; ours: the intercept excluded).

    .venv/bin/python benchmarks/bench_vw_throughput.py            # a9a, news20, synthetic 500k rows (~6 min)
    .venv/bin/python benchmarks/bench_vw_throughput.py --quick    # a9a + synthetic 100k rows, 5 passes (~1 min)

Writes benchmarks/results/vw_throughput.{md,json} (``_quick`` suffix with --quick). Needs
``pip install vowpalwabbit`` (9.x; reported as n/a when missing).
"""

from __future__ import annotations

from _common import DATA_DIR, RESULTS_DIR, command_line, machine, repo_on_path, single_thread, utc_now, versions

single_thread()  # before numpy is imported
repo_on_path()

import argparse
import importlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ETA, POWER_T = 0.5, 0.5  # VW's defaults (-l 0.5 --power_t 0.5), ours too


# ============================================================================ data
def prepare(name, args, work):
    """Write train/test VW text for a data set; returns a dict of paths and sizes."""
    from l1scale.data.svmlight import load_svmlight
    from l1scale.data.vw import dump_vw

    d_dir = Path(args.data_dir)
    out = {"name": name}
    tag = f"{name}{args.synthetic_rows}" if name == "synthetic" else name  # the file depends on the row count
    train, test = work / f"{tag}_train.vw", work / f"{tag}_test.vw"
    rng = np.random.default_rng(args.seed)
    if name == "a9a":
        X, y = load_svmlight(str(d_dir / "a9a/a9a.bz2"), n_features=123)
        Xt, yt = load_svmlight(str(d_dir / "a9a/a9a.t.bz2"), n_features=123)
        out.update(split="a9a / a9a.t", bits=18, label="UCI Adult (LIBSVM a9a)")
    elif name == "news20":
        X, y = load_svmlight(str(d_dir / "news20/news20_bydate_binary.svm.bz2"), n_features=588937)
        out.update(bits=20, label="20 Newsgroups binary uni+bigram TF-IDF (d = 588,937)")
    elif name == "synthetic":
        from l1scale.data.synthetic import make_sparse_text

        n = args.synthetic_rows
        X, y = make_sparse_text(n, 100_000, nnz_per_row=40, random_state=args.seed)
        X = sp.csr_matrix(X)
        X.data = np.round(X.data, 5)  # short text; VW and we read the same decimal values
        X.eliminate_zeros()
        out.update(bits=18, label=f"make_sparse_text({n:,}, 100,000, nnz_per_row=40), values rounded to 5 decimals")
    else:
        raise ValueError(name)
    if name != "a9a":
        perm = rng.permutation(X.shape[0])
        cut = int(0.8 * X.shape[0])
        tr, te = np.sort(perm[:cut]), np.sort(perm[cut:])
        X, Xt, y, yt = X[tr], X[te], y[tr], y[te]
        out["split"] = f"seeded random 80/20 split (seed {args.seed})"
    y, yt = np.where(y > 0, 1.0, -1.0), np.where(yt > 0, 1.0, -1.0)
    if not (train.exists() and test.exists()) or args.rewrite:
        dump_vw(X, y, train)
        dump_vw(Xt, yt, test)
    from l1scale.problems import Problem

    lmax = Problem(sp.csr_matrix(X), y, lam=1.0).lam_max()
    out.update(
        train=str(train),
        test=str(test),
        n_train=int(X.shape[0]),
        n_test=int(Xt.shape[0]),
        d=int(X.shape[1]),
        nnz_train=int(X.nnz),
        train_bytes=train.stat().st_size,
        lam_max=float(lmax),
    )
    return out


def quality(y, z, coef_nnz):
    from l1scale.metrics import accuracy, roc_auc

    return {
        "logloss": float(np.mean(np.logaddexp(0.0, -y * z))),
        "auc": roc_auc(y, z),
        "acc": accuracy(y, np.where(z > 0, 1.0, -1.0)),
        "nnz": int(coef_nnz),
    }


# ============================================================================ VW
def vw_cmd():
    try:
        importlib.import_module("vowpalwabbit")
    except ImportError:
        return None
    return [sys.executable, "-m", "vowpalwabbit"]


def vw_run(cmd, args_list, timeout=600):
    t0 = time.perf_counter()
    p = subprocess.run(cmd + args_list, capture_output=True, text=True, timeout=timeout, check=False)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"vw failed ({p.returncode}): {p.stderr[-2000:]}")
    return dt, p.stderr


def run_vw(ds, g, passes, work, cmd):
    bits = ds["bits"]
    cache = work / f"{ds['name']}.vwcache"
    model = work / f"{ds['name']}.vwmodel"
    common = [
        "--sgd",
        "--loss_function",
        "logistic",
        "-l",
        str(ETA),
        "--power_t",
        str(POWER_T),
        "--l1",
        repr(g),
        "--holdout_off",
        "-b",
        str(bits),
        "--quiet",
    ]
    if cache.exists():
        cache.unlink()
    t_parse, _ = vw_run(cmd, ["-d", ds["train"], "-c", "--cache_file", str(cache), "-k", "--passes", "1"] + common)
    t_one = min(vw_run(cmd, ["--cache_file", str(cache), "--passes", "1"] + common)[0] for _ in range(2))
    t_n, _ = vw_run(
        cmd,
        ["--cache_file", str(cache), "--passes", str(passes), "-f", str(model), "--readable_model", str(model) + ".txt"]
        + common,
    )
    t_n2, _ = vw_run(cmd, ["--cache_file", str(cache), "--passes", str(passes)] + common)
    t_n = min(t_n, t_n2)
    per_pass = (t_n - t_one) / (passes - 1)
    raw = work / f"{ds['name']}.raw"
    vw_run(cmd, ["-t", "-i", str(model), "-d", ds["test"], "-r", str(raw), "--quiet"])
    z = np.array([float(line.split()[0]) for line in raw.read_text().splitlines()])
    # nnz: weights in the readable model (after the header, 'index:weight' lines), the constant excluded.
    nnz = 0
    lines = (Path(str(model) + ".txt")).read_text().splitlines()
    start = next((i + 1 for i, ln in enumerate(lines) if ln.strip() == ":0"), 0)
    for ln in lines[start:]:
        if ":" not in ln:
            continue
        idx, w = ln.split(":", 1)
        try:
            idx, w = int(idx), float(w)
        except ValueError:
            continue
        if w != 0.0 and idx != 116060:  # VW's constant feature index (hash of "Constant")
            nnz += 1
    yt = _test_labels(ds)
    return {
        "seconds_parse_pass": t_parse,
        "seconds_1_cached": t_one,
        "seconds_n_cached": t_n,
        "seconds_per_cached_pass": per_pass,
        "examples_per_s": ds["n_train"] / per_pass,
        "nnz_per_s": ds["nnz_train"] / per_pass,
        **quality(yt, z, nnz),
    }


_TEST = {}


def _test_labels(ds):
    if ds["name"] not in _TEST:
        from l1scale.data.vw import load_vw

        Xt, yt, _ = load_vw(ds["test"], hash_bits=ds["bits"])
        _TEST[ds["name"]] = (Xt, yt)
    return _TEST[ds["name"]][1]


# ============================================================================ ours
def run_ours(ds, g, passes, work):
    from l1scale.data.stream import Stream
    from l1scale.problems import StreamProblem
    from l1scale.solvers.truncated import TruncatedGradient

    cache = work / f"{ds['name']}_l1scale_cache"
    shutil.rmtree(cache, ignore_errors=True)
    stream = Stream.from_vw(ds["train"], hash_bits=ds["bits"], cache=str(cache))
    t0 = time.perf_counter()
    problem = StreamProblem(stream, lam=1.0)  # the label scan: parses the text, writes the cache
    t_parse = time.perf_counter() - t0

    def solver():
        return TruncatedGradient(
            sparsifier="truncated", gravity=g, K=1, eta0=ETA, power_t=POWER_T, t0=1.0, max_iter=passes, holdout=0
        )

    best = None
    for _ in range(2):  # best of two (shared machine)
        s = solver()
        t0 = time.perf_counter()
        res = s.solve(problem)
        dt = time.perf_counter() - t0
        if best is None or dt < best[0]:
            best = (dt, res)
    dt, res = best
    per_pass = dt / passes
    pass_times = np.diff(np.r_[0.0, res.history.time]).tolist()
    Xt, yt = _test_X(ds)
    z = Xt @ res.coef + res.intercept
    out = {
        "seconds_parse_pass": t_parse,
        "seconds_n_cached": dt,
        "seconds_per_cached_pass": per_pass,
        "pass_seconds": pass_times,
        "examples_per_s": ds["n_train"] / per_pass,
        "nnz_per_s": ds["nnz_train"] / per_pass,
        **quality(yt, z, np.count_nonzero(res.coef)),
    }
    out["profile"] = profile(problem, cache, g, ds)
    return out


def _test_X(ds):
    _test_labels(ds)
    return _TEST[ds["name"]]


def profile(problem, cache, g, ds):
    """One pass split into: reading the cache, the checked chunks, the kernel on chunks in memory."""
    from l1scale.data.stream import Stream
    from l1scale.solvers.truncated import TruncatedGradient

    def timed(fn, reps=3):
        best = np.inf
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        return best

    raw = Stream.from_cache(str(cache))

    def read_cache():
        for _ in raw:
            pass

    def read_checked():
        for _ in problem.chunks():
            pass

    held = [(rows, y, s, first) for rows, y, s, first in problem.chunks()]
    mean_scale = problem.n_samples / problem.weight_sum
    kind = problem.loss.kernel_id

    def kernel():
        sv = TruncatedGradient(sparsifier="truncated", gravity=g, K=1, eta0=ETA, power_t=POWER_T, max_iter=1, holdout=0)
        state = sv.new_state(problem.n_features, problem.fit_intercept)
        for rows, y, s, first in held:
            sv._learn(state, rows, y, s * mean_scale, first, 0, kind=kind, l1=g, l2=0.0, holdout=0)
        sv._catch_up(state)

    def settle_only():
        sv = TruncatedGradient(sparsifier="truncated", gravity=g, K=1, eta0=ETA, power_t=POWER_T, max_iter=1, holdout=0)
        state = sv.new_state(problem.n_features, problem.fit_intercept)
        sv._catch_up(state)

    n_chunks = len(held)
    return {
        "read_cache": timed(read_cache),
        "checked_chunks": timed(read_checked),
        "kernel": timed(kernel),
        "catch_up_O(d)": timed(settle_only),
        "n_chunks": n_chunks,
    }


# ============================================================================ report
def render(doc) -> str:
    L = ["# Online L1 logistic regression throughput: Vowpal Wabbit vs l1scale TruncatedGradient\n"]
    L.append(
        f"Generated by `{doc['command']}` on {doc['date']}.  \nMachine: {doc['machine']}.  \n"
        f"Versions: {doc['versions']}.\n"
    )
    L.append("## Settings\n")
    L.append(
        f"Both learners: logistic loss, plain SGD with eta_t = {ETA} t^-{POWER_T} (t counts examples over all "
        f"passes; VW `--sgd -l {ETA} --power_t {POWER_T}`, ours `eta0={ETA}, power_t={POWER_T}, t0=1`), "
        "truncated gradient with gravity g per example (VW `--l1 g`, ours `gravity=g, K=1, theta=inf`), "
        f"{doc['passes']} passes, no holdout (VW `--holdout_off`, ours `holdout=0`; VW's default holdout also "
        "early-stops, which would make the pass counts differ), the same VW text file (written by `dump_vw`) "
        "hashed into the same 2^b columns. Differences that remain: VW keeps float32 weights, we float64; VW's "
        "constant feature is penalised by --l1, our intercept is not; and VW's --l1 is its own approximation of "
        "truncated gradient (see below).\n"
    )
    L.append(
        "Timing: seconds per **cached** pass (VW: (t(N passes) - t(1 pass)) / (N - 1) from its cache, so "
        "start-up and model writing cancel; ours: the solve's seconds / N, reading our chunk cache on every "
        "pass, compile excluded). The text-parsing pass is reported separately (VW's learns as it parses; "
        "ours is the label scan, which parses and writes the cache without learning). VW runs a parser thread "
        "beside its learner; ours reads the next chunk of its cache in a reader thread while the kernel, "
        "which releases the GIL, learns from this one (2 threads each). Best of 2 runs each.\n"
    )
    L.append("## Results\n")
    L.append(
        "| data set | n train | nnz train | g (/ lam_max) | | parse pass s | s / cached pass | examples/s "
        "| test log loss | test AUC | test acc | nnz(w) |"
    )
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for ds in doc["datasets"]:
        for who in ("vw", "ours"):
            r = ds.get(who)
            if r is None or "error" in r:
                L.append(f"| {ds['name']} | | | | {who} | {r.get('error') if r else 'n/a'} ||||||| ")
                continue
            head = (
                (
                    f"| {ds['name']} | {ds['n_train']:,} | {ds['nnz_train']:,} | {ds['g']:.3g} "
                    f"({ds['g'] / ds['lam_max']:.3g}) |"
                )
                if who == "vw"
                else "| | | | |"
            )
            L.append(
                f"{head} {'VW' if who == 'vw' else 'l1scale'} | {r['seconds_parse_pass']:.2f} | "
                f"{r['seconds_per_cached_pass']:.3f} | {r['examples_per_s']:,.0f} | {r['logloss']:.4f} | "
                f"{r['auc']:.4f} | {r['acc']:.4f} | {r['nnz']:,} |"
            )
        if ds.get("ratio"):
            q = ds["ratio"]
            L.append(
                f"| | | | | **ours / VW** | {q['parse']:.2f} | {q['seconds_per_cached_pass']:.2f} | "
                f"**{q['throughput']:.2f}** | {q['logloss']:.3f} | {q['auc']:.4f} | | {q['nnz']:.2f} |"
            )
    L.append("")
    L.append(
        "Both learners produce the same model to 3-4 digits of test log loss (same update, same order), which "
        "checks that the settings match. VW's nnz counts every weight of its readable model but the constant; "
        "VW's --l1 truncates the raw weights by the gravity accumulated since the last end of a pass (and in "
        "its predictions), ours applies the paper's per-step truncation lazily: the nnz differ accordingly. "
        "These settings (VW's default rate 0.5 t^-0.5, g = 0.01 lam_max) are chosen to match VW, not to fit "
        "well: on news20 both models have AUC 0.89 but accuracy 0.49 (the margins are not yet centred after "
        "10 passes at this rate).\n"
    )
    L.append("## Where our cached pass spends its time\n")
    L.append(
        "| data set | our cached pass s | read cache alone (np.load) | + checks (StreamProblem.chunks) | kernel alone "
        "(chunks in memory) | catch-up O(d) | chunks |"
    )
    L.append("|---|---|---|---|---|---|---|")
    for ds in doc["datasets"]:
        r = ds.get("ours")
        if not r or "profile" not in r:
            continue
        p = r["profile"]
        L.append(
            f"| {ds['name']} | {r['seconds_per_cached_pass']:.3f} | {p['read_cache']:.3f} | "
            f"{p['checked_chunks']:.3f} | {p['kernel']:.3f} | {p['catch_up_O(d)']:.4f} | {p['n_chunks']} |"
        )
    L.append("")
    L.append(
        "Each column is timed alone (best of 3); 'checks' includes the cache read. Our pass is about "
        "checks + kernel when they overlap badly, about the larger of the two when they overlap well; what is left "
        "is per-pass bookkeeping (the history's nnz(w), O(d)) and noise.\n"
    )
    L.append(
        "Our kernel keeps one float64 per feature, sign(w_j) (|w_j| + c_j) with c_j the running penalty sum "
        "when w_j was last touched, so the paper's exact per-step truncation owed since then is "
        "sgn max(0, |stored| - C), computed without a data-dependent branch (a first version kept "
        "[w_j, c_j, last_j] in 24 bytes and branched on zero and sign: 0.44 x VW on news20, where d = 2^20 "
        "and the mispredictions cost more than the memory). The cache is one .npy file per array, read "
        "without the zip layer's CRC.\n"
    )
    if doc.get("conclusion"):
        L.append("## Verdict\n")
        L.append(doc["conclusion"] + "\n")
    return "\n".join(L)


def conclusion(doc) -> str:
    parts = []
    for ds in doc["datasets"]:
        q = ds.get("ratio")
        if not q:
            continue
        p = ds["ours"]["profile"]
        parts.append(
            f"{ds['name']}: ours/VW throughput {q['throughput']:.2f} (cached pass {ds['ours']['seconds_per_cached_pass']:.3f} s "
            f"vs {ds['vw']['seconds_per_cached_pass']:.3f} s; of ours, reading the cache {p['read_cache']:.3f} s, "
            f"checked chunks {p['checked_chunks']:.3f} s, kernel {p['kernel']:.3f} s); "
            f"nnz ours/VW {q['nnz']:.2f}, test AUC ours - VW {q['auc']:+.4f}."
        )
    met = [ds["ratio"]["throughput"] >= 1.0 for ds in doc["datasets"] if ds.get("ratio")]
    head = (
        "Target (at least VW's throughput on cached passes): **met on all data sets**. "
        if met and all(met)
        else f"Target (at least VW's throughput on cached passes): **met on {sum(met)}/{len(met)} data sets**. "
    )
    tail = []
    for ds in doc["datasets"]:
        q = ds.get("ratio")
        if not q or q["throughput"] >= 1.0:
            continue
        p, v = ds["ours"]["profile"], ds["vw"]
        io = p["checked_chunks"]
        tail.append(
            f"On {ds['name']} our kernel alone takes {p['kernel']:.3f} s per pass "
            f"({p['kernel'] / v['seconds_per_cached_pass']:.2f} x VW's whole cached pass); reading the "
            f"chunks ({io:.3f} s: np.load of the cache {p['read_cache']:.3f} s, then StreamProblem.chunks) "
            "happens in a reader thread that overlaps the learning, as VW's parser thread does."
        )
    return head + " ".join(parts) + ("\n\n" + " ".join(tail) if tail else "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a9a + synthetic 100k rows, 5 passes")
    ap.add_argument("--datasets", default=None, help="comma list of a9a,news20,synthetic")
    ap.add_argument("--passes", type=int, default=None, help="passes (default 10; 5 with --quick)")
    ap.add_argument(
        "--synthetic-rows", type=int, default=None, help="rows of the synthetic set (500,000; 100,000 quick)"
    )
    ap.add_argument("--gravity-ratio", type=float, default=0.01, help="g = this x lam_max of the training part")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rewrite", action="store_true", help="rewrite the VW text files")
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--work-dir", default="/tmp/l1scale_bench_vw")
    ap.add_argument("--out", default=str(RESULTS_DIR))
    ap.add_argument("--from-json", help="only re-render the markdown of an earlier run")
    args = ap.parse_args(argv)
    if args.from_json:
        p = Path(args.from_json)
        doc = json.loads(p.read_text())
        doc["conclusion"] = conclusion(doc)
        p.with_suffix(".md").write_text(render(doc))
        return 0
    names = (
        args.datasets.split(",")
        if args.datasets
        else (["a9a", "synthetic"] if args.quick else ["a9a", "news20", "synthetic"])
    )
    args.passes = args.passes or (5 if args.quick else 10)
    args.synthetic_rows = args.synthetic_rows or (100_000 if args.quick else 500_000)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "vw_throughput" + ("_quick" if args.quick else "")
    doc = {
        "date": utc_now(),
        "command": command_line(argv or sys.argv[1:]),
        "machine": machine(),
        "versions": versions(("numpy", "scipy", "numba", "l1scale", "vowpalwabbit")),
        "passes": args.passes,
        "eta": ETA,
        "power_t": POWER_T,
        "datasets": [],
    }

    def save():
        doc["conclusion"] = conclusion(doc)
        (out / f"{stem}.json").write_text(json.dumps(doc, indent=1))
        (out / f"{stem}.md").write_text(render(doc))

    cmd = vw_cmd()
    # Warm the JIT caches (parser, kernels) outside the timings.
    from l1scale.data.stream import Stream
    from l1scale.data.vw import dump_vw
    from l1scale.problems import StreamProblem
    from l1scale.solvers.truncated import TruncatedGradient

    Xw = sp.random(300, 50, density=0.1, format="csr", random_state=0)
    yw = np.where(np.arange(300) % 2, 1.0, -1.0)
    dump_vw(Xw, yw, work / "warm.vw")
    shutil.rmtree(work / "warm_cache", ignore_errors=True)
    pw = StreamProblem(Stream.from_vw(str(work / "warm.vw"), hash_bits=10, cache=str(work / "warm_cache")), lam=1.0)
    TruncatedGradient(gravity=1e-3, max_iter=2, holdout=0).solve(pw)

    for name in names:
        t0 = time.perf_counter()
        ds = prepare(name, args, work)
        g = args.gravity_ratio * ds["lam_max"]
        ds["g"] = g
        print(
            f"== {name}: n {ds['n_train']:,} nnz {ds['nnz_train']:,} text {ds['train_bytes'] / 2**20:.0f} MiB, "
            f"g {g:.3g} ({time.perf_counter() - t0:.0f} s to prepare)",
            flush=True,
        )
        doc["datasets"].append(ds)
        if cmd is None:
            ds["vw"] = {"error": "vowpalwabbit not installed"}
        else:
            try:
                ds["vw"] = run_vw(ds, g, args.passes, work, cmd)
                r = ds["vw"]
                print(
                    f"   VW   parse {r['seconds_parse_pass']:.2f}s cached pass {r['seconds_per_cached_pass']:.3f}s "
                    f"({r['examples_per_s']:,.0f} ex/s) logloss {r['logloss']:.4f} auc {r['auc']:.4f} nnz {r['nnz']}",
                    flush=True,
                )
            except Exception as e:  # noqa: BLE001 - reported in the table
                ds["vw"] = {"error": f"{type(e).__name__}: {e}"[:500]}
                print("   VW error", ds["vw"]["error"], flush=True)
        ds["ours"] = run_ours(ds, g, args.passes, work)
        r = ds["ours"]
        print(
            f"   ours parse {r['seconds_parse_pass']:.2f}s cached pass {r['seconds_per_cached_pass']:.3f}s "
            f"({r['examples_per_s']:,.0f} ex/s) logloss {r['logloss']:.4f} auc {r['auc']:.4f} nnz {r['nnz']} "
            f"profile {r['profile']}",
            flush=True,
        )
        if "error" not in ds["vw"]:
            v, o = ds["vw"], ds["ours"]
            ds["ratio"] = {
                "throughput": o["examples_per_s"] / v["examples_per_s"],
                "seconds_per_cached_pass": o["seconds_per_cached_pass"] / v["seconds_per_cached_pass"],
                "parse": o["seconds_parse_pass"] / v["seconds_parse_pass"],
                "logloss": o["logloss"] / v["logloss"],
                "auc": o["auc"] - v["auc"],
                "nnz": o["nnz"] / max(v["nnz"], 1),
            }
        save()
    save()
    print(f"wrote {out / f'{stem}.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
