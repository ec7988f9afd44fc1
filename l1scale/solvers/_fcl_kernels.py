"""Jitted kernels of feature cached loops (``fcl.py``): screening a block of generated
columns, the column cache (insert, evict, compact) and CDN updates on cached columns.

Every kernel is ``nogil``: the writer's screening and the trainer's updates run at the
same time in two threads. The shared per-row state is, for the mean-form problem
sum_i c_i loss(y_i, z_i) + lam1 ||w||_1,

    z (n,)   margins x_i . w + b,
    r (n,)   c_i loss'(y_i, z_i)    (the gradient of column j is sum_i r_i x_ij),
    D (n,)   c_i loss''(y_i, z_i)   (its curvature sum_i D_i x_ij^2),
    lv (n,)  c_i loss(y_i, z_i)     (the line search sums changes of it).

The trainer writes them; the writer only reads r, and a value it reads while the
trainer moves it is at worst one update stale, which only makes a column's screening
test a little late (the final certificate sweep runs with the trainer stopped).

The cache holds columns in an arena (``rows`` int32, ``vals`` float64, 12 bytes per
nonzero) and one slot per cached column: ``start``, ``length``, ``feature`` (candidate
index j), ``w`` (its weight). Slots 0 .. n_slots - 1 are live; evicting a slot moves the
last slot into its place. ``slot_of`` (p,) maps a candidate to its slot (>= 0), to -1 (not
cached, weight 0), or to -2 - k: not cached, with the nonzero weight ``parked_w[k]`` of the
cache's side table of parked weights (a column evicted with its weight: its contribution
stays in the margins, and the writer puts it back when it violates optimality).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..losses import loss_curvature, loss_derivative, loss_value

# Curvature floor of the one-variable Newton step (as cd.py's nu).
_NU = 1e-12
SIGMA, BETA, MAX_LINE_SEARCH = 0.01, 0.5, 30
# Near the optimum the decrease sigma step (g d + ...) of a Newton step falls below the
# rounding error of the loss changes it is compared with (about eps per term), and Armijo
# would refuse every step: a change within this many eps of the terms' size is accepted
# (an increase of P of that size is rounding, and the one-variable model is exact there).
_ROUNDING = 8 * float(np.finfo(np.float64).eps)


@njit(cache=True, nogil=True)
def row_state(kind, y, c, z, r, D, lv):
    """r, D, lv from the margins z, for every row, in place (shapes (n,))."""
    for i in range(z.shape[0]):
        r[i] = c[i] * loss_derivative(kind, y[i], z[i])
        D[i] = c[i] * loss_curvature(kind, y[i], z[i])
        lv[i] = c[i] * loss_value(kind, y[i], z[i])


@njit(cache=True, nogil=True)
def column_gradient(rows, vals, start, length, r, D):
    """(sum_i r_i x_ij, sum_i D_i x_ij^2) over one cached column."""
    g, h = 0.0, 0.0
    for p in range(start, start + length):
        i = np.uint64(rows[p])
        g += vals[p] * r[i]
        h += vals[p] * vals[p] * D[i]
    return g, h


@njit(cache=True, inline="always")
def violation(g, w, lam1):
    """KKT violation of a coordinate with gradient g (of the loss part) and weight w."""
    if w > 0.0:
        return abs(g + lam1)
    if w < 0.0:
        return abs(g - lam1)
    return max(abs(g) - lam1, 0.0)


@njit(cache=True, nogil=True)
def screen_block(indptr, rows, vals, r, lam1, threshold, slot_of, parked_w, j0, keep):
    """The writer's test on a block of generated columns j0 .. j0 + m - 1 (CSC: indptr (m+1,),
    rows, vals): column m is kept (keep[:count] lists them) when it is not cached and its
    gradient g = sum_i r_i x_ij violates optimality by more than ``threshold``. For a weight
    of 0 that is |g| > lam1 + threshold (the paper's |grad_j| > 1 at liblinear's scale, with
    a margin so that a column exactly on the boundary is not inserted and evicted forever);
    for a parked nonzero weight w (``slot_of`` -2 - k, w = ``parked_w[k]``) it is
    |g + lam1 sign(w)| > threshold: the column is regenerated so that its weight can move.

    ``parked_w`` may be a side table that another thread has since replaced by a longer one:
    an index past its end reads as weight 0 (a screening test a little off; the final
    certificate sweep runs with the other threads stopped).

    Returns (count, the largest KKT violation over the uncached columns, the largest |g|
    over all of them, nonzeros read).
    """
    count, worst, gmax = 0, 0.0, 0.0
    for m in range(indptr.shape[0] - 1):
        g = 0.0
        for p in range(indptr[m], indptr[m + 1]):
            g += vals[p] * r[np.uint64(rows[p])]
        gmax = max(gmax, abs(g))
        s = slot_of[j0 + m]
        if s >= 0:
            continue
        w = 0.0
        if s <= -2 and -2 - s < parked_w.shape[0]:
            w = parked_w[-2 - s]
        v = violation(g, w, lam1)
        worst = max(worst, v)
        if v > threshold:
            keep[count] = m
            count += 1
    return count, worst, gmax, indptr[indptr.shape[0] - 1]


@njit(cache=True, nogil=True)
def cdn_update(kind, y, c, z, r, D, lv, rows, vals, start, length, w, lam1):
    """One CDN step on a cached column (Yuan et al. 2010; ALGORITHMS.md sec. 6), in place on
    the row state: the Newton direction of |w + d| lam1 + g d + H d^2 / 2, then step
    beta^t until P decreases by sigma step (g d + lam1 (|w + d| - |w|)), the loss change
    summed term by term so that it stays exact near the optimum (up to ``_ROUNDING``).

    Returns (new w, the violation before the step, |g| after the step when the new w is 0
    (the trainer's eviction test; inf otherwise), whether a step was taken).
    """
    g, h = column_gradient(rows, vals, start, length, r, D)
    h += _NU
    before = violation(g, w, lam1)
    if g + lam1 <= h * w:
        d = -(g + lam1) / h
    elif g - lam1 >= h * w:
        d = -(g - lam1) / h
    else:
        d = -w
    if w + d == w:
        return w, before, abs(g) if w == 0.0 else np.inf, False
    bound = g * d + lam1 * (abs(w + d) - abs(w))
    slack = lam1 * abs(w)
    for p in range(start, start + length):
        slack += lv[np.uint64(rows[p])]
    slack *= _ROUNDING
    step = 1.0
    for _ in range(MAX_LINE_SEARCH):
        w_new = 0.0 if step == 1.0 and d == -w else w + step * d
        change = lam1 * (abs(w_new) - abs(w))
        for p in range(start, start + length):
            i = np.uint64(rows[p])
            change += c[i] * loss_value(kind, y[i], z[i] + (w_new - w) * vals[p]) - lv[i]
        if change <= SIGMA * step * bound + slack:
            g_after = 0.0
            for p in range(start, start + length):
                i = np.uint64(rows[p])
                z[i] += (w_new - w) * vals[p]
                r[i] = c[i] * loss_derivative(kind, y[i], z[i])
                D[i] = c[i] * loss_curvature(kind, y[i], z[i])
                lv[i] = c[i] * loss_value(kind, y[i], z[i])
                g_after += vals[p] * r[i]
            return w_new, before, abs(g_after) if w_new == 0.0 else np.inf, True
        step *= BETA
    return w, before, abs(g) if w == 0.0 else np.inf, False


@njit(cache=True, nogil=True)
def intercept_update(kind, y, c, z, r, D, lv):
    """A Newton step with backtracking on the unpenalised intercept (O(n)), in place.
    Returns (the step taken, |gradient| before it)."""
    g, h = 0.0, _NU
    for i in range(z.shape[0]):
        g += r[i]
        h += D[i]
    d = -g / h
    slack = 0.0
    for i in range(z.shape[0]):
        slack += lv[i]
    slack *= _ROUNDING
    step = 1.0
    for _ in range(MAX_LINE_SEARCH):
        change = 0.0
        for i in range(z.shape[0]):
            change += c[i] * loss_value(kind, y[i], z[i] + step * d) - lv[i]
        if change <= SIGMA * step * g * d + slack:
            for i in range(z.shape[0]):
                z[i] += step * d
            row_state(kind, y, c, z, r, D, lv)
            return step * d, abs(g)
        step *= BETA
    return 0.0, abs(g)


@njit(cache=True, nogil=True)
def evict(slot, n_slots, start, length, feature, w, slot_of):
    """Drop a slot: the last live slot moves into its place. A nonzero weight is the caller's
    to keep (``FeatureCache.park`` it first). Returns the new n_slots and the nonzeros freed."""
    freed = length[slot]
    slot_of[feature[slot]] = -1
    last = n_slots - 1
    if slot != last:
        start[slot], length[slot], feature[slot], w[slot] = start[last], length[last], feature[last], w[last]
        slot_of[feature[slot]] = slot
    return last, freed


@njit(cache=True, nogil=True)
def train(kind, y, c, z, r, D, lv, rows, vals, start, length, feature, w, slot_of, counts, lam1, picks, evicting):
    """The trainer's work between two looks at the cache: ``picks`` CDN updates, each on a
    cached column drawn uniformly at random (the paper's trainer thread); a column whose
    weight is 0 and whose |gradient| is below lam1 after its update is evicted when
    ``evicting`` (it would stay 0: optimality condition (8)).

    counts = [n_slots, live nonzeros, updates, evicted, nonzeros read] (int64, in place).
    Returns the largest violation seen before an update.
    """
    worst = 0.0
    n_slots = counts[0]
    for _ in range(picks):
        if n_slots == 0:
            break
        s = np.random.randint(n_slots)
        w_new, before, g_zero, _ = cdn_update(kind, y, c, z, r, D, lv, rows, vals, start[s], length[s], w[s], lam1)
        w[s] = w_new
        worst = max(worst, before)
        counts[2] += 1
        counts[4] += 2 * length[s]
        if evicting and w_new == 0.0 and g_zero < lam1:
            n_slots, freed = evict(s, n_slots, start, length, feature, w, slot_of)
            counts[1] -= freed
            counts[3] += 1
    counts[0] = n_slots
    return worst


@njit(cache=True, nogil=True)
def cache_violation(rows, vals, start, length, w, n_slots, r, D, lam1):
    """The largest KKT violation over the cached columns (no update), and nonzeros read."""
    worst, reads = 0.0, 0
    for s in range(n_slots):
        g, _ = column_gradient(rows, vals, start[s], length[s], r, D)
        worst = max(worst, violation(g, w[s], lam1))
        reads += length[s]
    return worst, reads


@njit(cache=True, nogil=True)
def compact(rows, vals, start, length, n_slots):
    """Move the live columns to the front of the arena, in place (they keep their order).
    Returns the arena's new end."""
    # A merge sort: the starts are mostly in order already, where Numba's quicksort can be quadratic.
    order = np.argsort(start[:n_slots], kind="mergesort")
    end = 0
    for q in range(n_slots):
        s = order[q]
        a, m = start[s], length[s]
        if a != end:
            for p in range(m):  # a >= end: a forward copy never overwrites what it still reads
                rows[end + p] = rows[a + p]
                vals[end + p] = vals[a + p]
            start[s] = end
        end += m
    return end


@njit(cache=True, nogil=True)
def insert(rows, vals, start, length, feature, w, slot_of, counts, at, col_rows, col_vals, j, wj):
    """Append one column (candidate j, weight wj) at arena position ``at`` as slot n_slots."""
    s = counts[0]
    m = col_rows.shape[0]
    for p in range(m):
        rows[at + p] = col_rows[p]
        vals[at + p] = col_vals[p]
    start[s], length[s], feature[s], w[s] = at, m, j, wj
    slot_of[j] = s
    counts[0] = s + 1
    counts[1] += m
