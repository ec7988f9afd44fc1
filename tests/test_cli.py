"""The ``l1scale`` command line: round trips, numbers, golden master, and every bad input.

The golden master ``tests/golden/train_summary.json`` is the ``--json`` summary of
``l1scale train`` on ``tests/golden/train_small.svm`` with volatile fields removed
(timings, versions, paths) and floats rounded.  It changes only on purpose:

    L1SCALE_REGEN_GOLDEN=1 pytest tests/test_cli.py -k golden

rewrites it (and the two small data files, if they are missing).
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from l1scale import load
from l1scale.cli import main
from l1scale.data import dump_svmlight, load_svmlight
from l1scale.metrics import classification_report

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_TRAIN, GOLDEN_TEST = GOLDEN / "train_small.svm", GOLDEN / "test_small.svm"
GOLDEN_SUMMARY = GOLDEN / "train_summary.json"
GOLDEN_ARGS = ["--lam-ratio", "0.05", "--tol", "1e-8", "--seed", "0", "--quiet", "--json"]
REGEN = os.environ.get("L1SCALE_REGEN_GOLDEN") == "1"
VOLATILE = {"seconds", "versions", "path", "model"}
CERTIFICATES = {"certificate", "relative_certificate"}


def run(*args):
    """Invoke the command in-process; stdout and stderr kept apart."""
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback the user would have seen: a bug
    return result


def ok(*args):
    result = run(*args)
    assert result.exit_code == 0, result.stderr
    return result


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
    for name, rows, cols in (("train", slice(0, 240), slice(None)), ("test", slice(240, 300), slice(None)),
                             ("narrow", slice(240, 300), slice(0, 15))):
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
    summary = json.loads(ok("train", paths["train"], "--test", paths["test"], "-o", paths["model"],
                            "--quiet", "--json").stdout)
    paths["summary"] = summary
    return paths


# ---------------------------------------------------------------------- round trip


def test_train_summary_is_complete_and_saves_the_model(files):
    s = files["summary"]
    assert files["model"].exists()
    assert s["data"] == {"path": str(files["train"]), "n_samples": 240, "n_features": 20,
                         "nnz": int(files["X"][:240].nnz)}
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
    lines = loud.stderr.splitlines()
    assert lines[0].split() == ["iter", "objective", "certificate", "nnz", "seconds"]
    assert len(lines) >= 2 and lines[1].split()[0] == "0"
    assert "objective" in loud.stdout and "iter " not in loud.stdout
    assert "duality_gap" in loud.stdout and "train accuracy" in loud.stdout
    quiet = ok("train", files["train"], "--tol", "1e-4", "--quiet")
    assert quiet.stderr == "" and "duality_gap" in quiet.stdout


def test_flags_map_onto_estimator_parameters(files, tmp_path):
    model = tmp_path / "m.bin"
    s = json.loads(ok("train", files["train"], "--loss", "probit", "--lam", "0.01", "--l1-ratio", "0.5",
                      "--no-intercept", "--tol", "1e-5", "--max-iter", "50", "--class-weight", "balanced",
                      "--seed", "3", "-o", model, "-q", "--json").stdout)
    assert s["params"] == {"loss": "probit", "lam": 0.01, "lam_ratio": None, "l1_ratio": 0.5,
                           "fit_intercept": False, "solver": "auto", "tol": 1e-5, "max_iter": 50,
                           "class_weight": "balanced", "random_state": 3}
    assert s["certificate_name"] == "kkt" and s["lam"] == 0.01
    est = load(model)
    assert est.get_params()["l1_ratio"] == 0.5 and est.intercept_[0] == 0.0


def test_non_convergence_is_a_warning_not_an_error(files):
    result = ok("train", files["train"], "--max-iter", "1", "--tol", "1e-12", "--json")
    s = json.loads(result.stdout)
    assert s["converged"] is False and s["stop_reason"] == "max_iter"
    assert any("max_iter" in w for w in s["warnings"])
    assert "Warning: " in result.stderr


def test_regression_train_predict_evaluate(files, tmp_path):
    model = tmp_path / "reg.bin"
    s = json.loads(ok("train", files["multi"], "--loss", "squared", "--lam-ratio", "0.05", "-o", model,
                      "-q", "--json").stdout)
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
    s = json.loads(ok("train", files["multi"], "-o", model, "-q", "--json").stdout)
    assert s["classes"] == [0, 1, 2] and len(s["problems"]) == 3 and len(s["lam"]) == 3
    assert [p["class"] for p in s["problems"]] == [0, 1, 2]
    rows = [line.split() for line in ok("predict", model, files["multi"], "--proba").stdout.splitlines()]
    P = np.array(rows, dtype=float)
    assert P.shape == (300, 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    report = json.loads(ok("evaluate", model, files["multi"], "--json").stdout)
    assert report["labels"] == [0, 1, 2] and report["auc"] is None
    assert np.array(report["confusion"]).sum() == 300


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
        "train --json summary changed; if on purpose, regenerate with L1SCALE_REGEN_GOLDEN=1")


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


@pytest.mark.parametrize("args, fragments", [
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
])
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
