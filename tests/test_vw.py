"""Feature hashing and the Vowpal Wabbit text reader: murmur3 and hashing against
scikit-learn's murmurhash3_32, handwritten lines, dump/load round trips, chunking,
compression, caches and every malformed-line error."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils import murmurhash3_32

from l1scale.data import Stream, dump_vw, hash_feature, hash_features, iter_vw_chunks, load_vw
from l1scale.data import _vw_parse as _k
from l1scale.exceptions import DataFormatError


def m3(key, seed=0):
    return murmurhash3_32(key, seed=seed, positive=True)


def col(name, ns=None, bits=18, hash="strings", seed=0):
    """Oracle of Vowpal Wabbit's column, built on scikit-learn's murmurhash3_32."""

    def h(s, sd):
        if hash == "strings" and s.isdigit() and s.isascii():
            return int(s) + sd
        return m3(s, sd)

    ns_hash = (0 if seed == 0 else m3("", seed)) if not ns else h(ns, seed)
    return h(name, ns_hash) % 2**bits


def vw(text: str):
    return io.BytesIO(text.encode())


def dense_rows(X):
    return [
        dict(zip(X.indices[X.indptr[i] : X.indptr[i + 1]].tolist(), X.data[X.indptr[i] : X.indptr[i + 1]].tolist()))
        for i in range(X.shape[0])
    ]


# ----------------------------------------------------------------------- hashing


@pytest.mark.parametrize("seed", [0, 42, 2**32 - 1])
def test_murmur3_equals_sklearn(seed):
    rng = np.random.default_rng(seed % 1000)
    keys = [bytes(rng.integers(0, 256, rng.integers(0, 40)).astype(np.uint8)) for _ in range(500)]
    keys += [s.encode() for s in ("", "a", "ab", "abc", "abcd", "abcde", "feature_name", "é∂ƒ")]
    for key in keys:
        buf = np.frombuffer(key, dtype=np.uint8)
        assert int(_k.murmur3_32(buf, 0, buf.size, np.uint64(seed))) == m3(key, seed)


def test_hash_feature_rules():
    # "all": murmur3 of the name seeded with murmur3 of the namespace
    assert hash_feature("price", "f", hash="all", hash_bits=20) == m3("price", m3("f")) % 2**20
    assert hash_feature("12", "f", hash="all") == m3("12", m3("f")) % 2**18
    # "strings" (VW's default): digit names are integers added to the seed
    assert hash_feature("12", "f") == (12 + m3("f")) % 2**18
    assert hash_feature("price", "f") == m3("price", m3("f")) % 2**18
    assert hash_feature("x", "7") == m3("x", 7) % 2**18
    assert hash_feature("-12", "f") == m3("-12", m3("f")) % 2**18
    # default namespace: seed 0, or murmur3("") with a hash seed
    assert hash_feature("x") == hash_feature("x", "") == m3("x") % 2**18
    assert hash_feature("x", hash_seed=5) == m3("x", m3("", 5)) % 2**18
    assert hash_feature("x", "f", hash_seed=5, hash_bits=31) == m3("x", m3("f", 5)) % 2**31
    assert hash_feature(b"\xc3\xa9", "f") == hash_feature("é", "f")
    rng = np.random.default_rng(0)
    for _ in range(200):
        name = "".join(rng.choice(list("ab9_.Z0"), rng.integers(1, 9)))
        bits = int(rng.integers(1, 32))
        for hash in ("strings", "all"):
            assert hash_feature(name, "ns", hash_bits=bits, hash=hash) == col(name, "ns", bits, hash)


@pytest.mark.parametrize(
    "bad",
    [
        dict(hash_bits=0),
        dict(hash_bits=32),
        dict(hash_bits=2.0),
        dict(hash="murmur"),
        dict(hash_seed=-1),
        dict(hash_seed=2**32),
    ],
)
def test_hash_options_are_checked(bad):
    with pytest.raises(ValueError):
        hash_feature("a", **bad)
    with pytest.raises(ValueError):
        load_vw(vw("1 | a\n"), **bad)


def test_hash_features_sums_collisions_and_drops_zeros():
    names = [["a", "b", "a"], [], ["c", "d", "e", "f", "g"], ["x", "y"]]
    values = [[1.0, 2.0, 3.0], [], [1, 2, 3, 4, 5], [1.5, -1.5]]
    for bits in (1, 2, 18):
        X = hash_features(names, values, bits, namespace="n")
        expected = np.zeros((4, 2**bits))
        for i, (row, vals) in enumerate(zip(names, values)):
            for name, v in zip(row, vals):
                expected[i, col(name, "n", bits)] += v
        assert X.shape == (4, 2**bits) and X.indices.dtype == np.int64 and X.has_sorted_indices
        np.testing.assert_array_equal(X.toarray(), expected)
        assert (X.data != 0).all()
    X = hash_features([{"a": 2.0, "b": 1.0}, ["a", "a"]], None, 10)
    np.testing.assert_array_equal(X.toarray()[:, [col("a", bits=10), col("b", bits=10)]], [[2, 1], [2, 0]])
    with pytest.raises(TypeError):
        hash_features(["abc"], None, 4)
    with pytest.raises(ValueError):
        hash_features([["a", ""]], None, 4)


# -------------------------------------------------------------------------- reader

HANDWRITTEN = (
    "1 |f a b:2 a:0.5\n"
    "-1 2.5 'tag |g:2 x:3 |f a\n"
    "   \n"
    "0 tag2| c:-1 :4 :0 :5\n"
    "3.5 0 |f z:0 |h 17 a:1e-3\r\n"
    "\xef\xbb\xbf2\t|f\tb:-2e0   a\n"
    "-2 |f 1:0.5 |f 1:0.25 |2f  |Å é:1"
)


def expected_handwritten(bits):
    rows = [
        [("a", "f", 1.5), ("b", "f", 2.0)],
        [("x", "g", 6.0), ("a", "f", 1.0)],
        [("c", None, -1.0), (None, 0, 4.0), (None, 2, 5.0)],  # anonymous: default ns hash 0 + k
        [("17", "h", 1.0), ("a", "h", 1e-3)],
        [("b", "f", -2.0), ("a", "f", 1.0)],
        [("1", "f", 0.75), ("é", "Å", 1.0)],
    ]
    E = np.zeros((len(rows), 2**bits))
    for i, row in enumerate(rows):
        for name, ns, v in row:
            E[i, ns % 2**bits if name is None else col(name, ns, bits)] += v
    return E


@pytest.mark.parametrize("bits", [18, 3])
def test_handwritten_lines(bits):
    text = HANDWRITTEN.replace("\xef\xbb\xbf", "\ufeff")
    X, y, w, lines = load_vw(vw(text), hash_bits=bits, return_line_numbers=True)
    assert X.shape == (6, 2**bits) and X.indices.dtype == np.int64 and X.indptr.dtype == np.int64
    assert all(np.all(np.diff(r) > 0) for r in np.split(X.indices, X.indptr[1:-1]))
    np.testing.assert_array_equal(X.toarray(), expected_handwritten(bits))
    np.testing.assert_array_equal(y, [1, -1, 0, 3.5, 2, -2])
    np.testing.assert_array_equal(w, [1, 2.5, 1, 0, 1, 1])
    np.testing.assert_array_equal(lines, [1, 2, 4, 5, 6, 7])
    assert (X.data != 0).all()


def test_no_importance_gives_none_and_hash_all():
    X, y, w = load_vw(vw("1 |f a 7\n0 |f 7:2\n"), hash_bits=12, hash="all")
    assert w is None
    np.testing.assert_array_equal(y, [1, 0])
    assert dense_rows(X) == [
        {col("a", "f", 12, "all"): 1.0, col("7", "f", 12, "all"): 1.0},
        {col("7", "f", 12, "all"): 2.0},
    ]
    X, _, _ = load_vw(vw("1 |f a 7\n"), hash_bits=12, hash_seed=9)
    assert dense_rows(X) == [{col("a", "f", 12, seed=9): 1.0, col("7", "f", 12, seed=9): 1.0}]


def test_numbers_are_exact_like_float():
    long_value = "0.1000000000000000055511151231257827021181583404541015625000001"
    text = f"0.30000000000000000000001 {long_value} |f a:{long_value} b:2 a:1 |g:3 c:4.9e-324\n"
    X, y, w = load_vw(vw(text), hash_bits=18)
    assert y[0] == float("0.30000000000000000000001") and w[0] == float(long_value)
    assert dense_rows(X) == [{col("a", "f"): float(long_value) + 1.0, col("b", "f"): 2.0, col("c", "g"): 3 * 4.9e-324}]
    X, _, _ = load_vw(vw("1 |f a:0.5 b:1e-400 c:1\n"), hash_bits=18)  # underflow to 0: dropped
    assert dense_rows(X) == [{col("a", "f"): 0.5, col("c", "f"): 1.0}]
    many = [f"{i} |f a:{i}.{'0' * 25}1 b:1" for i in range(700)]  # more than the first slow table holds
    X, y, _ = load_vw(vw("\n".join(many)), hash_bits=18)
    np.testing.assert_array_equal(y, np.arange(700))
    assert dense_rows(X)[1:] == [{col("a", "f"): float(i), col("b", "f"): 1.0} for i in range(1, 700)]


@pytest.mark.parametrize("slow", [False, True])
def test_long_rows_are_sorted_stably_and_summed(slow):
    rng = np.random.default_rng(3)
    names = rng.choice([f"n{i}" for i in range(40)] + [str(i) for i in range(40)], size=300)
    values = np.round(rng.normal(size=300), 2)
    values[:5] = 0.1, 0.2, -0.3, 1e-17, 7  # sums that depend on the order of the additions
    names[:5] = "a"
    tokens = [f"{n}:{float(v)!r}" for n, v in zip(names, values)]
    if slow:  # a value needing the exact conversion: the row is sorted after it
        tokens[7] = f"{names[7]}:{float(values[7])!r}0000000000000000000001"
    X, _, _ = load_vw(vw("1 |f " + " ".join(tokens) + "\n2 |f a\n"), hash_bits=10)
    expected = {}
    for n, v in zip(names, values):  # summed in the order of the line
        c = col(n, "f", 10)
        expected[c] = expected.get(c, 0.0) + float(v)
    expected = {c: v for c, v in expected.items() if v != 0}
    assert list(X.indices[: X.indptr[1]]) == sorted(expected)
    assert dense_rows(X) == [expected, {col("a", "f", 10): 1.0}]


@pytest.fixture
def random_data():
    rng = np.random.default_rng(7)
    X = sp.random(60, 40, density=0.15, format="csr", random_state=rng)
    X.data = np.round(rng.normal(size=X.nnz), 3)
    X = (sp.diags((np.arange(60) != 3).astype(float)) @ X).tocsr()  # row 3 empty
    X.eliminate_zeros()
    assert X[3].nnz == 0 and X.nnz > 300
    y = rng.choice([-1.0, 1.0, 0.5], size=60)
    w = rng.uniform(0, 3, size=60)
    return X, y, w


def hashing_matrix(n_features, bits, hash, namespace="f"):
    H = np.zeros((n_features, 2**bits))
    for j in range(n_features):
        H[j, col(str(j), namespace, bits, hash)] = 1
    return H


@pytest.mark.parametrize(
    "hash, bits, namespace", [("strings", 8, "f"), ("all", 4, "f"), ("all", 10, ""), ("strings", 5, "ns.0")]
)
def test_dump_load_round_trip(tmp_path, random_data, hash, bits, namespace):
    X, y, w = random_data
    path = tmp_path / "data.vw"
    dump_vw(X, y, path, namespace=namespace, sample_weight=w)
    Xh, yh, wh = load_vw(path, hash_bits=bits, hash=hash)
    np.testing.assert_allclose(Xh.toarray(), X.toarray() @ hashing_matrix(40, bits, hash, namespace), atol=1e-12)
    np.testing.assert_array_equal(yh, y)
    np.testing.assert_array_equal(wh, w)
    if hash == "strings" and namespace == "f":  # digit names: only a rotation of the columns
        rotated = np.roll(np.pad(X.toarray(), ((0, 0), (0, 2**bits - 40))), m3("f") % 2**bits, axis=1)
        np.testing.assert_array_equal(Xh.toarray(), rotated)


@pytest.mark.parametrize("ext", ["", ".gz", ".bz2", ".xz"])
def test_compressed_files_and_chunking(tmp_path, random_data, ext):
    X, y, w = random_data
    w[::2] = 1.0
    path = tmp_path / f"data.vw{ext}"
    dump_vw(X, y, path, sample_weight=np.where(np.arange(60) < 30, w, 1.0))
    magic = {"": b"", ".gz": b"\x1f\x8b", ".bz2": b"BZh", ".xz": b"\xfd7zXZ"}[ext]
    assert path.read_bytes().startswith(magic)  # really compressed
    X1, y1, w1 = load_vw(path, hash_bits=7)
    np.testing.assert_array_equal(w1, np.where(np.arange(60) < 30, w, 1.0))
    chunks = list(iter_vw_chunks(path, hash_bits=7, chunk_bytes=97))
    assert len(chunks) > 10
    assert all(c.X.shape[1] == 2**7 and c.X.indices.dtype == np.int64 for c in chunks)
    Xc = sp.vstack([c.X for c in chunks]).tocsr()
    assert (Xc != X1).nnz == 0
    np.testing.assert_array_equal(np.concatenate([c.y for c in chunks]), y1)
    weights = [c.sample_weight for c in chunks]
    assert weights[-1] is None and any(x is not None for x in weights)  # per chunk: None without importance
    np.testing.assert_array_equal(
        np.concatenate([np.ones(c.y.size) if x is None else x for c, x in zip(chunks, weights)]), w1
    )


def test_stream_from_vw_and_cache(tmp_path, random_data):
    X, y, _ = random_data
    path = tmp_path / "data.vw.gz"
    dump_vw(X, y, path)
    stream = Stream.from_vw(path, hash_bits=9, chunk_bytes=200, cache=tmp_path / "cache")
    assert stream.n_features == 512
    passes = [[(c.X.toarray(), c.y, c.sample_weight) for c in stream] for _ in range(2)]
    assert stream.n_samples == 60 and stream.passes == 2
    assert (tmp_path / "cache" / "meta.json").exists()
    assert len(passes[0]) == len(passes[1]) > 1
    for (a, ya, wa), (b, yb, wb) in zip(*passes):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ya, yb)
        assert wa is None and wb is None
    Xs = np.vstack([p[0] for p in passes[0]])
    np.testing.assert_allclose(Xs, X.toarray() @ hashing_matrix(40, 9, "strings"))
    chunk = next(iter(Stream.from_vw(path, 9, dtype=np.float32)))
    assert chunk.X.dtype == np.float32
    assert "vw" in repr(stream)
    with pytest.raises(FileNotFoundError):
        Stream.from_vw(tmp_path / "missing.vw")


# -------------------------------------------------------------------------- errors

BAD_LINES = [
    ("x |f a", "label is not a number"),
    ("1,5 |f a", "label is not a number"),
    ("nan |f a", "label is NaN or infinite"),
    ("1e400 |f a", "label is NaN or infinite"),
    ("|f a", "no label"),
    ("1|f a", "no label"),  # VW reads '1' as a tag
    ("'tag |f a", "no label"),
    ("1", "no label"),
    ("1 w |f a", "importance weight is not a number"),
    ("1 -2 |f a", "importance weight is negative"),
    ("1 inf |f a", "importance weight is negative"),
    ("1 1 0.5 |f a", "initial prediction"),
    ("1 1 0.5 0 |f a", "more than"),
    ("1 |f a:x", "value of feature 'a' after ':' is not a number"),
    ("1 |f a:", "value of feature 'a'"),
    ("1 |f a:1x b", "value of feature 'a'"),
    ("1 |f a:1:2", "value of feature 'a'"),
    ("1 |f a:red", "value of feature 'a'"),
    ("1 |f :x", "value of feature ''"),
    ("1 |f a:nan", "value of feature 'a' .*NaN or infinite"),
    ("1 |f bb:-inf", "value of feature 'bb' .*NaN or infinite"),
    ("1 |f bb:1e999", "value of feature 'bb' .*NaN or infinite"),
    ("1 |f:1e300 c:1e10", "value of feature 'c' .*NaN or infinite"),
    ("1 |:2 a", "namespace name expected"),
    ("1 |f:x a", "namespace scale after ':' is not a number"),
    ("1 |f: a", "namespace scale after ':' is not a number"),
    ("1 |f:2a b", "namespace scale after ':' is not a number"),
    ("1 |f:inf a", "namespace scale is NaN or infinite"),
]


@pytest.mark.parametrize("bad, message", BAD_LINES)
def test_malformed_line_names_file_and_line(tmp_path, bad, message):
    good = "1 |f a b:2\n0.5 2 |g c\n\n"
    path = tmp_path / "bad.vw"
    path.write_text(good * 3 + bad + "\n" + good)
    for chunk_bytes in (16 << 20, 13):
        with pytest.raises(DataFormatError, match=message) as err:
            list(iter_vw_chunks(path, chunk_bytes=chunk_bytes))
        assert err.value.line == 10 and err.value.path == str(path)
        assert str(err.value).startswith(f"{path}:10: ")
    with pytest.raises(DataFormatError, match=re.escape(f"{path}:10: ")):
        load_vw(path)


@pytest.mark.parametrize("text", ["", "\n", "  \n\t\n"])
def test_empty_file_is_an_error(tmp_path, text):
    path = tmp_path / "empty.vw"
    path.write_text(text)
    with pytest.raises(DataFormatError, match="no example"):
        load_vw(path)
    with pytest.raises(DataFormatError, match="no example"):
        list(Stream.from_vw(path))


def test_dump_vw_checks_its_input(tmp_path):
    with pytest.raises(ValueError, match="namespace"):
        dump_vw(np.eye(2), [0, 1], tmp_path / "x.vw", namespace="a b")
    with pytest.raises(ValueError, match="sample_weight"):
        dump_vw(np.eye(2), [0, 1], tmp_path / "x.vw", sample_weight=[1, -1])
    with pytest.raises(ValueError, match="NaN"):
        dump_vw(np.eye(2), [0, np.nan], tmp_path / "x.vw")
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_same_indices_as_vowpal_wabbit():
    vowpalwabbit = pytest.importorskip("vowpalwabbit")
    lines = ["1 2 tag|f a:2 b |g:0.5 c 12 | d :3 :4 |f a", "-1 |  x 007 é", "0.5 'q |A_b:-1 z:3 9:1"]
    for bits, opts, hash in [(18, "", "strings"), (12, " --hash all", "all")]:
        model = vowpalwabbit.Workspace(f"--quiet --noconstant -b {bits}{opts}")
        X, y, w = load_vw(vw("\n".join(lines)), hash_bits=bits, hash=hash)
        for i, line in enumerate(lines):
            ex = model.example(line)
            ref = {}
            for index, value in ex.iter_features():
                ref[index % 2**bits] = ref.get(index % 2**bits, 0.0) + value
            mine = dense_rows(X)[i]
            assert sorted(ref) == sorted(mine)
            np.testing.assert_allclose([mine[k] for k in sorted(ref)], [ref[k] for k in sorted(ref)], rtol=1e-6)
            assert ex.get_simplelabel_label() == y[i]
            model.finish_example(ex)
