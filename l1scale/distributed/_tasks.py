"""What runs on the workers: reading a partition, and the map step of each kind of pass.

Every function here is a plain module-level function of picklable arguments, so that a
worker process (``LocalCluster(processes=True)``, a real cluster) can run it, and pure
(it never changes its arguments), so that the scheduler may run it again on another
worker when the first one dies. A partition is either its source (re-read at every
pass: ``persist=False``) or the list of its chunks already read into worker memory
(``persist=True``); :func:`apply` turns both into a :class:`~l1scale.data.stream.Stream`
and names the partition in every error.
"""

from __future__ import annotations

import errno
import os
import socket
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..data import svmlight as _svm
from ..data._svmlight_write import make_csr
from ..data.chunks import Chunk, as_chunk
from ..data.stream import Stream
from ..data.validation import check_compressed, check_finite
from ..problems.stream import StreamProblem, StreamScan, scan_stream


class PartitionSpec(NamedTuple):
    """Where a partition's rows come from.

    Attributes
    ----------
    index : int
        Position of the partition in the data set.
    kind : str
        ``"svmlight"`` (text, plain or compressed), ``"cache"`` (a binary chunk-cache
        directory), ``"parquet"`` (columns label, indices, values [, weight]) or
        ``"chunks"`` (computed by a dask collection: always held in memory).
    source : str
        The path (or a description of the collection's partition).
    n_features : int or None
        The data set's width (every partition is read at this width).
    zero_based : bool or "auto"
        svmlight index base, the same for every partition.
    chunk_bytes : int
        Text parsed per chunk.
    """

    index: int
    kind: str
    source: str
    n_features: int | None
    zero_based: object = "auto"
    chunk_bytes: int = 16 << 20

    def describe(self) -> str:
        return f"partition {self.index} ({self.kind} {self.source!r})"


class ProblemSpec(NamedTuple):
    """What a worker needs to rebuild the driver's problem on one partition: the labels
    mapped to +-1 and the class weights exactly as :meth:`StreamProblem.chunks` does
    over the whole data set (``scan`` is the data set's, not the partition's)."""

    loss: str
    l1_ratio: float
    fit_intercept: bool
    positive_class: object
    class_weight: dict
    scan: StreamScan


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return socket.gethostname()


def _parquet_chunks(path, n_features, batch_rows=65536):
    """Row chunks of a parquet file with columns label, indices (list of int), values
    (list of float) and optionally weight (pyarrow is imported only here)."""
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
        cols = batch.schema.names
        idx, val = batch.column(cols.index("indices")), batch.column(cols.index("values"))
        indptr = np.asarray(idx.offsets, dtype=np.int64)
        indptr = indptr - indptr[0]
        indices = np.asarray(idx.flatten(), dtype=np.int64)
        values = np.asarray(val.flatten(), dtype=np.float64)
        # The kernels trust indices; a partition wider than the data set's width (or one
        # swapped for another between passes) must be an error here, not a segfault there.
        check_compressed(values, indices, indptr, len(batch), n_features, name="parquet batch", path=path)
        check_finite(values, "values", path=path)
        X = make_csr(values, indices, indptr, (len(batch), n_features))
        w = np.asarray(batch.column(cols.index("weight")), dtype=np.float64) if "weight" in cols else None
        yield Chunk(X, np.asarray(batch.column(cols.index("label")), dtype=np.float64), w)


def open_partition(spec: PartitionSpec) -> Stream:
    """A Stream reading the partition from its source (on the worker)."""
    if spec.kind == "svmlight":
        return Stream.from_svmlight(
            spec.source, n_features=spec.n_features, zero_based=spec.zero_based, chunk_bytes=spec.chunk_bytes
        )
    if spec.kind == "cache":
        return Stream.from_cache(spec.source, n_features=spec.n_features)
    if spec.kind == "parquet":
        if not os.path.exists(spec.source):
            raise FileNotFoundError(errno.ENOENT, "no such parquet file", spec.source)
        return Stream.from_generator(lambda: _parquet_chunks(spec.source, spec.n_features), n_features=spec.n_features)
    raise ValueError(f"{spec.describe()}: a computed partition has no source to read again")


def _in_memory(chunks, n_features) -> Stream:
    return Stream.from_generator(lambda: iter(chunks), n_features=n_features)


def _as_chunks(obj, spec: PartitionSpec) -> list:
    """A computed partition ((X, y[, w]), a Chunk or a list of them) as a list of Chunks."""
    items = obj if isinstance(obj, list) else [obj]
    chunks = [as_chunk(tuple(item), f"{spec.describe()}, chunk {i}") for i, item in enumerate(items)]
    width = spec.n_features if spec.n_features is not None else max(c.X.shape[1] for c in chunks)
    return [c if c.X.shape[1] == width else Chunk(_widen(c.X, width, spec), c.y, c.sample_weight) for c in chunks]


def _widen(X, width, spec):
    """X with trailing zero columns up to ``width``."""
    if X.shape[1] > width:
        raise ValueError(f"{spec.describe()} has {X.shape[1]} features, more than n_features={width}")
    X = sp.csr_matrix(X)
    return make_csr(X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64), (X.shape[0], width))


def _named(spec: PartitionSpec, exc: BaseException) -> BaseException:
    """The error of a task on ``spec``, saying which partition and which worker."""
    where = f"{spec.describe()} on worker {_worker_name()}"
    if isinstance(exc, MemoryError):
        return MemoryError(
            f"{where} ran out of memory ({exc}); read it at every pass (persist=False), "
            "split the data into smaller partitions, or give the workers more memory"
        )
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(
            errno.ENOENT, f"{where}: no such file (the workers must see the same paths)", exc.filename or spec.source
        )
    return exc


def load(spec: PartitionSpec, computed=None) -> list:
    """The partition's chunks, read into (worker) memory: the task behind ``persist=True``."""
    try:
        if spec.kind == "chunks":
            return _as_chunks(computed, spec)
        return list(open_partition(spec))
    except (MemoryError, FileNotFoundError) as exc:
        raise _named(spec, exc) from None


def apply(data, spec: PartitionSpec, fn, *args):
    """``fn(stream, *args)`` on the partition: ``data`` is its chunks in memory, or None
    (read from ``spec``'s source)."""
    try:
        stream = open_partition(spec) if data is None else _in_memory(data, spec.n_features)
        return fn(stream, *args)
    except (MemoryError, FileNotFoundError) as exc:
        raise _named(spec, exc) from None


def svmlight_layout(spec: PartitionSpec):
    """(smallest, largest) raw feature index of an svmlight partition (for the data set's
    common index base and width)."""
    try:
        if not os.path.isfile(spec.source):
            raise FileNotFoundError(errno.ENOENT, "no such svmlight file", spec.source)
        return _svm._prescan(spec.source, spec.chunk_bytes, need_max=True)
    except (MemoryError, FileNotFoundError) as exc:
        raise _named(spec, exc) from None


def partition_width(spec: PartitionSpec) -> int:
    """Width of a cache or parquet partition read alone (the largest index + 1 for parquet)."""
    try:
        if spec.kind == "cache":
            return Stream.from_cache(spec.source).n_features
        if not os.path.exists(spec.source):
            raise FileNotFoundError(errno.ENOENT, "no such parquet file", spec.source)
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        top = pc.max(pq.read_table(spec.source, columns=["indices"]).column("indices").combine_chunks().flatten())
        return 0 if top.as_py() is None else int(top.as_py()) + 1
    except (MemoryError, FileNotFoundError) as exc:
        raise _named(spec, exc) from None


def chunks_width(data) -> int:
    """Width of a partition held in memory (a list of Chunks)."""
    return max((c.X.shape[1] for c in data), default=0)


def scan(stream: Stream) -> StreamScan:
    return scan_stream(stream)


def local_problem(stream: Stream, spec: ProblemSpec) -> StreamProblem:
    """The driver's problem restricted to this partition's rows (no pass is made: the scan is
    the whole data set's). lam is a placeholder: the map steps do not use the penalty."""
    return StreamProblem(
        stream,
        spec.loss,
        1.0,
        l1_ratio=spec.l1_ratio,
        fit_intercept=spec.fit_intercept,
        positive_class=spec.positive_class,
        class_weight=spec.class_weight,
        scan=spec.scan,
    )


def sketch_pass(stream, spec: ProblemSpec, point, sparse_sketch):
    """MP / RMMP's map: the :class:`~l1scale.solvers.sketch.PassStatistics` of this
    partition at ``point = (beta, b, active)``, one jitted kernel per chunk."""
    from ..solvers.sketch import pass_statistics

    beta, b, active = point
    problem = local_problem(stream, spec)
    total = None
    for rows, y, s, _ in problem.chunks():
        part = pass_statistics(problem, rows, y, s, beta, b, active, sparse_sketch=sparse_sketch)
        total = part if total is None else total + part
    return total


def gradient_at(stream, spec: ProblemSpec, b0):
    """sum_i s_i loss'(y_i, b0) x_i over the partition (lam_max at (0, b0))."""
    problem = local_problem(stream, spec)
    grad = np.zeros(problem.n_features)
    for rows, y, s, _ in problem.chunks():
        X = (
            rows.data.reshape(rows.shape)
            if rows.dense
            else sp.csr_matrix((rows.data, rows.indices, rows.indptr), shape=rows.shape)
        )
        grad += X.T @ (s * problem.loss.derivative(y, np.full(y.shape[0], b0)))
    return grad


def loss_and_gradient(stream, spec: ProblemSpec, point):
    """This partition's part of :meth:`~l1scale.problems.StreamProblem.loss_and_gradient` at
    ``point = (w, b)`` (the objective's and the certificate's pass)."""
    w, b = point
    return local_problem(stream, spec).loss_and_gradient(w, b)


def add(*parts):
    """The reduction: the sum of partial statistics (anything with ``+``)."""
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total
