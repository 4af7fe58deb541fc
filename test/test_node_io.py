"""The node's input bookkeeping and output shaping, without a ROS graph."""

import array
import math
from types import SimpleNamespace

import numpy as np
import pytest
from rnea_ros.node import bookkeeping as node_io
from rnea_ros.node.params import PARAMETERS

NAMES = ('a', 'b', 'c', 'm')             # 'm' mimics 'b': q_m = 2 q_b + 0.5
MIMIC = (('m', 'b', 2.0, 0.5),)


def _point(positions=(), velocities=(), accelerations=()):
    return SimpleNamespace(positions=array.array('d', positions),
                           velocities=array.array('d', velocities),
                           accelerations=array.array('d', accelerations))


def _cfg(**kwargs):
    cfg = {spec.name: spec.default for spec in PARAMETERS}
    cfg.update(kwargs)
    return cfg


# -- joint states -----------------------------------------------------------------------------

def test_partial_messages_merge_by_name_and_output_waits_for_every_joint():
    js = node_io.JointStateInput(NAMES, MIMIC)
    assert js.update(['c', 'a'], array.array('d', [3.0, 1.0]), array.array('d', [30.0, 10.0])) \
        is None
    assert not js.ready and js.missing() == ['b']
    assert js.update(['b'], [2.0], [20.0]) is None
    assert js.ready
    np.testing.assert_array_equal(js.q, [1.0, 2.0, 3.0, 4.5])
    np.testing.assert_array_equal(js.qd, [10.0, 20.0, 30.0, 40.0])


def test_missing_velocity_counts_as_zero():
    js = node_io.JointStateInput(NAMES[:3])
    js.update(['a', 'b', 'c'], [1.0, 2.0, 3.0], [1.0, 1.0, 1.0])
    js.update(['a', 'b', 'c'], [1.0, 2.0, 3.0], [])
    np.testing.assert_array_equal(js.qd, 0.0)


def test_unknown_names_are_ignored_and_reported_once():
    js = node_io.JointStateInput(NAMES[:3])
    js.update(['a', 'gripper', 'b', 'c'], [1.0, 9.0, 2.0, 3.0])
    assert js.new_unknown == ('gripper',)
    np.testing.assert_array_equal(js.q, [1.0, 2.0, 3.0])
    js.update(['a', 'gripper', 'b', 'c'], [1.0, 9.0, 2.0, 3.0])
    assert js.new_unknown == ()


def test_a_mimic_joint_named_in_the_message_uses_its_own_value():
    js = node_io.JointStateInput(NAMES, MIMIC)
    js.update(['a', 'b', 'c', 'm'], [1.0, 2.0, 3.0, 7.0])
    assert js.q[3] == 7.0
    js.update(['b'], [1.0])
    assert js.q[3] == 7.0


@pytest.mark.parametrize('names, position, velocity, reason', [
    (['a', 'b'], [1.0], [], 'positions'),
    (['a', 'b'], [1.0, 2.0], [1.0], 'velocities'),
    (['a', 'b'], [1.0, math.nan], [], 'NaN'),
    (['a', 'b'], [1.0, 2.0], [math.inf, 0.0], 'NaN or Inf'),
    (['a', 'a'], [1.0, 2.0], [], 'more than once'),
    (['a', ''], [1.0, 2.0], [], 'empty joint name'),
])
def test_invalid_joint_states_are_rejected_whole(names, position, velocity, reason):
    js = node_io.JointStateInput(NAMES[:3])
    js.update(['a', 'b', 'c'], [1.0, 2.0, 3.0])
    before = js.q.copy()
    assert reason in js.update(names, position, velocity)
    np.testing.assert_array_equal(js.q, before)


def test_joint_state_input_writes_into_given_views():
    q = np.zeros(7 + 3)
    js = node_io.JointStateInput(NAMES[:3], q=q[7:], qd=np.zeros(3))
    js.update(['c', 'b', 'a'], [3.0, 2.0, 1.0])
    np.testing.assert_array_equal(q[7:], [1.0, 2.0, 3.0])


# -- desired accelerations --------------------------------------------------------------------

def test_desired_accelerations_by_name_unnamed_joints_zero_and_stale_after_timeout():
    acc = node_io.AccelerationInput(NAMES, timeout=0.1)
    assert acc.from_trajectory(['c', 'a'], [_point(accelerations=[3.0, 1.0])], now=10.0) is None
    np.testing.assert_array_equal(acc.current(10.05), [1.0, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(acc.current(10.2), 0.0)


def test_desired_accelerations_array_must_have_model_length():
    acc = node_io.AccelerationInput(NAMES, timeout=0.1)
    assert 'expected 4' in acc.from_array([1.0, 2.0], now=0.0)
    assert acc.from_array([1.0, 2.0, 3.0, 4.0], now=0.0) is None
    np.testing.assert_array_equal(acc.current(0.0), [1.0, 2.0, 3.0, 4.0])


@pytest.mark.parametrize('names, points, reason', [
    (['a'], [], 'no points'),
    (['a', 'b'], [_point(accelerations=[1.0])], 'accelerations'),
    (['a', 'zz'], [_point(accelerations=[1.0, 2.0])], 'unknown joints'),
    (['a'], [_point(accelerations=[math.nan])], 'NaN'),
])
def test_invalid_desired_accelerations_are_rejected(names, points, reason):
    acc = node_io.AccelerationInput(NAMES, timeout=0.1)
    acc.from_array([1.0, 1.0, 1.0, 1.0], now=0.0)
    assert reason in acc.from_trajectory(names, points, now=0.0)
    np.testing.assert_array_equal(acc.current(0.0), 1.0)


# -- computed-torque reference ----------------------------------------------------------------

def test_computed_torque_law_with_a_fresh_reference():
    ref = node_io.ReferenceInput(NAMES, MIMIC, timeout=0.1)
    point = _point([0.1, 0.2, 0.3], [1.0, 2.0, 3.0], [10.0, 20.0, 30.0])
    assert ref.from_trajectory(['a', 'b', 'c'], [point], now=0.0) is None
    q, qd = np.array([0.0, 0.1, 0.2, 0.3]), np.array([0.5, 0.5, 0.5, 0.5])
    kp, kd = np.full(4, 100.0), np.full(4, 20.0)
    out = ref.command(q, qd, kp, kd, now=0.05, out=np.zeros(4))
    q_ref = np.array([0.1, 0.2, 0.3, 2 * 0.2 + 0.5])     # the mimic joint follows its driver
    qd_ref = np.array([1.0, 2.0, 3.0, 4.0])
    qdd_ref = np.array([10.0, 20.0, 30.0, 40.0])
    np.testing.assert_allclose(out, qdd_ref + kp * (q_ref - q) + kd * (qd_ref - qd))


def test_stale_reference_holds_positions_and_drops_rates():
    ref = node_io.ReferenceInput(NAMES[:3], timeout=0.1)
    ref.from_trajectory(['a', 'b', 'c'], [_point([1.0, 1.0, 1.0], [5.0] * 3, [9.0] * 3)],
                        now=0.0)
    q, qd = np.zeros(3), np.full(3, 0.5)
    out = ref.command(q, qd, np.full(3, 4.0), np.full(3, 2.0), now=1.0, out=np.zeros(3))
    np.testing.assert_allclose(out, 4.0 * 1.0 - 2.0 * 0.5)


def test_joints_without_reference_get_damping_only():
    ref = node_io.ReferenceInput(NAMES[:3], timeout=0.1)
    q, qd = np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3])
    kp, kd = np.full(3, 100.0), np.full(3, 10.0)
    np.testing.assert_allclose(ref.command(q, qd, kp, kd, 0.0, np.zeros(3)), -kd * qd)
    ref.from_trajectory(['a'], [_point([0.0])], now=0.0)
    out = ref.command(q, qd, kp, kd, 0.0, np.zeros(3))
    np.testing.assert_allclose(out, [100.0 * -1.0 - 1.0, -2.0, -3.0])


def test_reference_with_unknown_joint_or_missing_positions_is_rejected():
    ref = node_io.ReferenceInput(NAMES[:3])
    assert 'unknown joints' in ref.from_trajectory(['zz'], [_point([1.0])], now=0.0)
    assert 'positions' in ref.from_trajectory(['a'], [_point([], [1.0])], now=0.0)
    assert 'velocities' in ref.from_trajectory(['a'], [_point([1.0], [1.0, 2.0])], now=0.0)
    assert not ref.active.any()


# -- external wrenches ------------------------------------------------------------------------

def test_wrenches_by_link_and_zero_clears():
    w = node_io.WrenchInput(['base', 'hand'])
    assert w.f_ext is None
    assert w.update('hand', [0, 0, -10, 0, 0, 0]) is None
    assert list(w.f_ext) == ['hand']
    assert 'not a frame' in w.update('elbow', [1, 0, 0, 0, 0, 0])
    assert 'NaN' in w.update('hand', [math.nan, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(w.f_ext['hand'], [0, 0, -10, 0, 0, 0])
    w.update('hand', [0] * 6)
    assert w.f_ext is None


# -- limits, ramp, settings -------------------------------------------------------------------

def test_clamp_uses_the_lower_of_urdf_and_max_effort_limits():
    lim = node_io.EffortLimiter([10.0, 10.0, math.inf], clamp=True, max_effort=[5.0, 20.0, 1.0])
    out = np.zeros(3)
    assert lim.clamp(np.array([-7.0, 15.0, 0.5]), out) == 2
    np.testing.assert_array_equal(out, [-5.0, 10.0, 0.5])


def test_max_effort_applies_even_without_urdf_clamping():
    lim = node_io.EffortLimiter([1.0, 1.0], clamp=False, max_effort=[5.0, math.inf])
    out = np.zeros(2)
    lim.clamp(np.array([7.0, -70.0]), out)
    np.testing.assert_array_equal(out, [5.0, -70.0])


def test_ramp_scales_from_zero_to_one_over_ramp_time():
    lim = node_io.EffortLimiter([1.0], clamp=True, ramp_time=2.0)
    lim.start_ramp(10.0)
    assert [lim.scale(t) for t in (10.0, 11.0, 12.0, 15.0)] == [0.0, 0.5, 1.0, 1.0]
    assert node_io.EffortLimiter([1.0], clamp=True).scale(0.0) == 1.0


def test_settings_resolve_per_joint_arrays_and_command_order():
    cfg = _cfg(kp=[1.0, 2.0, 3.0, 4.0], kd=[7.0], max_effort=[3.0],
               command_joints=['c', 'a'])
    s = node_io.NodeSettings(NAMES, [10.0] * 4, cfg)
    np.testing.assert_array_equal(s.kp, [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(s.kd, 7.0)
    np.testing.assert_array_equal(s.limiter.limits, 3.0)
    cmd = s.fill_command(np.array([1.0, 2.0, 3.0, 4.0]), 0.5)
    assert list(cmd) == [1.5, 0.5]


@pytest.mark.parametrize('override, reason', [
    ({'kp': [1.0, 2.0]}, 'kp has 2 values'),
    ({'max_effort': [1.0, 2.0, 3.0]}, 'max_effort has 3 values'),
    ({'command_joints': ['a', 'nope']}, "lacks: ['nope']"),
])
def test_settings_that_do_not_fit_the_model_are_refused(override, reason):
    with pytest.raises(ValueError, match=reason.replace('[', r'\[').replace(']', r'\]')):
        node_io.NodeSettings(NAMES, [10.0] * 4, _cfg(**override))


def test_float_buffer_view_writes_the_message_array():
    buf = node_io.FloatBuffer(3)
    buf.view[:] = [1.0, 2.0, 3.0]
    assert list(buf.array) == [1.0, 2.0, 3.0]


def test_topic_tokens_are_valid_ros_names():
    assert node_io.topic_token('panda_joint1') == 'panda_joint1'
    assert node_io.topic_token('arm/elbow-joint') == 'arm_elbow_joint'
    assert node_io.topic_token('1st') == 'j_1st'


def test_stats_and_diagnostic_level():
    stats = node_io.CycleStats(now=0.0)
    stats.inputs = 100
    stats.cycle(0.001, clamped=0)
    stats.cycle(0.003, clamped=2)
    period = stats.summary(now=0.1)
    assert period['input_rate_hz'] == pytest.approx(1000.0)
    assert period['compute_mean_us'] == pytest.approx(2000.0)
    assert period['clamp_events'] == 1
    assert node_io.diagnostic_level(True, True, False, period)[0] == node_io.WARN
    assert node_io.diagnostic_level(True, True, True, period)[0] == node_io.ERROR
    stats.reset(now=0.1)
    assert node_io.diagnostic_level(True, True, False, stats.summary(0.2))[0] == node_io.OK


def test_stats_totals_count_every_input_and_output_across_periods():
    stats = node_io.CycleStats(now=0.0)
    for period in range(3):
        stats.inputs += 5
        for _ in range(4):
            stats.cycle(0.001, clamped=0)
        summary = stats.summary(now=period + 1.0)
        assert (summary['inputs_total'], summary['outputs_total']) == (5 * (period + 1),
                                                                       4 * (period + 1))
        stats.reset(now=period + 1.0)
    assert stats.summary(now=3.5)['input_rate_hz'] == 0.0


def test_a_reloaded_model_adopts_the_merged_state_of_same_named_joints():
    old = node_io.JointStateInput(NAMES, MIMIC)
    old.update(['a', 'b', 'c'], [1.0, 2.0, 3.0], [0.1, 0.2, 0.3])
    new = node_io.JointStateInput(('c', 'b', 'm', 'd'), (('m', 'b', 2.0, 0.5),))
    new.adopt(old)
    assert new.missing() == ['d']
    np.testing.assert_array_equal(new.q[:3], [3.0, 2.0, 4.5])
    new.update(['d'], [4.0])
    assert new.ready


# -- issue 15 -----------------------------------------------------------------------------------

def _accepts(check, sec, nanosec):
    error, stamp = check.check(sec, nanosec)
    if error is None:
        check.accept(stamp)
    return error is None


def test_stamp_outlier_costs_two_messages_and_a_late_message_is_still_rejected():
    check = node_io.StampCheck()
    assert _accepts(check, 10, 0) and _accepts(check, 10, 1_000_000)
    assert _accepts(check, 10, 900_000_000)                   # the outlier, 0.9 s ahead
    stream = [_accepts(check, 10, k * 1_000_000) for k in range(2, 8)]
    assert stream == [False, False, True, True, True, True]
    assert check.last == pytest.approx(10.007)
    assert not _accepts(check, 10, 5_000_000)                 # one late message: rejected
    assert not _accepts(check, 10, 6_000_000)                 # and a late pair
    assert _accepts(check, 10, 8_000_000)                     # the stream goes on
    assert 'nanosec' in check.check(10, 4_000_000_000)[0]
    assert check.check(-1, 0)[0].startswith('negative')


def test_mimic_keeps_following_its_driver_after_adopt():
    old = node_io.JointStateInput(NAMES, MIMIC)
    assert old.update(['a', 'b', 'c'], [0.1, 0.2, 0.3]) is None and old.ready
    new = node_io.JointStateInput(NAMES, MIMIC)
    new.adopt(old)
    assert new.ready and new.q[3] == pytest.approx(0.9)
    assert new.update(['a', 'b', 'c'], [0.1, 0.4, 0.3]) is None
    assert new.q[3] == pytest.approx(1.3)                     # 2 * 0.4 + 0.5
    no_mimic = node_io.JointStateInput(NAMES)                 # the new model drops the mimic
    no_mimic.adopt(old)
    assert no_mimic.ready and no_mimic.q[3] == pytest.approx(0.9)


def test_unknown_names_are_remembered_up_to_a_bound():
    joints = node_io.JointStateInput(NAMES)
    for k in range(100):
        extra = [f'x{k}_{i}' for i in range(10)]
        assert joints.update(list(NAMES) + extra, [0.0] * (4 + len(extra))) is None
    assert len(joints.unknown) == node_io.MAX_UNKNOWN_NAMES and joints.unknown_count > 0
    assert len(node_io.truncated([f'n{i}' for i in range(1000)])) < 100


@pytest.mark.parametrize('make_input, call, bound', [
    (lambda: node_io.AccelerationInput(NAMES, 1.0),
     lambda x, v: x.from_array([v] * 4, 0.0), node_io.MAX_ACCELERATION),
    (lambda: node_io.ReferenceInput(NAMES, MIMIC),
     lambda x, v: x.from_trajectory(NAMES, [_point([0.0] * 4, [], [v] * 4)], 0.0),
     node_io.MAX_ACCELERATION),
    (lambda: node_io.WrenchInput(['l']),
     lambda x, v: x.update('l', [v, 0, 0, 0, 0, 0]), node_io.MAX_WRENCH),
    (lambda: node_io.BaseAccelerationInput('root', None, 1.0),
     lambda x, v: x.update('', [v, 0, 0, 0, 0, 0], 0.0), node_io.MAX_BASE_ACCELERATION),
])
def test_magnitude_bounds_on_every_input(make_input, call, bound):
    assert call(make_input(), bound) is None
    assert 'magnitude' in call(make_input(), 1.001 * bound)
    assert 'magnitude' in call(make_input(), 1e300)


def test_limit_guard_margins_and_unchecked_joints():
    guard = node_io.LimitGuard(['a', 'b', 'c'], [-1.0, -np.inf, 0.0], [1.0, np.inf, 0.0],
                               [2.0, 0.0, 1.0], 0.1, 0.5)
    assert guard.violation(np.array([1.09, 1e5, 7.0]), np.array([2.9, 1e5, 0.0])) is None
    assert "'a'" in guard.violation(np.array([1.11, 0.0, 0.0]), np.zeros(3))
    assert 'velocity' in guard.violation(np.zeros(3), np.array([3.1, 0.0, 0.0]))
    assert "'c'" in guard.violation(np.zeros(3), np.array([0.0, 0.0, 1.6]))


def test_topic_tokens_are_injective_and_keep_readable_names():
    assert node_io.topic_tokens(['a_b', 'c']) == ['a_b', 'c']
    tokens = node_io.topic_tokens(['arm.joint', 'arm_joint', 'arm-joint'])
    assert len(set(tokens)) == 3 and tokens[1] == 'arm_joint'
    assert all(t.startswith('arm_joint_') for t in (tokens[0], tokens[2]))
