"""Tests for l1scale.model_io: round trips, atomic saves, format and version checks."""

import io
import json
import os
import stat
import zipfile

import numpy as np
import pytest

from l1scale import model_io
from l1scale.exceptions import ModelFormatError
from l1scale.model_io import FORMAT_VERSION, load_model, save_model


def _files(directory):
    return sorted(os.listdir(directory))


def _write_zip(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)


def _npy(array):
    buf = io.BytesIO()
    np.save(buf, np.asarray(array))
    return buf.getvalue()


def test_round_trip_binary(tmp_path):
    coef = np.array([0.0, 1.5, -2.25, 0.0, 1e-300])
    meta = {
        "estimator": "SparseLogisticRegression",
        "lam": np.float64(0.01),
        "classes": np.array([-1, 1]),
        "n_features": 5,
        "max_iter": np.int64(100),
    }
    path = tmp_path / "model.l1m"
    save_model(path, coef=coef, intercept=0.5, metadata=meta)
    c, b, m = load_model(path)
    np.testing.assert_array_equal(c, coef)
    assert c.dtype == np.float64 and c.shape == (5,)
    assert b == 0.5 and isinstance(b, float)
    assert m["estimator"] == "SparseLogisticRegression" and m["lam"] == 0.01
    assert m["classes"] == [-1, 1] and m["max_iter"] == 100
    assert m["format"] == "l1scale-model" and m["format_version"] == FORMAT_VERSION
    assert m["library_version"] and m["library_version"] != "" and "created" in m
    assert _files(tmp_path) == ["model.l1m"]  # no temp files left behind


def test_round_trip_one_vs_rest_and_float32(tmp_path):
    rng = np.random.default_rng(0)
    coef = rng.standard_normal((3, 7)).astype(np.float32)
    intercept = np.array([0.1, -0.2, 0.3])
    save_model(str(tmp_path / "ovr"), coef=coef, intercept=intercept, metadata={"n_features": 7})
    c, b, m = load_model(str(tmp_path / "ovr"))
    assert c.dtype == np.float32 and c.shape == (3, 7)
    np.testing.assert_array_equal(c, coef)
    np.testing.assert_array_equal(b, intercept)
    # a 2-D coef with a scalar intercept is allowed (shared intercept)
    save_model(tmp_path / "shared", coef=coef, intercept=0.0)
    assert load_model(tmp_path / "shared")[1] == 0.0


def test_reserved_fields_are_set_by_save(tmp_path):
    path = tmp_path / "m"
    save_model(path, coef=[1.0, 2.0], intercept=0, metadata={"format_version": 99, "format": "x", "note": "kept"})
    _, b, m = load_model(path)
    assert m["format_version"] == FORMAT_VERSION and m["format"] == "l1scale-model"
    assert m["note"] == "kept" and b == 0.0
    save_model(path, coef=[1.0, 2.0], intercept=0, metadata=m)  # load -> save round trip
    assert load_model(path)[2]["note"] == "kept"


def test_library_version_fallback(monkeypatch):
    import l1scale

    monkeypatch.setattr(l1scale, "__version__", "9.9.9", raising=False)
    assert model_io._library_version() == "9.9.9"
    monkeypatch.delattr(l1scale, "__version__")
    assert model_io._library_version() not in ("", None)


@pytest.mark.parametrize(
    "coef, intercept",
    [
        (np.zeros((2, 3, 4)), 0.0),  # 3-D coef
        (np.zeros(3), np.zeros(2)),  # vector intercept for a binary model
        (np.zeros((2, 3)), np.zeros(3)),  # intercept per feature instead of per class
        (np.array(["a", "b"]), 0.0),  # not numbers
    ],
)
def test_bad_arrays_rejected_before_writing(tmp_path, coef, intercept):
    with pytest.raises(ModelFormatError):
        save_model(tmp_path / "m", coef=coef, intercept=intercept)
    assert _files(tmp_path) == []


def test_unserialisable_metadata_leaves_nothing(tmp_path):
    with pytest.raises(TypeError, match="object"):
        save_model(tmp_path / "m", coef=[1.0], intercept=0.0, metadata={"x": object()})
    assert _files(tmp_path) == []


@pytest.mark.parametrize("failure", ["writestr", "fsync", "replace"])
def test_failed_save_is_atomic(tmp_path, monkeypatch, failure):
    path = tmp_path / "model.l1m"
    save_model(path, coef=[1.0, 2.0, 3.0], intercept=1.0, metadata={"version": "old"})
    before = path.read_bytes()

    class Boom(RuntimeError):
        pass

    if failure == "writestr":  # dies mid-archive, after coef.npy has been written
        real = zipfile.ZipFile.writestr

        def writestr(self, name, data, *args, **kwargs):
            if name == "intercept.npy":
                raise Boom("disk on fire")
            return real(self, name, data, *args, **kwargs)

        monkeypatch.setattr(zipfile.ZipFile, "writestr", writestr)
    elif failure == "fsync":
        monkeypatch.setattr(model_io.os, "fsync", lambda fd: (_ for _ in ()).throw(Boom()))
    else:
        monkeypatch.setattr(model_io.os, "replace", lambda a, b: (_ for _ in ()).throw(Boom()))

    with pytest.raises(Boom):
        save_model(path, coef=np.arange(1000.0), intercept=2.0, metadata={"version": "new"})
    monkeypatch.undo()
    assert _files(tmp_path) == ["model.l1m"]  # no temp file
    assert path.read_bytes() == before  # the earlier model is untouched
    assert load_model(path)[2]["version"] == "old"


def test_failed_first_save_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(model_io.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(5, "EIO")))
    with pytest.raises(OSError):
        save_model(tmp_path / "m", coef=[1.0], intercept=0.0)
    assert _files(tmp_path) == []


def test_unwritable_destination_names_the_path(tmp_path):
    missing = tmp_path / "no" / "such" / "dir" / "model.l1m"
    with pytest.raises(FileNotFoundError, match="model.l1m"):
        save_model(missing, coef=[1.0], intercept=0.0)


def test_permission_error_names_the_path(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", refuse)  # the atomic writer opens its temporary with os.open
    with pytest.raises(PermissionError, match=r"cannot write model file .*m\.l1m.*denied"):
        save_model(tmp_path / "m.l1m", coef=[1.0], intercept=0.0)
    assert _files(tmp_path) == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root (or non-POSIX) ignores directory permissions")
def test_read_only_directory(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(PermissionError, match="cannot write model file"):
            save_model(ro / "m", coef=[1.0], intercept=0.0)
    finally:
        ro.chmod(stat.S_IRWXU)


def test_file_mode_is_not_private(tmp_path):
    path = tmp_path / "m"
    save_model(path, coef=[1.0], intercept=0.0)
    assert path.stat().st_mode & 0o044  # readable by others under the usual umask 022
    path.chmod(0o600)
    save_model(path, coef=[2.0], intercept=0.0)
    assert path.stat().st_mode & 0o777 == 0o600  # a replaced model keeps its mode


def test_not_a_model(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ModelFormatError, match="notes.txt"):
        load_model(text)
    other = tmp_path / "other.zip"
    _write_zip(other, {"readme": "x"})
    with pytest.raises(ModelFormatError, match="not an l1scale model"):
        load_model(other)
    wrong = tmp_path / "wrong.zip"
    _write_zip(wrong, {"model.json": json.dumps({"format": "sklearn-pickle"})})
    with pytest.raises(ModelFormatError, match="sklearn-pickle"):
        load_model(wrong)
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "absent")


def _with_meta(tmp_path, **meta):
    path = tmp_path / "m"
    base = {"format": "l1scale-model", "format_version": 1}
    _write_zip(
        path, {"model.json": json.dumps({**base, **meta}), "coef.npy": _npy([1.0, 2.0]), "intercept.npy": _npy(0.0)}
    )
    return path


@pytest.mark.parametrize("version", [2, "2.0", 17])
def test_future_version(tmp_path, version):
    with pytest.raises(ModelFormatError, match=rf"version {version} is newer.*version 1"):
        load_model(_with_meta(tmp_path, format_version=version))


@pytest.mark.parametrize("version", [None, "abc", 0])
def test_invalid_version(tmp_path, version):
    with pytest.raises(ModelFormatError, match="format_version"):
        load_model(_with_meta(tmp_path, format_version=version))


def test_minor_version_is_readable(tmp_path):
    coef, _, meta = load_model(_with_meta(tmp_path, format_version="1.3", extra={"a": 1}))
    assert coef.tolist() == [1.0, 2.0] and meta["extra"] == {"a": 1}


def test_n_features_mismatch(tmp_path):
    with pytest.raises(ModelFormatError, match="n_features=3"):
        load_model(_with_meta(tmp_path, n_features=3))


def test_truncated_and_corrupt_files(tmp_path):
    path = tmp_path / "m"
    save_model(path, coef=np.random.default_rng(0).standard_normal(5000), intercept=0.0)
    data = path.read_bytes()
    for cut in (10, len(data) // 2, len(data) - 30):
        (tmp_path / "cut").write_bytes(data[:cut])
        with pytest.raises(ModelFormatError, match="cut"):
            load_model(tmp_path / "cut")
    # flip bytes inside the compressed coef member: CRC or inflate fails
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("coef.npy")
    start = info.header_offset + 30 + len(info.filename) + 100
    corrupt = bytearray(data)
    corrupt[start : start + 50] = bytes(50)
    (tmp_path / "corrupt").write_bytes(bytes(corrupt))
    with pytest.raises(ModelFormatError, match="corrupt"):
        load_model(tmp_path / "corrupt")


def test_missing_members_and_pickles_rejected(tmp_path):
    path = tmp_path / "m"
    _write_zip(
        path, {"model.json": json.dumps({"format": "l1scale-model", "format_version": 1}), "coef.npy": _npy([1.0])}
    )
    with pytest.raises(ModelFormatError, match="intercept.npy"):
        load_model(path)
    buf = io.BytesIO()
    np.save(buf, np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    _write_zip(
        path,
        {
            "model.json": json.dumps({"format": "l1scale-model", "format_version": 1}),
            "coef.npy": buf.getvalue(),
            "intercept.npy": _npy(0.0),
        },
    )
    with pytest.raises(ModelFormatError):
        load_model(path)
    _write_zip(path, {"model.json": "{not json"})
    with pytest.raises(ModelFormatError, match="corrupt"):
        load_model(path)
