"""The one column / row accessor serves dense, CSR and CSC alike."""

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit

from l1scale.data._transpose import BLOCKED_MIN_COLUMNS, block_shift, densified_columns, transposed_arrays
from l1scale.data.memory import (
    CHECKED_MARK,
    DENSE_AXPY_BLOCK_ROWS,
    DENSE_SHARE,
    as_columns,
    as_rows,
    column,
    column_axpy,
    column_dot,
    column_dots,
    column_matrix,
    column_matrix_rows,
    column_moments,
    column_weighted_dot,
    column_weighted_dot_and_sum,
    columns_axpy,
    dense_enough,
    index_dtype,
    row,
)
from l1scale.problems import Problem


@njit(cache=True)
def _column_dots(data, indices, indptr, dense, v, out):
    for j in range(out.shape[0]):
        rows, vals = column(data, indices, indptr, dense, j)
        acc = 0.0
        for p in range(rows.shape[0]):
            acc += vals[p] * v[rows[p]]
        out[j] = acc


@njit(cache=True)
def _row_dots(data, indices, indptr, dense, w, out):
    for i in range(out.shape[0]):
        cols, vals = row(data, indices, indptr, dense, i)
        acc = 0.0
        for p in range(cols.shape[0]):
            acc += vals[p] * w[cols[p]]
        out[i] = acc


@pytest.fixture
def X():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(7, 5))
    A[rng.random(A.shape) < 0.5] = 0.0
    return A


@pytest.mark.parametrize("fmt", ["dense", "csr", "csc", "coo", "float32"])
def test_accessors_give_the_same_products(X, fmt):
    given = {
        "dense": X,
        "csr": sp.csr_matrix(X),
        "csc": sp.csc_matrix(X),
        "coo": sp.coo_matrix(X),
        "float32": X.astype(np.float32),
    }[fmt]
    v, w = np.arange(7.0), np.arange(5.0) - 2
    cols, rows = as_columns(given), as_rows(given)
    out_c, out_r = np.empty(5), np.empty(7)
    _column_dots(*cols.arrays, v, out_c)
    _row_dots(*rows.arrays, w, out_r)
    Xd = X.astype(np.float32).astype(np.float64) if fmt == "float32" else X
    np.testing.assert_allclose(out_c, Xd.T @ v, rtol=1e-12)
    np.testing.assert_allclose(out_r, Xd @ w, rtol=1e-12)
    # int32 index arrays where they fit (no copy of scipy's), indices and indptr alike
    assert cols.indices.dtype == rows.indices.dtype == cols.indptr.dtype == rows.indptr.dtype == np.int32
    assert cols.shape == rows.shape == X.shape


@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_a_layout_takes_int32_or_int64_index_arrays_as_they_are(X, index):
    """A canonical CSC (CSR) matrix with float64 values is taken without a copy of its index
    arrays, int32 (scipy's own choice below 2^31) or int64 alike, and gives the same products; a
    matrix that mixes the two types gets one for both, as scipy needs."""
    v, w = np.arange(7.0), np.arange(5.0) - 2
    for make, layout, kernel, x, expected in (
        (sp.csc_matrix, as_columns, _column_dots, v, X.T @ v),
        (sp.csr_matrix, as_rows, _row_dots, w, X @ w),
    ):
        A = make(X)
        A.indices, A.indptr = A.indices.astype(index), A.indptr.astype(index)
        got = layout(A)
        assert got.indices is A.indices and got.indptr is A.indptr and got.data is A.data
        out = np.empty(expected.shape[0])
        kernel(*got.arrays, x, out)
        np.testing.assert_allclose(out, expected, rtol=1e-12)
    A.indptr = A.indptr.astype(np.int64)
    A.indices = A.indices.astype(np.int32)
    mixed = as_rows(A)
    assert mixed.indices.dtype == mixed.indptr.dtype == np.int64
    M = column_matrix(A)  # through scipy's conversion, which picks one type itself
    assert M.indices.dtype == M.indptr.dtype
    np.testing.assert_array_equal(M.tocoo().toarray(), X)


@pytest.mark.parametrize("source", ["csr", "csc"])
@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_the_other_layout_is_scipys_conversion_in_int32_arrays(source, index, dtype):
    """CSR -> CSC (CSC -> CSR) of a canonical matrix, by the library's own scatter: the arrays
    of scipy's conversion, values as float64, index arrays int32 even from int64 ones (the
    conversion copies them anyway); an empty row and an empty column included."""
    rng = np.random.default_rng(3)
    A = sp.random(60, 45, density=0.15, format=source, random_state=4)
    A.data = (A.data * 100 - 50).astype(dtype)
    A = A.tolil()
    A[5, :] = 0
    A[:, 7] = 0
    A = A.asformat(source)
    A.eliminate_zeros()
    A.indices, A.indptr = A.indices.astype(index), A.indptr.astype(index)
    assert A.has_canonical_format
    layout, expected = (as_columns, A.tocsc()) if source == "csr" else (as_rows, A.tocsr())
    got = layout(A)
    assert got.indices.dtype == got.indptr.dtype == np.int32 and got.data.dtype == np.float64
    np.testing.assert_array_equal(got.indptr, expected.indptr)
    np.testing.assert_array_equal(got.indices, expected.indices)
    np.testing.assert_array_equal(got.data, expected.data.astype(np.float64))
    v = rng.normal(size=A.shape[0] if source == "csr" else A.shape[1])
    out = np.empty(A.shape[1] if source == "csr" else A.shape[0])
    (_column_dots if source == "csr" else _row_dots)(*got.arrays, v, out)
    np.testing.assert_allclose(out, (A.T if source == "csr" else A) @ v, rtol=1e-12)


@pytest.mark.parametrize("shift", [0, 2, 3, 6, 17])
@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_blocked_transposition_gives_the_single_scatters_arrays(shift, index, dtype):
    """Through column blocks of 2**shift (a last block cut short, empty rows and columns, blocks
    without values, a block wider than the matrix, a column within its block beyond uint16),
    the arrays of the single scatter to the bit: the same values in the same rows' order."""
    rng = np.random.default_rng(shift)
    A = sp.random(40, 203, density=0.1, format="csr", random_state=shift)
    A.data = rng.normal(size=A.nnz)
    A = A.tolil()
    A[3, :] = 0
    A[:, 100:140] = 0
    A = sp.csr_matrix(A)
    A.eliminate_zeros()
    single = transposed_arrays(A.data, A.indices, A.indptr, A.shape[1], dtype, index, shift=-1)
    blocked = transposed_arrays(A.data, A.indices, A.indptr, A.shape[1], dtype, index, shift=shift)
    expected = A.tocsc()
    for got in (single, blocked):
        np.testing.assert_array_equal(got[2], expected.indptr)
        np.testing.assert_array_equal(got[1], expected.indices)
        np.testing.assert_array_equal(got[0], expected.data.astype(dtype))
        assert got[0].dtype == dtype and got[1].dtype == got[2].dtype == index
    empty = transposed_arrays(
        np.empty(0), np.empty(0, np.int32), np.zeros(5, np.int32), 300, np.float64, np.int32, shift
    )
    assert empty[0].size == 0 and empty[2].tolist() == [0] * 301


def test_a_wide_matrix_is_transposed_through_blocks_by_default():
    """From BLOCKED_MIN_COLUMNS columns on (and as many values), about BLOCKS blocks of at
    least 64 columns; the column layout of such a matrix is scipy's conversion."""
    assert block_shift(BLOCKED_MIN_COLUMNS - 1, 10**6) == -1
    assert block_shift(10**6, 100) == -1
    assert block_shift(BLOCKED_MIN_COLUMNS, 10**6) == 6
    assert block_shift(588_937, 10**6) == 13
    A = sp.random(300, 3 * BLOCKED_MIN_COLUMNS + 5, density=0.02, format="csr", random_state=1)
    assert block_shift(A.shape[1], A.nnz) > 0
    expected, got = A.tocsc(), as_columns(A)
    np.testing.assert_array_equal(got.indptr, expected.indptr)
    np.testing.assert_array_equal(got.indices, expected.indices)
    np.testing.assert_array_equal(got.data, expected.data)


@pytest.mark.parametrize("make", [sp.csr_matrix, sp.csc_matrix])
def test_a_matrix_without_values_or_out_of_order_converts(make):
    """No stored value, or indices out of order (not canonical: scipy's conversion sorts them)."""
    empty = as_columns(make((4, 3)))
    assert empty.nnz == 0 and empty.indptr.tolist() == [0, 0, 0, 0]
    A = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 1]), np.array([0, 2, 3])), shape=(2, 4))
    assert not A.has_sorted_indices
    cols = as_columns(A)
    assert cols.indptr.tolist() == [0, 1, 2, 3, 3] and cols.indices.tolist() == [0, 1, 0]
    assert cols.data.tolist() == [2.0, 3.0, 1.0]


def test_index_dtype_is_int64_beyond_int32():
    assert index_dtype(2**31 - 1) == np.int32
    assert index_dtype(2**31) == np.int64  # a value of 2^31 does not fit an int32
    assert index_dtype(10, np.arange(3, dtype=np.int64)) == np.int64  # int64 given: no copy
    assert index_dtype(10, np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int16)) == np.int32


def test_duplicate_entries_are_summed_once():
    A = sp.csr_matrix((np.array([1.0, 2.0]), np.array([1, 1]), np.array([0, 2])), shape=(1, 5))
    cols = as_columns(A)
    assert cols.nnz == 1 and cols.data[0] == 3.0


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_column_matrix_is_converted_once_and_shared(X, fmt):
    """column_matrix converts once; as_columns and every Problem on the result copy nothing
    (one-vs-rest and cross-validation build several Problems on one X)."""
    M = column_matrix(sp.csr_matrix(X) if fmt == "csr" else X)
    cols = as_columns(M)
    if fmt == "csr":
        assert M.format == "csc" and M.indices.dtype == M.indptr.dtype == np.int32
        assert cols.data is M.data and cols.indices is M.indices and cols.indptr is M.indptr
    else:
        assert M.flags.f_contiguous and np.shares_memory(cols.data, M)
    np.testing.assert_array_equal(np.asarray(M.todense() if fmt == "csr" else M), X)
    problem = Problem(M, np.where(X[:, 0] > 0, 1.0, -1.0), "logistic", 0.1)
    assert np.shares_memory(problem.columns.data, cols.data)
    assert np.shares_memory(problem.X.data if fmt == "csr" else problem.X, cols.data)
    if fmt == "csr":  # the products' matrix keeps the layout's own index arrays
        assert problem.X.indices is cols.indices
    w = np.arange(5.0)
    np.testing.assert_allclose(problem.X @ w, X @ w, rtol=1e-12)
    np.testing.assert_allclose(problem.X.T @ np.arange(7.0), X.T @ np.arange(7.0), rtol=1e-12)


@pytest.mark.parametrize("fmt", ["dense", "csr", "csc"])
@pytest.mark.parametrize(
    "rows",
    [
        [0, 2, 3, 6],  # increasing: a KFold's training rows, taken from the CSC arrays
        [],  # no row
        [6, 0, 3],  # any other order
        [1, 1, 4],  # a repeated row
        np.array([True, False, True, True, False, False, True]),  # a mask
    ],
)
def test_column_matrix_rows_is_the_column_matrix_of_those_rows(X, fmt, rows):
    """A cross-validation fold's column matrix, from X's, is column_matrix(X[rows]): the same
    values in the same canonical layout, and X's check carried over."""
    A = np.where(np.abs(X) > 0.5, X, 0.0)  # zeros, so that some columns lose every value
    given = {"dense": A, "csr": sp.csr_matrix(A), "csc": sp.csc_matrix(A)}[fmt]
    M = column_matrix(given, checked=True)
    sub = column_matrix_rows(M, np.asarray(rows))
    expected = A[np.asarray(rows, dtype=bool if len(rows) == A.shape[0] else np.int64)]
    np.testing.assert_array_equal(np.asarray(sub.todense() if sp.issparse(sub) else sub), expected)
    assert getattr(sub, CHECKED_MARK, False) == (fmt != "dense")  # marks go on sparse matrices only
    if fmt != "dense":
        assert sub.format == "csc" and sub.has_canonical_format
        assert sub.indices.dtype == sub.indptr.dtype == M.indices.dtype == np.int32
        sub.tocoo()  # scipy refuses index arrays of two types
        cols = as_columns(sub, checked=True)
        if sub.nnz:  # taken as is by the Problems of the fold
            assert np.shares_memory(cols.indices, sub.indices) and np.shares_memory(cols.data, sub.data)
        assert np.all(np.diff(sub.indptr) >= 0) and np.all(sub.indices < expected.shape[0])
    unchecked = column_matrix_rows(column_matrix(given), np.asarray(rows))
    assert not getattr(unchecked, CHECKED_MARK, False)


@pytest.mark.parametrize("seed", range(6))
def test_column_matrix_rows_matches_scipy_on_random_folds(seed):
    """The branch-free copy of a fold's rows (every value written, the next kept one
    overwriting a dropped one) equals scipy's ``X[rows]`` array for array, also where the last
    rows of X are dropped (the last column's last values then land past the kept ones), where
    every row or only one is kept, and on columns with no value."""
    rng = np.random.default_rng(seed)
    A = sp.random(60, 40, density=0.2, random_state=seed, format="csc")
    A[:, 3] = 0.0  # an empty column
    A.eliminate_zeros()
    M = column_matrix(A)
    for rows in (
        np.sort(rng.choice(60, size=48, replace=False)),
        np.arange(59),  # the last row dropped
        np.arange(1, 60),  # the first dropped
        np.arange(60),
        np.array([int(rng.integers(60))]),
    ):
        sub = column_matrix_rows(M, rows)
        expected = sp.csc_matrix(A.toarray()[rows])
        np.testing.assert_array_equal(sub.indptr, expected.indptr)
        np.testing.assert_array_equal(sub.indices, expected.indices)
        np.testing.assert_array_equal(sub.data, expected.data)


@pytest.mark.parametrize("fmt", ["dense", "csc", "csr"])
@pytest.mark.parametrize("k", [0, 1, 5, 8])
def test_many_column_products_are_one_column_products_to_the_bit(fmt, k):
    # column_dots sums dense columns four at a time and columns_axpy updates a block of rows by
    # every column before the next block: each column's sum and each z_i's terms keep the
    # one-column kernels' order, so the results are theirs bit for bit (over several row
    # blocks and a short last one, and a column count that is not a multiple of four).
    rng = np.random.default_rng(k)
    n, d = 2 * DENSE_AXPY_BLOCK_ROWS + 37, 11
    X = rng.normal(size=(n, d))
    X[rng.random(X.shape) < 0.6] = 0.0  # sparse enough to keep the CSC layout (DENSE_SHARE)
    given = {"dense": X, "csc": sp.csc_matrix(X), "csr": sp.csr_matrix(X)}[fmt]
    arrays = as_columns(given).arrays
    cols = rng.permutation(d)[:k].astype(np.int64)
    r, a = rng.normal(size=n), rng.normal(size=k)
    dots = np.full(k, np.nan)
    column_dots(*arrays, cols, r, dots)
    expected = np.array([column_dot(*arrays, j, r) for j in cols])
    np.testing.assert_array_equal(dots, expected)
    np.testing.assert_allclose(dots, X[:, cols].T @ r, rtol=1e-12, atol=1e-12)
    z0 = rng.normal(size=n)
    z, z_one = z0.copy(), z0.copy()
    reads = columns_axpy(*arrays, cols, a, z)
    for j, aj in zip(cols, a):
        column_axpy(*arrays, j, aj, z_one)
    np.testing.assert_array_equal(z, z_one)
    np.testing.assert_allclose(z, z0 + X[:, cols] @ a, rtol=1e-12, atol=1e-12)
    assert reads == (n * k if fmt == "dense" else np.count_nonzero(X[:, cols]))


@pytest.mark.parametrize("n", [1, 3, 4, 7, 4 * 37 + 2])
def test_a_dense_columns_sums_in_partial_sums_are_the_columns_sums(n):
    # A CD sweep's one-column sums over a dense column run in four interleaved partial sums
    # (rows 0, 1, 2, 3 mod 4, and a tail of n mod 4 rows): they are the column's sums to rounding,
    # whatever n, and the same as a sparse layout of the same column gives (summed in row order).
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 3))
    r, D, v = rng.normal(size=n), rng.uniform(0.0, 0.25, size=n), rng.normal(size=n)
    dense, sparse = as_columns(X).arrays, as_columns(sp.csc_matrix(X)).arrays
    for j in range(3):
        x = X[:, j]
        expected = (x @ r, D @ (x * x), 0.5 + x @ (D * v), (x @ (D * v), x @ D))
        for arrays in (dense, sparse):
            got = (
                *column_moments(*arrays, j, r, D),
                column_weighted_dot(*arrays, j, D, v, 0.5),
                column_weighted_dot_and_sum(*arrays, j, D, v),
            )
            np.testing.assert_allclose(got[:3], expected[:3], rtol=1e-13, atol=1e-14)
            np.testing.assert_allclose(got[3], expected[3], rtol=1e-13, atol=1e-14)


def _half_full(n_rows, n_cols, share, seed):
    """A matrix storing round(share * n_rows * n_cols) nonzero entries at random places."""
    rng = np.random.default_rng(seed)
    A = np.zeros(n_rows * n_cols)
    stored = round(share * A.size)
    A[rng.choice(A.size, stored, replace=False)] = rng.normal(size=stored)
    return A.reshape(n_rows, n_cols)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("share", [DENSE_SHARE, 0.8, 1.0])
def test_a_sparse_matrix_dense_enough_is_laid_out_dense(fmt, share):
    """A sparse X storing at least DENSE_SHARE of its entries gets the dense Fortran layout in
    columns: the same values, and the same column products as its CSC layout would give."""
    A = _half_full(40, 30, share, seed=1)
    given = sp.csr_matrix(A).asformat(fmt)
    assert dense_enough(given)
    cols = as_columns(given)
    assert cols.dense and cols.shape == A.shape
    np.testing.assert_array_equal(cols.data, A.ravel(order="F"))
    v = np.random.default_rng(2).normal(size=40)
    out = np.empty(30)
    _column_dots(*cols.arrays, v, out)
    np.testing.assert_allclose(out, A.T @ v, rtol=1e-12)
    assert isinstance(column_matrix(given), np.ndarray)  # what an estimator's problems share
    assert not as_rows(given).dense  # the row layout stays sparse (row passes, stochastic solvers)


def test_a_matrix_below_the_dense_share_stays_sparse():
    A = _half_full(40, 30, DENSE_SHARE - 1 / 1200, seed=3)
    given = sp.csr_matrix(A)
    assert not dense_enough(given)
    cols = as_columns(given)
    assert not cols.dense and cols.nnz == given.nnz


@pytest.mark.parametrize("make", [sp.csr_matrix, sp.csc_matrix])
def test_densified_columns_sum_duplicates_in_any_order(make):
    """Duplicate entries are summed and unsorted indices placed, integer values cast to float64,
    as scipy's toarray does; an empty matrix gives zeros."""
    data, indices, indptr = np.array([1, 2, 3, 4, 5]), np.array([2, 0, 2, 1, 0]), np.array([0, 3, 5])
    A = make((data, indices, indptr), shape=(2, 3) if make is sp.csr_matrix else (3, 2))
    assert not A.has_canonical_format
    got = densified_columns(A.data, A.indices, A.indptr, A.shape, rows_major=make is sp.csr_matrix)
    assert got.flags.f_contiguous and got.dtype == np.float64
    np.testing.assert_array_equal(got, A.toarray())
    empty = densified_columns(np.empty(0), np.empty(0, np.int32), np.zeros(1, np.int32), (0, 4), rows_major=True)
    assert empty.shape == (0, 4)


def test_a_problem_on_a_dense_enough_csr_solves_on_dense_columns_to_the_same_optimum():
    """The estimator's fit of a CSR X half full solves on the dense layout (columns converted on
    first read), and reaches the optimum of the same X given sparse below the share (its CSC
    columns: DENSE_SHARE raised past 1) to 1e-10 relative."""
    from l1scale import SparseLogisticRegression

    A = _half_full(300, 40, 0.7, seed=4)
    y = np.where(A @ np.random.default_rng(5).normal(size=40) + 0.3 > 0, 1, -1)
    X = sp.csr_matrix(A)
    problem = Problem(X, y, lam_ratio=0.05)
    assert problem.rows is not None and problem.columns.dense
    fit = SparseLogisticRegression(lam_ratio=0.05, tol=1e-12).fit(X, y)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("l1scale.data.memory.DENSE_SHARE", 2.0)
        assert not Problem(X, y, lam_ratio=0.05).columns.dense
        sparse_fit = SparseLogisticRegression(lam_ratio=0.05, tol=1e-12).fit(X, y)
    P, P_sparse = fit.result_.objective, sparse_fit.result_.objective
    assert abs(P - P_sparse) <= 1e-10 * P_sparse
    np.testing.assert_allclose(fit.coef_, sparse_fit.coef_, atol=1e-6)


def test_the_rows_of_a_dense_column_matrix_come_in_fortran_order():
    """A fold of a dense (or densified) column matrix is taken in Fortran order, in any row order,
    with repeats: the column layout of the problem built on it copies nothing more."""
    X = np.asfortranarray(np.random.default_rng(6).normal(size=(50, 7)))
    rows = np.array([3, 1, 4, 4, 49])
    fold = column_matrix_rows(column_matrix(X), rows)
    assert fold.flags.f_contiguous
    np.testing.assert_array_equal(fold, X[rows])
    assert as_columns(fold).data.base is fold or np.shares_memory(as_columns(fold).data, fold)
