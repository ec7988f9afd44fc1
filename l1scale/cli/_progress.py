"""Progress of a fit on stderr: a live table on a terminal, plain lines otherwise."""

from __future__ import annotations

import contextlib
import math
import sys
import time
import warnings

import click

from ._format import fmt, label

_LIVE_ROWS = 20  # rows of the live progress table kept on screen
_LIVE_REFRESH_S = 0.1


class Progress:
    """``callback(iteration, history)`` for the estimators: a live table on a
    terminal, one line per iteration otherwise (both on stderr).

    Batch solvers (cd, scd, detcd) show iteration, objective, certificate, nnz, seconds;
    streaming solvers (``streaming=True``: mp, rmmp, online) one row per pass
    (per chunk for online): pass, active-set size, nnz, objective, KKT violation,
    seconds, blank where the solver has no value (NaN, no active set).  The online
    first-order solvers (``online=True``: truncated_gradient, sgd_cumulative, smidas)
    show their progressive validation, one row per pass: pass, examples seen, the
    pass's progressive loss and holdout loss (blank without a holdout), nnz,
    examples per second in the pass, seconds. ``distributed=True`` (``train --dask``) adds
    the seconds of each pass spent in the map over the partitions, the reduction and the driver.

    ``classes`` are the labels of the one-vs-rest problems (a class column is
    shown), None, or a callable giving them (or None) at the first call, for
    streamed data whose labels are known only once the fit has begun.
    """

    def __init__(self, classes=None, *, streaming=False, step="pass", online=False, distributed=False):
        from rich.console import Console

        self.console = Console(file=sys.stderr, highlight=False)
        self._classes = classes
        self.classes = None if callable(classes) else classes
        self.streaming = streaming
        self.online = online
        if online:
            self.columns = ("pass", "examples", "progressive", "holdout", "nnz", "examples/s", "seconds")
            self.widths = (6, 10, 12, 12, 8, 11, 9)
            self._row = self._online_row
        elif streaming:
            self.columns = (step, "active", "nnz", "objective", "kkt", "seconds")
            self.widths = (6, 8, 8, 18, 11, 9)
            self._row = self._stream_row
        else:
            self.columns = ("iter", "objective", "certificate", "nnz", "seconds")
            self.widths = (6, 18, 11, 8, 9)
            self._row = self._batch_row
        self.distributed = distributed
        if distributed:
            self.columns += ("compute", "reduce", "driver")
            self.widths += (9, 9, 9)
        self.problem = -1
        self._history = None
        self.rows = []
        self.live = None
        self._last_refresh = 0.0
        self._header_done = False
        self._started = False

    def __enter__(self):
        if self.console.is_terminal:
            from rich.live import Live

            self.live = Live(self._table(), console=self.console, auto_refresh=False, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc):
        self._settle_last_row()
        if self.live is not None:
            self.live.update(self._table(), refresh=True)
            self.live.__exit__(*exc)
        return False

    def _settle_last_row(self):
        """The last row as the History holds it once the solve returned: a solver may write the
        returned point's exact objective and certificate into its last row after the callback
        (cd does), and the live table would keep a blank certificate there."""
        if self.live is None or self._history is None or not self.rows or not len(self._history):
            return
        try:
            row = (self.rows[-1][0],) + self._row(len(self._history) - 1, self._history)
        except (IndexError, AttributeError):
            return
        if self.distributed:
            row += self.rows[-1][len(row) :]
        self.rows[-1] = row[:1] + (self.rows[-1][1],) + row[2:]  # keep the iteration number shown

    def __call__(self, iteration, history):
        if not self._started:
            self._started = True
            if callable(self._classes):
                self.classes = self._classes()
        # A new binary problem (one-vs-rest) brings a new History.  Batch solvers count
        # iterations from 0, streaming ones passes from 1, and a run resumed from a
        # checkpoint from where it stopped: the History object is what tells.
        if history is not self._history:
            self._history = history
            self.problem += 1
        row = (fmt(self._class()),) + self._row(iteration, history)
        if self.distributed:
            row += tuple(
                f"{getattr(history, k)[-1]:.3f}" if len(getattr(history, k)) == len(history) else ""
                for k in ("compute_time", "reduce_time", "driver_time")
            )
        if self.live is not None:
            self.rows.append(row)
            del self.rows[:-_LIVE_ROWS]
            now = time.perf_counter()
            if now - self._last_refresh >= _LIVE_REFRESH_S:
                self.live.update(self._table(), refresh=True)
                self._last_refresh = now
            return
        cols = row if self.classes is not None else row[1:]
        if not self._header_done:
            head = ("class",) if self.classes is not None else ()
            click.echo(self._line(head + self.columns), err=True)
            self._header_done = True
        click.echo(self._line(cols), err=True)

    @staticmethod
    def _batch_row(iteration, history):
        cert = history.certificate[-1]
        return (
            str(iteration),
            f"{history.objective[-1]:.10g}",
            "" if math.isnan(cert) else f"{cert:.3e}",
            str(history.nnz[-1]),
            f"{history.time[-1]:.3f}",
        )

    @staticmethod
    def _stream_row(iteration, history):
        objective, kkt = history.objective[-1], history.certificate[-1]
        active = history.active[-1] if len(history.active) == len(history) else None
        return (
            str(iteration),
            "" if active is None else str(active),
            str(history.nnz[-1]),
            "" if math.isnan(objective) else f"{objective:.10g}",
            "" if math.isnan(kkt) else f"{kkt:.3e}",
            f"{history.time[-1]:.3f}",
        )

    @staticmethod
    def _online_row(iteration, history):
        examples, seconds = history.examples[-1], history.time[-1]
        before, since = (history.examples[-2], history.time[-2]) if len(history.examples) > 1 else (0, 0.0)
        rate = (examples - before) / (seconds - since) if seconds > since else math.nan
        held = history.holdout_loss[-1]
        return (
            str(iteration),
            str(examples),
            f"{history.progressive_loss[-1]:.6f}",
            "" if math.isnan(held) else f"{held:.6f}",
            str(history.nnz[-1]),
            "" if math.isnan(rate) else f"{rate:.0f}",
            f"{seconds:.3f}",
        )

    def _class(self):
        if self.classes is None or self.problem >= len(self.classes):
            return None
        return label(self.classes[self.problem])

    def _line(self, cols):
        widths = ((6,) + self.widths)[-len(cols) :]
        return "  ".join(str(c).rjust(w) for c, w in zip(cols, widths))

    def _table(self):
        from rich.table import Table

        table = Table(title="fitting", title_justify="left", box=None, pad_edge=False)
        if self.classes is not None:
            table.add_column("class", justify="right")
        for name in self.columns:
            table.add_column(name, justify="right")
        for row in self.rows:
            table.add_row(*(row if self.classes is not None else row[1:]))
        return table


#: A compilation that has run this long is announced (``CompileNotice``).
COMPILE_NOTICE_AFTER_S = 2.0
COMPILE_NOTICE = "compiling l1scale's kernels: once after installing, later runs load them from the cache..."


class CompileNotice:
    """One line on stderr when a compilation of Numba kernels has run for
    ``COMPILE_NOTICE_AFTER_S`` seconds: the first fit with an empty cache spends half a minute or
    more there, before its solver's first iteration, and would show nothing meanwhile. ``echo``
    writes the line (the live table's console while one is shown)."""

    def __init__(self, echo=None, after=None):
        self.echo = echo if echo is not None else (lambda message: click.echo(message, err=True))
        self.after = COMPILE_NOTICE_AFTER_S if after is None else after
        self.shown = False
        self._stop = None
        self._thread = None

    def __enter__(self):
        import threading

        from .._clock import compiling_since

        compiling_since()  # the clock listens from here on
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="l1scale-compile-notice")
        self._thread.start()
        return self

    def _watch(self):
        from .._clock import compiling_since

        while not self._stop.wait(0.05):
            since = compiling_since()
            if since is not None and time.perf_counter() - since >= self.after:
                self.echo(COMPILE_NOTICE)
                self.shown = True
                return

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False


def run_fit(est, data, args, progress):
    """``est.fit(*args)`` under the progress display; returns (warning messages, seconds)."""
    from ..exceptions import ConvergenceWarning, DataFormatError

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        if progress is None:
            progress = notice = contextlib.nullcontext()
        else:  # the line goes through the live table's console
            notice = CompileNotice(lambda message: progress.console.print(message, markup=False, soft_wrap=True))
        with progress, notice:
            try:
                est.fit(*args)
            except DataFormatError:
                raise  # names the file and line already
            except ValueError as exc:  # labels unfit for the loss, one class only, ...
                raise click.ClickException(f"{data}: {exc}") from None
        fit_seconds = time.perf_counter() - t0
    messages = [str(m.message) for m in caught if not issubclass(m.category, DeprecationWarning)]
    return messages, fit_seconds


class PathProgress:
    """Progress of ``l1scale path`` on stderr: a bar per stage (the cross-validation's solves,
    then the path on all the data) on a terminal, a line at each quarter otherwise; nothing
    when not ``enabled`` (``-q``).

    :meth:`stage` gives the ``progress(done, total)`` callable a stage reports to.
    """

    def __init__(self, enabled=True):
        from rich.console import Console

        self.enabled = enabled
        self.console = Console(file=sys.stderr, highlight=False)
        self.bars = None
        self._t0 = time.perf_counter()

    def __enter__(self):
        if self.enabled and self.console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bars = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=24),
                MofNCompleteColumn(),
                TextColumn("solves"),
                TimeElapsedColumn(),
                console=self.console,
            )
            self.bars.__enter__()
        return self

    def __exit__(self, *exc):
        if self.bars is not None:
            self.bars.__exit__(*exc)
        return False

    def stage(self, description, total=None):
        """The ``progress(done, total)`` callable of a new stage."""
        if not self.enabled:
            return lambda done, total: None
        if self.bars is not None:
            task = self.bars.add_task(description, total=total)
            return lambda done, total: self.bars.update(task, completed=done, total=total)
        t0, shown = time.perf_counter(), [0]

        def report(done, total):  # a plain line at each quarter of the stage
            quarter = 4 * done // max(total, 1)
            if quarter > shown[0]:
                shown[0] = quarter
                click.echo(f"{description}: {done}/{total} solves, {time.perf_counter() - t0:.1f} s", err=True)

        return report
