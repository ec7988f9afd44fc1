"""Repeated columns: found by a sketch and compared entry by entry (``data.memory.repeated_columns``),
left out of CD's solve on wide sparse data with the plain L1 penalty.
The model has the same objective and margins as without them, its weight on the lowest index of
each group, and its certificate holds over every column."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale.data.memory import as_columns, repeated_columns, verified_repeats
from l1scale.exceptions import ConvergenceWarning
from l1scale.path import lam_grid, regularization_path
from l1scale.problems import Problem
from l1scale.solvers.cd import CoordinateDescent

LOSSES = ["logistic", "squared", "squared_hinge", "probit"]


def _with_repeats(loss, n=200, d=300, seed=0, binary=False):
    """Wide sparse data whose columns repeat in groups, some of them in the true model: the
    repeats sit at higher indices than their first copy, and one group is three columns."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.1)
    if binary:
        X = (X != 0.0).astype(np.float64)
    for first, copy in [(0, 150), (1, 151), (1, 290), (2, 200), (7, 42), (9, 299)]:
        X[:, copy] = X[:, first]
    X[:, 60] = 0.0  # an empty column, and another equal to it: neither is a repeat
    X[:, 61] = 0.0
    w = np.zeros(d)
    w[:10] = [1.5, -2.0, 1.0, 0.5, -0.8, 1.2, -0.6, 0.9, 0.3, -1.1]
    z = X @ w + 0.3 * rng.normal(size=n)
    y = z if loss == "squared" else np.where(z > 0, 1.0, -1.0)
    return sp.csc_matrix(X), y


def _exact_groups(X):
    """The lowest index of the column equal to each column (brute force); empty columns: themselves."""
    X = sp.csc_matrix(X)
    X.sort_indices()
    seen, rep = {}, np.arange(X.shape[1])
    for j in range(X.shape[1]):
        start, end = X.indptr[j], X.indptr[j + 1]
        if start == end:
            continue
        key = (X.indices[start:end].tobytes(), X.data[start:end].tobytes())
        rep[j] = seen.setdefault(key, j)
    return rep


def _solve(problem, tol=1e-12, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return CoordinateDescent(tol=tol, max_iter=1000, **kw).solve(problem)


@pytest.mark.parametrize("binary", [False, True])
def test_the_sketch_finds_exactly_the_equal_columns(binary):
    X, y = _with_repeats("logistic", binary=binary)
    problem = Problem(X, y, "logistic", lam_ratio=0.1)
    rep = problem.repeated_columns()
    np.testing.assert_array_equal(rep, _exact_groups(X))
    assert rep[290] == 1 and rep[151] == 1 and rep[61] == 61  # a group of three; empty columns alone
    # Binary columns of equal counts share their dots and norms: the sampled entries tell them apart.
    assert np.count_nonzero(rep != np.arange(rep.shape[0])) == 6


def test_columns_differing_in_one_value_or_one_row_are_not_repeats():
    rng = np.random.default_rng(3)
    X = sp.random(100, 40, density=0.2, random_state=4, format="csc")
    X = X.toarray()
    X[:, 10] = X[:, 3]
    X[:, 11] = X[:, 3]
    X[np.flatnonzero(X[:, 11])[-1], 11] *= 1.0 + 1e-15 * 4  # one value, one ulp or so apart
    X[:, 12] = X[:, 5]
    rows = np.flatnonzero(X[:, 12])
    free = np.setdiff1d(np.arange(100), rows)
    X[free[rng.integers(free.shape[0])], 12], X[rows[0], 12] = X[rows[0], 12], 0.0  # one value moved to another row
    columns = as_columns(sp.csc_matrix(X))
    problem = Problem(sp.csc_matrix(X), np.where(rng.random(100) < 0.5, 1.0, -1.0), "logistic", lam_ratio=0.1)
    rep = repeated_columns(columns, problem.null_gradient(), problem.column_norms())
    assert rep is not None and rep[10] == 3
    assert rep[11] == 11 and rep[12] == 12
    assert np.count_nonzero(rep != np.arange(40)) == 1
    # No repeat at all: None.
    Z = sp.random(50, 30, density=0.3, random_state=5, format="csc")
    pz = Problem(Z, np.where(np.arange(50) % 2, 1.0, -1.0), "logistic", lam_ratio=0.1)
    assert pz.repeated_columns() is None


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_left_out_repeats_give_the_same_optimum_and_a_certificate_over_every_column(loss, fit_intercept):
    X, y = _with_repeats(loss, seed=1)
    weights = np.random.default_rng(2).uniform(0.2, 3.0, size=y.shape[0])
    for lam_ratio, sample_weight in [(0.1, None), (0.01, weights)]:
        p = Problem(X, y, loss, lam_ratio=lam_ratio, fit_intercept=fit_intercept, sample_weight=sample_weight)
        with_repeats_left_out = _solve(p)
        every_column = _solve(p, deduplicate=False)
        res = with_repeats_left_out
        assert res.converged
        P = p.objective(res.coef, res.intercept)
        P_ref = p.objective(every_column.coef, every_column.intercept)
        assert abs(P - P_ref) <= 1e-10 * abs(P_ref)
        # The margins are the optimum's (strictly convex losses in the margin), the weights of a
        # group on its first column, and the repeats at zero.
        if loss != "squared_hinge":
            np.testing.assert_allclose(
                p.margins(res.coef, res.intercept), p.margins(every_column.coef, every_column.intercept), atol=1e-5
            )
        for first, copies in [(0, [150]), (1, [151, 290]), (2, [200]), (7, [42]), (9, [299])]:
            assert np.all(res.coef[copies] == 0.0)
            total = every_column.coef[[first, *copies]].sum()
            assert abs(res.coef[first] - total) <= 1e-5 * (1 + abs(total))
        # The certificate holds for the whole problem, whoever checks it.
        if res.dual_point is not None:
            assert P - p.dual_value(res.dual_point) <= 1e-12 * abs(P) + 1e-15
        else:
            assert p.certificate(res.coef, res.intercept).relative <= 1e-12
        # The loss gradient a path reads: a repeat's is its first copy's, exactly.
        r = p.c * p.loss.derivative(p.y, p.margins(res.coef, res.intercept))
        true = np.asarray(p.X.T @ r).ravel()
        for first, copy in [(0, 150), (2, 200)]:
            assert res.loss_gradient[copy] == res.loss_gradient[first]
            if res.coef[first] != 0.0:
                np.testing.assert_allclose(res.loss_gradient[copy], true[copy], rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("dense", [False, True])
def test_candidates_that_are_not_equal_entry_by_entry_are_undone(dense):
    """The sketch gives candidates; ``verified_repeats`` keeps only the pairs equal entry by entry
    (the same rows and values, bit for bit), so that a solve may leave the repeats out and check
    nothing after: here every column is taken for a copy of one before it."""
    X, _ = _with_repeats("logistic", seed=3)
    columns = as_columns(X.toarray() if dense else X)
    d = X.shape[1]
    claimed = np.maximum(np.arange(d) - 1, 0)  # each column "repeats" the one before it
    for first, copy in [(0, 150), (1, 151), (1, 290), (2, 200), (7, 42), (9, 299)]:
        claimed[copy] = first  # and the true copies their first column
    claimed[61] = 60  # two empty columns: equal, though no solve would leave one out for it
    rep = verified_repeats(columns, claimed.copy())
    expected = _exact_groups(X)
    expected[61] = 60
    np.testing.assert_array_equal(rep, expected)
    # A value one ulp apart, or in another row, is not a repeat.
    Y = X.toarray()
    Y[:, 5] = Y[:, 3]
    Y[np.flatnonzero(Y[:, 5])[0], 5] = np.nextafter(Y[np.flatnonzero(Y[:, 5])[0], 5], np.inf)
    Y[:, 6] = np.roll(Y[:, 3], 1)
    claimed = np.arange(d)
    claimed[[5, 6]] = 3
    assert verified_repeats(as_columns(Y if dense else sp.csc_matrix(Y)), claimed) is None


def test_a_solve_over_exact_repeats_certifies_every_column():
    """With the repeats left out and nothing checked after, the certificate's dual point is
    feasible for every column of the problem, repeats included (their correlations are their
    representatives' to the bit)."""
    X, y = _with_repeats("logistic", seed=3)
    p = Problem(X, y, "logistic", lam_ratio=0.02)
    res = _solve(p)
    assert res.dual_point is not None
    corr = np.abs(np.asarray(p.X.T @ (p.c * res.dual_point)).ravel())
    for first, copies in [(0, [150]), (1, [151, 290]), (2, [200]), (7, [42]), (9, [299])]:
        assert (corr[copies] == corr[first]).all()
    P = p.objective(res.coef, res.intercept)
    assert P - p.dual_value(res.dual_point) <= 1e-12 * abs(P)


def test_not_applied_with_an_l2_term_on_narrow_data_or_when_switched_off():
    X, y = _with_repeats("logistic", seed=4)
    # Elastic net: the optimum splits a group's weight evenly, and the solve keeps every column.
    p = Problem(X, y, "logistic", lam_ratio=0.01, l1_ratio=0.5)
    res = _solve(p)
    for first, copy in [(0, 150), (2, 200)]:
        np.testing.assert_allclose(res.coef[first], res.coef[copy], rtol=1e-6, atol=1e-9)
    # Fewer columns than rows: the same run as with deduplicate=False, bit for bit.
    narrow = sp.vstack([X, X]).tocsc()[:, :150]
    narrow = sp.hstack([narrow, narrow[:, :5]]).tocsc()
    yy = np.r_[y, y]
    q = Problem(narrow, yy, "logistic", lam_ratio=0.05)
    a, b = _solve(q), _solve(q, deduplicate=False)
    np.testing.assert_array_equal(a.coef, b.coef)


def test_a_warm_start_on_repeats_is_folded_onto_their_first_copy():
    X, y = _with_repeats("logistic", seed=5)
    p = Problem(X, y, "logistic", lam_ratio=0.02)
    start = np.zeros(X.shape[1])
    start[150], start[0] = 0.7, -0.2  # weight on a repeat (folded: 0.5 on column 0)
    start[290] = 0.4
    res = CoordinateDescent(tol=1e-12, max_iter=1000).solve(p, coef_init=start)
    ref = _solve(p, deduplicate=False)
    assert res.coef[150] == 0.0 and res.coef[290] == 0.0
    P, P_ref = p.objective(res.coef, res.intercept), p.objective(ref.coef, ref.intercept)
    assert abs(P - P_ref) <= 1e-10 * abs(P_ref)
    assert start[150] == 0.7  # the caller's array is not changed


def test_a_path_leaves_the_repeats_out_at_every_lam():
    X, y = _with_repeats("logistic", seed=6)
    lam_max = Problem(X, y, "logistic", lam=1.0).lam_max()
    lams = lam_grid(lam_max, 12, 1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        path = regularization_path(X, y, lams=lams, tol=1e-10, max_iter=1000)
    for k, lam in enumerate(lams):
        p = Problem(X, y, "logistic", lam=float(lam))
        ref = _solve(p, deduplicate=False)
        coef = path.coefs[k]
        assert coef[150] == 0.0 and coef[290] == 0.0 and coef[200] == 0.0
        P, P_ref = p.objective(coef, path.intercepts[k]), p.objective(ref.coef, ref.intercept)
        assert P - P_ref <= 1e-9 * abs(P_ref)
