"""How results look: labels and numbers as text, JSON documents, the stdout console."""

from __future__ import annotations

import json
import math
import os
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
    """The console results are printed on: the terminal's width on a terminal, else ``COLUMNS``
    when it is set (``COLUMNS=80 l1scale ... | less``), else 160 columns."""
    from rich.console import Console

    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 160
    return Console(file=sys.stdout, highlight=False, soft_wrap=False, width=width)


class Trimmed:
    """A rich renderable drawn without trailing spaces: each line of ``renderable`` ends at its
    last visible character (rich pads table cells and titles to their width)."""

    def __init__(self, renderable):
        self.renderable = renderable

    def __rich_console__(self, console, options):
        from rich.segment import Segment

        for line in console.render_lines(self.renderable, options, pad=False, new_lines=False):
            yield from _rstrip(line)
            yield Segment.line()


def trimmed(renderable):
    """``renderable`` drawn without trailing spaces (:class:`Trimmed`)."""
    return Trimmed(renderable)


def _rstrip(segments):
    """A line's segments less the trailing spaces (styles kept on what remains)."""
    from rich.segment import Segment

    segments = list(segments)
    while segments and not segments[-1].control and not segments[-1].text.rstrip():
        segments.pop()
    if segments and not segments[-1].control:
        last = segments[-1]
        segments[-1] = Segment(last.text.rstrip(), last.style)
    return segments


class KeyValueTable:
    """A borderless two-column table (bold keys) of a command's results, under its title.

    The title is a line of its own, wrapped at spaces to the console's width (rich wraps a
    table's title to the table's width, mid-word), and no line ends in spaces. Rows are added
    with :meth:`add_row`; the console prints it as any rich renderable.
    """

    def __init__(self, title, value_justify="left"):
        from rich.table import Table

        self.title = title
        self.table = Table(show_header=False, box=None, pad_edge=False)
        self.table.add_column(style="bold", no_wrap=True)
        self.table.add_column(justify=value_justify, overflow="fold")  # a long path folds, never cut

    def add_row(self, *cells):
        self.table.add_row(*cells)

    def __rich_console__(self, console, options):
        from rich.text import Text

        if self.title:
            yield Trimmed(Text(self.title, style="italic"))
        yield Trimmed(self.table)


def key_value_table(title, value_justify="left"):
    """A :class:`KeyValueTable` of a command's results."""
    return KeyValueTable(title, value_justify)


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
