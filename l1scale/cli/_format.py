"""How results look: labels and numbers as text, JSON documents, the stdout console."""

from __future__ import annotations

import json
import math
import platform
import sys

import click
import numpy as np


def label(v):
    """A label as JSON / text shows it: integral floats as ints (-1, not -1.0)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def plain(obj):
    """JSON-ready copy: numpy scalars and arrays to Python, NaN / inf to None."""
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def echo_json(obj):
    click.echo(json.dumps(plain(obj), indent=2, allow_nan=False))


def stdout_console():
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)


def key_value_table(title, value_justify="left"):
    """A borderless two-column table (bold keys) of a command's results."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify=value_justify)
    return table


def fmt(x, spec=".6g"):
    if x is None:
        return ""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return "" if math.isnan(x) else format(x, spec)
    return str(x)


def versions():
    import numba
    import scipy
    import sklearn

    from .. import __version__

    return {
        "l1scale": __version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "numba": numba.__version__,
        "scikit-learn": sklearn.__version__,
        "python": platform.python_version(),
    }
