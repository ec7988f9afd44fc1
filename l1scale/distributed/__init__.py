"""Distributed training on a Dask cluster (optional: ``pip install l1scale[dask]``).

The data are a :class:`DaskDataset` of partitions read by the workers; a pass is a map
of the single-machine jitted kernels over the partitions and a tree reduction of the
sums, the driver keeps the weights and makes the update (MP, RMMP, ISTA / FISTA /
multi-scale FISTA), or averages the weights of one local pass per partition (the
online solvers, as Vowpal Wabbit's AllReduce mode). ``connect("local:2")`` starts a
LocalCluster, ``connect("tcp://host:8786")`` joins a running scheduler.
"""

import importlib

try:
    for _name in ("dask", "distributed"):
        importlib.import_module(_name)
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("l1scale.distributed needs dask and distributed: pip install l1scale[dask]") from exc

from ._errors import DistributedError
from .dataset import DaskDataset
from .io import write_parquet, write_partitions
from .problem import DaskProblem
from .solve import connect, distributed_solver, solve

__all__ = [
    "DaskDataset",
    "DaskProblem",
    "DistributedError",
    "connect",
    "distributed_solver",
    "solve",
    "write_parquet",
    "write_partitions",
]
