"""Command-line parameters shared by the commands: value types, options, error handling."""

from __future__ import annotations

import functools
import math
import os

import click

from ..solvers.registry import REGISTRY

CLASSIFICATION_LOSSES = ("logistic", "probit", "squared_hinge")
LOSSES = CLASSIFICATION_LOSSES + ("squared",)

#: The names ``--solver`` takes, shows (its help) and completes: "auto" and the registry's,
#: read without importing any solver (``l1scale --help`` stays instant).
SOLVER_NAMES = ("auto", *REGISTRY)
#: The keyword of each online first-order solver's base learning rate (``--learning-rate``).
LEARNING_RATE_KEYWORD = {"truncated_gradient": "eta0", "sgd_cumulative": "eta0", "smidas": "eta"}
#: Data formats of ``--format`` (auto: by the name; a directory is a chunk cache).
FORMATS = ("auto", "svmlight", "vw")
DEFAULT_HASH_BITS = 18
#: The values of ``--multi-class`` (the estimators' ``multi_class``).
MULTI_CLASS = ("auto", "multinomial", "ovr")


def multi_class_option(
    auto="multinomial where the solver fits it (--solver auto in memory with the logistic loss), ovr otherwise",
):
    """``--multi-class auto|multinomial|ovr``: the estimator's ``multi_class`` (``auto``: what
    auto means for the command, in its help)."""
    return click.option(
        "--multi-class",
        type=click.Choice(MULTI_CLASS),
        default="auto",
        show_default=True,
        help="More than two classes: multinomial fits one softmax model (logistic loss, data in memory); "
        f"ovr one binary model per class; auto {auto}.",
    )


class _JoblibJobs(click.ParamType):
    """joblib's n_jobs: a nonzero integer (-1: every core, -2: all but one, ...)."""

    name = "integer"

    def convert(self, value, param, ctx):
        try:
            n = int(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not an integer", param, ctx)
        if n == 0:
            self.fail("must be a nonzero integer (-1: every core)", param, ctx)
        return n


def n_jobs_option(what):
    """``--n-jobs N``: the estimators' ``n_jobs`` (``what``: what runs in the threads, for the help)."""
    return click.option(
        "--n-jobs",
        type=_JoblibJobs(),
        default=None,
        metavar="N",
        help=f"Threads (joblib's n_jobs: -1 every core): {what}.  [default: 1]",
    )


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


class SolverChoice(click.ParamType):
    """``auto`` or a registered solver (:mod:`l1scale.solvers.registry`)."""

    name = "solver"

    def convert(self, value, param, ctx):
        if value not in SOLVER_NAMES:
            self.fail(f"{value!r} is not one of {list(SOLVER_NAMES)}", param, ctx)
        return value

    def get_metavar(self, param, ctx=None):
        return "[" + "|".join(SOLVER_NAMES) + "]"

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem

        return [CompletionItem(name) for name in SOLVER_NAMES if name.startswith(incomplete)]


POSITIVE = _PositiveFloat()


def zero_based_option(help="Feature indices of svmlight files start at 0 / at 1.  [default: auto]"):
    """The ``--zero-based/--one-based`` flag (None when not given: detected from the file)."""
    return click.option("--zero-based/--one-based", default=None, help=help)


def format_option(what="DATA", b="--hash-bits"):
    """``--format auto|svmlight|vw``: how data files are read (``b``: where 2**b comes from)."""
    return click.option(
        "--format",
        "file_format",
        type=click.Choice(FORMATS),
        default="auto",
        show_default=True,
        help=f"Format of {what}: svmlight, or Vowpal Wabbit text (vw: features hashed into "
        f"2**b columns, b = {b}).  auto: vw for names ending in .vw (or .vw.gz, "
        ".vw.bz2, .vw.xz), else svmlight (a directory is a cache).",
    )


def zero_based_value(flag):
    """The flag as the readers' ``zero_based`` argument."""
    return "auto" if flag is None else bool(flag)


def check_no_layout_flag(zero_based, path):
    """``--zero-based/--one-based`` given with a cache directory: a usage error (exit 2)."""
    if zero_based is not None:
        raise click.UsageError(f"--zero-based/--one-based apply to svmlight files, not to the cache directory {path}")


def handle_errors(fn):
    """Turn the library's errors into one ``Error: ...`` line (exit 1), no traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if os.environ.get("L1SCALE_DEBUG"):
            return fn(*args, **kwargs)
        from ..exceptions import DataFormatError, DistributedError, ModelFormatError

        try:
            return fn(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except (DataFormatError, ModelFormatError, DistributedError) as exc:
            raise click.ClickException(str(exc)) from None
        except OSError as exc:
            raise click.ClickException(_os_message(exc)) from None
        except MemoryError:
            raise click.ClickException(
                "out of memory; try a binary cache (l1scale convert) or a smaller data set"
            ) from None
        except ValueError as exc:  # the estimators' and metrics' input checks
            raise click.ClickException(str(exc)) from None

    return wrapper


def _os_message(exc: OSError) -> str:
    if exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return exc.strerror or str(exc)
