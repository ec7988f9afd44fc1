"""svmlight text parsed in threads (``svmlight._in_order``) gives what one thread
gives: the same chunks, in order, and the same error on the same line."""

import numpy as np
import pytest

from l1scale.data import Stream, dump_svmlight, load_svmlight
from l1scale.data import svmlight as svm
from l1scale.exceptions import DataFormatError


@pytest.fixture
def text_file(tmp_path):
    rng = np.random.default_rng(0)
    X = (rng.random((3000, 40)) < 0.2) * rng.normal(size=(3000, 40))
    y = np.where(rng.random(3000) < 0.5, -1.0, 1.0)
    path = tmp_path / "d.svm"
    dump_svmlight(X, y, path)
    return path


def chunks(path, threads, monkeypatch, **kw):
    monkeypatch.setenv("L1SCALE_PARSE_THREADS", str(threads))
    return [
        (c.X.toarray(), c.y)
        for c in Stream.from_svmlight(path, zero_based=False, n_features=40, chunk_bytes=4096, **kw)
    ]


@pytest.mark.parametrize("threads", [2, 3])
def test_threads_give_the_sequential_chunks_in_order(text_file, threads, monkeypatch):
    one = chunks(text_file, 1, monkeypatch)
    many = chunks(text_file, threads, monkeypatch)
    assert len(one) == len(many) > 10  # small blocks: many buffers in flight
    for (a, y_a), (b, y_b) in zip(one, many, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(y_a, y_b)
    monkeypatch.setenv("L1SCALE_PARSE_THREADS", str(threads))
    X, _ = load_svmlight(text_file, zero_based=False, n_features=40)
    np.testing.assert_array_equal(X.toarray(), np.vstack([c[0] for c in one]))


@pytest.mark.parametrize("threads", [1, 2])
def test_an_error_names_the_same_line_after_every_block_before_it(text_file, threads, monkeypatch):
    lines = text_file.read_bytes().splitlines(keepends=True)
    lines[2500] = b"1 3:x\n"
    text_file.write_bytes(b"".join(lines))
    monkeypatch.setenv("L1SCALE_PARSE_THREADS", str(threads))
    seen = []
    with pytest.raises(DataFormatError, match="value of feature 3 is not a number") as e:
        for c in Stream.from_svmlight(text_file, zero_based=False, n_features=40, chunk_bytes=4096):
            seen.append(c.X.shape[0])
    assert e.value.line == 2501
    assert sum(seen) <= 2500 and sum(seen) > 2000  # the blocks before the bad line, in order


def test_stopping_early_leaves_no_parse_running(text_file, monkeypatch):
    monkeypatch.setenv("L1SCALE_PARSE_THREADS", "2")
    stream = iter(Stream.from_svmlight(text_file, zero_based=False, n_features=40, chunk_bytes=4096))
    next(stream)
    stream.close()  # the generator's finally shuts the pool down
    import threading

    assert not [t for t in threading.enumerate() if t.name.startswith("l1scale-parse")]


def test_the_thread_count_is_checked(monkeypatch):
    monkeypatch.setenv("L1SCALE_PARSE_THREADS", "many")
    with pytest.raises(ValueError, match="L1SCALE_PARSE_THREADS"):
        svm.parse_threads()
    monkeypatch.setenv("L1SCALE_PARSE_THREADS", "1")
    assert svm.parse_threads() == 1


@pytest.mark.parametrize("threads", [1, 2])
def test_the_label_pass_in_threads_gives_the_sequential_labels_and_errors(text_file, threads, monkeypatch):
    monkeypatch.setenv("L1SCALE_PARSE_THREADS", "1")
    one = list(svm.scan_labels(text_file, chunk_bytes=4096))
    monkeypatch.setenv("L1SCALE_PARSE_THREADS", str(threads))
    many = list(svm.scan_labels(text_file, chunk_bytes=4096))
    assert len(one) == len(many) > 10
    for (a, nnz_a), (b, nnz_b) in zip(one, many, strict=True):
        np.testing.assert_array_equal(a, b)
        assert nnz_a == nnz_b
    lines = text_file.read_bytes().splitlines(keepends=True)
    lines[2700] = b"x 3:1\n"
    text_file.write_bytes(b"".join(lines))
    with pytest.raises(DataFormatError, match="label is not a number") as e:
        list(svm.scan_labels(text_file, chunk_bytes=4096))
    assert e.value.line == 2701
