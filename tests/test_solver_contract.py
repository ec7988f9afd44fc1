"""The contract every registered solver meets, parametrised over :mod:`l1scale.solvers.registry`:
a solver added there is tested here without edits (issue 14).

- its registry entry says what its class does (data access, checkpoints, partial_fit, family,
  a Dask version);
- through the estimator it fits dense, CSR and CSC input, float64 and float32, to the same
  model (certified solvers: the same objective within their tolerance; the others: the same
  predictions on nearly every row);
- uniform sample weights change nothing (the objective normalises them); a seed gives the same
  model twice (bit for bit where the entry says ``reproducible``);
- its Result has the documented fields, and a certificate exactly when the entry claims one.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale import SparseLogisticRegression
from l1scale.data import Products
from l1scale.solvers import SOLVERS, OnlineSolver, Result
from l1scale.solvers.registry import ENTRIES, REGISTRY, names

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

BY_NAME = pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])


def _data(seed=0, n=120, d=12):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.4, format="csr", random_state=seed)
    w = np.where(rng.random(d) < 0.5, rng.normal(size=d), 0.0)
    y = np.where(X @ w + 0.2 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _fit(entry, X, y, sample_weight=None, seed=0):
    extra = {"features": Products(degree=2), "cache_bytes": "1MB"} if entry.data == "generated" else {}
    est = SparseLogisticRegression(solver=entry.name, lam_ratio=0.1, tol=1e-9, random_state=seed, **extra)
    return est.fit(X, y, sample_weight=sample_weight)


def test_the_registry_is_what_solvers_and_the_command_line_offer():
    from l1scale.cli._params import SOLVER_NAMES

    assert list(SOLVERS) == list(REGISTRY) == [e.name for e in ENTRIES]
    assert ("auto", *REGISTRY) == SOLVER_NAMES
    assert names(data="stream") == tuple(n for n, c in SOLVERS.items() if c.data_access == "stream")
    with pytest.raises(TypeError, match="no"):
        names(colour="red")


@BY_NAME
def test_the_estimators_docstring_names_the_solver(entry):
    """``solver`` in the estimator's parameters lists every registered solver (issue 15; the
    regressor and the CV estimator refer to it)."""
    assert f'"{entry.name}"' in SparseLogisticRegression.__doc__, f"the docstring does not name {entry.name!r}"


@BY_NAME
def test_the_entry_says_what_the_class_does(entry):
    from l1scale.distributed.solve import distributed_solver

    cls = entry.load()
    assert cls.name == entry.name and SOLVERS[entry.name] is cls
    access = {"memory": ("columns", "rows"), "stream": ("stream",), "generated": ("generated",)}[entry.data]
    assert cls.data_access in access
    assert bool(getattr(cls, "resumable", False)) == entry.resumable
    assert hasattr(cls, "partial_fit") == entry.partial_fit
    assert issubclass(cls, OnlineSolver) == (entry.family == "online_first_order")
    if entry.distributed:
        assert distributed_solver(cls()) is not None
    else:
        with pytest.raises(ValueError, match="no distributed version"):
            distributed_solver(cls())


@BY_NAME
def test_every_layout_and_precision_fit_the_same_model(entry):
    X, y = _data()
    reference = _fit(entry, X, y)
    for label, Xv in (
        ("dense", X.toarray()),
        ("csc", X.tocsc()),
        ("csr float32", X.astype(np.float32)),
        ("dense float32", X.toarray().astype(np.float32)),
    ):
        model = _fit(entry, Xv, y)
        assert model.coef_.shape == reference.coef_.shape and np.isfinite(model.coef_).all(), label
        if entry.certified:
            assert model.result_.objective == pytest.approx(reference.result_.objective, rel=1e-5, abs=1e-8), label
        else:
            agree = np.mean(model.predict(X) == reference.predict(X))
            assert agree >= 0.95, (label, agree)


@BY_NAME
def test_uniform_weights_change_nothing_and_a_seed_repeats(entry):
    X, y = _data(1)
    plain = _fit(entry, X, y, seed=3)
    again = _fit(entry, X, y, seed=3)
    weighted = _fit(entry, X, y, sample_weight=np.full(y.shape[0], 2.5), seed=3)
    if entry.reproducible:
        np.testing.assert_array_equal(again.coef_, plain.coef_)
        np.testing.assert_array_equal(again.intercept_, plain.intercept_)
        np.testing.assert_allclose(weighted.coef_, plain.coef_, rtol=1e-6, atol=1e-9)
    else:  # the same certified optimum, reached along another path
        for model in (again, weighted):
            assert model.result_.objective == pytest.approx(plain.result_.objective, rel=1e-7)


@BY_NAME
def test_the_result_has_its_fields_and_a_certificate_when_claimed(entry):
    X, y = _data(2)
    result = _fit(entry, X, y).result_
    assert isinstance(result, Result)
    assert result.n_iter >= 1 and isinstance(result.converged, bool) and result.stop_reason
    assert result.coef.ndim == 1 and np.isfinite(result.coef).all() and np.isfinite(result.intercept)
    assert len(result.history.time) >= 1
    # The online first-order solvers do not stop on a certificate, but an estimator's in-memory
    # fit checks its tol with one after their passes.
    if entry.certified or entry.family == "online_first_order":
        assert np.isfinite(result.relative_certificate) and result.certificate_name != "none"
        if entry.family == "online_first_order":
            assert result.converged == (result.relative_certificate <= 1e-9)  # _fit's tol
    else:
        assert not np.isfinite(result.certificate)


@BY_NAME
def test_the_estimator_builds_every_solver_from_one_naming(entry):
    from l1scale.solvers.base import EstimatorSettings

    cls = entry.load()
    solver = cls.from_estimator(EstimatorSettings(tol=1e-4, max_iter=7, random_state=5))
    assert type(solver) is cls
    cap = [getattr(solver, a) for a in ("max_iter", "max_sweeps", "max_epochs") if hasattr(solver, a)]
    assert entry.name == "online" or cap[0] == 7  # the Online algorithm makes one pass, no cap
    if hasattr(solver, "tol") and entry.family != "online_first_order":
        assert solver.tol == 1e-4
