"""The library's clock: seconds of work less those spent in Numba's compiler (per thread), which
are reported apart (``Result.timings["compile"]``).

A kernel is compiled (or loaded from Numba's on-disk cache) at its first call with a new type
of arguments, wherever that call comes: the first fit in a process spends its first seconds
there, a later one nothing. Numba holds one lock around every compilation and cache load, and
announces each acquisition as its event ``numba:compiler_lock``; the clock sums the seconds of
the outermost ones in each thread (a compilation's nested calls take the lock again), which
include the wait for another thread's compilation (``n_jobs``: the threads compile one at a
time). Before 2026-12-03 each solver compiled all its kernels first, for fixed argument types,
and timed that apart: 51 s of kernels at the first fit of a small CSR problem (empty cache, 2-core
host) where the fit needs 35 s of them, and the solve compiled the signatures the warm-up had not
(3.6 s counted as solve time).

Numba is imported at the first reading of the clock, not with this module (the command line
starts without it).
"""

from __future__ import annotations

import threading
import time

__all__ = ["CompileClock", "Timer", "compile_seconds", "compiling_since"]

_state = threading.local()
_install_lock = threading.Lock()
_listening = threading.Event()  # set once the listener is registered
_ongoing = {}  # thread ident -> perf_counter() at the start of its outermost compilation now running


def _thread_state():
    state = _state.__dict__
    if not state:
        state.update(depth=0, started=0.0, total=0.0)
    return state


def _install():
    with _install_lock:
        if _listening.is_set():
            return
        from numba.core import event

        class _Listener(event.Listener):
            def on_start(self, ev):
                state = _thread_state()
                if state["depth"] == 0:
                    state["started"] = time.perf_counter()
                    _ongoing[threading.get_ident()] = state["started"]
                state["depth"] += 1

            def on_end(self, ev):
                state = _thread_state()
                state["depth"] -= 1
                if state["depth"] == 0:
                    state["total"] += time.perf_counter() - state["started"]
                    _ongoing.pop(threading.get_ident(), None)

        event.register("numba:compiler_lock", _Listener())
        _listening.set()


def compile_seconds() -> float:
    """Seconds this thread has spent in Numba's compiler since the clock was first read:
    compiling, loading compiled kernels from the cache, and waiting for another thread's
    compilation."""
    if not _listening.is_set():
        _install()
    state = _thread_state()
    if state["depth"]:  # read from inside a compilation (a callback of the compiler)
        return state["total"] + time.perf_counter() - state["started"]
    return state["total"]


def compiling_since():
    """``time.perf_counter()`` at the start of the oldest compilation running now in any thread
    (its outermost call: a kernel's callees are compiled inside it), or None: what a progress
    display watches to say why a first fit is silent (``cli._progress.CompileNotice``)."""
    if not _listening.is_set():
        _install()
    starts = list(_ongoing.values())  # a copy: compiling threads change it
    return min(starts) if starts else None


class CompileClock:
    """The compile seconds of this thread since the clock's creation (``clock()``)."""

    def __init__(self):
        self._at_start = compile_seconds()

    def __call__(self) -> float:
        return compile_seconds() - self._at_start


class Timer:
    """Seconds since creation, less those this thread spent in Numba's compiler meanwhile
    (``compiled()``) and those of the blocks :meth:`exclude` takes out (e.g. a conversion
    reported apart)."""

    def __init__(self):
        self._start = time.perf_counter()
        self._excluded = 0.0
        self.compiled = CompileClock()

    def __call__(self) -> float:
        return time.perf_counter() - self._start - self._excluded - self.compiled()

    def exclude(self, seconds: float):
        self._excluded += seconds
