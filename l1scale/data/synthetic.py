"""The papers' simulated data and large synthetic sparse streams.

:func:`make_bm_simulated` is the d = 11 data of Balakrishnan & Madigan, sec. 7.
:func:`make_sparse_text` and :func:`iter_sparse_text_chunks` draw text-like CSR
data (Zipf feature frequencies, tf-idf values, a planted sparse model) block by
block, so a stream of any length costs the memory of one chunk.  All take
``random_state`` (None, int, RandomState or Generator); an int fixes the data.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.optimize import brentq
from scipy.special import expit, ndtr
from sklearn.utils import check_random_state

__all__ = [
    "BM_BETA_TRUE",
    "iter_sparse_text_chunks",
    "make_bm_simulated",
    "make_sparse_text",
    "sparse_text_coef",
]

#: Table 1 of Balakrishnan & Madigan: intercept first, then the 10 slopes
#: (three of them, the 8th-10th, are the "redundant" zero coefficients).
BM_BETA_TRUE = np.array([0.259, 0.761, -0.360, 0.876, 0.913, -0.302, -0.820, 0, 0, 0, -0.319])
BM_BETA_TRUE.setflags(write=False)

_LINKS = ("logistic", "probit")
# Rows per internal block.  Each block has its own seed (from the user's seed and
# the block number), so rows do not depend on how callers group them into
# chunks: the one-shot and the chunked generators agree row for row.
_BLOCK = 4096
_PILOT = 4096  # rows used to centre and scale the planted coefficients
_TEXT_DEFAULTS = dict(
    nnz_per_row=50, n_informative=100, power=1.1, link="logistic", noise=0.0, margin_std=3.0, intercept=0.0
)


def _seed_entropy(random_state):
    """128 bits of seed entropy from any ``random_state``: every block then gets
    its own addressable stream, independent of how many blocks came before."""
    if isinstance(random_state, np.random.Generator):
        return [int(v) for v in random_state.integers(0, 2**32, size=4, dtype=np.uint64)]
    try:
        rs = check_random_state(random_state)
    except ValueError as exc:
        raise ValueError(f"random_state: {exc}") from None
    return [int(v) for v in rs.randint(0, 2**32, size=4, dtype=np.uint64)]


def _rng(entropy, *key):
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=key)))


def _labels(z, link, u):
    """Labels in {-1, +1}: +1 with probability link(z), decided by uniforms ``u``."""
    if link == "sign":  # deterministic, ties (z == 0) by a fair coin
        return np.where(z > 0, 1.0, np.where(z < 0, -1.0, np.where(u < 0.5, 1.0, -1.0)))
    return np.where(u < (expit(z) if link == "logistic" else ndtr(z)), 1.0, -1.0)


def _check_count(value, name, minimum=0):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def make_bm_simulated(n_samples=10000, *, link="probit", add_intercept=True, random_state=None, return_coef=False):
    """Simulated data of Balakrishnan & Madigan (2008), section 7.

    The paper: "d = 11, t = 10,000 ... a probit or logistic regression model with
    one intercept term and 10 model coefficients ... three are intentionally set
    as redundant variables (zero coefficients) ... The data vectors x_i are draws
    from i.i.d. Gaussian distributions with mean zero and unit variance."  The
    coefficients are Table 1's beta_true (:data:`BM_BETA_TRUE`), read in the
    order the text names them: intercept first, then the 10 slopes.  Table 1 and
    Figure 3 use the same model, logistic, with t = 100,000.

    As in the paper, x includes the intercept: column 0 is all ones, columns
    1-10 are i.i.d. N(0, 1), beta_true . x is the margin, and d = 11 is
    ``X.shape[1]``.  Table 2 is reproduced by fitting without a separate
    intercept (the paper's gamma * ||beta||_1 covers all 11 coordinates).

    Parameters
    ----------
    n_samples : int, default=10000
        Number of examples t.
    link : {"probit", "logistic"}, default="probit"
        P(y = +1 | x) = Phi(beta_true . x), Phi the normal or logistic CDF.
    add_intercept : bool, default=True
        If False, drop the column of ones (X has 10 columns) for estimators that
        fit their own intercept; ``beta_true`` still has 11 entries, intercept first.
    random_state : None, int, RandomState or Generator
    return_coef : bool, default=False
        Also return ``beta_true`` (a copy of :data:`BM_BETA_TRUE`).

    Returns
    -------
    X : ndarray of shape (n_samples, 11) or (n_samples, 10), float64, C-contiguous
    y : ndarray of shape (n_samples,), float64 in {-1, +1} (the paper's 0 is -1)
    beta_true : ndarray of shape (11,), only when ``return_coef`` is True
    """
    if link not in _LINKS:
        raise ValueError(f"link must be one of {_LINKS}, got {link!r}")
    n_samples = _check_count(n_samples, "n_samples")
    rng = _rng(_seed_entropy(random_state), 0)
    X = np.empty((n_samples, 11))
    X[:, 0] = 1.0
    X[:, 1:] = rng.standard_normal((n_samples, 10))
    y = _labels(X @ BM_BETA_TRUE, link, rng.random(n_samples))
    if not add_intercept:
        X = np.ascontiguousarray(X[:, 1:])
    return (X, y, BM_BETA_TRUE.copy()) if return_coef else (X, y)


@njit(cache=True)
def _text_rows(lengths, e, n_features, power, cdf, idf, indptr, indices, data):
    """Turn token draws into l2-normalised tf-idf rows, in place; return nnz.

    lengths : (B,) int64 tokens per row;  e : (T + B,) standard exponentials,
    T = sum(lengths);  cdf : (d + 1,), feature f has mass cdf[f + 1] - cdf[f];
    idf : (d,);  out: indptr (B + 1,), indices / data (>= T,), nnz entries used.
    A token is feature floor(x) - 1, x with density ~ x**-power on [1, d + 1),
    by the (increasing) inverse CDF.  A row's L uniforms come out sorted, as
    normalised cumulative sums of L + 1 exponentials, so its features are sorted
    and repeats adjacent: no sort, and a repeat skips the power function.
    """
    a = 1.0 - power
    logtop = math.log(n_features + 1.0)
    c = -math.expm1(a * logtop)
    pos, nnz = 0, 0
    indptr[0] = 0
    for i in range(lengths.shape[0]):
        L, start = lengths[i], nnz
        total = 0.0
        for t in range(L + 1):
            total += e[pos + t]
        scale = 1.0 / total if total > 0.0 else 0.0
        run, prev, upper = 0.0, -1, -1.0
        for t in range(L):
            run += e[pos + t]
            u = run * scale
            if u < upper:  # same feature as the previous token
                data[nnz - 1] += 1.0  # term count, turned into tf-idf below
                continue
            x = math.exp(u * logtop) if a == 0.0 else (1.0 - u * c) ** (1.0 / a)
            f = min(max(int(x) - 1, 0), n_features - 1)
            if f == prev:  # rounding at a cdf boundary
                data[nnz - 1] += 1.0
                continue
            indices[nnz], data[nnz], prev, upper = f, 1.0, f, cdf[f + 1]
            nnz += 1
        pos += L + 1
        sq = 0.0
        for k in range(start, nnz):
            tf = data[k]
            data[k] = (1.0 + math.log(tf) if tf > 1.0 else 1.0) * idf[indices[k]]
            sq += data[k] * data[k]
        inv = 1.0 / math.sqrt(sq) if sq > 0.0 else 1.0
        for k in range(start, nnz):
            data[k] *= inv
        indptr[i + 1] = nnz
    return nnz


def _csr(data, indices, indptr, shape):
    """A csr_matrix that keeps int64 indices (scipy's constructor downcasts to int32)."""
    X = sp.csr_matrix(shape, dtype=np.float64)
    X.data, X.indices, X.indptr = data, indices, indptr
    X.has_sorted_indices = True
    return X


class _Buf:
    """Growable pair of CSR index / value arrays."""

    def __init__(self, capacity):
        self.indices, self.data = np.empty(capacity, np.int64), np.empty(capacity)

    def reserve(self, n):
        if n > self.indices.size:
            cap = max(n, int(1.25 * self.indices.size))
            grow = cap - self.indices.size
            self.indices = np.concatenate([self.indices, np.empty(grow, np.int64)])
            self.data = np.concatenate([self.data, np.empty(grow)])


class _SparseText:
    """One sparse-text distribution and its planted model, frozen at creation."""

    def __init__(self, n_features, random_state, nnz_per_row, n_informative, power, link, noise, margin_std, intercept):
        self.d = d = _check_count(n_features, "n_features", 1)
        if not 0 < nnz_per_row < d:
            raise ValueError(f"nnz_per_row must be in (0, n_features={d}), got {nnz_per_row}")
        k = _check_count(n_informative, "n_informative")
        if k > d:
            raise ValueError(f"n_informative={k} exceeds n_features={d}")
        if link not in _LINKS + ("sign",):
            raise ValueError(f"link must be one of {_LINKS + ('sign',)}, got {link!r}")
        for name, value in (("power", power), ("noise", noise), ("margin_std", margin_std)):
            if not value >= 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        self.power, self.link, self.noise = float(power), link, float(noise)
        self.intercept, self.entropy = float(intercept), _seed_entropy(random_state)
        # Feature masses of the discretised power law the kernel samples from.
        logj, a = np.log(np.arange(1.0, d + 2.0)), 1.0 - self.power
        self.cdf = logj / logj[-1] if a == 0 else np.expm1(a * logj) / np.expm1(a * logj[-1])
        p = np.diff(self.cdf)
        # With Poisson(lam) tokens per row, features occur independently, so the
        # mean number of distinct features per row is sum_j (1 - exp(-lam p_j)).
        distinct = lambda lam: -np.expm1(-lam * p).sum() - nnz_per_row
        hi = 2.0 * nnz_per_row
        while distinct(hi) < 0:
            hi *= 2.0
        self.tokens_per_row = brentq(distinct, nnz_per_row, hi, xtol=1e-10, rtol=1e-12)
        df = np.maximum(-np.expm1(-self.tokens_per_row * p), 1e-300)  # document frequency
        # Exact expected df, not counted from data, so every chunk shares one idf.
        self.idf = 1.0 - np.log(df)
        self.coef = self._plant(df, k, float(margin_std))
        self.remember_last, self._last = False, None  # see block()

    def _plant(self, df, k, margin_std):
        """Sparse w_true, drawn from its own stream before any data block."""
        rng, w = _rng(self.entropy, 0, 0), np.zeros(self.d)
        if k == 0:
            return w
        # Informative features in proportion to document frequency (weighted
        # sampling without replacement by exponential keys), so that they occur
        # in the data instead of hiding in the Zipf tail.
        support = np.sort(np.argpartition(rng.standard_exponential(self.d) / df, k - 1)[:k])
        ws = rng.standard_normal(k)
        buf = _Buf(0)
        ip = self.fill(_rng(self.entropy, 0, 1), _PILOT, buf, 0)
        Xp = _csr(buf.data[: ip[-1]], buf.indices[: ip[-1]], ip, (_PILOT, self.d))[:, support]
        # Project out the mean feature vector (mean margin ~0: balanced classes at
        # intercept 0), then scale to the requested margin spread.
        mu = np.asarray(Xp.mean(axis=0)).ravel()
        if mu @ mu > 0:
            ws -= (mu @ ws) / (mu @ mu) * mu
        sd = np.std(Xp @ ws)
        w[support] = ws * (margin_std / sd) if sd > 0 else 0.0
        return w

    def fill(self, rng, n_rows, buf, off):
        """Draw ``n_rows`` rows into ``buf`` from ``off`` on; return their local indptr."""
        lengths = rng.poisson(self.tokens_per_row, size=n_rows).astype(np.int64)
        e = rng.standard_exponential(int(lengths.sum()) + n_rows)
        buf.reserve(off + e.size - n_rows)  # the kernel needs room for tokens, not just nnz
        indptr = np.empty(n_rows + 1, dtype=np.int64)
        _text_rows(lengths, e, self.d, self.power, self.cdf, self.idf, indptr, buf.indices[off:], buf.data[off:])
        return indptr

    def block(self, b, buf, off):
        """Block ``b`` into ``buf`` from ``off`` on; return (local indptr, y).

        A block is always drawn whole, so its rows do not depend on which of them
        a caller keeps.  The chunk iterator remembers the last block, which two
        chunks share when chunk boundaries do not fall on block boundaries.
        """
        if self._last is not None and self._last[0] == b:
            _, ip, y, ind, dat = self._last
            buf.reserve(off + ind.size)
            buf.indices[off : off + ind.size], buf.data[off : off + ind.size] = ind, dat
            return ip, y
        rng = _rng(self.entropy, 1, b)
        ip = self.fill(rng, _BLOCK, buf, off)
        sl = slice(off, off + ip[-1])
        z = _csr(buf.data[sl], buf.indices[sl], ip, (_BLOCK, self.d)) @ self.coef + self.intercept
        if self.noise > 0:
            z += self.noise * rng.standard_normal(_BLOCK)
        y = _labels(z, self.link, rng.random(_BLOCK))
        if self.remember_last:
            self._last = (b, ip, y, buf.indices[sl].copy(), buf.data[sl].copy())
        return ip, y

    def rows(self, r0, r1, capacity=0):
        """Rows [r0, r1) of the stream as (X, y), written straight into one buffer."""
        n, off, buf = r1 - r0, 0, _Buf(capacity)
        indptr, y = np.zeros(n + 1, dtype=np.int64), np.empty(n)
        for b in range(r0 // _BLOCK, (r1 - 1) // _BLOCK + 1) if n else ():
            lo, hi = max(r0 - b * _BLOCK, 0), min(r1 - b * _BLOCK, _BLOCK)
            ip, yb = self.block(b, buf, off)
            first, last = ip[lo], ip[hi]
            if first:  # drop leading rows of the block that belong to an earlier chunk
                buf.indices[off : off + last - first] = buf.indices[off + first : off + last]
                buf.data[off : off + last - first] = buf.data[off + first : off + last]
            row = b * _BLOCK + lo - r0
            indptr[row + 1 : row + 1 + hi - lo] = ip[lo + 1 : hi + 1] - first + off
            y[row : row + hi - lo] = yb[lo:hi]
            off += last - first
        if off < 0.9 * buf.indices.size:  # return a lean matrix, not the scratch room
            buf.indices, buf.data = buf.indices[:off].copy(), buf.data[:off].copy()
        return _csr(buf.data[:off], buf.indices[:off], indptr, (n, self.d)), y


def _make_text_gen(n_features, random_state, kwargs):
    unknown = set(kwargs) - set(_TEXT_DEFAULTS)
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {sorted(unknown)}")
    return _SparseText(n_features, random_state, **{**_TEXT_DEFAULTS, **kwargs})


def make_sparse_text(
    n_samples,
    n_features,
    *,
    nnz_per_row=50,
    n_informative=100,
    power=1.1,
    link="logistic",
    noise=0.0,
    margin_std=3.0,
    intercept=0.0,
    random_state=None,
    return_coef=False,
):
    """Bag-of-words-like sparse classification data with a planted sparse model.

    Each row has a Poisson number of tokens drawn i.i.d. from a Zipf law; its
    nonzeros are the distinct tokens, valued (1 + log tf) * idf (idf from the
    exact expected document frequency) and l2-normalised.  Labels follow
    P(y = +1) = link(x . w_true + intercept + noise).  Rows equal those of
    :func:`iter_sparse_text_chunks` with the same arguments, whatever its
    ``chunk_rows``.  1e6 x 1e5 with 50 nnz per row takes a few seconds.

    Parameters
    ----------
    n_samples, n_features : int
    nnz_per_row : float, default=50
        Mean nonzeros per row (exact in expectation); must be < n_features.
    n_informative : int, default=100
        Nonzeros of w_true, drawn in proportion to how often features occur.
    power : float, default=1.1
        Zipf exponent: feature j (0-based) has token probability about
        (j + 1)**-power, so frequency falls with the index.
    link : {"logistic", "probit", "sign"}, default="logistic"
        "sign" gives deterministic labels (ties broken by a fair coin).
    noise : float, default=0.0
        Standard deviation of Gaussian noise added to the margin.
    margin_std : float, default=3.0
        w_true is scaled so that x . w_true has this standard deviation (larger
        is easier) and centred so that its mean is about 0 (balanced classes).
    intercept : float, default=0.0
        Planted intercept (negative makes +1 rare).
    random_state : None, int, RandomState or Generator
        w_true is drawn first, then each block of 4096 rows from its own stream.
    return_coef : bool, default=False
        Also return w_true.

    Returns
    -------
    X : csr_matrix of shape (n_samples, n_features), float64
        int64 indices, sorted and duplicate-free in every row.
    y : ndarray of shape (n_samples,), float64 in {-1, +1}
    w_true : ndarray of shape (n_features,), only when ``return_coef`` is True
    """
    n_samples = _check_count(n_samples, "n_samples")
    gen = _SparseText(n_features, random_state, nnz_per_row, n_informative, power, link, noise, margin_std, intercept)
    # Room for the expected nnz plus one block of raw tokens: the output is
    # written once, in place, without concatenation.
    X, y = gen.rows(0, n_samples, int(1.01 * n_samples * nnz_per_row + 1.2 * _BLOCK * gen.tokens_per_row))
    return (X, y, gen.coef.copy()) if return_coef else (X, y)


def iter_sparse_text_chunks(n_samples, n_features, *, chunk_rows=10000, random_state=None, **kwargs):
    """:func:`make_sparse_text` data as a generator of (X_chunk, y_chunk), in bounded memory.

    One chunk (plus one internal block) is alive at a time, so a stream ten
    times longer costs no more memory.  w_true is drawn from the seed before any
    chunk and is shared by all (see :func:`sparse_text_coef`).  Chunks have
    ``chunk_rows`` rows (the last may be shorter); other arguments are those of
    :func:`make_sparse_text`, without ``return_coef``.
    """
    n_samples = _check_count(n_samples, "n_samples")
    chunk_rows = _check_count(chunk_rows, "chunk_rows", 1)
    gen = _make_text_gen(n_features, random_state, kwargs)  # validate before the first next()
    gen.remember_last = True
    return (gen.rows(r0, min(r0 + chunk_rows, n_samples)) for r0 in range(0, n_samples, chunk_rows))


def sparse_text_coef(n_features, *, random_state=None, **kwargs):
    """The planted w_true, shape (n_features,), of :func:`make_sparse_text` and
    :func:`iter_sparse_text_chunks` called with the same arguments (and int seed)."""
    return _make_text_gen(n_features, random_state, kwargs).coef
