"""A certificate taken in the middle of a working set's round (``CoordinateDescent._peek``): on a
copy of the iterate, so that a miss leaves the solve as it was, and a hit stops a round early."""

import numpy as np
import pytest
from _shared_data import random_binary_rows

from l1scale.path import lam_grid
from l1scale.problems import Problem
from l1scale.solvers.cd import CoordinateDescent


def _rare_positives(n=10000, d=2000, per_row=25, kept=0.01, seed=0):
    """Binary rows, labels from a logistic model of which only 1% of the positives stay positive:
    nearly separable, the support's Newton systems ill-conditioned (CG takes dozens of products)."""
    rng = np.random.default_rng(seed)
    X = random_binary_rows(rng, n, d, per_row)
    truth = np.zeros(d)
    truth[rng.choice(d, 20, replace=False)] = 3.0 * rng.normal(size=20)
    z = X @ truth
    z = 2.0 * (z - z.mean()) / z.std()
    y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-z)), 1.0, -1.0)
    y[(y > 0) & (rng.random(n) >= kept)] = -1.0
    return X, y


def _solver(certify_after, **kw):
    solver = CoordinateDescent(**{"max_iter": 10000, **kw})
    solver.certify_after = certify_after
    return solver


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 12 steps: the iterates compared
def test_a_certificate_that_misses_leaves_the_solve_as_it_was():
    """Taken after every step (and never certifying, at tol 1e-14), the certificates change nothing of
    the iterates: the same coefficients to the bit after the same steps; they only read more."""
    X, y = _rare_positives(n=4000, d=1500)
    problem = Problem(X, y, "logistic", lam_ratio=0.02)
    runs = {ca: _solver(ca, tol=1e-14, max_iter=12).solve(problem) for ca in (np.inf, 1e-3)}
    never, always = runs[np.inf], runs[1e-3]
    assert never.n_iter == always.n_iter == 12
    assert np.array_equal(never.coef, always.coef) and never.intercept == always.intercept
    assert always.history.data_accesses[-1] > never.history.data_accesses[-1]


def test_a_path_certifies_its_lams_a_step_sooner():
    """Warm-started lams whose first support-Newton step already makes a point that certifies stop
    there: fewer Newton steps over the path, every lam certified, and each as close to the optimum as
    its certificate says."""
    X, y = _rare_positives()
    base = Problem(X, y, "logistic", lam=1.0)
    lams = lam_grid(base.lam_max(), 20, 1e-2)
    tight = list(_solver(np.inf, tol=1e-10).solve_path(base, lams))
    without = list(_solver(np.inf, tol=1e-2).solve_path(base, lams))
    with_it = list(_solver(8.0, tol=1e-2).solve_path(base, lams))
    assert sum(r.n_iter for r in with_it) < sum(r.n_iter for r in without)
    for loose, ref in zip(with_it, tight):
        assert loose.converged and loose.relative_certificate <= 1e-2
        assert loose.objective - ref.objective <= loose.relative_certificate * loose.objective * (1 + 1e-9)


@pytest.mark.parametrize("certify_after", [np.inf, 8.0])
def test_no_certificate_within_a_round_with_a_checkpoint(certify_after, tmp_path):
    """A checkpointed solve takes none (a resumed one would take them at other iterations)."""
    X, y = _rare_positives(n=4000, d=1500)
    problem = Problem(X, y, "logistic", lam_ratio=0.02)
    plain = _solver(np.inf, tol=1e-3).solve(problem)
    checkpointed = _solver(certify_after, tol=1e-3, checkpoint=tmp_path / "state.ckpt").solve(problem)
    assert np.array_equal(plain.coef, checkpointed.coef) and plain.n_iter == checkpointed.n_iter
