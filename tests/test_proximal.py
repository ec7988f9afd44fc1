"""ISTA, FISTA and multi-scale FISTA (seed 2, Qin et al. Algorithm 1): agreement with the
reference coordinate descent, honest certificates, ISTA's monotone objective, the
multi-scale gain on badly scaled columns (the paper's Table 7), and a9a."""

import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _shared_data import DATA

from l1scale.exceptions import ConvergenceWarning
from l1scale.problems import Problem
from l1scale.solvers.cd import CoordinateDescent
from l1scale.solvers.proximal import FISTA, ISTA, MultiscaleFISTA

SOLVERS = [ISTA, FISTA, MultiscaleFISTA]


def _data(loss, n=120, d=30, seed=0, density=0.4, scales=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < density)
    X[:, 1] = X[:, 2] + 0.3 * rng.normal(size=n)  # two strongly correlated columns
    w = np.zeros(d)
    w[1:6] = [1.5, -2.0, 1.0, 0.5, -0.8]
    z = X @ w - 0.5 + 0.5 * rng.normal(size=n)
    y = z if loss == "squared" else np.where(z > 0, 1.0, -1.0)
    if scales is not None:
        X = X * scales
    return X, y


def _solve(solver, problem, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return solver(**kw).solve(problem)


def _reference(problem):
    return CoordinateDescent(tol=1e-12, max_iter=500).solve(problem).objective


# ------------------------------------------------------------------ oracle: the CD optimum
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("layout", ["dense", "csc"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_reaches_cd_objective(solver, loss, layout, fit_intercept, l1_ratio):
    X, y = _data(loss)
    X = X if layout == "dense" else sp.csc_matrix(X)
    p = Problem(X, y, loss, lam_ratio=0.05, l1_ratio=l1_ratio, fit_intercept=fit_intercept)
    res = _solve(solver, p, tol=1e-10, max_iter=20000)
    ref = _reference(p)
    assert res.converged and res.stop_reason == "duality_gap"
    assert res.relative_certificate <= 1e-10
    assert res.objective == pytest.approx(ref, rel=1e-8)
    assert res.objective >= ref * (1 - 1e-12)
    assert res.n_iter == len(res.history) - 1
    assert 0 < res.nnz < X.shape[1]


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("loss", ["squared_hinge", "probit"])
def test_other_smooth_losses(solver, loss):
    X, y = _data(loss, seed=1)
    p = Problem(sp.csc_matrix(X), y, loss, lam_ratio=0.05, fit_intercept=True)
    res = _solve(solver, p, tol=1e-9, max_iter=20000)
    assert res.converged and res.certificate_name == ("kkt" if loss == "probit" else "duality_gap")
    assert res.objective == pytest.approx(_reference(p), rel=1e-8)


# ------------------------------------------------------------------ certificates and history
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_certificate_is_honest(solver, fit_intercept):
    X, y = _data("logistic", seed=2)
    p = Problem(sp.csc_matrix(X), y, "logistic", lam_ratio=0.02, fit_intercept=fit_intercept)
    res = _solve(solver, p, tol=1e-6)
    # Recomputed by the problem from the returned model alone (which re-optimises b).
    cert = p.certificate(res.coef, res.intercept)
    assert res.certificate == pytest.approx(cert.value, rel=1e-6, abs=1e-14)
    assert cert.relative <= 1e-6
    assert res.objective == pytest.approx(p.objective(res.coef, res.intercept), rel=1e-12)
    # The gap bounds the true suboptimality.
    assert res.objective - _reference(p) <= res.certificate + 1e-14
    assert res.history.certificate[-1] == res.certificate


def test_ista_objective_never_increases():
    for loss, fit_intercept in [("logistic", True), ("squared", False), ("squared_hinge", True)]:
        X, y = _data(loss, seed=3)
        p = Problem(X, y, loss, lam_ratio=0.02, l1_ratio=0.8, fit_intercept=fit_intercept)
        obj = np.array(_solve(ISTA, p, tol=1e-10, max_iter=20000).history.objective)
        assert len(obj) > 20
        assert (np.diff(obj) <= 1e-14 * obj[:-1]).all()


def test_history_and_data_accesses():
    X, y = _data("logistic", seed=4)
    p = Problem(sp.csc_matrix(X), y, "logistic", lam_ratio=0.05)
    res = _solve(FISTA, p, tol=1e-8, check_every=5)
    h = res.history
    assert len(h) == res.n_iter + 1
    cert = np.array(h.certificate)
    assert np.isfinite(cert[::5]).all() and np.isnan(cert[1:-1][np.arange(1, len(cert) - 1) % 5 != 0]).all()
    # Nonzeros of X read: at least two products per iteration (X^T r, X p), more when backtracking.
    steps = np.diff(h.data_accesses)
    assert (steps % p.columns.nnz == 0).all() and (steps >= 2 * p.columns.nnz).all()
    assert np.all(np.diff(h.time) >= 0)


def test_max_iter_warns_and_certifies_last_point():
    X, y = _data("logistic", seed=5)
    p = Problem(X, y, "logistic", lam_ratio=0.01)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        res = FISTA(tol=1e-14, max_iter=7, check_every=3).solve(p)
    assert res.n_iter == 7 and not res.converged and res.stop_reason == "max_iter"
    assert np.isfinite(res.history.certificate[-1])
    assert res.certificate == pytest.approx(p.certificate(res.coef, res.intercept).value, rel=1e-6)


def test_warm_start_at_optimum_stops_at_once():
    X, y = _data("logistic", seed=6)
    p = Problem(X, y, "logistic", lam_ratio=0.05)
    cd = CoordinateDescent(tol=1e-12).solve(p)
    res = _solve(MultiscaleFISTA, p, tol=1e-8)
    warm = MultiscaleFISTA(tol=1e-8).solve(p, coef_init=cd.coef, intercept_init=cd.intercept)
    assert warm.n_iter == 0 and warm.converged
    assert res.n_iter > 0


def test_bad_options_are_named():
    X, y = _data("logistic")
    p = Problem(X, y, "logistic", lam_ratio=0.1)
    with pytest.raises(ValueError, match="hessian"):
        MultiscaleFISTA(hessian="eq9").solve(p)
    with pytest.raises(ValueError, match="backtrack"):
        FISTA(backtrack=1.5).solve(p)
    with pytest.raises(ValueError, match="check_every"):
        ISTA(check_every=0).solve(p)
    with pytest.raises(ValueError, match="hinge"):
        FISTA().solve(Problem(X, y, "hinge", lam_ratio=0.1, fit_intercept=False))


# ------------------------------------------------------------------ multi-scale gain (Table 7)
@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_multiscale_needs_fewer_iterations_on_badly_scaled_columns(loss, fit_intercept):
    # Columns scaled by 10^k, k in {-2, ..., 2}: plain FISTA's single step is set by the
    # largest column; the diagonal scaling gives each column its own.
    rng = np.random.default_rng(7)
    X, y = _data(loss, n=300, d=60, seed=7, density=0.3, scales=10.0 ** rng.integers(-2, 3, size=60))
    p = Problem(X, y, loss, lam_ratio=0.05, fit_intercept=fit_intercept)
    plain = _solve(FISTA, p, tol=1e-6, max_iter=50000)
    ratios = {}
    for hessian in ("eq7", "eq8"):
        scaled = _solve(MultiscaleFISTA, p, tol=1e-6, max_iter=50000, hessian=hessian)
        assert scaled.objective == pytest.approx(plain.objective, rel=1e-5)
        ratios[hessian] = scaled.n_iter / plain.n_iter
    print(
        f"\n{loss} intercept={fit_intercept}: FISTA {plain.n_iter} iterations; multi-scale/FISTA "
        + ", ".join(f"{k} {100 * v:.1f}%" for k, v in ratios.items())
    )
    # The paper's Table 7 reports 20-62% on mnist10k and gisette.
    assert ratios["eq7"] <= 0.62 and ratios["eq8"] <= 0.62


# ------------------------------------------------------------------ a9a
@pytest.fixture(scope="module")
def a9a():
    full = os.path.join(DATA, "a9a", "a9a.bz2")
    if not os.path.exists(full):
        pytest.skip(f"a9a not found under {DATA}")
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(full, n_features=123)
    return X, np.where(y > 0, 1.0, -1.0)


@pytest.mark.parametrize("lam_ratio", [0.1, 0.01])
def test_a9a_matches_cd(a9a, lam_ratio):
    X, y = a9a
    p = Problem(X, y, "logistic", lam_ratio=lam_ratio, fit_intercept=True)
    ref = _reference(p)
    iters = {}
    for solver in (FISTA, MultiscaleFISTA):
        res = _solve(solver, p, tol=1e-7, max_iter=3000, check_every=10)
        assert res.objective == pytest.approx(ref, rel=1e-8)
        iters[solver.name] = res.n_iter
    # Reported, not asserted: on a9a's 0/1 features the two are within ~20% of each other
    # at a relative gap of 1e-7 (multi-scale reaches the objective sooner).
    print(f"\na9a lam_ratio={lam_ratio}: iterations {iters}")


@pytest.mark.parametrize(
    "name, path, n_features, max_iter",
    [
        ("reuters earn", "reuters21578/modapte_earn_train.svm.bz2", 27901, 2000),
        ("mnist10k", "mnist/mnist10k_3vsrest.bz2", 784, 1500),
    ],
)
def test_earn_and_mnist10k_match_cd(name, path, n_features, max_iter):
    """Issue 5's other two data sets: the objective of CD to 1e-8 (mnist10k's plain FISTA
    needs ~5000 iterations for a 1e-7 gap, but has CD's objective long before)."""
    full = os.path.join(DATA, path)
    if not os.path.exists(full):
        pytest.skip(f"{name} not found under {DATA}")
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(full, n_features=n_features)
    p = Problem(X, np.where(y > 0, 1.0, -1.0), "logistic", lam_ratio=0.1)
    ref = _reference(p)
    for solver in (FISTA, MultiscaleFISTA):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = solver(tol=1e-7, max_iter=max_iter, check_every=10).solve(p)
        assert res.objective == pytest.approx(ref, rel=1e-8), (name, solver.name, res.n_iter)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, path, n_features, max_iter",
    [
        ("a9a", "a9a/a9a.bz2", 123, 3000),
        ("mnist10k", "mnist/mnist10k_3vsrest.bz2", 784, 1500),
    ],
)
def test_dense_input_reaches_cd(name, path, n_features, max_iter):
    """Issue 5's 'dense and sparse input': the same data as a dense array, for FISTA,
    multi-scale FISTA and CGD (the dense branch of the column accessor)."""
    from l1scale.solvers.cgd import CoordinateGradientDescent

    full = os.path.join(DATA, path)
    if not os.path.exists(full):
        pytest.skip(f"{name} not found under {DATA}")
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(full, n_features=n_features)
    p = Problem(X.toarray(), np.where(y > 0, 1.0, -1.0), "logistic", lam_ratio=0.1)
    ref = _reference(p)
    for solver, kw in (
        (FISTA, {"check_every": 10}),
        (MultiscaleFISTA, {"check_every": 10}),
        (CoordinateGradientDescent, {}),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = solver(tol=1e-7, max_iter=max_iter, **kw).solve(p)
        assert res.objective == pytest.approx(ref, rel=1e-8), (name, solver.name, res.n_iter)
