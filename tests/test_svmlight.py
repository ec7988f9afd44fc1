"""svmlight reader and writer: agreement with scikit-learn, round trips, chunking, errors."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_svmlight_file

from l1scale.data import dump_svmlight, iter_svmlight_chunks, load_svmlight
from l1scale.exceptions import DataFormatError

HYPO = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# Every .bz2 svmlight file of the shared data folder, with n_features from its INDEX.md.
DATA_FILES = {
    "a9a/a9a.bz2": 123,
    "a9a/a9a.t.bz2": 123,
    "w8a/w8a.bz2": 300,
    "magic04/magic04.svm.bz2": 10,
    "spambase/spambase.svm.bz2": 57,
    "madelon/madelon.bz2": 500,
    "madelon/madelon.t.bz2": 500,
    "arcene/arcene.bz2": 10_000,
    "arcene/arcene.t.bz2": 10_000,
    "splice/splice_scale.bz2": 60,
    "mnist/mnist10k_3vsrest.bz2": 784,
    "reuters21578/modapte_earn_train.svm.bz2": 27_901,
    "reuters21578/modapte_earn_test.svm.bz2": 27_901,
    "news20/news20_bydate_binary.svm.bz2": 588_937,
}
SLOW_FILES = {"news20/news20_bydate_binary.svm.bz2"}


def assert_same(X, y, X_ref, y_ref):
    """Same shape, structure, bits of every value, labels."""
    X_ref = sp.csr_matrix(X_ref)
    assert isinstance(X, sp.csr_matrix)
    assert X.indices.dtype == np.int64 and X.indptr.dtype == np.int64
    assert X.shape == X_ref.shape
    np.testing.assert_array_equal(X.indptr, X_ref.indptr)
    np.testing.assert_array_equal(X.indices, X_ref.indices)
    assert X.data.dtype == X_ref.data.dtype
    assert X.data.tobytes() == X_ref.data.tobytes()  # to the bit, -0.0 included
    assert y.dtype == np.float64 and y.tobytes() == np.asarray(y_ref, dtype=np.float64).tobytes()


def stacked(chunks):
    """Concatenate (X, y) chunks, checking each chunk's contract on the way."""
    for X, y in chunks:
        assert isinstance(X, sp.csr_matrix) and X.indices.dtype == np.int64 and X.indptr.dtype == np.int64
        assert y.dtype == np.float64 and y.shape == (X.shape[0],)
    X = sp.vstack([c[0] for c in chunks], format="csr")
    X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)  # vstack downcasts
    return X, np.concatenate([c[1] for c in chunks])


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


# ----------------------------------------------------------------- real data sets


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_FILES else n for n in DATA_FILES]
)
def test_agrees_with_sklearn_on_shared_data(data_dir, name):
    path = data_dir / name
    if not path.exists():
        pytest.skip(f"{path} missing")
    d = DATA_FILES[name]
    if name in SLOW_FILES:  # decompress once, for both readers
        text = bz2.decompress(path.read_bytes())
        X, y = load_svmlight(io.BytesIO(text), n_features=d)
        assert_same(X, y, *load_svmlight_file(io.BytesIO(text), n_features=d))
    else:
        X, y = load_svmlight(path, n_features=d)
        assert_same(X, y, *load_svmlight_file(str(path), n_features=d))


def test_every_shared_bz2_file_is_covered(data_dir):
    found = {p.relative_to(data_dir).as_posix() for p in data_dir.rglob("*.bz2")}
    assert found <= set(DATA_FILES), f"new data files to add to DATA_FILES: {found - set(DATA_FILES)}"


def test_streamed_chunks_of_shared_file_equal_load(data_dir):
    path = data_dir / "a9a" / "a9a.t.bz2"
    if not path.exists():
        pytest.skip(f"{path} missing")
    X, y = load_svmlight(path, n_features=123)
    chunks = list(iter_svmlight_chunks(path, n_features=123, chunk_bytes=100_000))
    assert len(chunks) > 5
    assert_same(*stacked(chunks), X, y)


# ------------------------------------------------------------ generated files

finite = st.floats(allow_nan=False, allow_infinity=False)


def decimal_text(max_exp_digits):
    return st.from_regex(
        rf"\A[+-]?([0-9]{{1,25}}(\.[0-9]{{0,25}})?|\.[0-9]{{1,25}})([eE][+-]?[0-9]{{1,{max_exp_digits}}})?\Z"
    )


# Always finite: the exponent has at most 2 digits.
value_text = st.one_of(
    finite.map(repr),
    finite.map(lambda v: f"{v:.17g}"),
    finite.map(lambda v: f"{v:.6e}"),
    st.integers(-(10**6), 10**6).map(str),
    decimal_text(2),
)
# Also reaching subnormal, underflowing and overflowing literals.
number_text = st.one_of(value_text, decimal_text(3))


@st.composite
def svmlight_texts(draw):
    """Random svmlight text with comments, blank lines, qid, tabs and CRLF; and its width."""
    d = draw(st.integers(1, 15))
    zero_based = draw(st.booleans())
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        for _ in range(draw(st.integers(0, 1))):
            lines.append(draw(st.sampled_from(["", "   ", "# a comment: 1:2", "\t# x"])))
        cols = sorted(draw(st.sets(st.integers(0, d - 1), max_size=d)))
        sep = draw(st.sampled_from([" ", "\t", "  "]))
        tokens = [draw(st.one_of(st.integers(-3, 3).map(str), value_text))]
        if draw(st.booleans()):
            tokens.append(f"qid:{draw(st.integers(0, 99))}")
        tokens += [f"{c + (0 if zero_based else 1)}:{draw(value_text)}" for c in cols]
        line = sep.join(tokens) + draw(st.sampled_from(["", " ", " # tail comment", "#x:1"]))
        lines.append(line)
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = eol.join(lines) + draw(st.sampled_from(["", eol]))
    return text, d, zero_based


@HYPO
@given(case=svmlight_texts(), mode=st.sampled_from(["declared", "auto"]))
def test_generated_text_agrees_with_sklearn(tmp_path, case, mode):
    text, d, zero_based = case
    path = write(tmp_path / "gen.svm", text)
    zb = zero_based if mode == "declared" else "auto"
    width = d + (0 if zero_based else 1)  # fits either interpretation of the indices
    X, y = load_svmlight(path, n_features=width, zero_based=zb)
    X_ref, y_ref = load_svmlight_file(str(path), n_features=width, zero_based=zb)
    assert_same(X, y, X_ref, y_ref)


@HYPO
@given(case=svmlight_texts(), chunk_bytes=st.integers(1, 80), chunk_rows=st.one_of(st.none(), st.integers(1, 5)))
def test_chunks_concatenate_to_whole_load(tmp_path, case, chunk_bytes, chunk_rows):
    text, d, zero_based = case
    path = write(tmp_path / "gen.svm", text)
    X, y = load_svmlight(path, n_features=d + 1, zero_based=zero_based)
    chunks = list(
        iter_svmlight_chunks(
            path, n_features=d + 1, zero_based=zero_based, chunk_bytes=chunk_bytes, chunk_rows=chunk_rows
        )
    )
    assert all(c[0].shape[1] == d + 1 and c[0].shape[0] > 0 for c in chunks)
    if chunk_rows is not None:
        assert all(c[0].shape[0] == chunk_rows for c in chunks[:-1])
    if chunks:
        assert_same(*stacked(chunks), X, y)
    else:
        assert X.shape[0] == 0


@st.composite
def labelled_matrices(draw):
    n, d = draw(st.integers(0, 10)), draw(st.integers(1, 10))
    dense = np.array(
        draw(st.lists(st.one_of(st.just(0.0), finite), min_size=n * d, max_size=n * d)), dtype=np.float64
    ).reshape(n, d)
    y = np.array(draw(st.lists(st.one_of(st.integers(-5, 5).map(float), finite), min_size=n, max_size=n)))
    return dense, y


@HYPO
@given(
    case=labelled_matrices(),
    zero_based=st.booleans(),
    sparse=st.booleans(),
    ext=st.sampled_from(["", ".gz", ".bz2", ".xz"]),
)
def test_dump_load_round_trip_is_exact(tmp_path, case, zero_based, sparse, ext):
    dense, y = case
    X = sp.csr_matrix(dense) if sparse else dense
    path = tmp_path / f"rt.svm{ext}"
    dump_svmlight(X, y, path, zero_based=zero_based, comment="made by\nthe test")
    X2, y2 = load_svmlight(path, n_features=dense.shape[1], zero_based=zero_based)
    assert_same(X2, y2, sp.csr_matrix(dense), y)
    source = io.BytesIO(lzma.decompress(path.read_bytes())) if ext == ".xz" else str(path)  # sklearn lacks xz
    X3, y3 = load_svmlight_file(source, n_features=dense.shape[1], zero_based=zero_based)
    assert_same(X2, y2, X3, y3)


def test_dump_writes_integral_labels_as_integers(tmp_path):
    path = tmp_path / "int.svm"
    dump_svmlight(np.array([[0.0, 2.5], [1.0, 0.0]]), np.array([1.0, -1.0]), path)
    assert path.read_text() == "1 2:2.5\n-1 1:1\n"


@HYPO
@given(numbers=st.lists(number_text, min_size=1, max_size=40))
def test_numbers_parse_exactly_like_python_float(tmp_path, numbers):
    path = write(tmp_path / "nums.svm", "".join(f"{v} 1:{v}\n" for v in numbers))
    expected = np.array([float(v) for v in numbers])
    if not np.isfinite(expected).all():  # overflowing literals are errors, tested elsewhere
        return
    X, y = load_svmlight(path)
    assert X.data.tobytes() == expected.tobytes() and y.tobytes() == expected.tobytes()


def test_many_random_numbers_parse_exactly_like_python_float(tmp_path):
    # Dense coverage of the Eisel-Lemire path: random bit patterns printed with
    # 17 digits, and random decimal strings of up to 25 digits over the whole exponent range.
    rng = np.random.default_rng(12345)
    bits = rng.integers(0, 2**63, size=20_000, dtype=np.uint64) | (
        rng.integers(0, 2, 20_000, dtype=np.uint64) << np.uint64(63)
    )
    floats = bits.view(np.float64)
    floats = floats[np.isfinite(floats)]
    texts = [repr(v) for v in floats[:5000].tolist()] + [f"{v:.17g}" for v in floats[5000:10000].tolist()]
    texts += [f"{v:.{int(p)}e}" for p, v in zip(rng.integers(0, 20, 5000), floats[10000:15000].tolist())]
    digits = rng.integers(0, 10, size=(10_000, 25))
    for row, n, point, exp in zip(
        digits, rng.integers(1, 26, 10_000), rng.integers(0, 26, 10_000), rng.integers(-340, 300, 10_000)
    ):
        s = "".join(map(str, row[:n]))
        texts.append(f"{s[:point]}.{s[point:]}e{exp}" if point < n else f"{s}e{exp}")
    expected = np.array([float(t) for t in texts])
    keep = np.isfinite(expected)
    texts, expected = [t for t, k in zip(texts, keep) if k], expected[keep]
    path = write(tmp_path / "many.svm", "".join(f"0 1:{t}\n" for t in texts))
    X, _ = load_svmlight(path)
    bad = np.flatnonzero(X.data.view(np.uint64) != expected.view(np.uint64))
    assert bad.size == 0, [(texts[i], X.data[i], expected[i]) for i in bad[:5]]


def test_plain_decimals_parse_exactly_like_python_float(tmp_path):
    # The kernel's one-scan path for the common token (no exponent, at most 15 digits) and
    # its hand-over to the general path (16+ digits, more than 22 after the point): random
    # digit strings with the point anywhere (or absent), signs and leading zeros, many per
    # line, agree with float bit for bit.
    rng = np.random.default_rng(7)
    texts = []
    for n in rng.integers(1, 26, 20_000):
        s = "".join(map(str, rng.integers(0, 10, n)))
        point = int(rng.integers(0, n + 2))
        s = s if point > n else f"{s[:point]}.{s[point:]}"
        texts.append(str(rng.choice(["", "-", "+"])) + s)
    texts += [
        "0",
        "-0",
        "-0.0",
        "5.",
        ".5",
        "000.000",
        "0.0558",
        "123456789012345",
        "1234567890123456",
        "0." + "0" * 21 + "7",
        "0." + "0" * 22 + "7",
        "9007199254740993",
        "-.25",
    ]
    expected = np.array([float(t) for t in texts])
    lines = (
        "0 " + " ".join(f"{j + 1}:{t}" for j, t in enumerate(texts[i : i + 50])) + "\n"
        for i in range(0, len(texts), 50)
    )
    X, _ = load_svmlight(write(tmp_path / "decimals.svm", "".join(lines)))
    got = X.data  # every token in file order, explicit (signed) zeros included
    assert got.size == len(texts)
    bad = np.flatnonzero(got.view(np.uint64) != expected.view(np.uint64))
    assert bad.size == 0, [(texts[i], got[i], expected[i]) for i in bad[:5]]


def test_float32_agrees_with_sklearn(tmp_path):
    path = write(tmp_path / "f.svm", "1 1:0.1 3:1e-40 4:3.4028235e38\n-1 2:16777217\n")
    X, y = load_svmlight(path, dtype=np.float32)
    assert_same(X, y, *load_svmlight_file(str(path), dtype=np.float32))


def test_return_line_numbers(tmp_path):
    path = write(tmp_path / "l.svm", "# head\n1 1:1\n\n-1 2:2\n  \n1 # only a label\n")
    X, y, lines = load_svmlight(path, return_line_numbers=True)
    assert lines.tolist() == [2, 4, 6] and y.tolist() == [1, -1, 1] and X.shape == (3, 2)


def test_auto_prescan_decides_before_first_chunk(tmp_path):
    # Index 0 only on the last line: early chunks must already be zero-based.
    text = "".join(f"1 {i}:1\n" for i in range(1, 40)) + "-1 0:5\n"
    path = write(tmp_path / "late0.svm", text)
    X, y = load_svmlight(path)
    assert X.shape == (40, 40) and X[0, 1] == 1
    chunks = list(iter_svmlight_chunks(path, chunk_bytes=16))
    assert len(chunks) > 10 and all(c[0].shape[1] == 40 for c in chunks)
    assert_same(*stacked(chunks), X, y)


def test_width_grows_without_n_features_when_zero_based_given(tmp_path):
    path = write(tmp_path / "w.svm", "1 1:1\n1 5:1\n1 2:1\n")
    widths = [c[0].shape[1] for c in iter_svmlight_chunks(path, zero_based=False, chunk_bytes=1)]
    assert widths == [1, 5, 5]


# -------------------------------------------------------------- compression, objects


@pytest.fixture
def plain(tmp_path):
    text = "".join(f"{(-1) ** i} {i % 7 + 1}:{i / 3!r} {i % 7 + 9}:{i}\n" for i in range(500))
    return write(tmp_path / "plain.svm", text)


@pytest.mark.parametrize(
    "compress, ext",
    [
        (gzip.compress, ".gz"),
        (bz2.compress, ".bz2"),
        (lzma.compress, ".xz"),
        (gzip.compress, ".txt"),
        (bz2.compress, ""),
        (lzma.compress, ".data"),
    ],
)
def test_compressed_equals_plain_by_extension_or_magic(plain, compress, ext):
    packed = write(plain.with_name("packed" + ext), compress(plain.read_bytes()))
    X, y = load_svmlight(plain)
    assert_same(*load_svmlight(packed), X, y)
    chunks = list(iter_svmlight_chunks(packed, chunk_bytes=333))
    assert_same(*stacked(chunks), X, y)


class _NonSeekable(io.RawIOBase):
    def __init__(self, data):
        self._inner = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, b):
        return self._inner.readinto(b)


@pytest.mark.parametrize("compress", [lambda b: b, gzip.compress, bz2.compress])
def test_binary_file_objects(plain, compress):
    X, y = load_svmlight(plain)
    raw = compress(plain.read_bytes())
    assert_same(*load_svmlight(io.BytesIO(raw)), X, y)
    assert_same(*load_svmlight(_NonSeekable(raw)), X, y)
    chunks = list(iter_svmlight_chunks(io.BytesIO(raw), chunk_bytes=1000))  # auto: seek back after the pre-scan
    assert sum(c[0].shape[0] for c in chunks) == 500
    with pytest.raises(ValueError, match="zero_based"):
        iter_svmlight_chunks(_NonSeekable(raw))
    chunks = list(iter_svmlight_chunks(_NonSeekable(raw), zero_based=False, n_features=15))
    assert sum(c[0].shape[0] for c in chunks) == 500


def test_text_mode_file_is_refused(plain):
    with open(plain) as f, pytest.raises(TypeError, match="binary"):
        load_svmlight(f)


# ------------------------------------------------------------------------ errors

ERRORS = [
    ("1 1:2\n-1 2:x\n", {}, 2, "value of feature 2 is not a number"),
    ("1 1:2\n\n-1 2:1.5.5\n", {}, 3, "value of feature 2 is not a number"),
    ("1 1:2\n-1 a:1\n", {}, 2, "feature index is not a non-negative integer"),
    ("1 1:2\n-1 1.5:1\n", {}, 2, "feature index is not a non-negative integer"),
    ("# c\n1 -3:1\n", {}, 2, "negative feature index"),
    ("1 1:1\n1 0:1\n", {"zero_based": False}, 2, "feature index 0 in a file read as one-based"),
    ("1 1:1\n1 2:1 2:3\n", {}, 2, "duplicate feature index 2"),
    ("1 1:1\n\n\n1 3:1 2:3\n", {}, 4, "feature indices not increasing: 2 after 3"),
    ("1 1:1\n2:1 3:1\n", {}, 2, "missing label"),
    ("qid:1 3:1\n", {}, 1, "missing label"),
    ("abc 1:1\n", {}, 1, "label is not a number"),
    ("1 1:1\n1 2 3:1\n", {}, 2, r"token without ':'"),
    ("1 1:1\n1 2:nan\n", {}, 2, "value of feature 2 is NaN or infinite"),
    ("1 1:1\n1 2:-Infinity\n", {}, 2, "value of feature 2 is NaN or infinite"),
    ("1 1:1\n1 2:1e400\n", {}, 2, "value of feature 2 is NaN or infinite"),
    ("1 1:1\n1 2:123456789012345678901234567890e300\n", {}, 2, "value of feature 2 is NaN or infinite"),
    ("1 1:1\n1 2:1e400\n1 x:1\n", {}, 2, "value of feature 2 is NaN or infinite"),
    ("1e400 2:1 1:1\n", {}, 1, "label is NaN or infinite"),
    ("1 1:1\nnan 2:1\n", {}, 2, "label is NaN or infinite"),
    ("1 1:1\ninf 2:1\n", {}, 2, "label is NaN or infinite"),
    ("1 1:1\n-1e999 2:1\n", {}, 2, "label is NaN or infinite"),
    ("1 1:1\n1 30000:1\n", {"n_features": 27901}, 2, "feature index 30000 exceeds n_features=27901"),
    ("1 0:1\n1 27901:1\n", {"n_features": 27901}, 2, "feature index 27901 exceeds n_features=27901"),
]


@pytest.mark.parametrize("text, kw, line, reason", ERRORS)
def test_bad_input_names_file_and_line(tmp_path, text, kw, line, reason):
    path = write(tmp_path / "bad.svm", text)
    where = re.escape(f"{path}:{line}: ")
    with pytest.raises(DataFormatError, match=where + reason) as info:
        load_svmlight(path, **kw)
    assert info.value.line == line and info.value.path == str(path)
    with pytest.raises(DataFormatError, match=where + reason):
        list(iter_svmlight_chunks(path, chunk_bytes=3, **kw))


def test_error_line_is_counted_across_chunks(tmp_path):
    text = "".join(f"1 {i % 9 + 1}:1 # row {i}\n\n" for i in range(300)) + "1 3:1 3:2\n"
    path = write(tmp_path / "late.svm.gz", gzip.compress(text.encode()))
    for chunk_bytes in (1, 7, 100, 1 << 20):
        with pytest.raises(DataFormatError, match=re.escape(f"{path}:601: duplicate")):
            list(iter_svmlight_chunks(path, zero_based=False, n_features=10, chunk_bytes=chunk_bytes))


def test_chunks_before_an_error_are_streamed(tmp_path):
    path = write(tmp_path / "tail.svm", "1 1:1\n" * 100 + "1 1:x\n")
    chunks = iter_svmlight_chunks(path, zero_based=False, n_features=1, chunk_bytes=60)
    first = next(chunks)  # the bad last line is not read yet
    assert first[0].shape[0] == 10
    with pytest.raises(DataFormatError, match=":101: "):
        list(chunks)


# ------------------------------------------------------------------------ writer


def test_unwritable_path_raises_and_leaves_nothing(tmp_path):
    X, y = np.eye(3), np.ones(3)
    missing = tmp_path / "no" / "such" / "dir" / "out.svm"
    with pytest.raises(OSError, match=re.escape(str(missing))):
        dump_svmlight(X, y, missing)
    assert not missing.parent.exists()
    with pytest.raises(OSError, match=re.escape(str(tmp_path))):
        dump_svmlight(X, y, tmp_path)


@pytest.mark.parametrize("ext", ["", ".gz"])
def test_failed_write_leaves_no_partial_file(tmp_path, ext):
    target = tmp_path / f"out.svm{ext}"
    with pytest.raises(DataFormatError, match="NaN"):
        dump_svmlight(np.eye(3), np.array([1.0, np.nan, 1.0]), target)
    with pytest.raises(DataFormatError, match="NaN"):
        dump_svmlight(np.array([[1.0, np.inf]]), np.ones(1), target)
    assert os.listdir(tmp_path) == []
    dump_svmlight(np.eye(2), np.ones(2), target)
    before = target.read_bytes()
    with pytest.raises(ValueError):
        dump_svmlight(np.eye(2), np.ones(3), target)  # the old file stays intact
    assert target.read_bytes() == before and os.listdir(tmp_path) == [target.name]


def test_dump_accepts_unsorted_and_duplicate_csr(tmp_path):
    X = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2]), np.array([0, 3])), shape=(1, 3))
    assert not X.has_canonical_format
    dump_svmlight(X, [1], tmp_path / "u.svm")
    assert (tmp_path / "u.svm").read_text() == "1 1:2 3:4\n"
