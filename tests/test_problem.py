"""Problem: lam_max, duality gap and KKT certificates, input validation."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale.problems import Problem, lam_max
from l1scale.solvers.cd import CoordinateDescent

CONJUGATE = ["logistic", "squared", "squared_hinge"]


def _data(loss, n=80, d=12, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.3] = 0.0
    w = np.zeros(d)
    w[:3] = [1.5, -2.0, 1.0]
    z = X @ w + 0.4 + 0.5 * rng.normal(size=n)
    y = z if loss == "squared" else np.where(z > 0, 1.0, -1.0)
    return (sp.csr_matrix(X) if sparse else X), y


def _solve(problem, tol=1e-12, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return CoordinateDescent(tol=tol, max_iter=500, **kw).solve(problem)


# ------------------------------------------------------------------ lam_max
@pytest.mark.parametrize("loss", ["logistic", "squared", "squared_hinge", "probit"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_lam_max_is_where_zero_stops_being_optimal(loss, fit_intercept):
    X, y = _data(loss)
    with pytest.warns(UserWarning, match="lam_ratio=1.0 >= 1"):  # w = 0 asked for: said so
        at = Problem(X, y, loss, lam_ratio=1.0, fit_intercept=fit_intercept)
    assert at.lam == pytest.approx(lam_max(X, y, loss, fit_intercept=fit_intercept), rel=1e-14)
    res = _solve(at)
    assert res.nnz == 0 and res.n_iter <= 1
    below = Problem(X, y, loss, lam_ratio=0.99, fit_intercept=fit_intercept)
    res = _solve(below)
    assert res.nnz >= 1
    assert below.objective(res.coef, res.intercept) < below.objective(np.zeros(X.shape[1]), res.intercept) - 1e-12


def test_lam_max_formula_without_and_with_intercept():
    X, y = _data("logistic")
    n = X.shape[0]
    # Without intercept: ||X^T loss'(y, 0)||_inf / n = ||X^T y||_inf / (2 n) for the logistic loss.
    assert lam_max(X, y, "logistic", fit_intercept=False) == pytest.approx(np.abs(X.T @ y).max() / (2 * n), rel=1e-14)
    # With intercept, at b0 = log(n+/n-): loss' = -y / (1 + exp(y b0)).
    b0 = np.log(np.mean(y > 0) / np.mean(y < 0))
    r = -y / (1 + np.exp(y * b0))
    assert lam_max(X, y, "logistic") == pytest.approx(np.abs(X.T @ r).max() / n, rel=1e-10)
    # Squared loss with intercept: centred y.
    Xs, ys = _data("squared")
    assert lam_max(Xs, ys, "squared") == pytest.approx(np.abs(Xs.T @ (ys - ys.mean())).max() / n, rel=1e-12)
    # The l1_ratio divides it; sample weights enter as a weighted mean.
    assert lam_max(X, y, "logistic", l1_ratio=0.5) == pytest.approx(2 * lam_max(X, y, "logistic"), rel=1e-14)
    s = np.random.default_rng(0).integers(1, 4, size=n)
    assert lam_max(X, y, sample_weight=s) == pytest.approx(lam_max(np.repeat(X, s, axis=0), np.repeat(y, s)), rel=1e-10)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_null_gradient_and_column_norms_from_one_read(sparse, fit_intercept):
    """The gradient at w = 0 (and the intercept-only optimum) and the weighted column norms
    come from one pass; lam_max and a solve from w = 0 read them."""
    X, y = _data("logistic", sparse=sparse)
    s = np.random.default_rng(1).uniform(0.5, 2.0, size=y.shape[0])
    p = Problem(X, y, lam=0.01, fit_intercept=fit_intercept, sample_weight=s)
    Xd = X.toarray() if sparse else X
    c = s / s.sum()
    b0 = np.log(c[y > 0].sum() / c[y < 0].sum()) if fit_intercept else 0.0
    expected = Xd.T @ (c * -y / (1 + np.exp(y * b0)))
    np.testing.assert_allclose(p.null_gradient(), expected, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(p.column_norms(), np.sqrt(c @ Xd**2), rtol=1e-13)
    assert p.lam_max() == pytest.approx(np.abs(expected).max(), rel=1e-10)
    assert p.with_lam(0.02).null_gradient() is p.null_gradient()  # computed once per data set


# ------------------------------------------------------------------ duality gap
@pytest.mark.parametrize("loss", CONJUGATE)
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.4])
def test_gap_is_nonnegative_and_bounds_suboptimality(loss, fit_intercept, l1_ratio):
    X, y = _data(loss, sparse=True)
    p = Problem(X, y, loss, lam_ratio=0.1, l1_ratio=l1_ratio, fit_intercept=fit_intercept)
    best = _solve(p)
    p_star = best.objective
    at_opt = p.certificate(best.coef, best.intercept)
    assert at_opt.name == "duality_gap" and at_opt.value >= -1e-15
    # At the optimum the solver's dual point closes the gap, up to rounding (the model's own
    # residual gap falls only as the square root of its suboptimality).
    assert -1e-15 <= p_star - p.dual_value(best.dual_point) <= 1e-11 * p_star
    rng = np.random.default_rng(1)
    for k in range(30):
        w = rng.normal(size=X.shape[1]) * rng.choice([1e-3, 0.1, 1.0]) * (rng.random(X.shape[1]) < 0.5)
        if k % 3 == 0:  # near the optimum too, where the bound is tight
            w = best.coef + 1e-3 * rng.normal(size=X.shape[1])
        b = rng.normal() if fit_intercept else 0.0
        cert = p.certificate(w, b)
        # The gap is taken at the best intercept for w, which only lowers P.
        P = min(p.objective(w, b), cert.objective)
        assert cert.value >= 0
        assert cert.objective <= p.objective(w, b) + 1e-12
        assert P - p_star <= cert.value * (1 + 1e-9) + 1e-14
        assert cert.relative == pytest.approx(cert.value / cert.objective)


@pytest.mark.parametrize("loss", CONJUGATE)
def test_gap_bounds_suboptimality_along_the_solver_path(loss):
    X, y = _data(loss, n=150, d=30, seed=4)
    p = Problem(X, y, loss, lam_ratio=0.02, fit_intercept=False)
    p_star = _solve(p).objective
    for max_iter in (1, 2, 3, 5, 8):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = CoordinateDescent(tol=1e-14, max_iter=max_iter).solve(p)
        cert = p.certificate(res.coef)
        assert res.objective - p_star <= cert.value + 1e-14
        assert res.relative_certificate >= 0


def test_gap_is_zero_exactly_at_zero_for_large_lam():
    X, y = _data("logistic")
    with pytest.warns(UserWarning, match="lam_ratio=2.0 >= 1"):
        p = Problem(X, y, "logistic", lam_ratio=2.0, fit_intercept=False)
    cert = p.certificate(np.zeros(X.shape[1]))
    assert cert.value == pytest.approx(0.0, abs=1e-15)
    assert cert.objective == pytest.approx(np.log(2.0), rel=1e-15)


def test_elastic_net_gap_against_sklearn_elastic_net():
    from sklearn.linear_model import ElasticNet

    X, y = _data("squared", n=100, d=15)
    lam, l1_ratio = 0.05, 0.3
    p = Problem(X, y, "squared", lam=lam, l1_ratio=l1_ratio)
    ref = ElasticNet(alpha=lam, l1_ratio=l1_ratio, tol=1e-14, max_iter=100_000).fit(X, y)
    cert = p.certificate(ref.coef_, ref.intercept_)
    assert 0 <= cert.value <= 1e-10
    # Away from it the gap is positive and still bounds P - P*.
    w = ref.coef_ + 0.1
    cert = p.certificate(w)
    assert cert.value > 1e-3
    assert p.objective(w, ref.intercept_) - p.objective(ref.coef_, ref.intercept_) <= cert.value + 1e-12


def test_certificate_from_with_and_without_residuals_agree():
    X, y = _data("logistic", sparse=True)
    for l1_ratio in (1.0, 0.5):
        p = Problem(X, y, "logistic", lam_ratio=0.1, l1_ratio=l1_ratio, fit_intercept=False)
        w = np.random.default_rng(2).normal(size=X.shape[1]) * 0.3
        z = p.margins(w)
        u = p.loss.derivative(y, z)
        v = p.X.T @ (p.c * u)
        a = p.certificate_from(w, 0.0, z, u, v)
        b = p.certificate_from(w, 0.0, z, None, v, primal=p.objective(w))
        assert a.name == b.name == "duality_gap"
        assert a.value == pytest.approx(b.value, rel=1e-12)
        assert a.objective == pytest.approx(b.objective, rel=1e-14)
        assert a == p.certificate(w)


# ------------------------------------------------------------------ KKT (no conjugate)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_probit_certifies_with_kkt(fit_intercept):
    X, y = _data("probit")
    p = Problem(X, y, "probit", lam_ratio=0.1, fit_intercept=fit_intercept)
    at_zero = p.certificate(np.zeros(X.shape[1]), 0.0)
    assert at_zero.name == "kkt"
    # At w = 0 the violation is max_j |g_j| - lam1 = lam_max - lam (for the optimal b).
    if not fit_intercept:
        assert at_zero.value == pytest.approx(p.lam_max() - p.lam, rel=1e-12)
        assert at_zero.relative == pytest.approx(at_zero.value / p.lam)
    res = _solve(p)
    cert = p.certificate(res.coef, res.intercept)
    assert cert.name == "kkt" and res.certificate_name == "kkt"
    assert cert.relative <= 1e-10
    # KKT by hand: zero weights inside [-lam, lam], nonzero weights at -lam sign(w).
    g = p.X.T @ (p.c * p.loss.derivative(y, p.margins(res.coef, res.intercept)))
    nz = res.coef != 0
    np.testing.assert_allclose(g[nz], -p.lam * np.sign(res.coef[nz]), atol=1e-10 * p.lam)
    assert (np.abs(g[~nz]) <= p.lam * (1 + 1e-10)).all()
    # An unoptimised intercept is a KKT violation too.
    if fit_intercept:
        assert p.certificate(res.coef, res.intercept + 0.5).value > 1e-3


# ------------------------------------------------------------------ bad input
def _bad_inputs():
    X, y = _data("logistic", n=20, d=4)
    Xnan = X.copy()
    Xnan[3, 2] = np.nan
    case = lambda name, match, marks=(), **kw: pytest.param(kw, match, id=name, marks=marks)
    return [
        case("lam=0", r"\blam\b", X=X, y=y, lam=0.0),
        case("lam<0", r"\blam\b", X=X, y=y, lam=-1.0),
        case("lam_ratio<=0", r"\blam_ratio\b", X=X, y=y, lam_ratio=0.0),
        case("unknown loss", r"\bloss\b.*cauchy", X=X, y=y, loss="cauchy", lam=0.1),
        case("one class", r"\by\b.*(one|single) class", X=X, y=np.ones(20), lam=0.1),
        case("one class -1", r"\by\b.*one class \(-1\)", X=X, y=-np.ones(20), lam=0.1),
        case("label 0", r"\by\b.*\[0\.? 1\.?\]", X=X, y=np.where(y > 0, 1.0, 0.0), lam=0.1),
        case("NaN in X", r"\bX\b.*NaN", X=Xnan, y=y, lam=0.1),
        case("NaN in sparse X", r"\bX\b.*NaN", X=sp.csr_matrix(Xnan), y=y, lam=0.1),
        case("label 2", r"\by\b", X=X, y=np.where(y > 0, 2.0, -1.0), lam=0.1),
        case("mismatched y", r"\by\b.*19.*\bX\b.*20", X=X, y=y[:-1], lam=0.1),
        case("mismatched weights", r"\bsample_weight\b", X=X, y=y, lam=0.1, sample_weight=np.ones(21)),
        case("negative weight", r"\bsample_weight\b", X=X, y=y, lam=0.1, sample_weight=np.r_[-1.0, np.ones(19)]),
        case("zero weights", r"\bsample_weight\b", X=X, y=y, lam=0.1, sample_weight=np.zeros(20)),
        case("l1_ratio 0", r"\bl1_ratio\b", X=X, y=y, lam=0.1, l1_ratio=0.0),
        case("both lams", r"\blam\b.*\blam_ratio\b", X=X, y=y, lam=0.1, lam_ratio=0.5),
        case("1-D X", r"\bX\b", X=y, y=y, lam=0.1),
    ]


@pytest.mark.parametrize("kwargs, match", _bad_inputs())
def test_bad_input_raises_value_error_naming_the_parameter(kwargs, match):
    kwargs = dict(kwargs)
    X, y = kwargs.pop("X"), kwargs.pop("y")
    with pytest.raises(ValueError, match=match):
        Problem(X, y, kwargs.pop("loss", "logistic"), **kwargs)


def test_regression_labels_may_be_any_real():
    X, y = _data("squared")
    p = Problem(X, y * 100, "squared", lam_ratio=0.1)
    assert p.y.dtype == np.float64 and not p.loss.is_classification


def test_regularization_is_validated_and_resolved_in_one_place():
    import scipy.sparse as sp

    from l1scale import StreamProblem
    from l1scale.data import Stream
    from l1scale.penalties import Regularization

    for kw, message in (
        ({}, "exactly one of lam and lam_ratio"),
        ({"lam": 1.0, "lam_ratio": 0.1}, "exactly one of lam and lam_ratio"),
        ({"lam": -1.0}, "lam must be a finite number > 0"),
        ({"lam_ratio": float("inf")}, "lam_ratio must be a finite number > 0"),
        ({"lam_ratio": 0.1, "l1_ratio": 0.0}, "l1_ratio must be in"),
    ):
        with pytest.raises(ValueError, match=message):
            Regularization(**kw)
    assert Regularization(lam_ratio=0.1).resolve(2.0).lam == pytest.approx(0.2)
    assert Regularization(lam_ratio=0.1).resolve(0.0).lam == 0.1  # lam_max = 0: any lam gives w = 0
    assert Regularization(lam=0.3, l1_ratio=0.5).resolve(5.0).l1 == pytest.approx(0.15)
    # Every problem kind says the same.
    X, y = sp.random(20, 4, density=0.5, random_state=0, format="csr"), np.tile([-1.0, 1.0], 10)
    for make in (
        lambda: Problem(X, y, lam=1.0, lam_ratio=0.1),
        lambda: StreamProblem(Stream.from_arrays(X, y), lam=1.0, lam_ratio=0.1),
    ):
        with pytest.raises(ValueError, match="exactly one of lam and lam_ratio"):
            make()


@pytest.mark.parametrize("loss", ["logistic", "probit", "squared", "squared_hinge"])
def test_the_null_models_intercept_in_closed_form_is_the_newton_solves(loss):
    """b0 (w = 0): log-odds, ndtri and weighted mean in closed form, equal to the 1-D Newton solve's
    minimiser with sample weights; the gradient at the null model is taken there."""
    from l1scale.losses import get_loss
    from l1scale.problems.memory import null_intercept, optimal_intercept

    rng = np.random.default_rng(4)
    n = 500
    y = np.where(rng.random(n) < 0.3, 1.0, -1.0) if loss != "squared" else rng.normal(2.0, 1.0, n)
    c = rng.uniform(0.2, 3.0, n)
    c /= c.sum()
    b0 = null_intercept(get_loss(loss), y, c)
    assert b0 == pytest.approx(optimal_intercept(get_loss(loss), y, c, np.zeros(n)), abs=1e-10)
    X = rng.normal(size=(n, 4))
    p = Problem(X, y, loss, lam=0.01, sample_weight=c * n)
    assert p.null_intercept() == pytest.approx(b0, abs=1e-12)
    r0 = p.c * p.loss.derivative(p.y, np.full(n, b0))
    np.testing.assert_allclose(p.null_gradient(), X.T @ r0, atol=1e-12)
    assert abs(r0.sum()) <= 1e-12  # b0 is optimal: the intercept's gradient vanishes
