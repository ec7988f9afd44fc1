"""Generated feature spaces: random Fourier features and exact RBF kernel columns.

Kernel logistic regression (Qin et al., sec. 1.1 and 3.1) fits a linear model on kernel
columns k(x, x_j) of the RBF kernel

    k(x, y) = exp(-||x - y||^2 / sigma^2)

(the paper's eq. 3: sigma^2 where scikit-learn writes 1 / gamma). Two ways to get the features:

- :class:`RBFKernelFeatures`: the exact kernel columns against the training rows
  (n x n for n training rows: for small n only);
- :class:`RandomFourierFeatures`: Rahimi & Recht's linearisation (the paper's eq. 14),
  z_j(x) = sqrt(2 / D) cos(omega_j . x + b_j) with omega_j ~ N(0, (2 / sigma^2) I) and
  b_j ~ U(0, 2 pi), so that z(x) . z(y) approximates k(x, y) with D features. The map is
  seeded (``random_state``) and computed chunk by chunk: :meth:`RandomFourierFeatures.stream`
  turns a Stream of raw rows into a Stream of features, never an n x D matrix.

Both are scikit-learn transformers (``fit`` / ``transform``), so they go in a Pipeline
before :class:`~l1scale.SparseLogisticRegression`.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .stream import Chunk, Stream
from .validation import validate_data

__all__ = ["RBFKernelFeatures", "RandomFourierFeatures", "rbf_kernel"]


def check_sigma(sigma):
    if not isinstance(sigma, numbers.Real) or not np.isfinite(sigma) or sigma <= 0:
        raise ValueError(f"sigma must be a finite number > 0, got sigma={sigma!r}")
    return float(sigma)


def _squared_norms(X):
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


def rbf_kernel(X, Y, sigma: float = 1.0) -> np.ndarray:
    """The RBF kernel matrix exp(-||x_i - y_j||^2 / sigma^2), shape (len(X), len(Y)).

    X and Y may be dense or sparse; the squared distances are clipped at 0 (rounding).
    """
    sigma = check_sigma(sigma)
    cross = X @ Y.T
    cross = cross.toarray() if sp.issparse(cross) else np.asarray(cross)
    d2 = _squared_norms(X)[:, None] + _squared_norms(Y)[None, :] - 2.0 * cross
    return np.exp(-np.maximum(d2, 0.0) / sigma**2)


class RBFKernelFeatures(TransformerMixin, BaseEstimator):
    """Exact RBF kernel columns: x -> (k(x, x_1), ..., k(x, x_n)) for the n training rows.

    Parameters
    ----------
    sigma : float, default 1.0
        Kernel width: k(x, y) = exp(-||x - y||^2 / sigma^2).

    Attributes
    ----------
    centers_ : ndarray or sparse matrix (n, d)
        The training rows (the model's feature j is the kernel column of row j).
    """

    def __init__(self, sigma=1.0):
        self.sigma = sigma

    def fit(self, X, y=None):
        check_sigma(self.sigma)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64)
        self.centers_ = X.copy()
        return self

    def transform(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return rbf_kernel(X, self.centers_, self.sigma)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class RandomFourierFeatures(TransformerMixin, BaseEstimator):
    """Random Fourier features for the RBF kernel exp(-||x - y||^2 / sigma^2) (Rahimi & Recht).

    z(x) = sqrt(2 / D) cos(x Omega + b), Omega (d x D) with N(0, 2 / sigma^2) entries,
    b uniform in [0, 2 pi); E[z(x) . z(y)] = k(x, y).

    Parameters
    ----------
    n_components : int, default 1000
        D, the number of features.
    sigma : float, default 1.0
        Kernel width (scikit-learn's RBFSampler has gamma = 1 / sigma^2).
    random_state : int, Generator or None
        Seed of Omega and b: the same seed gives the same map.

    Attributes
    ----------
    omega_ : ndarray (n_features_in_, n_components)
    offset_ : ndarray (n_components,)
    """

    def __init__(self, n_components=1000, sigma=1.0, random_state=None):
        self.n_components = n_components
        self.sigma = sigma
        self.random_state = random_state

    def fit(self, X, y=None):
        """Draw Omega and b for the width of X (only its number of columns is used)."""
        sigma = check_sigma(self.sigma)
        if not isinstance(self.n_components, numbers.Integral) or self.n_components < 1:
            raise ValueError(f"n_components must be an integer >= 1, got n_components={self.n_components!r}")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64)
        self._draw(X.shape[1], sigma)
        return self

    def _draw(self, n_features, sigma):
        rng = np.random.default_rng(self.random_state)
        self.omega_ = rng.normal(0.0, np.sqrt(2.0) / sigma, size=(n_features, self.n_components))
        self.offset_ = rng.uniform(0.0, 2.0 * np.pi, size=self.n_components)

    def transform(self, X):
        """z(X), dense (n, n_components)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return self._map(X)

    def _map(self, X):
        proj = X @ self.omega_
        proj = np.asarray(proj)
        proj += self.offset_
        np.cos(proj, out=proj)
        proj *= np.sqrt(2.0 / self.n_components)
        return proj

    def stream(self, stream: Stream) -> Stream:
        """A Stream of the features of ``stream``'s rows, chunk by chunk (the map is fitted
        on the stream's width if it is not fitted yet); labels and weights are passed on."""
        stream = Stream.open(stream)
        if not hasattr(self, "omega_"):
            width = stream.n_features
            if width is None:  # an svmlight file whose width is known after the first chunk
                width = next(iter(stream)).X.shape[1]
            self.n_features_in_ = int(width)
            self._draw(self.n_features_in_, check_sigma(self.sigma))

        def chunks():
            for chunk in stream:
                if chunk.X.shape[1] != self.n_features_in_:
                    raise ValueError(
                        f"the stream has {chunk.X.shape[1]} features, the map was fitted on {self.n_features_in_}"
                    )
                yield Chunk(self._map(chunk.X), chunk.y, chunk.sample_weight)

        return Stream.from_generator(chunks, n_features=self.n_components)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
