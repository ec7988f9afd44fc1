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


# --------------------------------------------------------------------------- paths and CV
def test_regularization_path_standardize_equals_the_path_of_scaled_data(dense):
    from l1scale.path import regularization_path

    X, y, w = dense
    y_pm = np.where(y == 1, 1.0, -1.0)
    ours = regularization_path(X, y_pm, n_lams=8, sample_weight=w, tol=1e-12, standardize=True)
    scaler = StandardScaler().fit(X, sample_weight=w)
    theirs = regularization_path(scaler.transform(X), y_pm, n_lams=8, sample_weight=w, tol=1e-12)
    np.testing.assert_allclose(ours.lams, theirs.lams, rtol=1e-12)  # lam_max of the standardised problem
    np.testing.assert_allclose(ours.coefs, theirs.coefs / scaler.scale_, atol=1e-8, rtol=0)  # original scale
    np.testing.assert_allclose(ours.objectives, theirs.objectives, rtol=1e-9)
    sparse = regularization_path(sp.csr_matrix(X), y_pm, n_lams=8, sample_weight=w, tol=1e-12, standardize=True)
    np.testing.assert_allclose(sparse.coefs, ours.coefs, atol=1e-8, rtol=0)


def test_cv_scales_each_fold_by_its_training_rows(dense, monkeypatch):
    """Equal to a StandardScaler pipeline fitted on each fold's training rows (the held-out
    rows never enter the scales), the grid and refit to the pipeline of all the data."""
    from sklearn.metrics import log_loss
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline

    from l1scale import _standardize
    from l1scale.path import SparseLogisticRegressionCV

    X, y, w = dense
    folds = list(StratifiedKFold(4).split(X, y))
    scaled_rows = []
    column_scales = _standardize.column_scales
    monkeypatch.setattr(
        _standardize, "column_scales", lambda X, sw: scaled_rows.append(X.shape[0]) or column_scales(X, sw)
    )
    kw = dict(n_lams=8, lam_min_ratio=0.01, cv=folds, tol=1e-11)
    ours = SparseLogisticRegressionCV(**kw, standardize=True).fit(X, y, sample_weight=w)
    # the scales of all the data (grid, refit) and of each training fold, never of a test fold
    assert sorted(scaled_rows) == sorted([X.shape[0]] + [len(train) for train, _ in folds])
    # the outer pipeline: the same grid (lam_max of the standardised problem) and refit path
    pipe = make_pipeline(StandardScaler(), SparseLogisticRegressionCV(**kw))
    pipe.fit(X, y, standardscaler__sample_weight=w, sparselogisticregressioncv__sample_weight=w)
    inner, scale = pipe[-1], pipe[0].scale_
    np.testing.assert_allclose(ours.lams_, inner.lams_, rtol=1e-12)
    n = min(ours.path_.lams.size, inner.path_.lams.size)
    np.testing.assert_allclose(ours.path_.coefs[:n], inner.path_.coefs[:n] / scale, atol=1e-8, rtol=0)
    refit = make_pipeline(StandardScaler(), SparseLogisticRegression(lam=ours.lam_[0], tol=1e-12))
    refit.fit(X, y, standardscaler__sample_weight=w, sparselogisticregression__sample_weight=w)
    np.testing.assert_allclose(ours.coef_, refit[-1].coef_ / refit[0].scale_, atol=1e-8, rtol=0)
    np.testing.assert_allclose(ours.predict_proba(X), refit.predict_proba(X), atol=1e-8, rtol=0)
    # each fold's scores: a pipeline fitted on that fold's training rows alone
    for i, (train, test) in enumerate(folds):
        for k in (1, 4, 7):
            fold = make_pipeline(StandardScaler(), SparseLogisticRegression(lam=ours.lams_[k], tol=1e-12))
            fold.fit(
                X[train],
                y[train],
                standardscaler__sample_weight=w[train],
                sparselogisticregression__sample_weight=w[train],
            )
            expected = -log_loss(y[test], fold.predict_proba(X[test])[:, 1])
            assert ours.scores_[i, k] == pytest.approx(expected, rel=1e-7)
    # scaled by all the data instead (the outer pipeline), the held-out rows leak into the scales
    assert np.abs(ours.scores_[:, 1:] - inner.scores_[:, 1:]).max() > 1e-6
    # sparse data: the same model, never densified
    sparse = SparseLogisticRegressionCV(**kw, standardize=True).fit(sp.csr_matrix(X), y, sample_weight=w)
    np.testing.assert_allclose(sparse.scores_, ours.scores_, rtol=1e-7)
    np.testing.assert_allclose(sparse.coef_, ours.coef_, atol=1e-8, rtol=0)
    with pytest.raises(ValueError, match="standardize must be True or False"):
        SparseLogisticRegressionCV(standardize="yes").fit(X, y)
