"""The ``l1scale`` command: train, predict, evaluate, path, info, inspect, export, convert, demo.

Every command reads svmlight files (plain, .gz, .bz2, .xz) or binary chunk-cache
directories made by ``l1scale convert``; train, predict, evaluate and info also read
Vowpal Wabbit text (``.vw`` names or ``--format vw``, features hashed into 2**b columns);
train, predict and evaluate read ``-`` as standard input (``_data.iter_data``, ``_stream.spool_stdin``).
Flags map onto estimator parameters (``--lam`` -> ``lam``, ``--no-intercept`` ->
``fit_intercept=False``, ...; the online solvers' ``--passes``, ``--holdout`` and
``--learning-rate`` onto a solver instance, ``train.online_solver``); the estimators
know nothing of the command line.

Output discipline: results (summaries, predictions, reports) go to stdout,
progress and warnings to stderr.  ``--json`` prints one JSON document on stdout
for scripts.  Errors are one ``Error: ...`` line on stderr naming the file (and
line) or the option, with exit status 1 (bad data, unreadable model, failed
write) or 2 (bad command line, as click reports it).  Set ``L1SCALE_DEBUG=1``
to get the Python traceback instead.

The library is imported inside the commands, so ``l1scale --help`` is instant.

Modules: :mod:`.train`, :mod:`.apply` (predict, evaluate), :mod:`.path`, :mod:`.tools`
(info, convert, demo) and :mod:`.inspect` (inspect, export; info of a model file) hold the
commands; ``_params`` the shared flags and error handling,
``_data`` / ``_stream`` the reading of data, ``_format`` / ``_summary`` / ``_progress``
what is printed.
"""

from __future__ import annotations

import click

from . import apply, inspect, path, tools, train

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="l1scale", prog_name="l1scale")
def main():
    """Sparse (L1-regularised) linear classifiers and regressors.

    DATA is an svmlight file (plain, .gz, .bz2 or .xz), a binary cache
    directory made by `l1scale convert`, or (train, predict, evaluate, info)
    Vowpal Wabbit text: a name ending in .vw (.vw.gz, ...) or --format vw; train, predict and
    evaluate read - as standard input.  Results go to stdout; progress, warnings and errors to stderr.
    """


for _command in (
    train.train,
    apply.predict,
    apply.evaluate,
    path.path,
    tools.info,
    inspect.inspect,
    inspect.export,
    tools.convert,
    tools.demo,
):
    main.add_command(_command)
del _command
