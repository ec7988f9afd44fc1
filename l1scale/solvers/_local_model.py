"""CD's Newton model over many coordinates of a wide X, solved on its own copy of them.

A sweep of the model's CD (:func:`~l1scale.solvers._cd_kernels.newton_direction`) visits its
coordinates in random order, and each visit reads five arrays of n_features (the gradient,
the curvature, the point, the model's iterate, the column offsets) at the coordinate's index.
Where n_features is large and the model holds a scattered few thousand of them, each of those
reads misses the cache, and the sweep's cost is the misses, not the nonzeros. The model is then
solved on a copy of its columns and coordinates, contiguous and in the order of ``active`` (the
copy reads its columns once, about one sweep's nonzeros), and its iterate and order are put
back. The arithmetic is the same, in the same order: the same iterates to the bit (the copy's
read of the columns is counted in the nonzeros read).

Measured (2026-11-30, this project's 2-core host): a 20,000 x 1,000,000 binary matrix (50 random
features a row, the hashed-click shape), 0.01 lam_max, models of 14,000-88,000 coordinates:
the fit at tol 1e-6 took 14.7 s and takes 6.8 s, with the same iterates and objective
(liblinear -s 6 needs 5.5 s to reach 1e-6 suboptimality there); news20 (588,937 features,
models of 1,000-2,900 coordinates) at tol 1e-6, best of three fits, interleaved twice: 0.001
lam_max 3.13 / 2.74 s -> 2.92 / 2.48 s, 0.01 lam_max 0.69 / 0.65 s -> 0.65 / 0.61 s (the same
objectives; 1.2% more nonzeros read, the copies). The models on X of fewer columns (earn, a9a,
mnist10k) are not copied.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import _cd_kernels as kernels

__all__ = ["newton_direction"]

#: A model is solved on a copy when it holds at least this many coordinates ...
LOCAL_MIN_COORDINATES = 1000
#: ... and X has at least this many columns per model coordinate (the model's are scattered).
LOCAL_MIN_SPREAD = 8


def newton_direction(data, indices, indptr, dense, active, m_outer, model, settings, gram_in):
    """:func:`~l1scale.solvers._cd_kernels.newton_direction`, on a copy of the model's columns
    and coordinates where that pays (a sparse X of many columns, a model of many coordinates:
    see the module's docstring); the same results. ``model.wpd`` and ``active[:m_outer]``
    (its order: the model's CD shrinks by swapping) are written back; ``gram_in`` and the Gram
    matrix returned are in the order of ``active[:m_outer]``, the copy's too.

    Python, not a kernel: a kernel that calls the model's solver has that solver's whole call
    tree linked into its own code and optimised again (3.5 s more at the first fit with an
    empty cache), where three calls from here cost microseconds."""
    g = model.g
    if dense or m_outer < LOCAL_MIN_COORDINATES or g.shape[0] < LOCAL_MIN_SPREAD * m_outer:
        return kernels.newton_direction(data, indices, indptr, dense, active, m_outer, model, settings, gram_in)
    cols = active[:m_outer].copy()
    local_data, local_indices, local_indptr, local_g, local_H, local_w, local_wpd = _local_copy(
        data, indices, indptr, cols, model.g, model.H, model.w, model.wpd
    )
    local_active = np.arange(m_outer, dtype=active.dtype)
    local = model._replace(g=local_g, H=local_H, w=local_w, wpd=local_wpd)
    d_b, sweeps, reads, gram_price, tight, gram_out = kernels.newton_direction(
        local_data, local_indices, local_indptr, dense, local_active, m_outer, local, settings, gram_in
    )
    _put_back(cols, local_active, local_wpd, model.wpd, active)
    # The copy read the model's columns once.
    return d_b, sweeps, reads + int(local_indptr[m_outer]), gram_price, tight, gram_out


@njit(cache=True, nogil=True)
def _local_copy(data, indices, indptr, cols, g, H, w, wpd):
    """The columns ``cols`` of X and their coordinates of the model, contiguous in that order."""
    m = cols.shape[0]
    local_indptr = np.empty(m + 1, dtype=indptr.dtype)
    local_indptr[0] = 0
    for s in range(m):
        j = cols[s]
        local_indptr[s + 1] = local_indptr[s] + (indptr[j + 1] - indptr[j])
    local_data = np.empty(local_indptr[m], dtype=data.dtype)
    local_indices = np.empty(local_indptr[m], dtype=indices.dtype)
    local_g, local_H = np.empty(m), np.empty(m)
    local_w, local_wpd = np.empty(m), np.empty(m)
    for s in range(m):
        j = cols[s]
        start, p = indptr[j], local_indptr[s]
        for q in range(indptr[j + 1] - start):
            local_data[p + q] = data[start + q]
            local_indices[p + q] = indices[start + q]
        local_g[s], local_H[s], local_w[s], local_wpd[s] = g[j], H[j], w[j], wpd[j]
    return local_data, local_indices, local_indptr, local_g, local_H, local_w, local_wpd


@njit(cache=True, nogil=True)
def _put_back(cols, local_active, local_wpd, wpd, active):
    """The copy's iterate into ``wpd`` and its order into ``active[:m]``."""
    for s in range(cols.shape[0]):
        wpd[cols[s]] = local_wpd[s]
        active[s] = cols[local_active[s]]
