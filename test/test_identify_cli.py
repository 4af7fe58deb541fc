"""``rnea-ros identify`` end to end: bags in, an identified URDF that Pinocchio loads out."""

import json
import os

from identification_data import measured, states_along, truth_model
import numpy as np
import pytest
from rnea_ros.analysis.cli import main
from rnea_ros.analysis.excitation import FourierTrajectory
from rnea_ros.analysis.recordings import write_joint_states
from rnea_ros.core.dynamics import inverse_dynamics
from rnea_ros.core.model import RobotModel
from robots import PinocchioOracle, random_state, urdf_path
import ros_domains
import yaml

PANDA = urdf_path('panda')
EXCITATION = os.path.join(os.path.dirname(__file__), '..', 'config', 'excitation_panda.yaml')


def record(path, traj, rate=100.0, seed=0, efforts=True, storage='mcap', duration=None):
    """Write a bag of the truth (seed 7) following traj, 0.05 N m noise; return the path."""
    nominal = RobotModel.from_urdf_file(PANDA)
    t = np.arange(0.0, duration or traj.duration, 1.0 / rate)
    Q, QD, QDD = states_along(nominal, traj, t)
    E = measured(truth_model('panda', 7), Q, QD, QDD, 0.05, np.random.default_rng(seed))
    write_joint_states(str(path), t + 100.0, list(nominal.joint_names), Q, QD,
                       E if efforts else np.zeros((len(t), 0)), storage=storage)
    return str(path)


@pytest.fixture(scope='module')
def bags(tmp_path_factory):
    folder = tmp_path_factory.mktemp('bags')
    traj = FourierTrajectory.from_yaml(EXCITATION)
    other = FourierTrajectory(traj.joints, traj.base_frequency, traj.duration, traj.q0,
                              0.7 * traj.a[:, ::-1], -0.7 * traj.b)
    return {'train': record(folder / 'train', traj),
            'validate': record(folder / 'validate', other, seed=1, storage='sqlite3')}


def test_identify_writes_a_urdf_pinocchio_loads_and_params_for_the_node(bags, tmp_path,
                                                                        capsys):
    out, params, report = tmp_path / 'id.urdf', tmp_path / 'p.yaml', tmp_path / 'report'
    code = main(['identify', bags['train'], '--urdf', PANDA, '--out', str(out),
                 '--params-out', str(params), '--validate', bags['validate'],
                 '--report', str(report), '--json'])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    val = summary['residual_rms']['validation']
    for joint, row in val.items():          # near the noise (0.05), well below the nominal
        assert row['identified'] < 0.08 and row['identified'] < 0.5 * row['nominal'], joint
    assert (sum(r['identified'] for r in val.values())
            < 0.1 * sum(r['nominal'] for r in val.values()))
    assert summary['condition_number'] < 1000
    assert all(b['sigma_percent'] >= 0 for b in summary['base_parameters'])
    assert os.path.exists(report / 'identify_validation.png')
    # The URDF loads back in rnea_ros and in Pinocchio, and both compute the same dynamics.
    model = RobotModel.from_urdf_file(str(out))
    pin = pytest.importorskip('pinocchio')
    oracle = PinocchioOracle(model, str(out))
    q, qd, qdd = random_state(model, np.random.default_rng(0))
    assert np.allclose(inverse_dynamics(model, q, qd, qdd), oracle.rnea(q, qd, qdd)[0],
                       atol=1e-8)
    assert pin.buildModelFromUrdf(str(out)).nv == 9
    node = yaml.safe_load(params.read_text())['/**']['ros__parameters']
    assert node['friction_joints'] == list(model.joint_names)
    assert len(node['friction_viscous']) == len(node['armature']) == 9
    assert min(node['friction_coulomb']) >= 0.0


def test_text_report_names_condition_and_residuals(bags, tmp_path, capsys):
    code = main(['identify', bags['train'], '--urdf', PANDA, '--out', str(tmp_path / 'x.urdf')])
    out = capsys.readouterr().out
    assert code == 0
    assert 'condition number of the base regressor' in out
    assert 'residual RMS on training data' in out and 'panda_joint7' in out
    # Ia1 is identifiable only with ZZ1 (and YY2): flagged, the sum printed
    assert '(Ia: see note)' in out and 'Ia[panda_joint1] is identifiable' in out
    assert 'friction models, RMS error on held-out blocks' in out and '\n* ' in out


@pytest.mark.parametrize('kind, message', [
    ('no_efforts', 'no efforts'), ('still', 'does not excite'), ('short', 'at least 50')])
def test_bad_recordings_exit_2_and_write_nothing(tmp_path, capsys, kind, message):
    traj = FourierTrajectory.from_yaml(EXCITATION)
    if kind == 'still':
        traj = FourierTrajectory(traj.joints, traj.base_frequency, traj.duration, traj.q0,
                                 0 * traj.a, 0 * traj.b)
    bag = record(tmp_path / 'bag', traj, efforts=kind != 'no_efforts',
                 duration=0.3 if kind == 'short' else 5.0)
    out = tmp_path / 'out.urdf'
    code = main(['identify', bag, '--urdf', PANDA, '--out', str(out),
                 '--params-out', str(tmp_path / 'p.yaml')])
    assert code == 2
    assert message in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ['bag']


def storage_file(bag):
    """Return the one storage file of a rosbag2 folder (what a user may name instead)."""
    files = [f for f in os.listdir(bag) if f != 'metadata.yaml']
    assert len(files) == 1
    return os.path.join(bag, files[0])


@pytest.mark.parametrize('how', ['twice', 'folder and its file', 'validated on'])
def test_a_recording_named_twice_or_validated_on_exits_2_and_writes_nothing(bags, tmp_path,
                                                                            capsys, how):
    """A training copy would not be held out, nor a validation on training data."""
    bag = bags['train']
    words = {'twice': [bag, bag], 'folder and its file': [bag, storage_file(bag)],
             'validated on': [bag, '--validate', storage_file(bag)]}[how]
    code = main(['identify', *words, '--urdf', PANDA, '--out', str(tmp_path / 'out.urdf'),
                 '--params-out', str(tmp_path / 'p.yaml')])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert ('the fit does not see' if how == 'validated on' else 'is given twice') in err
    assert os.listdir(tmp_path) == []


def test_a_validation_recording_too_short_exits_2_and_writes_nothing(bags, tmp_path, capsys):
    """Five samples validate nothing: one clear line instead of a verdict on them."""
    short = record(tmp_path / 'short', FourierTrajectory.from_yaml(EXCITATION), duration=0.05)
    out = tmp_path / 'out.urdf'
    code = main(['identify', bags['train'], '--urdf', PANDA, '--out', str(out),
                 '--validate', short])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert 'validation needs at least 50' in err
    assert sorted(os.listdir(tmp_path)) == ['short']


@pytest.mark.parametrize('prior', ['0', '-1'])
def test_a_prior_weight_that_is_not_positive_exits_2_and_writes_nothing(bags, tmp_path,
                                                                        capsys, prior):
    """The consistent fit needs the pull toward the nominal (--prior > 0): one clear line."""
    out = tmp_path / 'out.urdf'
    code = main(['identify', bags['train'], '--urdf', PANDA, '--out', str(out),
                 '--prior', prior])
    assert code == 2
    assert f'--prior {float(prior)}: give a positive weight' in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_params_out_reaches_a_namespaced_node(bags, tmp_path, capsys):
    """PARAMS.yaml sits under /** : a node started in namespace /left with it gets every value.

    (Written under ``rnea:`` it matched only a node named /rnea, and a namespaced node silently
    ran without the identified friction.)
    """
    rclpy = pytest.importorskip('rclpy')
    from rnea_ros.node.rnea_node import RneaNode
    from rnea_ros.node.runtime import load_model
    params = tmp_path / 'p.yaml'
    assert main(['identify', bags['train'], '--urdf', PANDA, '--out', str(tmp_path / 'id.urdf'),
                 '--params-out', str(params), '--json']) == 0
    summary = json.loads(capsys.readouterr().out)
    (values,) = [v['ros__parameters'] for v in yaml.safe_load(params.read_text()).values()]
    assert 'effort_offset' in values and values['friction_law'] in ('linear', 'tanh')
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=['--ros-args', '--params-file', str(params), '-r',
                                  '__ns:=/left'], domain_id=ros_domains.pick())
    try:
        node = RneaNode(context=ctx)
        assert node.get_namespace() == '/left'
        assert {name: node._cfg[name] for name in values} == values
        model = load_model('file', PANDA, dict(node._cfg, urdf_file=PANDA))
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)
    j = model.joint_names.index('panda_joint3')
    row = summary['joints']['panda_joint3']
    assert model.friction_table[j].tolist() == pytest.approx(
        [row['Fv'], row['Fv-'], row['Fs'], row['Fs-'], row['Fx'], row['offset']], abs=1e-6)
    assert model.armature[j] == pytest.approx(row['Ia'], abs=1e-9)
