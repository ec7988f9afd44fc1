"""Solves in threads (``n_jobs``) without oversubscribing the cores with BLAS threads.

The solvers' kernels are single-threaded and release the GIL, so ``n_jobs`` runs whole solves
in joblib's threads. BLAS is called on the side (a dot over the samples, a dense product in
an objective), and OpenBLAS or MKL would run each such call on every core: with the solves
already holding the cores, waking those threads costs milliseconds per call. While more than
one solve runs, BLAS is therefore held to one thread (as scikit-learn does around its own
threaded sections), through threadpoolctl.
"""

from __future__ import annotations

import numbers
from contextlib import nullcontext

from joblib import effective_n_jobs, parallel_config
from threadpoolctl import threadpool_limits

__all__ = ["check_n_jobs", "single_threaded_blas", "thread_count"]


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


def single_threaded_blas(n_jobs):
    """A context in which BLAS uses one thread when ``n_jobs`` means more than one (a no-op otherwise)."""
    return threadpool_limits(limits=1, user_api="blas") if thread_count(n_jobs) > 1 else nullcontext()
