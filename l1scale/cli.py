"""The ``l1scale`` command: train, predict, evaluate, info, convert, demo.

Every command reads svmlight files (plain, .gz, .bz2, .xz) or binary chunk-cache
directories made by ``l1scale convert``.  Flags map onto estimator parameters
(``--lam`` -> ``lam``, ``--no-intercept`` -> ``fit_intercept=False``, ...); the
estimators know nothing of the command line.

Output discipline: results (summaries, predictions, reports) go to stdout,
progress and warnings to stderr.  ``--json`` prints one JSON document on stdout
for scripts.  Errors are one ``Error: ...`` line on stderr naming the file (and
line) or the option, with exit status 1 (bad data, unreadable model, failed
write) or 2 (bad command line, as click reports it).  Set ``L1SCALE_DEBUG=1``
to get the Python traceback instead.

The library is imported inside the commands, so ``l1scale --help`` is instant.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import platform
import sys
import tempfile
import time
import warnings

import click
import numpy as np

__all__ = ["main"]

CLASSIFICATION_LOSSES = ("logistic", "probit", "squared_hinge")
LOSSES = CLASSIFICATION_LOSSES + ("squared",)
#: DST names that ``convert`` writes as svmlight text (anything else: a cache directory).
SVMLIGHT_SUFFIXES = (".svm", ".svmlight", ".libsvm", ".txt", ".gz", ".bz2", ".xz")
_LIVE_ROWS = 20  # rows of the live progress table kept on screen
_LIVE_REFRESH_S = 0.1


# --------------------------------------------------------------------------- helpers


class _PositiveFloat(click.ParamType):
    """A finite float > 0 (click's FloatRange lets NaN and inf through)."""

    name = "float"

    def convert(self, value, param, ctx):
        try:
            x = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(x) or x <= 0:
            self.fail(f"{value!r} is not a finite number > 0", param, ctx)
        return x


class _SolverChoice(click.ParamType):
    """``auto`` or a registered solver; the registry is read only when the flag is used."""

    name = "solver"

    def convert(self, value, param, ctx):
        if value == "auto":
            return value
        from .solvers import SOLVERS

        if value not in SOLVERS:
            self.fail(f"{value!r} is not one of {['auto', *sorted(SOLVERS)]}", param, ctx)
        return value

    def get_metavar(self, param, ctx=None):
        return "[auto|cd|mp|rmmp|online]"


POSITIVE = _PositiveFloat()


def _handle_errors(fn):
    """Turn the library's errors into one ``Error: ...`` line (exit 1), no traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if os.environ.get("L1SCALE_DEBUG"):
            return fn(*args, **kwargs)
        from .exceptions import DataFormatError, ModelFormatError

        try:
            return fn(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except (DataFormatError, ModelFormatError) as exc:
            raise click.ClickException(str(exc)) from None
        except OSError as exc:
            raise click.ClickException(_os_message(exc)) from None
        except MemoryError:
            raise click.ClickException("out of memory; try a binary cache (l1scale convert) or a "
                                       "smaller data set") from None
        except ValueError as exc:  # the estimators' and metrics' input checks
            raise click.ClickException(str(exc)) from None

    return wrapper


def _os_message(exc: OSError) -> str:
    if exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return exc.strerror or str(exc)


def _check_output(path, option):
    """Fail before any work when ``path`` cannot be written (usage error, exit 2)."""
    if path is None:
        return
    if os.path.isdir(path):
        raise click.BadParameter(f"{path!r} is a directory", param_hint=option)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise click.BadParameter(f"cannot write {path!r}: directory {directory!r} does not exist",
                                 param_hint=option)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise click.BadParameter(f"cannot write {path!r}: directory {directory!r} is not writable",
                                 param_hint=option)


def _write_text_atomically(path, text):
    """Write ``text`` to ``path`` under a temporary name, then rename it into place."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _zero_based(flag):
    return "auto" if flag is None else bool(flag)


def _label(v):
    """A label as JSON / text shows it: integral floats as ints (-1, not -1.0)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _plain(obj):
    """JSON-ready copy: numpy scalars and arrays to Python, NaN / inf to None."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _echo_json(obj):
    click.echo(json.dumps(_plain(obj), indent=2, allow_nan=False))


def _stdout_console():
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=False,
                   width=None if sys.stdout.isatty() else 160)


def _fmt(x, spec=".6g"):
    if x is None:
        return ""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return "" if math.isnan(x) else format(x, spec)
    return str(x)


def _versions():
    import numba
    import scipy
    import sklearn

    from . import __version__

    return {"l1scale": __version__, "numpy": np.__version__, "scipy": scipy.__version__,
            "numba": numba.__version__, "scikit-learn": sklearn.__version__,
            "python": platform.python_version()}


# ------------------------------------------------------------------------------ data


def _read_data(path, *, zero_based=None, n_features=None, width_of=None):
    """A whole data set in memory: (X CSR, y, sample_weight or None).

    ``path`` is an svmlight file or a chunk-cache directory.  With ``n_features``
    a narrower X is widened (its missing trailing columns are zero) and a wider
    one is an error naming the file and both widths (``width_of`` says whose
    width ``n_features`` is, e.g. "the 30 of the model m.bin").
    """
    import scipy.sparse as sp

    from .data import Stream, load_svmlight

    if os.path.isdir(path):
        if zero_based is not None:
            raise click.UsageError(f"--zero-based/--one-based apply to svmlight files, not to the "
                                   f"cache directory {path}")
        stream = Stream.from_cache(path)
        Xs, ys, ws = [], [], []
        for chunk in stream:
            Xs.append(sp.csr_matrix(chunk.X))
            ys.append(chunk.y)
            ws.append(chunk.sample_weight)
        width = stream.n_features
        X = sp.vstack(Xs, format="csr") if Xs else sp.csr_matrix((0, width))
        y = np.concatenate(ys) if ys else np.empty(0)
        w = None
        if any(v is not None for v in ws):
            w = np.concatenate([np.ones(len(c)) if v is None else v for c, v in zip(ys, ws)])
        if X.shape[1] != width:
            X.resize((X.shape[0], width))
    else:
        X, y = load_svmlight(path, zero_based=_zero_based(zero_based))
        w = None
    if X.shape[0] == 0:
        raise click.ClickException(f"{path}: no examples")
    if n_features is not None and X.shape[1] != n_features:
        if X.shape[1] > n_features:
            raise click.ClickException(f"{path} has {X.shape[1]} features, more than "
                                       + (width_of or str(n_features)))
        X.resize((X.shape[0], n_features))
    return X, y, w


def _streaming_solver(name):
    """Whether the registered solver ``name`` reads its data in passes (mp, rmmp, online)."""
    from .solvers import SOLVERS

    return getattr(SOLVERS[name], "data_access", "") == "stream"


def _train_stream(path, *, zero_based=None, n_features=None, cache=None, on_width=None):
    """The training data as a :class:`~l1scale.data.Stream` (never loaded whole).

    An svmlight file is read with ``Stream.from_svmlight`` (``cache``: the binary chunk
    cache its first pass writes and later passes read); a cache directory with
    ``Stream.from_cache`` (a narrower one is widened to ``n_features``).  The stream
    notes, during its first complete pass (the estimator's label scan, so no pass of
    its own), the nonzeros of X and the labels: ``stream.nnz``, ``stream.labels``.
    ``on_width(n_features)`` is called once, when the width is known (the first chunk).
    """
    from .data import Stream

    class _WatchedStream(Stream):
        nnz = None
        labels = None
        _width = None
        _on_width = None

        @property
        def n_features(self):
            width = self._source.n_features
            if self._width is not None and width is not None and width < self._width:
                return self._width
            return width

        def __iter__(self):
            import scipy.sparse as sp

            from .data._svmlight_write import make_csr

            first = self.passes == 0 and self.nnz is None
            nnz, labels = 0, set()
            for chunk in super().__iter__():
                if self._on_width is not None:
                    hook, self._on_width = self._on_width, None
                    hook(self.n_features)
                width = self.n_features
                X = chunk.X
                if X.shape[1] < width:  # a narrower cache widened to --n-features
                    X = (make_csr(X.data, X.indices, X.indptr, (X.shape[0], width))
                         if sp.issparse(X) else np.hstack([X, np.zeros((X.shape[0], width - X.shape[1]),
                                                                       dtype=X.dtype)]))
                    chunk = chunk._replace(X=X)
                if first:
                    nnz += int(X.nnz) if sp.issparse(X) else int(np.count_nonzero(X))
                    if labels is not None:
                        labels.update(np.unique(chunk.y).tolist())
                        if len(labels) > 1000:
                            labels = None  # a regression target
                yield chunk
            if first:
                self.nnz = nnz
                self.labels = None if labels is None else np.array(sorted(labels))

    if os.path.isdir(path):
        if zero_based is not None:
            raise click.UsageError(f"--zero-based/--one-based apply to svmlight files, not to the "
                                   f"cache directory {path}")
        stream = _WatchedStream.from_cache(path)
        width = stream.n_features
        if n_features is not None:
            if width > n_features:
                raise click.ClickException(f"{path} has {width} features, more than --n-features "
                                           f"{n_features}")
            stream._width = n_features
    else:
        stream = _WatchedStream.from_svmlight(path, n_features=n_features,
                                              zero_based=_zero_based(zero_based), cache=cache)
    stream._on_width = on_width
    return stream


def _check_cache_dir(path, data):
    """Fail before any work when ``--cache`` cannot be a cache directory for DATA."""
    if path is None:
        return
    if os.path.isdir(data):
        raise click.BadParameter(f"DATA {data!r} is already a cache directory", param_hint="--cache")
    if os.path.abspath(path) == os.path.abspath(data):
        raise click.BadParameter("is DATA itself", param_hint="--cache")
    if os.path.exists(path) and not os.path.isdir(path):
        raise click.BadParameter(f"{path!r} exists and is not a directory", param_hint="--cache")
    target = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(target):
        raise click.BadParameter(f"cannot create {path!r}: directory {target!r} does not exist",
                                 param_hint="--cache")
    if not os.access(target, os.W_OK | os.X_OK):
        raise click.BadParameter(f"cannot write {path!r}: directory {target!r} is not writable",
                                 param_hint="--cache")


def _load_model(path):
    from . import load

    return load(path)


def _is_classifier(est):
    return hasattr(est, "classes_") or getattr(est, "loss", None) in CLASSIFICATION_LOSSES


# -------------------------------------------------------------------------- progress


class _Progress:
    """``callback(iteration, history)`` for the estimators: a live table on a
    terminal, one line per iteration otherwise (both on stderr).

    Batch solvers (cd) show iteration, objective, certificate, nnz, seconds;
    streaming solvers (``streaming=True``: mp, rmmp, online) one row per pass
    (per chunk for online): pass, active-set size, nnz, objective, KKT violation,
    seconds, blank where the solver has no value (NaN, no active set).

    ``classes`` are the labels of the one-vs-rest problems (a class column is
    shown), None, or a callable giving them (or None) at the first call, for
    streamed data whose labels are known only once the fit has begun.
    """

    def __init__(self, classes=None, *, streaming=False, step="pass"):
        from rich.console import Console

        self.console = Console(file=sys.stderr, highlight=False)
        self._classes = classes
        self.classes = None if callable(classes) else classes
        self.streaming = streaming
        self.columns = ((step, "active", "nnz", "objective", "kkt", "seconds") if streaming else
                        ("iter", "objective", "certificate", "nnz", "seconds"))
        self.widths = (6, 8, 8, 18, 11, 9) if streaming else (6, 18, 11, 8, 9)
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

            self.live = Live(self._table(), console=self.console, auto_refresh=False,
                             transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc):
        if self.live is not None:
            self.live.update(self._table(), refresh=True)
            self.live.__exit__(*exc)
        return False

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
        row = (_fmt(self._class()),) + (self._stream_row(iteration, history) if self.streaming else
                                         self._batch_row(iteration, history))
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
        return (str(iteration), f"{history.objective[-1]:.10g}",
                "" if math.isnan(cert) else f"{cert:.3e}", str(history.nnz[-1]),
                f"{history.time[-1]:.3f}")

    @staticmethod
    def _stream_row(iteration, history):
        objective, kkt = history.objective[-1], history.certificate[-1]
        active = history.active[-1] if len(history.active) == len(history) else None
        return (str(iteration), "" if active is None else str(active), str(history.nnz[-1]),
                "" if math.isnan(objective) else f"{objective:.10g}",
                "" if math.isnan(kkt) else f"{kkt:.3e}", f"{history.time[-1]:.3f}")

    def _class(self):
        if self.classes is None or self.problem >= len(self.classes):
            return None
        return _label(self.classes[self.problem])

    def _line(self, cols):
        widths = ((6,) + self.widths)[-len(cols):]
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


# ----------------------------------------------------------------------------- metrics


def _report(est, X, y):
    """classification_report (plus log loss) for a classifier; R^2 / MSE / MAE for a regressor."""
    from .metrics import classification_report, log_loss

    if not _is_classifier(est):
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
    report = classification_report(y, pred, scores, pos_label=pos)
    report["log_loss"] = None
    if hasattr(est, "predict_proba") and np.isin(y, classes).all():
        report["log_loss"] = log_loss(y, est.predict_proba(X), labels=classes)
    report["labels"] = [_label(v) for v in report["labels"]]
    report["pos_label"] = _label(report["pos_label"])
    return report


def _unknown_labels(est, y):
    if not _is_classifier(est):
        return []
    return [_label(v) for v in np.setdiff1d(np.unique(y), est.classes_)]


# ------------------------------------------------------------------------------- main


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="l1scale", prog_name="l1scale")
def main():
    """Sparse (L1-regularised) linear classifiers and regressors.

    DATA is an svmlight file (plain, .gz, .bz2 or .xz) or a binary cache
    directory made by `l1scale convert`.  Results go to stdout; progress,
    warnings and errors to stderr.
    """


# ------------------------------------------------------------------------------ train


@main.command()
@click.argument("data", type=click.Path(exists=True, readable=True))
@click.option("--test", "test_path", type=click.Path(exists=True, readable=True),
              help="Held-out data to report metrics on.")
@click.option("--lam", type=POSITIVE,
              help="Regularisation strength, mean-loss form (liblinear's C = 1/(n lam)).")
@click.option("--lam-ratio", type=POSITIVE,
              help="lam as a fraction of lam_max.  [default: 0.01 when --lam is not given]")
@click.option("--l1-ratio", type=click.FloatRange(0, 1, min_open=True), default=1.0,
              show_default=True, help="Elastic-net mix: 1 is pure L1.")
@click.option("--loss", type=click.Choice(LOSSES), default="logistic", show_default=True,
              help="squared fits a regression (lasso / elastic net); the others classify.")
@click.option("--solver", type=_SolverChoice(), default="auto", show_default=True,
              help="cd: coordinate descent on DATA loaded into memory.  mp, rmmp, online: "
                   "streaming solvers reading DATA in passes, never loading it (rmmp: memory "
                   "O(d + k^2) whatever n; online: one pass).  auto: rmmp when --max-active, "
                   "--checkpoint or --cache is given, else cd.")
@click.option("--max-active", type=click.IntRange(min=1), metavar="K",
              help="rmmp: the most features in the active set (the sketch is K x K).  [default: 2000]")
@click.option("--checkpoint", type=click.Path(dir_okay=False), metavar="PATH",
              help="mp, rmmp: save the state here after each pass; a run given an existing "
                   "checkpoint resumes from it.")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="mp, rmmp, online: binary chunk cache of DATA, written by the first pass and "
                   "read by the later ones (and by later runs).")
@click.option("--intercept/--no-intercept", default=True, show_default=True,
              help="Fit an unpenalised intercept.")
@click.option("--tol", type=POSITIVE, default=1e-6, show_default=True,
              help="Stop at relative duality gap (or KKT violation) <= tol.")
@click.option("--max-iter", type=click.IntRange(min=1), default=200, show_default=True,
              help="Iterations (cd) or passes over DATA (mp, rmmp).")
@click.option("--class-weight", type=click.Choice(["balanced"]),
              help="Weight classes inversely to their frequency.")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Seed of the solver's coordinate order.")
@click.option("--n-features", type=click.IntRange(min=1),
              help="Width of X (default: largest feature index); a wider file is an error.")
@click.option("--zero-based/--one-based", default=None,
              help="Feature indices of svmlight files start at 0 / at 1.  [default: auto]")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Save the model here.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display; only the summary.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@_handle_errors
def train(data, test_path, lam, lam_ratio, l1_ratio, loss, solver, max_active, checkpoint, cache_dir,
          intercept, tol, max_iter, class_weight, seed, n_features, zero_based, output, quiet, as_json):
    """Fit a sparse linear model on DATA and print a summary.

    Classification losses (logistic, probit, squared_hinge) accept any labels
    (more than two classes: one-vs-rest); --loss squared fits a regression.
    With a streaming solver (mp, rmmp, online) DATA is read in passes and never
    loaded; the summary then has no train metrics (they would need another pass:
    use --test or `l1scale evaluate`).
    """
    if lam is not None and lam_ratio is not None:
        raise click.UsageError("give --lam or --lam-ratio, not both")
    if loss == "squared" and class_weight is not None:
        raise click.BadParameter("does not apply to --loss squared (a regression)",
                                 param_hint="--class-weight")
    resolved = solver
    if solver == "auto":  # the flags that only streaming solvers take pick RMMP
        resolved = "rmmp" if (max_active, checkpoint, cache_dir) != (None, None, None) else "cd"
    streamed = _streaming_solver(resolved)
    if max_active is not None and resolved != "rmmp":
        raise click.BadParameter(f"is RMMP's active-set size; it does not apply to --solver {resolved}",
                                 param_hint="--max-active")
    if checkpoint is not None and resolved not in ("mp", "rmmp"):
        raise click.BadParameter(f"applies to --solver mp or rmmp, not to --solver {resolved}",
                                 param_hint="--checkpoint")
    if cache_dir is not None and not streamed:
        raise click.BadParameter(f"applies to the streaming solvers (mp, rmmp, online), not to "
                                 f"--solver {resolved}, which loads DATA into memory (a cache for it: "
                                 f"`l1scale convert`)", param_hint="--cache")
    _check_solver_takes_loss(resolved, loss)
    _check_output(output, "'-o' / '--output'")
    _check_output(checkpoint, "--checkpoint")
    _check_cache_dir(cache_dir, data)
    # Flags -> estimator parameters (the only place the two meet).
    params = {"lam": lam, "lam_ratio": lam_ratio, "l1_ratio": l1_ratio, "fit_intercept": intercept,
              "solver": solver, "tol": tol, "max_iter": max_iter, "random_state": seed,
              "max_active": max_active, "checkpoint": checkpoint}
    if loss != "squared":
        params.update(loss=loss, class_weight=class_weight)

    t0 = time.perf_counter()
    Xt = yt = None
    if streamed:
        if test_path is not None:  # read before fitting: a bad test file fails fast
            Xt, yt, _ = _read_data(test_path, zero_based=zero_based, n_features=n_features,
                                   width_of=f"--n-features {n_features}")

        def check_test_width(width):  # once the training width is known, before any solving
            if Xt is not None and Xt.shape[1] > width:
                raise click.ClickException(f"{test_path} has {Xt.shape[1]} features, more than the "
                                           f"{width} of the training data {data}")

        stream = _train_stream(data, zero_based=zero_based, n_features=n_features, cache=cache_dir,
                               on_width=check_test_width)
        X = y = w = None
        classes = (lambda: stream.labels) if loss != "squared" else None
    else:
        stream = None
        X, y, w = _read_data(data, zero_based=zero_based, n_features=n_features,
                             width_of=f"--n-features {n_features}")
        if test_path is not None:  # read before fitting: a bad test file fails fast
            Xt, yt, _ = _read_data(test_path, zero_based=zero_based, n_features=X.shape[1],
                                   width_of=f"the {X.shape[1]} of the training data {data}")
        classes = np.unique(y) if loss != "squared" else None
    load_seconds = time.perf_counter() - t0
    from .estimators import SparseLinearRegression, SparseLogisticRegression
    from .exceptions import ConvergenceWarning, DataFormatError

    progress = None
    if not quiet:
        def one_vs_rest():  # the classes of the one-vs-rest problems, or None
            c = classes() if callable(classes) else classes
            return c if c is not None and c.shape[0] > 2 else None

        progress = _Progress(one_vs_rest if streamed else one_vs_rest(), streaming=streamed,
                             step="chunk" if resolved == "online" else "pass")
        params["callback"] = progress
    est = (SparseLinearRegression if loss == "squared" else SparseLogisticRegression)(**params)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        with progress if progress is not None else contextlib.nullcontext():
            try:
                if streamed:
                    est.fit(stream)
                else:
                    est.fit(X, y, sample_weight=w)
            except DataFormatError:
                raise  # names the file and line already
            except ValueError as exc:  # labels unfit for the loss, one class only, ...
                raise click.ClickException(f"{data}: {exc}") from None
        fit_seconds = time.perf_counter() - t0
    messages = [str(m.message) for m in caught if not issubclass(m.category, DeprecationWarning)]
    if not quiet:
        for message in messages:
            click.echo(f"Warning: {message}", err=True)

    if streamed:
        d = int(est.n_features_in_)
        data_info = {"n_samples": int(stream.n_samples), "n_features": d,
                     "nnz": None if stream.nnz is None else int(stream.nnz)}
        train_report = None  # another pass over DATA: not made
        if Xt is not None and Xt.shape[1] < d:
            Xt = Xt.tocsr(copy=True)
            Xt.resize((Xt.shape[0], d))
    else:
        data_info = {"n_samples": int(X.shape[0]), "n_features": int(X.shape[1]), "nnz": int(X.nnz)}
        train_report = _report(est, X, y)
    summary = _train_summary(est, data, data_info, train_report, load_seconds, fit_seconds, messages)
    if test_path is not None:
        summary["test"] = {"path": test_path, **_report(est, Xt, yt)}
        unknown = _unknown_labels(est, yt)
        if unknown:
            summary["warnings"].append(f"{test_path} has labels {unknown} that are not classes "
                                       f"of the training data")
            if not quiet:
                click.echo(f"Warning: {summary['warnings'][-1]}", err=True)
    if output is not None:
        est.save(output)
    summary["model"] = output
    if as_json:
        _echo_json(summary)
    else:
        _print_train_summary(summary)


def _check_solver_takes_loss(solver, loss):
    """A usage error (before any reading) when ``solver`` cannot minimise ``loss``."""
    from .losses import get_loss
    from .solvers import SOLVERS

    missing = [attr for attr in getattr(SOLVERS[solver], "requires", ())
               if not getattr(get_loss(loss), attr, None)]
    if missing:
        raise click.BadParameter(f"--solver {solver} cannot minimise --loss {loss} (it needs a loss "
                                 f"with {', '.join(missing)})", param_hint="--solver")


def _train_summary(est, data, data_info, train_report, load_seconds, fit_seconds, messages):
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
        "classes": [_label(c) for c in est.classes_] if hasattr(est, "classes_") else None,
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
        "versions": _versions(),
    }
    if len(results) > 1:  # one-vs-rest: the per-class problems (objective summed above)
        summary["problems"] = [
            {"class": _label(c), "lam": float(lam), "objective": float(r.objective),
             "certificate": float(r.certificate), "relative_certificate": float(r.relative_certificate),
             "converged": bool(r.converged), "stop_reason": r.stop_reason, "nnz": int(r.nnz),
             "n_iter": int(r.n_iter)}
            for c, lam, r in zip(est.classes_, est.lam_, results)]
    return summary


def _metric_rows(report, prefix):
    if "r2" in report:
        return [(f"{prefix} R^2", _fmt(report["r2"])), (f"{prefix} MSE", _fmt(report["mse"]))]
    rows = [(f"{prefix} accuracy", _fmt(report["accuracy"]))]
    for key, name in (("auc", "AUC"), ("auprc", "AUPRC"), ("f1", "F1")):
        if report.get(key) is not None:
            rows.append((f"{prefix} {name}", _fmt(report[key])))
    return rows


def _print_train_summary(s):
    from rich.table import Table

    table = Table(title=f"{s['estimator']}({s['params'].get('loss', 'squared')}) on {s['data']['path']}",
                  title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    d = s["data"]
    status = (f"yes ({s['stop_reason']})" if s["converged"] else f"no ({s['stop_reason']})")
    if s["stop_reason"] == "one_pass":
        status = "one pass (the Online algorithm has no stopping test)"
    shape = f"{d['n_samples']} x {d['n_features']}"
    rows = [("data", shape if d["nnz"] is None else f"{shape}, {d['nnz']} nonzeros")]
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
    _stdout_console().print(table)


# ---------------------------------------------------------------------------- predict


@main.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False, readable=True))
@click.argument("data", type=click.Path(exists=True, readable=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the predictions here (atomically) instead of stdout.")
@click.option("--proba", is_flag=True,
              help="Probability of the positive class (two classes) or of every class, "
                   "in the model's class order (logistic and probit models).")
@click.option("--zero-based/--one-based", default=None,
              help="Feature indices of svmlight files start at 0 / at 1.  [default: auto]")
@_handle_errors
def predict(model, data, output, proba, zero_based):
    """One prediction per row of DATA: a label, or probabilities with --proba,
    or a value for a regression model."""
    _check_output(output, "'-o' / '--output'")
    est = _load_model(model)
    if proba and not hasattr(est, "predict_proba"):
        kind = "a regression" if not _is_classifier(est) else f"a {est.loss}"
        raise click.BadParameter(f"{model} is {kind} model; probabilities need a logistic or "
                                 "probit classifier", param_hint="--proba")
    X, _, _ = _read_data(data, zero_based=zero_based, n_features=est.n_features_in_,
                         width_of=f"the {est.n_features_in_} of the model {model}")
    if proba:
        P = est.predict_proba(X)
        lines = ([repr(float(p)) for p in P[:, 1]] if P.shape[1] == 2 else
                 [" ".join(repr(float(p)) for p in row) for row in P])
    elif _is_classifier(est):
        lines = [str(_label(v)) for v in est.predict(X)]
    else:
        lines = [repr(float(v)) for v in est.predict(X)]
    text = "\n".join(lines) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        _write_text_atomically(output, text)


# --------------------------------------------------------------------------- evaluate


@main.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False, readable=True))
@click.argument("data", type=click.Path(exists=True, readable=True))
@click.option("--zero-based/--one-based", default=None,
              help="Feature indices of svmlight files start at 0 / at 1.  [default: auto]")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@_handle_errors
def evaluate(model, data, zero_based, as_json):
    """Metrics of MODEL on labelled DATA: accuracy, AUC, AUPRC, precision,
    recall, F1, log loss and the confusion matrix (R^2, MSE, MAE for a regression)."""
    est = _load_model(model)
    X, y, _ = _read_data(data, zero_based=zero_based, n_features=est.n_features_in_,
                         width_of=f"the {est.n_features_in_} of the model {model}")
    report = {"model": model, "data": data, **_report(est, X, y)}
    unknown = _unknown_labels(est, y)
    report["warnings"] = []
    if unknown:
        report["warnings"].append(f"{data} has labels {unknown} that are not classes of the model "
                                  f"{[_label(c) for c in est.classes_]}")
        click.echo(f"Warning: {report['warnings'][-1]}", err=True)
    if as_json:
        _echo_json(report)
        return
    from rich.table import Table

    console = _stdout_console()
    table = Table(title=f"{model} on {data}", title_justify="left", show_header=False, box=None,
                  pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    keys = (("n_samples", "r2", "mse", "mae") if "r2" in report else
            ("n_samples", "accuracy", "auc", "auprc", "precision", "recall", "f1", "log_loss",
             "pos_label"))
    for key in keys:
        if report.get(key) is not None:
            table.add_row(key, _fmt(report[key]))
    console.print(table)
    if "confusion" in report:
        console.print("confusion matrix (rows: true label, columns: predicted)")
        cm = Table()
        cm.add_column("")
        for label in report["labels"]:
            cm.add_column(str(label), justify="right")
        for label, row in zip(report["labels"], report["confusion"]):
            cm.add_row(str(label), *(_fmt(v) for v in row))
        console.print(cm)


# ------------------------------------------------------------------------------- info


@main.command()
@click.argument("data", type=click.Path(exists=True, readable=True))
@click.option("--zero-based/--one-based", default=None,
              help="Feature indices of svmlight files start at 0 / at 1.  [default: auto]")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@_handle_errors
def info(data, zero_based, as_json):
    """Size and labels of DATA, read in one streamed pass (bounded memory)."""
    from .data import Stream

    is_cache = os.path.isdir(data)
    if is_cache:
        if zero_based is not None:
            raise click.UsageError(f"--zero-based/--one-based apply to svmlight files, not to the "
                                   f"cache directory {data}")
        stream = Stream.from_cache(data)
        size = sum(e.stat().st_size for e in os.scandir(data) if e.is_file())
    else:
        stream = Stream.from_svmlight(data, zero_based=_zero_based(zero_based))
        size = os.path.getsize(data)
    n = nnz = 0
    row_max, row_min = 0, None
    counts = {}
    for chunk in stream:
        rows = chunk.X.shape[0]
        per_row = np.diff(chunk.X.indptr) if hasattr(chunk.X, "indptr") else \
            np.count_nonzero(chunk.X, axis=1)
        n += rows
        nnz += int(per_row.sum())
        if rows:
            row_max = max(row_max, int(per_row.max()))
            row_min = int(per_row.min()) if row_min is None else min(row_min, int(per_row.min()))
        for v, c in zip(*np.unique(chunk.y, return_counts=True)):
            counts[float(v)] = counts.get(float(v), 0) + int(c)
    d = int(stream.n_features or 0)
    result = {
        "path": data, "format": "cache" if is_cache else "svmlight", "file_size": int(size),
        "n_samples": n, "n_features": d, "nnz": nnz,
        "density": nnz / (n * d) if n and d else 0.0,
        "nnz_per_row": {"mean": nnz / n if n else 0.0, "min": row_min or 0, "max": row_max},
        "n_labels": len(counts),
        "labels": [{"label": _label(v), "count": counts[v]} for v in sorted(counts)],
    }
    if as_json:
        _echo_json(result)
        return
    from rich.table import Table

    table = Table(title=data, title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for key, value in (("format", result["format"]), ("file size", _bytes(size)),
                       ("samples", n), ("features", d), ("nonzeros", nnz),
                       ("density", f"{result['density']:.4g}"),
                       ("nonzeros per row", f"{result['nnz_per_row']['mean']:.4g} mean, "
                                            f"{result['nnz_per_row']['min']} min, {row_max} max"),
                       ("distinct labels", len(counts))):
        table.add_row(key, str(value))
    console = _stdout_console()
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


# ---------------------------------------------------------------------------- convert


@main.command()
@click.argument("src", type=click.Path(exists=True, readable=True))
@click.argument("dst", type=click.Path())
@click.option("--to", "to", type=click.Choice(["cache", "svmlight"]),
              help="Output format.  [default: svmlight when DST ends in .svm, .svmlight, .libsvm, "
                   ".txt, .gz, .bz2 or .xz; else a cache directory]")
@click.option("--zero-based/--one-based", default=None,
              help="How SRC's svmlight feature indices start.  [default: auto]")
@_handle_errors
def convert(src, dst, to, zero_based):
    """Convert SRC (svmlight file or cache directory) to DST.

    A binary cache directory is parsed once and read fast by later commands;
    svmlight output is one-based (the libsvm convention), compressed when DST
    ends in .gz, .bz2 or .xz, and written atomically.
    """
    from .data import Stream, cache_to_svmlight, dump_svmlight, load_svmlight, write_cache

    if to is None:
        to = "svmlight" if dst.lower().endswith(SVMLIGHT_SUFFIXES) else "cache"
    src_is_cache = os.path.isdir(src)
    if src_is_cache and zero_based is not None:
        raise click.UsageError(f"--zero-based/--one-based apply to svmlight files, not to the cache "
                               f"directory {src}")
    if os.path.abspath(src) == os.path.abspath(dst):
        raise click.BadParameter("is the same as SRC", param_hint="DST")
    if to == "cache":
        if os.path.exists(dst) and not os.path.isdir(dst):
            raise click.BadParameter(f"{dst!r} exists and is not a directory", param_hint="DST")
        parent = os.path.dirname(os.path.abspath(dst))
        if not os.path.isdir(parent):
            raise click.BadParameter(f"directory {parent!r} does not exist", param_hint="DST")
        source = Stream.from_cache(src) if src_is_cache else src
        kw = {} if src_is_cache else {"zero_based": _zero_based(zero_based)}
        stream = write_cache(source, dst, **kw)
        n, d = stream.n_samples, stream.n_features
    else:
        _check_output(dst, "DST")
        if src_is_cache:
            cache_to_svmlight(src, dst)
            stream = Stream.from_cache(src)
            n, d = stream.n_samples, stream.n_features
        else:
            X, y = load_svmlight(src, zero_based=_zero_based(zero_based))
            dump_svmlight(X, y, dst)
            n, d = X.shape
    click.echo(f"wrote {to} {dst}: {n} samples, {d} features")


# ------------------------------------------------------------------------------- demo


@main.command()
@click.option("--quick", is_flag=True, help="The smaller text-like set (20,000 x 10,000).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the data and the splits.")
@click.option("-q", "--quiet", is_flag=True, help="No progress messages.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@_handle_errors
def demo(quick, seed, quiet, as_json):
    """Train on embedded data, no files needed: Balakrishnan & Madigan's simulated
    data (probit at gamma = 10, logistic at gamma = 100; d = 11, t = 10,000) and a
    100,000 x 50,000 text-like sparse set, each with an 80/20 train/test split."""
    from .demo import run_demo

    log = None if quiet else (lambda message: click.echo(message, err=True))
    rows = run_demo(quick=quick, random_state=seed, log=log)
    if as_json:
        _echo_json({"command": "demo", "quick": quick, "seed": seed, "rows": rows,
                    "versions": _versions()})
        return
    from rich.table import Table

    table = Table(title="l1scale demo" + (" (quick)" if quick else ""), title_justify="left")
    for name in ("data set", "n", "d", "nnz", "loss", "lam", "objective", "certificate", "nnz(w)",
                 "accuracy train/test", "seconds", "compile s"):
        table.add_column(name, justify="left" if name in ("data set", "loss") else "right")
    for r in rows:
        cert = f"{'gap' if r['certificate_name'] == 'duality_gap' else 'KKT'} {r['certificate']:.1e}"
        table.add_row(r["dataset"], str(r["n_samples"]), str(r["n_features"]), str(r["nnz"]),
                      r["loss"], f"{r['lam']:.3g}", f"{r['objective']:.6g}", cert,
                      str(r["nnz_coef"]), f"{r['train_accuracy']:.4f} / {r['test_accuracy']:.4f}",
                      f"{r['seconds']:.2f}", f"{r['compile_seconds']:.2f}")
    console = _stdout_console()
    console.print(table)
    for r in rows:
        for message in r["warnings"]:
            click.echo(f"Warning: {r['dataset']}: {message}", err=True)


if __name__ == "__main__":  # pragma: no cover
    main()
