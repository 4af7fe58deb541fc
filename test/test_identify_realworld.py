"""Issue 21 targets, end to end: default ``rnea-ros identify`` on real-looking logs.

Each case is a simulated robot (:func:`identification_data.realworld_recording`: the nominal
URDF perturbed, with rotor inertia, a smooth and/or asymmetric friction law and effort offsets
that no model here has), logged at about 1 kHz with stamps 0.7 to 8.8 ms apart, 6 % duplicate
rows, repeated stamps, noise, and (panda) without its gripper joints.  Training: 30 s of an
excitation; validation: another motion of the same robot (harmonics reversed, 70 % speed),
other noise.  Targets (issue 21):

- validation effort error <= 3 % of each joint's effort RMS, or <= 0.1 N m;
- gravity within 1 % (largest error over 50 poses against the largest gravity effort);
- every link's inertial physically consistent (pseudo-inertia positive definite);
- the ill-conditioned xarm7 included (it has unexcited base parameters).
"""

import json

from identification_data import realworld_recording, XARM7
import numpy as np
import pytest
from rnea_ros.analysis.cli import main
from rnea_ros.analysis.excitation import FourierTrajectory
from rnea_ros.core.dynamics import gravity_torques
from rnea_ros.core.model import RobotModel
from rnea_ros.core.regressor import inertial_parameters

# panda seed 7 sigmoid: joint 5 needs its own v_s (a common one missed the bound, 1.17 x).
CASES = [('panda', 1, 'sigmoid'), ('panda', 2, 'asymmetric'), ('panda', 7, 'sigmoid'),
         (XARM7, 2, 'stribeck'), (XARM7, 11, 'sigmoid')]


def other_motion(traj):
    """Return the validation motion: harmonics reversed, 70 % speed."""
    return FourierTrajectory(traj.joints, traj.base_frequency, traj.duration, traj.q0,
                             0.7 * traj.a[:, ::-1], -0.7 * traj.b)


def pseudo_inertia_is_positive_definite(phi):
    """Return True if ten inertial parameters [m, h, I_O] have a positive definite J."""
    m, h = phi[0], phi[1:4]
    xx, xy, xz, yy, yz, zz = phi[4:10]
    inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    J = np.zeros((4, 4))
    J[:3, :3] = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    J[:3, 3] = J[3, :3] = h
    J[3, 3] = m
    return bool(np.linalg.eigvalsh(J).min() > 0.0)


@pytest.mark.parametrize('robot, seed, friction', CASES,
                         ids=[f'{r.split("/")[-1]}-{s}-{f}' for r, s, f in CASES])
def test_default_identify_meets_the_targets_on_a_real_looking_log(tmp_path, capsys, robot,
                                                                  seed, friction):
    train = realworld_recording(robot, seed=seed, friction=friction)
    check = realworld_recording(robot, seed=seed, friction=friction,
                                traj=other_motion(train.traj), noise_seed=100 + seed)
    out = tmp_path / 'identified.urdf'
    code = main(['identify', train.write(tmp_path / 'train'), '--urdf', train.urdf,
                 '--out', str(out), '--validate', check.write(tmp_path / 'check', 'sqlite3'),
                 '--json'])
    captured = capsys.readouterr()
    assert code == 0, captured.err                    # warnings are not refusals
    summary = json.loads(captured.out)
    failures = []
    for joint, row in summary['residual_rms']['validation'].items():
        bound = max(0.03 * row['effort_rms'], 0.1)
        if not row['identified'] <= bound:
            failures.append(f"{joint}: validation error {row['identified']:.3f} > "
                            f'{bound:.3f} N m')
    model = RobotModel.from_urdf_file(str(out))
    phi = inertial_parameters(model).reshape(-1, 10)
    for link, p in zip(model.body_links, phi):
        if p[0] > 0 and not pseudo_inertia_is_positive_definite(p):
            failures.append(f'{link}: inertial not physically consistent')
    rng = np.random.default_rng(seed)
    Q = check.clean[1][rng.integers(0, check.t.size, 50)]
    g_true = np.array([gravity_torques(train.truth, q) for q in Q])
    g_id = np.array([gravity_torques(model, q) for q in Q])
    gravity = np.abs(g_id - g_true).max() / np.abs(g_true).max()
    if not gravity <= 0.01:
        failures.append(f'gravity error {100 * gravity:.2f} % > 1 %')
    assert not failures, failures
