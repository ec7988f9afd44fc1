"""Stream: a re-iterable sequence of row chunks.

One ``for chunk in stream`` is one pass over the data; every pass yields the
same chunks in the same order. A pass holds one chunk at a time (plus the
reader's text buffer), so data of any size can be streamed.

Streams come from svmlight files, in-memory arrays, generator factories, or a
binary chunk cache. The cache is a directory::

    chunk-000000.data.npy, .indices.npy, .indptr.npy, .y.npy [, .sample_weight.npy]  (np.save)
    chunk-000001.data.npy  ...
    meta.json          format, version, n_features, n_samples, n_chunks, nnz, source, params

One .npy file per array, not an .npz archive: np.load reads a .npy file straight into
the array, where an archive's zip layer checks a CRC over every byte read (2.4x slower
on news20, where reading the cache is as slow as learning from it).

``meta.json`` is written last and atomically, after a complete pass, so a cache
without it is incomplete and gets rebuilt. Two processes building the same
cache at the same time are not supported.
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._atomic import translate_write_errors
from ..exceptions import DataFormatError
from . import svmlight as _svm
from ._svmlight_write import SvmlightWriter, atomic_file, make_csr
from .validation import check_compressed, check_finite, check_sparse_structure

__all__ = ["Chunk", "Stream", "cache_to_svmlight", "write_cache"]

CACHE_FORMAT, CACHE_VERSION = "l1scale-chunk-cache", 2
VW_SUFFIXES = (".vw", ".vw.gz", ".vw.bz2", ".vw.xz")  # names Stream.open reads as Vowpal Wabbit text
_META = "meta.json"


class Chunk(NamedTuple):
    """Rows of a stream.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix (int64 indices) or C-contiguous ndarray, shape (rows, n_features)
    y : ndarray of float64, shape (rows,)
    sample_weight : ndarray of float64, shape (rows,), or None
    """

    X: object
    y: np.ndarray
    sample_weight: np.ndarray | None = None


def _as_vector(v, rows: int, what: str, where: str) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1 or v.shape[0] != rows:
        raise ValueError(f"{where}: {what} must be 1-D with {rows} entries, got shape {v.shape}")
    return v


def _as_chunk(item, where: str) -> Chunk:
    """Normalise a Chunk or an (X, y[, sample_weight]) tuple to the Chunk contract."""
    if not isinstance(item, tuple) or len(item) not in (2, 3):
        raise TypeError(f"{where}: expected a Chunk or an (X, y[, sample_weight]) tuple, got {type(item).__name__}")
    X, y, w = (tuple(item) + (None,))[:3]
    if sp.issparse(X):
        check_sparse_structure(X, where)  # before scipy converts it, trusting its indices
        X = sp.csr_matrix(X)
        data = X.data if X.dtype in (np.float32, np.float64) else X.data.astype(np.float64)
        X = make_csr(
            data,
            X.indices.astype(np.int64, copy=False),
            X.indptr.astype(np.int64, copy=False),
            X.shape,
            sorted_indices=X.has_sorted_indices,
        )
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"{where}: X must be 2-D, got shape {X.shape}")
        X = np.ascontiguousarray(X, dtype=X.dtype if X.dtype in (np.float32, np.float64) else np.float64)
    y = _as_vector(y, X.shape[0], "y", where)
    w = None if w is None else _as_vector(w, X.shape[0], "sample_weight", where)
    return Chunk(X, y, w)


class Stream:
    """A re-iterable source of row chunks; ``for chunk in stream`` is one pass.

    Build one with :meth:`from_svmlight`, :meth:`from_vw`, :meth:`from_arrays`,
    :meth:`from_generator`, :meth:`from_cache` or :meth:`open`.

    Attributes
    ----------
    n_features : int or None
        Width of every chunk; None until known (for svmlight files: until the
        first pass starts; for generators without it: until the first chunk).
    n_samples : int or None
        Number of rows; None until known (after the first complete pass).
    passes : int
        Number of complete passes so far.
    """

    def __init__(self, source, *, n_samples=None):
        self._source = source
        self.n_samples = n_samples
        self.passes = 0

    @property
    def n_features(self):
        return self._source.n_features

    def __iter__(self) -> Iterator[Chunk]:
        rows = 0
        for chunk in self._source.chunks():
            rows += chunk.X.shape[0]
            yield chunk
        self.n_samples = rows
        self.passes += 1

    def label_pass(self) -> Iterator[tuple[np.ndarray, np.ndarray | None, int]]:
        """One pass yielding ``(y, sample_weight, nnz)`` per chunk: what a label scan reads.

        A text source without a complete cache scans the labels without parsing the
        features (svmlight: about 5x faster than a parse; a malformed feature is then
        reported by the first pass that parses it); other sources read their chunks.
        """
        fast = getattr(self._source, "label_blocks", None)
        blocks = None if fast is None else fast()
        if blocks is None:
            for chunk in self:
                nnz = int(chunk.X.nnz) if sp.issparse(chunk.X) else int(np.count_nonzero(chunk.X))
                yield chunk.y, chunk.sample_weight, nnz
            return
        rows = 0
        for y, nnz in blocks:
            if y.shape[0]:
                rows += y.shape[0]
                yield y, None, nnz
        self.n_samples = rows
        self.passes += 1

    def __repr__(self):
        return (
            f"Stream({self._source.describe()}, n_features={self.n_features}, "
            f"n_samples={self.n_samples}, passes={self.passes})"
        )

    @classmethod
    def from_svmlight(
        cls, path, *, n_features=None, zero_based="auto", dtype=np.float64, chunk_bytes: int = 16 << 20, cache=None
    ) -> Stream:
        """Stream an svmlight file (plain, .gz, .bz2 or .xz).

        Parameters
        ----------
        path : str or path-like
        n_features : int, optional
            Width of X. When None it is found by a pre-scan of the file at the
            start of the first pass (like ``zero_based="auto"``); pass both to
            read the text only once.
        zero_based : bool or "auto"
        dtype : float32 or float64
        chunk_bytes : int
            Text parsed per chunk; it sets the chunk sizes.
        cache : str or path-like, optional
            Directory of a binary chunk cache: written during the first pass,
            read by later passes (and by the first, when it is complete and the
            file's size and mtime match those recorded).
        """
        return cls(_SvmlightSource(path, n_features, zero_based, dtype, chunk_bytes, cache))

    @classmethod
    def from_vw(
        cls,
        path,
        hash_bits: int = 18,
        *,
        hash: str = "strings",
        hash_seed: int = 0,
        dtype=np.float64,
        chunk_bytes: int = 16 << 20,
        cache=None,
    ) -> Stream:
        """Stream a Vowpal Wabbit text file (plain, .gz, .bz2 or .xz), its feature
        names hashed into ``n_features = 2**hash_bits`` columns.

        ``hash`` ("strings" or "all") and ``hash_seed`` are VW's hasher and seed;
        ``dtype``, ``chunk_bytes`` and ``cache`` are as in :meth:`from_svmlight`.
        Chunks carry the importance weights as ``sample_weight`` (None for a chunk
        without any). See :mod:`l1scale.data.hashing` for the format and the hashing.
        """
        from .hashing import _VWSource  # hashing imports this module

        return cls(_VWSource(path, hash_bits, hash, hash_seed, dtype, chunk_bytes, cache))

    @classmethod
    def from_arrays(cls, X, y, sample_weight=None, *, chunk_rows: int = 10000) -> Stream:
        """Stream in-memory data in chunks of ``chunk_rows`` rows.

        Chunks are views of C-ordered dense X or of CSR X (no copy of the data);
        other sparse formats are converted to CSR once, F-ordered dense X is
        copied one chunk at a time.
        """
        source = _ArraySource(X, y, sample_weight, chunk_rows)
        return cls(source, n_samples=source.y.shape[0])

    @classmethod
    def from_generator(cls, factory: Callable[[], Iterator], *, n_features) -> Stream:
        """Stream chunks produced by ``factory()``, called afresh for each pass.

        ``factory()`` returns an iterator of :class:`Chunk` or ``(X, y[, sample_weight])``
        tuples; it must give the same chunks on every pass. ``n_features`` may be
        None, then the first chunk's width is used; every chunk must have it.
        """
        return cls(_GeneratorSource(factory, n_features))

    @classmethod
    def from_cache(cls, directory, *, n_features=None) -> Stream:
        """Stream a complete binary chunk cache (see :func:`write_cache`).

        ``n_features`` widens the cache's X (the missing trailing columns are zero);
        narrower than the cache's width is an error.
        """
        source = _CacheSource(directory, n_features)
        return cls(source, n_samples=source.meta["n_samples"])

    @classmethod
    def open(cls, path_or_obj, **kw) -> Stream:
        """A Stream for ``path_or_obj``: a Stream (returned as is), a cache directory
        (:meth:`from_cache`), a Vowpal Wabbit file (a name ending in .vw, .vw.gz, .vw.bz2 or
        .vw.xz: :meth:`from_vw` with ``kw``) or an svmlight file (:meth:`from_svmlight` with ``kw``)."""
        if isinstance(path_or_obj, Stream):
            if kw:
                raise TypeError(f"Stream.open got options {sorted(kw)} for an existing Stream")
            return path_or_obj
        path = os.fspath(path_or_obj)
        if os.path.isdir(path):
            if kw:
                raise TypeError(f"Stream.open got options {sorted(kw)} for the cache directory {path}")
            return cls.from_cache(path)
        if path.lower().endswith(VW_SUFFIXES):
            return cls.from_vw(path, **kw)
        return cls.from_svmlight(path, **kw)


# ------------------------------------------------------------------------- sources


class _ArraySource:
    def __init__(self, X, y, sample_weight, chunk_rows):
        if chunk_rows < 1:
            raise ValueError(f"chunk_rows must be positive, got {chunk_rows}")
        if sp.issparse(X):
            check_sparse_structure(X)  # the chunks below index X's arrays directly
            X = sp.csr_matrix(X)  # CSC/COO/...: one conversion; CSR: no copy
            if not X.has_sorted_indices:
                X = X.sorted_indices()
        else:
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D, got shape {X.shape}")
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        self.X, self.chunk_rows, self.n_features = X, chunk_rows, X.shape[1]
        self.y = _as_vector(y, X.shape[0], "y", "from_arrays")
        self.w = (
            None if sample_weight is None else _as_vector(sample_weight, X.shape[0], "sample_weight", "from_arrays")
        )

    def describe(self):
        return f"arrays {type(self.X).__name__}"

    def chunks(self):
        X, n = self.X, self.X.shape[0]
        for a in range(0, n, self.chunk_rows):
            b = min(n, a + self.chunk_rows)
            if sp.issparse(X):
                lo, hi = X.indptr[a], X.indptr[b]
                Xc = make_csr(
                    X.data[lo:hi],
                    X.indices[lo:hi].astype(np.int64, copy=False),
                    (X.indptr[a : b + 1] - lo).astype(np.int64, copy=False),
                    (b - a, X.shape[1]),
                )
            else:
                Xc = np.ascontiguousarray(X[a:b])
            yield Chunk(Xc, self.y[a:b], None if self.w is None else self.w[a:b])


class _GeneratorSource:
    def __init__(self, factory, n_features):
        if not callable(factory):
            raise TypeError("from_generator needs a callable returning a fresh iterator for each pass")
        self.factory, self.n_features = factory, n_features

    def describe(self):
        return f"generator {getattr(self.factory, '__name__', self.factory)!r}"

    def chunks(self):
        for i, item in enumerate(self.factory()):
            chunk = _as_chunk(item, f"chunk {i}")
            if self.n_features is None:
                self.n_features = chunk.X.shape[1]
            elif chunk.X.shape[1] != self.n_features:
                raise ValueError(f"chunk {i} has {chunk.X.shape[1]} features, the stream has {self.n_features}")
            yield chunk


class _CacheSource:
    def __init__(self, directory, n_features=None):
        self.directory = os.fspath(directory)
        self.meta = _read_meta(self.directory, strict=True)
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
        return _iter_cache(self.directory, self.meta, self.n_features)


class _CachedFileSource:
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
        meta = _read_meta(self.cache)
        if meta and meta.get("source") == self._source_info() and meta.get("params") == self.requested:
            return meta
        return None

    def chunks(self):
        if self.cache is not None:
            meta = self._cache_meta()
            if meta is not None:
                self.n_features = meta["n_features"]
                yield from _iter_cache(self.cache, meta)
                return
        info = None if self.cache is None else self._source_info()
        writer = None if self.cache is None else _CacheWriter(self.cache)
        for chunk in self._parse():
            if writer is not None:
                writer.add(chunk)
            yield chunk
        if writer is not None:
            writer.finish(self.n_features, source=info, params=self.requested)


class _SvmlightSource(_CachedFileSource):
    def __init__(self, path, n_features, zero_based, dtype, chunk_bytes, cache):
        zero_based = _svm._check_zero_based(zero_based)
        n_features = _svm._check_n_features(n_features)
        self.path = os.fspath(path)
        if not os.path.isfile(self.path):
            raise FileNotFoundError(2, "no such svmlight file", self.path)
        self.dtype = _svm._check_dtype(dtype)
        self.requested = {"n_features": n_features, "zero_based": zero_based, "dtype": self.dtype.name}
        self.n_features, self.zero_based, self.chunk_bytes = n_features, zero_based, chunk_bytes
        self.cache = None if cache is None else os.fspath(cache)
        self._resolved = False

    def describe(self):
        return f"svmlight {self.path!r}" + ("" if self.cache is None else f", cache={self.cache!r}")

    def _resolve(self):
        if not self._resolved:  # pre-scan once per Stream, not once per pass
            self.zero_based, self.n_features = _svm.resolve_layout(
                self.path, self.zero_based, self.n_features, self.chunk_bytes, need_width=True
            )
            self._resolved = True

    def label_blocks(self):
        """(labels, nnz) per block of text (see :meth:`Stream.label_pass`), or None when a
        complete cache will serve the pass instead (reading it is faster still)."""
        if self.cache is not None and self._cache_meta() is not None:
            return None
        self._resolve()
        return _svm.scan_labels(self.path, self.chunk_bytes)

    def _parse(self):
        self._resolve()
        for X, y in _svm._iter_chunks(self.path, self.n_features, self.zero_based, self.dtype, self.chunk_bytes, None):
            yield Chunk(X, y)


# --------------------------------------------------------------------------- cache


def _read_meta(directory, *, strict=False):
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


def _iter_cache(directory, meta, n_features=None):
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


class _CacheWriter:
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


def write_cache(stream_or_path, directory, **kw) -> Stream:
    """Write a binary chunk cache of an svmlight file or of any Stream.

    Parameters
    ----------
    stream_or_path : Stream, str or path-like
        A path is read with :meth:`Stream.from_svmlight` (``kw`` are its options).
    directory : str or path-like
        The cache directory (created if needed; old chunk files are replaced).

    Returns
    -------
    Stream
        ``Stream.from_cache(directory)``.
    """
    directory = os.fspath(directory)
    if isinstance(stream_or_path, Stream):
        if kw:
            raise TypeError(f"write_cache got options {sorted(kw)} for an existing Stream")
        source = stream_or_path._source
        if getattr(source, "cache", None) == directory or getattr(source, "directory", None) == directory:
            for _ in stream_or_path:  # its own cache: one pass completes it
                pass
        else:
            writer = _CacheWriter(directory)
            for chunk in stream_or_path:
                writer.add(chunk)
            writer.finish(stream_or_path.n_features)
    else:
        for _ in Stream.from_svmlight(stream_or_path, cache=directory, **kw):
            pass
    return Stream.from_cache(directory)


def cache_to_svmlight(directory, path, *, zero_based=False, comment=None) -> None:
    """Write a binary chunk cache back as an svmlight file (atomically; see
    :func:`~l1scale.data.svmlight.dump_svmlight`). Sample weights are not written."""
    with SvmlightWriter(path, zero_based=zero_based, comment=comment) as writer:
        for chunk in Stream.from_cache(directory):
            writer.write(chunk.X, chunk.y)
