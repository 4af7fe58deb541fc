"""The rnea-ros command prints the core's efforts by joint name and rejects bad input."""

import json
import re

import numpy as np
import pytest

from rnea_ros import gravity_torques, inverse_dynamics, RobotModel
from rnea_ros.analysis.cli import main
from robots import urdf_path

PANDA = urdf_path('panda')


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_gravity_compensation_by_name_matches_core(capsys):
    code, out, _ = run(capsys, 'torques', '--urdf', PANDA, '--q', 'panda_joint2=-0.5',
                       'panda_joint4=-2.0', '--json')
    assert code == 0
    effort = json.loads(out)['effort']
    model = RobotModel.from_urdf_file(PANDA)
    q = np.zeros(model.nq)
    q[1], q[3] = -0.5, -2.0
    np.testing.assert_allclose([effort[n] for n in model.joint_names],
                               gravity_torques(model, q), rtol=0, atol=1e-12)


def test_positional_values_with_commas_and_table_output(capsys):
    q = '0,-0.5,0,-2,0,1.5,0.8,0,0'
    code, out, _ = run(capsys, 'torques', '--urdf', PANDA, '--q', q, '--qd', *['0.1'] * 9,
                       '--qdd', *['1'] * 9)
    assert code == 0
    model = RobotModel.from_urdf_file(PANDA)
    tau = inverse_dynamics(model, [float(x) for x in q.split(',')], [0.1] * 9, [1.0] * 9)
    lines = {line.split()[0]: float(line.split()[1]) for line in out.splitlines()[2:]}
    for name, value in zip(model.joint_names, tau):
        assert lines[name] == pytest.approx(value, abs=1e-6)
    assert 'panda_finger_joint1' in out and ' N\n' in out   # prismatic joints in newtons


def test_floating_base_prints_base_wrench(capsys):
    code, out, _ = run(capsys, 'torques', '--urdf', PANDA, '--floating-base', '--json')
    assert code == 0
    effort = json.loads(out)['effort']
    model = RobotModel.from_urdf_file(PANDA)
    assert effort['base_vz'] == pytest.approx(model.total_mass * 9.81)


@pytest.mark.parametrize('argv, message', [
    (['--q', '1', '2'], 'expected 9 values'),
    (['--q', 'nope=1'], "unknown joint 'nope'"),
    (['--q', 'panda_joint1=1', '2'], 'not both'),
    (['--q', *['nan'] * 9], 'q\\[0\\] \\(panda_joint1\\) is nan'),
])
def test_bad_values_exit_2_with_message(capsys, argv, message):
    code, _, err = run(capsys, 'torques', '--urdf', PANDA, *argv)
    assert code == 2
    assert re.search(message, err)


def test_missing_urdf_exit_2(capsys):
    code, _, err = run(capsys, 'torques', '--urdf', '/no/such.urdf')
    assert code == 2 and 'cannot read URDF file' in err


def test_overflowing_input_exits_2_and_never_prints_nan(capsys):
    """Issue 15 case 9: q_dot = 1e200 overflows to NaN; --json must not print invalid JSON."""
    code, out, err = run(capsys, 'torques', '--urdf', PANDA, '--qd', *['1e200'] * 9, '--json')
    assert code == 2 and 'NaN' not in out and 'overflow' in err


def test_deeply_nested_xml_exits_2_with_a_message_not_a_traceback(tmp_path, capsys):
    """Issue 15 case 11: 50,000 nested elements are an error message, not a traceback."""
    path = tmp_path / 'nested.urdf'
    path.write_text('<robot name="r"><link name="l">' + '<a>' * 50000 + '</a>' * 50000 +
                    '</link></robot>')
    code, _, err = run(capsys, 'torques', '--urdf', str(path))
    assert code == 2 and 'error' in err and 'Traceback' not in err
