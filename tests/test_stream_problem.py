"""scan_stream: the first pass over a stream (labels, weights, nonzeros of X)."""

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale.data import Stream, dump_svmlight
from l1scale.problems import scan_stream


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = sp.random(130, 12, density=0.3, random_state=rng, format="csr")
    y = np.where(rng.random(130) < 0.4, -1.0, 1.0)
    return X, y


@pytest.mark.parametrize("kind", ["sparse", "dense", "svmlight"])
def test_scan_counts_the_nonzeros_of_x(data, kind, tmp_path):
    X, y = data
    if kind == "svmlight":
        dump_svmlight(X, y, tmp_path / "d.svm")
        stream = Stream.from_svmlight(tmp_path / "d.svm", chunk_bytes=300)
    else:
        stream = Stream.from_arrays(X if kind == "sparse" else X.toarray(), y, chunk_rows=40)
    scan = scan_stream(stream)
    assert scan.nnz == X.nnz > 0 and isinstance(scan.nnz, int)
    assert (scan.n_samples, scan.n_features) == (130, 12)
    np.testing.assert_array_equal(scan.classes, [-1.0, 1.0])


def test_streamed_fit_keeps_its_scan(data):
    from l1scale import SparseLogisticRegression

    X, y = data
    seen = []
    est = SparseLogisticRegression(
        solver="rmmp", lam=0.01, max_iter=5, callback=lambda it, history: seen.append(est.stream_scan_)
    )
    est.fit(Stream.from_arrays(X, y, chunk_rows=40))
    scan = est.stream_scan_
    assert seen and seen[0] is scan  # set before the solving: the first callback reads it
    assert (scan.n_samples, scan.n_features, scan.nnz) == (130, 12, X.nnz)
    np.testing.assert_array_equal(scan.classes, [-1.0, 1.0])
    est.set_params(solver="cd", callback=None).fit(X, y)  # in memory: no scan
    assert not hasattr(est, "stream_scan_")
