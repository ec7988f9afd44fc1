"""Tests for l1scale.data.synthetic: the paper's simulated data and sparse text streams."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale.data.synthetic import (
    BM_BETA_TRUE,
    iter_sparse_text_chunks,
    make_bm_simulated,
    make_sparse_text,
    sparse_text_coef,
)

# Balakrishnan & Madigan, Table 1, column beta_true (intercept first).
TABLE1_BETA_TRUE = [0.259, 0.761, -0.360, 0.876, 0.913, -0.302, -0.820, 0.0, 0.0, 0.0, -0.319]


def _canonical(X):
    """Every row's indices strictly increasing (sorted, no duplicates)."""
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    same_row = rows[1:] == rows[:-1]
    return bool(np.all(np.diff(X.indices)[same_row] > 0))


# ----------------------------------------------------------------- bm simulated


def test_bm_matches_paper_table1():
    X, y, beta = make_bm_simulated(100, random_state=0, return_coef=True)
    np.testing.assert_array_equal(beta, TABLE1_BETA_TRUE)
    np.testing.assert_array_equal(BM_BETA_TRUE, TABLE1_BETA_TRUE)
    assert np.count_nonzero(beta[1:] == 0) == 3  # "three ... redundant variables"
    beta[0] = 99.0  # a copy: the module constant is untouched
    assert BM_BETA_TRUE[0] == 0.259


@pytest.mark.parametrize("link", ["probit", "logistic"])
def test_bm_shapes_labels_and_x_distribution(link):
    X, y = make_bm_simulated(20000, link=link, random_state=1)
    assert X.shape == (20000, 11) and X.dtype == np.float64 and X.flags.c_contiguous
    np.testing.assert_array_equal(X[:, 0], 1.0)  # the intercept is part of x, d = 11
    np.testing.assert_allclose(X[:, 1:].mean(axis=0), 0.0, atol=0.04)
    np.testing.assert_allclose(X[:, 1:].std(axis=0), 1.0, atol=0.04)
    assert set(np.unique(y)) == {-1.0, 1.0}
    X10, y10 = make_bm_simulated(20000, link=link, random_state=1, add_intercept=False)
    assert X10.shape == (20000, 10) and X10.flags.c_contiguous
    np.testing.assert_array_equal(X10, X[:, 1:])
    np.testing.assert_array_equal(y10, y)


def test_bm_labels_follow_the_link():
    """An unpenalised MLE on the data recovers beta_true (within sampling error)."""
    from sklearn.linear_model import LogisticRegression

    X, y = make_bm_simulated(40000, link="logistic", random_state=2)
    clf = LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-8, max_iter=1000)
    clf.fit(X, y)
    np.testing.assert_allclose(clf.coef_.ravel(), BM_BETA_TRUE, atol=0.08)

    # Probit: P(y=+1) at the margin matches Phi; check the mean over bins of z.
    from scipy.special import ndtr

    X, y = make_bm_simulated(40000, link="probit", random_state=3)
    z = X @ BM_BETA_TRUE
    assert abs(np.mean(y == 1) - np.mean(ndtr(z))) < 0.015
    assert np.mean(np.sign(z) == y) > 0.75


def test_bm_determinism_and_random_state_kinds():
    a = make_bm_simulated(500, random_state=7)
    b = make_bm_simulated(500, random_state=7)
    c = make_bm_simulated(500, random_state=8)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    g1 = make_bm_simulated(50, random_state=np.random.default_rng(3))[0]
    g2 = make_bm_simulated(50, random_state=np.random.default_rng(3))[0]
    np.testing.assert_array_equal(g1, g2)
    rng = np.random.default_rng(3)  # a shared generator advances between calls
    assert not np.array_equal(make_bm_simulated(50, random_state=rng)[0], make_bm_simulated(50, random_state=rng)[0])
    r1 = make_bm_simulated(50, random_state=np.random.RandomState(4))[0]
    r2 = make_bm_simulated(50, random_state=np.random.RandomState(4))[0]
    np.testing.assert_array_equal(r1, r2)
    np.random.seed(5)
    n1 = make_bm_simulated(50)[0]
    np.random.seed(5)  # None uses numpy's global RandomState, as scikit-learn does
    np.testing.assert_array_equal(n1, make_bm_simulated(50)[0])


@pytest.mark.parametrize(
    "kwargs",
    [dict(link="cauchit"), dict(n_samples=-1), dict(n_samples=2.5), dict(random_state="x"), dict(random_state=-3)],
)
def test_bm_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        make_bm_simulated(**{"n_samples": 10, **kwargs})


# ----------------------------------------------------------------- sparse text


@pytest.fixture(scope="module")
def text():
    return make_sparse_text(20000, 10000, random_state=0, return_coef=True)


def test_sparse_text_format(text):
    X, y, w = text
    assert sp.isspmatrix_csr(X) and X.shape == (20000, 10000) and X.dtype == np.float64
    assert X.indices.dtype == np.int64 and X.indptr.dtype == np.int64
    X.check_format(full_check=True)
    assert _canonical(X) and X.has_sorted_indices
    assert np.all(X.data > 0)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms[np.diff(X.indptr) > 0], 1.0, rtol=1e-12)
    assert abs(X.nnz / X.shape[0] - 50) < 0.5  # mean nnz per row, exact in expectation
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert abs(np.mean(y == 1) - 0.5) < 0.05  # centred planted model: balanced classes
    assert w.shape == (10000,) and np.count_nonzero(w) == 100


def test_sparse_text_planted_model_predicts_labels(text):
    X, y, w = text
    z = X @ w
    assert np.std(z) == pytest.approx(3.0, rel=0.1)
    assert np.mean(np.sign(z) == y) > 0.75  # chance is 0.5
    # Informative features occur in the data.
    assert np.all(np.diff(X.tocsc().indptr)[w != 0] > 0)


def test_sparse_text_zipf_rank_frequency(text):
    X = text[0]
    df = np.diff(X.tocsc().indptr).astype(float)  # document frequency per feature
    assert np.all(np.diff(df[:20]) <= 0.02 * X.shape[0])  # the head decreases with index
    # In the tail, df ~ tokens * p_j ~ (j + 1)**-power: a log-log slope of -1.1.
    j = np.arange(100, 2000)
    slope = np.polyfit(np.log(j + 1.0), np.log(df[j]), 1)[0]
    assert slope == pytest.approx(-1.1, abs=0.12)
    X2 = make_sparse_text(20000, 10000, power=0.6, random_state=0)[0]
    df2 = np.diff(X2.tocsc().indptr).astype(float)
    assert np.polyfit(np.log(j + 1.0), np.log(df2[j]), 1)[0] == pytest.approx(-0.6, abs=0.12)


def test_sparse_text_determinism():
    X1, y1 = make_sparse_text(3000, 500, nnz_per_row=20, n_informative=10, random_state=11)
    X2, y2 = make_sparse_text(3000, 500, nnz_per_row=20, n_informative=10, random_state=11)
    X3, _ = make_sparse_text(3000, 500, nnz_per_row=20, n_informative=10, random_state=12)
    assert (X1 != X2).nnz == 0 and np.array_equal(y1, y2)
    assert X1.shape == X3.shape and (X1 != X3).nnz > 0
    # Generators and RandomStates are accepted; the same state gives the same data.
    a = make_sparse_text(100, 500, random_state=np.random.default_rng(1))[0]
    b = make_sparse_text(100, 500, random_state=np.random.default_rng(1))[0]
    assert (a != b).nnz == 0


def test_sparse_text_prefix_property():
    """Row i does not depend on n_samples (blocks are seeded by position)."""
    X_big, y_big = make_sparse_text(9000, 300, nnz_per_row=10, random_state=4)
    X_small, y_small = make_sparse_text(5000, 300, nnz_per_row=10, random_state=4)
    assert (X_big[:5000] != X_small).nnz == 0
    np.testing.assert_array_equal(y_big[:5000], y_small)


def test_sparse_text_links_and_intercept():
    kw = dict(n_samples=8000, n_features=400, nnz_per_row=15, n_informative=40, random_state=5)
    X, y, w = make_sparse_text(link="sign", return_coef=True, **kw)
    z = X @ w
    np.testing.assert_array_equal(y[z != 0], np.sign(z[z != 0]))
    Xp, yp, wp = make_sparse_text(link="probit", return_coef=True, **kw)
    assert (Xp != X).nnz == 0 and np.array_equal(w, wp)  # the link changes labels only
    assert np.mean(np.sign(z) == yp) > 0.75
    _, yn = make_sparse_text(intercept=-3.0, **kw)
    assert np.mean(yn == 1) < 0.25
    _, ynoisy = make_sparse_text(link="sign", noise=100.0, **kw)
    assert 0.4 < np.mean(ynoisy == y) < 0.6  # noise swamps the signal


def test_sparse_text_small_and_edge_sizes():
    X, y = make_sparse_text(0, 50, nnz_per_row=5, n_informative=5)
    assert X.shape == (0, 50) and y.shape == (0,)
    X, y, w = make_sparse_text(3, 50, nnz_per_row=5, n_informative=0, return_coef=True)
    assert X.shape == (3, 50) and not w.any()
    X, y = make_sparse_text(200, 4, nnz_per_row=3.5, n_informative=4, power=0.0, random_state=0)
    assert X.shape == (200, 4) and _canonical(X) and X.indices.max() < 4


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(nnz_per_row=0),
        dict(nnz_per_row=100),
        dict(n_informative=101),
        dict(power=-1.0),
        dict(link="tanh"),
        dict(noise=-1.0),
        dict(n_informative=2.5),
    ],
)
def test_sparse_text_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        make_sparse_text(10, 100, **kwargs)


# ----------------------------------------------------------------- chunked


@pytest.mark.parametrize("chunk_rows", [1000, 4096, 7000, 20000])
def test_chunks_equal_one_shot_and_share_w_true(chunk_rows):
    kw = dict(nnz_per_row=12, n_informative=20, random_state=9)
    X, y, w = make_sparse_text(10000, 800, return_coef=True, **kw)
    chunks = list(iter_sparse_text_chunks(10000, 800, chunk_rows=chunk_rows, **kw))
    assert [c[0].shape[0] for c in chunks[:-1]] == [chunk_rows] * (len(chunks) - 1)
    for Xc, yc in chunks:
        assert Xc.indices.dtype == np.int64 and _canonical(Xc) and Xc.shape[1] == 800
        assert Xc.shape[0] == yc.shape[0]
    assert (sp.vstack([c[0] for c in chunks]).tocsr() != X).nnz == 0
    np.testing.assert_array_equal(np.concatenate([c[1] for c in chunks]), y)
    np.testing.assert_array_equal(sparse_text_coef(800, **kw), w)


def test_chunks_deterministic_and_lazy():
    it1 = iter_sparse_text_chunks(5000, 300, chunk_rows=999, nnz_per_row=8, random_state=3)
    it2 = iter_sparse_text_chunks(5000, 300, chunk_rows=999, nnz_per_row=8, random_state=3)
    for (a, ya), (b, yb) in zip(it1, it2, strict=True):
        assert (a != b).nnz == 0 and np.array_equal(ya, yb)
    with pytest.raises(ValueError):  # arguments are checked at the call, not at next()
        iter_sparse_text_chunks(10, 100, nnz_per_row=500)
    with pytest.raises(TypeError):
        iter_sparse_text_chunks(10, 100, return_coef=True)


def _peak_bytes(n_samples):
    tracemalloc.start()
    try:
        for X, y in iter_sparse_text_chunks(n_samples, 2000, chunk_rows=2000, nnz_per_row=20, random_state=1):
            del X, y
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_chunks_memory_does_not_grow_with_stream_length():
    list(iter_sparse_text_chunks(10, 2000, nnz_per_row=20))  # compile outside the measurement
    small, large = _peak_bytes(20_000), _peak_bytes(200_000)
    assert large < 1.3 * small + 1_000_000
    whole = 200_000 * 20 * 16  # what materialising the large stream would cost
    assert large < whole / 10
