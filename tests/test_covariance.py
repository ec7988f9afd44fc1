"""The Lasso solved on its covariances (n much larger than d): the same certified optimum as CD's
Newton steps, on every layout, with and without intercept and weights, along a path too; the
problem's own duality gap certifies it, and CD goes on where that gap misses tol."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale import SparseLinearRegression
from l1scale.exceptions import ConvergenceWarning
from l1scale.path import regularization_path
from l1scale.problems import Problem
from l1scale.solvers import _covariance as covariance
from l1scale.solvers.cd import CoordinateDescent


def _narrow(n=2000, d=40, seed=0, layout="csc"):
    """Many rows, few correlated and one-hot columns (a9a's shape)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.4)
    X[:, :6] = np.eye(6)[rng.integers(6, size=n)]  # a one-hot block beside the intercept
    X[:, 6:10] += 0.7 * X[:, 10:14]
    w = np.zeros(d)
    w[:10] = rng.normal(scale=1.5, size=10)
    y = X @ w + 1.0 + 0.5 * rng.normal(size=n)
    return (X if layout == "dense" else getattr(sp, f"{layout}_matrix")(X)), y


def _solve(problem, use_covariances, monkeypatch, tol=1e-9):
    calls = []
    real = covariance.solve

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(covariance, "solve", counting)
    if not use_covariances:
        monkeypatch.setattr(covariance, "applies", lambda *a, **k: False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = CoordinateDescent(tol=tol, max_iter=1000).solve(problem)
    monkeypatch.undo()
    return result, len(calls)


@pytest.mark.parametrize("layout", ["dense", "csr", "csc"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_covariance_solve_reaches_cds_certified_optimum(layout, fit_intercept, weighted, monkeypatch):
    X, y = _narrow(layout=layout)
    c = np.random.default_rng(1).uniform(0.3, 3.0, size=y.shape[0]) if weighted else None
    for ratio in (0.3, 0.05, 0.005):
        problem = Problem(X, y, "squared", lam_ratio=ratio, fit_intercept=fit_intercept, sample_weight=c)
        assert covariance.applies(problem, CoordinateDescent())
        on, used = _solve(problem, True, monkeypatch)
        off, unused = _solve(problem, False, monkeypatch)
        assert used == 1 and unused == 0
        assert on.converged and on.relative_certificate <= 1e-9
        assert on.objective == pytest.approx(off.objective, rel=1e-9)
        np.testing.assert_allclose(on.coef, off.coef, atol=1e-5)
        assert on.intercept == pytest.approx(off.intercept, abs=1e-5)
        # The certificate is the problem's own: the objective less the dual value of the point.
        assert on.certificate == pytest.approx(on.objective - problem.dual_value(on.dual_point), abs=1e-12)
        # The loss gradient is X^T c (z - y) at the returned point.
        z = problem.margins(on.coef, on.intercept)
        expected = X.T @ (problem.c * (z - y))
        np.testing.assert_allclose(on.loss_gradient, expected, atol=1e-12)


def test_where_the_covariances_are_not_taken():
    X, y = _narrow()
    cd = CoordinateDescent()
    assert not covariance.applies(Problem(X, y, "squared", lam_ratio=0.1, l1_ratio=0.5), cd)  # elastic net
    assert not covariance.applies(Problem(X, np.sign(y - y.mean()), "logistic", lam_ratio=0.1), cd)
    wide = sp.random(50, covariance.MAX_FEATURES + 1, density=0.05, random_state=0, format="csc")
    assert not covariance.applies(Problem(wide, np.arange(50.0), "squared", lam_ratio=0.1), cd)
    # Dense rows: S would cost far more than a pass over X to build.
    dense_rows = np.random.default_rng(0).normal(size=(300, 200))
    assert not covariance.applies(Problem(dense_rows, np.arange(300.0), "squared", lam_ratio=0.1), cd)


def test_cd_goes_on_where_the_covariances_do_not_certify(monkeypatch):
    X, y = _narrow(seed=3)
    problem = Problem(X, y, "squared", lam_ratio=0.01)
    real = covariance.solve
    # Stopped after one sweep: its point is far from tol, and CD takes over from it.
    monkeypatch.setattr(covariance, "solve", lambda p, w, tol, max_sweeps=1, record=None: real(p, w, tol, 1, record))
    result = CoordinateDescent(tol=1e-9, max_iter=1000).solve(problem)
    monkeypatch.undo()
    reference, _ = _solve(problem, False, monkeypatch)
    assert result.converged and result.relative_certificate <= 1e-9
    assert result.objective == pytest.approx(reference.objective, rel=1e-9)


def test_a_lasso_path_on_covariances_matches_single_solves():
    X, y = _narrow(seed=4)
    path = regularization_path(X, y, "squared", n_lams=12, lam_min_ratio=1e-3, tol=1e-9)
    assert path.converged.all()
    for k, lam in enumerate(path.lams):
        single = SparseLinearRegression(lam=lam, tol=1e-11, max_iter=5000).fit(X, y)
        problem = Problem(X, y, "squared", lam=lam)
        assert path.objectives[k] == pytest.approx(problem.objective(single.coef_, single.intercept_), rel=1e-8)
