"""The solvers by name, and what each can do, readable without importing a solver (and so
without Numba).

The command line lists and checks ``--solver`` from it, the estimators and the Dask layer check
capabilities with it, and :data:`l1scale.solvers.SOLVERS` (name -> class) is built from it.
Each solver class still carries what its code needs (``name``, ``data_access``,
``resumable``, ``partial_fit``); ``tests/test_solver_contract.py`` checks every entry against its
class and runs every registered solver through the contract all solvers meet.

Adding a solver: its module under ``l1scale/solvers/``, and one :class:`SolverEntry` in
:data:`ENTRIES`. The estimators, the command line (choices, help, ``auto``) and the contract test
pick it up from here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["ENTRIES", "REGISTRY", "SolverEntry", "names"]


@dataclass(frozen=True)
class SolverEntry:
    """One registered solver.

    Attributes
    ----------
    name : str
        What ``solver=`` and ``--solver`` take.
    target : str
        ``"module:Class"`` of the Solver class (imported by :meth:`load` only).
    data : {"memory", "stream", "generated"}
        In memory (X held, read by columns or rows), passes over a Stream, or a generated
        feature space (feature cached loops over phi(X)).
    family : {"batch", "stochastic", "streaming", "online_first_order", "generated"}
        How it iterates: certified batch methods, stochastic coordinate methods, the streaming
        quadratic-approximation methods (Online, MP, RMMP), online first-order methods
        (progressive validation, holdout, a learning rate), or the generated-space loops.
    certified : bool
        It stops on a duality gap or KKT certificate, which its Result carries. (The online
        first-order solvers do not; given ``tol`` they check one after their passes, as an
        estimator's fit on in-memory data does.)
    resumable : bool
        Takes ``checkpoint=`` (:mod:`l1scale.checkpoint`).
    partial_fit : bool
        Learns chunk by chunk (the estimators' ``partial_fit``).
    distributed : bool
        Has a Dask version (:func:`l1scale.distributed.distributed_solver`).
    reproducible : bool
        A seed gives the same coefficients bit for bit. Not fcl's default: its writer and
        trainer threads interleave as the system schedules them (the certified optimum is the
        same; ``threads=False`` is reproducible).
    """

    name: str
    target: str
    data: str
    family: str
    certified: bool = False
    resumable: bool = False
    partial_fit: bool = False
    distributed: bool = False
    reproducible: bool = True

    def load(self) -> type:
        """The Solver class (imports its module)."""
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)


_S = "l1scale.solvers."

#: Every solver, in the order the command line lists them.
ENTRIES = (
    SolverEntry("cd", _S + "cd:CoordinateDescent", "memory", "batch", certified=True, resumable=True),
    SolverEntry("cgd", _S + "cgd:CoordinateGradientDescent", "memory", "batch", certified=True, resumable=True),
    SolverEntry("ista", _S + "proximal:ISTA", "memory", "batch", certified=True, resumable=True, distributed=True),
    SolverEntry("fista", _S + "proximal:FISTA", "memory", "batch", certified=True, resumable=True, distributed=True),
    SolverEntry(
        "multiscale_fista",
        _S + "proximal:MultiscaleFISTA",
        "memory",
        "batch",
        certified=True,
        resumable=True,
        distributed=True,
    ),
    SolverEntry("scd", _S + "scd:StochasticCD", "memory", "stochastic", certified=True, resumable=True),
    SolverEntry("detcd", _S + "scd:GreedyCD", "memory", "stochastic", certified=True, resumable=True),
    SolverEntry("multinomial_cd", _S + "multinomial:MultinomialCD", "memory", "batch", certified=True),
    SolverEntry("mp", _S + "sketch:MultiPass", "stream", "streaming", certified=True, resumable=True, distributed=True),
    SolverEntry(
        "rmmp",
        _S + "sketch:ReducedMemoryMultiPass",
        "stream",
        "streaming",
        certified=True,
        resumable=True,
        distributed=True,
    ),
    SolverEntry("online", _S + "bm_online:OnlineSketch", "stream", "streaming", partial_fit=True),
    SolverEntry(
        "truncated_gradient",
        _S + "truncated:TruncatedGradient",
        "stream",
        "online_first_order",
        resumable=True,
        partial_fit=True,
        distributed=True,
    ),
    SolverEntry(
        "sgd_cumulative",
        _S + "sgd:CumulativePenaltySGD",
        "stream",
        "online_first_order",
        resumable=True,
        partial_fit=True,
        distributed=True,
    ),
    SolverEntry("smidas", _S + "smidas:SMIDAS", "stream", "online_first_order", resumable=True, partial_fit=True),
    SolverEntry("fcl", _S + "fcl:FeatureCachedLoops", "generated", "generated", certified=True, reproducible=False),
    SolverEntry("dcl_sgd", _S + "dcl:DualCachedLoopsSGD", "generated", "generated"),
)

#: name -> SolverEntry.
REGISTRY = {entry.name: entry for entry in ENTRIES}


def names(**capabilities) -> tuple:
    """The names of the registered solvers whose entries have every given attribute value,
    in registry order: ``names(data="stream")``, ``names(distributed=True)``."""
    unknown = set(capabilities) - set(SolverEntry.__dataclass_fields__)
    if unknown:
        raise TypeError(f"SolverEntry has no {sorted(unknown)}")
    return tuple(e.name for e in ENTRIES if all(getattr(e, k) == v for k, v in capabilities.items()))
