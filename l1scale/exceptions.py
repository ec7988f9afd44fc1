"""Errors and warnings raised by l1scale.

Every error about bad input names where the problem is: the file and line for
data files, the parameter for estimator and solver options.
"""

from __future__ import annotations

__all__ = [
    "CheckpointError",
    "ConvergenceWarning",  # noqa: F822 - provided by __getattr__ (scikit-learn imported on first use)
    "DataFormatError",
    "DiskFullError",
    "DistributedError",
    "DivergenceError",
    "ModelFormatError",
]


def __getattr__(name):
    # scikit-learn's ConvergenceWarning (l1scale warns with it, so that scikit-learn's filters
    # and tools catch ours), imported on first use: importing scikit-learn takes 1.5-2 s, which
    # the command line's start (``l1scale --help``, reading a model file) does not need.
    if name == "ConvergenceWarning":
        from sklearn.exceptions import ConvergenceWarning

        return ConvergenceWarning
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class DataFormatError(ValueError):
    """A data file (or array) is malformed.

    Parameters
    ----------
    message : str
        What is wrong.
    path : str or None
        The file, when the data came from one.
    line : int or None
        One-based line number in that file.
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None and line is not None:
            where = f"{self.path}:{line}: "
        elif self.path is not None:
            where = f"{self.path}: "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)
        self.reason = message


class ModelFormatError(ValueError):
    """A saved model file is unreadable, from another format version, or inconsistent.

    Raised by :func:`l1scale.load` / :func:`l1scale.model_io.load_model` for anything that is
    not a complete model file of a version this library reads (a truncated or corrupted file,
    random bytes, an empty file, a directory in its place); the message names the file.
    """


class CheckpointError(ValueError):
    """A solver's checkpoint file (``checkpoint=PATH``) cannot be resumed from.

    Either it is unreadable (truncated, corrupted, not a checkpoint, a newer format, a
    directory in its place) or it was written by another run (other data, another solver or
    other parameters). The message names the checkpoint and says which; ``path`` holds it.

    Parameters
    ----------
    message : str
    path : str
        The checkpoint file.
    """

    def __init__(self, message: str, path):
        self.path = str(path)
        super().__init__(f"checkpoint {self.path}: {message}")
        self.reason = message


class DiskFullError(OSError):
    """A write failed for lack of space: the file system is full (``ENOSPC``), a disk quota is
    exceeded (``EDQUOT``) or the file outgrew a size limit (``EFBIG``: the file system's, or the
    process's ``ulimit -f``). The message names the file being written and says which; the
    file that was there before is left intact (l1scale writes atomically).

    ``errno`` is that of the failure and ``filename`` the target path, as for any OSError.
    """


class DivergenceError(ValueError, ArithmeticError):
    """A solver's iterates or step size stopped being finite numbers (overflow), typically
    because the features are on a huge scale (an entry of 1e300) or the learning rate is too
    large for them. The message names the solver and suggests the remedy (scale the features,
    lower the learning rate)."""


class DistributedError(RuntimeError):
    """A pass could not be completed on a Dask cluster (a worker died too often, a timeout,
    the scheduler lost): the environment failed, not the data. The command line reports it
    as one ``Error:`` line."""
