"""The summary ``train`` prints: built from the fitted estimator, shown as JSON or a table."""

from __future__ import annotations

import math

import numpy as np

from ._format import fmt, key_value_table, label, stdout_console, versions


def train_summary(est, data, data_info, train_report, load_seconds, fit_seconds, messages):
    results = est.result_ if isinstance(est.result_, list) else [est.result_]
    rel = [r.relative_certificate for r in results]
    worst = results[int(np.argmax(rel))] if not np.isnan(rel).all() else results[0]
    skip = {"callback", "verbose", "warm_start"}
    summary = {
        "command": "train",
        "data": {"path": data, **data_info},
        "estimator": type(est).__name__,
        "params": {k: v for k, v in est.get_params().items() if k not in skip},
        "solver": est.solver_,
        "classes": [label(c) for c in est.classes_] if hasattr(est, "classes_") else None,
        # one lam, or one per one-vs-rest problem (lam_ratio scales each problem's lam_max)
        "lam": float(np.ravel(est.lam_)[0]) if np.size(est.lam_) == 1 else
        [float(v) for v in np.ravel(est.lam_)],
        "objective": float(sum(r.objective for r in results)),
        "certificate_name": worst.certificate_name,
        "certificate": float(worst.certificate),
        "relative_certificate": float(worst.relative_certificate),
        "converged": all(r.converged for r in results),
        "stop_reason": worst.stop_reason if len(results) == 1 else
        ",".join(sorted({r.stop_reason for r in results})),
        "nnz": int(np.count_nonzero(est.coef_)),
        "n_iter": int(sum(r.n_iter for r in results)),
        "seconds": {"load": load_seconds, "fit": fit_seconds,
                    "solve": float(sum(r.timings.get("solve", 0.0) for r in results)),
                    "compile": float(sum(r.timings.get("compile", 0.0) for r in results))},
        "train": train_report,
        "test": None,
        "warnings": list(messages),
        "versions": versions(),
    }
    if len(results) > 1:  # one-vs-rest: the per-class problems (objective summed above)
        summary["problems"] = [
            {"class": label(c), "lam": float(lam), "objective": float(r.objective),
             "certificate": float(r.certificate), "relative_certificate": float(r.relative_certificate),
             "converged": bool(r.converged), "stop_reason": r.stop_reason, "nnz": int(r.nnz),
             "n_iter": int(r.n_iter)}
            for c, lam, r in zip(est.classes_, est.lam_, results)]
    return summary


def _metric_rows(report, prefix):
    if "r2" in report:
        return [(f"{prefix} R^2", fmt(report["r2"])), (f"{prefix} MSE", fmt(report["mse"]))]
    rows = [(f"{prefix} accuracy", fmt(report["accuracy"]))]
    for key, name in (("auc", "AUC"), ("auprc", "AUPRC"), ("f1", "F1")):
        if report.get(key) is not None:
            rows.append((f"{prefix} {name}", fmt(report[key])))
    return rows


def print_train_summary(s):
    loss = s["params"].get("loss", "squared")
    table = key_value_table(f"{s['estimator']}({loss}) on {s['data']['path']}")
    d = s["data"]
    status = (f"yes ({s['stop_reason']})" if s["converged"] else f"no ({s['stop_reason']})")
    if s["stop_reason"] == "one_pass":
        status = "one pass (the Online algorithm has no stopping test)"
    rows = [("data", f"{d['n_samples']} x {d['n_features']}, {d['nnz']} nonzeros")]
    if math.isnan(s["objective"]):  # the Online algorithm: one pass, no objective or certificate
        rows.append(("objective", "not computed (one pass)"))
    else:
        rows += [("objective", f"{s['objective']:.10g}"),
                 (s["certificate_name"], f"{s['certificate']:.3e} (relative "
                                         f"{s['relative_certificate']:.3e}, tol {s['params']['tol']:g})")]
    rows += [
        ("converged", status),
        ("nnz(w)", f"{s['nnz']} of {d['n_features'] * max(1, len(s.get('problems', [])))}"),
        ("passes" if s["solver"] in ("mp", "rmmp", "online") else "iterations", str(s["n_iter"])),
        ("lam", f"{s['lam']:.6g}" if not isinstance(s["lam"], list) else
         ", ".join(f"{v:.4g}" for v in s["lam"]) + " (one per class)"),
        ("seconds", f"{s['seconds']['fit']:.3f} fit ({s['seconds']['solve']:.3f} solve, "
                    f"{s['seconds']['compile']:.3f} JIT compile), {s['seconds']['load']:.3f} load"),
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
    stdout_console().print(table)
