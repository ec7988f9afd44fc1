"""Generated feature spaces (l1scale.data.feature_spaces) and DNA sequence input
(l1scale.data.sequences): blocks vs transform vs brute-force definitions, index maps,
validation messages, file round trips."""

import itertools
import os
import pickle
import re

import numpy as np
import pytest
import scipy.sparse as sp
from _shared_data import DATA
from sklearn.base import clone

from l1scale.data.feature_spaces import DNAPatterns, Prepared, Products, RandomFourier
from l1scale.data.features import RandomFourierFeatures
from l1scale.data.sequences import (
    decode_sequences,
    dump_sequences,
    encode_sequences,
    load_sequences,
    make_splice_sites,
    splice_sequences,
)
from l1scale.exceptions import DataFormatError


def blocks_matrix(space, raw):
    """All column blocks, checked for layout and contiguity, stacked into one CSC matrix."""
    parts, expected_j0 = [], 0
    for k in range(space.n_blocks_):
        j0, indptr, rows, vals = space.column_block(raw, k)
        assert j0 == expected_j0
        assert indptr.dtype == np.int64 and rows.dtype == np.int32 and vals.dtype == np.float64
        assert indptr[0] == 0 and indptr[-1] == rows.size == vals.size
        for c in range(indptr.size - 1):
            assert np.all(np.diff(rows[indptr[c] : indptr[c + 1]]) > 0), "rows must ascend in each column"
        n = space.prepare(raw).n
        parts.append(sp.csc_matrix((vals, rows, indptr), shape=(n, indptr.size - 1)))
        expected_j0 += indptr.size - 1
    assert expected_j0 == space.n_features_
    return sp.hstack(parts).tocsr()


def assert_same(A, B):
    """Exact equality of two sparse matrices (values and pattern of nonzeros)."""
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    assert A.shape == B.shape
    assert (A != B).nnz == 0


def assert_csr_canonical(T):
    assert T.indices.dtype == np.int64 and T.indptr.dtype == np.int64
    for i in range(T.shape[0]):
        assert np.all(np.diff(T.indices[T.indptr[i] : T.indptr[i + 1]]) > 0)


# ------------------------------------------------------------------------------ DNA

RNG = np.random.default_rng(0)
CODES = RNG.integers(0, 4, size=(25, 9)).astype(np.uint8)


def dna_reference(seqs, space):
    """phi from the describe() strings: position k and a regular expression per pattern."""
    out = np.zeros((len(seqs), space.n_features_))
    for j in range(space.n_features_):
        k, pattern = space.describe(j).split(":")
        rx = re.compile(pattern.replace("?", "."))
        for i, s in enumerate(seqs):
            out[i, j] = 1.0 if rx.fullmatch(s[int(k) : int(k) + len(pattern)]) else 0.0
    return out


@pytest.mark.parametrize("d, positions", [(1, None), (2, None), (3, None), (3, [0, 2, 6])])
def test_dna_blocks_transform_and_reference_agree(d, positions):
    space = DNAPatterns(d=d, positions=positions).fit(CODES)
    L, n_pos = CODES.shape[1], CODES.shape[1] - d + 1 if positions is None else len(positions)
    assert space.n_features_ == n_pos * 4 * 5 ** (d - 1) and space.n_inputs_ == L
    T = space.transform(CODES)
    assert_csr_canonical(T)
    assert np.all(np.diff(T.indptr) == n_pos * 2 ** (d - 1))
    assert_same(blocks_matrix(space, CODES), T)
    np.testing.assert_array_equal(T.toarray(), dna_reference(decode_sequences(CODES), space))


def test_dna_index_map_and_describe():
    space = DNAPatterns(d=4).fit(CODES)
    # j = k * 4 * 5^(d-1) + code(b), code(b) the base-5 number of b with A, C, G, T, ? = 0..4
    j = 5 * 500 + (1 * 125 + 0 * 25 + 4 * 5 + 3)
    assert space.describe(j) == "5:CA?T"
    assert space.describe(0) == "0:AAAA" and space.describe(space.n_features_ - 1) == "5:T???"
    with pytest.raises(ValueError, match="out of range"):
        space.describe(space.n_features_)


def test_dna_accepts_strings_and_selected_columns():
    seqs = decode_sequences(CODES)
    space = DNAPatterns(d=3).fit(seqs)
    assert_same(space.transform(seqs), DNAPatterns(d=3).fit(CODES).transform(CODES))
    cols = np.array([7, 0, space.n_features_ - 1, 7, 321])
    assert_same(space.transform(CODES, cols), space.transform(CODES)[:, cols])
    assert space.transform(CODES, np.array([], dtype=np.int64)).shape == (25, 0)


def test_dna_validation_names_the_problem():
    space = DNAPatterns(d=3).fit(CODES)
    with pytest.raises(ValueError, match="sequence 1 has character 'N' at position 2"):
        space.transform(["ACGTACGTA", "ACNTACGTA"])
    bad = CODES.copy()
    bad[4, 3] = 7
    with pytest.raises(ValueError, match="sequence 4 has code 7 at position 3"):
        space.column_block(bad, 0)
    with pytest.raises(ValueError, match="width 8.*width 9"):
        space.column_block(CODES[:, :8], 0)
    with pytest.raises(ValueError, match="block k=7 is out of range"):
        space.column_block(CODES, 7)
    with pytest.raises(ValueError, match="positions"):
        DNAPatterns(d=3, positions=[3, 3]).fit(CODES)
    with pytest.raises(ValueError, match="longer than the sequences"):
        DNAPatterns(d=10).fit(CODES)


# ------------------------------------------------------------------------------ products

X_SPARSE = sp.random(30, 7, density=0.45, random_state=np.random.default_rng(1), format="csr")


def products_reference(Xd, degree, include_inputs):
    """Every monomial as an explicit product, and its describe() string."""
    cols, names = [], []
    lo = 1 if include_inputs else 2
    for deg in range(lo, degree + 1):
        for mono in itertools.combinations_with_replacement(range(Xd.shape[1]), deg):
            cols.append(np.prod(Xd[:, list(mono)], axis=1))
            names.append("*".join(f"x{a}" for a in mono))
    return np.column_stack(cols), names


@pytest.mark.parametrize("degree, include_inputs", [(1, True), (2, True), (2, False), (3, True), (4, False)])
def test_products_blocks_transform_and_reference_agree(degree, include_inputs):
    space = Products(degree=degree, include_inputs=include_inputs).fit(X_SPARSE)
    T = space.transform(X_SPARSE)
    assert_csr_canonical(T)
    assert_same(blocks_matrix(space, X_SPARSE), T)
    ref, names = products_reference(X_SPARSE.toarray(), degree, include_inputs)
    assert space.n_features_ == ref.shape[1]
    # the same set of monomials, mapped by describe(); products computed in another order
    order = {name: c for c, name in enumerate(names)}
    perm = [order[space.describe(j)] for j in range(space.n_features_)]
    assert sorted(perm) == list(range(ref.shape[1]))
    np.testing.assert_allclose(T.toarray(), ref[:, perm], rtol=1e-14, atol=0)
    assert np.all(T.data != 0)  # only nonzero products are stored
    for j in range(space.n_features_):
        assert space.index(space.monomial(j)) == j


def test_products_index_map_degree_2_closed_form():
    space = Products(degree=2).fit(X_SPARSE)
    n = 7  # block a: x_a, then x_a*x_b for b = a..n-1
    for a in range(n):
        start = sum(n - c + 1 for c in range(a))
        assert space.index((a,)) == start
        for b in range(a, n):
            assert space.index((b, a)) == start + 1 + (b - a)
    assert space.describe(space.index((3, 5))) == "x3*x5"
    assert space.block_range(2) == (space.index((2,)), space.index((3,)))


def test_products_dense_input_selected_columns_and_block_bytes():
    Xd = X_SPARSE.toarray()
    space = Products(degree=3).fit(Xd)
    assert_same(space.transform(Xd), space.transform(X_SPARSE))
    cols = np.array([5, 0, 100, 5, space.n_features_ - 1])
    assert_same(space.transform(X_SPARSE, cols), space.transform(X_SPARSE)[:, cols])
    for k in range(space.n_blocks_):
        _, indptr, rows, _ = space.column_block(X_SPARSE, k)
        assert space.block_bytes(X_SPARSE, k) == rows.size * 12 + indptr.size * 8


def test_products_validation():
    space = Products().fit(X_SPARSE)
    Xd = X_SPARSE.toarray()
    Xd[12, 3] = np.nan
    with pytest.raises(ValueError, match="row 12"):
        space.transform(Xd)
    Xs = X_SPARSE.copy()
    Xs.data[Xs.indptr[20]] = np.inf
    with pytest.raises(ValueError, match="row 20"):
        space.column_block(Xs, 0)
    with pytest.raises(ValueError, match="width 5.*width 7"):
        space.transform(np.ones((3, 5)))
    with pytest.raises(ValueError, match="no features"):
        Products(degree=1, include_inputs=False).fit(X_SPARSE)
    with pytest.raises(ValueError, match="columns must be in"):
        space.transform(X_SPARSE, [space.n_features_])


# ------------------------------------------------------------------------------ random Fourier


def test_random_fourier_matches_random_fourier_features_and_blocks():
    space = RandomFourier(n_components=70, sigma=1.5, random_state=3, block_size=32).fit(X_SPARSE)
    assert space.n_blocks_ == 3 and space.block_range(2) == (64, 70)
    ref = RandomFourierFeatures(n_components=70, sigma=1.5, random_state=3).fit(X_SPARSE).transform(X_SPARSE)
    T = space.transform(X_SPARSE)
    assert_csr_canonical(T)
    np.testing.assert_allclose(T.toarray(), ref, rtol=1e-12, atol=1e-14)
    # by definition too: sqrt(2/D) cos(omega_j . x + b_j)
    Xd = X_SPARSE.toarray()
    np.testing.assert_allclose(
        T.toarray(), np.sqrt(2 / 70) * np.cos(Xd @ space.omega_ + space.offset_), rtol=1e-12, atol=1e-14
    )
    assert_same(blocks_matrix(space, X_SPARSE), T)
    cols = np.array([69, 3, 3, 40])
    assert_same(space.transform(Xd, cols), T[:, cols])
    again = RandomFourier(n_components=70, sigma=1.5, random_state=3, block_size=32).fit(Xd)
    np.testing.assert_array_equal(again.omega_, space.omega_)
    other = RandomFourier(n_components=70, sigma=1.5, random_state=4).fit(Xd)
    assert not np.array_equal(other.omega_, space.omega_)


# ------------------------------------------------------------------------------ all spaces

SPACES = [
    (lambda: DNAPatterns(d=3), CODES),
    (lambda: Products(degree=3), X_SPARSE),
    (lambda: RandomFourier(n_components=50, random_state=0, block_size=16), X_SPARSE),
]


@pytest.mark.parametrize("make, raw", SPACES, ids=["dna", "products", "fourier"])
def test_blocks_are_deterministic_and_the_cache_is_transparent(make, raw):
    space = make().fit(raw)
    first = [space.column_block(raw, k) for k in range(space.n_blocks_)]
    copy = raw.copy()  # a new object: prepared again, not taken from the cache
    prepared = space.prepare(raw)
    assert isinstance(prepared, Prepared)
    for k in range(space.n_blocks_):
        for source in (copy, prepared, raw):
            again = space.column_block(source, k)
            assert again[0] == first[k][0]
            for a, b in zip(again[1:], first[k][1:]):
                np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="another feature space"):
        make().fit(raw).column_block(prepared, 0)


@pytest.mark.parametrize("make, raw", SPACES, ids=["dna", "products", "fourier"])
def test_kernels_release_the_gil(make, raw):
    space = make().fit(raw)
    space.column_block(raw, 0)
    space.transform(raw)
    space.transform(raw, [0])
    assert space.kernels
    for kernel in space.kernels:
        assert kernel.targetoptions.get("nogil") is True, kernel
        assert kernel.signatures, f"{kernel} was not the function that ran"


@pytest.mark.parametrize("make, raw", SPACES, ids=["dna", "products", "fourier"])
def test_clone_and_pickle(make, raw):
    space = make().fit(raw)
    fresh = clone(space)
    assert fresh.get_params() == space.get_params() and not hasattr(fresh, "n_features_")
    back = pickle.loads(pickle.dumps(space))
    assert back.__dict__.get("_cache") is None  # the caller's data is not pickled
    assert space._cache[0] is raw  # ... and pickling did not drop the original's cache
    assert_same(back.transform(raw), space.transform(raw))
    with pytest.raises(ValueError, match="another feature space"):
        back.transform(space.prepare(raw))


# ------------------------------------------------------------------------------ sequences


def test_encode_decode_round_trip_and_errors():
    seqs = ["ACGT", "tgca", "AAAA"]
    codes = encode_sequences(seqs)
    assert codes.dtype == np.uint8 and codes.shape == (3, 4)
    np.testing.assert_array_equal(codes[1], [3, 2, 1, 0])
    assert decode_sequences(codes) == ["ACGT", "TGCA", "AAAA"]
    with pytest.raises(ValueError, match="sequence 2 has character 'x' at position 1"):
        encode_sequences(["ACGT", "ACGT", "AxGT"])
    with pytest.raises(ValueError, match="sequence 1 has length 3"):
        encode_sequences(["ACGT", "ACG"])


@pytest.mark.parametrize("name", ["seqs.txt", "seqs.txt.gz", "seqs.txt.bz2"])
def test_load_dump_round_trip(tmp_path, name):
    codes, y = make_splice_sites(200, L=30, d_motif=8, positive_rate=0.1, random_state=0)
    y[3] = 0.25
    path = tmp_path / name
    dump_sequences(path, codes, y)
    back, y_back = load_sequences(path)
    np.testing.assert_array_equal(back, codes)
    np.testing.assert_array_equal(y_back, y)
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left behind


def test_load_sequences_format_and_errors(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("# a comment\n\n+1 acgt\n-1\tTTGA\n")
    codes, y = load_sequences(path)
    np.testing.assert_array_equal(codes, [[0, 1, 2, 3], [3, 3, 2, 0]])
    np.testing.assert_array_equal(y, [1, -1])
    cases = [
        ("+1 ACGT\n-1 ACGT extra\n", 2, "2 fields|3 fields"),
        ("+1 ACGT\nfoo ACGT\n", 2, "not a number"),
        ("# c\n+1 ACGT\n-1 ACG\n", 3, "length 3"),
        ("+1 ACGT\n\n-1 ACZT\n", 3, "'Z' at position 2"),
        ("nan ACGT\n", 1, "NaN"),
    ]
    for text, line, message in cases:
        path.write_text(text)
        with pytest.raises(DataFormatError, match=message) as info:
            load_sequences(path)
        assert info.value.line == line and info.value.path == str(path)
        assert f"{path}:{line}:" in str(info.value)


def test_splice_sequences_values_and_errors():
    X = np.array([[-1, -1 / 3, 1 / 3, 1], [1, 0.333333, -0.333333, -1]])
    np.testing.assert_array_equal(splice_sequences(X), [[0, 1, 2, 3], [3, 2, 1, 0]])
    np.testing.assert_array_equal(splice_sequences(sp.csr_matrix(X)), splice_sequences(X))
    X[1, 2] = 0.5
    with pytest.raises(ValueError, match=r"X\[1, 2\]"):
        splice_sequences(X)


def test_splice_sequences_on_the_libsvm_file():
    path = os.path.join(DATA, "splice", "splice_scale.bz2")
    if not os.path.exists(path):
        pytest.skip(f"splice not found under {DATA}")
    from l1scale.data import load_svmlight

    X, y = load_svmlight(path, n_features=60)
    codes = splice_sequences(X)
    assert codes.shape == (1000, 60) and codes.dtype == np.uint8
    assert set(np.unique(codes)) == {0, 1, 2, 3}
    space = DNAPatterns(d=2).fit(codes)
    assert space.transform(codes).nnz == 1000 * 59 * 2


def test_make_splice_sites_model():
    codes, y = make_splice_sites(20000, random_state=7)
    assert codes.shape == (20000, 60) and codes.dtype == np.uint8
    assert set(np.unique(y)) == {-1.0, 1.0} and np.sum(y > 0) == 200
    again = make_splice_sites(20000, random_state=7)
    np.testing.assert_array_equal(again[0], codes)
    np.testing.assert_array_equal(again[1], y)
    s, pos = 30, y > 0
    ag = (codes[:, s] == 0) & (codes[:, s + 1] == 2)
    assert ag[pos].all() and 0.4 < ag[~pos].mean() < 0.6  # positives and the decoys carry AG
    pyr = np.isin(codes[:, s - 12 : s], [1, 3]).mean(axis=1)
    assert pyr[pos].mean() > 0.75 and abs(pyr[~pos].mean() - 0.5) < 0.02
    assert (pyr[pos] <= 0.5).any()  # some positives look like background: not separable
    with pytest.raises(ValueError, match="positive_rate"):
        make_splice_sites(10, positive_rate=0.0)
