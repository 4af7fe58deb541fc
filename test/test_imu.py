"""The IMU as the source of a moving base's acceleration (node_io.ImuInput), without ROS.

An accelerometer reads the specific force f = R^T (a - g) in its frame; rotated into the root
frame and moved to the root origin it is a_0 = a_base - g, the RNEA's fictitious base
acceleration, so the tests compare the core called with gravity 0 and base acceleration a_0
with the core called with the gravity the tilted base sees.
"""

import math

import numpy as np
import pytest
from rnea_ros import (frame_acceleration, frame_placement, frame_velocity, inverse_dynamics,
                      RobotModel)
from rnea_ros.core.spatial import rpy_to_matrix
from rnea_ros.node import bookkeeping as node_io

# base_link -> (fixed, rotated and offset) imu_link; base_link -> shoulder -> upper -> elbow ->
# fore -> (fixed, rotated and offset) wrist_imu.
URDF = """<robot name="imu_arm">
  <link name="base_link"/>
  <link name="mount"/>
  <link name="imu_link"/>
  <link name="upper">
    <inertial><origin xyz="0.1 0.02 0.3"/><mass value="2.0"/>
      <inertia ixx="0.05" iyy="0.04" izz="0.01" ixy="0.001" ixz="0.0" iyz="0.002"/></inertial>
  </link>
  <link name="fore">
    <inertial><origin xyz="0.2 0.0 0.05"/><mass value="1.5"/>
      <inertia ixx="0.01" iyy="0.03" izz="0.03" ixy="0.0" ixz="0.001" iyz="0.0"/></inertial>
  </link>
  <joint name="mount_joint" type="fixed"><parent link="base_link"/><child link="mount"/>
    <origin xyz="0.3 -0.2 0.1" rpy="0.0 0.0 1.0"/></joint>
  <joint name="imu_joint" type="fixed"><parent link="mount"/><child link="imu_link"/>
    <origin xyz="0.05 0.1 -0.02" rpy="0.4 -0.3 0.2"/></joint>
  <joint name="shoulder" type="revolute"><parent link="base_link"/><child link="upper"/>
    <origin xyz="0 0 0.2"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="100" velocity="2"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/>
    <origin xyz="0.1 0 0.5" rpy="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="100" velocity="2"/></joint>
  <link name="wrist_imu"/>
  <joint name="wrist_imu_joint" type="fixed"><parent link="fore"/><child link="wrist_imu"/>
    <origin xyz="0.35 -0.04 0.06" rpy="-0.5 0.7 2.0"/></joint>
</robot>"""
G = np.array([0.0, 0.0, -9.81])
TIMEOUT = 0.1


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_urdf_string(URDF)


def _imu(model, filter_time=1e-9):
    return node_io.ImuInput(model, TIMEOUT, filter_time)


def _frame(model, link):
    _, R, p = model.link_body[link]
    return R, p


def _reading(R, r, g_root, a_origin=np.zeros(3), w=np.zeros(3), alpha=np.zeros(3)):
    """Return (gyro, accelerometer) of an IMU at (R, r) on a rigid base moving so."""
    a_imu = a_origin + np.cross(alpha, r) + np.cross(w, np.cross(w, r))
    return R.T @ w, R.T @ (a_imu - g_root)


def imu_reading(free, link, q, qd, qdd, g_root, a_origin, w0=np.zeros(3), alpha=np.zeros(3),
                v_origin=np.zeros(3)):
    """Return (gyro, accelerometer) of an IMU on ``link`` of an arm on a moving base, exactly.

    The ground truth is the floating-base model ``free`` of the arm (its base at the identity,
    so the root frame is the world frame at this instant) with the base's twist [v_origin; w0]
    and the classical acceleration a_origin of its origin and angular acceleration alpha: the
    base's spatial acceleration is [a_origin - w0 x v_origin; alpha] (RBDA §2.11).  Every
    coupling of base and joint motion is in it; the IMU reads f = R^T (a - g) and w.
    """
    qf = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, q]
    qdf = np.r_[v_origin, w0, qd]
    qddf = np.r_[a_origin - np.cross(w0, v_origin), alpha, qdd]
    R = frame_placement(free, qf, link)[:3, :3]
    gyro = frame_velocity(free, qf, qdf, link)[3:]
    accel = frame_acceleration(free, qf, qdf, qddf, link)[:3] - R.T @ g_root
    return gyro, accel


def _update(imu, frame_id, gyro, accel, t, now=None, gyro_cov=0.0, accel_cov=0.0):
    return imu.update(frame_id, gyro, accel, gyro_cov, accel_cov, t, t if now is None else now)


def _efforts(model, imu, now, q):
    base = node_io.BaseAccelerationInput(model.root_link, None, TIMEOUT)
    base.imu = imu
    gravity, a_b = base.select(now, G)
    assert base.source == 'imu'
    zero = np.zeros(model.nv)
    return inverse_dynamics(model, q, zero, zero, gravity=gravity, base_acceleration=a_b)


def test_the_imu_frame_comes_from_the_fixed_joints(model):
    R, p = _frame(model, 'imu_link')
    R_expected = rpy_to_matrix((0.0, 0.0, 1.0)) @ rpy_to_matrix((0.4, -0.3, 0.2))
    np.testing.assert_allclose(R, R_expected, atol=1e-15)
    np.testing.assert_allclose(p, [0.3, -0.2, 0.1] + rpy_to_matrix((0, 0, 1.0)) @
                               [0.05, 0.1, -0.02], atol=1e-15)
    assert set(_imu(model).rigid) == {'base_link', 'mount', 'imu_link'}     # no joint state
    assert _imu(model).frames == {'', 'base_link', 'mount', 'imu_link', 'upper', 'fore',
                                  'wrist_imu'}


def test_a_level_imu_at_rest_is_plain_gravity_compensation(model):
    imu = _imu(model)
    assert _update(imu, '', (0.0, 0.0, 0.0), (0.0, 0.0, 9.81), 1.0) is None
    np.testing.assert_array_equal(imu.a0, [0.0, 0.0, 9.81, 0.0, 0.0, 0.0])
    q = np.array([0.7, -1.1])
    zero = np.zeros(2)
    np.testing.assert_allclose(_efforts(model, imu, 1.0, q),
                               inverse_dynamics(model, q, zero, zero), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('frame_id', ['', 'base_link', 'mount', 'imu_link'])
def test_a_tilted_imu_at_rest_gives_the_gravity_torques_of_the_rotated_gravity(model, frame_id):
    tilt = rpy_to_matrix((0.25, -0.15, 0.6))           # world_R_root: the ship rolls and pitches
    g_root = tilt.T @ G
    R, r = _frame(model, frame_id or 'base_link')
    gyro, accel = _reading(R, r, g_root)
    imu = _imu(model)
    assert _update(imu, frame_id, gyro, accel, 2.0) is None
    np.testing.assert_allclose(imu.a0, np.r_[-g_root, 0.0, 0.0, 0.0], atol=1e-14)
    q = np.array([0.3, 0.9])
    zero = np.zeros(2)
    expected = inverse_dynamics(model, q, zero, zero, gravity=g_root)
    np.testing.assert_allclose(_efforts(model, imu, 2.0, q), expected, rtol=1e-12, atol=1e-12)
    assert not np.allclose(expected, inverse_dynamics(model, q, zero, zero), atol=1e-3)


def test_lever_arm_with_known_angular_velocity_and_acceleration(model):
    R, r = _frame(model, 'imu_link')
    g_root = rpy_to_matrix((0.1, 0.2, 0.0)).T @ G
    a_origin = np.array([0.4, -0.7, 1.3])
    w0, alpha = np.array([0.3, -0.5, 0.8]), np.array([1.5, 0.4, -2.0])
    imu = _imu(model)                              # filter time ~0: the raw difference
    for k, t in enumerate((5.0, 5.01, 5.02)):
        w = w0 + alpha * (t - 5.0)                 # constant alpha: the difference is exact
        assert _update(imu, 'imu_link', *_reading(R, r, g_root, a_origin, w, alpha), t) is None
        if k == 0:
            np.testing.assert_array_equal(imu.alpha, 0.0)  # first sample: no difference yet
    np.testing.assert_allclose(imu.w, w, atol=1e-14)
    np.testing.assert_allclose(imu.alpha, alpha, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(imu.a0, np.r_[a_origin - g_root, alpha], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize('link', ['fore', 'wrist_imu', 'upper', 'imu_link'])
def test_an_imu_on_a_moving_link_gives_the_base_acceleration_of_a_rotating_base(link):
    """Arm moving, base translating and rotating (w0, alpha): a_0 = [a_origin - g; alpha].

    Three samples 10 ms apart along q(t) = q + qd t + qdd t^2 / 2 with w0(t) = w0 + alpha t:
    the joints' part, the base's centripetal and Coriolis terms (w0 x (w0 x r), 2 w0 x r')
    and the lever arm are taken out exactly, and the gyro difference gives alpha.
    """
    model = RobotModel.from_urdf_string(URDF)
    free = RobotModel.from_urdf_string(URDF, floating_base=True)
    g_root = rpy_to_matrix((0.2, -0.1, 0.0)).T @ G
    a_origin, v_origin = np.array([0.6, -0.4, 1.1]), np.array([1.5, -0.3, 0.2])
    w0, alpha = np.array([0.3, -0.4, 0.5]), np.array([1.2, -0.6, 0.9])
    q, qd, qdd = np.array([0.7, -1.1]), np.array([1.3, -0.8]), np.array([-2.0, 3.0])
    imu = _imu(model)
    for t in (0.0, 0.01, 0.02):
        joints = (q + qd * t + 0.5 * qdd * t * t, qd + qdd * t, qdd)
        reading = imu_reading(free, link, *joints, g_root, a_origin, w0 + alpha * t, alpha,
                              v_origin)
        assert imu.update(link, *reading, 0.0, 0.0, 1.0 + t, 1.0 + t, joints) is None
    np.testing.assert_allclose(imu.w, w0 + alpha * 0.02, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(imu.a0, np.r_[a_origin - g_root, alpha], rtol=1e-9, atol=1e-9)
    # The efforts then equal the core with this base acceleration (base velocity zero).
    zero = np.zeros(2)
    np.testing.assert_allclose(_efforts(model, imu, 1.02, joints[0]),
                               inverse_dynamics(model, joints[0], zero, zero, gravity=g_root,
                                                base_acceleration=np.r_[a_origin, alpha]),
                               rtol=1e-9, atol=1e-9)


def test_joint_motion_is_not_mistaken_for_base_motion():
    """A still base, the arm moving fast: a_0 is -g alone (the joints' part removed)."""
    model = RobotModel.from_urdf_string(URDF)
    free = RobotModel.from_urdf_string(URDF, floating_base=True)
    q, qd, qdd = np.array([0.4, 0.9]), np.array([2.0, -1.5]), np.array([5.0, -4.0])
    gyro, accel = imu_reading(free, 'wrist_imu', q, qd, qdd, G, np.zeros(3))
    assert np.abs(accel - frame_placement(model, q, 'wrist_imu')[:3, :3].T @ -G).max() > 1.0
    imu = _imu(model)
    assert imu.update('wrist_imu', gyro, accel, 0.0, 0.0, 1.0, 1.0, (q, qd, qdd)) is None
    np.testing.assert_allclose(imu.a0, np.r_[-G, 0.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(imu.w, 0.0, atol=1e-12)


def test_the_angular_acceleration_is_low_pass_filtered_or_ignored(model):
    R, r = _frame(model, 'imu_link')
    step = np.array([0.0, 0.0, 0.5])               # gyro z jumps by 0.5 rad/s in 10 ms
    filtered, ignored = _imu(model, 0.05), _imu(model, 0.0)
    for imu in (filtered, ignored):
        _update(imu, 'imu_link', np.zeros(3), R.T @ -G, 1.0)
        _update(imu, 'imu_link', R.T @ step, R.T @ -G, 1.01)
    gain = 1.0 - math.exp(-0.01 / 0.05)
    np.testing.assert_allclose(filtered.alpha, gain * step / 0.01, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(ignored.alpha, 0.0)
    np.testing.assert_array_equal(ignored.a0[3:], 0.0)
    w = step                                        # the centripetal term stays without alpha
    np.testing.assert_allclose(ignored.a0[:3], -G - np.cross(w, np.cross(w, r)), atol=1e-14)


def test_a_gap_or_a_missing_gyro_restarts_the_angular_acceleration(model):
    imu = _imu(model)
    _update(imu, '', (0.0, 0.0, 0.0), (0.0, 0.0, 9.81), 1.0)
    _update(imu, '', (0.0, 0.0, 0.1), (0.0, 0.0, 9.81), 1.01)
    assert imu.alpha[2] == pytest.approx(10.0)
    _update(imu, '', (0.0, 0.0, 0.3), (0.0, 0.0, 9.81), 1.5)      # 0.49 s gap > timeout
    np.testing.assert_array_equal(imu.alpha, 0.0)
    _update(imu, '', (0.0, 0.0, 0.4), (0.0, 0.0, 9.81), 1.51)
    assert imu.alpha[2] == pytest.approx(10.0)
    assert _update(imu, '', (9.0, 9.0, 9.0), (0.0, 0.0, 9.81), 1.52, gyro_cov=-1.0) is None
    np.testing.assert_array_equal(imu.a0, [0.0, 0.0, 9.81, 0.0, 0.0, 0.0])   # no gyro: w = 0


def test_unstamped_messages_use_the_arrival_time(model):
    imu = _imu(model)
    _update(imu, '', (0.0, 0.0, 0.0), (0.0, 0.0, 9.81), 0.0, now=3.0)
    _update(imu, '', (0.0, 0.0, 0.2), (0.0, 0.0, 9.81), 0.0, now=3.02)
    assert imu.alpha[2] == pytest.approx(10.0)


@pytest.mark.parametrize('frame_id, gyro, accel, cov, t, reason', [
    ('world', (0, 0, 0), (0, 0, 9.81), (0.0, 0.0), 1.1, "'world' is not a link of the model"),
    ('fore', (0, 0, 0), (0, 0, 9.81), (0.0, 0.0), 1.1, 'no joint states have arrived yet'),
    ('', (0, 0, 0), (0, math.nan, 9.81), (0.0, 0.0), 1.1, 'linear_acceleration contains NaN'),
    ('', (math.inf, 0, 0), (0, 0, 9.81), (0.0, 0.0), 1.1, 'angular_velocity contains NaN'),
    ('', (0, 0, 0), (0, 0, 9.81), (0.0, -1.0), 1.1, 'REP 145'),
    ('', (0, 0, 0), (0, 0, 2e4), (0.0, 0.0), 1.1, 'magnitude above'),
    ('', (0, 0, 0), (0, 0, 9.81), (0.0, 0.0), 0.9, 'not after the previous IMU stamp'),
])
def test_bad_messages_are_rejected_and_nothing_is_kept(model, frame_id, gyro, accel, cov, t,
                                                       reason):
    imu = _imu(model)
    _update(imu, '', (0.0, 0.0, 0.0), (0.0, 0.0, 9.81), 1.0)
    _update(imu, '', (0.0, 0.0, 0.1), (1.0, 0.0, 9.81), 1.01)
    before = (imu.a0.copy(), imu.w.copy(), imu.alpha.copy(), imu.stamp)
    error = imu.update(frame_id, gyro, accel, cov[0], cov[1], t, 7.0)
    assert reason in error
    np.testing.assert_array_equal(imu.a0, before[0])
    np.testing.assert_array_equal(imu.w, before[1])
    np.testing.assert_array_equal(imu.alpha, before[2])
    assert imu.stamp == before[3]


def test_priority_topic_then_fresh_imu_then_parameter(model):
    ship = [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    base = node_io.BaseAccelerationInput(model.root_link, ship, TIMEOUT)
    assert base.select(0.0, G) == (G, base.default) and base.source == 'parameter'
    base.set_imu(True, model, 0.05, TIMEOUT)
    assert base.select(0.0, G)[1] is base.default                 # no IMU message yet
    assert base.imu.update('', (0, 0, 0), (0.0, 1.0, 9.81), 0.0, 0.0, 10.0, 10.0) is None
    gravity, a_b = base.select(10.05, G)
    assert base.source == 'imu' and a_b is base.imu.a0
    np.testing.assert_array_equal(gravity, 0.0)
    assert base.update('', [0.0] * 6, 10.06) is None
    assert base.select(10.07, G) == (G, None) and base.source == 'topic'
    base.select(10.165, G)                                          # topic stale, IMU stale
    assert base.source == 'parameter'
    base.set_imu(True, model, 0.2, 0.5)                   # new settings, same input
    assert base.imu.filter_time == 0.2 and base.imu.timeout == 0.5
    base.select(10.165, G)
    assert base.source == 'imu'
    base.set_imu(False, model, 0.2, 0.5)
    base.set_default(None)
    assert base.select(10.165, G) == (G, None) and base.source == 'none'


def test_use_imu_is_refused_for_a_floating_base(model):
    base = node_io.BaseAccelerationInput(model.root_link, None, TIMEOUT, floating_base=True)
    with pytest.raises(ValueError, match='fixed-base'):
        base.set_imu(True, model, 0.05, TIMEOUT)
    base.set_imu(False, model, 0.05, TIMEOUT)
    assert base.imu is None
