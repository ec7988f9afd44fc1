"""The support-Newton step re-solved on the weights that keep their signs
(``solvers/_support_newton.orthant_refined``), and the support's system factorised
(``SupportFactor``) once CG cannot solve it within its cap."""

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale.problems import Problem
from l1scale.solvers import _cd_kernels as kernels
from l1scale.solvers import _cg_kernels as cg_kernels
from l1scale.solvers import _newton_dual
from l1scale.solvers._cd_state import Iterate
from l1scale.solvers._quadratic_step import NU
from l1scale.solvers._support_factor import SupportFactor, preconditioned_cg
from l1scale.solvers._support_newton import orthant_refined, support_newton_direction


def _curvatures(problem, pt):
    H = np.empty(problem.n_features)
    kernels.column_curvatures(*problem.columns.arrays, np.arange(problem.n_features), pt.D, H)
    return H


def _system(problem, pt, support):
    """The support's Newton matrix, written out: X_S^T diag(D) X_S + (lam2 + nu) I, bordered by
    the intercept's row and column (curvature floor nu) when it is fitted."""
    X = problem.X.toarray() if sp.issparse(problem.X) else np.asarray(problem.X)
    A = X[:, support]
    if problem.fit_intercept:
        A = np.hstack([A, np.ones((A.shape[0], 1))])
    M = A.T @ (pt.D[:, None] * A) + NU * np.eye(A.shape[1])
    M[: support.shape[0], : support.shape[0]] += problem.penalty.l2 * np.eye(support.shape[0])
    return M


def _crossing_point(problem, support, rng):
    """Weights on ``support`` of which a few are tiny and on the side of zero opposite to where
    the Newton step from nearby weights takes them: the whole step crosses zero there."""
    w = np.zeros(problem.n_features)
    w[support] = rng.normal(scale=0.5, size=support.shape[0])
    pt = Iterate(problem, w, 0.0)
    H = _curvatures(problem, pt)
    step = support_newton_direction(pt, support, H, 1e-4).step
    k = support.shape[0]
    flip = np.argsort(-np.abs(step[:k]))[:3]  # the coordinates the step moves most
    w[support[flip]] = -1e-4 * np.sign(step[flip])
    return Iterate(problem, w, 0.0)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("layout", ["dense", "csc"])
def test_crossing_weights_go_to_zero_and_the_rest_solve_their_system(fit_intercept, layout):
    rng = np.random.default_rng(3)
    n, d = 300, 40
    X = rng.normal(size=(n, d))
    y = np.where(X[:, :6] @ rng.normal(size=6) + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    X = sp.csc_matrix(X) if layout == "csc" else np.asfortranarray(X)
    problem = Problem(X, y, "logistic", lam_ratio=0.05, fit_intercept=fit_intercept)
    support = np.sort(rng.choice(d, 15, replace=False))
    pt = _crossing_point(problem, support, rng)
    k = support.shape[0]
    w_s = pt.w[support]
    H = _curvatures(problem, pt)
    solve = support_newton_direction(pt, support, H, 1e-4)
    grad, step = solve.grad, solve.step
    crossing = np.sign(w_s + step[:k]) != np.sign(w_s)
    assert crossing.any()  # the case under test

    refined, reads = orthant_refined(pt, support, grad, step, H, 1e-8, 200)
    assert reads > 0
    at_zero = refined[:k] == -w_s  # moved to zero exactly: the crossing ones (and any a later round found)
    assert at_zero[crossing].all()
    free = ~at_zero
    assert free.any()
    # The free weights keep their signs, and with the intercept they solve the Newton system
    # with the zeroed ones' move fixed: its rows on them are satisfied.
    assert (np.sign(w_s[free] + refined[:k][free]) == np.sign(w_s[free])).all()
    rows = np.flatnonzero(np.append(free, True) if fit_intercept else free)
    residual = (_system(problem, pt, support) @ refined + grad)[rows]
    assert np.linalg.norm(residual) <= 1e-6 * np.linalg.norm(grad[rows])
    # The step the line search's projection alone would take (the crossing weights stopped at
    # zero, the rest as solved for them crossing) does not: the re-solve is what changes it.
    projected = step.copy()
    projected[:k][at_zero] = -w_s[at_zero]
    moved = (_system(problem, pt, support) @ projected + grad)[rows]
    assert np.linalg.norm(moved) > 1e-3 * np.linalg.norm(grad[rows])


def test_a_step_that_keeps_its_signs_is_left_as_it_is():
    """Near the optimum the support's signs are the optimum's and its Newton step keeps them:
    nothing is re-solved."""
    from l1scale.solvers.cd import CoordinateDescent

    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 20))
    y = np.where(X[:, :3].sum(axis=1) + 0.3 * rng.normal(size=200) > 0, 1.0, -1.0)
    problem = Problem(np.asfortranarray(X), y, "logistic", lam_ratio=0.1, fit_intercept=True)
    result = CoordinateDescent(tol=1e-6).solve(problem)
    pt = Iterate(problem, result.coef, result.intercept)
    support = np.flatnonzero(pt.w)
    H = _curvatures(problem, pt)
    solve = support_newton_direction(pt, support, H, 1e-4)
    grad, step = solve.grad, solve.step
    k = support.shape[0]
    assert k > 0 and (np.sign(pt.w[support] + step[:k]) == np.sign(pt.w[support])).all()
    refined, reads = orthant_refined(pt, support, grad, step, H, 1e-8, 200)
    np.testing.assert_array_equal(refined, step)
    assert reads == 0


def test_a_step_that_moves_more_of_the_support_across_zero_than_settled_is_left_to_the_line_search():
    """Many crossings say the support has not settled: the re-solve would take the rest of it
    for the optimum's, so the step is left to the line search's projection."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 40))
    y = np.where(X[:, :6] @ rng.normal(size=6) + 0.5 * rng.normal(size=300) > 0, 1.0, -1.0)
    problem = Problem(np.asfortranarray(X), y, "logistic", lam_ratio=0.05)
    support = np.sort(rng.choice(40, 15, replace=False))
    pt = _crossing_point(problem, support, rng)
    H = _curvatures(problem, pt)
    solve = support_newton_direction(pt, support, H, 1e-4)
    grad, step = solve.grad, solve.step
    crossing = int((np.sign(pt.w[support] + step[:15]) != np.sign(pt.w[support])).sum())
    assert crossing >= 1
    kept, reads = orthant_refined(pt, support, grad, step, H, 1e-8, 200, settled=(crossing - 0.5) / 15)
    np.testing.assert_array_equal(kept, step)
    assert reads == 0
    refined, _ = orthant_refined(pt, support, grad, step, H, 1e-8, 200, settled=crossing / 15)
    assert not np.array_equal(refined, step)


@pytest.mark.slow
def test_re_solved_steps_read_less_on_text_at_small_lam(monkeypatch):
    """Synthetic Zipf text at 0.001 lam_max: a few weights of a settled support hover at zero,
    and their crossings cut the projected Newton steps short. Re-solving the rest with them at
    zero reads 0.47x the nonzeros to tol 1e-4 here (401M against 845M), to the same optimum. The
    Newton dual point's tightening (which holds its crossing weights too, and took the projected
    steps' run to 498M) is off in both, so that the steps' re-solve is what is measured."""
    from l1scale.data.synthetic import make_sparse_text
    from l1scale.solvers import _support_newton
    from l1scale.solvers.cd import CoordinateDescent

    X, y = make_sparse_text(4000, 40000, nnz_per_row=30, noise=0.0, random_state=5)
    p = Problem(X, y, "logistic", lam_ratio=0.001, fit_intercept=False)
    monkeypatch.setattr(_newton_dual.NewtonDual, "_tightened", lambda *args: None)
    refined = CoordinateDescent(tol=1e-4).solve(p)
    monkeypatch.setattr(_support_newton, "ORTHANT_ROUNDS", 0)
    projected = CoordinateDescent(tol=1e-4).solve(p)
    assert refined.converged and projected.converged
    assert refined.objective == pytest.approx(projected.objective, rel=2e-4)
    assert refined.history.data_accesses[-1] < 0.8 * projected.history.data_accesses[-1]


def test_support_cg_stops_once_its_iterate_crosses_more_weights_than_allowed():
    """Off the Gram matrix CG stops as soon as its iterate carries more of the support's weights
    across zero than ``max_crossings``; with -1 it solves the system."""
    rng = np.random.default_rng(5)
    n, d = 300, 30
    X = np.asfortranarray(rng.normal(size=(n, d)))
    problem = Problem(X, np.where(rng.normal(size=n) > 0, 1.0, -1.0), "logistic", lam_ratio=0.1)
    support = np.arange(0, 20, dtype=np.int64)
    D = rng.uniform(0.05, 0.25, size=n) / n
    rhs = rng.normal(size=20)
    diag = np.ones(20)
    runs = {}
    for max_crossings, w_s in [(-1, np.ones(20)), (0, -1e-9 * np.sign(rhs)), (25, -1e-9 * np.sign(rhs))]:
        x, t = np.empty(20), np.empty(n)
        products, _, _, _ = cg_kernels.support_cg(
            *problem.columns.arrays, support, D, 1e-6, NU, False, rhs, diag, 1e-12, 200, x, t, 0,
            w_s, max_crossings, -1,
        )  # fmt: skip
        runs[max_crossings] = products
    # The first iterate moves along the preconditioned right side: tiny weights of the opposite
    # sign all cross at once, and 0 allowed stops there; allowing more than the support's size
    # (25) runs to convergence like -1.
    assert runs[0] == 1
    assert runs[-1] > 5 and runs[25] == runs[-1]


def _crossing_case(fit_intercept, layout, lam2=0.0):
    rng = np.random.default_rng(3)
    n, d = 300, 40
    X = rng.normal(size=(n, d))
    y = np.where(X[:, :6] @ rng.normal(size=6) + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    X = sp.csc_matrix(X) if layout == "csc" else np.asfortranarray(X)
    l1_ratio = 1.0 if lam2 == 0.0 else 0.5
    problem = Problem(X, y, "logistic", lam_ratio=0.05, l1_ratio=l1_ratio, fit_intercept=fit_intercept)
    support = np.sort(rng.choice(d, 15, replace=False))
    pt = _crossing_point(problem, support, rng)
    return problem, support, pt


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("layout", ["dense", "csc"])
@pytest.mark.parametrize("lam2", [0.0, 1.0])
def test_the_factorised_system_is_the_support_newton_system(fit_intercept, layout, lam2):
    """The factorisation solves the Newton system as written out densely (ridge, intercept border
    and elastic net included), where CG stops at a tolerance; held coordinates come out exactly
    at their values and the other rows of the system hold."""
    problem, support, pt = _crossing_case(fit_intercept, layout, lam2)
    M = _system(problem, pt, support)
    rhs = np.random.default_rng(7).normal(size=M.shape[0])
    factor, work = SupportFactor.of(pt, support)
    assert factor is not None and work > 0
    np.testing.assert_allclose(factor.solve(rhs), np.linalg.solve(M, rhs), rtol=1e-10, atol=1e-12)

    held = np.array([1, 4, 9])
    values = np.array([0.3, -0.2, 0.0])
    x = factor.solve_held(rhs, held, values)
    np.testing.assert_array_equal(x[held], values)
    free = np.setdiff1d(np.arange(M.shape[0]), held)
    reduced = np.linalg.solve(M[np.ix_(free, free)], rhs[free] - M[np.ix_(free, held)] @ values)
    np.testing.assert_allclose(x[free], reduced, rtol=1e-9, atol=1e-12)
    # A boolean mask says the same; nothing held is a plain solve.
    mask = np.zeros(M.shape[0], dtype=bool)
    mask[held] = True
    np.testing.assert_array_equal(factor.solve_held(rhs, mask, values), x)
    np.testing.assert_array_equal(factor.solve_held(rhs, np.array([], dtype=int), np.array([])), factor.solve(rhs))
    # Several right-hand sides at once (LAPACK's triangular solves), and most of the weights held.
    B = np.random.default_rng(8).normal(size=(M.shape[0], 3))
    np.testing.assert_allclose(factor.solve(B), np.linalg.solve(M, B), rtol=1e-10, atol=1e-12)
    held = np.arange(0, M.shape[0], 2)[::-1]  # in no particular order
    values = np.random.default_rng(9).normal(size=held.shape[0])
    x = factor.solve_held(rhs, held, values)
    np.testing.assert_array_equal(x[held], values)
    free = np.setdiff1d(np.arange(M.shape[0]), held)
    reduced = np.linalg.solve(M[np.ix_(free, free)], rhs[free] - M[np.ix_(free, held)] @ values)
    np.testing.assert_allclose(x[free], reduced, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_a_factorised_direction_is_exact_and_its_re_solve_needs_no_products(fit_intercept):
    """``direct``: the step is the Newton system's exact solution, and the re-solve with the
    crossing weights held at zero comes from the same factorisation: its free rows hold to
    rounding (CG's re-solve holds them to its tolerance), with no product of X."""
    problem, support, pt = _crossing_case(fit_intercept, "csc")
    k = support.shape[0]
    w_s = pt.w[support]
    H = _curvatures(problem, pt)
    M = _system(problem, pt, support)
    solve = support_newton_direction(pt, support, H, 1e-4, gram_max=100, direct=True)
    assert solve.factor is not None and not solve.capped
    np.testing.assert_allclose(solve.step, np.linalg.solve(M, -solve.grad), rtol=1e-9, atol=1e-12)
    crossing = np.sign(w_s + solve.step[:k]) != np.sign(w_s)
    assert crossing.any()

    refined, work = orthant_refined(pt, support, solve.grad, solve.step, H, 1e-8, 0, factor=solve.factor)
    at_zero = refined[:k] == -w_s
    assert at_zero[crossing].all() and (~at_zero).any()
    rows = np.flatnonzero(np.append(~at_zero, True) if fit_intercept else ~at_zero)
    residual = (M @ refined + solve.grad)[rows]
    assert np.linalg.norm(residual) <= 1e-10 * np.linalg.norm(solve.grad[rows])
    assert work < 2 * problem.columns.nnz  # no CG product: a few triangular solves
    # The step the projection alone would take leaves those rows far from solved.
    projected = solve.step.copy()
    projected[:k][at_zero] = -w_s[at_zero]
    assert np.linalg.norm((M @ projected + solve.grad)[rows]) > 1e3 * np.linalg.norm(residual)
    # Without the factorisation and with no products left, nothing is re-solved.
    unsolved, _ = orthant_refined(pt, support, solve.grad, solve.step, H, 1e-8, 0)
    np.testing.assert_array_equal(unsolved, solve.step)
    # A support larger than gram_max (the Gram matrix's memory bound) is solved by CG.
    fallback = support_newton_direction(pt, support, H, 1e-4, gram_max=k - 1, direct=True)
    assert fallback.factor is None


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("lam2", [0.0, 1.0])
def test_a_re_solve_takes_its_products_on_the_gram_matrix_its_step_built(fit_intercept, lam2):
    """Where the step's CG built the system's Gram matrix, the re-solve with the crossing weights
    at zero takes its products on that matrix's rows: the same solution as CG over the columns
    (both to their tolerance), for a small fraction of the work."""
    problem, support, pt = _crossing_case(fit_intercept, "csc", lam2)
    k = support.shape[0]
    w_s = pt.w[support]
    H = _curvatures(problem, pt)
    M = _system(problem, pt, support)
    solve = support_newton_direction(pt, support, H, 1e-4, gram_max=100)
    assert solve.factor is None and solve.gram is not None  # CG, which bought the Gram matrix
    ridge = np.full(M.shape[0], NU)
    ridge[:k] += problem.penalty.l2
    np.testing.assert_allclose(solve.gram + np.diag(ridge), M, rtol=1e-12, atol=1e-12)
    crossing = np.sign(w_s + solve.step[:k]) != np.sign(w_s)
    assert crossing.any()

    on_gram, work = orthant_refined(pt, support, solve.grad, solve.step, H, 1e-8, 200, gram=solve.gram)
    on_columns, reads = orthant_refined(pt, support, solve.grad, solve.step, H, 1e-8, 200)
    at_zero = on_gram[:k] == -w_s
    np.testing.assert_array_equal(at_zero, on_columns[:k] == -w_s)
    assert at_zero[crossing].all() and (~at_zero).any()
    rows = np.flatnonzero(np.append(~at_zero, True) if fit_intercept else ~at_zero)
    scale = np.linalg.norm(solve.grad[rows])
    assert np.linalg.norm((M @ on_gram + solve.grad)[rows]) <= 1e-6 * scale
    np.testing.assert_allclose(on_gram, on_columns, rtol=1e-5, atol=1e-7 * np.abs(on_columns).max())
    assert work < 0.5 * reads
    # Without a Gram matrix (gram_max 0) the step says so, and the re-solve reads the columns.
    assert support_newton_direction(pt, support, H, 1e-4, gram_max=0).gram is None


def _correlated_case(fit_intercept, lam2=0.0):
    """Columns with shared factors (CG without a good preconditioner needs many products), a
    support of 80, and a point with its margins, curvatures and move count."""
    rng = np.random.default_rng(11)
    n, d, k = 600, 160, 80
    X = rng.normal(size=(n, 3)) @ rng.normal(size=(3, d)) * 3.0 + rng.normal(size=(n, d)) * np.geomspace(0.02, 2, d)
    y = np.where(X[:, :5].sum(axis=1) + rng.normal(size=n) > 0, 1.0, -1.0)
    l1_ratio = 1.0 if lam2 == 0.0 else 0.5
    problem = Problem(sp.csc_matrix(X), y, "logistic", lam_ratio=0.01, l1_ratio=l1_ratio, fit_intercept=fit_intercept)
    support = np.sort(rng.choice(d, k, replace=False))
    w = np.zeros(d)
    w[support] = rng.normal(scale=0.1, size=k)
    return problem, support, Iterate(problem, w, 0.0), rng


def _moved(problem, pt, rng, scale):
    """The iterate moved: every weight of the support changed by up to ``scale`` of its size."""
    w = pt.w.copy()
    w[w != 0.0] *= 1.0 + scale * rng.uniform(-1.0, 1.0, size=int((w != 0.0).sum()))
    moved = Iterate(problem, w, pt.b)
    moved.moves = pt.moves + 5
    return moved


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("lam2", [0.0, 1.0])
@pytest.mark.parametrize("changed", [0, 2])
def test_an_earlier_factorisation_preconditions_a_later_points_system(fit_intercept, lam2, changed):
    """A factorisation made at one point, used at a point where the curvatures have moved (and the
    support has lost ``changed`` weights and gained as many): CG preconditioned by it solves the new
    system (against the dense solve) in a few products, where Jacobi-preconditioned CG needs
    hundreds (the system's condition number is about 2e6)."""
    problem, support, pt, rng = _correlated_case(fit_intercept, lam2)
    factor, _ = SupportFactor.of(pt, support)
    assert factor.is_exact_for(pt, support)
    later = _moved(problem, pt, rng, 0.05)
    assert not factor.is_exact_for(later, support)
    outside = np.setdiff1d(np.arange(problem.n_features), support)
    # The columns of most noise: new columns nearly in the span of the old ones are the case a
    # new factorisation is for (test_a_factorisation_too_far_from_the_support_preconditions_nothing).
    new_support = np.sort(np.concatenate([support[changed:], outside[outside.shape[0] - changed :]]))
    M = _system(problem, later, new_support)
    rhs = np.random.default_rng(2).normal(size=M.shape[0])
    precondition = factor.preconditioner(later, new_support)
    assert precondition is not None and precondition.work > 0 and (precondition.setup > 0) == (changed > 0)
    x, products, reads, converged = preconditioned_cg(later, new_support, rhs, precondition, 1e-10, 50)
    assert converged
    np.testing.assert_allclose(M @ x, rhs, rtol=0, atol=1e-9 * np.abs(rhs).max())
    H = _curvatures(problem, later)
    diag = np.append(H[new_support], later.D.sum() + NU) if fit_intercept else H[new_support]
    jacobi, work = np.empty(M.shape[0]), np.empty(problem.n_samples)
    jacobi_products, _, _, _ = cg_kernels.support_cg(
        *problem.columns.arrays, new_support, later.D, problem.penalty.l2 + NU, NU,
        fit_intercept, rhs, diag, 1e-10, 500, jacobi, work, 0, jacobi, -1, -1,
    )  # fmt: skip
    assert products <= 12 and jacobi_products >= 10 * products
    indptr = problem.columns.indptr
    assert reads >= products * 2 * int((indptr[new_support + 1] - indptr[new_support]).sum())
    # At the point and on the support it was made for, one product confirms the exact solve.
    same = factor.preconditioner(pt, support)
    _, products, _, converged = preconditioned_cg(pt, support, rhs, same, 1e-10, 50)
    assert converged and products == 1


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize(("left", "came"), [(0, 0), (3, 0), (0, 2), (3, 2), (1, 16)])
def test_a_factorisation_at_the_same_point_preconditions_a_changed_support_exactly(fit_intercept, left, came):
    """At the point it was made, the factorisation's preconditioner on a support that has lost
    ``left`` weights (held at zero: a Schur complement on its inverse) and gained ``came`` (bordered
    on by theirs) is the new system's exact inverse: the algebra of ``_factor_kernels.precondition``
    against the dense solve."""
    problem, support, pt, rng = _correlated_case(fit_intercept)
    factor, _ = SupportFactor.of(pt, support)
    outside = np.setdiff1d(np.arange(problem.n_features), support)
    new_support = np.sort(np.concatenate([support[left:], outside[outside.shape[0] - came :]]))
    precondition = factor.preconditioner(pt, new_support)
    assert precondition is not None
    M = _system(problem, pt, new_support)
    residual = rng.normal(size=M.shape[0])
    applied = precondition.apply(residual)
    # (M's condition number is about 2e6: the rounding of any exact solve leaves ~1e-9 here.)
    np.testing.assert_allclose(M @ applied, residual, rtol=0, atol=1e-8 * np.abs(residual).max())
    np.testing.assert_array_equal(precondition.apply(residual), applied)  # no state kept between calls


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("lam2", [0.0, 1.0])
def test_cg_factorises_the_gram_matrix_it_bought_once_its_products_there_cost_a_fraction_of_it(fit_intercept, lam2):
    """A support system that CG does not solve in the products that pay for its Gram matrix: with
    ``factorise_after``, once its products on that matrix cost that fraction of the matrix's
    factorisation, the matrix is factorised and the step is the exact solution (the dense solve),
    kept as ``pt.factor`` for the next systems; CG alone (None) reads more and ends farther from it.
    The kernel stops, not converged, after the products on the Gram matrix it is given."""
    problem, support, pt, _ = _correlated_case(fit_intercept, lam2)
    H = _curvatures(problem, pt)
    M = _system(problem, pt, support)
    exact_step = support_newton_direction(pt, support, H, 1e-5, gram_max=100, factorise_after=0.2)
    assert exact_step.factor is not None and exact_step.factor.after_cg and pt.factor is exact_step.factor
    assert exact_step.factor.is_exact_for(pt, support) and not exact_step.capped
    scale = np.abs(exact_step.step).max()
    np.testing.assert_allclose(exact_step.step, np.linalg.solve(M, -exact_step.grad), rtol=0, atol=1e-9 * scale)
    assert np.linalg.norm(M @ exact_step.step + exact_step.grad) <= 1e-9 * np.linalg.norm(exact_step.grad)

    pt.factor = None
    cg_only = support_newton_direction(pt, support, H, 1e-5, gram_max=100)
    assert cg_only.factor is None and cg_only.gram is not None and pt.factor is None
    assert cg_only.reads > 1.1 * exact_step.reads
    residual = np.linalg.norm(M @ cg_only.step + cg_only.grad)  # CG's step, far from exact here
    assert residual > 100 * np.linalg.norm(M @ exact_step.step + exact_step.grad)

    diag = np.append(H[support], pt.D.sum() + NU) if fit_intercept else H[support]
    x, work = np.empty(M.shape[0]), np.empty(problem.n_samples)
    args = (*problem.columns.arrays, support, pt.D, problem.penalty.l2 + NU, NU, fit_intercept,
            -exact_step.grad, diag, 1e-6, 500, x, work, 100, x, -1)  # fmt: skip
    stopped = cg_kernels.support_cg(*args, 3)
    whole = cg_kernels.support_cg(*args, -1)
    assert stopped[2].shape[0] and not stopped[3] and stopped[0] < whole[0]
    assert whole[3]


def test_a_fit_on_dense_correlated_columns_factorises_after_cg_and_reads_less(monkeypatch):
    """Genotype-like columns (0 / 1 / 2, in linkage blocks of 30 correlated columns), 400 x 3,000 at
    0.003 lam_max: a support-Newton system whose CG bought its Gram matrix is factorised
    (``CoordinateDescent.factorise_gram_after``), the same certified optimum as with CG alone, for
    fewer nonzeros read (58.6M against 71.9M when measured). Without the rule nothing is."""
    from l1scale.solvers import _support_newton
    from l1scale.solvers.cd import CoordinateDescent

    rng = np.random.default_rng(0)
    n, d, block = 400, 3000, 30
    X = np.repeat(rng.standard_normal((n, d // block)), block, axis=1) * 0.8 + 0.6 * rng.standard_normal((n, d))
    X = np.asfortranarray((X > 0.5).astype(float) + (X > 1.5))
    beta = np.zeros(d)
    beta[rng.choice(d, 20, replace=False)] = rng.standard_normal(20)
    z = X @ beta
    y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-2.0 * (z - z.mean()) / z.std())), 1.0, -1.0)
    problem = Problem(X, y, "logistic", lam_ratio=0.003, fit_intercept=True)
    real, after_cg = _support_newton.support_newton_direction, []

    def recorded(*args, **kwargs):
        solve = real(*args, **kwargs)
        after_cg.append(solve.factor is not None and solve.factor.after_cg)
        return solve

    monkeypatch.setattr(_support_newton, "support_newton_direction", recorded)
    monkeypatch.setattr(_newton_dual, "support_newton_direction", recorded)  # its tries too
    bought = CoordinateDescent(tol=1e-8).solve(problem)
    assert any(after_cg)
    after_cg.clear()
    monkeypatch.setattr(CoordinateDescent, "factorise_gram_after", None)
    cg_only = CoordinateDescent(tol=1e-8).solve(problem)
    assert after_cg and not any(after_cg)
    assert bought.converged and cg_only.converged
    assert bought.objective == pytest.approx(cg_only.objective, rel=1e-8)
    assert bought.history.data_accesses[-1] < 0.9 * cg_only.history.data_accesses[-1]


def test_a_factorisation_too_far_from_the_support_preconditions_nothing():
    """Fewer than half of the new support its own, more than ``STALE_MAX_HELD`` weights gone or
    ``STALE_MAX_FRESH`` come, or new columns so near the old ones' span that the bordered block is
    not positive definite: no preconditioner (the caller factorises anew)."""
    from l1scale.solvers import _support_factor

    problem, support, pt, rng = _correlated_case(False)
    factor, _ = SupportFactor.of(pt, support)
    others = np.setdiff1d(np.arange(problem.n_features), support)[::-1]  # the noisiest first
    k = support.shape[0]
    assert factor.preconditioner(pt, np.sort(np.concatenate([support[: k // 2 - 1], others[: k // 2 + 1]]))) is None
    assert factor.preconditioner(pt, support[:70]) is not None
    assert factor.preconditioner(pt, np.sort(np.concatenate([support, others[:3]]))) is not None
    for name, case in (("STALE_MAX_HELD", support[:70]), ("STALE_MAX_FRESH", np.concatenate([support, others[:3]]))):
        limit = getattr(_support_factor, name)
        setattr(_support_factor, name, 2)
        try:
            assert factor.preconditioner(pt, np.sort(case)) is None
        finally:
            setattr(_support_factor, name, limit)
    far = _moved(problem, pt, rng, 0.2)
    assert factor.preconditioner(far, np.sort(np.concatenate([support[2:], others[:2]]))) is None
    # reaches: the counts alone (what any point's preconditioner needs first)
    assert not factor.reaches(np.sort(np.concatenate([support[: k // 2 - 1], others[: k // 2 + 1]])))
    assert factor.reaches(support[:70]) and factor.reaches(np.sort(np.concatenate([support, others[:3]])))
    assert not factor.reaches(np.sort(np.concatenate([support, others[:17]])))  # STALE_MAX_FRESH = 16 come
    assert not factor.reaches(support[:0])


def test_a_factorisation_after_cg_makes_later_systems_direct_only_while_it_reaches_their_support():
    """Once a CG solve has factorised the Gram matrix it bought (``Loop.gram_factorised``), the next
    systems are factorised while that factorisation can precondition them; a support out of its reach
    (a working set that doubled: 800 weights become 1,600 on generated data with 1% positives, whose
    fits then factorised every later support, 2-2.5x slower than CG) goes back to rent or buy."""
    from l1scale.solvers._cd_state import Loop
    from l1scale.solvers.cd import CoordinateDescent

    problem, support, pt, _ = _correlated_case(True)
    factor, _ = SupportFactor.of(pt, support)
    others = np.setdiff1d(np.arange(problem.n_features), support)
    solver = CoordinateDescent()
    near = Loop(kept=np.arange(problem.n_features), ws_size=100, gram_factorised=True)
    assert solver._direct(problem, np.sort(np.concatenate([support[2:], others[:3]])), near, factor)
    assert near.gram_factorised
    grown = Loop(kept=np.arange(problem.n_features), ws_size=100, gram_factorised=True)
    assert not solver._direct(problem, np.sort(np.concatenate([support, others[:40]])), grown, factor)
    assert not grown.gram_factorised  # and stays so: rent or buy counts afresh
    assert not solver._direct(problem, support, grown, factor)
    assert not solver._direct(problem, support, Loop(kept=support, ws_size=100, gram_factorised=True), None)


def test_a_stale_factorisation_is_used_at_later_points_and_replaced_when_it_stops_helping():
    """``direct``: the first solve factorises and keeps the factorisation on the iterate; at the
    same point it solves again with no work; at a nearby point it preconditions CG (no new
    factorisation); at a point far away its CG does not converge within ``STALE_MAX_PRODUCTS`` and
    the system is factorised anew."""
    problem, support, pt, rng = _correlated_case(True)
    H = _curvatures(problem, pt)
    first = support_newton_direction(pt, support, H, 1e-3, gram_max=100, direct=True)
    assert first.factor is not None and pt.factor is first.factor
    again = support_newton_direction(pt, support, H, 1e-3, gram_max=100, direct=True)
    assert again.factor is first.factor and again.reads == 0
    np.testing.assert_array_equal(again.step, first.step)
    near = _moved(problem, pt, rng, 0.05)
    near.factor = pt.factor
    H_near = _curvatures(problem, near)
    solve = support_newton_direction(near, support, H_near, 1e-3, gram_max=100, direct=True)
    assert solve.factor is None and solve.stale is first.factor and not solve.capped
    M = _system(problem, near, support)
    np.testing.assert_allclose(M @ solve.step, -solve.grad, rtol=0, atol=1e-5 * np.abs(solve.grad).max())
    far = Iterate(problem, np.where(pt.w != 0.0, 30.0 * np.sign(pt.w), 0.0), 0.0)
    far.factor, far.moves = pt.factor, pt.moves + 9
    solve = support_newton_direction(far, support, _curvatures(problem, far), 1e-3, gram_max=100, direct=True)
    assert solve.factor is not None and far.factor is solve.factor and solve.factor is not first.factor


def _news20_split(loss, lam_ratio):
    """The benchmark's news20 training split (a seeded 75% of the rows), without intercept."""
    from _shared_data import news20_split

    X, y = news20_split()
    return Problem(X, y, loss, lam_ratio=lam_ratio, fit_intercept=False)


def _recorded_solves(monkeypatch):
    """Each support-Newton solve from now on, as (solved by a new factorisation, preconditioned by
    an earlier one), in a list that fills as the solves run."""
    from l1scale.solvers import _support_newton

    real, calls = _support_newton.support_newton_direction, []

    def recorded(*args, **kwargs):
        solve = real(*args, **kwargs)
        calls.append((solve.factor is not None, solve.stale is not None))
        return solve

    monkeypatch.setattr(_support_newton, "support_newton_direction", recorded)
    monkeypatch.setattr(_newton_dual, "support_newton_direction", recorded)  # its tries too
    return calls


def test_support_newton_solves_factorise_once_cg_has_read_what_a_factorisation_costs(monkeypatch):
    """Rent or buy: once the support-Newton solves on a settled support have read what factorising
    its system costs, it is factorised (before any CG solve stops at its whole cap), and the next
    step's CG is preconditioned by that factorisation: synthetic text, 1,000 x 20,000, 0.01 lam_max,
    reads 22.5M against 39.3M when measured, the same optimum. Without the rule (the cost taken as
    infinite) nothing is factorised."""
    from l1scale.data.synthetic import make_sparse_text
    from l1scale.solvers.cd import CoordinateDescent

    X, y = make_sparse_text(1000, 20000, nnz_per_row=50, noise=0.0, random_state=1)
    problem = Problem(X, y, "logistic", lam_ratio=0.01, fit_intercept=False)
    calls = _recorded_solves(monkeypatch)
    bought = CoordinateDescent(tol=1e-8).solve(problem)
    assert (True, False) in calls and (False, True) in calls  # factorised, then preconditioned by it
    calls.clear()
    monkeypatch.setattr(SupportFactor, "estimated_work", staticmethod(lambda problem, support: np.inf))
    rented = CoordinateDescent(tol=1e-8).solve(problem)
    assert calls and not any(factorised or stale for factorised, stale in calls)
    assert bought.converged and rented.converged
    assert bought.objective == pytest.approx(rented.objective, rel=1e-8)
    assert bought.history.data_accesses[-1] < 0.75 * rented.history.data_accesses[-1]


def test_rent_or_buy_counts_across_moves_a_factorisation_still_preconditions(monkeypatch):
    """mnist10k (3 vs rest) at 0.07 lam_max: the support moves by a few weights between its Newton
    steps, each solved by CG in tens of products. A factorisation made on one support
    preconditions the next one's system, so the spend carries across those moves: a solve is
    factorised and the next preconditioned by it (reads to 1e-8 -13% when measured). Reset on
    every move, no solve is ever preconditioned by an earlier factorisation. (At 0.1 lam_max, the
    case this test had before CD stepped the coordinates jointly with the intercept, the solve
    now ends two Newton-system solves after its start, the second factorised either way.) The
    dual point's tries, which factorise small systems of their own (``factorisation_pays``), are
    kept on CG here: their factorisations would precondition later steps whatever the rule, and so
    are the steps whose CG reaches the Gram matrix (``factorise_gram_after``, tested below)."""
    from _shared_data import load_svmlight_pm

    from l1scale.solvers import cd as cd_module
    from l1scale.solvers.cd import CoordinateDescent

    X, y = load_svmlight_pm("mnist10k", "mnist/mnist10k_3vsrest.bz2", 784)
    problem = Problem(X, y, "logistic", lam_ratio=0.07)
    monkeypatch.setattr(cd_module, "factorisation_pays", lambda *args: False)
    monkeypatch.setattr(CoordinateDescent, "factorise_gram_after", None)
    calls = _recorded_solves(monkeypatch)
    carried = CoordinateDescent(tol=1e-8).solve(problem)
    assert (True, False) in calls and (False, True) in calls  # factorised, then preconditioned by it
    calls.clear()
    monkeypatch.setattr(CoordinateDescent, "_spend_carries", staticmethod(lambda changed, size: changed == 0))
    reset = CoordinateDescent(tol=1e-8).solve(problem)
    assert calls and not any(stale for _, stale in calls)
    assert carried.converged and reset.converged
    assert carried.objective == pytest.approx(reset.objective, rel=1e-6)
    assert carried.history.data_accesses[-1] < 0.95 * reset.history.data_accesses[-1]


@pytest.mark.slow
def test_a_support_cg_cannot_solve_is_factorised_on_news20(monkeypatch):
    """news20 at 0.001 lam_max (the benchmark's split): the support settles at 2,861 bigrams whose
    Newton system CG does not solve within its 200 products, and each capped step made a fifth of
    an exact one's progress while the certificate waited (to tol 1e-6: 6.2G nonzeros read, 9 s).
    Factorised once CG has read what the factorisation costs (rent or buy), and the later steps' CG
    preconditioned by it: 2.0G and 3 s when measured, the same optimum."""
    from l1scale.solvers.cd import CoordinateDescent

    problem = _news20_split("logistic", 0.001)
    factorised = CoordinateDescent(tol=1e-6).solve(problem)
    monkeypatch.setattr(SupportFactor, "of", classmethod(lambda cls, pt, support, gram=None: (None, 0)))
    by_cg = CoordinateDescent(tol=1e-6).solve(problem)
    assert factorised.converged and by_cg.converged
    assert factorised.objective == pytest.approx(by_cg.objective, rel=1e-6)
    assert factorised.history.data_accesses[-1] < 0.5 * by_cg.history.data_accesses[-1]
    P = problem.objective(factorised.coef, factorised.intercept)
    assert P - problem.dual_value(factorised.dual_point) <= 1e-6 * P


@pytest.mark.slow
def test_rent_or_buy_factorises_before_the_capped_solves_cost_a_factorisation_on_news20():
    """news20 at 0.001 lam_max (the benchmark's split): once the support has settled, each CG solve
    on its 2,860 bigrams stops at its budget (5, 26, then 135 products), and the factorisation they
    end in also gives the Newton dual point that certifies. Bought once those solves have read a
    fifth of its cost (``factorise_after``), not all of it: fewer nonzeros read to tol 1e-6 (1,842M
    -> 1,469M when measured), the same certified optimum."""
    from l1scale.solvers.cd import CoordinateDescent

    problem = _news20_split("logistic", 0.001)
    results = {}
    for after in (CoordinateDescent.factorise_after, 1.0):
        solver = CoordinateDescent(tol=1e-6)
        solver.factorise_after = after
        results[after] = solver.solve(problem)
    early, late = results[CoordinateDescent.factorise_after], results[1.0]
    assert CoordinateDescent.factorise_after < 1.0
    assert early.converged and late.converged
    assert early.objective == pytest.approx(late.objective, rel=1e-6)
    assert early.history.data_accesses[-1] < 0.9 * late.history.data_accesses[-1]
    P = problem.objective(early.coef, early.intercept)
    assert P - problem.dual_value(early.dual_point) <= 1e-6 * P


@pytest.mark.slow
def test_the_lasso_factorises_its_support_system_at_once_on_news20():
    """The squared loss's curvature never moves, so a factorisation of the support's Newton system
    made at its first solve serves every later step exactly (and preconditions the next supports'):
    the Lasso on news20 at 0.01 lam_max (2,279 bigrams) factorises it at once where rent or buy first
    spent a CG solve of 147 products, then 59 more and a factorisation after all (1,201M nonzeros
    read against 720M when measured), for the same certified optimum."""
    from l1scale.solvers.cd import CoordinateDescent

    problem = _news20_split("squared", 0.01)
    results = {}
    for within in (CoordinateDescent.factorise_within, 0):
        solver = CoordinateDescent(tol=1e-6)
        solver.factorise_within = within  # 0: rent or buy alone
        results[within] = solver.solve(problem)
    at_once, rented = results[CoordinateDescent.factorise_within], results[0]
    assert at_once.converged and rented.converged
    assert at_once.objective == pytest.approx(rented.objective, rel=1e-6)
    assert at_once.history.data_accesses[-1] < 0.8 * rented.history.data_accesses[-1]


def test_a_path_carries_the_factorisation_to_its_next_lams(monkeypatch):
    """Once a lam's solve has found its support's system too hard for CG (here a cap of 3 products),
    the next lam's support, nearly the same, starts factorised: no lam after the first with a capped
    CG solve spends another (news20's 50-lam path to tol 1e-4: one capped solve per lam on its last
    21 lams, 34 s -> 18 s when measured), and every lam is still certified. (A factorisation made
    for another reason, small supports' Newton dual points here, serves the next lams only while it
    reaches their supports: ``test_a_paths_next_lam_factorises_for_good_only_after_cgs_cap``.)"""
    from l1scale.data.synthetic import make_sparse_text
    from l1scale.path import lam_grid
    from l1scale.solvers import _support_newton
    from l1scale.solvers import cd as cd_module

    X, y = make_sparse_text(2000, 5000, nnz_per_row=30, noise=0.0, random_state=1)
    problem = Problem(X, y, "logistic", lam=1.0, fit_intercept=False)
    grid = lam_grid(problem.lam_max(), 10, 0.01)
    monkeypatch.setattr(_support_newton, "CG_MAX_PRODUCTS", 3)
    monkeypatch.setattr(cd_module, "CG_MAX_PRODUCTS", 3)
    real, lam, calls = _support_newton.support_newton_direction, [0], []

    def recorded(*args, **kwargs):
        solve = real(*args, **kwargs)
        calls.append((lam[0], solve.factor is not None or solve.stale is not None, solve.capped))
        return solve

    monkeypatch.setattr(_support_newton, "support_newton_direction", recorded)
    monkeypatch.setattr(_newton_dual, "support_newton_direction", recorded)  # its tries too
    results = []
    for result in cd_module.CoordinateDescent(tol=1e-6).solve_path(problem, grid):
        results.append(result)
        lam[0] += 1
    assert all(r.converged for r in results)
    first = min(k for k, _, capped in calls if capped)
    later = [(k, factorised, capped) for k, factorised, capped in calls if k > first]
    assert {k for k, _, _ in later} and all(factorised and not capped for _, factorised, capped in later)


def test_the_factorisation_kernels_solve_and_refuse_what_is_not_positive_definite():
    """The Numba Cholesky factor and its one-right-hand-side solve (which release the GIL, where
    SciPy's hold it): L L^T = M, one and many right-hand sides solved to rounding, and an empty
    factor for a matrix that is not positive definite or not finite."""
    from l1scale.solvers._support_factor import cholesky_factor, cholesky_solve

    rng = np.random.default_rng(11)
    A = rng.normal(size=(60, 25))
    M = A.T @ A + 0.1 * np.eye(25)
    L = cholesky_factor(M)
    np.testing.assert_allclose(L @ L.T, M, rtol=1e-12, atol=1e-12)
    assert np.all(np.triu(L, 1) == 0.0)
    b = rng.normal(size=25)
    x = np.empty(25)
    cholesky_solve(L, b, x)
    np.testing.assert_allclose(x, np.linalg.solve(M, b), rtol=1e-10, atol=1e-12)
    B = rng.normal(size=(25, 4))  # several right-hand sides: LAPACK's blocked solve on the same factor
    factor = SupportFactor(L, 25)
    np.testing.assert_allclose(factor.solve(B), np.linalg.solve(M, B), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(factor.solve(b), x, rtol=1e-14, atol=1e-15)

    indefinite = M.copy()
    indefinite[3, 3] = -1.0
    not_finite = M.copy()
    not_finite[0, 1] = not_finite[1, 0] = np.nan
    for bad in (indefinite, -M, not_finite):
        assert cholesky_factor(bad).shape == (0, 0)


def test_a_paths_next_lam_factorises_for_good_only_after_cgs_cap(monkeypatch):
    """A lam whose systems were factorised by rent or buy hands the next lam a factorisation that
    serves while it reaches the support (``Loop.gram_factorised``), not for good (``Loop.direct``,
    kept for a lam whose CG stopped at its cap): a path's supports move by more than a stale
    factorisation can precondition, and CG converges on many of them before rent or buy pays."""
    from l1scale.solvers import cd as cd_module
    from l1scale.solvers.cd import CoordinateDescent

    problem, _, _, _ = _correlated_case(True)
    loops = []
    real = cd_module.Loop

    class recorded(real):
        def __init__(self, **kw):
            loops.append((kw.get("direct", False), kw.get("gram_factorised", False)))
            super().__init__(**kw)

    monkeypatch.setattr(cd_module, "Loop", recorded)
    solver = CoordinateDescent(tol=1e-8)
    solver.factorise_after = 0.0  # rent or buy factorises every support-Newton system
    lams = problem.lam_max() * np.array([0.05, 0.04, 0.03])
    results = list(solver.solve_path(problem, lams))
    assert all(r.converged for r in results)
    assert loops[0] == (False, False)
    assert any(near for _, near in loops[1:]) and not any(direct for direct, _ in loops[1:])
    # and the same optima as lams solved from zero
    for lam, result in zip(lams, results):
        alone = CoordinateDescent(tol=1e-10).solve(problem.with_lam(float(lam)))
        assert result.objective == pytest.approx(alone.objective, rel=1e-7)
