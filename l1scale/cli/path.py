"""``path``: the regularisation path of DATA, cross-validated: a table, the chosen model, a plot."""

from __future__ import annotations

import contextlib
import time
import warnings

import click
import numpy as np

from ._data import check_output, check_vw_flags, data_format, read_data
from ._format import echo_json, fmt, label, stdout_console, trimmed
from ._params import (
    DEFAULT_HASH_BITS,
    LOSSES,
    format_option,
    handle_errors,
    multi_class_option,
    n_jobs_option,
    zero_based_option,
)
from ._progress import CompileNotice, PathProgress

_PROBABILISTIC = tuple(name for name in LOSSES if name in ("logistic", "probit"))
_SCORINGS = ("neg_log_loss", "accuracy", "roc_auc", "average_precision")


@click.command()
@click.argument("data", type=click.Path(exists=True, readable=True))
@click.option("--loss", type=click.Choice(_PROBABILISTIC), default="logistic", show_default=True)
@click.option(
    "--n-lams",
    type=click.IntRange(min=2),
    default=50,
    show_default=True,
    help="Values of lam, geometric from lam_max down.",
)
@click.option(
    "--lam-min-ratio",
    type=click.FloatRange(0, 1, min_open=True),
    default=1e-3,
    show_default=True,
    help="The smallest lam, as a fraction of lam_max.",
)
@click.option(
    "--cv",
    "folds",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Stratified folds scoring each lam (0: the path only, no cross-validation).",
)
@click.option(
    "--scoring",
    type=click.Choice(_SCORINGS),
    default="neg_log_loss",
    show_default=True,
    help="Held-out score, higher is better (neg_log_loss: minus the log-loss, as scikit-learn names it).",
)
@click.option(
    "--rule",
    type=click.Choice(["min", "1se"]),
    default="min",
    show_default=True,
    help="The lam refitted and saved by -o: min, the best mean score; 1se, the largest lam "
    "within one standard error of it (glmnet's lambda.1se: sparser, as good).",
)
@click.option("--l1-ratio", type=click.FloatRange(0, 1, min_open=True), default=1.0, show_default=True)
@click.option("--intercept/--no-intercept", default=True, show_default=True)
@click.option(
    "--standardize/--no-standardize",
    default=False,
    show_default=True,
    help="Scale each column to unit variance for the solves (as train --standardize), each fold's "
    "columns by its own training rows; lams refer to the scaled problem, the saved model's weights "
    "to the original columns.",
)
@multi_class_option(auto="multinomial with the logistic loss (path cross-validates ovr in Python only)")
@click.option("--tol", type=click.FloatRange(0, min_open=True), default=1e-6, show_default=True)
@n_jobs_option(
    "the cross-validation's folds, or with --cv 0 the path's segments (each after the first starts from zero: the "
    "same path to --tol, not to the bit)"
)
@click.option(
    "--processes",
    is_flag=True,
    help="Run --n-jobs's jobs in worker processes (joblib's loky), not threads: they share no GIL (earn's "
    "5-fold CV 1.70x on two cores, against 1.42x in threads), and take some seconds to start (each imports "
    "l1scale and loads its compiled kernels): for cross-validations that run longer than that.",
)
@zero_based_option()
@format_option()
@click.option(
    "--hash-bits",
    type=click.IntRange(1, 31),
    metavar="B",
    help=f"Vowpal Wabbit DATA: features hashed into 2**B columns.  [default: {DEFAULT_HASH_BITS}]",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Save the chosen model here (refit on all the data at the lam --rule picks), as train -o does.",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False),
    help="Save a plot here (PNG): coefficients against lam, and the CV score with error bars, "
    "lam_min and lam_1se marked (needs matplotlib: pip install 'l1scale[plot]').",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print the path as JSON.")
@handle_errors
def path(
    data,
    loss,
    n_lams,
    lam_min_ratio,
    folds,
    scoring,
    rule,
    l1_ratio,
    intercept,
    standardize,
    multi_class,
    tol,
    n_jobs,
    processes,
    zero_based,
    file_format,
    hash_bits,
    output,
    plot,
    quiet,
    as_json,
):
    """Solve DATA along a path of lam (warm starts) and choose lam by cross-validation.

    Binary classification (two labels; the larger is positive), or the multinomial
    model of more than two classes (--multi-class auto or multinomial, logistic loss;
    the scores neg_log_loss or accuracy). Prints, per lam: lam / lam_max, lam, nnz(w),
    the objective, and the mean cross-validated score with its standard error; lam_min
    (the best mean score) and lam_1se (the largest lam within one standard error of it)
    are marked, and the one --rule picks is saved by -o.
    """
    from ..path import GridEdgeWarning, SparseLogisticRegressionCV, regularization_path

    check_output(output, "'-o' / '--output'")
    check_output(plot, "'--plot'")
    if processes and (n_jobs is None or n_jobs == 1):
        raise click.BadParameter(
            "runs --n-jobs's jobs in processes: give --n-jobs 2 or more (-1: every core)", param_hint="--processes"
        )
    if output is not None and folds < 2:
        raise click.BadParameter("needs --cv 2 or more: the saved model is the cross-validated choice", param_hint="-o")
    if plot is not None:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise click.BadParameter("needs matplotlib (pip install 'l1scale[plot]')", param_hint="--plot")
    fmt_name = data_format(data, file_format)
    check_vw_flags(fmt_name, data, hash_bits=hash_bits, zero_based=zero_based)
    # zero_based None: detected, as train reads it (the saved model records the base)
    X, y, w, base = read_data(data, zero_based=zero_based, fmt=file_format, hash_bits=hash_bits, return_zero_based=True)
    classes = np.unique(y)
    multinomial = classes.shape[0] > 2 and multi_class != "ovr" and loss == "logistic"
    if classes.shape[0] > 2 and not multinomial:
        why = "--multi-class ovr" if multi_class == "ovr" else f"--loss {loss}"
        raise click.ClickException(
            f"{data}: `l1scale path` fits binary problems or the multinomial model (logistic loss) of more than "
            f"two classes, not {why}; the labels are {classes.tolist()}"
        )
    if multinomial and scoring not in ("neg_log_loss", "accuracy"):
        raise click.BadParameter(
            f"{scoring} scores a binary problem; the multinomial model takes neg_log_loss or accuracy",
            param_hint="--scoring",
        )
    y_path = y if multinomial else np.where(y == classes[1], 1.0, -1.0)
    cv, messages = None, []
    t0 = time.perf_counter()
    if processes:
        from joblib import parallel_config

        backend = parallel_config(backend="loky")
    else:
        backend = contextlib.nullcontext()
    notice = contextlib.nullcontext() if quiet else CompileNotice()
    with (
        backend,
        PathProgress(enabled=not quiet) as progress,
        notice,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always", GridEdgeWarning)
        if folds >= 2:
            cv = SparseLogisticRegressionCV(
                loss,
                n_lams=n_lams,
                lam_min_ratio=lam_min_ratio,
                cv=folds,
                scoring=scoring,
                rule=rule,
                l1_ratio=l1_ratio,
                fit_intercept=intercept,
                tol=tol,
                multi_class=multi_class,
                standardize=standardize,
                refit_path="full",  # the refit over the whole grid is the table's path: no second solve
                n_jobs=n_jobs,
                progress=progress.stage(f"{folds}-fold cross-validation and the path on all the data"),
            ).fit(X, y, sample_weight=w)
            full = cv.path_
        else:
            on_all = progress.stage("path on all the data", total=n_lams)
            full = regularization_path(
                X,
                y_path,
                "multinomial" if multinomial else loss,
                n_lams=n_lams,
                lam_min_ratio=lam_min_ratio,
                l1_ratio=l1_ratio,
                fit_intercept=intercept,
                sample_weight=w,
                tol=tol,
                standardize=standardize,
                callback=lambda k, result: on_all(k + 1, n_lams),
                n_jobs=n_jobs,
            )
    messages = list(dict.fromkeys(str(m.message) for m in caught if not issubclass(m.category, DeprecationWarning)))
    seconds = time.perf_counter() - t0
    if output is not None:
        metadata = None if base is None else {"data": {"format": "svmlight", "zero_based": bool(base)}}
        if fmt_name == "vw":
            metadata = {"data": {"format": "vw", "hash_bits": DEFAULT_HASH_BITS if hash_bits is None else hash_bits}}
        cv.save(output, metadata=metadata)
    if plot is not None:
        _save_plot(full, cv, plot)
    doc = _document(data, loss, scoring, rule, full, cv, output, plot, messages, seconds)
    doc["standardize"] = standardize
    if multinomial:  # only then: the binary documents keep their keys
        doc["multi_class"] = "multinomial"
        doc["classes"] = [label(c) for c in classes]
    for message in messages:
        click.echo(f"Warning: {message}", err=True)
    if as_json:
        echo_json(doc)
    else:
        _print(doc)


def _document(data, loss, scoring, rule, full, cv, output, plot, messages, seconds):
    """The results as one JSON-ready dict: the path's rows, the chosen lams, what was saved."""
    lam_max = float(full.lams[0])
    index = {}  # the rows of lam_min and lam_1se (the CV's grid is the path's)
    if cv is not None:
        index = {
            rule_: int(np.argmin(np.abs(full.lams - lam[0])))
            for rule_, lam in (("min", cv.lam_min_), ("1se", cv.lam_1se_))
        }
    rows = []
    for k, (lam, nnz, objective) in enumerate(zip(full.lams, full.nnz, full.objectives)):
        marks = [name for name, i in index.items() if i == k]
        rows.append(
            {
                "lam": float(lam),
                "lam_ratio": float(lam / lam_max),
                "nnz": int(nnz),
                "objective": float(objective),
                "cv_mean": None if cv is None else float(cv.cv_mean_[k]),
                "cv_se": None if cv is None else float(cv.cv_se_[k]),
                "marks": marks,
                "chosen": rule in marks,
            }
        )
    chosen = None if cv is None else index[rule]
    return {
        "command": "path",
        "data": data,
        "loss": loss,
        "scoring": None if cv is None else scoring,
        "rule": None if cv is None else rule,
        "n_folds": None if cv is None else int(cv.scores_.shape[0]),
        "lam_max": lam_max,
        "lam_min": None if cv is None else float(cv.lam_min_[0]),
        "lam_1se": None if cv is None else float(cv.lam_1se_[0]),
        "chosen_lam": None if cv is None else float(cv.lam_[0]),
        "chosen_nnz": None if chosen is None else int(full.nnz[chosen]),
        "path": rows,
        "model": output,
        "plot": plot,
        "seconds": seconds,
        "warnings": messages,
    }


def _print(doc):
    """The path as a table that fits 80 columns, then the chosen lams and what was saved."""
    from rich.table import Table
    from rich.text import Text

    console = stdout_console()
    cv = doc["scoring"] is not None
    model = f"multinomial ({len(doc['classes'])} classes)" if doc.get("multi_class") else doc["loss"]
    model += ", standardised" if doc.get("standardize") else ""
    head = f"path of {doc['data']}: {model}, {len(doc['path'])} lams from lam_max = {doc['lam_max']:.4g}"
    if cv:
        head += f"; {doc['n_folds']}-fold CV, {doc['scoring']} (higher is better)"
    console.print(trimmed(Text(head)))
    table = Table(box=None, pad_edge=False, show_edge=False)
    for name in ("lam/lam_max", "lam", "nnz", "objective") + ((doc["scoring"], "s.e.", "") if cv else ()):
        table.add_column(name, justify="left" if name == "" else "right", no_wrap=True)
    for r in doc["path"]:
        cells = [fmt(r["lam_ratio"], ".3g"), fmt(r["lam"], ".4g"), str(r["nnz"]), fmt(r["objective"], ".6g")]
        if cv:
            marks = "=".join(r["marks"]) + (" *" if r["chosen"] else "")
            cells += [fmt(r["cv_mean"], ".5f"), fmt(r["cv_se"], ".1e"), marks]
        table.add_row(*cells)
    console.print(trimmed(table))
    if not cv:
        return
    lines = [
        f"min: lam_min = {doc['lam_min']:.4g}, the best mean {doc['scoring']}",
        f"1se: lam_1se = {doc['lam_1se']:.4g}, the largest lam within one standard error of it",
        f"*: the chosen lam (--rule {doc['rule']}), {doc['chosen_nnz']} nonzero weights"
        + (f", saved to {doc['model']}" if doc["model"] else "; save it with -o MODEL"),
    ]
    if doc["plot"]:
        lines.append(f"plot: {doc['plot']}")
    for line in lines:
        console.print(trimmed(Text(line)))


def _save_plot(full, cv, output):
    from .._atomic import atomic_file
    from ..plot import path_figure

    fig = path_figure(full, cv)
    with atomic_file(output) as f:  # a failed plot leaves no half-written file
        fig.savefig(f, format="png", dpi=120)
