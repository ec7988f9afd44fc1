"""The problem protocol (:class:`l1scale.problems.base.ProblemLike`): every problem declares its kind and
whether it is distributed instead of being recognised by its methods, and answers what a solver may
ask (objective, lam_max, certificate); the streamed and the generated problems agree with the problem
held in memory on the same data. (The Dask problem: tests/test_distributed.py.)"""

import numpy as np
import pytest
import scipy.sparse as sp

import l1scale
from l1scale.data import Products, Stream
from l1scale.problems import KINDS, GeneratedProblem, Problem, ProblemLike, StreamProblem
from l1scale.solvers.sgd import CumulativePenaltySGD
from l1scale.solvers.truncated import TruncatedGradient


def _data(loss="logistic", n=160, d=9, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.5, format="csr", random_state=seed)
    X.data = rng.normal(size=X.nnz)
    z = X @ rng.normal(size=d) + 0.4 + 0.3 * rng.normal(size=n)
    y = z if loss == "squared" else np.where(z > 0, 1.0, -1.0)
    s = rng.uniform(0.5, 2.0, size=n)
    w = np.where(rng.random(d) < 0.5, rng.normal(size=d), 0.0)
    return X, y, s, w


def _kkt(problem, w, b):
    """The KKT violation of a problem in memory at (w, b), as the streamed problems certify."""
    z = problem.X @ w + b
    u = problem.c * problem.loss.derivative(problem.y, z)
    viol = float(np.max(problem.penalty.subdifferential_distance(w, problem.X.T @ u), initial=0.0))
    return max(viol, abs(float(u.sum()))) if problem.fit_intercept else viol


def test_every_problem_declares_its_kind_and_meets_the_protocol():
    X, y, s, _ = _data()
    problems = [
        Problem(X, y, lam=0.01),
        StreamProblem(Stream.from_arrays(X, y), lam=0.01),
        StreamProblem(Stream.from_arrays(X, y), lam=0.01, classes=[-1, 1]),  # no label pass yet
        GeneratedProblem(Products(degree=2), X.toarray(), y, lam=0.01),
    ]
    for problem, kind in zip(problems, ("memory", "stream", "stream", "generated")):
        assert isinstance(problem, ProblemLike), type(problem).__name__
        assert problem.kind == kind and kind in KINDS and problem.distributed is False
        assert problem.l1_ratio == 1.0 and problem.lam == 0.01 and problem.penalty.lam == 0.01
    assert l1scale.Problem is Problem and l1scale.StreamProblem is StreamProblem  # the public names


@pytest.mark.parametrize("loss", ["logistic", "probit", "squared"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_stream_problem_answers_as_the_problem_in_memory(loss, fit_intercept):
    X, y, s, w = _data(loss)
    kw = dict(lam=0.03, l1_ratio=0.7, fit_intercept=fit_intercept)
    memory = Problem(X, y, loss, sample_weight=s, **kw)
    stream = StreamProblem(Stream.from_arrays(X, y, s, chunk_rows=37), loss, **kw)
    b = 0.2 if fit_intercept else 0.0
    assert stream.objective(w, b) == pytest.approx(memory.objective(w, b), rel=1e-12)
    assert stream.lam_max() == pytest.approx(memory.lam_max(), rel=1e-9)
    cert = stream.certificate(w, b)
    assert cert.name == "kkt" and cert.value == pytest.approx(_kkt(memory, w, b), rel=1e-10)
    assert cert.relative == pytest.approx(cert.value / (0.03 * 0.7), rel=1e-12)
    assert cert.objective == pytest.approx(memory.objective(w, b), rel=1e-12)
    if loss == "probit":  # no conjugate: the problem in memory certifies by the KKT violation too
        assert cert.value == pytest.approx(memory.certificate(w, b).value, rel=1e-10)
    # The duality gap over the chunks (two passes) is the one in memory, at the intercept optimal for w.
    gap, b_star = stream.duality_gap(w, b)
    expected = memory.certificate(w, b)
    assert gap.name == expected.name and gap.value == pytest.approx(expected.value, rel=1e-9, abs=1e-14)
    assert gap.objective == pytest.approx(expected.objective, rel=1e-12)
    if fit_intercept and loss != "probit":
        assert b_star == pytest.approx(memory.optimal_intercept(X @ w, b), rel=1e-10)
        assert memory.objective(w, b_star) <= memory.objective(w, b)
    else:
        assert b_star == b


def test_the_stream_duality_gap_weights_each_class_as_the_stream_does():
    """Class weights and the positive class: the gap over the chunks is the in-memory problem's
    with the labels and weights the chunks give."""
    X, y, s, w = _data()
    labels = np.where(y > 0, 7.0, 3.0)
    stream = StreamProblem(
        Stream.from_arrays(X, labels, s, chunk_rows=50), lam=0.02, positive_class=3.0, class_weight={7.0: 2.5}
    )
    memory = Problem(
        X, np.where(labels == 3.0, 1.0, -1.0), lam=0.02, sample_weight=s * np.where(labels == 7.0, 2.5, 1.0)
    )
    gap, b_star = stream.duality_gap(w, -0.1)
    assert gap.relative == pytest.approx(memory.certificate(w, -0.1).relative, rel=1e-9)
    assert b_star == pytest.approx(memory.optimal_intercept(X @ w, -0.1), rel=1e-10)


def test_a_stream_resolves_lam_ratio_and_declared_classes_before_answering():
    X, y, s, w = _data()
    memory = Problem(X, y, lam_ratio=0.2)
    by_ratio = StreamProblem(Stream.from_arrays(X, y, chunk_rows=50), lam_ratio=0.2)
    assert by_ratio.penalty is None
    assert by_ratio.objective(w, 0.1) == pytest.approx(memory.objective(w, 0.1), rel=1e-9)  # lam_max's pass first
    assert by_ratio.lam == pytest.approx(memory.lam, rel=1e-9)
    declared = StreamProblem(Stream.from_arrays(X, y, chunk_rows=50), lam=0.01, classes=[-1, 1])
    assert declared.n_samples is None
    assert declared.objective(w, 0.1) == pytest.approx(Problem(X, y, lam=0.01).objective(w, 0.1), rel=1e-12)
    assert declared.n_samples == X.shape[0]  # its first pass made the scan


def test_the_generated_problem_answers_as_its_columns_held_in_memory():
    X, y, _, _ = _data(n=120, d=6)
    raw = X.toarray()
    space = Products(degree=2)
    generated = GeneratedProblem(space, raw, y, lam_ratio=0.3)
    Phi = space.transform(raw)
    memory = Problem(Phi, y, lam_ratio=0.3)
    assert generated.lam_max() == pytest.approx(memory.lam_max(), rel=1e-10)
    assert generated.lam == pytest.approx(memory.lam, rel=1e-10)
    rng = np.random.default_rng(1)
    coef = np.where(rng.random(Phi.shape[1]) < 0.3, rng.normal(size=Phi.shape[1]), 0.0)
    assert generated.objective(coef, 0.1) == pytest.approx(memory.objective(coef, 0.1), rel=1e-12)
    cert = generated.certificate(coef, 0.1)
    assert cert.name == "kkt" and cert.value == pytest.approx(_kkt(memory, coef, 0.1), rel=1e-10)
    assert cert.relative == pytest.approx(cert.value / generated.lam, rel=1e-12)


@pytest.mark.parametrize("solver", [TruncatedGradient, CumulativePenaltySGD])
def test_online_solvers_report_the_objective_the_protocol_offers(solver):
    """``compute_objective=True`` asks the stream problem for P at the weights returned (an
    AttributeError before the protocol gave StreamProblem an objective)."""
    X, y, _, _ = _data()
    problem = StreamProblem(Stream.from_arrays(X, y, chunk_rows=40), lam=0.01)
    res = solver(max_iter=2, compute_objective=True).solve(problem)
    assert np.isfinite(res.objective) and res.history.objective[-1] == res.objective
    assert res.objective == pytest.approx(Problem(X, y, lam=0.01).objective(res.coef, res.intercept), rel=1e-12)
