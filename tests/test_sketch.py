"""MP and RMMP (Balakrishnan & Madigan, sec. 5): the sketch's a_i, b_i are Appendix A's,
the passes reach the batch solution (simulated data of sec. 7, Reuters earn), RMMP's
memory does not grow with n, and the StreamProblem contract (lam_ratio, weights,
labels, data errors, checkpoints) holds."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _shared_data import DATA
from scipy.stats import norm

import l1scale.data.svmlight as svmlight_module
from l1scale.data.memory import as_rows
from l1scale.data.stream import Stream
from l1scale.data.synthetic import make_bm_simulated
from l1scale.exceptions import ConvergenceWarning, DataFormatError
from l1scale.losses import get_loss
from l1scale.problems import Problem, StreamProblem, lam_max
from l1scale.solvers.cd import CoordinateDescent
from l1scale.solvers.sketch import MultiPass, ReducedMemoryMultiPass, pass_statistics

EARN = os.path.join(DATA, "reuters21578", "modapte_earn_train.svm.bz2")
EARN_N, EARN_D = 9603, 27901


def _quiet(solver, problem, **kw):
    """solve() turning ConvergenceWarning into an error (the run must converge)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return solver.solve(problem, **kw)


def _cd(X, y, loss, lam, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return CoordinateDescent(tol=1e-12, max_iter=1000).solve(Problem(X, y, loss, lam, **kw))


def _sparse_data(n=400, d=80, seed=0, loss="logistic", density=0.1, support=8):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=rng, format="csr")
    X.data = rng.normal(size=X.nnz)
    w = np.zeros(d)
    w[:support] = rng.normal(size=support) * 2
    z = X @ w + 0.3 + 0.3 * rng.normal(size=n)
    y = z if loss == "squared" else np.where(z > 0, 1.0, -1.0)
    return X, y


def _l1_distance(res, ref):
    return float(np.abs(res.coef - ref.coef).sum() + abs(res.intercept - ref.intercept))


# --------------------------------------------------------------------------- Appendix A


def _appendix_a(link, c, y01):
    """a_i, b_i of Balakrishnan & Madigan, Appendix A, written out as in the paper."""
    if link == "probit":
        Phi, dPhi, d2Phi = norm.cdf(c), norm.pdf(c), -c * norm.pdf(c)
    else:
        e = np.exp(c)
        Phi, dPhi, d2Phi = e / (1 + e), e / (1 + e) ** 2, e * (1 - e) / (1 + e) ** 3
    if y01 == 1:
        k = d2Phi / Phi - (dPhi / Phi) ** 2
        return 0.5 * k, dPhi / Phi - c * k
    q = 1 - Phi
    k = d2Phi / q + (dPhi / q) ** 2
    return -0.5 * k, -dPhi / q + c * k


Z_GRID = np.array([-5.0, -2.5, -1.0, -0.3, 0.0, 0.4, 1.2, 3.0, 5.0])


@pytest.mark.parametrize("link", ["logistic", "probit"])
@pytest.mark.parametrize("y01", [0, 1])
def test_loss_taylor_coefficients_equal_appendix_a(link, y01):
    """a = -loss''/2 and b = loss'' z - loss' (the library's form) equal the paper's a_i, b_i."""
    loss = get_loss(link)
    y = np.full(Z_GRID.shape, 1.0 if y01 == 1 else -1.0)
    a = -0.5 * loss.curvature(y, Z_GRID)
    b = loss.curvature(y, Z_GRID) * Z_GRID - loss.derivative(y, Z_GRID)
    a_ref, b_ref = _appendix_a(link, Z_GRID, y01)
    assert np.all(a_ref < 0)  # the log-likelihood is concave
    np.testing.assert_allclose(a, a_ref, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(b, b_ref, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("link", ["logistic", "probit"])
@pytest.mark.parametrize("y01", [0, 1])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_pass_statistics_sketch_holds_appendix_a(link, y01, fit_intercept):
    """One row x at the point (beta, b): the pass's Psi = s a x x^T and theta = s b x
    (x with a trailing 1 for the intercept), with Appendix A's a, b at c = x . beta + b."""
    X2 = np.array([[1.0, 0.5], [-1.0, 2.0]])
    problem = StreamProblem(Stream.from_arrays(X2, np.array([-1.0, 1.0])), link, 0.1, fit_intercept=fit_intercept)
    x = np.array([1.5, -0.7])
    s = 2.5
    active = np.array([0, 1, 2] if fit_intercept else [0, 1], dtype=np.int64)
    xa = np.r_[x, 1.0] if fit_intercept else x
    for c in Z_GRID:
        b0 = 0.4 if fit_intercept else 0.0
        beta = np.array([(c - b0) / x[0], 0.0])  # x . beta + b0 = c
        stats = pass_statistics(
            problem, as_rows(x[None, :]), np.array([1.0 if y01 else -1.0]), np.array([s]), beta, b0, active
        )
        a_ref, b_ref = _appendix_a(link, c, y01)
        np.testing.assert_allclose(stats.psi, s * a_ref * np.outer(xa, xa), rtol=1e-7, atol=1e-12)
        np.testing.assert_allclose(stats.theta, s * b_ref * xa, rtol=1e-7, atol=1e-12)
        # The same pass gives the exact loss and its gradient at the point.
        yy = 1.0 if y01 else -1.0
        assert stats.loss_sum == pytest.approx(s * get_loss(link).value(yy, c), rel=1e-12)
        np.testing.assert_allclose(stats.grad, s * get_loss(link).derivative(yy, c) * x, rtol=1e-12)


# --------------------------------------------------------------------------- sec. 7: simulated data


@pytest.mark.parametrize("link,gamma", [("probit", 10.0), ("logistic", 100.0)])
def test_mp_reaches_batch_estimate_on_simulated_data(link, gamma):
    X, y = make_bm_simulated(10000, link=link, add_intercept=False, random_state=0)
    n = X.shape[0]
    lam = gamma / n
    ref = _cd(X, y, link, lam)
    assert ref.converged and ref.certificate_name == ("kkt" if link == "probit" else "duality_gap")
    res = _quiet(MultiPass(), StreamProblem(Stream.from_arrays(X, y, chunk_rows=3000), link, lam))
    assert res.converged and res.stop_reason == "kkt" and res.n_iter <= 10, (res.n_iter, res.stop_reason)
    dist = _l1_distance(res, ref)
    assert dist <= 1e-3, f"L1 distance {dist:.3g} after {res.n_iter} passes"
    assert len(res.history) == res.n_iter
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)
    # Pass 3 is already close (the paper, Table 2: "very few passes"), and passes never go up.
    obj = np.array(res.history.objective)
    assert (obj[2] - ref.objective) / ref.objective < 0.05, obj
    assert np.all(np.diff(obj) <= 1e-12 * obj[0])


@pytest.mark.parametrize("link", ["probit", "logistic"])
def test_rmmp_with_room_for_support_matches_mp_and_cd(link):
    X, y = _sparse_data(n=600, d=150, seed=1, loss=link, support=10)
    lam = 0.02
    ref = _cd(X, y, link, lam)
    support = np.flatnonzero(ref.coef)
    assert 3 < support.size < 60
    mp = _quiet(MultiPass(tol=1e-9), StreamProblem(Stream.from_arrays(X, y, chunk_rows=128), link, lam))
    for k in (support.size, support.size + 20, 150):
        rm = _quiet(
            ReducedMemoryMultiPass(tol=1e-9, max_active=k),
            StreamProblem(Stream.from_arrays(X, y, chunk_rows=128), link, lam),
        )
        assert rm.converged, k
        for other in (mp, ref):
            assert abs(rm.objective - other.objective) <= 1e-8 * abs(other.objective), k
            np.testing.assert_array_equal(np.flatnonzero(rm.coef), support)
        np.testing.assert_allclose(rm.coef, ref.coef, atol=1e-6)


@pytest.mark.parametrize("link,gamma", [("probit", 10.0), ("logistic", 100.0)])
def test_rmmp_with_too_small_active_set_warns(link, gamma):
    X, y = make_bm_simulated(10000, link=link, add_intercept=False, random_state=1)
    lam = gamma / X.shape[0]
    ref = _cd(X, y, link, lam)
    k = np.count_nonzero(ref.coef) - 2
    with pytest.warns(ConvergenceWarning, match="max_active"):
        res = ReducedMemoryMultiPass(max_active=k, max_iter=8).solve(StreamProblem(Stream.from_arrays(X, y), link, lam))
    assert not res.converged and res.stop_reason != "kkt"
    assert res.nnz <= k
    assert res.objective > ref.objective * (1 + 1e-6)


def test_squared_loss_sketch_is_exact():
    """For the squared loss the quadratic sketch is the problem itself: one Shooting solve
    gives the answer and the second pass certifies it."""
    X, y = _sparse_data(loss="squared", seed=2)
    lam = 0.01
    res = _quiet(MultiPass(tol=1e-9), StreamProblem(Stream.from_arrays(X, y), "squared", lam))
    ref = _cd(X, y, "squared", lam)
    assert res.converged and res.n_iter == 2
    np.testing.assert_allclose(res.coef, ref.coef, atol=1e-9)
    assert res.intercept == pytest.approx(ref.intercept, abs=1e-9)


# --------------------------------------------------------------------------- Reuters earn


@pytest.fixture(scope="module")
def earn():
    if not os.path.exists(EARN):
        pytest.skip(f"reuters earn not found under {DATA}")
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(EARN, n_features=EARN_D)
    assert X.shape == (EARN_N, EARN_D)
    return X, y


@pytest.mark.parametrize("gamma,max_passes", [(100.0, 20), (10.0, 20)])
def test_rmmp_reaches_batch_on_reuters_earn(earn, tmp_path, monkeypatch, gamma, max_passes):
    X, y = earn
    lam = gamma / EARN_N
    ref = _cd(X, y, "logistic", lam)
    parses = []
    real = svmlight_module._iter_chunks
    monkeypatch.setattr(svmlight_module, "_iter_chunks", lambda *a, **k: (parses.append(1), real(*a, **k))[1])
    stream = Stream.from_svmlight(EARN, n_features=EARN_D, cache=tmp_path / "earn-cache")
    res = _quiet(ReducedMemoryMultiPass(max_active=300, max_iter=max_passes), StreamProblem(stream, "logistic", lam))
    gap = (res.objective - ref.objective) / ref.objective
    msg = f"gamma={gamma}: {res.n_iter} passes, relative gap {gap:.3g}, nnz {res.nnz} vs {ref.nnz}"
    assert res.converged and res.n_iter <= max_passes, msg
    assert abs(gap) <= 1e-6, msg
    np.testing.assert_array_equal(np.flatnonzero(res.coef), np.flatnonzero(ref.coef), err_msg=msg)
    # The label scan parsed the text and wrote the cache; every solver pass read the cache.
    assert len(parses) == 1, msg
    assert stream.passes == res.n_iter + 1
    assert os.path.exists(tmp_path / "earn-cache" / "meta.json")


# --------------------------------------------------------------------------- problem options


def test_sparse_and_dense_sketch_agree():
    X, y = _sparse_data(n=300, d=40, seed=3)
    res = [
        _quiet(
            MultiPass(tol=1e-10, sketch=kind), StreamProblem(Stream.from_arrays(X, y, chunk_rows=64), "logistic", 0.01)
        )
        for kind in ("dense", "sparse")
    ]
    assert res[0].n_iter == res[1].n_iter
    np.testing.assert_allclose(res[1].coef, res[0].coef, rtol=0, atol=1e-10)
    assert res[1].intercept == pytest.approx(res[0].intercept, abs=1e-10)
    assert res[0].nnz > 0


@pytest.mark.parametrize("loss", ["logistic", "probit", "squared"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_lam_ratio_resolves_against_lam_max(loss, fit_intercept):
    X, y = _sparse_data(n=300, d=40, seed=4, loss=loss)
    if loss != "squared":
        y = np.where(np.arange(300) % 3 == 0, 1.0, y)  # unbalanced classes: b0 != 0
    problem = StreamProblem(Stream.from_arrays(X, y), loss, lam_ratio=0.1, fit_intercept=fit_intercept)
    assert problem.lam is None
    res = _quiet(MultiPass(tol=1e-9), problem)
    lmax = lam_max(X, y, loss, fit_intercept=fit_intercept)
    assert problem.lam_max() == pytest.approx(lmax, rel=1e-10)  # known from the first pass
    assert problem.lam == pytest.approx(0.1 * lmax, rel=1e-10)
    ref = CoordinateDescent(tol=1e-12).solve(Problem(X, y, loss, lam_ratio=0.1, fit_intercept=fit_intercept))
    np.testing.assert_allclose(res.coef, ref.coef, atol=1e-7)


def test_sample_weights_match_cd_and_integer_weights_duplicate_rows():
    X, y = _sparse_data(n=300, d=40, seed=5)
    rng = np.random.default_rng(0)
    s = rng.uniform(0.1, 3.0, size=300)
    lam = 0.01
    res = _quiet(MultiPass(tol=1e-10), StreamProblem(Stream.from_arrays(X, y, s, chunk_rows=70), "logistic", lam))
    ref = _cd(X, y, "logistic", lam, sample_weight=s)
    np.testing.assert_allclose(res.coef, ref.coef, atol=1e-8)
    assert res.objective == pytest.approx(ref.objective, rel=1e-10)
    unweighted = _cd(X, y, "logistic", lam)
    assert np.abs(unweighted.coef - ref.coef).max() > 1e-3  # the weights matter

    counts = rng.integers(0, 4, size=300)  # 0: the row is dropped
    weighted = _quiet(
        MultiPass(tol=1e-10),
        StreamProblem(Stream.from_arrays(X, y, counts.astype(float), chunk_rows=70), "logistic", lam),
    )
    rows = np.repeat(np.arange(300), counts)
    dup = _quiet(
        MultiPass(tol=1e-10), StreamProblem(Stream.from_arrays(X[rows], y[rows], chunk_rows=70), "logistic", lam)
    )
    np.testing.assert_allclose(weighted.coef, dup.coef, atol=1e-8)
    assert weighted.intercept == pytest.approx(dup.intercept, abs=1e-8)
    assert weighted.objective == pytest.approx(dup.objective, rel=1e-10)


@pytest.mark.parametrize("solver", [MultiPass, ReducedMemoryMultiPass])
def test_elastic_net_matches_cd(solver):
    X, y = _sparse_data(n=300, d=40, seed=6)
    lam = 0.02
    res = _quiet(solver(tol=1e-10), StreamProblem(Stream.from_arrays(X, y), "logistic", lam, l1_ratio=0.5))
    ref = _cd(X, y, "logistic", lam, l1_ratio=0.5)
    lasso = _cd(X, y, "logistic", lam)
    np.testing.assert_allclose(res.coef, ref.coef, atol=1e-8)
    assert res.objective == pytest.approx(ref.objective, rel=1e-10)
    assert np.abs(lasso.coef - ref.coef).max() > 1e-3


def test_class_weight_equals_sample_weight():
    X, y = _sparse_data(n=300, d=40, seed=10)
    a = _quiet(MultiPass(tol=1e-10), StreamProblem(Stream.from_arrays(X, y), "logistic", 0.01, class_weight={1.0: 3.0}))
    b = _quiet(
        MultiPass(tol=1e-10), StreamProblem(Stream.from_arrays(X, y, np.where(y > 0, 3.0, 1.0)), "logistic", 0.01)
    )
    np.testing.assert_allclose(a.coef, b.coef, atol=1e-10)
    assert a.objective == pytest.approx(b.objective, rel=1e-12)


@pytest.mark.parametrize("solver", [MultiPass(tol=1e-10), ReducedMemoryMultiPass(tol=1e-10, max_active=40)])
def test_warm_start_at_solution_certifies_in_one_pass(solver):
    X, y = _sparse_data(n=300, d=40, seed=11)
    ref = _quiet(MultiPass(tol=1e-10), StreamProblem(Stream.from_arrays(X, y), "logistic", 0.01))
    assert ref.n_iter > 2
    res = _quiet(
        solver,
        StreamProblem(Stream.from_arrays(X, y), "logistic", 0.01),
        coef_init=ref.coef,
        intercept_init=ref.intercept,
    )
    assert res.converged and res.n_iter == 1
    np.testing.assert_array_equal(res.coef, ref.coef)


# --------------------------------------------------------------------------- labels and data errors


@pytest.mark.parametrize("labels", [(0.0, 1.0), (3.0, 7.0), (-1.0, 1.0)])
def test_any_two_labels_larger_is_positive(labels):
    X, y = _sparse_data(n=300, d=30, seed=7)
    y2 = np.where(y > 0, labels[1], labels[0])
    problem = StreamProblem(Stream.from_arrays(X, y2), "logistic", 0.01)
    assert problem.positive_class == labels[1]
    res = _quiet(MultiPass(tol=1e-10), problem)
    ref = _cd(X, y, "logistic", 0.01)
    np.testing.assert_allclose(res.coef, ref.coef, atol=1e-8)
    assert res.intercept == pytest.approx(ref.intercept, abs=1e-8)


def test_label_errors():
    X, y = _sparse_data(n=90, d=10, seed=8)
    with pytest.raises(ValueError, match="one class"):
        StreamProblem(Stream.from_arrays(X, np.ones(90)), "logistic", 0.1)
    three = np.arange(90) % 3.0
    with pytest.raises(ValueError, match="positive_class"):
        StreamProblem(Stream.from_arrays(X, three), "probit", 0.1)
    # With positive_class it is one-vs-rest.
    p = StreamProblem(Stream.from_arrays(X, three), "probit", 0.1, positive_class=2.0)
    ys = np.concatenate([c[1] for c in p.chunks()])
    np.testing.assert_array_equal(ys, np.where(three == 2.0, 1.0, -1.0))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("dense", [True, False])
def test_nan_in_x_names_the_rows(bad, dense):
    X, y = _sparse_data(n=100, d=10, seed=9, density=0.5)
    X = X.toarray()
    X[45, 3] = bad
    X = X if dense else sp.csr_matrix(X)
    problem = StreamProblem(Stream.from_arrays(X, y, chunk_rows=20), "logistic", 0.1)
    with pytest.raises(DataFormatError, match=r"rows 40\.\.59"):
        MultiPass().solve(problem)


# --------------------------------------------------------------------------- checkpoints


def _bm_problem(link="probit", seed=0, lam=None):
    X, y = make_bm_simulated(10000, link=link, add_intercept=False, random_state=seed)
    return StreamProblem(Stream.from_arrays(X, y), link, 10.0 / 10000 if lam is None else lam)


def test_checkpoint_written_and_resumed(tmp_path):
    path = tmp_path / "ck.npz"
    first = _quiet(ReducedMemoryMultiPass(max_active=10, checkpoint=path), _bm_problem())
    assert first.converged and path.exists()
    with np.load(path) as z:
        assert {"beta", "b", "active", "next_pass"} <= set(z.files)
        assert int(z["next_pass"]) == first.n_iter  # saved before the certifying pass
    problem = _bm_problem()
    again = _quiet(ReducedMemoryMultiPass(max_active=10, checkpoint=path), problem)
    assert again.n_iter == first.n_iter and again.converged
    np.testing.assert_array_equal(again.coef, first.coef)
    assert again.intercept == first.intercept
    assert len(again.history) == len(first.history)
    assert problem.stream.passes == 2  # the label scan and the one certifying pass
    # A checkpoint of another problem is refused.
    with pytest.raises(ValueError, match="another run"):
        ReducedMemoryMultiPass(max_active=10, checkpoint=path).solve(_bm_problem(lam=20.0 / 10000))
    with pytest.raises(ValueError, match="another run"):
        ReducedMemoryMultiPass(max_active=9, checkpoint=path).solve(_bm_problem())


@pytest.mark.parametrize("solver", [MultiPass, ReducedMemoryMultiPass])
def test_checkpoint_of_unfinished_lam_ratio_run_resumes(tmp_path, solver):
    """A run stopped by max_iter resumes where it stopped, with the lam its first pass resolved."""
    X, y = _sparse_data(n=300, d=60, seed=12)
    path = tmp_path / "ck.npz"

    def problem():
        return StreamProblem(Stream.from_arrays(X, y), "logistic", lam_ratio=0.1)

    with pytest.warns(ConvergenceWarning):
        solver(max_iter=3, checkpoint=path).solve(problem())
    resumed_problem = problem()
    resumed = _quiet(solver(checkpoint=path), resumed_problem)
    fresh_problem = problem()
    fresh = _quiet(solver(), fresh_problem)
    assert resumed_problem.lam == fresh_problem.lam
    assert resumed.n_iter == fresh.n_iter > 3 and len(resumed.history) == len(fresh.history)
    np.testing.assert_allclose(resumed.coef, fresh.coef, rtol=0, atol=1e-12)
    assert resumed_problem.stream.passes == 1 + fresh.n_iter - 2  # resumed at pass 3


_KILL_SCRIPT = textwrap.dedent("""
    import sys, time
    from l1scale.data.stream import Stream
    from l1scale.data.synthetic import make_bm_simulated
    from l1scale.solvers.sketch import ReducedMemoryMultiPass
    from l1scale.problems import StreamProblem

    X, y = make_bm_simulated(10000, link="probit", add_intercept=False, random_state=0)

    def hang(z, history):
        if z >= 3:
            time.sleep(600)  # the parent kills us here

    ReducedMemoryMultiPass(max_active=10, checkpoint=sys.argv[1], callback=hang).solve(
        StreamProblem(Stream.from_arrays(X, y), "probit", 10.0 / 10000))
""")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_killed_run_resumes_from_checkpoint(tmp_path):
    """A run killed with SIGKILL (no chance to clean up) resumes from its last checkpoint
    and ends exactly where an uninterrupted run ends."""
    path = tmp_path / "ck.npz"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILL_SCRIPT, str(path)],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        next_pass = 0
        while next_pass < 3:
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.monotonic() < deadline, "no checkpoint with next_pass >= 3 in time"
            time.sleep(0.05)
            if path.exists():
                with np.load(path) as z:
                    next_pass = int(z["next_pass"])
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with np.load(path) as z:
        assert int(z["next_pass"]) == 3  # the child hung in pass 3's callback, before saving pass 4

    problem = _bm_problem()
    resumed = _quiet(ReducedMemoryMultiPass(max_active=10, checkpoint=path), problem)
    fresh = _quiet(ReducedMemoryMultiPass(max_active=10), _bm_problem())
    assert fresh.n_iter > 3
    assert resumed.converged and resumed.n_iter == fresh.n_iter
    np.testing.assert_allclose(resumed.coef, fresh.coef, rtol=0, atol=1e-12)
    assert resumed.intercept == pytest.approx(fresh.intercept, abs=1e-12)
    assert len(resumed.history) == len(fresh.history)
    np.testing.assert_allclose(resumed.history.objective, fresh.history.objective, rtol=1e-13)
    assert problem.stream.passes == 1 + fresh.n_iter - 2  # passes 1 and 2 were not read again


# --------------------------------------------------------------------------- memory


def _random_chunks(n, d, chunk_rows=2000, nnz_per_row=20):
    """A factory of CSR chunks (fresh, identical iterators), one chunk alive at a time."""
    w = np.zeros(d)
    w[:: d // 40] = 1.0

    def factory():
        for i, r0 in enumerate(range(0, n, chunk_rows)):
            rng = np.random.default_rng(i)
            rows = min(chunk_rows, n - r0)
            X = sp.random(rows, d, density=nnz_per_row / d, random_state=rng, format="csr")
            X.data = rng.normal(size=X.nnz)
            y = np.where(X @ w + 0.5 * rng.normal(size=rows) > 0, 1.0, -1.0)
            yield X, y

    return factory


def _rmmp_peak(n, d):
    problem = StreamProblem(Stream.from_generator(_random_chunks(n, d), n_features=d), "logistic", lam_ratio=0.1)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = ReducedMemoryMultiPass(max_active=100, max_iter=3).solve(problem)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.n_iter == 3 and problem.stream.passes == 4
    return peak


def test_rmmp_memory_does_not_grow_with_n():
    d = 4000
    _rmmp_peak(2000, d)  # warm up: loads the compiled kernels
    small, large = _rmmp_peak(20000, d), _rmmp_peak(200000, d)
    # 200,000 rows x 20 nonzeros would be 64 MB held; one chunk is 0.6 MB.
    assert large < 1.1 * small, (small, large)
    assert large < 8 * 2**20, large
