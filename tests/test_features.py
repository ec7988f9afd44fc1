"""Random Fourier features and exact RBF kernel columns (Qin et al., sec. 3.1)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import rbf_kernel as sk_rbf
from sklearn.utils.estimator_checks import parametrize_with_checks

from l1scale import SparseLogisticRegression
from l1scale.data.features import RandomFourierFeatures, RBFKernelFeatures, rbf_kernel
from l1scale.data.stream import Stream


@parametrize_with_checks([RandomFourierFeatures(n_components=20, random_state=0), RBFKernelFeatures(sigma=2.0)])
def test_sklearn_contract(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        check(estimator)


def test_rbf_kernel_matches_scikit_learn_dense_and_sparse():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((30, 5)), rng.standard_normal((7, 5))
    sigma = 1.7
    ref = sk_rbf(X, Y, gamma=1.0 / sigma**2)
    np.testing.assert_allclose(rbf_kernel(X, Y, sigma), ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rbf_kernel(sp.csr_matrix(X), sp.csr_matrix(Y), sigma), ref, rtol=1e-12, atol=1e-14)
    K = RBFKernelFeatures(sigma=sigma).fit(X).transform(Y)
    np.testing.assert_allclose(K, sk_rbf(Y, X, gamma=1.0 / sigma**2), rtol=1e-12, atol=1e-14)


def test_fourier_features_approximate_the_kernel():
    """E[z(x).z(y)] = k(x, y); with D = 20,000 the error is O(1/sqrt(D))."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 6)) * 0.5
    sigma = 2.0
    Z = RandomFourierFeatures(n_components=20000, sigma=sigma, random_state=3).fit_transform(X)
    err = np.abs(Z @ Z.T - rbf_kernel(X, X, sigma))
    assert err.max() < 0.05 and err.mean() < 0.01
    # Fewer components, larger error: the approximation is what improves with D.
    Z100 = RandomFourierFeatures(n_components=100, sigma=sigma, random_state=3).fit_transform(X)
    assert np.abs(Z100 @ Z100.T - rbf_kernel(X, X, sigma)).mean() > 2 * err.mean()


def test_seeded_and_streamed_chunk_by_chunk():
    rng = np.random.default_rng(2)
    X = sp.random(500, 12, density=0.3, random_state=4, format="csr")
    y = np.where(rng.random(500) < 0.5, 1.0, -1.0)
    a = RandomFourierFeatures(n_components=64, sigma=1.5, random_state=7).fit(X)
    b = RandomFourierFeatures(n_components=64, sigma=1.5, random_state=7).fit(X)
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    features = a.stream(Stream.from_arrays(X, y, chunk_rows=120))
    chunks = list(features)
    assert features.n_features == 64 and [c.X.shape[0] for c in chunks] == [120, 120, 120, 120, 20]
    np.testing.assert_allclose(np.vstack([c.X for c in chunks]), a.transform(X), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(np.concatenate([c.y for c in chunks]), y)
    # A stream's features feed a streaming solver directly (RMMP over D = 64 columns).
    model = SparseLogisticRegression(solver="rmmp", lam_ratio=0.05).fit(features)
    assert model.coef_.shape == (1, 64)


def test_kernel_logistic_regression_separates_what_a_linear_model_cannot():
    """Two concentric rings: linear accuracy ~ 0.5, RBF features near 1."""
    rng = np.random.default_rng(5)
    r = np.r_[rng.uniform(0, 1, 300), rng.uniform(2, 3, 300)]
    t = rng.uniform(0, 2 * np.pi, 600)
    X = np.c_[r * np.cos(t), r * np.sin(t)]
    y = np.r_[np.ones(300), -np.ones(300)]
    linear = SparseLogisticRegression(lam_ratio=0.01).fit(X, y).score(X, y)
    rff = RandomFourierFeatures(n_components=200, sigma=1.0, random_state=0).fit(X)
    kernel = SparseLogisticRegression(lam_ratio=0.01).fit(rff.transform(X), y).score(rff.transform(X), y)
    exact = RBFKernelFeatures(sigma=1.0).fit(X)
    exact_score = SparseLogisticRegression(lam_ratio=0.01).fit(exact.transform(X), y).score(exact.transform(X), y)
    assert linear < 0.7 and kernel > 0.95 and exact_score > 0.95


def test_bad_parameters():
    with pytest.raises(ValueError, match="sigma"):
        RandomFourierFeatures(sigma=0).fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="n_components"):
        RandomFourierFeatures(n_components=0).fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="sigma"):
        RBFKernelFeatures(sigma=-1).fit(np.ones((3, 2)))
