"""A Newton step on the support, for when coordinate descent has found it.

Once the signs of w have settled, the L1 term is linear on their orthant and P is smooth
there. Its Newton system on the support S (and the intercept),

    (X_S^T diag(D) X_S + lam2 I) d = -(X_S^T r + lam2 w_S + lam1 sign(w_S)),

is solved by conjugate gradients preconditioned by the diagonal: ill-conditioning
(correlated text features, one-hot blocks) costs CG a few more products, where cyclic
CD on the same quadratic model needs thousands of sweeps. The step is projected onto the
orthant (a coordinate that would change sign stops at zero) and backtracked until Armijo's
condition holds (orthant-wise projected Newton, as in OWL-QN). Near the optimum it converges
quadratically, and so do the support's KKT violations: the rescaled residual then makes a
tight dual point, so the duality gap follows the suboptimality.

Where CG cannot solve the system within its cap of products (a support of thousands of
near-collinear bigrams: news20 at 0.001 lam_max), each capped step makes a fraction of the
progress of an exact one, and the certificate waits for the last few. The solver then factors
the support's Gram matrix instead (``_support_factor.SupportFactor``, a Cholesky factorisation): an exact
step, and an exact re-solve with the weights that cross zero held there, from one factorisation.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..losses import weighted_terms_along
from . import _cg_kernels as cg_kernels
from . import _gram_kernels as gram_kernels
from ._dual import columns_nnz
from ._quadratic_step import NU
from ._support_factor import STALE_MAX_PRODUCTS, SupportFactor, cholesky_work, preconditioned_cg, system_product

__all__ = [
    "CG_MAX_PRODUCTS",
    "NewtonSolve",
    "budgeted_products",
    "clipped_rtol",
    "factorisation_pays",
    "gram_products_before_factorising",
    "product_reads",
    "support_newton_direction",
    "support_newton_step",
    "system_gradient",
]

_EPS = float(np.finfo(np.float64).eps)
# CG's relative residual: the square of the largest relative KKT violation, within
# [1e-10, 0.1] (an inexact Newton step whose forcing term falls with the gradient converges
# superlinearly: loose and cheap far from the optimum, tight for the last steps), and its cap.
_CG_RTOL_RANGE = (1e-10, 0.1)
CG_MAX_PRODUCTS = 200
# Re-solves of a Newton step whose whole step crosses zero (orthant_refined).
ORTHANT_ROUNDS = 3
# A step's CG stops once its step would carry more weights across zero than a re-solve takes on.
STOP_AT_CROSSINGS = True
_SIGMA = 0.01
_MAX_HALVINGS = 30


class NewtonSolve(NamedTuple):
    """The support's Newton system solved at a point: ``grad``, the gradient of P on the support
    (the right side negated); ``step``, the solution; ``reads``, nonzeros of X read (and the
    factorisation's work); ``capped``, whether CG stopped at its cap of products; ``factor``, the
    :class:`SupportFactor` it was solved with (None: by CG); ``stale``, a factorisation made at an
    earlier point that preconditioned the CG that solved it (its re-solves may use it too); ``gram``,
    the system's Gram matrix when CG built one (``_cg_kernels.support_cg``: the re-solves take
    their products on it)."""

    grad: np.ndarray
    step: np.ndarray
    reads: int
    capped: bool
    factor: SupportFactor | None = None
    stale: SupportFactor | None = None
    gram: np.ndarray | None = None


def support_newton_direction(
    pt,
    support,
    H,
    violation,
    *,
    verbose=0,
    gram_max=0,
    rtol=None,
    max_products=CG_MAX_PRODUCTS,
    max_crossings=-1,
    direct=False,
    signs=None,
    factorise_after=None,
):
    """The Newton system on the support of ``pt.w`` (and the intercept), solved by CG, or with
    ``direct`` by a Cholesky factorisation (:class:`SupportFactor`) when the support has at most
    ``gram_max`` weights (CG where the factorisation fails).

    CG that has built the system's Gram matrix (``_cg_kernels.support_cg``: its products had read
    as much as the matrix costs) and still has not converged after its products there have cost
    ``factorise_after`` times the matrix's factorisation factorises it (rent or buy again, the
    matrix already bought) and solves the system exactly; ``pt.factor`` then keeps that
    factorisation, as with ``direct``. Dense correlated columns (genotypes in linkage blocks,
    2,000 x 50,000 at 0.01 lam_max): three Newton systems on 1,200 weights took 144-164 CG
    products each, 0.4-0.56 s, where the Gram matrix they had built factorises in 0.03 s.

    With ``direct``, ``pt.factor`` keeps the last factorisation made: at the point and on the support
    it was made for, it solves the system again; at a later point it preconditions CG
    (:func:`_support_factor.preconditioned_cg`, at most ``STALE_MAX_PRODUCTS`` products), and only
    when that does not converge is the system factorised anew (news20 at 0.001 lam_max: the endgame's
    Newton steps on 2,862 bigrams converge in a few products from the last factorisation, where each
    new one costs 0.4-0.6 s).

    Parameters: as :func:`support_newton_step`; ``rtol``, CG's relative residual, defaults to
    the square of ``violation`` (see ``_CG_RTOL_RANGE``); ``max_crossings`` (>= 0): CG stops
    early off the Gram matrix once its step would carry more weights across zero
    (``_cg_kernels.support_cg``); ``signs``, the signs of the L1 term's gradient on the support (by
    default the weights' own: a zero weight put in the system takes the sign it would enter with);
    ``factorise_after``: None, CG only, as before a factorisation is chosen (``direct``).
    Returns a :class:`NewtonSolve`."""
    nu = NU
    problem, w = pt.problem, pt.w
    k, fit_b = support.shape[0], problem.fit_intercept
    lam2 = problem.penalty.l2
    arrays = problem.columns.arrays
    size = k + int(fit_b)
    grad = system_gradient(pt, support, signs)
    reads = 0
    rtol = clipped_rtol(violation * violation if rtol is None else rtol)
    # Where the curvature does not move, the models' Gram matrix may hold the support's system.
    cached = None if pt.gram_cache is None else pt.gram_cache.over(pt, support)
    if direct and 0 < k <= gram_max:
        known = pt.factor
        if known is not None and known.is_exact_for(pt, support):
            return NewtonSolve(grad, known.solve(-grad), 0, False, known)
        precondition = None if known is None else known.preconditioner(pt, support)
        if precondition is not None:
            step, products, reads, converged = preconditioned_cg(
                pt, support, -grad, precondition, rtol, STALE_MAX_PRODUCTS
            )
            if verbose > 1:
                print(f"   support newton: |S|={k} cg products={products} (factorisation's preconditioner)")
            if converged:
                return NewtonSolve(grad, step, reads, False, None, known)
        factor, work = SupportFactor.of(pt, support, cached)
        reads += work
        if factor is not None:
            pt.factor = factor
            if verbose > 1:
                print(f"   support newton: |S|={k} factorised")
            return NewtonSolve(grad, factor.solve(-grad), reads, False, factor)
    diag = np.empty(size)  # CG's preconditioner
    diag[:k] = H[support]
    if fit_b:
        diag[k] = pt.D.sum() + nu
    step, work = np.empty(size), np.empty(problem.n_samples)
    if cached is not None:
        products, cg_reads = cg_kernels.gram_cg(
            cached, np.arange(size), k, lam2 + nu, nu, -grad, diag, rtol, max_products, step
        )
        reads += cg_reads
        if verbose > 1:
            print(f"   support newton: |S|={k} cg products={products} (the models' Gram matrix)")
        return NewtonSolve(grad, step, reads, products >= max_products, gram=cached)
    products, cg_reads, gram, converged = cg_kernels.support_cg(
        *arrays,
        support,
        pt.D,
        lam2 + nu,
        nu,
        fit_b,
        -grad,
        diag,
        rtol,
        max_products,
        step,
        work,
        gram_max,
        w[support],
        max_crossings,
        -1 if factorise_after is None else gram_products_before_factorising(size, factorise_after),
    )
    reads += cg_reads + 2 * columns_nnz(problem.columns, support)
    if verbose > 1:
        print(f"   support newton: |S|={k} cg products={products}")
    if factorise_after is not None and not converged and gram.shape[0]:
        factor, work = SupportFactor.at(problem, pt.D, support, pt.moves, gram=gram)
        reads += work
        if factor is not None:
            factor.after_cg = True
            pt.factor = factor
            if verbose > 1:
                print(f"   support newton: |S|={k} factorised (its Gram matrix, after CG)")
            return NewtonSolve(grad, factor.solve(-grad), reads, False, factor)
    return NewtonSolve(grad, step, reads, products >= max_products, gram=gram if gram.shape[0] else None)


def system_gradient(pt, support, signs=None):
    """The gradient of P on ``support`` (and the intercept) at ``pt``, the Newton system's right
    side negated: X_S^T r + lam2 w_S + lam1 ``signs`` (by default the weights' own signs; a zero
    weight in the system takes the sign it would enter with)."""
    problem, w = pt.problem, pt.w
    k = support.shape[0]
    grad = np.empty(k + int(problem.fit_intercept))
    cg_kernels.support_gradient(*problem.columns.arrays, support, pt.r, problem.fit_intercept, grad)
    grad[:k] += problem.penalty.l2 * w[support] + problem.penalty.l1 * (np.sign(w[support]) if signs is None else signs)
    return grad


def gram_products_before_factorising(size, factorise_after) -> int:
    """CG's products on a system's Gram matrix (size^2 multiply-adds each) after which factorising
    that matrix has cost ``factorise_after`` times its Cholesky factorisation (at least one)."""
    return max(1, int(np.ceil(factorise_after * cholesky_work(size) / (size * size))))


def clipped_rtol(rtol) -> float:
    """CG's relative residual ``rtol`` within ``_CG_RTOL_RANGE`` (min / max: np.clip on a scalar
    costs ~10 us)."""
    return min(max(float(rtol), _CG_RTOL_RANGE[0]), _CG_RTOL_RANGE[1])


def orthant_refined(
    pt, support, grad, step, H, rtol, max_products, *, gram_max=0, settled=1.0, factor=None, stale=None, gram=None
):
    """The Newton step re-solved on the weights that keep their signs.

    Where the whole step ``step`` would carry weights of the support across zero (the set C),
    they are moved to zero exactly and the rest R of the support (and the intercept) solve the
    Newton system with that move fixed, ``H_RR d_R = -(grad_R + H_RC d_C)``: the projection of
    the line search would otherwise keep R's step, solved for C crossing, and cut it short. The
    correction is solved by CG from the old step on R (its residual is small where C is), up to
    ``ORTHANT_ROUNDS`` times while new crossings appear, all of them within ``max_products``
    products (each round's residual is one); or exactly, through the ``factor`` (a
    :class:`SupportFactor` of the whole support's system) that solved the step. A ``stale`` one (made
    at an earlier point, which preconditioned the step's CG) preconditions the correction's CG too.
    Where the step's CG built the system's Gram matrix (``gram``), the correction's CG takes its
    products on that matrix's rows instead of building its own (mnist10k at 0.01 lam_max, 134
    weights: a re-solve 25 ms, most of it the second Gram matrix, -> under 1 ms).

    Only while C holds at most ``settled`` of the support: the re-solve takes the rest of the
    support for the optimum's, which a few weights hovering at zero leave true (text at small
    lam: 1-15 of 1,350 bigrams, a step cut to t = 2^-8 by them), and a step that moves many
    across does not (a9a's one-hot blocks at 0.001 lam_max: 20 of 90, where the re-solved steps
    read 21-36% more to every tol). Returns (the step, nonzeros read)."""
    nu = NU
    problem, w = pt.problem, pt.w
    k, fit_b = support.shape[0], problem.fit_intercept
    arrays = problem.columns.arrays
    lam2 = problem.penalty.l2
    w_s = w[support]
    free = np.ones(k, dtype=bool)
    step = step.copy()
    reads = 0
    margins, product = np.empty(problem.n_samples), np.empty(k + int(fit_b))
    corner = pt.D.sum() + nu if fit_b else 0.0  # the intercept's diagonal entry
    left = int(max_products)  # the rounds share the whole step's cap of products
    for _ in range(ORTHANT_ROUNDS):
        cross = free & (np.sign(w_s + step[:k]) != np.sign(w_s))
        if not cross.any() or k - int(free.sum()) + int(cross.sum()) > settled * k or (factor is None and left < 2):
            break
        step[:k][cross] = -w_s[cross]
        free &= ~cross
        if not free.any():
            break
        if factor is not None:
            held = np.flatnonzero(~free)
            step = factor.solve_held(-grad, held, -w_s[held])
            reads += int(2 * held.shape[0] * factor.size**2 / gram_kernels.DENSE_GRAM_SPEEDUP)
            continue
        rows = np.flatnonzero(np.append(free, True) if fit_b else free)
        # The system's residual at the step so far, on the rows still free.
        if gram is not None:
            cg_kernels.gram_product(gram, k, lam2 + nu, nu, step, product)
            reads += product.shape[0] ** 2
        else:
            reads += system_product(pt, support, step, product, margins)
        rhs = -(grad + product)[rows]
        left -= 1
        kept = support[free]
        diag = np.empty(rows.shape[0])
        diag[: kept.shape[0]] = H[kept]  # the preconditioner, as for the whole step
        if fit_b:
            diag[-1] = corner
        target = rtol * float(np.sqrt(grad[rows] @ grad[rows]))
        size = float(np.sqrt(rhs @ rhs))
        if size <= target:
            continue
        if gram is not None:
            correction = np.empty(rows.shape[0])
            products, more = cg_kernels.gram_cg(
                gram, rows, k, lam2 + nu, nu, rhs, diag, min(target / size, 0.5), left, correction
            )
            reads += more
            left -= products
            step[rows] += correction
            continue
        precondition = None if stale is None else stale.preconditioner(pt, kept)
        if precondition is not None:
            correction, products, more, _ = preconditioned_cg(
                pt, kept, rhs, precondition, min(target / size, 0.5), left
            )
            reads += more
            left -= products
            step[rows] += correction
            continue
        correction = np.empty(rows.shape[0])
        products, more, _, _ = cg_kernels.support_cg(
            *arrays,
            kept,
            pt.D,
            lam2 + nu,
            nu,
            fit_b,
            rhs,
            diag,
            min(target / size, 0.5),
            left,
            correction,
            margins,
            gram_max,
            correction,  # no crossing test (max_crossings < 0)
            -1,
            -1,  # no factorisation to hand on to (a default would compile a signature of its own)
        )
        reads += more
        left -= products
        step[rows] += correction
    return step, reads


def budgeted_products(problem, support, gram_max, budget, least):
    """CG's cap of products for the support's Newton system within ``budget`` nonzeros read (each
    product reads the support's columns twice), at least ``least``; the full cap where its
    products are taken on the Gram matrix (``_cg_kernels.support_cg``: they are cheap there)."""
    per_product = product_reads(problem, support)
    if _on_gram(problem, support, gram_max, per_product):
        return CG_MAX_PRODUCTS
    return int(min(CG_MAX_PRODUCTS, max(least, budget / per_product)))


def product_reads(problem, support) -> int:
    """Nonzeros of X one CG product off the Gram matrix reads: the support's columns, twice."""
    return 2 * max(columns_nnz(problem.columns, support), 1)


def factorisation_pays(problem, support, gram_max) -> bool:
    """Whether the support's Newton system is better factorised than solved by CG for a
    :class:`NewtonDual` try: its CG would run on the Gram matrix (built either way), and the
    Cholesky factorisation of that matrix (m^3 / 3 multiply-adds, m the system's size) costs at
    most CG's whole cap of products on it (m^2 each), m <= 3 ``CG_MAX_PRODUCTS``.

    A try whose CG stops at its cap is spent for nothing (its point misses tol), and the systems
    that certify late are the ill-conditioned ones: a9a's one-hot blocks beside the intercept,
    mnist10k's neighbouring pixels. Measured (whole fits, in process; the iterates are the same):
    a9a at 0.001 lam_max to tol 1e-2 42 -> 37 ms (a try at 89 weights had run 200 products and
    missed), at 0.01 to 1e-6 43 -> 39 ms; mnist10k at 0.01 lam_max 101 -> 89 ms to 1e-2, 172 ->
    145 ms to 1e-6; earn and mnist10k at 0.001 level. The solver's own steps keep CG
    (``CoordinateDescent._direct``): exact steps there moved the trajectories, earn at 0.001
    lam_max to 1e-2 +20% for one more Newton step."""
    m = support.shape[0] + int(problem.fit_intercept)
    return m <= 3 * CG_MAX_PRODUCTS and _on_gram(problem, support, gram_max, product_reads(problem, support))


def _on_gram(problem, support, gram_max, per_product) -> bool:
    """Whether CG on the support's Newton system takes its products on the Gram matrix
    (``_cg_kernels.support_cg``): at most ``gram_max`` weights, and the matrix smaller than what
    one product off it reads (``per_product``, :func:`product_reads`)."""
    m = support.shape[0] + int(problem.fit_intercept)
    return support.shape[0] <= gram_max and m * m < per_product


def support_newton_step(
    pt,
    support,
    H,
    violation,
    *,
    verbose=0,
    gram_max=0,
    direction=None,
    max_products=CG_MAX_PRODUCTS,
    settled=0.0,
    direct=False,
    factorise_after=None,
    max_halvings=_MAX_HALVINGS,
):
    """One projected Newton step on the support of ``pt.w``; updates ``pt`` when it is accepted.

    Parameters
    ----------
    pt : the solver's iterate (``w``, ``b``, margins, losses, ``r``, ``D``; see ``_cd_state.Iterate``).
    support : ndarray of int
        The nonzero weights, sorted.
    H : ndarray (d,)
        Diagonal curvature at the current point on the support (the preconditioner; the
        curvature floor ``_quadratic_step.NU`` is added to the system's diagonal).
    violation : float
        The largest KKT violation relative to lam1 at the current point (sets CG's tolerance).
    gram_max : int
        Largest support whose CG products may be taken on its Gram matrix.
    direction : NewtonSolve, optional
        The system solved at this point (:func:`support_newton_direction`); solved here when not
        given.
    max_products : int
        CG's cap of products when the direction is solved here (a budget:
        :func:`budgeted_products`; at most ``CG_MAX_PRODUCTS``).
    settled : float
        When the whole step carries at most this fraction of the support across zero, the rest
        is re-solved with those weights at zero (:func:`orthant_refined`); 0: never.
    direct : bool
        Solve the system by a Cholesky factorisation (:class:`SupportFactor`; supports of at
        most ``gram_max`` weights) instead of CG, and re-solve it with the same factorisation.
    factorise_after : float, optional
        CG factorises the Gram matrix it built once its products there cost this many
        factorisations (:func:`support_newton_direction`).
    max_halvings : int
        Trials of the line search (t = 1, 1/2, ...) before the step is rejected.

    Returns (the step length taken, 0.0 when rejected; nonzeros of X read; whether CG stopped
    at ``max_products``, i.e. the system is too ill-conditioned to solve in that many).
    """
    problem, w = pt.problem, pt.w
    k, fit_b = support.shape[0], problem.fit_intercept
    if k == 0:
        return 0.0, 0, False
    lam1, lam2 = problem.penalty.l1, problem.penalty.l2
    arrays = problem.columns.arrays
    reads = 0
    if direction is None:
        # CG stops once its step would carry more weights across zero than a re-solve takes on:
        # the projection would cut that step short whatever products followed (news20 at 0.001
        # lam_max: 127 products, 0.45 s, for a step that 1,515 of 3,704 weights crossed, cut to
        # t = 2^-8).
        direction = support_newton_direction(
            pt,
            support,
            H,
            violation,
            verbose=verbose,
            gram_max=gram_max,
            max_products=max_products,
            max_crossings=int(settled * k) if settled > 0 and STOP_AT_CROSSINGS else -1,
            direct=direct,
            factorise_after=factorise_after,
        )
        reads = direction.reads
    grad, step, capped, factor = direction.grad, direction.step, direction.capped, direction.factor
    if settled > 0.0:
        step, more = orthant_refined(
            pt,
            support,
            grad,
            step,
            H,
            clipped_rtol(violation * violation),
            max_products,
            gram_max=gram_max,
            settled=settled,
            factor=factor,
            stale=direction.stale,
            gram=direction.gram,
        )
        reads += more
    wS, sign = w[support], np.sign(w[support])
    size = k + int(fit_b)
    work = np.empty(problem.n_samples)
    nnz_S = columns_nnz(problem.columns, support)
    d_w, d_b = step[:k], (step[k] if fit_b else 0.0)
    objective = pt.objective
    slack = 8 * _EPS * abs(objective)
    move = np.empty(size)
    t = 1.0
    for _ in range(max_halvings):
        trial = wS + t * d_w
        trial[np.sign(trial) != sign] = 0.0  # projected onto the orthant of w
        delta = trial - wS
        decrease = float(grad[:k] @ delta) + (t * d_b * grad[k] if fit_b else 0.0)
        move[:k] = delta
        if fit_b:
            move[k] = t * d_b
        cg_kernels.support_margins_change(*arrays, support, move, fit_b, work)
        dz = work
        reads += nnz_S
        loss_change = weighted_terms_along(
            problem.loss.kernel_id, problem.y, pt.z, dz, 1.0, problem.c, pt.lv, pt.z_new, pt.lv_new, pt.r, pt.D
        )
        pen_change = float(lam1 * (np.abs(trial).sum() - np.abs(wS).sum()) + 0.5 * lam2 * (trial @ trial - wS @ wS))
        if decrease < 0.0 and loss_change + pen_change <= _SIGMA * decrease + slack:
            w[support] = trial
            pt.b += t * d_b
            pt.accept()
            pt.loss_sum += loss_change
            pt.pen += pen_change
            return t, reads, capped
        t *= 0.5
    # Rejected: r and D hold a trial's values; the caller makes them afresh.
    return 0.0, reads, capped
