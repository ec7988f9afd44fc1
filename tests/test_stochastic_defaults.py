"""The online solvers' default rates (issue 16, "defaults that converge"): with ``schedule="auto"``
the rate is calibrated on the data (Bottou's search around the curvature bound on a sample) and
decays geometrically across passes; the papers' fixed rules stay available by name.

Measured (benchmarks/results/stochastic_defaults.md): the defaults reach 1e-3 relative
suboptimality in 50 passes on Reuters earn at 0.1 lam_max and on a9a at 0.1 lam_max; with the
per-feature rates (diagonal preconditioning, ``precondition=True``, the default under
``schedule="auto"``) also on spambase without intercept at 0.1 and 0.01 lam_max, where one rate
for all features stopped at 1e-3-1e-2. The issue's full target (1e-3 on every shared set, with
intercept, at 0.01 lam_max too) is NOT met: see the table (w8a, mnist and text at 0.01 lam_max
with intercept stay at 1e-2-1e-1, madelon and arcene at 1e-2-1).

Under ``schedule="auto"`` the rows are shuffled every pass (sorted files such as magic04 stalled
the passes at 1e-3-1e-2 in stream order) and the first pass runs one octave above the calibrated
rate, decaying to 1/300 of it (a9a at 0.01 lam_max with intercept: 2-3e-3 -> below 1e-3).
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _shared_data import load_svmlight_pm

from l1scale.data.stream import Stream
from l1scale.data.synthetic import make_sparse_text
from l1scale.exceptions import ConvergenceWarning
from l1scale.problems import Problem, StreamProblem
from l1scale.solvers import online_base, smidas
from l1scale.solvers.cd import CoordinateDescent
from l1scale.solvers.sgd import CumulativePenaltySGD
from l1scale.solvers.smidas import SMIDAS
from l1scale.solvers.truncated import TruncatedGradient

ONLINE = {"truncated_gradient": TruncatedGradient, "sgd_cumulative": CumulativePenaltySGD, "smidas": SMIDAS}


def _suboptimality(solver, X, y, ratio, fit_intercept):
    batch = Problem(X, y, "logistic", lam_ratio=ratio, fit_intercept=fit_intercept)
    p_star = CoordinateDescent(tol=1e-10, max_iter=1000).solve(batch).objective
    res = solver.solve(StreamProblem(Stream.from_arrays(X, y), "logistic", batch.lam, fit_intercept=fit_intercept))
    return (batch.objective(res.coef, res.intercept) - p_star) / p_star, res


def _benchmark_rows(X, y, rows=3000):
    """The rows benchmarks/bench_stochastic_defaults.py takes: ``rows`` drawn with seed 0, in file order."""
    keep = np.sort(np.random.default_rng(0).choice(X.shape[0], rows, replace=False))
    return X[keep], y[keep]


@pytest.fixture(scope="module")
def text():
    return make_sparse_text(2000, 5000, nnz_per_row=30, random_state=0)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ONLINE))
def test_defaults_reach_1e3_on_earn(name):
    """Reuters earn (rows of unit norm), 3,000 rows, 0.1 lam_max with intercept. Truncated gradient
    loses here with the per-feature rates (1.3e-3; 1e-4 with one rate, precondition=False): tf-idf
    features of rare words have large values, hence small rates."""
    X, y = load_svmlight_pm("earn", "reuters21578/modapte_earn_train.svm.bz2", 27901)
    X, y = X[:3000], y[:3000]
    gap, _ = _suboptimality(ONLINE[name](max_iter=50, holdout=0), X, y, 0.1, True)
    assert -1e-9 <= gap <= (2e-3 if name == "truncated_gradient" else 1e-3), f"{name}: {gap:.3g}"
    if name == "truncated_gradient":
        gap, _ = _suboptimality(ONLINE[name](max_iter=50, holdout=0, precondition=False), X, y, 0.1, True)
        assert -1e-9 <= gap <= 1e-3, f"{name}: {gap:.3g}"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ONLINE))
def test_defaults_do_not_diverge_on_unscaled_features(name):
    """spambase (row norms^2 up to 2.5e8): the old default rates diverged or ended 10-2,500 times
    above the optimum; the calibrated rate is bounded by the rows' curvature and ends within 0.2."""
    X, y = load_svmlight_pm("spambase", "spambase/spambase.svm.bz2", 57)
    gap, res = _suboptimality(ONLINE[name](max_iter=20, holdout=0), X, y, 0.1, False)
    assert np.isfinite(res.coef).all()
    assert 0 <= gap < 0.2, f"{name}: {gap:.3g}"


@pytest.mark.parametrize("name", list(ONLINE))
def test_calibration_is_reproducible_and_layout_free(text, name):
    """The calibrated rate depends on the data only (the same on CSR, dense and another run),
    and the solver reports it as its rate after the solve."""
    X, y = text
    X, y = X[:300, :400], y[:300]
    rates = []
    for Xv in (X, X.toarray(), X):
        solver = ONLINE[name](max_iter=2, holdout=0)
        solver.solve(StreamProblem(Stream.from_arrays(Xv, y), "logistic", 1e-3))
        rates.append(solver.eta if name == "smidas" else solver.eta0)
    assert rates[0] > 0 and rates[0] == rates[1] == rates[2]


@pytest.mark.parametrize("name", list(ONLINE))
def test_paper_schedule_is_the_fixed_rule(text, name):
    """schedule="paper" is the papers' (VW's) fixed rates: the same iterates as giving them."""
    X, y = text
    X, y = X[:300], y[:300]
    fixed = {
        "truncated_gradient": {"eta0": 0.5, "power_t": 0.5, "pass_decay": 1.0},
        "sgd_cumulative": {"eta0": 0.5, "a": 2.0},
        "smidas": {"eta": 0.1, "eta_intercept": 0.03, "eta_decay": 0.0},
    }[name]
    a = ONLINE[name](max_iter=2, holdout=0, schedule="paper").solve(StreamProblem(Stream.from_arrays(X, y), lam=1e-3))
    b = ONLINE[name](max_iter=2, holdout=0, **fixed).solve(StreamProblem(Stream.from_arrays(X, y), lam=1e-3))
    np.testing.assert_array_equal(a.coef, b.coef)
    with pytest.raises(ValueError, match="schedule"):
        ONLINE[name](schedule="tuned")


@pytest.mark.parametrize("name", list(ONLINE))
def test_partial_fit_calibrates_on_its_first_chunk(name):
    rng = np.random.default_rng(0)
    X = sp.random(400, 30, density=0.2, random_state=1, format="csr") * 1000.0  # far from unit scale
    y = np.where(X @ rng.normal(size=30) > 0, 1.0, -1.0)
    solver = ONLINE[name]()
    state = solver.new_state(30, True)
    from l1scale.data.memory import as_rows

    for _ in range(3):
        solver.partial_fit(state, as_rows(X), y, np.ones(400), kind=0, l1=1e-3, l2=0.0)
    assert state.rate is not None and state.scaled
    # per-feature rates: the rate applies in the rescaled coordinates (features of RMS 1); feature
    # j's own rate, rate D_j (SMIDAS: rate r_j^2), is bounded by the rows' curvature
    per_feature = state.rate * (state.scale**2 if name == "smidas" else state.scale)
    assert per_feature.max() < 1e-3
    assert np.isfinite(state.coef).all()


@pytest.mark.parametrize("name", list(ONLINE))
def test_estimator_tol_is_checked_after_an_online_fit(text, name):
    """An estimator's tol applies to the online solvers on in-memory data (issue 16: a run that
    stops short says so): after the last pass, the duality gap at the intercept optimal for the
    weights; short of tol, converged_ is False and a ConvergenceWarning gives the gap reached
    (a bound on the relative suboptimality). The weights are those of the solver without the
    check; the intercept is the one optimal for them."""
    from l1scale import SparseLogisticRegression

    X, y = text
    X, y = X[:500], y[:500]
    with pytest.warns(ConvergenceWarning, match="relative duality_gap") as record:
        short = SparseLogisticRegression(solver=name, lam_ratio=0.01, max_iter=3).fit(X, y)
    assert not any("holdout" in str(w.message) for w in record)  # every row learned from: no holdout to name
    assert short.converged_.tolist() == [False]
    assert short.result_.certificate_name == "duality_gap" and short.result_.relative_certificate > 1e-6
    y_pm = np.where(y == short.classes_[1], 1.0, -1.0)
    problem = Problem(X, y_pm, "logistic", short.lam_[0])
    gap = problem.certificate(short.coef_[0], short.intercept_[0])  # in memory: at the optimal intercept
    assert short.result_.relative_certificate == pytest.approx(gap.relative, rel=1e-9)
    assert short.result_.objective == pytest.approx(problem.objective(short.coef_[0], short.intercept_[0]), rel=1e-12)
    plain = ONLINE[name](max_iter=3, holdout=0).solve(
        StreamProblem(Stream.from_arrays(X, y_pm), "logistic", short.lam_[0])
    )
    assert plain.certificate_name == "none"
    np.testing.assert_array_equal(short.coef_[0], plain.coef)
    assert problem.objective(short.coef_[0], short.intercept_[0]) <= problem.objective(plain.coef, plain.intercept)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        loose = SparseLogisticRegression(solver=name, lam_ratio=0.01, max_iter=3, tol=10.0).fit(X, y)
    assert loose.converged_.tolist() == [True] and loose.result_.stop_reason == "duality_gap"
    # A streamed fit keeps no tolerance: no certificate pass over the file.
    streamed = SparseLogisticRegression(solver=name, lam_ratio=0.01, max_iter=3).fit(
        Stream.from_generator(lambda: iter([(X, y_pm)]), n_features=X.shape[1])
    )
    assert streamed.result_.certificate_name == "none"


@pytest.mark.parametrize("name", list(ONLINE))
def test_estimator_learns_from_every_row_for_all_its_passes(text, name):
    """An estimator fits an online solver on in-memory data to minimise its objective at lam: it
    learns from every row for all of max_iter passes (no holdout, no early stopping on it), where
    the solver's own default keeps Vowpal Wabbit's holdout of 1 row in 10 and stops once its loss
    has not improved for 3 passes. Measured over the 48 rows of the stochastic-defaults page,
    with the estimator's defaults: 0-1 of 48 runs of each online solver within 1e-3 of the optimum
    (stopped after 4-24 passes), 30-36 now (200 passes)."""
    from l1scale import SparseLogisticRegression

    X, y = text
    X, y = X[:1000], y[:1000]
    est = SparseLogisticRegression(solver=name, lam_ratio=0.1, max_iter=30, tol=1e-12)
    with pytest.warns(ConvergenceWarning):
        est.fit(X, y)
    res = est.result_
    assert res.n_iter == 30 and res.stop_reason == "max_iter"
    assert np.isnan(res.history.holdout_loss).all()  # no row held out
    assert res.history.examples[-1] == 30 * X.shape[0]
    y_pm = np.where(y == est.classes_[1], 1.0, -1.0)
    vw = ONLINE[name](max_iter=30).solve(StreamProblem(Stream.from_arrays(X, y_pm), "logistic", est.lam_[0]))
    assert vw.stop_reason == "early_stopping" and vw.n_iter < 30
    problem = Problem(X, y_pm, "logistic", est.lam_[0])
    assert problem.objective(est.coef_[0], est.intercept_[0]) < problem.objective(vw.coef, vw.intercept)


@pytest.mark.parametrize("in_memory", [True, False])
def test_tol_certifies_or_warns(text, in_memory):
    """tol: after the last pass the problem's certificate (a stream over arrays: the duality gap,
    two passes; another stream: the KKT violation, one pass); a run that stops short says so with
    a ConvergenceWarning, converged False and the certificate it reached."""
    X, y = text
    X, y = X[:500], y[:500]
    stream = (
        Stream.from_arrays(X, y) if in_memory else Stream.from_generator(lambda: iter([(X, y)]), n_features=X.shape[1])
    )
    problem = StreamProblem(stream, "logistic", lam_ratio=0.01)
    name = "duality_gap" if in_memory else "kkt"
    with pytest.warns(ConvergenceWarning, match=f"relative {name}"):
        res = TruncatedGradient(max_iter=2, holdout=0, tol=1e-8).solve(problem)
    assert not res.converged and res.certificate_name == name and res.relative_certificate > 1e-8
    assert np.isfinite(res.objective)
    if in_memory:  # the gap bounds the suboptimality: above the optimum's distance
        batch = Problem(X, y, "logistic", problem.lam)
        p_star = CoordinateDescent(tol=1e-10).solve(batch).objective
        assert res.objective == pytest.approx(batch.objective(res.coef, res.intercept), rel=1e-12)
        assert (res.objective - p_star) / res.objective <= res.relative_certificate
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = TruncatedGradient(max_iter=2, holdout=0, tol=1e6).solve(problem)
    assert res.converged and res.stop_reason == name


@pytest.mark.parametrize("name", list(ONLINE))
def test_per_feature_rates_reach_1e3_on_spambase(name):
    """spambase (feature scales from 1e-2 to 1e4), 0.1 and 0.01 lam_max, no intercept: the
    per-feature rates reach 1e-3 in 50 passes (on the benchmark's 3,000-row sample one rate for
    all features, precondition=False, stopped 2-10x above it at 0.01 lam_max)."""
    X, y = load_svmlight_pm("spambase", "spambase/spambase.svm.bz2", 57)
    X, y = X[::2], y[::2]
    for ratio in (0.1, 0.01):
        gap, _ = _suboptimality(ONLINE[name](max_iter=50, holdout=0), X, y, ratio, False)
        assert -1e-9 <= gap <= 1e-3, f"{name} at {ratio} lam_max: {gap:.3g}"


@pytest.mark.parametrize("name", list(ONLINE))
def test_per_feature_rates_are_one_on_binary_features(name):
    """Binary features have RMS 1 over their nonzeros: the per-feature rates are 1 and the
    iterates those of one rate (precondition=False), bit for bit."""
    X = sp.random(300, 40, density=0.1, random_state=3, format="csr")
    X.data[:] = 1.0
    y = np.where(np.asarray(X.sum(axis=1)).ravel() + np.arange(300) % 3 > 4, 1.0, -1.0)
    runs = []
    for pre in (True, False):
        solver = ONLINE[name](max_iter=3, holdout=0, precondition=pre)
        runs.append(solver.solve(StreamProblem(Stream.from_arrays(X, y), "logistic", 1e-3)))
        assert solver.state_.scaled is pre
        assert np.all(solver.state_.scale == 1.0)
    np.testing.assert_array_equal(runs[0].coef, runs[1].coef)
    assert runs[0].intercept == runs[1].intercept


@pytest.mark.parametrize("name", list(ONLINE))
def test_per_feature_rates_only_with_a_calibrated_rate(text, name):
    """A given rate or schedule='paper' keeps one rate for all features (the papers' rules)."""
    X, y = text
    X, y = X[:200], y[:200]
    rate = {"smidas": {"eta": 0.1}}.get(name, {"eta0": 0.1})
    for kw in (rate, {"schedule": "paper"}):
        solver = ONLINE[name](max_iter=1, holdout=0, **kw)
        solver.solve(StreamProblem(Stream.from_arrays(X, y), "logistic", 1e-3))
        assert not solver.state_.scaled
    with pytest.raises(ValueError, match="precondition"):
        ONLINE[name](precondition="yes")


@pytest.mark.parametrize("name", list(ONLINE))
def test_per_feature_rates_warm_start_and_weights(name):
    """With per-feature rates the state keeps rescaled weights: coef and set_weights convert (a
    warm start begins at the weights given; the returned coef is in the original units)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6)) * np.array([1e-2, 1.0, 1e2, 1e3, 1.0, 10.0])
    y = np.where(X @ np.array([50.0, 1.0, 0.0, 1e-3, -1.0, 0.1]) > 0, 1.0, -1.0)
    problem = Problem(X, y, "logistic", lam_ratio=0.1)
    ref = CoordinateDescent(tol=1e-10).solve(problem)
    solver = ONLINE[name](max_iter=1, holdout=0)
    res = solver.solve(
        StreamProblem(Stream.from_arrays(X, y), "logistic", problem.lam),
        coef_init=ref.coef,
        intercept_init=ref.intercept,
    )
    state = solver.state_
    assert state.scaled and not np.all(state.scale == 1.0)
    before = state.coef
    state.set_weights(ref.coef, ref.intercept)
    np.testing.assert_allclose(state.coef, ref.coef, rtol=1e-12, atol=1e-300)
    assert np.isfinite(before).all() and np.isfinite(res.coef).all()


@pytest.mark.parametrize("name", list(ONLINE))
def test_shuffled_passes_reach_1e3_on_a_sorted_file(name):
    """magic04's file is sorted by class: in stream order the last rows of every pass pull the
    weights their way and 50 passes stopped at 6e-3-2e-2 (0.1 lam_max, intercept); the default
    (schedule="auto") shuffles each pass's rows and reaches 1e-3 (measured: 2e-7-2e-4)."""
    X, y = _benchmark_rows(*load_svmlight_pm("magic04", "magic04/magic04.svm.bz2", 10))
    solver = ONLINE[name](max_iter=50, holdout=0)
    assert solver.shuffle is None and solver.shuffled()
    gap, _ = _suboptimality(solver, X, y, 0.1, True)
    assert -1e-9 <= gap <= 1e-3, f"{name} shuffled: {gap:.3g}"
    gap, _ = _suboptimality(ONLINE[name](max_iter=50, holdout=0, shuffle=False), X, y, 0.1, True)
    assert gap > 1e-3, f"{name} in stream order: {gap:.3g}"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ONLINE))
def test_defaults_reach_1e3_on_a9a_at_small_lam(name):
    """a9a (3,000 rows), 0.01 lam_max with intercept: the runs were far from the optimum, not
    noisy (2-3e-3 at the calibrated rate; shuffled 2-3e-3 too). The first pass one octave above
    the calibrated rate, decaying to 1/300 of it, reaches 1e-3 (measured 3e-4-8e-4)."""
    X, y = _benchmark_rows(*load_svmlight_pm("a9a", "a9a/a9a.bz2", 123))
    gap, _ = _suboptimality(ONLINE[name](max_iter=50, holdout=0), X, y, 0.01, True)
    assert -1e-9 <= gap <= 1e-3, f"{name}: {gap:.3g}"


def test_smidas_link_p_follows_the_schedule():
    """Calibrated rates take p = min(2 ln d, AUTO_P); the paper's rules, a given eta and a given p
    keep what they say (the reproductions use the paper's 2 ln d)."""
    d = 5000
    assert SMIDAS().new_state(d, True).p == smidas.AUTO_P == smidas.auto_p(d) < smidas.smidas_p(d)
    assert SMIDAS().new_state(10, True).p == smidas.AUTO_P < smidas.smidas_p(10)  # 2 ln 10 = 4.6
    assert SMIDAS().new_state(4, True).p == smidas.smidas_p(4)  # 2 ln 4 = 2.8: the smaller one
    assert SMIDAS(schedule="paper").new_state(d, True).p == smidas.smidas_p(d)
    assert SMIDAS(eta=0.1).new_state(d, True).p == smidas.smidas_p(d)
    assert SMIDAS(p=7.0).new_state(d, True).p == SMIDAS(p=7.0, schedule="paper").new_state(d, True).p == 7.0


def test_smidas_auto_p_learns_many_weights_where_the_papers_p_does_not():
    """Sparse text rows, 0.1 lam_max with intercept, 50 passes: with the paper's p = 2 ln d (17
    here) w_j ~ |theta_j|^16 moves only the largest coordinates, and the ~100 weights of the
    solution are learned slowly (2.8e-2 measured); min(2 ln d, 3) reaches 1e-3 (8e-4 measured)."""
    X, y = make_sparse_text(1000, 5000, random_state=0)
    d = X.shape[1]
    auto, _ = _suboptimality(SMIDAS(max_iter=50, holdout=0), X, y, 0.1, True)
    paper_p, _ = _suboptimality(SMIDAS(max_iter=50, holdout=0, p=smidas.smidas_p(d)), X, y, 0.1, True)
    assert -1e-9 <= auto <= 1e-3 < paper_p / 10, (auto, paper_p)


def test_smidas_auto_p_stays_larger_on_wide_dense_rows():
    """An L1 solution has at most n nonzeros, so for rows of k nonzeros the p-norm bound's best p,
    2 ln(k / s), is at least 2 ln(k / n): the rate's pass sets it (arcene-like data, few dense rows),
    keeping a warm start's weights; sparse rows keep AUTO_P."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3000))
    y = np.where(X[:, :5].sum(axis=1) > 0, 1.0, -1.0)
    problem = StreamProblem(Stream.from_arrays(X, y), "logistic", lam_ratio=0.1)
    solver = SMIDAS(max_iter=1, holdout=0)
    solver.solve(problem)
    assert solver.state_.p == pytest.approx(2 * np.log(3000 / 40)) == smidas.auto_p(3000, 3000, 40)
    assert 8 < solver.state_.p < smidas.smidas_p(3000)
    warm = np.zeros(3000)
    warm[:3] = [0.5, -0.2, 0.1]
    start = SMIDAS(max_iter=1, holdout=0, eta=1e-300)  # a given rate: the paper's p, nothing moves
    np.testing.assert_allclose(start.solve(problem, warm).coef, warm, rtol=1e-12)
    calibrated = SMIDAS(max_iter=1, holdout=0)
    state = calibrated.new_state(3000, True)
    state.set_weights(warm, 0.0)
    feats = online_base.FeatureStats.zeros(3000)
    feats.add(X)
    scale = online_base.RowScale(40, *online_base.largest_row_norms(X, state.p))
    calibrated._choose_rates(state, X, y, np.ones(40), scale, feats, loss=problem.loss, l1=problem.penalty.l1, l2=0.0)
    assert state.p == pytest.approx(2 * np.log(75)) and state.rate is not None
    np.testing.assert_allclose(state.coef, warm, rtol=1e-9, atol=1e-15)  # the warm start survives the new p
    X_sparse, y_sparse = make_sparse_text(300, 3000, random_state=0)
    sparse = SMIDAS(max_iter=1, holdout=0)
    sparse.solve(StreamProblem(Stream.from_arrays(X_sparse, y_sparse), "logistic", lam_ratio=0.1))
    assert sparse.state_.p == smidas.AUTO_P


@pytest.mark.parametrize("name", list(ONLINE))
def test_shuffle_follows_the_rate_and_is_seeded(text, name):
    """shuffle=None: on with a calibrated rate, off with schedule="paper" or a given rate (the
    papers' and VW's runs keep the stream order); the default seed is 0 (two default runs agree),
    another random_state differs."""
    rate = {"smidas": {"eta": 0.1}}.get(name, {"eta0": 0.1})
    assert ONLINE[name]().shuffled() is True
    assert ONLINE[name](schedule="paper").shuffled() is False
    assert ONLINE[name](**rate).shuffled() is False
    assert ONLINE[name](shuffle=False).shuffled() is False
    assert ONLINE[name](schedule="paper", shuffle=True).shuffled() is True
    X, y = text
    X, y = X[:300], y[:300]
    runs = [
        ONLINE[name](max_iter=2, holdout=0, **kw).solve(StreamProblem(Stream.from_arrays(X, y), "logistic", 1e-3))
        for kw in ({}, {}, {"random_state": 0}, {"random_state": 1})
    ]
    np.testing.assert_array_equal(runs[0].coef, runs[1].coef)
    np.testing.assert_array_equal(runs[0].coef, runs[2].coef)
    assert not np.array_equal(runs[0].coef, runs[3].coef)


@pytest.mark.parametrize("name", list(ONLINE))
def test_first_pass_rate_is_one_octave_above_the_calibrated(text, name, monkeypatch):
    """The rate of the first pass is AUTO_RATE_FACTOR (2) times the best one-epoch rate of the
    calibration; with the factor 1 it is that rate itself."""
    X, y = text
    X, y = X[:300], y[:300]
    rates = []
    for factor in (2.0, 1.0):
        monkeypatch.setattr(online_base, "AUTO_RATE_FACTOR", factor)
        solver = ONLINE[name](max_iter=2, holdout=0)
        solver.solve(StreamProblem(Stream.from_arrays(X, y), "logistic", 1e-3))
        rates.append(solver.eta if name == "smidas" else solver.eta0)
    assert rates[0] == 2.0 * rates[1]


def test_octave_above_is_not_taken_when_it_diverges(monkeypatch):
    """The octave above is not taken when its trial epoch diverged: a factor of 2^40 (a trial
    not computed counts as diverged) leaves the calibrated rate."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    rates = []
    for factor in (2.0**40, 1.0):
        monkeypatch.setattr(online_base, "AUTO_RATE_FACTOR", factor)
        solver = CumulativePenaltySGD(max_iter=2, holdout=0)
        solver.solve(StreamProblem(Stream.from_arrays(X, y), "logistic", 1e-3))
        rates.append(solver.eta0)
    assert rates[0] == rates[1]


# ------------------------------------------------------------------ centred columns (schedule="auto", intercept)
def _offset_columns():
    """Dense columns far from zero: 40 + N(0, 2^2), |mean| / std about 20."""
    rng = np.random.default_rng(8)
    X = 40.0 + 2.0 * rng.normal(size=(600, 12))
    w = np.zeros(12)
    w[:3] = [1.0, -0.8, 0.5]
    return X, np.where((X - 40.0) @ w + 0.5 * rng.normal(size=600) > 0, 1.0, -1.0)


def test_centring_takes_only_columns_whose_offset_dwarfs_their_spread():
    from l1scale.solvers.online_base import CENTRE_RATIO, FeatureStats

    n = 1000
    rng = np.random.default_rng(0)
    columns = {
        "offset": 40.0 + 2.0 * rng.normal(size=n),  # |mean| / std ~ 20: centred
        "constant": np.full(n, 3.0),  # no spread at all: centred (the intercept's direction)
        "mild": 4.0 + 2.0 * rng.normal(size=n),  # ~ 2: left alone
        "half": (rng.random(n) < 0.5).astype(float),  # a binary feature in half the rows: 1
        "common": (np.arange(n) < 0.99 * n).astype(float),  # in 99% of the rows: sqrt(99) ~ 9.9
        "centred": rng.normal(size=n),
    }
    stats = FeatureStats.zeros(len(columns))
    A = np.column_stack(list(columns.values()))
    stats.add(sp.csr_matrix(A[:400]))  # chunks of either layout add up
    stats.add(A[400:])
    center = dict(zip(columns, stats.centring()))
    assert CENTRE_RATIO == 5.0
    np.testing.assert_allclose(center["offset"], columns["offset"].mean(), rtol=1e-12)
    assert center["constant"] == 3.0 and center["common"] == pytest.approx(0.99)
    assert center["mild"] == center["half"] == center["centred"] == 0.0
    after = stats.centred(stats.centring())
    np.testing.assert_allclose(after.sum_sq[0], ((columns["offset"] - columns["offset"].mean()) ** 2).sum(), rtol=1e-9)
    assert after.nnz[0] == n and after.sum_sq[2] == stats.sum_sq[2]


@pytest.mark.parametrize("name", list(ONLINE))
def test_offset_columns_are_learned_centred_and_mapped_back(name, monkeypatch):
    """With an intercept and a calibrated rate the solve learns such columns centred, an exact
    change of variables: the model returned is in the raw columns (its objective is evaluated on
    them), the state left behind is raw (partial_fit goes on from it), and the same rows given
    centred by hand (no column then qualifies) give the same model to rounding."""
    X, y = _offset_columns()
    sub, res = _suboptimality(ONLINE[name](max_iter=20, holdout=0), X, y, 0.05, True)
    center = X.mean(axis=0)
    by_hand_sub, by_hand = _suboptimality(ONLINE[name](max_iter=20, holdout=0), X - center, y, 0.05, True)
    np.testing.assert_allclose(res.coef, by_hand.coef, rtol=1e-6, atol=1e-9)
    assert res.intercept == pytest.approx(by_hand.intercept - float(center @ by_hand.coef), rel=1e-6)
    assert sub == pytest.approx(by_hand_sub, rel=1e-3, abs=1e-9)
    solver = ONLINE[name](max_iter=20, holdout=0)
    batch = Problem(X, y, "logistic", lam_ratio=0.05)
    solver.solve(StreamProblem(Stream.from_arrays(X, y), "logistic", batch.lam))
    assert not solver.state_.center.any() and solver.state_.intercept == pytest.approx(res.intercept, rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sgd_cumulative", "smidas"])
def test_centring_reaches_1e3_on_madelon(name, monkeypatch):
    """madelon (2,000 rows, 500 dense columns of mean about 480 and |mean| / std 10-800) at 0.1
    lam_max with intercept, 50 passes. Measured: SGD-C 5.6e-5, SMIDAS 1.7e-4; uncentred 3.4e-2,
    2.2e-2 (the curvature along the columns' common mean is 10^2-10^5 times the rest)."""
    from l1scale.solvers import online_base

    X, y = load_svmlight_pm("madelon", "madelon/madelon.bz2", 500)
    sub, _ = _suboptimality(ONLINE[name](max_iter=50, holdout=0), X, y, 0.1, True)
    monkeypatch.setattr(online_base, "CENTRE_RATIO", 1e150)  # no column qualifies
    uncentred, _ = _suboptimality(ONLINE[name](max_iter=50, holdout=0), X, y, 0.1, True)
    assert sub <= 1e-3 < uncentred


# ------------------------------------------------------------------ centred columns in SCD and DetCD
def test_a_centred_problem_is_the_same_problem():
    """Problem.centred: x_j - mean_j for the columns worth centring (c-weighted means), the
    intercept b + mean . w: the same objective and the same certificate, dense or sparse, with
    sample weights; without an intercept it would be another problem, so it is refused."""
    from l1scale.problems.memory import CENTRE_RATIO

    X, y = _offset_columns()
    X = np.column_stack([X, np.random.default_rng(1).normal(size=X.shape[0])])  # a centred column: 0
    weights = np.random.default_rng(2).uniform(0.5, 2.0, size=X.shape[0])
    rng = np.random.default_rng(3)
    w, b = rng.normal(size=X.shape[1]) * 0.1, 0.3
    for design in (X, sp.csr_matrix(X), sp.csc_matrix(X)):
        problem = Problem(design, y, "logistic", lam_ratio=0.05, sample_weight=weights)
        offsets = problem.column_offsets()
        c = weights / weights.sum()
        mean = c @ X
        np.testing.assert_allclose(offsets[:12], mean[:12], rtol=1e-12)
        assert offsets[12] == 0.0 and CENTRE_RATIO == 5.0
        centred = problem.centred(offsets)
        np.testing.assert_allclose(np.asarray(centred.X @ np.eye(X.shape[1])), X - offsets, rtol=1e-12, atol=1e-12)
        b_centred = b + offsets @ w
        assert centred.objective(w, b_centred) == pytest.approx(problem.objective(w, b), rel=1e-12)
        raw, moved = problem.certificate(w, b), centred.certificate(w, b_centred)
        assert moved.value == pytest.approx(raw.value, rel=1e-9)
        assert centred.y is problem.y and centred.c is problem.c and centred.penalty == problem.penalty
    with pytest.raises(ValueError, match="intercept"):
        Problem(X, y, "logistic", lam_ratio=0.05, fit_intercept=False).centred(offsets)


@pytest.mark.parametrize("name", ["scd", "detcd"])
def test_scd_and_detcd_learn_offset_columns_centred(name, monkeypatch):
    """Under the default Newton steps, with an intercept, SCD and DetCD learn the offset columns
    centred: the model of the same rows centred by hand (intercept mapped back) to rounding, and
    closer to the optimum than the raw columns give. Algorithm 2's steps (curvature="column")
    and solves without an intercept keep the raw columns: bit for bit what they gave before."""
    from l1scale.solvers import SOLVERS, scd

    X, y = _offset_columns()
    # Without an intercept SCD moves such columns in offset-free pairs instead (test_scd.py): aside here.
    monkeypatch.setattr(scd.StochasticCD, "pair_steps", False)

    def run(design, fit_intercept=True, **kw):
        problem = Problem(design, y, "logistic", lam_ratio=0.05, fit_intercept=fit_intercept)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = SOLVERS[name](max_iter=15, random_state=0, **kw).solve(problem)
        p_star = CoordinateDescent(tol=1e-12, max_iter=1000).solve(problem).objective
        return res, (problem.objective(res.coef, res.intercept) - p_star) / p_star

    res, sub = run(X)
    center = X.mean(axis=0)
    by_hand, by_hand_sub = run(X - center)
    np.testing.assert_allclose(res.coef, by_hand.coef, rtol=1e-6, atol=1e-9)
    assert res.intercept == pytest.approx(by_hand.intercept - float(center @ by_hand.coef), rel=1e-6)
    assert sub == pytest.approx(by_hand_sub, rel=1e-3, abs=1e-12)
    kept = {"column": run(X, curvature="column")[0], "no intercept": run(X, fit_intercept=False)[0]}
    monkeypatch.setattr(scd, "CENTRE_RATIO", 1e150)  # no column qualifies
    raw, raw_sub = run(X)
    assert sub < 0.1 * raw_sub
    for key, before in (("column", run(X, curvature="column")[0]), ("no intercept", run(X, fit_intercept=False)[0])):
        np.testing.assert_array_equal(kept[key].coef, before.coef)
        assert kept[key].intercept == before.intercept


@pytest.mark.slow
def test_scd_centring_reaches_1e3_on_madelon(monkeypatch):
    """madelon at 0.01 lam_max with intercept, SCD's defaults, 50 epochs. Measured: 2.6e-5 with
    the centred columns, 6.0e-2 without (every step on a column of mean about 480 moves all the
    margins, and the intercept must take it back)."""
    from l1scale.solvers import scd

    X, y = load_svmlight_pm("madelon", "madelon/madelon.bz2", 500)
    centred = _scd_suboptimality(X, y, 0.01)
    monkeypatch.setattr(scd, "CENTRE_RATIO", 1e150)  # no column qualifies
    assert centred <= 1e-3 < _scd_suboptimality(X, y, 0.01)


@pytest.mark.slow
def test_detcd_extrapolated_epochs_reach_1e3_on_madelon_without_intercept(monkeypatch):
    """madelon at 0.01 lam_max without intercept (its 500 columns of mean about 480 cannot be
    centred: that would change the problem), DetCD's defaults, 50 epochs: each epoch extrapolated
    along its move reaches the target (measured 4.7e-4), where the same epochs alone end at 2.1e-2."""
    from l1scale.solvers.scd import GreedyCD

    X, y = load_svmlight_pm("madelon", "madelon/madelon.bz2", 500)
    problem = Problem(X, y, "logistic", lam_ratio=0.01, fit_intercept=False)
    p_star = CoordinateDescent(tol=1e-10, max_iter=1000).solve(problem).objective

    def suboptimality():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = GreedyCD(max_iter=50, tol=0.0).solve(problem)
        return (problem.objective(res.coef, res.intercept) - p_star) / p_star

    extrapolated = suboptimality()
    monkeypatch.setattr(GreedyCD, "extrapolate", False)
    assert extrapolated <= 1e-3 < suboptimality()


def _scd_suboptimality(X, y, ratio, epochs=50):
    """SCD's defaults for ``epochs`` epochs at ``ratio`` lam_max with intercept: (P - P*) / P*."""
    from l1scale.solvers.scd import StochasticCD

    problem = Problem(X, y, "logistic", lam_ratio=ratio)
    p_star = CoordinateDescent(tol=1e-10, max_iter=1000).solve(problem).objective
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = StochasticCD(max_iter=epochs, random_state=0).solve(problem)
    return (problem.objective(res.coef, res.intercept) - p_star) / p_star


@pytest.mark.slow
def test_scd_centres_columns_set_in_most_rows(monkeypatch):
    """a9a (3,000 rows) at 0.01 lam_max with intercept, SCD's defaults, 50 epochs: its one-hot
    blocks sum to the intercept's column, and the columns set in more than half the rows (|mean|
    above their standard deviation, SCD's CENTRE_RATIO = 1) learned centred take that coupling
    away. Measured 6.4e-4; 1.2e-3 at the online solvers' ratio of 5, where no a9a column qualifies."""
    from l1scale.solvers import scd

    X, y = _benchmark_rows(*load_svmlight_pm("a9a", "a9a/a9a.bz2", 123))
    problem = Problem(X, y, "logistic", lam_ratio=0.01)
    offsets = problem.column_offsets(scd.CENTRE_RATIO)
    density = np.asarray((X != 0).mean(axis=0)).ravel()
    np.testing.assert_array_equal(offsets != 0.0, density > 0.5)  # binary columns: mean > std
    assert not problem.column_offsets().any()  # the online solvers' ratio: none
    centred = _scd_suboptimality(X, y, 0.01)
    monkeypatch.setattr(scd, "CENTRE_RATIO", 5.0)
    assert centred <= 1e-3 < _scd_suboptimality(X, y, 0.01)


# ------------------------------------------------------------------ a calibration that says nothing
def test_an_uninformative_calibration_is_done_again_on_the_loss_alone(monkeypatch):
    """Truncated gradient keeps no memory of its shrinks, so where the gradient noise dwarfs lam
    (dense columns of spread 10, 0.5 lam_max) one epoch from w = 0 leaves dust whose penalty puts
    every trial above the zero model: the penalised search would take the smallest rate. It is then
    done again on the loss alone: a rate more than 10x larger and a model closer to the optimum
    (measured: 1.1e-3 -> 3.5e-2, 2.5e-2 -> 7.1e-3). SGD-C's penalised search, informative on the
    same data, is not touched."""
    rng = np.random.default_rng(5)
    X = 30.0 + 10.0 * rng.normal(size=(1000, 200))
    w = np.zeros(200)
    w[:3] = [0.05, -0.04, 0.03]
    y = np.where((X - 30.0) @ w + rng.normal(size=1000) > 0, 1.0, -1.0)

    def run(solver):
        sub, _ = _suboptimality(solver, X, y, 0.5, True)
        return solver.state_.rate, sub

    rates = {}
    for fallback in (True, False):
        monkeypatch.setattr(online_base, "LOSS_ALONE_FALLBACK", fallback)
        rates[fallback] = (
            run(TruncatedGradient(max_iter=20, holdout=0)),
            run(CumulativePenaltySGD(max_iter=20, holdout=0)),
        )
    (tg_on, tg_sub_on), sgd_on = rates[True]
    (tg_off, tg_sub_off), sgd_off = rates[False]
    assert tg_on > 10 * tg_off and tg_sub_on < 0.5 * tg_sub_off
    assert sgd_on == sgd_off
    # Above lam_max w = 0 is the optimum: no trial can beat it, and the smallest rate stays.
    with pytest.warns(UserWarning, match="lam_max"):
        batch = Problem(X, y, "logistic", lam_ratio=1.5)
    for fallback in (True, False):
        monkeypatch.setattr(online_base, "LOSS_ALONE_FALLBACK", fallback)
        solver = TruncatedGradient(max_iter=5, holdout=0)
        solver.solve(StreamProblem(Stream.from_arrays(X, y), "logistic", batch.lam))
        rates[fallback] = solver.state_.rate
    assert rates[True] == rates[False]


@pytest.mark.parametrize("p", [None, 3.0])
def test_row_norms_are_the_same_to_the_bit_on_csr_and_dense(p):
    """The calibration's reference rate comes from the rows' norms, so a CSR X and its dense twin
    must give the same bits (NumPy's einsum summed a dense row in lanes of the host's vector width:
    an AVX2 host's rates differed in the last place). Values over ten decades, empty rows, an
    unsorted CSR."""
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    dense = rng.standard_normal((60, 97)) * 10.0 ** rng.uniform(-5, 5, size=(60, 97))
    dense[rng.random(dense.shape) < 0.7] = 0.0
    dense[[4, 17]] = 0.0
    csr = sp.csr_matrix(dense)
    shuffled = csr.copy()
    for i in range(shuffled.shape[0]):  # the same rows, their entries stored out of order
        lo, hi = shuffled.indptr[i], shuffled.indptr[i + 1]
        order = rng.permutation(hi - lo) + lo
        shuffled.indices[lo:hi], shuffled.data[lo:hi] = shuffled.indices[order], shuffled.data[order]
    shuffled.has_sorted_indices = False
    expected = online_base._row_norms(dense, p)
    for X in (csr, shuffled, np.asfortranarray(dense)):
        got = online_base._row_norms(X, p)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)
    assert expected[0][4] == 0.0 and expected[0].max() > 0.0
