"""Issue 15, problems 1 and 5 (library side): model files that keep feature names, class-weight
keys with their types, n_iter_ and a summary of result_; loading from file objects with
consistency checks; sparsify / densify; ONNX export; names files and hashed-slot names."""

import gzip
import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale import SparseLinearRegression, SparseLogisticRegression, load
from l1scale.data import hash_feature
from l1scale.exceptions import ModelFormatError
from l1scale.feature_names import COLLISION_SEPARATOR, hashed_slot_names, read_feature_names
from l1scale.model_io import load_model, save_model
from l1scale.model_report import model_json, model_text, nonzero_weights

FORMAT1_FILE = Path(__file__).parent / "golden" / "model_format1_class_weight.l1m"


def _data(n=240, d=8, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    z = 2 * X[:, 0] - X[:, 1] + 0.3 * rng.standard_normal(n)
    if n_classes == 2:
        return X, np.where(z > 0, 1, -1)
    return X, np.digitize(z, np.quantile(z, np.linspace(0, 1, n_classes + 1)[1:-1]))


def test_dataframe_feature_names_survive_save_and_load(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = _data()
    frame = pd.DataFrame(X, columns=[f"col_{j}" for j in range(X.shape[1])])
    clf = SparseLogisticRegression(lam_ratio=0.1).fit(frame, y)
    clf.save(tmp_path / "m.l1m")
    model = load(tmp_path / "m.l1m")
    np.testing.assert_array_equal(model.feature_names_in_, frame.columns)
    np.testing.assert_array_equal(model.feature_names_, frame.columns)
    np.testing.assert_array_equal(model.predict(frame), clf.predict(frame))
    top = nonzero_weights(model, top=1)[0]["weights"][0]
    assert top["name"] == "col_0" and top["index"] == 0


def test_class_weight_keys_keep_their_types_and_a_loaded_model_refits(tmp_path):
    X, y = _data()
    clf = SparseLogisticRegression(lam_ratio=0.1, class_weight={-1: 2.0, 1: 1.0}).fit(X, y)
    clf.save(tmp_path / "m.l1m")
    model = load(tmp_path / "m.l1m")
    assert model.class_weight == {-1: 2.0, 1: 1.0}
    assert all(isinstance(k, int) for k in model.class_weight)
    model.fit(X, y)  # today: ValueError "The classes, [-1, 1], are not in class_weight"
    np.testing.assert_allclose(model.coef_, clf.coef_, atol=1e-8)
    labels = np.where(y > 0, "spam", "ham")
    text = SparseLogisticRegression(lam_ratio=0.1, class_weight={"ham": 3.0}).fit(X, labels)
    text.save(tmp_path / "t.l1m")
    assert load(tmp_path / "t.l1m").class_weight == {"ham": 3.0}


def test_a_format_1_file_written_before_these_changes_loads_and_refits():
    """tests/golden/model_format1_class_weight.l1m was written by the code of the day before
    (class_weight {-1: 2.0, 1: 1.0} saved with string keys, no names, no n_iter)."""
    meta = json.loads(zipfile.ZipFile(FORMAT1_FILE).read("model.json"))
    assert meta["format_version"] == 1 and "class_weight_items" not in meta and "n_iter" not in meta
    model = load(FORMAT1_FILE)
    assert model.class_weight == {-1: 2.0, 1: 1.0}
    np.testing.assert_allclose(model.coef_, [[2.94677472, -0.08969245, -0.00392143, -0.04393247]], atol=1e-7)
    assert model.feature_names_ is None and not hasattr(model, "n_iter_")
    rng = np.random.default_rng(0)  # the data it was fitted on
    X = rng.standard_normal((60, 4))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(60) > 0, 1, -1)
    np.testing.assert_allclose(model.fit(X, y).coef_, [[2.94677472, -0.08969245, -0.00392143, -0.04393247]], atol=1e-6)


def test_n_iter_and_the_result_summary_are_kept(tmp_path):
    X, y = _data(n_classes=3)
    clf = SparseLogisticRegression(lam_ratio=0.05, multi_class="ovr").fit(X, y)
    clf.save(tmp_path / "m.l1m")
    model = load(tmp_path / "m.l1m")
    np.testing.assert_array_equal(model.n_iter_, clf.n_iter_)
    assert len(model.result_) == 3
    for saved, fitted in zip(model.result_, clf.result_):
        assert saved.objective == fitted.objective and saved.certificate == fitted.certificate
        assert (saved.stop_reason, saved.n_iter, saved.converged) == (fitted.stop_reason, fitted.n_iter, True)
    reg = SparseLinearRegression(lam_ratio=0.05).fit(X, X[:, 0])
    reg.save(tmp_path / "r.l1m")
    loaded = load(tmp_path / "r.l1m")
    assert loaded.n_iter_ == reg.n_iter_ and loaded.result_.objective == reg.result_.objective


def test_load_reads_binary_file_objects(tmp_path):
    X, y = _data()
    clf = SparseLogisticRegression(lam_ratio=0.1).fit(X, y)
    clf.save(tmp_path / "m.l1m")
    with open(tmp_path / "m.l1m", "rb") as fh:
        model = load(fh)
    np.testing.assert_array_equal(model.coef_, clf.coef_)
    buffer = io.BytesIO((tmp_path / "m.l1m").read_bytes())
    np.testing.assert_array_equal(load(buffer).predict(X), clf.predict(X))
    with pytest.raises(ModelFormatError, match="model file object: corrupt"):
        load(io.BytesIO(b"not a zip"))


def _rewrite(src, dst, change):
    """A copy of the model file ``src`` with its metadata changed by ``change(meta)``."""
    with zipfile.ZipFile(src) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    meta = json.loads(members["model.json"])
    change(meta)
    members["model.json"] = json.dumps(meta).encode()
    with zipfile.ZipFile(dst, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m.update(classes=[0, 1, 2]), "3 classes but 1 row of coefficients"),
        (lambda m: m.update(classes=[0]), "at least two labels"),
        (lambda m: m.update(feature_names=["a", "b"]), "2 feature names for 8 features"),
        (lambda m: m.update(feature_names=[1] * 8), "feature_names must be a list of strings"),
        (lambda m: m.update(n_iter=[3, 4]), "2 values of n_iter for 1 rows"),
        (lambda m: m.update(n_features=9), "coef has 8 features but the metadata says n_features=9"),
    ],
)
def test_inconsistent_model_files_are_errors_naming_the_file(tmp_path, change, message):
    X, y = _data()
    SparseLogisticRegression(lam_ratio=0.1).fit(X, y).save(tmp_path / "m.l1m")
    _rewrite(tmp_path / "m.l1m", tmp_path / "bad.l1m", change)
    with pytest.raises(ModelFormatError) as err:
        load(tmp_path / "bad.l1m")
    assert str(err.value).startswith(f"{tmp_path / 'bad.l1m'}: ") and message in str(err.value)


def test_save_refuses_contradicting_metadata(tmp_path):
    with pytest.raises(ModelFormatError, match="3 classes but 2 rows"):
        save_model(tmp_path / "m.l1m", coef=np.zeros((2, 4)), intercept=np.zeros(2), metadata={"classes": [0, 1, 2]})
    assert not (tmp_path / "m.l1m").exists()


def test_sparsify_and_densify(tmp_path):
    X, y = _data(n_classes=3)
    clf = SparseLogisticRegression(lam_ratio=0.1).fit(X, y)
    dense, proba = clf.coef_.copy(), clf.predict_proba(X)
    assert clf.sparsify() is clf and sp.issparse(clf.coef_)
    assert clf.coef_.nnz == np.count_nonzero(dense)
    np.testing.assert_allclose(clf.predict_proba(X), proba, rtol=1e-12)
    np.testing.assert_allclose(clf.predict_proba(sp.csr_matrix(X)), proba, rtol=1e-12)
    clf.save(tmp_path / "m.l1m")
    np.testing.assert_array_equal(load(tmp_path / "m.l1m").coef_, dense)
    clf.set_params(warm_start=True).fit(X, y)  # a warm start from the sparse coef_
    assert clf.densify() is clf and isinstance(clf.coef_, np.ndarray)
    np.testing.assert_allclose(clf.coef_, dense, atol=1e-6)
    reg = SparseLinearRegression(lam_ratio=0.1).fit(X, X @ np.arange(8.0))
    pred = reg.predict(X)
    np.testing.assert_allclose(reg.sparsify().predict(X), pred, rtol=1e-12)
    assert reg.densify().coef_.shape == (8,)


@pytest.mark.parametrize("n_classes, loss", [(2, "logistic"), (3, "logistic"), (2, "probit"), (4, "probit")])
def test_onnx_predictions_and_probabilities_equal_the_estimator(n_classes, loss):
    ort = pytest.importorskip("onnxruntime")
    X, y = _data(n=300, n_classes=n_classes, seed=1)
    clf = SparseLogisticRegression(loss, lam_ratio=0.02).fit(X, y)
    session = ort.InferenceSession(clf.to_onnx().SerializeToString(), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == ["label", "probabilities"]
    label, proba = session.run(None, {"X": X})
    np.testing.assert_array_equal(label, clf.predict(X))
    np.testing.assert_allclose(proba, clf.predict_proba(X), atol=1e-6, rtol=0)


def test_onnx_of_a_regression_text_labels_and_float32():
    ort = pytest.importorskip("onnxruntime")
    X, y = _data(n=200, seed=2)
    reg = SparseLinearRegression(lam_ratio=0.02).fit(X, X @ np.arange(8.0))
    session = ort.InferenceSession(reg.to_onnx().SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"X": X})[0].ravel(), reg.predict(X), atol=1e-9)
    clf = SparseLogisticRegression(lam_ratio=0.02).fit(X, np.where(y > 0, "yes", "no"))
    model = clf.sparsify().to_onnx(dtype=np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    label, proba = session.run(None, {"X": X.astype(np.float32)})
    assert (label == clf.predict(X)).mean() > 0.99  # float32 margins may flip a label at 0
    np.testing.assert_allclose(proba, clf.predict_proba(X), atol=1e-5)


def test_names_files(tmp_path):
    (tmp_path / "names.txt").write_text("alpha\nbeta\r\ngamma\n")
    assert read_feature_names(tmp_path / "names.txt") == ["alpha", "beta", "gamma"]
    with gzip.open(tmp_path / "names.txt.gz", "wt") as fh:
        fh.write("a\nb\n")
    assert read_feature_names(tmp_path / "names.txt.gz") == ["a", "b"]
    for text, message in (("a\n\nb\n", ":2: empty feature name"), ("a\nb\na\n", ":3: feature name 'a' repeats line 1")):
        (tmp_path / "bad.txt").write_text(text)
        with pytest.raises(ValueError, match=message):
            read_feature_names(tmp_path / "bad.txt")


def test_hashed_slot_names_follow_the_hash_and_join_collisions():
    names = [f"w{k}" for k in range(20)] + ["f^price"]
    slots = hashed_slot_names(names, hash_bits=3)
    assert len(slots) == 8
    for name in names[:20]:
        assert name in slots[hash_feature(name, hash_bits=3)].split(COLLISION_SEPARATOR)
    assert "f^price" in slots[hash_feature("price", "f", hash_bits=3)].split(COLLISION_SEPARATOR)
    assert any(COLLISION_SEPARATOR in s for s in slots)  # 21 names in 8 slots collide


def test_set_feature_names_and_the_readable_model():
    X, y = _data(n_classes=3)
    clf = SparseLogisticRegression(lam_ratio=0.05).fit(X, y)
    with pytest.raises(ValueError, match="3 names for the 8 columns"):
        clf.set_feature_names(["a", "b", "c"])
    clf.set_feature_names([f"n{j}" for j in range(8)])
    rows = nonzero_weights(clf)
    assert [r["class"] for r in rows] == [0, 1, 2]
    for row, coef in zip(rows, clf.coef_):
        assert row["nnz"] == np.count_nonzero(coef)
        sizes = [abs(w["weight"]) for w in row["weights"]]
        assert sizes == sorted(sizes, reverse=True)
        assert all(w["name"] == f"n{w['index']}" and w["weight"] == coef[w["index"]] for w in row["weights"])
    text = model_text(clf)
    assert "[class 0] intercept" in text and f"n0\t0\t{float(clf.coef_[0, 0])!r}" in text
    assert json.loads(model_json(clf, top=1))["weights"][2]["weights"][0]["name"] is not None


def test_a_copy_of_the_format_1_file_is_found_as_a_model(tmp_path):
    shutil.copy(FORMAT1_FILE, tmp_path / "m.bin")
    from l1scale.model_io import is_model_file

    assert is_model_file(tmp_path / "m.bin") and not is_model_file(FORMAT1_FILE.parent / "train_small.svm")
    assert load_model(tmp_path / "m.bin")[2]["classes"] == [-1, 1]


def test_registered_converter_converts_a_pipeline():
    ort = pytest.importorskip("onnxruntime")
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import DoubleTensorType
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from l1scale.onnx import register

    X, y = _data(n_classes=3, seed=4)
    pipe = make_pipeline(StandardScaler(), SparseLogisticRegression(lam_ratio=0.05)).fit(X * 10 + 3, y)
    register(SparseLogisticRegression, SparseLinearRegression)
    model = convert_sklearn(
        pipe, initial_types=[("X", DoubleTensorType([None, 8]))], options={"zipmap": False}, target_opset=17
    )
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    label, proba = session.run(None, {"X": X * 10 + 3})
    np.testing.assert_array_equal(label, pipe.predict(X * 10 + 3))
    np.testing.assert_allclose(proba, pipe.predict_proba(X * 10 + 3), atol=1e-6)


def test_a_multinomial_model_file_keeps_one_result_summary(tmp_path):
    """One softmax problem: one summary written and read back; files that repeat it per row
    (written before) still load; an ovr model still needs one per row."""
    X, y = _data(n_classes=3)
    model = SparseLogisticRegression(lam_ratio=0.05, multi_class="multinomial").fit(X, y)
    model.save(tmp_path / "m.l1m")
    meta = load_model(tmp_path / "m.l1m")[2]
    assert meta["multi_class"] == "multinomial" and len(meta["result"]) == 1 and len(meta["lam"]) == 3
    loaded = load(tmp_path / "m.l1m")
    assert loaded.result_.objective == model.result_.objective and loaded.result_.coef.shape == (3, 8)
    # the layout written before: the one summary once per row
    _rewrite(tmp_path / "m.l1m", tmp_path / "old.l1m", lambda m: m.update(result=m["result"] * 3))
    old = load(tmp_path / "old.l1m")
    assert old.result_.objective == model.result_.objective and old.result_.coef.shape == (3, 8)
    np.testing.assert_array_equal(old.predict_proba(X), model.predict_proba(X))
    _rewrite(tmp_path / "m.l1m", tmp_path / "two.l1m", lambda m: m.update(result=m["result"] * 2))
    with pytest.raises(
        ModelFormatError, match="2 values of result for 3 rows of coefficients \\(one for a multinomial"
    ):
        load(tmp_path / "two.l1m")
    ovr = SparseLogisticRegression(lam_ratio=0.05, multi_class="ovr").fit(X, y)
    ovr.save(tmp_path / "ovr.l1m")
    assert len(load_model(tmp_path / "ovr.l1m")[2]["result"]) == 3
    _rewrite(tmp_path / "ovr.l1m", tmp_path / "ovr1.l1m", lambda m: m.update(result=m["result"][:1]))
    with pytest.raises(ModelFormatError, match="1 values of result for 3 rows"):
        load(tmp_path / "ovr1.l1m")
