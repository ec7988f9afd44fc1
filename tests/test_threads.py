"""n_jobs: solves in threads keep BLAS to one thread while they run (l1scale._threads)."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from threadpoolctl import threadpool_info

from l1scale import SparseLogisticRegression, SparseLogisticRegressionCV
from l1scale._threads import single_threaded_blas


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def blas_with_two_threads():
    from threadpoolctl import threadpool_limits

    if not _blas_threads():
        pytest.skip("no BLAS library seen by threadpoolctl")
    with threadpool_limits(limits=2, user_api="blas"):
        yield


def test_single_threaded_blas_only_when_more_than_one_job(blas_with_two_threads):
    with single_threaded_blas(None):
        assert max(_blas_threads()) == 2
    with single_threaded_blas(2):
        assert set(_blas_threads()) == {1}
    assert max(_blas_threads()) == 2  # restored on exit


@pytest.mark.parametrize("make", ["ovr", "cv"])
def test_solves_in_threads_see_one_blas_thread(blas_with_two_threads, make):
    X, y = make_classification(n_samples=300, n_features=20, n_informative=5, n_classes=3, random_state=0)
    seen = []

    def callback(iteration, history):
        seen.append(max(_blas_threads()))

    def accuracy(y_true, p_positive):  # a callable scoring runs in the CV's threads
        seen.append(max(_blas_threads()))
        return float(np.mean((p_positive > 0.5) == (y_true > 0)))

    if make == "ovr":
        model = SparseLogisticRegression(lam=0.01, multi_class="ovr", n_jobs=2, callback=callback)
    else:
        model = SparseLogisticRegressionCV(n_lams=4, cv=2, multi_class="ovr", n_jobs=2, scoring=accuracy)
    model.fit(X, y)
    assert seen and set(seen) == {1}
    assert max(_blas_threads()) == 2
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])
