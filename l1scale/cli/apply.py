"""``predict`` and ``evaluate``: a saved model applied to data, read chunk by chunk (metrics: ``_report``)."""

from __future__ import annotations

import click
import numpy as np

from ._data import (
    check_output,
    data_format,
    hash_bits_of_model,
    is_stdin,
    iter_data,
    text_file_atomically,
)
from ._format import echo_json, fmt, key_value_table, label, stdout_console
from ._params import format_option, handle_errors, zero_based_option
from ._report import is_classifier, model_outputs, report_from, unknown_labels

#: --format of predict and evaluate: a Vowpal Wabbit DATA is hashed as the model's training data was.
_FORMAT = format_option(b="the model's: its width is 2**b")
#: DATA of predict and evaluate: a file, a chunk-cache directory, or - (standard input).
_DATA = click.argument("data", type=click.Path(exists=True, readable=True, allow_dash=True))


def _load_model(path, data=None):
    """The estimator saved at ``path`` and the model file's metadata (how its data were read).

    The estimator is applied to unnamed columns (svmlight indices, hashed slots): feature names
    it has from a DataFrame are dropped, as a scikit-learn check would warn about them. When
    ``path`` is no model but ``data`` is one, the error says the order is MODEL DATA."""
    from .. import load
    from ..exceptions import ModelFormatError
    from ..model_io import is_model_file, load_model

    try:
        est = load(path)
    except ModelFormatError:
        if data is not None and not is_model_file(path) and not is_stdin(data) and is_model_file(data):
            raise click.UsageError(
                f"{path} is not a model file but {data} is: the order is `l1scale "
                f"{click.get_current_context().info_name} MODEL DATA` (liblinear's predict takes DATA MODEL)"
            ) from None
        raise
    est.__dict__.pop("feature_names_in_", None)
    return est, load_model(path)[2]


def trained_zero_based(meta):
    """The index base of the svmlight data a model was trained on (``"data": {"zero_based": ...}``
    in its metadata), or None: trained on a cache or VW data, or saved before it was recorded."""
    data = meta.get("data") if isinstance(meta, dict) else None
    value = data.get("zero_based") if isinstance(data, dict) else None
    return value if isinstance(value, bool) else None


def trained_format(meta):
    """The text format ("svmlight" or "vw") of a model's training data, None when not recorded."""
    data = meta.get("data") if isinstance(meta, dict) else None
    return data.get("format") if isinstance(data, dict) else None


def _base(flag):
    return "zero-based" if flag else "one-based"


def zero_based_for(meta, model, data, flag, fmt, warnings):
    """How svmlight DATA's indices are read for the model: as given (--zero-based/--one-based),
    else as the model's training data were (recorded at train), else detected (older models).

    A zero-based test file that never uses index 0 would be detected as one-based and every
    feature shifted by one column; the recorded base prevents that. An explicit flag that
    contradicts the model is obeyed, with a warning (appended to ``warnings`` and printed).
    """
    trained = trained_zero_based(meta)
    if fmt != "svmlight" or trained is None:
        return flag
    if flag is None:
        return trained
    if bool(flag) != trained:
        warnings.append(
            f"{data} is read as {_base(flag)} (--{_base(flag)}), but the model {model} was "
            f"trained on {_base(trained)} data: feature columns may be shifted by one"
        )
        click.echo(f"Warning: {warnings[-1]}", err=True)
    return flag


def _chunks_for(est, meta, model, data, zero_based, file_format, warnings):
    """DATA chunk by chunk at the model's width (narrower: widened; wider: an error); Vowpal
    Wabbit DATA hashed into the model's 2**b columns (a model of another width: an error).
    ``(X, y, sample_weight)`` per chunk, in bounded memory (a model over a generated space
    reads its raw input whole: one chunk)."""
    if getattr(est, "features_", None) is not None:  # a model over a generated space: its raw input
        from ._generated import read_raw

        if is_stdin(data):
            raise click.BadParameter(
                "a model over a generated feature space reads DATA from a file, not from standard input",
                param_hint="'DATA'",
            )
        X, y = read_raw(data, est.features_)
        yield X, y, None
        return
    if is_stdin(data) and file_format == "auto" and trained_format(meta) == "vw":
        file_format = "vw"  # standard input has no name to tell: the model's training data do
    fmt = data_format(data, file_format)
    hash_bits = hash_bits_of_model(est, model) if fmt == "vw" else None
    zero_based = zero_based_for(meta, model, data, zero_based, fmt, warnings)
    rows = 0
    for chunk in iter_data(
        data,
        zero_based=zero_based,
        n_features=est.n_features_in_,
        width_of=f"the {est.n_features_in_} of the model {model}",
        fmt=fmt,
        hash_bits=hash_bits,
    ):
        rows += chunk[1].shape[0]
        yield chunk
    if rows == 0:
        raise click.ClickException(f"{data}: no examples")


@click.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False, readable=True))
@_DATA
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="Write the predictions here (atomically) instead of stdout."
)
@click.option(
    "--proba",
    is_flag=True,
    help="Probability of the positive class (two classes) or of every class, "
    "in the model's class order, named by a first line '# classes: A B C' (logistic and probit models).",
)
@zero_based_option(
    help="Feature indices of svmlight DATA start at 0 / at 1.  [default: as in the model's "
    "training data (recorded by train), else detected; - (stdin): one-based]"
)
@_FORMAT
@handle_errors
def predict(model, data, output, proba, zero_based, file_format):
    """One prediction per row of DATA: a label, or probabilities with --proba,
    or a value for a regression model.

    DATA is read chunk by chunk and the predictions written as they come, in
    bounded memory whatever its size: an svmlight or VW file, a cache directory,
    or - (standard input: svmlight, or --format vw).
    """
    check_output(output, "'-o' / '--output'")
    est, meta = _load_model(model, data)
    if proba and not hasattr(est, "predict_proba"):
        kind = "a regression" if not is_classifier(est) else f"a {est.loss}"
        raise click.BadParameter(
            f"{model} is {kind} model; probabilities need a logistic or probit classifier", param_hint="--proba"
        )
    chunks = _chunks_for(est, meta, model, data, zero_based, file_format, [])
    # More than two classes: a first line names the class of each column of probabilities.
    header = _proba_header(est) if proba and len(est.classes_) > 2 else ""
    if output is None:
        click.echo(header, nl=False)
        for X, _, _ in chunks:
            click.echo(_prediction_text(est, X, proba), nl=False)
        return
    with text_file_atomically(output) as fh:
        fh.write(header)
        for X, _, _ in chunks:
            fh.write(_prediction_text(est, X, proba))


def _proba_header(est):
    """``# classes: A B C``: the order of the probability columns (a comment line, which
    numpy.loadtxt and pandas' ``comment="#"`` skip)."""
    return "# classes: " + " ".join(str(label(c)) for c in est.classes_) + "\n"


def _prediction_text(est, X, proba):
    """The lines predict writes for the rows of X (floats as repr: exact)."""
    if proba:
        P = est.predict_proba(X)
        lines = (
            [repr(float(p)) for p in P[:, 1]]
            if P.shape[1] == 2
            else [" ".join(repr(float(p)) for p in row) for row in P]
        )
    elif is_classifier(est):
        lines = [str(label(v)) for v in est.predict(X)]
    else:
        lines = [repr(float(v)) for v in est.predict(X)]
    return "".join(line + "\n" for line in lines)


@click.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False, readable=True))
@_DATA
@zero_based_option(
    help="Feature indices of svmlight DATA start at 0 / at 1.  [default: as in the model's "
    "training data (recorded by train), else detected; - (stdin): one-based]"
)
@_FORMAT
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@handle_errors
def evaluate(model, data, zero_based, file_format, as_json):
    """Metrics of MODEL on labelled DATA: accuracy, AUC, AUPRC, precision,
    recall, F1, log loss and the confusion matrix (R^2, MSE, MAE for a regression).

    DATA (a file, a cache directory or - for standard input) is read chunk by
    chunk: memory holds the labels and the model's outputs, never X whole.
    """
    est, meta = _load_model(model, data)
    warnings = []
    ys, outputs = [], []
    for X, y, _ in _chunks_for(est, meta, model, data, zero_based, file_format, warnings):
        ys.append(y)
        outputs.append(model_outputs(est, X))
    y = np.concatenate(ys)
    pred, scores, proba = (None if parts[0] is None else np.concatenate(parts) for parts in zip(*outputs))
    result = {"model": model, "data": data, **report_from(est, y, pred, scores, proba)}
    unknown = unknown_labels(est, y)
    result["warnings"] = warnings
    if unknown:
        result["warnings"].append(
            f"{data} has labels {unknown} that are not classes of the model {[label(c) for c in est.classes_]}"
        )
        click.echo(f"Warning: {result['warnings'][-1]}", err=True)
    if as_json:
        echo_json(result)
        return
    from rich.table import Table

    console = stdout_console()
    table = key_value_table(f"{model} on {data}", value_justify="right")
    keys = (
        ("n_samples", "r2", "mse", "mae")
        if "r2" in result
        else ("n_samples", "accuracy", "auc", "auprc", "precision", "recall", "f1", "log_loss", "pos_label")
    )
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
