"""CD's step on one coordinate of its quadratic model, and the model's curvature floor: what the
sweeps over columns (``_cd_kernels.model_sweep``) and over a Gram matrix
(``_gram_kernels.gram_sweep``) share."""

from __future__ import annotations

from numba import njit

# Curvature floor of the quadratic model (liblinear's nu): keeps H_jj > 0 on
# columns whose rows all have zero curvature.
NU = 1e-12

#: With an intercept, a coordinate steps jointly with it: its curvature with the intercept
#: eliminated, H_jj - v_j^2 / s, is kept at least this share of H_jj (a column that is exactly
#: constant is the intercept itself: the model is singular there, up to nu).
CENTERED_FLOOR = 1e-6


@njit(cache=True, nogil=True, inline="always")
def intercept_eliminated(G, h, v, G_b, s_b):
    """A coordinate's model gradient G and curvature h with the intercept eliminated (its
    gradient G_b, curvature s_b, coupling v_j = sum_i D_i x_ij): (G - v G_b / s_b,
    max(h - v^2 / s_b, ``CENTERED_FLOOR`` h)), what its step jointly with the intercept reads."""
    return G - v * G_b / s_b, max(h - v * v / s_b, CENTERED_FLOOR * h)


@njit(cache=True, nogil=True, inline="always")
def coordinate_step(x, G, lam1, h, shrink_at):
    """One coordinate of the quadratic model at w_j + d_j = x, with model gradient G (without the
    L1 term) and curvature h: (shrink it away, its KKT violation, the step z).

    A zero coordinate whose gradient stays inside (-lam1 + shrink_at, lam1 - shrink_at) is
    shrunk (liblinear's inner shrinking). Otherwise the step is the one-variable Newton step,
    soft-thresholded (a step to zero makes w + d exactly 0), and 0 when it would not change
    x or would move a zero by less than 1e-12 (so that lam = lam_max gives w = 0 exactly;
    its violation, at rounding level, is then not counted by the caller). liblinear skips
    every step below 1e-12, which leaves the gap stuck near 1e-12 H_jj relative."""
    Gp, Gn = G + lam1, G - lam1
    if x == 0.0:
        if Gp < 0.0:
            viol = -Gp
        elif Gn > 0.0:
            viol = Gn
        elif Gp > shrink_at and Gn < -shrink_at:
            return True, 0.0, 0.0
        else:
            viol = 0.0
    else:
        viol = abs(Gp) if x > 0.0 else abs(Gn)
    if Gp < h * x:
        z = min(max(-Gp / h, -10.0), 10.0)
    elif Gn > h * x:
        z = min(max(-Gn / h, -10.0), 10.0)
    else:
        z = -x
    if x + z == x or (x == 0.0 and abs(z) < 1e-12):
        z = 0.0
    return False, viol, z
