"""The errors the distributed backend raises for failures of the cluster itself
(:class:`~l1scale.exceptions.DistributedError`, defined with the library's other errors)."""

from ..exceptions import DistributedError

__all__ = ["DistributedError", "TasksCancelled"]


class TasksCancelled(DistributedError):
    """The cluster cancelled tasks of a pass: the client lost the scheduler, or data the pass
    needed died with every worker that held them (a broadcast point is scattered: it cannot
    be recomputed). MP / RMMP broadcast the point again and repeat the pass once a worker is
    there (:meth:`DaskProblem.run_pass`)."""
