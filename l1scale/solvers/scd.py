"""Stochastic and deterministic (greedy) coordinate descent of Shalev-Shwartz & Tewari (2009).

Both minimise, for any smooth loss with a curvature bound beta (ALGORITHMS.md sections 1 and 3;
the paper's form is already the mean-loss form),

    P(w, b) = sum_i c_i loss(y_i, x_i . w + b) + lam1 ||w||_1 + lam2/2 ||w||^2

(c_i = s_i / sum(s), lam1 = lam * l1_ratio, lam2 = lam * (1 - l1_ratio)) through the paper's
duplicated problem over v = [v+; v-] in R^{2d}, v >= 0, x_hat_i = [x_i; -x_i]:

    F(v, b) = sum_i c_i loss(y_i, x_hat_i . v + b) + lam1 sum_j v_j + lam2/2 sum_j v_j^2,

whose minimisers have disjoint supports and give w = v+ - v- (so min F = min P). With the
margins z_i = x_hat_i . v + b kept up to date, one coordinate step on j is (Algorithm 2)

    g_j = sum_i c_i loss'(y_i, z_i) x_hat_ij + lam1 + lam2 v_j,
    eta = max(-v_j, -g_j / beta_j),   v_j += eta,   z_i += eta x_hat_ij  (rows of column j),

which decreases F by at least -(eta g_j + beta_j eta^2 / 2) whenever beta_j bounds the
curvature of F along coordinate j. Choices of ours, the paper being silent or narrower:

- SCD's default step (``curvature="newton"``) replaces beta_j by the coordinate's own curvature
  at the current margins, ``h_j = sum_i c_i loss''(y_i, z_i) x_ij^2 + lam2`` (D = c loss'' kept
  with z), halves the step until Armijo's condition holds on F, and falls back to the step on
  beta_j below, which always decreases F, once the halving reaches it: a safeguarded Newton
  step. Where the loss is much flatter than its bound (tf-idf columns, small lam) the bound's
  steps are orders of magnitude too short (Reuters earn at 0.01 lam_max, 50 epochs: 3e-10
  relative above the optimum against 9e-3). The rules below stay available by name.
- ``beta_j`` (``curvature="column"``; DetCD always chooses its coordinate on it) is ``beta * sum_i c_i x_ij^2 + lam2``:
  the exact bound of the loss term's curvature along coordinate j, valid for columns of any
  scale. The paper assumes |x_ij| <= 1 and uses beta itself; ``curvature="paper"`` gives
  ``beta * max(1, max_ij x_ij^2) + lam2``, which is exactly the paper's rule on data in
  [-1, 1] and a valid (global) bound elsewhere. On columns normalised to
  ``sum_i c_i x_ij^2 = 1`` the two coincide; on columns of small norm (tf-idf text) the
  global bound takes far shorter steps (Reuters earn, lam = lam_max / 10: 1.7e-1 relative
  above the optimum after 60 epochs, against 3e-5 with beta_j).
- Elastic net: lam2 adds ``lam2 v_j`` to g_j and lam2 to beta_j (the L2 term's own curvature).
- Unpenalised intercept (our extension; the paper has none): coordinate 2d, drawn like the
  others, updated by the same rule without lam and without the sign constraint,
  ``b -= sum_i c_i loss'(y_i, z_i) / beta`` (its column is all ones, so beta_b = beta); under
  ``curvature="newton"`` the same safeguarded Newton step as the features' on that column
  (h_b = sum_i c_i loss''(y_i, z_i); with few positives the loss is far flatter than beta there:
  mnist 3-vs-rest at 0.01 lam_max with intercept, 50 epochs, 3.4e-3 -> 8.2e-4).
  After every epoch b is also made exactly optimal for the current w (a 1-D Newton solve,
  an exact coordinate minimisation), as the duality gap needs.
- Centred columns (our extension, under ``curvature="newton"`` with an intercept): a column whose
  |mean| exceeds its standard deviation (``CENTRE_RATIO`` = 1, ``problems.memory.centring_offsets``)
  is learned as x_j - mean_j (``Problem.centred``), b + mean . w standing for the intercept: the
  same margins, objective and dual, so the same problem, minus the coupling of such a column with
  the intercept (a step on it moves every margin by about its mean, and the intercept must move
  them back). The Result's intercept is the raw columns'. Algorithm 2's steps keep the raw columns.
  A binary column qualifies when it is set in more than half the rows, so the centred copy stores
  at most twice its values. Measured on the stochastic-defaults settings (50 epochs, with
  intercept), against the online solvers' ratio of 5: a9a at 0.01 lam_max 1.2e-3 -> 6.4e-4 (its
  one-hot blocks sum to the intercept's column), arcene at 0.01 1.1e-4 -> 1.0e-5, mnist
  3-vs-rest at 0.01 1.7e-4 -> 5.7e-5, text 1,000 x 5,000 at 0.01 2.7e-4 -> 2.8e-5, no setting
  worse (the epochs read up to 15% more values: the centred columns are stored whole); DetCD
  to 1e-12 read 5-6x fewer values on madelon and magic04 at 0.1, up to 14% more on mnist.

- Extrapolated epochs (our extension, DetCD under ``curvature="newton"``): after each epoch the
  iterate moves on along that epoch's move, v + t (v - v_start) with its margins z + t (z -
  z_start), at the largest of t = 1, 2, 4, ... 64 (or up to where a duplicated weight reaches
  zero) that keeps lowering P (:func:`_extrapolated`: the loss at the moved margins plus the L1
  term, linear in v >= 0; O(n + d) a trial, no pass over X), and not at all where none lowers it,
  so no epoch decreases P less than without it. On nearly collinear columns single-coordinate
  steps zig-zag along a narrow valley and an epoch's move points along it: madelon (500 columns of
  mean about 480) at 0.01 lam_max without intercept, where centring would change the problem, 50
  epochs 2.1e-2 -> 4.7e-4; DetCD's 27 other settings of the stochastic-defaults page were at
  rounding level before and are after. Not SCD's default: its active epochs' moves, two passes'
  worth of random draws, extrapolated left that setting at 6.8e-2 (6.9e-2 without).
- Pair moves (our extension, SCD under ``curvature="newton"`` without an intercept): the columns
  that would be learned centred with an intercept (|mean| above CENTRE_RATIO standard deviations)
  cannot be without one, and a step on one shifts every margin by about its mean. After each
  step on such a feature j, a partner k drawn uniformly from the active features of that kind
  moves with it along w_j += t, w_k -= rho t, rho = mean_j / mean_k (:func:`_pair_step`): the sum
  of mean_j w_j, the margins' common shift, stays where it is, and the margins move along
  x_j - rho x_k, whose offsets cancel. t minimises the quadratic model of the loss along that
  direction plus the exact penalty (piecewise quadratic, kinks where either weight reaches zero),
  halved until Armijo's condition holds on P; no move where none does. The pair's reads count in
  the epoch's two passes. madelon at 0.01 lam_max without intercept, 50 epochs: 6.9e-2 -> 6.3e-5
  (arcene at 0.01 1.1e-4 -> 5.7e-7; a9a at 0.01, whose frequent one-hot levels qualify, 2.0e-4 ->
  4.2e-4); nothing changes with an intercept, without such columns, or under Algorithm 2's steps.

The residuals r_i = c_i loss'(y_i, z_i) are kept with z (refreshed on the rows a step moves), so
g_j costs nnz(x_j) multiply-adds and no loss evaluation.

``StochasticCD`` ("scd") draws j uniformly (``numpy.random.default_rng(random_state)``, one
batch of indices at a time, handed to the kernel). With ``sampling="uniform"`` (Algorithm 2) it
draws from all 2d (+1) coordinates, and one epoch is as many steps as coordinates. By default
(``sampling="active"``, ours) each epoch draws from the coordinates that can move at its start:
v_j > 0 or g_j < 0, from the X^T r that the epoch's certificate computes (and the intercept); for
any other the step is exactly zero (eta = max(-v_j, -g_j / beta_j) = 0 when v_j = 0 and g_j >= 0),
so that uniform draws spend most of an epoch on them when the support is a small part of the
features (ARCENE at 0.01 lam_max: about 100 of 20,000 coordinates). Half of the draws among
the features are uniform, half in proportion to how far each violates optimality at the epoch's
start (adaptive importance sampling by the gap, as Perekrestenko, Cevher & Jaggi 2017); the
intercept is drawn four times as often as an average active feature (``StochasticCD._active``).
An active epoch takes steps until they have read two passes' worth of stored values (a uniform
epoch reads each column about twice, for g_j and g_{j+d}), and the gradient pass that picked them
is counted too. Coordinates that start to violate during the epoch join at the next one, whose
gradient is exact again. ``GreedyCD`` ("detcd") takes the j of largest guaranteed decrease, which
needs every g_j, i.e. a full product X^T r per step; one epoch is d steps by default (so that an
epoch updates as many coordinates as there are features; it costs d passes over X).

Data accesses (History.data_accesses) count every stored value of X read by the algorithm,
as CoordinateDescent counts them: a step reads column j once for g_j and once more to update
the margins when eta != 0 (dense columns count n values); DetCD's X^T r adds nnz(X) per step;
the column norms cost one pass at the start. The intercept's implicit column of ones is not
X and is not counted. The per-epoch certificate (one X^T r for the duality gap) is monitoring
and is not counted either, as in the paper's Figure 1, except where active sampling uses it to
pick the next epoch's coordinates: then it is one pass of that epoch's reads.
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import njit

from .. import checkpoint as checkpoints
from ..data.memory import column
from ..exceptions import ConvergenceWarning
from ..losses import (
    loss_curvature,
    loss_derivative,
    loss_derivative_curvature,
    loss_value,
    weighted_value,
)
from ..problems.base import ProblemLike
from .base import History, Result, Solver, Timer

__all__ = ["CENTRE_RATIO", "GreedyCD", "StochasticCD"]

#: SCD and DetCD learn a column centred (with an intercept, under the Newton steps) when its |mean|
#: exceeds CENTRE_RATIO times its standard deviation: 1, where the online solvers take 5
#: (``problems.memory.CENTRE_RATIO``: at 1 they lost the 1e-3 target on a9a and magic04); see the
#: module docstring for what it measured.
CENTRE_RATIO = 1.0


@njit(cache=True)
def _column_curvatures(data, indices, indptr, dense, c, beta, lam2, curv):
    """curv[j] = curv[j + d] = beta * sum_i c_i x_ij^2 + lam2 for every column j.

    Shapes: c (n,); curv (2d,) or (2d + 1,) (the intercept entry is left alone).
    Returns the nonzeros read.
    """
    d = indptr.shape[0] - 1
    reads = 0
    for j in range(d):
        rows, vals = column(data, indices, indptr, dense, j)
        acc = 0.0
        for p in range(rows.shape[0]):
            acc += c[np.uint64(rows[p])] * vals[p] * vals[p]
        reads += rows.shape[0]
        curv[j] = curv[j + d] = beta * acc + lam2
    return reads


@njit(cache=True)
def _residuals(kind, y, c, z, r):
    """r_i = c_i loss'(y_i, z_i) for every row. Shapes (n,)."""
    for i in range(z.shape[0]):
        r[i] = c[i] * loss_derivative(kind, y[i], z[i])


@njit(cache=True)
def _curvatures_and_values(kind, y, c, z, D, lv):
    """D_i = c_i loss''(y_i, z_i) and lv_i = loss(y_i, z_i) for every row. Shapes (n,)."""
    for i in range(z.shape[0]):
        D[i] = c[i] * loss_curvature(kind, y[i], z[i])
        lv[i] = loss_value(kind, y[i], z[i])


@njit(cache=True)
def _coordinate_step(data, indices, indptr, dense, kind, y, c, z, r, v, curv, j, g):
    """Algorithm 2's update of coordinate j given its gradient g: v_j += eta with
    eta = max(-v_j, -g / beta_j) (no lower bound on the intercept, j = 2d); the margins z
    and residuals r = c * loss'(y, z) follow on the rows of column j (every row for b).
    Shapes: y, c, z, r (n,); v, curv (2d [+1],). Returns (eta, nonzeros read)."""
    d = indptr.shape[0] - 1
    if j == 2 * d:
        eta = -g / curv[j]
        v[j] += eta
        for i in range(z.shape[0]):
            z[i] += eta
            r[i] = c[i] * loss_derivative(kind, y[i], z[i])
        return eta, 0
    eta = max(-v[j], -g / curv[j])
    if eta == 0.0:
        return eta, 0
    v[j] += eta
    rows, vals = column(data, indices, indptr, dense, j if j < d else j - d)
    step = eta if j < d else -eta
    for p in range(rows.shape[0]):
        i = np.uint64(rows[p])
        z[i] += step * vals[p]
        r[i] = c[i] * loss_derivative(kind, y[i], z[i])
    return eta, rows.shape[0]


@njit(cache=True)
def _scd_epoch(data, indices, indptr, dense, kind, y, c, z, r, v, curv, lam1, lam2, order, max_work=np.inf):
    """SCD steps on the coordinates order[0], order[1], ... (Algorithm 2), until the work
    reaches ``max_work``.

    Coordinates j < d are +x_j, d <= j < 2d are -x_{j-d}, j = 2d the intercept; r holds
    c * loss'(y, z), so that g_j = +-x_j . r + lam1 + lam2 v_j.
    Shapes: y, c, z, r (n,); v, curv (2d,) or (2d + 1,); order (steps,) int64 in [0, v.shape[0]).
    Updates v, z and r in place. Returns (nonzeros of X read, work): the work counts the reads
    and n for each intercept step (which reads no column but passes over the n margins).
    """
    d = indptr.shape[0] - 1
    reads, work = 0, 0
    for s in range(order.shape[0]):
        if reads + work >= max_work:
            break
        j = order[s]
        if j == 2 * d:
            g = r.sum()
            work += z.shape[0]
        else:
            rows, vals = column(data, indices, indptr, dense, j if j < d else j - d)
            acc = 0.0
            for p in range(rows.shape[0]):
                acc += r[np.uint64(rows[p])] * vals[p]
            reads += rows.shape[0]
            g = (acc if j < d else -acc) + lam1 + lam2 * v[j]
        _, step_reads = _coordinate_step(data, indices, indptr, dense, kind, y, c, z, r, v, curv, j, g)
        reads += step_reads
    return reads, reads + work


@njit(cache=True, inline="always")
def _safeguarded_move(kind, y, c, z, r, D, lv, rows, vals, sign, v, j, g, eta, safe, lam1, lam2, trial):
    """The safeguarded Newton move of coordinate j along x_hat_j = sign * (vals on ``rows``): the
    Newton step ``eta`` halved until Armijo's condition holds on F (penalty lam1 eta + lam2 (v_j eta
    + eta^2 / 2); the loss summed over the rows against the values ``lv`` kept with z), taken only
    while longer than ``safe`` (Algorithm 2's step on the bound, which always decreases F), which is
    taken otherwise. v_j, z, r = c loss', D = c loss'' and lv follow on the rows (the trial's
    values when the step taken was the last tried). ``trial``: scratch of len(rows) floats.
    Returns the passes over the rows (tried steps and the move)."""
    passes = 1
    evaluated = False  # trial holds the loss values at the step taken
    if abs(eta) > abs(safe):
        for _ in range(30):
            change = lam1 * eta + lam2 * (v[j] * eta + 0.5 * eta * eta)
            for p in range(rows.shape[0]):
                i = np.uint64(rows[p])
                trial[p] = loss_value(kind, y[i], z[i] + sign * eta * vals[p])
                change += c[i] * (trial[p] - lv[i])
            passes += 1
            if change <= 0.01 * eta * g:
                evaluated = True
                break
            eta *= 0.5
            if abs(eta) <= abs(safe):
                eta = safe
                break
    else:
        eta = safe
    v[j] += eta
    step = sign * eta  # the trial's margins, to the bit: z_i + (sign eta) x_ij
    for p in range(rows.shape[0]):
        i = np.uint64(rows[p])
        z[i] += step * vals[p]
        derivative, curvature = loss_derivative_curvature(kind, y[i], z[i])
        r[i], D[i] = c[i] * derivative, c[i] * curvature
        lv[i] = trial[p] if evaluated else loss_value(kind, y[i], z[i])
    return passes


@njit(cache=True)
def _intercept_newton_step(kind, y, c, z, r, D, lv, v, bound, j, trial):
    """The intercept's safeguarded Newton step (v[j] = b, its column all ones, unpenalised):
    eta = -g / h with g = sum_i r_i and h = sum_i D_i, never shorter than Algorithm 2's step
    -g / beta (:func:`_safeguarded_move`). ``trial``: scratch of n floats. Returns the work (n per
    pass over the rows)."""
    n = z.shape[0]
    g, h = 0.0, 0.0
    for i in range(n):
        g += r[i]
        h += D[i]
    safe = -g / bound
    if safe == 0.0:
        return n
    eta = -g / h if h > 0.0 else safe
    rows, ones = np.arange(n), np.ones(n)
    return n * (1 + _safeguarded_move(kind, y, c, z, r, D, lv, rows, ones, 1.0, v, j, g, eta, safe, 0.0, 0.0, trial))


@njit(cache=True)
def _scd_newton_epoch(
    data, indices, indptr, dense, kind, y, c, z, r, D, lv, v, bound, lam1, lam2, order, max_work=np.inf
):
    """SCD steps with the coordinate's own curvature (``curvature="newton"``): on coordinate j,
    h_j = sum_i c_i loss''(y_i, z_i) x_ij^2 + lam2 (read with g_j, D = c * loss'' kept with z),
    eta = max(-v_j, -g_j / h_j), halved until Armijo's condition holds on F (the change of the
    loss summed over the column's rows), and never shorter than Algorithm 2's step on the bound
    beta_j (``bound``), which is taken instead once the halving reaches it: that step always
    decreases F. The intercept (j = 2d) takes the same step on its column of ones
    (:func:`_intercept_newton_step`).
    The loss values ``lv`` are kept with z, so that a trial step evaluates the loss at its new
    margins only (and those of the step taken become lv).
    Shapes: y, c, z, r, D, lv (n,); v, bound (2d [+1],); order (steps,). Returns (nonzeros read,
    work) with ``max_work`` as in :func:`_scd_epoch`.
    """
    d = indptr.shape[0] - 1
    reads, work = 0, 0
    trial = np.empty(z.shape[0])
    for s in range(order.shape[0]):
        if reads + work >= max_work:
            break
        j = order[s]
        if j == 2 * d:
            _intercept_newton_step(kind, y, c, z, r, D, lv, v, bound[j], j, trial)
            work += z.shape[0]
            continue
        reads += _newton_coordinate_step(
            data, indices, indptr, dense, kind, y, c, z, r, D, lv, v, bound, lam1, lam2, j, trial
        )
    return reads, reads + work


@njit(cache=True, inline="always")
def _newton_coordinate_step(data, indices, indptr, dense, kind, y, c, z, r, D, lv, v, bound, lam1, lam2, j, trial):
    """:func:`_scd_newton_epoch`'s step on feature coordinate j (< 2d). Returns the nonzeros read."""
    d = indptr.shape[0] - 1
    sign = 1.0 if j < d else -1.0
    rows, vals = column(data, indices, indptr, dense, j if j < d else j - d)
    acc_g, acc_h = 0.0, 0.0
    for p in range(rows.shape[0]):
        i = np.uint64(rows[p])
        acc_g += r[i] * vals[p]
        acc_h += D[i] * vals[p] * vals[p]
    g = sign * acc_g + lam1 + lam2 * v[j]
    h = acc_h + lam2
    safe = max(-v[j], -g / bound[j])  # Algorithm 2's step: F decreases along it
    if safe == 0.0:
        return rows.shape[0]
    eta = max(-v[j], -g / h) if h > 0.0 else safe
    passes = _safeguarded_move(kind, y, c, z, r, D, lv, rows, vals, sign, v, j, g, eta, safe, lam1, lam2, trial)
    return (1 + passes) * rows.shape[0]


@njit(cache=True)
def _scd_pair_epoch(
    data, indices, indptr, dense, kind, y, c, z, r, D, lv, v, bound, lam1, lam2, order, partners, offsets, max_work
):
    """:func:`_scd_newton_epoch` (no intercept) with a pair move after each step on a feature j of
    nonzero offset: with feature k = ``partners[s]`` (when it differs from j and has a nonzero
    offset too), :func:`_pair_step` at rho = offsets[j] / offsets[k]. Returns (nonzeros read,
    work), the pair moves' reads counted."""
    d = indptr.shape[0] - 1
    n = z.shape[0]
    reads = 0
    trial, a, pair_trial = np.empty(n), np.empty(n), np.empty(n)
    for s in range(order.shape[0]):
        if reads >= max_work:
            break
        j = order[s]
        reads += _newton_coordinate_step(
            data, indices, indptr, dense, kind, y, c, z, r, D, lv, v, bound, lam1, lam2, j, trial
        )
        f, k = (j if j < d else j - d), partners[s]
        if k != f and offsets[f] != 0.0 and offsets[k] != 0.0:
            rho = offsets[f] / offsets[k]
            reads += _pair_step(
                data, indices, indptr, dense, kind, y, c, z, r, D, lv, v, lam1, lam2, f, k, rho, a, pair_trial
            )
    return reads, reads


@njit(cache=True, inline="always")
def _pair_penalty(wj, wk, rho, t, lam1, lam2):
    """The penalty of weights j and k after a pair move t (w_j + t, w_k - rho t)."""
    a, b = wj + t, wk - rho * t
    return lam1 * (abs(a) + abs(b)) + 0.5 * lam2 * (a * a + b * b)


@njit(cache=True)
def _pair_step(data, indices, indptr, dense, kind, y, c, z, r, D, lv, v, lam1, lam2, j, k, rho, a, trial):
    """The offset-free pair move of features j and k (:class:`StochasticCD`'s pair steps): w_j += t,
    w_k -= rho t, rho = mean_j / mean_k, which leaves sum_j mean_j w_j, the margins' common shift,
    where it is. The margins move along a = x_j - rho x_k, whose large common parts cancel; t
    minimises the quadratic model of the loss along a plus the exact penalty (piecewise quadratic,
    its kinks at t = -w_j and t = w_k / rho), then is halved until Armijo's condition holds on P
    (at most 20 times; no move when none does). v is left in canonical form (v_j, v_{j+d} = w_j^+,
    w_j^-; k's too), z, r = c loss', D = c loss'' and lv = loss follow on the rows a moves.
    ``a``, ``trial``: scratch of n floats. Returns the nonzeros read."""
    d = indptr.shape[0] - 1
    n = z.shape[0]
    a[:] = 0.0
    rows, vals = column(data, indices, indptr, dense, j)
    for p in range(rows.shape[0]):
        a[np.uint64(rows[p])] += vals[p]
    size = rows.shape[0]
    rows, vals = column(data, indices, indptr, dense, k)
    for p in range(rows.shape[0]):
        a[np.uint64(rows[p])] -= rho * vals[p]
    size += rows.shape[0]
    g, h = 0.0, 0.0
    for i in range(n):
        g += r[i] * a[i]
        h += D[i] * a[i] * a[i]
    reads = size
    wj, wk = v[j] - v[j + d], v[k] - v[k + d]
    base = _pair_penalty(wj, wk, rho, 0.0, lam1, lam2)
    # The model g t + h t^2 / 2 + the penalty's change is convex and piecewise quadratic: its
    # minimiser is the stationary point of one of the three pieces between the kinks, clipped to it.
    lo, hi = min(-wj, wk / rho), max(-wj, wk / rho)
    g_all, h_all = g + lam2 * (wj - rho * wk), h + lam2 * (1.0 + rho * rho)
    if not h_all > 0.0:
        return reads
    best_t, best = 0.0, 0.0
    for piece in range(3):
        left = -np.inf if piece == 0 else (lo if piece == 1 else hi)
        right = lo if piece == 0 else (hi if piece == 1 else np.inf)
        inside = lo - 1.0 if piece == 0 else (0.5 * (lo + hi) if piece == 1 else hi + 1.0)
        slope = lam1 * (np.sign(wj + inside) - rho * np.sign(wk - rho * inside))
        t = min(max(-(g_all + slope) / h_all, left), right)
        value = g * t + 0.5 * h * t * t + _pair_penalty(wj, wk, rho, t, lam1, lam2) - base
        if value < best:
            best_t, best = t, value
    t = best_t
    if t == 0.0:
        return reads
    accepted = False
    for _ in range(20):
        pen = _pair_penalty(wj, wk, rho, t, lam1, lam2)
        change = pen - base
        for i in range(n):
            if a[i] != 0.0:
                trial[i] = loss_value(kind, y[i], z[i] + t * a[i])
                change += c[i] * (trial[i] - lv[i])
        reads += size
        if change <= 0.01 * (g * t + pen - base):
            accepted = True
            break
        t *= 0.5
    if not accepted:
        return reads
    wj, wk = wj + t, wk - rho * t
    v[j], v[j + d] = max(wj, 0.0), max(-wj, 0.0)
    v[k], v[k + d] = max(wk, 0.0), max(-wk, 0.0)
    for i in range(n):
        if a[i] != 0.0:
            z[i] += t * a[i]
            derivative, curvature = loss_derivative_curvature(kind, y[i], z[i])
            r[i], D[i] = c[i] * derivative, c[i] * curvature
            lv[i] = trial[i]
    return reads


@njit(cache=True)
def _full_gradient(data, indices, indptr, dense, r, grad):
    """grad = X^T r (the loss term's gradient along +x_j). Shapes: r (n,); grad (d,).
    Returns the nonzeros read."""
    reads = 0
    for j in range(grad.shape[0]):
        rows, vals = column(data, indices, indptr, dense, j)
        acc = 0.0
        for p in range(rows.shape[0]):
            acc += r[np.uint64(rows[p])] * vals[p]
        grad[j] = acc
        reads += rows.shape[0]
    return reads


@njit(cache=True, inline="always")
def _greedy_choice(r, v, curv, lam1, lam2, grad):
    """The coordinate of largest guaranteed decrease -(eta_j g_j + beta_j eta_j^2 / 2) with
    eta_j = max(-v_j, -g_j / beta_j) (the intercept, j = 2d, unconstrained), given the full
    gradient ``grad`` = X^T r: (j, g_j), or (-1, 0) when no coordinate promises a decrease."""
    d = grad.shape[0]
    best, best_gain, best_g = -1, 0.0, 0.0
    for j in range(v.shape[0]):
        if j == 2 * d:
            g = 0.0
            for i in range(r.shape[0]):
                g += r[i]
            eta = -g / curv[j]
        else:
            g = (grad[j] if j < d else -grad[j - d]) + lam1 + lam2 * v[j]
            eta = max(-v[j], -g / curv[j])
        gain = -(eta * g + 0.5 * curv[j] * eta * eta)
        if gain > best_gain:
            best, best_gain, best_g = j, gain, g
    return best, best_g


@njit(cache=True)
def _greedy_epoch(data, indices, indptr, dense, kind, y, c, z, r, v, curv, lam1, lam2, steps, grad):
    """DetCD: ``steps`` times, the full gradient, then Algorithm 2's update on the coordinate
    of largest guaranteed decrease -(eta_j g_j + beta_j eta_j^2 / 2).

    Shapes: y, c, z, r (n,) (r = c * loss'(y, z)); v, curv (2d,) or (2d + 1,); grad (d,).
    Updates v, z and r in place. Returns (steps taken, nonzeros read); fewer steps than
    asked when no coordinate promises a decrease (the iterate is optimal to rounding).
    """
    reads = 0
    for s in range(steps):
        reads += _full_gradient(data, indices, indptr, dense, r, grad)
        best, best_g = _greedy_choice(r, v, curv, lam1, lam2, grad)
        if best < 0:
            return s, reads
        _, step_reads = _coordinate_step(data, indices, indptr, dense, kind, y, c, z, r, v, curv, best, best_g)
        reads += step_reads
    return steps, reads


@njit(cache=True)
def _greedy_newton_epoch(data, indices, indptr, dense, kind, y, c, z, r, D, lv, v, curv, lam1, lam2, steps, grad):
    """DetCD with ``curvature="newton"``: the coordinate chosen as in :func:`_greedy_epoch` (the
    paper's rule, on the bound beta_j), then SCD's safeguarded Newton step on it
    (:func:`_scd_newton_epoch`: never shorter than the bound's step, so never a smaller decrease).
    D and lv (c * loss'' and the loss values at z) are kept with z. Returns (steps taken,
    nonzeros read)."""
    reads = 0
    order = np.empty(1, dtype=np.int64)
    for s in range(steps):
        reads += _full_gradient(data, indices, indptr, dense, r, grad)
        best, _ = _greedy_choice(r, v, curv, lam1, lam2, grad)
        if best < 0:
            return s, reads
        order[0] = best
        step_reads, _ = _scd_newton_epoch(
            data, indices, indptr, dense, kind, y, c, z, r, D, lv, v, curv, lam1, lam2, order
        )
        reads += step_reads
    return steps, reads


def _extrapolated(kind, y, c, v, v_start, z, z_start, lam1, lam2, d, max_factor=64.0):
    """Move the duplicated iterate ``v`` (2d [+ 1], the intercept last) and its margins ``z`` on
    along the epoch's move from (``v_start``, ``z_start``), in place, to the largest of t = 1, 2,
    4, ... ``max_factor`` that keeps lowering P, capped where a duplicated weight reaches zero (then
    that cap itself is tried): P(t) = sum_i c_i loss(y_i, z_i + t dz_i) + lam1 sum_j (v_j + t dv_j)
    + lam2 ||w||^2 / 2, exact on v >= 0. Returns the t taken (0.0: none lowered P; v and z as they
    were)."""
    dv, dz = v - v_start, z - z_start
    falling = dv[: 2 * d] < 0.0
    reach = float(np.min(v[: 2 * d][falling] / -dv[: 2 * d][falling])) if falling.any() else np.inf
    limit = min(reach, max_factor)

    def objective(t):
        moved = v[: 2 * d] + t * dv[: 2 * d]
        w = moved[:d] - moved[d:]
        return float(weighted_value(kind, y, z + t * dz, c)) + lam1 * float(moved.sum()) + 0.5 * lam2 * float(w @ w)

    best_t, best = 0.0, objective(0.0)
    trials = [2.0**k for k in range(int(np.log2(max_factor)) + 1) if 2.0**k <= limit]
    for t in trials or [limit]:
        value = objective(t)
        if not value < best:
            break
        best_t, best = t, value
    if best_t > 0.0:
        v += best_t * dv
        np.maximum(v[: 2 * d], 0.0, out=v[: 2 * d])  # the weight that reached zero, to rounding
        z += best_t * dz
    return best_t


class _DuplicatedCD(Solver):
    """Driver shared by SCD and DetCD: epochs of jitted steps on the duplicated problem,
    a History row and a certificate after each epoch."""

    # Each epoch extrapolated along its move (:func:`_extrapolated`) under curvature="newton".
    extrapolate = False
    data_access = "columns"
    resumable = True  # takes checkpoint= (l1scale.checkpoint)
    requires = ("smooth", "curvature_bound")
    curvatures = ("column", "paper")  # the values ``curvature`` takes; the first is the default

    def __init__(
        self,
        tol=1e-6,
        max_iter=1000,
        random_state=0,
        curvature=None,
        callback=None,
        verbose=0,
        checkpoint=None,
        checkpoint_interval=checkpoints.DEFAULT_INTERVAL,
    ):
        self.checkpoint, self.checkpoint_interval = checkpoint, checkpoint_interval
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.curvature = self.curvatures[0] if curvature is None else curvature  # None: the solver's default
        self.callback = callback
        self.verbose = verbose

    # ------------------------------------------------------------------ driver
    def solve(self, problem: ProblemLike, coef_init=None, intercept_init=None) -> Result:
        """Minimise ``problem`` (kind ``"memory"``: its columns) from ``coef_init`` (default 0) and
        ``intercept_init`` (default 0).

        Returns
        -------
        Result
            ``n_iter`` counts epochs; ``stop_reason`` is the certificate's name, ``"max_iter"``
            or ``"stalled"`` (DetCD: no coordinate promises a decrease).
        """
        self.check_problem(problem)
        if self.curvature not in self.curvatures:
            raise ValueError(
                f"curvature must be one of {', '.join(map(repr, self.curvatures))}, got curvature={self.curvature!r}"
            )
        timer = Timer()
        # Under the Newton steps (the default), with an intercept, columns with a large offset are
        # learned centred: the same problem (module docstring); the intercept is mapped back below.
        offsets = self._offsets(problem)
        if offsets is not None:
            problem = problem.centred(offsets)
            if coef_init is not None:
                w0 = np.asarray(coef_init, dtype=np.float64).reshape(problem.n_features)
                intercept_init = float(intercept_init or 0.0) + float(offsets @ w0)
        d, fit_intercept = problem.n_features, problem.fit_intercept
        cols = problem.columns
        arrays, kind = cols.arrays, problem.loss.kernel_id
        y, c = problem.y, problem.c
        lam1, lam2 = problem.penalty.l1, problem.penalty.l2
        v = np.zeros(2 * d + int(fit_intercept))
        if coef_init is not None:
            w0 = np.array(coef_init, dtype=np.float64).reshape(d)
            v[:d], v[d : 2 * d] = np.maximum(w0, 0.0), np.maximum(-w0, 0.0)
        if fit_intercept:
            v[2 * d] = float(intercept_init or 0.0)
        z, reads = np.full(problem.n_samples, v[2 * d] if fit_intercept else 0.0), 0
        if coef_init is not None and v[: 2 * d].any():
            z += np.asarray(problem.X @ (v[:d] - v[d : 2 * d]), dtype=np.float64).reshape(-1)
            reads += cols.nnz
        r = np.empty(problem.n_samples)  # c * loss'(y, z), kept with z
        curv, reads = self._curvatures(problem, v.shape[0], reads)
        # curvature="newton": D = c * loss'' and the loss values, kept with z by the Newton steps.
        newton = self.curvature == "newton"
        self._D, self._lv = (np.empty(problem.n_samples), np.empty(problem.n_samples)) if newton else (None, None)
        self._start(problem, v)
        history, it = History(), 0
        stop_reason, converged = "max_iter", False
        ck, saved = checkpoints.start(self, problem)
        if saved is not None:
            saved.into("v", v)
            saved.into("z", z)
            reads, it = saved.scalar("reads", int, 0), saved.scalar("it", int, 0)
            rng = getattr(self, "_rng", None)
            if rng is not None:
                saved.generator("rng", rng)
            saved.history(history)
            timer.exclude(-saved.scalar("elapsed"))
        while True:
            if ck is not None and ck.due():  # the state at the top of an epoch says all that follows
                rng = getattr(self, "_rng", None)
                ck.save(
                    {
                        "v": v,
                        "z": z,
                        "reads": reads,
                        "it": it,
                        "history": history.as_dict(),
                        "rng": None if rng is None else rng.bit_generator.state,
                        "elapsed": timer(),
                    }
                )
            cert = self._record(problem, v, z, r, it, reads, history, timer)
            if cert.relative <= self.tol:
                stop_reason, converged = cert.name, True
                break
            if it >= self.max_iter:
                break
            if self._D is not None:
                _curvatures_and_values(kind, y, c, z, self._D, self._lv)  # z as the certificate left it
            start = (v.copy(), z.copy()) if self.extrapolate and newton else None
            epoch_reads, stalled = self._epoch(arrays, kind, y, c, z, r, v, curv, lam1, lam2)
            reads += epoch_reads
            it += 1
            if start is not None and not stalled:
                v_start, z_start = start
                _extrapolated(kind, y, c, v, v_start, z, z_start, lam1, lam2, d)  # r, D: recomputed from z next
            if stalled:
                cert = self._record(problem, v, z, r, it, reads, history, timer)
                stop_reason, converged = "stalled", cert.relative <= self.tol
                break
        if not converged:
            warnings.warn(
                f"{self.name} did not reach tol={self.tol:g} in {it} epochs ({stop_reason}; relative "
                f"{cert.name} {cert.relative:.2e}); increase max_iter or tol",
                ConvergenceWarning,
                stacklevel=2,
            )
        coef = v[:d] - v[d : 2 * d]
        intercept = float(v[2 * d]) if fit_intercept else 0.0
        if offsets is not None:
            intercept -= float(offsets @ coef)  # the raw columns' intercept
        return Result(
            coef=coef,
            intercept=intercept,
            objective=cert.objective,
            n_iter=it,
            converged=converged,
            stop_reason=stop_reason,
            certificate_name=cert.name,
            certificate=cert.value,
            relative_certificate=cert.relative,
            history=history,
            timings={"solve": timer(), "compile": timer.compiled()},
        )

    def _offsets(self, problem):
        """The column offsets to learn centred, or None: with an intercept only (:meth:`_large_offsets`)."""
        return self._large_offsets(problem) if problem.fit_intercept else None

    def _large_offsets(self, problem, least=1):
        """The offsets of the columns whose |mean| exceeds CENTRE_RATIO times their spread
        (``Problem.column_offsets``; 0 for the others) when at least ``least`` have one, else None;
        only under the Newton steps (Algorithm 2's steps, ``curvature="column"`` or ``"paper"``,
        keep the raw columns, as the reproductions need)."""
        if self.curvature != "newton" or not hasattr(problem, "column_offsets"):
            return None
        offsets = problem.column_offsets(CENTRE_RATIO)
        return offsets if np.count_nonzero(offsets) >= least else None

    def _curvatures(self, problem, size, reads):
        """beta_j for every coordinate (module docstring), and the reads it cost."""
        beta, lam2 = float(problem.loss.curvature_bound), problem.penalty.l2
        curv = np.empty(size)
        d = problem.n_features
        if self.curvature in ("column", "newton"):  # "newton": the bound is its safeguard
            reads += _column_curvatures(*problem.columns.arrays, problem.c, beta, lam2, curv)
            # An all-zero column (g_j = lam1 > 0 there) must stay at zero: any positive floor does.
            curv[: 2 * d] = np.maximum(curv[: 2 * d], 1e-300)
        else:
            data = problem.columns.data
            scale = max(1.0, float(np.max(data * data, initial=0.0)))
            reads += problem.columns.nnz
            curv[: 2 * d] = beta * scale + lam2
        if size > 2 * d:
            curv[2 * d] = beta  # the intercept's column of ones: sum_i c_i * 1 = 1
        return curv, reads

    def _record(self, problem, v, z, r, it, reads, history, timer):
        """Intercept made optimal for w (when fitted), r afresh, then the certificate (one X^T r,
        not counted as data accesses: it is monitoring) and a History row."""
        d = problem.n_features
        w = v[:d] - v[d : 2 * d]
        b = 0.0
        if problem.fit_intercept:
            b = v[2 * d]
            b_opt = problem.optimal_intercept(z - b, b)
            z += b_opt - b
            v[2 * d] = b = b_opt
        kind, pen = problem.loss.kernel_id, problem.penalty
        _residuals(kind, problem.y, problem.c, z, r)
        grad = np.asarray(problem.X.T @ r, dtype=np.float64).reshape(-1)
        self._gradient = grad  # X^T r at the epoch's start: SCD's active sampling draws from it
        # P(w, b) without BLAS dots (they cost milliseconds when the cores are busy).
        primal = (
            weighted_value(kind, problem.y, z, problem.c)
            + pen.l1 * float(np.abs(w).sum())
            + 0.5 * pen.l2 * float(np.sum(w * w))
        )
        cert = problem.certificate_from(w, b, z, None, grad, primal=primal, residual=r)
        history.append(
            objective=cert.objective,
            certificate=cert.value,
            nnz=int(np.count_nonzero(w)),
            time=timer(),
            data_accesses=reads,
        )
        if self.callback is not None:
            self.callback(it, history)
        if self.verbose:
            print(
                f"{self.name} epoch {it:4d}  P={cert.objective:.12g}  {cert.name}={cert.value:.3e}  "
                f"nnz={history.nnz[-1]}  reads={reads}  t={timer():.3f}s"
            )
        return cert

    def _start(self, problem, v):  # pragma: no cover - interface
        raise NotImplementedError

    def _epoch(self, arrays, kind, y, c, z, r, v, curv, lam1, lam2):  # pragma: no cover - interface
        raise NotImplementedError


class StochasticCD(_DuplicatedCD):
    """Stochastic coordinate descent (SCD; Shalev-Shwartz & Tewari 2009, Algorithm 2).

    Minimises ``P(w, b) = sum_i c_i loss(y_i, x_i . w + b) + lam1 ||w||_1 + lam2/2 ||w||^2``
    (c_i = s_i / sum(s): the mean-loss form, the paper's own) over the duplicated features
    ``x_hat = [x; -x]``, ``v >= 0``, ``w = v[:d] - v[d:]``: each step draws a coordinate j (of
    2d, or 2d + 1 with the intercept) and takes ``eta = max(-v_j, -g_j / beta_j)``. No step size
    to tune. See the module docstring for beta_j, the elastic net, the intercept and the sampling.

    Parameters
    ----------
    tol : float, default 1e-6
        Stop when the duality gap <= tol * P (or the KKT violation <= tol * lam1 for losses
        without a conjugate), checked after every epoch.
    max_iter : int, default 1000
        Epochs (see ``sampling``).
    random_state : int, default 0
        Seed of the coordinate draws; the same seed gives the same model.
    curvature : {"newton", "column", "paper"}, default "newton"
        The step's curvature. "newton": the coordinate's own curvature at the current margins,
        sum_i c_i loss''(z_i) x_ij^2 + lam2, the step halved until it decreases F enough and
        never shorter than the "column" step (a safeguarded Newton step: far longer than the
        bound's where the loss is flat, e.g. at small lam; one more read of the column per
        halving). "column": Algorithm 2 on beta_j = beta * sum_i c_i x_ij^2 + lam2; "paper":
        beta * max(1, max_ij x_ij^2) + lam2 (the paper's beta on data in [-1, 1]). Under
        "newton", with an intercept, the columns whose |mean| exceeds 5 standard deviations are
        learned centred (x_ij - mean_j, the intercept absorbing mean . w: the same problem, and
        the intercept returned is the raw columns'): a step on such a column otherwise shifts
        every margin by about its mean (madelon at 0.01 lam_max, 50 epochs: 6.0e-2 -> 2.6e-5).
        "column" and "paper" keep the raw columns (Algorithm 2 as printed). Under "newton" without
        an intercept, each step on such a column is followed by an offset-free pair move with
        another (``pair_steps``; module docstring): madelon at 0.01 lam_max without intercept, 50
        epochs, 6.9e-2 -> 6.3e-5.
    sampling : {"active", "uniform"}, default "active"
        The coordinates drawn. "uniform": all of them, as many steps per epoch as coordinates
        (Algorithm 2). "active": each epoch draws from those that can move at its start (v_j > 0
        or g_j < 0, and the intercept), half uniformly and half in proportion to their violation
        of optimality, until its steps have read two passes' worth of stored values, after the
        gradient pass that picks them (counted): about a uniform epoch's reads, spent on the
        coordinates whose steps are not zero.
    callback : callable, optional
        Called as ``callback(epoch, history)`` after each epoch.
    verbose : int, default 0
    checkpoint : str or path-like, optional
        File holding the state at the start of an epoch (v, margins, the generator's state,
        History), written atomically at most every ``checkpoint_interval`` seconds; an
        existing one is resumed and the resumed run ends with the coefficients of an
        uninterrupted one, bit for bit. One written for other data or parameters is refused
        (:mod:`l1scale.checkpoint`).
    checkpoint_interval : float, default 5
        Least seconds between two checkpoint writes.
    """

    name = "scd"
    curvatures = ("newton", "column", "paper")  # the first is the default
    samplings = ("active", "uniform")  # the first is the default
    # Under the Newton steps, without an intercept: each step on a column of large offset is
    # followed by an offset-free pair move (:func:`_pair_step`; module docstring).
    pair_steps = True

    def __init__(
        self,
        tol=1e-6,
        max_iter=1000,
        random_state=0,
        curvature=None,
        sampling="active",
        callback=None,
        verbose=0,
        checkpoint=None,
        checkpoint_interval=checkpoints.DEFAULT_INTERVAL,
    ):
        super().__init__(tol, max_iter, random_state, curvature, callback, verbose, checkpoint, checkpoint_interval)
        self.sampling = sampling

    def _start(self, problem, v):
        if self.sampling not in self.samplings:
            raise ValueError(
                f"sampling must be one of {', '.join(map(repr, self.samplings))}, got sampling={self.sampling!r}"
            )
        seed = None if self.random_state is None else int(self.random_state)
        self._rng = np.random.default_rng(seed)
        self._pair_offsets = self._pairs(problem)
        # An active epoch's work: the gradient pass, then steps until they have read two more
        # passes' worth (a uniform epoch reads each column about twice: for g_j and g_{j+d}).
        self._pass = problem.columns.nnz if not problem.columns.dense else problem.n_samples * problem.n_features

    def _epoch(self, arrays, kind, y, c, z, r, v, curv, lam1, lam2):
        if self.sampling == "uniform":
            order = self._rng.integers(0, v.shape[0], size=v.shape[0], dtype=np.int64)
            pool = None if self._pair_offsets is None else np.flatnonzero(self._pair_offsets)
            return self._steps(arrays, kind, y, c, z, r, v, curv, lam1, lam2, order, pool=pool)[0], False
        active, probability = self._active(v, lam1, lam2)
        pool = None
        if self._pair_offsets is not None:  # the pairs' partners: the active features of nonzero offset
            d = self._pair_offsets.shape[0]
            features = np.unique(active[active < 2 * d] % d)
            pool = features[self._pair_offsets[features] != 0.0]
        reads, work, budget = self._pass, 0, 2 * self._pass
        while work < budget:
            order = active[self._rng.choice(active.shape[0], size=v.shape[0], p=probability)]
            step_reads, step_work = self._steps(
                arrays, kind, y, c, z, r, v, curv, lam1, lam2, order, budget - work, pool=pool
            )
            reads, work = reads + step_reads, work + max(step_work, 1)
        return reads, False

    def _pairs(self, problem):
        """The column offsets of the pair moves (``pair_steps``), or None where they are not taken:
        under the Newton steps, without an intercept (with one, such columns are learned centred),
        on columns whose |mean| exceeds CENTRE_RATIO times their spread, when at least two have."""
        if not self.pair_steps or problem.fit_intercept:
            return None
        return self._large_offsets(problem, least=2)

    def _active(self, v, lam1, lam2):
        """The coordinates an active epoch draws from, and their probabilities.

        The coordinates: those with v_j > 0 or g_j < 0 at the epoch's start (g from the
        certificate's X^T r; on the others the step is zero), and the intercept; every coordinate,
        uniformly, when none is active (the certificate then decides). The probabilities: half of
        the features' draws uniform over them, half in proportion to how far each violates
        optimality (|g_j| where v_j > 0, -g_j where v_j = 0), the steps that promise the most
        (Perekrestenko, Cevher & Jaggi 2017 sample by such a gap); the intercept, made optimal at
        the epoch's start and moved off it by every feature's step, four times as often as an
        average active feature (mnist 3-vs-rest and synthetic text at 0.01 lam_max with intercept,
        three seeds: 2-4x lower suboptimality after 50 epochs than at once as often; 8 and 16
        times helped text further but cost a9a and small text)."""
        grad = self._gradient
        d = grad.shape[0]
        g = np.concatenate([grad, -grad]) + lam1 + lam2 * v[: 2 * d]
        moving = v[: 2 * d] > 0.0
        active = np.flatnonzero(moving | (g < 0.0))
        violation = np.where(moving[active], np.abs(g[active]), -g[active])
        mean = float(violation.mean()) if active.shape[0] else 0.0
        if not mean > 0.0:  # nothing violates optimality (to rounding): uniform draws over all
            return np.arange(v.shape[0], dtype=np.int64), None
        weights = violation + mean
        if v.shape[0] > 2 * d:  # the intercept
            active, weights = np.append(active, 2 * d), np.append(weights, 4.0 * float(weights.mean()))
        return active.astype(np.int64), weights / weights.sum()

    def _steps(self, arrays, kind, y, c, z, r, v, curv, lam1, lam2, order, max_work=np.inf, pool=None):
        """The steps on ``order`` (until ``max_work``): (nonzeros read, work). With a ``pool`` of at
        least two features (the pairs' partners), each step on a feature of nonzero offset is
        followed by a pair move with a partner drawn uniformly from it."""
        if self._D is None:
            return _scd_epoch(*arrays, kind, y, c, z, r, v, curv, lam1, lam2, order, max_work)
        if pool is None or pool.shape[0] < 2:
            return _scd_newton_epoch(*arrays, kind, y, c, z, r, self._D, self._lv, v, curv, lam1, lam2, order, max_work)
        partners = pool[self._rng.integers(0, pool.shape[0], size=order.shape[0])].astype(np.int64)
        return _scd_pair_epoch(
            *arrays,
            kind,
            y,
            c,
            z,
            r,
            self._D,
            self._lv,
            v,
            curv,
            lam1,
            lam2,
            order,
            partners,
            self._pair_offsets,
            float(max_work),
        )


class GreedyCD(_DuplicatedCD):
    """Deterministic (greedy) coordinate descent (DetCD; Shalev-Shwartz & Tewari 2009, sec. 4).

    Minimises the same ``P(w, b)`` as :class:`StochasticCD` with the same update, but each step
    takes the coordinate of largest guaranteed decrease ``-(eta_j g_j + beta_j eta_j^2 / 2)``
    over all 2d (+1) coordinates, which needs the full gradient X^T r: nnz(X) data accesses per
    step, counted.

    Parameters
    ----------
    tol : float, default 1e-6
        As in :class:`StochasticCD`.
    max_iter : int, default 1000
        Epochs of ``epoch_size`` steps.
    epoch_size : int, optional
        Steps per epoch (between History rows and certificates); default d, so that an epoch
        updates (at most) as many coordinates as there are features.
    random_state : int, default 0
        Unused (DetCD is deterministic); accepted for a uniform interface.
    curvature : {"newton", "column", "paper"}, default "newton"
        The coordinate is always chosen by the guaranteed decrease on the bound beta_j
        ("column": beta * sum_i c_i x_ij^2 + lam2, or "paper", as in :class:`StochasticCD`;
        "newton" chooses on "column"). "column" and "paper" then take Algorithm 2's step on it;
        "newton" takes SCD's safeguarded Newton step on the coordinate's own curvature, never
        shorter (features seen in a few rows with large optimal weights, where the loss is far
        flatter than its bound: w8a at 0.01 lam_max with intercept, 50 epochs, 2.1e-2 -> see
        ``benchmarks/results/stochastic_defaults.md``), on columns with a large offset learned
        centred when there is an intercept (as :class:`StochasticCD`'s), and each epoch
        extrapolated along its move while that lowers P (module docstring: madelon at 0.01
        lam_max without intercept, 50 epochs, 2.1e-2 -> 4.7e-4).
    callback : callable, optional
    verbose : int, default 0
    checkpoint, checkpoint_interval
        As for :class:`StochasticCD`.
    """

    name = "detcd"
    curvatures = ("newton", "column", "paper")  # the first is the default
    extrapolate = True  # under "newton" (module docstring: extrapolated epochs)

    def __init__(
        self,
        tol=1e-6,
        max_iter=1000,
        epoch_size=None,
        random_state=0,
        curvature=None,
        callback=None,
        verbose=0,
        checkpoint=None,
        checkpoint_interval=checkpoints.DEFAULT_INTERVAL,
    ):
        super().__init__(tol, max_iter, random_state, curvature, callback, verbose, checkpoint, checkpoint_interval)
        self.epoch_size = epoch_size

    def _start(self, problem, v):
        steps = problem.n_features if self.epoch_size is None else int(self.epoch_size)
        if steps < 1:
            raise ValueError(f"epoch_size must be >= 1, got epoch_size={self.epoch_size!r}")
        self._steps = max(steps, 1)
        self._grad = np.empty(problem.n_features)

    def _epoch(self, arrays, kind, y, c, z, r, v, curv, lam1, lam2):
        if self._D is None:
            taken, reads = _greedy_epoch(*arrays, kind, y, c, z, r, v, curv, lam1, lam2, self._steps, self._grad)
        else:
            taken, reads = _greedy_newton_epoch(
                *arrays, kind, y, c, z, r, self._D, self._lv, v, curv, lam1, lam2, self._steps, self._grad
            )
        return reads, taken < self._steps
