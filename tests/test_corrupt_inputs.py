"""Index arrays from outside (a user's sparse matrix, a chunk cache, a Dask partition) are
checked before any kernel or scipy routine reads through them: an out-of-range index or an
inconsistent ``indptr`` is a DataFormatError naming where it came from, never a segfault
(issue 13, defect 1; the reproducers are the issue's)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from l1scale import (
    SparseLinearRegression,
    SparseLogisticRegression,
    regularization_path,
)
from l1scale.data import Stream, write_cache
from l1scale.data.validation import check_compressed, check_sparse_structure
from l1scale.exceptions import DataFormatError
from l1scale.problems import Problem


def small_data(seed=0, n=60, d=12):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, format="csr", random_state=seed, dtype=np.float64)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return X, y


def corrupted(X, how):
    """A copy of CSR matrix X with its index arrays damaged as scipy lets through."""
    X = X.copy()
    X.indices, X.indptr = X.indices.copy(), X.indptr.copy()
    if how == "index too large":
        X.indices[3] = 10**7
    elif how == "negative index":
        X.indices[3] = -5
    elif how == "indptr decreasing":
        X.indptr[4], X.indptr[5] = X.indptr[5], X.indptr[4] - 1
    elif how == "indptr past the end":
        X.indptr[-1] += 7
    return X


HOWS = ["index too large", "negative index", "indptr decreasing", "indptr past the end"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("solver", ["cd", "rmmp", "fista", "online", "truncated_gradient", "sgd_cumulative"])
def test_a_damaged_user_matrix_is_an_error_for_every_solver(how, solver):
    X, y = small_data()
    with pytest.raises(DataFormatError, match=r"X \(csr\)"):
        SparseLogisticRegression(solver=solver, lam_ratio=0.1).fit(corrupted(X, how), y)


@pytest.mark.parametrize("fmt", ["csc", "coo", "bsr"])
def test_other_formats_are_checked_before_scipy_converts_them(fmt):
    X, y = small_data()
    bad = X.asformat(fmt)
    if fmt == "coo":
        bad.col = bad.col.copy()
        bad.col[2] = 99
    else:
        bad.indices = bad.indices.copy()
        bad.indices[2] = 99
    with pytest.raises(DataFormatError, match="99"):
        SparseLogisticRegression(lam_ratio=0.1).fit(bad, y)
    with pytest.raises(DataFormatError, match="99"):
        Problem(bad, y, lam_ratio=0.1)
    with pytest.raises(DataFormatError, match="99"):
        regularization_path(bad, y, n_lams=3)


def test_predict_and_partial_fit_check_their_input_too():
    X, y = small_data()
    model = SparseLogisticRegression(lam_ratio=0.1).fit(X, y)
    with pytest.raises(DataFormatError):
        model.predict(corrupted(X, "index too large"))
    with pytest.raises(DataFormatError):
        SparseLinearRegression(lam_ratio=0.1).fit(X, y).predict(corrupted(X, "negative index"))
    with pytest.raises(DataFormatError):
        SparseLogisticRegression(solver="truncated_gradient", lam=0.01).partial_fit(
            corrupted(X, "indptr decreasing"), y, classes=[-1.0, 1.0]
        )
    with pytest.raises(DataFormatError, match="10000000"):
        list(Stream.from_arrays(corrupted(X, "index too large"), y, chunk_rows=1000))
    with pytest.raises(DataFormatError, match="chunk 0"):  # a generator's chunks are checked as they come
        list(Stream.from_generator(lambda: iter([(corrupted(X, "negative index"), y)]), n_features=X.shape[1]))


def test_a_valid_matrix_passes_and_the_checks_see_every_rule():
    X, _ = small_data()
    check_sparse_structure(X)
    check_sparse_structure(X.tocsc())
    check_sparse_structure(X.tocoo())
    check_sparse_structure(X.toarray())  # dense: nothing to check
    data, indices, indptr = X.data, X.indices, X.indptr
    check_compressed(data, indices, indptr, X.shape[0], X.shape[1])
    with pytest.raises(DataFormatError, match="entries"):
        check_compressed(data, indices, indptr[:-1], X.shape[0], X.shape[1])
    with pytest.raises(DataFormatError, match="integers"):
        check_compressed(data, indices.astype(float), indptr, X.shape[0], X.shape[1])
    with pytest.raises(DataFormatError, match="indices for"):
        check_compressed(data, indices[:-1], indptr, X.shape[0], X.shape[1])
    with pytest.raises(DataFormatError, match=r"outside \[0, 11\)"):
        check_compressed(data, indices, indptr, X.shape[0], X.shape[1] - 1)


def _unsorted(X, row):
    """A copy of X (CSR or CSC) with the first two entries of ``row`` (major) swapped."""
    X = X.copy()
    start = X.indptr[row]
    X.indices[start], X.indices[start + 1] = X.indices[start + 1], X.indices[start]
    X.has_sorted_indices = False
    return X


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("value_dtype", [np.float32, np.float64])
def test_one_scan_checks_the_values_and_tells_the_canonical_format(fmt, index_dtype, value_dtype):
    rng = np.random.default_rng(3)
    X = sp.random(40, 30, density=0.2, format="coo", random_state=3, dtype=value_dtype)
    # Empty stretches inside indptr (column 5, row 7): a row (column) boundary that is not a descent.
    keep = (X.col != 5) & (X.row != 7)
    X = sp.coo_matrix((X.data[keep], (X.row[keep], X.col[keep])), shape=X.shape).asformat(fmt)
    X.indices, X.indptr = X.indices.astype(index_dtype), X.indptr.astype(index_dtype)
    n_major = X.shape[0] if fmt == "csr" else X.shape[1]
    cases = [(X, True)]
    # Every row (column) with two entries, unsorted; and one duplicate entry.
    for major in rng.permutation([m for m in range(n_major) if X.indptr[m + 1] - X.indptr[m] >= 2])[:5]:
        cases.append((_unsorted(X, major), False))
    dup = X.copy()
    start = dup.indptr[np.flatnonzero(np.diff(dup.indptr) >= 2)[0]]
    dup.indices[start + 1] = dup.indices[start]
    cases.append((dup, False))
    for M, canonical in cases:
        fresh = M.copy()  # no cached flag
        expected = bool(
            getattr(sp, f"{fmt}_matrix")((fresh.data, fresh.indices, fresh.indptr), shape=M.shape).has_canonical_format
        )
        assert expected == canonical
        assert check_sparse_structure(fresh, finite=True) is canonical
        if canonical:
            assert fresh._has_canonical_format  # scipy's cache set, so a conversion does not scan again
    # A value that is not finite is named by its row and column, in either layout.
    for bad in (np.nan, np.inf, -np.inf):
        M = X.copy()
        k = M.indptr[11] + 1
        M.data[k] = bad
        row, col = (11, M.indices[k]) if fmt == "csr" else (M.indices[k], 11)
        with pytest.raises(DataFormatError, match=rf"row {row}, column {col}"):
            check_sparse_structure(M, finite=True)
        check_sparse_structure(M)  # the structure alone is sound
        with pytest.raises(ValueError, match=rf"NaN or infinity \(first at row {row}, column {col}\)"):
            Problem(M, np.where(np.arange(40) % 2, 1.0, -1.0), lam_ratio=0.1)


def test_a_fit_reads_a_sparse_x_once_to_check_it(monkeypatch):
    """The estimator's check (index arrays, finite values, canonical format, one scan) is the
    only one: the Problem it builds on the converted matrix does not scan it again, and the
    conversion of a canonical matrix is not scanned by scipy either."""
    from l1scale.data import validation

    X, y = small_data()
    scans = []
    original = validation._scan_compressed

    def counted(*args):
        scans.append(args[0].shape)
        return original(*args)

    monkeypatch.setattr(validation, "_scan_compressed", counted)
    a = SparseLogisticRegression(lam_ratio=0.1).fit(X, y)
    assert len(scans) == 1
    # A non-canonical X (duplicates) is summed as before: the same model as from the summed X.
    doubled = _with_duplicates(X)
    assert not doubled.copy().has_canonical_format
    b = SparseLogisticRegression(lam_ratio=0.1).fit(doubled, y)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-10, atol=1e-12)
    # A NaN is an error naming its place, for a classifier and a regressor, CSR and CSC.
    bad = X.copy()
    bad.data[4] = np.nan
    for M in (bad, bad.tocsc()):
        with pytest.raises(ValueError, match="NaN or infinity"):
            SparseLogisticRegression(lam_ratio=0.1).fit(M, y)
        with pytest.raises(ValueError, match="NaN or infinity"):
            SparseLinearRegression(lam_ratio=0.1).fit(M, y)


def _with_duplicates(X):
    """X (CSR) with each stored value split into two halves at the same place."""
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    order = np.argsort(np.r_[rows, rows], kind="stable")
    data = np.r_[X.data / 2, X.data / 2][order]
    indices = np.r_[X.indices, X.indices][order]
    return sp.csr_matrix((data, indices, 2 * X.indptr), shape=X.shape)


# --------------------------------------------------------------------------- chunk caches


@pytest.fixture
def cache(tmp_path):
    X, y = small_data(n=300, d=40)
    write_cache(Stream.from_arrays(X, y, chunk_rows=100), tmp_path / "c")
    return tmp_path / "c"


def edit_array(cache, name, edit, chunk=0):
    path = cache / f"chunk-{chunk:06d}.{name}.npy"
    a = np.load(path)
    edit(a)
    np.save(path, a)
    return path


def drop_checksums(cache):
    meta = json.loads((cache / "meta.json").read_text())
    del meta["crc32"]
    (cache / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("checksums", [True, False])
@pytest.mark.parametrize("solver", ["rmmp", "online", "sgd_cumulative", "truncated_gradient"])
def test_an_edited_cache_index_is_an_error_naming_the_chunk(cache, checksums, solver):
    # The reproducer: one entry of a chunk's indices set to 10**9.
    path = edit_array(cache, "indices", lambda a: a.__setitem__(5, 10**9))
    if not checksums:  # a cache from before checksums: the structure check still holds
        drop_checksums(cache)
    with pytest.raises(DataFormatError, match="CRC-32" if checksums else "1000000000") as e:
        SparseLogisticRegression(solver=solver, lam_ratio=0.1).fit(str(cache))
    assert e.value.path == str(path)


@pytest.mark.parametrize(
    "name, edit, match",
    [
        ("indptr", lambda a: a.__setitem__(3, a[4] + 2), "indptr decreases"),
        ("indptr", lambda a: a.__setitem__(-1, a[-1] - 1), "indptr runs"),
        ("data", lambda a: a.__setitem__(0, np.nan), "nan"),
        ("y", lambda a: a.__setitem__(1, np.inf), "inf"),
    ],
)
def test_every_damaged_chunk_array_is_an_error(cache, name, edit, match):
    drop_checksums(cache)
    edit_array(cache, name, edit, chunk=1)
    with pytest.raises(DataFormatError, match=match):
        list(Stream.from_cache(cache))


def test_a_width_edited_in_meta_json_is_an_error(cache):
    meta = json.loads((cache / "meta.json").read_text())
    meta["n_features"] = 5
    (cache / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DataFormatError, match=r"outside \[0, 5\)"):
        list(Stream.from_cache(cache))


@pytest.mark.parametrize(
    "key, value", [("n_features", -1), ("n_chunks", "3"), ("crc32", [{}]), ("version", 1), ("n_samples", True)]
)
def test_a_damaged_meta_json_says_what_is_wrong(cache, key, value):
    meta = json.loads((cache / "meta.json").read_text())
    meta[key] = value
    (cache / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DataFormatError, match=key if key != "version" else "version") as e:
        Stream.from_cache(cache)
    assert e.value.path.endswith("meta.json")


def test_rows_that_disagree_with_meta_json_are_an_error(cache):
    meta = json.loads((cache / "meta.json").read_text())
    meta["n_samples"] += 1
    (cache / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DataFormatError, match="301"):
        list(Stream.from_cache(cache))


def test_the_cli_reports_an_edited_width_and_exits_with_an_error(cache, tmp_path):
    meta = json.loads((cache / "meta.json").read_text())
    meta["n_features"] = 5
    (cache / "meta.json").write_text(json.dumps(meta))
    cli = [sys.executable, "-m", "l1scale.cli"]
    for args in (
        ["train", str(cache), "--solver", "rmmp", "-o", str(tmp_path / "m.l1m")],
        ["train", str(cache), "--solver", "sgd_cumulative", "-o", str(tmp_path / "m.l1m")],
        ["convert", str(cache), str(tmp_path / "out.svm")],
    ):
        run = subprocess.run(cli + args, capture_output=True, text=True, timeout=300, check=False)
        assert run.returncode == 1, run.stderr  # an error, not a signal (139 was a segfault)
        assert "outside [0, 5)" in run.stderr and "chunk-000000.indices.npy" in run.stderr
    assert not os.path.exists(tmp_path / "out.svm")


def test_single_bit_flips_in_a_cache_are_errors_or_harmless(cache):
    """Every bit flip in a chunk file either leaves the data equal or is a DataFormatError
    naming the file: 200 flips (the issue found 89 crashes in 370)."""
    reference = [(c.X.toarray(), c.y) for c in Stream.from_cache(cache)]
    rng = np.random.default_rng(13)
    files = sorted(p for p in cache.iterdir() if p.suffix == ".npy")
    errors = 0
    for _ in range(200):
        path = files[rng.integers(len(files))]
        original = path.read_bytes()
        damaged = bytearray(original)
        bit = int(rng.integers(len(damaged) * 8))
        damaged[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(damaged))
        try:
            chunks = [(c.X.toarray(), c.y) for c in Stream.from_cache(cache)]
        except DataFormatError as e:
            assert e.path == str(path)
            errors += 1
        else:
            assert all(
                np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
                for a, b in zip(chunks, reference, strict=True)
            )
        path.write_bytes(original)
    assert errors > 150  # most flips change the data: each one is caught, not just survived


# --------------------------------------------------------------------------- Dask partitions


def test_a_parquet_partition_wider_than_the_data_set_is_an_error(tmp_path):
    pytest.importorskip("pyarrow")
    distributed = pytest.importorskip("distributed")
    from l1scale.distributed import DaskDataset, DaskProblem, write_partitions
    from l1scale.solvers.sketch import ReducedMemoryMultiPass

    X, y = small_data(n=200, d=40)
    write_partitions(X, y, tmp_path, 2, format="parquet")
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0") as client:
        # The issue's reproducer: a width smaller than the partitions' indices.
        with pytest.raises(DataFormatError, match=r"parquet batch: index \d+ is outside \[0, 20\)"):
            ds = DaskDataset.from_files(str(tmp_path / "part-*.parquet"), client, n_features=20, persist=False)
            ReducedMemoryMultiPass(max_active=30).solve(DaskProblem(ds, "logistic", 0.01))
        # A partition swapped between passes for one with an index past the width.
        ds = DaskDataset.from_files(str(tmp_path / "part-*.parquet"), client, persist=False)
        wide = X.tolil()
        wide.resize(X.shape[0], 60)
        wide[0, 59] = 1.0
        write_partitions(wide.tocsr(), y, tmp_path / "wide", 2, format="parquet")
        first = min((tmp_path / "wide").glob("part-*.parquet"))
        target = min(tmp_path.glob("part-*.parquet"))
        os.replace(first, target)
        with pytest.raises(DataFormatError, match="59"):
            ReducedMemoryMultiPass(max_active=30).solve(DaskProblem(ds, "logistic", 0.01))


@pytest.mark.parametrize("checksums", [True, False])
def test_a_chunk_array_of_another_shape_is_an_error(cache, checksums):
    """Found by the fuzzer: a header declaring shape (n, 0) made the checksum itself fail
    (a TypeError from memoryview), not a DataFormatError."""
    if not checksums:
        drop_checksums(cache)
    path = cache / "chunk-000000.data.npy"
    np.save(path, np.zeros((np.load(path).shape[0], 0)))
    with pytest.raises(DataFormatError, match="CRC-32" if checksums else "one-dimensional") as e:
        list(Stream.from_cache(cache))
    assert e.value.path == str(path)
