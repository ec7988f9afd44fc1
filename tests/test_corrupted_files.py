"""Corrupted model files and checkpoints (issue 13, defect 6): whatever the damage (truncation
at any offset, a flipped bit anywhere, random bytes, an empty file, a directory in its place),
loading raises only the documented error (ModelFormatError, CheckpointError) with the file's
path in the message, or, where the damage is in bytes the format ignores, gives back exactly
what was saved. Never another exception type, a crash or a silently different model."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest
from _checkpoint_cases import problem, solve, solver

from l1scale import SparseLogisticRegression, load
from l1scale.checkpoint import Checkpoint
from l1scale.exceptions import CheckpointError, ModelFormatError
from l1scale.model_io import load_model, save_model


def _offsets(size, count):
    """``count`` offsets spread over [0, size), with the first and last 64 bytes all included
    (headers and the zip's central directory live there)."""
    spread = np.linspace(0, size - 1, count).astype(int).tolist()
    return sorted(set(spread) | set(range(min(64, size))) | set(range(max(0, size - 64), size)))


def _corruptions(blob, seed=0, count=150):
    """(label, bytes) pairs: truncations, single-bit flips, random bytes, an empty file."""
    rng = np.random.default_rng(seed)
    for cut in _offsets(len(blob), count):
        yield f"truncated at {cut}", blob[:cut]
    for pos in _offsets(len(blob), count):
        flipped = bytearray(blob)
        flipped[pos] ^= 1 << int(rng.integers(8))
        yield f"bit flipped at {pos}", bytes(flipped)
    for n in (1, 2, 4, 22, 100, 1000, len(blob)):
        yield f"{n} random bytes", rng.bytes(n)
    yield "PK header then random", b"PK\x03\x04" + rng.bytes(200)
    yield "empty", b""


# ----------------------------------------------------------------------------- models


@pytest.fixture(scope="module")
def model_blob(tmp_path_factory):
    path = tmp_path_factory.mktemp("m") / "model.l1m"
    coef = np.zeros((3, 40))
    coef[:, ::7] = np.arange(18).reshape(3, 6) / 3.0
    save_model(path, coef=coef, intercept=np.array([0.5, -1.0, 2.0]), metadata={"n_features": 40, "classes": [0, 1, 2]})
    return path.read_bytes(), load_model(path)


def test_corrupted_model_files_raise_model_format_error_naming_the_file(tmp_path, model_blob):
    blob, (coef, intercept, meta) = model_blob
    path = tmp_path / "bad.l1m"
    loaded_intact = 0
    for label, data in _corruptions(blob):
        path.write_bytes(data)
        try:
            got = load_model(path)
        except ModelFormatError as e:
            assert str(path) in str(e), label
            continue
        # damage in bytes the format ignores (zip timestamps, attributes): the saved model itself
        assert label.startswith("bit flipped"), label  # a truncated or random file never loads
        loaded_intact += 1
        np.testing.assert_array_equal(got[0], coef, err_msg=label)
        np.testing.assert_array_equal(got[1], intercept, err_msg=label)
        assert got[2] == meta, label
    assert loaded_intact > 0  # (the loop did meet harmless flips: the equality checks ran)


def test_directory_in_place_of_the_model(tmp_path):
    (tmp_path / "m.l1m").mkdir()
    with pytest.raises(ModelFormatError, match="is a directory") as info:
        load_model(tmp_path / "m.l1m")
    assert str(tmp_path / "m.l1m") in str(info.value)
    with pytest.raises(ModelFormatError, match="is a directory"):
        load(tmp_path / "m.l1m")
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "missing.l1m")


def test_estimator_load_of_a_corrupted_model(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 5)), np.where(rng.normal(size=60) > 0, 1, -1)
    path = tmp_path / "e.l1m"
    SparseLogisticRegression(lam_ratio=0.1).fit(X, y).save(path)
    blob = path.read_bytes()
    for label, data in _corruptions(blob, seed=1, count=40):
        path.write_bytes(data)
        try:
            load(path)
        except ModelFormatError as e:
            assert str(path) in str(e), label


# ----------------------------------------------------------------------------- checkpoints


def _checkpoint_of(name, tmp_path):
    """(the bytes of a finished run's checkpoint, its fingerprint, the uninterrupted result)."""
    path = tmp_path / f"{name}.ckpt"
    expected = solve(name, checkpoint=path)
    with np.load(path) as z:
        fingerprint = json.loads(bytes(z["fingerprint"]).decode())
    return path.read_bytes(), fingerprint, expected


@pytest.mark.parametrize("name", ["cd", "smidas", "rmmp"])
def test_corrupted_checkpoints_raise_checkpoint_error_naming_the_file(tmp_path, name):
    """Checkpoint.load on every corruption; the solver itself resumes from every tenth (its own
    checks of shapes and index ranges, then a solve that must end where the intact one ends)."""
    blob, fingerprint, expected = _checkpoint_of(name, tmp_path)
    intact = Checkpoint(tmp_path / f"{name}.ckpt", fingerprint).load()
    path = tmp_path / "bad.ckpt"
    for i, (label, data) in enumerate(_corruptions(blob, count=120)):
        path.write_bytes(data)
        try:
            state = Checkpoint(path, fingerprint).load()
        except CheckpointError as e:
            assert str(path) in str(e), label
            assert e.path == str(path)
            continue
        assert label.startswith("bit flipped"), label  # a truncated or random file never loads
        assert state is not None and set(state) == set(intact), label
        for key, value in intact.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(state[key], value, err_msg=f"{label}: {key}")
            else:
                assert state[key] == value, f"{label}: {key}"
        if i % 10 == 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                resumed = solver(name, checkpoint=path).solve(problem(name))
            np.testing.assert_array_equal(resumed.coef, expected.coef, err_msg=label)


@pytest.mark.parametrize("name", ["cd", "sgd_cumulative"])
def test_solvers_refuse_corrupted_checkpoints_with_checkpoint_error(tmp_path, name):
    blob, _, _ = _checkpoint_of(name, tmp_path)
    path = tmp_path / "bad.ckpt"
    for label, data in list(_corruptions(blob, seed=3, count=30))[::3]:
        path.write_bytes(data)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                solver(name, checkpoint=path).solve(problem(name))
        except CheckpointError as e:
            assert str(path) in str(e), label


def test_checkpoint_directory_newer_version_and_foreign_files(tmp_path):
    fingerprint = {"run": 1}
    (tmp_path / "dir.ckpt").mkdir()
    with pytest.raises(CheckpointError, match="is a directory") as info:
        Checkpoint(tmp_path / "dir.ckpt", fingerprint).load()
    assert str(tmp_path / "dir.ckpt") in str(info.value)
    # a newer format version
    path = tmp_path / "v.ckpt"
    np.savez(path, l1scale_checkpoint=np.asarray(99), fingerprint=np.frombuffer(b'{"run": 1}', dtype=np.uint8))
    os.replace(str(path) + ".npz", path)
    with pytest.raises(CheckpointError, match="newer"):
        Checkpoint(path, fingerprint).load()
    # an MP / RMMP checkpoint of the format before versions
    np.savez(path, next_pass=np.asarray(3), fingerprint=np.frombuffer(b'{"run": 1}', dtype=np.uint8))
    os.replace(str(path) + ".npz", path)
    with pytest.raises(CheckpointError, match="older l1scale"):
        Checkpoint(path, fingerprint).load()
    # a checkpoint of format version 2 (before the manifest)
    np.savez(path, l1scale_checkpoint=np.asarray(2), fingerprint=np.frombuffer(b'{"run": 1}', dtype=np.uint8))
    os.replace(str(path) + ".npz", path)
    with pytest.raises(CheckpointError, match="older l1scale"):
        Checkpoint(path, fingerprint).load()
    # a plain .npy array, a model file
    np.save(path, np.arange(3))
    os.replace(str(path) + ".npy", path)
    with pytest.raises(CheckpointError, match="not"):
        Checkpoint(path, fingerprint).load()
    save_model(path, coef=[1.0], intercept=0.0)
    with pytest.raises(CheckpointError, match="not an l1scale checkpoint"):
        Checkpoint(path, fingerprint).load()
    # and a missing file is simply a fresh start
    assert Checkpoint(tmp_path / "none.ckpt", fingerprint).load() is None


@pytest.mark.parametrize("member", ["an array", "a scalar"])
def test_checkpoint_whose_member_names_were_damaged_is_refused(tmp_path, member):
    # Fuzzing finding: the zip format checks each member's bytes (CRC-32), not its name, so a
    # byte changed in a name (local header and central directory alike) loaded as another state.
    checkpoint = Checkpoint(tmp_path / "run.ckpt", {"run": 1})
    checkpoint.save({"coef": np.arange(4.0), "next_epoch": 3})
    blob = (tmp_path / "run.ckpt").read_bytes()
    assert blob.count(b"coef.npy") == 2  # the local header and the central directory
    if member == "an array":
        blob = blob.replace(b"coef.npy", b"ceof.npy")
    else:
        blob = blob.replace(b"next_epoch.npy", b"next_epocX.npy")
    (tmp_path / "run.ckpt").write_bytes(blob)
    with pytest.raises(CheckpointError, match="manifest") as info:
        checkpoint.load()
    assert str(tmp_path / "run.ckpt") in str(info.value)
