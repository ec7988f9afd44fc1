"""The summary ``train`` prints: built from the fitted estimator, shown as JSON or a table."""

from __future__ import annotations

import math

import numpy as np

from ._format import fmt, key_value_table, label, stdout_console, versions
from ._params import LEARNING_RATE_KEYWORD

#: How many of the largest weights (per class) the summary lists by name.
TOP_WEIGHTS = 10


def train_summary(est, data, data_info, train_report, load_seconds, fit_seconds, messages):
    results = est.result_ if isinstance(est.result_, list) else [est.result_]
    rel = [r.relative_certificate for r in results]
    worst = results[int(np.argmax(rel))] if not np.isnan(rel).all() else results[0]
    skip = {"callback", "verbose", "warm_start", "n_jobs"}  # how it ran, not what it fitted
    params = {k: v for k, v in est.get_params().items() if k not in skip}
    online = None
    if not isinstance(params["solver"], str):  # a solver instance (the online first-order ones, fcl)
        from ..solvers.online_base import OnlineSolver

        solver = params["solver"]
        params["solver"] = solver.name
        online = _online_summary(solver, results) if isinstance(solver, OnlineSolver) else None
    if params.get("features") is not None:  # a FeatureSpace: named by its spec
        params["features"] = data_info.get("features", type(params["features"]).__name__)
    summary = {
        "command": "train",
        "data": {"path": data, **data_info},
        "estimator": type(est).__name__,
        "params": params,
        "solver": est.solver_,
        "classes": [label(c) for c in est.classes_] if hasattr(est, "classes_") else None,
        # one lam (a multinomial model's one problem too), or one per one-vs-rest problem (lam_ratio
        # scales each problem's lam_max)
        "lam": float(np.ravel(est.lam_)[0])
        if np.size(est.lam_) == 1 or getattr(est, "multi_class_", "ovr") == "multinomial"
        else [float(v) for v in np.ravel(est.lam_)],
        "objective": float(sum(r.objective for r in results)),
        "certificate_name": worst.certificate_name,
        "certificate": float(worst.certificate),
        "relative_certificate": float(worst.relative_certificate),
        "converged": all(r.converged for r in results),
        "stop_reason": worst.stop_reason if len(results) == 1 else ",".join(sorted({r.stop_reason for r in results})),
        "nnz": int(np.count_nonzero(est.coef_)),
        "n_iter": int(sum(r.n_iter for r in results)),
        "seconds": {
            "load": load_seconds,
            "fit": fit_seconds,
            "solve": float(sum(r.timings.get("solve", 0.0) for r in results)),
            "compile": float(sum(r.timings.get("compile", 0.0) for r in results)),
        },
        "train": train_report,
        "test": None,
        "warnings": list(messages),
        "versions": versions(),
    }
    if online is not None:  # only then: the summaries of the other solvers keep their keys
        summary["online"] = online
    if getattr(est, "multi_class_", "ovr") == "multinomial":  # only then (the binary summaries keep their keys)
        summary["multi_class"] = "multinomial"
    if getattr(est, "feature_names_", None) is not None:  # named features (--feature-names): the largest
        from ..model_report import nonzero_weights

        summary["weights"] = nonzero_weights(est, top=TOP_WEIGHTS)
    if len(results) > 1:  # one-vs-rest: the per-class problems (objective summed above)
        summary["problems"] = [
            {
                "class": label(c),
                "lam": float(lam),
                "objective": float(r.objective),
                "certificate": float(r.certificate),
                "relative_certificate": float(r.relative_certificate),
                "converged": bool(r.converged),
                "stop_reason": r.stop_reason,
                "nnz": int(r.nnz),
                "n_iter": int(r.n_iter),
            }
            for c, lam, r in zip(est.classes_, est.lam_, results)
        ]
    return summary


def _online_summary(solver, results):
    """An online first-order solver's settings and its last pass's progressive validation
    (one value, or one per one-vs-rest problem)."""

    def last(name, cast):
        values = [cast(getattr(r.history, name)[-1]) if getattr(r.history, name) else None for r in results]
        return values[0] if len(values) == 1 else values

    keyword = LEARNING_RATE_KEYWORD.get(solver.name)
    return {
        "passes": int(solver.max_iter),
        "holdout": int(solver.holdout),
        "learning_rate": None if keyword is None else float(getattr(solver, keyword)),
        "n_iter_no_change": int(solver.n_iter_no_change),
        "examples": last("examples", int),
        "progressive_loss": last("progressive_loss", float),
        "holdout_loss": last("holdout_loss", float),
    }


def _metric_rows(report, prefix):
    if "r2" in report:
        return [(f"{prefix} R^2", fmt(report["r2"])), (f"{prefix} MSE", fmt(report["mse"]))]
    rows = [(f"{prefix} accuracy", fmt(report["accuracy"]))]
    for key, name in (("auc", "AUC"), ("auprc", "AUPRC"), ("f1", "F1")):
        if report.get(key) is not None:
            rows.append((f"{prefix} {name}", fmt(report[key])))
    return rows


def _coef_rows(s):
    """Rows of coefficients: one per class of a multinomial model or per one-vs-rest problem, else one."""
    if s.get("multi_class") == "multinomial":
        return len(s["classes"])
    return max(1, len(s.get("problems", [])))


def _isnan(x):
    return x is None or math.isnan(x)


def _passes(solver):
    """Whether the solver's iterations are passes over the data (the streaming solvers)."""
    from ..solvers import SOLVERS

    return getattr(SOLVERS.get(solver), "data_access", "") == "stream"


def _losses(values):
    values = values if isinstance(values, list) else [values]
    text = ", ".join("none" if _isnan(v) else f"{v:.6g}" for v in values)
    return text + (" (one per class)" if len(values) > 1 else "")


def _online_rows(s, online):
    """The summary rows of an online first-order solver: losses of the last pass, why it stopped."""
    reasons = set(s["stop_reason"].split(","))
    if reasons == {"early_stopping"}:
        stopped = (
            f"early_stopping (holdout loss not better for {online['n_iter_no_change']} passes; "
            f"the weights of the best pass are kept)"
        )
    elif reasons == {"max_iter"}:
        n = online["passes"]
        stopped = f"max_iter ({'all ' if n > 1 else ''}{n} pass{'es' if n > 1 else ''} made)"
    else:
        stopped = s["stop_reason"]
    holdout = (
        "none (--holdout 0)"
        if online["holdout"] == 0
        else f"{_losses(online['holdout_loss'])} (last pass; every {online['holdout']}th example)"
    )
    rate = "" if online["learning_rate"] is None else f", learning rate {online['learning_rate']:g}"
    return [
        ("progressive loss", f"{_losses(online['progressive_loss'])} (last pass)"),
        ("holdout loss", holdout),
        ("stopped", stopped + rate),
    ]


def save_and_print(est, summary, output, as_json, metadata=None):
    """The last step of ``train``: save the model (-o; ``metadata``: more facts stored with it)
    and print the summary (JSON or a table)."""
    from ._format import echo_json

    if output is not None:
        est.save(output, metadata=metadata)
    summary["model"] = output
    if as_json:
        echo_json(summary)
    else:
        print_train_summary(summary)


def print_train_summary(s):
    loss = s["params"].get("loss", "squared")
    table = key_value_table(f"{s['estimator']}({loss}) on {s['data']['path']}")
    d = s["data"]
    status = f"yes ({s['stop_reason']})" if s["converged"] else f"no ({s['stop_reason']})"
    if s["stop_reason"] == "one_pass":
        status = "one pass (the Online algorithm has no stopping test)"
    hashed = f" (Vowpal Wabbit, hashed into 2**{d['hash_bits']})" if d.get("format") == "vw" else ""
    rows = [("data", f"{d['n_samples']} x {d['n_features']}, {d['nnz']} nonzeros{hashed}")]
    if d.get("features"):  # a generated space: never materialised
        rows = [
            (
                "data",
                (
                    f"{d['n_samples']} examples of width {d['n_inputs']}; --features {d['features']}: "
                    f"{d['n_features']} candidate features"
                ),
            )
        ]
        if s.get("fcl"):
            f = s["fcl"]
            rows.append(
                (
                    "feature cache",
                    (
                        f"{f['cached_columns']} columns, {f['cached_bytes'] / 2**20:.1f} of "
                        f"{f['cache_bytes'] / 2**20:.1f} MiB; {f['inserted']} inserted, "
                        f"{f['evicted'] + f['evicted_for_room']} evicted, {f['sweeps']} sweeps"
                    ),
                )
            )
    online = s.get("online")
    if online is not None:  # progressive validation instead of an objective and a certificate
        rows += _online_rows(s, online)
    elif _isnan(s["objective"]):  # the Online algorithm: one pass, no objective or certificate
        rows += [("objective", "not computed (one pass)"), ("converged", status)]
    else:
        rows += [
            ("objective", f"{s['objective']:.10g}"),
            (
                s["certificate_name"],
                (f"{s['certificate']:.3e} (relative {s['relative_certificate']:.3e}, tol {s['params']['tol']:g})"),
            ),
            ("converged", status),
        ]
    rows += [
        ("nnz(w)", f"{s['nnz']} of {d['n_features'] * _coef_rows(s)}"),
        ("passes" if _passes(s["solver"]) else "iterations", str(s["n_iter"])),
        (
            "lam",
            f"{s['lam']:.6g}"
            if not isinstance(s["lam"], list)
            else ", ".join(f"{v:.4g}" for v in s["lam"]) + " (one per class)",
        ),
        (
            "seconds",
            (
                f"{s['seconds']['fit']:.3f} fit ({s['seconds']['solve']:.3f} solve, "
                f"{s['seconds']['compile']:.3f} JIT compile), {s['seconds']['load']:.3f} load"
            ),
        ),
    ]
    if s["train"] is not None:
        rows += _metric_rows(s["train"], "train")
    if s["test"] is not None:
        rows += _metric_rows(s["test"], "test")
    if s["model"] is not None:
        rows.append(("model", s["model"]))
    for message in s["warnings"]:
        rows.append(("warning", message))
    for row in rows:
        table.add_row(*row)
    console = stdout_console()
    console.print(table)
    if s.get("weights"):
        from .inspect import print_weights

        print_weights(s["weights"], console, names_known=True)
