"""The kernels' inlined sine and cosine (kernels.body.sin_cos) agree with libm to 2 ulp."""

import numpy as np
import pytest

from rnea_ros.core.kernels.body import sin_cos


def _ulps(ours, libm):
    """Return the error of ``ours`` in units in the last place of ``libm`` (elementwise)."""
    return np.abs(ours - libm) / np.spacing(np.abs(libm))


@pytest.mark.parametrize('scale', [1e-9, 0.5, np.pi, 30.0, 9e4, 1e9])
def test_sin_cos_within_two_ulp_of_libm(scale):
    """Random angles up to ``scale`` (past 1e5 the kernels fall back to libm: equal there)."""
    x = np.random.default_rng(7).uniform(-scale, scale, 4000)
    sc = np.array([sin_cos(float(v)) for v in x])
    assert np.max(_ulps(sc[:, 0], np.sin(x))) <= 2.0
    assert np.max(_ulps(sc[:, 1], np.cos(x))) <= 2.0


def test_sin_cos_at_quadrant_boundaries_and_signs():
    """Multiples of pi/4 (where the reduction changes quadrant), zero, the edge at 1e5."""
    x = np.concatenate([np.arange(-64, 65) * (np.pi / 4), [0.0, -0.0, 1e5 - 1e-6, -1e5 + 1e-6]])
    sc = np.array([sin_cos(float(v)) for v in x])
    assert np.allclose(sc[:, 0], np.sin(x), rtol=0.0, atol=4e-16 * np.maximum(1.0, np.abs(x)))
    assert np.allclose(sc[:, 1], np.cos(x), rtol=0.0, atol=4e-16 * np.maximum(1.0, np.abs(x)))
    assert sin_cos(0.0) == (0.0, 1.0)


def test_sin_cos_of_non_finite_is_nan():
    """Non-finite angles give NaN, as libm (the kernels reject them before; no crash)."""
    for v in (np.nan, np.inf, -np.inf):
        assert all(np.isnan(sin_cos(v)))
