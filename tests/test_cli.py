"""The ``l1scale`` command line: round trips, numbers, golden master, and every bad input.

The golden master ``tests/golden/train_summary.json`` is the ``--json`` summary of
``l1scale train`` on ``tests/golden/train_small.svm`` with volatile fields removed
(timings, versions, paths) and floats rounded.  It changes only on purpose:

    L1SCALE_REGEN_GOLDEN=1 pytest tests/test_cli.py -k golden

rewrites it (and the two small data files, if they are missing).
"""

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from _cli_runner import ok, run, stderr_lines

from l1scale import load
from l1scale.data import dump_svmlight, dump_vw, load_svmlight, load_vw
from l1scale.metrics import classification_report

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_TRAIN, GOLDEN_TEST = GOLDEN / "train_small.svm", GOLDEN / "test_small.svm"
GOLDEN_SUMMARY = GOLDEN / "train_summary.json"
GOLDEN_ARGS = ["--lam-ratio", "0.05", "--tol", "1e-8", "--seed", "0", "--quiet", "--json"]
REGEN = os.environ.get("L1SCALE_REGEN_GOLDEN") == "1"
VOLATILE = {"seconds", "versions", "path", "model"}
CERTIFICATES = {"certificate", "relative_certificate"}


def _sparse_problem(n, d, seed, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.4)
    w = np.zeros(d)
    w[: min(5, d)] = [2.0, -1.5, 1.0, -1.0, 0.5][: min(5, d)]
    z = X @ w + 0.3 * rng.standard_normal(n)
    if n_classes == 2:
        y = np.where(z > 0, 1.0, -1.0)
    else:
        y = np.digitize(z, np.quantile(z, np.linspace(0, 1, n_classes + 1)[1:-1])).astype(float)
    return sp.csr_matrix(X), y


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    X, y = _sparse_problem(300, 20, 0)
    paths = {"dir": root, "X": X, "y": y}
    for name, rows, cols in (
        ("train", slice(0, 240), slice(None)),
        ("test", slice(240, 300), slice(None)),
        ("narrow", slice(240, 300), slice(0, 15)),
    ):
        paths[name] = root / f"{name}.svm"
        Xs = X[rows][:, cols]
        if name == "narrow":  # make sure its largest index is 15, not less
            Xs = Xs.tolil()
            Xs[0, 14] = 1.0
            Xs = Xs.tocsr()
        dump_svmlight(Xs, y[rows], paths[name])
    Xw, yw = _sparse_problem(50, 25, 1)
    paths["wide"] = root / "wide.svm"
    dump_svmlight(Xw, yw, paths["wide"])
    Xm, ym = _sparse_problem(300, 20, 2, n_classes=3)
    paths["multi"] = root / "multi.svm"
    dump_svmlight(Xm, ym, paths["multi"])
    paths["bad"] = root / "bad.svm"
    paths["bad"].write_text("1 1:0.5 3:1\n-1 2:0.25\n1 4:abc\n")
    paths["model"] = root / "model.bin"
    summary = json.loads(
        ok("train", paths["train"], "--test", paths["test"], "-o", paths["model"], "--quiet", "--json").stdout
    )
    paths["summary"] = summary
    return paths


# ---------------------------------------------------------------------- round trip


def test_train_summary_is_complete_and_saves_the_model(files):
    s = files["summary"]
    assert files["model"].exists()
    assert s["data"] == {
        "path": str(files["train"]),
        "n_samples": 240,
        "n_features": 20,
        "nnz": int(files["X"][:240].nnz),
    }
    assert s["estimator"] == "SparseLogisticRegression" and s["params"]["loss"] == "logistic"
    assert s["classes"] == [-1, 1]
    assert s["certificate_name"] == "duality_gap" and s["converged"] is True
    assert s["relative_certificate"] <= s["params"]["tol"]
    assert s["certificate"] >= 0 and s["objective"] > 0 and s["n_iter"] >= 1
    est = load(files["model"])
    assert s["nnz"] == np.count_nonzero(est.coef_)
    assert s["lam"] == pytest.approx(est.lam_[0])
    assert set(s["seconds"]) == {"load", "fit", "solve", "compile"}
    assert 0.5 < s["train"]["accuracy"] <= 1 and s["test"]["n_samples"] == 60
    assert s["warnings"] == [] and s["model"] == str(files["model"])


def test_predict_and_evaluate_agree_with_the_library(files, tmp_path):
    est = load(files["model"])
    X, y = load_svmlight(files["test"], n_features=20)
    labels = ok("predict", files["model"], files["test"]).stdout.split()
    np.testing.assert_array_equal(np.array(labels, dtype=float), est.predict(X))

    out = tmp_path / "proba.txt"
    result = ok("predict", files["model"], files["test"], "--proba", "-o", out)
    assert result.stdout == ""
    np.testing.assert_array_equal(np.loadtxt(out), est.predict_proba(X)[:, 1])  # repr: exact
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]

    report = json.loads(ok("evaluate", files["model"], files["test"], "--json").stdout)
    expected = classification_report(y, est.predict(X), est.decision_function(X))
    for key in ("accuracy", "auc", "auprc", "precision", "recall", "f1", "n_samples"):
        assert report[key] == pytest.approx(expected[key]), key
    assert report["confusion"] == expected["confusion"]
    # the train summary's test metrics are the same numbers
    assert files["summary"]["test"]["accuracy"] == pytest.approx(report["accuracy"])
    assert files["summary"]["test"]["auc"] == pytest.approx(report["auc"])
    text = ok("evaluate", files["model"], files["test"]).stdout
    assert "accuracy" in text and "confusion" in text


def test_predict_widens_a_narrower_file(files):
    est = load(files["model"])
    X, _ = load_svmlight(files["narrow"])
    assert X.shape[1] == 15
    X.resize((X.shape[0], 20))
    labels = ok("predict", files["model"], files["narrow"]).stdout.split()
    np.testing.assert_array_equal(np.array(labels, dtype=float), est.predict(X))


def test_progress_goes_to_stderr_and_quiet_silences_it(files):
    loud = ok("train", files["train"], "--tol", "1e-4")
    lines = stderr_lines(loud)
    assert lines[0].split() == ["iter", "objective", "certificate", "nnz", "seconds"]
    assert len(lines) >= 2 and lines[1].split()[0] == "0"
    assert "objective" in loud.stdout and "iter " not in loud.stdout
    assert "duality_gap" in loud.stdout and "train accuracy" in loud.stdout
    quiet = ok("train", files["train"], "--tol", "1e-4", "--quiet")
    assert quiet.stderr == "" and "duality_gap" in quiet.stdout


def test_flags_map_onto_estimator_parameters(files, tmp_path):
    model = tmp_path / "m.bin"
    s = json.loads(
        ok(
            "train",
            files["train"],
            "--loss",
            "probit",
            "--lam",
            "0.01",
            "--l1-ratio",
            "0.5",
            "--no-intercept",
            "--tol",
            "1e-5",
            "--max-iter",
            "50",
            "--class-weight",
            "balanced",
            "--seed",
            "3",
            "-o",
            model,
            "-q",
            "--json",
        ).stdout
    )
    assert s["params"] == {
        "loss": "probit",
        "lam": 0.01,
        "lam_ratio": None,
        "l1_ratio": 0.5,
        "fit_intercept": False,
        "solver": "auto",
        "tol": 1e-5,
        "max_iter": 50,
        "class_weight": "balanced",
        "random_state": 3,
        "max_active": None,
        "checkpoint": None,
        "two_stage": None,
        "features": None,
        "cache_bytes": None,
        "multi_class": "auto",
        "standardize": False,
    }
    assert s["certificate_name"] == "kkt" and s["lam"] == 0.01 and s["solver"] == "cd"
    est = load(model)
    assert est.get_params()["l1_ratio"] == 0.5 and est.intercept_[0] == 0.0
    # the streaming flags: --max-active -> max_active, --checkpoint -> checkpoint; with
    # --solver auto they pick RMMP (they apply to no other solver)
    ck = tmp_path / "ck.npz"
    s = json.loads(
        ok("train", files["train"], "--max-active", "7", "--checkpoint", ck, "--max-iter", "5", "-q", "--json").stdout
    )
    assert s["params"]["max_active"] == 7 and s["params"]["checkpoint"] == str(ck)
    assert s["params"]["solver"] == "auto" and s["solver"] == "rmmp" and ck.exists()
    s = json.loads(ok("train", files["train"], "--solver", "mp", "-q", "--json").stdout)
    assert s["params"]["solver"] == "mp" and s["solver"] == "mp" and s["params"]["max_active"] is None


def test_non_convergence_is_a_warning_not_an_error(files):
    result = ok("train", files["train"], "--max-iter", "1", "--tol", "1e-12", "--json")
    s = json.loads(result.stdout)
    assert s["converged"] is False and s["stop_reason"] == "max_iter"
    assert any("max_iter" in w for w in s["warnings"])
    assert "Warning: " in result.stderr


def test_regression_train_predict_evaluate(files, tmp_path):
    model = tmp_path / "reg.bin"
    s = json.loads(
        ok("train", files["multi"], "--loss", "squared", "--lam-ratio", "0.05", "-o", model, "-q", "--json").stdout
    )
    assert s["estimator"] == "SparseLinearRegression" and s["classes"] is None
    assert 0 < s["train"]["r2"] <= 1 and s["relative_certificate"] <= 1e-6
    est = load(model)
    X, y = load_svmlight(files["multi"])
    values = np.array(ok("predict", model, files["multi"]).stdout.split(), dtype=float)
    np.testing.assert_array_equal(values, est.predict(X))
    report = json.loads(ok("evaluate", model, files["multi"], "--json").stdout)
    assert report["r2"] == pytest.approx(s["train"]["r2"])
    assert report["mse"] == pytest.approx(np.mean((y - est.predict(X)) ** 2))


def test_multiclass_one_vs_rest(files, tmp_path):
    model = tmp_path / "multi.bin"
    # --solver cd fits binary problems: one-vs-rest (the default, "auto", fits the multinomial model)
    s = json.loads(ok("train", files["multi"], "--solver", "cd", "-o", model, "-q", "--json").stdout)
    assert s["classes"] == [0, 1, 2] and len(s["problems"]) == 3 and len(s["lam"]) == 3
    assert [p["class"] for p in s["problems"]] == [0, 1, 2]
    header, *lines = ok("predict", model, files["multi"], "--proba").stdout.splitlines()
    assert header == "# classes: 0 1 2"  # the order of the columns
    P = np.array([line.split() for line in lines], dtype=float)
    assert P.shape == (300, 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    report = json.loads(ok("evaluate", model, files["multi"], "--json").stdout)
    assert report["labels"] == [0, 1, 2] and report["auc"] is None
    assert np.array(report["confusion"]).sum() == 300


def test_train_n_jobs_fits_one_vs_rest_in_threads(files, tmp_path):
    """--n-jobs: the one-vs-rest problems in threads, the same model as one thread; 0 is a usage error."""
    one, two = tmp_path / "one.l1m", tmp_path / "two.l1m"
    ok("train", files["multi"], "--solver", "cd", "-o", one, "-q")
    ok("train", files["multi"], "--solver", "cd", "--n-jobs", "2", "-o", two, "-q")
    assert load(two).n_jobs == 2
    np.testing.assert_array_equal(load(two).coef_, load(one).coef_)
    for args in (("--n-jobs", "0"), ("--n-jobs", "2", "--loss", "squared")):
        usage = run("train", files["multi"], *args)
        assert usage.exit_code == 2 and "--n-jobs" in usage.stderr


# ------------------------------------------------------------------ streaming solvers

STREAM_HEAD = ["pass", "active", "nnz", "objective", "kkt", "seconds"]


@pytest.fixture
def no_loading(files, monkeypatch):
    """The in-memory loader refuses the training files: streamed data must not come through it."""
    import l1scale.cli.train as train_command

    real = train_command.read_data
    refused = {str(files[name]) for name in ("train", "multi", "bad")}

    def read_data(path, **kw):
        if str(path) in refused:
            raise AssertionError(f"{path} was loaded into memory")
        return real(path, **kw)

    monkeypatch.setattr(train_command, "read_data", read_data)
    return refused  # clear it to let a test load on purpose


def _progress_rows(result, head=STREAM_HEAD):
    lines = [line.split() for line in stderr_lines(result) if not line.startswith("Warning: ")]
    assert lines[0] == head, lines[0]
    return lines[1:]


def test_rmmp_streams_the_data_and_matches_cd(files, tmp_path, no_loading):
    m_rmmp, m_cd = tmp_path / "rmmp.bin", tmp_path / "cd.bin"
    result = ok(
        "train",
        files["train"],
        "--solver",
        "rmmp",
        "--max-active",
        "300",
        "--lam",
        "0.01",
        "--tol",
        "1e-8",
        "--test",
        files["test"],
        "-o",
        m_rmmp,
        "--json",
    )
    s = json.loads(result.stdout)
    assert s["solver"] == "rmmp" and s["params"]["max_active"] == 300 and s["converged"] is True
    assert s["certificate_name"] == "kkt" and s["relative_certificate"] <= 1e-8
    # the size of the streamed data, from the stream (nonzeros counted in the label scan)
    assert s["data"] == {
        "path": str(files["train"]),
        "n_samples": 240,
        "n_features": 20,
        "nnz": int(files["X"][:240].nnz),
    }
    assert s["train"] is None and s["test"]["n_samples"] == 60  # train metrics: another pass
    # one progress line per pass: pass number, active-set size, nnz, objective, KKT, seconds
    rows = _progress_rows(result)
    assert [int(r[0]) for r in rows] == list(range(1, s["n_iter"] + 1))
    assert all(len(r) == 6 for r in rows)
    active = [int(r[1]) for r in rows]
    assert active[0] == 0 and 0 < max(active) <= 20  # from w = 0, then grown (k = 300 > d)
    assert float(rows[-1][3]) == pytest.approx(s["objective"]) and int(rows[-1][2]) == s["nnz"]
    assert float(rows[-1][4]) == pytest.approx(s["certificate"], rel=1e-3)

    no_loading.clear()  # cd loads the file: the reference
    s_cd = json.loads(
        ok(
            "train", files["train"], "--solver", "cd", "--lam", "0.01", "--tol", "1e-8", "-o", m_cd, "-q", "--json"
        ).stdout
    )
    a, b = load(m_rmmp), load(m_cd)
    assert s_cd["solver"] == "cd" and a.n_features_in_ == b.n_features_in_ == 20
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
    np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-6)
    assert s["nnz"] == s_cd["nnz"] and s["objective"] == pytest.approx(s_cd["objective"], rel=1e-9)
    text = ok("train", files["train"], "--solver", "rmmp", "--lam", "0.01", "-q").stdout
    assert "240 x 20" in text and "passes" in text and "train accuracy" not in text


def test_streamed_one_vs_rest_shows_the_class(files, no_loading):
    result = ok("train", files["multi"], "--solver", "rmmp", "--json")
    s = json.loads(result.stdout)
    assert s["classes"] == [0, 1, 2] and len(s["problems"]) == 3 and s["data"]["n_samples"] == 300
    rows = _progress_rows(result, ["class"] + STREAM_HEAD)
    assert sorted({r[0] for r in rows}) == ["0", "1", "2"]
    for c, p in zip("012", s["problems"]):
        passes = [int(r[1]) for r in rows if r[0] == c]
        assert passes == list(range(1, p["n_iter"] + 1))


def test_online_and_mp_progress(files, no_loading):
    result = ok("train", files["train"], "--solver", "online", "--lam", "0.01", "--json")
    s = json.loads(result.stdout)
    assert s["solver"] == "online" and s["objective"] is None and s["stop_reason"] == "one_pass"
    rows = _progress_rows(result, ["chunk"] + STREAM_HEAD[1:])
    assert rows and all(len(r) == 3 for r in rows)  # chunk, nnz, seconds: NaN and no active set blank
    assert int(rows[-1][1]) == s["nnz"]
    assert "one pass" in ok("train", files["train"], "--solver", "online", "--lam", "0.01", "-q").stdout
    result = ok("train", files["train"], "--solver", "mp", "--lam", "0.01", "--json")
    rows = _progress_rows(result)
    assert all(int(r[1]) == 20 for r in rows)  # MP's sketch holds every coordinate


def test_checkpoint_resumes(files, tmp_path, no_loading):
    ck = tmp_path / "run.ckpt"
    args = ("train", files["train"], "--solver", "rmmp", "--lam", "0.01", "--tol", "1e-8", "--checkpoint", ck, "--json")
    whole = json.loads(
        ok("train", files["train"], "--solver", "rmmp", "--lam", "0.01", "--tol", "1e-8", "-q", "--json").stdout
    )
    cut = ok(*args, "--max-iter", "3")  # stopped after 3 passes; the state of pass 3 is saved
    assert json.loads(cut.stdout)["converged"] is False and ck.exists()
    resumed = ok(*args, "-o", tmp_path / "a.bin")
    rows = _progress_rows(resumed)
    assert int(rows[0][0]) == 3  # it went on from the checkpoint, not from pass 1
    s = json.loads(resumed.stdout)
    assert s["converged"] is True and s["n_iter"] == whole["n_iter"]
    again = ok(*args, "-o", tmp_path / "b.bin")  # the checkpoint of a finished run: the same model
    assert len(_progress_rows(again)) == 1
    a, b = load(tmp_path / "a.bin"), load(tmp_path / "b.bin")
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-12)
    assert json.loads(again.stdout)["objective"] == pytest.approx(whole["objective"], rel=1e-12)
    # a checkpoint of another problem is an error, not a silent restart
    _error(
        run("train", files["train"], "--solver", "rmmp", "--lam", "0.02", "--checkpoint", ck, "-q"),
        1,
        str(ck),
        "another run",
    )


def test_cache_is_written_and_read(files, tmp_path, no_loading):
    cache = tmp_path / "train.cache"
    first = json.loads(ok("train", files["train"], "--cache", cache, "--lam", "0.01", "-q", "--json").stdout)
    assert first["solver"] == "rmmp" and (cache / "meta.json").exists()  # --cache alone: auto -> rmmp
    meta = json.loads((cache / "meta.json").read_text())
    assert meta["n_samples"] == 240 and meta["nnz"] == first["data"]["nnz"]
    again = json.loads(ok("train", files["train"], "--cache", cache, "--lam", "0.01", "-q", "--json").stdout)
    from_dir = json.loads(ok("train", cache, "--solver", "rmmp", "--lam", "0.01", "-q", "--json").stdout)
    for s in (again, from_dir):
        assert s["objective"] == first["objective"] and s["data"]["nnz"] == first["data"]["nnz"]
    wide = json.loads(
        ok("train", cache, "--solver", "rmmp", "--lam", "0.01", "--n-features", "23", "-q", "--json").stdout
    )
    assert wide["data"]["n_features"] == 23 and wide["objective"] == pytest.approx(first["objective"])


def test_streamed_data_errors(files, tmp_path, no_loading):
    _error(run("train", files["bad"], "--solver", "rmmp", "-q"), 1, f"{files['bad']}:3:")
    # a wider test file fails once the training width is known, before any pass is solved
    _error(run("train", files["train"], "--solver", "rmmp", "--test", files["wide"]), 1, "25", "20", str(files["wide"]))
    _error(
        run("train", files["wide"], "--solver", "rmmp", "-q", "--n-features", "20"),
        1,
        f"{files['wide']}:",
        "exceeds n_features=20",
    )


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--max-active", "5", "--solver", "cd"], ["--max-active", "cd"]),
        (["--max-active", "5", "--solver", "mp"], ["--max-active", "mp"]),
        (["--max-active", "5", "--solver", "online"], ["--max-active"]),
        (["--max-active", "0"], ["--max-active"]),
        (["--checkpoint", "CK", "--solver", "online"], ["--checkpoint", "online"]),
        (["--checkpoint", "MISSING/ck"], ["--checkpoint", "does not exist"]),
        (["--checkpoint", "DIR"], ["--checkpoint", "is a directory"]),
        (["--cache", "CACHE", "--solver", "cd"], ["--cache", "cd"]),
        (["--cache", "FILE"], ["--cache", "is a file"]),
        (["--cache", "MISSING/c"], ["--cache", "does not exist"]),
        (["--solver", "rmmp", "--cache", "TRAIN"], ["--cache"]),
    ],
)
def test_bad_streaming_options_are_usage_errors(files, tmp_path, args, fragments):
    (tmp_path / "file").write_text("x")
    subst = {
        "CK": tmp_path / "ck",
        "MISSING/ck": tmp_path / "missing" / "ck",
        "DIR": tmp_path,
        "CACHE": tmp_path / "c",
        "FILE": tmp_path / "file",
        "MISSING/c": tmp_path / "missing" / "c",
        "TRAIN": files["train"],
    }
    args = [subst.get(a, a) for a in args]
    _error(run("train", files["train"], "-q", *args), 2, *fragments)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # nothing written


# ------------------------------------------- online first-order solvers, Vowpal Wabbit data

ONLINE_HEAD = ["pass", "examples", "progressive", "holdout", "nnz", "examples/s", "seconds"]


@pytest.fixture(scope="module")
def vw(files):
    """The train / test split of ``files`` as Vowpal Wabbit text (features "f j")."""
    paths = {"train": files["dir"] / "train.vw", "test": files["dir"] / "test.vw"}
    dump_vw(files["X"][:240], files["y"][:240], paths["train"])
    dump_vw(files["X"][240:], files["y"][240:], paths["test"])
    return paths


@pytest.fixture
def vw_streamed(vw, monkeypatch):
    """The in-memory loader refuses the VW training file: a streaming solver must stream it."""
    import l1scale.cli.train as train_command

    real = train_command.read_data

    def read_data(path, **kw):
        if str(path) == str(vw["train"]):
            raise AssertionError(f"{path} was loaded into memory")
        return real(path, **kw)

    monkeypatch.setattr(train_command, "read_data", read_data)


def test_truncated_gradient_on_vw_data(files, vw, tmp_path, vw_streamed):
    model = tmp_path / "tg.bin"
    result = ok(
        "train",
        vw["train"],
        "--solver",
        "truncated_gradient",
        "--passes",
        3,
        "--hash-bits",
        12,
        "--lam",
        "0.01",
        "--test",
        vw["test"],
        "-o",
        model,
        "--json",
    )
    s = json.loads(result.stdout)
    assert s["solver"] == "truncated_gradient" and s["params"]["solver"] == "truncated_gradient"
    assert s["params"]["max_iter"] == 3 and s["n_iter"] == 3 and s["stop_reason"] == "max_iter"
    assert s["data"] == {
        "path": str(vw["train"]),
        "n_samples": 240,
        "n_features": 4096,
        "nnz": int(files["X"][:240].nnz),
        "format": "vw",
        "hash_bits": 12,
    }
    assert s["objective"] is None and s["certificate"] is None  # not computed by online solvers
    assert s["online"]["passes"] == 3 and s["online"]["holdout"] == 10  # VW's holdout with several passes
    assert s["online"]["examples"] == 720
    assert s["online"]["learning_rate"] > 0 and s["online"]["learning_rate"] != 0.5  # calibrated, not VW's fixed 0.5
    # one progress row per pass: examples seen, progressive and holdout loss, nnz, examples/s, seconds
    rows = _progress_rows(result, ONLINE_HEAD)
    assert [int(r[0]) for r in rows] == [1, 2, 3] and all(len(r) == 7 for r in rows)
    assert [int(r[1]) for r in rows] == [240, 480, 720]
    assert float(rows[-1][2]) == pytest.approx(s["online"]["progressive_loss"], abs=1e-6)
    assert float(rows[-1][3]) == pytest.approx(s["online"]["holdout_loss"], abs=1e-6)
    assert int(rows[-1][4]) == s["nnz"] and all(float(r[5]) > 0 for r in rows)
    text = ok(
        "train", vw["train"], "--solver", "truncated_gradient", "--passes", 3, "--hash-bits", 12, "--lam", "0.01", "-q"
    ).stdout
    for fragment in ("progressive loss", "holdout loss", "max_iter (all 3 passes made)", "passes", "hashed into 2**12"):
        assert fragment in text, fragment
    assert "objective" not in text and "duality_gap" not in text

    # the model has 2**12 features; predict and evaluate hash VW data with its b
    est = load(model)
    assert est.n_features_in_ == 4096
    Xt, yt, _ = load_vw(vw["test"], hash_bits=12)
    labels = ok("predict", model, vw["test"]).stdout.split()
    np.testing.assert_array_equal(np.array(labels, dtype=float), est.predict(Xt))
    report = json.loads(ok("evaluate", model, vw["test"], "--json").stdout)
    assert report["n_samples"] == 60 and report["accuracy"] == pytest.approx(s["test"]["accuracy"])
    assert report["accuracy"] == pytest.approx(np.mean(est.predict(Xt) == yt))
    # --format vw reads any name as VW
    renamed = tmp_path / "test.txt"
    renamed.write_bytes(vw["test"].read_bytes())
    assert ok("predict", model, renamed, "--format", "vw").stdout.split() == labels


@pytest.mark.parametrize("solver", ["sgd_cumulative", "smidas"])
def test_other_online_solvers_run(vw, solver, vw_streamed):
    result = ok("train", vw["train"], "--solver", solver, "--passes", 2, "--hash-bits", 10, "--lam", "0.01", "--json")
    s = json.loads(result.stdout)
    assert s["solver"] == solver and s["n_iter"] == 2 and s["online"]["examples"] == 480
    # The rate calibrated on the data (schedule="auto"), not a fixed default; the same on a rerun.
    rate = s["online"]["learning_rate"]
    assert np.isfinite(rate) and rate > 0 and rate != {"sgd_cumulative": 0.5, "smidas": 0.1}[solver]
    again = ok("train", vw["train"], "--solver", solver, "--passes", 2, "--hash-bits", 10, "--lam", "0.01", "--json")
    assert json.loads(again.stdout)["online"]["learning_rate"] == rate
    rows = _progress_rows(result, ONLINE_HEAD)
    assert [int(r[0]) for r in rows] == [1, 2]


def test_online_flags_reach_the_solver(files, vw, vw_streamed):
    result = ok(
        "train",
        vw["train"],
        "--solver",
        "smidas",
        "--passes",
        2,
        "--holdout",
        0,
        "--learning-rate",
        "0.05",
        "--lam",
        "0.01",
        "--json",
    )
    s = json.loads(result.stdout)
    assert s["online"]["holdout"] == 0 and s["online"]["learning_rate"] == 0.05
    assert s["online"]["holdout_loss"] is None and s["data"]["hash_bits"] == 18  # the default b
    rows = _progress_rows(result, ONLINE_HEAD)
    assert all(len(r) == 6 for r in rows)  # no holdout: its column blank
    text = ok("train", vw["train"], "--solver", "smidas", "--holdout", 0, "--lam", "0.01", "-q").stdout
    assert "none (--holdout 0)" in text and "max_iter (1 pass made)" in text
    assert re.search(r"learning rate \d", text)  # the calibrated rate (no --learning-rate)
    # svmlight data, --max-iter for --passes, one-vs-rest with a class column
    s = json.loads(
        ok(
            "train",
            files["train"],
            "--solver",
            "sgd_cumulative",
            "--max-iter",
            2,
            "--learning-rate",
            "0.2",
            "-q",
            "--json",
        ).stdout
    )
    assert s["n_iter"] == 2 and s["online"]["learning_rate"] == 0.2 and "format" not in s["data"]
    result = ok("train", files["multi"], "--solver", "truncated_gradient", "--passes", 2, "--json")
    s = json.loads(result.stdout)
    rows = _progress_rows(result, ["class"] + ONLINE_HEAD)
    assert [r[0] for r in rows] == ["0", "0", "1", "1", "2", "2"]
    assert len(s["online"]["progressive_loss"]) == 3 and len(s["problems"]) == 3


@pytest.mark.parametrize("solver", ["scd", "detcd"])
def test_scd_and_detcd_run_in_memory(files, solver):
    result = ok("train", files["train"], "--solver", solver, "--max-iter", 30, "--lam-ratio", "0.1", "--json")
    s = json.loads(result.stdout)
    assert s["solver"] == solver and s["certificate_name"] == "duality_gap" and s["n_iter"] >= 1
    assert s["train"]["n_samples"] == 240  # loaded into memory: train metrics
    assert "online" not in s
    rows = _progress_rows(result, ["iter", "objective", "certificate", "nnz", "seconds"])
    assert rows


def test_in_memory_solver_loads_vw_data(vw):
    s = json.loads(ok("train", vw["train"], "--hash-bits", 12, "--test", vw["test"], "-q", "--json").stdout)
    assert s["solver"] == "cd" and s["data"]["n_features"] == 4096 and s["data"]["format"] == "vw"
    assert s["train"]["n_samples"] == 240 and s["test"]["n_samples"] == 60
    info = json.loads(ok("info", vw["train"], "--hash-bits", 12, "--json").stdout)
    assert info["format"] == "vw" and info["hash_bits"] == 12 and info["n_features"] == 4096
    assert info["n_samples"] == 240 and info["nnz"] == s["data"]["nnz"]


def test_solver_choice_lists_every_registered_solver():
    from l1scale.cli._params import SOLVER_NAMES
    from l1scale.solvers import SOLVERS

    assert set(SOLVER_NAMES) == {"auto", *SOLVERS}
    usage = ok("train", "--help").stdout
    assert "[" + "|".join(SOLVER_NAMES) + "]" in usage.replace("\n", "").replace(" ", "")


def test_online_progress_live_table():
    """On a terminal the online rows are a live rich table with the same columns."""
    import io

    from rich.console import Console

    from l1scale.cli._progress import Progress
    from l1scale.solvers import History

    buf = io.StringIO()
    progress = Progress(online=True)
    progress.console = Console(file=buf, force_terminal=True, width=120)
    history = History()
    with progress:
        for k in (1, 2):
            history.append(
                objective=np.nan,
                certificate=np.nan,
                nnz=3 * k,
                time=0.5 * k,
                data_accesses=0,
                examples=100 * k,
                progressive_loss=0.5 / k,
                holdout_loss=0.6 / k,
            )
            progress(k, history)
    text = buf.getvalue()
    for column in ONLINE_HEAD:
        assert column in text, column
    assert "0.250000" in text and "0.300000" in text and "200" in text  # pass 2: 100 examples in 0.5 s


@pytest.mark.parametrize(
    "data, args, fragments",
    [
        ("svm", ["--hash-bits", "12"], ["--hash-bits", "svmlight"]),
        ("vw", ["--hash-bits", "12", "--format", "svmlight"], ["--hash-bits"]),
        ("vw", ["--hash-bits", "0"], ["--hash-bits"]),
        ("vw", ["--hash-bits", "32"], ["--hash-bits"]),
        ("dir", ["--format", "vw"], ["--format", "cache directory"]),
        ("svm", ["--format", "libsvm"], ["--format", "libsvm"]),
        ("vw", ["--zero-based"], ["--zero-based"]),
        ("vw", ["--n-features", "10"], ["--n-features"]),
        ("svm", ["--passes", "3", "--solver", "cd"], ["--passes", "cd"]),
        ("svm", ["--passes", "3", "--solver", "scd"], ["--passes", "scd"]),
        ("vw", ["--passes", "3", "--solver", "online"], ["--passes", "online"]),
        ("vw", ["--passes", "2", "--max-iter", "2"], ["--passes", "--max-iter"]),
        ("vw", ["--passes", "0"], ["--passes"]),
        ("vw", ["--holdout", "5", "--solver", "rmmp"], ["--holdout", "rmmp"]),
        ("svm", ["--holdout", "5"], ["--holdout", "cd"]),
        ("vw", ["--holdout", "-1", "--solver", "smidas"], ["--holdout"]),
        ("vw", ["--learning-rate", "0.1", "--solver", "mp"], ["--learning-rate", "mp"]),
        ("svm", ["--learning-rate", "0.1", "--solver", "detcd"], ["--learning-rate", "detcd"]),
        ("vw", ["--learning-rate", "0", "--solver", "smidas"], ["--learning-rate"]),
        ("vw", ["--solver", "truncated_gradient", "--l1-ratio", "0.5"], ["--l1-ratio", "truncated_gradient"]),
    ],
)
def test_bad_online_and_vw_options_are_usage_errors(files, vw, tmp_path, data, args, fragments):
    path = {"svm": files["train"], "vw": vw["train"], "dir": tmp_path}[data]
    _error(run("train", path, "-q", "-o", tmp_path / "m.bin", *args), 2, *fragments)
    assert not (tmp_path / "m.bin").exists()


def test_vw_data_for_a_model_not_trained_on_it(files, vw):
    # a model of 20 features is not 2**b wide: VW data cannot be hashed for it
    _error(run("predict", files["model"], vw["test"]), 1, str(files["model"]), "2**b")
    _error(run("evaluate", files["model"], vw["test"]), 1, "20 features")
    _error(run("predict", files["model"], files["test"], "--format", "libsvm"), 2, "--format")
    _error(run("info", files["train"], "--hash-bits", "12"), 2, "--hash-bits")


# ------------------------------------------------------------------ info, convert


def test_info_numbers_equal_the_files(files):
    info = json.loads(ok("info", files["train"], "--json").stdout)
    X, y = files["X"][:240], files["y"][:240]
    assert info["n_samples"] == 240 and info["n_features"] == 20 and info["nnz"] == X.nnz
    assert info["density"] == pytest.approx(X.nnz / (240 * 20))
    assert info["file_size"] == files["train"].stat().st_size
    values, counts = np.unique(y, return_counts=True)
    assert info["labels"] == [{"label": int(v), "count": int(c)} for v, c in zip(values, counts)]
    assert info["n_labels"] == 2 and info["format"] == "svmlight"
    assert info["nnz_per_row"]["max"] == np.diff(X.indptr).max()
    assert "features" in ok("info", files["train"]).stdout


def test_convert_both_directions_keeps_the_data(files, tmp_path):
    cache, back = tmp_path / "train.cache", tmp_path / "back.svm.gz"
    ok("convert", files["train"], cache)
    assert (cache / "meta.json").exists()
    ok("convert", cache, back)
    X0, y0 = load_svmlight(files["train"])
    X1, y1 = load_svmlight(back)
    assert (X0 != X1).nnz == 0 and X0.shape == X1.shape
    np.testing.assert_array_equal(y0, y1)
    info_svm = json.loads(ok("info", files["train"], "--json").stdout)
    info_cache = json.loads(ok("info", cache, "--json").stdout)
    for key in ("n_samples", "n_features", "nnz", "labels"):
        assert info_svm[key] == info_cache[key]
    # an explicit --to wins over the name; a cache trains like its svmlight source
    ok("convert", files["train"], tmp_path / "c2.svm", "--to", "cache")
    assert (tmp_path / "c2.svm" / "meta.json").exists()
    a = json.loads(ok("train", cache, "-q", "--json", "--seed", "0").stdout)
    b = json.loads(ok("train", files["train"], "-q", "--json", "--seed", "0").stdout)
    assert a["objective"] == b["objective"] and a["nnz"] == b["nnz"]


# -------------------------------------------------------------------------- demo


def test_demo_quick_json_certifies_every_fit():
    from l1scale.demo import DEMO_SETS

    out = json.loads(ok("demo", "--quick", "--json", "-q").stdout)
    rows = out["rows"]
    assert [r["dataset"] for r in rows] == [name for name, *_ in DEMO_SETS]
    for r in rows:
        assert r["converged"], r
        assert r["relative_certificate"] <= r["tol"], r
        assert r["test_accuracy"] > 0.6 and r["n_train"] + r["n_test"] == r["n_samples"]
    bm = {r["loss"]: r for r in rows[:2]}
    assert bm["probit"]["lam"] == 10 / 10_000 and bm["logistic"]["lam"] == 100 / 10_000
    assert bm["probit"]["n_features"] == 11 and bm["probit"]["n_train"] == 10_000
    assert bm["probit"]["certificate_name"] == "kkt"
    text = rows[2]
    assert (text["n_samples"], text["n_features"]) == (20_000, 10_000)
    assert 30 < text["nnz"] / text["n_samples"] < 50


# ------------------------------------------------------------------ golden master


def _normalise(obj, key=None):
    """The summary without volatile fields; floats rounded so that the last bits
    of platform arithmetic do not matter (certificates to 2 digits, others to 7)."""
    if isinstance(obj, dict):
        return {k: _normalise(v, k) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [_normalise(v, key) for v in obj]
    if isinstance(obj, float):
        return float(f"{obj:.{2 if key in CERTIFICATES else 7}g}")
    return obj


def _write_golden_data():
    X, y = _sparse_problem(200, 12, 7)
    dump_svmlight(X[:160], y[:160], GOLDEN_TRAIN, comment="l1scale golden-master training data")
    dump_svmlight(X[160:], y[160:], GOLDEN_TEST, comment="l1scale golden-master test data")


def regenerate_golden():
    """Rewrite the golden summary (and the data files, when missing)."""
    GOLDEN.mkdir(exist_ok=True)
    if not (GOLDEN_TRAIN.exists() and GOLDEN_TEST.exists()):
        _write_golden_data()
    out = ok("train", GOLDEN_TRAIN, "--test", GOLDEN_TEST, *GOLDEN_ARGS).stdout
    GOLDEN_SUMMARY.write_text(json.dumps(_normalise(json.loads(out)), indent=2, sort_keys=True) + "\n")


def test_golden_train_summary():
    if REGEN:
        regenerate_golden()
    assert GOLDEN_SUMMARY.exists(), "no golden file: run with L1SCALE_REGEN_GOLDEN=1"
    out = ok("train", GOLDEN_TRAIN, "--test", GOLDEN_TEST, *GOLDEN_ARGS).stdout
    assert _normalise(json.loads(out)) == json.loads(GOLDEN_SUMMARY.read_text()), (
        "train --json summary changed; if on purpose, regenerate with L1SCALE_REGEN_GOLDEN=1"
    )


# -------------------------------------------------------------------- bad inputs


def _error(result, code, *fragments):
    assert result.exit_code == code, (result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr and result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.stderr
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    return errors[0]


def test_missing_data_file(files):
    _error(run("train", files["dir"] / "nope.svm"), 2, "nope.svm", "does not exist")
    _error(run("predict", files["dir"] / "nope.bin", files["test"]), 2, "nope.bin")


def test_malformed_line_names_file_and_line(files):
    _error(run("train", files["bad"], "-q"), 1, f"{files['bad']}:3:")
    _error(run("info", files["bad"]), 1, f"{files['bad']}:3:")
    _error(run("predict", files["model"], files["bad"]), 1, f"{files['bad']}:3:")


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--lam", "-1"], ["--lam", "-1"]),
        (["--lam", "nan"], ["--lam"]),
        (["--lam-ratio", "0"], ["--lam-ratio"]),
        (["--lam", "0.1", "--lam-ratio", "0.1"], ["--lam", "--lam-ratio"]),
        (["--loss", "hinge"], ["--loss", "hinge"]),
        (["--l1-ratio", "0"], ["--l1-ratio"]),
        (["--max-iter", "0"], ["--max-iter"]),
        (["--solver", "nope"], ["--solver", "nope"]),
        (["--loss", "squared", "--class-weight", "balanced"], ["--class-weight"]),
        (["--no-such-flag"], ["--no-such-flag"]),
    ],
)
def test_bad_train_options_are_usage_errors(files, args, fragments):
    _error(run("train", files["train"], "-q", *args), 2, *fragments)


def test_unwritable_output_leaves_no_file(files, tmp_path):
    target = tmp_path / "missing-dir" / "m.bin"
    _error(run("train", files["train"], "-q", "-o", target), 2, "-o", "missing-dir")
    _error(run("predict", files["model"], files["test"], "-o", target), 2, "missing-dir")
    _error(run("train", files["train"], "-q", "-o", tmp_path), 2, "is a directory")
    assert list(tmp_path.iterdir()) == []


def test_predict_on_a_wider_file_names_both_widths(files):
    err = _error(run("predict", files["model"], files["wide"]), 1, str(files["wide"]), str(files["model"]))
    assert "25" in err and "20" in err
    _error(run("evaluate", files["model"], files["wide"]), 1, "25", "20")
    _error(run("train", files["train"], "-q", "--test", files["wide"]), 1, "25", "20")
    _error(run("train", files["wide"], "-q", "--n-features", "20"), 1, "25", "--n-features 20")


def test_bad_model_files(files, tmp_path):
    _error(run("predict", files["train"], files["test"]), 1, str(files["train"]), "model")
    reg = tmp_path / "sh.bin"
    ok("train", files["train"], "--loss", "squared_hinge", "-q", "-o", reg)
    _error(run("predict", reg, files["test"], "--proba"), 2, "--proba", "squared_hinge")


def test_one_class_data_is_a_clear_error(tmp_path):
    path = tmp_path / "one.svm"
    path.write_text("1 1:1\n1 2:1\n")
    _error(run("train", path, "-q"), 1, str(path), "one class")


def test_help_and_version():
    assert "train" in ok("--help").stdout and "demo" in ok("--help").stdout
    for command in ("train", "predict", "evaluate", "info", "convert", "demo"):
        assert "Usage: " in ok(command, "--help").stdout
    assert "l1scale" in ok("--version").stdout


def test_two_stage_flag(files):
    s = json.loads(ok("train", files["train"], "--lam-ratio", "0.1", "--two-stage", "0.1", "-q", "--json").stdout)
    assert s["params"]["two_stage"] == 0.1
    r = run("train", files["train"], "--solver", "rmmp", "--two-stage", "0.1")
    assert r.exit_code == 2 and "--two-stage" in r.stderr


def test_path_command_n_jobs(files):
    """--n-jobs: the CV's folds in threads (the same choice, to the bit), or with --cv 0 the path's
    segments (the same path to --tol); 0 is a usage error."""
    args = ("path", files["train"], "--n-lams", "12", "--tol", "1e-8", "--json")
    one = json.loads(ok(*args, "--cv", "3").stdout)
    two = json.loads(ok(*args, "--cv", "3", "--n-jobs", "2").stdout)
    assert two["chosen_lam"] == one["chosen_lam"] and two["path"] == one["path"]
    args = ("path", files["train"], "--n-lams", "20", "--tol", "1e-8", "--json", "--cv", "0")  # cut at lam 16
    one = json.loads(ok(*args).stdout)
    two = json.loads(ok(*args, "--n-jobs", "2").stdout)
    assert [r["nnz"] for r in two["path"]] != [] and len(two["path"]) == 20
    assert [r["objective"] for r in two["path"]] == pytest.approx([r["objective"] for r in one["path"]], rel=1e-7)
    usage = run("path", files["train"], "--n-jobs", "0")
    assert usage.exit_code == 2 and "--n-jobs" in usage.stderr


def test_path_command_runs_the_folds_in_processes(files):
    """--processes: the CV's folds in loky worker processes, the same choice and path as one job
    (the progress counted in this process as the folds' paths arrive); without --n-jobs 2 or more
    it is a usage error."""
    args = ("path", files["train"], "--n-lams", "12", "--tol", "1e-8", "--json", "--cv", "3")
    one = json.loads(ok(*args).stdout)
    out = ok(*args, "--n-jobs", "2", "--processes")
    two = json.loads(out.stdout)
    assert two["chosen_lam"] == one["chosen_lam"] and two["path"] == one["path"]
    for n_jobs in ((), ("--n-jobs", "1")):
        usage = run(*args, *n_jobs, "--processes")
        assert usage.exit_code == 2 and "--processes" in usage.stderr and "--n-jobs 2" in usage.stderr


def test_path_command_table_json_and_plot(files, tmp_path):
    out = ok("path", files["train"], "--n-lams", "6", "--cv", "3", "-q")
    rows = [line for line in out.stdout.splitlines() if line[:1] == " "]
    assert len(rows) == 6 and sum(line.endswith(" *") for line in rows) == 1
    doc = json.loads(ok("path", files["train"], "--n-lams", "6", "--cv", "0", "--json").stdout)
    assert len(doc["path"]) == 6 and doc["chosen_lam"] is None and doc["path"][0]["nnz"] == 0
    pytest.importorskip("matplotlib")
    png = tmp_path / "p.png"
    ok("path", files["train"], "--n-lams", "5", "--cv", "2", "--plot", png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_command_line_starts_without_scikit_learn_or_numba():
    """``l1scale --help`` (and any command before it reads data) imports neither scikit-learn
    (1.5-2 s: l1scale's ConvergenceWarning is scikit-learn's, imported on first use) nor Numba
    and its compiled kernels: the command line starts in a fraction of a second."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from l1scale.cli import main\n"
        "result = CliRunner().invoke(main, ['--help'])\n"
        "assert result.exit_code == 0 and 'Usage' in result.output, result.output\n"
        "print(*(name in sys.modules for name in ('sklearn', 'numba', 'scipy')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]
    from sklearn.exceptions import ConvergenceWarning

    import l1scale.exceptions as exceptions

    assert exceptions.ConvergenceWarning is ConvergenceWarning
    with pytest.raises(AttributeError, match="no attribute"):
        exceptions.NoSuchError  # noqa: B018
