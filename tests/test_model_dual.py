"""The dual point of CD's quadratic model (``solvers/_model_dual``): the model solved on to a tight
KKT tolerance, its predicted residual made feasible, and the certificate it gives."""

import numpy as np
import pytest
from _certify import suboptimality_bound
from sklearn.datasets import make_classification

from l1scale.data.memory import as_columns
from l1scale.losses import LOGISTIC, SQUARED, SQUARED_HINGE
from l1scale.problems import Problem
from l1scale.solvers import _cd_kernels as kernels
from l1scale.solvers import _gram_kernels as gram_kernels
from l1scale.solvers._quadratic_step import NU
from l1scale.solvers.cd import CoordinateDescent


def _correlated(n=600, d=30, seed=0):
    X, y = make_classification(
        n_samples=n, n_features=d, n_informative=22, n_redundant=0, random_state=seed, class_sep=0.6
    )
    return X, np.where(y > 0, 1.0, -1.0)


def _one_hot(n=600, blocks=(5, 7, 4), seed=0):
    """One-hot blocks beside the intercept: the model's Gram matrix is singular."""
    rng = np.random.default_rng(seed)
    X = np.hstack([np.eye(levels)[rng.integers(levels, size=n)] for levels in blocks])
    return np.hstack([X, rng.normal(size=(n, 3))]), None


def _model_value(X, g, D, w, wpd, d_b, g_b, lam1, fit_intercept):
    d = wpd - w
    q = X @ d + (d_b if fit_intercept else 0.0)
    quad = (D * q) @ q + NU * (d @ d + d_b * d_b)
    return g @ d + g_b * d_b + 0.5 * quad + lam1 * (np.abs(wpd).sum() - np.abs(w).sum())


def _model_kkt(X, g, D, w, wpd, d_b, g_b, lam1, fit_intercept):
    """Largest violation of the model's optimality conditions at (wpd - w, d_b)."""
    d = wpd - w
    q = X @ d + (d_b if fit_intercept else 0.0)
    G = g + X.T @ (D * q) + NU * d
    viol = np.where(wpd != 0.0, np.abs(G + lam1 * np.sign(wpd)), np.maximum(np.abs(G) - lam1, 0.0))
    if fit_intercept:
        viol = np.append(viol, abs(g_b + (D * q).sum() + NU * d_b))
    return float(viol.max())


@pytest.mark.parametrize("design", [_correlated, _one_hot])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("gram_max", [0, 10_000])  # plain sweeps; the Gram matrix (and its support solves)
def test_a_model_close_to_its_optimum_is_solved_on_to_dual_tol(fit_intercept, gram_max, design):
    X, _ = design()
    n, d = X.shape
    rng = np.random.default_rng(1)
    D = rng.uniform(0.05, 0.25, size=n) / n
    r = rng.normal(size=n) / n
    g = X.T @ r
    H = (X * X).T @ D + NU
    g_b = float(r.sum()) if fit_intercept else 0.0
    lam1 = 0.2 * float(np.abs(g).max())
    w = np.zeros(d)
    w[[1, 4, 9]] = [0.3, -0.2, 0.1]
    values = {}
    arrays = as_columns(X).arrays
    dual_tol = 1e-6 * lam1
    out = {}
    for dual_decrease in (0.0, np.inf):  # never; always (any predicted decrease is small enough)
        wpd, xTd = w.copy(), np.zeros(n)
        kernels.seed(0)
        model = kernels.QuadraticModel(g, H, w, wpd, xTd, D, g_b)
        loose = 0.3 * float(np.abs(g).sum())  # the forcing tolerance stops the plain solve early
        settings = kernels.InnerSettings(
            lam1, 0.0, fit_intercept, loose, 20_000, np.inf if gram_max > 0 else 0.0, gram_max, dual_decrease, dual_tol
        )
        d_b, sweeps, _, used_gram, tight, _ = kernels.newton_direction(
            *arrays, np.arange(d), d, model, settings, np.empty((0, 0))
        )
        assert (used_gram > 0.0) == (gram_max > 0)
        out[dual_decrease] = (tight, _model_kkt(X, g, D, w, wpd, d_b, g_b, lam1, fit_intercept), sweeps)
        values[dual_decrease] = _model_value(X, g, D, w, wpd, d_b, g_b, lam1, fit_intercept)
        np.testing.assert_allclose(xTd, X @ (wpd - w) + (d_b if fit_intercept else 0.0), atol=1e-12)
    (loose_tight, loose_kkt, _), (tight, kkt, _) = out[0.0], out[np.inf]
    # The forcing tolerance alone stops far from it (hundreds of times dual_tol on the one-hot
    # design, where coordinates step jointly with the intercept; thousands before they did).
    assert not loose_tight and loose_kkt > 1e2 * dual_tol
    assert tight and kkt <= 1.01 * dual_tol + 1e-15
    # Solving on only lowers the model (a singular Gram matrix's linear solve is refused, not taken).
    assert values[np.inf] <= values[0.0] + 1e-15


def _singular_model(seed):
    """A quadratic model on one-hot blocks beside the intercept (singular) at w = 0: X, the
    curvature weights D, the gradient g, its diagonal H, the intercept's gradient and lam1."""
    X, _ = _one_hot(n=2000, blocks=(5, 7, 4), seed=seed)
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    D = rng.uniform(0.05, 0.25, size=n) / n
    r = rng.normal(size=n) / n
    g = X.T @ r
    return X, D, g, (X * X).T @ D + NU, float(r.sum()), 0.02 * float(np.abs(g).max())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_singular_model_is_solved_by_descents_on_its_faces(seed):
    """One-hot blocks beside the intercept make the model singular: along the flat direction the
    L1 term falls linearly and CD crawls (on these models plain sweeps take 5,000 sweeps, or stop
    there 0.8 lam1 from optimal); on the Gram matrix the active-set descents end each flat
    direction at a zero crossing, and the model is solved in a few dozen sweeps."""
    X, D, g, H, g_b, lam1 = _singular_model(seed)
    n, d = X.shape
    w, arrays = np.zeros(d), as_columns(X).arrays
    solved = {}
    for gram_max in (0, 10_000):
        wpd, xTd = w.copy(), np.zeros(n)
        kernels.seed(0)
        model = kernels.QuadraticModel(g, H, w, wpd, xTd, D, g_b)
        settings = kernels.InnerSettings(
            lam1, 0.0, True, 1e-9 * lam1, 5000, np.inf if gram_max > 0 else 0.0, gram_max, 0.0, 0.0
        )
        d_b, sweeps, _, _, _, _ = kernels.newton_direction(*arrays, np.arange(d), d, model, settings, np.empty((0, 0)))
        value = _model_value(X, g, D, w, wpd, d_b, g_b, lam1, True)
        solved[gram_max] = (sweeps, _model_kkt(X, g, D, w, wpd, d_b, g_b, lam1, True), value)
    sweeps, kkt, value = solved[10_000]
    assert sweeps <= 60 and kkt <= 1e-9 * lam1
    assert value <= solved[0][2] + 1e-15  # no worse than 5,000 plain sweeps' solution


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_singular_model_solved_on_for_its_dual_point_gets_face_descents(seed):
    """A model solved on for its dual point (tight) on one-hot blocks beside the intercept: its
    sweeps skip shrunk coordinates, and the Gram matrix's linear solves and face descents must act
    then too, or CD crawls along the flat direction until the tight solve's sweep cap (a9a at 0.001
    lam_max) and the model gives no dual point."""
    X, D, g, H, g_b, lam1 = _singular_model(seed)
    n, d = X.shape
    w, arrays = np.zeros(d), as_columns(X).arrays
    dual_tol = 1e-6 * lam1
    wpd, xTd = w.copy(), np.zeros(n)
    kernels.seed(0)
    model = kernels.QuadraticModel(g, H, w, wpd, xTd, D, g_b)
    loose = 0.3 * float(np.abs(g).sum())  # tight from the first solve on: any decrease is small enough
    settings = kernels.InnerSettings(lam1, 0.0, True, loose, 5000, np.inf, 10_000, np.inf, dual_tol)
    d_b, sweeps, _, used_gram, tight, _ = kernels.newton_direction(
        *arrays, np.arange(d), d, model, settings, np.empty((0, 0))
    )
    assert used_gram > 0.0 and tight
    assert _model_kkt(X, g, D, w, wpd, d_b, g_b, lam1, True) <= 1.01 * dual_tol + 1e-15


def test_a_face_step_on_a_flat_direction_lands_a_weight_on_zero():
    """On a singular face the linear solve's direction runs along the flat direction; the step
    stops at the first zero crossing, with that weight exactly zero, and lowers the model."""
    X, _ = _one_hot(n=800, blocks=(4,), seed=3)
    X = X[:, :4]  # the block alone: its columns sum to the intercept's
    n = X.shape[0]
    D = np.full(n, 0.2 / n)
    rng = np.random.default_rng(3)
    r = rng.normal(size=n) / n
    r -= r.mean()  # the intercept optimal at the start
    g, g_b = X.T @ r, 0.0
    lam1 = 0.5 * float(np.abs(g).min())
    w = np.array([0.4, 0.3, 0.5, 0.2])  # every weight of the block nonzero: L1 pays to shift them to b
    Q = np.zeros((5, 5))
    Xb = np.hstack([X, np.ones((n, 1))])
    Q[:] = Xb.T @ (D[:, None] * Xb)
    wpd, Qd = w.copy(), np.zeros(5)
    before = _model_value(X, g, D, w, wpd, 0.0, g_b, lam1, True)
    d_b, _, crossed = gram_kernels.gram_support_solve(
        np.arange(4), np.arange(4), 4, g, w, wpd, Q, Qd, 0.0, g_b, lam1, 0.0
    )
    assert crossed and np.count_nonzero(wpd == 0.0) == 1
    after = _model_value(X, g, D, w, wpd, d_b, g_b, lam1, True)
    assert after < before - 1e-3 * lam1
    np.testing.assert_allclose(Qd, Q @ np.append(wpd - w, d_b), atol=1e-12)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_the_model_point_is_moved_into_the_logistic_domain_and_sums_to_zero(fit_intercept):
    rng = np.random.default_rng(2)
    n = 400
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    c = np.full(n, 1.0 / n)
    c[::17] = 0.0  # rows of zero weight stay zero
    t = rng.uniform(0.01, 0.99, size=n)  # -y loss' in (0, 1)
    r = c * (-y * t)
    D = c * t * (1.0 - t)
    xTd = 8.0 * rng.normal(size=n)  # a long step: many rows leave [0, 1]
    lin = -y * (r + D * xTd) / np.where(c > 0, c, 1.0)
    assert ((lin < 0) | (lin > 1))[c > 0].sum() > 50
    u_c = np.empty(n)
    assert kernels.model_dual_point(LOGISTIC, y, c, r, D, xTd, fit_intercept, u_c)
    a = -y[c > 0] * u_c[c > 0] / c[c > 0]
    assert a.min() >= 0.0 and a.max() <= 1.0
    assert np.all(u_c[c == 0] == 0.0)
    if fit_intercept:
        assert abs(u_c.sum()) <= 1e-12 * np.abs(u_c).sum()
    else:  # rows inside the domain are the linearised residual itself
        inside = (c > 0) & (lin > 0) & (lin < 1)
        np.testing.assert_allclose(u_c[inside], (r + D * xTd)[inside], rtol=1e-13)


def test_the_model_point_of_the_squared_loss_is_the_linearised_residual_and_sq_hinge_is_clipped():
    rng = np.random.default_rng(3)
    n = 50
    y, c = rng.normal(size=n), np.full(n, 1.0 / n)
    r, D, xTd = rng.normal(size=n) / n, np.full(n, 1.0 / n), rng.normal(size=n)
    u_c = np.empty(n)
    assert kernels.model_dual_point(SQUARED, y, c, r, D, xTd, False, u_c)
    np.testing.assert_allclose(u_c, r + D * xTd, rtol=1e-14)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    assert kernels.model_dual_point(SQUARED_HINGE, y, c, r, D, xTd, True, u_c)
    assert np.all(y * u_c <= 0.0) and abs(u_c.sum()) <= 1e-12 * np.abs(u_c).sum()


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("tol", [1e-2, 1e-4, 1e-6])
def test_cd_certifies_sooner_with_the_model_dual_and_its_dual_point_proves_tol(fit_intercept, tol):
    # Dense correlated features: the support still changes when the suboptimality is already
    # below tol, so the rescaled residual certifies late; the model's point certifies at once
    # (and the model solved on gives a more exact Newton step).
    X, y = make_classification(n_samples=3000, n_features=80, n_informative=30, n_redundant=30, random_state=3)
    y = np.where(y > 0, 1.0, -1.0)
    lam = 0.01 * Problem(X, y, "logistic", lam=1.0, fit_intercept=fit_intercept).lam_max()
    problem = Problem(X, y, "logistic", lam=lam, fit_intercept=fit_intercept)
    results = {}
    for model_dual in (False, True):
        solver = CoordinateDescent(tol=tol)
        solver.model_dual = model_dual
        results[model_dual] = solver.solve(problem)
    plain, res = results[False], results[True]
    assert plain.converged and res.converged
    # At 1e-6 the point certifies an iteration sooner on most such problems (on this one, without
    # an intercept, at the same iteration: the Gram matrix by BLAS solves the plain models exactly
    # enough); at 1e-2 and 1e-4 it is about even (tried only from a 1e-3 predicted decrease, and
    # since the face descents the plain solve's Newton steps are exact enough that its certificate
    # comes at the same iteration). Summed over four problems, at least 3% fewer reads.
    if tol <= 1e-6:
        reads = np.zeros(2)
        for seed in range(4):
            Xs, ys = make_classification(
                n_samples=3000, n_features=80, n_informative=30, n_redundant=30, random_state=seed
            )
            ys = np.where(ys > 0, 1.0, -1.0)
            lam_s = 0.01 * Problem(Xs, ys, "logistic", lam=1.0, fit_intercept=fit_intercept).lam_max()
            problem_s = Problem(Xs, ys, "logistic", lam=lam_s, fit_intercept=fit_intercept)
            for model_dual in (False, True):
                solver = CoordinateDescent(tol=tol)
                solver.model_dual = model_dual
                reads[int(model_dual)] += solver.solve(problem_s).history.data_accesses[-1]
        assert reads[1] < 0.97 * reads[0]
    # The returned dual point proves the returned model tol-optimal, whoever checks it.
    P = problem.objective(res.coef, res.intercept)
    assert P - problem.dual_value(res.dual_point) <= tol * abs(P)
    assert suboptimality_bound(problem, res.coef, res.intercept) <= tol
    # The returned loss gradient (paths read it) is exact on the support and bounds it elsewhere:
    # exact everywhere after the model's point, bounds after a final support-Newton step (here
    # at 1e-6 without intercept), as Result.loss_gradient says.
    z = X @ res.coef + res.intercept
    r = problem.c * problem.loss.derivative(problem.y, z)
    true, support = X.T @ r, res.coef != 0.0
    np.testing.assert_allclose(res.loss_gradient[support], true[support], rtol=1e-9, atol=1e-12)
    assert np.all(np.abs(true) <= np.abs(res.loss_gradient) * (1 + 1e-9) + 1e-12)


def test_features_shrunk_out_of_a_tight_model_enter_it_when_they_violate_at_its_point():
    # a9a at 0.002 lam_max: the outer pass leaves features out of the model solved on for its dual
    # point, and some of them violate there by more than lam1; let in (the model solved on from its
    # minimiser), the point certifies tol sooner (at tol 1e-4: 7 -> 5 outer iterations, 56M -> 49M
    # nonzeros read, measured with the coordinates stepped jointly with the intercept; before, at
    # 0.001 lam_max, 8 -> 6, where both now take 6).
    from _shared_data import load_svmlight_pm

    from l1scale.solvers._model_dual import ModelDual

    X, y = load_svmlight_pm("a9a", "a9a/a9a.bz2", 123)
    problem = Problem(X, y, "logistic", lam_ratio=0.002, fit_intercept=True)
    results = {}
    for grow in (0, ModelDual.max_grow):
        solver = CoordinateDescent(tol=1e-4)
        original = ModelDual.max_grow
        ModelDual.max_grow = grow
        try:
            results[grow] = solver.solve(problem)
        finally:
            ModelDual.max_grow = original
    without, grown = results[0], results[ModelDual.max_grow]
    assert without.converged and grown.converged
    assert grown.n_iter < without.n_iter
    P = problem.objective(grown.coef, grown.intercept)
    assert P - problem.dual_value(grown.dual_point) <= 1e-4 * abs(P)
    assert suboptimality_bound(problem, grown.coef, grown.intercept) <= 1e-2


def test_violators_are_the_features_outside_the_model_past_lam1_by_more_than_its_tolerance():
    from types import SimpleNamespace

    from l1scale.solvers._model_dual import ModelDual

    lam1, tol = 1.0, 1e-2
    problem = SimpleNamespace(n_features=6, penalty=SimpleNamespace(l1=lam1))
    pt = SimpleNamespace(problem=problem)
    corr = np.array([5.0, -5.0, 1.0005, -1.002, 0.3, 2.0])
    active = np.array([0, 1, 9, 9], dtype=np.int64)  # the model: features 0 and 1 (m = 2)
    cols = np.arange(6, dtype=np.int64)
    # 2 is within 0.1 tol lam1 of lam1; 3 and 5 are past it; 0 and 1 are in the model.
    np.testing.assert_array_equal(ModelDual(tol).violators(pt, corr, cols, active, 2), [3, 5])


def _solves(data, loss, lam_ratio, tol, shares, gram_max=CoordinateDescent.gram_max):
    from _shared_data import load_svmlight_pm

    from l1scale.data.synthetic import make_sparse_text

    X, y = {
        "a9a": lambda: load_svmlight_pm("a9a", "a9a/a9a.bz2", 123),
        "earn": lambda: load_svmlight_pm("reuters earn", "reuters21578/modapte_earn_train.svm.bz2", 27901),
        "text": lambda: make_sparse_text(1000, 20000, nnz_per_row=50, noise=0.0, random_state=1),
    }[data]()
    problem = Problem(X, y, loss, lam_ratio=lam_ratio, fit_intercept=data != "text")
    results = []
    for share in shares:
        solver = CoordinateDescent(tol=tol)
        solver.ws_model_dual_share, solver.gram_max = share, gram_max
        results.append(solver.solve(problem))
    return problem, results


def test_a_working_sets_model_is_solved_on_for_its_dual_point_at_a_tight_tol():
    # a9a at 0.01 lam_max: the working sets (100 of its 123 one-hot columns) hold most of the values
    # in play, and their model's point certifies a Newton step sooner than the rounds' residual
    # (6 -> 5 when measured, fewer nonzeros read); a share above 1 turns the rule off.
    problem, (on, off) = _solves("a9a", "logistic", 0.01, 1e-6, (CoordinateDescent.ws_model_dual_share, 2.0))
    _assert_sooner_and_certified(problem, on, off, 1e-6)
    assert on.objective == pytest.approx(off.objective, rel=1e-6)


def _assert_sooner_and_certified(problem, on, off, tol):
    """``on`` took fewer Newton steps and reads than ``off``, and its dual point certifies tol."""
    assert on.converged and off.converged
    assert on.n_iter < off.n_iter
    assert on.history.data_accesses[-1] < off.history.data_accesses[-1]
    P = problem.objective(on.coef, on.intercept)
    assert P - problem.dual_value(on.dual_point) <= tol * abs(P)
    assert suboptimality_bound(problem, on.coef, on.intercept) <= tol


def _solve_near(X, y, lam_ratio, tol, near, fit_intercept=True):
    problem = Problem(X, y, "logistic", lam_ratio=lam_ratio, fit_intercept=fit_intercept)
    solver = CoordinateDescent(tol=tol)
    solver.ws_model_dual_near = near
    return problem, solver.solve(problem)


def test_at_a_loose_tol_a_working_sets_model_on_its_gram_matrix_is_solved_on_once_it_predicts_less_than_tol():
    # a9a at 0.01 lam_max, tol 1e-2: the third round's working set (110 of 123 one-hot columns)
    # is solved on its Gram matrix and predicts a decrease of P of about 1e-3 |P|; solved on, its
    # point certifies 1e-5 after the step, where the rounds' residual needed one more Newton step
    # (5 -> 4 when measured). ws_model_dual_near = 0 turns the rule off.
    from _shared_data import load_svmlight_pm

    X, y = load_svmlight_pm("a9a", "a9a/a9a.bz2", 123)
    problem, on = _solve_near(X, y, 0.01, 1e-2, CoordinateDescent.ws_model_dual_near)
    _, off = _solve_near(X, y, 0.01, 1e-2, 0.0)
    _assert_sooner_and_certified(problem, on, off, 1e-2)


@pytest.mark.parametrize(("seed", "fit_intercept", "tol"), [(0, False, 1e-2), (2, True, 1e-1), (2, True, 1e-2)])
def test_at_a_loose_tol_a_working_sets_model_solved_by_sweeps_is_not_solved_on(seed, fit_intercept, tol, monkeypatch):
    # Dense 3,000 x 300 problems at 0.01 lam_max: near the end a working set's model of 200
    # columns, solved by CD sweeps over them, predicts a decrease within tol / 2; solved on, it
    # bought a Gram matrix for a certificate the next cheap step gave anyway (17M -> 32M
    # nonzeros read). Off the Gram matrix the loose-tol rule does not apply: the same iterates.
    X, y = make_classification(3000, 300, n_informative=40, random_state=seed)
    y = np.where(y > 0, 1.0, -1.0)
    _, on = _solve_near(X, y, 0.01, tol, CoordinateDescent.ws_model_dual_near, fit_intercept)
    _, off = _solve_near(X, y, 0.01, tol, 0.0, fit_intercept)
    assert on.converged and off.converged
    assert on.n_iter == off.n_iter
    np.testing.assert_array_equal(on.coef, off.coef)
    # ... where, without the Gram matrix's bound, it would have been, at a higher cost.
    over = CoordinateDescent._model_dual_over
    monkeypatch.setattr(CoordinateDescent, "_model_dual_over", lambda *a: (over(*a)[0], False))
    _, unbound = _solve_near(X, y, 0.01, tol, CoordinateDescent.ws_model_dual_near, fit_intercept)
    assert unbound.converged
    assert unbound.history.data_accesses[-1] > on.history.data_accesses[-1]


@pytest.mark.parametrize(
    ("data", "loss", "lam_ratio", "tol", "share", "gram_max"),
    [
        ("earn", "squared", 0.001, 1e-4, 0.0, CoordinateDescent.gram_max),
        ("text", "logistic", 0.01, 1e-6, CoordinateDescent.ws_model_dual_share, CoordinateDescent.gram_max),
        ("a9a", "logistic", 0.01, 1e-6, 0.0, 50),
    ],
)
def test_a_working_sets_model_is_not_solved_on_where_it_does_not_pay(data, loss, lam_ratio, tol, share, gram_max):
    # The squared loss's model is the problem on the working set, whose point the step reaches
    # (the Lasso on earn at 0.001 lam_max took 137 -> 191 ms with it); on generated text the
    # working sets hold half the values in play but few of the features (counted in values, the
    # tight solves of their frequent words made this fit 40 -> 90 ms); a working set larger than
    # gram_max (a9a's 100 columns against a cap of 50 here; the hashed clicks' 15,000) is solved
    # tight by CD sweeps alone. The rule then changes nothing (at any share for the first and
    # the last): the same iterates to the bit.
    _, (on, off) = _solves(data, loss, lam_ratio, tol, (share, 2.0), gram_max)
    assert on.converged and off.converged
    assert on.n_iter == off.n_iter
    np.testing.assert_array_equal(on.coef, off.coef)


def test_a_tight_solve_on_the_gram_matrix_sweeps_past_its_cap_within_a_pass():
    """A model of 100 correlated columns (a common factor, correlation 0.9) and the intercept,
    solved on for its dual point at lam1 = 0.01 max |g|: the sweep cap (``TIGHT_CAP_MIN`` +
    ``TIGHT_CAP_FACTOR`` times its sweeps) stops it 4.4 lam1 from optimal, where the model needs
    59 sweeps. On the Gram matrix the sweeps go on while their work is at most
    ``pass_reads`` plus the Gram matrix's price: a budget below what they need stops it at the
    cap as before, one above it solves the model to dual_tol, and its point then needs no rescaling."""
    d, n, rho = 100, 200, 0.9
    rng = np.random.default_rng(0)
    X = np.sqrt(rho) * rng.normal(size=(n, 1)) + np.sqrt(1 - rho) * rng.normal(size=(n, d))
    D = rng.uniform(0.05, 0.25, size=n) / n
    r = rng.normal(size=n) / n
    g, g_b = X.T @ r, float(r.sum())
    H = (X * X).T @ D + NU
    lam1 = 0.01 * float(np.abs(g).max())
    dual_tol = 1e-9 * lam1
    w, arrays = np.zeros(d), as_columns(X).arrays
    loose = 0.3 * float(np.abs(g).sum())  # tight from the first solve on
    out = {}
    for pass_reads in (-np.inf, 0.0, 1e5, 1e8):
        wpd, xTd = w.copy(), np.zeros(n)
        kernels.seed(0)
        model = kernels.QuadraticModel(g, H, w, wpd, xTd, D, g_b)
        settings = kernels.InnerSettings(
            lam1, 0.0, True, loose, 20_000, np.inf, 10_000, np.inf, dual_tol, np.inf, False, pass_reads
        )
        d_b, sweeps, _, price, tight, _ = kernels.newton_direction(
            *arrays, np.arange(d), d, model, settings, np.empty((0, 0))
        )
        assert price > 0.0  # solved on its Gram matrix
        out[pass_reads] = (tight, sweeps, _model_kkt(X, g, D, w, wpd, d_b, g_b, lam1, True))
    capped = out[-np.inf]
    assert not capped[0] and capped[2] > 1.0 * lam1
    assert out[0.0] == capped and out[1e5] == capped  # the sweeps past the cap would cost more
    tight, sweeps, kkt = out[1e8]
    assert tight and sweeps > capped[1] and kkt <= 1.01 * dual_tol + 1e-15
