"""Solvers: one module per algorithm family, each a Solver whose solve() returns a Result.

``SOLVERS`` maps the names estimators and the CLI accept to the Solver classes;
``"auto"`` is resolved by the estimators at fit time.
"""

from .base import History, Result, Solver
from .bm_online import OnlineSketch
from .cd import CoordinateDescent
from .cgd import CoordinateGradientDescent
from .dcl import DualCachedLoopsSGD
from .fcl import FeatureCachedLoops
from .online_base import OnlineSolver
from .proximal import FISTA, ISTA, MultiscaleFISTA
from .sgd import CumulativePenaltySGD
from .sketch import MultiPass, ReducedMemoryMultiPass
from .smidas import SMIDAS
from .stochastic import GreedyCD, StochasticCD
from .truncated import TruncatedGradient

SOLVERS = {
    cls.name: cls
    for cls in (
        CoordinateDescent,
        CoordinateGradientDescent,
        ISTA,
        FISTA,
        MultiscaleFISTA,
        MultiPass,
        ReducedMemoryMultiPass,
        OnlineSketch,
        StochasticCD,
        GreedyCD,
        SMIDAS,
        TruncatedGradient,
        CumulativePenaltySGD,
        FeatureCachedLoops,
        DualCachedLoopsSGD,
    )
}

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
