"""The features closest to entering a model: the choice of a working set, jitted.

celer ranks the zero weights by (lam1 - |g_j|) / ||x_j||_c (negative: violating optimality) and
takes every nonzero weight first. With NumPy that is a score array, an ``argpartition`` and a sort
of the chosen indices, five temporaries over every feature in play, 0.5 ms on earn's 27,901 each
time a round starts (46 rounds along earn's 50-lam path); one jitted pass and a partition of the
scores take 0.15 ms, and the chosen come out in increasing order without a sort.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["closest_to_entering", "smallest_scores"]


@njit(cache=True, nogil=True)
def smallest_scores(kept, score, size):
    """The ``size`` entries of ``kept`` (increasing) with the smallest ``score`` (aligned with
    ``kept``; NaN ranks last), in increasing order; ties at the cut are taken in ``kept``'s order."""
    return _smallest(kept, np.where(np.isnan(score), np.inf, score), size)


@njit(cache=True, nogil=True)
def _smallest(kept, ranked, size):
    """:func:`smallest_scores` of scores without NaN."""
    m = kept.shape[0]
    size = min(size, m)
    out = np.empty(size, dtype=np.int64)
    if size == 0:
        return out
    cut = _kth_smallest(ranked, size - 1)
    below = 0  # strictly below the cut: fewer than size of them; the rest are ties at the cut
    for k in range(m):
        below += ranked[k] < cut
    # One pass in kept's order takes both, so the result comes out increasing without a sort.
    # (It was a sort of the entries below the cut followed by the ties: Numba's quicksort is
    # quadratic on a sorted array whose last entry is small, 134 ms for 44,000 entries, and a
    # hashed-click problem's working sets of 20,000-50,000 features spent 44% of its solve there.)
    ties = size - below
    count = 0
    for k in range(m):
        x = ranked[k]
        if x < cut or (x == cut and ties > 0):
            if x == cut:
                ties -= 1
            out[count] = kept[k]
            count += 1
            if count == size:
                break
    return out


@njit(cache=True, nogil=True)
def _kth_smallest(values, k):
    """The ``k``-th smallest of ``values`` (0-based; no NaN), as ``np.partition(values, k)[k]``:
    quickselect on a copy, each round a three-way partition around the median of three entries,
    so that a run of equal values (ties, the -inf of every nonzero weight) is settled in one pass.

    Numba's ``np.partition`` made the working set's kernel take 8.4 s to compile (a tenth of a
    first fit with an empty cache); this takes a fraction of a second, and finds the same value."""
    a = values.copy()
    lo, hi = 0, a.shape[0] - 1
    while lo < hi:
        x, y, z = a[lo], a[(lo + hi) >> 1], a[hi]
        pivot = max(min(x, y), min(max(x, y), z))
        below, i, above = lo, lo, hi  # a[lo:below] < pivot, a[below:i] == pivot, a[above + 1 : hi + 1] > pivot
        while i <= above:
            v = a[i]
            if v < pivot:
                a[i] = a[below]
                a[below] = v
                below += 1
                i += 1
            elif v > pivot:
                a[i] = a[above]
                a[above] = v
                above -= 1
            else:
                i += 1
        if k < below:
            hi = below - 1
        elif k > above:
            lo = above + 1
        else:
            return pivot
    return a[k]


@njit(cache=True, nogil=True)
def closest_to_entering(kept, w, g_loss, norms, lam1, size):
    """The ``size`` features of ``kept`` (increasing) closest to entering, in increasing order:
    every nonzero weight, then the zero weights by (lam1 - |g_loss_j|) / norms_j (a column of zero
    norm last)."""
    score = np.empty(kept.shape[0])
    for k in range(kept.shape[0]):
        j = kept[k]
        if w[j] != 0.0:
            score[k] = -np.inf
        elif norms[j] > 0.0:
            score[k] = (lam1 - abs(g_loss[j])) / norms[j]
        else:
            score[k] = np.inf
    return _smallest(kept, score, size)  # no NaN here
