"""Gram matrices kept across CD's Newton steps where the loss's curvature does not move.

A Newton model over the columns A has the curvature X_A^T diag(D) X_A (``_gram_kernels.model_gram``,
bordered by the intercept's row), D = c * loss''(y, z). For most losses D moves with the margins,
and each step's model needs its own matrix. For a loss of constant curvature (the squared loss:
D = c, to the bit, at every iterate) the matrix of one model is the matrix of every later model over
the same columns, along a whole path too. :class:`GramCache` keeps the last one CD solved on and
hands the next model its principal sub-matrix (a gather of size^2 entries), bordered by the rows of
the few columns it lacks (``_gram_kernels.border_gram``: one read of the model's columns each),
instead of a build that sums every row's outer product anew.
"""

from __future__ import annotations

import numpy as np

from ._dual import columns_nnz
from ._gram_kernels import border_gram, gram_cost

__all__ = ["GramCache"]

#: A model lacking more than this share of its columns from the cache gets no matrix from it: a
#: border costs one read of the model's columns per entering column, a build about the sum of the
#: rows' squared counts.
MAX_NEW_SHARE = 0.25


class GramCache:
    """The last Gram matrix a CD solve used, over the columns ``cols`` (in its order), at a
    curvature that does not move.

    Parameters
    ----------
    problem : Problem
        Its loss must have ``constant_curvature`` for the cache to hold anything (else every
        :meth:`lookup` returns None).
    gram_max : int
        Models over more coordinates are not cached ((gram_max + 1)^2 floats).
    """

    def __init__(self, problem, gram_max):
        self.enabled = problem.loss.constant_curvature and gram_max > 0
        self.gram_max = gram_max
        self.n_features = problem.n_features
        self.fit_intercept = problem.fit_intercept
        self.cols = None
        self.Q = None
        self._slot = None  # slot[j]: j's row in Q, -1 when j is not cached

    def lookup(self, pt, active, m, bought):
        """The Gram matrix over active[:m] (and the intercept) in that order, from the cache, or
        None. ``bought``: whether the last model's rent or buy bought its Gram matrix (the models
        are ill-conditioned enough to pay for one): the cache's is then handed over; otherwise
        only when a sweep on it, every coordinate moving, costs no more than a sweep over the
        columns (a matrix from the cache costs nothing more to use, one bought costs its build).
        Columns the cache lacks (at most ``MAX_NEW_SHARE`` of the model) are moved to the end
        of active[:m] and bordered. Adds the gather's entries and the border's reads to
        ``pt.reads``."""
        if not self.enabled or self.Q is None or not 0 < m <= self.gram_max:
            return None
        problem = pt.problem
        columns = problem.columns
        size = m + 1 if self.fit_intercept else m
        if not bought and size * size > columns_nnz(columns, active[:m]):
            return None
        slots = self._slot[active[:m]]
        known = slots >= 0
        n_known = int(np.count_nonzero(known))
        if m - n_known > MAX_NEW_SHARE * m:
            return None
        if n_known < m:
            # A border reads the model's columns once per entering column; a build, once to count
            # and then the rows' outer products (a9a's short rows of long columns: a rebuild of 118
            # columns costs 3M, a border of 18 of them 8M).
            counts = np.empty(problem.n_samples, dtype=np.int64)
            nnz_cols, pairs = gram_cost(*columns.arrays, active, m, counts)
            pt.reads += nnz_cols
            if (m - n_known) * nnz_cols > nnz_cols + pairs:
                return None
            # The cached columns first (in their order in active), then the others, bordered.
            active[:m] = np.concatenate((active[:m][known], active[:m][~known]))
            Q = self._gather(pt, self._slot[active[:n_known]])
            Q, reads = border_gram(
                *columns.arrays, active, n_known, m, pt.D, Q, self.fit_intercept, np.zeros(problem.n_samples)
            )
            pt.reads += reads
            return Q
        return self._gather(pt, slots)

    def over(self, pt, support):
        """The Gram matrix over ``support`` (and the intercept) in that order, when the cache holds
        every one of its columns, else None (the support's Newton system: its CG and its
        factorisation take it instead of building one). Adds the gather's entries to ``pt.reads``."""
        k = support.shape[0]
        if not self.enabled or self.Q is None or k == 0:
            return None
        slots = self._slot[support]
        return None if (slots < 0).any() else self._gather(pt, slots)

    def _gather(self, pt, slots):
        """The cached matrix's principal sub-matrix over the rows ``slots`` (and the intercept's,
        last); its entries are added to ``pt.reads``."""
        rows = slots if not self.fit_intercept else np.append(slots, self.Q.shape[0] - 1)
        Q = self.Q[np.ix_(rows, rows)]
        pt.reads += Q.size
        return Q

    def store(self, active, m, Q):
        """Keep ``Q``, the Gram matrix over active[:m] (and the intercept) in that order."""
        if not self.enabled or Q.shape[0] == 0 or m > self.gram_max:
            return
        if self._slot is None:
            self._slot = np.full(self.n_features, -1, dtype=np.int64)
        if self.cols is not None:
            self._slot[self.cols] = -1
        self.cols = active[:m].copy()
        self._slot[self.cols] = np.arange(m)
        self.Q = Q
