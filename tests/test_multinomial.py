"""Multinomial (softmax) L1 logistic regression: the loss, the problem's duality gap, and the
solver (l1scale.solvers.multinomial) against scikit-learn's saga, glmnet and its own tight solves."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _certify import suboptimality_bound
from _shared_data import load_svmlight_pm
from scipy.optimize import check_grad
from sklearn.datasets import load_digits, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from l1scale.losses import Softmax
from l1scale.problems.memory import Problem
from l1scale.problems.multinomial import MultinomialProblem, optimal_intercepts
from l1scale.solvers.cd import CoordinateDescent
from l1scale.solvers.multinomial import MultinomialCD

SOFTMAX = Softmax()


def _wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _digits(n=500):
    X, y = load_digits(return_X_y=True)
    return X[:n] / 16.0, y[:n]


def _splice():
    X, y = load_svmlight_pm("splice", "splice/splice_scale.bz2", 60)
    return X, y


def _small(seed=0, n=90, d=7, K=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(d, K)) * (rng.random((d, K)) < 0.5)
    y = np.argmax(X @ W + rng.gumbel(size=(n, K)), axis=1)
    return X, y


def _tight(problem, **kw):
    return MultinomialCD(tol=1e-13, max_iter=1000, **kw).solve(problem)


def _saga(X, y, problem, **kw):
    """scikit-learn's saga on the same objective (C = 1 / (n lam)); its model's objective."""
    n = X.shape[0]
    if sp.issparse(X):  # scikit-learn takes 32-bit indices only
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(
            solver="saga", C=1.0 / (n * problem.lam), l1_ratio=problem.l1_ratio, tol=1e-9, max_iter=100_000, **kw
        ).fit(X, y)
    if clf.coef_.shape[0] == 1:  # two classes: scikit-learn fits the binary model (same optimum, see below)
        binary = Problem(X, np.where(y == clf.classes_[1], 1.0, -1.0), lam=problem.lam, **_same(problem))
        return binary.objective(clf.coef_.ravel(), clf.intercept_[0])
    return problem.objective(clf.coef_, clf.intercept_)


def _same(problem):
    return {"l1_ratio": problem.l1_ratio, "fit_intercept": problem.fit_intercept}


# --------------------------------------------------------------------------- the loss
def test_softmax_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    n, K = 6, 4
    y = rng.integers(0, K, n)

    def f(z):
        return float(SOFTMAX.value(y, z.reshape(n, K)).sum())

    def g(z):
        return SOFTMAX.derivative(y, z.reshape(n, K)).ravel()

    for scale in (1.0, 30.0):
        assert check_grad(f, g, scale * rng.normal(size=n * K)) < 1e-5 * scale
    # The curvature is the diagonal of diag(p) - p p^T, the derivative of the gradient.
    z = rng.normal(size=(n, K))
    eps = 1e-6
    for k in range(K):
        dz = np.zeros((n, K))
        dz[:, k] = eps
        fd = (SOFTMAX.derivative(y, z + dz)[:, k] - SOFTMAX.derivative(y, z - dz)[:, k]) / (2 * eps)
        np.testing.assert_allclose(fd, SOFTMAX.curvature(y, z)[:, k], rtol=1e-6, atol=1e-9)


def test_softmax_is_stable_and_its_conjugate_meets_fenchel_equality():
    y = np.array([0, 1, 2])
    Z = np.array([[800.0, 0.0, -800.0], [0.0, 0.0, 0.0], [-50.0, 3.0, 40.0]])
    value = SOFTMAX.value(y, Z)
    assert np.isfinite(value).all()
    np.testing.assert_allclose(value, [0.0, np.log(3.0), np.log1p(np.exp(-37.0) + np.exp(-90.0))], atol=1e-12)
    # f(z) + f*(grad f(z)) = <z, grad f(z)> at every z: the gap is zero exactly at the optimum.
    Z = np.random.default_rng(1).normal(size=(3, 3)) * 3
    U = SOFTMAX.derivative(y, Z)
    np.testing.assert_allclose(SOFTMAX.value(y, Z) + SOFTMAX.conjugate(y, U), (Z * U).sum(axis=1), atol=1e-12)
    # Outside the simplex (u + e_y not a probability vector) the conjugate is infinite.
    assert np.isinf(SOFTMAX.conjugate(y, U + 0.1)).all()
    assert np.isinf(SOFTMAX.conjugate([0], [[0.5, -0.5, 0.0]])).all()


def test_objective_gradient_matches_finite_differences():
    X, y = _small()
    problem = MultinomialProblem(X, y, 0.01, fit_intercept=True)
    K, d = problem.n_classes, problem.n_features

    def smooth(theta):
        return problem.loss_sum(problem.margins(theta[: K * d].reshape(K, d), theta[K * d :]))

    def grad(theta):
        Z = problem.margins(theta[: K * d].reshape(K, d), theta[K * d :])
        R = problem.c[:, None] * SOFTMAX.derivative(problem.y, Z)
        return np.concatenate([(X.T @ R).T.ravel(), R.sum(axis=0)])

    theta = np.random.default_rng(2).normal(size=K * d + K) * 0.3
    assert check_grad(smooth, grad, theta) < 1e-6


def test_optimal_intercepts_match_the_class_frequencies_at_zero_coefficients():
    X, y = _small(3)
    c = np.full(y.shape[0], 1.0 / y.shape[0])
    b = optimal_intercepts(np.zeros((y.shape[0], 3)), y, c)
    freq = np.bincount(y) / y.shape[0]
    np.testing.assert_allclose(np.exp(b) / np.exp(b).sum(), freq, atol=1e-12)
    assert abs(b.sum()) < 1e-12


# --------------------------------------------------------------------------- the certificate
def test_gap_is_never_negative_and_bounds_the_suboptimality():
    X, y = _small(4)
    for l1_ratio in (1.0, 0.5):
        problem = MultinomialProblem(X, y, lam_ratio=0.05, l1_ratio=l1_ratio)
        best = _tight(problem).objective
        rng = np.random.default_rng(5)
        for scale in (0.0, 0.01, 0.3, 3.0):
            coef = scale * rng.normal(size=(3, X.shape[1]))
            cert = problem.certificate(coef, rng.normal(size=3))
            assert cert.value >= 0.0
            # taken at intercepts optimal for coef: P there >= P*, and the gap bounds the distance
            assert cert.objective - best <= cert.value + 1e-12
            assert cert.objective >= best - 1e-12


@pytest.mark.parametrize("l1_ratio", [1.0, 0.7])
def test_the_certificate_is_met_and_matches_a_tight_solve(l1_ratio):
    X, y = _wine()
    problem = MultinomialProblem(X, y, lam_ratio=0.02, l1_ratio=l1_ratio)
    tight = _tight(problem)
    assert tight.converged and 0.0 <= tight.relative_certificate <= 1e-13
    for tol in (1e-3, 1e-6, 1e-9):
        result = MultinomialCD(tol=tol).solve(problem)
        assert result.converged and result.stop_reason == "duality_gap"
        assert 0.0 <= result.relative_certificate <= tol
        # the gap bounds the distance to the optimum
        assert result.objective - tight.objective <= result.certificate + 1e-15
        # checked without the solver: the model's suboptimality, bounded by a reference's dual value
        assert suboptimality_bound(problem, result.coef, result.intercept) <= 1.5 * tol
    assert result.coef.shape == (3, X.shape[1]) and result.intercept.shape == (3,)
    assert abs(result.intercept.sum()) < 1e-12


def test_lam_max_is_where_the_model_becomes_zero():
    X, y = _wine()
    problem = MultinomialProblem(X, y, lam=MultinomialProblem(X, y, 0.1).lam_max())
    result = MultinomialCD(tol=1e-10).solve(problem)
    assert result.nnz == 0
    freq = np.bincount(y) / y.shape[0]
    p = np.exp(result.intercept) / np.exp(result.intercept).sum()
    np.testing.assert_allclose(p, freq, atol=1e-9)
    assert MultinomialCD(tol=1e-10).solve(problem.with_lam(0.98 * problem.lam)).nnz > 0


# --------------------------------------------------------------------------- oracles
@pytest.mark.parametrize("data", ["wine", "digits", "splice"])
def test_the_objective_agrees_with_saga(data):
    X, y = {"wine": _wine, "digits": _digits, "splice": _splice}[data]()
    problem = MultinomialProblem(X, y, lam_ratio=0.05)
    ours = _tight(problem)
    assert ours.relative_certificate <= 1e-12
    theirs = _saga(X, y, problem)
    # saga's model is no better than ours (ours is certified), and within 1e-6
    assert theirs >= ours.objective * (1 - 1e-12)
    assert theirs == pytest.approx(ours.objective, rel=1e-6)


def test_elastic_net_and_no_intercept_agree_with_saga():
    X, y = _wine()
    for kw, sk in (({"l1_ratio": 0.5}, {}), ({"fit_intercept": False}, {"fit_intercept": False})):
        problem = MultinomialProblem(X, y, lam_ratio=0.05, **kw)
        ours = _tight(problem)
        assert ours.relative_certificate <= 1e-12
        assert _saga(X, y, problem, **sk) == pytest.approx(ours.objective, rel=1e-6), kw
    assert not np.any(ours.intercept)


def test_the_objective_agrees_with_glmnet_multinomial():
    glmnet = pytest.importorskip("glmnet")
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X[:600])
    y = y[:600]
    problem = MultinomialProblem(X, y, lam_ratio=0.05)
    ours = _tight(problem)
    # glmnet's multinomial (ungrouped, kopt=0) solves along a path down to lam; alone, the last
    # lam fails to converge in lognet.
    path = problem.lam_max() * np.geomspace(1.0, 0.05, 20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = glmnet.LogitNet(alpha=1.0, lambda_path=path, standardize=False, tol=1e-12, n_splits=0).fit(X, y)
    assert model.lambda_path_[-1] == pytest.approx(problem.lam)
    theirs = problem.objective(model.coef_path_[:, :, -1], model.intercept_path_[:, -1])
    assert theirs >= ours.objective * (1 - 1e-12)
    assert theirs == pytest.approx(ours.objective, rel=1e-6)


# --------------------------------------------------------------------------- inputs
def test_dense_csr_csc_and_float32_give_the_same_model():
    X, y = _small(6, n=120, d=15, K=4)
    X[np.abs(X) < 0.8] = 0.0
    ref = _tight(MultinomialProblem(X, y, lam_ratio=0.05))
    for Xv in (sp.csr_matrix(X), sp.csc_matrix(X), np.asfortranarray(X), X.astype(np.float32)):
        result = _tight(MultinomialProblem(Xv, y, lam_ratio=0.05))
        rounded = Xv.dtype == np.float32  # a (slightly) different problem: X rounded to float32
        assert result.objective == pytest.approx(ref.objective, rel=1e-6 if rounded else 1e-12)
        np.testing.assert_allclose(result.coef, ref.coef, atol=1e-4 if rounded else 1e-7)


def test_integer_sample_weights_equal_repeated_rows():
    X, y = _small(7)
    s = np.random.default_rng(8).integers(0, 4, y.shape[0]).astype(float)
    s[:3] = 1.0  # keep every class
    weighted = _tight(MultinomialProblem(X, y, 0.01, sample_weight=s))
    rows = np.repeat(np.arange(y.shape[0]), s.astype(int))
    repeated = _tight(MultinomialProblem(X[rows], y[rows], 0.01))
    assert weighted.objective == pytest.approx(repeated.objective, rel=1e-10)
    np.testing.assert_allclose(weighted.coef, repeated.coef, atol=1e-6)
    uniform = _tight(MultinomialProblem(X, y, 0.01, sample_weight=np.full(y.shape[0], 3.0)))
    assert uniform.objective == pytest.approx(_tight(MultinomialProblem(X, y, 0.01)).objective, rel=1e-12)


def test_a_binary_problem_is_solved_as_the_two_class_softmax():
    """The two-class softmax at lam1' = lam1, lam2' = 2 lam2 has the binary optimum v = w1 - w0,
    b = b1 - b0; handed a binary problem, multinomial_cd returns that optimum (found by CD)."""
    X, y = _small(9, K=2)
    y = np.where(y == 1, 1.0, -1.0)
    for l1_ratio in (1.0, 0.6):
        problem = Problem(X, y, lam_ratio=0.1, l1_ratio=l1_ratio)
        cd = CoordinateDescent(tol=1e-12).solve(problem)
        lam, r = problem.penalty.lam, l1_ratio
        two = MultinomialProblem(X, y > 0, lam * (2.0 - r), l1_ratio=r / (2.0 - r))
        softmax = MultinomialCD(tol=1e-12).solve(two)
        v, b = softmax.coef[1] - softmax.coef[0], softmax.intercept[1] - softmax.intercept[0]
        assert problem.objective(v, b) == pytest.approx(cd.objective, rel=1e-10)
        assert softmax.objective == pytest.approx(cd.objective, rel=1e-10)
        np.testing.assert_allclose(v, cd.coef, atol=1e-5)
        ours = MultinomialCD(tol=1e-12).solve(problem)
        assert ours.coef.shape == (X.shape[1],) and isinstance(ours.intercept, float)
        assert ours.objective == pytest.approx(cd.objective, rel=1e-12)
        assert 0.0 <= ours.relative_certificate <= 1e-12
    with pytest.raises(ValueError, match="softmax"):
        MultinomialCD().solve(Problem(X, y, "squared_hinge", 0.01))


def test_a_warm_start_at_the_optimum_stops_at_once():
    X, y = _wine()
    problem = MultinomialProblem(X, y, lam_ratio=0.02)
    first = MultinomialCD(tol=1e-10).solve(problem)
    again = MultinomialCD(tol=1e-8).solve(problem, first.coef, first.intercept)
    assert again.n_iter == 0 and again.converged
    assert again.objective == pytest.approx(first.objective, rel=1e-12)


def test_working_sets_and_full_passes_reach_the_same_optimum():
    rng = np.random.default_rng(10)
    X = sp.random(300, 400, density=0.05, format="csr", random_state=10)
    y = rng.integers(0, 4, 300)
    problem = MultinomialProblem(X, y, lam_ratio=0.1)
    with_ws = MultinomialCD(tol=1e-11).solve(problem)
    without = MultinomialCD(tol=1e-11, working_set=False).solve(problem)
    assert with_ws.objective == pytest.approx(without.objective, rel=1e-10)
    assert min(with_ws.history.active) < 400  # the working sets left features out


def test_bad_input_names_the_parameter():
    X, y = _small()
    with pytest.raises(ValueError, match="only one class"):
        MultinomialProblem(X, np.zeros(X.shape[0]), 0.1)
    with pytest.raises(ValueError, match="labels but X has"):
        MultinomialProblem(X, y[:-1], 0.1)
    s = np.where(y == 2, 0.0, 1.0)
    with pytest.raises(ValueError, match="sample_weight: class 2 has zero total weight"):
        MultinomialProblem(X, y, 0.1, sample_weight=s)
    problem = MultinomialProblem(X, y, 0.1)
    with pytest.raises(ValueError, match="coef must have shape"):
        problem.objective(np.zeros((X.shape[1], 3)))
    with pytest.raises(ValueError, match="give exactly one of lam and lam_ratio"):
        MultinomialProblem(X, y)
    with pytest.raises(ValueError, match="l1_ratio"):
        MultinomialProblem(X, y, 0.1, l1_ratio=0.0)


# --------------------------------------------------------------------------- the estimator
def test_the_estimator_fits_the_multinomial_model_for_more_than_two_classes():
    from l1scale import SparseLogisticRegression

    X, y = _wine()
    labels = np.array(["a", "b", "c"])[y]
    model = SparseLogisticRegression(lam_ratio=0.02, tol=1e-10).fit(X, labels)
    assert model.multi_class_ == "multinomial" and model.solver_ == "multinomial_cd"
    problem = MultinomialProblem(X, labels, lam_ratio=0.02)
    assert model.result_.objective == pytest.approx(_tight(problem).objective, rel=1e-9)
    assert model.coef_.shape == (3, X.shape[1]) and model.intercept_.shape == (3,)
    # softmax probabilities of the margins, the predicted class the most probable one
    proba = model.predict_proba(X)
    scores = X @ model.coef_.T + model.intercept_
    expected = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(proba, expected, rtol=1e-10)
    np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(proba, axis=1)])
    ovr = SparseLogisticRegression(lam_ratio=0.02, tol=1e-10, multi_class="ovr").fit(X, labels)
    assert ovr.multi_class_ == "ovr" and ovr.solver_ == "cd" and len(ovr.result_) == 3
    # a solver that fits binary problems only keeps one-vs-rest under "auto"
    assert SparseLogisticRegression(solver="cd", lam_ratio=0.02).fit(X, labels).multi_class_ == "ovr"
    # two classes: the binary model whatever multi_class says
    two = SparseLogisticRegression(lam_ratio=0.05, multi_class="multinomial").fit(X[y < 2], labels[y < 2])
    assert two.coef_.shape == (1, X.shape[1]) and two.multi_class_ == "ovr"


def test_multi_class_errors_name_the_parameter():
    from l1scale import SparseLogisticRegression

    X, y = _wine()
    with pytest.raises(ValueError, match="multi_class must be one of"):
        SparseLogisticRegression(multi_class="softmax").fit(X, y)
    with pytest.raises(ValueError, match="multi_class='multinomial' does not apply: solver='cd'"):
        SparseLogisticRegression(solver="cd", multi_class="multinomial").fit(X, y)
    with pytest.raises(ValueError, match="not loss='probit'"):
        SparseLogisticRegression(loss="probit", multi_class="multinomial").fit(X, y)


def test_a_saved_multinomial_model_loads_with_its_probabilities(tmp_path):
    from l1scale import SparseLogisticRegression, load

    X, y = _wine()
    model = SparseLogisticRegression(lam_ratio=0.02, warm_start=True).fit(X, y)
    path = tmp_path / "wine.l1m"
    model.save(path)
    loaded = load(path)
    assert loaded.multi_class_ == "multinomial"
    np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(X), rtol=1e-12)
    assert loaded.result_.objective == model.result_.objective and loaded.result_.coef.shape == (3, X.shape[1])
    # a warm start from the fitted model stops at once
    assert model.fit(X, y).result_.n_iter == 0


# --------------------------------------------------------------------------- path and CV
def test_the_multinomial_path_gives_each_lams_cold_optimum():
    from l1scale.path import regularization_path

    X, y = _wine()
    path = regularization_path(X, y, "multinomial", n_lams=10, tol=1e-10)
    assert path.coefs.shape == (10, 3, X.shape[1]) and path.intercepts.shape == (10, 3)
    assert path.nnz[0] == 0 and path.nnz[-1] > path.nnz[1]
    base = MultinomialProblem(X, y, lam=1.0)
    assert path.lams[0] == pytest.approx(base.lam_max(), rel=1e-12)
    for k, lam in enumerate(path.lams):
        problem = base.with_lam(lam)
        cold = _tight(problem).objective
        assert path.objectives[k] == pytest.approx(cold, rel=1e-6, abs=0)
        assert problem.objective(path.coefs[k], path.intercepts[k]) == pytest.approx(path.objectives[k], rel=1e-12)
        assert path.certificates[k] <= 1e-10
    # warm starts: later lams start close to their optimum
    cold_iters = regularization_path(X, y, "multinomial", lams=path.lams, tol=1e-10, warm_start=False).n_iter
    assert path.n_iter[1:].sum() < cold_iters[1:].sum()
    with pytest.raises(ValueError, match="multinomial_cd"):
        regularization_path(X, y, "multinomial", solver="fista")


def test_the_cv_estimator_cross_validates_the_multinomial_model(tmp_path):
    from sklearn.model_selection import StratifiedKFold

    from l1scale import load
    from l1scale.path import SparseLogisticRegressionCV, regularization_path

    X, y = _wine()
    labels = np.array(["a", "b", "c"])[y]
    folds = list(StratifiedKFold(4).split(X, y))
    cv = SparseLogisticRegressionCV(n_lams=15, cv=folds, tol=1e-9).fit(X, labels)
    assert cv.multi_class_ == "multinomial" and cv.solver_ == "multinomial_cd"
    assert cv.lams_.shape == (15,) and cv.scores_.shape == (4, 15) and cv.cv_mean_.shape == (15,)
    assert cv.coef_.shape == (3, X.shape[1]) and cv.intercept_.shape == (3,) and cv.lam_.shape == (3,)
    # the chosen lam is the best mean held-out score, inside the grid (not an edge), and sensible
    best = int(np.argmax(cv.cv_mean_))
    assert 0 < best < 14 and (cv.lam_ == cv.lams_[best]).all() and (cv.lam_min_ == cv.lam_).all()
    assert cv.cv_mean_[best] > -0.15 and cv.cv_mean_[0] < -1.0  # the intercept-only model scores badly
    # a fold's scores are the held-out log-loss of that fold's path (the softmax probabilities)
    train, test = folds[1]
    fold = regularization_path(X[train], labels[train], "multinomial", lams=cv.lams_, tol=1e-9)
    Z = X[test] @ fold.coefs[best].T + fold.intercepts[best]
    proba = np.exp(Z - Z.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    loss = -np.log(proba[np.arange(len(test)), y[test]]).mean()
    assert cv.scores_[1, best] == pytest.approx(-loss, rel=1e-6)
    # the refit: the optimum of the multinomial problem on all the data at lam_
    problem = MultinomialProblem(X, labels, lam=cv.lam_[0])
    assert suboptimality_bound(problem, cv.coef_, cv.intercept_) <= 1e-8
    assert cv.path_.coefs.shape == (best + 1, 3, X.shape[1])
    assert cv.score(X, labels) > 0.95 and np.allclose(cv.predict_proba(X).sum(axis=1), 1.0)
    # 1se: a sparser lam; accuracy as the score; one-vs-rest on request
    one_se = SparseLogisticRegressionCV(n_lams=15, cv=folds, tol=1e-9, rule="1se").fit(X, labels)
    assert one_se.lam_[0] >= cv.lam_[0] and np.count_nonzero(one_se.coef_) <= np.count_nonzero(cv.coef_)
    acc = SparseLogisticRegressionCV(n_lams=6, cv=folds, scoring="accuracy").fit(X, labels)
    assert acc.cv_mean_.max() > 0.9 and acc.cv_mean_[0] < 0.5
    ovr = SparseLogisticRegressionCV(n_lams=4, lam_min_ratio=0.01, cv=3, multi_class="ovr").fit(X, y)
    assert ovr.multi_class_ == "ovr" and ovr.lams_.shape == (3, 4)
    with pytest.raises(ValueError, match="scores a binary problem"):
        SparseLogisticRegressionCV(scoring="roc_auc").fit(X, y)
    # saved as a multinomial SparseLogisticRegression at lam_
    cv.save(tmp_path / "cv.l1m")
    loaded = load(tmp_path / "cv.l1m")
    assert loaded.multi_class_ == "multinomial" and loaded.lam == cv.lam_[0]
    np.testing.assert_allclose(loaded.predict_proba(X), cv.predict_proba(X), rtol=1e-12)


# Raw wine's columns have large means: scaled but not centred, the multinomial certificate stalls
# near 1e-8 (as for a single standardize=True fit); the models still agree to 1e-6.
@pytest.mark.filterwarnings("ignore:multinomial_cd did not reach")
@pytest.mark.filterwarnings("ignore::l1scale.path.GridEdgeWarning")
def test_multinomial_cv_n_jobs_and_standardize():
    from sklearn.pipeline import make_pipeline

    from l1scale.path import SparseLogisticRegressionCV

    X, y = load_wine(return_X_y=True)  # raw scales
    kw = dict(n_lams=8, lam_min_ratio=0.01, cv=3, tol=1e-12, standardize=True)
    one = SparseLogisticRegressionCV(**kw).fit(X, y)
    two = SparseLogisticRegressionCV(**kw, n_jobs=2).fit(X, y)
    for name in ("scores_", "lams_", "lam_", "coef_", "intercept_"):
        np.testing.assert_array_equal(getattr(two, name), getattr(one, name))
    # the refit is the StandardScaler pipeline's model at lam_, on the original scale
    from l1scale import SparseLogisticRegression

    pipe = make_pipeline(StandardScaler(), SparseLogisticRegression(lam=one.lam_[0], tol=1e-12)).fit(X, y)
    # (both solved to 1e-12 suboptimality: weights agree to about its square root, on the
    # standardised scale where the problem is solved)
    np.testing.assert_allclose(one.coef_ * pipe[0].scale_, pipe[-1].coef_, atol=1e-5)
    np.testing.assert_allclose(one.predict_proba(X), pipe.predict_proba(X), atol=1e-6)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_newton_point_dual_certifies_sooner(fit_intercept, monkeypatch):
    """Once the support is final, the dual point of its Newton step (_multinomial_newton) has a gap
    about the suboptimality itself: the solve certifies 1e-4 and 1e-6 with fewer nonzeros read
    than with the residual alone, and the model is as good as it claims."""
    X, y = _digits()
    problem = MultinomialProblem(X, y, lam_ratio=0.02, fit_intercept=fit_intercept)
    p_star = _tight(problem).objective
    with_dual = {tol: MultinomialCD(tol=tol).solve(problem) for tol in (1e-4, 1e-6)}
    monkeypatch.setattr(MultinomialCD, "newton_dual", False)
    without = {tol: MultinomialCD(tol=tol).solve(problem) for tol in (1e-4, 1e-6)}
    for tol, res in with_dual.items():
        assert res.converged and res.relative_certificate <= tol
        assert (res.objective - p_star) / p_star <= tol
        assert res.history.data_accesses[-1] < 0.9 * without[tol].history.data_accesses[-1]


def test_the_newton_point_is_tried_while_a_feature_is_still_a_little_outside(monkeypatch):
    """Between 1e-2 and 1e-6 the point is tried while a zero weight violates optimality by up to
    min(sqrt(tol), 100 tol, 0.01) lam1 (its gap grows as about a tenth of that violation), not
    only up to tol lam1: on digits at 1e-4 that certifies an outer iteration sooner."""
    from l1scale.solvers import _multinomial_newton

    assert _multinomial_newton.entering_reach(1e-1) == 1e-1 and _multinomial_newton.entering_reach(1e-2) == 1e-2
    assert _multinomial_newton.entering_reach(1e-4) == pytest.approx(1e-2)
    assert _multinomial_newton.entering_reach(1e-6) == pytest.approx(1e-4)
    X, y = _digits(n=1797)
    problem = MultinomialProblem(X, y, lam_ratio=0.02)
    p_star = _tight(problem).objective
    wide = MultinomialCD(tol=1e-4).solve(problem)
    monkeypatch.setattr(_multinomial_newton, "entering_reach", lambda tol: tol)
    narrow = MultinomialCD(tol=1e-4).solve(problem)
    for res in (wide, narrow):
        assert res.converged and (res.objective - p_star) / p_star <= 1e-4
    assert wide.n_iter < narrow.n_iter
    assert wide.history.data_accesses[-1] < 0.8 * narrow.history.data_accesses[-1]


def test_a_solve_that_stalls_at_float_resolution_says_so(monkeypatch):
    # tol = 1e-14 is below what the residual's gap resolves in this objective: the solve stops when
    # P no longer moves, long before max_iter, and the warning says that rather than blaming
    # max_iter. (The Newton point's dual certifies this far; without it, the residual cannot.)
    from l1scale import SparseLogisticRegression
    from l1scale.exceptions import ConvergenceWarning

    monkeypatch.setattr(MultinomialCD, "newton_dual", False)
    X, y = load_wine(return_X_y=True)
    model = SparseLogisticRegression(lam_ratio=0.02, standardize=True, tol=1e-14, max_iter=1000)
    with pytest.warns(ConvergenceWarning, match="stopped decreasing") as caught:
        model.fit(X, y)
    assert not any("max_iter=1000" in str(w.message) for w in caught)
    assert model.result_.stop_reason == "line_search" and max(model.n_iter_) < 1000


@pytest.mark.parametrize("layout", ["dense", "csc"])
@pytest.mark.parametrize("fit_b", [False, True])
def test_the_support_cg_kernel_solves_the_newton_system_off_the_null_directions(layout, fit_b):
    from l1scale.data.memory import as_columns
    from l1scale.solvers import _multinomial_kernels as kernels

    rng = np.random.default_rng(0)
    n, d, K = 80, 6, 3
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.7)
    Z = rng.normal(size=(n, K))
    P = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    c = np.full(n, 1.0 / n)
    CP = c[:, None] * P
    S = np.zeros((d, K), dtype=bool)
    S[0] = True  # a full row: its ones direction is in the null space
    S[2, [0, 2]] = True
    S[4, 1] = True
    S[5] = True
    sup_j, sup_k = (a.astype(np.int64) for a in np.nonzero(S))
    rows = np.flatnonzero(S.any(axis=1)).astype(np.int64)
    position = np.cumsum(S.ravel()).reshape(S.shape) - 1
    full_pos = position[S.all(axis=1)].astype(np.int64).reshape(-1, K)
    ns = sup_j.shape[0]
    size = ns + (K if fit_b else 0)
    # The system's matrix, densely: columns (j, k) of X (x) e_k and the intercepts' e_k.
    B = np.zeros((n, K, size))
    for t, (j, k) in enumerate(zip(sup_j, sup_k)):
        B[:, k, t] = X[:, j]
    if fit_b:
        for k in range(K):
            B[:, k, ns + k] = 1.0
    H = c[:, None, None] * (np.einsum("ik,km->ikm", P, np.eye(K)) - P[:, :, None] * P[:, None, :])
    A = np.einsum("ika,ikm,imb->ab", B, H, B) + kernels.NU * np.eye(size)
    ones = []
    for r in full_pos:
        v = np.zeros(size)
        v[r] = 1.0
        ones.append(v)
    if fit_b:
        v = np.zeros(size)
        v[ns:] = 1.0
        ones.append(v)
    Q, _ = np.linalg.qr(np.array(ones).T)
    project = np.eye(size) - Q @ Q.T
    rhs = rng.normal(size=size)
    diag = np.abs(np.diag(A)) + 1e-3
    arrays = as_columns(X if layout == "dense" else sp.csc_matrix(X)).arrays
    x, products, reads = kernels.support_cg(*arrays, sup_j, sup_k, rows, full_pos, fit_b, P, CP, rhs, diag, 1e-12, 500)
    assert 0 < products <= size and reads > 0
    np.testing.assert_allclose(project @ x, x, atol=1e-12)  # off the null directions
    residual = project @ (A @ x - rhs)
    assert np.linalg.norm(residual) <= 1e-9 * np.linalg.norm(project @ rhs)
