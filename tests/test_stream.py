"""Stream: passes, constructors, binary chunk cache."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import scipy.sparse as sp

import l1scale.data.svmlight as svmlight_module
from l1scale.data import Chunk, Stream, cache_to_svmlight, dump_svmlight, load_svmlight, write_cache
from l1scale.exceptions import DataFormatError


def chunks_equal(a: Chunk, b: Chunk) -> bool:
    if sp.issparse(a.X) != sp.issparse(b.X) or a.X.shape != b.X.shape:
        return False
    if sp.issparse(a.X):
        same_x = (
            np.array_equal(a.X.indptr, b.X.indptr)
            and np.array_equal(a.X.indices, b.X.indices)
            and a.X.data.tobytes() == b.X.data.tobytes()
        )
    else:
        same_x = a.X.tobytes() == b.X.tobytes()
    same_w = (a.sample_weight is None and b.sample_weight is None) or (
        a.sample_weight is not None and b.sample_weight is not None and np.array_equal(a.sample_weight, b.sample_weight)
    )
    return same_x and a.y.tobytes() == b.y.tobytes() and same_w


def gather(stream):
    """All rows of one pass, as dense X, y, and weights (or None)."""
    chunks = list(stream)
    for c in chunks:
        assert isinstance(c, Chunk) and c.y.dtype == np.float64 and c.y.shape == (c.X.shape[0],)
        assert c.X.shape[1] == stream.n_features
        if sp.issparse(c.X):
            assert isinstance(c.X, sp.csr_matrix) and c.X.indices.dtype == np.int64
        else:
            assert c.X.flags.c_contiguous
    X = np.vstack([c.X.toarray() if sp.issparse(c.X) else c.X for c in chunks])
    y = np.concatenate([c.y for c in chunks])
    w = None if chunks[0].sample_weight is None else np.concatenate([c.sample_weight for c in chunks])
    return X, y, w


@pytest.fixture
def svm_file(tmp_path):
    rng = np.random.default_rng(0)
    X = sp.random(200, 30, density=0.2, random_state=rng, format="csr")
    X.data = rng.standard_normal(X.nnz)
    y = np.where(rng.random(200) < 0.5, -1.0, 1.0)
    path = tmp_path / "data.svm"
    dump_svmlight(X, y, path)
    return path, X.toarray(), y


# -------------------------------------------------------------------- from arrays


@pytest.mark.parametrize("kind", ["dense", "fortran", "csr", "csc", "coo", "float32", "int"])
def test_from_arrays_reproduces_data(kind):
    rng = np.random.default_rng(1)
    dense = rng.standard_normal((53, 7)) * (rng.random((53, 7)) < 0.4)
    y, w = rng.standard_normal(53), rng.random(53)
    X = {
        "dense": dense,
        "fortran": np.asfortranarray(dense),
        "csr": sp.csr_matrix(dense),
        "csc": sp.csc_matrix(dense),
        "coo": sp.coo_matrix(dense),
        "float32": dense.astype(np.float32),
        "int": (dense * 10).astype(np.int64),
    }[kind]
    expected = X.toarray() if sp.issparse(X) else np.asarray(X)
    stream = Stream.from_arrays(X, y, w, chunk_rows=10)
    assert stream.n_features == 7 and stream.n_samples == 53
    chunks = list(stream)
    assert [c.X.shape[0] for c in chunks] == [10, 10, 10, 10, 10, 3]
    Xs, ys, ws = gather(stream)
    np.testing.assert_array_equal(Xs, expected)
    np.testing.assert_array_equal(ys, y)
    np.testing.assert_array_equal(ws, w)
    if kind == "float32":
        assert chunks[0].X.dtype == np.float32


def test_from_arrays_chunks_are_views():
    dense = np.arange(60.0).reshape(20, 3)
    chunk = next(iter(Stream.from_arrays(dense, np.zeros(20), chunk_rows=8)))
    assert np.shares_memory(chunk.X, dense)
    csr = sp.csr_matrix(np.where(dense % 3 == 1, dense, 0.0))  # a third stored: below DENSE_SHARE
    csr.indices = csr.indices.astype(np.int64)
    chunk = list(Stream.from_arrays(csr, np.zeros(20), chunk_rows=8))[1]
    assert np.shares_memory(chunk.X.data, csr.data) and np.shares_memory(chunk.X.indices, csr.indices)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_from_arrays_gives_dense_rows_of_a_sparse_matrix_dense_enough(fmt):
    """A sparse X storing at least DENSE_SHARE of its entries is streamed as C-ordered dense
    chunks, made once: the same rows, duplicates summed."""
    dense = np.arange(1.0, 61.0).reshape(20, 3)
    dense[::4, 1] = 0.0
    X = sp.csr_matrix(dense).asformat(fmt)
    chunks = list(Stream.from_arrays(X, np.zeros(20), chunk_rows=8))
    assert all(isinstance(c.X, np.ndarray) and c.X.flags.c_contiguous for c in chunks)
    np.testing.assert_array_equal(np.vstack([c.X for c in chunks]), dense)


def test_from_arrays_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="y must be 1-D with 4 entries"):
        Stream.from_arrays(np.eye(4), np.ones(3))
    with pytest.raises(ValueError, match="sample_weight"):
        Stream.from_arrays(np.eye(4), np.ones(4), np.ones(5))


# ------------------------------------------------------------------ passes


def test_two_passes_give_identical_chunks(svm_file, tmp_path):
    path, dense, y = svm_file
    streams = [
        Stream.from_svmlight(path, chunk_bytes=500),
        Stream.from_svmlight(path, chunk_bytes=500, cache=tmp_path / "cache"),
        Stream.from_arrays(dense, y, chunk_rows=17),
        Stream.from_generator(lambda: ((dense[i : i + 50], y[i : i + 50]) for i in range(0, 200, 50)), n_features=30),
    ]
    passes = []
    for stream in streams:
        first, second = list(stream), list(stream)
        passes.append(first)
        assert len(first) == len(second) > 1
        assert all(chunks_equal(a, b) for a, b in zip(first, second))
        assert stream.passes == 2 and stream.n_samples == 200
        Xs, ys, _ = gather(stream)
        np.testing.assert_array_equal(Xs, dense)
        np.testing.assert_array_equal(ys, y)
    third = list(Stream.from_cache(tmp_path / "cache"))
    assert len(third) == len(passes[1]) and all(chunks_equal(a, b) for a, b in zip(passes[1], third))
    assert all(chunks_equal(a, b) for a, b in zip(passes[0], third))  # text and cache agree


def test_svmlight_stream_attributes(svm_file):
    path, dense, _ = svm_file
    stream = Stream.from_svmlight(path, chunk_bytes=1000)
    assert stream.n_features is None and stream.n_samples is None and stream.passes == 0
    it = iter(stream)
    next(it)
    assert stream.n_features == 30 and stream.n_samples is None  # width known when the pass starts
    for _ in it:
        pass
    assert stream.n_samples == 200 and stream.passes == 1
    for _ in stream:
        break  # an unfinished pass does not count
    assert stream.passes == 1
    assert Stream.from_svmlight(path, n_features=40, zero_based=False).n_features == 40


def test_from_generator_normalises_and_checks(tmp_path):
    calls = []

    def factory():
        calls.append(1)
        yield np.ones((2, 3), dtype=np.int32), [1, -1]
        yield Chunk(sp.coo_matrix(np.eye(3)), np.array([1.0, 1.0, 1.0]), np.ones(3))
        yield (np.zeros((1, 3)), np.array([0]), [2.0])

    stream = Stream.from_generator(factory, n_features=None)
    chunks = list(stream)
    assert stream.n_features == 3 and stream.n_samples == 6 and len(calls) == 1
    assert chunks[0].X.dtype == np.float64 and chunks[0].X.flags.c_contiguous
    assert isinstance(chunks[1].X, sp.csr_matrix) and chunks[1].X.indices.dtype == np.int64
    assert chunks[2].sample_weight.tolist() == [2.0]
    list(stream)
    assert len(calls) == 2
    wrong = Stream.from_generator(lambda: iter([(np.eye(2), [1, 1]), (np.eye(3), [1, 1, 1])]), n_features=2)
    with pytest.raises(ValueError, match="chunk 1 has 3 features"):
        list(wrong)


# ------------------------------------------------------------------- cache


def test_cache_written_on_first_pass_and_read_afterwards(svm_file, tmp_path, monkeypatch):
    path, dense, y = svm_file
    cache = tmp_path / "cache"
    parses = []
    real = svmlight_module._iter_chunks
    monkeypatch.setattr(svmlight_module, "_iter_chunks", lambda *a, **k: (parses.append(1), real(*a, **k))[1])
    stream = Stream.from_svmlight(path, chunk_bytes=700, cache=cache)
    first = list(stream)
    meta = json.loads((cache / "meta.json").read_text())
    assert parses == [1]
    assert meta["n_chunks"] == len(first) > 1 and meta["n_samples"] == 200 and meta["n_features"] == 30
    assert meta["nnz"] == sum(c.X.nnz for c in first) and meta["source"]["name"] == "data.svm"
    assert len(list(cache.glob("chunk-*.data.npy"))) == len(first)
    second = list(stream)
    assert parses == [1]  # the text was not parsed again
    assert all(chunks_equal(a, b) for a, b in zip(first, second))
    # A new Stream on the same file finds the complete cache: no parsing at all.
    again = Stream.from_svmlight(path, chunk_bytes=700, cache=cache)
    assert all(chunks_equal(a, b) for a, b in zip(first, list(again)))
    assert parses == [1]


def test_cache_is_read_instead_of_text(svm_file, tmp_path):
    # Black box: change the text but keep its size and mtime; a cached pass returns the old data.
    path, dense, y = svm_file
    stream = Stream.from_svmlight(path, cache=tmp_path / "cache")
    list(stream)
    st = os.stat(path)
    text = path.read_bytes()
    path.write_bytes(text.replace(b"-1 ", b"+1 "))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    _, ys, _ = gather(stream)
    np.testing.assert_array_equal(ys, y)


def test_interrupted_first_pass_leaves_no_meta(svm_file, tmp_path):
    path, dense, y = svm_file
    cache = tmp_path / "cache"
    stream = Stream.from_svmlight(path, chunk_bytes=500, cache=cache)
    with pytest.raises(RuntimeError):
        for i, _ in enumerate(stream):
            if i == 2:
                raise RuntimeError("consumer failed")
    assert cache.is_dir() and list(cache.glob("chunk-*.data.npy")) and not (cache / "meta.json").exists()
    with pytest.raises(DataFormatError, match="not a complete"):
        Stream.from_cache(cache)
    Xs, ys, _ = gather(stream)  # next pass rebuilds the cache from text
    np.testing.assert_array_equal(Xs, dense)
    assert (cache / "meta.json").exists()
    np.testing.assert_array_equal(gather(Stream.from_cache(cache))[0], dense)


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_damaged_cache_chunk_names_the_file(svm_file, tmp_path, damage):
    path, dense, y = svm_file
    cache = tmp_path / "cache"
    list(Stream.from_svmlight(path, chunk_bytes=500, cache=cache))
    victim = cache / "chunk-000001.indices.npy"
    if damage == "missing":
        victim.unlink()
    else:
        victim.write_bytes(victim.read_bytes()[:60])
    with pytest.raises(DataFormatError, match="unreadable cache chunk") as info:
        list(Stream.from_cache(cache))
    assert "chunk-000001" in str(info.value)


def test_stale_cache_is_rebuilt(svm_file, tmp_path):
    path, dense, y = svm_file
    cache = tmp_path / "cache"
    list(Stream.from_svmlight(path, chunk_bytes=500, cache=cache))
    n_old = len(list(cache.glob("chunk-*.data.npy")))
    dump_svmlight(dense[:20], -y[:20], path)  # new content, fewer chunks
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    stream = Stream.from_svmlight(path, chunk_bytes=500, cache=cache)
    Xs, ys, _ = gather(stream)
    np.testing.assert_array_equal(ys, -y[:20])
    meta = json.loads((cache / "meta.json").read_text())
    assert meta["n_samples"] == 20 and meta["source"]["size"] == os.path.getsize(path)
    assert len(list(cache.glob("chunk-*.data.npy"))) == meta["n_chunks"] < n_old  # old chunk files removed


def test_cache_with_other_parse_options_is_rebuilt(tmp_path):
    path = tmp_path / "z.svm"
    path.write_text("1 1:1 2:2\n-1 3:3\n")
    cache = tmp_path / "cache"
    one = gather(Stream.from_svmlight(path, cache=cache))[0]
    zero = gather(Stream.from_svmlight(path, cache=cache, zero_based=True))[0]
    assert one.shape == (2, 3) and zero.shape == (2, 4)
    np.testing.assert_array_equal(zero[:, 1:], one)


def test_write_cache_and_back_to_svmlight(svm_file, tmp_path):
    path, dense, y = svm_file
    cached = write_cache(path, tmp_path / "cache", chunk_bytes=800)
    assert cached.n_samples == 200 and cached.n_features == 30
    Xs, ys, _ = gather(cached)
    np.testing.assert_array_equal(Xs, dense)
    out = tmp_path / "back.svm.bz2"
    cache_to_svmlight(tmp_path / "cache", out, comment="from the cache")
    X2, y2 = load_svmlight(out, n_features=30)
    assert X2.toarray().tobytes() == dense.tobytes() and y2.tobytes() == y.tobytes()


def test_write_cache_of_any_stream_keeps_weights(tmp_path):
    rng = np.random.default_rng(2)
    dense, y, w = rng.standard_normal((25, 4)), rng.standard_normal(25), rng.random(25)
    cached = write_cache(Stream.from_arrays(dense, y, w, chunk_rows=7), tmp_path / "c")
    Xs, ys, ws = gather(cached)
    np.testing.assert_array_equal(Xs, dense)
    np.testing.assert_array_equal(ws, w)
    assert json.loads((tmp_path / "c" / "meta.json").read_text())["n_chunks"] == 4


def test_from_cache_widens_to_n_features(svm_file, tmp_path):
    path, dense, y = svm_file
    write_cache(path, tmp_path / "cache", chunk_bytes=800)
    wide = Stream.from_cache(tmp_path / "cache", n_features=34)
    assert wide.n_features == 34 and wide.n_samples == 200
    Xs, ys, _ = gather(wide)  # every chunk 34 wide, the 4 new columns zero
    np.testing.assert_array_equal(Xs, np.hstack([dense, np.zeros((200, 4))]))
    np.testing.assert_array_equal(ys, y)
    assert Stream.from_cache(tmp_path / "cache", n_features=30).n_features == 30
    with pytest.raises(DataFormatError, match="30 features, more than n_features=29"):
        Stream.from_cache(tmp_path / "cache", n_features=29)


def test_open_dispatches(svm_file, tmp_path):
    path, dense, y = svm_file
    stream = Stream.from_arrays(dense, y)
    assert Stream.open(stream) is stream
    write_cache(path, tmp_path / "cache")
    assert "cache" in repr(Stream.open(tmp_path / "cache"))
    opened = Stream.open(str(path), zero_based=False, n_features=30)
    np.testing.assert_array_equal(gather(opened)[0], dense)
    with pytest.raises(DataFormatError, match="not a complete"):
        Stream.open(tmp_path)
    with pytest.raises(FileNotFoundError, match="nope.svm"):
        Stream.open(tmp_path / "nope.svm")
    with pytest.raises(TypeError):
        Stream.open(12.5)


def test_open_reads_vw_names_as_vowpal_wabbit(tmp_path):
    import l1scale.cli._data as cli_data
    from l1scale.data import dump_vw
    from l1scale.data.stream import VW_SUFFIXES

    assert cli_data.VW_SUFFIXES == VW_SUFFIXES
    X = sp.random(30, 8, density=0.3, random_state=0, format="csr")
    y = np.where(np.arange(30) % 2, 1.0, -1.0)
    path = tmp_path / "d.vw.gz"
    dump_vw(X, y, path)
    stream = Stream.open(path, hash_bits=6)
    chunks = list(stream)
    assert stream.n_features == 64 and sum(c.X.shape[0] for c in chunks) == 30
    np.testing.assert_array_equal(np.concatenate([c.y for c in chunks]), y)
