"""CD's row start: at a large lam, solve over the few columns a model can use, copied out of a
CSR X, and certify over every column from the rows, so that X is never converted whole.

A CSR X reaches a column solver through a conversion to CSC that scatters every stored value
into new memory (news20: 75-110 ms, more than its whole solve at 0.1 lam_max takes to reach
1e-2). At w = 0 (b the intercept-only optimum) the loss gradient g0 is lam_max's pass, read from
the rows. The features with |g0_j| >= ``REACH`` lam1 are those the first rounds of a solve would
take in; where their columns hold at most ``SHARE`` of X's stored values, they are copied out
(``data.rows.columns_of_rows``: one pass over the rows, then a transposition of what it kept) and the problem over them alone
(``Problem.restricted``: the same labels, weights, loss and penalty) is solved by the same CD
solver to the same tol. Its dual point is then correlated with every column in one more pass
over the rows: the duality gap of that point for the whole problem (a feature outside the
copied columns that violates optimality makes the point rescale, and the gap grow) certifies
the result, or the solve goes on over all the columns from there (warm). The Result's loss
gradient is the solve's own on the copied columns and, outside them, a bound on it from the
dual point's correlations (a second vector in that pass cost 1.4-2.4x a single one).

Measured on the benchmark's points (sizes of the features so selected, and where the final
support lies among them by |g0|): earn at 0.1 lam_max, 50 features, 18% of the values, the
support within the first 13; news20 at 0.1, 964 features, 18%, the support within the first
921. At 0.01 lam_max the same rule selects 58-99% of the values, so the row start is not
tried: a conversion pays when most columns are read many times.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..data.rows import columns_of_rows
from ..problems.base import Certificate
from ..problems.memory import dual_value
from ._dual import residual_distance

__all__ = ["REACH", "SHARE", "row_start"]

#: The features taken: |g0_j| >= REACH lam1 (a feature a little short of violating at w = 0 may
#: still enter once the residual moves).
REACH = 0.9
#: Tried only when those features' columns hold at most this share of X's stored values (the
#: conversion costs four to six passes over the rows; the row start, three: the gradient at w = 0,
#: the copy and the certificate, plus the solve's).
SHARE = 0.25


def row_start(solver, problem, timer):
    """The row start of ``solver`` (a CoordinateDescent) on ``problem``, when it applies.

    Returns (result, start, copied): ``result``, the certified Result over every column, or None;
    when None, ``start`` is (coef, intercept, None) to go on from over all the columns (its first
    pass reads the gradient there), or None when the row start did not apply (nothing was
    solved); ``copied``, the seconds the copy of the columns took, which ``timer`` excludes (it
    stands in for the conversion, reported apart from the solve)."""
    if (
        not getattr(problem, "rows_only", False)
        or not solver.working_set
        or solver.checkpoint is not None
        or not problem.loss.has_conjugate
    ):
        return None, None, 0.0
    rows = problem.rows
    g0 = problem.null_gradient()
    lam1 = problem.penalty.l1
    cols = np.flatnonzero(np.abs(g0) >= REACH * lam1)
    # Their share of the c-weighted squared mass (of the stored values, for 0/1 data and uniform
    # weights) decides before a pass; the copy's counting pass then bounds the values read.
    mass = problem.column_norms() ** 2
    if cols.shape[0] == 0 or mass[cols].sum() > SHARE * mass.sum():
        return None, None, 0.0
    copying = timer()
    matrix = columns_of_rows(rows, cols, max_nnz=SHARE * rows.data.shape[0])
    copied = timer() - copying
    timer.exclude(copied)
    if matrix is None:
        return None, None, copied
    sub = problem.restricted(cols, matrix)
    started = timer()
    result = solver.solve(sub)
    coef = np.zeros(problem.n_features)
    coef[cols] = result.coef
    if result.dual_point is None or not result.converged:
        return None, (coef, result.intercept, None), copied
    # One pass over the rows: the dual point's correlations with every column.
    u_c = problem.c * result.dual_point
    corr = problem.row_correlations(u_c)
    dual = dual_value(problem.loss, problem.penalty, problem.y, problem.c, None, result.dual_point, corr)
    cert = Certificate.duality_gap(result.objective, dual)
    if cert.relative > solver.tol:
        return None, (coef, result.intercept, None), copied
    # The loss gradient: the solve's own on the copied columns; elsewhere bounds on it from the
    # dual point's correlations (Cauchy-Schwarz in the c-weighted norm, as ``_dual`` carries them).
    residual = problem.c * problem.loss.derivative(problem.y, sub.margins(result.coef, result.intercept))
    gradient = np.abs(corr) + problem.column_norms() * residual_distance(residual, u_c, problem.c)
    gradient[cols] = result.loss_gradient
    history = result.history
    history.time[:] = [t + started for t in history.time]
    # The copy read the rows once, then what it kept once more; the certificate read the rows again.
    copy_reads = rows.data.shape[0] + matrix.data.shape[0]
    history.data_accesses[:] = [a + copy_reads for a in history.data_accesses]
    history.append(
        objective=result.objective,
        certificate=cert.value,
        nnz=result.nnz,
        time=timer(),
        data_accesses=(history.data_accesses[-1] if history.data_accesses else 0) + rows.data.shape[0],
        active=cols.shape[0],
    )
    timings = dict(result.timings, solve=timer(), convert=copied)
    return (
        dataclasses.replace(
            result,
            coef=coef,
            certificate=cert.value,
            relative_certificate=cert.relative,
            certificate_name=cert.name,
            history=history,
            timings=timings,
            loss_gradient=gradient,
        ),
        None,
        copied,
    )
