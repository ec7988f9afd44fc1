"""CD's row start on a CSR problem: the columns a large lam's model can use are copied out of the
rows, solved over, and certified over every column from the rows; the rest of X is never
converted. Same optimum as the solve over the converted columns, a certificate anyone can check,
and the full solve from where it left when the copied columns do not hold the support."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale import SparseLinearRegression, SparseLogisticRegression
from l1scale.data.memory import as_rows
from l1scale.data.rows import columns_of_rows, row_correlations, row_dots_and_norms
from l1scale.exceptions import ConvergenceWarning
from l1scale.problems import Problem
from l1scale.solvers import _row_start
from l1scale.solvers.cd import CoordinateDescent


def _text_like(n=400, d=3000, seed=0, loss="logistic"):
    """Sparse rows over many columns of skewed popularity; a few columns carry the labels."""
    rng = np.random.default_rng(seed)
    popularity = rng.pareto(1.2, size=d) + 0.05
    p = np.minimum(popularity / popularity.sum() * 40, 0.5)
    X = sp.random(n, d, density=1.0, random_state=seed, format="csr")  # values in (0, 1)
    X = X.multiply(rng.random((n, d)) < p).tocsr()
    X.eliminate_zeros()
    w = np.zeros(d)
    top = np.argsort(-p)[:12]
    w[top] = rng.normal(scale=3.0, size=12)
    z = X @ w + 0.3 * rng.normal(size=n)
    y = z if loss == "squared" else np.where(z > np.median(z), 1.0, -1.0)
    return X.tocsr(), y


def _solve(problem, tol=1e-10):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return CoordinateDescent(tol=tol, max_iter=1000).solve(problem)


def test_row_passes_give_the_column_passes_sums():
    X, _ = _text_like()
    rows = as_rows(X)
    n, d = X.shape
    rng = np.random.default_rng(1)
    r, c = rng.normal(size=n), rng.uniform(0.5, 2.0, size=n) / n
    dots, norms = np.empty(d), np.empty(d)
    row_dots_and_norms(*rows.arrays[:3], r, c, dots, norms)
    np.testing.assert_allclose(dots, X.T @ r, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(norms, np.sqrt(X.multiply(X).T @ c), rtol=1e-12)
    v = rng.normal(size=n)
    out = np.empty(d)
    row_correlations(*rows.arrays[:3], v, out)
    np.testing.assert_allclose(out, X.T @ v, rtol=1e-12, atol=1e-14)
    cols = np.sort(rng.choice(d, 200, replace=False))
    M = columns_of_rows(rows, cols)
    expected = X[:, cols].tocsc()
    expected.sort_indices()
    assert M.format == "csc" and M.shape == (n, 200)
    np.testing.assert_array_equal(M.indptr, expected.indptr)
    np.testing.assert_array_equal(M.indices, expected.indices)
    np.testing.assert_array_equal(M.data, expected.data)
    assert columns_of_rows(rows, cols, max_nnz=expected.nnz - 1) is None
    assert columns_of_rows(rows, cols, max_nnz=expected.nnz) is not None


@pytest.mark.parametrize("which", ["none", "all", "empty_rows"])
def test_columns_copied_out_of_the_rows_at_the_edges(which):
    """No column, every column (X's own CSC), and rows that hold none of the columns: the same
    canonical matrix as scipy's column selection; a cap of zero values refuses any stored value."""
    X, _ = _text_like(n=60, d=200, seed=3)
    X = X.tolil()
    X[10:20, :] = 0.0  # rows with nothing stored
    X = X.tocsr()
    X.eliminate_zeros()
    rows = as_rows(X)
    d = X.shape[1]
    cols = {"none": np.array([], dtype=np.int64), "all": np.arange(d), "empty_rows": np.arange(0, d, 7)}[which]
    M = columns_of_rows(rows, cols)
    expected = X[:, cols].tocsc()
    expected.sort_indices()
    assert M.shape == expected.shape and M.has_canonical_format
    np.testing.assert_array_equal(M.indptr, expected.indptr)
    np.testing.assert_array_equal(M.indices, expected.indices)
    np.testing.assert_array_equal(M.data, expected.data)
    assert (columns_of_rows(rows, cols, max_nnz=0) is None) == (expected.nnz > 0)


def test_a_csr_problem_converts_its_columns_only_when_read():
    X, y = _text_like()
    p = Problem(X, y, lam_ratio=0.3)
    q = Problem(X.tocsc(), y, lam_ratio=0.3)
    assert not p.has_columns and q.has_columns
    assert p.lam == pytest.approx(q.lam, rel=1e-14)  # lam_max read from the rows
    np.testing.assert_allclose(p.column_norms(), q.column_norms(), rtol=1e-14)
    w = np.zeros(X.shape[1])
    w[:5] = 0.1
    assert p.objective(w, 0.2) == pytest.approx(q.objective(w, 0.2), rel=1e-14)
    assert p.certificate(w, 0.2).value == pytest.approx(q.certificate(w, 0.2).value, rel=1e-12)
    assert not p.has_columns
    other = p.with_lam(p.lam / 2)
    assert other.columns.shape == X.shape  # made on first read, shared with the copy it came from
    assert p.has_columns
    np.testing.assert_array_equal(p.X.indptr, q.X.indptr)


@pytest.mark.parametrize(
    "loss, fit_intercept, l1_ratio, weighted",
    [
        ("logistic", True, 1.0, False),
        ("logistic", False, 1.0, True),
        ("logistic", True, 0.7, True),
        ("squared", True, 1.0, False),
        ("squared_hinge", False, 1.0, True),
    ],
)
def test_the_row_start_certifies_the_column_solves_optimum(loss, fit_intercept, l1_ratio, weighted):
    X, y = _text_like(loss=loss, seed=3)
    s = np.random.default_rng(4).uniform(0.3, 3.0, size=y.shape[0]) if weighted else None
    kw = {"loss": loss, "lam_ratio": 0.3, "fit_intercept": fit_intercept, "l1_ratio": l1_ratio, "sample_weight": s}
    p, q = Problem(X, y, **kw), Problem(X.tocsc(), y, **kw)
    res, ref = _solve(p), _solve(q)
    assert not p.has_columns  # solved and certified without converting X
    assert p.conversion_seconds == 0.0 and res.timings["convert"] > 0.0  # the copy, reported as one
    assert res.history.active[-1] < X.shape[1] // 5  # over a few copied columns
    assert res.converged and res.relative_certificate <= 1e-10
    # The certificate is the whole problem's: anyone can check it from the dual point.
    assert res.certificate == pytest.approx(res.objective - q.dual_value(res.dual_point), rel=1e-6, abs=1e-14)
    assert res.objective == pytest.approx(q.objective(res.coef, res.intercept), rel=1e-13)
    assert res.objective <= ref.objective + 2e-10 * abs(ref.objective)
    np.testing.assert_allclose(res.coef, ref.coef, atol=1e-4)
    # The loss gradient at the returned point: the copied columns' solve's own (exact on the
    # support), a bound on it on the others.
    z = X @ res.coef + res.intercept
    expected = X.T @ (q.c * q.loss.derivative(y, z))
    support = res.coef != 0.0
    np.testing.assert_allclose(res.loss_gradient[support], expected[support], rtol=1e-6, atol=1e-12)
    copied = np.abs(q.null_gradient()) >= _row_start.REACH * q.penalty.l1
    assert support.sum() > 0 and (~copied).sum() > X.shape[1] // 2
    assert np.all(res.loss_gradient[~copied] >= np.abs(expected[~copied]) - 1e-12)


def test_a_support_outside_the_copied_columns_goes_on_over_every_column(monkeypatch):
    """With only the columns of |g0_j| >= 2.5 lam1 copied (the rule takes 0.9 lam1), the features
    that enter later are outside: the row start's certificate fails, and the solve goes on over
    all the columns from its point, to the same optimum."""
    X, y = _text_like(seed=5)
    q = Problem(X.tocsc(), y, lam_ratio=0.2)
    ref = _solve(q)
    g0 = np.abs(q.null_gradient())
    taken = np.flatnonzero(g0 >= 2.5 * q.penalty.l1)
    assert taken.shape[0] > 0 and np.setdiff1d(np.flatnonzero(ref.coef), taken).shape[0] > 0
    monkeypatch.setattr(_row_start, "REACH", 2.5)
    p = Problem(X, y, lam_ratio=0.2)
    res = _solve(p)
    assert p.has_columns  # the full solve converted X
    assert res.converged and res.relative_certificate <= 1e-10
    assert res.objective <= ref.objective + 2e-10 * abs(ref.objective)
    np.testing.assert_allclose(res.coef, ref.coef, atol=1e-4)


def test_the_row_start_is_left_when_the_columns_would_be_most_of_x(monkeypatch):
    X, y = _text_like(seed=6)
    p = Problem(X, y, lam_ratio=0.01)  # most columns violate at w = 0
    calls = []
    monkeypatch.setattr(_row_start, "columns_of_rows", lambda *a, **k: calls.append(1))
    res = _solve(p)
    assert p.has_columns and res.converged and calls == []
    # The conversion, made in this solve, is reported apart from it.
    assert res.timings["convert"] == p.conversion_seconds > 0.0
    # A cold start only: a warm one has its own gradient to go on from.
    p = Problem(X, y, lam_ratio=0.3)
    warm = CoordinateDescent(tol=1e-8).solve(p, np.zeros(X.shape[1]))
    assert p.has_columns and warm.converged and calls == []


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_estimators_give_one_model_whatever_the_layout(layout):
    X, y = _text_like(seed=7)
    Xl = X if layout == "csr" else X.tocsc()
    clf = SparseLogisticRegression(lam_ratio=0.3, tol=1e-10).fit(Xl, y)
    ref = SparseLogisticRegression(lam_ratio=0.3, tol=1e-10).fit(X.toarray(), y)
    np.testing.assert_allclose(clf.coef_, ref.coef_, atol=1e-4)
    assert clf.result_.objective <= ref.result_.objective + 2e-10
    Xr, yr = _text_like(seed=8, loss="squared")
    reg = SparseLinearRegression(lam_ratio=0.3, tol=1e-10).fit(Xr if layout == "csr" else Xr.tocsc(), yr)
    ref = SparseLinearRegression(lam_ratio=0.3, tol=1e-10).fit(Xr.toarray(), yr)
    np.testing.assert_allclose(reg.coef_, ref.coef_, atol=1e-4)
