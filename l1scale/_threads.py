"""Solves in threads (``n_jobs``) without oversubscribing the cores with BLAS threads.

The solvers' kernels are single-threaded and release the GIL, so ``n_jobs`` runs whole solves
in joblib's threads. BLAS is called on the side (a dot over the samples, a dense product in
an objective), and OpenBLAS or MKL would run each such call on every core: with the solves
already holding the cores, waking those threads costs milliseconds per call. While more than
one solve runs, BLAS is therefore held to one thread (as scikit-learn does around its own
threaded sections), through threadpoolctl.
"""

from __future__ import annotations

from contextlib import nullcontext

from joblib import effective_n_jobs
from threadpoolctl import threadpool_limits

__all__ = ["single_threaded_blas"]


def single_threaded_blas(n_jobs):
    """A context in which BLAS uses one thread when ``n_jobs`` means more than one (a no-op otherwise)."""
    return threadpool_limits(limits=1, user_api="blas") if effective_n_jobs(n_jobs) > 1 else nullcontext()
