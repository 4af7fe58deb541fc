"""Traits of real arms' logs that ``rnea-ros identify`` must handle (issue 28).

Wrapped angles, efforts in other units or sign, friction that follows the sign of the reported
velocity at rest, and the refusal to write a model worse than the nominal URDF.
"""

import json
import math

from identification_data import realworld_recording
import numpy as np
import pytest
from rnea_ros.analysis import identify as identify_cli
from rnea_ros.analysis import signals
from rnea_ros.analysis.cli import main
from rnea_ros.analysis.comparison import (not_worse, parse_effort_scale, REFUSED,
                                          verdict_lines)
from rnea_ros.analysis.identification import describes_rest, friction_models, identify
from rnea_ros.core import friction as fr
from rnea_ros.core.model import RobotModel
from robots import urdf_path


def test_wrapped_angles_are_unwrapped_before_differentiating():
    rec = realworld_recording('panda', seed=3, duration=20.0)
    Q = rec.Q.copy()
    Q[:, 0] = 3.0 * Q[:, 0] + 40.0 * (rec.t - rec.t[0]) / 20.0        # turns several times
    wrapped = np.angle(np.exp(1j * Q[:, 0]))
    W = Q.copy()
    W[:, 0] = wrapped
    QD = rec.QD.copy()
    QD[:, 0] = 3.0 * rec.QD[:, 0] + 2.0
    (_, Qa, _, QDDa, _), report = signals.condition(rec.t, W, QD, rec.E, rec.names, cutoff=3.0)
    (_, Qb, _, QDDb, _), _ = signals.condition(rec.t, Q, QD, rec.E, rec.names, cutoff=3.0)
    assert report.unwrapped[0] >= 5 and not np.any(report.unwrapped[1:])
    np.testing.assert_allclose(QDDa, QDDb, atol=1e-9)
    np.testing.assert_allclose(np.sin(Qa[:, 0]), np.sin(Qb[:, 0]), atol=1e-9)


def test_effort_scale_takes_one_factor_or_joint_factors():
    model = RobotModel.from_urdf_file(urdf_path('panda'))
    names = model.joint_names
    assert parse_effort_scale(None, model) == {}
    assert parse_effort_scale(['-1'], model) == dict.fromkeys(names, -1.0)
    both = parse_effort_scale([f'{names[1]}=2.5', '0.5'], model)
    assert both[names[1]] == 2.5 and both[names[0]] == 0.5
    for bad, message in ((['x=1'], "'x' is not a joint"), (['abc'], 'not a number'),
                         ([f'{names[0]}=0'], 'not 0'), (['nan'], 'finite')):
        with pytest.raises(ValueError, match=message):
            parse_effort_scale(bad, model)


def test_the_sign_law_is_the_linear_law_with_a_band_below_any_reported_speed():
    """One definition: the node's linear law with coulomb_band SIGN_BAND is sign(qd)."""
    sign = list(friction_models(RobotModel.from_urdf_file(urdf_path('panda')), 'sign'))
    assert len(sign) == 1 and sign[0].law in fr.LAWS and describes_rest(sign[0])
    qd = np.array([-0.5, -1e-3, -2e-6, 0.0, 2e-6, 1e-4, 0.3])
    np.testing.assert_array_equal(fr.smooth_sign(qd, sign[0].scale, sign[0].law), np.sign(qd))
    assert not describes_rest(friction_models(
        RobotModel.from_urdf_file(urdf_path('panda')), 'coulomb')[0])


def test_friction_that_follows_the_reported_sign_at_rest_is_chosen_and_predicts_rest():
    """100 Hz, point-to-point with rests; Coulomb friction follows sign(reported qd)."""
    model = RobotModel.from_urdf_file(urdf_path('panda'))
    rng = np.random.default_rng(4)
    t = np.arange(0.0, 60.0, 0.01)
    n = model.nv
    phase = np.clip((t % 6.0) / 4.0, 0.0, 1.0)                 # 4 s moves, 2 s rests
    step = np.floor(t / 6.0)
    amplitude = rng.uniform(0.3, 0.8, n) * np.where(np.arange(n) < 7, 1.0, 0.0)
    s = phase - np.sin(2 * math.pi * phase) / (2 * math.pi)
    ds = (1 - np.cos(2 * math.pi * phase)) / 4.0 * (phase < 1.0)
    dds = math.pi * np.sin(2 * math.pi * phase) / 8.0 * (phase < 1.0)
    direction = np.where(step % 2 == 0, 1.0, -1.0)[:, None]
    Q = direction * amplitude * (s[:, None] - 0.5)
    QD = direction * amplitude * ds[:, None]
    QDD = direction * amplitude * dds[:, None]
    QD_reported = QD + rng.normal(0.0, 2e-3, QD.shape) * (np.abs(QD) < 1e-2)
    from rnea_ros.core.dynamics import inverse_dynamics_batch
    coulomb = np.where(np.arange(n) < 7, 0.8, 0.0)
    E = (inverse_dynamics_batch(model, Q, QD, QDD) + coulomb * np.sign(QD_reported)
         + 0.1 * QD + rng.normal(0.0, 0.02, QD.shape))
    result = identify(model, Q, QD_reported, QDD, E)
    assert result.friction_model.name == 'sign', [
        (r['name'], r['score']) for r in result.selection]
    rest = np.all(np.abs(QD) < 1e-2, axis=1)
    from rnea_ros.analysis.identification import predict
    err = predict(model, result, Q, QD_reported, QDD)[rest, :7] - E[rest, :7]
    assert np.sqrt(np.mean(err ** 2, axis=0)).max() < 0.1


def test_a_resting_finger_gets_the_sign_law_while_the_moving_arm_keeps_its_band():
    """Arm joints move all the time, fingers rest most of it: each joint gets its own band.

    The arm's Coulomb friction ramps inside 0.01 rad/s (reported speed noisy there); the
    fingers' follows sign(reported qd) at rest, as in the demo's shipped excitation.
    """
    model = RobotModel.from_urdf_file(urdf_path('panda'))
    rng = np.random.default_rng(11)
    t = np.arange(0.0, 60.0, 0.01)
    n = model.nv
    Q, QD, QDD = np.zeros((t.size, n)), np.zeros((t.size, n)), np.zeros((t.size, n))
    for j in range(7):                                       # multi-sine, never at rest long
        for k, f in enumerate((0.11, 0.23, 0.37)):
            a, w, p = 0.4 / (k + 1), 2 * math.pi * (f + 0.013 * j), rng.uniform(0, 2 * math.pi)
            Q[:, j] += a * np.sin(w * t + p)
            QD[:, j] += a * w * np.cos(w * t + p)
            QDD[:, j] -= a * w * w * np.sin(w * t + p)
    phase = np.clip((t % 5.0) / 0.8, 0.0, 1.0)               # 0.8 s moves, 4.2 s rests
    s = phase - np.sin(2 * math.pi * phase) / (2 * math.pi)
    ds = (1 - np.cos(2 * math.pi * phase)) / 0.8 * (phase < 1.0)
    dds = 2 * math.pi * np.sin(2 * math.pi * phase) / 0.64 * (phase < 1.0)
    direction = np.where(np.floor(t / 5.0) % 2 == 0, 1.0, -1.0)
    for j in (7, 8):
        Q[:, j] = 0.02 + 0.03 * direction * (s - 0.5)
        QD[:, j], QDD[:, j] = 0.03 * direction * ds, 0.03 * direction * dds
    reported = QD + rng.normal(0.0, 2e-3, QD.shape) * (np.abs(QD) < 1e-2)
    from rnea_ros.core.dynamics import inverse_dynamics_batch
    coulomb = np.where(np.arange(n) < 7, 0.8, 2.0)
    law = np.where(np.arange(n) < 7, 0.01, 1e-6)
    E = (inverse_dynamics_batch(model, Q, QD, QDD)
         + coulomb * fr.smooth_sign(np.where(np.arange(n) < 7, QD, reported), law, 'linear')
         + 0.1 * QD + rng.normal(0.0, 0.02, QD.shape))
    result = identify(model, Q, reported, QDD, E)
    fm = result.friction_model
    assert fm.name == 'coulomb or sign per joint', [(r['name'], r['score'])
                                                    for r in result.selection]
    np.testing.assert_array_equal(fm.scales()[0], law)
    rest = np.abs(QD[:, 7]) < 1e-2
    from rnea_ros.analysis.identification import predict
    err = predict(model, result, Q, reported, QDD)[rest][:, 7:] - E[rest][:, 7:]
    assert np.sqrt(np.mean(err ** 2, axis=0)).max() < 0.1


@pytest.fixture(scope='module')
def flipped(tmp_path_factory):
    """Return a real-looking log whose efforts have the opposite sign to the URDF's."""
    rec = realworld_recording('panda', seed=2, duration=20.0)
    rec.E = -rec.E
    return rec, rec.write(tmp_path_factory.mktemp('flipped') / 'bag')


def test_an_opposite_effort_sign_is_named_with_the_option_that_fixes_it(
        flipped, tmp_path, capsys):
    rec, bag = flipped
    main(['identify', bag, '--urdf', rec.urdf, '--out', str(tmp_path / 'a.urdf'), '--json',
          '--force'])
    summary = json.loads(capsys.readouterr().out)
    assert any('--effort-scale -1' in w for w in summary['warnings']), summary['warnings']
    code = main(['identify', bag, '--urdf', rec.urdf, '--out', str(tmp_path / 'b.urdf'),
                 '--json', '--effort-scale', '-1'])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and not any('--effort-scale' in w for w in summary['warnings'])
    assert set(summary['effort_scale'].values()) == {-1.0}
    assert not summary['comparison']['worse']


def test_a_model_worse_than_the_nominal_is_refused_unless_forced(flipped, tmp_path, capsys,
                                                                 monkeypatch):
    rec, bag = flipped
    worse = {'data': 'held-out', 'joints': {'panda_joint1': {'nominal': 1.0, 'identified': 2.0}},
             'worse': {'panda_joint1': {'nominal': 1.0, 'identified': 2.0, 'ratio': 2.0}},
             'tolerance': 1e-3}
    monkeypatch.setattr(identify_cli, 'not_worse', lambda summary: worse)
    out, params = tmp_path / 'id.urdf', tmp_path / 'p.yaml'
    args = ['identify', bag, '--urdf', rec.urdf, '--out', str(out), '--params-out', str(params),
            '--effort-scale', '-1']
    assert main(args) == REFUSED
    err = capsys.readouterr().err
    assert 'panda_joint1 2 against 1 N m (2 x)' in err and 'nothing written' in err
    assert not out.exists() and not params.exists()
    assert main(args + ['--force']) == 0
    assert 'written because of --force' in capsys.readouterr().err
    assert out.exists() and params.exists()


def test_the_comparison_names_joints_worse_than_the_nominal():
    summary = {'residual_rms': {'validation': {
        'a': {'nominal': 1.0, 'identified': 0.5}, 'b': {'nominal': 1.0, 'identified': 1.01},
        'c': {'nominal': 1.0, 'identified': 1.0005}}}}
    verdict = not_worse(summary)
    assert list(verdict['worse']) == ['b'] and verdict['worse']['b']['ratio'] == 1.01


@pytest.mark.parametrize('data, named', [
    ('recordings left out in turn', 'each left out in turn'),
    ('each fifth of the bins in turn', 'pieces of one motion')])
def test_the_comparison_says_whether_it_saw_other_recordings_or_stretches_of_one(data, named):
    """Stretches of one recording are not another motion: the verdict names its data."""
    held = {'data': data, 'nominal': {'a': 1.0}, 'identified': {'a': 0.5}}
    verdict = not_worse({'residual_rms': {}, 'held_out': held})
    assert named in verdict['data'] and not verdict['worse']
    assert named in verdict_lines(verdict, False)[0]
