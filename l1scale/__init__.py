"""l1scale: sparse (L1-regularised) linear classifiers and regressors on data of any size."""

__version__ = "0.1.0"

from .estimators import SparseLinearRegression, SparseLogisticRegression, load
from .problem import Problem, lam_max

__all__ = ["Problem", "SparseLinearRegression", "SparseLogisticRegression", "lam_max", "load", "__version__"]
