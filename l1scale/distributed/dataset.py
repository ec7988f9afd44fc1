"""A data set split into partitions that live on a Dask cluster.

The client never reads the data: each partition is opened by a task on a worker, from
a file every worker can see (svmlight, binary chunk cache, parquet) or computed by a
dask collection. With ``persist=True`` the partitions are read once and kept in worker
memory (the futures of their load tasks are held here, so the scheduler recomputes a
partition lost with its worker); with ``persist=False`` every pass reads them again
from disk, for data larger than the cluster's memory. ``persist="auto"`` keeps them
when their size (16 bytes per stored value, from the scan) fits in ``memory_fraction``
of the workers' memory limits.

A pass is :meth:`DaskDataset.map` (one task per partition, the same jitted kernels as a
single machine runs per chunk) followed by :meth:`DaskDataset.tree_reduce` (sums of
``split_every`` partial results per task, on the workers); :meth:`DaskDataset.gather`
brings the one reduced result to the driver and turns the cluster's failures into
errors that name the partition.
"""

from __future__ import annotations

import glob
import os
import re
import time
import uuid

import numpy as np

from ..problems.stream import StreamScan
from . import _tasks
from ._errors import DistributedError, TasksCancelled

__all__ = ["DaskDataset"]

_KINDS = {".parquet": "parquet", ".pq": "parquet"}
_KEY = re.compile(r"-p(\d+)-")


def _kind(path: str) -> str:
    if os.path.isdir(path):
        return "cache"
    for suffix, kind in _KINDS.items():
        if path.lower().endswith(suffix):
            return kind
    return "svmlight"


def _expand(paths) -> list:
    """A glob pattern, a path, or a list of either, as a sorted list of paths."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = []
    for p in paths:
        p = os.fspath(p)
        matches = sorted(glob.glob(p)) if glob.has_magic(p) else [p]
        if not matches:
            raise FileNotFoundError(2, "no partition file matches the pattern", p)
        out.extend(matches)
    if not out:
        raise ValueError("a DaskDataset needs at least one partition")
    return out


def _combine_scans(scans, n_features) -> StreamScan:
    """The data set's scan from its partitions' (classes merged, sums added)."""
    table = {}
    regression = any(s.classes.shape[0] == 0 for s in scans)
    for s in scans:
        for c, k, w in zip(s.classes.tolist(), s.counts.tolist(), s.weights.tolist()):
            k0, w0 = table.get(c, (0, 0.0))
            table[c] = (k0 + k, w0 + w)
    if regression or len(table) > 1000:
        table = {}
    keys = sorted(table)
    return StreamScan(
        sum(s.n_samples for s in scans),
        int(n_features),
        np.array(keys, dtype=np.float64),
        np.array([table[k][0] for k in keys], dtype=np.int64),
        np.array([table[k][1] for k in keys], dtype=np.float64),
        float(sum(s.weight_sum for s in scans)),
        float(sum(s.label_weighted_sum for s in scans)),
        int(sum(s.nnz for s in scans)),
    )


class DaskDataset:
    """Rows of X, labels and optional sample weights, split into partitions held (or read)
    by the workers of a Dask cluster.

    Build one with :meth:`from_files` or :meth:`from_delayed`; give it to an estimator's
    ``fit`` (``SparseLogisticRegression(solver="rmmp").fit(dataset)``) or to
    :class:`~l1scale.distributed.DaskProblem`.

    Attributes
    ----------
    client : distributed.Client
    partitions : list of PartitionSpec
    n_features : int
    scan : StreamScan
        n, d, classes, weights and nnz of the whole data set (one pass on the workers).
    persisted : bool
        Whether the partitions are held in worker memory.
    """

    _l1scale_dask = True  # lets the estimators recognise a data set without importing dask

    def __init__(self, client, specs, *, computed=None, persist="auto", memory_fraction=0.5, timeout=None):
        self.client = client
        self.timeout = timeout
        self.partitions = list(specs)
        self._data = [None] * len(self.partitions)
        if computed is not None:  # a dask collection: its partitions are only ever in memory
            self._data = [
                client.submit(_tasks.load, spec, c, key=self._key("load", spec.index))
                for spec, c in zip(self.partitions, computed)
            ]
            width = self.partitions[0].n_features
            if width is None:
                width = max(
                    self.gather(
                        [
                            client.submit(_tasks.chunks_width, data, key=self._key("width", i))
                            for i, data in enumerate(self._data)
                        ]
                    )
                )
            self.partitions = [s._replace(n_features=width) for s in self.partitions]
            # Narrower partitions are widened (trailing zero columns) where they are held.
            self._data = [
                client.submit(_tasks.load, spec, data, key=self._key("widen", spec.index))
                for spec, data in zip(self.partitions, self._data)
            ]
            persist = True
        elif persist not in (True, False, "auto"):
            raise ValueError(f"persist must be True, False or 'auto', got {persist!r}")
        self.n_features = int(self.partitions[0].n_features)
        if persist is True and computed is None:  # read once: the scan below reads worker memory
            self._load()
        self.scan = _combine_scans(self.gather(self.map(_tasks.scan, what="scan")), self.n_features)
        if persist == "auto":  # the scan counted the nonzeros: keep the partitions if they fit
            persist = self._fits_in_memory(memory_fraction)
            if persist:
                self._load()
        self.persisted = bool(persist)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_files(
        cls,
        paths,
        client=None,
        *,
        n_features=None,
        zero_based="auto",
        persist="auto",
        memory_fraction=0.5,
        chunk_bytes=16 << 20,
        timeout=None,
    ) -> DaskDataset:
        """One partition per file: svmlight (plain, .gz, .bz2, .xz), chunk-cache directories
        or parquet files (``.parquet``: columns label, indices, values [, weight]).

        Parameters
        ----------
        paths : str, path-like or list of them
            Files, or glob patterns (``"parts/*.svm"``), as the workers see them.
        client : distributed.Client, optional
            Default: the current client (``distributed.get_client()``).
        n_features : int, optional
            Width of X; by default the widest partition's (found by the workers).
        zero_based : bool or "auto"
            svmlight index base; "auto": zero-based when any partition has index 0.
        persist : bool or "auto", default "auto"
            Keep the partitions in worker memory (True), read them at every pass (False),
            or keep them when they take at most ``memory_fraction`` of the workers' memory.
        timeout : float, optional
            Seconds to wait for one pass before raising (None: no limit).
        """
        client = _client(client)
        files = _expand(paths)
        specs = [
            _tasks.PartitionSpec(i, _kind(p), p, n_features, zero_based, int(chunk_bytes)) for i, p in enumerate(files)
        ]
        svm = [s for s in specs if s.kind == "svmlight"]
        if svm and (zero_based == "auto" or n_features is None):
            # The index base and the width are properties of the whole data set: every
            # partition's smallest and largest index, read by the workers.
            futures = [client.submit(_tasks.svmlight_layout, s, key=task_key("layout", s.index)) for s in svm]
            bounds = _gather(client, futures, timeout)
            zero = any(lo == 0 for lo, _ in bounds) if zero_based == "auto" else bool(zero_based)
            width = max(hi for _, hi in bounds) + (1 if zero else 0)
            specs = [s._replace(zero_based=zero) for s in specs]
            if n_features is None:
                others = [s for s in specs if s.kind != "svmlight"]
                width = max([width] + [_tasks_width(client, s, timeout) for s in others])
                specs = [s._replace(n_features=width) for s in specs]
        elif n_features is None:
            width = max(_tasks_width(client, s, timeout) for s in specs)
            specs = [s._replace(n_features=width) for s in specs]
        return cls(client, specs, persist=persist, memory_fraction=memory_fraction, timeout=timeout)

    @classmethod
    def from_delayed(cls, parts, client=None, *, n_features=None, timeout=None) -> DaskDataset:
        """One partition per dask object (``dask.delayed`` values, or a ``dask.bag`` whose
        partitions each hold chunks), each computing to ``(X, y[, sample_weight])``, a
        :class:`~l1scale.data.stream.Chunk` or a list of them. Computed on the workers
        and kept in their memory."""
        client = _client(client)
        if hasattr(parts, "to_delayed"):
            parts = parts.to_delayed()
        parts = list(parts)
        if not parts:
            raise ValueError("a DaskDataset needs at least one partition")
        computed = client.compute(parts)
        specs = [_tasks.PartitionSpec(i, "chunks", f"{type(p).__name__} {i}", n_features) for i, p in enumerate(parts)]
        return cls(client, specs, computed=computed, timeout=timeout)

    # ------------------------------------------------------------------ passes
    @property
    def n_partitions(self) -> int:
        return len(self.partitions)

    @property
    def n_samples(self) -> int:
        return self.scan.n_samples

    def __repr__(self):
        return (
            f"DaskDataset({self.n_partitions} partitions, n_samples={self.scan.n_samples}, "
            f"n_features={self.n_features}, nnz={self.scan.nnz}, persisted={self.persisted})"
        )

    def _key(self, what, index):
        return task_key(what, index)

    def map(self, fn, *args, what="pass") -> list:
        """Futures of ``fn(stream, *args)`` on every partition (``stream``: the partition as a
        Stream, read on the worker). Large arguments should be futures (``client.scatter``)."""
        return [
            self.client.submit(_tasks.apply, data, spec, fn, *args, key=self._key(what, spec.index))
            for data, spec in zip(self._data, self.partitions)
        ]

    def tree_reduce(self, futures, split_every=8):
        """The future of the sum of ``futures``: sums of ``split_every`` at a time, on the workers."""
        level = 0
        while len(futures) > 1:
            futures = [
                self.client.submit(
                    _tasks.add, *futures[i : i + split_every], key=f"l1scale-sum{level}-g{i}-{uuid.uuid4().hex[:12]}"
                )
                for i in range(0, len(futures), split_every)
            ]
            level += 1
        return futures[0]

    def gather(self, futures):
        """``client.gather`` with the cluster's failures turned into errors naming the partition."""
        return _gather(self.client, futures, self.timeout, self.partitions)

    def wait(self, futures):
        """Block until ``futures`` are finished; returns the seconds waited. A failed task
        raises its error (with the partition named), a cancelled one a DistributedError."""
        from distributed import wait

        start = time.perf_counter()
        try:
            wait(futures, timeout=self.timeout)
        except TimeoutError:
            raise DistributedError(
                f"the tasks were not done after {self.timeout} s (timeout); is the cluster still running?"
            ) from None
        except Exception:  # noqa: BLE001, S110 - a task cancelled after another failed: reported below
            pass
        for f in futures:
            if f.status == "error":
                self.gather([f])
        for f in futures:
            if f.status == "cancelled":
                m = _KEY.search(str(f.key))
                which = self.partitions[int(m.group(1))].describe() if m else f"task {f.key}"
                raise TasksCancelled(f"the cluster cancelled the task of {which}{_why_cancelled(self.client)}")
        return time.perf_counter() - start

    def worker_back(self) -> bool:
        """After a pass's tasks were cancelled: whether the client still has its scheduler and
        the cluster has (again) a worker, waiting for one up to ``timeout`` (default:
        distributed's connect timeout, ``distributed.comm.timeouts.connect``)."""
        if str(self.client.status) != "running":
            return False
        timeout = self.timeout
        if timeout is None:
            import dask
            from dask.utils import parse_timedelta

            timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="s")
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            return False
        return True

    def _load(self):
        """Read every partition into the memory of a worker (futures held here)."""
        self._data = [
            self.client.submit(_tasks.load, spec, key=self._key("load", spec.index)) for spec in self.partitions
        ]

    def _fits_in_memory(self, fraction) -> bool:
        need = 16 * self.scan.nnz + 24 * self.scan.n_samples
        limits = [w.get("memory_limit") or 0 for w in self.client.scheduler_info()["workers"].values()]
        if not limits or any(lim == 0 for lim in limits):  # a worker without a limit
            return True
        return need <= fraction * sum(limits)

    def close(self):
        """Release the partitions held in worker memory."""
        for f in self._data:
            if f is not None:
                f.release()
        self._data = [None] * len(self.partitions)
        self.persisted = False


def _why_cancelled(client) -> str:
    """Why the cluster cancels tasks: the client lost its scheduler, or data they needed died."""
    status = str(getattr(client, "status", "running"))
    if status == "running":
        return (
            ": data it needed died with every worker that held them (a broadcast point cannot be "
            "recomputed), or the task was cancelled by another client"
        )
    address = getattr(getattr(client, "scheduler", None), "address", None) or "?"
    return f": the connection to the scheduler {address} was lost (client {status}); is the scheduler still running?"


def _client(client):
    if client is not None:
        return client
    from distributed import get_client

    return get_client()


def task_key(what, index):
    return f"l1scale-{what}-p{index}-{uuid.uuid4().hex[:12]}"


def _tasks_width(client, spec, timeout):
    return _gather(client, [client.submit(_tasks.partition_width, spec, key=task_key("width", spec.index))], timeout)[0]


def _gather(client, futures, timeout, partitions=None):
    """Gather; a worker killed while running a partition's task (out of memory, or again and
    again) becomes a :class:`DistributedError` naming the partition instead of a bare KilledWorker."""
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError

    try:
        return client.gather(futures) if timeout is None else _gather_timeout(client, futures, timeout)
    except FutureCancelledError as exc:
        m = _KEY.search(str(getattr(exc, "key", "")))
        which = f"the task {getattr(exc, 'key', '?')}"
        if m is not None and partitions is not None and int(m.group(1)) < len(partitions):
            which = f"the task of {partitions[int(m.group(1))].describe()}"
        raise TasksCancelled(f"the cluster cancelled {which}{_why_cancelled(client)}") from None
    except KilledWorker as exc:
        key = str(exc.args[0]) if exc.args else ""
        m = _KEY.search(key)
        which = "a task"
        if m is not None:
            i = int(m.group(1))
            which = partitions[i].describe() if partitions is not None and i < len(partitions) else f"partition {i}"
        raise DistributedError(
            f"the worker running {which} died (task {key}) more often than distributed's "
            "'distributed.scheduler.allowed-failures' allows; the usual cause is running out of memory: "
            "read the partitions at every pass (persist=False), split the data into smaller partitions, "
            "or give the workers more memory"
        ) from exc


def _gather_timeout(client, futures, timeout):
    from distributed import wait

    try:
        wait(futures, timeout=timeout)
    except TimeoutError:
        raise DistributedError(
            f"the tasks were not done after {timeout} s (timeout); is the cluster still running, and has it workers?"
        ) from None
    return client.gather(futures)
