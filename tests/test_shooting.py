"""Modified Shooting (Balakrishnan & Madigan, Algorithm 1) on quadratic sketches: it solves
quadratic L1 problems exactly (Lasso, elastic net, unpenalised coordinates), keeps Omega
consistent, obeys the paper's stopping rule, and Sketch round-trips its matrix."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning
from sklearn.linear_model import ElasticNet, Lasso

from l1scale.solvers.shooting import Sketch, omega, shooting


def _regression(n=80, d=12, seed=0, density=None, correlated=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if density is not None:
        X = X * (rng.random((n, d)) < density)
    if correlated:
        X[:, 1] = X[:, 0] + 0.2 * rng.normal(size=n)
        X[:, 2] = X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=n)
    w = np.zeros(d)
    w[:4] = [2.0, -1.5, 1.0, 0.5]
    y = X @ w + 0.5 * rng.normal(size=n)
    return X, y


def _quadratic(X, y):
    """Psi = -X^T X / 2, theta = X^T y: maximising b'Psi b + b'theta is least squares."""
    XtX = X.T @ X
    if sp.issparse(XtX):
        XtX = XtX.toarray()
    return -0.5 * np.asarray(XtX), np.asarray(X.T @ y).ravel()


def _sketch(psi, kind):
    return Sketch.from_matrix(psi if kind == "dense" else sp.csr_matrix(psi))


def _sk_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkConvergenceWarning)
        model.fit(X, y)
    return model.coef_


def _objective(psi, theta, gamma, rho, beta):
    """The maximised function, written out."""
    return beta @ psi @ beta + beta @ theta - np.sum(gamma * np.abs(beta)) - np.sum(rho * beta**2) / 2


# --------------------------------------------------------------------------- exact solutions


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("lam", [0.02, 0.1])
def test_lasso_equals_sklearn(kind, lam):
    X, y = _regression(density=0.6 if kind == "sparse" else None, correlated=True)
    n = X.shape[0]
    psi, theta = _quadratic(X, y)
    beta, om, sweeps, converged = shooting(_sketch(psi, kind), theta, n * lam, tol=1e-14, max_sweeps=100000)
    ref = _sk_fit(Lasso(alpha=lam, fit_intercept=False, tol=1e-14, max_iter=1000000), X, y)
    assert converged and sweeps > 1
    assert 0 < np.count_nonzero(ref) < X.shape[1]  # a genuinely sparse answer
    np.testing.assert_allclose(beta, ref, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(beta != 0, ref != 0)


def test_lasso_from_sparse_design_matrix():
    """X^T X of a scipy sparse X, kept sparse in the Sketch (only the pairs that occur)."""
    rng = np.random.default_rng(3)
    X = sp.random(200, 30, density=0.1, random_state=rng, format="csr")
    X.data = rng.normal(size=X.nnz)
    y = X @ np.r_[np.ones(5), np.zeros(25)] + 0.1 * rng.normal(size=200)
    lam = 0.005
    XtX = (X.T @ X).tocsc()
    assert XtX.nnz < 30 * 30  # some pairs never occur together
    sk = Sketch.from_matrix(-0.5 * XtX)
    assert not sk.dense
    beta, _, _, converged = shooting(sk, X.T @ y, 200 * lam, tol=1e-14, max_sweeps=100000)
    ref = _sk_fit(Lasso(alpha=lam, fit_intercept=False, tol=1e-14, max_iter=1000000), X.toarray(), y)
    assert converged
    np.testing.assert_allclose(beta, ref, rtol=0, atol=1e-10)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_unpenalised_coordinate_has_zero_gradient(kind):
    X, y = _regression(seed=1)
    X[:, 0] = 1.0  # an intercept column
    y = y + 5.0
    n, d = X.shape
    psi, theta = _quadratic(X, y)
    lam = 0.5  # large: most penalised coordinates are zero
    gamma = np.full(d, n * lam)
    gamma[0] = 0.0
    beta, _, _, converged = shooting(_sketch(psi, kind), theta, gamma, tol=1e-14, max_sweeps=100000)
    assert converged
    grad = 2 * psi @ beta + theta  # gradient of the smooth part
    assert beta[0] != 0
    assert abs(grad[0]) <= 1e-9 * np.abs(theta).max()
    # KKT on the penalised coordinates too: |grad_j| <= gamma_j at zeros, = gamma_j sign at nonzeros.
    zero = beta == 0
    assert zero[1:].any()
    assert np.all(np.abs(grad[zero]) <= gamma[zero] * (1 + 1e-10))
    nz = ~zero
    np.testing.assert_allclose(grad[nz], gamma[nz] * np.sign(beta[nz]), atol=1e-9 * np.abs(theta).max())
    # Cross-check the whole solution with a penalty of 0 on column 0 through sklearn:
    # the unpenalised column is profiled out by centring (column 0 is constant).
    ref = _sk_fit(Lasso(alpha=lam, fit_intercept=True, tol=1e-14, max_iter=1000000), X[:, 1:], y)
    np.testing.assert_allclose(beta[1:], ref, atol=1e-9)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_elastic_net_equals_sklearn(kind):
    X, y = _regression(seed=2, correlated=True)
    n = X.shape[0]
    psi, theta = _quadratic(X, y)
    alpha, l1_ratio = 0.2, 0.4
    gamma, rho = n * alpha * l1_ratio, n * alpha * (1 - l1_ratio)
    beta, _, _, converged = shooting(_sketch(psi, kind), theta, gamma, rho=rho, tol=1e-14, max_sweeps=100000)
    ref = _sk_fit(ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-14, max_iter=1000000), X, y)
    assert converged
    np.testing.assert_allclose(beta, ref, rtol=0, atol=1e-10)
    # rho changes the answer: the pure-L1 solution at the same gamma is a different point.
    lasso, _, _, _ = shooting(_sketch(psi, kind), theta, gamma, tol=1e-14, max_sweeps=100000)
    assert np.abs(lasso - beta).max() > 1e-3


def test_result_beats_perturbations():
    """The returned point maximises the objective: no coordinate move improves it."""
    X, y = _regression(seed=4, correlated=True)
    psi, theta = _quadratic(X, y)
    gamma = np.linspace(1.0, 20.0, X.shape[1])
    rho = np.full(X.shape[1], 3.0)
    beta, _, _, _ = shooting(Sketch.from_matrix(psi), theta, gamma, rho=rho, tol=1e-14, max_sweeps=100000)
    best = _objective(psi, theta, gamma, rho, beta)
    for j in range(X.shape[1]):
        for step in (1e-4, -1e-4):
            b = beta.copy()
            b[j] += step
            assert _objective(psi, theta, gamma, rho, b) <= best + 1e-12 * abs(best)


# --------------------------------------------------------------------------- Omega and stopping


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("tol", [1e-2, 1e-12])
def test_omega_invariant_after_return(kind, tol):
    X, y = _regression(seed=5, density=0.7, correlated=True)
    psi, theta = _quadratic(X, y)
    sk = _sketch(psi, kind)
    rng = np.random.default_rng(0)
    beta0 = rng.normal(size=X.shape[1])  # a warm start far from the answer
    beta, om, _, _ = shooting(sk, theta, 3.0, beta0, tol=tol)
    full = sk.to_dense()
    off = full - np.diag(np.diag(full))
    np.testing.assert_allclose(om, 2 * off @ beta + theta, rtol=1e-12, atol=1e-10 * np.abs(theta).max())
    np.testing.assert_allclose(
        omega(sk, theta, beta), 2 * off @ beta + theta, rtol=1e-12, atol=1e-12 * np.abs(theta).max()
    )
    assert not np.array_equal(beta, beta0)


def test_inputs_not_modified():
    X, y = _regression(seed=6)
    psi, theta = _quadratic(X, y)
    beta0 = np.ones(X.shape[1])
    keep_b, keep_t = beta0.copy(), theta.copy()
    sk = Sketch.from_matrix(psi)
    before = sk.to_dense()
    shooting(sk, theta, 2.0, beta0)
    np.testing.assert_array_equal(beta0, keep_b)
    np.testing.assert_array_equal(theta, keep_t)
    np.testing.assert_array_equal(sk.to_dense(), before)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_warm_start_at_solution_takes_one_sweep(kind):
    X, y = _regression(seed=7, correlated=True)
    psi, theta = _quadratic(X, y)
    sk = _sketch(psi, kind)
    beta, _, sweeps, _ = shooting(sk, theta, 10.0, tol=1e-14, max_sweeps=100000)
    assert sweeps > 1
    again, _, sweeps2, converged = shooting(sk, theta, 10.0, beta, tol=1e-6)
    assert converged and sweeps2 == 1
    np.testing.assert_allclose(again, beta, rtol=0, atol=1e-10)


def test_loose_tol_stops_earlier_and_farther():
    """The paper's rule ||beta_new - beta_old|| / ||beta_old|| < tol per sweep: a loose tol
    stops after fewer sweeps, farther from the exact answer."""
    X, y = _regression(n=60, d=10, seed=8, correlated=True)
    n = X.shape[0]
    psi, theta = _quadratic(X, y)
    lam = 0.01
    exact = _sk_fit(Lasso(alpha=lam, fit_intercept=False, tol=1e-14, max_iter=1000000), X, y)
    sk = Sketch.from_matrix(psi)
    loose, _, s_loose, c_loose = shooting(sk, theta, n * lam, tol=1e-2)
    tight, _, s_tight, c_tight = shooting(sk, theta, n * lam, tol=1e-12, max_sweeps=100000)
    assert c_loose and c_tight
    assert s_loose < s_tight
    err_loose, err_tight = np.abs(loose - exact).max(), np.abs(tight - exact).max()
    assert err_tight < 1e-9
    assert err_loose > 100 * err_tight
    assert err_loose > 1e-8


def test_max_sweeps_reports_not_converged():
    X, y = _regression(n=60, d=10, seed=8, correlated=True)
    psi, theta = _quadratic(X, y)
    beta, _, sweeps, converged = shooting(Sketch.from_matrix(psi), theta, 0.6, tol=1e-14, max_sweeps=2)
    assert sweeps == 2 and not converged


def test_coordinate_without_curvature_stays_zero():
    """A column with no data (Psi_jj = 0) is left at zero rather than divided by zero."""
    psi = np.diag([-1.0, 0.0, -2.0])
    theta = np.array([3.0, 5.0, -4.0])
    beta, _, _, converged = shooting(Sketch.from_matrix(psi), theta, 1.0)
    assert converged
    # Coordinate-wise: beta_j = (theta_j -+ gamma) / (-2 Psi_jj).
    np.testing.assert_allclose(beta, [(3.0 - 1.0) / 2.0, 0.0, (-4.0 + 1.0) / 4.0])


def test_negative_gamma_or_rho_raises():
    sk = Sketch.from_matrix(-np.eye(3))
    theta = np.ones(3)
    with pytest.raises(ValueError, match="non-negative"):
        shooting(sk, theta, -1.0)
    with pytest.raises(ValueError, match="non-negative"):
        shooting(sk, theta, np.array([1.0, -0.5, 1.0]))
    with pytest.raises(ValueError, match="non-negative"):
        shooting(sk, theta, 1.0, rho=-1.0)


# --------------------------------------------------------------------------- Sketch


@pytest.mark.parametrize("m", [1, 2, 7, 25])
@pytest.mark.parametrize("kind", ["dense", "csr", "csc", "coo"])
def test_sketch_round_trip(m, kind):
    rng = np.random.default_rng(m)
    A = rng.normal(size=(m, m)) * (rng.random((m, m)) < 0.4)
    A = A + A.T
    if m > 1:
        A[0, 0] = 0.0  # a zero diagonal entry
    src = A if kind == "dense" else getattr(sp, f"{kind}_matrix")(A)
    sk = Sketch.from_matrix(src)
    assert sk.size == m
    assert sk.dense == (kind == "dense")
    np.testing.assert_array_equal(sk.to_dense(), A)
    np.testing.assert_array_equal(sk.diag, np.diag(A))
    if kind != "dense":  # only the pairs that occur are stored
        assert sk.used == np.count_nonzero(A - np.diag(np.diag(A)))


def test_sketch_does_not_alias_input():
    A = -np.eye(4) - 0.1
    sk = Sketch.from_matrix(A)
    A[1, 2] = 99.0
    assert sk.to_dense()[1, 2] == pytest.approx(-0.1)


def test_zeros_sketches():
    for sk in (Sketch.zeros_dense(5), Sketch.zeros_sparse(5)):
        np.testing.assert_array_equal(sk.to_dense(), np.zeros((5, 5)))
        beta, om, _, converged = shooting(sk, np.arange(5.0), 0.5)
        np.testing.assert_array_equal(beta, 0)  # no curvature anywhere
        np.testing.assert_array_equal(om, np.arange(5.0))
