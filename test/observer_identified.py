"""The demo's "real" MuJoCo arm, a model identified from it, and the observer on that model.

No ROS processes: the same pieces the demo runs as processes, called in-process.

- The robot: the demo's seeded perturbation of the nominal panda URDF
  (:func:`rnea_ros.demo.perturbation.perturb_robot`: inertias, a payload on the last link,
  viscous and Coulomb joint friction as MuJoCo ``damping``/``frictionloss``, rotor inertia as
  ``armature``), simulated at 1 kHz (Euler, joint limits enforced, efforts clamped to the URDF
  limits) as ``mujoco_sim`` does, in lock-step: the command computed from the state at t_k acts
  over the step t_k -> t_k+1, and the record row of t_k+1 holds it (effort sampling 'held').
- The controller: the node's computed torque, tau = ID(q, qd, qdd_ref + kp (q_ref - q) +
  kd (qd_ref - qd)) with kp 400, kd 40, clamped to the effort limits.
- Identification: the excitation run (the shipped ``config/demo_excitation_panda.yaml``, 30 s,
  tracked with the nominal URDF) written as a rosbag2 (:func:`rnea_ros.demo.story.
  record_to_bag`) and identified as ``rnea-ros identify`` does (its load path, then
  :func:`rnea_ros.analysis.identification.identify`); the identified URDF and node parameters
  become the node's model (:func:`rnea_ros.node.params.node_model`).
- Pushes: :class:`rnea_ros.sim.disturbances.Push` (a world force at a point of a link through
  ``xfrc_applied``; ground truth J^T f per step).
- The observer: the library's (:func:`rnea_ros.demo.scenes.observe_offline`, which the demo's
  scene uses too) with the demo's settings (K 200 1/s, efforts 'held', thresholds
  :data:`rnea_ros.demo.scenes.COLLISION_THRESHOLD`, hysteresis 0.2, 5 ms minimum duration).
"""

import os
import tempfile

import numpy as np
from rnea_ros import inverse_dynamics, RobotModel
from rnea_ros.demo import scenes
from rnea_ros.demo.perturbation import perturb_robot
from rnea_ros.sim.disturbances import Disturbances, Push
from rnea_ros.sim.mujoco_model import build_mujoco_model, joint_addresses, Simulation
from rnea_ros.sim.sim_launch import DemoScenario, reference_amplitudes
from rnea_ros.sim.trajectories import ReferenceProfile, TrajectoryFile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXCITATION = os.path.join(ROOT, 'config', 'demo_excitation_panda.yaml')
SEED = 1                    # the demo's default perturbation seed
KP, KD = 400.0, 40.0        # the demo's computed-torque gains
PERIOD = 0.001              # s: physics, joint states and commands at 1 kHz
START_S = 0.1               # s: the start transient (the sinusoid's acceleration steps at t = 0)

# Tracking runs: the demo's push-scene sinusoid (0.5 Hz, 0.4 rad swing from the demo pose),
# and faster / wider variants.  (name, frequency Hz, swing amplitude rad: q swings 2 x it.)
TRACKING = (('demo 0.5 Hz, 0.4 rad', 0.5, 0.2),
            ('1 Hz, 0.4 rad', 1.0, 0.2),
            ('0.5 Hz, 0.8 rad', 0.5, 0.4),
            ('0.8 Hz, 0.8 rad', 0.8, 0.4))

# Pushes on several links (as the demo: world force at a point fixed in the link, m): a
# direction with a lever on some joint at the demo pose.
PUSH_POINTS = {'panda_link1': ((0.08, 0.0, 0.0), (0.0, 1.0, 0.0)),
               'panda_link2': ((0.0, 0.0, 0.08), (1.0, 0.0, 0.0)),
               'panda_link3': ((0.0, 0.0, 0.08), (1.0, 0.0, 0.0)),
               'panda_link4': ((0.0, 0.08, 0.0), (1.0, 0.0, 0.0)),
               'panda_link5': ((0.0, 0.0, 0.08), (0.0, 1.0, 0.0)),
               'panda_link6': ((0.08, 0.0, 0.0), (0.0, 1.0, 0.0)),
               'panda_link7': ((0.0, 0.0, 0.1), (0.0, 1.0, 0.0)),
               'panda_hand': ((0.0, 0.0, 0.05), (0.0, 1.0, 0.0))}


class Arm:
    """The demo's "real" robot in MuJoCo (its truth hidden from the observer's model)."""

    def __init__(self, seed=SEED):
        """Draw the demo's perturbation of the nominal panda and build the MuJoCo model."""
        self.scenario = DemoScenario()
        self.perturbation = perturb_robot(self.scenario.urdf, seed)
        self.joints = list(self.scenario.joint_names)
        self.arm_joints = [name for name in self.joints if 'finger' not in name]
        self.last_link = self.perturbation.payload.link
        armature = dict(zip(self.joints,
                            self.perturbation.joint_values(self.joints, 'armature')))
        self.mj = build_mujoco_model(
            self.perturbation.truth_urdf, base_dir=os.path.dirname(self.scenario.urdf_file),
            timestep=PERIOD, urdf_dynamics=True, armature=armature)
        self.dofs = joint_addresses(self.mj, self.joints)[1]
        self.effort_limits = np.array([joint.effort_limit for joint in self.scenario.joints])
        self.nominal = RobotModel.from_urdf_string(self.scenario.urdf, friction_from_urdf=True)

    def sinusoid(self, frequency, amplitude):
        """Return the demo's sinusoid reference (from its pose) at ``frequency``, ``amplitude``."""
        return ReferenceProfile('sinusoid', self.scenario.pose,
                                amplitude=reference_amplitudes(self.scenario.joints,
                                                               self.scenario.pose, amplitude),
                                frequency=frequency)

    def track(self, model, reference, duration, push=None, initial=None):
        """Track ``reference`` by computed torque with ``model`` for ``duration`` s; a record.

        ``reference(t)`` -> (q, qd, qdd) in :attr:`joints` order; ``push``: a
        :class:`Push` or None; ``initial``: start positions (default the reference at 0).
        Returns the simulator's record (as ``mujoco_sim``'s ``record_file``): ``time``,
        ``position``, ``velocity``, ``effort`` (applied over the step ending at the row's time),
        ``external_torque`` / ``external_force`` / ``external_rotation`` (the push's ground
        truth over that step) and ``joint_names``.
        """
        sim = Simulation(self.mj, self.joints, effort_limits=self.effort_limits)
        sim.set_state(reference(0.0)[0] if initial is None else initial)
        disturbances = Disturbances(self.mj, self.dofs, push)
        order = [self.joints.index(name) for name in model.joint_names]
        back = np.argsort(order)
        steps = int(round(duration / PERIOD))
        n = len(self.joints)
        rows = {'time': np.zeros(steps + 1), 'position': np.zeros((steps + 1, n)),
                'velocity': np.zeros((steps + 1, n)), 'effort': np.zeros((steps + 1, n)),
                'external_torque': np.zeros((steps + 1, n)),
                'external_force': np.zeros((steps + 1, 3)),
                'external_rotation': np.full((steps + 1, 9), np.nan)}
        rows['position'][0], rows['velocity'][0] = sim.positions, sim.velocities
        for k in range(steps):
            t = sim.time
            q, qd = rows['position'][k], rows['velocity'][k]
            q_ref, qd_ref, qdd_ref = reference(t)
            qdd = qdd_ref + KP * (q_ref - q) + KD * (qd_ref - qd)
            tau = inverse_dynamics(model, q[order], qd[order], qdd[order])[back]
            sim.set_command(np.clip(tau, -self.effort_limits, self.effort_limits))
            disturbances.before_step(sim.data, t)
            rows['effort'][k + 1] = sim.step()
            rows['time'][k + 1] = sim.time
            rows['position'][k + 1], rows['velocity'][k + 1] = sim.positions, sim.velocities
            rows['external_torque'][k + 1] = disturbances.external_torque
            rows['external_force'][k + 1] = disturbances.force
            rows['external_rotation'][k + 1] = disturbances.rotation.ravel()
        rows['joint_names'] = list(self.joints)
        return rows

    def excitation(self):
        """Return the record of the demo's excitation run (nominal URDF, 30 s + 1 s at rest)."""
        trajectory = TrajectoryFile(EXCITATION)
        order = [trajectory.joints.index(name) for name in self.joints]

        def reference(t):
            return tuple(x[order] for x in trajectory(t))
        return self.track(self.nominal, reference, trajectory.duration + 1.0)

    def push(self, link, magnitude, start, duration=0.3):
        """Return the :class:`Push` of ``magnitude`` N on ``link`` (:data:`PUSH_POINTS`)."""
        point, direction = PUSH_POINTS[link]
        return Push(link, magnitude * np.asarray(direction), point, start, duration)


def identify_model(arm, record, friction=None):
    """Identify a model from an excitation ``record`` as ``rnea-ros identify`` does.

    The record goes through a rosbag2 (:func:`rnea_ros.demo.story.record_to_bag`) and
    identify's load path (signal conditioning, accelerations); the identified URDF and node
    parameters are turned into the node's model (:func:`rnea_ros.node.params.node_model`).
    Returns (model, identification, node parameters, identified URDF text).
    """
    import yaml
    from rnea_ros.analysis.blas import single_threaded
    from rnea_ros.analysis.identification import identify
    from rnea_ros.analysis.identify import load_recordings
    from rnea_ros.analysis.output import identified_urdf, node_parameters
    from rnea_ros.core.urdf import parse_urdf
    from rnea_ros.demo.story import record_to_bag
    from rnea_ros.node.params import node_config, node_model
    nominal = arm.nominal
    with tempfile.TemporaryDirectory() as folder:
        bag = record_to_bag(record, os.path.join(folder, 'excitation'))
        data = load_recordings([bag], nominal, progress=False).data
    with single_threaded():
        result = identify(nominal, *data, friction=friction or 'auto')
    urdf = identified_urdf(arm.scenario.urdf, nominal, result.phi, result.joint_params)
    params = yaml.safe_load(node_parameters(nominal, result))['/**']['ros__parameters']
    model = node_model(parse_urdf(urdf), dict(node_config(params), floating_base=False))
    return model, result, params, urdf


def observe(record, model, link, window=None, thresholds=scenes.COLLISION_THRESHOLD,
            reversal_thresholds=None, output_filter=0.0):
    """Run the library observer over ``record`` with the demo's settings (an estimate dict).

    ``reversal_thresholds``: thresholds gated by velocity reversals (``thresholds`` then
    apply while a joint moves; the detector's default band and hold); ``output_filter``: the
    observer's low-pass on what it reports (1/s, 0 none).
    """
    return scenes.observe_offline(record, model, link, window=window, thresholds=thresholds,
                                  reversal_thresholds=reversal_thresholds,
                                  output_filter=output_filter)


def quiet_figures(record, estimate, model, judged, thresholds=scenes.COLLISION_THRESHOLD,
                  reversal_thresholds=None):
    """Return false alarms and the largest |r_j| / threshold_j per judged joint (no contact).

    ``false_alarms``: collisions raised; ``false_alarms_after_start``: those raised after
    :data:`START_S`; ``alarm_fraction``: the share of the record spent in collision.
    ``max_ratio``: the largest |r_j| over the threshold of its sample (with
    ``reversal_thresholds``, gated by the joint's reversal windows), ``max_residual`` and
    ``max_time``: |r_j| and the time of that sample; ``max_ratio_moving``: the largest ratio
    outside the joint's reversal windows (all samples when not gated).

    ``judged``: the joint names the residual figures cover (the demo leaves the fingers out).
    """
    from rnea_ros.core.observer import reversal_windows
    names = list(model.joint_names)
    n = len(names)
    th = np.broadcast_to(np.asarray(thresholds, dtype=float), (n,))
    r = np.asarray(estimate['torques'], dtype=float)
    used = np.all(np.isfinite(r), axis=1)
    if reversal_thresholds is None:
        per_sample = np.broadcast_to(th, r.shape)
    else:
        order = [list(record['joint_names']).index(name) for name in names]
        windows = reversal_windows(record['time'], np.asarray(record['velocity'])[:, order])
        per_sample = np.where(windows, np.broadcast_to(reversal_thresholds, (n,)), th)
    ratio = np.abs(r[used]) / per_sample[used]
    at = np.argmax(ratio, axis=0)
    largest = np.abs(r[used])[at, np.arange(n)]
    moving = np.where(windows[used], 0.0, ratio).max(axis=0) \
        if reversal_thresholds is not None else ratio.max(axis=0)
    speed = np.abs(np.asarray(record['velocity'])[used]).max()
    times = np.asarray(estimate['events'], dtype=float)
    return {'false_alarms': len(estimate['events']),
            'false_alarms_after_start': int(np.sum(times > START_S)),
            'alarm_fraction': scenes.alarm_fraction(
                record['time'], times, np.asarray(estimate['clears'], dtype=float),
                (np.inf, np.inf)),
            'alarm_times': list(estimate['events']),
            'alarm_joints': list(estimate['event_joints']),
            'max_residual': {name: float(largest[names.index(name)]) for name in judged},
            'max_ratio': {name: float(ratio[at[names.index(name)], names.index(name)])
                          for name in judged},
            'max_ratio_moving': {name: float(moving[names.index(name)]) for name in judged},
            'max_time': {name: float(np.asarray(estimate['times'])[used][at[names.index(name)]])
                         for name in judged},
            'max_speed': float(speed), 'seconds': float(record['time'][-1])}


def with_sensor_noise(record, seed, velocity=0.0, effort=0.0):
    """Return a copy of ``record`` whose velocities and efforts carry white noise.

    ``velocity`` (rad/s or m/s) and ``effort`` (N m or N): standard deviations per sample, as
    a driver's differentiated encoders and current-based torques bring them; positions stay
    (encoders are precise).  The ground truth (``external_*``) is untouched.
    """
    rng = np.random.default_rng(seed)
    out = dict(record)
    for key, sigma in (('velocity', velocity), ('effort', effort)):
        values = np.asarray(record[key], dtype=float)
        out[key] = values + sigma * rng.standard_normal(values.shape) if sigma else values
    return out


def push_run(arm, model, link, magnitude, frequency=0.5, amplitude=0.2, start=1.5,
             duration=0.3, run_s=2.5, thresholds=scenes.COLLISION_THRESHOLD,
             reversal_thresholds=None, noise=None, output_filter=0.0):
    """Push ``link`` with ``magnitude`` N during tracking with ``model``; the scene's figures.

    The push starts at ``start`` s, the fastest instant of the demo's sinusoid (0.5 Hz: 1.5 s
    is three quarters of its period, as the demo's 5.5 s), for ``duration`` s.  Returns
    :func:`rnea_ros.demo.scenes.push_figures` (arm joints judged, as the demo) plus the
    largest true external torque of the push (``applied_max``, N m).  ``thresholds`` and
    ``reversal_thresholds``: as :func:`observe`; ``noise``: (seed, velocity sigma, effort
    sigma) of :func:`with_sensor_noise` on what the observer reads, or None;
    ``output_filter``: as :func:`observe`.
    """
    push = arm.push(link, magnitude, start, duration)
    scene = scenes.PushScene(link, tuple(push.force), tuple(push.point), start, duration,
                             run_s, frequency)
    record = arm.track(model, arm.sinusoid(frequency, amplitude), run_s, push=push)
    if noise is not None:
        record = with_sensor_noise(record, *noise)
    window = (start, start + duration) if link == arm.last_link else (0.0, -1.0)
    estimate = observe(record, model, link, window=window, thresholds=thresholds,
                       reversal_thresholds=reversal_thresholds, output_filter=output_filter)
    if link != arm.last_link:
        estimate.pop('wrench')
    figures = scenes.push_figures(scene, record, estimate, list(model.joint_names),
                                  arm.arm_joints)
    figures['applied_max'] = float(np.abs(record['external_torque']).max())
    return figures


def effort_residual(record, model):
    """Return the per-joint RMS of measured - predicted efforts of ``model`` on ``record``."""
    from rnea_ros.demo.story import effort_prediction, residual_rms
    _, measured, predicted, _ = effort_prediction(record, model)
    return residual_rms(measured, predicted)


def suggested_thresholds(record, urdf, params, margin=1.5, output_filter=0.0):
    """Return what ``rnea-ros observe`` says on a contact-free ``record`` (its result dict).

    :func:`rnea_ros.analysis.observe.observe` (the command's library call) on the identified
    ``urdf`` with the node parameters ``params`` (the identification's) and the demo's
    observer settings; ``suggested``: the larger of ``margin`` times the largest |r_j| of the
    record (``max``) and the model's Coulomb jump (``jump``), in model order;
    ``suggested_moving`` / ``suggested_reversal``: the thresholds gated by velocity reversals.
    """
    from rnea_ros.analysis.observe import observe as observe_bag
    settings = dict(params, observer_gains=[scenes.OBSERVER_GAIN],
                    observer_effort_sampling='held', observer_filter=float(output_filter))
    result = observe_bag(urdf, record['time'], list(record['joint_names']),
                         record['position'], record['velocity'], record['effort'], settings,
                         margin=margin)
    return result
