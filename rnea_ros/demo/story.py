"""The demo's identification story, without ROS: the real robot, bags, excite and identify.

- :func:`prepare_robot`: the simulated "real" robot, a seeded perturbation of the nominal URDF
  (:mod:`rnea_ros.demo.perturbation`), written to ``robot/truth.urdf``, with the simulator
  parameters that give it its friction, rotor inertia and joint limits;
- :func:`excitation_trajectory`: ``rnea-ros excite`` (subprocess) designs the excitation;
- :func:`record_to_bag`: a simulator record as a rosbag2 (mcap) of /joint_states;
- :func:`identify`: ``rnea-ros identify`` (subprocess) on the bags, returning the identified URDF
  and the rnea node's friction parameters;
- :func:`effort_prediction`: predicted vs measured efforts of a model on a record.
"""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
from rnea_ros.demo.perturbation import perturb_robot

CLI = 'rnea_ros.analysis.cli'
# Harmonics of the designed excitation (base frequency 0.1 Hz for 30 s: up to 1 Hz).  With
# excite's default of 5 (up to 0.5 Hz) the panda's fingers, 4 cm of travel, never move faster
# than 0.057 m/s, so identify (stick band 0.05 m/s) leaves them out; with 10 they do for 23 to
# 32 % of the run, and the base regressor's condition number falls from 3396 to 1512.
EXCITATION_HARMONICS = 10


class StoryFailed(RuntimeError):
    """A step of the identification story failed; the message says which and where to look."""


def prepare_robot(folder, scenario, seed):
    """Write the truth URDF for ``scenario``'s robot; return (perturbation, sim overrides)."""
    perturbation = perturb_robot(scenario.urdf, seed)
    robot_folder = os.path.join(folder, 'robot')
    os.makedirs(robot_folder, exist_ok=True)
    truth_file = os.path.join(robot_folder, 'truth.urdf')
    with open(truth_file, 'w') as stream:
        stream.write(perturbation.truth_urdf)
    with open(os.path.join(robot_folder, 'perturbation.txt'), 'w') as stream:
        stream.write(perturbation.summary() + '\n')
    shutil.copyfile(scenario.urdf_file, os.path.join(robot_folder, 'nominal.urdf'))
    overrides = {
        'urdf_file': truth_file,
        'urdf_dynamics': True,      # <dynamics damping friction> -> MuJoCo damping, frictionloss
        'joint_armature': perturbation.joint_values(scenario.joint_names, 'armature'),
    }
    return perturbation, overrides


def _run_cli(arguments, log_file, env, timeout):
    """Run ``python -m rnea_ros.analysis.cli ARGS``; return stdout (StoryFailed if it fails)."""
    command = [sys.executable, '-m', CLI] + [str(a) for a in arguments]
    os.makedirs(os.path.dirname(log_file), exist_ok=True)
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise StoryFailed('{} took more than {} s'.format(
            ' '.join(command[2:4]), timeout)) from None
    with open(log_file, 'w') as stream:
        stream.write('$ {}\n{}\n{}'.format(' '.join(command), done.stdout, done.stderr))
    if done.returncode != 0:
        raise StoryFailed('{} failed (exit status {}); see {}'.format(
            ' '.join(command[2:4]), done.returncode, log_file))
    return done.stdout


def excitation_trajectory(folder, urdf_file, duration, env, timeout=1800,
                          harmonics=EXCITATION_HARMONICS):
    """Design the excitation with ``rnea-ros excite``; return (YAML path, seconds it took).

    The design (an optimisation of the regressor's condition number over Fourier coefficients,
    :func:`rnea_ros.analysis.excitation.optimise_excitation`) runs every time, as a user would
    run it for a new robot; its log is ``logs/excite.log``.  ``harmonics``: see
    :data:`EXCITATION_HARMONICS`.
    """
    path = os.path.join(folder, 'identification', 'excitation.yaml')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    started = time.monotonic()
    _run_cli(['excite', '--urdf', urdf_file, '--duration', duration, '--out', path,
              '--harmonics', harmonics],
             os.path.join(folder, 'logs', 'excite.log'), env, timeout)
    return path, time.monotonic() - started


def record_to_bag(record, path, start=0.0):
    """Write a simulator record as a rosbag2 (mcap) of sensor_msgs/JointState; return path.

    A record row holds the state after a physics step and the effort applied during that step,
    so the effort that acts from a state on is the next row's: each message pairs them, as a
    robot's joint-torque sensors would. Rows before ``start`` (s) are left out.
    """
    from rnea_ros.analysis.recordings import write_joint_states
    if os.path.exists(path):
        shutil.rmtree(path)
    keep = np.flatnonzero(record['time'][:-1] >= start - 1e-9)
    write_joint_states(path, record['time'][keep], record['joint_names'],
                       record['position'][keep], record['velocity'][keep],
                       record['effort'][keep + 1])
    return path


def identify(folder, nominal_urdf, bags, validation_bag, env, timeout=600, friction=None):
    """Run ``rnea-ros identify``; return (identified URDF file, node parameters, report).

    ``friction``: identify's ``--friction`` model (None: its default, chosen by held-out error).
    """
    out = os.path.join(folder, 'identification')
    urdf = os.path.join(out, 'identified.urdf')
    params = os.path.join(out, 'identified_params.yaml')
    stdout = _run_cli(['identify'] + list(bags) + [
        '--urdf', nominal_urdf, '--out', urdf, '--params-out', params,
        '--validate', validation_bag, '--report', os.path.join(out, 'report'), '--json'] +
        (['--friction', friction] if friction else []),
        os.path.join(folder, 'logs', 'identify.log'), env, timeout)
    try:
        report = json.loads(stdout)
    except ValueError:
        report = {'text': stdout}
    from rnea_ros.analysis.observe import read_params
    return urdf, read_params(params), report


def tune_thresholds(folder, urdf_file, bag, env, timeout=600):
    """Run ``rnea-ros observe`` on the excitation ``bag``; return the suggested thresholds.

    What an integrator does before the arm meets people: the identified model
    (``identification/identified.urdf`` and ``identified_params.yaml`` of :func:`identify`)
    over the contact-free identification recording; efforts 'held' (the simulator's).  Returns
    {'moving': [...], 'reversal': [...], 'joints': [...]}: the thresholds gated by velocity
    reversals it suggests (:mod:`rnea_ros.analysis.observe`), in the model's joint order.  Its
    log is ``logs/observe.log``.
    """
    params = os.path.join(folder, 'identification', 'identified_params.yaml')
    stdout = _run_cli(['observe', bag, '--urdf', urdf_file, '--params', params,
                       '--effort-sampling', 'held', '--json'],
                      os.path.join(folder, 'logs', 'observe.log'), env, timeout)
    joints = json.loads(stdout)['joints']
    return {'joints': list(joints),
            'moving': [v['suggested_moving_threshold'] for v in joints.values()],
            'reversal': [v['suggested_reversal_threshold'] for v in joints.values()]}


def model_of(urdf_file, parameters=None):
    """Return the RobotModel of a URDF file with the rnea node's joint-term parameters.

    Friction, rotor inertia, offsets and the friction law are read from node parameters by the
    node's own rule (:func:`rnea_ros.node.params.joint_coefficients`).
    """
    from rnea_ros.core.model import RobotModel
    from rnea_ros.node.params import joint_coefficients
    model = RobotModel.from_urdf_file(urdf_file)
    if not parameters:
        return model
    return RobotModel.from_urdf_file(urdf_file,
                                     **joint_coefficients(parameters, model.joint_names))


def effort_prediction(record, model, start=0.0):
    """Return (times, measured, predicted) efforts of ``model`` along a simulator record.

    Accelerations are smoothed derivatives of the recorded velocities (as ``rnea-ros`` does
    with a bag); measured efforts are paired with states as in :func:`record_to_bag`.
    """
    from rnea_ros.analysis.analyze import smoothed_derivative
    from rnea_ros.core.dynamics import inverse_dynamics_batch
    names = record['joint_names']
    order = [names.index(name) for name in model.joint_names]
    keep = np.flatnonzero(record['time'][:-1] >= start - 1e-9)
    times = record['time'][keep]
    position = record['position'][keep][:, order]
    velocity = record['velocity'][keep][:, order]
    measured = record['effort'][keep + 1][:, order]
    acceleration = smoothed_derivative(times, velocity)
    predicted = inverse_dynamics_batch(model, position, velocity, acceleration)
    return times, measured, predicted, list(model.joint_names)


def residual_rms(measured, predicted, trim=20):
    """Return the per-joint RMS of measured - predicted (``trim`` samples cut at each end)."""
    error = (measured - predicted)[trim:-trim]
    return np.sqrt(np.mean(error ** 2, axis=0))
