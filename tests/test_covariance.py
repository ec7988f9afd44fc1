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
    if not use_covariances:  # CD alone: neither from the start nor handed over
        monkeypatch.setattr(covariance, "applies", lambda *a, **k: False)
        monkeypatch.setattr(covariance, "gram_limit", lambda *a, **k: np.inf)
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


def _correlated(n=3000, d=60, seed=5):
    """Dense rows of strongly correlated columns (mnist's pixels' kind): CD on S crawls."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, 8))
    X = base @ rng.normal(size=(8, d)) + 0.05 * rng.normal(size=(n, d))
    y = X[:, :5] @ rng.normal(size=5) + rng.normal(size=n)
    return X, y


def test_dense_rows_take_the_covariances_along_a_path_only(monkeypatch):
    X, y = _correlated(n=2000, d=200)
    problem = Problem(X, y, "squared", lam_ratio=0.1)
    ratio = covariance.pairs_per_value(problem)
    assert ratio > covariance.PAIRS_PER_VALUE  # S costs more than one fit reads ...
    n_lams = int(np.ceil(ratio / covariance.PASSES_PER_SOLVE))
    cd = CoordinateDescent()
    assert not covariance.applies(problem, cd)
    assert covariance.applies(problem, cd, n_solves=n_lams)  # ... and less than a path's lams do
    calls = []
    real = covariance.solve
    monkeypatch.setattr(covariance, "solve", lambda *a, **k: calls.append(1) or real(*a, **k))
    path = regularization_path(X, y, "squared", n_lams=n_lams, lam_min_ratio=1e-3, tol=1e-9)
    monkeypatch.undo()
    assert len(calls) == n_lams and path.converged.all()
    monkeypatch.setattr(covariance, "applies", lambda *a, **k: False)
    reference = regularization_path(X, y, "squared", lams=path.lams, tol=1e-10)
    np.testing.assert_allclose(path.objectives, reference.objectives, rtol=1e-8)


def test_the_support_step_lowers_p_and_stops_at_the_orthants_edge():
    X, y = _correlated(seed=6)
    problem = Problem(X, y, "squared", lam_ratio=0.02)
    cov = covariance.covariances(problem)
    lam1 = problem.penalty.l1
    rng = np.random.default_rng(0)

    def value(w):
        return 0.5 * w @ cov.S @ w - cov.q @ w + lam1 * np.abs(w).sum()

    optimum = np.zeros(X.shape[1])
    covariance.solve(problem, optimum, 1e-12)
    crossed = 0
    for trial in range(20):
        w = np.zeros(X.shape[1])
        if trial % 2:  # random signs: the step mostly stops where a weight reaches zero
            support = np.sort(rng.choice(X.shape[1], size=12, replace=False)).astype(np.int64)
            w[support] = rng.normal(scale=0.5, size=12)
        else:  # the optimum's signs: the whole step, onto the optimum
            support = np.flatnonzero(optimum).astype(np.int64)
            w[support] = optimum[support] * rng.uniform(0.5, 1.5, size=support.shape[0])
        g = cov.S @ w - cov.q
        before, signs = value(w), np.sign(w[support])
        covariance._support_step(cov, w, g, lam1, support)
        assert value(w) <= before + 1e-12
        np.testing.assert_allclose(g, cov.S @ w - cov.q, atol=1e-10)  # the gradient kept
        assert np.all((np.sign(w[support]) == signs) | (w[support] == 0.0))  # no sign flipped
        outside = np.setdiff1d(np.arange(X.shape[1]), support)
        assert not w[outside].any()
        zeroed = np.count_nonzero(w[support] == 0.0)
        crossed += zeroed > 0
        if zeroed == 0:  # the whole step: the minimiser over the orthant's face
            np.testing.assert_allclose(g[support] + lam1 * signs, 0.0, atol=1e-9)
        if trial % 2 == 0:
            np.testing.assert_allclose(w, optimum, atol=1e-7)
    assert 0 < crossed < 20  # both kinds of step were taken


def test_the_support_steps_solve_ill_conditioned_supports_in_fewer_sweeps(monkeypatch):
    X, y = _correlated(seed=7)
    problem = Problem(X, y, "squared", lam_ratio=0.002)
    w_on, w_off = np.zeros(X.shape[1]), np.zeros(X.shape[1])
    b_on, sweeps_on = covariance.solve(problem, w_on, 1e-10)
    monkeypatch.setattr(covariance, "_support_step_work", lambda k, d: np.inf)  # CD alone
    b_off, sweeps_off = covariance.solve(problem, w_off, 1e-10)
    assert 3 * sweeps_on < sweeps_off
    assert problem.objective(w_on, b_on) == pytest.approx(problem.objective(w_off, b_off), rel=1e-9)
    assert problem.certificate(w_on, b_on).relative <= 1e-9


def test_a_csr_problem_is_solved_on_its_covariances_from_its_rows(monkeypatch):
    # S, q and the certificate's margins are read from the rows: no conversion to columns is made
    # (none reported), and S is the one the columns give, to rounding.
    X, y = _narrow(layout="csr")
    c = np.random.default_rng(2).uniform(0.5, 2.0, size=y.shape[0])
    for fit_intercept in (False, True):
        on_rows = Problem(X, y, "squared", lam_ratio=0.05, fit_intercept=fit_intercept, sample_weight=c)
        result = CoordinateDescent(tol=1e-9).solve(on_rows)
        assert result.converged and result.timings["convert"] == 0.0
        assert not on_rows.has_columns
        on_columns = Problem(X.tocsc(), y, "squared", lam_ratio=0.05, fit_intercept=fit_intercept, sample_weight=c)
        by_rows, by_columns = covariance.covariances(on_rows), covariance.covariances(on_columns)
        assert by_rows.work == by_columns.work
        np.testing.assert_allclose(by_rows.S, by_columns.S, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(by_rows.q, by_columns.q, rtol=1e-12, atol=1e-12)
        assert by_rows.syy == pytest.approx(by_columns.syy, rel=1e-12)
        np.testing.assert_allclose(by_rows.xbar, by_columns.xbar, rtol=1e-12, atol=1e-15)
        reference = CoordinateDescent(tol=1e-9).solve(on_columns)
        assert result.objective == pytest.approx(reference.objective, rel=1e-9)
    # A solve that does not certify on S goes on by CD, which converts, and says so.
    real = covariance.solve
    monkeypatch.setattr(covariance, "solve", lambda p, w, tol, max_sweeps=1, record=None: real(p, w, tol, 1, record))
    on_rows = Problem(X, y, "squared", lam_ratio=0.01)
    result = CoordinateDescent(tol=1e-9, max_iter=1000).solve(on_rows)
    assert result.converged and on_rows.has_columns and result.timings["convert"] > 0.0


def test_rows_gram_sums_every_rows_outer_product_in_bands(monkeypatch):
    # Blocks of rows, Q larger than a band: the rows resume band after band, every product counted once.
    rng = np.random.default_rng(3)
    X = sp.random(300, 90, density=0.2, format="csr", random_state=4)
    c = rng.uniform(0.0, 2.0, size=300)
    c[::7] = 0.0  # rows of weight zero add nothing
    monkeypatch.setattr(covariance, "GRAM_BAND_BYTES", 8 * 91 * 10)  # bands of 10 rows of Q ...
    monkeypatch.setattr(covariance, "GRAM_BLOCK_ENTRIES", 500)  # ... for blocks of about 25 rows of X
    data, indices, indptr = X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)
    Q = covariance.rows_gram.py_func(data, indices, indptr, c, 90)
    dense = X.toarray()
    expected = np.zeros((91, 91))
    expected[:90, :90] = dense.T @ (c[:, None] * dense)
    expected[:90, 90] = expected[90, :90] = dense.T @ c
    expected[90, 90] = c.sum()
    np.testing.assert_allclose(Q, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(covariance.rows_gram(data, indices, indptr, c, 90), expected, rtol=1e-12, atol=1e-12)


def test_a_path_cut_in_segments_solves_each_on_the_covariances_built_once(monkeypatch):
    X, y = _correlated(n=2000, d=200)
    problem = Problem(X, y, "squared", lam_ratio=0.1)
    n_lams = 20
    # The whole path pays for S; its last segment alone (4 lams) would not.
    assert covariance.applies(problem, CoordinateDescent(), n_solves=n_lams)
    assert not covariance.applies(problem, CoordinateDescent(), n_solves=4)
    builds, solves = [], []
    real_build, real_solve = covariance.Covariances, covariance.solve
    monkeypatch.setattr(covariance, "Covariances", lambda p: builds.append(1) or real_build(p))
    monkeypatch.setattr(covariance, "solve", lambda *a, **k: solves.append(1) or real_solve(*a, **k))
    threaded = regularization_path(X, y, "squared", n_lams=n_lams, lam_min_ratio=1e-3, tol=1e-9, n_jobs=2)
    monkeypatch.undo()
    assert len(builds) == 1 and len(solves) == n_lams and threaded.converged.all()
    single = regularization_path(X, y, "squared", lams=threaded.lams, tol=1e-9)
    np.testing.assert_allclose(threaded.objectives, single.objectives, rtol=1e-8)


def test_sparse_columns_of_few_values_stay_with_cd():
    # 2,000 columns of 5 values each: a move on S (2,000 multiply-adds) costs 200 times one on X.
    X = sp.random(1000, 2000, density=0.005, format="csc", random_state=0)
    problem = Problem(X, np.arange(1000.0), "squared", lam_ratio=0.1)
    nnz, pairs = covariance._costs(problem)
    assert pairs <= covariance.PAIRS_PER_VALUE * nnz  # S would be cheap to build ...
    assert problem.n_features**2 > covariance.MOVE_VALUES * nnz  # ... and dear to move on
    assert not covariance.applies(problem, CoordinateDescent(), n_solves=50)


def test_the_support_step_never_raises_p_on_a_singular_block():
    # A one-hot block beside the eliminated intercept: its centred columns sum to zero, so S over a
    # support holding the whole block is singular, and no step on it may raise P.
    X, y = _narrow(layout="dense")
    problem = Problem(X, y, "squared", lam_ratio=0.01)
    cov = covariance.covariances(problem)
    lam1 = problem.penalty.l1
    rng = np.random.default_rng(1)
    support = np.arange(12, dtype=np.int64)  # the block (0-5) and six more
    for _ in range(20):
        w = np.zeros(X.shape[1])
        w[support] = rng.normal(size=12)
        g = cov.S @ w - cov.q
        before = 0.5 * w @ cov.S @ w - cov.q @ w + lam1 * np.abs(w).sum()
        covariance._support_step(cov, w, g, lam1, support)
        after = 0.5 * w @ cov.S @ w - cov.q @ w + lam1 * np.abs(w).sum()
        assert after <= before + 1e-12 * abs(before)
        np.testing.assert_allclose(g, cov.S @ w - cov.q, atol=1e-9)


def test_a_support_step_that_would_raise_p_is_not_taken(monkeypatch):
    # A solve that rounds badly (here: its direction reversed) must leave w and g as they were.
    X, y = _correlated(seed=8)
    problem = Problem(X, y, "squared", lam_ratio=0.02)
    cov = covariance.covariances(problem)
    lam1 = problem.penalty.l1
    optimum = np.zeros(X.shape[1])
    covariance.solve(problem, optimum, 1e-12)
    support = np.flatnonzero(optimum).astype(np.int64)
    w = np.zeros(X.shape[1])
    w[support] = 0.9 * optimum[support]  # the optimum's signs: the whole step would be taken
    real = covariance.cholesky_solve

    def reversed_solve(L, rhs, out):
        real(L, rhs, out)
        out[:] = 2.0 * w[support] - out  # the step away from the minimiser

    monkeypatch.setattr(covariance, "cholesky_solve", reversed_solve)
    g = cov.S @ w - cov.q
    w_before, g_before = w.copy(), g.copy()
    covariance._support_step(cov, w, g, lam1, support)
    np.testing.assert_array_equal(w, w_before)
    np.testing.assert_array_equal(g, g_before)
    monkeypatch.undo()
    covariance._support_step(cov, w, g, lam1, support)  # the true solve: onto the optimum
    np.testing.assert_allclose(w, optimum, atol=1e-7)


def test_a_single_fit_goes_on_on_the_covariances_before_a_dear_gram_matrix(monkeypatch):
    # S costs more than one fit reads a priori (dense rows of 200 correlated columns), but at small lam
    # CD's models cover most columns and would buy Gram matrices costing a large share of S: the
    # solve goes on on S from CD's point, certified, its History and iterations continued, no warning.
    X, y = _correlated(n=2000, d=200, seed=9)
    calls = []
    real = covariance.solve
    monkeypatch.setattr(covariance, "solve", lambda *a, **k: calls.append(1) or real(*a, **k))
    for ratio, handed in ((0.002, True), (0.5, False)):
        problem = Problem(X, y, "squared", lam_ratio=ratio)
        assert not covariance.applies(problem, CoordinateDescent())
        assert covariance.gram_limit(problem, CoordinateDescent()) < np.inf
        calls.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            result = CoordinateDescent(tol=1e-9, max_iter=1000).solve(problem)
        assert len(calls) == int(handed)
        assert result.converged and result.relative_certificate <= 1e-9 and result.stop_reason == "duality_gap"
        history = result.history
        assert np.all(np.diff(history.time) >= 0) and np.all(np.diff(history.data_accesses) >= 0)
        assert len(history) >= 2 if handed else True
        reference, _ = _solve(problem, False, monkeypatch)
        monkeypatch.setattr(covariance, "solve", lambda *a, **k: calls.append(1) or real(*a, **k))
        assert result.objective == pytest.approx(reference.objective, rel=1e-9)
    # Where the form does not suit the problem (logistic, an elastic net), nothing is limited.
    cd = CoordinateDescent()
    assert covariance.gram_limit(Problem(X, np.sign(y), "logistic", lam_ratio=0.01), cd) == np.inf
    assert covariance.gram_limit(Problem(X, y, "squared", lam_ratio=0.01, l1_ratio=0.5), cd) == np.inf


def test_a_hand_over_that_does_not_certify_goes_on_by_cd(monkeypatch):
    # Handed over, the covariance solve stops after one sweep (its point misses tol): CD goes on from
    # there to the certified optimum, and the Result counts both solves' iterations and seconds.
    X, y = _correlated(n=2000, d=200, seed=9)
    problem = Problem(X, y, "squared", lam_ratio=0.002)
    real = covariance.solve
    monkeypatch.setattr(covariance, "solve", lambda p, w, tol, max_sweeps=1, record=None: real(p, w, tol, 1, record))
    handed = []
    real_cd = CoordinateDescent._cd_solve

    def recording(self, *a, **k):
        out = real_cd(self, *a, **k)
        handed.append((out.stop_reason, out.n_iter, out.timings["solve"]))
        return out

    monkeypatch.setattr(CoordinateDescent, "_cd_solve", recording)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = CoordinateDescent(tol=1e-9, max_iter=1000).solve(problem)
    monkeypatch.undo()
    (reason, first_iter, first_seconds), (_, second_iter, second_seconds) = handed
    assert reason == "to_covariances"
    assert result.converged and result.relative_certificate <= 1e-9
    assert result.n_iter == first_iter + second_iter
    assert result.timings["solve"] >= first_seconds + second_seconds - 1e-12
    reference, _ = _solve(problem, False, monkeypatch)
    assert result.objective == pytest.approx(reference.objective, rel=1e-9)
