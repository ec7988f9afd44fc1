"""CD's Gram matrices kept across Newton steps for a loss of constant curvature (the Lasso): the
matrix handed to a model or to the support's system is that system's, and a solve or a path with
the cache reaches the same certified optimum as without it, using it where it should."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale.data.memory import as_columns
from l1scale.exceptions import ConvergenceWarning
from l1scale.path import regularization_path
from l1scale.problems import Problem
from l1scale.solvers import _covariance, _gram_cache, _gram_kernels
from l1scale.solvers._cd_state import Iterate
from l1scale.solvers._gram_cache import GramCache
from l1scale.solvers.cd import CoordinateDescent


def _regression(n=300, d=60, seed=0, layout="csc"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.3)
    X[:, :5] += 0.5 * X[:, 5:10]  # correlated columns: models that CD sweeps many times
    w = np.zeros(d)
    w[:12] = rng.normal(scale=2.0, size=12)
    y = X @ w + 0.5 + 0.3 * rng.normal(size=n)
    Xl = X if layout == "dense" else getattr(sp, f"{layout}_matrix")(X)
    return X, Xl, y


def _expected_gram(X, cols, c, fit_intercept):
    B = X[:, cols]
    if fit_intercept:
        B = np.column_stack([B, np.ones(X.shape[0])])
    return B.T @ (c[:, None] * B)


@pytest.mark.parametrize("layout", ["dense", "csc"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_the_cached_matrix_is_the_models_gram_matrix(layout, fit_intercept):
    X, Xl, y = _regression(layout=layout)
    c = np.random.default_rng(3).uniform(0.5, 2.0, size=X.shape[0])
    problem = Problem(Xl, y, "squared", lam_ratio=0.1, fit_intercept=fit_intercept, sample_weight=c)
    pt = Iterate(problem, None, None)
    cache = GramCache(problem, gram_max=100)
    assert cache.enabled
    arrays = as_columns(Xl).arrays
    first = np.array([7, 3, 40, 11, 25, 0, 33, 18], dtype=np.int64)
    counts = np.empty(X.shape[0], dtype=np.int64)
    _gram_kernels.gram_cost(*arrays, first, first.shape[0], counts)
    Q = _gram_kernels.model_gram(*arrays, first, first.shape[0], pt.D, counts, fit_intercept)
    cache.store(np.concatenate([first, np.arange(50, 60)]), first.shape[0], Q)
    # pt.D is c * 1 at every iterate: the weights the sums take.
    np.testing.assert_array_equal(pt.D, problem.c)
    # A model over some of the cached columns and one new one: the cached first, the new one last.
    active = np.array([18, 3, 52, 25, 7, 40, 0, 11, 33], dtype=np.int64)
    got = cache.lookup(pt, active, active.shape[0], bought=True)
    assert got is not None and active[-1] == 52
    assert sorted(active[:-1]) == sorted(first)
    np.testing.assert_allclose(got, _expected_gram(X, active, problem.c, fit_intercept), rtol=1e-12, atol=1e-13)
    # The support's system, over cached columns only; None when one is missing.
    support = np.array([40, 0, 25], dtype=np.int64)
    np.testing.assert_allclose(
        cache.over(pt, support), _expected_gram(X, support, problem.c, fit_intercept), rtol=1e-12, atol=1e-13
    )
    assert cache.over(pt, np.array([40, 52], dtype=np.int64)) is None
    # More than a quarter of the model new: no matrix from the cache.
    many_new = np.concatenate([first[:4], np.arange(41, 46)]).astype(np.int64)
    assert cache.lookup(pt, many_new, many_new.shape[0], bought=True) is None


def test_a_loss_whose_curvature_moves_has_no_cache():
    _, Xl, y = _regression()
    assert not GramCache(Problem(Xl, np.sign(y - np.median(y)), "logistic", lam_ratio=0.1), 100).enabled
    assert not GramCache(Problem(Xl, y, "squared", lam_ratio=0.1), 0).enabled


def _count_lookups(monkeypatch):
    """Record, for every lookup of the cache, whether it handed a matrix over (CD's Newton steps:
    these problems are narrow enough for the Lasso's covariance form, ``_covariance``, which is
    turned off here, from the start and as a hand-over)."""
    monkeypatch.setattr(_covariance, "applies", lambda *a, **k: False)
    monkeypatch.setattr(_covariance, "gram_limit", lambda *a, **k: np.inf)
    hits = []
    real = _gram_cache.GramCache.lookup

    def counting(self, *a, **k):
        out = real(self, *a, **k)
        hits.append(out is not None)
        return out

    monkeypatch.setattr(_gram_cache.GramCache, "lookup", counting)
    return hits


def _solve(problem, cache_on, monkeypatch, tol=1e-10):
    monkeypatch.setattr(_covariance, "applies", lambda *a, **k: False)
    monkeypatch.setattr(_covariance, "gram_limit", lambda *a, **k: np.inf)
    if not cache_on:
        monkeypatch.setattr(_gram_cache.GramCache, "lookup", lambda *a, **k: None)
        monkeypatch.setattr(_gram_cache.GramCache, "over", lambda *a, **k: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        result = CoordinateDescent(tol=tol, max_iter=1000).solve(problem)
    monkeypatch.undo()
    return result


@pytest.mark.parametrize("layout", ["dense", "csr", "csc"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.7])
def test_solves_with_and_without_the_cache_reach_the_same_optimum(layout, fit_intercept, l1_ratio, monkeypatch):
    X, Xl, y = _regression(layout=layout, seed=1)
    c = np.random.default_rng(5).uniform(0.2, 3.0, size=X.shape[0])
    for ratio in (0.1, 0.01):
        problem = Problem(
            Xl, y, "squared", lam_ratio=ratio, fit_intercept=fit_intercept, sample_weight=c, l1_ratio=l1_ratio
        )
        calls = _count_lookups(monkeypatch)
        with_cache = _solve(problem, True, monkeypatch)
        without = _solve(problem, False, monkeypatch)
        assert with_cache.converged and without.converged
        assert with_cache.relative_certificate <= 1e-10
        assert with_cache.objective == pytest.approx(without.objective, rel=1e-10)
        np.testing.assert_allclose(with_cache.coef, without.coef, atol=1e-6)
        assert calls  # every Newton model asked the cache


def test_a_lasso_path_takes_its_models_matrices_from_the_cache(monkeypatch):
    X, Xl, y = _regression(n=400, d=80, seed=2, layout="csc")
    hits = _count_lookups(monkeypatch)
    path = regularization_path(Xl, y, "squared", n_lams=15, lam_min_ratio=1e-2, tol=1e-8)
    monkeypatch.undo()
    assert sum(hits) >= 5
    for k, lam in enumerate(path.lams):
        reference = CoordinateDescent(tol=1e-12, max_iter=2000).solve(Problem(Xl, y, "squared", lam=lam))
        assert path.objectives[k] == pytest.approx(reference.objective, rel=1e-7)
