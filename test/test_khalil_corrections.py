"""Corrections of rnea_ros.khalil found by an independent review (each test failed before)."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from rnea_ros import (forward_dynamics, gravity_torques, inverse_dynamics, reaction_wrenches,
                      RobotModel)
from rnea_ros.core.dynamics import joint_friction
from rnea_ros.core.reference import link_pose
from rnea_ros.khalil import ClosedLoopRobot, data_path, FlexibleJointRobot, load_mdh
from rnea_ros.khalil.direct import direct_dynamics
from rnea_ros.khalil.mdh import make_table
from rnea_ros.khalil.mdh_model import model_from_mdh
from rnea_ros.khalil.newton_euler import KhalilTree, newton_euler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HALF_PI = np.pi / 2


# -- RX-90 twist angles: SYMORO's RX90.par ---------------------------------------------------

@pytest.mark.parametrize('name', ['rx90.yaml', 'rx90.csv'])
def test_rx90_twist_angles_are_those_of_symoro(name):
    """The twist angles are SYMORO's RX90.par: [0, pi/2, 0, -pi/2, pi/2, -pi/2]."""
    alphas = [f.alpha for f in load_mdh(data_path(name)).frames]
    np.testing.assert_allclose(alphas, [0, HALF_PI, 0, -HALF_PI, HALF_PI, -HALF_PI], atol=1e-15)


def test_rx90_shoulder_and_elbow_raise_the_arm_for_positive_angles():
    """Positive q2 raises the arm, and holding it against gravity takes a positive torque.

    At q = 0 the upper arm lies along x0 and the forearm points up; z2 = z3 = -y0, so that (as
    for the Puma 560 of Robotics Toolbox, where q2 = +pi/2 lifts the arm) positive q2 raises the
    elbow; with the old twist signs z2 = +y0 and all of this flips.
    """
    model = model_from_mdh(data_path('rx90.yaml'))
    q = np.zeros(6)
    for link in ('link2', 'link3'):
        R, _ = link_pose(model, q, link)
        np.testing.assert_allclose(R[:, 2], [0.0, -1.0, 0.0], atol=1e-15)
    elbow = link_pose(model, q, 'link3')[1]
    wrist = link_pose(model, q, 'link4')[1]
    np.testing.assert_allclose(elbow, [0.45, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(wrist, [0.45, 0.0, 0.45], atol=1e-15)
    up = np.array([0.0, 0.1, 0.0, 0.0, 0.0, 0.0])
    assert link_pose(model, up, 'link3')[1][2] > 0.0            # q2 > 0: the elbow rises
    assert link_pose(model, up, 'link4')[1][0] < wrist[0]       # and the wrist swings back
    assert gravity_torques(model, q)[1] > 0.0


# -- one Coulomb friction everywhere ---------------------------------------------------------

def test_coulomb_band_is_the_same_in_the_core_and_every_khalil_algorithm():
    """Inside |qd| < band sign(qd) is linear: core, newton_euler, direct and flexible joints."""
    table = load_mdh(data_path('rx90.yaml'))
    tree, model = KhalilTree(table), model_from_mdh(table)
    rng = np.random.default_rng(1)
    q, qdd = rng.normal(size=(2, 6))
    qd = np.array([0.004, -0.002, 0.5, -0.007, 0.0, 0.009])    # mostly inside the 0.01 band
    tau = inverse_dynamics(model, q, qd, qdd)
    np.testing.assert_allclose(newton_euler(tree, q, qd, qdd), tau, rtol=0, atol=1e-10)
    np.testing.assert_allclose(direct_dynamics(tree, q, qd, tau),
                               forward_dynamics(model, q, qd, tau), rtol=0, atol=1e-9)
    rigid = FlexibleJointRobot(table).inverse_dynamics(q, qd, qdd, np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(rigid.tau_motor, tau, rtol=0, atol=1e-10)
    assert KhalilTree(table, coulomb_band=0.5).friction(np.array([0.25] * 6))[0] == \
        pytest.approx(0.5 * 6.0 + 8.0 * 0.25)


def test_flexible_joint_motor_friction_uses_the_band():
    table = load_mdh(data_path('rx90.yaml'))
    flex = table.with_frames([f.__class__(**{**f.__dict__, 'K': 5000.0})
                              for f in table.frames])
    robot = FlexibleJointRobot(flex)
    q = np.zeros(6)
    slow = robot.inverse_dynamics(q, np.full(6, 0.001), q, q, q)
    assert np.all(np.abs(slow.dtheta) < 0.01)                 # the motors turn inside the band
    friction = slow.tau_motor - slow.tau_link - robot.tree.Ia * slow.ddtheta
    np.testing.assert_allclose(friction, joint_friction(model_from_mdh(table), slow.dtheta),
                               rtol=0, atol=1e-12)


# -- table checks --------------------------------------------------------------------------

def test_inertia_breaking_the_triangle_inequality_is_rejected():
    """Principal moments (0.1, 0.1, 1.0) about the COM: 1.0 > 0.1 + 0.1 is no real body."""
    table = make_table([{'j': 1, 'a': 0, 'M': 1.0, 'XX': 0.1, 'YY': 0.1, 'ZZ': 1.0}])
    with pytest.raises(ValueError, match='MDH frame 1: .*triangle inequality'):
        model_from_mdh(table)


@pytest.mark.parametrize('key', ['alpha', 'gamma', 'theta'])
def test_angles_in_degrees_are_rejected(key):
    with pytest.raises(ValueError, match=f'{key} = 90 is not an angle in radians'):
        make_table([{'j': 1, 'a': 0, key: 90}])
    make_table([{'j': 1, 'a': 0, key: '-2*pi'}])                 # a full turn is an angle


def test_newton_euler_with_a_wrong_length_names_the_argument():
    tree = KhalilTree(load_mdh(data_path('rx90.yaml')))
    with pytest.raises(ValueError, match=r'q has shape \(5,\), expected \(6,\)'):
        newton_euler(tree, np.zeros(5), np.zeros(6), np.zeros(6))
    with pytest.raises(ValueError, match=r'qdd has shape \(7,\)'):
        newton_euler(tree, np.zeros(6), np.zeros(6), np.zeros(7))


def test_a_table_where_a_model_is_expected_is_a_type_error():
    table = load_mdh(data_path('rx90.yaml'))
    zero = np.zeros(6)
    with pytest.raises(TypeError, match='expected a RobotModel, got MDHTable'):
        inverse_dynamics(table, zero, zero, zero)
    with pytest.raises(TypeError, match='expected a RobotModel'):
        reaction_wrenches(table, zero, zero, zero)
    loop = load_mdh(data_path('fourbar.yaml'))
    with pytest.raises(TypeError, match='model must be a RobotModel'):
        ClosedLoopRobot(loop, model=loop)
    with pytest.raises(TypeError, match='table must be an MDHTable'):
        ClosedLoopRobot(model_from_mdh(loop))


# -- closed loops: the assembly mode is a choice --------------------------------------------

def test_closed_loop_without_a_chosen_branch_warns_and_assembly_chooses_it():
    table = load_mdh(data_path('fourbar.yaml'))
    chosen = [0.3, 0.2, 1.6, 1.0]
    expected = ClosedLoopRobot(table).inverse_dynamics([0.3], [2.0], [0.0], guess=chosen)
    with pytest.warns(RuntimeWarning, match='no assembly mode chosen'):
        other = ClosedLoopRobot(table).inverse_dynamics([0.3], [2.0], [0.0])
    assert not np.allclose(other, expected)                    # the other branch
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        robot = ClosedLoopRobot(table, assembly=chosen)
        np.testing.assert_allclose(robot.inverse_dynamics([0.3], [2.0], [0.0]), expected,
                                   atol=1e-12)
        robot.inverse_dynamics([0.31], [2.0], [0.0])           # following: no warning


# -- external wrenches: f_env is the opposite of f_ext --------------------------------------

def test_khalil_f_env_is_the_wrench_on_the_environment_opposite_to_f_ext():
    table = load_mdh(data_path('rx90.yaml'))
    tree, model = KhalilTree(table), model_from_mdh(table)
    rng = np.random.default_rng(2)
    q, qd, qdd = rng.normal(size=(3, 6))
    f_env = rng.normal(size=(6, 6))
    f_ext = {f'link{j + 1}': -f_env[j] for j in range(6)}
    np.testing.assert_allclose(newton_euler(tree, q, qd, qdd, f_env=f_env),
                               inverse_dynamics(model, q, qd, qdd, f_ext=f_ext), atol=1e-10)
    with pytest.raises(TypeError):
        newton_euler(tree, q, qd, qdd, fe=f_env)                 # the ambiguous name is gone


# -- The manual and command line --------------------------------------------------------------

def test_readme_closed_loop_example_is_consistent():
    """The manual's A_c, H_c (eq. 58) reproduce the Gamma computed just above them."""
    with open(os.path.join(ROOT, 'doc', 'concepts', 'khalil.md'), encoding='utf-8') as f:
        readme = f.read()
    block = re.search(r'```python\n(from rnea_ros.khalil import ClosedLoopRobot\n.*?)```',
                      readme, re.S).group(1)
    scope = {'load_mdh': load_mdh, 'data_path': data_path}
    exec(block, scope)                                           # noqa: S102 (our README)
    qdd_a = np.zeros(1)
    np.testing.assert_allclose(scope['A_c'] @ qdd_a + scope['H_c'], scope['gamma'], atol=1e-12)


def test_command_line_reads_shipped_tables_from_any_folder(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, '-m', 'rnea_ros.khalil', 'rx90.yaml'], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    model = RobotModel.from_urdf_string(out.stdout)
    assert model.joint_names == load_mdh(data_path('rx90.yaml')).joint_names
