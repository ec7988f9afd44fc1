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


@njit(cache=True, nogil=True)
def newton_direction(data, indices, indptr, dense, active, m_outer, model, settings, gram_in):
    """:func:`~l1scale.solvers._cd_kernels.newton_direction`, on a copy of the model's columns
    and coordinates where that pays (a sparse X of many columns, a model of many coordinates:
    see the module's docstring); the same results. ``model.wpd`` and ``active[:m_outer]``
    (its order: the model's CD shrinks by swapping) are written back; ``gram_in`` and the Gram
    matrix returned are in the order of ``active[:m_outer]``, the copy's too."""
    g, H, w, wpd, xTd, D, g_b, d_b = model
    if dense or m_outer < LOCAL_MIN_COORDINATES or g.shape[0] < LOCAL_MIN_SPREAD * m_outer:
        return kernels.newton_direction(data, indices, indptr, dense, active, m_outer, model, settings, gram_in)
    cols = active[:m_outer].copy()
    local_indptr = np.empty(m_outer + 1, dtype=indptr.dtype)
    local_indptr[0] = 0
    for s in range(m_outer):
        j = cols[s]
        local_indptr[s + 1] = local_indptr[s] + (indptr[j + 1] - indptr[j])
    local_data = np.empty(local_indptr[m_outer], dtype=data.dtype)
    local_indices = np.empty(local_indptr[m_outer], dtype=indices.dtype)
    local_g, local_H = np.empty(m_outer), np.empty(m_outer)
    local_w, local_wpd = np.empty(m_outer), np.empty(m_outer)
    local_active = np.empty(m_outer, dtype=active.dtype)
    for s in range(m_outer):
        j = cols[s]
        start, p = indptr[j], local_indptr[s]
        for q in range(indptr[j + 1] - start):
            local_data[p + q] = data[start + q]
            local_indices[p + q] = indices[start + q]
        local_g[s], local_H[s], local_w[s], local_wpd[s] = g[j], H[j], w[j], wpd[j]
        local_active[s] = s
    local = kernels.QuadraticModel(local_g, local_H, local_w, local_wpd, xTd, D, g_b, d_b)
    d_b, sweeps, reads, gram_price, tight, gram_out = kernels.newton_direction(
        local_data, local_indices, local_indptr, dense, local_active, m_outer, local, settings, gram_in
    )
    for s in range(m_outer):
        wpd[cols[s]] = local_wpd[s]
        active[s] = cols[local_active[s]]
    # The copy read the model's columns once.
    return d_b, sweeps, reads + int(local_indptr[m_outer]), gram_price, tight, gram_out


def warm_up(index=np.int32):
    """Compile (or load from Numba's cache) :func:`newton_direction` on tiny inputs (``index``: as
    ``_cd_kernels.warm_up``'s)."""
    data, rows, v1, v2 = np.ones(2), np.arange(2, dtype=index), np.zeros(1), np.ones(2)
    model = kernels.QuadraticModel(v1, np.ones(1), v1, v1.copy(), np.zeros(2), v2, 0.0)
    settings = kernels.InnerSettings(0.1, 0.0, True, 1.0, 3, 0.0, 10)
    newton_direction(
        data,
        rows,
        np.array([0, 2], dtype=index),
        False,
        np.zeros(1, dtype=np.int64),
        1,
        model,
        settings,
        np.empty((0, 0)),
    )
