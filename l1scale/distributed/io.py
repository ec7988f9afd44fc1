"""Writing a data set as partition files for :meth:`DaskDataset.from_files`."""

from __future__ import annotations

import itertools
import os

import numpy as np
import scipy.sparse as sp

from ..data.stream import Stream, write_cache
from ..data.svmlight import dump_svmlight

__all__ = ["write_parquet", "write_partitions"]


def write_parquet(X, y, path, sample_weight=None) -> None:
    """Rows of X (sparse or dense) as a parquet file with columns ``label`` (float64),
    ``indices`` (list of int64, zero-based), ``values`` (list of float64) and, when given,
    ``weight``: the layout :meth:`DaskDataset.from_files` reads (pyarrow is needed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    X = sp.csr_matrix(X)
    offsets = pa.array(X.indptr.astype(np.int64))
    cols = {
        "label": pa.array(np.asarray(y, dtype=np.float64)),
        "indices": pa.LargeListArray.from_arrays(offsets, pa.array(X.indices.astype(np.int64))),
        "values": pa.LargeListArray.from_arrays(offsets, pa.array(X.data.astype(np.float64))),
    }
    if sample_weight is not None:
        cols["weight"] = pa.array(np.asarray(sample_weight, dtype=np.float64))
    pq.write_table(pa.table(cols), os.fspath(path))


def write_partitions(X, y, directory, n_partitions, *, format="svmlight") -> list:
    """Split the rows of (X, y) into ``n_partitions`` consecutive blocks of about equal size,
    written to ``directory`` as ``part-00000.svm`` ... (svmlight, one-based), chunk-cache
    directories ``part-00000`` ... (``format="cache"``) or ``part-00000.parquet`` ...
    (``format="parquet"``). Returns the paths."""
    if format not in ("svmlight", "cache", "parquet"):
        raise ValueError(f"format={format!r}; choose 'svmlight', 'cache' or 'parquet'")
    os.makedirs(directory, exist_ok=True)
    X = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
    y = np.asarray(y, dtype=np.float64)
    bounds = np.linspace(0, X.shape[0], int(n_partitions) + 1).astype(np.int64)
    paths = []
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        name = os.path.join(os.fspath(directory), f"part-{i:05d}")
        if format == "svmlight":
            name += ".svm"
            dump_svmlight(X[a:b], y[a:b], name)
        elif format == "parquet":
            name += ".parquet"
            write_parquet(X[a:b], y[a:b], name)
        else:
            write_cache(Stream.from_arrays(X[a:b], y[a:b]), name)
        paths.append(name)
    return paths
