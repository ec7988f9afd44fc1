"""Regression tests of issue 13's defects 3, 4, 5, 8 and 9 (each from its reproducer).

3: labels that differ in the last bit are not a class of their own on the streaming path;
4: a model records its training data's index base and predict / evaluate use it;
5: predict / evaluate read a chunk-cache directory (streamed);
8: load_sequences rejects ``1_0`` and files without examples; the streaming "only one class"
   error names the class;
9: int64 row numbers (or a clear error) in the generated-feature and FCL cache paths.
"""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from _cli_runner import ok, run
from click.testing import CliRunner

from l1scale import SparseLogisticRegression, load
from l1scale.cli import main
from l1scale.data import Stream, dump_svmlight, load_sequences, load_svmlight, load_vw
from l1scale.exceptions import DataFormatError


def _problem(n=300, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.5)
    y = np.where(X[:, 1] - X[:, 2] + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


# ----------------------------------------------------------------------------- defect 3


@pytest.mark.parametrize("solver", ["rmmp", "online", "sgd_cumulative"])
def test_labels_one_ulp_apart_are_rejected_on_the_streaming_path_as_in_memory(solver):
    X, y = _problem(60, 5)
    y[3] = 1.0000000000000002  # one ulp above 1
    with pytest.raises(ValueError, match="Unknown label type: continuous") as in_memory:
        SparseLogisticRegression(lam_ratio=0.1).fit(X, y)
    with pytest.raises(ValueError, match="Unknown label type: continuous") as streamed:
        SparseLogisticRegression(lam_ratio=0.1, solver=solver).fit(Stream.from_arrays(X, y))
    assert str(streamed.value).startswith(str(in_memory.value))
    assert "1.0000000000000002" in str(streamed.value)


def test_integral_float_labels_still_stream_as_classes():
    X, y = _problem(200, 5)
    y = np.where(y > 0, 3.0, -7.0)
    model = SparseLogisticRegression(lam_ratio=0.1, solver="rmmp").fit(Stream.from_arrays(X, y))
    assert model.classes_.tolist() == [-7.0, 3.0]


def test_cli_train_streaming_rejects_labels_one_ulp_apart(tmp_path):
    X, y = _problem(60, 5)
    path = tmp_path / "d.svm"
    dump_svmlight(X, y, path)
    lines = path.read_text().splitlines()
    lines[3] = "1.0000000000000002" + lines[3][lines[3].index(" ") :]
    path.write_text("\n".join(lines) + "\n")
    for solver in ("rmmp", "online", "sgd_cumulative", "cd"):
        result = run("train", path, "--solver", solver, "-q")
        assert result.exit_code == 1, (solver, result.stdout)
        assert "continuous" in result.stderr and str(path) in result.stderr, (solver, result.stderr)


# ----------------------------------------------------------------------------- defect 8


def test_load_sequences_rejects_underscores_in_labels(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("1 ACGT\n1_0 ACGT\n")
    with pytest.raises(DataFormatError, match="not a number") as err:
        load_sequences(path)
    assert err.value.line == 2 and str(path) in str(err.value)


@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_load_sequences_without_examples_raises_like_load_vw(tmp_path, text):
    seq, vw = tmp_path / "s.txt", tmp_path / "s.vw"
    seq.write_text(text)
    vw.write_text(text)
    with pytest.raises(DataFormatError, match="no example") as from_vw:
        load_vw(vw)
    with pytest.raises(DataFormatError, match="no example") as from_seq:
        load_sequences(seq)
    assert str(from_seq.value).replace(str(seq), "F") == str(from_vw.value).replace(str(vw), "F")


def test_load_sequences_comment_only_file_raises(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("# only a comment\n\n# another\n")
    with pytest.raises(DataFormatError, match="no example in the file$"):
        load_sequences(path)


@pytest.mark.parametrize(
    "line",
    ["1_0 1:2", "1 1:2_0", "1 1_0:2", "1 1:1_00000000000000000000000", "1_00000000000000000000000 1:1", "1 1:1e1_0"],
)
def test_svmlight_parser_rejects_underscores(tmp_path, line):
    path = tmp_path / "u.svm"
    path.write_text(f"-1 2:1\n{line}\n")
    with pytest.raises(DataFormatError) as err:
        load_svmlight(path)
    assert err.value.line == 2


@pytest.mark.parametrize(
    "line",
    [
        "1_0 |f a:1",
        "1 |f a:1_0",
        "1 2_0 |f a:1",
        "1 |f a:1_00000000000000000000000",
        "1_00000000000000000000000 |f a",
        "1 |f a:1e1_0",
        "1 |f:2_0 a",
    ],
)
def test_vw_parser_rejects_underscores(tmp_path, line):
    path = tmp_path / "u.vw"
    path.write_text(f"-1 |f b\n{line}\n")
    with pytest.raises(DataFormatError) as err:
        load_vw(path, hash_bits=4)
    assert err.value.line == 2


def test_streaming_one_class_error_names_the_class():
    X, _ = _problem(40, 3)
    y = np.full(40, 5.0)
    for data in ((X, y), (Stream.from_arrays(X, y),)):
        with pytest.raises(ValueError, match=r"only one class \[5.0\]"):
            SparseLogisticRegression(solver="rmmp").fit(*data)


# ----------------------------------------------------------------------------- defect 9


def test_generated_spaces_refuse_more_rows_than_int32_row_numbers_hold():
    from l1scale.data import DNAPatterns
    from l1scale.data.feature_spaces import MAX_ROWS, Prepared, check_row_count

    assert MAX_ROWS == 2**31 - 1
    assert check_row_count(MAX_ROWS) == MAX_ROWS
    space = DNAPatterns(d=2).fit(np.zeros((3, 4), dtype=np.uint8))
    with pytest.raises(ValueError, match="at most 2\\*\\*31 - 1"):
        Prepared(space, 2**31, ())  # the one door to the block kernels: no array of that size is made
    with pytest.raises(ValueError, match=str(2**40)):
        check_row_count(2**40)


def test_fcl_slot_map_widens_to_int64_past_int32_candidates():
    from l1scale.solvers._fcl_cache import FeatureCache, slot_dtype

    assert slot_dtype(2**31 - 1) == np.int32
    assert slot_dtype(2**31) == np.int64  # an int32 slot number would wrap
    assert FeatureCache(10, 1200).slot_of.dtype == np.int32


def test_generated_space_block_rows_are_the_example_numbers():
    # The int32 rows of a block, read back, are the rows of the materialised transform.
    from l1scale.data import DNAPatterns, make_splice_sites

    codes, _ = make_splice_sites(50, L=8, d_motif=2, random_state=0)
    space = DNAPatterns(d=2).fit(codes)
    full = space.transform(codes).tocsc()
    j0, indptr, rows, vals = space.column_block(codes, 0)
    block = sp.csc_matrix((vals, rows, indptr), shape=(50, indptr.shape[0] - 1))
    np.testing.assert_array_equal(block.toarray(), full[:, j0 : j0 + block.shape[1]].toarray())


# ----------------------------------------------------------------------------- defect 4


def _zero_based_files(tmp_path):
    """The reproducer: zero-based training data (index 0 used) and a zero-based test file that
    never uses index 0 (detected alone, it would read as one-based: every column shifted)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 20)) * (rng.random((500, 20)) < 0.5)
    y = np.where(X[:, 1] - X[:, 2] + X[:, 5] > 0, 1.0, -1.0)
    X[0, 0] = 1.0
    Xt = X.copy()
    Xt[:, 0] = 0.0
    train, test = tmp_path / "train0.svm", tmp_path / "test0.svm"
    dump_svmlight(X, y, train, zero_based=True)
    dump_svmlight(Xt, y, test, zero_based=True)
    return train, test, sp.csr_matrix(Xt), y


def _model_data(model):
    from l1scale.model_io import load_model

    return load_model(model)[2].get("data")


@pytest.mark.parametrize("solver", ["cd", "rmmp"])
def test_model_records_the_index_base_and_predict_reads_test_files_with_it(tmp_path, solver):
    train, test, Xt, y = _zero_based_files(tmp_path)
    model = tmp_path / "m.bin"
    ok("train", train, "--solver", solver, "--lam-ratio", "0.01", "-q", "-o", model)
    assert _model_data(model) == {"format": "svmlight", "zero_based": True}
    est = load(model)
    expected = est.predict(Xt)
    shifted = est.predict(load_svmlight(test, n_features=20)[0])  # what detection alone gives
    assert (expected != shifted).sum() > 50  # the defect: many predictions change
    result = ok("predict", model, test)
    assert "Warning" not in result.stderr
    np.testing.assert_array_equal(np.array(result.stdout.split(), dtype=float), expected)
    report = json.loads(ok("evaluate", model, test, "--json").stdout)
    assert report["accuracy"] == pytest.approx(np.mean(expected == y))
    # read from standard input: the model's base too
    piped = CliRunner().invoke(main, ["predict", str(model), "-"], input=test.read_bytes())
    np.testing.assert_array_equal(np.array(piped.stdout.split(), dtype=float), expected)


def test_an_explicit_base_that_contradicts_the_model_is_obeyed_with_a_warning(tmp_path):
    train, test, _, _ = _zero_based_files(tmp_path)
    model = tmp_path / "m.bin"
    ok("train", train, "--lam-ratio", "0.01", "-q", "-o", model)
    result = ok("predict", model, test, "--one-based")
    assert "Warning" in result.stderr and "zero-based" in result.stderr and str(model) in result.stderr
    shifted = load(model).predict(load_svmlight(test, n_features=20, zero_based=False)[0])
    np.testing.assert_array_equal(np.array(result.stdout.split(), dtype=float), shifted)
    report = json.loads(ok("evaluate", model, test, "--one-based", "--json").stdout)
    assert any("zero-based" in w for w in report["warnings"])
    assert "Warning" not in ok("predict", model, test, "--zero-based").stderr


def test_a_model_without_the_recorded_base_keeps_detecting_it(tmp_path):
    train, test, _, _ = _zero_based_files(tmp_path)
    X, y = load_svmlight(train)
    old = tmp_path / "old.bin"
    SparseLogisticRegression(lam_ratio=0.01).fit(X, y).save(old)  # no "data" in its metadata
    assert _model_data(old) is None
    detected = load(old).predict(load_svmlight(test, n_features=20)[0])
    result = ok("predict", old, test)
    np.testing.assert_array_equal(np.array(result.stdout.split(), dtype=float), detected)


def test_train_reads_its_test_file_with_the_training_base(tmp_path):
    train, test, Xt, y = _zero_based_files(tmp_path)
    for solver in ("cd", "rmmp"):
        model = tmp_path / f"{solver}.bin"
        summary = json.loads(
            ok(
                "train", train, "--test", test, "--solver", solver, "--lam-ratio", "0.01", "-q", "--json", "-o", model
            ).stdout
        )
        assert summary["test"]["accuracy"] == pytest.approx(np.mean(load(model).predict(Xt) == y))


def test_vw_and_cache_models_record_no_base(tmp_path):
    train, _, _, _ = _zero_based_files(tmp_path)
    cache = tmp_path / "c"
    ok("convert", train, cache)
    ok("train", cache, "-q", "-o", tmp_path / "c.bin")
    assert _model_data(tmp_path / "c.bin") is None


# ----------------------------------------------------------------------------- defect 5


def test_predict_and_evaluate_read_a_cache_directory(tmp_path):
    X, y = _problem(400, 12)
    path, cache, model = tmp_path / "d.svm", tmp_path / "cache", tmp_path / "m.bin"
    dump_svmlight(X, y, path)
    ok("convert", path, cache)
    ok("train", path, "-q", "--lam-ratio", "0.05", "-o", model)
    from_file = ok("predict", model, path).stdout
    assert ok("predict", model, cache).stdout == from_file
    assert ok("predict", model, cache, "--proba").stdout == ok("predict", model, path, "--proba").stdout
    out = tmp_path / "p.txt"
    ok("predict", model, cache, "-o", out)
    assert out.read_text() == from_file
    a = json.loads(ok("evaluate", model, cache, "--json").stdout)
    b = json.loads(ok("evaluate", model, path, "--json").stdout)
    assert {k: v for k, v in a.items() if k != "data"} == {k: v for k, v in b.items() if k != "data"}
    result = run("predict", model, cache, "--format", "svmlight")  # a directory is no svmlight file
    assert result.exit_code == 2 and "cache directory" in result.stderr


def test_predict_widens_a_narrower_cache_and_rejects_a_wider_one(tmp_path):
    X, y = _problem(300, 12)
    model = tmp_path / "m.bin"
    dump_svmlight(X, y, tmp_path / "d.svm")
    ok("train", tmp_path / "d.svm", "-q", "-o", model)
    est = load(model)
    dump_svmlight(X[:, :8], y, tmp_path / "narrow.svm")
    ok("convert", tmp_path / "narrow.svm", tmp_path / "narrow")
    labels = ok("predict", model, tmp_path / "narrow").stdout.split()
    Xn = X.copy()
    Xn[:, 8:] = 0
    np.testing.assert_array_equal(np.array(labels, dtype=float), est.predict(Xn))
    dump_svmlight(np.hstack([X, X[:, :3]]), y, tmp_path / "wide.svm")
    ok("convert", tmp_path / "wide.svm", tmp_path / "wide")
    result = run("evaluate", model, tmp_path / "wide")
    assert result.exit_code == 1 and "15 features" in result.stderr and "12" in result.stderr


def test_predict_streams_chunk_by_chunk(tmp_path):
    # Bounded memory: iter_data yields chunks of about chunk_bytes of text, widened to the
    # model's width, that together are the whole file.
    from l1scale.cli._data import iter_data

    X, y = _problem(2000, 12)
    path = tmp_path / "d.svm"
    dump_svmlight(X, y, path)
    chunks = list(iter_data(path, n_features=15, width_of="15", chunk_bytes=4096))
    assert len(chunks) > 10
    assert all(c[0].shape[1] == 15 and c[0].shape[0] < 200 for c in chunks)
    whole = sp.vstack([c[0] for c in chunks]).toarray()
    np.testing.assert_array_equal(whole[:, :12], X)
    np.testing.assert_array_equal(np.concatenate([c[1] for c in chunks]), y)
