"""exp and log written for vectorised loops (``l1scale._vector_math``): within 1 ulp of NumPy's
over millions of values of the ranges they serve, exact at the ranges' ends, NaN through, and the
loops that inline them are vectorised (the reason they exist)."""

import numpy as np
import pytest
from numba import njit

from l1scale._vector_math import exp_nonpositive, log1p_unit, log_unit


@njit(error_model="numpy")
def _exps(x, out):
    for i in range(x.shape[0]):
        out[i] = exp_nonpositive(x[i])


@njit(error_model="numpy")
def _log1ps(x, out):
    for i in range(x.shape[0]):
        out[i] = log1p_unit(x[i])


@njit(error_model="numpy")
def _logs(x, out):
    for i in range(x.shape[0]):
        out[i] = log_unit(x[i])


def _apply(kernel, x):
    out = np.empty_like(x)
    kernel(x, out)
    return out


def _ulps(got, expected):
    """|got - expected| in units of the last place of expected (NaN where expected is not finite)."""
    with np.errstate(invalid="ignore"):
        return np.abs(got - expected) / np.spacing(np.abs(expected))


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(20261201)


def test_exp_is_within_one_ulp_down_to_the_subnormals(rng):
    x = np.concatenate(
        [
            -rng.random(1_000_000) * 0.5,  # one reduction step: |r| <= ln 2 / 2
            -rng.random(1_000_000) * 40,
            -rng.random(1_000_000) * 708,
            -np.arange(1022) * np.log(2.0),  # the reduction's boundaries
            [0.0, -0.0, -1e-300, -5e-324, -708.39, -709.0],
        ]
    )
    got, expected = _apply(_exps, x), np.exp(x)
    assert expected.min() > 0.0
    assert _ulps(got, expected).max() <= 1.0
    assert np.all(got[x == 0.0] == 1.0)


def test_exp_of_a_subnormal_result_is_within_one_spacing_and_zero_below(rng):
    x = -708.0 - rng.random(200_000) * 40.0  # exp(x) from 3e-308 down to 0
    got, expected = _apply(_exps, x), np.exp(x)
    assert np.all(np.abs(got - expected) <= np.spacing(expected))  # one spacing: 5e-324 for subnormals
    assert np.all(got[x < -746.0] == 0.0)
    assert _apply(_exps, np.array([-np.inf, -1e300]))[:].tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    "kernel, reference, values",
    [
        (_log1ps, np.log1p, "unit"),
        (_logs, np.log, "unit"),
    ],
)
def test_logs_are_within_one_ulp_on_the_unit_interval(rng, kernel, reference, values):
    x = np.concatenate(
        [
            rng.random(2_000_000),
            np.exp(-rng.random(1_000_000) * 745),  # tiny values, subnormals too
            0.41421356237309503 + (rng.random(100_000) - 0.5) * 1e-6,  # log1p's switch at sqrt(2) - 1
            np.sqrt(0.5) + (rng.random(100_000) - 0.5) * 1e-6,  # log's at 1 / sqrt(2)
            [5e-324, 1e-310, 2.2250738585072014e-308, 0.5, np.nextafter(1.0, 0.0), 1.0],
        ]
    )
    got, expected = _apply(kernel, x), reference(x)
    finite = expected != 0.0
    assert _ulps(got[finite], expected[finite]).max() <= 1.0
    assert np.all(got[~finite] == 0.0)


def test_the_ends_and_nan():
    nan = np.array([np.nan])
    assert np.isnan(_apply(_exps, nan)[0])
    assert np.isnan(_apply(_log1ps, nan)[0])
    assert np.isnan(_apply(_logs, nan)[0])
    assert _apply(_logs, np.array([0.0, 1.0])).tolist() == [-np.inf, 0.0]
    assert _apply(_log1ps, np.array([0.0, 1.0])).tolist() == [0.0, np.log(2.0)]
    assert np.isnan(_apply(_logs, np.array([-0.5]))[0])  # outside the range, as NumPy's log


@pytest.mark.parametrize("kernel", [_exps, _log1ps, _logs])
def test_the_loops_that_inline_them_are_vectorised(kernel):
    """Their purpose: a loop of arithmetic and bit casts that LLVM turns into vector code (on any
    x86-64 host: SSE2 at least, two doubles a register)."""
    kernel(np.zeros(4), np.empty(4))
    assembly = kernel.inspect_llvm(kernel.signatures[0])
    assert "x double>" in assembly
