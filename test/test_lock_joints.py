"""Holding joints a recording lacks: the URDF with those joints fixed (core.urdf.lock_joints).

The identity checked: the locked robot's inverse dynamics on its joints equals the full
robot's with the locked joints held still at their positions, for revolute, continuous and
prismatic joints, whatever the other joints do.
"""

import numpy as np
import pytest
from rnea_ros.core.dynamics import inverse_dynamics
from rnea_ros.core.model import RobotModel
from rnea_ros.core.spatial import matrix_to_rpy, rpy_to_matrix
from rnea_ros.core.urdf import lock_joints, read_urdf
from robots import urdf_path

CASES = [('panda', {'panda_finger_joint1': 0.02, 'panda_finger_joint2': 0.035}),
         ('panda', {'panda_joint7': -0.7, 'panda_finger_joint1': 0.0,
                    'panda_finger_joint2': 0.0}),
         ('ur5', {'shoulder_pan_joint': 1.3}),
         ('ur5', {'wrist_3_joint': -2.0, 'elbow_joint': 0.4}),
         ('double_pendulum_continuous', {'joint1': 2.5})]


@pytest.mark.parametrize('robot, held', CASES, ids=[f'{r}-{"+".join(h)}' for r, h in CASES])
def test_the_locked_robot_is_the_full_robot_with_those_joints_held(robot, held):
    xml = read_urdf(urdf_path(robot))
    full = RobotModel.from_urdf_string(xml)
    locked = RobotModel.from_urdf_string(lock_joints(xml, held))
    free = [j for j in full.joint_names if j not in held]
    assert list(locked.joint_names) == free
    index = [full.joint_names.index(j) for j in free]
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd, qdd = (rng.uniform(-1, 1, len(free)) for _ in range(3))
        Q, QD, QDD = np.zeros(full.nq), np.zeros(full.nv), np.zeros(full.nv)
        for name, value in held.items():
            Q[full.joint_names.index(name)] = value
        Q[index], QD[index], QDD[index] = q, qd, qdd
        np.testing.assert_allclose(inverse_dynamics(locked, q, qd, qdd),
                                   inverse_dynamics(full, Q, QD, QDD)[index], atol=1e-10)


def link(name, com):
    """Return a 1 kg link element with its centre of mass at ``com``."""
    return (f'<link name="{name}"><inertial><mass value="1"/><origin xyz="{com}"/>'
            '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>'
            '</link>')


def joint(name, parent, child, origin, extra=''):
    """Return a revolute joint about y."""
    return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{origin}"/><axis xyz="0 1 0"/>{extra}'
            '<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')


def test_a_joint_that_mimics_a_held_joint_is_held_with_it():
    xml = ('<robot name="m"><link name="a"/>' + link('b', '0.1 0 0') + link('c', '0 0 0.1')
           + link('d', '0.1 0 0.1') + joint('j1', 'a', 'b', '0 0 0')
           + joint('j2', 'b', 'c', '0.2 0 0', '<mimic joint="j1" multiplier="2" offset="0.1"/>')
           + joint('j3', 'c', 'd', '0 0 0.2') + '</robot>')
    locked = RobotModel.from_urdf_string(lock_joints(xml, {'j1': 0.3}))
    assert list(locked.joint_names) == ['j3']
    full = RobotModel.from_urdf_string(xml)
    q = np.zeros(full.nq)
    q[full.joint_names.index('j1')] = 0.3
    q[full.joint_names.index('j2')] = 2 * 0.3 + 0.1
    for q3 in (-1.0, 0.2, 1.5):
        q[full.joint_names.index('j3')] = q3
        expected = inverse_dynamics(full, q, np.zeros(full.nv), np.zeros(full.nv))
        np.testing.assert_allclose(inverse_dynamics(locked, [q3], [0.0], [0.0]),
                                   expected[[full.joint_names.index('j3')]], atol=1e-12)


@pytest.mark.parametrize('held, message', [({'nope': 0.0}, 'not a moving joint'),
                                           ({'panda_joint1': float('nan')}, 'finite')])
def test_holding_what_cannot_be_held_is_a_clear_error(held, message):
    with pytest.raises(ValueError, match=message):
        lock_joints(read_urdf(urdf_path('panda')), held)


def test_matrix_to_rpy_inverts_rpy_to_matrix_gimbal_lock_included():
    rng = np.random.default_rng(0)
    for rpy in list(rng.uniform(-3, 3, (50, 3))) + [(0.3, np.pi / 2, 0.2), (0, -np.pi / 2, 1)]:
        R = rpy_to_matrix(rpy)
        np.testing.assert_allclose(rpy_to_matrix(matrix_to_rpy(R)), R, atol=1e-12)
