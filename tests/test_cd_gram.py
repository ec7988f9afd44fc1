"""The batch CD solver's Gram-matrix path (covariance updates): an ill-conditioned quadratic
model, and the support's Newton system, are solved on X_A^T diag(D) X_A once reading the
columns again would cost more. Same minimiser, only cheaper."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale.data.memory import as_columns
from l1scale.exceptions import ConvergenceWarning
from l1scale.problems import Problem
from l1scale.solvers import _cd_kernels as kernels
from l1scale.solvers import _cg_kernels as cg_kernels
from l1scale.solvers import _gram_kernels as gram_kernels
from l1scale.solvers._quadratic_step import NU
from l1scale.solvers.cd import CoordinateDescent


def _one_hot(n=600, blocks=(5, 7, 4, 9, 3), seed=0):
    """One-hot blocks (every row one level per block: the columns of a block sum to the
    intercept's) plus two correlated numeric columns: the models CD needs hundreds of sweeps on."""
    rng = np.random.default_rng(seed)
    cols = []
    for levels in blocks:
        level = rng.integers(levels, size=n)
        cols.append(np.eye(levels)[level])
    u = rng.normal(size=n)
    cols.append(np.column_stack([u, u + 0.05 * rng.normal(size=n)]))
    X = np.hstack(cols)
    w = rng.normal(size=X.shape[1]) * (rng.random(X.shape[1]) < 0.6)
    z = X @ w - 0.3 + rng.logistic(size=n)
    return X, np.where(z > 0, 1.0, -1.0), z


@pytest.mark.parametrize("layout", ["dense", "csc", "csr"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_model_gram_is_the_weighted_gram_matrix_bordered_by_the_intercept(layout, fit_intercept):
    X, _, _ = _one_hot()
    X[np.random.default_rng(1).random(X.shape) < 0.1] = 0.0  # rows with differing counts
    Xl = X if layout == "dense" else getattr(sp, f"{layout}_matrix")(X)
    arrays = as_columns(Xl).arrays
    D = np.random.default_rng(2).uniform(0.0, 1.0, size=X.shape[0])
    D[::7] = 0.0  # rows without curvature are skipped
    active = np.array([9, 2, 0, 27, 14, 5, 28], dtype=np.int64)  # any order, the local order
    counts = np.empty(X.shape[0], dtype=np.int64)
    nnz, work = gram_kernels.gram_cost(*arrays, active, active.shape[0], counts)
    XA = X[:, active]
    assert nnz == (X.shape[0] * active.shape[0] if layout == "dense" else np.count_nonzero(XA))
    per_row = counts if layout != "dense" else np.full(X.shape[0], active.shape[0])
    # Dense columns are multiplied in tiles: their multiply-adds weigh less, in the scalar loop's
    # units. Sparse ones cost their rows' pairs, even where they are multiplied in tiles (here:
    # about six entries a row in seven columns, 21 pairs a row against 3.2 tile products' worth).
    pairs = 0.5 * float(per_row @ (per_row + 1))
    if layout == "dense":
        copy = gram_kernels.DENSE_GRAM_COPY * X.shape[0] * active.shape[0]
        assert work == pytest.approx(copy + pairs / gram_kernels.DENSE_GRAM_SPEEDUP)
    else:
        assert work == pytest.approx(pairs)
        assert gram_kernels._densify_pays(X.shape[0], active.shape[0], fit_intercept, counts)
    Q = gram_kernels.model_gram(*arrays, active, active.shape[0], D, counts, fit_intercept)
    B = np.column_stack([XA, np.ones(X.shape[0])]) if fit_intercept else XA
    np.testing.assert_allclose(Q, B.T @ (D[:, None] * B), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_model_gram_of_a_few_sparse_columns_skips_the_empty_rows_but_not_their_curvature(fit_intercept):
    # A model of a few rare features (a path's early lams on text): most rows hold none of their
    # entries. model_gram passes over those rows only, yet the intercept's corner sums D over all.
    rng = np.random.default_rng(5)
    n, d = 5000, 30
    X = sp.random(n, d, density=0.002, format="csc", random_state=6)
    active = np.array([3, 17, 8], dtype=np.int64)
    counts = np.empty(n, dtype=np.int64)
    arrays = as_columns(X).arrays
    nnz, work = gram_kernels.gram_cost(*arrays, active, active.shape[0], counts)
    XA = X.toarray()[:, active]
    per_row = np.count_nonzero(XA, axis=1)
    assert nnz == per_row.sum() and np.count_nonzero(per_row) < n // 10
    np.testing.assert_array_equal(counts, per_row)
    assert work == 0.5 * float(per_row @ (per_row + 1))
    D = rng.uniform(0.0, 1.0, size=n)
    Q = gram_kernels.model_gram(*arrays, active, active.shape[0], D, counts, fit_intercept)
    B = np.column_stack([XA, np.ones(n)]) if fit_intercept else XA
    np.testing.assert_allclose(Q, B.T @ (D[:, None] * B), rtol=1e-13, atol=1e-13)
    if fit_intercept:
        assert Q[-1, -1] == pytest.approx(D.sum(), rel=1e-14)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_model_gram_of_many_row_blocks_is_the_weighted_gram_matrix(fit_intercept):
    # Rows are transposed a block of GRAM_BLOCK_ENTRIES entries at a time: a matrix of several
    # blocks (with an empty column and rows without curvature) gives the same matrix.
    rng = np.random.default_rng(3)
    n, d = 30000, 40
    X = sp.random(n, d, density=0.1, format="csc", random_state=4)
    X = sp.csc_matrix(X.toarray() * (np.arange(d) != 7))  # column 7 empty
    assert X.nnz > 3 * gram_kernels.GRAM_BLOCK_ENTRIES
    _check_gram(X, rng, fit_intercept, zero_every=5, atol=1e-10)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("density", [0.05, 0.5])
def test_sparse_columns_dense_enough_are_multiplied_in_dense_tiles_to_the_same_matrix(density, fit_intercept):
    # Where a row's entries pair up more often than SPARSE_PAIR_TILES times the dense tiles' products,
    # the rows are scattered a block at a time into a dense block (three blocks here, the last
    # shorter; an empty column; rows without curvature) and multiplied in tiles: the same matrix as
    # the rows' outer products give, which the sparser columns still take.
    rng = np.random.default_rng(8)
    n, d = 2 * gram_kernels.DENSE_GRAM_BLOCK_ROWS + 300, 30
    X = sp.random(n, d, density=density, format="csc", random_state=9)
    X = sp.csc_matrix(X.toarray() * (np.arange(d) != 4))
    counts = np.empty(n, dtype=np.int64)
    gram_kernels.gram_cost(*as_columns(X).arrays, np.arange(d, dtype=np.int64), d, counts)
    assert gram_kernels._densify_pays(n, d, fit_intercept, counts) == (density == 0.5)
    _check_gram(X, rng, fit_intercept, zero_every=7, atol=1e-10)


def _check_gram(X, rng, fit_intercept, zero_every, atol):
    """model_gram over a random order of X's columns, with random curvatures D (every
    ``zero_every``-th row without any), held against the dense weighted Gram matrix; returns
    (Q, the columns' order, D)."""
    n, d = X.shape
    arrays = as_columns(X).arrays
    D = rng.uniform(0.0, 1.0, size=n)
    D[::zero_every] = 0.0
    active = rng.permutation(d).astype(np.int64)
    counts = np.empty(n, dtype=np.int64)
    gram_kernels.gram_cost(*arrays, active, d, counts)
    Q = gram_kernels.model_gram(*arrays, active, d, D, counts, fit_intercept)
    XA = X.toarray()[:, active]
    B = np.column_stack([XA, np.ones(n)]) if fit_intercept else XA
    np.testing.assert_allclose(Q, B.T @ (D[:, None] * B), rtol=1e-12, atol=atol)
    return Q, active, D


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_a_gram_matrix_larger_than_a_band_is_built_band_by_band_to_the_same_bits(fit_intercept):
    # A matrix of more than GRAM_BAND_BYTES is updated a band of its rows at a time (each row of X
    # resuming where the last band left it), over several blocks of rows: the weighted Gram
    # matrix, and every entry summed in the same order as a band holding all of it would (its
    # lower-left corner, read from a column of one band and a row of another, agrees to the bit).
    rng = np.random.default_rng(5)
    n, d = 6000, 420
    X = sp.random(n, d, density=0.03, format="csc", random_state=6)
    size = d + int(fit_intercept)
    assert 8 * size * size > 2 * gram_kernels.GRAM_BAND_BYTES and X.nnz > 2 * gram_kernels.GRAM_BLOCK_ENTRIES
    Q, active, D = _check_gram(X, rng, fit_intercept, zero_every=7, atol=1e-12)
    np.testing.assert_array_equal(Q, Q.T)
    arrays, counts = as_columns(X).arrays, np.empty(n, dtype=np.int64)
    # The same columns in two halves: each half's matrix (one band or two) is the whole one's block.
    half = d // 2
    for part in (active[:half], active[half:]):
        gram_kernels.gram_cost(*arrays, part, part.shape[0], counts)
        P = gram_kernels.model_gram(*arrays, part, part.shape[0], D, counts, False)
        where = np.array([np.flatnonzero(active == j)[0] for j in part])
        np.testing.assert_array_equal(P, Q[np.ix_(where, where)])


def _model(X, layout, fit_intercept, seed):
    """A quadratic model of P (random r and D): the arrays newton_direction takes."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    arrays = as_columns(X if layout == "dense" else sp.csc_matrix(X)).arrays
    D = rng.uniform(0.05, 0.25, size=n) / n
    r = rng.normal(size=n) / n
    g = X.T @ r
    H = (X * X).T @ D + NU
    return arrays, g, H, D, float(r.sum()) if fit_intercept else 0.0


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("layout", ["dense", "csc"])
def test_the_model_solved_on_its_gram_matrix_has_the_same_minimiser(fit_intercept, layout):
    X, _, _ = _one_hot(seed=3)
    n, d = X.shape
    w = np.zeros(d)
    w[[1, 6, 13, 20, 27]] = [0.4, -0.2, 0.3, -0.5, 0.1]
    arrays, g, H, D, g_b = _model(X, layout, fit_intercept, seed=4)
    lam1 = 0.3 * float(np.abs(g).max())
    out = {}
    for name, gram_first, gram_max in [("plain", 0.0, 0), ("gram", np.inf, 10_000), ("switch", 0.0, 10_000)]:
        active = np.arange(d, dtype=np.int64)
        wpd, xTd = w.copy(), np.zeros(n)
        kernels.seed(0)
        model = kernels.QuadraticModel(g, H, w, wpd, xTd, D, g_b)
        settings = kernels.InnerSettings(lam1, 0.0, fit_intercept, 1e-15, 20_000, gram_first, gram_max)
        d_b, sweeps, reads, used, _, _ = kernels.newton_direction(*arrays, active, d, model, settings, np.empty((0, 0)))
        assert (used > 0.0) == (name != "plain")
        out[name] = (wpd, d_b, xTd, sweeps)
    assert out["plain"][3] > 10  # ill-conditioned: "switch" changed over after its first sweeps
    for name in ("gram", "switch"):
        wpd, d_b, xTd, _ = out[name]
        np.testing.assert_allclose(wpd, out["plain"][0], rtol=0, atol=1e-9)
        assert d_b == pytest.approx(out["plain"][1], abs=1e-9)
        # The line search's X d + d_b is rebuilt from the moved coordinates.
        np.testing.assert_allclose(xTd, X @ (wpd - w) + d_b, rtol=0, atol=1e-12)


def _thinned_one_hot(layout, seed):
    """One-hot blocks with a tenth of their ones removed, in ``layout``, and curvatures D:
    (X dense, the layout's arrays, D)."""
    X, _, _ = _one_hot(seed=seed)
    X[np.random.default_rng(seed + 1).random(X.shape) < 0.1] = 0.0
    arrays = as_columns(X if layout == "dense" else sp.csc_matrix(X)).arrays
    return X, arrays, np.random.default_rng(seed + 2).uniform(0.0, 1.0, size=X.shape[0])


@pytest.mark.parametrize("layout", ["dense", "csc"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_a_bordered_gram_matrix_is_the_grown_models_own(layout, fit_intercept):
    """border_gram: the Gram matrix of a model grown by a few coordinates, from the old one and one
    read of the model's columns per coordinate that entered, is model_gram's for the grown model."""
    X, arrays, D = _thinned_one_hot(layout, seed=7)
    n = X.shape[0]
    active = np.array([9, 2, 0, 27, 14, 5, 28, 11, 20], dtype=np.int64)
    m_old, m_new = 6, active.shape[0]
    counts = np.empty(n, dtype=np.int64)
    gram_kernels.gram_cost(*arrays, active, m_old, counts)
    old = gram_kernels.model_gram(*arrays, active, m_old, D, counts, fit_intercept)
    t = np.zeros(n)
    Q, reads = gram_kernels.border_gram(*arrays, active, m_old, m_new, D, old, fit_intercept, t)
    gram_kernels.gram_cost(*arrays, active, m_new, counts)
    np.testing.assert_allclose(
        Q, gram_kernels.model_gram(*arrays, active, m_new, D, counts, fit_intercept), rtol=1e-12, atol=1e-13
    )
    np.testing.assert_array_equal(t, 0.0)  # the scratch is left as it came
    column_nnz = n if layout == "dense" else np.count_nonzero(X, axis=0)
    per_new = [column_nnz if layout == "dense" else column_nnz[active[p]] for p in range(m_old, m_new)]
    assert reads >= sum(per_new)  # the entering columns read, and the model's once per entering one


@pytest.mark.parametrize("layout", ["dense", "csc"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_system_columns_are_the_support_systems_columns(layout, fit_intercept):
    """system_columns: the columns of the support's Newton system for a few of its weights (what a
    stale factorisation borders on for the weights new to it), against the dense system
    X_S^T diag(D) X_S + ridge I bordered by the intercept's row."""
    X, arrays, D = _thinned_one_hot(layout, seed=5)
    n = X.shape[0]
    support = np.array([0, 2, 5, 9, 11, 14, 20, 27, 28], dtype=np.int64)
    positions = np.array([7, 1, 4], dtype=np.int64)
    ridge = 0.3
    XS = X[:, support]
    M = XS.T @ (D[:, None] * XS) + ridge * np.eye(support.shape[0])
    if fit_intercept:
        M = np.vstack([M, D @ XS])
    t, out = np.zeros(n), np.full((M.shape[0], positions.shape[0]), np.nan)
    reads = gram_kernels.system_columns(*arrays, support, positions, D, ridge, fit_intercept, t, out)
    np.testing.assert_allclose(out, M[:, positions], rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(t, 0.0)  # the scratch is left as it came
    support_nnz = n * support.shape[0] if layout == "dense" else int(np.count_nonzero(XS))
    assert reads >= positions.shape[0] * support_nnz  # the support's columns read once a column


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_a_model_returns_its_gram_matrix_in_its_order_and_takes_one_given(fit_intercept):
    """newton_direction returns the Gram matrix it solved on, permuted as its shrinking permuted
    active; given that matrix back (the same model grown by nothing), it solves on it from the start
    without building one: the same minimiser, a fraction of the work."""
    X, _, _ = _one_hot(seed=3)
    n, d = X.shape
    w = np.zeros(d)
    w[[1, 6, 13, 20, 27]] = [0.4, -0.2, 0.3, -0.5, 0.1]
    arrays, g, H, D, g_b = _model(X, "csc", fit_intercept, seed=4)
    lam1 = 0.3 * float(np.abs(g).max())
    settings = kernels.InnerSettings(lam1, 0.0, fit_intercept, 1e-15, 20_000, np.inf, 10_000)
    active = np.arange(d, dtype=np.int64)
    wpd, xTd = w.copy(), np.zeros(n)
    kernels.seed(0)
    model = kernels.QuadraticModel(g, H, w, wpd, xTd, D, g_b)
    d_b, _, reads, price, _, gram = kernels.newton_direction(*arrays, active, d, model, settings, np.empty((0, 0)))
    assert price > 0.0 and not np.array_equal(active, np.arange(d))  # on its Gram matrix, shrunk
    counts = np.empty(n, dtype=np.int64)
    gram_kernels.gram_cost(*arrays, active, d, counts)
    np.testing.assert_allclose(
        gram, gram_kernels.model_gram(*arrays, active, d, D, counts, fit_intercept), rtol=1e-12, atol=1e-13
    )

    wpd2, xTd2 = w.copy(), np.zeros(n)
    kernels.seed(0)
    model2 = kernels.QuadraticModel(g, H, w, wpd2, xTd2, D, g_b)
    d_b2, _, reads2, price2, _, _ = kernels.newton_direction(
        *arrays, active, d, model2, settings._replace(gram_first=price), gram
    )
    assert price2 == price
    np.testing.assert_allclose(wpd2, wpd, rtol=0, atol=1e-9)
    assert d_b2 == pytest.approx(d_b, abs=1e-9)
    assert reads2 < 0.5 * reads


def test_a_gram_matrix_is_bought_at_once_only_when_it_costs_at_most_gram_reuse_times_the_last():
    """After a model that needed its Gram matrix (``gram_first``: that matrix's price), the next
    model's is built at once only when it costs at most GRAM_REUSE times as much; else
    rent-or-buy decides, and a well-conditioned model that CD solves in a few sweeps never buys
    it. The minimiser is the same either way."""
    rng = np.random.default_rng(8)
    n, d = 400, 60
    # Long rows: the Gram matrix costs about 30 sweeps, so rent-or-buy alone never buys it for
    # a model of independent columns that CD solves in a few.
    X = sp.csc_matrix(rng.normal(size=(n, d)))
    arrays = (X.data, X.indices, X.indptr, False)  # its CSC arrays (as_columns would lay it out dense)
    D = rng.uniform(0.05, 0.25, size=n) / n
    r = rng.normal(size=n) / n
    g = X.T @ r
    H = X.multiply(X).T @ D + NU
    lam1 = 0.3 * float(np.abs(g).max())
    out = {}
    price = None
    for name in ("forced", "cheap enough", "too dear"):
        if name == "forced":
            gram_first = np.inf
        else:
            margin = 1.01 if name == "cheap enough" else 0.99
            gram_first = margin * price / kernels.GRAM_REUSE
        w, wpd, xTd = np.zeros(d), np.zeros(d), np.zeros(n)
        kernels.seed(0)
        model = kernels.QuadraticModel(g, H, w, wpd, xTd, D, float(r.sum()))
        settings = kernels.InnerSettings(lam1, 0.0, True, 1e-10 * lam1, 1000, gram_first, 10_000)
        _, sweeps, _, used, _, _ = kernels.newton_direction(*arrays, np.arange(d), d, model, settings, np.empty((0, 0)))
        price = used if name == "forced" else price
        out[name] = (used, wpd.copy(), sweeps)
    assert out["forced"][0] > 0.0 and out["cheap enough"][0] == pytest.approx(price)
    assert out["too dear"][0] == 0.0  # solved by plain sweeps
    for name in ("cheap enough", "too dear"):
        np.testing.assert_allclose(out[name][1], out["forced"][1], rtol=0, atol=1e-10)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_support_cg_on_the_gram_matrix_solves_the_same_system(fit_intercept):
    X, _, _ = _one_hot(seed=5)
    arrays = as_columns(sp.csc_matrix(X)).arrays
    n = X.shape[0]
    support = np.array([0, 3, 6, 8, 12, 17, 21, 27, 28], dtype=np.int64)
    D = np.random.default_rng(6).uniform(0.05, 0.25, size=n) / n
    k = support.shape[0]
    B = np.column_stack([X[:, support], np.ones(n)]) if fit_intercept else X[:, support]
    A = B.T @ (D[:, None] * B)
    A[np.arange(k), np.arange(k)] += 1e-6
    if fit_intercept:
        A[k, k] += NU
    rhs = np.random.default_rng(7).normal(size=A.shape[0])
    solutions = []
    for gram_max in (0, 1000):
        x, t = np.empty(A.shape[0]), np.empty(n)
        products, reads, _, _ = cg_kernels.support_cg(
            *arrays, support, D, 1e-6, NU, fit_intercept, rhs, np.diag(A).copy(), 1e-13, 500, x, t, gram_max,
            x, -1, -1,  # no crossing test, no cap on the products
        )  # fmt: skip
        assert reads > 0 and products > 2
        solutions.append(x)
    exact = np.linalg.solve(A, rhs)
    for x in solutions:
        np.testing.assert_allclose(x, exact, rtol=1e-7, atol=1e-9 * np.abs(exact).max())


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "probit", "squared"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_the_solver_with_gram_models_reaches_the_plain_solvers_optimum(loss, fit_intercept, capsys):
    X, y, z = _one_hot(n=2000, seed=8)
    if loss == "squared":
        y = z
    weights = np.random.default_rng(9).uniform(0.5, 2.0, size=y.shape[0])
    for lam_ratio, l1_ratio in [(0.01, 1.0), (0.002, 0.7)]:
        p = Problem(
            sp.csr_matrix(X), y, loss, lam_ratio=lam_ratio, l1_ratio=l1_ratio,
            fit_intercept=fit_intercept, sample_weight=weights,
        )  # fmt: skip
        results = []
        for gram_max in (0, CoordinateDescent.gram_max):
            solver = CoordinateDescent(tol=1e-12, max_iter=1000, verbose=2)
            solver.gram_max = gram_max
            with warnings.catch_warnings():
                warnings.simplefilter("error", ConvergenceWarning)
                results.append(solver.solve(p))
            printed = capsys.readouterr().out
            assert ("(Gram)" in printed) == (gram_max > 0 and "CD on the model" in printed)
        plain, gram = results
        assert gram.objective == pytest.approx(plain.objective, rel=1e-10)
        if l1_ratio < 1.0:  # the ridge part makes the optimum unique: the same model
            np.testing.assert_array_equal(np.sign(gram.coef), np.sign(plain.coef))
        elif loss != "squared_hinge":
            # At pure L1 the optimum can be a flat face: a block's columns sum to one (to the
            # intercept's column), so weight moves between blocks, or a block and the intercept,
            # keeping the margins and the L1 norm (probit with intercept: the two solutions differ
            # by 3e-3 at equal objectives). The Gram model's face descents land on a vertex of it.
            # A loss strictly convex in the margin has unique optimal margins: those agree.
            z_plain, z_gram = X @ plain.coef + plain.intercept, X @ gram.coef + gram.intercept
            np.testing.assert_allclose(z_gram, z_plain, atol=1e-5 * np.abs(z_plain).max())


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("m", [1, 2, 3, 4, 13, 200])
def test_dense_gram_summed_over_blocks_of_rows_is_the_weighted_gram_matrix(m, fit_intercept):
    # Dense columns are multiplied a block of rows at a time (at least DENSE_GRAM_BLOCK_ROWS rows,
    # the last one shorter), in 4 x 4 tiles over the columns padded with zeros to a multiple of 4
    # (every size mod 4 here, with and without the intercept's column): the sum over the blocks
    # is the whole matrix, exactly symmetric, and a curvature rounded below zero counts as zero
    # (no NaN from its square root).
    rng = np.random.default_rng(11)
    n = 2 * gram_kernels.DENSE_GRAM_BLOCK_ROWS + 452
    if m == 200:  # three blocks
        assert gram_kernels.DENSE_GRAM_BLOCK_BYTES // (8 * (m + 4)) < gram_kernels.DENSE_GRAM_BLOCK_ROWS
    X = rng.normal(size=(n, m + 7))
    D = rng.uniform(0.0, 0.25, size=n)
    D[5] = -1e-18
    active = rng.permutation(m + 7)[:m].astype(np.int64)
    arrays = as_columns(X).arrays
    counts = np.empty(n, dtype=np.int64)
    gram_kernels.gram_cost(*arrays, active, m, counts)
    Q = gram_kernels.model_gram(*arrays, active, m, D, counts, fit_intercept)
    XA = X[:, active]
    B = np.column_stack([XA, np.ones(n)]) if fit_intercept else XA
    Dc = np.maximum(D, 0.0)
    expected = B.T @ (Dc[:, None] * B)
    if fit_intercept:
        expected[-1, -1] = D.sum()
    assert np.isfinite(Q).all()
    np.testing.assert_array_equal(Q, Q.T)
    np.testing.assert_allclose(Q, expected, rtol=1e-12, atol=1e-12)
