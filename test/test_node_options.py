"""Node options of issue 6 through real rclpy: friction, armature and a moving base.

Each test starts the node with the options, publishes joint states and compares the published
efforts with the dynamics core called with the same options.
"""

import math
import re

from geometry_msgs.msg import AccelStamped
import numpy as np
import pytest
from rclpy.parameter import Parameter
from rnea_ros import inverse_dynamics, RobotModel
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
    h = make(mode='inverse_dynamics', base_acceleration=ship, desired_timeout=0.2,
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
    h.spin_for(0.25)                                          # topic stale: parameter again
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
    assert ARM[0] in h.node._rt.model.joint_names


def test_reaction_wrenches_rate_limits_the_wrench_topics_not_the_efforts(make, panda):
    h = make(mode='gravity_compensation', reaction_wrenches_rate=2.0)
    h.watch_wrenches(['panda_joint1'])
    h.spin_until(lambda: h.node._rt.wrench_rows == [0])
    q, _, _ = _state(panda, seed=26)
    for _ in range(5):
        h.joint_state(panda.joint_names, q)
    h.spin_for(0.05)
    assert len(h.efforts) == 5 and len(h.wrenches['panda_joint1']) == 1


def test_joint_coefficients_map_or_command_joint_order():
    from rnea_ros.node_params import joint_coefficients
    joints = ('a', 'b', 'c')
    cfg = {'friction_joints': ['c'], 'friction_viscous': [2.0], 'armature': None}
    assert joint_coefficients(cfg, joints) == {'friction_viscous': {'c': 2.0}}
    cfg = {'command_joints': ['b', 'a'], 'friction_coulomb': [1.0, 3.0]}
    assert joint_coefficients(cfg, joints) == {'friction_coulomb': {'b': 1.0, 'a': 3.0}}
    everyone = joint_coefficients({'armature': [0.5]}, joints)['armature']
    assert everyone == dict.fromkeys(joints, 0.5)
    with pytest.raises(ValueError, match='friction_viscous has 2 values'):
        joint_coefficients({'friction_viscous': [1.0, 2.0]}, joints)
