"""Node options of issue 6 through real rclpy: friction, armature and a moving base (or IMU).

Each test starts the node with the options, publishes joint states and compares the published
efforts with the dynamics core called with the same options.
"""

import math
import re
import time

from builtin_interfaces.msg import Time
from geometry_msgs.msg import AccelStamped
import numpy as np
import pytest
from rclpy.parameter import Parameter
from rnea_ros import inverse_dynamics, RobotModel
from rnea_ros.core.spatial import rpy_to_matrix
from sensor_msgs.msg import Imu
import test_node
from test_node import _array, _state, ARM, PANDA

context = test_node.context      # the node test fixtures: rclpy context, node harness, model
make = test_node.make
panda = test_node.panda

ZERO = np.zeros(9)


def _accel(values, frame_id=''):
    msg = AccelStamped()
    msg.header.frame_id = frame_id
    lin, ang = msg.accel.linear, msg.accel.angular
    lin.x, lin.y, lin.z, ang.x, ang.y, ang.z = [float(v) for v in values]
    return msg


def _imu(frame_id, gyro, accel, step, accel_cov=0.0):
    msg = Imu()
    msg.header.frame_id = frame_id
    msg.header.stamp = Time(sec=50, nanosec=10_000_000 * step)
    w, a = msg.angular_velocity, msg.linear_acceleration
    w.x, w.y, w.z = [float(v) for v in gyro]
    a.x, a.y, a.z = [float(v) for v in accel]
    msg.linear_acceleration_covariance[0] = accel_cov
    return msg


def _with_friction(**options):
    with open(PANDA, encoding='utf-8') as f:
        return RobotModel.from_urdf_string(f.read(), **options)


def test_friction_lists_follow_command_joints_and_one_armature_for_all(make, panda):
    order = ['panda_joint3', 'panda_joint1', 'panda_joint2']
    h = make(mode='inverse_dynamics', command_joints=order, friction_viscous=[0.5, 1.0, 2.0],
             friction_coulomb=[0.3, 0.2, 0.1], armature=[0.25], clamp_efforts=False)
    expected_model = _with_friction(
        friction_viscous=dict(zip(order, [0.5, 1.0, 2.0])),
        friction_coulomb=dict(zip(order, [0.3, 0.2, 0.1])),
        armature=dict.fromkeys(order, 0.25))
    q, qd, qdd = _state(panda, seed=20)
    h.publish('accelerations_array', _array(qdd))
    out = h.joint_state(panda.joint_names, q, qd)
    expected = inverse_dynamics(expected_model, q, qd, qdd)
    np.testing.assert_allclose(out.effort, expected, rtol=1e-12, atol=1e-12)
    assert not np.allclose(expected, inverse_dynamics(panda, q, qd, qdd))


def test_friction_joints_map_and_urdf_friction(make, panda):
    with open(PANDA, encoding='utf-8') as f:
        xml = re.sub(r'damping="[0-9.]+" friction="[0-9.]+"', 'damping="0.7" friction="0.4"',
                     f.read())
    h = make(urdf_file='', robot_description=xml, mode='gravity_coriolis',
             use_urdf_friction=True, friction_joints=['panda_joint5', 'panda_joint7'],
             friction_viscous=[3.0, 4.0], clamp_efforts=False)
    model = RobotModel.from_urdf_string(
        xml, friction_from_urdf=True,
        friction_viscous={'panda_joint5': 3.0, 'panda_joint7': 4.0})
    assert model.friction_coulomb[0] == 0.4 and model.friction_viscous[4] == 3.0
    q, qd, _ = _state(panda, seed=21)
    out = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(model, q, qd, ZERO),
                               rtol=1e-12, atol=1e-12)


def test_gravity_compensation_leaves_friction_and_armature_out(make, panda):
    h = make(mode='gravity_compensation', friction_viscous=[5.0], friction_coulomb=[2.0],
             armature=[1.0])
    q, qd, _ = _state(panda, seed=22)
    out = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, ZERO, ZERO),
                               rtol=1e-12, atol=1e-12)
    assert h.node._rt.model.has_joint_terms


def test_base_acceleration_parameter_topic_and_timeout(make, panda):
    ship = [0.5, -0.3, 1.2, 0.1, 0.2, -0.3]
    h = make(mode='inverse_dynamics', base_acceleration=ship, desired_timeout=1.0,
             clamp_efforts=False)
    h.pubs['base'] = h.peer.create_publisher(AccelStamped, '/rnea/base_acceleration', 10)
    h.wait_connected()
    q, qd, qdd = _state(panda, seed=23)
    h.publish('accelerations_array', _array(qdd))
    out = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, qd, qdd,
                                                            base_acceleration=ship),
                               rtol=1e-12, atol=1e-12)
    assert not np.allclose(out.effort, inverse_dynamics(panda, q, qd, qdd))
    imu = [-1.0, 2.0, 0.5, 0.0, 0.4, 0.0]
    h.publish('base', _accel(imu, 'panda_link0'))
    h.publish('accelerations_array', _array(qdd))
    out = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, qd, qdd,
                                                            base_acceleration=imu),
                               rtol=1e-12, atol=1e-12)
    h.publish('base', _accel([9.0] * 6, 'imu_link'))          # wrong frame: rejected
    assert 'imu_link' in h.node._last_error
    h.spin_for(1.1)                                           # topic stale: parameter again
    assert h.node.set_parameters([Parameter('base_acceleration', value=[0.0] * 6)])[0] \
        .successful
    out = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, qd, ZERO),
                               rtol=1e-12, atol=1e-12)


def test_base_acceleration_with_friction_and_reaction_wrench_free_path(make, panda):
    ship = [0.0, 0.0, 2.0, 0.0, 0.0, 0.0]
    h = make(mode='gravity_coriolis', base_acceleration=ship, friction_viscous=[1.5],
             clamp_efforts=False)
    model = _with_friction(friction_viscous=dict.fromkeys(panda.joint_names, 1.5))
    q, qd, _ = _state(panda, seed=24)
    out = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(model, q, qd, ZERO,
                                                            base_acceleration=ship),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('params, reason', [
    ({'friction_viscous': [1.0, 2.0]}, 'friction_viscous has 2 values'),
    ({'friction_joints': ['panda_joint1', 'elbow'], 'armature': [1.0]}, 'elbow'),
    ({'friction_coulomb': [-1.0]}, 'friction_coulomb'),
    ({'base_acceleration': [0.0] * 5}, 'exactly 6 values'),
    ({'base_acceleration': [0.0, 0.0, math.nan, 0.0, 0.0, 0.0]}, 'finite'),
])
def test_invalid_options_are_refused_and_the_model_is_kept(make, panda, params, reason):
    h = make(mode='gravity_compensation')
    q, _, _ = _state(panda, seed=25)
    before = h.joint_state(panda.joint_names, q)
    results = h.node.set_parameters_atomically(
        [Parameter(k, value=v) for k, v in params.items()])
    assert not results.successful and reason in results.reason
    assert not h.node._rt.model.has_joint_terms
    after = h.joint_state(panda.joint_names, q)
    np.testing.assert_array_equal(after.effort, before.effort)


def test_base_acceleration_is_refused_for_a_floating_base(make):
    h = make(mode='gravity_compensation', floating_base=True)
    result = h.node.set_parameters([Parameter('base_acceleration',
                                              value=[1.0, 0.0, 0.0, 0.0, 0.0, 0.0])])[0]
    assert not result.successful and 'fixed-base' in result.reason
    result = h.node.set_parameters([Parameter('use_imu', value=True)])[0]
    assert not result.successful and 'fixed-base' in result.reason
    assert ARM[0] in h.node._rt.model.joint_names


def test_a_tilted_imu_at_rest_rotates_gravity_and_bad_imu_messages_are_rejected(make, panda):
    with open(PANDA, encoding='utf-8') as f:          # an IMU on a bracket fixed to the base
        xml = f.read().replace('</robot>', """
  <link name="imu_bracket"/><link name="imu_link"/>
  <joint name="bracket_joint" type="fixed"><parent link="panda_link0"/>
    <child link="imu_bracket"/><origin xyz="-0.1 0.05 0.02" rpy="0 0 1.2"/></joint>
  <joint name="imu_joint" type="fixed"><parent link="imu_bracket"/><child link="imu_link"/>
    <origin xyz="0.02 0 0.01" rpy="3.14159 0.2 0"/></joint>
</robot>""")
    h = make(urdf_file='', robot_description=xml, mode='gravity_compensation', use_imu=True,
             desired_timeout=60.0, clamp_efforts=False)
    h.pubs['imu'] = h.peer.create_publisher(Imu, '/rnea/imu', 10)
    h.pubs['base'] = h.peer.create_publisher(AccelStamped, '/rnea/base_acceleration', 10)
    h.wait_connected()
    R = h.node._rt.model.link_body['imu_link'][1]
    q, _, _ = _state(panda, seed=27)
    plain = inverse_dynamics(panda, q, ZERO, ZERO)
    h.publish('imu', _imu('imu_link', (0, 0, 0), R.T @ [0.0, 0.0, 9.81], 1))     # level
    np.testing.assert_allclose(h.joint_state(panda.joint_names, q).effort, plain,
                               rtol=1e-12, atol=1e-12)
    g_root = rpy_to_matrix((0.3, -0.2, 0.0)).T @ [0.0, 0.0, -9.81]    # the ship rolls, pitches
    h.publish('imu', _imu('imu_link', (0, 0, 0), R.T @ -g_root, 2))
    tilted = inverse_dynamics(panda, q, ZERO, ZERO, gravity=g_root)
    np.testing.assert_allclose(h.joint_state(panda.joint_names, q).effort, tilted,
                               rtol=1e-12, atol=1e-12)
    assert not np.allclose(tilted, plain, atol=1e-2)
    rejected = h.node._stats.total_rejected
    bad = [(_imu('camera', (0, 0, 0), (0, 0, 9.81), 4), "'camera' is not a link"),
           (_imu('', (0, 0, 0), (0, math.nan, 9.81), 5), 'NaN'),
           (_imu('', (math.inf, 0, 0), (0, 0, 9.81), 6), 'NaN or Inf'),
           (_imu('', (0, 0, 0), (0, 0, 9.81), 7, accel_cov=-1.0), 'REP 145')]
    for msg, reason in bad:
        h.publish('imu', msg)
        assert 'imu rejected' in h.node._last_error and reason in h.node._last_error
        out = h.joint_state(panda.joint_names, q)                      # still running
        np.testing.assert_allclose(out.effort, tilted, rtol=1e-12, atol=1e-12)
    assert h.node._stats.total_rejected == rejected + len(bad)
    h.node._publish_diagnostics()
    h.spin_until(lambda: h.diagnostics)
    values = {kv.key: kv.value for kv in h.diagnostics[-1].status[0].values}
    assert values['base_acceleration_source'] == 'imu' and 'imu' not in values['stale_inputs']
    h.publish('base', _accel([0.0] * 6))                              # a fresh topic wins
    np.testing.assert_allclose(h.joint_state(panda.joint_names, q).effort, plain,
                               rtol=1e-12, atol=1e-12)
    ship = [0.5, -0.3, 1.2, 0.1, 0.2, -0.3]                           # stale: the parameter
    assert h.node.set_parameters_atomically([Parameter('base_acceleration', value=ship),
                                             Parameter('desired_timeout', value=0.001)]) \
        .successful
    h.spin_for(0.01)
    np.testing.assert_allclose(h.joint_state(panda.joint_names, q).effort,
                               inverse_dynamics(panda, q, ZERO, ZERO, base_acceleration=ship),
                               rtol=1e-12, atol=1e-12)
    assert h.node._base_source(h.node._rt, time.monotonic()) == 'parameter'
    assert 'imu' in h.node._stale_inputs(time.monotonic())
    assert h.node.set_parameters([Parameter('use_imu', value=False)])[0].successful
    assert h.node._imu_sub is None and h.node._rt.base_acceleration.imu is None


def test_reaction_wrenches_rate_limits_the_wrench_topics_not_the_efforts(make, panda):
    h = make(mode='gravity_compensation', reaction_wrenches_rate=0.5)
    h.watch_wrenches(['panda_joint1'])
    h.spin_until(lambda: h.node._rt.wrench_rows == [0])
    q, _, _ = _state(panda, seed=26)
    start = time.monotonic()
    for _ in range(5):
        h.joint_state(panda.joint_names, q)
    assert time.monotonic() - start < 2.0           # all five inside one 2 s wrench period
    h.spin_for(2.1 - (time.monotonic() - start))
    last = h.joint_state(panda.joint_names, q)      # the next period: its wrench must come
    h.spin_until(lambda: len(h.wrenches['panda_joint1']) == 2)
    assert h.wrenches['panda_joint1'][-1].header.stamp == last.header.stamp
    assert len(h.efforts) == 6 and len(h.wrenches['panda_joint1']) == 2


def test_joint_coefficients_map_or_command_joint_order():
    from rnea_ros.node.params import joint_coefficients
    joints = ('a', 'b', 'c')
    cfg = {'friction_joints': ['c'], 'friction_viscous': [2.0], 'armature': None}
    assert joint_coefficients(cfg, joints) == {'friction_viscous': {'c': 2.0}}
    cfg = {'command_joints': ['b', 'a'], 'friction_coulomb': [1.0, 3.0]}
    assert joint_coefficients(cfg, joints) == {'friction_coulomb': {'b': 1.0, 'a': 3.0}}
    everyone = joint_coefficients({'armature': [0.5]}, joints)['armature']
    assert everyone == dict.fromkeys(joints, 0.5)
    with pytest.raises(ValueError, match='friction_viscous has 2 values'):
        joint_coefficients({'friction_viscous': [1.0, 2.0]}, joints)
