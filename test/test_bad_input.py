"""Bad models and bad inputs raise ValueError with a message that says what and where."""

import numpy as np
import pytest

from rnea_ros import inverse_dynamics, inverse_dynamics_batch, reaction_wrenches, RobotModel
from robots import urdf_path

LINK = '<link name="{}"><inertial><mass value="1"/>' \
       '<inertia ixx="{}" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
JOINT = '<joint name="{}" type="{}"><parent link="{}"/><child link="{}"/>' \
        '<axis xyz="0 0 1"/><limit effort="10" velocity="1" lower="-1" upper="1"/></joint>'


def urdf(links=('base', 'l1'), joints=(('j1', 'revolute', 'base', 'l1'),), ixx='0.1'):
    body = ''.join(LINK.format(n, ixx) for n in links)
    body += ''.join(JOINT.format(*j) for j in joints)
    return f'<robot name="test">{body}</robot>'


@pytest.fixture(scope='module')
def panda():
    return RobotModel.from_urdf_file(urdf_path('panda'))


@pytest.mark.parametrize('xml, message', [
    ('not xml at all', 'not well-formed XML'),
    ('<foo/>', 'not <robot>'),
    ('', 'empty'),
    (urdf(joints=(('j1', 'planar', 'base', 'l1'),)), "joint 'j1' has type 'planar'"),
    (urdf(joints=(('j1', 'floating', 'base', 'l1'),)), "type 'floating'"),
    (urdf(joints=(('j1', 'weird', 'base', 'l1'),)), 'Invalid joint type'),
    (urdf(joints=(('j1', 'revolute', 'base', 'nowhere'),)), "child link 'nowhere'"),
    (urdf(links=('a', 'b'), joints=(('j1', 'revolute', 'a', 'b'), ('j2', 'revolute', 'b', 'a'))),
     'no root link'),
    (urdf(links=('a', 'b', 'c'),
          joints=(('j1', 'revolute', 'a', 'c'), ('j2', 'revolute', 'b', 'c'))),
     'child of two joints'),
    (urdf(links=('a', 'b')), 'not defined'),
    (urdf(ixx='-0.5'), 'not positive semi-definite'),
    (urdf(links=('a', 'b', 'c'), joints=(('j1', 'revolute', 'a', 'b'),)), 'exactly one root'),
])
def test_bad_robot_description_raises_clear_error(xml, message):
    with pytest.raises(ValueError, match=message):
        RobotModel.from_urdf_string(xml)


def test_missing_file_raises_value_error():
    with pytest.raises(ValueError, match='cannot read URDF file'):
        RobotModel.from_urdf_file('/nonexistent/robot.urdf')


def test_joint_names_must_list_every_moving_joint():
    with pytest.raises(ValueError, match="missing: \\['j1'\\], unknown or fixed: \\['x'\\]"):
        RobotModel.from_urdf_string(urdf(), joint_names=['x'])


def test_massless_leaf_and_zero_dof_robots_work():
    model = RobotModel.from_urdf_string(
        '<robot name="t"><link name="a"/><link name="b"/>'
        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
        '<axis xyz="0 0 1"/></joint></robot>')
    assert inverse_dynamics(model, [0.3], [1.0], [2.0]).tolist() == [0.0]
    fixed_only = RobotModel.from_urdf_string('<robot name="t"><link name="a"/></robot>')
    assert fixed_only.nv == 0
    assert inverse_dynamics(fixed_only, [], [], []).shape == (0,)


@pytest.mark.parametrize('which, index', [('q', 0), ('qd', 1), ('qdd', 2)])
def test_wrong_length_names_the_argument(panda, which, index):
    args = [np.zeros(panda.nq), np.zeros(panda.nv), np.zeros(panda.nv)]
    args[index] = np.zeros(3)
    with pytest.raises(ValueError, match=f'^{which} has shape \\(3,\\), expected \\(9,\\)'):
        inverse_dynamics(panda, *args)


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize('which, index', [('q', 0), ('qd', 1), ('qdd', 2)])
def test_non_finite_input_names_the_joint(panda, which, index, bad):
    args = [np.zeros(panda.nq), np.zeros(panda.nv), np.zeros(panda.nv)]
    args[index][3] = bad
    with pytest.raises(ValueError, match=f'{which}\\[3\\] \\(panda_joint4\\) is'):
        inverse_dynamics(panda, *args)
    with pytest.raises(ValueError, match=f'{which}\\[3\\] \\(panda_joint4\\)'):
        reaction_wrenches(panda, *args)


def test_batch_names_the_bad_sample(panda):
    Q = np.zeros((5, panda.nq))
    Q[3, 1] = np.nan
    with pytest.raises(ValueError, match='sample 3'):
        inverse_dynamics_batch(panda, Q, np.zeros((5, 9)), np.zeros((5, 9)))
    with pytest.raises(ValueError, match='QD has shape'):
        inverse_dynamics_batch(panda, Q, np.zeros((4, 9)), np.zeros((5, 9)))


def test_batch_over_many_blocks_names_the_first_bad_sample(panda):
    """Rows run in parallel blocks of 64: the error still names the first bad row."""
    n = 1000
    QD = np.zeros((n, panda.nv))
    QD[900, 2] = np.inf
    QD[300, 4] = np.nan
    with pytest.raises(ValueError, match=r'qd\[4\] \(panda_joint5\) is nan \(sample 300\)'):
        inverse_dynamics_batch(panda, np.zeros((n, panda.nq)), QD, np.zeros((n, panda.nv)))


def test_strings_and_matrices_are_rejected(panda):
    with pytest.raises(ValueError, match='q must be a vector'):
        inverse_dynamics(panda, ['a'] * 9, np.zeros(9), np.zeros(9))
    with pytest.raises(ValueError, match='shape \\(3, 3\\)'):
        inverse_dynamics(panda, np.zeros((3, 3)), np.zeros(9), np.zeros(9))


def test_bad_external_wrenches(panda):
    z = np.zeros(9)
    with pytest.raises(ValueError, match="link 'no_such_link'"):
        inverse_dynamics(panda, z, z, z, f_ext={'no_such_link': np.zeros(6)})
    with pytest.raises(ValueError, match='must be 6 numbers'):
        inverse_dynamics(panda, z, z, z, f_ext={'panda_link7': [1.0, 2.0]})
    with pytest.raises(ValueError, match='not finite'):
        inverse_dynamics(panda, z, z, z, f_ext={'panda_link7': [np.nan] * 6})
    with pytest.raises(ValueError, match='gravity must be finite'):
        inverse_dynamics(panda, z, z, z, gravity=[0, 0, np.nan])
    # The default workspace is clean again after a failed call with options.
    assert np.all(np.isfinite(inverse_dynamics(panda, z, z, z)))


def test_zero_quaternion_is_rejected():
    model = RobotModel.from_urdf_file(urdf_path('panda'), floating_base=True)
    with pytest.raises(ValueError, match='quaternion'):
        inverse_dynamics(model, np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv))


def test_workspace_of_another_model_is_rejected(panda):
    from rnea_ros import forward_dynamics
    from rnea_ros.core.model import Workspace
    ur5 = RobotModel.from_urdf_file(urdf_path('ur5'))
    z = np.zeros(panda.nv)
    for call in (inverse_dynamics, reaction_wrenches, forward_dynamics):
        with pytest.raises(ValueError, match='workspace of a model with 6 bodies'):
            call(panda, z, z, z, ws=Workspace(ur5))
    with pytest.raises(ValueError, match='Workspace'):
        inverse_dynamics_batch(panda, z[None], z[None], z[None], ws=Workspace(ur5))
