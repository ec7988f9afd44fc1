"""Where the tests find ``../shared/data`` (or ``$L1SCALE_DATA``), and a loader that skips
the test when a data set is not there."""

import os

import numpy as np
import pytest

DATA = os.environ.get("L1SCALE_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))


def load_svmlight_pm(name, path, n_features):
    """X (CSR) and y in {-1, +1} of the svmlight file DATA/path; skips the test without it."""
    full = os.path.join(DATA, path)
    if not os.path.exists(full):
        pytest.skip(f"{name} not found under {DATA}")
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(full, n_features=n_features)
    return X, np.where(y > 0, 1.0, -1.0)


def news20_split():
    """The batch benchmark's news20 training split (a seeded 75% of the rows): X (CSR), y in {-1, +1}."""
    X, y = load_svmlight_pm("news20", "news20/news20_bydate_binary.svm.bz2", 588_937)
    rows = np.sort(np.random.default_rng(0).permutation(X.shape[0])[: int(0.75 * X.shape[0])])
    return X[rows], y[rows]


def random_binary_rows(rng, n, d, per_row):
    """A CSR matrix of n rows, each ``per_row`` columns of ``d`` drawn uniformly (repeats merged), value
    1: hashed one-hot rows, most columns set in a few rows when d is large."""
    import scipy.sparse as sp

    cols = np.sort(rng.integers(0, d, size=(n, per_row)), axis=1)
    X = sp.csr_matrix((np.ones(n * per_row), cols.ravel(), np.arange(0, n * per_row + 1, per_row)), shape=(n, d))
    X.sum_duplicates()
    X.data[:] = 1.0
    return X
