"""Which driver runs which solver on a DaskProblem, and how to reach a cluster."""

from __future__ import annotations

from ..solvers.online_base import OnlineSolver
from ..solvers.proximal import ProximalGradient
from ..solvers.registry import names
from ..solvers.sketch import MultiPass

__all__ = ["connect", "distributed_solver", "solve"]


def distributed_solver(solver):
    """The object whose ``solve(problem)`` runs ``solver`` on a DaskProblem.

    MP and RMMP are their own: their passes come from the problem. ISTA / FISTA /
    multi-scale FISTA run in :class:`~l1scale.distributed.proximal.DistributedProximal`
    (the same iterates, its gradient and loss sums from the partitions); the online
    first-order solvers in :class:`~l1scale.distributed.online.AveragedOnline` (one local
    pass per partition, weights averaged after each pass: not the same optimum).
    """
    if getattr(solver, "name", None) not in names(distributed=True):
        raise ValueError(
            f"solver {getattr(solver, 'name', solver)!r} has no distributed version; use one of "
            + ", ".join(names(distributed=True))
        )
    if isinstance(solver, MultiPass):
        return solver
    if isinstance(solver, ProximalGradient):
        from .proximal import DistributedProximal

        return DistributedProximal(solver)
    if isinstance(solver, OnlineSolver):
        from .online import AveragedOnline

        return AveragedOnline(solver)
    raise ValueError(
        f"solver {getattr(solver, 'name', solver)!r} has no distributed version; use one of "
        + ", ".join(names(distributed=True))
    )


def solve(solver, problem, coef_init=None, intercept_init=None):
    """``distributed_solver(solver).solve(problem, coef_init, intercept_init)``."""
    return distributed_solver(solver).solve(problem, coef_init, intercept_init)


def connect(address, **kw):
    """A Client for ``address``: ``"local:N"`` starts a LocalCluster of N worker processes
    (one thread each; ``"local-threads:N"``: threads in this process, no pickling),
    anything else (``"tcp://scheduler:8786"``) connects to a running scheduler.

    A LocalCluster of processes must be started under ``if __name__ == "__main__":`` in a
    script (its workers re-import the main module). The client closes its LocalCluster
    when it is closed.
    """
    from distributed import Client, LocalCluster

    kind, _, count = str(address).partition(":")
    if kind in ("local", "local-threads"):
        try:
            n = int(count) if count else 2
        except ValueError:
            raise ValueError(f"--dask {address!r}: give local:N with N workers, e.g. local:2") from None
        if n < 1:
            raise ValueError(f"--dask {address!r}: N must be >= 1")
        kw.setdefault("dashboard_address", ":0")  # a free port (":8787" may be taken by another cluster)
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=kind == "local", **kw)
        client = Client(cluster)
        client._l1scale_cluster = cluster  # closed with the client (see close_client)
        return client
    return Client(address, **kw)


def close_client(client):
    """Close ``client`` and the LocalCluster :func:`connect` started for it."""
    cluster = getattr(client, "_l1scale_cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()
