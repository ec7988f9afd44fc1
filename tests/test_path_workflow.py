"""A path you can act on (issue 15, problem 4): CV mean and standard error per lam, lam_1se_
and the rule choosing the refit, a warning at the edge of the grid, scikit-learn's score names,
progress, the chosen model saved; and lam_ratio >= 1 warns (problem 7)."""

import warnings

import numpy as np
import pytest
from _certify import suboptimality_bound
from sklearn.datasets import make_classification

from l1scale import SparseLinearRegression, SparseLogisticRegression, load
from l1scale.path import GridEdgeWarning, SparseLogisticRegressionCV, regularization_path
from l1scale.problems import Problem


def _binary(n=400, d=40, seed=0, informative=6):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=informative, random_state=seed)
    return X, y


@pytest.fixture(scope="module")
def fitted():
    X, y = _binary()
    return X, y, SparseLogisticRegressionCV(n_lams=12, cv=5, tol=1e-8).fit(X, y)


def test_cv_mean_and_standard_error_per_lam(fitted):
    _, _, cv = fitted
    assert cv.cv_mean_.shape == cv.cv_se_.shape == (12,)
    np.testing.assert_allclose(cv.cv_mean_, cv.scores_.mean(axis=0))
    np.testing.assert_allclose(cv.cv_se_, cv.scores_.std(axis=0, ddof=1) / np.sqrt(5))
    r = cv.cv_results_
    np.testing.assert_array_equal(r["param_lam"], cv.lams_)
    np.testing.assert_allclose(r["mean_test_score"], cv.cv_mean_)
    np.testing.assert_allclose(r["std_test_score"], cv.scores_.std(axis=0))
    np.testing.assert_allclose(r["split3_test_score"], cv.scores_[3])
    assert r["rank_test_score"][np.argmax(cv.cv_mean_)] == 1
    assert sorted(r["rank_test_score"]) == list(range(1, 13))


def test_lam_1se_is_the_largest_lam_within_one_standard_error(fitted):
    X, y, cv = fitted
    best = int(np.argmax(cv.cv_mean_))
    assert cv.lam_min_[0] == cv.lams_[best] == cv.lam_[0]  # rule="min" by default
    within = cv.cv_mean_ >= cv.cv_mean_[best] - cv.cv_se_[best]
    assert cv.lam_1se_[0] == cv.lams_[within].max()
    assert cv.lam_1se_[0] > cv.lam_min_[0]  # on these data the rule gives a sparser model
    one_se = SparseLogisticRegressionCV(n_lams=12, cv=5, tol=1e-8, rule="1se").fit(X, y)
    assert one_se.lam_[0] == cv.lam_1se_[0]
    np.testing.assert_array_equal(one_se.scores_, cv.scores_)
    assert np.count_nonzero(one_se.coef_) < np.count_nonzero(cv.coef_)
    ref = Problem(X, np.where(y == 1, 1.0, -1.0), "logistic", one_se.lam_[0])
    assert suboptimality_bound(ref, one_se.coef_[0], one_se.intercept_[0]) <= 1e-7  # the refit is at lam_1se, solved
    with pytest.raises(ValueError, match="rule="):
        SparseLogisticRegressionCV(rule="2se").fit(X, y)


def test_one_vs_rest_keeps_a_curve_and_a_1se_lam_per_class():
    X, y = make_classification(n_samples=450, n_features=30, n_informative=8, n_classes=3, random_state=2)
    cv = SparseLogisticRegressionCV(n_lams=6, cv=3, tol=1e-8, rule="1se", multi_class="ovr").fit(X, y)
    assert cv.cv_mean_.shape == cv.cv_se_.shape == (3, 6) and cv.lam_1se_.shape == (3,)
    assert cv.cv_results_["mean_test_score"].shape == (3, 6)
    np.testing.assert_array_equal(cv.lam_, cv.lam_1se_)


def test_scores_are_named_as_scikit_learn_names_them(fitted):
    X, y, cv = fitted
    assert cv.scoring == "neg_log_loss" and (cv.cv_mean_ < 0).all()  # higher is better
    with pytest.warns(FutureWarning, match="neg_log_loss"):
        old = SparseLogisticRegressionCV(n_lams=12, cv=5, tol=1e-8, scoring="log_loss").fit(X, y)
    np.testing.assert_array_equal(old.scores_, cv.scores_)


def test_a_lam_at_the_edge_of_the_grid_warns():
    X, y = _binary(seed=1)
    with pytest.warns(GridEdgeWarning, match="smallest of the grid.*lam_min_ratio"):  # stops far too early
        cv = SparseLogisticRegressionCV(n_lams=4, lam_min_ratio=0.5, cv=3).fit(X, y)
    assert cv.lam_[0] == cv.lams_[-1]
    rng = np.random.default_rng(0)
    noise = rng.standard_normal((300, 10))
    labels = rng.integers(0, 2, 300)  # no signal: the empty model wins
    with pytest.warns(GridEdgeWarning, match="largest of the grid, lam_max"):
        cv = SparseLogisticRegressionCV(n_lams=5, cv=3, rule="1se").fit(noise, labels)
    assert cv.lam_[0] == cv.lams_[0] and not cv.coef_.any()
    assert issubclass(GridEdgeWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GridEdgeWarning)  # inside the grid: silent
        SparseLogisticRegressionCV(n_lams=12, cv=5).fit(*_binary())


def test_progress_counts_every_solve():
    X, y = _binary(n=200)
    calls = []
    cv = SparseLogisticRegressionCV(n_lams=8, cv=3, progress=lambda done, total: calls.append((done, total))).fit(X, y)
    done = [d for d, _ in calls]
    assert done == list(range(1, len(calls) + 1))
    chosen = int(np.flatnonzero(cv.lams_ == cv.lam_[0])[0])
    assert calls[-1] == (3 * 8 + chosen + 1,) * 2  # three folds' paths, the refit down to the chosen lam
    seen = []
    regularization_path(X, np.where(y == 1, 1.0, -1.0), n_lams=5, callback=lambda k, r: seen.append((k, r.nnz)))
    assert [k for k, _ in seen] == [0, 1, 2, 3, 4] and seen[0][1] == 0


def test_save_writes_the_refit_as_a_model_train_would_save(fitted, tmp_path):
    X, y, cv = fitted
    cv.save(tmp_path / "cv.l1m")
    model = load(tmp_path / "cv.l1m")
    assert type(model) is SparseLogisticRegression
    assert model.lam == cv.lam_[0] and model.lam_[0] == cv.lam_[0]
    np.testing.assert_array_equal(model.coef_, cv.coef_)
    np.testing.assert_array_equal(model.predict_proba(X), cv.predict_proba(X))
    # the same model as training at the chosen lam
    direct = SparseLogisticRegression(lam=cv.lam_[0], tol=1e-10).fit(X, y)
    np.testing.assert_allclose(model.coef_, direct.coef_, atol=1e-4)


def test_lam_ratio_of_one_or_more_warns_and_says_what_to_do():
    X, y = _binary(n=200)
    for ratio in (1.0, 3.0):
        with pytest.warns(UserWarning, match=r"lam_ratio=.* >= 1 .*no nonzero weight.*lam_ratio < 1"):
            est = SparseLogisticRegression(lam_ratio=ratio).fit(X, y)
        assert not est.coef_.any()
    with pytest.warns(UserWarning, match="lam_ratio"):
        SparseLinearRegression(lam_ratio=1.0).fit(X, y.astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SparseLogisticRegression(lam_ratio=0.99).fit(X, y)


def test_refit_path_full_keeps_the_whole_grid_and_the_same_model():
    from sklearn.datasets import make_classification

    from l1scale.path import SparseLogisticRegressionCV

    X, y = make_classification(n_samples=300, n_features=30, n_informative=6, random_state=2)
    chosen = SparseLogisticRegressionCV(n_lams=10, cv=3).fit(X, y)
    full = SparseLogisticRegressionCV(n_lams=10, cv=3, refit_path="full").fit(X, y)
    k = int(np.flatnonzero(chosen.lams_ == chosen.lam_[0])[0])
    assert chosen.path_.lams.shape[0] == k + 1 and full.path_.lams.shape[0] == 10
    # The same warm-started solves down to the chosen lam: the same model, bit for bit.
    np.testing.assert_array_equal(full.coef_, chosen.coef_)
    np.testing.assert_array_equal(full.path_.coefs[: k + 1], chosen.path_.coefs)
    np.testing.assert_array_equal(full.coef_[0], full.path_.coefs[k])
    with pytest.raises(ValueError, match="refit_path"):
        SparseLogisticRegressionCV(refit_path="all").fit(X, y)
