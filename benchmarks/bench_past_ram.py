#!/usr/bin/env python
"""Training on a file larger than the machine's memory, under a hard memory cap (issue 13).

1. **The data**: a synthetic text-like svmlight file (``l1scale.data.synthetic``'s
   ``iter_sparse_text_chunks``: Zipf-distributed word columns, tf-idf-like values rounded
   to 4 decimals, labels from a planted sparse model) of ``--size`` bytes (default 40 GB,
   1.7x this machine's 24 GB; ``--quick``: 4 GB), written chunk by chunk by a jitted
   formatter, so generating it takes one chunk of memory. A held-out file of 200,000 rows
   from the same distribution (another seed) measures what each model learned.
2. **The runs**, each a separate process in a cgroup (v1 ``memory.limit_in_bytes``, or
   v2 ``memory.max``) capped at ``--cap`` (default 2 GiB), which the kernel enforces
   (page cache included, reclaimed under the cap; a process that needs more is killed):

   - ``l1scale train FILE --solver truncated_gradient`` and ``--solver sgd_cumulative``:
     one pass, text parsed as it streams (no cache: the file does not fit twice on disk),
     after the label pass that finds the classes (two reads of the file);
   - ``cat FILE | l1scale train - --solver truncated_gradient``: the same pass from a pipe,
     as VW reads it; one read (the first rows' two labels are the classes, no label pass);
   - ``l1scale train FILE --solver rmmp --passes P``: P passes, each re-reading the text,
     with its duality-gap certificate;
   - Vowpal Wabbit (``python -m vowpalwabbit``, the C++ driver of the ``vw`` binary):
     ``--sgd --loss_function logistic --l1 LAM -b 20 --holdout_off --passes 1``, reading the
     same rows as VW text from a pipe (``sed 's/ / |f /'``: the svmlight line with a
     namespace inserted; the sed process is outside the cap and timed alone too).

   Every run is one pass over the same rows with the same per-example L1 (``--lam`` is
   VW's ``--l1``: both apply ``eta_t * lam`` per example). Reported: wall time, examples
   per second (rows x passes / wall), peak RSS (the kernel's high-water mark ``VmHWM`` of
   the process, read every second: ``wait4``'s ru_maxrss would count the forking parent), the cgroup's own peak (RSS plus page cache), whether the cap was hit,
   and the held-out log loss and accuracy; RSS is also sampled every second for the
   memory-over-time plot.

    .venv/bin/python benchmarks/bench_past_ram.py                 # 40 GB, needs ~45 GB free disk, ~1 h
    .venv/bin/python benchmarks/bench_past_ram.py --quick         # 4 GB, ~6 min
    .venv/bin/python benchmarks/bench_past_ram.py --workdir /big/disk --keep   # keep the data for a rerun

Writes benchmarks/results/past_ram{,_quick}.{md,json} and past_ram{,_quick}_memory.png.
The cap needs a writable cgroup memory controller (root, or a delegated cgroup); without
one the runs go uncapped and the results say so.
"""

from __future__ import annotations

from _common import (
    RESULTS_DIR,
    command_line,
    machine,
    repo_on_path,
    single_thread,
    utc_now,
    versions,
)

single_thread()  # before numpy is imported
repo_on_path()

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
from numba import njit

N_FEATURES = 1 << 20  # a text vocabulary; VW's -b 20 holds it without collisions
NNZ_PER_ROW = 60
CHUNK_ROWS = 50_000
TEST_ROWS = 200_000
LAM = 1e-6
CLI = [sys.executable, "-m", "l1scale.cli"]
VW = [sys.executable, "-m", "vowpalwabbit"]
GB = 1e9


# ============================================================================ data


@njit(cache=True)
def _write_digits(out, pos, v, digits):
    """The decimal digits of the integer v >= 0 at ``out[pos:]``; returns the next position."""
    k = 0
    while True:
        digits[k] = 48 + v % 10
        k += 1
        v //= 10
        if v == 0:
            break
    for q in range(k - 1, -1, -1):
        out[pos] = digits[q]
        pos += 1
    return pos


@njit(cache=True)
def _format_rows(indptr, indices, data, y, out):
    """svmlight lines of a CSR chunk into ``out`` (one-based indices, values with 4
    decimals); returns the bytes written. Hand-written: Python's formatting writes 20 MB/s."""
    pos = 0
    digits = np.empty(20, dtype=np.uint8)
    for i in range(indptr.shape[0] - 1):
        if y[i] > 0:
            out[pos] = 49  # "1"
            pos += 1
        else:
            out[pos] = 45  # "-1"
            out[pos + 1] = 49
            pos += 2
        for p in range(indptr[i], indptr[i + 1]):
            out[pos] = 32
            pos += 1
            pos = _write_digits(out, pos, indices[p] + 1, digits)
            out[pos] = 58  # ":"
            pos += 1
            x = data[p]
            if x < 0:
                out[pos] = 45
                pos += 1
                x = -x
            m = max(int(x * 10000.0 + 0.5), 1)  # never an explicit zero
            frac = m % 10000
            pos = _write_digits(out, pos, m // 10000, digits)
            out[pos] = 46  # "."
            out[pos + 1] = 48 + frac // 1000
            out[pos + 2] = 48 + frac // 100 % 10
            out[pos + 3] = 48 + frac // 10 % 10
            out[pos + 4] = 48 + frac % 10
            pos += 5
        out[pos] = 10
        pos += 1
    return pos


def write_data(path: Path, test_path: Path, size: float, seed: int = 0) -> dict:
    """The held-out rows (the first ``TEST_ROWS`` of the stream) to ``test_path``, then rows
    of the same stream (same planted model) to ``path`` until it holds ``size`` bytes;
    returns the training file's description."""
    from l1scale.data.synthetic import iter_sparse_text_chunks

    start = time.perf_counter()
    rows = nnz = written = 0
    chunks = iter_sparse_text_chunks(
        10**12, N_FEATURES, chunk_rows=CHUNK_ROWS, random_state=seed, nnz_per_row=NNZ_PER_ROW
    )
    buffer = np.empty(CHUNK_ROWS * NNZ_PER_ROW * 40 + CHUNK_ROWS * 4, dtype=np.uint8)

    def formatted(X, y):
        nonlocal buffer
        if X.nnz * 40 + X.shape[0] * 4 > buffer.shape[0]:
            buffer = np.empty(X.nnz * 40 + X.shape[0] * 4, dtype=np.uint8)
        n = _format_rows(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, y, buffer)
        return memoryview(buffer)[:n]

    with open(test_path, "wb") as f:
        f.writelines(formatted(*next(chunks)) for _ in range(TEST_ROWS // CHUNK_ROWS))
    with open(path, "wb") as f:
        for X, y in chunks:
            text = formatted(X, y)
            f.write(text)
            rows, nnz, written = rows + X.shape[0], nnz + X.nnz, written + len(text)
            if written >= size:
                break
    return {
        "path": str(path),
        "bytes": written,
        "rows": rows,
        "nnz": nnz,
        "seconds": time.perf_counter() - start,
        "seed": seed,
        "n_features": N_FEATURES,
    }


# ============================================================================ the memory cap


class Cgroup:
    """A memory cgroup capped at ``limit`` bytes (v1 or v2), or None when none can be made."""

    @staticmethod
    def make(limit: int):
        for root, limit_file, peak_file in (
            ("/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.max_usage_in_bytes"),
            ("/sys/fs/cgroup", "memory.max", "memory.peak"),
        ):
            path = Path(root) / f"l1scale-bench-{os.getpid()}"
            try:
                path.mkdir(exist_ok=True)
                (path / limit_file).write_text(str(limit))
            except OSError:
                continue
            return Cgroup(path, limit_file, peak_file, limit)
        return None

    def __init__(self, path, limit_file, peak_file, limit):
        self.path, self.limit_file, self.peak_file, self.limit = path, limit_file, peak_file, limit
        self.version = 1 if limit_file.endswith("in_bytes") else 2

    def reset(self):
        if self.version == 1:
            for name in ("memory.max_usage_in_bytes", "memory.failcnt"):
                with contextlib.suppress(OSError):
                    (self.path / name).write_text("0")

    def peak(self):
        try:
            return int((self.path / self.peak_file).read_text())
        except (OSError, ValueError):
            return None

    def failcnt(self):
        try:
            return int((self.path / "memory.failcnt").read_text())
        except (OSError, ValueError):
            return None

    def prefix(self):
        """A shell prefix that moves the command into the cgroup, then execs it."""
        return ["sh", "-c", f'echo $$ > {self.path}/cgroup.procs && exec "$@"', "sh"]

    def remove(self):
        with contextlib.suppress(OSError):
            self.path.rmdir()

    def describe(self):
        return f"cgroup v{self.version} {self.limit_file} = {self.limit / 2**30:.2f} GiB"


def run_capped(cmd, cgroup, *, stdin=None, label=""):
    """Run ``cmd`` (in ``cgroup`` when there is one); returns wall time, exit status,
    peak RSS (the last ``VmHWM`` read), the cgroup's peak, RSS samples and the output."""
    if cgroup is not None:
        cgroup.reset()
        cmd = cgroup.prefix() + cmd
    samples, peak = [], 0.0
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    output = {}

    def drain(name, stream):
        output[name] = stream.read()

    readers = [threading.Thread(target=drain, args=(n, s)) for n, s in (("out", proc.stdout), ("err", proc.stderr))]
    for t in readers:
        t.start()
    status_path = f"/proc/{proc.pid}/status"
    while True:
        pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        try:
            with open(status_path) as f:
                fields = dict(line.split(":", 1) for line in f)
            samples.append((time.perf_counter() - start, int(fields["VmRSS"].split()[0]) / 1024.0))
            peak = max(peak, int(fields["VmHWM"].split()[0]) / 1024.0)
        except (OSError, KeyError, ValueError):
            pass
        time.sleep(1.0 if time.perf_counter() - start > 10 else 0.2)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join()
    print(f"  {label}: {wall:.1f} s, exit {proc.returncode}, peak RSS {peak:.0f} MiB", flush=True)
    return {
        "seconds": wall,
        "returncode": proc.returncode,
        "peak_rss_mib": peak,
        "cgroup_peak_mib": None if cgroup is None or cgroup.peak() is None else cgroup.peak() / 2**20,
        "cap_hits": None if cgroup is None else cgroup.failcnt(),
        "rss_samples": samples,
        "stdout": output["out"].decode(errors="replace"),
        "stderr": output["err"].decode(errors="replace"),
    }


# ============================================================================ the runs


def l1scale_run(solver, data, test, model, cgroup, passes=1, lam=LAM, tol=None, pipe=False):
    """The CLI's fit of the file; ``pipe``: of the file piped through ``cat`` into ``train -``
    (as VW reads it through sed), which one pass of truncated gradient learns from as it
    reads it (no label pass)."""
    cmd = CLI + [
        "train",
        "-" if pipe else data["path"],
        "--solver",
        solver,
        "--lam",
        str(lam),
        "--passes",
        str(passes),
        "--one-based",
        "--n-features",
        str(N_FEATURES),
        "--quiet",
        "--json",
        "-o",
        str(model),
    ]
    if solver == "rmmp":
        cmd += ["--max-active", "1000", "--tol", str(tol)]
    else:
        cmd += ["--holdout", "0"]
    cat = subprocess.Popen(["cat", data["path"]], stdout=subprocess.PIPE) if pipe else None
    result = run_capped(
        cmd, cgroup, stdin=None if cat is None else cat.stdout, label=f"l1scale {solver}{' (pipe)' if pipe else ''}"
    )
    if cat is not None:
        cat.stdout.close()
        cat.wait()
    if result["returncode"] == 0:
        _read_summary(result)
        result["reads"] = result["passes"] + (0 if pipe else 1)  # a file's label pass
        evaluation = subprocess.run(
            CLI + ["evaluate", str(model), test["path"], "--one-based", "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        result["test"] = json.loads(evaluation.stdout) if evaluation.returncode == 0 else evaluation.stderr[-500:]
    return result


def _read_summary(result):
    """The solver's passes (the label pass of a streamed fit is in the wall time, not
    counted as a pass: it learns nothing) and the relative certificate, from the CLI's
    JSON summary."""
    summary = json.loads(result["stdout"])
    result["passes"] = int(summary["n_iter"])
    if summary.get("relative_certificate") is not None:
        result["certificate"] = f"{summary['certificate_name']} {summary['relative_certificate']:.2g}" + (
            " (met)" if summary.get("converged") else ""
        )


def vw_run(data, test, workdir, cgroup):
    model, preds = workdir / "vw.model", workdir / "vw.test.pred"
    sed = subprocess.Popen(["sed", "s/ / |f /", data["path"]], stdout=subprocess.PIPE)
    cmd = VW + [
        "-d",
        "/dev/stdin",
        "--sgd",
        "--loss_function",
        "logistic",
        "-l",
        "0.5",
        "--power_t",
        "0.5",
        "--l1",
        str(LAM),
        "-b",
        "20",
        "--holdout_off",
        "--passes",
        "1",
        "-f",
        str(model),
        "--quiet",
    ]
    result = run_capped(cmd, cgroup, stdin=sed.stdout, label="vowpal wabbit")
    result["reads"] = 1
    sed.stdout.close()
    sed.wait()
    if result["returncode"] == 0:
        test_vw = workdir / "test.vw"
        subprocess.run(f"sed 's/ / |f /' {test['path']} > {test_vw}", shell=True, check=True)
        subprocess.run(VW + ["-t", "-i", str(model), "-d", str(test_vw), "-r", str(preds), "--quiet"], check=True)
        margins = np.loadtxt(preds, usecols=0)
        with open(test["path"], "rb") as f:
            labels = np.array([1.0 if line.startswith(b"1") else -1.0 for line in f])
        result["test"] = _scores(labels, margins)
    return result


def sed_alone(data):
    start = time.perf_counter()
    subprocess.run(f"sed 's/ / |f /' {data['path']} > /dev/null", shell=True, check=True)
    return time.perf_counter() - start


def _scores(y, margins):
    log_loss = float(np.mean(np.logaddexp(0.0, -y * margins)))
    return {"log_loss": log_loss, "accuracy": float(np.mean((margins > 0) == (y > 0)))}


# ============================================================================ report


def test_scores(result):
    test = result.get("test")
    if not isinstance(test, dict):
        return "n/a", "n/a"
    metrics = test.get("metrics", test)
    loss = metrics.get("log_loss")
    acc = metrics.get("accuracy")
    return (f"{loss:.4f}" if isinstance(loss, float) else "n/a", f"{acc:.4f}" if isinstance(acc, float) else "n/a")


def markdown(report) -> str:
    data = report["data"]
    lines = [
        (
            f"# Past RAM: {data['bytes'] / GB:.1f} GB of svmlight on a {report['ram_gib']:.0f} GiB machine, "
            f"{report['cap']}"
        ),
        "",
        f"Run {report['date']} on {report['machine']}; {report['versions']}.",
        "",
        f"`{report['command']}`",
        "",
        (
            f"Data: {data['rows']:,} rows, {data['nnz']:,} nonzeros, {N_FEATURES:,} features "
            f"({data['bytes'] / GB:.1f} GB, written in {data['seconds']:.0f} s); held out: {TEST_ROWS:,} rows. "
            f"lam = {LAM:g} (VW: --l1 {LAM:g}); RMMP: lam = {report['rmmp_lam']:g}, tol = {report['rmmp_tol']:g}, "
            "at most 1000 active features."
        ),
        "",
        (
            "| run | learning passes | reads of the data | wall (s) | examples/s | peak RSS (MiB) | cgroup peak (MiB) "
            "| exit | certificate | test log loss | test accuracy |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in report["runs"].items():
        passes = r.get("passes", 1)
        rate = data["rows"] * passes / r["seconds"]  # learning passes; the label pass is overhead
        loss, acc = test_scores(r)
        cert = r.get("certificate")
        group = "n/a" if r["cgroup_peak_mib"] is None else f"{r['cgroup_peak_mib']:.0f}"
        lines.append(
            f"| {name} | {passes} | {r.get('reads', '-')} | {r['seconds']:.0f} | {rate:,.0f} | "
            f"{r['peak_rss_mib']:.0f} | {group} | "
            f"{r['returncode']} | {'-' if cert is None else cert} | {loss} | {acc} |"
        )
    if report["sed_seconds"] == report["sed_seconds"]:  # not NaN: VW ran
        lines += [
            "",
            (
                f"sed alone (the VW input pipe): {report['sed_seconds']:.0f} s for the file "
                f"({data['bytes'] / GB / report['sed_seconds']:.2f} GB/s), outside the cap."
            ),
        ]
    lines += [
        "",
        (
            "Peak RSS is the process's own high-water mark (VmHWM); the cgroup peak adds the page cache the kernel "
            "charged to the group (reclaimed under the cap, so it sits at the cap on a file this size)."
        ),
        "",
        f"![RSS over time]({report['plot']})",
        "",
    ]
    return "\n".join(lines)


def plot(report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for name, r in report["runs"].items():
        if r["rss_samples"]:
            t, rss = zip(*r["rss_samples"])
            ax.plot(np.array(t) / 60.0, rss, label=name)
    ax.axhline(report["cap_bytes"] / 2**20, color="k", ls="--", lw=1, label="cap")
    ax.set_xlabel("minutes")
    ax.set_ylabel("RSS (MiB)")
    ax.set_title(f"{report['data']['bytes'] / GB:.0f} GB of svmlight, RSS over time")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 GB instead of 40 GB")
    parser.add_argument("--size", type=float, help="bytes of svmlight text (default 40e9; 4e9 with --quick)")
    parser.add_argument("--cap", type=float, default=2.0, help="memory cap in GiB (default 2)")
    parser.add_argument("--rmmp-passes", type=int, default=8, help="RMMP's most passes (default 8)")
    parser.add_argument(
        "--rmmp-lam",
        type=float,
        default=2e-4,
        help="RMMP's lam (default 2e-4, about lam_max / 10 here: a model RMMP certifies)",
    )
    parser.add_argument("--rmmp-tol", type=float, default=1e-3)
    parser.add_argument(
        "--part",
        default="",
        help="a name added to the results' file names (runs split over processes: --only rmmp --part rmmp)",
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/l1scale-past-ram"))
    parser.add_argument("--keep", action="store_true", help="keep (and reuse) the generated data")
    parser.add_argument("--only", help="comma-separated runs: tg,tgpipe,sgdc,rmmp,vw")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--render", type=Path, help="only rewrite the .md and .png of this results .json")
    args = parser.parse_args()
    if args.render:
        return render(args.render)
    size = args.size or (4e9 if args.quick else 40e9)
    args.workdir.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(args.workdir).free
    data_path, test_path = args.workdir / f"train-{size:.0f}.svm", args.workdir / "test.svm"
    described = args.workdir / f"train-{size:.0f}.json"
    if described.exists() and data_path.exists():
        data = json.loads(described.read_text())
    else:
        if free < size * 1.1:
            sys.exit(f"{args.workdir} has {free / GB:.1f} GB free; the data need {size * 1.1 / GB:.1f} GB")
        print(f"writing {size / GB:.1f} GB of svmlight to {data_path}", flush=True)
        data = write_data(data_path, test_path, size)
        described.write_text(json.dumps(data))
    test = {"path": str(test_path)}
    print(f"data: {data['rows']:,} rows, {data['bytes'] / GB:.1f} GB", flush=True)

    cap = int(args.cap * 2**30)
    cgroup = Cgroup.make(cap)
    only = set((args.only or "tg,tgpipe,sgdc,rmmp,vw").split(","))
    runs = {}
    try:
        if "tg" in only:
            runs["l1scale truncated_gradient"] = l1scale_run(
                "truncated_gradient", data, test, args.workdir / "tg.l1m", cgroup
            )
        if "tgpipe" in only:
            runs["l1scale truncated_gradient, piped (cat FILE)"] = l1scale_run(
                "truncated_gradient", data, test, args.workdir / "tgpipe.l1m", cgroup, pipe=True
            )
        if "sgdc" in only:
            runs["l1scale sgd_cumulative"] = l1scale_run(
                "sgd_cumulative", data, test, args.workdir / "sgdc.l1m", cgroup
            )
        if "vw" in only:
            runs["Vowpal Wabbit"] = vw_run(data, test, args.workdir, cgroup)
        if "rmmp" in only:
            runs["l1scale rmmp"] = l1scale_run(
                "rmmp",
                data,
                test,
                args.workdir / "rmmp.l1m",
                cgroup,
                passes=args.rmmp_passes,
                lam=args.rmmp_lam,
                tol=args.rmmp_tol,
            )
    finally:
        if cgroup is not None:
            cgroup.remove()
    suffix = ("_quick" if args.quick else "") + (f"_{args.part}" if args.part else "")
    plot_name = f"past_ram{suffix}_memory.png"
    with open("/proc/meminfo") as f:
        ram = int(f.readline().split()[1]) / 2**20
    report = {
        "date": utc_now(),
        "machine": machine(),
        "versions": versions(("numpy", "numba", "l1scale", "vowpalwabbit")),
        "command": command_line(sys.argv[1:]),
        "data": data,
        "ram_gib": ram,
        "cap_bytes": cap,
        "cap": "uncapped (no writable cgroup)" if cgroup is None else f"capped by {cgroup.describe()}",
        "rmmp_lam": args.rmmp_lam,
        "rmmp_tol": args.rmmp_tol,
        "runs": runs,
        "sed_seconds": sed_alone(data) if "vw" in only else float("nan"),
        "plot": plot_name,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    plot(report, args.out / plot_name)
    (args.out / f"past_ram{suffix}.json").write_text(
        json.dumps(
            {
                **report,
                "runs": {
                    k: {**v, "stdout": v["stdout"][-20000:], "stderr": v["stderr"][-2000:]} for k, v in runs.items()
                },
            },
            indent=1,
            default=str,
        )
    )
    (args.out / f"past_ram{suffix}.md").write_text(markdown(report))
    print(markdown(report))
    if not args.keep:
        for path in (data_path, described):
            path.unlink(missing_ok=True)


def render(path: Path):
    """The markdown and plot of a results JSON again (after a change of the report's format)."""
    report = json.loads(path.read_text())
    for run in report["runs"].values():
        if run["returncode"] == 0 and run["stdout"].lstrip().startswith("{"):
            _read_summary(run)
    report["runs"] = {k: {**v, "rss_samples": [tuple(x) for x in v["rss_samples"]]} for k, v in report["runs"].items()}
    path.write_text(json.dumps(report, indent=1, default=str))
    plot(report, path.parent / report["plot"])
    path.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
