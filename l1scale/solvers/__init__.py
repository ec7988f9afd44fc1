"""Solvers: one module per algorithm family, each a Solver whose solve() returns a Result.

``SOLVERS`` maps the names estimators and the CLI accept to the Solver classes, built from
:mod:`l1scale.solvers.registry` (which says what each solver can do without importing it);
``"auto"`` is resolved by the estimators at fit time.

The names below load on first use (PEP 562), so that ``import l1scale.solvers.registry``
(the command line's ``--solver`` choices) does not import Numba and every kernel module.
"""

from __future__ import annotations

import importlib

from .registry import ENTRIES

_CLASSES = {entry.target.rpartition(":")[2]: entry.target.partition(":")[0] for entry in ENTRIES}
_CLASSES.update(
    {
        "History": "l1scale.solvers.base",
        "Result": "l1scale.solvers.base",
        "Solver": "l1scale.solvers.base",
        "OnlineSolver": "l1scale.solvers.online_base",
    }
)

__all__ = [
    "FISTA",
    "ISTA",
    "SMIDAS",
    "SOLVERS",
    "CoordinateDescent",
    "CoordinateGradientDescent",
    "CumulativePenaltySGD",
    "DualCachedLoopsSGD",
    "FeatureCachedLoops",
    "GreedyCD",
    "History",
    "MultiPass",
    "MultiscaleFISTA",
    "OnlineSketch",
    "OnlineSolver",
    "ReducedMemoryMultiPass",
    "Result",
    "Solver",
    "StochasticCD",
    "TruncatedGradient",
]


def __getattr__(name):
    if name == "SOLVERS":
        value = {entry.name: entry.load() for entry in ENTRIES}
    elif name in _CLASSES:
        value = getattr(importlib.import_module(_CLASSES[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # once
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
