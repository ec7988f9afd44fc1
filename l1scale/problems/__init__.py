"""Problems: what a solver minimises, validated once, and where its data live.

- :mod:`~l1scale.problems.base`: the protocol every problem meets (:class:`ProblemLike`: what a
  solver may ask of a problem, its ``kind`` and whether it is ``distributed``) and
  :class:`Certificate`;
- :mod:`~l1scale.problems.memory`: :class:`Problem`, X held in memory (dense, CSR or CSC), and
  the validation shared by the problems (:func:`check_labels`, :func:`check_sample_weight`, ...);
- :mod:`~l1scale.problems.stream`: :class:`StreamProblem`, a Stream read in passes, and its label
  scan (:func:`scan_stream`, :class:`StreamScan`);
- :mod:`~l1scale.problems.generated`: :class:`GeneratedProblem`, a generated feature space (feature
  cached loops) whose columns are made on demand.

The Dask problem, :class:`~l1scale.distributed.DaskProblem`, meets the same protocol and lives in
:mod:`l1scale.distributed` (Dask is optional).

The names below load on first use (PEP 562), as in :mod:`l1scale` and :mod:`l1scale.solvers`:
importing one module of the package (the protocol, say) does not import the others.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "KINDS": "base",
    "Certificate": "base",
    "ProblemLike": "base",
    "Problem": "memory",
    "check_design": "memory",
    "check_labels": "memory",
    "check_sample_weight": "memory",
    "lam_max": "memory",
    "newton_intercept": "memory",
    "optimal_intercept": "memory",
    "StreamProblem": "stream",
    "StreamScan": "stream",
    "scan_stream": "stream",
    "GeneratedProblem": "generated",
}

__all__ = [
    "KINDS",
    "Certificate",
    "GeneratedProblem",
    "Problem",
    "ProblemLike",
    "StreamProblem",
    "StreamScan",
    "check_design",
    "check_labels",
    "check_sample_weight",
    "lam_max",
    "newton_intercept",
    "optimal_intercept",
    "scan_stream",
]


def __getattr__(name):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value  # once
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
