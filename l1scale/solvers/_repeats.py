"""The repeated columns a CD solve leaves out (``CoordinateDescent._distinct_columns``), and the
check that its certificate covers them.

Equal columns make the L1 problem degenerate (only their weights' sum moves the margins), and a
solve over one column of each group has the same optimal value and the same dual. The repeats are
found by a sketch (``Problem.repeated_columns``), so a solve over the representatives ends by
checking each repeat's correlation with its dual point against its representative's
(:func:`uncovered`); a repeat that fails is put back in play.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _cd_kernels as kernels

__all__ = ["Repeats", "folded", "uncovered", "with_repeats"]


class Repeats(NamedTuple):
    """The repeated columns a solve leaves out, derived once from the representatives ``rep``
    (``Problem.repeated_columns``): the repeats' indices, their mask (what a solve leaves out),
    and the columns the coverage check reads (repeats and representatives, in increasing order:
    read as they lie in memory)."""

    rep: np.ndarray
    index: np.ndarray
    mask: np.ndarray
    checked: np.ndarray

    @classmethod
    def of(cls, rep):
        """None for None (no repeats)."""
        if rep is None:
            return None
        mask = rep != np.arange(rep.shape[0])
        index = np.flatnonzero(mask)
        read = mask.copy()
        read[rep[index]] = True
        return cls(rep, index, mask, np.flatnonzero(read))

    def put_back(self, columns):
        """The same with ``columns`` in play again (their own representatives)."""
        rep = self.rep.copy()
        rep[columns] = columns
        return Repeats.of(rep)


def folded(coef, repeats):
    """A start with each repeated column's weight moved onto its representative: the same margins,
    and a penalty no larger (the solve keeps repeats at zero)."""
    if coef is None or repeats is None:
        return coef
    w = np.array(coef, dtype=np.float64).reshape(repeats.rep.shape[0])
    moved = repeats.index[w[repeats.index] != 0.0]
    if moved.shape[0]:
        np.add.at(w, repeats.rep[moved], w[moved])
        w[moved] = 0.0
    return w


def uncovered(problem, result, repeats):
    """The left-out repeats that the result's certificate does not cover: those whose correlation
    with its dual point (``Result.dual_point``; the residual at the returned point for a KKT
    certificate) exceeds their representative's in absolute value. A repeat covered so is dual
    feasible wherever its representative is (and meets the KKT conditions at zero as well as it
    does), equal column or not; equal columns give equal sums to the bit. One read of the
    repeats' columns and their representatives' (news20: 254k repeats)."""
    if result.dual_point is not None:
        v = problem.c * result.dual_point
    else:
        z = problem.margins(result.coef, result.intercept)
        v = problem.c * problem.loss.derivative(problem.y, z)
    g = np.zeros(repeats.rep.shape[0])
    kernels.check_pass(*problem.columns.arrays, repeats.checked, v, result.coef, problem.penalty.l1, 0.0, g)
    index = repeats.index
    return index[np.abs(g[index]) > np.abs(g[repeats.rep[index]])]


def with_repeats(result, repeats):
    """The Result of a solve over the representatives, with the repeats' loss gradient (their
    representatives') filled in; their weights are zero."""
    if repeats is not None and result.loss_gradient is not None:
        result.loss_gradient[repeats.index] = result.loss_gradient[repeats.rep[repeats.index]]
    return result
