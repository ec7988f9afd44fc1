"""The logistic loss's passes over the margins, vectorised (``l1scale._logistic_passes``): each
agrees with the scalar Numba kernel it stands in for to a few units in the last place, over
margins from 0 to far beyond the exponent's range, rows of zero weight and both labels; the
conjugate is infinite exactly where a row leaves the domain; and the other losses still run the
scalar kernels, to the bit."""

import numpy as np
import pytest

from l1scale import losses
from l1scale.losses import LOGISTIC, get_loss

# A few units in the last place of each term, summed over n terms of mixed sign.
ULPS = 8 * np.finfo(np.float64).eps


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(11)
    n = 5000
    z = rng.normal(size=n) * 5
    z[:10] = [0.0, -0.0, 1e-300, -1e-300, 36.0, -36.0, 745.0, -745.0, 1e4, -1e4]
    y = np.where(rng.random(n) < 0.3, 1.0, -1.0)
    c = rng.random(n)
    c[::9] = 0.0
    c /= c.sum()
    dz = rng.normal(size=n) * 3
    lv = get_loss("logistic").value(y, z)
    return y, z, c, dz, lv


def _close(got, expected, scale):
    assert abs(got - expected) <= ULPS * scale


@pytest.mark.parametrize("step", [1.0, 0.5, 0.0])
def test_terms_along_agree_with_the_scalar_kernel(rows, step):
    y, z, c, dz, lv = rows
    outs = []
    for kernel in (losses.weighted_terms_along, losses._weighted_terms_along):
        bufs = [np.empty_like(z) for _ in range(4)]
        total = kernel(LOGISTIC, y, z, dz, step, c, lv, *bufs)
        outs.append((total, *bufs))
    (total, z_new, lv_new, r, D), (total0, z_new0, lv_new0, r0, D0) = outs
    np.testing.assert_array_equal(z_new, z_new0)  # no exp in the margins: the same to the bit
    np.testing.assert_allclose(lv_new, lv_new0, rtol=4 * ULPS, atol=0)
    np.testing.assert_allclose(r, r0, rtol=4 * ULPS, atol=0)
    np.testing.assert_allclose(D, D0, rtol=4 * ULPS, atol=1e-300)
    _close(total, total0, float(np.sum(c * (lv_new0 + lv))))


def test_value_derivatives_and_conjugates_agree_with_the_scalar_kernels(rows):
    y, z, c, _, _ = rows
    _close(losses.weighted_value(LOGISTIC, y, z, c), losses._weighted_value(LOGISTIC, y, z, c), 1.0)
    for b in (0.0, 0.7, -30.0):
        g, h = losses.weighted_derivatives(LOGISTIC, y, z, b, c)
        g0, h0 = losses._weighted_derivatives(LOGISTIC, y, z, b, c)
        _close(g, g0, 1.0)
        _close(h, h0, 1.0)
    u = get_loss("logistic").derivative(y, z)
    for scale in (1.0, 0.6, 0.0):
        at = losses.weighted_conjugate_at(LOGISTIC, y, u, c, scale, False)
        _close(at, losses._weighted_conjugate_at(LOGISTIC, y, u, c, scale, False), 1.0)
        kept = losses.weighted_conjugate_at(LOGISTIC, y, c * u, c, scale, True)
        _close(kept, losses._weighted_conjugate_at(LOGISTIC, y, c * u, c, scale, True), 1.0)
        margins = losses.weighted_conjugate(LOGISTIC, y, z, c, scale)
        _close(margins, losses._weighted_conjugate(LOGISTIC, y, z, c, scale), 1.0)


def test_the_conjugate_is_infinite_exactly_outside_its_domain(rows):
    y, z, c, _, _ = rows
    u = get_loss("logistic").derivative(y, z)
    outside = u.copy()
    k = int(np.flatnonzero(c > 0.0)[3])
    outside[k] = -outside[k]  # -y u < 0: outside [0, 1]
    assert losses.weighted_conjugate_at(LOGISTIC, y, outside, c, 1.0, False) == np.inf
    assert losses._weighted_conjugate_at(LOGISTIC, y, outside, c, 1.0, False) == np.inf
    # A row of zero weight is skipped wherever its u lies, as by the scalar kernel.
    skipped = u.copy()
    skipped[c == 0.0] = 1e9
    got = losses.weighted_conjugate_at(LOGISTIC, y, skipped, c, 1.0, False)
    assert np.isfinite(got)
    _close(got, losses._weighted_conjugate_at(LOGISTIC, y, u, c, 1.0, False), 1.0)
    # The domain's ends (t = 0 and t = 1) are finite: x log x is 0 at x = 0.
    ends = np.where(np.arange(z.shape[0]) % 2 == 0, 0.0, -y)
    _close(
        losses.weighted_conjugate_at(LOGISTIC, y, ends, c, 1.0, False),
        losses._weighted_conjugate_at(LOGISTIC, y, ends, c, 1.0, False),
        1.0,
    )


@pytest.mark.parametrize("name", ["probit", "squared", "squared_hinge"])
def test_the_other_losses_run_the_scalar_kernels(rows, name):
    y, z, c, dz, _ = rows
    loss = get_loss(name)
    if loss.is_classification:
        labels = y
    else:
        labels = z + 0.5
    kind = loss.kernel_id
    lv = loss.value(labels, z)
    a = [np.empty_like(z) for _ in range(4)]
    b = [np.empty_like(z) for _ in range(4)]
    assert losses.weighted_terms_along(kind, labels, z, dz, 0.5, c, lv, *a) == losses._weighted_terms_along(
        kind, labels, z, dz, 0.5, c, lv, *b
    )
    for x, x0 in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, x0)
    assert losses.weighted_value(kind, labels, z, c) == losses._weighted_value(kind, labels, z, c)
    assert losses.weighted_derivatives(kind, labels, z, 0.3, c) == losses._weighted_derivatives(kind, labels, z, 0.3, c)
    if loss.has_conjugate:
        assert losses.weighted_conjugate(kind, labels, z, c, 0.8) == losses._weighted_conjugate(kind, labels, z, c, 0.8)


@pytest.mark.parametrize("b", [0.0, 1.5, -40.0])
def test_the_proximal_solvers_passes_agree_with_their_scalar_kernels(rows, b):
    """ISTA / FISTA's passes at z = zw + b (``proximal.margin_loss_terms``, ``loss_change``) take the
    same vectorised route for the logistic loss."""
    from l1scale.solvers import proximal

    y, z, c, _, lv = rows
    outs = []
    for kernel in (proximal.margin_loss_terms, proximal._margin_loss_terms):
        bufs = [np.empty_like(z) for _ in range(4)]
        outs.append((kernel(LOGISTIC, y, z, b, c, *bufs), *bufs))
    (total, zb, lv_b, r, D), (total0, zb0, lv_b0, r0, D0) = outs
    np.testing.assert_array_equal(zb, zb0)
    np.testing.assert_allclose(lv_b, lv_b0, rtol=4 * ULPS, atol=0)
    np.testing.assert_allclose(r, r0, rtol=4 * ULPS, atol=0)
    np.testing.assert_allclose(D, D0, rtol=4 * ULPS, atol=1e-300)
    _close(total, total0, float(np.sum(c * lv_b0)))
    change = proximal.loss_change(LOGISTIC, y, z, b, c, lv)
    _close(change, proximal._loss_change(LOGISTIC, y, z, b, c, lv), float(np.sum(c * (lv_b0 + lv))))
    probit = get_loss("probit").kernel_id
    assert proximal.loss_change(probit, y, z, b, c, lv) == proximal._loss_change(probit, y, z, b, c, lv)
