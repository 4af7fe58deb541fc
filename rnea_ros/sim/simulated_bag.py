"""Simulated recordings for the analysis: a MuJoCo robot with a hidden payload and friction.

The "real" robot is the URDF plus a payload link (:func:`rnea_ros.payload.payload_urdf`) in
MuJoCo, with joint friction ``Fv qd + Fs sign(qd)`` (the core's friction law, sign linear inside
|qd| < 0.01 rad/s) applied as a passive effort every step.  It is driven by computed torque on
the nominal rnea model (no payload, no friction) tracking sinusoids, and the recording holds what
a robot driver reports: joint positions, velocities and the motor efforts commanded (which
include what the friction and the payload take).

``python -m rnea_ros.sim.simulated_bag OUT.bag`` writes such a bag for the UR5 (README example).
"""

import argparse
import os

import mujoco
import numpy as np

from rnea_ros.core.dynamics import inverse_dynamics
from rnea_ros.core.payload import model_with_payload, Payload, payload_urdf
from rnea_ros.core.urdf import read_urdf_file
from rnea_ros.sim.mujoco_model import build_mujoco_model, joint_addresses
from rnea_ros.sim.urdf_tools import example_robot_data_dir

UR5 = os.path.join(example_robot_data_dir(), 'ur_description', 'urdf', 'ur5_robot.urdf')
UR5_HOME = np.array([0.0, -1.2, 1.4, -1.5, -1.5, 0.0])


def sinusoids(t, home, amplitude=0.6, seed=3):
    """Return (q, qd, qdd) of a sum of two sinusoids per joint around ``home`` at time t."""
    n = home.size
    rng = np.random.default_rng(seed)
    freqs = rng.uniform(0.3, 0.9, (2, n))
    phase = rng.uniform(0.0, 2.0 * np.pi, (2, n))
    amp = amplitude * np.array([0.7, 0.3])[:, None] * np.ones((2, n))
    w = 2.0 * np.pi * freqs
    arg = w * t + phase
    q = home + np.sum(amp * (np.sin(arg) - np.sin(phase)), axis=0)
    qd = np.sum(amp * w * np.cos(arg), axis=0)
    qdd = -np.sum(amp * w ** 2 * np.sin(arg), axis=0)
    return q, qd, qdd


def simulate(urdf_xml, payload, viscous, coulomb, duration=3.0, period=0.001, home=None,
             kp=400.0, kd=40.0, band=0.01, substeps=5):
    """Run the hidden-payload robot; return (t, joint_names, Q, QD, efforts) per control period.

    ``viscous`` / ``coulomb`` are per-joint arrays in the model's joint order.  The controller
    runs every ``period`` s (the effort is held), the physics ``substeps`` times as often with
    the friction updated every physics step: the steep friction law inside the Coulomb band
    would make a 1 kHz explicit step oscillate on light links.
    """
    nominal = model_with_payload(urdf_xml)
    names = list(nominal.joint_names)
    mj = build_mujoco_model(payload_urdf(urdf_xml, payload) if payload else urdf_xml,
                            timestep=period / substeps)
    data = mujoco.MjData(mj)
    qpos, dof = joint_addresses(mj, names)
    home = np.zeros(len(names)) if home is None else np.asarray(home, dtype=float)
    q0, qd0, _ = sinusoids(0.0, home)
    data.qpos[qpos], data.qvel[dof] = q0, qd0
    mujoco.mj_forward(mj, data)
    steps = int(round(duration / period))
    out = np.zeros((3, steps, len(names)))
    times = np.arange(steps) * period
    for k in range(steps):
        q, qd = data.qpos[qpos].copy(), data.qvel[dof].copy()
        q_ref, qd_ref, qdd_ref = sinusoids(times[k], home)
        u = inverse_dynamics(nominal, q, qd, qdd_ref + kp * (q_ref - q) + kd * (qd_ref - qd))
        out[0, k], out[1, k], out[2, k] = q, qd, u
        for _ in range(substeps):
            v = data.qvel[dof]
            data.qfrc_applied[:] = 0.0
            data.qfrc_applied[dof] = u - viscous * v - coulomb * np.clip(v / band, -1.0, 1.0)
            mujoco.mj_step(mj, data)
    return times, names, out[0], out[1], out[2]


def main(argv=None):
    """Write a simulated UR5 bag with a hidden 1.5 kg payload and friction."""
    from rnea_ros.analysis.recordings import write_joint_states
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument('bag', help='output rosbag2 folder (must not exist)')
    parser.add_argument('--storage', choices=('mcap', 'sqlite3'), default='mcap')
    parser.add_argument('--duration', type=float, default=6.0)
    args = parser.parse_args(argv)
    xml = read_urdf_file(UR5)
    payload, fv, fs = hidden_truth()
    t, names, Q, QD, E = simulate(xml, payload, fv, fs, duration=args.duration, home=UR5_HOME)
    write_joint_states(args.bag, t, names, Q, QD, E, storage=args.storage)
    print(f'wrote {args.bag}: {t.size} joint states; hidden payload {payload.describe()}; '
          f'Fv {fv.tolist()}; Fs {fs.tolist()}')
    return 0


def hidden_truth():
    """Return the hidden (Payload, viscous, coulomb) of the UR5 example."""
    payload = Payload('wrist_3_link', 1.5, (0.0, 0.08, 0.0),
                      np.diag([2e-4, 2e-4, 2e-4]))
    viscous = np.array([2.0, 3.0, 1.5, 0.5, 0.4, 0.3])
    coulomb = np.array([1.5, 2.0, 1.0, 0.4, 0.3, 0.2])
    return payload, viscous, coulomb


if __name__ == '__main__':
    raise SystemExit(main())
