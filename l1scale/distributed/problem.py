"""The streamed problem over a :class:`~l1scale.distributed.dataset.DaskDataset`.

    P(w, b) = (1/W) sum_i s_i loss(y_i, x_i . w + b) + lam (l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2)

exactly as :class:`~l1scale.problems.StreamProblem` (W = sum_i s_i over all the
partitions; labels mapped to +-1 and class weights applied per partition, on the
workers, as ``StreamProblem.chunks`` does), but the rows never reach the driver: a pass
is :meth:`DaskProblem.run_pass`, the map of :func:`~l1scale.solvers.sketch.pass_statistics`
over the partitions and a tree reduction of the sums. MP and RMMP take their pass
from it (``MultiPass._pass``), so their driver-side code is the single-machine code.

``describe()`` is the StreamProblem's: a checkpoint (``checkpoint=PATH`` of MP and RMMP)
written by a distributed run resumes on one machine, or on another partitioning, and back.

Each pass records the seconds of its three parts in :attr:`DaskProblem.last_pass_times`,
which the solvers copy into their History: ``compute_time`` (broadcast of the point and
the map, until every partition's statistics exist), ``reduce_time`` (tree reduction and
transfer of the sum to the driver) and ``driver_time`` (the driver's work between the
previous pass's sum and this pass: the Shooting solve, the active set, a checkpoint).
"""

from __future__ import annotations

import time

import numpy as np

from ..data.stream import Stream
from ..problems.stream import StreamProblem
from . import _tasks
from ._errors import TasksCancelled

__all__ = ["DaskProblem"]


class _ClusterSource:
    """Stands for the data of a DaskDataset on the driver, where they never are."""

    def __init__(self, dataset):
        self.dataset = dataset
        self.n_features = dataset.n_features

    def describe(self):
        return f"dask dataset of {self.dataset.n_partitions} partitions"

    def chunks(self):
        raise TypeError(
            "the rows of a DaskDataset are on the cluster; solve its DaskProblem with a "
            "solver that runs distributed passes (mp, rmmp, fista, multiscale_fista, ista, "
            "truncated_gradient, sgd_cumulative)"
        )


class DaskProblem(StreamProblem):
    """Loss + penalty + intercept over the partitions of a DaskDataset.

    A :class:`~l1scale.problems.base.ProblemLike` of kind ``"stream"`` that is ``distributed``: its
    passes (:meth:`run_pass`, :meth:`map_reduce`, and those of its objective, certificate and
    lam_max) run on the workers; :meth:`chunks` is refused on the driver.

    Parameters
    ----------
    dataset : DaskDataset
    loss, lam, lam_ratio, l1_ratio, fit_intercept, positive_class, class_weight
        As :class:`~l1scale.problems.StreamProblem`.
    scan : ignored
        The data set's own scan is used (accepted for the StreamProblem signature).
    """

    PASS_RETRIES = 2  # run_pass: repeats of a pass cancelled because its broadcast point died
    distributed = True

    def __init__(
        self,
        dataset,
        loss="logistic",
        lam=None,
        *,
        lam_ratio=None,
        l1_ratio=1.0,
        fit_intercept=True,
        positive_class=None,
        class_weight=None,
        scan=None,
    ):
        super().__init__(
            Stream(_ClusterSource(dataset), n_samples=dataset.scan.n_samples),
            loss,
            lam,
            lam_ratio=lam_ratio,
            l1_ratio=l1_ratio,
            fit_intercept=fit_intercept,
            positive_class=positive_class,
            class_weight=class_weight,
            scan=dataset.scan,
        )
        self.dataset = dataset
        self.spec = _tasks.ProblemSpec(
            self.loss.name, self.l1_ratio, self.fit_intercept, self.positive_class, self.class_weight, self.scan
        )
        self.last_pass_times = {}
        self._last_end = None

    # ------------------------------------------------------------------ passes
    def broadcast(self, value):
        """A future of ``value`` copied to every worker once (``client.scatter(broadcast=True)``:
        a large array given directly to many tasks is serialised into each of them)."""
        [future] = self.dataset.client.scatter([value], broadcast=True, hash=False)
        return future

    def map_reduce(self, fn, *args, what="pass"):
        """sum over partitions of ``fn(stream, spec, *args)``, timed (see the module docstring)."""
        start = time.perf_counter()
        driver = 0.0 if self._last_end is None else start - self._last_end
        ds = self.dataset
        parts = ds.map(fn, self.spec, *args, what=what)
        total = ds.tree_reduce(parts)  # submitted now: the scheduler starts it when the map is done
        ds.wait(parts)
        mapped = time.perf_counter()
        total = ds.gather([total])[0]
        self._last_end = time.perf_counter()
        self.last_pass_times = {
            "compute_time": mapped - start,
            "reduce_time": self._last_end - mapped,
            "driver_time": driver,
        }
        return total

    def run_pass(self, beta, b, active, *, sparse_sketch=False):
        """MP / RMMP's pass: the PassStatistics summed over every row, at (beta, b), with the
        sketch on ``active``; the point is broadcast once.

        When every worker holding the broadcast point dies (the only worker, killed and
        restarted by its nanny), the scheduler cancels the pass (scattered data cannot be
        recomputed): once a worker is there again, the point is broadcast again and the pass
        repeated (its sums are the same), up to ``PASS_RETRIES`` times."""
        point = (np.asarray(beta, dtype=np.float64), float(b), np.asarray(active))
        for retry in range(self.PASS_RETRIES + 1):
            try:
                return self.map_reduce(_tasks.sketch_pass, self.broadcast(point), sparse_sketch)
            except TasksCancelled:
                if retry == self.PASS_RETRIES or not self.dataset.worker_back():
                    raise

    def loss_and_gradient(self, w, b=0.0) -> np.ndarray:
        """As :meth:`StreamProblem.loss_and_gradient`: the map over the partitions and the sum."""
        point = (np.asarray(w, dtype=np.float64), float(b))
        return self.map_reduce(_tasks.loss_and_gradient, self.broadcast(point), what="objective")

    def gradient_at_start(self) -> np.ndarray:
        """One pass: the mean-form loss gradient at (0, b0) (for lam_ratio)."""
        return self.map_reduce(_tasks.gradient_at, self.intercept_only(), what="lam_max") / self.weight_sum
