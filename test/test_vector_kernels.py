"""The vector kernels of the node's cycle equal their numpy forms, NaN and views included."""

import numpy as np
import pytest

from rnea_ros.core.kernels.vectors import (clamp_bounded, first_outside, follow_drivers,
                                           scatter_bounded)


def cases(seed, n=12):
    """Yield random vectors with some huge, NaN and infinite entries."""
    rng = np.random.default_rng(seed)
    for trial in range(200):
        x = rng.normal(size=n) * 10.0 ** rng.integers(-2, 8)
        if trial % 4 == 1:
            x[rng.integers(n)] = rng.choice([np.nan, np.inf, -np.inf, 1e300])
        yield rng, x


@pytest.mark.parametrize('seed', [1, 2])
def test_scatter_bounded_is_the_fancy_assignment_behind_a_bound_check(seed):
    for rng, x in cases(seed):
        src = rng.permutation(x.size)[:rng.integers(1, x.size)]
        dst = rng.permutation(30)[:src.size]
        out = rng.normal(size=30)
        expected = out.copy()
        bad = ~(np.abs(x) <= 1e6)
        if not bad.any():
            expected[dst] = x[src]
        assert scatter_bounded(x, src, out, dst, 1e6) == (bad.argmax() if bad.any() else -1)
        assert np.array_equal(out, expected)


def test_scatter_bounded_writes_into_a_view_and_reads_read_only_input():
    state = np.zeros(10)
    values = np.frombuffer(np.array([1.0, 2.0, 3.0]).tobytes())     # read-only, as from bytes
    assert scatter_bounded(values, np.arange(3), state[7:], np.array([2, 0, 1]), 10.0) == -1
    assert state.tolist() == [0.0] * 7 + [2.0, 3.0, 1.0]


@pytest.mark.parametrize('seed', [3, 4])
def test_clamp_bounded_is_numpy_clip_behind_the_output_guard(seed):
    for rng, x in cases(seed):
        limits = np.where(rng.random(x.size) < 0.3, np.inf, np.abs(rng.normal(size=x.size)) * 50)
        out = np.full(x.size, 7.0)
        count = clamp_bounded(x, limits, 1e9, out)
        if not (np.abs(x) <= 1e9).all():
            assert count == -1 and (out == 7.0).all()       # nothing written
            continue
        expected = np.clip(x, -limits, limits)
        assert np.array_equal(out, expected)
        assert count == np.count_nonzero(expected != x)


@pytest.mark.parametrize('seed', [5, 6])
def test_first_outside_is_the_first_joint_out_of_range_or_too_fast(seed):
    for rng, q in cases(seed):
        qd = rng.normal(size=q.size) * 3.0
        lower = np.where(rng.random(q.size) < 0.2, -np.inf, -rng.random(q.size) * 1e5)
        upper = np.where(rng.random(q.size) < 0.2, np.inf, rng.random(q.size) * 1e5)
        vmax = np.where(rng.random(q.size) < 0.2, np.inf, rng.random(q.size) * 10.0)
        outside = ~((lower <= q) & (q <= upper) & (np.abs(qd) <= vmax))
        assert first_outside(q, qd, lower, upper, vmax) == (outside.argmax() if outside.any()
                                                            else -1)


def test_follow_drivers_is_the_masked_affine_gather_in_row_order():
    rng = np.random.default_rng(8)
    for _ in range(100):
        values = rng.normal(size=10)
        joint = rng.permutation(10)[:4]
        driver = rng.integers(0, 10, size=4)
        multiplier, offset = rng.normal(size=4), rng.normal(size=4)
        mask = rng.random(10) < 0.6
        expected = values.copy()
        for k in range(4):                  # rows in order: a driver may itself follow
            if mask[joint[k]]:
                expected[joint[k]] = multiplier[k] * expected[driver[k]] + offset[k]
        follow_drivers(values, joint, driver, multiplier, offset, mask)
        np.testing.assert_allclose(values, expected, rtol=1e-15, atol=1e-15)   # fused mul-add
