"""The label pass of a streaming fit reads an svmlight file's labels without parsing its
features (``Stream.label_pass``): the same scan as a full parse, about 5x faster."""

import numpy as np
import pytest

from l1scale import SparseLogisticRegression
from l1scale.data import Stream
from l1scale.data.svmlight import scan_labels
from l1scale.exceptions import DataFormatError
from l1scale.problems import scan_stream

TEXT = b"""# a header comment
1 qid:3 1:0.5 4:2 # trailing comment: with 9:9 colons
-1 2:1

2.00000000000000000000001 1:1 3:-1.5e-3
\t-1\t5:1e2
1
0.5 qid:1 2:3 3:4 4:5
"""


def full_scan(path, **kw):
    """The scan a full parse gives (the chunks' path)."""
    chunks = list(Stream.from_svmlight(path, **kw))
    y = np.concatenate([c.y for c in chunks])
    nnz = sum(c.X.nnz for c in chunks)
    return y, nnz


def test_the_label_pass_gives_the_scan_of_a_full_parse(tmp_path):
    path = tmp_path / "d.svm"
    path.write_bytes(TEXT)
    y, nnz = full_scan(path, zero_based=False, chunk_bytes=16)
    blocks = list(scan_labels(path, chunk_bytes=16))  # tiny blocks: lines cut across reads
    np.testing.assert_array_equal(np.concatenate([b[0] for b in blocks]), y)
    assert sum(b[1] for b in blocks) == nnz == 9
    stream = Stream.from_svmlight(path, zero_based=False, chunk_bytes=16)
    scan = scan_stream(stream)
    assert stream.passes == 1 and stream.n_samples == 6 == scan.n_samples and scan.nnz == 9
    np.testing.assert_array_equal(scan.classes, np.unique(y))
    assert scan.n_features == 5 and scan.label_weighted_sum == pytest.approx(y.sum())


@pytest.mark.parametrize(
    "line, message",
    [
        ("abc 1:2", "label is not a number"),
        ("1:2 3:4", "missing label"),
        ("nan 1:1", "NaN or infinite"),
        ("1e999999999999999999999 1:1", "NaN"),
    ],
)
def test_a_bad_label_is_an_error_naming_its_line(tmp_path, line, message):
    path = tmp_path / "bad.svm"
    path.write_bytes(b"1 1:1\n-1 2:1\n" + line.encode() + b"\n1 1:1\n")
    with pytest.raises(DataFormatError, match=message) as e:
        scan_stream(Stream.from_svmlight(path, zero_based=False))
    assert e.value.line == 3 and e.value.path == str(path)


def test_a_bad_feature_is_reported_by_the_first_pass_that_parses_it(tmp_path):
    path = tmp_path / "bad.svm"
    path.write_bytes(b"1 1:1\n-1 2:1\n1 3:x\n-1 1:1\n")
    scan = scan_stream(Stream.from_svmlight(path, zero_based=False, n_features=3))  # labels only
    assert scan.n_samples == 4
    with pytest.raises(DataFormatError, match="value of feature 3 is not a number") as e:
        SparseLogisticRegression(solver="truncated_gradient", lam=0.01).fit(
            Stream.from_svmlight(path, zero_based=False, n_features=3)
        )
    assert e.value.line == 3


def test_a_complete_cache_serves_the_label_pass(tmp_path):
    path = tmp_path / "d.svm"
    path.write_bytes(TEXT)
    stream = Stream.from_svmlight(path, zero_based=False, cache=tmp_path / "c")
    assert stream._source.label_blocks() is not None  # no cache yet: the text's labels
    list(stream)  # writes the cache
    assert stream._source.label_blocks() is None
    assert scan_stream(stream).nnz == 9 and stream.passes == 2


def test_fits_from_a_file_and_from_its_arrays_agree(tmp_path):
    rng = np.random.default_rng(0)
    X = (rng.random((300, 20)) < 0.2) * rng.normal(size=(300, 20))
    y = np.where(X @ rng.normal(size=20) > 0, 1.0, -1.0)
    path = tmp_path / "d.svm"
    from l1scale.data import dump_svmlight

    dump_svmlight(X, y, path)
    a = SparseLogisticRegression(solver="sgd_cumulative", lam=0.01).fit(
        Stream.from_svmlight(path, zero_based=False, n_features=20)
    )
    b = SparseLogisticRegression(solver="sgd_cumulative", lam=0.01).fit(Stream.from_arrays(X, y))
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12, atol=1e-15)
