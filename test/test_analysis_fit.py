"""rnea-ros analyze's fit: identify's stick-slip rule and bounds; a payload only when supported.

Data: the UR5 in MuJoCo (a stick-slip wrist), or the core's inverse dynamics of a perturbed UR5
(identification_data: masses +-20 %, COM +-2 cm, inertias +-30 %) where the URDF is wrong and
no payload is carried.
"""

from identification_data import truth_model
import numpy as np
import pytest

from rnea_ros.analysis import analyze as analysis
from rnea_ros.core.dynamics import inverse_dynamics, inverse_dynamics_batch
from rnea_ros.core.model import RobotModel
from rnea_ros.core.urdf import read_urdf_file
from rnea_ros.sim import simulated_bag

FV = np.array([1.3, 1.3, 2.0, 0.3, 0.33, 0.256])
FS = np.array([2.0, 0.8, 1.0, 0.4, 0.3, 0.26])
STRIBECK = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.3])


@pytest.fixture(scope='module')
def urdf():
    return read_urdf_file(simulated_bag.UR5)


def stick_slip_run(urdf, duration=8.0, period=0.001, substeps=5):
    """Return (t, names, Q, QD, E): the UR5 tracking slow sinusoids, its wrist 3 sticking.

    Friction in MuJoCo: Fv v + (Fs + Fx exp(-(v / 0.02)^2)) clip(v / 0.01, -1, 1) (a Stribeck
    hump on the last joint); computed torque on the friction-free nominal model: the wrist
    sticks until the tracking error builds the breakaway effort, then slips.
    """
    mujoco = pytest.importorskip('mujoco')
    from rnea_ros.sim.mujoco_model import build_mujoco_model, joint_addresses
    nominal = RobotModel.from_urdf_string(urdf)
    names = list(nominal.joint_names)
    mj = build_mujoco_model(urdf, timestep=period / substeps)
    data = mujoco.MjData(mj)
    qpos, dof = joint_addresses(mj, names)
    amp = np.array([0.5, 0.4, 0.4, 0.5, 0.5, 0.3])
    w = 2 * np.pi * np.array([0.3, 0.25, 0.35, 0.4, 0.45, 0.2])

    def reference(t):
        return (simulated_bag.UR5_HOME + amp * np.sin(w * t), amp * w * np.cos(w * t),
                -amp * w ** 2 * np.sin(w * t))
    data.qpos[qpos], data.qvel[dof] = reference(0.0)[:2]
    mujoco.mj_forward(mj, data)
    steps = int(round(duration / period))
    out = np.zeros((3, steps, 6))
    for k in range(steps):
        q, qd = data.qpos[qpos].copy(), data.qvel[dof].copy()
        q_ref, qd_ref, qdd_ref = reference(k * period)
        u = inverse_dynamics(nominal, q, qd, qdd_ref + 400.0 * (q_ref - q) + 40.0 * (qd_ref - qd))
        out[:, k] = q, qd, u
        for _ in range(substeps):
            v = data.qvel[dof]
            data.qfrc_applied[:] = 0.0
            data.qfrc_applied[dof] = u - FV * v - (FS + STRIBECK * np.exp(-(v / 0.02) ** 2)) \
                * np.clip(v / 0.01, -1.0, 1.0)
            mujoco.mj_step(mj, data)
    return np.arange(steps) * period, names, out[0], out[1], out[2]


def test_stick_slip_wrist_viscous_friction_is_found(urdf):
    """The wrist sticks in a quarter of the samples: Fv within 5 % (all-sample fit: < 0)."""
    t, names, Q, QD, E = stick_slip_run(urdf)
    assert np.mean(np.abs(QD[:, 5]) < 0.01) > 0.15          # it does stick
    result = analysis.analyze(urdf, t, names, Q, QD, E, fit_payload=False)
    np.testing.assert_allclose(result['fit']['viscous'], FV, rtol=0.05)
    np.testing.assert_allclose(result['fit']['coulomb'][:5], FS[:5], rtol=0.05)
    # The fit that used every equation (the earlier analyze) on the same residual:
    R, QDc = result['residual'], result['QD']
    n = R.shape[1]
    eye = np.eye(n)
    A = np.hstack([(QDc[:, :, None] * eye).reshape(-1, n),
                   (np.clip(QDc / 0.01, -1, 1)[:, :, None] * eye).reshape(-1, n)])
    old = np.linalg.lstsq(A, R.reshape(-1), rcond=None)[0][:n]
    assert abs(old[5] - FV[5]) > 0.5 * FV[5]


def test_friction_stays_nonnegative_when_efforts_push_it_below_zero(urdf):
    """Efforts shifted by -3 qd - 2 sign(qd): the bounded fit keeps Fv, Fs >= 0."""
    t, names, Q, QD, E = simulated_bag.simulate(urdf, None, FV, FS, duration=2.0,
                                                home=simulated_bag.UR5_HOME)
    shifted = E - 3.0 * QD - 2.0 * np.sign(QD) - 2.0 * FV * QD
    result = analysis.analyze(urdf, t, names, Q, QD, shifted, fit_payload=False)
    assert np.all(result['fit']['viscous'] >= 0.0) and np.all(result['fit']['coulomb'] >= 0.0)
    assert np.all(result['fit']['viscous'] < 1e-6)


@pytest.mark.parametrize('seed', [1, 3])
def test_a_wrong_urdf_without_payload_is_reported_as_a_model_error(urdf, seed):
    """No payload, inertials off: a payload term takes some mass, the report calls it none."""
    t, names, Q, QD, _ = simulated_bag.simulate(urdf, None, np.zeros(6), np.zeros(6),
                                                duration=3.0, home=simulated_bag.UR5_HOME)
    QDD = analysis.smoothed_derivative(t, QD, 11)
    E = inverse_dynamics_batch(truth_model('ur5', seed), Q, QD, QDD)
    result = analysis.analyze(urdf, t, names, Q, QD, E)
    fit = result['fit']
    assert abs(fit['payload_mass']) > 5 * fit['payload_mass_stderr']    # looks significant
    assert not fit['payload_supported'] and fit['payload_reasons']
    text = analysis.report(result)
    assert 'no payload supported' in text and 'model error' in text
    assert analysis.summary(result)['payload']['supported'] is False


def test_a_real_payload_is_supported_and_reported(urdf):
    payload, fv, fs = simulated_bag.hidden_truth()
    t, names, Q, QD, E = simulated_bag.simulate(urdf, payload, fv, fs, duration=2.0,
                                                home=simulated_bag.UR5_HOME)
    result = analysis.analyze(urdf, t, names, Q, QD, E, payload_link=payload.link,
                              payload_com=payload.com)
    assert result['fit']['payload_supported']
    assert result['fit']['payload_mass'] == pytest.approx(payload.mass, rel=0.02)
    assert f'payload at {payload.link}' in analysis.report(result)
