"""Regularisation paths with warm starts, and cross-validated lam (Qin et al. sec. 3.2, issue 5)."""

import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _certify import suboptimality_bound
from _shared_data import DATA
from sklearn.datasets import make_classification
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from l1scale.exceptions import ConvergenceWarning
from l1scale.path import SparseLogisticRegressionCV, lam_grid, regularization_path
from l1scale.problems import Problem
from l1scale.solvers.cd import CoordinateDescent


def _a9a(n=10000):
    path = os.path.join(DATA, "a9a", "a9a.bz2")
    if not os.path.exists(path):
        pytest.skip("a9a not available")
    from l1scale.data.svmlight import load_svmlight

    X, y = load_svmlight(path, n_features=123)[:2]
    return X[:n], y[:n]


def _binary(n=300, d=40, seed=0):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=6, random_state=seed)
    return X, np.where(y == 1, 1.0, -1.0)


def test_lam_grid():
    g = lam_grid(2.0, 5, 1e-2)
    np.testing.assert_allclose(g, 2.0 * np.array([1, 10**-0.5, 1e-1, 10**-1.5, 1e-2]))
    with pytest.raises(ValueError, match="lam_max"):
        lam_grid(0.0)


@pytest.mark.parametrize("sparse", [False, True])
def test_path_solutions_are_optimal_and_warm_starts_save_work(sparse):
    X, y = _binary()
    X = sp.csc_matrix(X) if sparse else X
    warm = regularization_path(X, y, n_lams=15, lam_min_ratio=1e-2, tol=1e-10)
    cold = regularization_path(X, y, n_lams=15, lam_min_ratio=1e-2, tol=1e-10, warm_start=False)
    np.testing.assert_allclose(warm.objectives, cold.objectives, rtol=1e-9)
    assert warm.n_iter.sum() < cold.n_iter.sum()
    assert warm.nnz[0] == 0 and warm.nnz[-1] > warm.nnz[0]  # from lam_max down
    for k in (0, 7, 14):  # each row certified at its own lam
        assert suboptimality_bound(Problem(X, y, "logistic", warm.lams[k]), warm.coefs[k], warm.intercepts[k]) <= 1e-9


def test_path_refuses_streaming_solvers():
    X, y = _binary()
    with pytest.raises(ValueError, match="passes"):
        regularization_path(X, y, solver="rmmp")


def test_cv_picks_a_lam_and_refits():
    X, y = _binary(n=400)
    labels = np.where(y > 0, "yes", "no")
    for scoring in ("neg_log_loss", "accuracy", "roc_auc", "average_precision"):
        cv = SparseLogisticRegressionCV(n_lams=8, cv=3, scoring=scoring, tol=1e-8).fit(X, labels)
        assert cv.scores_.shape == (3, 8)
        best = int(np.argmax(cv.scores_.mean(axis=0)))
        assert cv.lam_[0] == cv.lams_[best]
        ref = Problem(X, y, "logistic", cv.lam_[0])
        assert suboptimality_bound(ref, cv.coef_[0], cv.intercept_[0]) <= 1e-7
        assert list(cv.classes_) == ["no", "yes"] and cv.score(X, labels) > 0.7
        assert cv.converged_.tolist() == [True] and cv.path_.converged.dtype == bool
        assert cv.path_.converged.all() and (cv.path_.certificates <= 1e-8).all()
    short = SparseLogisticRegressionCV(n_lams=4, cv=3, tol=1e-12, max_iter=1, lam_min_ratio=1e-3)
    with pytest.warns(ConvergenceWarning):
        short.fit(X, labels)
    k = int(np.flatnonzero(short.lams_ == short.lam_[0])[0])
    assert short.converged_.tolist() == [bool(short.path_.certificates[k] <= 1e-12)]
    assert not short.path_.converged.all()
    with pytest.raises(ValueError, match="scoring"):
        SparseLogisticRegressionCV(scoring="f2").fit(X, y)


def test_cv_chooses_the_lam_scikit_learn_chooses_on_a9a():
    """Same folds, same grid (C = 1 / (n_train lam), folds of equal size), same problem (saga
    does not penalise the intercept): LogisticRegressionCV and ours pick the same lam."""
    from sklearn.linear_model import LogisticRegressionCV

    X, y = _a9a()
    folds = StratifiedKFold(5)
    lams = lam_grid(Problem(X, y, "logistic", lam=1.0).lam_max(), 8, 1e-3)
    ours = SparseLogisticRegressionCV(lams=lams, cv=folds, tol=1e-8).fit(X, y)
    n_train = X.shape[0] * 4 // 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = LogisticRegressionCV(
            Cs=1.0 / (lams * n_train),
            cv=folds,
            l1_ratios=(1.0,),
            solver="saga",
            scoring="neg_log_loss",
            tol=1e-6,
            max_iter=3000,
            use_legacy_attributes=False,
        ).fit(X, y)
    assert ours.lam_[0] == pytest.approx(1.0 / (float(np.ravel(sk.C_)[0]) * n_train), rel=1e-9)


def test_two_stage_refits_on_the_support_at_a_smaller_lam():
    from l1scale import SparseLinearRegression, SparseLogisticRegression

    X, y = _binary(n=300, d=40, seed=3)
    one = SparseLogisticRegression(lam_ratio=0.1, tol=1e-10).fit(X, y)
    two = SparseLogisticRegression(lam_ratio=0.1, tol=1e-10, two_stage=0.1).fit(X, y)
    support = np.flatnonzero(one.coef_[0])
    assert set(np.flatnonzero(two.coef_[0])) <= set(support)
    # The second stage is the problem on the support at lam2 = 0.1 lam, solved to optimality.
    sub = Problem(X[:, support], y, "logistic", 0.1 * one.lam_[0])
    assert suboptimality_bound(sub, two.coef_[0][support], two.intercept_[0]) <= 1e-9
    assert np.abs(two.coef_).sum() > np.abs(one.coef_).sum()  # less shrinkage
    reg = SparseLinearRegression(lam_ratio=0.2, two_stage=0.5).fit(X, y)
    assert np.count_nonzero(reg.coef_) <= np.count_nonzero(SparseLinearRegression(lam_ratio=0.2).fit(X, y).coef_)
    with pytest.raises(ValueError, match="two_stage"):
        SparseLogisticRegression(two_stage=2.0).fit(X, y)


def test_cv_multiclass_one_vs_rest_chooses_a_lam_per_class():
    X, y = make_classification(n_samples=450, n_features=30, n_informative=8, n_classes=3, random_state=2)
    cv = SparseLogisticRegressionCV(n_lams=6, cv=3, tol=1e-8, multi_class="ovr").fit(X, y)
    assert cv.coef_.shape == (3, 30) and cv.lam_.shape == (3,) and cv.scores_.shape == (3, 3, 6)
    for k in range(3):
        assert cv.lam_[k] == cv.lams_[k][int(np.argmax(cv.scores_[k].mean(axis=0)))]
        y_k = np.where(y == k, 1.0, -1.0)
        assert suboptimality_bound(Problem(X, y_k, "logistic", cv.lam_[k]), cv.coef_[k], cv.intercept_[k]) <= 1e-7
    assert cv.score(X, y) > 0.6


@pytest.mark.parametrize("n_classes, n_jobs", [(2, 2), (3, 2), (3, 4)])
def test_cv_n_jobs_gives_the_same_scores_lams_and_fit(n_classes, n_jobs):
    X, y = make_classification(n_samples=360, n_features=30, n_informative=8, n_classes=n_classes, random_state=4)
    one = SparseLogisticRegressionCV(n_lams=8, cv=4, tol=1e-8, multi_class="ovr").fit(X, y)
    two = SparseLogisticRegressionCV(n_lams=8, cv=4, tol=1e-8, n_jobs=n_jobs, multi_class="ovr").fit(X, y)
    for name in ("scores_", "lams_", "lam_", "coef_", "intercept_", "n_iter_"):
        np.testing.assert_array_equal(getattr(two, name), getattr(one, name))
    paths_one, paths_two = (one.path_, two.path_) if n_classes > 2 else ([one.path_], [two.path_])
    for a, b in zip(paths_one, paths_two):  # fewer classes than threads: refits over the whole grid, cut
        np.testing.assert_array_equal(b.coefs, a.coefs)
        np.testing.assert_array_equal(b.lams, a.lams)
        np.testing.assert_array_equal(b.objectives, a.objectives)
    assert (np.atleast_2d(one.lams_)[:, -1] < one.lam_).any()  # some refit path was cut
    with pytest.raises(ValueError, match="n_jobs"):
        SparseLogisticRegressionCV(n_jobs=0).fit(X, y)


def test_path_segments_cut_the_grid_by_the_cost_model():
    """Contiguous segments, at most one per thread, each of at least 4 lams, cut where the
    cumulative cost (k / K)^3 reaches i / n_segments."""
    from l1scale.path import path_segments

    assert path_segments(50, 1) == [0, 50] and path_segments(9, 2) == [0, 9]  # too few lams to share
    assert path_segments(50, 2) == [0, 40, 50]  # (40 / 50)^3 = 0.51
    for n_lams in (8, 12, 20, 50, 100, 333):
        for n_threads in (2, 3, 4, 8, 64):
            bounds = path_segments(n_lams, n_threads)
            sizes = np.diff(bounds)
            assert bounds[0] == 0 and bounds[-1] == n_lams and (sizes >= 4).all() and len(sizes) <= n_threads
            costs = np.diff((np.asarray(bounds) / n_lams) ** 3)
            if len(sizes) == n_threads:  # every cut kept: the model's shares are equal
                np.testing.assert_allclose(costs, 1.0 / n_threads, atol=1.5 * 3 / n_lams)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("loss, fit_intercept", [("logistic", True), ("squared", False)])
def test_path_in_threads_solves_each_segment_as_its_own_path(sparse, loss, fit_intercept):
    """n_jobs=2: the grid's two segments solved in threads, the second from zero at its first lam:
    each is, to the bit, CD's path over its own lams on the data prepared for the whole path
    (``prepare_path``: the squared loss's covariances, which pay for 20 lams but not for the
    second segment's 4 alone), every lam is certified to tol, and the whole agrees with the
    single-thread path to tol."""
    from l1scale.path import path_segments

    X, y = _binary(n=240, d=60, seed=3)
    if loss == "squared":
        y = X[:, :5] @ np.arange(1.0, 6.0) + 0.1 * np.random.default_rng(0).normal(size=X.shape[0])
    X = sp.csr_matrix(X) if sparse else X
    kw = dict(loss=loss, n_lams=20, tol=1e-8, fit_intercept=fit_intercept)
    one = regularization_path(X, y, **kw)
    two = regularization_path(X, y, **kw, n_jobs=2)
    cut = path_segments(20, 2)[1]
    assert 0 < cut < 20
    # With BLAS on one thread, as the threaded path holds it (dense data's Gram products by BLAS
    # sum in another order on more threads).
    with threadpool_limits(limits=1, user_api="blas"):
        problem = Problem(X, y, loss, lam=1.0, fit_intercept=fit_intercept)
        solver = CoordinateDescent(tol=1e-8)
        solver.prepare_path(problem, 20)
        segments = [list(solver.solve_path(problem, part)) for part in (one.lams[:cut], one.lams[cut:])]
    np.testing.assert_array_equal(two.coefs, np.vstack([r.coef for part in segments for r in part]))
    np.testing.assert_array_equal(two.intercepts, [r.intercept for part in segments for r in part])
    np.testing.assert_array_equal(two.lams, one.lams)
    assert two.converged.all() and (two.certificates <= 1e-8).all()
    np.testing.assert_allclose(two.objectives, one.objectives, rtol=2e-8)
    again = regularization_path(X, y, **kw, n_jobs=2)
    np.testing.assert_array_equal(again.coefs, two.coefs)  # a given number of threads repeats exactly
    seen = []
    regularization_path(X, y, **kw, n_jobs=2, callback=lambda k, result: seen.append(k))
    assert seen == list(range(20))  # in the order of the lams


def test_path_n_jobs_is_checked_and_ignored_where_segments_do_not_apply():
    X, y = _binary()
    with pytest.raises(ValueError, match="n_jobs"):
        regularization_path(X, y, n_lams=12, n_jobs=0)
    labels = np.digitize(X[:, 0], [-0.5, 0.5])  # three classes
    for data, kw in (
        (y, {"warm_start": False}),
        (y, {"solver": "cgd", "max_iter": 5000}),
        (y, {"n_lams": 6}),
        (labels, {"loss": "multinomial"}),
    ):
        one = regularization_path(X, data, n_lams=kw.pop("n_lams", 12), tol=1e-6, **kw)
        two = regularization_path(X, data, lams=one.lams, tol=1e-6, n_jobs=2, **kw)
        np.testing.assert_array_equal(two.coefs, one.coefs)


def test_a_wide_path_stores_each_solution_exactly():
    # Every row of a wide path's coefficient array is the solver's solution at its lam, to the
    # bit (the iterate the solver carries on is copied, not aliased).
    rng = np.random.default_rng(4)
    X = sp.random(200, 3000, density=0.01, format="csr", random_state=5)
    y = np.where(X @ rng.normal(size=3000) + 0.1 * rng.normal(size=200) > 0, 1.0, -1.0)
    path = regularization_path(X, y, n_lams=8, lam_min_ratio=0.05, tol=1e-8)
    results = list(CoordinateDescent(tol=1e-8).solve_path(Problem(X, y, "logistic", 1.0), path.lams))
    np.testing.assert_array_equal(path.coefs, np.array([r.coef for r in results]))
    np.testing.assert_array_equal(path.intercepts, [r.intercept for r in results])
    assert path.nnz[0] == 0 and path.nnz[-1] > 0


def test_a_path_stores_its_coefficients_sparse():
    # coef_path holds each lam's nonzeros only; coefs, coef_at, nnz, first and rescaled read it.
    X, y = _binary(n=200, d=30, seed=7)
    path = regularization_path(X, y, n_lams=10, lam_min_ratio=0.01, tol=1e-8)
    assert sp.issparse(path.coef_path) and path.coef_path.format == "csr"
    assert path.coef_path.shape == (10, 30) and path.coef_shape == (30,)
    assert np.all(path.coef_path.data != 0.0)  # no stored zeros
    dense = path.coefs
    assert dense is path.coefs  # built once
    np.testing.assert_array_equal(dense, path.coef_path.toarray())
    np.testing.assert_array_equal(path.nnz, np.count_nonzero(dense, axis=1))
    assert path.nnz[0] == 0 and path.nnz[-1] > 0
    with pytest.raises(ValueError, match="read-only"):
        dense[-1, 0] = 1.0  # it cannot drift from coef_path
    for k in (0, 5, 9):
        np.testing.assert_array_equal(path.coef_at(k), dense[k])
    head = path.first(4)
    assert head.lams.shape == (4,) and head.coef_path.shape == (4, 30)
    np.testing.assert_array_equal(head.coefs, dense[:4])
    np.testing.assert_array_equal(head.objectives, path.objectives[:4])
    sigma = np.linspace(0.5, 2.0, 30)
    np.testing.assert_allclose(path.rescaled(sigma).coefs, dense / sigma, rtol=1e-15)
    np.testing.assert_array_equal(path.coefs, dense)  # rescaled makes a new path
    want = X @ dense.T + path.intercepts
    for data in (X, sp.csr_matrix(X), sp.csc_matrix(X)):
        np.testing.assert_allclose(path.margins(data), want, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="30 features"):
        path.margins(X[:, :29])
    empty = regularization_path(X, y, lams=path.lams[:1] * np.array([2.0]), tol=1e-8)  # above lam_max: w = 0
    assert empty.coef_path.nnz == 0 and empty.nnz.tolist() == [0]
    np.testing.assert_array_equal(empty.margins(X), np.full((200, 1), empty.intercepts[0]))


def test_a_multinomial_path_stores_class_blocks():
    X, _ = _binary(n=150, d=12, seed=8)
    labels = np.digitize(X[:, 0], [-0.5, 0.5])
    path = regularization_path(X, labels, "multinomial", n_lams=5, lam_min_ratio=0.05, tol=1e-8)
    assert path.coef_path.shape == (5, 3 * 12) and path.coef_shape == (3, 12)
    assert path.coefs.shape == (5, 3, 12)
    np.testing.assert_array_equal(path.coef_at(4), path.coefs[4])
    want = np.einsum("nd,kcd->nkc", X, path.coefs) + path.intercepts
    for data in (X, sp.csr_matrix(X)):
        np.testing.assert_allclose(path.margins(data), want, rtol=1e-12, atol=1e-12)
    sigma = np.linspace(0.5, 2.0, 12)
    np.testing.assert_allclose(path.rescaled(sigma).coefs, path.coefs / sigma, rtol=1e-15)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_wide_path_holds_its_nonzeros_not_lams_times_features(n_jobs):
    # 60 lams over 2^18 features: a dense coefficient array would be 126 MB. The path's peak
    # memory (tracemalloc sees NumPy's buffers) is the solvers' O(n_features) arrays: 33 MB with
    # one thread, 59 MB with two (153 and 377 MB when the path was stored dense).
    import tracemalloc

    rng = np.random.default_rng(9)
    n, d, n_lams = 120, 2**18, 60
    X = sp.random(n, d, density=20 / d, format="csc", random_state=10)
    y = np.where(X @ rng.normal(size=d) + 0.1 * rng.normal(size=n) > 0, 1.0, -1.0)
    dense_bytes = n_lams * d * 8
    tracemalloc.start()
    try:
        path = regularization_path(X, y, n_lams=n_lams, lam_min_ratio=0.05, tol=1e-6, n_jobs=n_jobs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert path.nnz[-1] > 0 and path.converged.all()
    assert peak < 0.6 * dense_bytes, f"peak {peak / 2**20:.0f} MB against {dense_bytes / 2**20:.0f} MB dense"
