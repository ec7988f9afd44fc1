"""The solvers' warm-ups compile their kernels for the index type the solve will read.

A Numba kernel is compiled once per type of its arguments. The column layouts are int32 wherever
they fit (``data.memory.index_dtype``), so a warm-up on int64 arrays compiled kernels that the
solve then compiled again for int32: at a first fit with an empty cache, about a quarter of its
two minutes.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale.problems import Problem
from l1scale.solvers import _cd_kernels, _cg_kernels, _local_model, cd
from l1scale.solvers.base import column_index_type, compiled_once
from l1scale.solvers.cd import CoordinateDescent


def _data():
    rng = np.random.default_rng(0)
    X = sp.random(60, 30, density=0.2, format="csr", random_state=0)
    y = np.where(rng.random(60) > 0.5, 1.0, -1.0)
    return X, y


def _with_index(X, dtype):
    X = X.copy()
    X.indices, X.indptr = X.indices.astype(dtype), X.indptr.astype(dtype)
    return X


@pytest.mark.parametrize(
    "layout",
    ["csr int32", "csr int64", "csc int32", "csc int64", "dense", "coo"],
)
def test_column_index_type_is_the_type_of_the_layout_the_solve_reads(layout):
    X, y = _data()
    if layout.startswith("csr"):
        X = _with_index(X, np.int32 if layout.endswith("32") else np.int64)
    elif layout.startswith("csc"):
        X = _with_index(X.tocsc(), np.int32 if layout.endswith("32") else np.int64)
    elif layout == "dense":
        X = X.toarray()
    else:
        X = X.tocoo()
    problem = Problem(X, y, "logistic", lam_ratio=0.1)
    predicted = column_index_type(problem)  # before a CSR problem has made its columns
    assert predicted == problem.columns.indices.dtype
    assert column_index_type(problem) == predicted  # and after


def test_compiled_once_runs_once_for_each_set_of_arguments():
    calls = []

    @compiled_once
    def warm_up(index):
        calls.append(index)

    first = [warm_up(np.dtype(np.int32)), warm_up(np.dtype(np.int64))]
    again = [warm_up(np.dtype(np.int32)), warm_up(np.dtype(np.int64))]
    assert calls == [np.dtype(np.int32), np.dtype(np.int64)]
    assert min(first) > 0.0 and again == [0.0, 0.0]


def _index_types(dispatcher):
    """The types of the ``indices`` argument (the second) of a kernel's compiled signatures."""
    return {str(sig[1].dtype) for sig in dispatcher.signatures}


def test_the_warm_ups_compile_the_kernels_for_int32_layouts():
    # The usual type: a warm-up that compiled these for int64 only left them to the solve.
    _cd_kernels.warm_up(np.int32)
    _cg_kernels.warm_up(np.int32)
    _local_model.warm_up(np.int32)
    for kernel in (
        _cd_kernels.outer_pass,
        _cd_kernels.newton_direction,
        _cg_kernels.support_cg,
        _local_model.newton_direction,
    ):
        assert "int32" in _index_types(kernel), kernel


@pytest.mark.parametrize("layout", ["csr", "csc int64", "dense"])
def test_cd_warms_up_for_the_index_type_of_its_problem(layout, monkeypatch):
    X, y = _data()
    X = {"csr": X, "csc int64": _with_index(X.tocsc(), np.int64), "dense": X.toarray()}[layout]
    problem = Problem(X, y, "logistic", lam_ratio=0.1)
    asked = []
    warm_up = cd._warm_up
    monkeypatch.setattr(cd, "_warm_up", lambda index: asked.append(index) or warm_up(index))
    CoordinateDescent(tol=1e-8, deduplicate=False).solve(problem)
    assert asked and set(asked) == {problem.columns.indices.dtype}
