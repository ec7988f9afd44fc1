"""l1scale: sparse (L1-regularised) linear classifiers and regressors on data of any size."""

__version__ = "0.1.0"

__all__ = [
    "Problem",
    "SparseLinearRegression",
    "SparseLogisticRegression",
    "SparseLogisticRegressionCV",
    "StreamProblem",
    "__version__",
    "lam_max",
    "load",
    "regularization_path",
]

# Public names are imported on first use, so that `l1scale --help` and light
# imports (the data readers) do not pay for Numba and scikit-learn.
_WHERE = {
    "Problem": "problems.memory",
    "lam_max": "problems.memory",
    "SparseLinearRegression": "estimators",
    "SparseLogisticRegression": "estimators",
    "load": "estimators",
    "SparseLogisticRegressionCV": "path",
    "regularization_path": "path",
    "StreamProblem": "problems.stream",
}


def __getattr__(name):
    if name in _WHERE:
        from importlib import import_module

        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module 'l1scale' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
