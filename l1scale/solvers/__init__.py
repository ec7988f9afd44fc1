"""Solvers: one module per algorithm family, each a Solver whose solve() returns a Result.

``SOLVERS`` maps the names estimators and the CLI accept to the Solver classes;
``"auto"`` is resolved by the estimators at fit time.
"""

from .base import History, Result, Solver
from .cd import CoordinateDescent
from .online import OnlineSketch
from .sketch import MultiPass, ReducedMemoryMultiPass

SOLVERS = {"cd": CoordinateDescent, "mp": MultiPass, "rmmp": ReducedMemoryMultiPass, "online": OnlineSketch}

__all__ = ["SOLVERS", "CoordinateDescent", "MultiPass", "OnlineSketch", "ReducedMemoryMultiPass", "History",
           "Result", "Solver"]
