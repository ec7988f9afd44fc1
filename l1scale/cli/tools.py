"""``info``, ``convert`` and ``demo``: look at data (or a model file), change its format, try the library."""

from __future__ import annotations

import contextlib
import os

import click
import numpy as np

from ._data import check_output, check_vw_flags, data_format, expected_format
from ._format import echo_json, key_value_table, label, stdout_console, trimmed, versions
from ._params import (
    DEFAULT_HASH_BITS,
    check_no_layout_flag,
    format_option,
    handle_errors,
    zero_based_option,
    zero_based_value,
)
from ._progress import CompileNotice

#: DST names that ``convert`` writes as svmlight text (anything else: a cache directory).
SVMLIGHT_SUFFIXES = (".svm", ".svmlight", ".libsvm", ".txt", ".gz", ".bz2", ".xz")


@click.command()
@click.argument("data", type=click.Path(exists=True, readable=True))
@zero_based_option()
@format_option()
@click.option(
    "--hash-bits",
    type=click.IntRange(1, 31),
    metavar="B",
    help=f"Vowpal Wabbit DATA: features hashed into 2**B columns.  [default: {DEFAULT_HASH_BITS}]",
)
@click.option(
    "--top",
    type=click.IntRange(min=1),
    metavar="K",
    default=20,
    show_default=True,
    help="A model file: its K largest weights per class.",
)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@handle_errors
def info(data, zero_based, file_format, hash_bits, top, as_json):
    """Size and labels of DATA, read in one streamed pass (bounded memory); or, for a model
    file (saved by train -o), what it is and its largest weights by feature name."""
    from ..model_io import is_model_file

    if is_model_file(data):
        from .inspect import show_model

        return show_model(data, top, as_json)
    fmt = data_format(data, file_format)
    with expected_format(data, fmt):
        return _data_info(data, fmt, zero_based, hash_bits, as_json)


def _data_info(data, fmt, zero_based, hash_bits, as_json):
    """``info DATA``: one pass, then the table (or JSON)."""
    from ..data import Stream

    check_vw_flags(fmt, data, hash_bits=hash_bits, zero_based=zero_based)
    is_cache = fmt == "cache"
    if is_cache:
        check_no_layout_flag(zero_based, data)
        stream = Stream.from_cache(data)
        size = sum(e.stat().st_size for e in os.scandir(data) if e.is_file())
    elif fmt == "vw":
        stream = Stream.from_vw(data, DEFAULT_HASH_BITS if hash_bits is None else hash_bits)
        size = os.path.getsize(data)
    else:
        stream = Stream.from_svmlight(data, zero_based=zero_based_value(zero_based))
        size = os.path.getsize(data)
    n = nnz = 0
    row_max, row_min = 0, None
    counts = {}
    for chunk in stream:
        rows = chunk.X.shape[0]
        per_row = np.diff(chunk.X.indptr) if hasattr(chunk.X, "indptr") else np.count_nonzero(chunk.X, axis=1)
        n += rows
        nnz += int(per_row.sum())
        if rows:
            row_max = max(row_max, int(per_row.max()))
            row_min = int(per_row.min()) if row_min is None else min(row_min, int(per_row.min()))
        for v, c in zip(*np.unique(chunk.y, return_counts=True)):
            counts[float(v)] = counts.get(float(v), 0) + int(c)
    d = int(stream.n_features or 0)
    result = {
        "path": data,
        "format": fmt,
        "file_size": int(size),
        "n_samples": n,
        "n_features": d,
        "nnz": nnz,
        "density": nnz / (n * d) if n and d else 0.0,
        "nnz_per_row": {"mean": nnz / n if n else 0.0, "min": row_min or 0, "max": row_max},
        "n_labels": len(counts),
        "labels": [{"label": label(v), "count": counts[v]} for v in sorted(counts)],
    }
    if fmt == "vw":
        result["hash_bits"] = DEFAULT_HASH_BITS if hash_bits is None else hash_bits
    if as_json:
        echo_json(result)
        return
    from rich.table import Table

    table = key_value_table(data, value_justify="right")
    for key, value in (
        ("format", result["format"]),
        ("file size", _bytes(size)),
        ("samples", n),
        ("features", d),
        ("nonzeros", nnz),
        ("density", f"{result['density']:.4g}"),
        (
            "nonzeros per row",
            (f"{result['nnz_per_row']['mean']:.4g} mean, {result['nnz_per_row']['min']} min, {row_max} max"),
        ),
        ("distinct labels", len(counts)),
    ):
        table.add_row(key, str(value))
    console = stdout_console()
    console.print(table)
    labels = Table(title="labels", title_justify="left")
    labels.add_column("label", justify="right")
    labels.add_column("count", justify="right")
    labels.add_column("fraction", justify="right")
    shown = result["labels"] if len(counts) <= 20 else result["labels"][:20]
    for item in shown:
        labels.add_row(str(item["label"]), str(item["count"]), f"{item['count'] / n:.4f}")
    if len(counts) > 20:
        labels.add_row("...", f"{len(counts) - 20} more", "")
    console.print(labels)


def _bytes(size):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024


@click.command()
@click.argument("src", type=click.Path(exists=True, readable=True))
@click.argument("dst", type=click.Path())
@click.option(
    "--to",
    "to",
    type=click.Choice(["cache", "svmlight"]),
    help="Output format.  [default: svmlight when DST ends in .svm, .svmlight, .libsvm, "
    ".txt, .gz, .bz2 or .xz; else a cache directory]",
)
@zero_based_option(help="How SRC's svmlight feature indices start.  [default: auto]")
@handle_errors
def convert(src, dst, to, zero_based):
    """Convert SRC (svmlight file or cache directory) to DST.

    A binary cache directory is parsed once and read fast by later commands;
    svmlight output is one-based (the libsvm convention), compressed when DST
    ends in .gz, .bz2 or .xz, and written atomically.
    """
    from ..data import (
        Stream,
        cache_to_svmlight,
        dump_svmlight,
        load_svmlight,
        write_cache,
    )

    if to is None:
        to = "svmlight" if dst.lower().endswith(SVMLIGHT_SUFFIXES) else "cache"
    src_is_cache = os.path.isdir(src)
    if src_is_cache:
        check_no_layout_flag(zero_based, src)
    if os.path.abspath(src) == os.path.abspath(dst):
        raise click.BadParameter("is the same as SRC", param_hint="DST")
    if to == "cache":
        if os.path.exists(dst) and not os.path.isdir(dst):
            raise click.BadParameter(f"{dst!r} exists and is not a directory", param_hint="DST")
        parent = os.path.dirname(os.path.abspath(dst))
        if not os.path.isdir(parent):
            raise click.BadParameter(f"directory {parent!r} does not exist", param_hint="DST")
        source = Stream.from_cache(src) if src_is_cache else src
        kw = {} if src_is_cache else {"zero_based": zero_based_value(zero_based)}
        stream = write_cache(source, dst, **kw)
        n, d = stream.n_samples, stream.n_features
    else:
        check_output(dst, "DST")
        if src_is_cache:
            cache_to_svmlight(src, dst)
            stream = Stream.from_cache(src)
            n, d = stream.n_samples, stream.n_features
        else:
            X, y = load_svmlight(src, zero_based=zero_based_value(zero_based))
            dump_svmlight(X, y, dst)
            n, d = X.shape
    click.echo(f"wrote {to} {dst}: {n} samples, {d} features")


@click.command()
@click.option("--quick", is_flag=True, help="The smaller text-like set (20,000 x 10,000).")
@click.option(
    "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the data and the splits."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress messages.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@handle_errors
def demo(quick, seed, quiet, as_json):
    """Train on embedded data, no files needed: Balakrishnan & Madigan's simulated
    data (probit at gamma = 10, logistic at gamma = 100; d = 11, t = 10,000) and a
    100,000 x 50,000 text-like sparse set, each with an 80/20 train/test split."""
    from ..demo import run_demo

    log = None if quiet else (lambda message: click.echo(message, err=True))
    with contextlib.nullcontext() if quiet else CompileNotice(log):
        rows = run_demo(quick=quick, random_state=seed, log=log)
    if as_json:
        echo_json({"command": "demo", "quick": quick, "seed": seed, "rows": rows, "versions": versions()})
        return
    from rich.table import Table

    # One column per data set, one row per measure: fits 80 columns with every number whole.
    table = Table(box=None, pad_edge=False)
    table.add_column("l1scale demo" + (" (quick)" if quick else ""), style="bold", no_wrap=True)
    for r in rows:
        table.add_column(r["dataset"], justify="right", no_wrap=True)
    measures = (
        ("n", lambda r: str(r["n_samples"])),
        ("d", lambda r: str(r["n_features"])),
        ("nnz", lambda r: str(r["nnz"])),
        ("loss", lambda r: r["loss"]),
        ("lam", lambda r: f"{r['lam']:.3g}"),
        ("objective", lambda r: f"{r['objective']:.6g}"),
        (
            "certificate",
            lambda r: f"{'gap' if r['certificate_name'] == 'duality_gap' else 'KKT'} {r['certificate']:.1e}",
        ),
        ("nnz(w)", lambda r: str(r["nnz_coef"])),
        ("train accuracy", lambda r: f"{r['train_accuracy']:.4f}"),
        ("test accuracy", lambda r: f"{r['test_accuracy']:.4f}"),
        ("seconds", lambda r: f"{r['seconds']:.2f}"),
        ("compile seconds", lambda r: f"{r['compile_seconds']:.2f}"),
    )
    for name, cell in measures:
        table.add_row(name, *(cell(r) for r in rows))
    console = stdout_console()
    console.print(trimmed(table))
    for r in rows:
        for message in r["warnings"]:
            click.echo(f"Warning: {r['dataset']}: {message}", err=True)
