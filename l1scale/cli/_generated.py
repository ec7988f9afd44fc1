"""``l1scale train --features SPEC``: training over a generated feature space (feature cached loops).

SPEC names the space: ``dna:D`` (DNA patterns of length D; DATA holds one label and one
sequence per line), ``products:DEGREE`` or ``rff:N[:SIGMA]`` (random Fourier features;
DATA is svmlight). ``--cache SIZE`` is then the memory budget of the column cache
(e.g. 2GB), not a directory.
"""

from __future__ import annotations

import time

import click
import numpy as np

from ._data import check_output
from ._progress import run_fit
from ._report import report
from ._summary import save_and_print, train_summary

FEATURE_SPECS = "dna:D, products:DEGREE or rff:N[:SIGMA]"


def parse_features(spec: str, seed):
    """The FeatureSpace a --features SPEC names."""
    from ..data import DNAPatterns, Products, RandomFourier

    name, _, rest = spec.partition(":")
    parts = rest.split(":") if rest else []
    try:
        if name == "dna" and len(parts) == 1:
            return DNAPatterns(d=int(parts[0]))
        if name == "products" and len(parts) == 1:
            return Products(degree=int(parts[0]))
        if name == "rff" and len(parts) in (1, 2):
            sigma = float(parts[1]) if len(parts) == 2 else 1.0
            return RandomFourier(n_components=int(parts[0]), sigma=sigma, random_state=0 if seed is None else seed)
    except ValueError:
        pass
    raise click.BadParameter(f"{spec!r} is not a feature space; give {FEATURE_SPECS}", param_hint="--features")


def read_raw(path, space):
    """(raw inputs, labels) of a file for ``space``: sequences for DNA patterns, else svmlight
    (at the space's input width once it is fitted)."""
    from ..data import DNAPatterns, load_sequences, load_svmlight

    if isinstance(space, DNAPatterns):
        return load_sequences(path)
    return load_svmlight(path, n_features=getattr(space, "n_inputs_", None))


class _Lines:
    """The progress of an fcl run on stderr: one line per History row."""

    def __init__(self, solver):
        self.solver = solver
        click.echo(
            f"{'seconds':>8} {'objective':>14} {'kkt':>9} {'nnz':>6} {'cached':>7} {'MiB':>7} "
            f"{'inserted':>9} {'evicted':>8} {'sweeps':>6}",
            err=True,
        )

    def __call__(self, index, history):
        row = self.solver.progress_[-1]
        click.echo(
            f"{row['seconds']:8.2f} {row['objective']:14.8g} {row['violation']:9.2e} {row['nnz']:6d} "
            f"{row['cached_columns']:7d} {row['cached_bytes'] / 2**20:7.1f} {row['inserted']:9d} "
            f"{row['evicted'] + row['evicted_for_room']:8d} {row['sweeps']:6d}",
            err=True,
        )


def train_generated(
    data,
    *,
    features,
    cache,
    solver,
    test_path,
    lam,
    lam_ratio,
    loss,
    intercept,
    tol,
    max_iter,
    class_weight,
    seed,
    output,
    quiet,
    as_json,
):
    """Fit SparseLogisticRegression / SparseLinearRegression(features=...) on DATA and print the summary."""
    from ..estimators import SparseLinearRegression, SparseLogisticRegression
    from ..solvers import FeatureCachedLoops
    from ..solvers.fcl import parse_bytes

    space = parse_features(features, seed)
    try:
        cache_bytes = None if cache is None else parse_bytes(cache)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--cache") from None
    check_output(output, "'-o' / '--output'")
    resolved = "fcl" if solver == "auto" else solver
    t0 = time.perf_counter()
    X, y = read_raw(data, space)
    load_seconds = time.perf_counter() - t0
    common = {
        "lam": lam,
        "lam_ratio": lam_ratio,
        "fit_intercept": intercept,
        "tol": tol,
        "max_iter": max_iter,
        "random_state": seed,
        "features": space,
        "cache_bytes": cache_bytes,
    }
    fcl = None
    if resolved == "fcl":
        fcl = FeatureCachedLoops(cache_bytes=cache_bytes or "1GB", tol=tol, max_sweeps=max_iter, random_state=seed)
        if not quiet:
            fcl.callback = _Lines(fcl)
        common["solver"] = fcl
    else:
        common["solver"] = resolved
    if loss == "squared":
        est = SparseLinearRegression(**common)
    else:
        est = SparseLogisticRegression(loss, class_weight=class_weight, **common)
    messages, fit_seconds = run_fit(est, data, (X, y), None)
    info = {
        "n_samples": len(y),
        "n_features": int(est.features_.n_features_),
        "nnz": None,
        "features": features,
        "n_inputs": int(est.features_.n_inputs_),
    }
    summary = train_summary(est, data, info, report(est, X, y), load_seconds, fit_seconds, messages)
    summary["solver"] = resolved
    coef = np.atleast_2d(est.coef_)
    top = np.argsort(-np.abs(coef).max(axis=0))[: min(10, int(np.count_nonzero(coef.any(axis=0))))]
    summary["top_features"] = [
        {"feature": est.features_.describe(int(j)), "index": int(j), "weight": [float(v) for v in coef[:, j]]}
        for j in top
    ]
    if fcl is not None and fcl.progress_:
        summary["fcl"] = {
            k: fcl.progress_[-1][k]
            for k in ("cached_columns", "cached_bytes", "inserted", "evicted", "evicted_for_room", "dropped", "sweeps")
        }
        summary["fcl"]["cache_bytes"] = fcl.cache_bytes
    if test_path is not None:
        Xt, yt = read_raw(test_path, space)
        summary["test"] = {"path": test_path, **report(est, Xt, yt)}
    save_and_print(est, summary, output, as_json)
    if not as_json and summary["top_features"]:
        click.echo(
            "top features: " + ", ".join(f"{t['feature']} ({t['weight'][0]:+.3g})" for t in summary["top_features"])
        )
