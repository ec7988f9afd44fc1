"""A check of "solved" that does not trust the solver that produced the model.

A batch solver stops when the duality gap of its best dual point is below tol (celer's
convention), and that dual point need not be the returned model's own rescaled residual: the
model's suboptimality is what tol bounds, not its own residual's gap (which falls only as the
square root of the suboptimality). So a test that asks whether (w, b) is solved to ``rel``
bounds P(w, b) - P* by the better of two gaps, each a rigorous bound: the model's own residual
certificate, and P(w, b) minus the dual value of a reference dual point solved to 1e-13.
"""

import warnings

from l1scale.solvers.cd import CoordinateDescent


def suboptimality_bound(problem, coef, intercept=0.0):
    """A certified upper bound on (P(coef, intercept) - P*) / P(coef, intercept) (for losses
    without a conjugate: the relative KKT violation, as Problem.certificate gives it)."""
    own = problem.certificate(coef, intercept)
    if own.name != "duality_gap":
        return own.relative
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = CoordinateDescent(tol=1e-13, max_iter=1000).solve(problem)
    primal = problem.objective(coef, intercept)
    return min(own.relative, (primal - problem.dual_value(ref.dual_point)) / abs(primal))
