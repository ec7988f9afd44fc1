"""The estimators over a generated feature space (``features=``): fitting and scoring on raw
inputs (DNA sequences, input matrices) through a :class:`~l1scale.data.feature_spaces.FeatureSpace`.

With ``solver="fcl"`` (the default with ``features``) the space is never materialised:
:class:`~l1scale.solvers.fcl.FeatureCachedLoops` generates its columns block by block
(``solver="dcl_sgd"``: the dual-cached-loops SGD baseline). With an in-memory solver
(``"cd"``, ``"fista"``, ...) phi(X) is materialised first, which only suits small spaces.
Predictions generate only the columns where some coefficient is nonzero.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets

from .penalties import DEFAULT_LAM_RATIO
from .problems.memory import check_sample_weight
from .solvers.registry import names

__all__ = ["GENERATED_SOLVERS", "fit", "margins", "space_from_spec", "space_spec"]

GENERATED_SOLVERS = names(data="generated")


def _labels_and_weights(est, X, y, sample_weight, classifier):
    space = clone(est.features).fit(X)
    n = space.prepare(X).n
    if y is None:
        raise ValueError("fit with features= needs the labels y")
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y has shape {y.shape}, but X has {n} examples")
    s = check_sample_weight(sample_weight, n)
    if classifier:
        check_classification_targets(y)
        if est.class_weight is not None:
            s = s * compute_sample_weight(est.class_weight, y)
    return space, y, s


def fit(est, X, y, sample_weight, *, classifier: bool):
    """Fit ``est`` (``est.features`` set) on raw inputs X; sets the fitted attributes."""
    from .problems.generated import GeneratedProblem

    space, y, s = _labels_and_weights(est, X, y, sample_weight, classifier)
    est.features_ = space
    est.n_features_in_ = int(space.n_inputs_)
    est.__dict__.pop("feature_names_in_", None)
    if classifier:
        classes = np.unique(y)
        if classes.shape[0] < 2:
            raise ValueError(f"y has only one class ({classes[0]!r}); a classifier needs at least two")
        targets = [np.where(y == c, 1.0, -1.0) for c in ([classes[1]] if classes.shape[0] == 2 else classes)]
    else:
        targets = [np.asarray(y, dtype=np.float64)]
    results, lams = [], []
    if est.solver_ in GENERATED_SOLVERS:
        lam_ratio = None if est.lam is not None else (DEFAULT_LAM_RATIO if est.lam_ratio is None else est.lam_ratio)
        for k, y_k in enumerate(targets):
            problem = GeneratedProblem(
                space, X, y_k, est.loss, est.lam, lam_ratio=lam_ratio, fit_intercept=est.fit_intercept, sample_weight=s
            )
            results.append(est._make_solver(k, len(targets)).solve(problem))
            lams.append(problem.lam)
    else:
        Phi = space.transform(X)  # an in-memory solver: the space materialised
        for y_k in targets:
            result, lam = est._solve(Phi, y_k, s, None, None)
            results.append(result)
            lams.append(lam)
    if classifier:
        est._set_fitted(classes, results, lams)
    else:
        est._set_fitted(results[0], lams[0])
    return est


def margins(est, X) -> np.ndarray:
    """phi(X) coef + intercept, shape (n, n_outputs), generating only the support's columns."""
    coef = np.atleast_2d(est.coef_)
    support = np.flatnonzero(np.any(coef != 0.0, axis=0))
    Phi = est.features_.transform(X, columns=support)
    return np.asarray(Phi @ coef[:, support].T) + np.atleast_1d(est.intercept_)


def space_spec(space) -> dict:
    """What a saved model needs to rebuild its feature space: class, parameters and input width
    (every space's layout depends on its parameters and the width only)."""
    if "random_state" in space.get_params() and space.random_state is None:
        raise ValueError(
            f"{type(space).__name__}(random_state=None) draws new features at every fit: give it a "
            "random_state to save a model that can be loaded"
        )
    return {"class": type(space).__name__, "params": space.get_params(), "n_inputs": int(space.n_inputs_)}


def space_from_spec(spec):
    from .data import feature_spaces

    cls = getattr(feature_spaces, spec["class"], None)
    if cls is None or not isinstance(cls, type) or not issubclass(cls, feature_spaces.FeatureSpace):
        raise ValueError(f"unknown feature space {spec['class']!r} in the saved model")
    space = cls(**spec["params"])
    width = int(spec["n_inputs"])
    dummy = np.zeros((1, width), dtype=np.uint8 if cls is feature_spaces.DNAPatterns else np.float64)
    return space.fit(dummy)
