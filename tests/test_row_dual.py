"""The residual made feasible row by row (``solvers/_row_dual``): its kernels, and the certificate
it gives on data whose violators are set in a few rows (hashed click features)."""

import numpy as np
import pytest
import scipy.sparse as sp
from _shared_data import random_binary_rows

from l1scale.problems import Problem
from l1scale.solvers._row_dual import balance_sum, shrink_factors
from l1scale.solvers.cd import CoordinateDescent


def _layout(X, dense):
    """(data, indices, indptr, dense) of X's column layout, as a Problem holds it."""
    if dense:
        A = np.asfortranarray(X)
        n, d = A.shape
        return A.ravel(order="F"), np.arange(n, dtype=np.int64), np.arange(0, n * (d + 1), n, dtype=np.int64), True
    C = sp.csc_matrix(X)
    return C.data, C.indices.astype(np.int64), C.indptr.astype(np.int64), False


@pytest.mark.parametrize("dense", [False, True])
def test_one_violator_comes_back_to_the_bound(dense):
    """Shrinking the rows a column's factors name brings its correlation to the bound exactly, and
    only the rows whose terms push the correlation past it shrink."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6)) * (rng.random((40, 6)) < 0.4)
    theta = rng.normal(size=40)
    arrays = _layout(X, dense)
    corr = X.T @ theta
    j = int(np.argmax(np.abs(corr)))
    bound = 0.5 * abs(corr[j])
    factors = np.ones(40)
    shrink_factors(*arrays, np.array([j]), corr[[j]], theta, bound, factors)
    shrunk = theta * factors
    assert abs(X[:, j] @ shrunk) == pytest.approx(bound, rel=1e-12)
    pushing = X[:, j] * theta * corr[j] > 0
    assert np.all(factors[~pushing] == 1.0) and np.all(factors[pushing] < 1.0)


def test_a_row_takes_the_least_factor_and_no_correlation_grows_past_its_own():
    """With several violators a row takes the smallest factor any of them asks for: each violator
    then ends at or inside the bound when the others' rows only pushed it the same way."""
    X = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    theta = np.array([2.0, 1.0, 1.0, 0.5])
    corr = X.T @ theta  # 3.0, 2.5
    factors = np.ones(4)
    shrink_factors(*_layout(X, False), np.arange(2), corr, theta, 1.0, factors)
    assert factors[1] == pytest.approx(min(1.0 / 3.0, 1.0 / 2.5))
    assert np.all(np.abs(X.T @ (theta * factors)) <= 1.0 + 1e-12)


def test_balance_sum_meets_the_intercepts_constraint_by_shrinking_only():
    rng = np.random.default_rng(1)
    theta = rng.normal(size=50) + 0.3
    before = theta.copy()
    balance_sum(theta)
    assert abs(theta.sum()) <= 1e-12 * np.abs(before).sum()
    assert np.all(np.abs(theta) <= np.abs(before)) and np.all(np.sign(theta) == np.sign(before))
    one_sign = np.abs(before)
    balance_sum(one_sign)
    assert np.all(one_sign == 0.0)


def _clicks(n=3000, d=60000, per_row=30, seed=0):
    """Hashed one-hot rows: most columns are set in one or two rows."""
    rng = np.random.default_rng(seed)
    X = random_binary_rows(rng, n, d, per_row)
    truth = np.zeros(d)
    truth[rng.choice(d, 100, replace=False)] = 3.0 * rng.normal(size=100)
    y = np.where(X @ truth + rng.logistic(size=n) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_certificate_on_local_violators_is_honest_and_comes_sooner(fit_intercept):
    """On hashed clicks at a loose tol the point certifies at an earlier full pass than the
    rescaled residual (fewer Newton steps), and its gap bounds the true suboptimality."""
    X, y = _clicks()

    def solve(row_dual, tol):
        solver = CoordinateDescent(tol=tol, max_iter=10000)
        solver.row_dual = row_dual
        return solver.solve(Problem(X, y, "logistic", lam_ratio=0.01, fit_intercept=fit_intercept))

    reference = solve(True, 1e-10)
    on, off = solve(True, 1e-1), solve(False, 1e-1)
    assert on.converged and on.relative_certificate <= 1e-1
    assert on.n_iter < off.n_iter
    # The gap is a certificate: P - P* never exceeds it.
    assert on.objective - reference.objective <= on.relative_certificate * on.objective * (1 + 1e-9)
    assert reference.relative_certificate <= 1e-10


def test_certificate_with_sample_weights_is_honest():
    """Rows of unequal weight (the point is c-weighted; zero-weight rows have no dual variable)."""
    X, y = _clicks(n=2000, d=40000, seed=2)
    weights = np.random.default_rng(2).choice([0.0, 0.5, 1.0, 3.0], size=y.shape[0])

    def problem():
        return Problem(X, y, "logistic", lam_ratio=0.01, sample_weight=weights)

    reference = CoordinateDescent(tol=1e-10, max_iter=10000).solve(problem())
    loose = CoordinateDescent(tol=1e-1, max_iter=10000).solve(problem())
    assert loose.converged and loose.relative_certificate <= 1e-1
    assert loose.objective - reference.objective <= loose.relative_certificate * loose.objective * (1 + 1e-9)
