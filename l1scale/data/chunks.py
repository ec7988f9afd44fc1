"""Chunk: the rows a Stream yields at a time, and the normalisation of user-given chunks
(an ``(X, y[, sample_weight])`` tuple, a generator's items) to its contract."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ._svmlight_write import make_csr
from .validation import check_sparse_structure

__all__ = ["Chunk", "as_chunk", "as_vector"]


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


def as_vector(v, rows: int, what: str, where: str) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1 or v.shape[0] != rows:
        raise ValueError(f"{where}: {what} must be 1-D with {rows} entries, got shape {v.shape}")
    return v


def as_chunk(item, where: str) -> Chunk:
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
    y = as_vector(y, X.shape[0], "y", where)
    w = None if w is None else as_vector(w, X.shape[0], "sample_weight", where)
    return Chunk(X, y, w)
