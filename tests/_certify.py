"""A check of "solved" that does not trust the solver that produced the model.

A batch solver stops when the duality gap of its best dual point is below tol (celer's
convention), and that dual point need not be the returned model's own rescaled residual: the
model's suboptimality is what tol bounds, not its own residual's gap (which falls only as the
square root of the suboptimality). So a test that asks whether (w, b) is solved to ``rel``
bounds P(w, b) - P* by the better of two gaps, each a rigorous bound: the model's own residual
certificate, and P(w, b) minus a lower bound on P* from a reference solve certified to 1e-13
(its objective less its duality gap: the dual value it reached).
"""

import warnings

from l1scale.problems.multinomial import MultinomialProblem
from l1scale.solvers.cd import CoordinateDescent
from l1scale.solvers.multinomial import MultinomialCD


def suboptimality_bound(problem, coef, intercept=0.0):
    """A certified upper bound on (P(coef, intercept) - P*) / P(coef, intercept) (for losses
    without a conjugate: the relative KKT violation, as Problem.certificate gives it)."""
    own = problem.certificate(coef, intercept)
    if own.name != "duality_gap":
        return own.relative
    solver = MultinomialCD if isinstance(problem, MultinomialProblem) else CoordinateDescent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = solver(tol=1e-13, max_iter=1000).solve(problem)
    primal = problem.objective(coef, intercept)
    return min(own.relative, (primal - (ref.objective - ref.certificate)) / abs(primal))
