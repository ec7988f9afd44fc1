"""The objective CD returns: from its maintained margins where their rounding provably moves it by
less than a thousandth of tol, else from margins summed afresh."""

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale.losses import weighted_terms_along
from l1scale.path import regularization_path
from l1scale.problems import Problem
from l1scale.solvers._cd_state import Iterate
from l1scale.solvers.cd import OBJECTIVE_RTOL

LOSSES = ["logistic", "squared", "squared_hinge", "probit"]


def _labels(loss, rng, n):
    return rng.normal(size=n) * 5.0 if loss == "squared" else np.where(rng.random(n) < 0.4, 1.0, -1.0)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("loss", LOSSES)
def test_maintained_margins_stay_within_their_rounding_bound(loss, fit_intercept):
    # 400 moves z <- z + t X d (the line search's) and recentrings, margins of size up to ~50 so that
    # their rounding shows: the maintained losses' objective stays within the bound of the one from
    # margins summed afresh, and a tolerance below the bound gets the fresh one itself.
    rng = np.random.default_rng(3)
    n, d = 300, 40
    X = sp.random(n, d, density=0.3, format="csc", random_state=4) * 10.0
    problem = Problem(X, _labels(loss, rng, n), loss, 0.01, fit_intercept=fit_intercept)
    pt = Iterate(problem, None, None)
    kind, y, c = problem.loss.kernel_id, problem.y, problem.c
    for move in range(400):
        d_w = np.where(rng.random(d) < 0.2, rng.normal(size=d), 0.0) * 0.3
        step = float(rng.uniform(0.1, 1.0))
        pt.xTd[:] = X @ d_w
        change = weighted_terms_along(kind, y, pt.z, pt.xTd, step, c, pt.lv, pt.z_new, pt.lv_new, pt.r, pt.D)
        pt.w += step * d_w
        pt.accept()
        pt.loss_sum += change
        if fit_intercept and move % 50 == 49:
            pt.recenter()
    assert pt.rounded >= 400
    bound = pt.rounding_bound()
    fresh = pt.exact_objective()
    maintained = pt.objective_within(np.inf)
    assert 0.0 < bound < 1e-9 * abs(fresh)
    assert abs(maintained - fresh) <= bound
    assert pt.objective_within(0.5 * bound / abs(fresh)) == fresh
    pt.refresh()  # summed from scratch: one move (the recentring) since
    assert pt.rounded == 1 and pt.rounding_bound() < bound / 100


@pytest.mark.parametrize("tol", [1e-3, 1e-10])
def test_a_paths_objectives_are_its_models_objectives_to_a_thousandth_of_tol(tol):
    # At tol 1e-3 most lams return their maintained objective, at 1e-10 each is summed afresh: either
    # way, each is its model's objective to OBJECTIVE_RTOL * tol, relative.
    rng = np.random.default_rng(5)
    n, d = 2000, 60
    X = sp.random(n, d, density=0.2, format="csr", random_state=6)
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    path = regularization_path(X, y, n_lams=20, lam_min_ratio=1e-3, tol=tol)
    for k, lam in enumerate(path.lams):
        exact = Problem(X, y, "logistic", lam).objective(path.coefs[k], path.intercepts[k])
        assert abs(path.objectives[k] - exact) <= max(OBJECTIVE_RTOL * tol, 1e-15) * abs(exact)
