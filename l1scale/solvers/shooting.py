"""Modified Shooting (Balakrishnan & Madigan, Algorithm 1) on a quadratic sketch.

Shooting maximises the sketch of the log-posterior

    beta^T Psi beta + beta^T theta - sum_j gamma_j |beta_j| - sum_j rho_j beta_j^2 / 2

(Psi = sum_i a_i x_i x_i^T negative semidefinite, theta = sum_i b_i x_i; ALGORITHMS.md
section 2) by cyclic coordinate moves. With Omega = 2 Psi' beta + theta (Psi' is Psi
without its diagonal) the optimal beta_j given the others is

    0                                    if |Omega_j| <= gamma_j
    (gamma_j - Omega_j) / (2 Psi_jj - rho_j)    if Omega_j >  gamma_j
    (-gamma_j - Omega_j) / (2 Psi_jj - rho_j)   if Omega_j < -gamma_j

and a move D of beta_j adds 2 Psi'[:, j] D to Omega (O(column), Appendix B). The paper
has rho = 0; rho_j > 0 is the ridge part of the elastic net, and gamma_j = 0 makes
coordinate j unpenalised (the intercept). A sweep visits every coordinate once; Shooting
stops when ``||beta_after - beta_before||_2 / ||beta_before||_2 < tol`` over a sweep (the
paper's rule, tol = 1e-6 there).

The sketch is stored as a :class:`Sketch`: the diagonal as a vector and the off-diagonal
part column by column, either dense (m x m, for small m) or as a pool of columns that
holds only the pairs of coordinates that occur together in some example (for sparse
data); both use one column accessor, so the kernels are written once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit

from ..losses import loss_curvature, loss_derivative

__all__ = ["Sketch", "omega", "shooting", "taylor_terms"]


@dataclass
class Sketch:
    """Psi = diag + off-diagonal part, by columns.

    Attributes
    ----------
    diag : ndarray (m,)
        Psi_jj.
    col_start, col_len : ndarray of int64 (m,)
        Column j of Psi' is ``rows[col_start[j]: col_start[j] + col_len[j]]`` with values
        ``vals[...]`` (dense: rows is ``arange(m)`` and column j is ``vals[j*m:(j+1)*m]``
        with a zero at position j).
    col_cap : ndarray of int64 (m,)
        Room reserved for each column in the pool (sparse sketches grow in place).
    rows : ndarray of int64
    vals : ndarray of float64
    dense : bool
    used : int
        Pool entries in use (sparse).
    """

    diag: np.ndarray
    col_start: np.ndarray
    col_len: np.ndarray
    col_cap: np.ndarray
    rows: np.ndarray
    vals: np.ndarray
    dense: bool
    used: int = 0

    @property
    def size(self) -> int:
        return int(self.diag.shape[0])

    @property
    def arrays(self):
        """The arguments the kernels take for the sketch."""
        return self.diag, self.col_start, self.col_len, self.rows, self.vals, self.dense

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.diag, self.col_start, self.col_len, self.col_cap, self.rows, self.vals)))

    @classmethod
    def zeros_dense(cls, m: int) -> Sketch:
        """An all-zero dense m x m sketch."""
        start = np.arange(m, dtype=np.int64) * m
        length = np.full(m, m, dtype=np.int64)
        return cls(
            np.zeros(m), start, length, length.copy(), np.arange(m, dtype=np.int64), np.zeros(m * m), True, m * m
        )

    @classmethod
    def zeros_sparse(cls, m: int, capacity: int = 0) -> Sketch:
        """An empty sparse sketch whose columns grow as pairs are added."""
        z = np.zeros(m, dtype=np.int64)
        capacity = max(int(capacity), 16)
        return cls(
            np.zeros(m), z.copy(), z.copy(), z.copy(), np.zeros(capacity, dtype=np.int64), np.zeros(capacity), False, 0
        )

    @classmethod
    def from_matrix(cls, psi) -> Sketch:
        """A sketch holding the symmetric matrix ``psi`` (dense ndarray or scipy sparse)."""
        m = psi.shape[0]
        if not sp.issparse(psi):
            out = cls.zeros_dense(m)
            full = np.asarray(psi, dtype=np.float64)
            out.diag[:] = np.diagonal(full)
            off = np.array(full, order="F")
            np.fill_diagonal(off, 0.0)
            out.vals[:] = off.ravel(order="F")
            return out
        csc = sp.csc_matrix(psi, dtype=np.float64)
        diag = csc.diagonal().astype(np.float64)
        off = (csc - sp.diags(diag)).tocsc()
        off.eliminate_zeros()
        indptr = off.indptr.astype(np.int64)
        length = np.diff(indptr)
        return cls(
            diag,
            indptr[:-1].copy(),
            length,
            length.copy(),
            off.indices.astype(np.int64),
            off.data.astype(np.float64),
            False,
            int(indptr[-1]),
        )

    def to_dense(self) -> np.ndarray:
        """Psi as a dense m x m array (for tests and small sketches)."""
        m = self.size
        out = np.zeros((m, m))
        for j in range(m):
            s, n = self.col_start[j], self.col_len[j]
            rows = self.rows[:m] if self.dense else self.rows[s : s + n]
            out[rows, j] += self.vals[s : s + n]
        out[np.arange(m), np.arange(m)] += self.diag
        return out


@njit(cache=True, inline="always")
def taylor_terms(kind, y, s, z):
    """(a, b) of the weighted term s * log-likelihood ~ a c^2 + b c around c = z
    (Appendix A): a = -s loss''(y, z) / 2, b = s (loss''(y, z) z - loss'(y, z))."""
    h = loss_curvature(kind, y, z)
    return -0.5 * s * h, s * (h * z - loss_derivative(kind, y, z))


@njit(cache=True, inline="always")
def sketch_column(col_start, col_len, rows, vals, dense, j):
    """(rows, values) of column j of Psi' (the off-diagonal part)."""
    s = col_start[j]
    e = s + col_len[j]
    if dense:
        return rows, vals[s:e]
    return rows[s:e], vals[s:e]


@njit(cache=True)
def _omega_kernel(col_start, col_len, rows, vals, dense, theta, beta, out):
    """out = 2 Psi' beta + theta. Shapes: theta, beta, out (m,)."""
    out[:] = theta
    for j in range(beta.shape[0]):
        if beta[j] != 0.0:
            r, v = sketch_column(col_start, col_len, rows, vals, dense, j)
            two_b = 2.0 * beta[j]
            for p in range(r.shape[0]):
                out[r[p]] += two_b * v[p]


@njit(cache=True, inline="always")
def _shoot(diag, omega, beta, gamma, rho, scale, j):
    """Set beta_j to argmax_b (Psi_jj - rho_j/2) b^2 + Omega_j b - gamma_j |b| (0 when the
    curvature is not negative: no data); returns the change."""
    curv = 2.0 * diag[j] - scale * rho[j]
    o = omega[j]
    g = scale * gamma[j]
    if curv >= 0.0 or (o <= g and o >= -g):
        new = 0.0
    elif o > g:
        new = (g - o) / curv
    else:
        new = (-g - o) / curv
    delta = new - beta[j]
    beta[j] = new
    return delta


@njit(cache=True)
def _full_sweep(diag, col_start, col_len, rows, vals, dense, omega, beta, gamma, rho, scale):
    """One sweep over every coordinate; returns (||beta_before||^2, ||change||^2, moves)."""
    before = 0.0
    change = 0.0
    moves = 0
    for j in range(beta.shape[0]):
        before += beta[j] * beta[j]
        delta = _shoot(diag, omega, beta, gamma, rho, scale, j)
        if delta != 0.0:
            change += delta * delta
            moves += 1
            r, v = sketch_column(col_start, col_len, rows, vals, dense, j)
            two_d = 2.0 * delta
            for p in range(r.shape[0]):
                omega[r[p]] += two_d * v[p]
    return before, change, moves


@njit(cache=True)
def _active_sweeps(
    diag, col_start, col_len, rows, vals, dense, omega, beta, gamma, rho, scale, tol, max_sweeps, active, slot
):
    """Sweeps over the coordinates ``active`` only, Omega kept on them through the dense
    block Psi'_AA; the rest of Omega is brought up to date once at the end.
    ``slot`` is -1 everywhere (restored on return). Returns (sweeps, moves)."""
    k = active.shape[0]
    block = np.zeros((k, k))
    for a in range(k):
        slot[active[a]] = a
    for a in range(k):
        r, v = sketch_column(col_start, col_len, rows, vals, dense, active[a])
        for p in range(r.shape[0]):
            q = slot[r[p]]
            if q >= 0:
                block[q, a] = v[p]
    start = np.empty(k)
    for a in range(k):
        start[a] = beta[active[a]]
    sweeps = 0
    moves = 0
    while sweeps < max_sweeps:
        sweeps += 1
        before = 0.0
        change = 0.0
        for a in range(k):
            j = active[a]
            before += beta[j] * beta[j]
            delta = _shoot(diag, omega, beta, gamma, rho, scale, j)
            if delta != 0.0:
                change += delta * delta
                moves += 1
                two_d = 2.0 * delta
                for q in range(k):
                    omega[active[q]] += two_d * block[q, a]
        if change == 0.0 or change < tol * tol * before:
            break
    for a in range(k):
        delta = beta[active[a]] - start[a]
        if delta != 0.0:
            r, v = sketch_column(col_start, col_len, rows, vals, dense, active[a])
            two_d = 2.0 * delta
            for p in range(r.shape[0]):
                if slot[r[p]] < 0:
                    omega[r[p]] += two_d * v[p]
    for a in range(k):
        slot[active[a]] = -1
    return sweeps, moves


_ACTIVE_BLOCK_MAX = 2048  # largest nonzero set handled through a dense block


@njit(cache=True)
def shooting_sweeps(diag, col_start, col_len, rows, vals, dense, omega, beta, gamma, rho, scale, tol, max_sweeps):
    """Modified Shooting in place on (beta, omega); returns (sweeps, converged, moves).

    Shapes: diag, omega, beta, gamma, rho (m,); the penalty weights are ``scale * gamma``
    and ``scale * rho`` (the Online algorithm grows them with the data seen). ``omega``
    must equal 2 Psi' beta + theta on entry and is kept so. A coordinate whose curvature
    2 Psi_jj - rho_j is not negative (no data on it) is left at zero.

    Full sweeps alternate with sweeps over the nonzero coordinates only (as glmnet does):
    between two full sweeps, the moves of the nonzeros update Omega through the small
    dense block Psi'_AA, and the rest of Omega once at the end, instead of a whole
    column of Psi per move. The stopping rule (the paper's) is checked on full sweeps:
    Shooting stops only when a sweep over every coordinate moves beta by less than tol.
    """
    m = beta.shape[0]
    slot = np.full(m, -1, dtype=np.int64)
    sweeps = 0
    moves = 0
    while sweeps < max_sweeps:
        before, change, moved = _full_sweep(diag, col_start, col_len, rows, vals, dense, omega, beta, gamma, rho, scale)
        sweeps += 1
        moves += moved
        if change == 0.0 or change < tol * tol * before:
            return sweeps, True, moves
        nonzero = np.flatnonzero(beta)
        if 0 < nonzero.shape[0] <= _ACTIVE_BLOCK_MAX and nonzero.shape[0] < m:
            inner, moved = _active_sweeps(
                diag,
                col_start,
                col_len,
                rows,
                vals,
                dense,
                omega,
                beta,
                gamma,
                rho,
                scale,
                tol,
                max_sweeps - sweeps,
                nonzero,
                slot,
            )
            sweeps += inner
            moves += moved
    return max_sweeps, False, moves


def omega(sketch: Sketch, theta, beta) -> np.ndarray:
    """Omega = 2 Psi' beta + theta (the gradient of the smooth part minus its diagonal term)."""
    out = np.empty(sketch.size)
    _omega_kernel(
        sketch.col_start,
        sketch.col_len,
        sketch.rows,
        sketch.vals,
        sketch.dense,
        np.ascontiguousarray(theta, dtype=np.float64),
        np.ascontiguousarray(beta, dtype=np.float64),
        out,
    )
    return out


def shooting(sketch: Sketch, theta, gamma, beta0=None, *, rho=None, tol=1e-6, max_sweeps=1000):
    """Maximise ``beta^T Psi beta + beta^T theta - sum_j gamma_j |beta_j| - sum_j rho_j beta_j^2/2``.

    Parameters
    ----------
    sketch : Sketch
        Psi (m x m), negative semidefinite.
    theta : ndarray (m,)
    gamma : float or ndarray (m,)
        L1 weight per coordinate (0: unpenalised).
    beta0 : ndarray (m,), optional
        Warm start (default zeros).
    rho : float or ndarray (m,), optional
        Ridge weight per coordinate (default 0).
    tol : float
        Stop when a sweep changes beta by less than ``tol`` relative, in the 2-norm.
    max_sweeps : int

    Returns
    -------
    beta : ndarray (m,)
    omega : ndarray (m,)
        2 Psi' beta + theta at the returned beta.
    sweeps : int
    converged : bool
    """
    m = sketch.size
    beta = np.zeros(m) if beta0 is None else np.array(beta0, dtype=np.float64)
    gamma = np.broadcast_to(np.asarray(gamma, dtype=np.float64), (m,)).copy()
    rho = np.zeros(m) if rho is None else np.broadcast_to(np.asarray(rho, dtype=np.float64), (m,)).copy()
    if (gamma < 0).any() or (rho < 0).any():
        raise ValueError("gamma and rho must be non-negative")
    om = omega(sketch, theta, beta)
    sweeps, converged, _ = shooting_sweeps(*sketch.arrays, om, beta, gamma, rho, 1.0, float(tol), int(max_sweeps))
    return beta, om, int(sweeps), bool(converged)
