"""The error the distributed backend raises for failures of the cluster itself."""


class DistributedError(RuntimeError):
    """A pass could not be completed on the cluster (a worker died too often, a timeout)."""
