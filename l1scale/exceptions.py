"""Errors and warnings raised by l1scale.

Every error about bad input names where the problem is: the file and line for
data files, the parameter for estimator and solver options.
"""

from __future__ import annotations

__all__ = ["DataFormatError", "ConvergenceWarning", "ModelFormatError"]

from sklearn.exceptions import ConvergenceWarning


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
    """A saved model file is unreadable, from another format version, or inconsistent."""
