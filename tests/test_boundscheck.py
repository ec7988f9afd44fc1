"""Numba compiles without bounds checks: an index that a kernel trusts and should not is
a silent out-of-bounds read or write. Here the parser, cache and corrupt-input tests and
one fit of every registered solver (sparse and dense, with and without intercept) run
once more in a child process with ``NUMBA_BOUNDSCHECK=1``, so that any such index is an
IndexError there (issue 13). The child compiles into its own cache directory: code
compiled with bounds checks must not be cached for the normal runs, nor the other way."""

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale import SparseLinearRegression, SparseLogisticRegression
from l1scale._generated_fit import GENERATED_SOLVERS
from l1scale.data import Products
from l1scale.solvers import SOLVERS

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKED = [
    "test_svmlight.py",
    "test_vw.py",
    "test_stream.py",
    "test_corrupt_inputs.py",
    "test_fuzz.py",
    "test_boundscheck.py",
]


def data(dense, seed=0, n=80, d=15):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, format="csr", random_state=seed)
    w = np.where(rng.random(d) < 0.4, rng.normal(size=d), 0.0)
    y = np.where(X @ w + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return (X.toarray() if dense else X), y


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 20 iterations: a smoke fit
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_every_solver_fits_small_data(solver, dense, fit_intercept):
    """A small fit of each solver: cheap here, and under bounds checks in the child."""
    X, y = data(dense)
    extra = {"features": Products(degree=2), "cache_bytes": "1MB"} if solver in GENERATED_SOLVERS else {}
    model = SparseLogisticRegression(
        solver=solver, lam_ratio=0.2, max_iter=20, fit_intercept=fit_intercept, random_state=0, **extra
    )
    model.fit(X, y)
    assert np.isfinite(model.coef_).all() and model.predict(X).shape == y.shape
    if solver in ("cd", "fista", "truncated_gradient", "sgd_cumulative"):
        reg = SparseLinearRegression(
            solver=solver, lam_ratio=0.2, max_iter=20, fit_intercept=fit_intercept, random_state=0
        ).fit(X, y)
        assert np.isfinite(reg.coef_).all()


@pytest.mark.slow
def test_under_boundscheck(tmp_path):
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-x",
        "-rs",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "-k",
        "not test_under_boundscheck",
        *(os.path.join(HERE, name) for name in CHECKED),
    ]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800, check=False)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert " passed" in run.stdout.splitlines()[-1]
    assert "only in the bounds-checked child" not in run.stdout  # the child's own check ran


@pytest.mark.skipif(os.environ.get("NUMBA_BOUNDSCHECK") != "1", reason="only in the bounds-checked child")
def test_the_child_does_check_bounds():
    """Without this, a child that silently compiled without checks would pass as well."""
    from numba import njit

    @njit
    def read(a, i):
        return a[i]

    with pytest.raises(IndexError):
        read(np.zeros(3), 5)
