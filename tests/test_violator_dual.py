"""The residual corrected along its violators (``solvers/_violator_dual``), and the support-Newton
steps whose CG stops once they cross many weights (``_support_newton.STOP_AT_CROSSINGS``)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _certify import suboptimality_bound
from _shared_data import load_svmlight_pm

from l1scale.problems import Problem
from l1scale.solvers._cd_state import Iterate
from l1scale.solvers._dual import DualPoints, correlations_near, loss_units
from l1scale.solvers._violator_dual import ViolatorDual
from l1scale.solvers.cd import CoordinateDescent


def _text_like(n=2000, d=3000, per_row=30, seed=0):
    """Rows of Zipf-distributed terms, L2-normalised; labels from 40 of the 200 most frequent terms."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, d + 1) ** 1.1
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.choice(d, size=n * per_row, p=p / p.sum())
    X = sp.csr_matrix((np.ones(n * per_row), (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    X = sp.diags(1.0 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())) @ X
    w = np.zeros(d)
    w[rng.choice(200, 40, replace=False)] = 3.0 * rng.normal(size=40)
    y = np.where(X @ w + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return sp.csc_matrix(X), y


def _point(problem, iterations):
    """A CD iterate after ``iterations`` Newton steps, taken without the dual points that would
    end the solve sooner."""
    solver = CoordinateDescent(tol=1e-14, max_iter=iterations, support_newton=False)
    solver.model_dual = solver.violator_dual = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter, on purpose
        result = solver.solve(problem)
    return Iterate(problem, result.coef, result.intercept)


@pytest.mark.parametrize(("fit_intercept", "iterations"), [(False, 3), (False, 4), (True, 5), (True, 6)])
def test_the_corrected_residual_is_a_dual_point_many_times_tighter_than_the_rescaled_one(fit_intercept, iterations):
    X, y = _text_like()
    lam = 0.02 * Problem(X, y, "logistic", lam=1.0, fit_intercept=fit_intercept).lam_max()
    problem = Problem(X, y, "logistic", lam=lam, fit_intercept=fit_intercept)
    optimum = CoordinateDescent(tol=1e-12).solve(problem).objective
    pt = _point(problem, iterations)
    kept = np.arange(problem.n_features)
    g_loss = X.T @ pt.r
    dual = DualPoints(problem)
    residual = dual.certificate(pt.w, pt.b, pt.z, g_loss, kept, pt.objective, pt.r)
    corrected = ViolatorDual(tol=1e-6).certificate(pt, dual, kept, g_loss, residual)
    # Near the optimum the violations are small and the correction brings them inside lam1:
    # the gap falls 5-100x on these points (a rescaled residual's is about sqrt(suboptimality));
    # with an intercept 3.5-4x, since CD steps each coordinate jointly with the intercept: its
    # points there are closer to the optimum and their rescaled residual already tighter.
    assert corrected.value < (0.3 if fit_intercept else 0.2) * residual.value
    # A dual point, checked from scratch (sum_i c_i u_i = 0 with an intercept, feasible after
    # its rescaling): its value bounds P* from below and is the certificate's.
    value = problem.dual_value(dual.best_point)
    assert value <= optimum + 1e-12 * abs(optimum)
    assert pt.objective - value == pytest.approx(corrected.value, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("iterations", [6, 8])
def test_the_correction_aims_inside_lam1_by_a_fraction_of_tol(iterations, monkeypatch):
    """Aimed a fixed 1e-4 inside lam1, the corrected point's dual value stays about 1e-4 (relative)
    short of lam1's, and cannot certify tol 1e-6; aimed at most a tenth of tol inside, it does,
    at points where the rescaled residual misses it (its gap 1e-6-1e-4 here)."""
    X, y = _text_like()
    problem = Problem(X, y, "logistic", lam_ratio=0.02, fit_intercept=False)
    kept = np.arange(problem.n_features)
    tol = 1e-6

    def corrected():
        pt = _point(problem, iterations)
        g_loss = X.T @ pt.r
        dual = DualPoints(problem)
        residual = dual.certificate(pt.w, pt.b, pt.z, g_loss, kept, pt.objective, pt.r)
        return residual.relative, ViolatorDual(tol=tol).certificate(pt, dual, kept, g_loss, residual).relative

    residual, scaled = corrected()
    assert residual > tol >= scaled
    monkeypatch.setattr(ViolatorDual, "tol_margin", np.inf)  # the fixed margin alone
    assert corrected()[1] > tol


def test_no_violator_or_no_budget_leaves_the_certificate_as_it_is():
    X, y = _text_like(seed=1)
    problem = Problem(X, y, "logistic", lam_ratio=0.02, fit_intercept=False)
    pt = _point(problem, 3)
    kept = np.arange(problem.n_features)
    g_loss = X.T @ pt.r
    dual = DualPoints(problem)
    residual = dual.certificate(pt.w, pt.b, pt.z, g_loss, kept, pt.objective, pt.r)
    reads = pt.reads
    assert ViolatorDual(tol=1e-6).certificate(pt, dual, kept, g_loss, residual, budget=1) is residual
    assert pt.reads == reads  # nothing read
    solved = CoordinateDescent(tol=1e-12).solve(problem)
    at_optimum = Iterate(problem, solved.coef, solved.intercept)
    g_opt = X.T @ at_optimum.r
    cert = DualPoints(problem).certificate(
        at_optimum.w, at_optimum.b, at_optimum.z, g_opt, kept, at_optimum.objective, at_optimum.r
    )
    if np.abs(g_opt).max() <= problem.penalty.l1:  # no violator: nothing to correct
        assert ViolatorDual(tol=1e-6).certificate(at_optimum, DualPoints(problem), kept, g_opt, cert) is cert


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("tol", [1e-2, 1e-4])
def test_cd_with_the_corrected_residual_returns_a_certified_model(fit_intercept, tol):
    X, y = _text_like(seed=2)
    problem = Problem(X, y, "logistic", lam_ratio=0.02, fit_intercept=fit_intercept)
    result = CoordinateDescent(tol=tol).solve(problem)
    assert result.converged
    P = problem.objective(result.coef, result.intercept)
    assert P - problem.dual_value(result.dual_point) <= tol * abs(P)
    assert suboptimality_bound(problem, result.coef, result.intercept) <= tol


@pytest.fixture(scope="module")
def news20():
    return load_svmlight_pm("news20", "news20/news20_bydate_binary.svm.bz2", 588_937)


@pytest.mark.slow
def test_support_newton_cg_stops_once_its_step_crosses_many_weights_on_news20(news20, monkeypatch):
    # At 0.001 lam_max the support-Newton steps taken before the support has settled would carry
    # hundreds of weights across zero (1,515 of 3,704 on one), and the line search cut each to
    # 1/256 of its length after 100-200 CG products. CG now stops once its step crosses more of
    # them than a re-solve takes on (the settled fraction): nonzeros read to tol 1e-1 436M against
    # 804M when measured, and the same certified model. (Before the stop, the steps that wait after
    # a cut one, CoordinateDescent.newton_cut, read a third less here; with it they change
    # nothing on this point.)
    from l1scale.solvers import _support_newton

    X, y = news20
    rows = np.sort(np.random.default_rng(0).permutation(X.shape[0])[: int(0.75 * X.shape[0])])  # the benchmark's split
    problem = Problem(X[rows], y[rows], "logistic", lam_ratio=0.001, fit_intercept=False)
    stopping = CoordinateDescent(tol=0.1).solve(problem)
    monkeypatch.setattr(_support_newton, "STOP_AT_CROSSINGS", False)
    full = CoordinateDescent(tol=0.1).solve(problem)
    assert stopping.converged and full.converged
    assert stopping.history.data_accesses[-1] < 0.75 * full.history.data_accesses[-1]
    P = problem.objective(stopping.coef, stopping.intercept)
    assert P - problem.dual_value(stopping.dual_point) <= 0.1 * P


def test_one_product_on_frequent_violators_costs_no_newton_step():
    # a9a at 0.01 lam_max: the violators are one-hot columns read by a third of the rows, so
    # only 1-2 CG products fit in two passes' reads. One preconditioned gradient step on their
    # system brought the gap within tol 1e-1 a pass before the rescaled residual did, while CD
    # stepped the coordinates apart from the intercept; stepped jointly with it (the frequent
    # one-hot columns are nearly the intercept), the rescaled residual certifies as soon. The
    # correction, offered all the same, must cost no Newton step and certify what it claims.
    X, y = load_svmlight_pm("a9a", "a9a/a9a.bz2", 123)
    problem = Problem(X, y, "logistic", lam_ratio=0.01)
    results = {}
    for enabled in (True, False):
        solver = CoordinateDescent(tol=1e-1)
        solver.violator_dual = enabled
        results[enabled] = solver.solve(problem)
    corrected, plain = results[True], results[False]
    assert corrected.converged and plain.converged
    assert corrected.n_iter <= plain.n_iter
    assert suboptimality_bound(problem, corrected.coef, corrected.intercept) <= 1e-1


@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_correlations_near_bound_every_feature_and_read_only_those_that_could_reach_lam1(fit_intercept, weights):
    """``_dual.correlations_near``: the bounds stand in for |x_j^T u| only where they stay below
    lam1, are never below it anywhere, and give the dual point the same value as the exact
    correlations, for fewer nonzeros read. The point is a path's: the last lam's solution at the
    next lam, where a few features violate by a little (where the violators' correction is tried)."""
    X, y = _text_like(seed=2)
    c = np.random.default_rng(3).uniform(0.5, 2.0, y.shape[0]) if weights else None
    before = Problem(X, y, "logistic", lam_ratio=0.022, fit_intercept=fit_intercept, sample_weight=c)
    last = CoordinateDescent(tol=1e-10).solve(before)
    problem = Problem(X, y, "logistic", lam_ratio=0.02, fit_intercept=fit_intercept, sample_weight=c)
    pt = Iterate(problem, last.coef, last.intercept)
    kept = np.arange(problem.n_features)
    g_loss = X.T @ pt.r
    # The dual point the correction makes: r moved along the violators in the metric of D, so
    # that their correlations come back to lam1 (to first order).
    lam1 = problem.penalty.l1
    violators = kept[np.abs(g_loss) > lam1]
    assert violators.shape[0] > 0
    X_v = X[:, violators].toarray()
    excess = g_loss[violators] - lam1 * np.sign(g_loss[violators])
    a = np.linalg.lstsq(X_v.T @ (pt.D[:, None] * X_v), excess, rcond=None)[0]
    u_c = pt.r - pt.D * (X_v @ a)
    exact = np.abs(X.T @ u_c)
    bound, reads = correlations_near(problem, kept, g_loss, pt.r, u_c, pt.w)
    assert (bound >= exact * (1.0 - 1e-12)).all()
    # Cauchy-Schwarz from r's correlations, in the c-weighted norms.
    distance = np.sqrt(np.sum((u_c - pt.r) ** 2 / problem.c))
    cauchy_schwarz = np.abs(g_loss) + np.sqrt(X.T.multiply(X.T).dot(problem.c)) * distance
    read = (cauchy_schwarz >= lam1 * (1.0 - 1e-3)) | (pt.w != 0.0)  # near lam1, and the support
    np.testing.assert_allclose(bound[read], exact[read], rtol=1e-12, atol=1e-15)  # read exactly there
    np.testing.assert_allclose(bound[~read], cauchy_schwarz[~read], rtol=1e-8)  # bounded elsewhere
    assert reads == np.diff(X.indptr)[read].sum() < X.nnz  # only those columns read
    assert 0 < read.sum() < X.shape[1]  # some columns bounded, not read
    assert np.max(bound[~read]) < lam1  # so the rescaling, min(1, lam1 / max), is the exact one's
    assert min(1.0, lam1 / bound.max()) == min(1.0, lam1 / exact.max())
    u = loss_units(u_c, problem.c)
    exact_cert = problem.certificate_from(pt.w, pt.b, pt.z, u, exact, primal=pt.objective)
    bound_cert = problem.certificate_from(pt.w, pt.b, pt.z, u, bound, primal=pt.objective)
    assert bound_cert.value == exact_cert.value
