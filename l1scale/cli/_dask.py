"""``train --dask``: the partitions of DATA read by the workers of a Dask cluster."""

from __future__ import annotations

import click

from ..solvers.registry import names
from ._params import zero_based_value

# Solvers with a distributed version (l1scale.distributed.distributed_solver).
DISTRIBUTED = names(distributed=True)


def check_dask_flags(resolved, *, cache_dir, two_stage, file_format, hash_bits, holdout):
    """Usage errors of ``--dask`` with flags it does not take (before any cluster starts). The online
    solvers average the partitions' weights after each pass and learn from every row (no holdout)."""
    if resolved not in DISTRIBUTED:
        raise click.BadParameter(
            f"--solver {resolved} has no distributed version; with --dask use one of {', '.join(DISTRIBUTED)}",
            param_hint="--solver",
        )
    for value, flag in (
        (cache_dir, "--cache"),
        (two_stage, "--two-stage"),
        (hash_bits, "--hash-bits"),
        (holdout or None, "--holdout"),
    ):
        if value is not None:
            raise click.BadParameter("does not apply with --dask (the workers read the partitions)", param_hint=flag)
    if file_format == "vw":
        raise click.BadParameter("--dask reads svmlight, chunk-cache or parquet partitions", param_hint="--format")


def dask_dataset(address, paths, *, n_features=None, zero_based=None):
    """(client, DaskDataset) for ``--dask ADDRESS`` and the partition files or patterns."""
    try:
        from ..distributed import DaskDataset, connect
    except ImportError as exc:
        raise click.UsageError(f"--dask: {exc}") from None
    try:
        client = connect(address)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--dask") from None
    except OSError as exc:
        raise click.ClickException(f"--dask {address}: cannot reach the scheduler ({exc})") from None
    try:
        _wait_for_a_worker(client, address)
        return client, DaskDataset.from_files(
            list(paths), client, n_features=n_features, zero_based=zero_based_value(zero_based)
        )
    except BaseException:
        close(client)
        raise


def _wait_for_a_worker(client, address):
    """A running scheduler without workers takes the tasks and waits for workers for ever, in
    silence: wait for a first one as long as for the scheduler itself (distributed's connect
    timeout, ``distributed.comm.timeouts.connect``: 30 s unless configured, e.g. by
    ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=10s``), then say so."""
    if getattr(client, "_l1scale_cluster", None) is not None:  # local:N starts its own workers
        return
    import dask
    from dask.utils import parse_timedelta

    timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="s")
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:
        raise click.ClickException(
            f"--dask {address}: the scheduler has no workers (none joined in {timeout:g} s, "
            "distributed.comm.timeouts.connect); start them with `dask worker "
            f"{address} --nworkers 1 --nthreads 1` on the machines that see the partition files"
        ) from None


def close(client):
    from ..distributed.solve import close_client

    close_client(client)
