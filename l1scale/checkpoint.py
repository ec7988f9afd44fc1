"""Solver checkpoints: the state of a multi-pass solve, saved so that a killed run resumes.

Every multi-pass solver (CD, ISTA / FISTA / multi-scale FISTA, CGD, SCD / DetCD, MP,
RMMP, SMIDAS, truncated gradient, SGD-C) takes ``checkpoint=PATH``. With it, the
solver writes its complete state to PATH after a pass, epoch or outer iteration (at
most once every ``checkpoint_interval`` seconds: by default after every pass for the
streaming solvers, whose passes read the whole data, and at most every
:data:`DEFAULT_INTERVAL` = 5 s for the in-memory ones, whose iterations may take
milliseconds while a write costs O(n + d)), and a solve started with an existing
PATH resumes from it: the resumed run ends with the same coefficients, bit for bit,
as an uninterrupted run (the state includes the random generators of the seeded
solvers). A checkpoint is kept when the solve ends; resuming a finished run redoes at
most its last interval and returns the same model.

File format (version 3): a NumPy ``.npz`` archive (zip, no pickles) with

- ``l1scale_checkpoint``: the format version (int);
- ``manifest``: JSON of every other member's name, dtype and shape. The zip format
  checks each member's bytes (CRC-32) but not its name in the central directory: a
  damaged name would load as a different state, so the loader compares the
  archive's members with the manifest;
- ``fingerprint``: JSON (UTF-8 bytes) identifying the run: the solver and the
  parameters that change its iterates, and the problem (loss, lam or lam_ratio,
  l1_ratio, intercept, shape, nnz and, for data in memory, a CRC-32 of X, y and the
  weights; for streams, n, d, nnz and the weight sums);
- ``json``: JSON of the state's non-array values (History, generator states, ...);
- one array per array-valued part of the state (the numeric scalars as 0-d arrays).

Older versions (1: MP / RMMP before this module, without the ``l1scale_checkpoint``
member; 2: without the manifest) are recognised and refused with a CheckpointError
(delete the file to restart). Writes are atomic
(:mod:`l1scale._atomic`): a kill or a full disk leaves the previous checkpoint. Every way a checkpoint can fail to load (truncated, corrupted,
random bytes, an empty file, a directory in its place, a newer version, arrays of the
wrong shape, or another run's fingerprint) raises
:class:`~l1scale.exceptions.CheckpointError` naming the file.
"""

from __future__ import annotations

import json
import os
import time
import zlib

import numpy as np

from ._atomic import atomic_file
from .exceptions import CheckpointError

__all__ = [
    "DEFAULT_INTERVAL",
    "FORMAT_VERSION",
    "Checkpoint",
    "CheckpointState",
    "problem_fingerprint",
    "solver_fingerprint",
    "start",
]

FORMAT_VERSION = 3
#: Seconds between two writes of an in-memory solver's checkpoint (its iterations may take
#: milliseconds; a write costs O(n + d)). Streaming solvers write after every pass.
DEFAULT_INTERVAL = 5.0
_RESERVED = ("l1scale_checkpoint", "manifest", "fingerprint", "json", "history")
# Solver attributes that do not change the iterates: a run may resume with other values.
_NOT_FINGERPRINTED = {
    "tol",
    "max_iter",
    "callback",
    "verbose",
    "checkpoint",
    "checkpoint_interval",
    "compute_objective",
    "state_",
}


def _plain(value):
    """A JSON value for a fingerprint entry (numpy scalars unwrapped, other objects by type)."""
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return f"<{type(value).__name__}>"


def solver_fingerprint(solver, **extra) -> dict:
    """The solver's name and the public parameters that change its iterates (not tol, max_iter,
    callback, verbose, checkpoint: a run may resume with other values of these)."""
    params = {
        k: _plain(v) for k, v in sorted(vars(solver).items()) if not k.startswith("_") and k not in _NOT_FINGERPRINTED
    }
    return {"solver": solver.name, "solver_params": params, **{k: _plain(v) for k, v in extra.items()}}


def _crc(crc, array):
    a = np.ascontiguousarray(array)
    return zlib.crc32(a.view(np.uint8).reshape(-1) if a.size else b"", crc)


def problem_fingerprint(problem) -> dict:
    """What identifies a problem: a StreamProblem's (or DaskProblem's) ``describe()`` with the
    scan's nnz and weighted label sum; for a Problem held in memory, its shape, nnz, penalty,
    loss and a CRC-32 of X (values and structure), y and the weights (one O(nnz) read)."""
    if problem.kind == "stream":
        out = dict(problem.describe())
        scan = problem.scan
        if scan is not None:
            out["nnz"] = int(scan.nnz)
            out["label_weighted_sum"] = float(scan.label_weighted_sum)
        return {k: _plain(v) for k, v in out.items()}
    cols = problem.columns
    crc = 0
    crc = _crc(crc, cols.data)
    for part in cols.arrays[1:3]:  # as int64, whichever type the layout keeps (index_dtype)
        crc = _crc(crc, part.astype(np.int64, copy=False))
    crc = _crc(_crc(crc, problem.y), problem.c)
    return {
        "loss": problem.loss.name,
        "lam": float(problem.penalty.lam),
        "l1_ratio": float(problem.penalty.l1_ratio) if hasattr(problem.penalty, "l1_ratio") else None,
        "l1": float(problem.penalty.l1),
        "l2": float(problem.penalty.l2),
        "fit_intercept": bool(problem.fit_intercept),
        "n_samples": int(problem.n_samples),
        "n_features": int(problem.n_features),
        "nnz": int(cols.nnz),
        "data_crc32": int(crc),
    }


def start(solver, problem, **extra):
    """(Checkpoint, loaded state or None) for ``solver``'s solve of ``problem``, or (None, None)
    when the solver has no ``checkpoint``; ``extra`` joins the fingerprint."""
    path = getattr(solver, "checkpoint", None)
    if path is None:
        return None, None
    ck = Checkpoint(
        path,
        {**solver_fingerprint(solver, **extra), **problem_fingerprint(problem)},
        getattr(solver, "checkpoint_interval", DEFAULT_INTERVAL),
    )
    return ck, ck.load()


def _canonical(fingerprint: dict) -> dict:
    """The fingerprint as it reads back from JSON (tuples become lists, keys strings)."""
    return json.loads(json.dumps(fingerprint, sort_keys=True))


_JSON_TYPES = (dict, list, str, int, float, bool, type(None))


class CheckpointState(dict):
    """A loaded state: a dict whose typed getters check each value, so that a checkpoint
    never hands a solver (and its Numba kernels, which do not check bounds) an array of the
    wrong shape or an index out of range. Every failed check is a CheckpointError naming the
    file and the entry."""

    def __init__(self, path, values):
        super().__init__(values)
        self.path = path

    def _get(self, name):
        if name not in self:
            raise CheckpointError(f"no entry {name!r} (not written by this solver)", self.path)
        return self[name]

    def array(self, name, shape=None, kind="f") -> np.ndarray:
        """A copy of the array ``name``, of ``shape`` (None: any) and dtype kind(s) ``kind``."""
        value = self._get(name)
        if not isinstance(value, np.ndarray) or value.dtype.kind not in kind:
            raise CheckpointError(f"entry {name!r} is not an array of kind {kind!r}", self.path)
        if shape is not None and value.shape != tuple(shape):
            raise CheckpointError(f"entry {name!r} has shape {value.shape}, expected {tuple(shape)}", self.path)
        return np.array(value, dtype=np.float64 if kind == "f" else np.int64 if kind in ("i", "iu") else value.dtype)

    def indices(self, name, high, low=0) -> np.ndarray:
        """A 1-D int64 array whose entries lie in [low, high)."""
        a = self.array(name, None, "iu")
        if a.ndim != 1 or (a.size and (a.min() < low or a.max() >= high)):
            raise CheckpointError(f"entry {name!r} holds indices outside [{low}, {high})", self.path)
        return a

    def optional_indices(self, name, high, low=0):
        """None when the saved value is None, else :meth:`indices`."""
        return None if self._get(name) is None else self.indices(name, high, low)

    def optional_scalar(self, name, kind=float):
        """None when the saved value is None, else :meth:`scalar`."""
        return None if self._get(name) is None else self.scalar(name, kind)

    def into(self, name, target: np.ndarray):
        """Copy the saved array ``name`` into ``target`` (same shape, same dtype kind), in place."""
        kind = "f" if target.dtype.kind == "f" else "iu" if target.dtype.kind in "iu" else target.dtype.kind
        target[...] = self.array(name, target.shape, kind)
        return target

    def scalar(self, name, kind=float, low=None, high=None):
        """A float, int or bool (``kind``), optionally within [low, high]."""
        value = self._get(name)
        try:
            arr = np.asarray(value)
            if arr.shape != () or arr.dtype.kind not in "biuf":
                raise TypeError
            out = kind(arr.item())
        except (TypeError, ValueError, OverflowError):
            raise CheckpointError(f"entry {name!r} is not a {kind.__name__}", self.path) from None
        if (low is not None and out < low) or (high is not None and out > high):
            raise CheckpointError(f"entry {name!r} = {out} lies outside [{low}, {high}]", self.path)
        return out

    def value(self, name, types=_JSON_TYPES):
        """A JSON value of one of ``types``."""
        value = self._get(name)
        if not isinstance(value, types):
            raise CheckpointError(f"entry {name!r} has the wrong type ({type(value).__name__})", self.path)
        return value

    def history(self, history):
        """Extend the History ``history`` with the saved rows."""
        saved = self.value("history", dict)
        fields = set(history.as_dict())
        try:
            for k, v in saved.items():
                if k not in fields or not isinstance(v, list):
                    raise TypeError(k)
                getattr(history, k).extend(float(x) if isinstance(x, float) else x for x in v)
        except TypeError as e:
            raise CheckpointError(f"unreadable history ({e})", self.path) from None
        return history

    def generator(self, name, rng: np.random.Generator):
        """Set the numpy Generator ``rng`` to the saved bit-generator state ``name``."""
        saved = self.value(name, dict)
        try:
            rng.bit_generator.state = saved
        except (TypeError, ValueError, KeyError) as e:
            raise CheckpointError(
                f"entry {name!r} is not a state of {type(rng.bit_generator).__name__} ({e})", self.path
            ) from None
        return rng


class Checkpoint:
    """The checkpoint file of one solve.

    Parameters
    ----------
    path : str or path-like
    fingerprint : dict
        What identifies the run (:func:`solver_fingerprint` and :func:`problem_fingerprint`);
        a file written with another fingerprint is refused.
    interval : float, default 0
        Least seconds between two writes (:meth:`due`).
    """

    def __init__(self, path, fingerprint: dict, interval: float = 0.0):
        self.path = os.fspath(path)
        self.fingerprint = _canonical(fingerprint)
        self.interval = float(interval)
        self._last = -np.inf

    def due(self) -> bool:
        """Whether ``interval`` seconds have passed since the last write (always true before the first)."""
        return time.monotonic() - self._last >= self.interval

    def save(self, state: dict):
        """Write ``state`` atomically: arrays and numeric scalars as arrays, other values as JSON."""
        arrays, other = {}, {}
        for k, v in state.items():
            if k in _RESERVED:
                if k == "history":
                    other[k] = v
                    continue
                raise ValueError(f"checkpoint state may not use the name {k!r}")
            if isinstance(v, np.ndarray) or (
                isinstance(v, (bool, int, float, np.generic)) and not isinstance(v, np.str_)
            ):
                arrays[k] = np.asarray(v)
            else:
                other[k] = v
        arrays["l1scale_checkpoint"] = np.asarray(FORMAT_VERSION)
        arrays["fingerprint"] = np.frombuffer(json.dumps(self.fingerprint, sort_keys=True).encode(), dtype=np.uint8)
        arrays["json"] = np.frombuffer(json.dumps(other, default=_plain).encode(), dtype=np.uint8)
        manifest = {k: [a.dtype.str, list(a.shape)] for k, a in arrays.items()}
        arrays["manifest"] = np.frombuffer(json.dumps(manifest, sort_keys=True).encode(), dtype=np.uint8)
        with atomic_file(self.path, what="checkpoint") as f:
            np.savez(f, **arrays)
        self._last = time.monotonic()

    def load(self) -> CheckpointState | None:
        """The saved state, or None when there is no file at ``path``.

        Raises
        ------
        CheckpointError
            The file is unreadable or belongs to another run (see the module docstring).
        """
        path = self.path
        if not os.path.lexists(path):
            return None
        if os.path.isdir(path):
            raise CheckpointError("is a directory, not a checkpoint file", path)
        try:
            with open(path, "rb") as fh:
                saved, values = _read(fh)
        except CheckpointError as e:
            raise CheckpointError(e.reason, path) from None
        except Exception as e:  # any failure to parse is the one documented error
            # Whatever a damaged archive makes zipfile, zlib, json or numpy raise (BadZipFile,
            # zlib.error, EOFError, NotImplementedError, RuntimeError, OSError, MemoryError,
            # ValueError, ...) is one documented error naming the file.
            raise CheckpointError(
                f"not a readable l1scale checkpoint, corrupted or truncated ({type(e).__name__}: {e})", path
            ) from e
        if not isinstance(saved, dict):
            raise CheckpointError("not a readable l1scale checkpoint (no fingerprint)", path)
        mine = self.fingerprint
        differ = sorted(k for k in set(saved) | set(mine) if saved.get(k) != mine.get(k))
        if differ:
            detail = []
            for k in differ[:4]:
                a, b = saved.get(k), mine.get(k)
                if isinstance(a, dict) and isinstance(b, dict):
                    sub = sorted(j for j in set(a) | set(b) if a.get(j) != b.get(j))
                    detail.append(f"{k}: {', '.join(f'{j} {a.get(j)!r} != {b.get(j)!r}' for j in sub[:4])}")
                else:
                    detail.append(f"{k} {a!r} != {b!r}")
            raise CheckpointError(
                f"was written for another run (differs in {', '.join(differ)}: "
                f"{'; '.join(detail)}); delete it or give another path",
                path,
            )
        return CheckpointState(path, values)


def _read(fh):
    """(fingerprint, values) from an open checkpoint file; raises whatever a damaged file raises."""
    with np.load(fh, allow_pickle=False) as z:
        if not hasattr(z, "files"):
            raise CheckpointError("not a checkpoint (a single array, not an archive)", "")
        names = set(z.files)
        if "fingerprint" not in names:
            raise CheckpointError("not an l1scale checkpoint (no fingerprint)", "")
        if "l1scale_checkpoint" not in names:
            raise CheckpointError(
                "written by an older l1scale (format version 1, MP / RMMP), which this "
                "version does not resume; delete it",
                "",
            )
        version = int(z["l1scale_checkpoint"])
        if version > FORMAT_VERSION:
            raise CheckpointError(
                f"format version {version} is newer than this library reads ({FORMAT_VERSION}); upgrade l1scale", ""
            )
        if version < FORMAT_VERSION:
            raise CheckpointError(
                f"written by an older l1scale (format version {version}), which this "
                "version does not resume; delete it",
                "",
            )
        if "manifest" not in names:
            raise CheckpointError("not a readable l1scale checkpoint (no manifest)", "")
        manifest = json.loads(bytes(z["manifest"]).decode("utf-8"))
        if not isinstance(manifest, dict) or set(manifest) != names - {"manifest"}:
            raise CheckpointError(
                "not a readable l1scale checkpoint (its members differ from its manifest: a damaged archive)", ""
            )
        arrays = {k: z[k] for k in names - {"manifest"}}
        for k, a in arrays.items():
            if manifest[k] != [a.dtype.str, list(a.shape)]:
                raise CheckpointError(
                    f"not a readable l1scale checkpoint (member {k!r} is "
                    f"{a.dtype.str}{list(a.shape)}, its manifest says {manifest[k]})",
                    "",
                )
        saved = json.loads(bytes(arrays["fingerprint"]).decode("utf-8"))
        values = {k: a for k, a in arrays.items() if k not in _RESERVED}
        if "json" in arrays:
            other = json.loads(bytes(arrays["json"]).decode("utf-8"))
            if not isinstance(other, dict):
                raise CheckpointError("not an l1scale checkpoint (state is not a mapping)", "")
            values.update(other)
    return saved, values
