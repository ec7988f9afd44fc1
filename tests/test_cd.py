"""The batch reference solver (newGLMNET coordinate descent): convergence certificates on
every loss and layout, agreement with liblinear and scikit-learn, and its contract."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _certify import suboptimality_bound
from _shared_data import load_svmlight_pm as _svmlight

from l1scale.exceptions import ConvergenceWarning
from l1scale.problems import Problem
from l1scale.solvers.cd import CoordinateDescent

LOSSES = ["logistic", "squared", "squared_hinge", "probit"]


def _data(loss, n=150, d=40, seed=0, density=0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < density)
    X[:, 0] = 1.0  # a constant column, which competes with the intercept
    X[:, 1] = X[:, 2] + 0.3 * rng.normal(size=n)  # two strongly correlated columns
    w = np.zeros(d)
    w[1:6] = [1.5, -2.0, 1.0, 0.5, -0.8]
    z = X @ w - 0.7 + 0.5 * rng.normal(size=n)
    y = z if loss == "squared" else np.where(z > 0, 1.0, -1.0)
    return X, y


def _layout(X, layout, dtype):
    X = X.astype(dtype)
    return X if layout == "dense" else getattr(sp, f"{layout}_matrix")(X)


def _solve(problem, tol=1e-10, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return CoordinateDescent(tol=tol, **kw).solve(problem)


# ------------------------------------------------------------------ certificates
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("layout", ["dense", "csr", "csc"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_reaches_relative_gap_1e_10(loss, fit_intercept, layout, dtype):
    X, y = _data(loss)
    p = Problem(_layout(X, layout, dtype), y, loss, lam_ratio=0.05, fit_intercept=fit_intercept)
    res = _solve(p)
    assert res.converged and res.stop_reason == res.certificate_name
    assert res.certificate_name == ("kkt" if loss == "probit" else "duality_gap")
    assert res.relative_certificate <= 1e-10
    # Checked afresh by the problem, from the returned model and its dual point alone.
    gap = p.objective(res.coef, res.intercept) - p.dual_value(res.dual_point) if res.dual_point is not None else None
    if gap is not None:
        assert gap == pytest.approx(res.certificate, rel=1e-6, abs=1e-12 * abs(res.objective))
    assert suboptimality_bound(p, res.coef, res.intercept) <= 1e-9
    assert res.objective == pytest.approx(p.objective(res.coef, res.intercept), rel=1e-12)
    assert 0 < res.nnz < X.shape[1]


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_elastic_net_and_small_lam_reach_relative_gap_1e_10(loss, fit_intercept):
    X, y = _data(loss, seed=1)
    for lam_ratio, l1_ratio in [(0.05, 0.5), (0.002, 1.0), (0.002, 0.2)]:
        p = Problem(sp.csc_matrix(X), y, loss, lam_ratio=lam_ratio, l1_ratio=l1_ratio, fit_intercept=fit_intercept)
        res = _solve(p, max_iter=500)
        assert res.relative_certificate <= 1e-10
        assert suboptimality_bound(p, res.coef, res.intercept) <= 1e-9


@pytest.mark.parametrize("loss", LOSSES)
def test_layouts_and_dtypes_give_the_same_model(loss):
    X, y = _data(loss, seed=2)
    models = [
        _solve(Problem(_layout(X, lay, dt), y, loss, lam_ratio=0.05), tol=1e-12)
        for lay in ("dense", "csr", "csc")
        for dt in (np.float64, np.float32)
    ]
    for m in models[1:]:
        # float32 input is rounded once; the solves then agree to their tolerance.
        np.testing.assert_allclose(m.coef, models[0].coef, atol=1e-5)


def test_objective_history_decreases():
    X, y = _data("logistic", n=300, d=60, seed=3)
    res = _solve(Problem(X, y, "logistic", lam_ratio=0.01))
    P = np.asarray(res.history.objective)
    assert (np.diff(P) <= 1e-14 * P[0]).all()
    assert len(res.history) == res.n_iter + 1
    t, acc = np.asarray(res.history.time), np.asarray(res.history.data_accesses)
    assert (np.diff(t) >= 0).all() and (np.diff(acc) > 0).all()
    cert = np.asarray(res.history.certificate)
    assert np.isfinite(cert[-1]) and cert[-1] == res.certificate


def test_no_weight_left_at_a_rounding_residue():
    """A weight soft-thresholded to zero must be exactly 0.0: a residue like 1e-17
    carries the full violation lam and, being below the step floor, never moved
    (the solver stalled at relative gap ~1e-1 on a9a at 0.001 lam_max)."""
    rng = np.random.default_rng(7)
    n, d = 2000, 60
    # One-hot blocks (categorical features, as in a9a): every block sums to the constant.
    blocks = [rng.integers(0, k, size=n) for k in (5, 7, 9, 11, 13, 15)]
    cols = [(b[:, None] == np.arange(b.max() + 1)).astype(float) for b in blocks]
    X = np.hstack(cols)[:, :d]
    y = np.where(X @ rng.normal(size=X.shape[1]) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    p = Problem(sp.csr_matrix(X), y, "logistic", lam_ratio=1e-3, fit_intercept=False)
    res = _solve(p, max_iter=100)
    assert res.relative_certificate <= 1e-10
    w = res.coef
    assert not ((w != 0) & (np.abs(w) < 1e-12)).any()


# ------------------------------------------------------------------ oracles


@pytest.fixture(scope="module")
def a9a():
    return _svmlight("a9a", "a9a/a9a.bz2", 123)


@pytest.fixture(scope="module")
def earn():
    return _svmlight("reuters earn", "reuters21578/modapte_earn_train.svm.bz2", 27901)


def _liblinear_objective(problem, X, y):
    ll = pytest.importorskip("liblinear.liblinearutil")
    C = 1.0 / (problem.n_samples * problem.lam)
    model = ll.train(ll.problem(y, X), ll.parameter(f"-s 6 -c {C!r} -e 1e-8 -q"))
    w = np.asarray(model.get_decfun()[0]) * (1.0 if model.get_labels()[0] == 1 else -1.0)
    return problem.objective(w), w


@pytest.mark.slow
@pytest.mark.parametrize("lam_ratio", [0.1, 0.01, 0.001])
def test_matches_liblinear_on_a9a(a9a, lam_ratio):
    X, y = a9a
    p = Problem(X, y, "logistic", lam_ratio=lam_ratio, fit_intercept=False)
    res = _solve(p, max_iter=200)
    P_lib, _ = _liblinear_objective(p, X, y)
    assert res.objective == pytest.approx(P_lib, rel=1e-8)
    assert res.objective <= P_lib * (1 + 1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("lam_ratio", [0.1, 0.01])
def test_matches_liblinear_on_reuters_earn(earn, lam_ratio):
    X, y = earn
    p = Problem(X, y, "logistic", lam_ratio=lam_ratio, fit_intercept=False)
    res = _solve(p, tol=1e-13, max_iter=200)  # tol bounds the suboptimality: liblinear's is ~1e-12
    P_lib, w_lib = _liblinear_objective(p, X, y)
    assert res.objective == pytest.approx(P_lib, rel=1e-8)
    assert res.objective <= P_lib * (1 + 1e-12)
    assert set(np.flatnonzero(res.coef)) == set(np.flatnonzero(np.abs(w_lib) > 1e-6))


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("layout", ["dense", "csc"])
def test_matches_sklearn_lasso(fit_intercept, layout):
    from sklearn.linear_model import Lasso

    X, y = _data("squared", n=200, d=30, seed=4)
    lam = 0.05
    ref = Lasso(alpha=lam, fit_intercept=fit_intercept, tol=1e-14, max_iter=200_000).fit(X, y)
    res = _solve(Problem(_layout(X, layout, np.float64), y, "squared", lam=lam, fit_intercept=fit_intercept), tol=1e-13)
    np.testing.assert_allclose(res.coef, ref.coef_, atol=1e-6)
    assert res.intercept == pytest.approx(ref.intercept_, abs=1e-6)
    assert np.array_equal(res.coef != 0, ref.coef_ != 0)


@pytest.mark.parametrize("l1_ratio", [0.2, 0.7])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_matches_sklearn_elastic_net(l1_ratio, fit_intercept):
    from sklearn.linear_model import ElasticNet

    X, y = _data("squared", n=200, d=30, seed=5)
    lam = 0.05
    ref = ElasticNet(alpha=lam, l1_ratio=l1_ratio, fit_intercept=fit_intercept, tol=1e-14, max_iter=200_000).fit(X, y)
    res = _solve(
        Problem(sp.csr_matrix(X), y, "squared", lam=lam, l1_ratio=l1_ratio, fit_intercept=fit_intercept), tol=1e-13
    )
    np.testing.assert_allclose(res.coef, ref.coef_, atol=1e-6)
    assert res.intercept == pytest.approx(ref.intercept_, abs=1e-6)


# ------------------------------------------------------------------ contract
@pytest.mark.parametrize("loss", LOSSES)
def test_integer_sample_weights_equal_row_repetition(loss):
    X, y = _data(loss, n=120, d=25, seed=6)
    s = np.random.default_rng(6).integers(0, 4, size=X.shape[0])  # zero weight = row left out
    weighted = Problem(sp.csr_matrix(X), y, loss, lam=0.02, sample_weight=s)
    repeated = Problem(sp.csr_matrix(np.repeat(X, s, axis=0)), np.repeat(y, s), loss, lam=0.02)
    a, b = _solve(weighted, tol=1e-13), _solve(repeated, tol=1e-13)
    assert a.objective == pytest.approx(b.objective, rel=1e-12)
    np.testing.assert_allclose(a.coef, b.coef, atol=1e-7)
    assert a.intercept == pytest.approx(b.intercept, abs=1e-7)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_warm_start_from_the_solution_stops_at_once(loss, fit_intercept):
    X, y = _data(loss, seed=8)
    p = Problem(X, y, loss, lam_ratio=0.05, fit_intercept=fit_intercept)
    first = _solve(p, tol=1e-10)
    again = CoordinateDescent(tol=1e-9).solve(p, coef_init=first.coef, intercept_init=first.intercept)
    assert again.converged and again.n_iter <= 1
    # At most the support-Newton step of its dual point: P only falls, the model barely moves
    # (tol bounds the suboptimality, so the coefficients agree to about its square root).
    assert again.objective <= first.objective * (1 + 1e-14)
    np.testing.assert_allclose(again.coef, first.coef, atol=1e-4)
    # A warm start near the solution also converges in few iterations.
    near = CoordinateDescent(tol=1e-10).solve(p, coef_init=first.coef * 1.01, intercept_init=first.intercept)
    assert near.converged and near.n_iter <= first.n_iter


def test_convergence_warning_when_max_iter_is_too_small():
    X, y = _data("logistic", seed=9)
    p = Problem(X, y, "logistic", lam_ratio=0.01)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        res = CoordinateDescent(tol=1e-12, max_iter=2).solve(p)
    assert not res.converged and res.stop_reason == "max_iter" and res.n_iter == 2
    # The reported certificate is that of the returned model.
    cert = p.certificate(res.coef, res.intercept)
    assert res.relative_certificate == pytest.approx(cert.relative, rel=1e-6)
    assert res.relative_certificate > 1e-12


def test_deterministic_for_a_fixed_random_state():
    X, y = _data("logistic", n=300, d=60, seed=10)
    p = Problem(sp.csc_matrix(X), y, "logistic", lam_ratio=0.01)
    a = CoordinateDescent(tol=1e-6, random_state=3).solve(p)
    b = CoordinateDescent(tol=1e-6, random_state=3).solve(p)
    c = CoordinateDescent(tol=1e-6, random_state=4).solve(p)
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.intercept == b.intercept and a.history.objective == b.history.objective
    # Another seed visits coordinates in another order: another iterate, same optimum.
    assert not np.array_equal(a.coef, c.coef)
    assert c.objective == pytest.approx(a.objective, rel=1e-5)


def test_lam_above_lam_max_gives_zero_at_once():
    X, y = _data("logistic", seed=11)
    for fit_intercept in (False, True):
        with pytest.warns(UserWarning, match="lam_ratio=1.5 >= 1"):  # an all-zero model, as asked
            p = Problem(X, y, "logistic", lam_ratio=1.5, fit_intercept=fit_intercept)
        res = _solve(p)
        assert res.nnz == 0 and res.n_iter <= 1 and res.converged
        if fit_intercept:
            assert res.intercept == pytest.approx(np.log(np.mean(y > 0) / np.mean(y < 0)), rel=1e-10)


def test_refuses_a_non_smooth_loss():
    X, y = _data("logistic", seed=12)
    with pytest.raises(ValueError, match="smooth"):
        CoordinateDescent().solve(Problem(X, y, "hinge", lam=0.1, fit_intercept=False))


def test_callback_sees_every_iteration():
    X, y = _data("logistic", seed=13)
    seen = []
    res = CoordinateDescent(tol=1e-8, callback=lambda it, h: seen.append((it, len(h)))).solve(
        Problem(X, y, "logistic", lam_ratio=0.05)
    )
    assert [it for it, _ in seen] == list(range(res.n_iter + 1))
    assert all(n == it + 1 for it, n in seen)
