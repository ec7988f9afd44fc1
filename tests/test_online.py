"""The Online algorithm (Balakrishnan & Madigan, Algorithm 2) against batch solutions and the paper."""

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale import SparseLinearRegression, SparseLogisticRegression
from l1scale.data.memory import as_rows
from l1scale.data.stream import Stream
from l1scale.data.synthetic import make_bm_simulated
from l1scale.problems import Problem, StreamProblem
from l1scale.solvers.bm_online import OnlineSketch
from l1scale.solvers.cd import CoordinateDescent
from l1scale.solvers.shooting import omega


def _batch(X, y, loss, lam):
    return CoordinateDescent(tol=1e-12, max_iter=1000).solve(Problem(X, y, loss, lam))


def _l1_distance(result, ref):
    return float(np.abs(result.coef - ref.coef).sum() + abs(result.intercept - ref.intercept))


def _online(X, y, loss, lam, **kw):
    return OnlineSketch(**kw).solve(StreamProblem(Stream.from_arrays(X, y, chunk_rows=2500), loss, lam))


# Table 2 of the paper: Online vs batch, simulated d = 11, t = 10,000.
@pytest.mark.parametrize("loss, gamma, paper, block", [("logistic", 100, 0.0872, 1), ("probit", 10, 0.074, 100)])
@pytest.mark.parametrize("seed", [0, 1])
def test_online_within_table2_distance(loss, gamma, paper, block, seed):
    X, y = make_bm_simulated(10000, link=loss, add_intercept=False, random_state=seed)[:2]
    lam = gamma / X.shape[0]
    dist = _l1_distance(_online(X, y, loss, lam, block=block), _batch(X, y, loss, lam))
    assert dist <= paper, f"{loss}: online-vs-batch L1 distance {dist:.4f} > the paper's {paper}"


def test_table1_gap_shrinks_with_t():
    """Table 1: logistic, gamma = 10; online-vs-batch L1 distance at t = 2e4, 6e4, 1e5
    (paper: 0.066, 0.025, 0.016) shrinks as t grows."""
    X, y = make_bm_simulated(100000, link="logistic", add_intercept=False, random_state=0)[:2]
    paper = (0.066, 0.025, 0.016)
    dists = []
    for t in (20000, 60000, 100000):
        lam = 10 / t
        dists.append(_l1_distance(_online(X[:t], y[:t], "logistic", lam), _batch(X[:t], y[:t], "logistic", lam)))
    assert dists[0] > dists[1] > dists[2], dists
    assert all(d <= p for d, p in zip(dists, paper)), (dists, paper)


def test_heuristics_help():
    """Sec. 4.1: a constant gamma shrinks the early estimates (worse than the schedule);
    blocks re-take approximations closer to the batch estimate for probit."""
    X, y = make_bm_simulated(10000, link="probit", add_intercept=False, random_state=3)[:2]
    lam = 10 / X.shape[0]
    ref = _batch(X, y, "probit", lam)
    linear = _l1_distance(_online(X, y, "probit", lam), ref)
    constant = _l1_distance(_online(X, y, "probit", lam, schedule="constant"), ref)
    block = _l1_distance(_online(X, y, "probit", lam, block=100), ref)
    assert linear < constant
    assert block < linear


def test_sparse_sketch_equals_dense_sketch():
    """The pool of touched pairs (grown many times from a tiny start) holds the same Psi."""
    rng = np.random.default_rng(0)
    X = sp.random(3000, 40, density=0.1, random_state=1, format="csr")
    y = np.where(X @ rng.standard_normal(40) + 0.1 * rng.standard_normal(3000) > 0, 1.0, -1.0)
    results, states = {}, {}
    for sketch in ("dense", "sparse"):
        solver = OnlineSketch(sketch=sketch)
        state = solver.new_state(40, True)
        for a in range(0, 3000, 700):
            solver.partial_fit(
                state, as_rows(X[a : a + 700]), y[a : a + 700], np.ones(min(700, 3000 - a)), kind=0, l1=0.001, l2=0.0
            )
        results[sketch], states[sketch] = state.beta.copy(), state
    np.testing.assert_allclose(results["sparse"], results["dense"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        states["sparse"].sketch.to_dense(), states["dense"].sketch.to_dense(), rtol=1e-12, atol=1e-12
    )
    # Psi is the sum of a_i x x^T: negative semidefinite, as the paper's Shooting needs.
    assert np.linalg.eigvalsh(states["dense"].sketch.to_dense()).max() <= 1e-10


def test_omega_is_kept_exact():
    """Omega, updated in O(nnz(x)) per example, equals 2 Psi' beta + theta from scratch."""
    X, y = make_bm_simulated(2000, link="logistic", add_intercept=False, random_state=1)[:2]
    for block in (1, 50):
        solver = OnlineSketch(block=block)
        state = solver.new_state(10, True)
        solver.partial_fit(state, as_rows(X), y, np.ones(2000), kind=0, l1=0.01, l2=0.0)
        np.testing.assert_allclose(state.omega, omega(state.sketch, state.theta, state.beta), rtol=1e-9, atol=1e-9)


def test_partial_fit_in_batches_equals_fit():
    X, y = make_bm_simulated(6000, link="logistic", add_intercept=False, random_state=2)[:2]
    labels = np.where(y > 0, "spam", "ham")
    whole = SparseLogisticRegression(solver="online", lam=0.005).fit(X, labels)
    parts = SparseLogisticRegression(solver="online", lam=0.005)
    for a in range(0, 6000, 1000):
        parts.partial_fit(X[a : a + 1000], labels[a : a + 1000], classes=["ham", "spam"])
    np.testing.assert_allclose(parts.coef_, whole.coef_, rtol=1e-12, atol=1e-14)
    assert list(parts.classes_) == ["ham", "spam"]
    assert parts.score(X, labels) > 0.7


def test_partial_fit_errors():
    X, y = make_bm_simulated(100, link="logistic", add_intercept=False, random_state=0)[:2]
    est = SparseLogisticRegression(solver="online", lam=0.01)
    with pytest.raises(ValueError, match="classes"):
        est.partial_fit(X, y)
    with pytest.raises(ValueError, match="lam"):
        SparseLogisticRegression(solver="online").partial_fit(X, y, classes=[-1, 1])
    est.partial_fit(X, y, classes=[-1, 1])
    with pytest.raises(ValueError, match="not in classes"):
        est.partial_fit(X, np.full(100, 7.0))
    assert not hasattr(SparseLogisticRegression(solver="cd"), "partial_fit")


def test_online_regression_and_elastic_net():
    """Squared loss: the quadratic approximation is exact, so once all examples are in
    with the final gamma, Shooting gives the batch Lasso; elastic net through rho."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 8))
    y = X @ np.array([1.0, -2.0, 0, 0, 0.5, 0, 0, 0]) + 0.1 * rng.standard_normal(3000)
    for l1_ratio in (1.0, 0.5):
        est = SparseLinearRegression(solver="online", lam=0.05, l1_ratio=l1_ratio).fit(X, y)
        ref = SparseLinearRegression(lam=0.05, l1_ratio=l1_ratio, tol=1e-12).fit(X, y)
        assert np.abs(est.coef_ - ref.coef_).sum() < 5e-3, (est.coef_, ref.coef_)
