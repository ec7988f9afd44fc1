"""The Dask backend on worker processes (LocalCluster(processes=True), 2 workers): what a
thread cluster cannot show. Every task and its arguments are pickled; a worker killed in
the middle of a pass has its tasks and persisted partitions recomputed (the model is
unchanged); a worker that dies whenever it runs a task (as the nanny kills a worker out of
memory) ends the fit with an error that names the partition, not a hang."""

import os
import signal
import sys
import threading
import time
import warnings

import numpy as np
import pytest

pytest.importorskip("distributed")

import cloudpickle
import dask
from _shared_data import load_svmlight_pm
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import WorkerPlugin
from test_distributed import EARN, EARN_D, LAM, same_model, split

from l1scale.data.stream import Stream
from l1scale.distributed import DaskDataset, DaskProblem, DistributedError, solve
from l1scale.exceptions import ConvergenceWarning
from l1scale.problems import Problem, StreamProblem
from l1scale.solvers.proximal import FISTA
from l1scale.solvers.sketch import MultiPass, ReducedMemoryMultiPass

# The helpers below run on the workers: ship them by value (the workers need not import tests/).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def earn(tmp_path_factory):
    X, y = load_svmlight_pm("reuters earn", EARN, EARN_D)
    return X.tocsr(), y, split(X, y, str(tmp_path_factory.mktemp("earn-parts")), 4)


@pytest.fixture(scope="module")
def client():
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
        c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def reference(earn):
    X, y, _ = earn
    return ReducedMemoryMultiPass(max_active=300).solve(StreamProblem(Stream.from_arrays(X, y), "logistic", LAM))


def test_worker_processes_give_the_single_machine_model(earn, client, reference, tmp_path):
    X, y, paths = earn
    ds = DaskDataset.from_files(paths, client, persist=True)
    same_model(ReducedMemoryMultiPass(max_active=300).solve(DaskProblem(ds, "logistic", LAM)), reference)
    kw = {"tol": 1e-12, "max_iter": 6, "check_every": 3}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = FISTA(**kw).solve(Problem(X.tocsc(), y, "logistic", lam_ratio=0.3))
        res = solve(FISTA(**kw), DaskProblem(ds, "logistic", lam_ratio=0.3))
    same_model(res, ref)
    ds.close()
    top = np.sort(np.argsort(-np.bincount(X.indices, minlength=EARN_D))[:1000])  # MP: a dense 1001^2 sketch
    parts = split(X[:, top], y, str(tmp_path), 2)
    ds = DaskDataset.from_files(parts, client, n_features=1000, zero_based=False)
    same_model(
        MultiPass().solve(DaskProblem(ds, "logistic", LAM)),
        MultiPass().solve(StreamProblem(Stream.from_arrays(X[:, top], y), "logistic", LAM)),
    )
    ds.close()


def _slow_passes(marker):
    """On a worker: MP / RMMP's map sleeps while ``marker`` exists (so that a pass is surely
    under way when the worker is killed). Returns the worker's pid."""
    import l1scale.distributed._tasks as tasks

    real = tasks.sketch_pass

    def slow(stream, *args):
        if os.path.exists(marker):
            time.sleep(2.0)
        return real(stream, *args)

    tasks.sketch_pass = slow
    return os.getpid()


def test_a_worker_killed_mid_pass_leaves_the_model_unchanged(earn, client, reference, tmp_path):
    ds = DaskDataset.from_files(earn[2], client, persist=True)
    marker = str(tmp_path / "slow")
    pids = client.run(_slow_passes, marker)
    victim = min(pids.values())
    killed = []

    def kill():
        time.sleep(0.7)  # the third pass's tasks are sleeping in the map
        os.kill(victim, signal.SIGKILL)
        killed.append(time.perf_counter())
        os.unlink(marker)

    def callback(z, history):
        if z == 2:
            open(marker, "w").close()
            threading.Thread(target=kill).start()

    res = ReducedMemoryMultiPass(max_active=300, callback=callback).solve(DaskProblem(ds, "logistic", LAM))
    assert killed, "the worker was not killed"
    same_model(res, reference)
    np.testing.assert_array_equal(
        res.coef, ReducedMemoryMultiPass(max_active=300).solve(DaskProblem(ds, "logistic", LAM)).coef
    )
    client.wait_for_workers(2, timeout=60)
    assert victim not in client.run(os.getpid).values()  # the nanny started a new worker
    ds.close()


class _DieInPasses(WorkerPlugin):
    """Every worker, and every worker started after it, dies (SIGKILL, as the nanny does with a
    worker over its memory limit) whenever it runs MP / RMMP's map."""

    def setup(self, worker):
        import l1scale.distributed._tasks as tasks

        def die(stream, *args):
            os.kill(os.getpid(), signal.SIGKILL)

        tasks.sketch_pass = die


def test_a_worker_that_keeps_dying_is_an_error_naming_the_partition(earn, client):
    ds = DaskDataset.from_files(earn[2][:2], client, persist=False)
    client.register_plugin(_DieInPasses(), name="die-in-passes")
    start = time.perf_counter()
    with pytest.raises(DistributedError, match=r"partition \d \(svmlight .*p\d\.svm.*memory"):
        ReducedMemoryMultiPass(max_active=300).solve(DaskProblem(ds, "logistic", LAM))
    assert time.perf_counter() - start < 60
    client.unregister_worker_plugin("die-in-passes")
    client.restart()  # workers without the plugin's patch (a quicker shutdown)
