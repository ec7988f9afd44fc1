"""Truncated gradient, rounding and L1 subgradient (Langford, Li & Zhang, sec. 3-4): the lazy
updates reproduce the dense step-by-step algorithm exactly, the passes approach the batch
optimum on Reuters earn and a9a, the sparsifiers behave as the paper says, and the
OnlineSolver contract (progressive and holdout loss, early stopping) holds."""

import os

import numpy as np
import pytest
import scipy.sparse as sp
from _shared_data import DATA

from l1scale.data.memory import as_rows
from l1scale.data.stream import Stream
from l1scale.data.svmlight import load_svmlight
from l1scale.losses import get_loss
from l1scale.problems import Problem, StreamProblem
from l1scale.solvers.cd import CoordinateDescent
from l1scale.solvers.truncated import TruncatedGradient

EARN = os.path.join(DATA, "reuters21578", "modapte_earn_train.svm.bz2")
A9A = os.path.join(DATA, "a9a", "a9a.bz2")


def _sparse_data(n=200, d=50, density=0.1, seed=0, loss="logistic"):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=rng, format="csr")
    X.data = rng.normal(size=X.nnz)
    w = np.zeros(d)
    w[:6] = 2 * rng.normal(size=6)
    z = X @ w + 0.3 + 0.5 * rng.normal(size=n)
    y = z if loss == "squared" else np.where(z > 0, 1.0, -1.0)
    return X, y


def _dense_reference(X, y, s, loss, *, sparsifier, K, theta, g, eta0, power_t, t0, pass_decay, passes):
    """The algorithm as the paper writes it: every step, every weight (no lazy updates)."""
    X = X.toarray()
    value, deriv = get_loss(loss).value, get_loss(loss).derivative
    s = s * len(s) / s.sum()
    w, b, t = np.zeros(X.shape[1]), 0.0, 0
    progressive = []
    for p in range(passes):
        total = 0.0
        for i in range(X.shape[0]):
            z = X[i] @ w + b
            total += s[i] * value(y[i : i + 1], np.array([z]))[0]
            t += 1
            eta = eta0 * pass_decay**p * (t0 / (t0 + t - 1)) ** power_t
            step = eta * s[i] * deriv(y[i : i + 1], np.array([z]))[0]
            w -= step * X[i]
            b -= step
            if t % K:
                continue
            a = eta * K * g
            small = np.abs(w) <= theta
            if sparsifier == "truncated":
                w[small] = np.sign(w[small]) * np.maximum(0.0, np.abs(w[small]) - a)
            elif sparsifier == "rounding":
                w[small] = 0.0
            else:
                w -= a * np.sign(w)
        progressive.append(total / s.sum())
    return w, b, progressive


@pytest.mark.parametrize(
    "sparsifier,theta", [("truncated", np.inf), ("truncated", 0.15), ("rounding", 0.02), ("l1_subgradient", np.inf)]
)
@pytest.mark.parametrize("K", [1, 3])
def test_lazy_updates_equal_dense_steps(sparsifier, theta, K):
    X, y = _sparse_data()
    s = np.random.default_rng(1).uniform(0.5, 2.0, size=y.shape[0])
    kw = dict(
        sparsifier=sparsifier,
        K=K,
        theta=None if np.isinf(theta) else theta,
        eta0=0.8,
        power_t=0.5,
        t0=5.0,
        pass_decay=0.7,
    )
    g = 0.01
    problem = StreamProblem(Stream.from_arrays(X, y, s, chunk_rows=37), "logistic", lam=g)
    solver = TruncatedGradient(max_iter=2, holdout=0, **kw)
    res = solver.solve(problem)
    w, b, progressive = _dense_reference(X, y, s, "logistic", g=g, passes=2, **{**kw, "theta": theta})
    # The state's weights (solve rounds the subgradient's at the end: tested below).
    np.testing.assert_allclose(solver.state_.coef, w, rtol=0, atol=1e-12)
    assert res.intercept == pytest.approx(b, abs=1e-12)
    # Progressive validation: every example scored before it is learned from.
    np.testing.assert_allclose(res.history.progressive_loss, progressive, rtol=1e-12)
    assert res.history.examples == [200, 400] and res.history.data_accesses == [
        2 * X.nnz,
        4 * X.nnz,
    ]  # x_i read to score, then to learn
    assert 0 < res.nnz < X.shape[1] or sparsifier == "l1_subgradient"


def test_lazy_subgradient_replays_the_oscillation_around_zero():
    """The L1 subgradient's owed steps can cross 0; the lazy update replays them (K = 1 and 4)."""
    X, y = _sparse_data(n=150, d=400, density=0.01, seed=3)
    s = np.ones(y.shape[0])
    for K in (1, 4):
        kw = dict(sparsifier="l1_subgradient", K=K, eta0=0.5, power_t=0.5, t0=10.0, pass_decay=1.0)
        solver = TruncatedGradient(max_iter=2, holdout=0, **kw)
        solver.solve(StreamProblem(Stream.from_arrays(X, y, chunk_rows=50), "logistic", lam=0.02))
        raw = solver.state_.coef
        w, b, _ = _dense_reference(X, y, s, "logistic", g=0.02, passes=2, theta=np.inf, **kw)
        np.testing.assert_allclose(raw, w, rtol=0, atol=1e-12)
        # Most weights are dust: the size of one penalty step, never exactly 0.
        final_step = 0.5 * (10.0 / (10.0 + 299)) ** 0.5 * 0.02 * K
        touched = np.flatnonzero(X.getnnz(axis=0))
        assert np.count_nonzero(raw[touched]) == touched.size
        assert np.mean(np.abs(raw[touched]) <= 1.01 * final_step * (2 if K == 1 else 1.5)) > 0.5


def test_partial_fit_equals_one_pass_and_warm_start():
    X, y = _sparse_data()
    problem = StreamProblem(Stream.from_arrays(X, y, chunk_rows=64), "logistic", lam=0.01)
    solver = TruncatedGradient(K=2, eta0=0.7)
    res = solver.solve(problem)
    state = solver.new_state(X.shape[1], True)
    for rows, yc, s, first in problem.chunks():
        solver.partial_fit(state, rows, yc, s, kind=problem.loss.kernel_id, l1=0.01, l2=0.0, first_row=first)
    np.testing.assert_allclose(state.coef, res.coef, rtol=0, atol=1e-14)
    assert state.intercept == res.intercept and state.steps == 200
    # coef is read without changing the state; set_weights starts from given weights.
    before = state.w.copy()
    _ = state.coef
    np.testing.assert_array_equal(state.w, before)
    state.set_weights(np.arange(50.0), 1.5)
    np.testing.assert_array_equal(state.coef, np.arange(50.0))
    assert state.intercept == 1.5


# --------------------------------------------------------------------------- the batch optimum


def _load(path, d):
    if not os.path.exists(path):
        pytest.skip(f"{path} not found under {DATA}")
    return load_svmlight(path, n_features=d)


@pytest.mark.parametrize(
    "name,path,d,ratio,eta0,decay,passes",
    [
        ("earn", EARN, 27901, 0.03, 5.0, 0.85, 60),
        ("a9a", A9A, 123, 0.01, 0.3, 0.8, 40),
    ],
)
def test_passes_reach_the_batch_objective(name, path, d, ratio, eta0, decay, passes):
    """The paper's multiple-pass mode (constant rate within a pass, decayed across passes, fixed
    order) reaches the mean-form L1 objective of batch CD at the same lam within 1e-3 relative."""
    X, y = _load(path, d)
    batch = Problem(X, y, "logistic", lam_ratio=ratio)
    lam = batch.lam
    assert 1e-4 <= lam <= 1e-3
    ref = CoordinateDescent(tol=1e-10, max_iter=1000).solve(batch)
    res = TruncatedGradient(eta0=eta0, power_t=0.0, pass_decay=decay, max_iter=passes, holdout=0).solve(
        StreamProblem(Stream.from_arrays(X, y), "logistic", lam)
    )
    objective = batch.objective(res.coef, res.intercept)
    gap = (objective - ref.objective) / ref.objective
    msg = f"{name}: lam {lam:.3g}, {passes} passes, relative gap {gap:.3g}, nnz {res.nnz} (batch {ref.nnz})"
    assert -1e-9 <= gap <= 1e-3, msg
    assert res.n_iter == passes and len(res.history.nnz) == passes
    # Sparse all along: the truncation keeps the features seen since the last shrink only.
    if name == "earn":
        assert max(res.history.nnz) < 0.03 * d, msg
    else:
        # Features zero at every optimum: strictly inside the subdifferential (|gradient| < lam at
        # the optimal margins, which are unique). a9a's one-hot blocks are collinear without an
        # intercept, so the optimum is a flat face whose vertices differ in a few other weights.
        off = np.abs(ref.loss_gradient) < 0.99 * lam
        assert np.sort(np.abs(res.coef[off]))[-2] < 2e-3, msg  # dust (one a9a column is collinear)


# --------------------------------------------------------------------------- losses and sparsifiers


def test_squared_loss_learns_a_sparse_regression():
    X, y = _sparse_data(n=400, d=60, density=0.2, seed=5, loss="squared")
    lam = 0.01
    res = TruncatedGradient(eta0=0.05, power_t=0.0, pass_decay=0.85, max_iter=40, holdout=0).solve(
        StreamProblem(Stream.from_arrays(X, y), "squared", lam)
    )
    batch = Problem(X, y, "squared", lam)
    ref = CoordinateDescent(tol=1e-10).solve(batch)
    assert res.history.progressive_loss[-1] < 0.5 * res.history.progressive_loss[0]
    assert batch.objective(res.coef, res.intercept) <= ref.objective * (1 + 1e-3)
    assert set(np.flatnonzero(ref.coef)) <= set(np.flatnonzero(res.coef))


def test_hinge_loss_through_partial_fit():
    """Hinge (a subgradient, not smooth): StreamProblem wants a curvature, so feed chunks directly."""
    X, y = _sparse_data(n=400, d=60, density=0.2, seed=6)
    hinge = get_loss("hinge")
    solver = TruncatedGradient(eta0=0.5)
    state = solver.new_state(X.shape[1], True)
    losses = []
    for p in range(5):
        losses.append(hinge.value(y, X @ state.coef + state.intercept).mean())
        solver.partial_fit(
            state, as_rows(X), y, np.ones(y.shape[0]), kind=hinge.kernel_id, l1=1e-3, l2=0.0, pass_index=p
        )
    losses.append(hinge.value(y, X @ state.coef + state.intercept).mean())
    assert losses[0] == 1.0 and losses[-1] < 0.5 * losses[0] and losses[-1] <= min(losses[1:]) + 0.05
    assert state.steps == 5 * 400


def test_sparsifiers_differ_as_the_paper_says():
    """Truncation gives exact zeros, rounding no weight below theta, the subgradient a dense dust."""
    X, y = _sparse_data(n=200, d=50, density=0.2, seed=7)
    g, theta = 0.1, 0.05
    fit = lambda **kw: TruncatedGradient(eta0=0.2, power_t=0.0, max_iter=2, holdout=0, **kw).solve(
        StreamProblem(Stream.from_arrays(X, y), "logistic", g)
    )
    truncated = fit(sparsifier="truncated")
    rounding = fit(sparsifier="rounding", theta=theta, K=10)  # 400 steps: the last one rounds
    subgradient_solver = TruncatedGradient(eta0=0.2, power_t=0.0, max_iter=2, holdout=0, sparsifier="l1_subgradient")
    subgradient = subgradient_solver.solve(StreamProblem(Stream.from_arrays(X, y), "logistic", g))
    dust = subgradient_solver.state_.coef  # before the rounding at the end of training
    plain = TruncatedGradient(eta0=0.2, power_t=0.0, max_iter=2, holdout=0, gravity=0.0).solve(
        StreamProblem(Stream.from_arrays(X, y), "logistic", g)
    )
    assert plain.nnz == X.shape[1] and np.count_nonzero(dust) == X.shape[1]
    assert truncated.nnz < 0.6 * X.shape[1]
    assert np.min(np.abs(rounding.coef[rounding.coef != 0])) > theta and rounding.nnz < X.shape[1]
    small = lambda c: np.count_nonzero((c != 0) & (np.abs(c) < 0.02))
    assert small(dust) >= 5 and small(dust) > 3 * small(truncated.coef)
    assert subgradient.nnz < np.count_nonzero(dust)  # rounded at the end
    # A theta below every weight: T1 never applies, and the run is plain SGD.
    untouched = fit(sparsifier="truncated", theta=1e-9)
    np.testing.assert_allclose(untouched.coef, plain.coef, atol=1e-8)


# --------------------------------------------------------------------------- passes, holdout, early stopping


def test_holdout_rows_are_scored_not_learned():
    X, y = _sparse_data(n=300, d=40, density=0.2, seed=8)
    flipped = y.copy()
    flipped[9::10] *= -1  # only the holdout rows change
    runs = [
        TruncatedGradient(max_iter=3, eta0=0.5).solve(
            StreamProblem(Stream.from_arrays(X, labels, chunk_rows=64), "logistic", 0.01)
        )
        for labels in (y, flipped)
    ]
    assert runs[0].n_iter == 3 and len(runs[0].history.holdout_loss) == 3
    np.testing.assert_array_equal(runs[0].coef, runs[1].coef)
    assert all(np.isfinite(runs[0].history.holdout_loss))
    assert runs[1].history.holdout_loss[-1] > runs[0].history.holdout_loss[-1]
    assert runs[0].history.progressive_loss == runs[1].history.progressive_loss
    assert runs[0].history.examples == [300, 600, 900]
    # One pass: no holdout by default, the progressive loss of pass 1 is recorded.
    one = TruncatedGradient().solve(StreamProblem(Stream.from_arrays(X, y), "logistic", 0.01))
    assert np.isnan(one.history.holdout_loss[0]) and 0 < one.history.progressive_loss[0] < np.log(2) + 0.1


def test_early_stopping_on_noise_keeps_the_best_pass():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(80, 60))
    y = np.where(rng.random(80) < 0.5, 1.0, -1.0)  # labels carry no signal: the holdout loss only grows
    solver = TruncatedGradient(eta0=1.0, power_t=0.0, max_iter=50, holdout=4, n_iter_no_change=3)
    seen = []
    solver.callback = lambda z, history: seen.append((solver.state_.coef, solver.state_.intercept))
    res = solver.solve(StreamProblem(Stream.from_arrays(X, y), "logistic", 1e-6))
    held = res.history.holdout_loss
    assert res.stop_reason == "early_stopping" and res.converged and res.n_iter < 50
    best = int(np.argmin(held))
    assert res.n_iter == best + 1 + 3
    np.testing.assert_array_equal(res.coef, seen[best][0])
    assert res.intercept == seen[best][1]


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="sparsifier"):
        TruncatedGradient(sparsifier="lasso")
    with pytest.raises(ValueError, match="theta"):
        TruncatedGradient(sparsifier="rounding")
    with pytest.raises(ValueError, match="K"):
        TruncatedGradient(K=0)
    with pytest.raises(ValueError, match="eta0"):
        TruncatedGradient(eta0=0.0)
    X, y = _sparse_data()
    with pytest.raises(ValueError, match="pure L1"):
        TruncatedGradient().solve(StreamProblem(Stream.from_arrays(X, y), "logistic", 0.01, l1_ratio=0.5))


def test_l1_subgradient_is_rounded_at_the_end_of_training():
    """ALGORITHMS.md sec. 4: the L1 subgradient's weights are rounded to zero only at the end;
    the state keeps the oscillating weights, solve returns them rounded at eta_T K g."""
    from l1scale.data.stream import Stream
    from l1scale.problems import StreamProblem

    rng = np.random.default_rng(3)
    X = sp.random(400, 60, density=0.1, random_state=4, format="csr")
    y = np.where(X @ np.r_[rng.standard_normal(5), np.zeros(55)] > 0, 1.0, -1.0)
    problem = StreamProblem(Stream.from_arrays(X, y), "logistic", 0.02)
    solver = TruncatedGradient(sparsifier="l1_subgradient", eta0=0.5, power_t=0.0, max_iter=3, holdout=0)
    result = solver.solve(problem)
    raw = solver.state_.coef
    threshold = 0.5 * 0.02  # eta_T K g with a constant rate
    assert np.count_nonzero(raw) > np.count_nonzero(result.coef)
    np.testing.assert_array_equal(result.coef, np.where(np.abs(raw) <= threshold, 0.0, raw))


@pytest.mark.parametrize("K", [1, 4])
def test_soft_threshold_layout_equals_the_slots_layout(K):
    """theta = inf keeps one shifted float64 per feature; a theta above every weight takes the
    (d, 3) slots path through the same algorithm: the two agree, over passes and a rebase."""
    X, y = _sparse_data(n=300, d=40, seed=3)
    problem = StreamProblem(Stream.from_arrays(X, y, chunk_rows=70), "logistic", lam=0.08)
    soft = TruncatedGradient(K=K, eta0=0.8, max_iter=3, holdout=0, pass_decay=0.7)
    slots = TruncatedGradient(K=K, eta0=0.8, max_iter=3, holdout=0, pass_decay=0.7, theta=1e300)
    a, b = soft.solve(problem), slots.solve(problem)
    assert soft.state_.soft_threshold and not slots.state_.soft_threshold
    assert soft.state_.slots is None and soft.state_.w.shape == (40,)
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=1e-13)
    assert a.intercept == pytest.approx(b.intercept, abs=1e-13)
    np.testing.assert_array_equal(a.coef != 0, b.coef != 0)
    assert 0 < np.count_nonzero(a.coef) < 40
    # A state handed to a solver with another sparsifier changes layout and keeps its weights.
    state = soft.state_
    before = state.coef
    rows, yc, s, first = next(iter(problem.chunks()))
    rounding = TruncatedGradient(sparsifier="rounding", theta=1e-300)
    rounding.partial_fit(state, rows, yc[:0], s[:0], kind=problem.loss.kernel_id, l1=0.01, l2=0.0)
    assert not state.soft_threshold
    np.testing.assert_array_equal(state.coef, before)
