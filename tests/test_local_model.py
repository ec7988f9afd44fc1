"""CD's Newton model solved on a copy of its columns (``solvers._local_model``): a model over many
scattered coordinates of a wide X gives the same iterate, order and intercept step, to the bit,
as the model solved in place; the copy's read of its columns is counted."""

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale import SparseLogisticRegression
from l1scale.solvers import _cd_kernels as kernels
from l1scale.solvers import _local_model as local_model
from l1scale.solvers._quadratic_step import NU


def _wide_model(m, spread, seed):
    """A CSC X of m * spread columns (a few entries each) and a quadratic model of m scattered ones."""
    rng = np.random.default_rng(seed)
    n, d = 400, m * spread
    X = sp.random(n, d, density=3.0 / n, format="csc", random_state=seed, dtype=np.float64)
    X.data[:] = rng.choice([1.0, 2.0], size=X.nnz)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    D = rng.uniform(0.05, 0.25, size=n) / n
    r = rng.normal(size=n) / n
    g = np.asarray(X.T @ r).ravel()
    H = np.asarray(X.multiply(X).T @ D).ravel() + NU
    w = np.zeros(d)
    chosen = np.sort(rng.choice(d, m, replace=False))
    w[chosen[::7]] = rng.normal(size=chosen[::7].shape[0]) * 0.1
    return X, chosen, g, H, w, D, float(r.sum())


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("gram_max", [0, 10_000])
@pytest.mark.parametrize("dual_decrease", [0.0, np.inf])
def test_a_wide_model_solved_on_a_copy_gives_the_same_bits(fit_intercept, gram_max, dual_decrease):
    m = local_model.LOCAL_MIN_COORDINATES + 200
    X, chosen, g, H, w, D, g_b = _wide_model(m, local_model.LOCAL_MIN_SPREAD + 2, seed=1)
    assert X.shape[1] >= local_model.LOCAL_MIN_SPREAD * m  # the copy applies
    lam1 = 0.2 * float(np.abs(g[chosen]).max())
    arrays = (X.data, X.indices, X.indptr, False)
    out = {}
    for name, solve in (("in place", kernels.newton_direction), ("copy", local_model.newton_direction)):
        active = np.concatenate([chosen, np.arange(5, dtype=np.int64)])  # entries past m are left alone
        wpd, xTd = w.copy(), np.zeros(X.shape[0])
        kernels.seed(0)
        model = kernels.QuadraticModel(g, H, w, wpd, xTd, D, g_b if fit_intercept else 0.0)
        settings = kernels.InnerSettings(
            lam1, 0.0, fit_intercept, 1e-12, 400, 0.0, gram_max, dual_decrease, 1e-9 * lam1
        )
        result = solve(*arrays, active, m, model, settings, np.empty((0, 0)))
        out[name] = (result, wpd, xTd, active)
    (d_b, sweeps, reads, price, tight, gram), wpd, xTd, active = out["in place"]
    (d_b2, sweeps2, reads2, price2, tight2, gram2), wpd2, xTd2, active2 = out["copy"]
    assert sweeps > 2 and np.count_nonzero(wpd[chosen] != w[chosen]) > 0  # a real solve
    assert (d_b2, sweeps2, price2, tight2) == (d_b, sweeps, price, tight)
    np.testing.assert_array_equal(wpd2, wpd)
    np.testing.assert_array_equal(xTd2, xTd)
    np.testing.assert_array_equal(active2, active)  # the same shrinking order, the tail untouched
    np.testing.assert_array_equal(gram2, gram)  # the Gram matrix in that order (empty when not used)
    assert gram.shape[0] == (m + int(fit_intercept) if price > 0.0 else 0)
    model_nnz = int(np.sum(X.indptr[chosen + 1] - X.indptr[chosen]))
    assert reads2 == reads + model_nnz


def test_a_small_or_dense_model_is_solved_in_place():
    # Below the thresholds the wrapper is the kernel itself: the same reads, no copy counted.
    m = 50
    X, chosen, g, H, w, D, g_b = _wide_model(m, 40, seed=2)
    lam1 = 0.2 * float(np.abs(g[chosen]).max())
    reads = []
    for solve in (kernels.newton_direction, local_model.newton_direction):
        kernels.seed(0)
        model = kernels.QuadraticModel(g, H, w, w.copy(), np.zeros(X.shape[0]), D, g_b)
        settings = kernels.InnerSettings(lam1, 0.0, True, 1e-12, 100, 0.0, 0)
        reads.append(solve(X.data, X.indices, X.indptr, False, chosen.copy(), m, model, settings, np.empty((0, 0)))[2])
    assert reads[0] == reads[1]


def test_a_fit_over_many_scattered_features_is_certified():
    # The estimator's solve takes the copy on its large models (hashed-click shape: each row a few
    # random features of many): certified to tol, as liblinear's objective or better.
    rng = np.random.default_rng(3)
    n, d, per_row = 3000, 200_000, 20
    cols = np.sort(rng.integers(0, d, size=(n, per_row)), axis=1)
    X = sp.csr_matrix((np.ones(n * per_row), cols.ravel(), np.arange(0, n * per_row + 1, per_row)), shape=(n, d))
    X.sum_duplicates()
    truth = np.zeros(d)
    truth[rng.choice(d, 100, replace=False)] = 3 * rng.normal(size=100)
    y = np.where(X @ truth + rng.logistic(size=n) > 0, 1.0, -1.0)
    model = SparseLogisticRegression(lam_ratio=0.02, tol=1e-8, max_iter=1000).fit(X, y)
    result = model.result_
    assert result.converged and result.relative_certificate <= 1e-8
    assert np.count_nonzero(model.coef_) >= local_model.LOCAL_MIN_COORDINATES  # the copy was taken
