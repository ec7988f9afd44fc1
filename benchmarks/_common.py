"""Pieces shared by the benchmark scripts in this folder (not part of the library).

A script imports this module first and calls :func:`single_thread` before numpy is
imported, then :func:`repo_on_path`, so that ``import l1scale`` finds this checkout::

    from _common import REPO, repo_on_path, single_thread

    single_thread()  # before numpy is imported
    repo_on_path()

    import numpy as np

Nothing here imports numpy or l1scale.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
RESULTS_DIR = REPO / "benchmarks" / "results"  # the default --out
DATA_DIR = os.environ.get("L1SCALE_DATA", "/work/shared/data")  # the default --data-dir (see its INDEX.md)
MIB = 1024.0 * 1024.0


# ----------------------------------------------------------------------------- set-up
def single_thread() -> None:
    """One thread for BLAS, OpenMP and Numba (a fair single-thread comparison).

    Must run before numpy is imported; a setting already in the environment wins."""
    for var in THREAD_VARS:
        os.environ.setdefault(var, "1")


def repo_on_path() -> None:
    """Put the repository root first on ``sys.path`` (unless there), so ``l1scale`` is this checkout."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


# ----------------------------------------------------------------------------- run header
def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second (the results' ``date``)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def command_line(args) -> str:
    """``python <script, relative to the repository> <args>``: how to rerun this run."""
    return "python " + " ".join([sys.argv[0].replace(str(REPO) + "/", "")] + list(args))


def git(*args: str) -> str:
    """stdout of ``git -C REPO <args>`` (not stripped); raises OSError where git cannot run."""
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True).stdout


def git_revision() -> str | None:
    """Short HEAD commit, plus ``" (+ uncommitted changes in l1scale/)"`` when l1scale/ is
    modified; None where git cannot run."""
    try:
        rev = git("rev-parse", "--short", "HEAD").strip()
        dirty = git("status", "--porcelain", "l1scale").strip()
    except OSError:
        return None
    return rev + (" (+ uncommitted changes in l1scale/)" if dirty else "")


def versions(packages=("numpy", "scipy", "numba", "l1scale"), with_git: bool = True) -> str:
    """``"numpy 2.1.0, scipy ..., l1scale git abc1234"``: the installed ones of ``packages``
    (missing ones left out), then the commit (:func:`git_revision`) unless ``with_git`` is false."""
    from importlib import metadata

    out = []
    for pkg in packages:
        try:
            out.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            pass
    rev = git_revision() if with_git else None
    if rev is not None:
        out.append(f"l1scale git {rev}")
    return ", ".join(out)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``platform`` where that cannot be read)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return cpu


def ram_gib() -> float:
    """Physical memory in GiB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def machine(with_ram: bool = True) -> str:
    """``"<CPU>, <n> CPUs, RAM <x> GiB; <platform>, Python <version>"`` (without the RAM part
    when ``with_ram`` is false)."""
    ram = f", RAM {ram_gib():.1f} GiB" if with_ram else ""
    return f"{cpu_model()}, {os.cpu_count()} CPUs{ram}; {platform.platform()}, Python {platform.python_version()}"


# ----------------------------------------------------------------------------- data
def load_svmlight_cached(path, n_features: int, cache_dir, name: str):
    """``(X, y)`` from an svmlight file (scikit-learn's parser; X as CSR), cached as
    ``<cache_dir>/<name>_<file size>.npz`` so that later runs skip the parse; no cache when
    ``cache_dir`` is empty or None."""
    import numpy as np
    import scipy.sparse as sp
    from sklearn.datasets import load_svmlight_file

    path = Path(path)
    cache = Path(cache_dir) / f"{name}_{path.stat().st_size}.npz" if cache_dir else None
    if cache is not None and cache.exists():
        z = np.load(cache)
        return sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"])), z["y"]
    X, y = load_svmlight_file(str(path), n_features=n_features)
    X = sp.csr_matrix(X)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape), y=y)
    return X, y


# ----------------------------------------------------------------------------- memory (in a worker)
def peak_rss_mib() -> float:
    """This process's peak RSS over its whole life (``ru_maxrss``; Linux reports KiB), in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def status_mib(field: str) -> float:
    """A /proc/self/status field (VmRSS, VmHWM) in MiB; NaN where unavailable."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS (Linux >= 4.0), so that
    the peak measured afterwards is the run's own, not the warm-up's (e.g. a Numba compile)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# ----------------------------------------------------------------------------- worker subprocesses
def serve_worker(worker, cfg_json: str, mark: str) -> int:
    """The worker side of :func:`run_worker`: ``worker(cfg)`` on the decoded ``--worker`` JSON,
    its result printed as the line ``<mark><JSON>``; returns 0 (the exit status)."""
    print(mark + json.dumps(worker(json.loads(cfg_json))), flush=True)
    return 0


def run_worker(script, cfg: dict, mark: str, timeout=None):
    """Run ``python <script> --worker <cfg as JSON>`` in a fresh process.

    The worker prints its result as one line ``<mark><JSON>``. Returns ``(result, proc)``:
    the decoded result (None when no such line was printed) and the CompletedProcess.
    Raises ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
    cmd = [sys.executable, str(Path(script).resolve()), "--worker", json.dumps(cfg)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith(mark):
            return json.loads(line[len(mark):]), proc
    return None, proc
