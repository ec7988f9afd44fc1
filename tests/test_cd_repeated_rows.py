"""Repeated rows: rows equal in their columns, values and label are found in a CSR problem's row
layout (``data.repeated_rows``) and CD solves over one row per group, weighted by the group's
weight (``Problem.distinct_rows``). The objective is the same function of (w, b), so the solve
must reach the optimum of the problem over every row, certified on it, with its dual point given
for every row."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale import SparseLogisticRegression, SparseLogisticRegressionCV
from l1scale.data import repeated_rows
from l1scale.data.memory import as_columns, as_rows
from l1scale.data.repeated_rows import MIN_SHARE, distinct_columns, distinct_rows, distinct_rows_of_columns
from l1scale.exceptions import ConvergenceWarning
from l1scale.path import lam_grid
from l1scale.problems import Problem
from l1scale.solvers.cd import CoordinateDescent

LOSSES = ["logistic", "squared", "squared_hinge", "probit"]


def _categorical(loss, n=900, seed=0, repeat_share=0.4):
    """One-hot rows of four categorical fields (few distinct rows), with a share of them repeated
    exactly, some of those with the other label, and a few rows that differ from a repeated one
    in a single value only (equal signatures, not equal rows)."""
    rng = np.random.default_rng(seed)
    levels = [5, 4, 6, 3]
    base = n - int(repeat_share * n)
    codes = np.column_stack([rng.integers(0, k, base) for k in levels])
    offsets = np.cumsum([0] + levels[:-1])
    X = np.zeros((base, sum(levels)))
    X[np.arange(base)[:, None], codes + offsets] = 1.0
    X[:, -1] *= rng.choice([1.0, 2.0], base)  # a field of two values: near-equal rows
    w = rng.normal(size=X.shape[1])
    z = X @ w + 0.5 * rng.normal(size=base)
    y = z if loss == "squared" else np.where(z > 0, 1.0, -1.0)
    again = rng.integers(0, base, n - base)
    X, y = np.vstack([X, X[again]]), np.concatenate([y, y[again]])
    flip = rng.random(n - base) < 0.2  # some repeats with the other label: not the same row
    if loss != "squared":
        y[base:][flip] *= -1.0
    order = rng.permutation(n)
    return sp.csr_matrix(X[order]), y[order]


def _exact_groups(X, y):
    """The number of distinct (row, label) pairs, by brute force."""
    X = sp.csr_matrix(X)
    return len(
        {
            (X.indices[X.indptr[i] : X.indptr[i + 1]].tobytes(), X.data[X.indptr[i] : X.indptr[i + 1]].tobytes(), y[i])
            for i in range(X.shape[0])
        }
    )


def _solve(problem, tol=1e-12, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return CoordinateDescent(tol=tol, max_iter=1000, **kw).solve(problem)


def test_the_groups_are_exactly_the_equal_rows_with_their_weights():
    X, y = _categorical("logistic")
    c = np.random.default_rng(1).random(X.shape[0])
    found = distinct_rows(as_rows(X), y, c)
    assert found is not None
    assert found.first.shape[0] == _exact_groups(X, y) < X.shape[0]
    assert (np.diff(found.first) > 0).all() and (found.group[found.first] == np.arange(found.first.shape[0])).all()
    # Each row is its group's row, and each group weighs what its rows weigh.
    matrix = distinct_columns(as_rows(X), found.first)
    dense, merged = X.toarray(), matrix.toarray()
    np.testing.assert_array_equal(merged[found.group], dense)
    np.testing.assert_array_equal(found.y[found.group], y)
    np.testing.assert_allclose(found.c, np.bincount(found.group, weights=c), rtol=1e-15)
    # The column layout of the distinct rows is canonical.
    assert matrix.format == "csc" and matrix.has_canonical_format
    check = matrix.copy()
    check.sort_indices()
    np.testing.assert_array_equal(check.indices, matrix.indices)


def test_rows_that_differ_are_never_merged():
    # Rows equal at their ends (length, first and last column and value) but not in the middle,
    # and rows equal but for their label.
    X = sp.csr_matrix(np.array([[1.0, 2.0, 0.0, 3.0], [1.0, 0.0, 2.0, 3.0], [1.0, 2.0, 0.0, 3.0]] * 10))
    y = np.tile([1.0, 1.0, -1.0], 10)
    found = distinct_rows(as_rows(X), y, np.ones(30))
    assert found.first.shape[0] == 3
    np.testing.assert_array_equal(distinct_columns(as_rows(X), found.first).toarray()[found.group], X.toarray())
    np.testing.assert_array_equal(found.y[found.group], y)


def test_too_few_repeats_leave_the_problem_as_it_is():
    rng = np.random.default_rng(0)
    X = sp.random(400, 50, density=0.2, random_state=0, format="csr")
    y = np.where(rng.random(400) < 0.5, 1.0, -1.0)
    assert distinct_rows(as_rows(X), y, np.ones(400)) is None  # every row distinct
    k = int(MIN_SHARE * 400) - 2  # just below the share
    X2 = sp.vstack([X[: 400 - k], X[:k]]).tocsr()
    y2 = np.concatenate([y[: 400 - k], y[:k]])
    assert distinct_rows(as_rows(X2), y2, np.ones(400)) is None
    assert Problem(X2, y2, "logistic", lam=0.01).distinct_rows() is None
    # Nor in the column layouts.
    assert Problem(X2.toarray(), y2, "logistic", lam=0.01).distinct_rows() is None
    assert Problem(X2.tocsc(), y2, "logistic", lam=0.01).distinct_rows() is None


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.7])
def test_the_solve_over_the_distinct_rows_is_the_solve_over_every_row(loss, fit_intercept, l1_ratio):
    X, y = _categorical(loss)
    weights = np.random.default_rng(2).random(X.shape[0]) + 0.5
    p = Problem(X, y, loss, lam_ratio=0.05, l1_ratio=l1_ratio, fit_intercept=fit_intercept, sample_weight=weights)
    groups = p.distinct_rows()
    assert groups is not None and groups.problem.n_samples < p.n_samples
    # The same objective at any point, and the same lam_max.
    w = np.random.default_rng(3).normal(size=X.shape[1])
    assert groups.problem.objective(w, 0.3) == pytest.approx(p.objective(w, 0.3), rel=1e-13)
    assert groups.problem.lam_max() == pytest.approx(p.lam_max(), rel=1e-13)
    merged = _solve(
        Problem(X, y, loss, lam_ratio=0.05, l1_ratio=l1_ratio, fit_intercept=fit_intercept, sample_weight=weights)
    )
    every_row = _solve(p, deduplicate=False)
    assert merged.objective == pytest.approx(every_row.objective, rel=1e-10)
    # Certified on the problem over every row, by the dual point given for every row.
    assert merged.converged and merged.relative_certificate <= 1e-12
    if merged.dual_point is not None:
        assert merged.dual_point.shape == (p.n_samples,)
        assert merged.certificate == pytest.approx(
            merged.objective - p.dual_value(merged.dual_point), rel=1e-6, abs=1e-12
        )


@pytest.mark.parametrize("loss, l1_ratio", [("logistic", 1.0), ("squared", 0.8)])
def test_a_path_over_the_distinct_rows_is_the_path_over_every_row(loss, l1_ratio):
    # (The squared elastic net: the Lasso of these narrow data is solved on its covariances.)
    X, y = _categorical(loss, seed=4)
    p = Problem(X, y, loss, lam=1.0, l1_ratio=l1_ratio)
    lams = lam_grid(p.lam_max(), 12, 1e-3)
    merged = list(CoordinateDescent(tol=1e-10).solve_path(p, lams))
    every_row = list(CoordinateDescent(tol=1e-10, deduplicate=False).solve_path(p, lams))
    for lam, a, b in zip(lams, merged, every_row, strict=True):
        q = p.with_lam(float(lam))
        assert a.objective == pytest.approx(b.objective, rel=1e-8)
        # Certified to tol on the problem over every row, by its dual point over every row.
        assert a.converged and a.relative_certificate <= 1e-10
        if a.dual_point is not None:
            assert a.dual_point.shape == (p.n_samples,)
            assert a.objective - q.dual_value(a.dual_point) <= 1e-10 * a.objective + 1e-15
    # Found once for the path: its seconds count at the first lam only.
    assert p.distinct_rows().seconds == 0.0 == p.distinct_rows().conversion_seconds


def test_the_lasso_on_its_covariances_is_not_searched():
    # S is built once and the rows are read by the certificates only: no search, no conversion.
    X, y = _categorical("squared", seed=4)
    p = Problem(X, y, "squared", lam_ratio=0.01)
    result = CoordinateDescent(tol=1e-10).solve(p)
    assert not p.has_derived("distinct_rows") and p.rows_only
    assert result.converged and result.dual_point.shape == (p.n_samples,)
    lams = lam_grid(p.lam_max(), 6, 1e-2)
    list(CoordinateDescent(tol=1e-8).solve_path(p, lams))
    assert not p.has_derived("distinct_rows") and not p.has_derived("distinct_rows_of_columns")


def test_sample_weights_and_repeated_rows_fit_the_same_model():
    # scikit-learn's weight check: a row of weight 2 is that row twice (here: both are merged).
    X, y = _categorical("logistic", repeat_share=0.0)
    twice = sp.vstack([X, X[:100]]).tocsr()
    weights = np.ones(X.shape[0])
    weights[:100] = 2.0
    a = SparseLogisticRegression(lam=1e-3, tol=1e-10).fit(twice, np.concatenate([y, y[:100]]))
    b = SparseLogisticRegression(lam=1e-3, tol=1e-10).fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-7)
    np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-7)


def test_the_search_counts_in_the_solve_and_the_conversion_apart():
    X, y = _categorical("logistic")
    p = Problem(X, y, "logistic", lam_ratio=0.1)
    result = CoordinateDescent(tol=1e-6).solve(p)
    groups = p.distinct_rows()  # kept from the solve's search: no seconds of its own now
    assert groups.seconds == 0.0 and groups.problem.has_columns
    assert result.timings["convert"] > 0.0
    assert result.history.time[-1] <= result.timings["solve"]


@pytest.mark.parametrize("layout", ["csc", "dense"])
def test_a_column_layout_finds_the_same_groups_as_the_rows(layout):
    X, y = _categorical("logistic", seed=5)
    c = np.random.default_rng(6).random(X.shape[0])
    by_rows = distinct_rows(as_rows(X), y, c)
    columns = as_columns(X.tocsc() if layout == "csc" else X.toarray())
    by_columns = distinct_rows_of_columns(columns, y, c)
    np.testing.assert_array_equal(by_columns.first, by_rows.first)
    np.testing.assert_array_equal(by_columns.group, by_rows.group)
    np.testing.assert_allclose(by_columns.c, by_rows.c, rtol=1e-15)


@pytest.mark.parametrize("layout", ["csr", "csc", "dense"])
def test_a_collision_of_hashes_keeps_its_rows_apart(layout):
    # Every hash made equal: the value-by-value check must still tell the rows apart, in the
    # row layout (``_verify_rows``) as in the column layouts (``_verify_columns``).
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 2.0], [1.0, 0.0, 2.0], [1.0, 0.0, 3.0]] * 5))
    y_bits = np.zeros(20, dtype=np.uint64)
    hashes, counts = np.zeros(20, dtype=np.uint64), np.full(20, 2, dtype=np.int64)
    rep = np.empty(20, dtype=np.int64)
    repeated_rows._candidates(hashes, counts, y_bits, rep)
    assert (rep == 0).all()  # one candidate group for all
    if layout == "csr":
        rows = as_rows(X)
        repeated_rows._verify_rows(rows.indices, rows.indptr, rows.data.view(np.uint64), y_bits, rep)
    else:
        columns = as_columns(X.tocsc() if layout == "csc" else X.toarray())
        data, indices, indptr, dense = columns.arrays
        repeated_rows._verify_columns(data.view(np.uint64), indices, indptr, dense, rep)
    group, first, weights = np.empty(20, dtype=np.int64), np.empty(20, dtype=np.int64), np.empty(20)
    n = repeated_rows._number(rep, np.ones(20), group, first, weights)
    # Rows equal to row 0 stay with it; the others are their own groups.
    equal = (X.toarray() == X.toarray()[0]).all(axis=1)
    assert (group[equal] == 0).all() and np.unique(group[~equal]).shape[0] == (~equal).sum()
    assert n == 1 + (~equal).sum()


@pytest.mark.parametrize("layout", ["csc", "dense"])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_a_column_layout_is_merged_for_a_path_only(layout, loss):
    X, y = _categorical(loss, seed=7)
    Xl = X.tocsc() if layout == "csc" else X.toarray()
    p = Problem(Xl, y, loss, lam=1.0)
    # A single solve does not search a column layout (it would not pay), a path does.
    assert p.distinct_rows() is None
    groups = p.distinct_rows(columns=True)
    assert groups is not None and groups.problem.n_samples == _exact_groups(X, y)
    lams = lam_grid(p.lam_max(), 8, 1e-2)
    merged = list(CoordinateDescent(tol=1e-10).solve_path(Problem(Xl, y, loss, lam=1.0), lams))
    every_row = list(CoordinateDescent(tol=1e-10, deduplicate=False).solve_path(p, lams))
    for lam, a, b in zip(lams, merged, every_row, strict=True):
        assert a.objective == pytest.approx(b.objective, rel=1e-8)
        assert a.converged and a.relative_certificate <= 1e-10
        if a.dual_point is not None:
            assert a.dual_point.shape == (p.n_samples,)
            assert a.objective - p.with_lam(float(lam)).dual_value(a.dual_point) <= 1e-10 * a.objective + 1e-12


def test_cross_validation_merges_each_fold(monkeypatch):
    X, y = _categorical("logistic", seed=8)
    searched = []
    search = Problem.distinct_rows

    def counted(problem, columns=False):
        found = search(problem, columns)
        searched.append(found is not None)
        return found

    monkeypatch.setattr(Problem, "distinct_rows", counted)
    a = SparseLogisticRegressionCV(n_lams=6, cv=3, tol=1e-8).fit(X, y)
    assert any(searched)  # the folds' paths (column layouts) were merged
    monkeypatch.setattr(CoordinateDescent, "_distinct_rows", lambda self, problem, **kw: None)
    b = SparseLogisticRegressionCV(n_lams=6, cv=3, tol=1e-8).fit(X, y)
    np.testing.assert_allclose(a.scores_, b.scores_, rtol=1e-6)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-4)
