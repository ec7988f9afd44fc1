"""The repeated columns a CD solve leaves out (``CoordinateDescent._distinct_columns``), and the
Result of a solve over a problem's distinct rows given for all of them (``_distinct_rows``).

Equal columns make the L1 problem degenerate (only their weights' sum moves the margins), and a
solve over one column of each group has the same optimal value and the same dual. The repeats are
equal to their representatives entry by entry (``Problem.repeated_columns`` compares each
candidate of its sketch), so that a certificate over the representatives holds for them too.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Repeats", "folded", "left_out", "over_every_row", "with_repeats"]


class Repeats(NamedTuple):
    """The repeated columns a solve leaves out, derived once from the representatives ``rep``
    (``Problem.repeated_columns``): the repeats' indices and their mask (what a solve leaves out)."""

    rep: np.ndarray
    index: np.ndarray
    mask: np.ndarray

    @classmethod
    def of(cls, rep):
        """None for None (no repeats)."""
        if rep is None:
            return None
        mask = rep != np.arange(rep.shape[0])
        return cls(rep, np.flatnonzero(mask), mask)


def left_out(screened, repeats):
    """The features a solve leaves out: those ``screened`` (a mask, or None) and the repeats."""
    if repeats is None:
        return screened
    return repeats.mask if screened is None else screened | repeats.mask


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


def with_repeats(result, repeats):
    """The Result of a solve over the representatives, with the repeats' loss gradient (their
    representatives') filled in; their weights are zero."""
    if repeats is not None and result.loss_gradient is not None:
        result.loss_gradient[repeats.index] = result.loss_gradient[repeats.rep[repeats.index]]
    return result


def over_every_row(result, groups):
    """The Result of a solve over the distinct rows of a problem (``groups``: its
    ``Problem.distinct_rows``) as the Result of that problem: the dual point given for every row
    (its group's value: the same dual value); the search's seconds added to the solve's, as the
    search for repeated columns is part of it, and the distinct rows' conversion to columns to
    ``timings["convert"]``, as a CSR problem's is. Everything else (the weights, objective,
    certificate, loss gradient and History) is the same for both problems."""
    if result.dual_point is not None:
        result.dual_point = result.dual_point[groups.group]
    result.timings["solve"] += groups.seconds
    result.timings["convert"] = result.timings.get("convert", 0.0) + groups.conversion_seconds
    return result
