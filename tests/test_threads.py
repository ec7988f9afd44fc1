"""n_jobs: solves in threads keep BLAS to one thread while they run (l1scale._threads)."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from threadpoolctl import threadpool_info

from l1scale import SparseLogisticRegression, SparseLogisticRegressionCV
from l1scale._threads import single_threaded_blas


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def blas_with_two_threads():
    from threadpoolctl import threadpool_limits

    if not _blas_threads():
        pytest.skip("no BLAS library seen by threadpoolctl")
    with threadpool_limits(limits=2, user_api="blas"):
        yield


def test_single_threaded_blas_only_when_more_than_one_job(blas_with_two_threads):
    with single_threaded_blas(None):
        assert max(_blas_threads()) == 2
    with single_threaded_blas(2):
        assert set(_blas_threads()) == {1}
    assert max(_blas_threads()) == 2  # restored on exit


@pytest.mark.parametrize("make", ["ovr", "cv"])
def test_solves_in_threads_see_one_blas_thread(blas_with_two_threads, make):
    X, y = make_classification(n_samples=300, n_features=20, n_informative=5, n_classes=3, random_state=0)
    seen = []

    def callback(iteration, history):
        seen.append(max(_blas_threads()))

    def accuracy(y_true, p_positive):  # a callable scoring runs in the CV's threads
        seen.append(max(_blas_threads()))
        return float(np.mean((p_positive > 0.5) == (y_true > 0)))

    if make == "ovr":
        model = SparseLogisticRegression(lam=0.01, multi_class="ovr", n_jobs=2, callback=callback)
    else:
        model = SparseLogisticRegressionCV(n_lams=4, cv=2, multi_class="ovr", n_jobs=2, scoring=accuracy)
    model.fit(X, y)
    assert seen and set(seen) == {1}
    assert max(_blas_threads()) == 2
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])


_SEEN = []  # per fold task, in the worker: whether the refit had started when the fold began


def _cv_in_a_worker():
    """In a multiprocessing pool's worker (a daemonic process): joblib's plain count, ours, and
    for each fold whether the refit was running beside it."""
    import warnings

    from joblib import effective_n_jobs

    from l1scale._threads import thread_count

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # joblib warns that its process backend falls back to 1
        plain = effective_n_jobs(2)
    X, y = make_classification(n_samples=400, n_features=30, n_informative=6, random_state=1)
    SparseLogisticRegressionCV(n_lams=6, cv=3, n_jobs=2).fit(X, y)
    return plain, thread_count(2), list(_SEEN)


def test_thread_counts_hold_in_a_daemonic_process(monkeypatch):
    """joblib's effective_n_jobs answers 1 in a daemonic process (its process backend cannot
    start workers there) while threads still run n_jobs at once: the CV must count threads, or
    its refit waits for the last fold instead of running beside the folds.

    Each fold waits (up to 20 s) for the refit to start: with the refit beside the folds it
    starts at once, whatever the machine's load; with the refit after them it never does."""
    import multiprocessing as mp
    import threading

    from joblib import parallel_config

    from l1scale import path as path_module
    from l1scale._threads import thread_count

    started = threading.Event()
    original_refit, original_fold = path_module._refit_path, path_module._fold_scores

    def refit(*args, **kw):
        started.set()
        return original_refit(*args, **kw)

    def fold(*args, **kw):
        _SEEN.append(started.wait(timeout=20.0))
        return original_fold(*args, **kw)

    monkeypatch.setattr(path_module, "_refit_path", refit)
    monkeypatch.setattr(path_module, "_fold_scores", fold)
    with mp.get_context("fork").Pool(1) as pool:  # a pool's workers are daemonic
        plain, threads, seen = pool.apply(_cv_in_a_worker)
    assert plain == 1 and threads == 2
    assert seen == [True, True, True]  # every fold ran while the refit had started beside it
    assert thread_count(2) == 2 and thread_count(None) == 1
    with parallel_config(backend="sequential"):  # a backend the caller chose still wins
        assert thread_count(2) == 1


def test_run_in_threads_runs_jobs_at_once_and_returns_them_in_order():
    """Two jobs meet at a barrier (they must run at the same time to pass it); the results come
    in the jobs' order whatever order they end in."""
    import threading
    import time

    from joblib import delayed

    from l1scale._threads import run_in_threads

    barrier = threading.Barrier(2, timeout=20.0)

    def job(k):
        if k < 2:
            barrier.wait()
        time.sleep(0.01 * (4 - k))  # the later jobs end first
        return k * k

    assert run_in_threads((delayed(job)(k) for k in range(4)), 2) == [0, 1, 4, 9]


def test_run_in_threads_takes_jobs_from_a_generator_as_they_are_needed():
    """While no job has ended, at most twice as many jobs as threads are taken from the generator
    (and the one waiting for a slot): a CV's folds build their matrices as they are reached."""
    import threading
    import time

    from joblib import delayed

    from l1scale._threads import run_in_threads

    started, release, taken, out = threading.Semaphore(0), threading.Event(), [], []

    def job(k):
        started.release()
        assert release.wait(timeout=20.0)
        return k

    def jobs():
        for k in range(20):
            taken.append(k)
            yield delayed(job)(k)

    runner = threading.Thread(target=lambda: out.append(run_in_threads(jobs(), 2)))
    runner.start()
    for _ in range(2):
        assert started.acquire(timeout=20.0)  # both threads are in a job
    time.sleep(0.2)  # time for the taking to run ahead as far as it may
    ahead = len(taken)
    release.set()
    runner.join(timeout=60.0)
    assert out == [list(range(20))]
    assert 2 <= ahead <= 5  # 4 slots and the job waiting for one


def test_run_in_threads_raises_the_first_error_and_takes_no_more_jobs():
    from joblib import delayed

    from l1scale._threads import run_in_threads

    taken = []

    def job(k):
        if k == 1:
            raise ValueError("job 1 failed")
        return k

    def jobs():
        for k in range(100):
            taken.append(k)
            yield delayed(job)(k)

    with pytest.raises(ValueError, match="job 1 failed"):
        run_in_threads(jobs(), 2)
    assert len(taken) < 100


def test_run_in_threads_leaves_the_jobs_to_a_backend_the_caller_chose():
    import threading

    from joblib import delayed, parallel_config

    from l1scale._threads import run_in_threads

    def job(k):
        return k, threading.get_ident()

    with parallel_config(backend="sequential"):
        out = run_in_threads((delayed(job)(k) for k in range(3)), 2)
    assert [k for k, _ in out] == [0, 1, 2]
    assert {ident for _, ident in out} == {threading.get_ident()}


# The modules whose compiled kernels a CD solve, its path, its screening and dual points, and a
# cross-validation's fold copies call from Python.
_CD_KERNEL_MODULES = [
    "l1scale._logistic_passes",
    "l1scale.data._transpose",
    "l1scale.data.memory",
    "l1scale.data.repeated_rows",
    "l1scale.data.rows",
    "l1scale.losses",
    "l1scale.problems.memory",
    "l1scale.solvers._cd_kernels",
    "l1scale.solvers._cg_kernels",
    "l1scale.solvers._covariance",
    "l1scale.solvers._dual",
    "l1scale.solvers._factor_kernels",
    "l1scale.solvers._gram_kernels",
    "l1scale.solvers._local_model",
    "l1scale.solvers._working_sets",
]


@pytest.mark.parametrize("module", _CD_KERNEL_MODULES)
def test_every_kernel_of_a_cd_solve_releases_the_gil(module):
    """In threads (n_jobs) a solve waits for the GIL as long as another holds it at a stretch, so
    every kernel CD calls releases it, those of microseconds too (l1scale._threads): a kernel
    added without nogil=True to these modules fails here. Helpers compiled inline into other
    kernels are not called from Python and are left out."""
    import importlib

    from numba.core.registry import CPUDispatcher

    mod = importlib.import_module(module)
    kernels = {
        name: k
        for name, k in vars(mod).items()
        if isinstance(k, CPUDispatcher) and k.py_func.__module__ == module and k.targetoptions.get("inline") != "always"
    }
    assert kernels, f"{module} defines no kernel: update the list"
    holding = sorted(name for name, k in kernels.items() if not k.targetoptions.get("nogil", False))
    assert not holding, f"{module}: {holding} hold the GIL"


@pytest.mark.parametrize("n_classes", [2, 3])
def test_cv_holds_the_running_folds_copies_only(monkeypatch, n_classes):
    """A binary CV's fold copies are made by the jobs that solve them and dropped with them: with
    n_jobs=2 at most two are alive at once (the jobs queued behind the running ones hold none).
    One-vs-rest makes each fold's copy once for all its classes."""
    import gc
    import weakref

    from l1scale import path as path_module

    made, alive, most = [], set(), [0]
    original = path_module.column_matrix_rows

    def tracked(X_columns, rows):
        gc.collect()  # copies dropped in cycles count as dropped
        M = original(X_columns, rows)
        key = len(made)
        made.append(key)
        alive.add(key)
        weakref.finalize(M, alive.discard, key)
        most[0] = max(most[0], len(alive))
        return M

    monkeypatch.setattr(path_module, "column_matrix_rows", tracked)
    X, y = make_classification(
        n_samples=600, n_features=30, n_informative=6, n_classes=n_classes, n_clusters_per_class=1, random_state=0
    )
    SparseLogisticRegressionCV(cv=5, n_lams=6, n_jobs=2, multi_class="ovr").fit(X, y)
    assert len(made) == 5  # one copy a fold, for every class
    if n_classes == 2:
        assert most[0] <= 2


def _flags(a, k):  # module level: a process backend pickles the job's function by name
    return bool(a.flags.writeable), type(a).__name__, float(a[k])


@pytest.mark.parametrize("backend", ["loky", "multiprocessing"])
def test_a_process_backend_gets_writeable_arrays_and_reports_results_here(backend):
    """Under a process backend the caller chose, joblib memory-maps large arrays for the workers,
    read-only by default: Numba would compile every kernel again for read-only arrays (52 s for
    earn's CV), and a kernel writing into one could not run. They arrive writeable (copy-on-write),
    and on_result sees each result in this process, in order."""
    from joblib import delayed, parallel_config

    from l1scale._threads import in_this_process, run_in_threads

    a = np.arange(50_000, dtype=np.float64)
    seen = []
    with parallel_config(backend=backend, max_nbytes=1000):  # every array over 1 kB memory-mapped
        assert not in_this_process(2)
        assert in_this_process(1)
        out = run_in_threads((delayed(_flags)(a, k) for k in range(4)), 2, on_result=seen.append)
    assert out == seen == [(True, "memmap", float(k)) for k in range(4)]
    assert in_this_process(2)  # threads, the default
    assert run_in_threads((delayed(_flags)(a, k) for k in range(2)), 2, on_result=seen.append) == seen[-2:]


@pytest.mark.parametrize("backend", ["loky", "multiprocessing"])
def test_n_jobs_under_a_process_backend_gives_the_fits_of_one_job(backend):
    """joblib.parallel_config(backend="loky") (or "multiprocessing", which pickles functions by
    name) runs the one-vs-rest solves, a path's segments and a CV's folds in processes: every job
    and what it carries pickles, and the results are those of n_jobs=1 (the path's segments: to
    tol, as in threads). The CV's progress, which a worker process cannot call back, is counted
    here as each fold's path arrives, up to the fit's total."""
    from joblib import parallel_config

    from l1scale import regularization_path

    X, y = make_classification(n_samples=300, n_features=20, n_informative=5, n_classes=3, random_state=0)
    y_pm = np.where(y == 0, 1.0, -1.0)
    one = (
        SparseLogisticRegression(lam_ratio=0.05, multi_class="ovr", tol=1e-8).fit(X, y),
        regularization_path(X, y_pm, "logistic", n_lams=12, tol=1e-8),
        SparseLogisticRegressionCV(n_lams=6, cv=3, tol=1e-8).fit(X, y),  # multinomial
        SparseLogisticRegressionCV(n_lams=6, cv=3, tol=1e-8, scoring="accuracy").fit(X, y_pm),
    )
    progress = []
    with parallel_config(backend=backend, max_nbytes=1000):
        many = (
            SparseLogisticRegression(lam_ratio=0.05, multi_class="ovr", tol=1e-8, n_jobs=2).fit(X, y),
            regularization_path(X, y_pm, "logistic", n_lams=12, tol=1e-8, n_jobs=2),
            SparseLogisticRegressionCV(n_lams=6, cv=3, tol=1e-8, n_jobs=2).fit(X, y),
            SparseLogisticRegressionCV(
                n_lams=6, cv=3, tol=1e-8, scoring="accuracy", n_jobs=2, progress=lambda *a: progress.append(a)
            ).fit(X, y_pm),
        )
    np.testing.assert_array_equal(many[0].coef_, one[0].coef_)
    np.testing.assert_allclose(many[1].objectives, one[1].objectives, rtol=1e-7)
    for a, b in zip(one[2:], many[2:]):
        for name in ("scores_", "lams_", "lam_", "coef_", "intercept_"):
            np.testing.assert_array_equal(getattr(b, name), getattr(a, name))
    done = [d for d, _ in progress]
    # 3 folds and, a binary problem on two workers, the refit beside them over the whole grid
    assert done == sorted(done) and progress[-1][0] == progress[-1][1] == many[3].lams_.size * 4


@pytest.mark.parametrize("standardize", [False, True])
def test_cv_on_sparse_text_gives_the_same_scores_for_every_n_jobs(blas_with_two_threads, standardize):
    """With BLAS on two threads, a CV with n_jobs=1 holds BLAS to one thread as n_jobs=2 does:
    LAPACK's blocked factorisations in the solvers' kernels round differently on one thread and on
    two, and the scores of sparse text folds moved by 3e-15 (1e-12 with ``standardize``)."""
    from l1scale.data.synthetic import make_sparse_text

    X, y = make_sparse_text(1500, 400, random_state=0)
    weights = np.random.default_rng(0).uniform(0.5, 2.0, X.shape[0])
    kw = dict(cv=3, n_lams=8, tol=1e-8, standardize=standardize)
    one = SparseLogisticRegressionCV(**kw).fit(X, y, sample_weight=weights)
    assert max(_blas_threads()) == 2  # restored after the fit
    two = SparseLogisticRegressionCV(**kw, n_jobs=2).fit(X, y, sample_weight=weights)
    for name in ("scores_", "lam_", "coef_", "intercept_"):
        np.testing.assert_array_equal(getattr(two, name), getattr(one, name))
