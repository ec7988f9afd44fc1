"""A portable, versioned model file: one zip archive of arrays plus JSON metadata.

Layout (format_version 1)::

    model.json      {"format": "l1scale-model", "format_version": 1,
                     "library_version": ..., "created": ..., <user metadata>}
    coef.npy        float array, (n_features,) or (n_classes, n_features)
    intercept.npy   float scalar or (n_classes,)

Estimators (:meth:`~l1scale.SparseLogisticRegression.save`) add to the metadata:
``feature_names`` (with ``feature_names_source``: "columns" of a DataFrame or a
"vocabulary"), ``class_weight_items`` (``[[class, weight], ...]``, the class keys with
their JSON types), ``n_iter`` and ``result`` (objective, certificate, stop reason and
iterations per binary problem: one per row of coefficients, or, for a multinomial model
(``"multi_class": "multinomial"``, one softmax problem for every row), one). Older files
without them still load, as do multinomial files that repeat the one summary per row.

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

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "check_consistency", "is_model_file", "load_model", "save_model"]

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


def check_consistency(coef, metadata, where=""):
    """Raise ModelFormatError where the metadata contradict the coefficients of shape
    ``coef.shape``: the classes and the rows (one row for two classes, one per class
    otherwise), n_features and the width, feature names and the width, one n_iter and lam
    per row (a multinomial model, ``multi_class`` "multinomial", may have one ``result``
    summary: its one problem). Keys that are absent are not checked (older files)."""
    rows = 1 if len(coef.shape) == 1 else coef.shape[0]
    width = coef.shape[-1]
    n_features = metadata.get("n_features")
    if n_features is not None and n_features != width:
        raise ModelFormatError(f"{where}coef has {width} features but the metadata says n_features={n_features}")
    classes = metadata.get("classes")
    if classes is not None:
        if not isinstance(classes, list) or len(classes) < 2:
            raise ModelFormatError(f"{where}classes must be a list of at least two labels, got {classes!r}")
        expected = 1 if len(classes) == 2 else len(classes)
        if rows != expected:
            raise ModelFormatError(
                f"{where}{len(classes)} classes but {rows} row{'s' if rows != 1 else ''} of coefficients "
                f"(expected {expected}: {'one for two classes' if expected == 1 else 'one per class'})"
            )
    names = metadata.get("feature_names")
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ModelFormatError(f"{where}feature_names must be a list of strings")
        if len(names) != width:
            raise ModelFormatError(f"{where}{len(names)} feature names for {width} features (coef's width)")
    multinomial = metadata.get("multi_class") == "multinomial"
    for key in ("n_iter", "lam", "result"):
        value = metadata.get(key)
        allowed = (1, rows) if key == "result" and multinomial else (rows,)
        if value is not None and classes is not None and isinstance(value, list) and len(value) not in allowed:
            one = " (one for a multinomial model)" if key == "result" and multinomial else ""
            raise ModelFormatError(f"{where}{len(value)} values of {key} for {rows} rows of coefficients{one}")


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
        coef / intercept have the wrong type or shapes, or the metadata contradict them
        (:func:`check_consistency`).
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
    check_consistency(coef, json.loads(json.dumps(meta, default=_json_default)), f"{path}: ")
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
    path : str, os.PathLike or binary file object
        A file object (``open(..., "rb")``, ``io.BytesIO``) is read from its current
        position and not closed; errors name it by its ``name`` when it has one.

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
        damage, no other exception escapes; metadata that contradict the arrays
        (:func:`check_consistency`: classes and rows, widths, feature names) too.
        The message names ``path``.
    """
    if hasattr(path, "read"):
        where = f"{getattr(path, 'name', None) or 'model file object'}: "
        meta, coef, intercept = _read_guarded(path, where)
    else:
        path = os.fspath(path)
        where = f"{path}: "
        if os.path.isdir(path):
            raise ModelFormatError(f"{where}is a directory, not a model file")
        with open(path, "rb") as fh:  # FileNotFoundError, PermissionError: they name the path
            meta, coef, intercept = _read_guarded(fh, where)
    _check_arrays(coef, intercept, where)
    check_consistency(coef, meta, where)
    return coef, (float(intercept) if intercept.ndim == 0 else intercept), meta


def is_model_file(path) -> bool:
    """Whether ``path`` is a file that starts as a model file does (a zip archive holding
    ``model.json``); False for anything else, unreadable files included."""
    try:
        if not os.path.isfile(path) or not zipfile.is_zipfile(path):
            return False
        with zipfile.ZipFile(path) as zf:
            return "model.json" in zf.namelist()
    except Exception:  # noqa: BLE001 - any failure to read it: not a model file
        return False


def _read_guarded(fh, where):
    try:
        return _read_members(fh, where)
    except ModelFormatError:
        raise
    except Exception as exc:  # any failure to parse is the one documented error
        # Whatever a damaged archive makes zipfile, zlib, json or numpy raise (BadZipFile,
        # zlib.error, EOFError, NotImplementedError for an unknown compression method,
        # RuntimeError for a set encryption flag, OSError for a bad seek, MemoryError for
        # an absurd array header, ...) is one documented error naming the file.
        raise ModelFormatError(f"{where}corrupt or truncated model file ({type(exc).__name__}: {exc})") from exc


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
