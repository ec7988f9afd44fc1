"""Solves in threads (``n_jobs``) without oversubscribing the cores with BLAS threads.

The solvers' kernels are single-threaded and release the GIL, so ``n_jobs`` runs whole solves in
joblib's threads. Every kernel a solve calls releases it, those of a few microseconds too: a
thread waits for the GIL as long as the other holds it at a stretch, so what counts is how long
the Python between two releases runs, not how many releases there are (measured on earn's 5-fold
CV, n_jobs=2 against 1, three to five alternated runs each: the solvers' short kernels holding the GIL
1.18-1.32x, as shipped before 1.23-1.51x, every kernel releasing it 1.39-1.57x). BLAS is called
on the side (a dot over the samples, a dense product in an objective), and OpenBLAS or MKL would
run each such call on every core: with the solves already holding the cores, waking those
threads costs milliseconds per call. While more than one solve runs, BLAS is therefore held to
one thread (as scikit-learn does around its own threaded sections), through threadpoolctl.

:func:`run_in_threads` runs the solves. Under joblib's threading backend (the one
``prefer="threads"`` picks unless the caller chose another) it runs them on a
``concurrent.futures`` pool: joblib's own loop waits for results in 10 ms sleeps, which on a
one-vs-rest fit of 0.2 s is 5-10% of the wall time. A backend the caller chose with
``joblib.parallel_config`` (loky, multiprocessing, dask, ...) still gets the jobs, through
``joblib.Parallel``, with large arrays memory-mapped copy-on-write (``mmap_mode="c"``) rather
than read-only, joblib's default: Numba types a read-only array apart and compiles every kernel
again for it (earn's 5-fold CV in two loky workers: 52 s the first time, where the kernels'
on-disk cache holds the writeable versions), and a kernel that writes into an input could not
take one at all; pickling the arrays instead (``max_nbytes=None``) cost earn's CV 0.1 s. A job
in another process cannot call back into this one: what must be counted there is counted here as
each result arrives (``on_result``; :func:`in_this_process` says which).
"""

from __future__ import annotations

import functools
import numbers
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

from joblib import Parallel, effective_n_jobs, parallel_config
from joblib.parallel import ThreadingBackend, get_active_backend
from threadpoolctl import ThreadpoolController

__all__ = [
    "check_n_jobs",
    "in_this_process",
    "one_blas_thread",
    "run_in_threads",
    "single_threaded_blas",
    "thread_count",
]


def check_n_jobs(n_jobs):
    """joblib's n_jobs: None (1, unless inside a ``joblib.parallel_backend`` context), a
    positive number of threads, or -1 (every core), -2 (all but one), ...; returns it."""
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0):
        raise ValueError(f"n_jobs must be None or a nonzero integer (-1: every core), got n_jobs={n_jobs!r}")
    return n_jobs


def thread_count(n_jobs) -> int:
    """How many workers ``joblib.Parallel(n_jobs=n_jobs, prefer="threads")`` runs: joblib's
    ``effective_n_jobs`` under the same preference for threads (a backend the caller chose with
    ``joblib.parallel_config`` still wins). Plain ``effective_n_jobs`` answers for the default
    process backend, which is 1 inside a daemonic process (a multiprocessing worker, a forked
    benchmark child), where threads still run n_jobs at once."""
    with parallel_config(prefer="threads"):
        return effective_n_jobs(n_jobs)


@functools.cache
def _blas_controller() -> ThreadpoolController:
    """threadpoolctl's controller of the loaded thread pools, made once: making one looks at
    every library the process has loaded (2-9 ms with NumPy, SciPy, Numba and scikit-learn
    loaded, each fit with n_jobs paid it), limiting through it takes microseconds. The BLAS
    it controls are NumPy's and SciPy's, loaded before any solve."""
    return ThreadpoolController()


def single_threaded_blas(n_jobs):
    """A context in which BLAS uses one thread when ``n_jobs`` means more than one (a no-op otherwise)."""
    return one_blas_thread() if thread_count(n_jobs) > 1 else nullcontext()


def one_blas_thread():
    """A context in which BLAS uses one thread, whatever ``n_jobs``: for the calls whose results
    must not depend on how many threads BLAS has (OpenBLAS's blocked triangular solves round
    differently on one thread and on two, and ``n_jobs`` > 1 holds BLAS to one)."""
    return _blas_controller().limit(limits=1, user_api="blas")


def in_this_process(n_jobs) -> bool:
    """Whether :func:`run_in_threads` runs its jobs in this process (in threads, or one after
    another), where they share its objects (a callback counting solves, a lock); False under a
    process backend the caller chose with ``joblib.parallel_config`` (loky, multiprocessing)."""
    backend, _ = get_active_backend(prefer="threads")
    return thread_count(n_jobs) <= 1 or bool(getattr(backend, "supports_sharedmem", False))


def run_in_threads(jobs, n_jobs, on_result=None):
    """The results of joblib ``delayed`` jobs, in their order, over ``n_jobs`` threads (joblib's
    conventions, :func:`thread_count`), BLAS held to one thread meanwhile, with one job at a time
    too: LAPACK's blocked factorisations and solves (Numba's ``np.linalg`` in the solvers'
    kernels: the support's Cholesky factor, the model's face solve) round differently on one
    thread and on two, and a cross-validation's scores on sparse text moved by 3e-15 (1e-12 with
    ``standardize``) between n_jobs=1 and 2.

    ``jobs`` may be a generator: like joblib's ``pre_dispatch="2*n_jobs"``, at most twice as many
    jobs as threads are taken from it ahead of the ones running (a CV's folds build their
    matrices as they are reached). The first job to raise stops the taking of more, and its
    exception is raised once the running ones are done. ``on_result(result)``, if given, is
    called in this thread with each result, in order, as the results are collected (under a
    process backend as each arrives; in threads once all are done)."""
    results = []
    for result in _run(jobs, n_jobs):
        if on_result is not None:
            on_result(result)
        results.append(result)
    return results


def _run(jobs, n_jobs):
    """The results of ``jobs``: a list, or a generator under a backend the caller chose."""
    backend, _ = get_active_backend(prefer="threads")
    if not isinstance(backend, ThreadingBackend):  # a backend the caller chose
        return _in_backend(jobs, n_jobs, getattr(backend, "supports_return_generator", False))
    workers = thread_count(n_jobs)
    if workers <= 1:  # BLAS on one thread here too, so that the results do not depend on n_jobs
        with one_blas_thread():
            return [function(*args, **kwargs) for function, args, kwargs in jobs]
    slots = threading.BoundedSemaphore(2 * workers)
    failed = threading.Event()

    def run(function, args, kwargs):
        try:
            return function(*args, **kwargs)
        except BaseException:
            failed.set()
            raise
        finally:
            slots.release()

    futures = []
    with single_threaded_blas(n_jobs), ThreadPoolExecutor(max_workers=workers) as pool:
        for function, args, kwargs in jobs:
            slots.acquire()
            if failed.is_set():
                break
            futures.append(pool.submit(run, function, args, kwargs))
    return [future.result() for future in futures]


def _in_backend(jobs, n_jobs, as_generator):
    # mmap_mode="c": large arrays memory-mapped copy-on-write, so writeable (see the module's
    # docstring). A generator (where the backend gives one) yields each result as it arrives,
    # keeping the BLAS limit and joblib's pool open meanwhile.
    with single_threaded_blas(n_jobs):
        parallel = Parallel(
            n_jobs=n_jobs, prefer="threads", mmap_mode="c", return_as="generator" if as_generator else "list"
        )
        yield from parallel(jobs)
