"""Pieces shared by the benchmark scripts in this folder (not part of the library).

A script imports this module first and calls :func:`single_thread` before numpy is
imported, then :func:`repo_on_path`, so that ``import l1scale`` finds this checkout::

    from _common import REPO, repo_on_path, single_thread

    single_thread()  # before numpy is imported
    repo_on_path()

    import numpy as np

Nothing here imports numpy or l1scale at import time (functions that need numpy import it).

The peer benchmarks (``bench_batch_l1_logreg.py``, ``bench_path.py``) share the data sets
(:data:`DATASETS`, :func:`load_dataset`, with news20's seeded training split) and the timing
of one fit in a forked child (:func:`call_in_child`, :func:`timed_median`).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
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
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def command_line(args) -> str:
    """``python <script, relative to the repository> <args>``: how to rerun this run."""
    return "python " + " ".join([sys.argv[0].replace(str(REPO) + "/", "")] + list(args))


def git(*args: str) -> str:
    """stdout of ``git -C REPO <args>`` (not stripped); raises OSError where git cannot run."""
    return subprocess.run(["git", "-C", str(REPO), *args], check=False, capture_output=True, text=True).stdout


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
        with contextlib.suppress(metadata.PackageNotFoundError):
            out.append(f"{pkg} {metadata.version(pkg)}")
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


# ----------------------------------------------------------------------------- data sets of the peer benchmarks
# name -> (file under the data folder, n_features from its INDEX.md, description)
DATASETS = {
    "a9a": ("a9a/a9a.bz2", 123, "a9a (UCI Adult), train"),
    "earn": ("reuters21578/modapte_earn_train.svm.bz2", 27901, "Reuters-21578 ModApte 'earn', train"),
    "news20": (
        "news20/news20_bydate_binary.svm.bz2",
        588937,
        "20 Newsgroups binary uni+bigram TF-IDF, seeded 75% training split of the rows",
    ),
    "mnist10k": ("mnist/mnist10k_3vsrest.bz2", 784, "MNIST test 10k, 3 vs rest"),
    # The other shared sets: not in the default runs, for shapes the four above do not cover
    # (dense and unscaled columns, far more columns than rows, rare positives).
    "w8a": ("w8a/w8a.bz2", 300, "w8a (LIBSVM, Platt), binary features, 3% positive"),
    "magic04": ("magic04/magic04.svm.bz2", 10, "MAGIC gamma telescope (UCI), 10 unscaled dense features"),
    "spambase": ("spambase/spambase.svm.bz2", 57, "Spambase (UCI), 57 unscaled features"),
    "madelon": ("madelon/madelon.bz2", 500, "MADELON (UCI / NIPS 2003), 500 dense integer features of mean ~480"),
    "arcene": ("arcene/arcene.bz2", 10000, "ARCENE (UCI / NIPS 2003), 100 rows of 10,000 dense integer features"),
    "splice": ("splice/splice_scale.bz2", 60, "splice (LIBSVM splice_scale), 60 features in [-1, 1]"),
    # Generated, not read (:func:`hashed_clicks`): the wide, very sparse shape of hashed click data.
    "clicks": (
        None,
        1_000_000,
        "generated hashed clicks: 20,000 rows of 50 random features of 1,000,000, a 200-feature logistic truth",
    ),
    # Generated (:func:`tall_dense`): tabular, many rows and few features, X a dense array.
    "tall": (
        None,
        40,
        "generated tall dense: 200,000 rows of 40 standard normal columns (10 correlated pairs), a 20-column logistic truth",
    ),
    # Generated (:func:`rare_positives`): rare recorded events, nearly separable at small lam.
    "rare": (
        None,
        5_000,
        "generated rare positives: 50,000 rows of 25 binary features of 5,000, 1% of a logistic model's positives kept positive",
    ),
    # Generated (:func:`genotypes`): dense, wide and correlated, the shape of genomics data.
    "genotypes": (
        None,
        20_000,
        (
            "generated genotypes: 2,000 rows of 20,000 SNP-like columns (0 / 1 / 2, about 30% nonzero) in linkage"
            " blocks of 50 correlated columns, a 30-SNP logistic truth"
        ),
    ),
}
DATASET_ALIASES = {"mnist": "mnist10k"}
# Data sets used through a seeded training split of their rows: name -> fraction kept.
TRAIN_FRACTION = {"news20": 0.75}


def dataset_name(name: str) -> str:
    """The :data:`DATASETS` key of ``name`` (aliases resolved); SystemExit for an unknown one."""
    name = DATASET_ALIASES.get(name, name)
    if name not in DATASETS:
        raise SystemExit(f"unknown dataset {name!r}; choose from {sorted(DATASETS)}")
    return name


def training_rows(n: int, fraction: float, seed: int = 0):
    """The sorted row indices of a seeded training split:
    ``np.random.default_rng(seed).permutation(n)[: int(fraction * n)]``, sorted."""
    import numpy as np

    return np.sort(np.random.default_rng(seed).permutation(n)[: int(fraction * n)])


def hashed_clicks(n_features, n_samples=20_000, per_row=50, n_true=200, seed=0):
    """``(X, y)``: each row ``per_row`` features drawn uniformly (with repeats merged) of
    ``n_features``, value 1 (a hashed one-hot row), labels from a logistic model on ``n_true``
    features of weights 3 N(0, 1). Most columns hold 0-2 entries (features seen once or twice,
    as hashed click features are): a problem far wider than tall, whose models at 0.01 lam_max
    hold 15,000-20,000 features. Seeded: the same data on every machine."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    cols = np.sort(rng.integers(0, n_features, size=(n_samples, per_row)), axis=1)
    indptr = np.arange(0, n_samples * per_row + 1, per_row)
    X = sp.csr_matrix((np.ones(n_samples * per_row), cols.ravel(), indptr), shape=(n_samples, n_features))
    X.sum_duplicates()
    truth = np.zeros(n_features)
    truth[rng.choice(n_features, n_true, replace=False)] = 3.0 * rng.normal(size=n_true)
    y = np.where(X @ truth + rng.logistic(size=n_samples) > 0, 1.0, -1.0)
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    return X, y


def genotypes(n_features, n_samples=2_000, block=50, n_true=30, seed=0):
    """``(X, y)``: SNP-like columns coded 0 / 1 / 2 (a latent Gaussian per linkage block of ``block``
    columns, 0.8 of it shared in the block, thresholded at 0.5 and 1.5: about 30% of the entries are
    nonzero, neighbouring columns correlated about 0.5), labels from a logistic model on ``n_true``
    columns of weights N(0, 1), its margins scaled to standard deviation 2. Dense and wide (n < d):
    the shape of genome-wide association data, whose correlated columns make the support's Newton
    systems ill-conditioned. Seeded: the same data on every machine; X as CSR, as every set here."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    latent = np.repeat(rng.standard_normal((n_samples, n_features // block)), block, axis=1)
    latent = 0.8 * latent + 0.6 * rng.standard_normal((n_samples, n_features))
    dense = (latent > 0.5).astype(np.float64) + (latent > 1.5)
    truth = np.zeros(n_features)
    truth[rng.choice(n_features, n_true, replace=False)] = rng.standard_normal(n_true)
    z = dense @ truth
    z = 2.0 * (z - z.mean()) / z.std()
    y = np.where(rng.random(n_samples) < 1.0 / (1.0 + np.exp(-z)), 1.0, -1.0)
    X = sp.csr_matrix(dense)
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    return X, y


def tall_dense(n_features, n_samples=200_000, n_true=20, seed=0):
    """``(X, y)``: tabular data, many rows and few features: X dense (an array, as such data is
    passed), standard normal columns of which the first quarter each carries 0.9 of a column of the
    second quarter (correlated pairs), labels from a logistic model on ``n_true`` columns of weights
    3 N(0, 1), its margins scaled to standard deviation 2. Seeded: the same data on every machine."""
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, n_features))
    q = n_features // 4
    X[:, :q] += 0.9 * X[:, q : 2 * q]
    truth = np.zeros(n_features)
    truth[rng.choice(n_features, min(n_true, n_features), replace=False)] = 3.0 * rng.normal(
        size=min(n_true, n_features)
    )
    z = X @ truth
    z = 2.0 * (z - z.mean()) / z.std()
    y = np.where(rng.random(n_samples) < 1.0 / (1.0 + np.exp(-z)), 1.0, -1.0)
    return X, y


def rare_positives(n_features, n_samples=50_000, per_row=25, kept=0.01, n_true=20, seed=0):
    """``(X, y)``: binary rows of ``per_row`` features drawn uniformly (repeats merged) of
    ``n_features``, labels from a logistic model on ``n_true`` features of weights 3 N(0, 1) (margins
    scaled to standard deviation 2), of whose positives only a fraction ``kept`` stays positive: rare
    recorded events, most of the model's positives unrecorded (fraud found, conversions tracked). A
    few hundred positive rows that the features barely tell apart: nearly separable at small lam,
    with supports of half the features. Seeded: the same data on every machine."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    cols = np.sort(rng.integers(0, n_features, size=(n_samples, per_row)), axis=1)
    indptr = np.arange(0, n_samples * per_row + 1, per_row)
    X = sp.csr_matrix((np.ones(n_samples * per_row), cols.ravel(), indptr), shape=(n_samples, n_features))
    X.sum_duplicates()
    X.data[:] = 1.0
    truth = np.zeros(n_features)
    truth[rng.choice(n_features, n_true, replace=False)] = 3.0 * rng.normal(size=n_true)
    z = X @ truth
    z = 2.0 * (z - z.mean()) / z.std()
    y = np.where(rng.random(n_samples) < 1.0 / (1.0 + np.exp(-z)), 1.0, -1.0)
    y[(y > 0) & (rng.random(n_samples) >= kept)] = -1.0
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    return X, y


# Generated data sets: name -> generator of (X, y) from the width.
GENERATED = {"clicks": hashed_clicks, "genotypes": genotypes, "tall": tall_dense, "rare": rare_positives}


def load_dataset(name: str, data_dir, cache_dir):
    """``(X, y)`` of a :data:`DATASETS` entry: X CSR float64 with int32 indices (scikit-learn's
    liblinear and saga reject int64 ones), sorted (the generated ``tall`` set: a dense array, as
    tabular data is passed); y in {-1., +1.}. news20 is its seeded 75%
    training split (:func:`training_rows`: 14,134 of 18,846 rows, all 588,937 columns)."""
    import numpy as np
    import scipy.sparse as sp

    name = dataset_name(name)
    path, d, _ = DATASETS[name]
    if path is None:
        return GENERATED[name](d)
    X, y = load_svmlight_cached(Path(data_dir) / path, d, cache_dir, name)
    X = sp.csr_matrix((X.data.astype(np.float64), X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    y = np.where(np.asarray(y) > 0, 1.0, -1.0)
    if name in TRAIN_FRACTION:
        rows = training_rows(X.shape[0], TRAIN_FRACTION[name])
        X, y = X[rows], y[rows]
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    X.sort_indices()
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
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith(mark):
            return json.loads(line[len(mark) :]), proc
    return None, proc


# ----------------------------------------------------------------------------- one fit in a forked child
class FitTimeout(Exception):
    """A fit run by :func:`call_in_child` was killed at its time limit."""


def call_in_child(fn, timeout, daemon=True):
    """``fn()`` run in a forked child process; returns its (picklable) result.

    The child is killed after ``timeout`` seconds (:class:`FitTimeout`): none of the peers
    has a time limit of its own. A fit is timed inside the child (:func:`timed_median`), so
    the fork is not counted; the child inherits the parent's memory, hence its loaded data
    and its compiled Numba code. Warnings are silenced in the child; an exception there
    is raised here as a RuntimeError with its message. ``daemon=False`` lets the child start
    processes of its own (joblib's loky workers; a daemonic one cannot)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = fn()
            send.send(("ok", res))
        except BaseException as e:  # noqa: BLE001 - every failure is reported to the parent
            send.send(("err", f"{type(e).__name__}: {e}"))
        finally:
            send.close()

    proc = ctx.Process(target=child, daemon=daemon)
    proc.start()
    send.close()
    try:
        if not recv.poll(timeout):
            proc.kill()
            raise FitTimeout(f"fit killed after {timeout:.0f} s")
        try:
            status, res = recv.recv()
        except EOFError:
            status, res = "err", f"child process died (exit code {proc.exitcode})"
    finally:
        proc.join()
        recv.close()
    if status == "err":
        raise RuntimeError(res)
    return res


def timed_median(fn, repeats: int, repeat_below: float):
    """Time ``fn()`` (a whole fit); when it takes less than ``repeat_below`` seconds, run it
    ``repeats`` times in all. Returns ``(median seconds, fn's return value of the median run,
    every run's seconds)`` (with an even count, the faster of the two middle runs)."""
    times, outs = [], []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        outs.append(fn())
        times.append(time.perf_counter() - t0)
        if times[0] >= repeat_below:
            break
    k = sorted(range(len(times)), key=times.__getitem__)[(len(times) - 1) // 2]
    return times[k], outs[k], times


# ----------------------------------------------------------------------------- results files
def machine_info() -> dict:
    """CPU model and count, RAM, platform, Python and the thread variables, as a dict."""
    info = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "Model name": cpu_model(),
        "CPU(s)": str(os.cpu_count()),
        "RAM": f"{ram_gib():.1f} GiB",
    }
    info["threads"] = {v: os.environ.get(v) for v in THREAD_VARS}
    return info


def package_versions(dists) -> dict:
    """``{distribution: version or "not installed"}``, plus ``"l1scale git"`` (:func:`git_revision`)."""
    from importlib import metadata

    out = {}
    for dist in dists:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    rev = git_revision()
    if rev is not None:
        out["l1scale git"] = rev
    return out


def rerender(json_path, render) -> int:
    """``--from-json``: write the markdown report of an earlier run's JSON beside it (``render(doc)``,
    the benchmark's own), without running anything; returns the exit status 0."""
    path = Path(json_path)
    path.with_suffix(".md").write_text(render(json.loads(path.read_text())))
    return 0


def jsonable(o):
    """``o`` with numpy arrays as lists, numpy scalars as Python numbers, tuples as lists,
    NaN / inf as None."""
    import math

    if getattr(o, "ndim", 0) > 0 and hasattr(o, "tolist"):  # numpy array
        o = o.tolist()
    if isinstance(o, dict):
        return {str(k): jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonable(v) for v in o]
    if hasattr(o, "item") and getattr(o, "shape", None) == ():  # numpy scalar
        o = o.item()
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    return o
