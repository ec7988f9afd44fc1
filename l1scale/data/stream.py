"""Stream: a re-iterable sequence of row chunks.

One ``for chunk in stream`` is one pass over the data; every pass yields the
same chunks in the same order. A pass holds one chunk at a time (plus the
reader's text buffer), so data of any size can be streamed.

Streams come from svmlight files, Vowpal Wabbit files, in-memory arrays, generator
factories, or a binary chunk cache (:mod:`l1scale.data.chunk_cache`: its format, and
the sources that read and write it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import numpy as np
import scipy.sparse as sp

from . import svmlight as _svm
from ._svmlight_write import SvmlightWriter, make_csr
from ._transpose import densified_columns
from .chunk_cache import CachedFileSource, CacheSource, CacheWriter
from .chunks import Chunk, as_chunk, as_vector
from .memory import dense_enough
from .validation import check_sparse_structure
from .vw import VWSource

__all__ = ["Chunk", "Stream", "cache_to_svmlight", "write_cache"]

VW_SUFFIXES = (".vw", ".vw.gz", ".vw.bz2", ".vw.xz")  # names Stream.open reads as Vowpal Wabbit text


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
        without any). See :mod:`l1scale.data.vw` for the format and the hashing.
        """

        return cls(VWSource(path, hash_bits, hash, hash_seed, dtype, chunk_bytes, cache))

    @property
    def in_memory(self) -> bool:
        """Whether the chunks are views of arrays held in memory (:meth:`from_arrays`): a pass
        costs no reading, and what is O(n) per row (margins) fits beside them."""
        return isinstance(self._source, _ArraySource)

    @classmethod
    def from_arrays(cls, X, y, sample_weight=None, *, chunk_rows: int = 10000) -> Stream:
        """Stream in-memory data in chunks of ``chunk_rows`` rows.

        Chunks are views of C-ordered dense X or of CSR X (no copy of the data);
        other sparse formats are converted to CSR once, F-ordered dense X is
        copied one chunk at a time. A sparse X that stores at least
        ``data.memory.DENSE_SHARE`` of its entries is made a C-ordered array once (one
        scatter): its rows are then read as the dense rows they are (stochastic gradient
        descent with cumulative penalty, 20 passes over MADELON: 0.54 s as CSR, 0.31 s dense).
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
        source = CacheSource(directory, n_features)
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
            if dense_enough(X):
                if X.format not in ("csr", "csc"):
                    X = X.tocsr()
                # Its rows as a C-ordered array: X^T's columns in Fortran order, transposed (X's CSR
                # arrays are X^T's CSC ones and the other way round: a CSC X is not converted first).
                X = densified_columns(X.data, X.indices, X.indptr, X.shape[::-1], rows_major=X.format == "csc").T
            else:
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
        self.y = as_vector(y, X.shape[0], "y", "from_arrays")
        self.w = None if sample_weight is None else as_vector(sample_weight, X.shape[0], "sample_weight", "from_arrays")

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
            chunk = as_chunk(item, f"chunk {i}")
            if self.n_features is None:
                self.n_features = chunk.X.shape[1]
            elif chunk.X.shape[1] != self.n_features:
                raise ValueError(f"chunk {i} has {chunk.X.shape[1]} features, the stream has {self.n_features}")
            yield chunk


class _SvmlightSource(CachedFileSource):
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
            writer = CacheWriter(directory)
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
