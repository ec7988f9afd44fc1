"""``standardize=True``: columns scaled to unit (sample-weighted) variance for the solve.

Column j is multiplied by 1 / sigma_j, sigma_j the weighted standard deviation of column j
(centred, as scikit-learn's ``StandardScaler`` computes it; a constant column keeps scale 1).
The data are never centred and sparse data are never densified: a copy of the stored values is
scaled. With an intercept this is exact: the unpenalised intercept absorbs the column means, so
the model equals a ``StandardScaler`` pipeline's. The solver's weights w' on the scaled columns
map back to the original scale as w_j = w'_j / sigma_j (the intercept is unchanged).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def check(est, *, streamed=False, features=False, solver=None, streaming_solvers=()):
    """A ValueError naming ``standardize`` where the fit cannot standardise (the data are not
    held in memory, or a generated feature space)."""
    if not getattr(est, "standardize", False):
        return
    if est.standardize is not True:
        raise ValueError(f"standardize must be True or False, got standardize={est.standardize!r}")
    if features:
        raise ValueError("standardize=True is not supported with features= (a generated feature space)")
    if streamed or solver in streaming_solvers:
        raise ValueError(
            "standardize=True is not supported for streamed data (a path, Stream or DaskDataset) or the "
            f"streaming solvers (solver={solver!r}): it needs the data in memory (or scale the columns first)"
        )


def column_scales(X, sample_weight):
    """sigma_j, the sample-weighted standard deviation of each column of X (1 where it is 0)."""
    w = np.asarray(sample_weight, dtype=np.float64)
    total = w.sum()
    if sp.issparse(X):
        X = X.tocsc() if X.format != "csc" else X
        p = X.shape[1]
        col = np.repeat(np.arange(p), np.diff(X.indptr))
        data = np.asarray(X.data, dtype=np.float64)
        wd = w[X.indices]
        mean = np.bincount(col, wd * data, minlength=p) / total
        # sum_i w_i (x_ij - m_j)^2: the stored values' terms plus (the others' weight) m_j^2
        dev = np.bincount(col, wd * (data - mean[col]) ** 2, minlength=p)
        w_stored = np.bincount(col, wd, minlength=p)
        var = (dev + (total - w_stored) * mean**2) / total
    else:
        Xd = np.asarray(X, dtype=np.float64)
        mean = w @ Xd / total
        var = w @ (Xd - mean) ** 2 / total
    var = np.maximum(var, 0.0)
    sigma = np.sqrt(var)
    # A constant column (rounding leaves a tiny variance, as StandardScaler allows for) keeps scale 1.
    constant = var <= (np.finfo(np.float64).eps * np.maximum(1.0, np.abs(mean))) ** 2 * 100
    sigma[constant] = 1.0
    return sigma


def scaled(X, sigma):
    """A copy of X with column j divided by sigma_j (sparse stays sparse, in its own format)."""
    inv = (1.0 / sigma).astype(X.dtype, copy=False)
    if sp.issparse(X):
        out = X.copy()
        if out.format == "csr":
            out.data *= inv[out.indices]
        elif out.format == "csc":
            out.data *= np.repeat(inv, np.diff(out.indptr))
        else:  # other layouts: the solvers take CSR / CSC
            out = out.tocsc()
            out.data *= np.repeat(inv, np.diff(out.indptr))
        return out
    return np.asarray(X) * inv


def begin(est, X, sample_weight):
    """With ``est.standardize``: (scaled X, sigma), a warm start's ``coef_`` put on the scaled
    problem's scale; otherwise (X, None)."""
    if not getattr(est, "standardize", False):
        return X, None
    sigma = column_scales(X, sample_weight)
    if est.warm_start and hasattr(est, "coef_") and np.shape(est.coef_)[-1] == X.shape[1]:
        est.coef_ = est._dense_coef() * sigma
    return scaled(X, sigma), sigma


def finish(est, sigma):
    """``coef_`` from the scaled problem's weights back to the original scale (``result_`` keeps
    the solver's, on the standardised scale)."""
    if sigma is not None:
        est.coef_ = np.asarray(est.coef_, dtype=np.float64) / sigma
