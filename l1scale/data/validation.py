"""Index arrays checked where they enter the library.

Numba kernels and scipy's C++ sparse routines do no bounds checking: a sparse matrix
whose ``indices`` point past its width, or whose ``indptr`` is not a monotone path
through ``data``, makes them read and write outside their arrays (a segfault at best,
silently wrong numbers or a corrupted heap at worst). scipy accepts such a matrix at
construction and checks it only on request. So every index array that comes from
outside (a user's sparse matrix, a chunk-cache file, a Dask partition, a parquet
batch) is checked here, once, before any kernel or scipy conversion reads it; the
checks are vectorised scans (about 0.1 ms per million stored values), negligible next
to any use of the data.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import validate_data as _sklearn_validate_data

from ..exceptions import DataFormatError

__all__ = ["check_compressed", "check_finite", "check_sparse_structure", "validate_data"]


def _fail(message, name, path):
    raise DataFormatError(f"{name}: {message}" if name else message, path=path)


def check_compressed(data, indices, indptr, n_major: int, n_minor: int, *, name: str = "", path=None) -> None:
    """Check the arrays of a compressed (CSR / CSC) matrix of ``n_major`` rows (columns)
    and ``n_minor`` columns (rows): one-dimensional, integer indices, ``indptr`` of length
    ``n_major + 1`` from 0 to ``len(data)`` without decreasing, every index in
    ``[0, n_minor)``.

    Raises
    ------
    DataFormatError
        Naming ``name`` (what the arrays are) and ``path`` (the file they came from).
    """
    for what, array in (("data", data), ("indices", indices), ("indptr", indptr)):
        if np.ndim(array) != 1:
            _fail(f"{what} must be one-dimensional, got shape {np.shape(array)}", name, path)
    for what, array in (("indices", indices), ("indptr", indptr)):
        if not np.issubdtype(array.dtype, np.integer):
            _fail(f"{what} must be integers, got dtype {array.dtype}", name, path)
    if not (np.issubdtype(data.dtype, np.number) or data.dtype == bool):
        _fail(f"values must be numeric, got dtype {data.dtype}", name, path)
    if indices.shape[0] != data.shape[0]:
        _fail(f"{indices.shape[0]} indices for {data.shape[0]} values", name, path)
    if indptr.shape[0] != n_major + 1:
        _fail(f"indptr has {indptr.shape[0]} entries, {n_major + 1} expected", name, path)
    if indptr[0] != 0 or indptr[-1] != data.shape[0]:
        _fail(
            f"indptr runs from {indptr[0]} to {indptr[-1]}, not from 0 to the {data.shape[0]} stored values", name, path
        )
    if n_major > 0 and np.any(indptr[1:] < indptr[:-1]):
        at = int(np.flatnonzero(indptr[1:] < indptr[:-1])[0])
        _fail(f"indptr decreases after entry {at} ({indptr[at]} then {indptr[at + 1]})", name, path)
    if indices.shape[0]:
        low, high = indices.min(), indices.max()
        if low < 0 or high >= n_minor:
            bad = int(low if low < 0 else high)
            _fail(f"index {bad} is outside [0, {n_minor})", name, path)


def check_sparse_structure(X, name: str = "X", path=None) -> None:
    """Check that a scipy sparse matrix's index arrays describe a matrix of its shape
    (CSR, CSC, BSR and COO; the other formats are built by scipy from Python objects
    and cannot hold out-of-range indices). A no-op for dense input.

    Raises
    ------
    DataFormatError
        When an index is out of range or ``indptr`` is inconsistent, naming ``name``.
    """
    if not sp.issparse(X):
        return
    n_rows, n_cols = X.shape
    fmt = X.format
    if fmt in ("csr", "csc"):
        n_major, n_minor = (n_rows, n_cols) if fmt == "csr" else (n_cols, n_rows)
        check_compressed(X.data, X.indices, X.indptr, n_major, n_minor, name=f"{name} ({fmt})", path=path)
    elif fmt == "bsr":
        block_rows, block_cols = X.blocksize
        if np.ndim(X.data) != 3 or X.data.shape[1:] != (block_rows, block_cols):
            _fail(f"BSR blocks have shape {np.shape(X.data)[1:]}, not {X.blocksize}", name, path)
        check_compressed(
            np.empty(X.data.shape[0]),
            X.indices,
            X.indptr,
            n_rows // block_rows,
            n_cols // block_cols,
            name=f"{name} (bsr)",
            path=path,
        )
    elif fmt == "coo":
        rows, cols = X.coords if hasattr(X, "coords") else (X.row, X.col)
        if not (rows.shape == cols.shape == X.data.shape):
            _fail(
                f"coo arrays disagree in length ({rows.shape[0]} rows, {cols.shape[0]} columns, "
                f"{X.data.shape[0]} values)",
                name,
                path,
            )
        for what, index, width in (("row", rows, n_rows), ("column", cols, n_cols)):
            if index.shape[0] and (index.min() < 0 or index.max() >= width):
                bad = int(index.min() if index.min() < 0 else index.max())
                _fail(f"{what} index {bad} is outside [0, {width})", name, path)


def check_finite(values, what: str, *, path=None) -> None:
    """A DataFormatError naming ``what`` and ``path`` unless every value is finite."""
    values = np.asarray(values)
    if values.size and np.issubdtype(values.dtype, np.floating) and not np.isfinite(values).all():
        at = int(np.flatnonzero(~np.isfinite(values.ravel()))[0])
        raise DataFormatError(f"{what} holds {values.ravel()[at]} at position {at}", path=path)


def validate_data(estimator, X, *args, **kw):
    """scikit-learn's ``validate_data``, after a sparse X's index arrays are checked:
    scipy's format conversions, like the kernels, trust them (out-of-range indices are a
    segfault without this, not an error)."""
    check_sparse_structure(X)
    return _sklearn_validate_data(estimator, X, *args, **kw)
