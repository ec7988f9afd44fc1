"""Declared classes: a streamed binary fit without its label pass (issue 13, "input from
pipes": one pass of truncated gradient or the Online algorithm reads a pipe once).

The problem counts during the first pass what the label pass would have found, so the fit
of a one-pass solver equals the scanned fit (unweighted data: the weights' mean is 1 either
way), and every solver that needs n, W, b0 or lam_max before its first pass refuses it."""

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale import SparseLogisticRegression, StreamProblem
from l1scale.data import Chunk, Stream, dump_svmlight
from l1scale.exceptions import DataFormatError
from l1scale.problems import scan_stream
from l1scale.solvers import SOLVERS


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = sp.random(900, 40, density=0.15, random_state=rng, format="csr")
    y = np.where(X @ rng.standard_normal(40) + 0.2 * rng.standard_normal(900) > 0, 3.0, 7.0)
    return X, y


def _once(X, y, chunk_rows=200):
    """A Stream that can be read only once (as a pipe): a second pass raises."""
    reads = []

    def factory():
        if reads:
            raise RuntimeError("read twice")
        reads.append(1)
        return (Chunk(X[i : i + chunk_rows], y[i : i + chunk_rows]) for i in range(0, X.shape[0], chunk_rows))

    return Stream.from_generator(factory, n_features=X.shape[1])


def _tg(holdout=0, schedule="paper"):
    # The fixed rule: a rate calibrated on the data (schedule="auto") comes from a sample of the
    # whole stream after a label scan, from the first chunk without one, so the two fits agree
    # only on a fixed rate.
    return SOLVERS["truncated_gradient"](max_iter=1, holdout=holdout, schedule=schedule)


def test_a_calibrated_rate_comes_from_the_first_chunk_of_a_stream_read_once(data):
    X, y = data
    solver = _tg(schedule="auto")
    declared = SparseLogisticRegression(solver=solver, lam=1e-3)
    declared.fit(_once(X, y), classes=[7, 3])  # the calibration must not read the stream again
    rate = solver.eta0  # the rate it chose
    assert np.isfinite(rate) and rate > 0
    assert np.mean(declared.predict(X) == y) > 0.8
    again = SparseLogisticRegression(solver=_tg(schedule="auto"), lam=1e-3).fit(_once(X, y), classes=[7, 3])
    np.testing.assert_array_equal(again.coef_, declared.coef_)


@pytest.mark.parametrize("holdout", [0, 5])
def test_one_pass_over_declared_classes_equals_the_scanned_fit(data, holdout):
    X, y = data
    scanned = SparseLogisticRegression(solver=_tg(holdout=holdout), lam=1e-3)
    scanned.fit(Stream.from_arrays(X, y, chunk_rows=200))
    declared = SparseLogisticRegression(solver=_tg(holdout=holdout), lam=1e-3)
    declared.fit(_once(X, y), classes=[7, 3])  # read once: a label pass would fail
    np.testing.assert_array_equal(declared.coef_, scanned.coef_)
    np.testing.assert_array_equal(declared.intercept_, scanned.intercept_)
    np.testing.assert_array_equal(declared.classes_, [3.0, 7.0])
    for got, want in zip(declared.stream_scan_, scanned.stream_scan_):
        np.testing.assert_array_equal(got, want)
    assert declared.n_features_in_ == 40
    np.testing.assert_array_equal(declared.predict(X), scanned.predict(X))


def test_the_online_algorithm_learns_from_declared_classes(data):
    # Its linear schedule starts at min(gamma_start / lam, W): W unknown, the same here (100 < 900).
    X, y = data
    est = SparseLogisticRegression(solver="online", lam=1e-2).fit(_once(X, y), classes=[3, 7])
    scanned = SparseLogisticRegression(solver="online", lam=1e-2).fit(Stream.from_arrays(X, y, chunk_rows=200))
    assert est.stream_scan_.n_samples == 900 and np.count_nonzero(est.coef_) > 0
    np.testing.assert_array_equal(est.coef_, scanned.coef_)


def test_the_problem_counts_its_scan_during_the_first_pass(data):
    X, y = data
    w = np.linspace(0.5, 2.0, 900)
    problem = StreamProblem(Stream.from_arrays(X, y, w, chunk_rows=250), lam=0.1, classes=[3, 7])
    assert problem.scan is None and problem.n_samples is None and problem.weight_sum is None
    for _ in problem.chunks():
        pass
    reference = scan_stream(Stream.from_arrays(X, y, w, chunk_rows=250))
    for got, want in zip(problem.scan, reference):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert problem.n_samples == 900 and problem.weight_sum == pytest.approx(w.sum())


def test_a_label_outside_the_declared_classes_names_its_row(data):
    X, y = data
    y = y.copy()
    y[613] = 5.0
    est = SparseLogisticRegression(solver=_tg(), lam=1e-3)
    with pytest.raises(DataFormatError, match=r"row 613 has label 5.0, not among the declared classes \[3.0, 7.0\]"):
        est.fit(Stream.from_arrays(X, y, chunk_rows=200), classes=[3, 7])


@pytest.mark.parametrize("solver", ["rmmp", "mp", "sgd_cumulative", "smidas"])
def test_solvers_that_need_the_label_pass_refuse_declared_classes(data, solver):
    X, y = data
    with pytest.raises(ValueError, match="needs the label pass"):
        SparseLogisticRegression(solver=solver, lam=1e-3, max_iter=2).fit(Stream.from_arrays(X, y), classes=[3, 7])


@pytest.mark.parametrize(
    ("kw", "classes", "message"),
    [
        ({"lam_ratio": 0.1}, [3, 7], "need lam"),
        ({"lam": 1e-3}, [3, 7, 9], "two labels"),
        ({"lam": 1e-3, "class_weight": "balanced"}, [3, 7], "class counts"),
    ],
)
def test_declared_classes_refuse_what_needs_a_pass(data, kw, classes, message):
    X, y = data
    with pytest.raises(ValueError, match=message):
        SparseLogisticRegression(solver=_tg(), **kw).fit(Stream.from_arrays(X, y), classes=classes)


def test_declared_classes_need_the_width_and_a_stream(data, tmp_path):
    X, y = data
    dump_svmlight(X, y, tmp_path / "d.svm")
    with pytest.raises(ValueError, match="give n_features"):
        SparseLogisticRegression(solver=_tg(), lam=1e-3).fit(Stream.from_svmlight(tmp_path / "d.svm"), classes=[3, 7])
    est = SparseLogisticRegression(solver=_tg(), lam=1e-3)
    est.fit(Stream.from_svmlight(tmp_path / "d.svm", n_features=40), classes=[3, 7])
    assert est.stream_scan_.n_samples == 900
    with pytest.raises(ValueError, match="Stream or path X"):
        SparseLogisticRegression(solver=_tg(), lam=1e-3).fit(X, y, classes=[3, 7])
