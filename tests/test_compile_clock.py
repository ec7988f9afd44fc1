"""The clock every solver times its work with leaves Numba's compilation out and reports it apart.

A kernel is compiled (or loaded from Numba's cache) at its first call with new argument types,
wherever that call comes; ``l1scale._clock`` sums those seconds per thread from Numba's compiler
lock events, and ``Timer`` subtracts them from its window.
"""

import contextlib
import json
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from numba import njit
from numba.core import event
from numba.core.errors import TypingError

from l1scale._clock import CompileClock, Timer, compile_seconds, compiling_since
from l1scale.cli import _progress
from l1scale.cli._progress import COMPILE_NOTICE, CompileNotice


def _fresh_kernel():
    """A jitted function no process has compiled before (not cached): its first call compiles."""

    @njit
    def kernel(x):
        total = 0.0
        for i in range(x.shape[0]):
            total += np.sin(x[i]) * np.exp(-x[i])
        return total

    return kernel


def test_the_timer_leaves_a_compilation_in_its_window_out():
    kernel = _fresh_kernel()
    timer = Timer()
    start = time.perf_counter()
    kernel(np.ones(3))
    wall = time.perf_counter() - start
    compiled = timer.compiled()
    assert compiled > 0.5 * wall > 0.0  # the first call is its compilation
    assert timer() < wall - 0.5 * compiled
    kernel(np.ones(3))  # compiled: nothing more
    assert timer.compiled() == pytest.approx(compiled)


def test_the_clock_counts_this_thread_compilations_only():
    kernel = _fresh_kernel()
    clock = CompileClock()
    other = threading.Thread(target=kernel, args=(np.ones(3),))
    other.start()
    other.join()
    assert clock() == 0.0
    assert compile_seconds() >= 0.0


def test_a_compilation_that_fails_ends_its_clock():
    @njit
    def bad(x):
        return x.no_such_attribute

    clock = CompileClock()
    with pytest.raises(TypingError):
        bad(np.ones(2))
    first = clock()
    assert first > 0.0
    time.sleep(0.05)
    assert clock() == first  # not still running


_FIT_TWICE = """
import json, warnings
import numpy as np, scipy.sparse as sp
from l1scale import SparseLogisticRegression
X = sp.random(300, 80, density=0.1, format="csr", random_state=0)
y = (X @ np.random.default_rng(0).standard_normal(80) > 0).astype(int)
out = []
for _ in range(2):
    model = SparseLogisticRegression(lam_ratio=0.05, tol=1e-8).fit(X, y)
    out.append(dict(model.result_.timings, last=model.result_.history.time[-1]))
print(json.dumps(out))
"""


def test_a_first_fit_reports_its_kernels_compile_seconds_apart_from_the_solve():
    # In a fresh process the first fit compiles or loads its kernels (from the cache the suite's
    # other fits filled): those seconds are the Result's "compile", not its "solve" or History.
    done = subprocess.run([sys.executable, "-c", _FIT_TWICE], capture_output=True, text=True, check=True)
    first, second = json.loads(done.stdout.strip().splitlines()[-1])
    assert first["compile"] > 0.05
    assert second["compile"] == 0.0
    assert first["solve"] < first["compile"]
    for timings in (first, second):
        assert timings["last"] <= timings["solve"] + 1e-9


def _compiling(seconds):
    """What Numba announces around a compilation that lasts ``seconds``."""
    event.start_event("numba:compiler_lock")
    try:
        time.sleep(seconds)
    finally:
        event.end_event("numba:compiler_lock")


def test_compiling_since_is_the_start_of_the_compilation_running_now():
    assert compiling_since() is None
    seen = []
    worker = threading.Thread(target=_compiling, args=(0.3,))
    before = time.perf_counter()
    worker.start()
    time.sleep(0.1)
    seen.append(compiling_since())
    worker.join()
    assert seen[0] is not None and before <= seen[0] <= before + 0.1
    assert compiling_since() is None


def test_the_command_line_says_why_a_first_fit_is_silent(monkeypatch):
    # A compilation past the notice's threshold gets one line; a short one (a cache load) none.
    shown = []
    with CompileNotice(shown.append, after=0.1) as notice:
        _compiling(0.4)
        _compiling(0.4)
    assert shown == [COMPILE_NOTICE] and notice.shown
    quiet = []
    with CompileNotice(quiet.append, after=5.0):
        _compiling(0.05)
    assert quiet == []

    # train's run_fit shows it through the progress display's console.
    printed = []

    class Console:
        def print(self, message, markup=True, soft_wrap=False):
            printed.append(message)

    class Display(contextlib.nullcontext):
        console = Console()

    class Estimator:
        def fit(self, *args):
            _compiling(0.4)

    monkeypatch.setattr(_progress, "COMPILE_NOTICE_AFTER_S", 0.1)
    _progress.run_fit(Estimator(), "data", (), Display())
    assert printed == [COMPILE_NOTICE]
