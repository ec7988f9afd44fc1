"""Generated feature spaces for feature cached loops (FCL, ALGORITHMS.md section 6).

A feature space maps a raw example x to phi(x) in R^p, with p too large to store
phi(X). FCL's writer thread sweeps the candidate features block by block:
:meth:`FeatureSpace.column_block` generates block k of columns of phi(X) over all
n examples as CSC, inside a Numba ``nogil`` kernel (so it runs in parallel with the
trainer), at a cost proportional to the block's nnz plus n, never columns x n.
:meth:`FeatureSpace.transform` gives phi(X) (or chosen columns of it) as CSR, to
predict with a sparse model.

Spaces:

- :class:`DNAPatterns`: position-specific patterns over {A, C, G, T, ?} (the paper's
  splice-site features);
- :class:`Products`: monomials of the inputs up to a degree (the polynomial-kernel space);
- :class:`RandomFourier`: random Fourier features of the RBF kernel, the same map as
  :class:`~l1scale.data.features.RandomFourierFeatures` for the same seed.

Preparing an input (validation, CSR/CSC copies) costs O(size of X), more than a block of a
sparse input, so a space keeps the prepared form of the last ``raw`` *object* it saw
(compared by identity): passing the same object to every ``column_block`` pays it once.
Do not modify ``raw`` in place between calls, or pass :meth:`FeatureSpace.prepare`'s result.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from . import _feature_space_kernels as _k
from ._svmlight_write import make_csr
from .features import RandomFourierFeatures, check_sigma
from .sequences import ALPHABET, encode_sequences

__all__ = ["DNAPatterns", "FeatureSpace", "Prepared", "Products", "RandomFourier"]


#: The most examples a generated feature space takes: its column blocks and FCL's cache store
#: row numbers as int32 (12 bytes per cached nonzero instead of 16), which would wrap past it.
MAX_ROWS = int(np.iinfo(np.int32).max)


def check_row_count(n) -> int:
    """``n`` as an int, or a ValueError when int32 row numbers cannot hold it (``MAX_ROWS``)."""
    n = int(n)
    if n > MAX_ROWS:
        raise ValueError(
            f"a generated feature space takes at most 2**31 - 1 = {MAX_ROWS} examples (its column "
            f"blocks and feature cache hold int32 row numbers), got {n}: split the data"
        )
    return n


class Prepared:
    """Validated input (``n`` examples, the ``arrays`` the kernels read) of one fit of one
    space: a refit or another space refuses it, since its layout may differ.

    ``n`` is checked against ``MAX_ROWS`` here, the one door to the block kernels."""

    def __init__(self, space, n, arrays):
        self.token = space._token
        self.n = check_row_count(n)
        self.arrays = arrays


class FeatureSpace(BaseEstimator):
    """Base class: the block and transform protocol FCL's writer uses.

    Subclasses define ``_fit(raw)`` (sets ``n_features_``, ``n_inputs_``,
    ``_block_starts_``), ``_prepare(raw)``, ``_block(prep, k)``, ``_rows(prep)``,
    ``_select(prep, columns)``, ``describe(j)`` and ``block_bytes``. ``kernels`` names
    the jitted functions that do the work (tests check they release the GIL).

    Attributes
    ----------
    n_features_ : int
        p, the number of candidate features.
    n_blocks_ : int
        Number of column blocks; block k holds columns ``block_range(k)``.
    n_inputs_ : int
        Width of the raw input (sequence length L for DNA).
    """

    kernels: tuple = ()

    def fit(self, raw, y=None):
        """Validate ``raw``, learn its width and lay out the candidate features; returns self."""
        self._cache, self._token = None, object()
        self._fit(raw)
        self.n_blocks_ = int(self._block_starts_.shape[0] - 1)
        self._cache = (raw, self._prepare(raw))
        return self

    def prepare(self, raw) -> Prepared:
        """The validated, kernel-ready form of ``raw``; pass it wherever ``raw`` is taken."""
        check_is_fitted(self, "n_features_")
        if isinstance(raw, Prepared):
            if raw.token is not self._token:
                raise ValueError("this input was prepared by another feature space (or an earlier fit)")
            return raw
        cache = getattr(self, "_cache", None)  # one read: another thread may replace it
        if cache is not None and cache[0] is raw:
            return cache[1]
        prep = self._prepare(raw)
        self._cache = (raw, prep)
        return prep

    def block_range(self, k) -> tuple:
        """Columns ``(j0, j1)`` of block k (j0 inclusive, j1 exclusive)."""
        check_is_fitted(self, "n_features_")
        if not isinstance(k, numbers.Integral) or not 0 <= k < self.n_blocks_:
            raise ValueError(f"block k={k!r} is out of range: the space has {self.n_blocks_} blocks")
        return int(self._block_starts_[k]), int(self._block_starts_[k + 1])

    def column_block(self, raw, k):
        """Block k of phi(raw) as CSC over all rows.

        Parameters
        ----------
        raw : input of the space, or a :class:`Prepared` one
        k : int
            0 <= k < n_blocks_.

        Returns
        -------
        j0 : int
            The block's first column; it holds columns j0 .. j0 + m - 1.
        indptr : ndarray of int64, shape (m + 1,)
        rows : ndarray of int32, shape (nnz,)
            Ascending within each column.
        vals : ndarray of float64, shape (nnz,)
        """
        j0, _ = self.block_range(k)
        indptr, rows, vals = self._block(self.prepare(raw), int(k))
        return j0, indptr, rows, vals

    def transform(self, raw, columns=None) -> sp.csr_matrix:
        """phi(raw) as CSR with int64 indices, shape (n, p), or (n, len(columns)) with
        column t equal to candidate ``columns[t]`` (any order, repeats allowed)."""
        prep = self.prepare(raw)
        if columns is None:
            indptr, indices, data = self._rows(prep)
            return make_csr(data, indices, indptr, (prep.n, self.n_features_))
        columns = np.asarray(columns)
        if columns.ndim != 1 or (columns.size and not np.issubdtype(columns.dtype, np.integer)):
            raise ValueError(
                f"columns must be a 1-D array of integers, got shape {columns.shape} and dtype {columns.dtype}"
            )
        columns = columns.astype(np.int64)
        if columns.size and (columns.min() < 0 or columns.max() >= self.n_features_):
            raise ValueError(
                f"columns must be in 0..{self.n_features_ - 1}, got values from {columns.min()} to {columns.max()}"
            )
        indptr, indices, data = self._select(prep, columns)
        return make_csr(data, indices, indptr, (prep.n, columns.shape[0]))

    def _check_j(self, j) -> int:
        check_is_fitted(self, "n_features_")
        if not isinstance(j, numbers.Integral) or not 0 <= j < self.n_features_:
            raise ValueError(f"feature j={j!r} is out of range: the space has {self.n_features_} features")
        return int(j)

    def _check_width(self, width):
        if width != self.n_inputs_:
            raise ValueError(f"raw has width {width}, the space was fitted on width {self.n_inputs_}")

    def __getstate__(self):
        state = dict(super().__getstate__())  # object's default is the live __dict__: copy
        state.pop("_cache", None)  # a reference to the caller's data: not part of the model
        state.pop("_token", None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._token = object()


def _as_csr(raw, width=None) -> sp.csr_matrix:
    """Canonical float64 CSR of a dense or sparse matrix, without explicit zeros; ValueError
    naming the first row holding NaN or inf, or the widths when they differ."""
    if sp.issparse(raw):
        X = sp.csr_matrix(raw, dtype=np.float64, copy=True)
    else:
        X = np.asarray(raw, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"raw must be 2-D (n, n_inputs), got shape {X.shape}")
        X = sp.csr_matrix(X)
    if width is not None and X.shape[1] != width:
        raise ValueError(f"raw has width {X.shape[1]}, the space was fitted on width {width}")
    X.sum_duplicates()  # also sorts the indices, which the kernels' binary searches need
    bad = np.flatnonzero(~np.isfinite(X.data))
    if bad.size:
        row = int(np.searchsorted(X.indptr, bad[0], side="right") - 1)
        raise ValueError(f"raw has NaN or infinite values (first in row {row})")
    X.eliminate_zeros()
    return X


def _csr_arrays(X):
    return X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data


# ------------------------------------------------------------------------------ DNA


class DNAPatterns(FeatureSpace):
    """Position-specific DNA patterns with wildcards (the FCL paper, sec. 4.2).

    A candidate is a start position k and a pattern b of length d over {A, C, G, T, ?}
    whose first symbol is not '?'; phi = 1 when seq[k:k+d] matches b ('?' matches any
    base). With P start positions there are p = P * 4 * 5^(d-1) candidates and each
    sequence has P * 2^(d-1) nonzeros.

    Index map: j = r * 4 * 5^(d-1) + code(b), r the rank of k among the start positions
    (r = k by default), code(b) = sum_t b_t 5^(d-1-t) with A, C, G, T, ? = 0..4 (b read as
    a base-5 number). One block per start position.

    Parameters
    ----------
    d : int, default 3
        Pattern length.
    positions : array-like of int or None
        Start positions to use (sorted, unique, in 0..L-d); default all L - d + 1.

    Notes
    -----
    ``raw`` is an (n, L) array of codes A, C, G, T = 0..3 or a list of strings (encoded at
    each call unless cached; pass codes or :meth:`prepare`'s result in a loop).
    """

    kernels = (_k.dna_block, _k.dna_rows, _k.dna_select)

    def __init__(self, d=3, positions=None):
        self.d = d
        self.positions = positions

    def _codes(self, raw):
        if isinstance(raw, np.ndarray) and raw.dtype.kind in "US":
            raw = raw.tolist()
        if isinstance(raw, (list, tuple)) and (not raw or isinstance(raw[0], str)):
            codes = encode_sequences(raw)
        else:
            codes = np.asarray(raw)
            if codes.ndim != 2:
                raise ValueError(f"raw must be (n, L) codes or a list of strings, got shape {codes.shape}")
            if codes.size and not np.issubdtype(codes.dtype, np.integer):
                raise ValueError(f"codes must be integers 0..3 (A, C, G, T), got dtype {codes.dtype}")
            bad = np.argwhere((codes < 0) | (codes > 3))
            if bad.size:
                i, t = (int(v) for v in bad[0])
                raise ValueError(f"sequence {i} has code {codes[i, t]} at position {t}; expected 0..3 (A, C, G, T)")
        if hasattr(self, "n_inputs_"):
            self._check_width(codes.shape[1])
        return np.ascontiguousarray(codes, dtype=np.uint8)

    def _fit(self, raw):
        if not isinstance(self.d, numbers.Integral) or self.d < 1:
            raise ValueError(f"d must be an integer >= 1, got d={self.d!r}")
        for name in ("n_inputs_", "n_features_"):
            self.__dict__.pop(name, None)
        L = self._codes(raw).shape[1]
        d = int(self.d)
        if d > L:
            raise ValueError(f"d={d} is longer than the sequences (L={L})")
        if self.positions is None:
            pos = np.arange(L - d + 1, dtype=np.int64)
        else:
            pos = np.asarray(self.positions, dtype=np.int64).ravel()
            if pos.size == 0 or np.any(np.diff(pos) <= 0) or pos[0] < 0 or pos[-1] > L - d:
                raise ValueError(
                    f"positions must be increasing, unique, in 0..{L - d} (L={L}, d={d}); got {self.positions!r}"
                )
        self.positions_ = pos
        self.n_columns_per_position_ = 4 * 5 ** (d - 1)
        self._block_starts_ = np.arange(pos.size + 1, dtype=np.int64) * self.n_columns_per_position_
        self.n_inputs_ = L
        self.n_features_ = int(self._block_starts_[-1])

    def _prepare(self, raw):
        codes = self._codes(raw)
        return Prepared(self, codes.shape[0], (codes,))

    def _block(self, prep, k):
        indptr, rows, vals, bad = _k.dna_block(prep.arrays[0], self.positions_[k], int(self.d))
        if bad >= 0:  # only reachable when a cached array was modified in place
            raise ValueError(f"sequence {bad} has a code outside 0..3 near position {self.positions_[k]}")
        return indptr, rows, vals

    def _rows(self, prep):
        return _k.dna_rows(prep.arrays[0], self.positions_, int(self.d))

    def _digits(self, columns):
        """Start positions (q,) and base-5 digits (q, d) of candidate indices."""
        d = int(self.d)
        r, code = np.divmod(columns, self.n_columns_per_position_)
        digits = (code[:, None] // 5 ** np.arange(d - 1, -1, -1)) % 5
        return self.positions_[r], digits.astype(np.int64)

    def _select(self, prep, columns):
        starts, digits = self._digits(columns)
        return _k.dna_select(prep.arrays[0], starts, digits)

    def describe(self, j) -> str:
        """``"k:PATTERN"``, e.g. ``"12:AC?T"`` (k the start position)."""
        starts, digits = self._digits(np.array([self._check_j(j)]))
        return f"{starts[0]}:" + "".join((ALPHABET + "?")[b] for b in digits[0])

    def block_bytes(self, raw, k) -> int:
        """Bytes of block k's arrays: n * 2^(d-1) (row, value) pairs and the indptr."""
        j0, j1 = self.block_range(k)
        n = self.prepare(raw).n
        return int(n * 2 ** (int(self.d) - 1) * 12 + (j1 - j0 + 1) * 8)


# ------------------------------------------------------------------------------ products


def _binom(a, b):
    return math.comb(a, b) if 0 <= b <= a else 0


class Products(FeatureSpace):
    """Monomials of the inputs: x_a (if ``include_inputs``), x_a x_b (a <= b, squares
    included), ... up to ``degree``; the polynomial-kernel space.

    Index map: blocks by the smallest index a (block a holds every monomial whose
    smallest index is a), in order a = 0, 1, ...; within block a, by degree, and within a
    degree by the colex rank of the other indices v_1 <= ... <= v_t (v = index - a):
    sum_i C(v_i + i - 1, i). For degree 2: block a is x_a, x_a x_a, x_a x_(a+1), ...,
    x_a x_(n_inputs-1). :meth:`monomial` and :meth:`index` convert both ways.

    Parameters
    ----------
    degree : int, default 2
        Highest degree (any >= 1; block a has O(n_inputs^(degree-1)) columns).
    include_inputs : bool, default True
        Include the degree-1 monomials x_a.

    Notes
    -----
    Only products of nonzeros are generated, so a block costs its nnz plus the rows with
    x_a != 0 (found from a CSC copy of the input).
    """

    kernels = (_k.products_block, _k.products_rows, _k.products_select, _k.products_block_nnz)

    def __init__(self, degree=2, include_inputs=True):
        self.degree = degree
        self.include_inputs = include_inputs

    def _fit(self, raw):
        if not isinstance(self.degree, numbers.Integral) or self.degree < 1:
            raise ValueError(f"degree must be an integer >= 1, got degree={self.degree!r}")
        if self.degree == 1 and not self.include_inputs:
            raise ValueError("degree=1 with include_inputs=False leaves no features")
        self.__dict__.pop("n_inputs_", None)
        width = _as_csr(raw).shape[1]
        D, lo = int(self.degree), 0 if self.include_inputs else 1
        # deg_off[a, t]: first local column of the monomials x_a * (t other indices >= a)
        off = np.zeros((width, D + 1), dtype=np.int64)
        r = width - np.arange(width, dtype=np.int64)  # number of indices >= a
        count = np.ones(width, dtype=np.int64)  # C(r - 1 + t, t), updated exactly from t - 1
        for t in range(D):
            if t > 0:
                count = count * (r - 1 + t) // t
            off[:, t + 1] = off[:, t] + (count if t >= lo else 0)
        self._deg_off_ = np.ascontiguousarray(off[:, :D])
        self._block_starts_ = np.concatenate([[0], np.cumsum(off[:, D])]).astype(np.int64)
        self.n_inputs_ = width
        self.n_features_ = int(self._block_starts_[-1])

    def _prepare(self, raw):
        X = _as_csr(raw, self.n_inputs_)
        C = X.tocsc()
        C.sort_indices()
        return Prepared(self, X.shape[0], _csr_arrays(X) + (C.indptr.astype(np.int64), C.indices.astype(np.int32)))

    def _block(self, prep, k):
        indptr, indices, data, col_ptr, col_rows = prep.arrays
        j0, j1 = self.block_range(k)
        return _k.products_block(
            indptr,
            indices,
            data,
            col_ptr,
            col_rows,
            k,
            int(self.degree),
            bool(self.include_inputs),
            self._deg_off_[k],
            j1 - j0,
        )

    def _rows(self, prep):
        indptr, indices, data = prep.arrays[:3]
        return _k.products_rows(
            indptr, indices, data, int(self.degree), bool(self.include_inputs), self._deg_off_, self._block_starts_
        )

    def _select(self, prep, columns):
        mono = np.full((columns.shape[0], int(self.degree)), -1, dtype=np.int64)
        for t, j in enumerate(columns):
            m = self.monomial(int(j))
            mono[t, : len(m)] = m
        indptr, indices, data = prep.arrays[:3]
        return _k.products_select(indptr, indices, data, mono)

    def monomial(self, j) -> tuple:
        """The input indices (ascending, with repeats) of candidate j."""
        j = self._check_j(j)
        a = int(np.searchsorted(self._block_starts_, j, side="right") - 1)
        local = j - int(self._block_starts_[a])
        t = int(np.searchsorted(self._deg_off_[a], local, side="right") - 1)
        rank, tail = local - int(self._deg_off_[a, t]), []
        for i in range(t, 0, -1):  # unrank colex: the largest v with C(v + i - 1, i) <= rank
            lo, hi = 0, self.n_inputs_ - a - 1
            while lo < hi:  # bisection: blocks can be wide
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if _binom(mid + i - 1, i) <= rank else (lo, mid - 1)
            rank -= _binom(lo + i - 1, i)
            tail.append(a + lo)
        return (a,) + tuple(reversed(tail))

    def index(self, monomial) -> int:
        """Candidate index of a monomial given by its input indices (any order)."""
        check_is_fitted(self, "n_features_")
        m = sorted(int(v) for v in monomial)
        t = len(m) - 1
        if (
            not 1 <= len(m) <= self.degree
            or m[0] < 0
            or m[-1] >= self.n_inputs_
            or (t == 0 and not self.include_inputs)
        ):
            raise ValueError(f"{tuple(monomial)!r} is not a monomial of this space")
        a = m[0]
        rank = sum(_binom(v - a + i, i + 1) for i, v in enumerate(m[1:]))
        return int(self._block_starts_[a] + self._deg_off_[a, t] + rank)

    def describe(self, j) -> str:
        """``"x3*x17"`` (zero-based input indices; a square is ``"x3*x3"``)."""
        return "*".join(f"x{a}" for a in self.monomial(j))

    def block_bytes(self, raw, k) -> int:
        """Exact bytes of block k's arrays (its nnz from a closed form, nothing generated)."""
        j0, j1 = self.block_range(k)
        indptr, indices, _, col_ptr, col_rows = self.prepare(raw).arrays
        nnz = _k.products_block_nnz(
            indptr, indices, col_ptr, col_rows, int(k), int(self.degree), bool(self.include_inputs)
        )
        return int(nnz * 12 + (j1 - j0 + 1) * 8)


# ------------------------------------------------------------------------------ random Fourier


class RandomFourier(FeatureSpace):
    """Random Fourier features of the RBF kernel exp(-||x - y||^2 / sigma^2).

    phi_j(x) = sqrt(2 / D) cos(omega_j . x + b_j), omega_j ~ N(0, (2 / sigma^2) I),
    b_j ~ U(0, 2 pi): Omega and b are drawn exactly as
    :class:`~l1scale.data.features.RandomFourierFeatures` draws them, so the same
    ``random_state`` gives the same features. Columns are dense (all n rows); blocks
    are ``block_size`` consecutive features.

    Parameters
    ----------
    n_components : int, default 1000
        D, the number of features.
    sigma : float, default 1.0
    random_state : int, Generator or None
    block_size : int, default 256

    Attributes
    ----------
    omega_ : ndarray (n_inputs_, n_components)
    offset_ : ndarray (n_components,)
    """

    kernels = (_k.fourier_block, _k.fourier_dense)

    def __init__(self, n_components=1000, sigma=1.0, random_state=None, block_size=256):
        self.n_components = n_components
        self.sigma = sigma
        self.random_state = random_state
        self.block_size = block_size

    def _fit(self, raw):
        sigma = check_sigma(self.sigma)
        for name, v in (("n_components", self.n_components), ("block_size", self.block_size)):
            if not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {name}={v!r}")
        self.__dict__.pop("n_inputs_", None)
        width = _as_csr(raw).shape[1]
        draw = RandomFourierFeatures(self.n_components, sigma, self.random_state)
        draw._draw(width, sigma)  # one sampler for both classes: same seed, same features
        self.omega_, self.offset_ = draw.omega_, draw.offset_
        D = int(self.n_components)
        self._block_starts_ = np.append(np.arange(0, D, int(self.block_size)), D).astype(np.int64)
        self.n_inputs_ = width
        self.n_features_ = D

    def _prepare(self, raw):
        X = _as_csr(raw, self.n_inputs_)
        return Prepared(self, X.shape[0], _csr_arrays(X))

    def _scale(self):
        return float(np.sqrt(2.0 / self.n_components))

    def _block(self, prep, k):
        j0, j1 = self.block_range(k)
        return _k.fourier_block(*prep.arrays, self.omega_, self.offset_, j0, j1 - j0, self._scale())

    def _dense(self, prep, columns=None):
        omega, offset = (
            (self.omega_, self.offset_) if columns is None else (self.omega_[:, columns], self.offset_[columns])
        )
        vals = _k.fourier_dense(*prep.arrays, omega, offset, self._scale())
        n, q = vals.shape
        return np.arange(n + 1, dtype=np.int64) * q, np.tile(np.arange(q, dtype=np.int64), n), vals.ravel()

    _rows = _select = _dense

    def describe(self, j) -> str:
        """``"cos(omega_7 . x + 1.234)"`` (the scale sqrt(2 / D) left out)."""
        j = self._check_j(j)
        return f"cos(omega_{j} . x + {self.offset_[j]:.4g})"

    def block_bytes(self, raw, k) -> int:
        """Bytes of block k's arrays: n values and row indices per column, plus indptr."""
        j0, j1 = self.block_range(k)
        return int(self.prepare(raw).n * (j1 - j0) * 12 + (j1 - j0 + 1) * 8)
