"""A real Dask cluster (issue 13): ``dask scheduler`` and ``dask worker`` started as separate
processes on 127.0.0.1, the commands a user runs, and ``l1scale train --dask tcp://...`` run
as a separate process on partition files of Reuters earn. A worker SIGKILLed in the middle of
a pass (after the first pass, while its task of the second pass is running): a worker process
(its nanny starts another), a whole ``dask worker`` process group (a lost machine), or the only
worker of the cluster; each time the CLI exits 0 and saves the single-machine model. The
scheduler killed mid-pass, a scheduler that cannot be reached, or one without workers: a
clear CLI error, not a traceback nor a hang.

Only the timing is instrumented: before the fit, ``client.run`` makes MP / RMMP's map on
each worker hold (after the first pass's four tasks) until the test has killed a process,
so that the kill surely lands while a pass is under way on the victim."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("distributed")

import cloudpickle
from _shared_data import load_svmlight_pm
from distributed import Client
from test_distributed import EARN, EARN_D, LAM, split

from l1scale.data.stream import Stream
from l1scale.model_io import load_model
from l1scale.problems import Problem, StreamProblem
from l1scale.solvers.sketch import ReducedMemoryMultiPass

# _hold_passes runs on the workers: ship it by value (the workers do not import tests/).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.slow

PARTS = 4
WAIT = 90  # seconds: a bound on every wait below (a hang fails the test instead of the CI job)
BIN = os.path.dirname(sys.executable)


_DASK = os.path.join(BIN, "dask")  # the console scripts of this environment: what a user runs
if os.access(_DASK, os.X_OK):
    DASK_SCHEDULER, DASK_WORKER = [_DASK, "scheduler"], [_DASK, "worker"]
else:
    DASK_SCHEDULER = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    DASK_WORKER = [sys.executable, "-m", "distributed.cli.dask_worker"]
_L1SCALE = os.path.join(BIN, "l1scale")
L1SCALE = [_L1SCALE] if os.access(_L1SCALE, os.X_OK) else [sys.executable, "-m", "l1scale.cli"]


class Processes:
    """Processes started in their own process groups; :meth:`kill_all` SIGKILLs every group."""

    def __init__(self, directory):
        self.directory = directory
        self.started = []

    def start(self, name, args, env=None):
        """``args`` in a new session, stdout to NAME.out and stderr to NAME.err."""
        with open(self._path(name, "out"), "wb") as out, open(self._path(name, "err"), "wb") as err:
            proc = subprocess.Popen(
                args, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True, env=env
            )
        proc.name = name
        self.started.append(proc)
        return proc

    def _path(self, name, stream):
        return os.path.join(self.directory, f"{name}.{stream}")

    def stdout(self, name):
        with open(self._path(name, "out"), errors="replace") as fh:
            return fh.read()

    def log(self, name):
        """stdout and stderr."""
        with open(self._path(name, "err"), errors="replace") as fh:
            return self.stdout(name) + fh.read()

    def kill_all(self):
        for proc in self.started:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the process and its children (a worker's nanny's)
            except ProcessLookupError:
                pass
        for proc in self.started:
            proc.wait(timeout=WAIT)


@pytest.fixture
def processes(tmp_path):
    procs = Processes(str(tmp_path))
    yield procs
    procs.kill_all()


def start_scheduler(processes, directory):
    """``dask scheduler`` on a free port of 127.0.0.1, without a dashboard; returns its address
    (read from its scheduler file)."""
    info = os.path.join(directory, "scheduler.json")
    processes.start(
        "scheduler",
        [
            *DASK_SCHEDULER,
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            info,
            "--idle-timeout",
            "600",
        ],
    )
    deadline = time.monotonic() + WAIT
    while True:
        if os.path.exists(info):
            try:
                with open(info) as fh:
                    return json.load(fh)["address"]
            except (ValueError, KeyError):  # being written
                pass
        if processes.started[-1].poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the scheduler did not start:\n{processes.log('scheduler')}")
        time.sleep(0.1)


def start_worker(processes, address, name):
    """``dask worker ADDRESS --nworkers 1 --nthreads 1`` (with its nanny, as by default)."""
    return processes.start(
        name,
        [
            *DASK_WORKER,
            address,
            "--nworkers",
            "1",
            "--nthreads",
            "1",
            "--host",
            "127.0.0.1",
            "--no-dashboard",
            "--name",
            name,
            "--death-timeout",
            "60",
        ],
    )


@pytest.fixture(scope="module")
def earn(tmp_path_factory):
    X, y = load_svmlight_pm("reuters earn", EARN, EARN_D)
    X = X.tocsr()
    paths = split(X, y, str(tmp_path_factory.mktemp("earn-parts")), PARTS)
    ref = ReducedMemoryMultiPass(max_active=300).solve(StreamProblem(Stream.from_arrays(X, y), "logistic", LAM))
    assert ref.converged
    return X, y, paths, ref


def _hold_passes(directory, first_pass_tasks):
    """On a worker: MP / RMMP's map records each call (``call-PID-N``) and, from the second
    pass on (``first_pass_tasks`` calls have started: the next pass is submitted only once
    the previous pass is summed), says so (``running-PID``) and holds until ``release``
    exists. Returns the worker process's pid."""
    import itertools
    import os
    import time

    import l1scale.distributed._tasks as tasks

    real = tasks.sketch_pass
    counter = itertools.count()

    def held(stream, *args):
        release = os.path.join(directory, "release")
        if not os.path.exists(release):
            started = sum(name.startswith("call-") for name in os.listdir(directory))
            open(os.path.join(directory, f"call-{os.getpid()}-{next(counter)}"), "w").close()
            if started >= first_pass_tasks:
                open(os.path.join(directory, f"running-{os.getpid()}"), "w").close()
                deadline = time.monotonic() + 120
                while not os.path.exists(release) and time.monotonic() < deadline:
                    time.sleep(0.02)
        return real(stream, *args)

    tasks.sketch_pass = held
    return os.getpid()


def wait_for(condition, what, proc=None, processes=None):
    deadline = time.monotonic() + WAIT
    while True:
        value = condition()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the CLI ended first:\n{processes.log(proc.name)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {WAIT} s")
        time.sleep(0.05)


def start_fit_and_hold(processes, tmp_path, paths, n_workers):
    """A scheduler, ``n_workers`` workers whose passes hold (``_hold_passes``) and the CLI's
    fit on them; returns (address, worker process groups, the CLI, the pid of a worker
    holding a task of the second pass, the directory whose ``release`` ends the hold)."""
    address = start_scheduler(processes, str(tmp_path))
    groups = {start_worker(processes, address, f"worker-{i}").pid for i in range(n_workers)}
    hold = tmp_path / "hold"
    hold.mkdir()
    with Client(address, timeout=WAIT) as client:
        client.wait_for_workers(n_workers, timeout=WAIT)
        pids = set(client.run(_hold_passes, str(hold), PARTS).values())
    assert len(pids) == n_workers and {os.getpgid(p) for p in pids} == groups
    cli = processes.start(
        "cli",
        [
            *L1SCALE,
            "train",
            *paths,
            "--dask",
            address,
            "--solver",
            "rmmp",
            "--max-active",
            "300",
            "--lam",
            repr(LAM),
            "--json",
            "-o",
            str(tmp_path / "model.l1m"),
        ],
    )

    def running():
        return [int(name.split("-")[1]) for name in os.listdir(hold) if name.startswith("running-")]

    victim = wait_for(running, "no worker started a task of the second pass", cli, processes)[0]
    assert victim in pids
    return address, groups, cli, victim, hold


def finish(processes, cli):
    try:
        return cli.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the CLI did not finish:\n{processes.log('cli')}") from None


@pytest.mark.parametrize("kill", ["worker", "machine", "only-worker"])
def test_a_worker_killed_mid_pass_gives_the_single_machine_model(earn, processes, tmp_path, kill):
    """``worker``: SIGKILL to a worker process (as the kernel's OOM killer does); its nanny
    starts a new one. ``machine``: SIGKILL to a whole ``dask worker`` process group (nanny and
    worker: a lost machine); the fit ends on the other worker. Either way the persisted
    partitions and the tasks of the victim are recomputed on the workers left. ``only-worker``:
    a cluster of one worker, killed and restarted by its nanny: the pass's broadcast point died
    with it (scattered data cannot be recomputed), so the scheduler cancels the pass and RMMP
    broadcasts the point again and repeats the pass on the new worker. The saved model is the
    single-machine one."""
    X, y, paths, ref = earn
    address, groups, cli, victim, hold = start_fit_and_hold(
        processes, tmp_path, paths, 1 if kill == "only-worker" else 2
    )
    if kill == "machine":
        os.killpg(os.getpgid(victim), signal.SIGKILL)
    else:
        os.kill(victim, signal.SIGKILL)
    wait_for(lambda: not _alive(victim), "the killed worker is still there")
    (hold / "release").touch()

    rc = finish(processes, cli)
    assert rc == 0, processes.log("cli")
    summary = json.loads(processes.stdout("cli"))
    assert summary["converged"] and summary["n_iter"] == ref.n_iter > 2, summary
    assert summary["objective"] == pytest.approx(ref.objective, rel=1e-10, abs=0)
    coef, intercept, meta = load_model(tmp_path / "model.l1m")
    assert meta["n_features"] == EARN_D and meta["classes"] == [-1.0, 1.0]
    coef = coef.ravel()
    objective = Problem(X, y, "logistic", LAM).objective(coef, float(np.ravel(intercept)[0]))
    assert abs(objective - ref.objective) <= 1e-10 * abs(ref.objective), (objective, ref.objective)
    np.testing.assert_array_equal(np.flatnonzero(coef), np.flatnonzero(ref.coef))
    np.testing.assert_allclose(coef, ref.coef, rtol=0, atol=1e-8)

    with Client(address, timeout=WAIT) as client:  # the cluster after the fault
        if kill == "machine":
            assert len(client.scheduler_info()["workers"]) == 1
        else:
            client.wait_for_workers(len(groups), timeout=WAIT)  # the nanny's new worker
            assert victim not in client.run(os.getpid).values()


def test_the_scheduler_killed_mid_pass_is_a_clear_cli_error(earn, processes, tmp_path):
    """The scheduler SIGKILLed while a pass runs: the CLI ends at once with one ``Error:`` line
    saying that the connection to the scheduler was lost (distributed's client logs its
    reconnection attempts above it), not an l1scale traceback nor a hang."""
    address, _, cli, _, hold = start_fit_and_hold(processes, tmp_path, earn[2], 2)
    scheduler = processes.started[0]
    os.killpg(scheduler.pid, signal.SIGKILL)
    (hold / "release").touch()
    rc = finish(processes, cli)
    err = processes.log("cli")
    errors = [line for line in err.splitlines() if line.startswith("Error:")]
    assert rc == 1 and len(errors) == 1, err
    assert errors[0].startswith("Error: the cluster cancelled the task of partition"), err
    assert f"the connection to the scheduler {address} was lost" in errors[0], err
    assert os.path.join("l1scale", "distributed") not in err, err  # no traceback through l1scale


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (killed, not yet reaped by its nanny) counts as dead.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli_error(processes, name, args, env):
    proc = processes.start(name, [*L1SCALE, "train", *args, "--solver", "rmmp", "-q"], env=env)
    try:
        rc = proc.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{name}: the CLI hangs") from None
    return rc, processes.log(name)


def test_no_scheduler_or_no_workers_is_a_clear_cli_error(earn, processes, tmp_path):
    """Nothing listening at the address: distributed's connect error, with the address. A
    scheduler without workers: an error that says so (it used to wait for ever in silence).
    Both after distributed's connect timeout, here 3 s."""
    paths = earn[2]
    env = dict(os.environ, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="3s")
    dead = f"tcp://127.0.0.1:{_free_port()}"
    rc, out = _cli_error(processes, "dead", [*paths, "--dask", dead], env)
    assert rc == 1 and f"--dask {dead}: cannot reach the scheduler" in out and "Traceback" not in out, out

    address = start_scheduler(processes, str(tmp_path))
    rc, out = _cli_error(processes, "no-workers", [*paths, "--dask", address], env)
    assert rc == 1 and f"--dask {address}: the scheduler has no workers" in out, out
    assert "dask worker" in out and "Traceback" not in out, out
