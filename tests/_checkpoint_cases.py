"""The data, problems and solver settings of tests/test_checkpoints.py, shared with the
child processes that test kills (they import this module)."""

import warnings

import numpy as np
import scipy.sparse as sp

from l1scale.data.stream import Stream
from l1scale.problems import Problem, StreamProblem
from l1scale.solvers import SOLVERS


def data():
    rng = np.random.default_rng(7)
    X = sp.random(400, 60, density=0.15, random_state=rng, format="csr")
    X.data = rng.normal(size=X.nnz)
    X = sp.csr_matrix(X / np.maximum(sp.linalg.norm(X, axis=1), 1e-12)[:, None])
    w = np.zeros(60)
    w[:8] = rng.normal(size=8) * 4
    y = np.where(X @ w + 0.3 * rng.normal(size=400) > 0, 1.0, -1.0)
    return X, y


def offset_data():
    """Dense columns far from zero (|mean| / std about 20): an online solve learns them centred."""
    rng = np.random.default_rng(8)
    X = 40.0 + 2.0 * rng.normal(size=(400, 12))
    w = np.zeros(12)
    w[:3] = [1.0, -0.8, 0.5]
    y = np.where((X - 40.0) @ w + 0.5 * rng.normal(size=400) > 0, 1.0, -1.0)
    return X, y


# An online solver on offset_data: "<solver>:centred"; SCD on it in memory (it learns the columns
# centred too, under its default Newton steps).
CENTRED = "sgd_cumulative:centred"
SCD_CENTRED = "scd:centred"
# SCD on offset_data without an intercept: its steps on those columns are followed by pair moves
# (partners drawn from the same generator as the coordinates).
SCD_PAIRS = "scd:pairs"


def problem(name):
    if name == CENTRED:
        X, y = offset_data()
        return StreamProblem(Stream.from_arrays(X, y, chunk_rows=50), "logistic", lam_ratio=0.05)
    if name == SCD_CENTRED:
        X, y = offset_data()
        return Problem(X, y, "logistic", lam_ratio=0.05)
    if name == SCD_PAIRS:
        X, y = offset_data()
        return Problem(X, y, "logistic", lam_ratio=0.05, fit_intercept=False)
    X, y = data()
    if name in ("smidas", "truncated_gradient", "sgd_cumulative", "mp", "rmmp"):
        return StreamProblem(Stream.from_arrays(X, y, chunk_rows=50), "logistic", lam_ratio=0.05)
    return Problem(X, y, "logistic", lam_ratio=0.05)


def solver(name, **kw):
    name = name.split(":")[0]
    options = {
        "smidas": {"max_iter": 12, "shuffle": True, "random_state": 5},
        "truncated_gradient": {"max_iter": 12, "shuffle": True, "random_state": 5},
        "sgd_cumulative": {"max_iter": 12, "shuffle": True, "random_state": 5},
        "mp": {"tol": 1e-10, "max_iter": 30},
        "rmmp": {"tol": 1e-10, "max_iter": 30, "max_active": 20},
        "cd": {"tol": 1e-12, "max_iter": 60, "random_state": 3},
        "scd": {"tol": 1e-9, "max_iter": 40, "random_state": 3},
        "detcd": {"tol": 1e-9, "max_iter": 40},
    }.get(name, {"tol": 1e-9, "max_iter": 40})
    if name in ("cd", "fista", "ista", "multiscale_fista", "cgd", "scd", "detcd"):
        options["checkpoint_interval"] = 0.0
    return SOLVERS[name](**{**options, **kw})


def solve(name, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return solver(name, **kw).solve(problem(name))
