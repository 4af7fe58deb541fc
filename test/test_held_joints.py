"""analyze and observe on a recording that lacks model joints (a gripper not recorded).

The joints the recording lacks are held still (0, or ``--fixed``), as identify holds them: the
robot is analysed with them locked.  The identity checked: every recorded joint's figures
equal those of the same recording with the lacking joints recorded, still, at those positions.
"""

import json

from identification_data import realworld_recording
import numpy as np
import pytest
from rnea_ros.analysis.analyze import analyze
from rnea_ros.analysis.cli import main
from rnea_ros.analysis.observe import observe
from rnea_ros.core.urdf import read_urdf

FINGERS = ('panda_finger_joint1', 'panda_finger_joint2')
HELD = {'panda_finger_joint1': 0.02, 'panda_finger_joint2': 0.03}


@pytest.fixture(scope='module')
def log():
    """Return a real-looking panda log without its fingers, and the same log with them still."""
    rec = realworld_recording('panda', seed=1, duration=6.0)
    assert not set(FINGERS) & set(rec.names)
    n = rec.t.size
    names = list(rec.names) + list(FINGERS)
    still = np.tile([HELD[f] for f in FINGERS], (n, 1))
    full = (rec.t, names, np.hstack([rec.Q, still]), np.hstack([rec.QD, np.zeros((n, 2))]),
            np.hstack([rec.E, np.zeros((n, 2))]))
    return rec, (rec.t, list(rec.names), rec.Q, rec.QD, rec.E), full


def test_analyze_holds_the_lacking_joints_as_if_recorded_still(log):
    rec, lacking, full = log
    xml = read_urdf(rec.urdf)
    held = analyze(xml, *lacking, fit_payload=False, cutoff=4.0, fixed=HELD)
    recorded = analyze(xml, *full, fit_payload=False, cutoff=4.0)
    assert held['held'] == HELD and recorded['held'] == {}
    assert list(held['model'].joint_names) == list(rec.names)
    index = [list(recorded['model'].joint_names).index(j) for j in rec.names]
    np.testing.assert_allclose(held['residual'], recorded['residual'][:, index], atol=1e-9)
    for key in ('viscous', 'coulomb', 'offset', 'rms_after'):
        np.testing.assert_allclose(held['fit'][key], np.asarray(recorded['fit'][key])[index],
                                   atol=1e-8, err_msg=key)


def test_observe_holds_the_lacking_joints_and_takes_their_entries_out(log):
    rec, lacking, full = log
    xml = read_urdf(rec.urdf)
    nine = [4.0] * 7 + [0.5, 0.5]                  # one per joint of the whole robot
    held = observe(xml, *lacking, thresholds=nine, fixed=HELD)
    recorded = observe(xml, *full, thresholds=nine)
    assert held['held'] == HELD and held['thresholds'] == [4.0] * 7
    index = [list(recorded['model'].joint_names).index(j) for j in rec.names]
    np.testing.assert_allclose(held['r'], recorded['r'][:, index], atol=1e-9)
    np.testing.assert_allclose(held['suggested'], recorded['suggested'][index], atol=1e-9)


@pytest.mark.parametrize('command', ['analyze', 'observe'])
def test_the_command_names_the_held_joints(log, tmp_path, capsys, command):
    rec, _, _ = log
    bag = rec.write(tmp_path / 'bag')
    code = main([command, bag, '--urdf', rec.urdf, '--fixed', 'panda_finger_joint1=0.02',
                 '--json'] + (['--no-payload'] if command == 'analyze' else []))
    assert code == 0
    assert json.loads(capsys.readouterr().out)['held_joints'] == {
        'panda_finger_joint1': 0.02, 'panda_finger_joint2': 0.0}
    code = main([command, bag, '--urdf', rec.urdf, '--fixed', 'panda_joint1=0.1'])
    err = capsys.readouterr().err
    assert code == 2 and 'holds joints the recording lacks' in err


def test_observe_holds_the_node_parameters_fixed_joints_where_the_node_holds_them(log):
    rec, lacking, _ = log
    params = {'fixed_joints': list(FINGERS), 'fixed_joint_positions': [0.02, 0.03],
              'friction_joints': list(rec.names) + list(FINGERS),
              'friction_viscous': [0.1] * 9}
    result = observe(read_urdf(rec.urdf), *lacking, params=params)
    assert result['held'] == HELD
    viscous = result['model'].joint_term_options()['friction_viscous']
    assert viscous == dict.fromkeys(rec.names, 0.1)     # the fingers' entries taken out
