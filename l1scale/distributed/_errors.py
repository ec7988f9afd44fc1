"""The error the distributed backend raises for failures of the cluster itself."""


class DistributedError(RuntimeError, OSError):
    """A pass could not be completed on the cluster (a worker died too often, a timeout, the
    scheduler lost). Also an OSError, as ConnectionError and TimeoutError are: the environment
    failed, not the data (the command line reports it as one ``Error:`` line)."""


class TasksCancelled(DistributedError):
    """The cluster cancelled tasks of a pass: the client lost the scheduler, or data the pass
    needed died with every worker that held them (a broadcast point is scattered: it cannot
    be recomputed). MP / RMMP broadcast the point again and repeat the pass once a worker is
    there (:meth:`DaskProblem.run_pass`)."""
