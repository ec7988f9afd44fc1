"""``l1scale train -`` and ``l1scale predict -`` / ``evaluate -``: data from a pipe.

Run as a user runs them: a subprocess whose standard input is the data (plain or gzip
bytes, as ``cat`` or ``zcat`` would give), compared with the same command on the file.
"""

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale import load
from l1scale.data import dump_svmlight, dump_vw


def l1scale(*args, stdin=None, env=None, check=True):
    """Run the command in a subprocess, ``stdin`` (bytes) on its standard input."""
    result = subprocess.run(
        [sys.executable, "-m", "l1scale.cli", *map(str, args)],
        input=stdin,
        check=False,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )
    if check:
        assert result.returncode == 0, result.stderr.decode()
    return result


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipes")
    rng = np.random.default_rng(0)
    n, d = 600, 30
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.3)
    y = np.where(X[:, 0] - X[:, 1] + 0.5 * X[:, 2] + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    X[:, d - 1] = 0.0
    X[5, d - 1] = 1.0  # the width is known only at row 5
    paths = {"svm": tmp / "d.svm", "vw": tmp / "d.vw", "zero": tmp / "d0.svm", "dir": tmp}
    dump_svmlight(sp.csr_matrix(X), y, paths["svm"])
    dump_vw(sp.csr_matrix(X), y, paths["vw"])
    dump_svmlight(sp.csr_matrix(X), y, paths["zero"], zero_based=True)
    return paths


def _same_model(a, b):
    ea, eb = load(a), load(b)
    np.testing.assert_array_equal(ea.coef_, eb.coef_)
    np.testing.assert_array_equal(ea.intercept_, eb.intercept_)
    assert ea.n_features_in_ == eb.n_features_in_


@pytest.mark.parametrize("solver", ["truncated_gradient", "sgd_cumulative", "online", "rmmp", "cd"])
def test_train_from_stdin_equals_train_from_the_file(data, tmp_path, solver):
    text = data["svm"].read_bytes()
    common = ["--solver", solver, "-q", "--lam-ratio", "0.05"]
    if solver == "rmmp":
        common += ["--passes", "5"]
    l1scale("train", data["svm"], *common, "-o", tmp_path / "file.bin")
    spool = tmp_path / "tmp"
    spool.mkdir()
    l1scale("train", "-", *common, "-o", tmp_path / "pipe.bin", stdin=text, env={"TMPDIR": str(spool)})
    _same_model(tmp_path / "file.bin", tmp_path / "pipe.bin")
    assert list(spool.iterdir()) == []  # the temporary chunk cache is gone


@pytest.mark.parametrize(
    ("fmt", "solver"), [("svm", "truncated_gradient"), ("svm", "online"), ("vw", "truncated_gradient")]
)
def test_one_pass_fits_learn_from_stdin_as_it_is_read(data, tmp_path, fmt, solver):
    # One pass at a given lam, of known width: no label pass, no spool, the model of the file.
    common = ["--solver", solver, "--lam", "0.01", "-q", "--json"]
    common += ["--n-features", "30"] if fmt == "svm" else ["--hash-bits", "12"]
    source = data[fmt]
    file = l1scale("train", source, *common, *(["--one-based"] if fmt == "svm" else []), "-o", tmp_path / "file.bin")
    pipe = l1scale(
        "train",
        "-",
        *common,
        *(["--format", "vw"] if fmt == "vw" else []),
        "-o",
        tmp_path / "pipe.bin",
        stdin=source.read_bytes(),
    )
    _same_model(tmp_path / "file.bin", tmp_path / "pipe.bin")
    counted, scanned = json.loads(pipe.stdout)["data"], json.loads(file.stdout)["data"]
    assert counted["n_samples"] == scanned["n_samples"] == 600 and counted["nnz"] == scanned["nnz"] > 0


def test_train_stream_reads_a_one_pass_pipe_once(data, monkeypatch, tmp_path):
    import io

    from l1scale.cli import _stream

    monkeypatch.setattr(_stream, "stdin_bytes", lambda: io.BytesIO(data["svm"].read_bytes()))
    stream, classes = _stream.train_stream("-", n_features=30, one_pass=True, cache=str(tmp_path / "spool"))
    np.testing.assert_array_equal(classes, [-1.0, 1.0])
    assert sum(chunk.X.shape[0] for chunk in stream) == 600
    with pytest.raises(RuntimeError, match="read only once"):
        list(stream)
    assert not (tmp_path / "spool").exists()  # nothing spooled
    # Without a width (or a pass-free fit) the pipe is spooled into the cache and read from it.
    monkeypatch.setattr(_stream, "stdin_bytes", lambda: io.BytesIO(data["svm"].read_bytes()))
    stream, classes = _stream.train_stream("-", one_pass=True, cache=str(tmp_path / "spool"))
    assert classes is None and (tmp_path / "spool" / "meta.json").exists()
    assert sum(chunk.X.shape[0] for chunk in stream) == sum(chunk.X.shape[0] for chunk in stream) == 600


def test_a_third_label_after_the_first_rows_of_a_one_pass_pipe_is_an_error(tmp_path):
    # The classes are the first chunk's (16 MB of text) two labels; a later third one stops the fit.
    text = "1 1:1 2:0.5\n-1 2:1 3:0.25\n" * 700_000 + "2 1:1\n"
    result = l1scale(
        "train",
        "-",
        "--solver",
        "truncated_gradient",
        "--lam",
        "0.001",
        "--n-features",
        "3",
        "-q",
        stdin=text.encode(),
        check=False,
    )
    assert result.returncode == 1
    message = result.stderr.decode()
    assert "row 1400000 has label 2.0, not among the declared classes [-1.0, 1.0]" in message
    assert "--cache DIR" in message


def test_train_from_a_compressed_pipe(data, tmp_path):
    # zcat big.gz | l1scale train - ...: plain text; cat big.gz | ...: gzip bytes, detected too.
    l1scale("train", data["svm"], "--solver", "truncated_gradient", "-q", "-o", tmp_path / "file.bin")
    l1scale(
        "train",
        "-",
        "--solver",
        "truncated_gradient",
        "-q",
        "-o",
        tmp_path / "gz.bin",
        stdin=gzip.compress(data["svm"].read_bytes()),
    )
    _same_model(tmp_path / "file.bin", tmp_path / "gz.bin")


def test_train_from_stdin_keeps_a_cache_it_is_given(data, tmp_path):
    cache = tmp_path / "cache"
    l1scale(
        "train",
        "-",
        "--solver",
        "rmmp",
        "--passes",
        "3",
        "--cache",
        cache,
        "-q",
        "-o",
        tmp_path / "m.bin",
        stdin=data["svm"].read_bytes(),
    )
    info = json.loads(l1scale("info", cache, "--json").stdout)
    assert (info["n_samples"], info["n_features"]) == (600, 30)
    l1scale("train", cache, "--solver", "rmmp", "--passes", "3", "-q", "-o", tmp_path / "c.bin")
    _same_model(tmp_path / "m.bin", tmp_path / "c.bin")


def test_train_vw_from_stdin(data, tmp_path):
    args = ["--solver", "sgd_cumulative", "--hash-bits", "12", "-q"]
    l1scale("train", data["vw"], *args, "-o", tmp_path / "file.bin")
    l1scale("train", "-", "--format", "vw", *args, "-o", tmp_path / "pipe.bin", stdin=data["vw"].read_bytes())
    _same_model(tmp_path / "file.bin", tmp_path / "pipe.bin")


def test_stdin_is_one_based_unless_zero_based_is_given(data, tmp_path):
    text = data["zero"].read_bytes()
    result = l1scale("train", "-", "--solver", "truncated_gradient", "-q", stdin=text, check=False)
    assert result.returncode == 1
    assert b"index 0" in result.stderr and b"--zero-based" in result.stderr
    l1scale("train", "-", "--zero-based", "--solver", "truncated_gradient", "-q", "-o", tmp_path / "z.bin", stdin=text)
    l1scale("train", data["zero"], "--solver", "truncated_gradient", "-q", "-o", tmp_path / "f.bin")
    _same_model(tmp_path / "z.bin", tmp_path / "f.bin")
    from l1scale.model_io import load_model

    assert load_model(tmp_path / "z.bin")[2]["data"] == {"format": "svmlight", "zero_based": True}


def test_empty_stdin_is_an_error(tmp_path):
    for solver in ("truncated_gradient", "cd"):
        result = l1scale("train", "-", "--solver", solver, "-q", stdin=b"", check=False)
        assert result.returncode == 1 and b"no examples" in result.stderr, result.stderr


def test_stdin_is_not_read_with_dask_or_features():
    result = l1scale("train", "-", "--features", "products:2", stdin=b"1 1:1\n", check=False)
    assert result.returncode == 2 and b"standard input" in result.stderr


def test_predict_and_evaluate_from_stdin(data, tmp_path):
    model = tmp_path / "m.bin"
    l1scale("train", data["svm"], "-q", "--lam-ratio", "0.05", "-o", model)
    text = data["svm"].read_bytes()
    for extra in ([], ["--proba"]):
        assert (
            l1scale("predict", model, "-", *extra, stdin=text).stdout
            == l1scale("predict", model, data["svm"], *extra).stdout
        )
    out = tmp_path / "p.txt"
    l1scale("predict", model, "-", "-o", out, stdin=gzip.compress(text))
    assert out.read_bytes() == l1scale("predict", model, data["svm"]).stdout
    a = json.loads(l1scale("evaluate", model, "-", "--json", stdin=text).stdout)
    b = json.loads(l1scale("evaluate", model, data["svm"], "--json").stdout)
    assert a.pop("data") == "-"
    b.pop("data")
    assert a == b


def test_predict_vw_from_stdin(data, tmp_path):
    model = tmp_path / "m.bin"
    l1scale("train", data["vw"], "-q", "--hash-bits", "12", "-o", model)
    expected = l1scale("predict", model, data["vw"]).stdout
    assert l1scale("predict", model, "-", "--format", "vw", stdin=data["vw"].read_bytes()).stdout == expected
    # the model records that it was trained on VW text: stdin is then read as VW without --format
    assert l1scale("predict", model, "-", stdin=data["vw"].read_bytes()).stdout == expected


def test_predict_from_stdin_wider_than_the_model_names_the_line(data, tmp_path):
    model = tmp_path / "m.bin"
    l1scale("train", data["svm"], "-q", "-o", model)
    result = l1scale("predict", model, "-", stdin=b"1 1:1\n-1 31:2\n", check=False)
    assert result.returncode == 1 and b"<stdin>:2" in result.stderr and b"31" in result.stderr, result.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")
def test_a_stdin_pipe_is_widened_to_a_mebibyte():
    import fcntl

    from l1scale.cli._data import _widen_pipe

    read_end, write_end = os.pipe()
    try:
        with open(read_end, "rb", closefd=False) as f:
            before = fcntl.fcntl(read_end, fcntl.F_GETPIPE_SZ)
            _widen_pipe(f)
            assert fcntl.fcntl(read_end, fcntl.F_GETPIPE_SZ) == 1 << 20 > before
    finally:
        os.close(read_end)
        os.close(write_end)
    with open(os.devnull, "rb") as f:  # not a pipe: left alone, no error
        _widen_pipe(f)
