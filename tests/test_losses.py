"""Losses: values against scipy, derivatives against finite differences, stability far
out, conjugates (Fenchel-Young), and the jitted dispatch kernels against the ufuncs."""

import numpy as np
import pytest
from scipy.optimize import check_grad
from scipy.special import log_ndtr

from l1scale.losses import (
    LOSSES,
    Loss,
    get_loss,
    loss_conjugate,
    weighted_conjugate,
    weighted_conjugate_at,
    weighted_terms,
    weighted_terms_along,
    weighted_value,
    weighted_value_along,
)

SMOOTH = ["logistic", "probit", "squared", "squared_hinge"]
CONJUGATE = ["logistic", "squared", "squared_hinge"]
_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)


def _labels(name, z):
    """Labels that suit the loss: +-1 for classification, reals for the squared loss."""
    rng = np.random.default_rng(1)
    if get_loss(name).is_classification:
        return np.where(rng.random(z.shape) < 0.5, -1.0, 1.0)
    return rng.normal(size=z.shape) * 2


def _reference_value(name, y, z):
    m = y * z
    if name == "logistic":
        return np.logaddexp(0.0, -m)
    if name == "probit":
        return -log_ndtr(m)
    if name == "squared":
        return 0.5 * (z - y) ** 2
    if name == "squared_hinge":
        return np.maximum(0.0, 1.0 - m) ** 2
    if name == "hinge":
        return np.maximum(0.0, 1.0 - m)
    raise AssertionError(name)


def _reference_derivative(name, y, z):
    m = y * z
    if name == "logistic":
        return -y * np.exp(-np.logaddexp(0.0, m))  # -y / (1 + e^m)
    if name == "probit":
        return -y * np.exp(-0.5 * m * m - _LOG_SQRT_2PI - log_ndtr(m))  # -y phi(m) / Phi(m)
    if name == "squared":
        return z - y
    if name == "squared_hinge":
        return -2.0 * y * np.maximum(0.0, 1.0 - m)
    raise AssertionError(name)


# ------------------------------------------------------------------ values
@pytest.mark.parametrize("name", list(LOSSES))
def test_value_matches_scipy_and_numpy(name):
    z = np.linspace(-8, 8, 161)
    y = _labels(name, z)
    np.testing.assert_allclose(get_loss(name).value(y, z), _reference_value(name, y, z), rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("name", ["logistic", "probit", "squared_hinge"])
def test_value_is_accurate_far_out(name):
    """|z| = 40, 50, 1e3 on both sides of the margin: finite and accurate, no overflow."""
    loss = get_loss(name)
    z = np.array([-1e3, -50.0, -40.0, 40.0, 50.0, 1e3])
    for y in (-1.0, 1.0):
        yy = np.full_like(z, y)
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            v = loss.value(yy, z)
            g = loss.derivative(yy, z)
            h = loss.curvature(yy, z)
        assert np.isfinite(v).all() and np.isfinite(g).all() and np.isfinite(h).all()
        np.testing.assert_allclose(v, _reference_value(name, yy, z), rtol=1e-12, atol=0)
        np.testing.assert_allclose(g, _reference_derivative(name, yy, z), rtol=1e-9, atol=0)
        assert (h >= 0).all()


def test_logistic_far_out_values():
    """Tiny losses keep their relative accuracy (log1p, not log(1 + x))."""
    lg = get_loss("logistic")
    assert lg.value(1.0, 40.0) == pytest.approx(np.exp(-40.0), rel=1e-14)
    assert lg.value(1.0, -1e3) == pytest.approx(1e3, rel=1e-15)
    assert lg.derivative(1.0, 50.0) == pytest.approx(-np.exp(-50.0), rel=1e-14)
    assert lg.curvature(1.0, 50.0) == pytest.approx(np.exp(-50.0), rel=1e-13)


def test_probit_far_out_values():
    """The Mills-ratio branch: Phi underflows in double far below -38, log Phi does not."""
    pr = get_loss("probit")
    # -log Phi(-t) = t^2/2 + log t + log sqrt(2 pi) + 1/t^2 + O(t^-4)
    assert pr.value(1.0, -1e3) == pytest.approx(5e5 + np.log(1e3) + _LOG_SQRT_2PI + 1e-6, rel=1e-15)
    assert pr.value(1.0, -1e3) == pytest.approx(-log_ndtr(-1e3), rel=1e-15)
    assert pr.value(1.0, 40.0) == pytest.approx(-log_ndtr(40.0), rel=1e-12)
    # phi(-t)/Phi(-t) = t + 1/t - 2/t^3 + O(t^-5); the curvature is 1 - 1/t^2 + 6/t^4 + O(t^-6).
    assert -pr.derivative(1.0, -1e3) == pytest.approx(1e3 + 1e-3 - 2e-9, rel=1e-15)
    # (m + lambda cancels to 1e-3 here: ~1e-10 of relative accuracy is what is left)
    assert pr.curvature(1.0, -1e3) == pytest.approx(1 - 1e-6 + 6e-12, rel=1e-9)
    assert pr.curvature(1.0, -50.0) == pytest.approx(1 - 1 / 50**2 + 6 / 50**4, rel=1e-8)
    assert 0.0 <= pr.curvature(1.0, 50.0) <= 1e-300


# ------------------------------------------------------------------ derivatives
def _scalar(loss, method, y):
    return lambda z: float(np.sum(getattr(loss, method)(y, z)))


@pytest.mark.parametrize("name", SMOOTH)
def test_derivative_matches_finite_differences(name):
    loss = get_loss(name)
    z0 = np.linspace(-6, 6, 25) + 0.0137  # off the squared hinge's kink
    for y in np.unique(_labels(name, z0))[:2]:
        yy = np.full_like(z0, y)
        for z in z0:
            err = check_grad(
                _scalar(loss, "value", yy[:1]), _scalar(loss, "derivative", yy[:1]), np.array([z]), epsilon=1e-6
            )
            # forward differences: error about epsilon * curvature / 2
            assert err <= 3e-6 * max(1.0, abs(float(loss.derivative(y, z)))), (y, z, err)


@pytest.mark.parametrize("name", SMOOTH)
def test_curvature_matches_finite_differences(name):
    loss = get_loss(name)
    z = np.linspace(-6, 6, 49) + 0.0137
    y = _labels(name, z)
    h = 1e-5
    fd = (loss.derivative(y, z + h) - loss.derivative(y, z - h)) / (2 * h)
    np.testing.assert_allclose(loss.curvature(y, z), fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ["logistic", "probit"])
def test_far_out_derivatives_match_central_differences(name):
    """Also on the Mills-ratio branch and beyond |z| = 40."""
    loss = get_loss(name)
    z = np.array([-1e3, -50.0, -40.0, -7.5, -5.0, -4.0, 4.0, 7.5, 40.0])
    y = np.ones_like(z)
    h = 1e-4 * np.maximum(1.0, np.abs(z))
    fd1 = (loss.value(y, z + h) - loss.value(y, z - h)) / (2 * h)
    np.testing.assert_allclose(loss.derivative(y, z), fd1, rtol=1e-6, atol=1e-15)
    fd2 = (_reference_derivative(name, y, z + h) - _reference_derivative(name, y, z - h)) / (2 * h)
    np.testing.assert_allclose(loss.curvature(y, z), fd2, rtol=1e-6, atol=1e-15)


def test_probit_is_continuous_across_the_mills_switch():
    pr = get_loss("probit")
    for method in ("value", "derivative", "curvature"):
        f = getattr(pr, method)
        a, b = f(1.0, -5.0 - 1e-12), f(1.0, -5.0 + 1e-12)
        assert a == pytest.approx(b, rel=1e-10), method


# ------------------------------------------------------------------ conjugates
@pytest.mark.parametrize("name", CONJUGATE)
def test_fenchel_young_equality(name):
    """f(z) + f*(f'(z)) = z f'(z): the conjugate is exact where the dual needs it."""
    loss = get_loss(name)
    z = np.linspace(-30, 30, 121) + 0.0137
    y = _labels(name, z)
    u = loss.derivative(y, z)
    lhs = loss.value(y, z) + loss.conjugate(y, u)
    np.testing.assert_allclose(lhs, z * u, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", CONJUGATE)
def test_fenchel_young_inequality_elsewhere(name):
    """f(z) + f*(u) >= z u for every u (and f* = +inf outside its domain)."""
    loss = get_loss(name)
    rng = np.random.default_rng(3)
    z = rng.normal(size=200) * 3
    y = _labels(name, z)
    u = rng.normal(size=200) * 1.5
    with np.errstate(invalid="ignore"):
        lhs = loss.value(y, z) + loss.conjugate(y, u)
    assert (lhs >= z * u - 1e-12).all()
    if name == "logistic":
        assert np.isinf(loss.conjugate(1.0, 0.5)) and np.isinf(loss.conjugate(1.0, -1.5))
    if name == "squared_hinge":
        assert np.isinf(loss.conjugate(1.0, 0.1))


def test_losses_without_conjugate_say_so():
    for name in ("probit", "hinge"):
        loss = get_loss(name)
        assert not loss.has_conjugate
        with pytest.raises(NotImplementedError, match="conjugate"):
            loss.conjugate(1.0, 0.1)


# ------------------------------------------------------------------ dispatch kernels
@pytest.fixture(scope="module")
def margins():
    rng = np.random.default_rng(0)
    n = 400
    z = rng.normal(size=n) * 4
    z[:6] = [-1e3, -50.0, -40.0, 40.0, 50.0, 1e3]
    c = rng.random(n)
    c /= c.sum()
    dz = rng.normal(size=n)
    return z, c, dz


@pytest.mark.parametrize("name", list(LOSSES))
def test_weighted_terms_equal_the_ufuncs(name, margins):
    z, c, _ = margins
    loss = get_loss(name)
    y = _labels(name, z)
    r, D = np.empty_like(z), np.empty_like(z)
    total = weighted_terms(loss.kernel_id, y, z, c, r, D)
    assert total == pytest.approx(float(np.sum(c * loss.value(y, z))), rel=1e-13)
    np.testing.assert_allclose(r, c * loss.derivative(y, z), rtol=1e-13, atol=1e-300)
    curv = loss.curvature(y, z) if loss.smooth else np.zeros_like(z)
    np.testing.assert_allclose(D, c * curv, rtol=1e-13, atol=1e-300)
    assert weighted_value(loss.kernel_id, y, z, c) == pytest.approx(total, rel=1e-13)


@pytest.mark.parametrize("name", list(LOSSES))
@pytest.mark.parametrize("step", [1.0, 0.25])
def test_weighted_along_kernels_equal_the_ufuncs(name, step, margins):
    z, c, dz = margins
    loss = get_loss(name)
    y = _labels(name, z)
    zs = z + step * dz
    expected = float(np.sum(c * loss.value(y, zs)))
    assert weighted_value_along(loss.kernel_id, y, z, dz, step, c) == pytest.approx(expected, rel=1e-13)
    lv = loss.value(y, z)
    z_new, lv_new, r, D = (np.empty_like(z) for _ in range(4))
    change = weighted_terms_along(loss.kernel_id, y, z, dz, step, c, lv, z_new, lv_new, r, D)
    assert change == pytest.approx(expected - float(np.sum(c * lv)), rel=1e-11, abs=1e-15)
    np.testing.assert_array_equal(z_new, zs)
    np.testing.assert_allclose(lv_new, loss.value(y, zs), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(r, c * loss.derivative(y, zs), rtol=1e-13, atol=1e-300)
    curv = loss.curvature(y, zs) if loss.smooth else np.zeros_like(z)
    np.testing.assert_allclose(D, c * curv, rtol=1e-13, atol=1e-300)


def test_change_along_is_accurate_when_tiny():
    """Summed term by term, a change 1e-9 below the loss keeps ~8 digits; the
    difference of two sums would keep about two."""
    rng = np.random.default_rng(5)
    n = 100_000
    z, dz = rng.normal(size=n), rng.normal(size=n)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    c = np.full(n, 1.0 / n)
    lg = get_loss("logistic")
    lv = lg.value(y, z)
    step = 1e-9
    bufs = [np.empty(n) for _ in range(4)]
    change = weighted_terms_along(lg.kernel_id, y, z, dz, step, c, lv, *bufs)
    g, h = lg.derivative(y, z), lg.curvature(y, z)
    taylor = step * np.sum(c * g * dz) + 0.5 * step**2 * np.sum(c * h * dz * dz)
    assert change == pytest.approx(taylor, rel=1e-6)


@pytest.mark.parametrize("name", list(LOSSES))
def test_weighted_conjugate_equals_the_ufuncs(name, margins):
    z, c, _ = margins
    loss = get_loss(name)
    y = _labels(name, z)
    if not loss.has_conjugate:
        assert np.isnan(loss_conjugate(loss.kernel_id, 1.0, 0.0))
        return
    for scale in (1.0, 0.7):
        expected = float(np.sum(c * loss.conjugate(y, scale * loss.derivative(y, z))))
        got = weighted_conjugate(loss.kernel_id, y, z, c, scale)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
    for yi, ui in zip(y[:20], -0.05 * np.sign(y[:20]) * np.arange(20)):
        assert loss_conjugate(loss.kernel_id, yi, ui) == pytest.approx(float(loss.conjugate(yi, ui)), rel=1e-14)


@pytest.mark.parametrize("name", CONJUGATE)
def test_the_conjugate_at_a_kept_residual_is_the_conjugate_at_the_margins(name, margins):
    """weighted_conjugate_at: from the residual r = c loss' a solver keeps with its margins (no
    loss' evaluated) or from a dual point u in loss' units, the sum weighted_conjugate gives;
    rows of zero weight are skipped (their u may lie outside the domain); and a certificate
    from the residual is the certificate from the margins."""
    from l1scale.problems import Problem

    z, c, _ = margins
    loss = get_loss(name)
    y = _labels(name, z)
    c = c.copy()
    c[::7] = 0.0
    u = loss.derivative(y, z)
    u_far = u.copy()
    u_far[c == 0.0] = 1e9 * np.sign(-y[c == 0.0]) if loss.is_classification else 1e9
    for scale in (1.0, 0.7):
        expected = weighted_conjugate(loss.kernel_id, y, z, c, scale)
        assert weighted_conjugate_at(loss.kernel_id, y, c * u, c, scale, True) == pytest.approx(expected, rel=1e-12)
        assert weighted_conjugate_at(loss.kernel_id, y, u_far, c, scale, False) == pytest.approx(expected, rel=1e-12)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(z.shape[0], 5))
    problem = Problem(X, y, loss, lam=0.01, sample_weight=np.where(c > 0, 1.0 + rng.random(z.shape[0]), 0.0))
    w, b = 0.1 * rng.normal(size=5), 0.2
    zz = X @ w + b
    r = problem.c * loss.derivative(y, zz)
    v = X.T @ r
    plain = problem.certificate_from(w, b, zz, None, v)
    kept = problem.certificate_from(w, b, zz, None, v, residual=r)
    assert kept.value == pytest.approx(plain.value, rel=1e-10, abs=1e-15)


# ------------------------------------------------------------------ registry
def test_get_loss_names_and_errors():
    for name, cls in LOSSES.items():
        assert isinstance(get_loss(name), cls) and get_loss(name).name == name
        assert get_loss(get_loss(name)) is get_loss(name)
    assert len({get_loss(name).kernel_id for name in LOSSES}) == len(LOSSES)
    with pytest.raises(ValueError, match="loss='nope'"):
        get_loss("nope")


def test_hinge_is_not_smooth():
    hinge = get_loss("hinge")
    assert not hinge.smooth and isinstance(hinge, Loss)
    with pytest.raises(NotImplementedError, match="curvature"):
        hinge.curvature(1.0, 0.0)
    np.testing.assert_array_equal(hinge.derivative(np.ones(3), np.array([0.5, 1.0, 2.0])), [-1.0, -1.0, 0.0])


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 4])
def test_derivative_and_curvature_together_are_the_separate_values_to_the_bit(kind):
    """losses.loss_derivative_curvature (one exp for the logistic loss) returns what
    loss_derivative and loss_curvature return, bit for bit, at margins of every size and sign."""
    from l1scale.losses import loss_curvature, loss_derivative, loss_derivative_curvature

    rng = np.random.default_rng(0)
    zs = np.concatenate([[0.0, -0.0, 1e-300, -1e-300, 40.0, -40.0, 800.0, -800.0], rng.normal(scale=5.0, size=500)])
    for y in (-1.0, 1.0):
        for z in zs:
            assert loss_derivative_curvature(kind, y, z) == (loss_derivative(kind, y, z), loss_curvature(kind, y, z))


def test_importing_the_package_builds_no_ufunc_and_first_calls_from_threads_agree():
    """The 17 ufuncs are built on first use, not at import (building them all took 1.2-1.8 s of
    every ``import l1scale``): a fresh interpreter that imports the package and the estimators
    has built none. Threads that make the first call together all get the ufunc's answer."""
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    code = (
        "import l1scale, l1scale.path, l1scale.losses as L\n"
        "print(sum(isinstance(v, L._LazyUfunc) and v._ufunc is not None for v in vars(L).values()),"
        " sum(isinstance(v, L._LazyUfunc) for v in vars(L).values()))"
    )
    built, lazy = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert (int(built), int(lazy)) == (0, 17)

    from l1scale import losses

    fresh = losses._LazyUfunc(losses._each_sq_hinge_conjugate)
    y, u = np.array([1.0, -1.0, 1.0]), np.array([-0.5, 0.25, 0.1])
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda _: fresh(y, u), range(8)))
    for out in outs:
        np.testing.assert_array_equal(out, losses.sq_hinge_conjugate(y, u))
    assert np.isinf(outs[0][2])  # y u > 0 lies outside the conjugate's domain
