"""Issue 15, problems 1, 5 and 7 (command line): --feature-names, info / inspect / export of a
model file, ONNX export, and the errors that say which format or argument order was expected."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from _cli_runner import ok, run

from l1scale import load
from l1scale.data import dump_svmlight, hash_feature, load_svmlight


def error(result, code, *fragments):
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    line = next(line for line in result.stderr.splitlines() if line.startswith("Error: "))
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 6)) * (rng.random((300, 6)) < 0.7)
    z = 3 * X[:, 0] - 2 * X[:, 3] + 0.2 * rng.standard_normal(300)
    y = np.where(z > 0, 1.0, -1.0)
    dump_svmlight(sp.csr_matrix(X), y, d / "train.svm")  # one-based
    dump_svmlight(sp.csr_matrix(X), y, d / "zero.svm", zero_based=True)
    y3 = np.digitize(z, np.quantile(z, [1 / 3, 2 / 3])).astype(float)
    dump_svmlight(sp.csr_matrix(X), y3, d / "three.svm")
    names = ["price", "volume", "rate", "loss", "gain", "risk"]
    (d / "names.txt").write_text("\n".join(names) + "\n")
    (d / "short.txt").write_text("a\nb\n")
    words = [f"w{k}" for k in range(12)]
    rows = [[words[k] for k in rng.choice(12, 4, replace=False)] for _ in range(200)]
    yv = np.array([1.0 if ("w0" in r or "w1" in r) else -1.0 for r in rows])
    with open(d / "train.vw", "w") as fh:
        fh.writelines(f"{label:g} | {' '.join(row)}\n" for label, row in zip(yv, rows))
    (d / "words.txt").write_text("\n".join(words) + "\n")
    return {"dir": d, "names": names, "words": words}


def test_train_with_feature_names_names_the_weights_everywhere(files, tmp_path):
    d = files["dir"]
    out = ok("train", d / "train.svm", "--feature-names", d / "names.txt", "-q", "--json", "-o", tmp_path / "m.l1m")
    summary = json.loads(out.stdout)
    top = summary["weights"][0]["weights"]
    assert [w["name"] for w in top[:2]] == ["price", "loss"]  # 3 x_0 - 2 x_3
    assert top[0]["weight"] > 0 > top[1]["weight"]
    model = load(tmp_path / "m.l1m")
    assert list(model.feature_names_) == files["names"]
    table = ok("train", d / "train.svm", "--feature-names", d / "names.txt", "-q").stdout
    assert "price" in table and "loss" in table
    # zero-based svmlight: the same names by index (line k names index k - 1)
    zero = json.loads(ok("train", d / "zero.svm", "--feature-names", d / "names.txt", "-q", "--json").stdout)
    assert [w["name"] for w in zero["weights"][0]["weights"][:2]] == ["price", "loss"]


def test_info_recognises_a_model_file_and_inspect_lists_the_weights(files, tmp_path):
    d = files["dir"]
    ok("train", d / "train.svm", "--feature-names", d / "names.txt", "-q", "-o", tmp_path / "m.l1m")
    info = ok("info", tmp_path / "m.l1m")  # today: "label is not a number"
    assert "l1scale model file" in info.stdout and "price" in info.stdout
    doc = json.loads(ok("info", tmp_path / "m.l1m", "--json", "--top", "1").stdout)
    assert doc["kind"] == "model" and doc["nnz"] >= 2 and len(doc["weights"][0]["weights"]) == 1
    assert doc["result"][0]["stop_reason"] == "duality_gap"
    weights = json.loads(ok("inspect", tmp_path / "m.l1m", "--json").stdout)["weights"][0]
    coef = load(tmp_path / "m.l1m").coef_[0]
    assert weights["nnz"] == np.count_nonzero(coef)
    assert {w["name"]: w["weight"] for w in weights["weights"]} == {
        files["names"][j]: coef[j] for j in np.flatnonzero(coef)
    }
    top = ok("inspect", tmp_path / "m.l1m", "--top", "1").stdout
    assert "price" in top and "loss" not in top
    ok("train", d / "three.svm", "--feature-names", d / "names.txt", "-q", "-o", tmp_path / "m3.l1m")
    per_class = json.loads(ok("inspect", tmp_path / "m3.l1m", "--json").stdout)["weights"]
    assert [row["class"] for row in per_class] == [0, 1, 2]


def test_export_text_json_and_onnx(files, tmp_path):
    d = files["dir"]
    ok("train", d / "train.svm", "--feature-names", d / "names.txt", "-q", "-o", tmp_path / "m.l1m")
    text = ok("export", tmp_path / "m.l1m").stdout
    assert text.startswith("estimator: SparseLogisticRegression") and "\nprice\t0\t" in text
    ok("export", tmp_path / "m.l1m", "--format", "json", "-o", tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["classes"] == [-1, 1] and doc["weights"][0]["weights"][0]["name"] == "price"
    error(run("export", tmp_path / "m.l1m", "--format", "onnx"), 2, "give -o FILE")
    ort = pytest.importorskip("onnxruntime")
    ok("export", tmp_path / "m.l1m", "--format", "onnx", "-o", tmp_path / "m.onnx")
    X, _ = load_svmlight(d / "train.svm")
    X = X.toarray()
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    label, proba = session.run(None, {"X": X})
    model = load(tmp_path / "m.l1m")
    np.testing.assert_array_equal(label, model.predict(X))
    np.testing.assert_allclose(proba, model.predict_proba(X), atol=1e-6)


def test_feature_names_errors(files):
    d = files["dir"]
    error(
        run("train", d / "train.svm", "--feature-names", d / "short.txt", "-q"),
        1,
        "has 6 features, more than the 2 named in --feature-names",
    )
    error(
        run("train", d / "train.svm", "--feature-names", d / "names.txt", "--n-features", "9", "-q"),
        2,
        "names 6 features, --n-features is 9",
    )
    (d / "dup.txt").write_text("a\nb\na\n")
    error(run("train", d / "train.svm", "--feature-names", d / "dup.txt", "-q"), 2, "dup.txt:3", "repeats line 1")


def test_more_names_than_columns_widen_the_model(files, tmp_path):
    d = files["dir"]
    (d / "more.txt").write_text("\n".join(files["names"] + ["unused"]) + "\n")
    ok("train", d / "train.svm", "--feature-names", d / "more.txt", "-q", "-o", tmp_path / "m.l1m")
    model = load(tmp_path / "m.l1m")
    assert model.n_features_in_ == 7 and model.coef_[0, 6] == 0 and model.feature_names_[6] == "unused"


def test_feature_names_of_hashed_vw_slots(files, tmp_path):
    d = files["dir"]
    out = ok(
        "train", d / "train.vw", "--hash-bits", "6", "--feature-names", d / "words.txt", "-q", "--json",
        "-o", tmp_path / "v.l1m",
    )  # fmt: skip
    top = {w["name"] for w in json.loads(out.stdout)["weights"][0]["weights"][:2]}
    slots = {hash_feature(w, hash_bits=6) for w in ("w0", "w1")}
    model = load(tmp_path / "v.l1m")
    assert {model.feature_names_[s] for s in slots} == top
    assert model.feature_names_.shape == (64,) and (model.feature_names_ == "").sum() >= 64 - 12


def test_a_csv_file_says_svmlight_or_vw_was_expected(files, tmp_path):
    (tmp_path / "table.csv").write_text("a,b,label\n1,2,1\n3,4,0\n")
    (tmp_path / "plain.txt").write_text("1 2 3\n0 4 5\n")
    error(run("info", tmp_path / "table.csv"), 1, "label is not a number", "svmlight text was expected")
    error(run("train", tmp_path / "plain.txt", "-q"), 1, "svmlight text was expected", "LABEL INDEX:VALUE")
    error(run("train", tmp_path / "table.csv", "--format", "vw", "-q"), 1, "Vowpal Wabbit text was expected")
    error(run("train", tmp_path / "table.csv", "--solver", "rmmp", "-q"), 1, "svmlight text was expected")
    ok("train", files["dir"] / "train.svm", "-q", "-o", tmp_path / "m.l1m")
    error(run("evaluate", tmp_path / "m.l1m", tmp_path / "table.csv"), 1, "svmlight text was expected")


def test_predict_data_model_hints_at_the_argument_order(files, tmp_path):
    d = files["dir"]
    ok("train", d / "train.svm", "-q", "-o", tmp_path / "m.l1m")
    line = error(run("predict", d / "train.svm", tmp_path / "m.l1m"), 2, "the order is `l1scale predict MODEL DATA`")
    assert "train.svm is not a model file but" in line
    error(run("evaluate", d / "train.svm", tmp_path / "m.l1m"), 2, "`l1scale evaluate MODEL DATA`")


def test_multiclass_proba_names_the_class_order(files, tmp_path):
    d = files["dir"]
    ok("train", d / "three.svm", "-q", "-o", tmp_path / "m3.l1m")
    lines = ok("predict", tmp_path / "m3.l1m", d / "three.svm", "--proba").stdout.splitlines()
    assert lines[0] == "# classes: 0 1 2" and len(lines) == 301
    ok("predict", tmp_path / "m3.l1m", d / "three.svm", "--proba", "-o", tmp_path / "p.txt")
    P = np.loadtxt(tmp_path / "p.txt")  # the header is a comment
    X, _ = load_svmlight(d / "three.svm")
    np.testing.assert_allclose(P, load(tmp_path / "m3.l1m").predict_proba(X), rtol=1e-12)
    ok("train", d / "train.svm", "-q", "-o", tmp_path / "m.l1m")
    binary = ok("predict", tmp_path / "m.l1m", d / "train.svm", "--proba").stdout.splitlines()
    assert not binary[0].startswith("#")  # two classes: one column, P(classes_[1]), as before


# ------------------------------------------------------------------ issue 15: multinomial and the CLI
def test_train_multi_class_flag_and_the_multinomial_summary(files, tmp_path):
    from l1scale.model_io import load_model

    model = tmp_path / "multi.l1m"
    out = ok(
        "train",
        files["dir"] / "three.svm",
        "--lam-ratio",
        "0.05",
        "--multi-class",
        "multinomial",
        "-o",
        model,
        "--json",
    )
    s = json.loads(out.stdout)
    assert s["multi_class"] == "multinomial" and s["params"]["multi_class"] == "multinomial"
    assert isinstance(s["lam"], float)  # one problem, one lam
    est = load(model)
    assert est.multi_class_ == "multinomial" and est.coef_.shape == (3, 6)
    assert s["nnz"] == np.count_nonzero(est.coef_)
    # the table counts the nonzeros out of d x K
    table = ok("train", files["dir"] / "three.svm", "--lam-ratio", "0.05", "--multi-class", "multinomial", "-q").stdout
    assert f"{s['nnz']} of 18" in " ".join(table.split())
    # the file keeps the one problem's one summary (and n_iter, lam once per row)
    meta = load_model(model)[2]
    assert meta["multi_class"] == "multinomial" and len(meta["result"]) == 1 and len(meta["lam"]) == 3
    assert est.result_.objective == pytest.approx(s["objective"]) and est.result_.coef.shape == (3, 6)
    info = ok("info", model).stdout
    assert info.count("objective") == 1
    ovr = json.loads(
        ok("train", files["dir"] / "three.svm", "--lam-ratio", "0.05", "--multi-class", "ovr", "--json").stdout
    )
    assert "multi_class" not in ovr and len(ovr["problems"]) == 3
    error(
        run("train", files["dir"] / "three.svm", "--multi-class", "multinomial", "--loss", "probit"), 1, "multi_class"
    )
    error(run("train", files["dir"] / "train.svm", "--loss", "squared", "--multi-class", "ovr"), 2, "--multi-class")


def test_path_fits_the_multinomial_model_and_standardizes(files, tmp_path):
    from l1scale.path import SparseLogisticRegressionCV

    model = tmp_path / "chosen.l1m"
    args = ("path", files["dir"] / "three.svm", "--n-lams", "8", "--cv", "3", "-q")
    doc = json.loads(ok(*args, "--standardize", "-o", model, "--json").stdout)
    assert doc["multi_class"] == "multinomial" and doc["classes"] == [0, 1, 2] and doc["standardize"] is True
    X, y = load_svmlight(files["dir"] / "three.svm")[:2]
    cv = SparseLogisticRegressionCV(n_lams=8, cv=3, standardize=True).fit(X, y)
    assert doc["chosen_lam"] == pytest.approx(cv.lam_[0], rel=1e-12)
    assert [r["cv_mean"] for r in doc["path"]] == pytest.approx(cv.cv_mean_.tolist(), rel=1e-9)
    loaded = load(model)
    assert loaded.multi_class_ == "multinomial" and loaded.standardize is True
    np.testing.assert_allclose(loaded.coef_, cv.coef_, atol=1e-10)
    table = ok(*args, "--standardize").stdout
    assert "multinomial (3 classes), standardised" in " ".join(table.split())  # the title wraps at the width
    error(run(*args, "--multi-class", "ovr"), 1, "--multi-class ovr")
    error(run(*args, "--scoring", "roc_auc"), 2, "neg_log_loss or accuracy")
