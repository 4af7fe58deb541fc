"""Hostile input to the library (issue 15, items 7-11 and 14; issue 13's input checks).

Each case used to misbehave (block, MemoryError, RecursionError, NaN or a silent zero); now it
is a ValueError that says what is wrong, at build time for models and at call time for states.
"""

import os
import threading

import numpy as np
import pytest

from rnea_ros import (forward_dynamics, gravity_torques, inverse_dynamics,
                      inverse_dynamics_batch, mass_matrix, reaction_wrenches, RobotModel)
from rnea_ros.core.urdf import MAX_URDF_BYTES
from robots import urdf_path

LINK = ('<link name="{name}"><inertial><origin xyz="{com}"/><mass value="{mass}"/>'
        '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>')


def arm(axis='0 0 1', origin='0 0 0.3', com='0 0 0.1', mass='1', limit=None, extra=''):
    """Return a two-joint URDF (base - j1 - l1 - j2 - l2, plus ``extra``) with one knob each."""
    limit = limit or 'effort="10" velocity="1" lower="-1" upper="1"'
    links = ''.join(LINK.format(name=n, com=com, mass=mass) for n in ('base', 'l1', 'l2'))
    joints = (f'<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>'
              f'<origin xyz="{origin}"/><axis xyz="{axis}"/><limit {limit}/></joint>'
              '<joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>'
              '<origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>'
              '<limit effort="10" velocity="1" lower="-1" upper="1"/></joint>')
    return f'<robot name="arm">{links}{joints}{extra}</robot>'


TOOL_1E308 = ('<link name="tool"><inertial><mass value="1e308"/>'
              '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
              '<joint name="fix" type="fixed"><parent link="l2"/><child link="tool"/></joint>')


@pytest.fixture(scope='module')
def panda():
    return RobotModel.from_urdf_file(urdf_path('panda'))


# -- item 7: reading files -------------------------------------------------------------------

def test_a_device_file_is_refused_not_read_until_memory_runs_out():
    with pytest.raises(ValueError, match="cannot read URDF file '/dev/zero': not a regular"):
        RobotModel.from_urdf_file('/dev/zero')


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = str(tmp_path / 'robot.urdf')
    os.mkfifo(fifo)
    outcome = []

    def load():
        try:
            RobotModel.from_urdf_file(fifo)
        except ValueError as e:
            outcome.append(str(e))

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(10.0)
    blocked = reader.is_alive()
    if blocked:            # release the reader that waits for a writer (the old behaviour)
        os.close(os.open(fifo, os.O_WRONLY))
        reader.join(5.0)
    assert not blocked, 'from_urdf_file blocked on a FIFO'
    assert outcome and 'not a regular file' in outcome[0]


def test_a_file_beyond_the_size_limit_is_refused(tmp_path):
    path = tmp_path / 'huge.urdf'
    with open(path, 'wb') as f:
        f.truncate(MAX_URDF_BYTES + 1)
    with pytest.raises(ValueError, match='larger than'):
        RobotModel.from_urdf_file(str(path))


# -- item 8: models that overflow are refused at build time ----------------------------------

@pytest.mark.parametrize('kwargs, message', [
    ({'axis': '1e200 1e200 0'}, "axis of joint 'j1' cannot be normalised"),
    ({'origin': '1e200 0 0'}, "origin of joint 'j1' is too far"),
    ({'com': '1e200 0 0'}, 'overflows'),
    ({'mass': '1e308', 'extra': TOOL_1E308},
     r"links \['l2', 'tool'\] \(merged into one body\) overflows"),
])
def test_models_that_overflow_are_refused_at_build_time(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RobotModel.from_urdf_string(arm(**kwargs))


def test_large_but_usable_values_still_build():
    """The bounds refuse overflow only: a 1e100 axis normalises and a 1e6 kg link is kept."""
    model = RobotModel.from_urdf_string(arm(axis='0 0 1e100', mass='1e6'))
    np.testing.assert_array_equal(model.reals[0, 12:15], [0.0, 0.0, 1.0])
    assert np.all(np.isfinite(gravity_torques(model, [0.3, 0.4])))


# -- item 9: finite but huge inputs ------------------------------------------------------------

@pytest.mark.parametrize('which, value', [('qd', 1e200), ('qdd', 1e308)])
def test_huge_states_raise_instead_of_returning_nan(panda, which, value):
    state = {'q': np.zeros(9), 'qd': np.zeros(9), 'qdd': np.zeros(9)}
    state[which][1] = value
    for fn in (inverse_dynamics, reaction_wrenches):
        with pytest.raises(ValueError, match='overflows'):
            fn(panda, state['q'], state['qd'], state['qdd'])
    with pytest.raises(ValueError, match='overflows'):
        inverse_dynamics(panda, state['q'].tolist(), state['qd'].tolist(),
                         state['qdd'].tolist())
    batch = [np.tile(state[k], (100, 1)) for k in ('q', 'qd', 'qdd')]
    with pytest.raises(ValueError, match=r'overflows \(sample 0\)'):
        inverse_dynamics_batch(panda, *batch)


def test_huge_gravity_and_torque_raise(panda):
    zero = np.zeros(9)
    with pytest.raises(ValueError, match='overflows'):
        inverse_dynamics(panda, zero, zero, zero, gravity=(0.0, 0.0, -1e308))
    with pytest.raises(ValueError, match='overflows'):
        forward_dynamics(panda, zero, zero, np.full(9, 1e308))


def test_a_huge_floating_base_quaternion_is_refused():
    model = RobotModel.from_urdf_file(urdf_path('panda'), floating_base=True)
    q = np.zeros(model.nq)
    q[3:7] = [1e200, 0.0, 0.0, 0.0]
    v = np.zeros(model.nv)
    for call in (lambda: inverse_dynamics(model, q, v, v),
                 lambda: forward_dynamics(model, q, v, v),
                 lambda: mass_matrix(model, q)):
        with pytest.raises(ValueError, match='quaternion'):
            call()
    q[3:7] = [1e100, 0.0, 0.0, 0.0]          # large, but normalises: same as the unit one
    unit = q.copy()
    unit[3:7] = [1.0, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(inverse_dynamics(model, q, v, v),
                               inverse_dynamics(model, unit, v, v))


# -- items 10, 11, 14: the URDF reader -------------------------------------------------------

@pytest.mark.parametrize('mimic', ['multiplier="nan"', 'offset="inf"', 'multiplier="-inf"'])
def test_mimic_coefficients_must_be_finite(mimic):
    extra = ('<link name="l3"/><joint name="j3" type="revolute"><parent link="l2"/>'
             '<child link="l3"/><axis xyz="1 0 0"/>'
             '<limit effort="1" velocity="1" lower="-1" upper="1"/>'
             f'<mimic joint="j2" {mimic}/></joint>')
    with pytest.raises(ValueError, match="mimic .* of joint 'j3' must be a finite number"):
        RobotModel.from_urdf_string(arm(extra=extra))


@pytest.mark.parametrize('where', ['</link>', '</robot>'])
def test_deeply_nested_xml_is_a_value_error_not_a_recursion_error(where):
    """5000 levels inside a link raised RecursionError; at the top level they were ignored."""
    nested = '<a>' * 5000 + '</a>' * 5000
    xml = arm().replace(where, nested + where, 1)
    with pytest.raises(ValueError, match='nested more than'):
        RobotModel.from_urdf_string(xml)


@pytest.mark.parametrize('limit, message', [
    ('effort="nan" velocity="1"', 'effort limit'),
    ('effort="-5" velocity="1"', 'effort limit'),
    ('effort="10" velocity="nan"', 'velocity limit'),
    ('effort="10" velocity="-1"', 'velocity limit'),
    ('effort="10" velocity="1" lower="nan" upper="1"', 'lower limit'),
])
def test_joint_limits_must_be_numbers_in_range(limit, message):
    with pytest.raises(ValueError, match=f"{message} of joint 'j1' must be"):
        RobotModel.from_urdf_string(arm(limit=limit))


def test_effort_zero_means_no_limit_as_documented():
    """An effort of 0 (URDFs write it for joints that are not driven) reads as no limit."""
    model = RobotModel.from_urdf_string(arm(limit='effort="0" velocity="1"'))
    assert model.effort_limits.tolist() == [np.inf, 10.0]


# -- issue 13: mass_matrix checks q, forward_dynamics names tau --------------------------------

def test_mass_matrix_refuses_non_finite_q(panda):
    """Like every other algorithm, mass_matrix names the non-finite entry of q."""
    q = np.zeros(9)
    q[2] = np.nan
    with pytest.raises(ValueError, match=r'q\[2\] \(panda_joint3\) is nan'):
        mass_matrix(panda, q)


def test_forward_dynamics_names_tau_when_tau_is_not_finite(panda):
    """The message names tau (the old one said qdd)."""
    tau = np.zeros(9)
    tau[4] = np.inf
    with pytest.raises(ValueError, match=r'^tau\[4\] \(panda_joint5\) is inf'):
        forward_dynamics(panda, np.zeros(9), np.zeros(9), tau)
