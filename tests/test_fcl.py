"""Feature cached loops (seed 4): on feature spaces small enough to materialise, FCL with a
cache of 10% of the full matrix reaches CD's optimum on the materialised matrix (objective
and support) and certifies optimality over every candidate, also when the support's columns
do not fit in the cache (evicted weights are parked and their columns regenerated); writer and trainer threads
running at once give the sequential run's model; the cache's book-keeping holds under
random inserts and evictions; the dual-cached-loops SGD baseline learns within its budget."""

import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _shared_data import DATA, load_svmlight_pm

from l1scale.data.feature_spaces import DNAPatterns, Products
from l1scale.data.sequences import make_splice_sites, splice_sequences
from l1scale.exceptions import ConvergenceWarning
from l1scale.metrics import roc_auc
from l1scale.problems import GeneratedProblem, Problem
from l1scale.solvers import _fcl_kernels as K
from l1scale.solvers.cd import CoordinateDescent
from l1scale.solvers.dcl import DualCachedLoopsSGD
from l1scale.solvers.fcl import FeatureCache, FeatureCachedLoops, parse_bytes


def _reference(Phi, y, lam):
    return CoordinateDescent(tol=1e-13, max_iter=2000).solve(Problem(sp.csc_matrix(Phi), y, lam=lam))


def _ten_percent(Phi):
    return int(0.1 * Phi.nnz * 12)  # 12 bytes per cached nonzero


def _check_against_cd(space, raw, y, ratio, **kw):
    Phi = space.fit(raw).transform(raw)
    lam = ratio * Problem(Phi, y, lam=1.0).lam_max()
    ref = _reference(Phi, y, lam)
    problem = GeneratedProblem(space, raw, y, lam=lam)
    assert problem.lam_max() == pytest.approx(lam / ratio, rel=1e-12)  # one sweep of the space
    solver = FeatureCachedLoops(cache_bytes=_ten_percent(Phi), tol=1e-9, random_state=0, **kw)
    res = solver.solve(problem)
    assert res.converged and res.stop_reason == "kkt" and res.relative_certificate <= 1e-9
    assert abs(res.objective - ref.objective) <= 1e-6 * ref.objective
    assert problem.objective(res.coef, res.intercept) == pytest.approx(res.objective, rel=1e-12)
    np.testing.assert_array_equal(np.flatnonzero(res.coef), np.flatnonzero(ref.coef))
    dense = np.random.default_rng(0).normal(size=problem.n_features)  # margins by blocks (a large support)
    np.testing.assert_allclose(problem.margins(dense, 0.5), Phi @ dense + 0.5, rtol=1e-12, atol=1e-10)
    assert max(row["cached_bytes"] for row in solver.progress_) <= _ten_percent(Phi)
    return res, ref, solver


def test_dna_patterns_on_splice_match_cd_on_the_materialised_matrix():
    X, y = load_svmlight_pm("splice", "splice/splice_scale.bz2", 60)
    codes = splice_sequences(X)
    res, ref, solver = _check_against_cd(DNAPatterns(d=3), codes, y, 0.05)
    assert 5 < res.nnz < 100
    assert solver.progress_[-1]["sweeps"] >= 1 and solver.progress_[-1]["inserted"] >= res.nnz


def test_degree_two_products_on_spambase_match_cd():
    path = os.path.join(DATA, "spambase", "spambase.data.gz")
    if not os.path.exists(path):
        pytest.skip("spambase not found")
    data = np.loadtxt(path, delimiter=",")
    data = data[np.random.default_rng(0).choice(data.shape[0], 1500, replace=False)]  # the file is sorted by class
    X, y = data[:, :-1], np.where(data[:, -1] > 0, 1.0, -1.0)
    X = X / np.maximum(np.abs(X).max(axis=0), 1e-12)  # the products of raw counts span 1e8
    _check_against_cd(Products(degree=2), X, y, 0.1, n_writers=2)


def test_threads_give_the_sequential_model_every_time():
    """Writer and trainer threads share the margins and the cache: run them concurrently many
    times (two writers) and compare with the single-thread run: no lost or corrupted update
    can hide behind a certified optimum."""
    codes, y = make_splice_sites(1500, L=24, random_state=3)
    y[:40] = 1.0  # enough positives for a support of a few dozen patterns
    space = DNAPatterns(d=3).fit(codes)
    problem = GeneratedProblem(space, codes, y, lam_ratio=0.1)
    budget = 3 * _ten_percent(space.transform(codes))
    sequential = FeatureCachedLoops(cache_bytes=budget, tol=1e-10, threads=False, random_state=1).solve(problem)
    assert sequential.converged
    for seed in range(4):
        solver = FeatureCachedLoops(cache_bytes=budget, tol=1e-10, n_writers=2, report_every=0.01, random_state=seed)
        res = solver.solve(problem)
        assert res.converged
        assert res.objective == pytest.approx(sequential.objective, rel=1e-9)
        np.testing.assert_array_equal(np.flatnonzero(res.coef), np.flatnonzero(sequential.coef))
        np.testing.assert_allclose(res.coef, sequential.coef, rtol=0, atol=1e-6)
        # The tracked objective is the one recomputed from scratch: the shared margins were not corrupted.
        assert problem.objective(res.coef, res.intercept) == pytest.approx(res.objective, rel=1e-12)


def _support_fraction(Phi, coef):
    """Bytes of the support's columns over the full matrix's."""
    return np.diff(sp.csc_matrix(Phi).indptr)[np.flatnonzero(coef)].sum() / Phi.nnz


def _check_small_cache(space, raw, y, ratio, **kw):
    """FCL with 10% of the matrix's bytes, where the support's columns take more: any column is
    evicted, weights are parked and come back; still CD's objective and a certificate over all."""
    Phi = space.fit(raw).transform(raw)
    lam = ratio * Problem(Phi, y, lam=1.0).lam_max()
    ref = _reference(Phi, y, lam)
    assert _support_fraction(Phi, ref.coef) > 0.12  # the premise: the optimal support does not fit
    problem = GeneratedProblem(space, raw, y, lam=lam)
    solver = FeatureCachedLoops(cache_bytes=_ten_percent(Phi), tol=1e-9, random_state=0, **kw)
    res = solver.solve(problem)
    assert res.converged and res.stop_reason == "kkt" and res.relative_certificate <= 1e-9
    assert abs(res.objective - ref.objective) <= 1e-6 * ref.objective
    assert problem.objective(res.coef, res.intercept) == pytest.approx(res.objective, rel=1e-12)
    assert problem.certificate(res.coef, res.intercept).relative <= 1e-8  # recomputed over every candidate
    last = solver.progress_[-1]
    assert max(row["cached_bytes"] for row in solver.progress_) <= _ten_percent(Phi)
    assert last["evicted_nonzero"] > 0 and last["parked"] > 0 and last["nnz"] == res.nnz
    assert last["cached_columns"] < res.nnz  # part of the model lives outside the cache
    return res, ref, solver


@pytest.mark.slow
def test_small_cache_on_dna_patterns_with_a_planted_motif_reaches_cd():
    """Issue 16's case: DNA patterns d = 3 of 3,000 random sequences of length 40 with a planted
    motif; the support's columns take 15% of the matrix, the cache 10%."""
    codes, y = make_splice_sites(3000, L=40, d_motif=8, positive_rate=0.1, random_state=0)
    _check_small_cache(DNAPatterns(d=3), codes, y, 0.02, threads=False)


def test_small_cache_on_splice_reaches_cd():
    """The real splice data with pairs of bases (d = 2: at d = 3 the support never takes more than
    10% of the matrix's bytes, whatever lam), support 18% of the bytes, cache 10%; the threads."""
    X, y = load_svmlight_pm("splice", "splice/splice_scale.bz2", 60)
    _check_small_cache(DNAPatterns(d=2), splice_sequences(X), y, 0.01, n_writers=2, max_sweeps=20000)


def test_a_cache_of_a_few_columns_still_certifies_the_optimum():
    """A cache of 3,000 bytes holds a column or two of the 233 of the support, and the longest
    columns not even one: those are updated in place by the writer (CDN steps on the generated
    block) and their weights parked."""
    codes, y = make_splice_sites(1500, L=24, random_state=3)
    y[:40] = 1.0
    space = DNAPatterns(d=3).fit(codes)
    problem = GeneratedProblem(space, codes, y, lam_ratio=0.05)
    ref = _reference(space.transform(codes), y, problem.lam)
    solver = FeatureCachedLoops(cache_bytes=3000, tol=1e-8, threads=False, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solver.solve(problem)
    assert res.converged and res.stop_reason == "kkt"
    assert abs(res.objective - ref.objective) <= 1e-9 * ref.objective
    np.testing.assert_array_equal(np.flatnonzero(res.coef), np.flatnonzero(ref.coef))
    last = solver.progress_[-1]
    assert last["dropped"] > 0 and last["parked"] > 200 and last["cached_bytes"] <= 3000
    capped = FeatureCachedLoops(cache_bytes=3000, tol=1e-8, max_sweeps=3, threads=False, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_sweeps=3"):
        short = capped.solve(problem)
    assert not short.converged and short.stop_reason == "max_iter"


def test_cache_book_keeping_under_random_inserts_and_evictions():
    rng = np.random.default_rng(0)
    cache = FeatureCache(n_candidates=400, cache_bytes=12 * 600, random_state=0)
    truth = {}  # candidate -> column rows
    weights = {}  # candidate -> its nonzero weight, cached or parked
    for step in range(300):
        m = 5
        j0 = int(rng.integers(0, 400 - m))
        lengths = rng.integers(1, 40, size=m)
        indptr = np.r_[0, np.cumsum(lengths)].astype(np.int64)
        rows = np.concatenate([np.sort(rng.choice(100, size=k, replace=False)) for k in lengths]).astype(np.int32)
        vals = rows.astype(np.float64) + 0.5
        cache.add(j0, indptr, rows, vals, list(range(m)))
        for mm in range(m):
            if cache.slot_of[j0 + mm] >= 0 and (j0 + mm) not in truth:
                truth[j0 + mm] = rows[indptr[mm] : indptr[mm + 1]]
        for mm in range(m):  # reinserted with its parked weight, or new with 0
            j = j0 + mm
            if cache.slot_of[j] >= 0 and j in weights:
                assert cache.w[cache.slot_of[j]] == weights.pop(j)
        moved = rng.random(cache.n_slots) < 0.5  # the trainer moves weights
        cache.w[: cache.n_slots][moved] = rng.normal(size=int(moved.sum()))
        if step % 3 == 0 and cache.n_slots:  # the trainer's eviction (of a zero weight)
            s = int(rng.integers(cache.n_slots))
            cache.w[s] = 0.0
            n, freed = K.evict(s, cache.n_slots, cache.start, cache.length, cache.feature, cache.w, cache.slot_of)
            cache.counts[0], cache.counts[1] = n, cache.counts[1] - freed
        cached = {int(j) for j in np.flatnonzero(cache.slot_of >= 0)}
        truth = {j: r for j, r in truth.items() if j in cached}
        for s in range(cache.n_slots):
            if cache.w[s] != 0.0:
                weights[int(cache.feature[s])] = float(cache.w[s])
        weights = {j: w for j, w in weights.items() if j in cached or cache.slot_of[j] <= -2}
        # Every nonzero weight survives: cached, or parked with slot_of = -2 - k.
        parked_j, parked_w = cache.parked
        assert {int(j) for j in parked_j} == {j for j in weights if j not in cached}
        for k, j in enumerate(parked_j):
            assert cache.slot_of[j] == -2 - k and parked_w[k] == weights[int(j)] != 0.0
        np.testing.assert_array_equal(np.flatnonzero(cache.coef(400)), sorted(weights))
        assert cached == set(truth)
        assert cache.counts[1] == sum(len(r) for r in truth.values()) <= cache.capacity
        for s in range(cache.n_slots):
            j = int(cache.feature[s])
            assert cache.slot_of[j] == s
            a, b = cache.start[s], cache.start[s] + cache.length[s]
            np.testing.assert_array_equal(cache.rows[a:b], truth[j])
            np.testing.assert_array_equal(cache.vals[a:b], truth[j] + 0.5)
    assert cache.inserted > 0 and cache.evicted_for_room > 0 and cache.evicted_nonzero > 0


def test_random_eviction_parks_nonzero_weights_and_reinserts_them():
    cache = FeatureCache(n_candidates=50, cache_bytes=12 * 30, random_state=0)
    indptr = np.arange(0, 31, 10, dtype=np.int64)
    rows = np.tile(np.arange(10, dtype=np.int32), 3)
    cache.add(0, indptr, rows, np.ones(30), [0, 1, 2])
    cache.w[:3] = [0.0, 1.5, 0.0]
    cache.add(10, indptr, rows, np.ones(30), [0, 1])  # room for two: the zero-weight columns go first
    assert cache.slot_of[1] >= 0 and cache.w[cache.slot_of[1]] == 1.5
    assert cache.slot_of[0] == -1 and cache.slot_of[2] == -1 and cache.n_slots == 3 and cache.n_parked == 0
    cache.w[: cache.n_slots] = [2.0, -3.0, 4.0]
    weights = dict(zip(cache.feature[:3].tolist(), [2.0, -3.0, 4.0]))
    assert cache.add(20, indptr, rows, np.ones(30), [0]) == (1, [])  # a nonzero column is evicted
    assert cache.n_parked == 1 and cache.evicted_nonzero == 1 and cache.n_slots == 3
    (j,), (w,) = cache.parked
    assert cache.slot_of[j] == -2 and w == weights[j] and cache.weight(j) == w
    assert cache.l1() == pytest.approx(9.0) and cache.coef(50)[j] == w
    k = j % 10  # the parked column comes back with its weight
    assert cache.add(j - k, indptr, rows, np.ones(30), [k]) == (1, [])
    assert cache.w[cache.slot_of[j]] == w and cache.n_parked == 0  # room made by the new zero-weight column 20
    long = np.arange(0, 41, 40, dtype=np.int64)  # a column longer than the whole cache
    assert cache.add(40, long, np.arange(40, dtype=np.int32), np.ones(40), [0]) == (0, [0]) and cache.dropped == 1
    cache.set_uncached_weight(40, 0.5)  # updated in place by the writer: parked
    assert cache.weight(40) == 0.5 and cache.n_parked == 1
    cache.set_uncached_weight(40, 0.0)
    assert cache.slot_of[40] == -1 and cache.n_parked == 0


def test_parse_bytes_and_parameters():
    assert parse_bytes("2GB") == 2 * 10**9 and parse_bytes("1.5GiB") == 3 * 2**29 and parse_bytes(4096) == 4096
    for bad in ("lots", "1XB", 3, -5, 2.5):
        with pytest.raises(ValueError):
            parse_bytes(bad)
    with pytest.raises(ValueError, match="n_writers"):
        FeatureCachedLoops(n_writers=0)
    assert 1 <= FeatureCachedLoops().n_writers <= 5 and FeatureCachedLoops(n_writers=3).n_writers == 3
    codes, y = make_splice_sites(200, L=12, d_motif=4, random_state=0)
    with pytest.raises(ValueError, match="exactly one of lam and lam_ratio"):
        GeneratedProblem(DNAPatterns(d=2), codes, y)
    with pytest.raises(ValueError, match="not smooth"):
        GeneratedProblem(DNAPatterns(d=2), codes, y, "hinge", lam=0.1)
    with pytest.raises(ValueError, match="no warm start"):
        FeatureCachedLoops().solve(GeneratedProblem(DNAPatterns(d=2), codes, y, lam=0.1), np.zeros(3))


def test_cdn_step_decreases_the_objective_and_reaches_the_one_variable_optimum():
    rng = np.random.default_rng(1)
    n = 300
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    c = np.full(n, 1.0 / n)
    x = rng.normal(size=n)
    z = 0.2 * rng.normal(size=n)
    r, D, lv = np.empty(n), np.empty(n), np.empty(n)
    K.row_state(0, y, c, z, r, D, lv)
    rows, vals, lam1, w = np.arange(n, dtype=np.int32), x, 0.002, 0.0
    start = lv.sum()
    for _ in range(60):
        w, _, _, _ = K.cdn_update(0, y, c, z, r, D, lv, rows, vals, 0, n, w, lam1)
    g, _ = K.column_gradient(rows, vals, 0, n, r, D)
    assert K.violation(g, w, lam1) < 1e-12 and w != 0.0
    assert lv.sum() + lam1 * abs(w) < start
    # The maintained row state is the one recomputed from the margins.
    r2, D2, lv2 = np.empty(n), np.empty(n), np.empty(n)
    K.row_state(0, y, c, z, r2, D2, lv2)
    np.testing.assert_allclose(r, r2, rtol=1e-13, atol=0)
    np.testing.assert_allclose(lv, lv2, rtol=1e-13, atol=0)


def test_dual_cached_loops_sgd_learns_within_its_budget():
    codes, y = make_splice_sites(3000, L=24, random_state=2)
    y[:60] = 1.0
    space = DNAPatterns(d=3)
    problem = GeneratedProblem(space, codes, y, lam_ratio=0.05)
    Phi = space.transform(codes)
    budget = int(0.2 * Phi.nnz * 16)
    solver = DualCachedLoopsSGD(cache_bytes=budget, max_epochs=30, snapshot_every=0.0, random_state=0)
    res = solver.solve(problem)
    assert solver.eta0_ == pytest.approx(1.0 / (22 * 4))  # 1 / ||phi(x)||^2: 22 positions, 4 patterns each
    steps = [s["steps"] for s in solver.snapshots_]
    assert steps[-1] >= 30 * 3000 and steps == sorted(steps)
    start = problem.objective(np.zeros(problem.n_features), problem.intercept_only())
    # Noisy iterates, but clearly learning: the best snapshot, and the ranking of the last one.
    objectives = [problem.objective(solver.snapshot_coef(i), s["intercept"]) for i, s in enumerate(solver.snapshots_)]
    assert min(objectives) < start - 0.005
    assert roc_auc(y, problem.margins(res.coef, res.intercept)) > 0.75
    assert 0 < res.nnz < problem.n_features and res.stop_reason == "max_iter"
    assert solver.snapshots_[-1]["indices"].shape == (res.nnz,)  # sparse snapshots
    timed = DualCachedLoopsSGD(cache_bytes=budget, max_epochs=1e9, max_time=0.2).solve(problem)
    assert timed.stop_reason == "max_time"
    with pytest.raises(TypeError):
        solver.solve(Problem(Phi, y, lam=0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DualCachedLoopsSGD(cache_bytes=budget, max_epochs=1).solve(problem)


# --------------------------------------------------------------------------- the estimators


def test_estimator_on_sequences_fits_predicts_saves_and_matches_cd(tmp_path):
    from l1scale import SparseLogisticRegression, load
    from l1scale.data import decode_sequences

    codes, y = make_splice_sites(2500, L=30, positive_rate=0.05, random_state=0)
    seqs, labels = decode_sequences(codes), np.where(y > 0, "site", "none")
    fcl = SparseLogisticRegression(
        features=DNAPatterns(d=3), cache_bytes="2MB", lam_ratio=0.05, tol=1e-9, random_state=0
    ).fit(seqs[:2000], labels[:2000])
    assert fcl.solver_ == "fcl" and fcl.result_.converged and fcl.coef_.shape == (1, 28 * 100)
    assert fcl.n_features_in_ == 30 and list(fcl.classes_) == ["none", "site"]
    cd = SparseLogisticRegression(solver="cd", features=DNAPatterns(d=3), lam_ratio=0.05, tol=1e-12)
    cd.fit(codes[:2000], labels[:2000])  # codes or strings: the same sequences
    assert fcl.result_.objective == pytest.approx(cd.result_.objective, rel=1e-7)
    # The patterns X?? at one position sum to the intercept's column: the optimal coef need not be
    # unique, the margins are.
    np.testing.assert_allclose(fcl.decision_function(seqs), cd.decision_function(seqs), atol=1e-3)
    assert fcl.score(seqs[2000:], labels[2000:]) > 0.9
    planted = {fcl.features_.describe(j) for j in np.flatnonzero(fcl.coef_[0])}
    assert any(name.startswith("15:AG") for name in planted)  # the planted acceptor "AG" at L // 2
    path = tmp_path / "splice.l1s"
    fcl.save(path)
    again = load(path)
    np.testing.assert_array_equal(again.decision_function(seqs[2000:]), fcl.decision_function(codes[2000:]))
    np.testing.assert_array_equal(again.predict(seqs[2000:]), fcl.predict(seqs[2000:]))


def test_estimator_parameters_and_other_spaces():
    from sklearn.datasets import load_iris

    from l1scale import SparseLinearRegression, SparseLogisticRegression
    from l1scale.data import RandomFourier

    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(300, 4))
    target = Z[:, 0] * Z[:, 1] + 0.5 * Z[:, 2] + 0.1 * rng.normal(size=300)
    classes = np.digitize(target, np.quantile(target, [1 / 3, 2 / 3]))  # three classes of a product
    multi = SparseLogisticRegression(
        features=Products(degree=2), lam_ratio=0.02, cache_bytes="1MB", random_state=0
    ).fit(Z, classes)
    assert multi.coef_.shape == (3, 14) and multi.score(Z, classes) > 0.8
    assert all(r.converged for r in multi.result_)
    reg = SparseLinearRegression(
        features=Products(degree=2), lam_ratio=0.01, cache_bytes="1MB", tol=1e-8, random_state=0
    ).fit(Z, target)
    ref = SparseLinearRegression(solver="cd", features=Products(degree=2), lam_ratio=0.01, tol=1e-12).fit(Z, target)
    assert reg.result_.converged
    np.testing.assert_allclose(reg.predict(Z), ref.predict(Z), atol=1e-6)
    assert reg.features_.describe(int(np.argmax(np.abs(reg.coef_)))) == "x0*x1"
    with pytest.raises(ValueError, match="features="):
        SparseLogisticRegression(solver="fcl").fit(X, y)
    with pytest.raises(ValueError, match="raw inputs in memory"):
        SparseLogisticRegression(solver="rmmp", features=Products()).fit(X, y)
    unseeded = SparseLogisticRegression(solver="cd", features=RandomFourier(n_components=20), lam_ratio=0.1)
    with pytest.raises(ValueError, match="random_state"):
        unseeded.fit(X, y).save("/nonexistent/never-written.l1s")


# --------------------------------------------------------------------------- the command line


def test_cli_trains_fcl_on_a_sequence_file_and_the_model_predicts(tmp_path):
    import json

    from click.testing import CliRunner

    from l1scale.cli import main
    from l1scale.data import dump_sequences

    codes, y = make_splice_sites(2000, L=24, positive_rate=0.05, random_state=1)
    dump_sequences(tmp_path / "train.txt", codes[:1500], y[:1500])
    dump_sequences(tmp_path / "test.txt", codes[1500:], y[1500:])
    runner = CliRunner()
    model = tmp_path / "m.l1s"
    out = runner.invoke(
        main,
        [
            "train",
            "--solver",
            "fcl",
            "--features",
            "dna:3",
            "--cache",
            "1MB",
            "--lam-ratio",
            "0.05",
            "--seed",
            "0",
            "--test",
            str(tmp_path / "test.txt"),
            "-o",
            str(model),
            "--json",
            str(tmp_path / "train.txt"),
        ],
    )
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)
    assert summary["solver"] == "fcl" and summary["converged"] and summary["params"]["features"] == "dna:3"
    assert summary["data"]["n_features"] == 22 * 100 and summary["fcl"]["cache_bytes"] == 10**6
    assert summary["test"]["auprc"] > 0.3 and summary["top_features"][0]["feature"].startswith("12:")
    assert "cached" in out.stderr.splitlines()[0]  # the progress table: cache size, inserted, evicted, sweeps
    pred = runner.invoke(main, ["predict", str(model), str(tmp_path / "test.txt")])
    assert pred.exit_code == 0
    from l1scale import load

    np.testing.assert_array_equal(np.array(pred.stdout.split(), dtype=float), load(model).predict(codes[1500:]))
    for args, message in (
        (["--features", "dna:3", "--passes", "2"], "--passes"),
        (["--features", "dna:x"], "not a feature space"),
        (["--features", "dna:3", "--cache", "lots"], "memory size"),
        (["--solver", "fcl"], "give --features"),
    ):
        bad = runner.invoke(main, ["train", *args, str(tmp_path / "train.txt")])
        assert bad.exit_code == 2 and message in bad.output
    (tmp_path / "bad.txt").write_text("+1 ACGT\n-1 ACXT\n")
    bad = runner.invoke(main, ["train", "--features", "dna:2", str(tmp_path / "bad.txt")])
    assert bad.exit_code != 0 and "bad.txt" in bad.output and ":2" in bad.output
