"""The online driver's reader thread: order, errors, early exit."""

import threading

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale.data.stream import Stream
from l1scale.exceptions import DataFormatError
from l1scale.problems import StreamProblem
from l1scale.solvers.online_base import prefetched
from l1scale.solvers.truncated import TruncatedGradient


def test_prefetched_keeps_order_and_raises_the_readers_error():
    assert list(prefetched(iter(range(50)))) == list(range(50))

    def failing():
        yield 1
        raise ValueError("bad chunk")

    got = []
    with pytest.raises(ValueError, match="bad chunk"):
        got.extend(prefetched(failing()))
    assert got == [1]


def test_prefetched_stops_its_reader_when_the_consumer_stops():
    before = threading.active_count()
    for item in prefetched(iter(range(1000)), depth=2):
        if item == 3:
            break
    assert threading.active_count() <= before


def test_online_solver_reports_bad_rows_read_by_the_reader_thread():
    X = sp.random(60, 5, density=0.5, random_state=0, format="csr")
    X.data[X.indptr[45]] = np.nan
    y = np.where(np.arange(60) % 2, 1.0, -1.0)
    problem = StreamProblem(Stream.from_arrays(X, y, chunk_rows=20), "logistic", 0.01)
    with pytest.raises(DataFormatError, match=r"rows 40\.\.59"):
        TruncatedGradient(max_iter=2).solve(problem)
