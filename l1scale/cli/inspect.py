"""``inspect`` and ``export``: a saved model's nonzero weights by name, and the model written
readable (text, JSON) or as ONNX; ``info MODEL`` (``tools.info``) shows :func:`show_model`."""

from __future__ import annotations

import click

from ._data import check_output, write_text_atomically
from ._format import echo_json, key_value_table, stdout_console
from ._params import handle_errors

_MODEL = click.argument("model", type=click.Path(exists=True, dir_okay=False, readable=True))


def load_with_metadata(path):
    """The estimator saved at ``path`` and its file's metadata."""
    from ..estimators import load
    from ..model_io import load_model

    return load(path), load_model(path)[2]


def print_weights(rows, console, names_known):
    """One table per row of coef_ (per class): rank, feature name, column (0-based), weight."""
    from rich.table import Table

    for row in rows:
        head = "weights" if row["class"] is None else f"class {row['class']}"
        shown = len(row["weights"])
        more = f", the {shown} largest" if shown < row["nnz"] else ""
        console.print(f"{head}: {row['nnz']} nonzero{more}; intercept {row['intercept']:.6g}")
        table = Table()
        table.add_column("#", justify="right")
        if names_known:
            table.add_column("feature")
        table.add_column("column", justify="right")
        table.add_column("weight", justify="right")
        for rank, w in enumerate(row["weights"], start=1):
            cells = [str(rank)]
            if names_known:
                cells.append(w["name"] or "-")
            cells += [str(w["index"]), f"{w['weight']:.6g}"]
            table.add_row(*cells)
        console.print(table)


def show_model(path, top, as_json):
    """``info MODEL``: what the model is (estimator, loss, lam, classes, width, nonzeros, how
    its solve ended) and its ``top`` largest weights per class."""
    from ..model_report import model_summary, nonzero_weights

    est, meta = load_with_metadata(path)
    summary = model_summary(est, meta)
    rows = nonzero_weights(est, top)
    if as_json:
        echo_json({"path": path, "kind": "model", **summary, "weights": rows})
        return
    console = stdout_console()
    table = key_value_table(path)
    lam = summary["lam"]
    results = summary["result"] or []
    for key, value in (
        ("kind", "l1scale model file"),
        ("estimator", f"{summary['estimator']}({summary['loss']})"),
        ("classes", " ".join(str(c) for c in summary["classes"]) if summary["classes"] else "(regression)"),
        ("lam", f"{lam:.6g}" if not isinstance(lam, list) else ", ".join(f"{v:.4g}" for v in lam)),
        ("features", f"{summary['n_features']}{'' if summary['feature_names'] else ' (no names)'}"),
        ("nnz(w)", str(summary["nnz"])),
        (
            "solve",
            "; ".join(
                f"objective {r['objective']:.8g}, {r['certificate_name']} {r['certificate']:.2e}, "
                f"stopped by {r['stop_reason']} after {r['n_iter']} iterations"
                for r in results
            )
            or "not recorded",
        ),
        ("format", f"version {summary.get('format_version')}, l1scale {summary.get('library_version')}"),
    ):
        table.add_row(key, value)
    console.print(table)
    print_weights(rows, console, summary["feature_names"])


@click.command()
@_MODEL
@click.option(
    "--top", type=click.IntRange(min=1), metavar="K", help="Only the K largest weights per class.  [default: all]"
)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@handle_errors
def inspect(model, top, as_json):
    """The nonzero weights of MODEL by feature name (names given to train with
    --feature-names, or a DataFrame's columns) and size, largest first, per class for
    more than two classes."""
    from ..model_report import nonzero_weights

    est, _ = load_with_metadata(model)
    rows = nonzero_weights(est, top)
    if as_json:
        echo_json({"model": model, "weights": rows})
        return
    print_weights(rows, stdout_console(), getattr(est, "feature_names_", None) is not None)


@click.command()
@_MODEL
@click.option(
    "--format",
    "to",
    type=click.Choice(["text", "json", "onnx"]),
    default="text",
    show_default=True,
    help="text: a readable model (header, then per class its intercept and name, index, weight "
    "of each nonzero weight); json: the same as JSON; onnx: an ONNX graph (needs skl2onnx).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write here (atomically).  [default: standard output; required for onnx]",
)
@click.option("--float32", is_flag=True, help="onnx: input and outputs in float32 (default float64, as the model).")
@handle_errors
def export(model, to, output, float32):
    """Write MODEL readable (text or JSON, every nonzero weight by name) or as ONNX, to serve
    it with onnxruntime or any ONNX runtime (input X: dense rows of the model's width)."""
    from .._atomic import atomic_file
    from ..model_report import model_json, model_text

    check_output(output, "'-o' / '--output'")
    if to == "onnx" and output is None:
        raise click.BadParameter("--format onnx writes a binary file: give -o FILE", param_hint="'-o' / '--output'")
    if float32 and to != "onnx":
        raise click.BadParameter("applies to --format onnx", param_hint="--float32")
    est, meta = load_with_metadata(model)
    if to == "onnx":
        import numpy as np

        try:
            graph = est.to_onnx(dtype=np.float32 if float32 else np.float64)
        except ImportError as exc:
            raise click.ClickException(str(exc)) from None
        with atomic_file(output, what="ONNX model") as fh:
            fh.write(graph.SerializeToString())
        click.echo(f"wrote ONNX {output}: input X (n, {est.n_features_in_}) of float{32 if float32 else 64}", err=True)
        return
    text = model_json(est, meta) if to == "json" else model_text(est, meta)
    if output is None:
        click.echo(text, nl=False)
    else:
        write_text_atomically(output, text)
