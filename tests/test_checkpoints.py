"""Resumable solves (issue 13, "every multi-pass solver resumable"): each multi-pass solver,
killed with SIGKILL in the middle of a run, resumes from its checkpoint and ends with the
coefficients of an uninterrupted run, bit for bit; a checkpoint of other data or other
parameters is refused; and the divergence checks of defect 2 (an entry of 1e300 in X)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _checkpoint_cases import CENTRED, SCD_CENTRED, SCD_PAIRS, data, problem, solve, solver

from l1scale import SparseLogisticRegression
from l1scale.checkpoint import Checkpoint, problem_fingerprint
from l1scale.data.stream import Stream
from l1scale.exceptions import CheckpointError, ConvergenceWarning, DivergenceError
from l1scale.problems import Problem, StreamProblem
from l1scale.solvers import SOLVERS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

IN_MEMORY = ["cd", "fista", "ista", "multiscale_fista", "cgd", "scd", "detcd"]
ONLINE = ["smidas", "truncated_gradient", "sgd_cumulative"]
STREAMING = ["mp", "rmmp"]

_KILLED = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, sys.argv[4])
    from _checkpoint_cases import solve
    name, path, at = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def die(it, history):
        if it >= at:
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no flush: as a crash or an OOM kill

    solve(name, checkpoint=path, callback=die)
    print("not killed")
""")


def _env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}


def _temporaries(directory):
    return [f for f in os.listdir(directory) if f.endswith(".tmp")]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
@pytest.mark.parametrize("name", IN_MEMORY + ONLINE + [CENTRED, SCD_CENTRED, SCD_PAIRS] + STREAMING)
def test_killed_run_resumes_to_the_uninterrupted_result(tmp_path, name):
    """SIGKILL after a few iterations / passes; the resumed run ends where an uninterrupted one
    ends: the same coefficients, intercept, iteration count and History objective, bit for bit."""
    fresh = solve(name)
    assert fresh.n_iter > 3
    at = 3
    path = tmp_path / "run.ckpt"
    child = subprocess.run(
        [sys.executable, "-c", _KILLED, name, str(path), str(at), os.path.dirname(__file__)],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    assert path.exists()
    resumed_problem = problem(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        resumed = solver(name, checkpoint=path).solve(resumed_problem)
    np.testing.assert_array_equal(resumed.coef, fresh.coef)
    assert resumed.intercept == fresh.intercept
    assert resumed.n_iter == fresh.n_iter
    assert len(resumed.history) == len(fresh.history)
    np.testing.assert_array_equal(np.asarray(resumed.history.objective), np.asarray(fresh.history.objective))
    if name in ONLINE + [CENTRED] + STREAMING:
        # passes 1..at were not read again: the label scan, then the passes after the checkpoint
        assert resumed_problem.stream.passes < 1 + fresh.n_iter
    # and a finished run's checkpoint gives the same model again
    again = solve(name, checkpoint=path)
    np.testing.assert_array_equal(again.coef, fresh.coef)
    assert _temporaries(tmp_path) == []


@pytest.mark.parametrize("name", ["cd", "fista", "cgd", "scd", "sgd_cumulative", "rmmp"])
def test_checkpoint_of_another_run_is_refused(tmp_path, name):
    path = tmp_path / "ck"
    solve(name, checkpoint=path)
    # another solver parameter
    other = {
        "cd": {"random_state": 4},
        "fista": {"backtrack": 0.3},
        "cgd": {"sigma": 0.2},
        "scd": {"random_state": 4},
        "sgd_cumulative": {"eta0": 0.4},
        "rmmp": {"max_active": 19},
    }[name]
    changed_solver = solver(name, checkpoint=path)
    for key, value in other.items():
        setattr(changed_solver, key, value)
    with pytest.raises(CheckpointError, match="another run") as info:
        changed_solver.solve(problem(name))
    assert str(path) in str(info.value)
    # other data: one label flipped
    X, y = data()
    y = y.copy()
    y[0] = -y[0]
    changed = (
        StreamProblem(Stream.from_arrays(X, y, chunk_rows=50), "logistic", lam_ratio=0.05)
        if name in ONLINE + STREAMING
        else Problem(X, y, "logistic", lam_ratio=0.05)
    )
    with pytest.raises(CheckpointError, match="another run"):
        solver(name, checkpoint=path).solve(changed)
    # tol and max_iter may change: the run resumes
    resumed = solver(name, checkpoint=path)
    resumed.max_iter += 5
    if hasattr(resumed, "tol"):
        resumed.tol = 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        resumed.solve(problem(name))


def test_a_cd_checkpoint_without_an_entry_added_since_resumes(tmp_path):
    """A CD checkpoint written before an entry of its loop state existed (``gram_factorised``,
    added 2026-12-01; ``_cd_state._LOOP_ADDED``) resumes with that entry's default: the same model
    as the run that wrote it. Any other missing entry is refused by name."""
    path = tmp_path / "run.ckpt"
    fresh = solve("cd", checkpoint=path)
    with np.load(path, allow_pickle=False) as saved:
        entries = {name: saved[name] for name in saved.files}
    for dropped, refused in (("gram_factorised", False), ("newton_spent", True)):
        older = tmp_path / f"without_{dropped}.ckpt"
        kept = {name: value for name, value in entries.items() if name != dropped}
        manifest = json.loads(bytes(kept["manifest"]).decode())
        del manifest[dropped]  # as the older solver wrote it: the manifest lists its members
        kept["manifest"] = np.frombuffer(json.dumps(manifest, sort_keys=True).encode(), dtype=np.uint8)
        with open(older, "wb") as f:
            np.savez(f, **kept)
        if refused:
            with pytest.raises(CheckpointError, match=dropped):
                solver("cd", checkpoint=older).solve(problem("cd"))
            continue
        np.testing.assert_array_equal(solver("cd", checkpoint=older).solve(problem("cd")).coef, fresh.coef)


def test_the_fingerprint_does_not_depend_on_the_index_type():
    """A layout keeps int32 or int64 indices as given (data.memory.index_dtype): the same data
    must give the same fingerprint either way, so that a checkpoint resumes; other data must not."""
    X, y = data()
    A = sp.csc_matrix(X)
    wide = A.copy()
    wide.indices, wide.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
    fingerprints = [problem_fingerprint(Problem(M, y, "logistic", lam_ratio=0.05)) for M in (A, wide)]
    assert Problem(A, y, "logistic", 0.1).columns.indices.dtype == np.int32
    assert Problem(wide, y, "logistic", 0.1).columns.indices.dtype == np.int64
    assert fingerprints[0] == fingerprints[1]
    A.data[0] += 1.0  # other data
    assert problem_fingerprint(Problem(A, y, "logistic", lam_ratio=0.05))["data_crc32"] != fingerprints[0]["data_crc32"]


def test_checkpoint_interval_throttles_the_writes(tmp_path):
    path = tmp_path / "ck"
    writes = []
    original = Checkpoint.save

    def counting(self, state):
        writes.append(1)
        return original(self, state)

    Checkpoint.save = counting
    try:
        result = solve("fista", checkpoint=path, checkpoint_interval=3600.0)
    finally:
        Checkpoint.save = original
    assert result.n_iter > 3 and len(writes) == 1  # the first iteration only: then the interval holds


def test_estimator_checkpoints_each_binary_problem(tmp_path):
    """One-vs-rest: one file per binary problem (PATH.0, PATH.1, ...); the refit resumes from
    them and gives the same model."""
    X, y = data()
    y3 = np.where(y > 0, 2, 0)
    y3[::5] = 1
    path = tmp_path / "m.ckpt"
    est = SparseLogisticRegression(solver="cd", lam_ratio=0.05, tol=1e-10, checkpoint=path).fit(X, y3)
    assert sorted(os.listdir(tmp_path)) == ["m.ckpt.0", "m.ckpt.1", "m.ckpt.2"]
    again = SparseLogisticRegression(solver="cd", lam_ratio=0.05, tol=1e-10, checkpoint=path).fit(X, y3)
    np.testing.assert_array_equal(again.coef_, est.coef_)
    plain = SparseLogisticRegression(solver="cd", lam_ratio=0.05, tol=1e-10).fit(X, y3)
    np.testing.assert_array_equal(plain.coef_, est.coef_)
    # the online solvers through the estimator, on a path
    with pytest.raises(ValueError, match="checkpoint= is not supported by solver='online'"):
        SparseLogisticRegression(solver="online", checkpoint=path).fit(X, y)


def test_two_stage_keeps_its_own_checkpoint(tmp_path):
    X, y = data()
    path = tmp_path / "m.ckpt"
    est = SparseLogisticRegression(solver="fista", lam_ratio=0.05, two_stage=0.5, tol=1e-4, checkpoint=path).fit(X, y)
    assert sorted(os.listdir(tmp_path)) == ["m.ckpt", "m.ckpt.stage2"]
    again = SparseLogisticRegression(solver="fista", lam_ratio=0.05, two_stage=0.5, tol=1e-4, checkpoint=path).fit(X, y)
    np.testing.assert_array_equal(again.coef_, est.coef_)


# ----------------------------------------------------------------------------- defect 2: 1e300 in X


def _huge():
    X, y = data()
    X = X.tolil()
    X[0, 0] = 1e300
    return X.tocsr(), y


@pytest.mark.parametrize("name", ["sgd_cumulative", "truncated_gradient", "smidas"])
def test_online_solvers_report_diverged_weights(name):
    """They returned weights of 1e299 without a word (defect 2): now a DivergenceError that says
    the weights diverged and what to do."""
    X, y = _huge()
    with pytest.raises(DivergenceError, match=r"diverged.*(?s:.)*[Ss]cale the features"):
        SparseLogisticRegression(solver=name, lam_ratio=0.1).fit(X, y)


@pytest.mark.parametrize("name", ["fista", "ista", "multiscale_fista"])
def test_proximal_solvers_name_the_scale_of_x(name):
    """They raised ZeroDivisionError (defect 2): the step 1/L of an overflowing L is a clear error
    naming X's scale."""
    X, y = _huge()
    with pytest.raises(DivergenceError, match=r"1e\+300.*Scale the features"):
        SparseLogisticRegression(solver=name, lam_ratio=0.1).fit(X, y)


@pytest.mark.parametrize("name", ["cd", "cgd", "scd", "rmmp"])
def test_other_solvers_do_not_return_silently(name):
    """The certified solvers either converge or say they did not; never a non-finite model."""
    X, y = _huge()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = SparseLogisticRegression(solver=name, lam_ratio=0.1, max_iter=20).fit(X, y)
    assert np.isfinite(est.coef_).all() and np.isfinite(est.intercept_).all()
    converged = all(r.converged for r in np.atleast_1d(est.result_))
    assert converged or any(issubclass(w.category, ConvergenceWarning) for w in caught)


@pytest.mark.parametrize("name", ONLINE)
def test_divergence_check_does_not_fire_on_sane_data(name):
    X, y = data()
    X = sp.csr_matrix(X * 30.0)  # a large but workable scale
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = SOLVERS[name](max_iter=3).solve(
            StreamProblem(Stream.from_arrays(X, y, chunk_rows=50), "logistic", lam_ratio=0.05)
        )
    assert np.isfinite(result.coef).all()


def test_divergence_error_is_a_value_error():
    assert issubclass(DivergenceError, ValueError) and issubclass(DivergenceError, ArithmeticError)
