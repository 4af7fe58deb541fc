"""Excitation design is a pure function of (URDF, options, seed) on a machine (issue 21).

The demo designs its excitation on every run (``rnea-ros excite``), so two runs with the same
seed must play the same trajectory: the coefficients are compared bit for bit, designed twice in
one process (with the thread settings and the heap changed in between) and in two fresh
processes, as the demo runs it.
"""

import os
import subprocess
import sys

import numba
import numpy as np
from rnea_ros.analysis.excitation import FourierTrajectory, optimise_excitation
from rnea_ros.core.model import RobotModel
from robots import urdf_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PANDA = urdf_path('panda')
OPTIONS = {'duration': 10.0, 'seed': 5, 'restarts': 6, 'iterations': 4}


def coefficients(traj):
    """Return every number of a design (q0, a, b, base frequency) as one array."""
    return np.concatenate([traj.q0, traj.a.ravel(), traj.b.ravel(), [traj.base_frequency]])


def test_same_seed_gives_bit_identical_designs_in_one_process():
    """Design twice; numba's threads and the heap differ in between; same coefficients."""
    model = RobotModel.from_urdf_file(PANDA)
    first = optimise_excitation(model, **OPTIONS)
    threads = numba.get_num_threads()
    ballast = [np.random.default_rng(k).normal(size=97 * k + 13) for k in range(1, 40)]
    numba.set_num_threads(1 if threads > 1 else threads)
    try:
        second = optimise_excitation(model, **OPTIONS)
    finally:
        numba.set_num_threads(threads)
    assert ballast and numba.get_num_threads() == threads       # restored afterwards
    assert np.array_equal(coefficients(first), coefficients(second))
    assert first.info == second.info
    other = optimise_excitation(model, **dict(OPTIONS, seed=OPTIONS['seed'] + 1))
    assert not np.array_equal(coefficients(first), coefficients(other))   # the seed matters


def test_same_seed_gives_bit_identical_designs_in_two_processes(tmp_path):
    """``rnea-ros excite`` in two fresh processes writes the same design as this process."""
    model = RobotModel.from_urdf_file(PANDA)
    here = optimise_excitation(model, **OPTIONS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]))
    designs = []
    for k in range(2):
        out = str(tmp_path / f'design{k}.yaml')
        done = subprocess.run(
            [sys.executable, '-m', 'rnea_ros.analysis.cli', 'excite', '--urdf', PANDA,
             '--duration', str(OPTIONS['duration']), '--seed', str(OPTIONS['seed']),
             '--restarts', str(OPTIONS['restarts']), '--iterations', str(OPTIONS['iterations']),
             '--out', out], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        designs.append(FourierTrajectory.from_yaml(out))
    for design in designs:
        assert np.array_equal(coefficients(design), coefficients(here))
        assert design.info['condition_number'] == here.info['condition_number']


def test_demo_design_moves_every_joint_beyond_identifys_stick_band():
    """The demo's excitation (story.EXCITATION_HARMONICS) gives identify every panda joint.

    identify leaves out joints slower than its stick band (default 0.05, m/s for the fingers)
    for 95 % of the run; with excite's default 5 harmonics the fingers' 4 cm of travel never
    reach it, and identify then rewrote their inertials without data (demo joint 5 biased by
    1 to 2 mrad).  The demo's design must move all nine joints, fingers included.
    """
    import argparse
    from rnea_ros.analysis.identify import add_identify_arguments
    from rnea_ros.analysis.identification import moving_joints
    from rnea_ros.demo.story import EXCITATION_HARMONICS
    parser = argparse.ArgumentParser()
    add_identify_arguments(parser)
    band = parser.get_default('band')                          # identify's default stick band
    model = RobotModel.from_urdf_file(PANDA)
    design = optimise_excitation(model, duration=30.0, harmonics=EXCITATION_HARMONICS)
    _, Q, QD, _ = design.sample(1000.0)
    assert list(moving_joints(model, Q, QD, band)) == list(range(model.njoints))
    default = optimise_excitation(model, duration=30.0)         # excite's own default: 5
    assert np.abs(default.sample(1000.0)[2][:, 7:]).max() < band        # fingers too slow
    assert design.info['condition_number'] < default.info['condition_number']
