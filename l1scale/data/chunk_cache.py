"""The binary chunk cache: a directory of one .npy file per array of each chunk::

    chunk-000000.data.npy, .indices.npy, .indptr.npy, .y.npy [, .sample_weight.npy]  (np.save)
    chunk-000001.data.npy  ...
    meta.json          format, version, n_features, n_samples, n_chunks, nnz, source, params, crc32

One .npy file per array, not an .npz archive: np.load reads a .npy file straight into
the array, where an archive's zip layer checks a CRC over every byte read (2.4x slower
on news20, where reading the cache is as slow as learning from it); the CRC-32 of each
array is in meta.json instead, checked when the chunk is read, with its structure.

``meta.json`` is written last and atomically, after a complete pass, so a cache
without it is incomplete and gets rebuilt. Two processes building the same
cache at the same time are not supported.

The Stream sources here: :class:`CacheSource` (a cache directory) and
:class:`CachedFileSource` (a text file parsed chunk by chunk, whose first pass writes
the cache that later passes read); :class:`CacheWriter` writes one.
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib

import numpy as np
import scipy.sparse as sp

from .._atomic import translate_write_errors
from ..exceptions import DataFormatError
from . import svmlight as _svm
from ._svmlight_write import atomic_file, make_csr
from .chunks import Chunk
from .validation import check_compressed, check_finite

__all__ = ["CACHE_FORMAT", "CACHE_VERSION", "CacheSource", "CacheWriter", "CachedFileSource", "iter_cache", "read_meta"]

CACHE_FORMAT, CACHE_VERSION = "l1scale-chunk-cache", 2
_META = "meta.json"


class CacheSource:
    def __init__(self, directory, n_features=None):
        self.directory = os.fspath(directory)
        self.meta = read_meta(self.directory, strict=True)
        self.n_features = self.meta["n_features"]
        if n_features is not None:
            n_features = _svm._check_n_features(n_features)
            if n_features < self.n_features:
                raise DataFormatError(
                    f"the cache has {self.n_features} features, more than n_features={n_features}", path=self.directory
                )
            self.n_features = n_features

    def describe(self):
        return f"cache {self.directory!r}"

    def chunks(self):
        return iter_cache(self.directory, self.meta, self.n_features)


class CachedFileSource:
    """A text file parsed chunk by chunk (``_parse``), with an optional binary chunk cache:
    written during the first pass, read by the later ones (and by the first, when it is
    complete and the file's name, size and mtime and the parsing options match)."""

    path: str
    cache: str | None
    requested: dict

    def _source_info(self):
        st = os.stat(self.path)
        return {"name": os.path.basename(self.path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}

    def _parse(self):  # pragma: no cover - interface
        raise NotImplementedError

    def _cache_meta(self):
        """The cache's metadata when it is complete and of this file with these options."""
        meta = read_meta(self.cache)
        if meta and meta.get("source") == self._source_info() and meta.get("params") == self.requested:
            return meta
        return None

    def chunks(self):
        if self.cache is not None:
            meta = self._cache_meta()
            if meta is not None:
                self.n_features = meta["n_features"]
                yield from iter_cache(self.cache, meta)
                return
        info = None if self.cache is None else self._source_info()
        writer = None if self.cache is None else CacheWriter(self.cache)
        for chunk in self._parse():
            if writer is not None:
                writer.add(chunk)
            yield chunk
        if writer is not None:
            writer.finish(self.n_features, source=info, params=self.requested)


def read_meta(directory, *, strict=False):
    """The cache's metadata, or None when the cache is absent, incomplete, foreign or
    damaged (with ``strict``: a DataFormatError saying which)."""
    path = os.path.join(directory, _META)
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
        problem = _meta_problem(meta)
    except (OSError, ValueError) as e:
        problem = f"missing or unreadable meta.json ({e})"
    if problem is None:
        return meta
    if strict:
        raise DataFormatError(f"not a complete l1scale chunk cache: {problem}", path=path)
    return None


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _meta_problem(meta):
    """What is wrong with a cache's meta.json, or None."""
    if not isinstance(meta, dict) or meta.get("format") != CACHE_FORMAT:
        return "not an l1scale chunk cache"
    if meta.get("version") != CACHE_VERSION:
        return f"format version {meta.get('version')!r}, this l1scale reads {CACHE_VERSION}"
    for key in ("n_features", "n_samples", "n_chunks", "nnz"):
        if not _is_count(meta.get(key)):
            return f"{key} is {meta.get(key)!r}, not a count"
    checksums = meta.get("crc32")
    if checksums is not None and not (
        isinstance(checksums, list)
        and len(checksums) == meta["n_chunks"]
        and all(isinstance(c, dict) and all(_is_count(v) for v in c.values()) for c in checksums)
    ):
        return "crc32 is not one table of checksums per chunk"
    return None


_CHUNK_ARRAYS = ("data", "indices", "indptr", "y", "sample_weight")


def _chunk_file(directory, i, name):
    return os.path.join(directory, f"chunk-{i:06d}.{name}.npy")


def iter_cache(directory, meta, n_features=None):
    width = meta["n_features"] if n_features is None else n_features  # wider: trailing zero columns
    checksums = meta.get("crc32")
    rows = 0
    for i in range(meta["n_chunks"]):
        chunk = _load_chunk(directory, i, width, None if checksums is None else checksums[i])
        rows += chunk.X.shape[0]
        yield chunk
    if rows != meta["n_samples"]:
        raise DataFormatError(
            f"the chunks hold {rows} rows, meta.json says {meta['n_samples']}", path=os.path.join(directory, _META)
        )


def _load_chunk(directory, i, width, checksums) -> Chunk:
    """Chunk ``i`` of a cache, every array checked before anything indexes with it: its
    CRC-32 against meta.json's (caches written since checksums were added), then its
    structure against the cache's width (index arrays edited, or a width edited in
    meta.json), and its values finite. Any failure is a DataFormatError naming the file."""
    arrays = {}
    for name in _CHUNK_ARRAYS:
        path = _chunk_file(directory, i, name)
        if name == "sample_weight" and not os.path.exists(path):
            arrays[name] = None
            continue
        try:
            with open(path, "rb") as f:
                array = np.load(f, allow_pickle=False)
        except Exception as e:  # a damaged .npy header can raise almost anything
            raise DataFormatError(f"unreadable cache chunk ({type(e).__name__}: {e})", path=path) from e
        if checksums is not None and zlib.crc32(_bytes_of(array)) != checksums.get(name):
            raise DataFormatError(
                "cache chunk is corrupted (its CRC-32 differs from meta.json's); rebuild the cache", path=path
            )
        if array.ndim != 1:
            raise DataFormatError(f"cache chunk array must be one-dimensional, got shape {array.shape}", path=path)
        arrays[name] = array
    data, indices, indptr, y, w = (arrays[name] for name in _CHUNK_ARRAYS)
    path = _chunk_file(directory, i, "indices")
    if data.dtype not in (np.float32, np.float64):
        raise DataFormatError(f"cache values must be float32 or float64, got {data.dtype}", path=path)
    check_compressed(
        data,
        indices,
        indptr,
        np.shape(indptr)[0] - 1,
        width,
        name=f"chunk {i} (read {width} features wide, as meta.json or n_features says)",
        path=path,
    )
    rows = indptr.shape[0] - 1
    for name, v in (("y", y), ("sample_weight", w)):
        if v is not None and (v.ndim != 1 or v.shape[0] != rows or not np.issubdtype(v.dtype, np.number)):
            raise DataFormatError(
                f"{name} must be {rows} numbers (one per row), got {v.dtype} of shape {v.shape}",
                path=_chunk_file(directory, i, name),
            )
    for name, v in (("data", data), ("y", y), ("sample_weight", w)):
        if v is not None:
            check_finite(v, f"{name} of cache chunk {i}", path=_chunk_file(directory, i, name))
    if w is not None and (w < 0).any():
        raise DataFormatError("negative sample weight", path=_chunk_file(directory, i, "sample_weight"))
    X = make_csr(data, indices.astype(np.int64, copy=False), indptr.astype(np.int64, copy=False), (rows, width))
    return Chunk(X, y.astype(np.float64, copy=False), None if w is None else w.astype(np.float64, copy=False))


def _bytes_of(array):
    """The array's memory as bytes (without a copy when contiguous), for its checksum; any
    shape and dtype a damaged header may declare (a zero-length axis, a record type)."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


class CacheWriter:
    """Writes chunk files as a pass goes, and meta.json after it completes."""

    def __init__(self, directory):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        # meta.json goes first: from now on the directory is not a complete cache.
        names = sorted(n for n in os.listdir(directory) if n.startswith("chunk-") and n.endswith((".npy", ".npz")))
        for name in [_META] + names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(directory, name))
        self.n_chunks = self.n_samples = self.nnz = 0
        self.width = 0
        self.checksums = []

    def add(self, chunk: Chunk) -> None:
        X = chunk.X if sp.issparse(chunk.X) else sp.csr_matrix(chunk.X)
        arrays = {
            "data": X.data,
            "indices": X.indices.astype(np.int64, copy=False),
            "indptr": X.indptr.astype(np.int64, copy=False),
            "y": np.asarray(chunk.y),
            "sample_weight": chunk.sample_weight,
        }
        checksums = {}
        for name, array in arrays.items():
            if array is not None:
                array = np.ascontiguousarray(array)
                path = _chunk_file(self.directory, self.n_chunks, name)
                with translate_write_errors(path):  # a full disk: DiskFullError naming the file
                    np.save(path, array, allow_pickle=False)
                checksums[name] = zlib.crc32(_bytes_of(array))
        self.checksums.append(checksums)
        self.n_chunks += 1
        self.n_samples += X.shape[0]
        self.nnz += X.nnz
        self.width = max(self.width, X.shape[1])

    def finish(self, n_features, *, source=None, params=None) -> None:
        meta = {
            "format": CACHE_FORMAT,
            "version": CACHE_VERSION,
            "n_features": int(self.width if n_features is None else n_features),
            "n_samples": self.n_samples,
            "n_chunks": self.n_chunks,
            "nnz": self.nnz,
            "source": source,
            "params": params,
            "crc32": self.checksums,
        }
        with atomic_file(os.path.join(self.directory, _META)) as f:
            f.write(json.dumps(meta, indent=1).encode())
