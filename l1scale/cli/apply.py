"""``predict`` and ``evaluate``: a saved model applied to data; the metrics ``train`` reports too."""

from __future__ import annotations

import click
import numpy as np

from ._data import check_output, data_format, hash_bits_of_model, read_data, write_text_atomically
from ._format import echo_json, fmt, key_value_table, label, stdout_console
from ._params import CLASSIFICATION_LOSSES, format_option, handle_errors, zero_based_option

#: --format of predict and evaluate: a Vowpal Wabbit DATA is hashed as the model's training data was.
_FORMAT = format_option(b="the model's: its width is 2**b")


def _load_model(path):
    from .. import load

    return load(path)


def _read_for(est, model, data, zero_based, file_format):
    """DATA in memory at the model's width (narrower: widened; wider: an error); Vowpal
    Wabbit DATA hashed into the model's 2**b columns (a model of another width: an error)."""
    if getattr(est, "features_", None) is not None:  # a model over a generated space: its raw input
        from ._generated import read_raw

        X, y = read_raw(data, est.features_)
        return X, y, None
    fmt = data_format(data, file_format)
    hash_bits = hash_bits_of_model(est, model) if fmt == "vw" else None
    return read_data(data, zero_based=zero_based, n_features=est.n_features_in_,
                     width_of=f"the {est.n_features_in_} of the model {model}", fmt=fmt, hash_bits=hash_bits)


def is_classifier(est):
    return hasattr(est, "classes_") or getattr(est, "loss", None) in CLASSIFICATION_LOSSES


def report(est, X, y):
    """classification_report (plus log loss) for a classifier; R^2 / MSE / MAE for a regressor."""
    from ..metrics import classification_report, log_loss

    if not is_classifier(est):
        pred = est.predict(X)
        resid = np.asarray(y, dtype=np.float64) - pred
        ss_tot = float(np.sum((y - np.mean(y)) ** 2))
        return {"n_samples": int(y.shape[0]),
                "r2": (1.0 - float(resid @ resid) / ss_tot) if ss_tot > 0 else None,
                "mse": float(np.mean(resid ** 2)), "mae": float(np.mean(np.abs(resid)))}
    classes = est.classes_
    pred = est.predict(X)
    scores = est.decision_function(X) if classes.shape[0] == 2 else None
    labels = np.unique(np.concatenate([np.unique(y), classes]))
    pos = classes[1] if classes.shape[0] == 2 and labels.shape[0] == 2 else None
    result = classification_report(y, pred, scores, pos_label=pos)
    result["log_loss"] = None
    if hasattr(est, "predict_proba") and np.isin(y, classes).all():
        result["log_loss"] = log_loss(y, est.predict_proba(X), labels=classes)
    result["labels"] = [label(v) for v in result["labels"]]
    result["pos_label"] = label(result["pos_label"])
    return result


def unknown_labels(est, y):
    if not is_classifier(est):
        return []
    return [label(v) for v in np.setdiff1d(np.unique(y), est.classes_)]


@click.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False, readable=True))
@click.argument("data", type=click.Path(exists=True, readable=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the predictions here (atomically) instead of stdout.")
@click.option("--proba", is_flag=True,
              help="Probability of the positive class (two classes) or of every class, "
                   "in the model's class order (logistic and probit models).")
@zero_based_option()
@_FORMAT
@handle_errors
def predict(model, data, output, proba, zero_based, file_format):
    """One prediction per row of DATA: a label, or probabilities with --proba,
    or a value for a regression model."""
    check_output(output, "'-o' / '--output'")
    est = _load_model(model)
    if proba and not hasattr(est, "predict_proba"):
        kind = "a regression" if not is_classifier(est) else f"a {est.loss}"
        raise click.BadParameter(f"{model} is {kind} model; probabilities need a logistic or "
                                 "probit classifier", param_hint="--proba")
    X, _, _ = _read_for(est, model, data, zero_based, file_format)
    if proba:
        P = est.predict_proba(X)
        lines = ([repr(float(p)) for p in P[:, 1]] if P.shape[1] == 2 else
                 [" ".join(repr(float(p)) for p in row) for row in P])
    elif is_classifier(est):
        lines = [str(label(v)) for v in est.predict(X)]
    else:
        lines = [repr(float(v)) for v in est.predict(X)]
    text = "\n".join(lines) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        write_text_atomically(output, text)


@click.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False, readable=True))
@click.argument("data", type=click.Path(exists=True, readable=True))
@zero_based_option()
@_FORMAT
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@handle_errors
def evaluate(model, data, zero_based, file_format, as_json):
    """Metrics of MODEL on labelled DATA: accuracy, AUC, AUPRC, precision,
    recall, F1, log loss and the confusion matrix (R^2, MSE, MAE for a regression)."""
    est = _load_model(model)
    X, y, _ = _read_for(est, model, data, zero_based, file_format)
    result = {"model": model, "data": data, **report(est, X, y)}
    unknown = unknown_labels(est, y)
    result["warnings"] = []
    if unknown:
        result["warnings"].append(f"{data} has labels {unknown} that are not classes of the model "
                                  f"{[label(c) for c in est.classes_]}")
        click.echo(f"Warning: {result['warnings'][-1]}", err=True)
    if as_json:
        echo_json(result)
        return
    from rich.table import Table

    console = stdout_console()
    table = key_value_table(f"{model} on {data}", value_justify="right")
    keys = (("n_samples", "r2", "mse", "mae") if "r2" in result else
            ("n_samples", "accuracy", "auc", "auprc", "precision", "recall", "f1", "log_loss",
             "pos_label"))
    for key in keys:
        if result.get(key) is not None:
            table.add_row(key, fmt(result[key]))
    console.print(table)
    if "confusion" in result:
        console.print("confusion matrix (rows: true label, columns: predicted)")
        cm = Table()
        cm.add_column("")
        for name in result["labels"]:
            cm.add_column(str(name), justify="right")
        for name, row in zip(result["labels"], result["confusion"]):
            cm.add_row(str(name), *(fmt(v) for v in row))
        console.print(cm)
