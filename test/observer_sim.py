"""MuJoCo ground truth for the momentum observer: a tracked arm, pushed with xfrc_applied.

The simulated panda (its URDF, no friction, no contacts) tracks a fast sinusoidal trajectory
by computed torque with the rnea model.  Physics runs at 4 kHz (Euler), the
controller and the recording at 1 kHz: each recorded sample k holds (t_k, q_k, qd_k) and the
motor effort applied over the step that ended at t_k, as the simulator node
(:mod:`rnea_ros.sim`) publishes it (the observer's ``effort_sampling='held'``).  A push is a force
on a link through MuJoCo's ``xfrc_applied`` (world frame, at the link's centre of mass); the
true external joint torques J^T F come from MuJoCo's own ``mj_applyFT``, not from rnea_ros.
"""

import os

import mujoco
import numpy as np
from rnea_ros import inverse_dynamics, RobotModel
from rnea_ros.sim.mujoco_model import build_mujoco_model, joint_addresses
from robots import urdf_path

PANDA = urdf_path('panda')
SUBSTEPS = 4
PERIOD = 0.001


def panda_setup(viscous=None):
    """Return (rnea model, MuJoCo model, qpos addresses, dof addresses).

    ``viscous``: viscous friction (N m s/rad) of every arm joint, written into the URDF's
    ``<dynamics damping>`` (the fingers keep the URDF's); MuJoCo's importer and the rnea model
    (``friction_from_urdf``: an identified model has it) then both have it.
    """
    with open(PANDA, encoding='utf-8') as f:
        xml = f.read()
    if viscous is not None:
        xml = xml.replace('damping="0.003"', f'damping="{viscous}"')
    mj = build_mujoco_model(xml, base_dir=os.path.dirname(PANDA), timestep=PERIOD / SUBSTEPS,
                            limits=False, urdf_dynamics=viscous is not None)
    model = RobotModel.from_urdf_string(xml, friction_from_urdf=viscous is not None)
    qpos, dof = joint_addresses(mj, model.joint_names)
    return model, mj, np.asarray(qpos), np.asarray(dof)


def reference(t, q0, amplitude, frequency):
    """Return (q, qd, qdd) of the sinusoidal reference at time t."""
    w = 2.0 * np.pi * frequency
    return (q0 + amplitude * np.sin(w * t), amplitude * w * np.cos(w * t),
            -amplitude * w * w * np.sin(w * t))


def simulate(setup, duration, push=None, amplitude=0.4, frequency=0.5, seed=0):
    """Run the tracked arm; return t, Q, QD, E (efforts), TAU_EXT (true, per joint) arrays.

    ``push``: (link, force (3,) world frame N, start s, end s[, point (3,) in the link frame,
    m, default the link's centre of mass]) or None.  A force at a point is applied through
    ``xfrc_applied`` as that force at the centre of mass plus its moment (p - c) x F.
    """
    model, mj, qpos, dof = setup
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(seed)
    q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8, 0.02, 0.02])
    amp = amplitude * rng.uniform(0.5, 1.0, model.nv)
    amp[7:] = 0.0
    freq = frequency * rng.uniform(0.7, 1.3, model.nv)
    qr, qdr, _ = reference(0.0, q0, amp, freq)
    data.qpos[qpos] = qr
    data.qvel[dof] = qdr
    mujoco.mj_forward(mj, data)
    body = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, push[0]) if push else -1
    steps = int(round(duration / PERIOD))
    n = model.nv
    T, Q, QD, E, TEXT = (np.zeros(steps), np.zeros((steps, model.nq)), np.zeros((steps, n)),
                         np.zeros((steps, n)), np.zeros((steps, n)))
    kp, kd = 400.0, 40.0
    qfrc = np.zeros(mj.nv)
    previous = None
    for k in range(steps):
        t = k * PERIOD
        q, qd = data.qpos[qpos].copy(), data.qvel[dof].copy()
        qr, qdr, qddr = reference(t, q0, amp, freq)
        tau = inverse_dynamics(model, q, qd, qddr + kp * (qr - q) + kd * (qdr - qd))
        data.ctrl[:] = 0.0
        data.qfrc_applied[:] = 0.0
        data.qfrc_applied[dof] = tau
        pushing = push is not None and push[2] <= t < push[3]
        data.xfrc_applied[:] = 0.0
        T[k], Q[k], QD[k], E[k] = t, q, qd, tau if previous is None else previous
        previous = tau
        for _ in range(SUBSTEPS):
            if pushing:
                mujoco.mj_kinematics(mj, data)      # poses of this substep (mj_step's are old)
                mujoco.mj_comPos(mj, data)
                force = np.asarray(push[1], dtype=float)
                point = (data.xipos[body] if len(push) < 5 else
                         data.xpos[body] + data.xmat[body].reshape(3, 3) @ push[4])
                data.xfrc_applied[body, :3] = force
                data.xfrc_applied[body, 3:] = np.cross(point - data.xipos[body], force)
                if not TEXT[k].any():       # the sample's own pose: J^T F by MuJoCo
                    qfrc[:] = 0.0
                    mujoco.mj_applyFT(mj, data, force, np.zeros(3), point, body, qfrc)
                    TEXT[k] = qfrc[dof]
            mujoco.mj_step(mj, data)
    return T, Q, QD, E, TEXT
