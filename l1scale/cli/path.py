"""``path``: the regularisation path of DATA, cross-validated, as a table and a plot."""

from __future__ import annotations

import click
import numpy as np

from ._data import check_output, read_data
from ._format import echo_json
from ._params import (
    LOSSES,
    format_option,
    handle_errors,
    zero_based_option,
    zero_based_value,
)

_PROBABILISTIC = tuple(name for name in LOSSES if name in ("logistic", "probit"))


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
    type=click.Choice(["log_loss", "accuracy", "roc_auc", "average_precision"]),
    default="log_loss",
    show_default=True,
)
@click.option("--l1-ratio", type=click.FloatRange(0, 1, min_open=True), default=1.0, show_default=True)
@click.option("--intercept/--no-intercept", default=True, show_default=True)
@click.option("--tol", type=click.FloatRange(0, min_open=True), default=1e-6, show_default=True)
@zero_based_option()
@format_option()
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Save a plot here (PNG): coefficients and the cross-validated score against lam "
    "(needs matplotlib: pip install 'l1scale[plot]').",
)
@click.option("--json", "as_json", is_flag=True, help="Print the path as JSON.")
@handle_errors
def path(
    data,
    loss,
    n_lams,
    lam_min_ratio,
    folds,
    scoring,
    l1_ratio,
    intercept,
    tol,
    zero_based,
    file_format,
    output,
    as_json,
):
    """Solve DATA along a path of lam (warm starts) and choose lam by cross-validation.

    Binary classification (two labels; the larger is positive). Prints, per lam: lam /
    lam_max, nnz(w), the objective and the mean cross-validated score; the chosen lam
    is marked.
    """
    from ..path import SparseLogisticRegressionCV, regularization_path

    check_output(output, "'-o' / '--output'")
    if output is not None:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise click.BadParameter("needs matplotlib (pip install 'l1scale[plot]')", param_hint="-o")
    X, y, w = read_data(data, zero_based=zero_based_value(zero_based), fmt=file_format)
    classes = np.unique(y)
    if classes.shape[0] != 2:
        raise click.ClickException(f"{data}: `l1scale path` fits binary problems; the labels are {classes.tolist()}")
    y_pm = np.where(y == classes[1], 1.0, -1.0)
    scores, chosen = None, None
    if folds >= 2:
        cv = SparseLogisticRegressionCV(
            loss,
            n_lams=n_lams,
            lam_min_ratio=lam_min_ratio,
            cv=folds,
            scoring=scoring,
            l1_ratio=l1_ratio,
            fit_intercept=intercept,
            tol=tol,
        ).fit(X, y, sample_weight=w)
        lams, scores, chosen = cv.lams_, cv.scores_.mean(axis=0), float(cv.lam_[0])
    else:
        lams = None
    full = regularization_path(
        X,
        y_pm,
        loss,
        lams=lams,
        n_lams=n_lams,
        lam_min_ratio=lam_min_ratio,
        l1_ratio=l1_ratio,
        fit_intercept=intercept,
        sample_weight=w,
        tol=tol,
    )
    rows = [
        {
            "lam": float(lam),
            "lam_ratio": float(lam / full.lams[0]),
            "nnz": int(nnz),
            "objective": float(obj),
            "cv_score": None if scores is None else float(scores[k]),
            "chosen": chosen == float(lam),
        }
        for k, (lam, nnz, obj) in enumerate(zip(full.lams, full.nnz, full.objectives))
    ]
    if output is not None:
        _plot(full, scores, chosen, scoring, output)
    if as_json:
        echo_json(
            {
                "command": "path",
                "data": data,
                "loss": loss,
                "scoring": scoring if scores is not None else None,
                "lam_max": float(full.lams[0]),
                "chosen_lam": chosen,
                "path": rows,
                "plot": output,
            }
        )
        return
    click.echo(f"{'lam/lam_max':>12}  {'nnz':>6}  {'objective':>14}  {scoring if scores is not None else '':>12}")
    for r in rows:
        score = "" if r["cv_score"] is None else f"{r['cv_score']:.6f}"
        click.echo(
            f"{r['lam_ratio']:12.4g}  {r['nnz']:6d}  {r['objective']:14.8g}  {score:>12}"
            + ("  <- chosen" if r["chosen"] else "")
        )
    if output is not None:
        click.echo(f"plot: {output}")


def _plot(path, scores, chosen, scoring, output):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 2 if scores is not None else 1
    fig, axes = plt.subplots(panels, 1, figsize=(7, 3.2 * panels), sharex=True, squeeze=False)
    ratio = path.lams / path.lams[0]
    ax = axes[0, 0]
    ax.plot(ratio, path.coefs, lw=0.8)
    ax.set_xscale("log")
    ax.set_ylabel("coefficients")
    ax.set_title(f"regularisation path ({int(path.nnz[-1])} nonzeros at the smallest lam)")
    if scores is not None:
        axes[1, 0].plot(ratio, scores, marker=".")
        axes[1, 0].set_ylabel(f"CV {scoring}")
        for a in axes[:, 0]:
            a.axvline(chosen / path.lams[0], color="k", ls="--", lw=0.8)
    axes[-1, 0].set_xlabel("lam / lam_max")
    axes[-1, 0].invert_xaxis()
    fig.tight_layout()
    from ..data._svmlight_write import atomic_file

    with atomic_file(output) as f:  # a failed plot leaves no half-written file
        fig.savefig(f, format="png", dpi=120)
    plt.close(fig)
