"""A portable, versioned model file: one zip archive of arrays plus JSON metadata.

Layout (format_version 1)::

    model.json      {"format": "l1scale-model", "format_version": 1,
                     "library_version": ..., "created": ..., <user metadata>}
    coef.npy        float array, (n_features,) or (n_classes, n_features)
    intercept.npy   float scalar or (n_classes,)

Arrays are plain ``.npy`` (read with ``allow_pickle=False``), so a model file
never runs code when loaded and any numpy can read it.  Writes are atomic
(:mod:`l1scale._atomic`): a failed save, a full disk or a killed process leaves no
partial file at the path and keeps any earlier model.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from datetime import UTC, datetime

import numpy as np

from l1scale._atomic import atomic_file
from l1scale.exceptions import ModelFormatError

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "load_model", "save_model"]

FORMAT_NAME = "l1scale-model"
#: Major version written and read.  Bump it only for changes old readers would
#: misread; additions that old readers can ignore keep the version.
FORMAT_VERSION = 1
_RESERVED = ("format", "format_version", "library_version", "created")


def _library_version():
    try:
        import l1scale

        version = getattr(l1scale, "__version__", None)
        if version:
            return str(version)
        from importlib.metadata import version as dist_version

        return dist_version("l1scale")
    except Exception:  # noqa: BLE001 - not installed, partial checkout: the model is still valid
        return "unknown"


def _json_default(obj):
    """numpy scalars and arrays in metadata become plain JSON values."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"metadata value of type {type(obj).__name__} is not JSON-serialisable")


def _npy_bytes(array):
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _check_arrays(coef, intercept, where):
    """Shared by save and load: float coef of 1 or 2 dims, matching intercept."""
    if coef.dtype.kind != "f" or coef.ndim not in (1, 2):
        raise ModelFormatError(f"{where}coef must be a 1-D or 2-D float array, got {coef.dtype} of shape {coef.shape}")
    expected = () if coef.ndim == 1 else (coef.shape[0],)
    if intercept.dtype.kind != "f" or intercept.shape not in {(), expected}:
        raise ModelFormatError(
            f"{where}intercept of shape {intercept.shape} does not fit coef of "
            f"shape {coef.shape} (expected a scalar or {expected})"
        )


def save_model(path, *, coef, intercept, metadata=None):
    """Write a model to ``path`` as one zip file, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        The model file; an existing file there is replaced only once the new
        one is complete and synced to disk.
    coef : array of shape (n_features,) or (n_classes, n_features)
        Binary or one-vs-rest coefficients (stored as float; float32 kept).
    intercept : float or array of shape (n_classes,)
    metadata : dict, optional
        JSON-serialisable facts (estimator parameters, classes_, n_features,
        ...); numpy scalars and arrays are converted.  ``format``,
        ``format_version``, ``library_version`` and ``created`` are set here and
        replace any values given for them.

    Raises
    ------
    DiskFullError
        No space left on the device (an OSError; the message names ``path``); any
        earlier model at ``path`` is intact.
    OSError
        The directory is missing or not writable (the message names ``path``).
    ModelFormatError
        coef / intercept have the wrong type or shapes.
    TypeError
        metadata is not JSON-serialisable.
    """
    path = os.fspath(path)
    coef = np.asarray(coef)
    intercept = np.asarray(intercept)
    if coef.dtype.kind in "iub":
        coef = coef.astype(np.float64)
    if intercept.dtype.kind in "iub":
        intercept = intercept.astype(np.float64)
    _check_arrays(coef, intercept, "")
    meta = {k: v for k, v in dict(metadata or {}).items() if k not in _RESERVED}
    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": _library_version(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    text = json.dumps({**header, **meta}, default=_json_default, indent=1, sort_keys=False)
    # Serialise everything before touching the disk, so that bad metadata or
    # arrays fail without creating any file.
    members = [
        ("model.json", text.encode("utf-8")),
        ("coef.npy", _npy_bytes(coef)),
        ("intercept.npy", _npy_bytes(intercept)),
    ]

    # atomic_file: a temporary next to ``path``, synced and renamed over it; a full disk
    # raises DiskFullError naming ``path`` and leaves the previous model in place.
    with (
        atomic_file(path, what="model file") as fh,
        zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf,
    ):  # sparse coef: zeros compress well
        for name, payload in members:
            zf.writestr(name, payload)


def load_model(path):
    """Read a model written by :func:`save_model`.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    coef : ndarray of shape (n_features,) or (n_classes, n_features)
    intercept : float or ndarray of shape (n_classes,)
    metadata : dict
        The saved metadata, including the format fields.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    OSError
        The file cannot be opened (PermissionError, ...; the message names ``path``).
    ModelFormatError
        Anything that is not a complete l1scale model this library reads: another
        kind of file, a newer format version, a corrupt, truncated or empty file, a
        directory in its place, or arrays that contradict the metadata. Whatever the
        damage, no other exception escapes. The message names ``path``.
    """
    path = os.fspath(path)
    where = f"{path}: "
    if os.path.isdir(path):
        raise ModelFormatError(f"{where}is a directory, not a model file")
    with open(path, "rb") as fh:  # FileNotFoundError, PermissionError: they name the path
        try:
            meta, coef, intercept = _read_members(fh, where)
        except ModelFormatError:
            raise
        except Exception as exc:  # any failure to parse is the one documented error
            # Whatever a damaged archive makes zipfile, zlib, json or numpy raise (BadZipFile,
            # zlib.error, EOFError, NotImplementedError for an unknown compression method,
            # RuntimeError for a set encryption flag, OSError for a bad seek, MemoryError for
            # an absurd array header, ...) is one documented error naming the file.
            raise ModelFormatError(f"{where}corrupt or truncated model file ({type(exc).__name__}: {exc})") from exc
    _check_arrays(coef, intercept, where)
    n_features = meta.get("n_features")
    if n_features is not None and n_features != coef.shape[-1]:
        raise ModelFormatError(
            f"{where}coef has {coef.shape[-1]} features but the metadata says n_features={n_features}"
        )
    return coef, (float(intercept) if intercept.ndim == 0 else intercept), meta


def _read_members(fh, where):
    """(metadata, coef, intercept) from the open model file ``fh``; raises whatever a damaged
    archive raises (the caller makes it a ModelFormatError)."""
    with zipfile.ZipFile(fh) as zf:
        names = set(zf.namelist())
        if "model.json" not in names:
            raise ModelFormatError(f"{where}not an l1scale model file (no model.json)")
        meta = json.loads(zf.read("model.json").decode("utf-8"))
        found = meta.get("format") if isinstance(meta, dict) else None
        if found != FORMAT_NAME:
            raise ModelFormatError(f"{where}not an l1scale model file (format is {found!r}, expected {FORMAT_NAME!r})")
        _check_version(meta.get("format_version"), where)
        missing = {"coef.npy", "intercept.npy"} - names
        if missing:
            raise ModelFormatError(f"{where}model file lacks {sorted(missing)}")
        coef = np.load(io.BytesIO(zf.read("coef.npy")), allow_pickle=False)
        intercept = np.load(io.BytesIO(zf.read("intercept.npy")), allow_pickle=False)
    return meta, coef, intercept


def _check_version(found, where):
    try:
        major = int(str(found).split(".")[0])
    except ValueError:
        raise ModelFormatError(f"{where}unreadable format_version {found!r}") from None
    if major > FORMAT_VERSION:
        raise ModelFormatError(
            f"{where}model format version {found} is newer than this "
            f"library reads (version {FORMAT_VERSION}); upgrade l1scale "
            f"(library {_library_version()})"
        )
    if major < 1:
        raise ModelFormatError(f"{where}invalid format_version {found!r}")
