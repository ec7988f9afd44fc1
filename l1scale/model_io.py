"""A portable, versioned model file: one zip archive of arrays plus JSON metadata.

Layout (format_version 1)::

    model.json      {"format": "l1scale-model", "format_version": 1,
                     "library_version": ..., "created": ..., <user metadata>}
    coef.npy        float array, (n_features,) or (n_classes, n_features)
    intercept.npy   float scalar or (n_classes,)

Arrays are plain ``.npy`` (read with ``allow_pickle=False``), so a model file
never runs code when loaded and any numpy can read it.  Writes are atomic:
a failed save leaves no partial file behind and keeps any earlier model.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
import zlib
from datetime import datetime, timezone

import numpy as np

from l1scale.exceptions import ModelFormatError

__all__ = ["save_model", "load_model", "FORMAT_NAME", "FORMAT_VERSION"]

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
    except Exception:  # not installed, partial checkout: the model is still valid
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
        raise ModelFormatError(f"{where}coef must be a 1-D or 2-D float array, got "
                               f"{coef.dtype} of shape {coef.shape}")
    expected = () if coef.ndim == 1 else (coef.shape[0],)
    if intercept.dtype.kind != "f" or intercept.shape not in {(), expected}:
        raise ModelFormatError(f"{where}intercept of shape {intercept.shape} does not fit coef of "
                               f"shape {coef.shape} (expected a scalar or {expected})")


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
    header = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
              "library_version": _library_version(),
              "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    text = json.dumps({**header, **meta}, default=_json_default, indent=1, sort_keys=False)
    # Serialise everything before touching the disk, so that bad metadata or
    # arrays fail without creating any file.
    members = [("model.json", text.encode("utf-8")), ("coef.npy", _npy_bytes(coef)),
               ("intercept.npy", _npy_bytes(intercept))]

    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                                   dir=directory)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot write model file {path!r}: {exc.strerror}") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED,
                                 compresslevel=1) as zf:  # sparse coef: zeros compress well
                for name, payload in members:
                    zf.writestr(name, payload)
            fh.flush()
            os.fsync(fh.fileno())
        _match_permissions(tmp, path)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_directory(directory)


def _match_permissions(tmp, path):
    """mkstemp makes 0600 files; give the model the mode it replaces, or the one
    a plain open() would give.  Best effort: some file systems refuse chmod."""
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError:
        mode = 0o666 & ~_umask()
    try:
        os.chmod(tmp, mode)
    except OSError:
        pass


def _umask():
    try:  # Linux reports it without changing it (os.umask would, racing other threads)
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def _fsync_directory(directory):
    """Make the rename itself durable (POSIX); best effort elsewhere."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


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
    ModelFormatError
        Not an l1scale model, a newer format version than this library reads,
        a corrupt or truncated file, or arrays that contradict the metadata.
        The message names ``path``.
    """
    path = os.fspath(path)
    where = f"{path}: "
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            if "model.json" not in names:
                raise ModelFormatError(f"{where}not an l1scale model file (no model.json)")
            meta = json.loads(zf.read("model.json").decode("utf-8"))
            found = meta.get("format") if isinstance(meta, dict) else None
            if found != FORMAT_NAME:
                raise ModelFormatError(f"{where}not an l1scale model file (format is {found!r}, "
                                       f"expected {FORMAT_NAME!r})")
            _check_version(meta.get("format_version"), where)
            missing = {"coef.npy", "intercept.npy"} - names
            if missing:
                raise ModelFormatError(f"{where}model file lacks {sorted(missing)}")
            coef = np.load(io.BytesIO(zf.read("coef.npy")), allow_pickle=False)
            intercept = np.load(io.BytesIO(zf.read("intercept.npy")), allow_pickle=False)
    except ModelFormatError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, UnicodeDecodeError, ValueError,
            KeyError) as exc:  # ValueError covers bad JSON and bad / pickled .npy data
        raise ModelFormatError(f"{where}corrupt or truncated model file ({exc})") from exc
    _check_arrays(coef, intercept, where)
    n_features = meta.get("n_features")
    if n_features is not None and n_features != coef.shape[-1]:
        raise ModelFormatError(f"{where}coef has {coef.shape[-1]} features but the metadata "
                               f"says n_features={n_features}")
    return coef, (float(intercept) if intercept.ndim == 0 else intercept), meta


def _check_version(found, where):
    try:
        major = int(str(found).split(".")[0])
    except ValueError:
        raise ModelFormatError(f"{where}unreadable format_version {found!r}") from None
    if major > FORMAT_VERSION:
        raise ModelFormatError(f"{where}model format version {found} is newer than this "
                               f"library reads (version {FORMAT_VERSION}); upgrade l1scale "
                               f"(library {_library_version()})")
    if major < 1:
        raise ModelFormatError(f"{where}invalid format_version {found!r}")
