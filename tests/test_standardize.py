"""``standardize=True``: the model of a StandardScaler pipeline, on the original scale,
without densifying sparse data (issue 15, problem 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner
from sklearn.preprocessing import StandardScaler

from l1scale import load
from l1scale.cli import main
from l1scale.data import dump_svmlight, load_svmlight
from l1scale.data.stream import Stream
from l1scale.estimators import SparseLinearRegression, SparseLogisticRegression


@pytest.fixture(scope="module")
def dense():
    """Columns of very different scales and offsets, labels from two of them."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 8)) * rng.uniform(0.05, 20, 8) + rng.normal(size=8) * 3
    y = (X[:, 0] / X[:, 0].std() + X[:, 1] / X[:, 1].std() + rng.normal(size=300) > 0).astype(int)
    return X, y, rng.uniform(0.2, 3.0, 300)


def _pipeline_model(X, y, sample_weight, **params):
    """The StandardScaler + estimator pipeline's model mapped back to the original scale."""
    scaler = StandardScaler().fit(X, sample_weight=sample_weight)
    est = SparseLogisticRegression(**params).fit(scaler.transform(X), y, sample_weight=sample_weight)
    coef = est.coef_ / scaler.scale_
    return est, coef, est.intercept_ - coef @ scaler.mean_, scaler


@pytest.mark.parametrize("weighted", [False, True])
def test_equals_a_standard_scaler_pipeline(dense, weighted):
    X, y, w = dense
    w = w if weighted else None
    std = SparseLogisticRegression(lam=0.005, tol=1e-12, standardize=True).fit(X, y, sample_weight=w)
    pipe, coef, intercept, scaler = _pipeline_model(X, y, w, lam=0.005, tol=1e-12)
    assert np.count_nonzero(std.coef_) > 0
    np.testing.assert_allclose(std.coef_, coef, atol=1e-8, rtol=0)
    np.testing.assert_allclose(std.intercept_, intercept, atol=1e-8, rtol=0)
    np.testing.assert_allclose(std.predict_proba(X), pipe.predict_proba(scaler.transform(X)), atol=1e-8, rtol=0)
    # result_ is the solver's, on the standardised scale
    np.testing.assert_allclose(np.ravel(std.result_.coef), np.ravel(pipe.coef_), atol=1e-8, rtol=0)


def test_regression_equals_a_standard_scaler_pipeline(dense):
    X, _, w = dense
    t = X[:, 2] * 0.5 - X[:, 5] / X[:, 5].std() + 1.0
    std = SparseLinearRegression(lam=0.01, tol=1e-12, standardize=True).fit(X, t, sample_weight=w)
    scaler = StandardScaler().fit(X, sample_weight=w)
    pipe = SparseLinearRegression(lam=0.01, tol=1e-12).fit(scaler.transform(X), t, sample_weight=w)
    np.testing.assert_allclose(std.coef_, pipe.coef_ / scaler.scale_, atol=1e-8, rtol=0)
    np.testing.assert_allclose(std.predict(X), pipe.predict(scaler.transform(X)), atol=1e-8, rtol=0)


class _NoDense(sp.csr_matrix):
    """A sparse matrix that refuses to be densified."""

    def toarray(self, *args, **kw):
        raise AssertionError("densified")

    todense = toarray

    def __array__(self, *args, **kw):
        raise AssertionError("densified")


def test_sparse_input_gives_the_dense_model_and_stays_sparse(dense, monkeypatch):
    X, y, w = dense
    X = X * (np.random.default_rng(1).random(X.shape) < 0.5)  # zeros to skip
    ref = SparseLogisticRegression(lam=0.005, tol=1e-12, standardize=True).fit(X, y, sample_weight=w)
    from l1scale import _standardize

    seen = []
    real = _standardize.scaled

    def spy(X, sigma):
        out = real(X, sigma)
        seen.append((sp.issparse(X), sp.issparse(out)))
        return out

    monkeypatch.setattr(_standardize, "scaled", spy)
    for layout in (sp.csr_matrix, sp.csc_matrix):
        est = SparseLogisticRegression(lam=0.005, tol=1e-12, standardize=True).fit(layout(X), y, sample_weight=w)
        np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-8, rtol=0)
        np.testing.assert_allclose(est.intercept_, ref.intercept_, atol=1e-8, rtol=0)
    assert seen == [(True, True), (True, True)]
    sigma = _standardize.column_scales(_NoDense(X), np.ones(X.shape[0]))
    assert isinstance(real(_NoDense(X), sigma), sp.csr_matrix)
    np.testing.assert_allclose(sigma, X.std(axis=0), rtol=1e-12)


def test_a_constant_column_gets_weight_zero(dense):
    X, y, _ = dense
    X = np.column_stack([X, np.full(X.shape[0], 7.0)])
    est = SparseLogisticRegression(lam_ratio=0.01, standardize=True).fit(X, y)
    assert est.coef_[0, -1] == 0.0
    assert np.isfinite(est.coef_).all() and np.count_nonzero(est.coef_) > 0


def test_lam_ratio_refers_to_the_standardised_problem(dense):
    X, y, _ = dense
    std = SparseLogisticRegression(lam_ratio=0.1, tol=1e-10, standardize=True).fit(X, y)
    _, coef, _, scaler = _pipeline_model(X, y, None, lam_ratio=0.1, tol=1e-10)
    pipe = SparseLogisticRegression(lam_ratio=0.1, tol=1e-10).fit(scaler.transform(X), y)
    assert std.lam_[0] == pytest.approx(pipe.lam_[0], rel=1e-10)
    np.testing.assert_allclose(std.coef_, coef, atol=1e-7, rtol=0)
    assert not SparseLogisticRegression(lam_ratio=0.999, standardize=True).fit(X, y).coef_.any()


def test_spambase_selects_many_more_features(data_dir):
    path = data_dir / "spambase" / "spambase.svm.bz2"
    if not path.exists():
        pytest.skip(f"{path} not found")
    X, y = load_svmlight(path)[:2]
    plain = np.count_nonzero(SparseLogisticRegression().fit(X, y).coef_)
    scaled = np.count_nonzero(SparseLogisticRegression(standardize=True).fit(X, y).coef_)
    assert scaled >= plain + 20, (plain, scaled)


def test_a_streamed_fit_names_standardize(dense, tmp_path):
    X, y, _ = dense
    with pytest.raises(ValueError, match="standardize"):
        SparseLogisticRegression(lam=0.01, standardize=True).fit(Stream.from_arrays(X, y.astype(float)))
    with pytest.raises(ValueError, match="standardize"):
        SparseLogisticRegression(lam=0.01, solver="rmmp", standardize=True).fit(X, y)
    with pytest.raises(ValueError, match="standardize"):
        SparseLinearRegression(lam=0.01, solver="online", standardize=True).partial_fit(X, y)


def test_cli_standardize(dense, tmp_path):
    X, y, _ = dense
    data = tmp_path / "d.svm"
    dump_svmlight(sp.csr_matrix(X), np.where(y == 1, 1.0, -1.0), data)
    model = tmp_path / "m.bin"
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "train",
            str(data),
            "--lam",
            "0.005",
            "--tol",
            "1e-10",
            "--standardize",
            "-o",
            str(model),
            "--quiet",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)
    est = load(model)
    assert est.standardize is True
    Xr, yr = load_svmlight(data)[:2]
    ref = SparseLogisticRegression(lam=0.005, tol=1e-10, standardize=True).fit(Xr, yr)
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-6, rtol=0)
    streamed = runner.invoke(main, ["train", str(data), "--solver", "rmmp", "--lam", "0.005", "--standardize"])
    assert streamed.exit_code == 2 and "--standardize" in streamed.output
