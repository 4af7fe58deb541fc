"""Test helpers: a "true" robot = nominal URDF perturbed, and data generated from it."""

from dataclasses import dataclass
import os

import numpy as np

from rnea_ros.core.dynamics import coulomb_sign, inverse_dynamics_batch
from rnea_ros.core.model import RobotModel
from rnea_ros.core.urdf import parse_urdf
from robots import urdf_path

ARM = [f'panda_joint{i}' for i in range(1, 8)]


def perturbed_specs(robot, seed):
    """Return (links, joints, friction options) of a perturbed robot.

    Masses +-20 %, COM +-2 cm, inertias +-30 % (physically consistent), random friction and
    rotor inertia on the arm joints.
    """
    with open(urdf_path(robot), encoding='utf-8') as f:
        _, links, joints = parse_urdf(f.read())
    rng = np.random.default_rng(seed)
    for link in links:
        if link.mass > 0:
            link.mass *= rng.uniform(0.8, 1.2)
            link.com = tuple(np.asarray(link.com) + rng.uniform(-0.02, 0.02, 3))
            # Perturb the second moments Sigma = tr(I)/2 1 - I (PSD exactly when the triangle
            # inequalities hold) by a congruence: the truth stays physically consistent.
            d = np.sqrt(rng.uniform(0.7, 1.3, 3))
            sigma = 0.5 * np.trace(link.inertia) * np.eye(3) - link.inertia
            sigma = d[:, None] * sigma * d[None, :]
            link.inertia = np.trace(sigma) * np.eye(3) - sigma
    moving = [j.name for j in joints if j.type != 'fixed'][:7]
    options = {'friction_viscous': {j: rng.uniform(0.1, 1.0) for j in moving},
               'friction_coulomb': {j: rng.uniform(0.1, 1.0) for j in moving},
               'armature': {j: rng.uniform(0.0, 0.2) for j in moving}}
    return links, joints, options


def truth_model(robot, seed):
    """Return the perturbed "true" RobotModel (friction and armature included)."""
    links, joints, options = perturbed_specs(robot, seed)
    return RobotModel.from_specs(links, joints, **options)


def states_along(model, traj, t, hold=0.02):
    """Return (Q, QD, QDD) of the model following an excitation (other joints at ``hold``)."""
    q, qd, qdd = traj.evaluate(np.asarray(t) % traj.duration)
    n = len(t)
    Q = np.full((n, model.nq), hold)
    QD, QDD = np.zeros((n, model.nv)), np.zeros((n, model.nv))
    index = [model.joint_names.index(j) for j in traj.joints]
    Q[:, index], QD[:, index], QDD[:, index] = q, qd, qdd
    return Q, QD, QDD


def measured(truth, Q, QD, QDD, noise, rng):
    """Return the truth's efforts plus Gaussian noise (standard deviation ``noise``)."""
    E = inverse_dynamics_batch(truth, Q, QD, QDD)
    return E + rng.normal(0.0, noise, E.shape)


# -- simulated recordings with the properties of real ones (issue 21) ---------------------------

XARM7 = 'xarm_description/urdf/xarm7.urdf'
EXCITATION_PANDA = os.path.join(os.path.dirname(__file__), '..', 'config',
                                'excitation_panda.yaml')
FRICTION_LAWS = ('coulomb', 'asymmetric', 'stribeck', 'sigmoid')
GRIPPERS = {'panda': ('panda_finger_joint1', 'panda_finger_joint2')}


def friction_truth(law, joints, rng):
    """Return {joint: {parameter: value}} of a friction law for the named joints (random).

    Laws (qd in rad/s, efforts in N m; every law is what the truth adds to the rigid body):

    - ``coulomb``: ``Fv qd + Fs s(qd)``, s the core's :func:`coulomb_sign` (band 0.01 rad/s);
    - ``asymmetric``: the same with (Fv_pos, Fs_pos) for qd > 0 and (Fv_neg, Fs_neg) below;
    - ``stribeck``: ``(Fc + (Fs - Fc) exp(-(qd / vs)^2)) tanh(qd / eps) + Fv qd``;
    - ``sigmoid``: Gaz et al. 2019 (Franka Panda): ``phi1 / (1 + exp(-phi2 (qd + phi3)))
      - phi1 / (1 + exp(-phi2 phi3)) + Fv qd`` (smooth and asymmetric).
    """
    if law not in FRICTION_LAWS:
        raise ValueError(f'friction law {law!r}: one of {FRICTION_LAWS}')
    out = {}
    for j in joints:
        fv, fs = rng.uniform(0.1, 1.0), rng.uniform(0.1, 1.0)
        if law == 'coulomb':
            out[j] = {'Fv': fv, 'Fs': fs}
        elif law == 'asymmetric':
            out[j] = {'Fv_pos': fv, 'Fs_pos': fs, 'Fv_neg': fv * rng.uniform(0.6, 1.4),
                      'Fs_neg': fs * rng.uniform(0.6, 1.4)}
        elif law == 'stribeck':
            out[j] = {'Fc': fs, 'Fs': fs * rng.uniform(1.2, 1.8), 'vs': rng.uniform(0.02, 0.1),
                      'eps': 0.01, 'Fv': fv}
        else:
            out[j] = {'phi1': 2.0 * fs, 'phi2': rng.uniform(20.0, 80.0),
                      'phi3': rng.uniform(-0.05, 0.05), 'Fv': fv}
    return out


def friction_effort(law, params, qd):
    """Return the friction effort of one joint (law and parameters of :func:`friction_truth`)."""
    p = params
    if law == 'coulomb':
        return p['Fv'] * qd + p['Fs'] * coulomb_sign(qd, 0.01)
    if law == 'asymmetric':
        pos = qd > 0
        fv = np.where(pos, p['Fv_pos'], p['Fv_neg'])
        fs = np.where(pos, p['Fs_pos'], p['Fs_neg'])
        return fv * qd + fs * coulomb_sign(qd, 0.01)
    if law == 'stribeck':
        return ((p['Fc'] + (p['Fs'] - p['Fc']) * np.exp(-(qd / p['vs']) ** 2))
                * np.tanh(qd / p['eps']) + p['Fv'] * qd)
    return (p['phi1'] / (1.0 + np.exp(-p['phi2'] * (qd + p['phi3'])))
            - p['phi1'] / (1.0 + np.exp(-p['phi2'] * p['phi3'])) + p['Fv'] * qd)


def random_excitation(model, joints, seed, duration=30.0, harmonics=5, margin=0.8, speed=0.6):
    """Return a random Fourier excitation of the joints, scaled into their limits (no design)."""
    from rnea_ros.analysis.excitation import _coefficients, FourierTrajectory
    index = [model.joint_names.index(j) for j in joints]
    rng = np.random.default_rng(1000 + seed)
    f = max(1, round(duration / 10.0)) / duration
    a, b = _coefficients(rng.normal(0.0, 1.0, 2 * len(index) * (harmonics - 1)), len(index),
                         harmonics)
    lo, hi = model.lower_limits[index], model.upper_limits[index]
    finite = np.isfinite(lo) & np.isfinite(hi)
    q0 = np.where(finite, 0.5 * (lo + hi), 0.0)
    half = np.where(finite, 0.5 * (hi - lo), np.pi) * margin
    vlim = model.velocity_limits[index]
    vmax = np.where(np.isfinite(vlim) & (vlim > 0), vlim, 2.0) * speed
    traj = FourierTrajectory(joints, f, 1.0 / f, q0, a, b)
    q, qd, _ = traj.evaluate(np.linspace(0.0, 1.0 / f, 4000))
    s = np.minimum(half / np.abs(q - q0).max(axis=0), vmax / np.abs(qd).max(axis=0))
    return FourierTrajectory(joints, f, duration, q0, a * s[:, None], b * s[:, None])


def irregular_stamps(duration, rate, rng, jitter=(0.7e-3, 8.8e-3), start=100.0):
    """Return logger stamps about ``1/rate`` apart: jittered, with rare gaps up to jitter[1].

    Most intervals are uniform in [jitter[0], 2/rate - jitter[0]] (mean 1/rate); 1 % are gaps
    up to ``jitter[1]`` (messages lost).  ``jitter=None``: a regular grid.
    """
    period = 1.0 / rate
    n = int(duration * rate * 1.1) + 10
    if jitter is None:
        dt = np.full(n, period)
    else:
        low = min(jitter[0], period)
        dt = rng.uniform(low, 2.0 * period - low, n)
        gaps = rng.random(n) < 0.01
        dt[gaps] = rng.uniform(2.0 * period, max(jitter[1], 2.0 * period), int(gaps.sum()))
    t = np.concatenate([[0.0], np.cumsum(dt)])
    return start + t[t < duration]


@dataclass
class Recording:
    """A simulated recording as a logger writes it, and the truth behind it.

    ``t, names, Q, QD, E``: the logged rows (irregular stamps, duplicate rows, noise, offsets;
    ``names`` are the recorded joints only, Q/QD/E columns in that order).  ``truth``: the
    rigid body and rotor inertia of the true robot (no friction; RobotModel); ``law`` and
    ``friction``: its friction (:func:`friction_truth`); ``offsets``: constant effort offsets
    per recorded joint; ``held``: unrecorded joints and the position the truth holds them at;
    ``clean``: (t, Q, QD, QDD) of the true motion at the logged stamps in the truth's model
    order (all joints); ``duplicate``: the rows that repeat the previous row's state.
    """

    robot: str
    urdf: str
    t: np.ndarray
    names: list
    Q: np.ndarray
    QD: np.ndarray
    E: np.ndarray
    truth: object
    law: str
    friction: dict
    offsets: dict
    held: dict
    clean: tuple
    duplicate: np.ndarray
    traj: object = None

    def truth_efforts(self, Q, QD, QDD, offsets=True):
        """Return the true efforts (N, nv) in model order: rigid body, rotor, friction, offset."""
        E = inverse_dynamics_batch(self.truth, Q, QD, QDD)
        for j, p in self.friction.items():
            k = self.truth.joint_names.index(j)
            E[:, k] += friction_effort(self.law, p, QD[:, k])
            if offsets:
                E[:, k] += self.offsets.get(j, 0.0)
        return E

    def write(self, path, storage='mcap'):
        """Write the logged rows to a new rosbag2 ``path``; return the path."""
        from rnea_ros.analysis.recordings import write_joint_states
        write_joint_states(str(path), self.t, list(self.names), self.Q, self.QD, self.E,
                           storage=storage)
        return str(path)


def realworld_recording(robot='panda', seed=0, duration=30.0, rate=1000.0, traj=None,
                        jitter=(0.7e-3, 8.8e-3), duplicates=0.06, repeated_stamps=0.002,
                        friction='sigmoid', offsets=0.08, unrecorded=None, held=0.0,
                        velocity_noise=0.005, position_noise=2e-6, effort_noise=0.05,
                        start=100.0, noise_seed=None):
    """Return a :class:`Recording` of a perturbed robot with the flaws of real logs.

    - ``robot``: a name of :mod:`robots` (``panda``, ``ur5``) or a path under
      example-robot-data (``XARM7``); the truth is :func:`perturbed_specs` (seed ``seed``)
      without its friction, plus the friction law ``friction`` (:data:`FRICTION_LAWS`);
    - ``traj``: the motion (FourierTrajectory, repeated if shorter than ``duration``; default
      config/excitation_panda.yaml for the panda, else :func:`random_excitation`); joints
      it does not move stay at 0;
    - ``jitter``: stamp spacing, see :func:`irregular_stamps` (None: regular ``rate``);
    - ``duplicates``: fraction of rows that repeat the previous row's state (q, qd, effort)
      under a new stamp; ``repeated_stamps``: fraction of rows whose stamp repeats the
      previous one (with a new state);
    - ``offsets``: constant effort offsets, uniform in +-offsets N m per recorded joint;
    - ``unrecorded``: joints left out of the recording (default: the gripper of the robot, see
      :data:`GRIPPERS`; ``()``: none), held at ``held`` by the truth;
    - noise: Gaussian on positions (rad), velocities (rad/s) and efforts (N m);
      ``noise_seed``: of the noise, stamps and duplicates (default: ``seed``; the truth is that
      of ``seed`` with the same duration and rate, so that a validation log differs in noise).
    """
    from rnea_ros.analysis.excitation import FourierTrajectory
    rng = np.random.default_rng(seed)
    links, joints, options = perturbed_specs(robot, seed)
    truth = RobotModel.from_specs(links, joints, armature=options['armature'])
    names = list(truth.joint_names)
    unrecorded = GRIPPERS.get(robot, ()) if unrecorded is None else tuple(unrecorded)
    unknown = [j for j in unrecorded if j not in names]
    if unknown:
        raise ValueError(f'unrecorded joints {unknown} are not joints of {robot}')
    if traj is None:
        arm = [j for j in names if j not in unrecorded][:7]
        traj = (FourierTrajectory.from_yaml(EXCITATION_PANDA) if robot == 'panda'
                else random_excitation(truth, arm, seed))
    t = irregular_stamps(duration, rate, rng, jitter, start)
    log = rng
    if noise_seed is not None:          # the truth's draws below stay those of ``seed``
        log = np.random.default_rng([noise_seed, seed])
        t = irregular_stamps(duration, rate, log, jitter, start)
    n = t.size
    q, qd, qdd = traj.evaluate((t - start) % traj.duration)
    Q = np.zeros((n, truth.nq))
    QD, QDD = np.zeros((n, truth.nv)), np.zeros((n, truth.nv))
    index = [names.index(j) for j in traj.joints]
    Q[:, index], QD[:, index], QDD[:, index] = q, qd, qdd
    hold = {j: float(held) for j in unrecorded}
    for j, value in hold.items():
        Q[:, names.index(j)] = value
    law = friction
    moving = list(traj.joints)
    recording = Recording(robot=robot, urdf=urdf_path(robot), t=t, names=[], Q=None, QD=None,
                          E=None, truth=truth, law=law,
                          friction=friction_truth(law, moving, rng),
                          offsets={}, held=hold, clean=(t, Q, QD, QDD),
                          duplicate=np.zeros(n, dtype=bool), traj=traj)
    recorded = [j for j in names if j not in unrecorded]
    recording.offsets = {j: float(rng.uniform(-offsets, offsets)) for j in recorded}
    cols = [names.index(j) for j in recorded]
    E = recording.truth_efforts(Q, QD, QDD)[:, cols]
    Qm = Q[:, cols] + log.normal(0.0, position_noise, (n, len(cols)))
    QDm = QD[:, cols] + log.normal(0.0, velocity_noise, (n, len(cols)))
    Em = E + log.normal(0.0, effort_noise, E.shape)
    dup = log.random(n) < duplicates
    dup[0] = False
    for k in np.flatnonzero(dup):           # the logger re-sends the previous row's state
        Qm[k], QDm[k], Em[k] = Qm[k - 1], QDm[k - 1], Em[k - 1]
    same = log.random(n) < repeated_stamps
    same[0] = False
    t_logged = t.copy()
    t_logged[same] = t_logged[np.flatnonzero(same) - 1]
    recording.t, recording.names = t_logged, recorded
    recording.Q, recording.QD, recording.E, recording.duplicate = Qm, QDm, Em, dup
    return recording
