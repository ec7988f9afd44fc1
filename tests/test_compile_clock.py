"""The clock every solver times its work with leaves Numba's compilation out and reports it apart.

A kernel is compiled (or loaded from Numba's cache) at its first call with new argument types,
wherever that call comes; ``l1scale._clock`` sums those seconds per thread from Numba's compiler
lock events, and ``Timer`` subtracts them from its window.
"""

import json
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from l1scale._clock import CompileClock, Timer, compile_seconds


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
