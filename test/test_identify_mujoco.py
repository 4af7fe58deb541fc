"""Identification from MuJoCo data: a perturbed panda simulated, identified from the nominal."""

import os

from identification_data import ARM, perturbed_specs
import numpy as np
import pytest

from rnea_ros.analysis.analyze import smoothed_derivative
from rnea_ros.analysis.excitation import FourierTrajectory
from rnea_ros.analysis.identification import identify, predict
from rnea_ros.analysis.output import identified_urdf
from rnea_ros.core.dynamics import inverse_dynamics
from rnea_ros.core.model import RobotModel
from rnea_ros.core.regressor import inertial_parameters
from robots import urdf_path

mujoco = pytest.importorskip('mujoco')
EXCITATION = os.path.join(os.path.dirname(__file__), '..', 'config', 'excitation_panda.yaml')


def simulate(mj, nominal, traj, viscous, coulomb, duration, period=0.001, substeps=5):
    """Run computed torque (nominal model) along traj in MuJoCo; return (t, Q, QD, efforts)."""
    from rnea_ros.sim.mujoco_model import joint_addresses
    data = mujoco.MjData(mj)
    qpos, dof = joint_addresses(mj, list(nominal.joint_names))
    arm = [nominal.joint_names.index(j) for j in traj.joints]
    hold = np.full(nominal.njoints, 0.02)

    def reference(t):
        q, qd, qdd = hold.copy(), np.zeros(nominal.nv), np.zeros(nominal.nv)
        q[arm], qd[arm], qdd[arm] = traj.evaluate(t)
        return q, qd, qdd

    data.qpos[qpos] = reference(0.0)[0]
    mujoco.mj_forward(mj, data)
    steps = int(round(duration / period))
    out = np.zeros((3, steps, nominal.nv))
    for k in range(steps):
        q, qd = data.qpos[qpos].copy(), data.qvel[dof].copy()
        q_ref, qd_ref, qdd_ref = reference(k * period)
        u = inverse_dynamics(nominal, q, qd, qdd_ref + 400.0 * (q_ref - q) + 40.0 * (qd_ref - qd))
        out[:, k] = q, qd, u
        for _ in range(substeps):
            v = data.qvel[dof]
            data.qfrc_applied[:] = 0.0
            data.qfrc_applied[dof] = u - viscous * v - coulomb * np.clip(v / 0.01, -1.0, 1.0)
            mujoco.mj_step(mj, data)
    return np.arange(steps) * period, out[0], out[1], out[2]


def test_identification_from_mujoco_data_predicts_the_simulated_efforts():
    from rnea_ros.sim.mujoco_model import build_mujoco_model, joint_addresses
    path = urdf_path('panda')
    with open(path, encoding='utf-8') as f:
        xml = f.read()
    nominal = RobotModel.from_urdf_file(path)
    links, joints, options = perturbed_specs('panda', 11)
    truth = RobotModel.from_specs(links, joints)
    # The simulated robot: the truth's inertias written into the URDF, rotor inertia as MuJoCo
    # armature, friction applied as a passive effort (the core's law).
    zero = np.zeros((nominal.njoints, 4))
    mj = build_mujoco_model(identified_urdf(xml, truth, inertial_parameters(truth), zero),
                            base_dir=os.path.dirname(path), timestep=0.0002)
    _, dof = joint_addresses(mj, list(nominal.joint_names))
    pick = [options[k].get(j, 0.0) for k in ('friction_viscous', 'friction_coulomb', 'armature')
            for j in nominal.joint_names]
    viscous, coulomb, armature = np.array(pick).reshape(3, nominal.njoints)
    mj.dof_armature[dof] = armature
    traj = FourierTrajectory.from_yaml(EXCITATION)
    assert traj.joints == ARM
    t, Q, QD, E = simulate(mj, nominal, traj, viscous, coulomb, traj.duration)
    QDD = smoothed_derivative(t, QD, 21)
    result = identify(nominal, Q, QD, QDD, E)
    val = FourierTrajectory(traj.joints, traj.base_frequency, traj.duration, traj.q0,
                            0.7 * traj.a[:, ::-1], -0.7 * traj.b)
    tv, Qv, QDv, Ev = simulate(mj, nominal, val, viscous, coulomb, 10.0)
    QDDv = smoothed_derivative(tv, QDv, 21)
    inner = slice(50, -50)                        # the derivative's ends are one-sided
    err = np.sqrt(np.mean((predict(nominal, result, Qv, QDv, QDDv) - Ev)[inner]
                          ** 2, axis=0))[:7]
    rms = np.sqrt(np.mean(Ev[inner] ** 2, axis=0))[:7]
    assert np.all(err <= np.maximum(0.03 * rms, 0.1)), (err, rms)
    x_nom = np.concatenate([inertial_parameters(nominal), np.zeros(4 * nominal.njoints)])
    err_nom = np.sqrt(np.mean((predict(nominal, x_nom, Qv, QDv, QDDv) - Ev)[inner] ** 2,
                              axis=0))[:7]
    assert np.any(err_nom > np.maximum(0.03 * rms, 0.1))      # the nominal model does not pass
    assert np.allclose(result.joint_params[:7, 0], viscous[:7], rtol=0.1, atol=0.02)
