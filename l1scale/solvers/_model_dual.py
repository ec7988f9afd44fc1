"""The dual point of a Newton step's quadratic model: a certificate as tight as the suboptimality,
while features are still entering or leaving the support.

At (w, b), with r = c * loss'(y, z) and D = c * loss''(y, z), the newGLMNET model

    q(d, d_b) = g.d + g_b d_b + (X d + d_b)^T diag(D) (X d + d_b) / 2 + lam1 (||w + d||_1 - ||w||_1)
                + lam2 / 2 (||w + d||^2 - ||w||^2)

is the second-order expansion of P. At its minimiser, the residual it predicts,
``u = r + D (X d + d_b)``, has correlations X^T u = g + (X^T D X) d that meet the model's KKT
conditions: |x_j^T u| <= lam1 on every coordinate the model moved or held at zero. So u is a
dual point that needs almost no rescaling, even while the support is still changing, where
the rescaled residual r must shrink by the largest violation (a feature still to enter costs
the residual's gap first order: mnist10k at 0.001 lam_max, 5e-3 suboptimality, residual
gap 0.47, this point's 7e-3). Its dual value is the model's minimum up to the expansion's
third-order error: once the model predicts a small decrease, the gap after the step is taken
is about the square of the suboptimality before it.

The model is the one the solver minimises anyway; what the certificate adds is a tighter inner
solve (to a tenth of tol lam1, so that the rescaling costs at most about that; a model not solved
that far within its sweep cap, ``_cd_kernels.TIGHT_CAP_MIN`` + ``TIGHT_CAP_FACTOR`` times the
sweeps it took, gives no point, but its better solution is kept: a more exact Newton step), the
rows moved into the conjugate's domain (``_cd_kernels.model_dual_point``) and its correlations,
read over the columns whose Cauchy-Schwarz bound from the residual's could reach lam1
(``_dual.correlations_near``; the others' bounds stand in). It is tried only once the model
predicts a decrease of P within ``0.1 min(sqrt(tol), 0.1) P`` (the gap after the step falls about
as that decrease squared), for a model over every feature in play, and for a working set's only at
a tight tol where it holds most of the features in play (it leaves out features that may violate
at its point: ``CoordinateDescent._model_dual_over``).
"""

from __future__ import annotations

import numpy as np

from . import _cd_kernels as kernels
from . import _gram_kernels as gram_kernels
from . import _local_model as local_model
from ._dual import columns_nnz, correlations_near, loss_units

__all__ = ["ModelDual"]


class ModelDual:
    """When and how a CD solve offers its quadratic model's dual point.

    Parameters
    ----------
    tol : float
        The solver's relative tolerance.
    enabled : bool
        False: never offered.
    """

    # Tried once the model's predicted decrease is within reach * min(sqrt(tol), cap) * |P|
    # (from 1e-3 P for tol >= 1e-4). Measured, nonzeros read at tol 1e-1 / 1e-2 / 1e-4 / 1e-6
    # without it and with it: mnist10k at 0.01 lam_max 122M / 209M / 350M / 350M -> 149M / 176M /
    # 200M / 232M, at 0.001 744M / 969M / 975M / 982M -> 605M / 694M / 694M / 832M, a9a at 0.001
    # 49M / 57M / 57M / 57M -> 52M / 52M / 52M / 50M; 16 dense correlated problems (3,000 x 80),
    # summed: +2% / -1% / -14% / -11%. Without the cap, loose fits try it early: the dense
    # problems gain (-28% / -22% at 1e-1 / 1e-2) but mnist10k at 0.01, tol 1e-1, reads 264M.
    # The cap was 0.01 until timed fits (in process, best of 3-5, the two caps interleaved) showed
    # 0.1 never slower at any batch benchmark point and tol 1e-1 / 1e-2 / 1e-3, and faster where
    # the support is still moving near the end: a9a at 0.001 lam_max 57 / 58 / 59 -> 45 / 45 /
    # 47 ms (one Newton step fewer), mnist10k at 0.001 419 / 609 / 603 -> 361 / 425 / 615 ms.
    reach = 0.1
    cap = 0.1
    # Rounds of violators let into a model solved for its dual point.
    max_grow = 2

    def __init__(self, tol, enabled=True):
        self.tol, self.enabled = tol, enabled

    def inner_settings(self, problem, has_dual, objective, most=np.inf):
        """(dual_decrease, dual_tol) for ``_cd_kernels.InnerSettings``: (0, 0) when not offered.
        ``most``: the predicted decrease is at most this much of |P| too (0: not offered)."""
        if not (self.enabled and has_dual) or most <= 0.0:
            return 0.0, 0.0
        decrease = min(self.reach * min(np.sqrt(self.tol), self.cap), most) * abs(objective)
        return decrease, 0.1 * self.tol * problem.penalty.l1

    def grown_point(self, pt, dual, model, inner, active, m, cols, kept, d_b, gram_price, gram, objective, verbose=0):
        """The dual point of a model solved on to ``dual_tol`` (``tight``), and its correlations on
        ``kept``. The outer pass shrank features of ``cols`` out of the model (``active[:m]``),
        and some may violate at its point: unless the point certifies all the same (at the
        objective the model predicts), those enter the model, which is solved on, tight, from
        its minimiser (at most ``max_grow`` times). Measured on a9a at 0.001 lam_max, tol 1e-2:
        5 of 34 shrunk features violated by up to 3.7 lam1 (relative gap 0.46); let in, the
        point certified 3.7e-5, an outer iteration sooner (6 -> 5, with the cap then at 0.01; at
        tol 1e-4 now, 8 -> 6). ``gram``: the model's Gram matrix over active[:m] (in that order) when
        it was solved on one, else empty: the grown model's is that one bordered by the entering
        coordinates' rows (``_gram_kernels.border_gram``), not built anew (a9a at 0.001 lam_max, tol
        1e-4: 8.8 ms of a 45 ms fit were those rebuilds; mnist10k at 0.001, 50 ms of 530 ms).

        Returns (point or None, correlations or None, m, d_b, Gram matrix price), the model's
        arrays (active, wpd, xTd) grown in place."""
        problem = pt.problem
        arrays = problem.columns.arrays
        lam1, lam2 = problem.penalty.l1, problem.penalty.l2
        u_c, corr = self.point(pt), None
        for grown in range(self.max_grow + 1):
            if u_c is None:
                return None, None, m, d_b, gram_price
            corr = self.correlations(pt, u_c, kept, model.g, cols)
            entering = self.violators(pt, corr, cols, active, m)
            if entering.shape[0] == 0 or grown == self.max_grow:
                break
            predicted = objective + kernels.model_change(active, m, model, d_b, lam1, lam2)
            if self.certifies(pt, dual, u_c, corr, kept, predicted):
                break  # their violations cost less than tol
            active[m : m + entering.shape[0]] = entering
            grown_gram = gram
            if gram.shape[0]:
                grown_gram, reads = gram_kernels.border_gram(
                    *arrays,
                    active,
                    m,
                    m + entering.shape[0],
                    pt.D,
                    gram,
                    problem.fit_intercept,
                    np.zeros(problem.n_samples),
                )
                pt.reads += reads
            m += entering.shape[0]
            d_b, sweeps, reads, gram_price, tight, gram = local_model.newton_direction(
                *arrays,
                active,
                m,
                model._replace(d_b=d_b),
                inner._replace(gram_first=gram_price, dual_decrease=np.inf, gram_limit=np.inf, dual_on_gram=False),
                grown_gram,
            )
            pt.reads += reads
            if verbose > 1:
                print(f"   {entering.shape[0]} violators enter the model: {m} coordinates, {sweeps} sweeps")
            u_c = self.point(pt) if tight else None
        return u_c, corr, m, d_b, gram_price

    def point(self, pt):
        """The model's residual at its minimiser as a dual point (c-weighted), before the line
        search overwrites r and D; None when the intercept's constraint cannot be met."""
        problem = pt.problem
        u_c = np.empty(problem.n_samples)
        ok = kernels.model_dual_point(
            problem.loss.kernel_id, problem.y, problem.c, pt.r, pt.D, pt.xTd, problem.fit_intercept, u_c
        )
        return u_c if ok else None

    @staticmethod
    def correlations(pt, u_c, kept, g, cols):
        """Bounds on |x_j^T u_c| for j in ``kept`` (0 elsewhere: features proven zero), exact where
        they could reach lam1 (``_dual.correlations_near``, from the model's gradient ``g``, X^T r +
        lam2 w at this point on ``cols``); one pass over ``kept`` when ``g`` does not cover it."""
        problem = pt.problem
        corr = np.zeros(problem.n_features)
        covered = np.zeros(problem.n_features, dtype=bool)
        covered[cols] = True
        if covered[kept].all():
            g_loss = g if problem.penalty.l2 == 0.0 else g - problem.penalty.l2 * pt.w
            corr[kept], reads = correlations_near(problem, kept, g_loss, pt.r, u_c, pt.w)
        else:
            kernels.check_pass(*problem.columns.arrays, kept, u_c, pt.w, problem.penalty.l1, 0.0, corr)
            corr[kept] = np.abs(corr[kept])
            reads = columns_nnz(problem.columns, kept)
        pt.reads += reads
        return corr

    def violators(self, pt, corr, cols, active, m):
        """The features of ``cols`` outside the model (``active[:m]``: the outer pass shrank them)
        whose correlations ``corr`` at its dual point exceed lam1 by more than its solve's
        tolerance: they must enter the model for its point to certify."""
        inside = np.zeros(pt.problem.n_features, dtype=bool)
        inside[active[:m]] = True
        outside = cols[~inside[cols]]
        lam1 = pt.problem.penalty.l1
        return outside[np.abs(corr[outside]) > lam1 + 0.1 * self.tol * lam1]

    def certifies(self, pt, dual, u_c, corr, kept, predicted):
        """Whether the best dual point, with this one offered, would certify at the objective
        ``predicted`` (what the model says P will be after its step)."""
        problem = pt.problem
        u = loss_units(u_c, problem.c)
        cert = problem.certificate_from(pt.w[kept], pt.b, pt.z, u, np.abs(corr[kept]), primal=predicted)
        gap = predicted - max(cert.objective - cert.value, dual.best_dual)
        return gap <= self.tol * abs(predicted)

    @staticmethod
    def certificate(pt, dual, u_c, corr, kept, primal):
        """Offer the point to ``dual`` with its correlations ``corr`` on ``kept``; returns the best
        dual point's certificate at ``primal``."""
        u = loss_units(u_c, pt.problem.c)
        return dual.offer(pt.w, pt.b, pt.z, u, np.abs(corr[kept]), kept, primal)

    @staticmethod
    def gradient(pt, kept):
        """X^T r on ``kept`` at the current point (the returned solution's loss gradient: a path's
        next working set and screening read it)."""
        problem = pt.problem
        g = np.zeros(problem.n_features)
        kernels.check_pass(*problem.columns.arrays, kept, pt.r, pt.w, problem.penalty.l1, 0.0, g)
        pt.reads += columns_nnz(problem.columns, kept)
        return g[kept]
