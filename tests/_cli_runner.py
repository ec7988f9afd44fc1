"""The command line invoked in-process (click's CliRunner), as the CLI test modules use it."""

from click.testing import CliRunner

from l1scale.cli import main
from l1scale.cli._progress import COMPILE_NOTICE


def run(*args, env=None):
    """Invoke ``l1scale ARGS``; stdout and stderr kept apart. An exception other than the exit
    is raised: a traceback the user would have seen is a bug."""
    result = CliRunner(env=env).invoke(main, [str(a) for a in args], catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def ok(*args, env=None):
    """:func:`run`, which must exit 0."""
    result = run(*args, env=env)
    assert result.exit_code == 0, result.stderr
    return result


def stderr_lines(result):
    """The lines of ``result``'s stderr less the compile notice: a fit that spends seconds compiling
    kernels (the first in a process with an empty Numba cache, as in CI) says so before its
    progress table (``cli._progress.CompileNotice``)."""
    return [line for line in result.stderr.splitlines() if line != COMPILE_NOTICE]
