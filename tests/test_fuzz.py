"""Fuzz targets (hypothesis) for everything that reads bytes from outside: the svmlight,
Vowpal Wabbit and sequence parsers, the chunk-cache reader, the model and checkpoint loaders.

The property of every target: an input either parses to what a reference gives
(scikit-learn's svmlight parser; the writer's own data for round trips) or raises the
library's error naming the file; never a crash, a hang, another exception type, or data
that differs silently.

CI runs a short, derandomised run (``L1SCALE_FUZZ_EXAMPLES`` examples per target,
default 40). ``scripts/fuzz.py`` runs the same targets for as long as asked, with fresh
random seeds (``L1SCALE_FUZZ_RANDOM=1``).
"""

import os
import tempfile
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from l1scale.checkpoint import Checkpoint
from l1scale.data import (
    Stream,
    dump_sequences,
    dump_vw,
    load_sequences,
    load_svmlight,
    load_vw,
    write_cache,
)
from l1scale.data.validation import check_compressed
from l1scale.exceptions import (
    CheckpointError,
    ConvergenceWarning,
    DataFormatError,
    ModelFormatError,
)
from l1scale.model_io import load_model, save_model

_EXAMPLES = int(os.environ.get("L1SCALE_FUZZ_EXAMPLES", "40"))
settings.register_profile(
    "l1scale-fuzz",
    max_examples=_EXAMPLES,
    deadline=None,
    derandomize=not os.environ.get("L1SCALE_FUZZ_RANDOM"),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    database=None,
)
fuzz = settings.get_profile("l1scale-fuzz")

# Bytes a mutation inserts: the parsers' delimiters and number syntax, and a few that
# are not text at all.
_INTERESTING = b"0123456789:. \t\n\r#-+eEinfaINFAx_|',\x00\xff\x80"


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="l1scale-fuzz-") as directory:
        yield directory


def _path(workdir, name, content: bytes) -> str:
    path = os.path.join(workdir, name)
    with open(path, "wb") as f:
        f.write(content)
    return path


@st.composite
def mutated(draw, document: bytes):
    """``document`` with a few bytes replaced, inserted or deleted, or cut short."""
    data = bytearray(document)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["replace", "insert", "delete", "truncate"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        byte = draw(st.sampled_from(list(_INTERESTING)) | st.integers(0, 255))
        if kind == "replace" and data:
            data[at] = byte
        elif kind == "insert":
            data.insert(at, byte)
        elif kind == "delete" and data:
            del data[at]
        elif kind == "truncate":
            del data[at:]
    return bytes(data)


def assert_error_names(e, path, *, line_expected=False):
    event("rejected")
    assert isinstance(e, DataFormatError), f"{type(e).__name__}: {e}"
    assert e.path == path, f"the error names {e.path!r}, not {path!r}: {e}"
    if line_expected:
        assert e.line is None or e.line >= 1


def assert_valid_matrix(X, width=None):
    """The parsed matrix is what the kernels may index: indices in range, values finite."""
    check_compressed(X.data, X.indices, X.indptr, X.shape[0], X.shape[1] if width is None else width)
    assert np.isfinite(X.data).all()


# --------------------------------------------------------------------------- svmlight

_numbers = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.floats(-1e3, 1e3, allow_nan=False).map(lambda v: f"{v:.6e}"),
)


@st.composite
def svmlight_documents(draw):
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["example", "example", "example", "comment", "blank"]))
        if kind == "comment":
            lines.append("# " + draw(st.text(st.characters(codec="ascii", exclude_characters="\n\r"), max_size=10)))
            continue
        if kind == "blank":
            lines.append(draw(st.sampled_from(["", " ", "\t"])))
            continue
        label = draw(st.sampled_from(["1", "-1", "+1", "0", "2.5", "1e0"]))
        indices = sorted(draw(st.sets(st.integers(1, 40), max_size=6)))
        sep = draw(st.sampled_from([" ", "\t", "  "]))
        feats = sep.join(f"{j}:{draw(_numbers)}" for j in indices)
        qid = draw(st.sampled_from(["", " qid:3"]))
        tail = draw(st.sampled_from(["", " # a comment", " "]))
        lines.append(f"{label}{qid}{sep if feats else ''}{feats}{tail}")
    if not any(line and line[0] not in "# \t" for line in lines):
        lines.append("1 1:1")
    return ("\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))).encode()


def sklearn_svmlight(path, n_features):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(path, n_features=n_features, zero_based=False)
    return X, y


@fuzz
@given(document=svmlight_documents())
def test_svmlight_parses_as_scikit_learn_does(workdir, document):
    path = _path(workdir, "valid.svm", document)
    X, y = load_svmlight(path, zero_based=False, n_features=41)
    X_ref, y_ref = sklearn_svmlight(path, 41)
    assert_valid_matrix(X)
    np.testing.assert_array_equal(y, y_ref)
    assert (X_ref != X).nnz == 0


@fuzz
@given(data=st.data())
def test_svmlight_with_damaged_bytes_parses_as_scikit_learn_or_is_an_error(workdir, data):
    document = data.draw(mutated(data.draw(svmlight_documents())))
    path = _path(workdir, "mutated.svm", document)
    try:
        X, y = load_svmlight(path, zero_based=False, n_features=41)
    except Exception as e:  # noqa: BLE001 - the property is about which exception
        assert_error_names(e, path, line_expected=True)
        return
    assert_valid_matrix(X)
    assert np.isfinite(y).all()
    try:
        X_ref, y_ref = sklearn_svmlight(path, 41)
    except ValueError:
        event("read; scikit-learn rejects it")
        # scikit-learn rejects some inputs l1scale reads (a label '+1', 'qid' anywhere);
        # what l1scale read is still checked above to be a valid matrix.
        return
    event("read as scikit-learn reads it")
    np.testing.assert_array_equal(y, y_ref)
    assert (X_ref != X).nnz == 0


# --------------------------------------------------------------------------- Vowpal Wabbit


def small_matrices(max_rows=6, max_cols=12):
    return st.tuples(st.integers(1, max_rows), st.integers(1, max_cols), st.integers(0, 2**32 - 1)).map(
        lambda t: _random_matrix(*t)
    )


def _random_matrix(n, d, seed):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.4, format="csr", random_state=seed)
    X.data = np.round(X.data * 10 - 5, 3)
    X.eliminate_zeros()
    y = rng.choice([-1.0, 1.0], n)
    return X, y


@fuzz
@given(Xy=small_matrices())
def test_vw_round_trip_gives_back_the_rotated_columns(workdir, Xy):
    X, y = Xy
    path = os.path.join(workdir, "round.vw")
    dump_vw(X, y, path)
    X_read, y_read, w = load_vw(path, hash_bits=4)[:3]
    np.testing.assert_array_equal(y_read, y)
    assert w is None
    # dump_vw's column j hashes to (j + hash("f")) mod 16: the same values, rotated.
    assert np.allclose(np.sort(X_read.toarray(), axis=1), np.sort(_folded(X.toarray(), X_read.shape[1]), axis=1))


def _folded(A, width):
    """The row sums of A's columns by j mod width, laid out in the first ``width`` columns
    (a hash that rotates columns keeps each row's multiset of these values)."""
    out = np.zeros((A.shape[0], width))
    for j in range(A.shape[1]):
        out[:, j % width] += A[:, j]
    return out


@fuzz
@given(data=st.data())
def test_vw_with_damaged_bytes_parses_or_is_an_error(workdir, data):
    X, y = data.draw(small_matrices())
    clean = os.path.join(workdir, "clean.vw")
    dump_vw(X, y, clean, sample_weight=np.ones(X.shape[0]))
    with open(clean, "rb") as f:
        document = data.draw(mutated(f.read()))
    path = _path(workdir, "mutated.vw", document)
    try:
        X_read, y_read, w = load_vw(path, hash_bits=6)[:3]
    except Exception as e:  # noqa: BLE001
        assert_error_names(e, path, line_expected=True)
        return
    assert_valid_matrix(X_read, 64)
    assert np.isfinite(y_read).all() and (w is None or (np.isfinite(w).all() and (w >= 0).all()))


# --------------------------------------------------------------------------- DNA sequences


@st.composite
def sequence_sets(draw):
    n, length = draw(st.integers(1, 5)), draw(st.integers(1, 12))
    codes = np.array(
        draw(st.lists(st.lists(st.integers(0, 3), min_size=length, max_size=length), min_size=n, max_size=n)),
        dtype=np.uint8,
    )
    y = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0, 0.5, 3.0]), min_size=n, max_size=n)))
    return codes, y


@fuzz
@given(data=st.data())
def test_sequences_round_trip_and_damaged_bytes_parse_or_are_an_error(workdir, data):
    codes, y = data.draw(sequence_sets())
    clean = os.path.join(workdir, "clean.seq")
    dump_sequences(clean, codes, y)
    read_codes, read_y = load_sequences(clean)[:2]
    np.testing.assert_array_equal(read_codes, codes)
    np.testing.assert_array_equal(read_y, y)
    with open(clean, "rb") as f:
        path = _path(workdir, "mutated.seq", data.draw(mutated(f.read())))
    try:
        read_codes, read_y = load_sequences(path)[:2]
    except Exception as e:  # noqa: BLE001
        assert_error_names(e, path, line_expected=True)
        return
    assert read_codes.ndim == 2 and read_codes.shape[0] == read_y.shape[0]
    assert read_codes.size == 0 or read_codes.max() <= 3
    assert np.isfinite(read_y).all()


# --------------------------------------------------------------------------- chunk cache


@pytest.fixture(scope="module")
def cache(workdir):
    X, y = _random_matrix(120, 30, 7)
    directory = os.path.join(workdir, "cache")
    write_cache(Stream.from_arrays(X, y, sample_weight=np.linspace(0.5, 2, 120), chunk_rows=50), directory)
    files = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            files[name] = f.read()
    reference = [(c.X.toarray(), c.y, c.sample_weight) for c in Stream.from_cache(directory)]
    return _Quiet((directory, files, reference))


class _Quiet(tuple):
    """A fixture value that hypothesis's report of a failing case prints in one line."""

    def __repr__(self):
        return f"<{len(self)} fixture items>"


@fuzz
@given(data=st.data())
def test_a_damaged_chunk_cache_reads_the_same_or_is_an_error(cache, data):
    directory, files, reference = cache
    name = data.draw(st.sampled_from(sorted(files)))
    path = os.path.join(directory, name)
    damaged = data.draw(mutated(files[name]))
    try:
        with open(path, "wb") as f:
            f.write(damaged)
        try:
            chunks = [(c.X.toarray(), c.y, c.sample_weight) for c in Stream.from_cache(directory)]
        except Exception as e:  # noqa: BLE001
            # A damaged checksum in meta.json shows as the chunk it no longer matches.
            assert_error_names(e, path if name != "meta.json" else getattr(e, "path", None))
            assert os.path.dirname(e.path) == directory
            return
        for got, want in zip(chunks, reference, strict=True):
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)
    finally:
        with open(path, "wb") as f:
            f.write(files[name])


# --------------------------------------------------------------------------- model files


def loaded_or_refused(load, path, error):
    """``load(path)``, or None when it raised ``error`` naming the file (anything else fails)."""
    try:
        loaded = load(path)
    except Exception as e:  # noqa: BLE001 - the property is about which exception
        event("rejected")
        assert isinstance(e, error), f"{type(e).__name__}: {e}"
        assert path in str(e)
        return None
    event("loaded the same")
    return loaded


@pytest.fixture(scope="module")
def model_file(workdir):
    rng = np.random.default_rng(3)
    coef = np.where(rng.random((3, 20)) < 0.3, rng.normal(size=(3, 20)), 0.0)
    path = os.path.join(workdir, "model.l1m")
    save_model(path, coef=coef, intercept=rng.normal(size=3), metadata={"loss": "logistic", "classes": [0, 1, 2]})
    with open(path, "rb") as f:
        return _Quiet((f.read(), load_model(path)))


@fuzz
@given(data=st.data())
def test_a_damaged_model_file_loads_the_same_or_is_an_error(workdir, model_file, data):
    content, reference = model_file
    path = _path(workdir, "damaged.l1m", data.draw(mutated(content)))
    loaded = loaded_or_refused(load_model, path, ModelFormatError)
    if loaded is None:
        return
    np.testing.assert_array_equal(loaded[0], reference[0])
    np.testing.assert_array_equal(loaded[1], reference[1])
    assert loaded[2] == reference[2]


def test_the_fuzz_helpers_do_mutate():
    """The mutation strategy changes its input (else every target above passes vacuously)."""
    document = b"1 1:0.5 3:2\n-1 2:1\n"

    @settings(max_examples=30, derandomize=True, database=None)
    @given(mutated(document))
    def check(damaged):
        changed.append(damaged != document)

    changed = []
    check()
    assert sum(changed) >= 25


# --------------------------------------------------------------------------- checkpoints


@pytest.fixture(scope="module")
def checkpoint_file(workdir):
    import json

    from l1scale import SparseLogisticRegression

    X, y = _random_matrix(80, 15, 5)
    path = os.path.join(workdir, "fit.ckpt")
    with warnings.catch_warnings():  # three iterations: a checkpoint mid-solve, not a converged one
        warnings.simplefilter("ignore", ConvergenceWarning)
        SparseLogisticRegression(solver="cd", lam_ratio=0.05, max_iter=3, checkpoint=path).fit(X, y)
    with np.load(path) as z:
        fingerprint = json.loads(bytes(z["fingerprint"]).decode())
    with open(path, "rb") as f:
        content = f.read()
    return _Quiet((content, fingerprint, Checkpoint(path, fingerprint).load()))


@fuzz
@given(data=st.data())
def test_a_damaged_checkpoint_loads_the_same_or_is_an_error(workdir, checkpoint_file, data):
    content, fingerprint, reference = checkpoint_file
    path = _path(workdir, "damaged.ckpt", data.draw(mutated(content)))
    state = loaded_or_refused(lambda p: Checkpoint(p, fingerprint).load(), path, CheckpointError)
    if state is None:
        return
    assert sorted(state) == sorted(reference)
    for key, value in reference.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(state[key], value)
        else:
            assert state[key] == value
