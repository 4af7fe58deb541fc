"""Payload estimation (rnea_ros.core.payload_estimation) against MuJoCo as ground truth.

The "real" robot is MuJoCo's: the URDF plus the payload as one more body
(:func:`rnea_ros.core.payload.payload_urdf`), driven by computed torque on the nominal rnea
model (no payload), so that the payload shows up only in the efforts MuJoCo needs.  The
estimator sees what a driver reports: positions, velocities, the commanded efforts, and the
accelerations (MuJoCo's, or differences of the velocities).  Targets of issue 22: 0.5 to 3 kg
with the COM up to 10 cm off, mass within 3 % and COM within 1 cm from at most 6 static poses
or 5 s of slow motion.
"""

import mujoco
import numpy as np
import pytest
from rnea_ros import estimate_payload, PayloadEstimator
from rnea_ros import gravity_torques, inverse_dynamics, RobotModel
from rnea_ros.core.payload import model_with_payload, Payload, payload_urdf
from rnea_ros.core.payload_estimation import (AccelerationWindow, inertia_consistency,
                                              payload_parameters, StillPose, transform_matrix)
from rnea_ros.core.regressor import inertial_parameters
from rnea_ros.sim.mujoco_model import build_mujoco_model, joint_addresses
from robots import urdf_path

UR5_HOME = np.array([0.0, -1.2, 1.4, -1.5, -1.5, 0.0])
PANDA_HOME = np.array([0.0, -0.4, 0.0, -2.0, 0.0, 1.6, 0.8, 0.02, 0.02])
KP, KD = 400.0, 40.0


@pytest.fixture(scope='module')
def ur5_xml():
    with open(urdf_path('ur5'), encoding='utf-8') as f:
        return f.read()


@pytest.fixture(scope='module')
def panda_xml():
    with open(urdf_path('panda'), encoding='utf-8') as f:
        return f.read()


def random_payload(link, seed):
    """Return a payload of 0.5 to 3 kg, COM 2 to 10 cm off, inertia of a random solid box."""
    rng = np.random.default_rng(seed)
    mass = rng.uniform(0.5, 3.0)
    direction = rng.normal(size=3)
    com = direction / np.linalg.norm(direction) * rng.uniform(0.02, 0.10)
    a, b, c = rng.uniform(0.03, 0.15, 3)
    box = mass / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return Payload(link, mass, com, Q @ box @ Q.T)


class MujocoArm:
    """The robot with a hidden payload in MuJoCo, computed torque on the nominal rnea model."""

    def __init__(self, xml, payload, viscous=0.0, timestep=0.001):
        """Build the MuJoCo robot (payload body added) and the nominal model.

        ``viscous``: joint friction Fv qd (N m s/rad, model joint order), applied every step
        as a passive effort (MuJoCo's own damping is implicit in its Euler step).
        """
        self.nominal = model_with_payload(xml)
        self.names = list(self.nominal.joint_names)
        self.viscous = viscous
        self.mj = build_mujoco_model(payload_urdf(xml, payload), timestep=timestep)
        self.data = mujoco.MjData(self.mj)
        self.qpos, self.dof = joint_addresses(self.mj, self.names)

    def reset(self, q):
        self.data.qpos[self.qpos] = q
        self.data.qvel[self.dof] = 0.0
        mujoco.mj_forward(self.mj, self.data)

    def step(self, q_ref, qd_ref, qdd_ref):
        """Apply computed torque for one step; return (q, qd, qdd, effort) of that step."""
        q, qd = self.data.qpos[self.qpos].copy(), self.data.qvel[self.dof].copy()
        u = inverse_dynamics(self.nominal, q, qd, qdd_ref + KP * (q_ref - q) + KD * (qd_ref - qd))
        self.data.qfrc_applied[:] = 0.0
        self.data.qfrc_applied[self.dof] = u - self.viscous * qd
        mujoco.mj_step(self.mj, self.data)     # qacc: MuJoCo's acceleration at (q, qd, u)
        return q, qd, self.data.qacc[self.dof].copy(), u

    def still(self, q, noise=0.0, rng=None):
        """Return the efforts that hold the robot still at q: MuJoCo's inverse dynamics.

        ``noise``: standard deviation (N m) of Gaussian noise added, as left after averaging
        a held pose's measurements.
        """
        self.data.qpos[self.qpos] = q
        self.data.qvel[:] = 0.0
        self.data.qacc[:] = 0.0
        mujoco.mj_inverse(self.mj, self.data)
        effort = self.data.qfrc_inverse[self.dof].copy()
        return effort + (rng.normal(0.0, noise, effort.size) if noise else 0.0)

    def sinusoids(self, home, duration, seed, decimation=5, amplitude=0.5):
        """Track slow sinusoids; return stamped samples (t, q, qd, qdd, effort) as arrays."""
        rng = np.random.default_rng(seed)
        n = home.size
        w = 2.0 * np.pi * rng.uniform(0.2, 0.5, (2, n))
        phase = rng.uniform(0.0, 2.0 * np.pi, (2, n))
        amp = amplitude * np.array([0.7, 0.3])[:, None] * np.ones((2, n))

        def reference(t):
            arg = w * t + phase
            return (home + np.sum(amp * (np.sin(arg) - np.sin(phase)), axis=0),
                    np.sum(amp * w * np.cos(arg), axis=0),
                    -np.sum(amp * w ** 2 * np.sin(arg), axis=0))

        self.reset(home)
        self.data.qvel[self.dof] = reference(0.0)[1]
        dt = self.mj.opt.timestep
        out = []
        for k in range(int(round(duration / dt))):
            sample = self.step(*reference(k * dt))
            if k % decimation == 0:
                out.append((k * dt,) + sample)
        return [np.array(x) for x in zip(*out)]


def _poses(model, home, count, seed, spread=0.8):
    rng = np.random.default_rng(seed)
    arm = min(model.nv, 7)              # the panda's fingers stay where they are
    poses = np.tile(home, (count, 1))
    poses[:, :arm] = np.clip(poses[:, :arm] + rng.uniform(-spread, spread, (count, arm)),
                             model.lower_limits[:arm] + 0.05, model.upper_limits[:arm] - 0.05)
    return poses


def _assert_recovered(result, payload):
    assert result.ok, result.reason
    assert abs(result.mass - payload.mass) <= 0.03 * payload.mass, result.describe()
    assert np.linalg.norm(result.com - np.asarray(payload.com)) <= 0.01, result.describe()


# -- identities ---------------------------------------------------------------------------------

@pytest.mark.parametrize('link', ['panda_link8', 'panda_hand', 'panda_link7'])
def test_link_to_body_transform_is_the_model_builders_lumping(panda_xml, link):
    """A ((10 x 10) link -> body) gives what merging the payload link into its body adds."""
    payload = random_payload(link, seed=1)
    bare = model_with_payload(panda_xml)
    loaded = model_with_payload(panda_xml, payload)
    body, R, p = bare.link_body[link]
    added = (inertial_parameters(loaded) - inertial_parameters(bare))[10 * body:10 * body + 10]
    np.testing.assert_allclose(transform_matrix(R, p) @ payload_parameters(payload), added,
                               rtol=1e-12, atol=1e-12)


def test_exact_model_efforts_give_the_payload_to_rounding(ur5_xml):
    """Residuals from the rnea model with the payload give back all ten parameters."""
    payload = random_payload('tool0', seed=2)
    model, loaded = model_with_payload(ur5_xml), model_with_payload(ur5_xml, payload)
    rng = np.random.default_rng(3)
    est = PayloadEstimator(model, 'tool0', effort_noise=1e-6)     # exact data
    for _ in range(200):
        q, qd, qdd = rng.uniform(-2, 2, 6), rng.uniform(-1, 1, 6), rng.uniform(-2, 2, 6)
        est.add_sample(q, qd, qdd, inverse_dynamics(loaded, q, qd, qdd))
    result = est.estimate()
    assert result.ok and not result.point_mass, result.describe()
    np.testing.assert_allclose(result.parameters, payload_parameters(payload), atol=1e-9)
    np.testing.assert_allclose(result.inertia, payload.inertia, atol=1e-9)


def test_floating_base_model_uses_the_joint_rows(panda_xml):
    """A free-flying panda (base at rest, tilted): joint efforts only give the payload."""
    payload = random_payload('panda_hand', seed=4)
    model = model_with_payload(panda_xml, floating_base=True)
    loaded = model_with_payload(panda_xml, payload, floating_base=True)
    base = np.array([0.1, 0.2, 0.3, 0.1, 0.0, 0.0, np.sqrt(0.99)])
    est = PayloadEstimator(model, 'panda_hand')
    for joints in _poses(model_with_payload(panda_xml), PANDA_HOME, 6, seed=4):
        q = np.concatenate([base, joints])
        est.add_pose(q, gravity_torques(loaded, q)[6:])
    result = est.estimate()
    assert result.ok, result.reason
    assert result.mass == pytest.approx(payload.mass, rel=1e-9)
    np.testing.assert_allclose(result.com, payload.com, atol=1e-9)


# -- MuJoCo ground truth --------------------------------------------------------------------

@pytest.mark.parametrize('seed', [10, 11, 12])
def test_static_poses_recover_mass_and_com_from_mujoco_ur5(ur5_xml, seed):
    """Six still poses (MuJoCo efforts + noise): mass within 3 %, COM within 1 cm, no inertia."""
    payload = random_payload('wrist_3_link', seed)
    arm = MujocoArm(ur5_xml, payload)
    est = PayloadEstimator(arm.nominal, 'wrist_3_link', poses=6)
    rng = np.random.default_rng(seed)
    for q in _poses(arm.nominal, UR5_HOME, 6, seed):
        est.add_pose(q, arm.still(q, noise=0.02, rng=rng))
    result = est.estimate()
    _assert_recovered(result, payload)
    assert result.point_mass and 'inertia not excited' in result.inertia_note
    assert np.all(np.isinf(result.inertia_sigma))
    assert est.progress().fraction == 1.0


@pytest.mark.parametrize('seed', [13, 14])
def test_static_poses_on_a_merged_link_recover_the_payload_from_mujoco_panda(panda_xml, seed):
    """panda_hand is merged into panda_link7's body: the estimate is in the hand's frame."""
    payload = random_payload('panda_hand', seed)
    arm = MujocoArm(panda_xml, payload)
    est = PayloadEstimator(arm.nominal, 'panda_hand', poses=6)
    rng = np.random.default_rng(seed)
    for q in _poses(arm.nominal, PANDA_HOME, 6, seed):
        est.add_pose(q, arm.still(q, noise=0.02, rng=rng))
    _assert_recovered(est.estimate(), payload)


@pytest.mark.parametrize('seed, link', [(20, 'tool0'), (21, 'wrist_3_link'), (22, 'tool0')])
def test_five_seconds_of_slow_motion_recover_the_payload_from_mujoco(ur5_xml, seed, link):
    """5 s of sinusoids (0.2-0.5 Hz) at 200 Hz with MuJoCo's accelerations."""
    payload = random_payload(link, seed)
    arm = MujocoArm(ur5_xml, payload)
    t, Q, QD, QDD, E = arm.sinusoids(UR5_HOME, 5.0, seed)
    est = PayloadEstimator(arm.nominal, link, duration=5.0)
    for k in range(t.size):
        est.add_sample(Q[k], QD[k], QDD[k], E[k], t[k])
    result = est.estimate()
    _assert_recovered(result, payload)
    assert est.progress().fraction >= 0.99
    if not result.point_mass:                  # the inertia, when kept, is physical
        assert inertia_consistency(result.inertia) == ''


def test_motion_through_the_acceleration_window_with_noise_and_model_friction(ur5_xml):
    """The node's path: 1 kHz states, noisy velocities and efforts, viscous joint friction.

    Accelerations from the AccelerationWindow (estimate_payload with QDD None).  The simulated
    joints have viscous friction; the rnea model knows it (friction_viscous), so the residual
    includes joint_friction(model, qd) and the payload is recovered; the model without the
    friction leaves the estimate refused or further off.
    """
    viscous = np.array([2.0, 3.0, 1.5, 0.5, 0.4, 0.3])
    damping = dict(zip(model_with_payload(ur5_xml).joint_names, viscous))
    payload = random_payload('tool0', seed=23)
    arm = MujocoArm(ur5_xml, payload, viscous=viscous)
    t, Q, QD, _, E = arm.sinusoids(UR5_HOME, 5.2, seed=23, decimation=1)
    rng = np.random.default_rng(23)
    QD = QD + rng.normal(0.0, 0.003, QD.shape)
    E = E + rng.normal(0.0, 0.05, E.shape)
    model = RobotModel.from_urdf_string(ur5_xml, friction_viscous=damping)
    result = estimate_payload(model, 'tool0', Q, QD, None, E, t, duration=5.0)
    _assert_recovered(result, payload)
    without = estimate_payload(arm.nominal, 'tool0', Q, QD, None, E, t)
    assert not without.ok or abs(without.mass - payload.mass) > abs(result.mass - payload.mass)


# -- the node's sample filters (ROS-free) ---------------------------------------------------

@pytest.mark.parametrize('jitter, rtol', [(0.0, 1e-8), (0.3, 1e-4)])
def test_acceleration_window_filters_every_quantity_alike(jitter, rtol):
    """The fitted acceleration is the window's weighted average of the true acceleration.

    Velocity t^3 + sin 5t at 1 kHz (stamps jittered by up to 30 %): the slope the window gives
    equals the same weighted average applied to the true acceleration (passed as the effort),
    so accelerations and efforts come out through one filter; positions linear in t come out
    at the window's mean time.
    """
    rng = np.random.default_rng(7)
    window = AccelerationWindow(0.05)
    for t in np.cumsum(0.001 * (1.0 + jitter * rng.uniform(-1.0, 1.0, 120))):
        out = window.add(t, np.array([2.0 * t]), np.array([t ** 3 + np.sin(5.0 * t)]),
                         np.array([3.0 * t * t + 5.0 * np.cos(5.0 * t)]))
    t, q, _, qdd, filtered = out
    assert t == pytest.approx(np.mean(window.t))
    assert q[0] == pytest.approx(2.0 * t, abs=2.0 * 1e-4 * jitter + 1e-12)   # < 0.1 sample
    assert qdd[0] == pytest.approx(filtered[0], rel=rtol)


def test_still_pose_needs_still_time_and_a_new_place():
    still = StillPose(0.1, 0.01)
    e = np.ones(2)
    assert [still.add(0.05 * k, np.zeros(2), e) for k in range(2)] == [None, None]
    pose = still.add(0.1, np.zeros(2), e)
    assert pose is not None
    assert all(still.add(0.2 + 0.05 * k, np.full(2, 0.05), e) is None for k in range(5))
    assert still.add(0.5, np.full(2, 0.2), e) is None
    assert still.add(0.65, np.full(2, 0.2), e) is not None


# -- refusals -----------------------------------------------------------------------------------

def test_one_pose_is_refused_com_along_gravity_unobservable(ur5_xml):
    """One pose: the COM along gravity (in the link frame) is unobservable; no payload given."""
    model = model_with_payload(ur5_xml)
    q = UR5_HOME.copy()
    q[3], q[4] = -np.pi / 2, np.pi / 2    # flange axes along the world axes
    payload = Payload('tool0', 1.5, (0.02, 0.03, 0.05))
    est = PayloadEstimator(model, 'tool0', poses=1)
    est.add_pose(q, gravity_torques(model_with_payload(ur5_xml, payload), q))
    result = est.estimate()
    assert not result.ok
    assert 'unobservable' in result.reason and 'COM along' in result.reason, result.reason
    with pytest.raises(ValueError, match='refused, nothing to commit'):
        result.payload()


def test_poses_rotating_only_about_the_tool_axis_leave_com_z_unobservable(ur5_xml):
    """Tool axis vertical in every pose: the reason names z and the missing rotations."""
    model = model_with_payload(ur5_xml)
    payload = Payload('tool0', 1.5, (0.02, 0.03, 0.05))
    loaded = model_with_payload(ur5_xml, payload)
    est = PayloadEstimator(model, 'tool0', poses=4)
    for wrist in (0.0, 0.7, 1.4, 2.1):
        q = np.array([0.0, -1.6, 1.6, -1.57079633, -1.57079633, wrist])
        est.add_pose(q, gravity_torques(loaded, q))
    result = est.estimate()
    assert not result.ok
    assert 'COM along z of tool0 unobservable' in result.reason, result.reason
    assert 'about x/y' in result.reason


def test_no_samples_and_no_weight_are_refused(ur5_xml):
    model = model_with_payload(ur5_xml)
    assert PayloadEstimator(model, 'tool0').estimate().reason == 'no samples'
    est = PayloadEstimator(model, 'tool0')
    for q in _poses(model, UR5_HOME, 4, seed=5):
        est.add_pose(q, gravity_torques(model, q))       # no payload at all
    result = est.estimate()
    assert not result.ok and ('not positive' in result.reason or 'uncertain' in result.reason)


@pytest.mark.parametrize('bad, message', [
    (lambda e: np.where(np.arange(6) == 2, np.nan, e), r"effort is not finite at \['elbow"),
    (lambda e: e[:5], 'effort must have 6 values'),
])
def test_nan_or_missing_efforts_are_refused_and_not_added(ur5_xml, bad, message):
    model = model_with_payload(ur5_xml)
    est = PayloadEstimator(model, 'tool0')
    q = UR5_HOME
    with pytest.raises(ValueError, match=message):
        est.add_pose(q, bad(gravity_torques(model, q)))
    assert est.samples == 0 and est.estimate().reason == 'no samples'


def test_bad_link_and_settings_are_explained(ur5_xml):
    model = model_with_payload(ur5_xml)
    with pytest.raises(ValueError, match="'nope' is not a link"):
        PayloadEstimator(model, 'nope')
    with pytest.raises(ValueError, match='fixed to the world'):
        PayloadEstimator(model, 'base_link')
    with pytest.raises(ValueError, match='forgetting factor'):
        PayloadEstimator(model, 'tool0', forgetting=1.5)


def test_an_unphysical_inertia_falls_back_to_a_point_mass_with_the_reason(ur5_xml):
    """Efforts of parameters whose inertia breaks the triangle inequality: mass and COM kept."""
    model = model_with_payload(ur5_xml)
    bad = Payload('tool0', 1.2, (0.01, 0.02, 0.06), np.diag([0.001, 0.001, 0.01]))
    phi = payload_parameters(bad)
    est = PayloadEstimator(model, 'tool0', effort_noise=1e-6)
    rng = np.random.default_rng(8)
    for _ in range(200):
        q, qd, qdd = rng.uniform(-2, 2, 6), rng.uniform(-1, 1, 6), rng.uniform(-2, 2, 6)
        Y, minus_model = est.rows(q, qd, qdd, np.zeros(6))
        est.add_sample(q, qd, qdd, Y @ phi - minus_model)
    result = est.estimate()
    assert result.ok and result.point_mass, result.describe()
    assert 'triangle inequality' in result.inertia_note
    assert result.mass == pytest.approx(1.2, rel=1e-9)
    np.testing.assert_allclose(result.com, bad.com, atol=1e-9)
    np.testing.assert_array_equal(result.payload().inertia, np.zeros((3, 3)))


def test_inconsistent_inertias_are_named():
    assert inertia_consistency(np.diag([1.0, 1.0, 1.5])) == ''
    assert 'triangle' in inertia_consistency(np.diag([1.0, 1.0, 2.5]))
    assert 'not positive' in inertia_consistency(np.diag([1.0, -1.0, 1.0]))


def test_forgetting_factor_follows_a_payload_change(ur5_xml):
    """With lambda < 1 the estimate moves to a new payload; without, it stays in between."""
    model = model_with_payload(ur5_xml)
    first = Payload('tool0', 1.0, (0.0, 0.0, 0.05))
    second = Payload('tool0', 2.5, (0.05, 0.0, 0.02))
    poses = _poses(model, UR5_HOME, 40, seed=6)
    follow = PayloadEstimator(model, 'tool0', forgetting=0.5)
    plain = PayloadEstimator(model, 'tool0')
    for k, q in enumerate(poses):
        tau = gravity_torques(model_with_payload(ur5_xml, first if k < 20 else second), q)
        follow.add_pose(q, tau)
        plain.add_pose(q, tau)
    assert follow.estimate().mass == pytest.approx(2.5, rel=1e-3)
    assert 1.2 < plain.estimate().mass < 2.3


def measure(seeds=range(20), noise=0.02):
    """Print the errors over seeds (README figures): ``python test/test_payload_estimation.py``."""
    xml = {r: open(urdf_path(r), encoding='utf-8').read() for r in ('ur5', 'panda')}
    cases = [('ur5', 'tool0', 'poses'), ('panda', 'panda_hand', 'poses'),
             ('ur5', 'tool0', 'motion'), ('ur5', 'wrist_3_link', 'motion'),
             ('ur5', 'tool0', 'window')]
    print(f'{len(seeds)} seeds, efforts + N(0, {noise} N m) noise; mass error %, COM error mm')
    for robot, link, mode in cases:
        mass_err, com_err, ratio, refused, inertia, gravity = [], [], [], 0, [], []
        for seed in seeds:
            payload = random_payload(link, 1000 + seed)
            arm = MujocoArm(xml[robot], payload)
            rng = np.random.default_rng(seed)
            home = UR5_HOME if robot == 'ur5' else PANDA_HOME
            if mode == 'poses':
                est = PayloadEstimator(arm.nominal, link, poses=6)
                for q in _poses(arm.nominal, home, 6, seed):
                    est.add_pose(q, arm.still(q, noise, rng))
            elif mode == 'window':      # the node's path: 1 kHz, velocity noise, window fit
                t, Q, QD, _, E = arm.sinusoids(home, 5.2, seed, decimation=1)
                QD = QD + rng.normal(0.0, 0.01, QD.shape)
                E = E + rng.normal(0.0, noise, E.shape)
                est = None
                r = estimate_payload(arm.nominal, link, Q, QD, None, E, t)
            else:
                t, Q, QD, QDD, E = arm.sinusoids(home, 5.0, seed)
                E = E + rng.normal(0.0, noise, E.shape)
                est = PayloadEstimator(arm.nominal, link, duration=5.0)
                for k in range(t.size):
                    est.add_sample(Q[k], QD[k], QDD[k], E[k], t[k])
            r = r if est is None else est.estimate()
            if not r.ok:
                refused += 1
                continue
            if not r.point_mass:
                inertia.append(np.linalg.norm(r.inertia - payload.inertia)
                               / np.linalg.norm(payload.inertia))
            loaded = model_with_payload(xml[robot], r.payload())
            for q in _poses(arm.nominal, home, 20, seed + 500):   # gravity compensation
                truth = arm.still(q)
                gravity.append(np.abs(gravity_torques(loaded, q) - truth).max()
                               / np.abs(gravity_torques(arm.nominal, q) - truth).max())
            mass_err.append(100.0 * abs(r.mass - payload.mass) / payload.mass)
            com_err.append(1000.0 * np.linalg.norm(r.com - payload.com))
            ratio.append(np.max(np.abs(r.com - payload.com) / r.com_sigma))

        def worst(values):
            return max(values, default=float('nan'))

        print(f'{robot} {link} {mode}: mass err max {worst(mass_err):.2f} %, COM err max '
              f'{worst(com_err):.2f} mm, |COM err|/sigma max {worst(ratio):.1f}, refused '
              f'{refused}, inertia kept {len(inertia)} (relative error max '
              f'{worst(inertia):.2f}); gravity torque error left {100 * worst(gravity):.1f} %')


def measure_cost(count=2000):
    """Print the time of one add_sample and one estimate (UR5, panda; same process)."""
    import time
    for robot, link in (('ur5', 'tool0'), ('panda', 'panda_hand')):
        model = model_with_payload(open(urdf_path(robot), encoding='utf-8').read())
        rng = np.random.default_rng(0)
        rows = [(rng.uniform(-1, 1, model.nq), rng.uniform(-1, 1, model.nv),
                 rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.njoints))
                for _ in range(count)]
        est = PayloadEstimator(model, link)
        est.add_sample(*rows[0])
        start = time.perf_counter()
        for row in rows:
            est.add_sample(*row)
        sample = (time.perf_counter() - start) / count
        start = time.perf_counter()
        for _ in range(50):
            est.estimate()
        print(f'{robot}: add_sample {1e6 * sample:.0f} us, estimate '
              f'{1e6 * (time.perf_counter() - start) / 50:.0f} us')


if __name__ == '__main__':
    for level in (0.02, 0.05, 0.2):
        measure(noise=level)
    measure_cost()


def test_joints_weighted_by_their_residuals_keep_a_badly_modelled_shoulder_off_the_com():
    """Weighted least squares: a shoulder error 15x the wrist's no longer biases the COM.

    Efforts are the payload's exact ones plus a model error per joint that follows the motion
    (as friction or inertia errors do): 0.15 N m on the shoulder and elbow, 0.01 N m on the
    wrist.  The unweighted fit pools them and its COM is off by millimetres; weighted by each
    joint's residual variance it is within a third of that (0.37 against 1.29 mm), and the
    reported sigma stays the unweighted fit's.
    """
    model = RobotModel.from_urdf_file(urdf_path('ur5'))
    payload = Payload('wrist_3_link', 1.5, [0.02, -0.03, 0.06], np.diag([2e-3, 2e-3, 1.5e-3]))
    est = PayloadEstimator(model, 'wrist_3_link')
    truth = model_with_payload(open(urdf_path('ur5'), encoding='utf-8').read(), payload)
    t = np.arange(0.0, 5.0, 0.005)
    freq = np.array([0.25, 0.2, 0.3, 0.35, 0.2, 0.3])
    Q = UR5_HOME + 0.6 * np.sin(2 * np.pi * freq * t[:, None])
    QD = 0.6 * 2 * np.pi * freq * np.cos(2 * np.pi * freq * t[:, None])
    QDD = -0.6 * (2 * np.pi * freq) ** 2 * np.sin(2 * np.pi * freq * t[:, None])
    error_size = np.array([0.15, 0.15, 0.15, 0.01, 0.01, 0.01])
    model_error = error_size * np.sin(2 * np.pi * 0.4 * t[:, None] + np.arange(6))
    for q, qd, qdd, e in zip(Q, QD, QDD, model_error):
        est.add_sample(q, qd, qdd, inverse_dynamics(truth, q, qd, qdd) + e)
    unweighted = est._fit()[0]
    result = est.estimate()
    com_unweighted = np.linalg.norm(unweighted[1:4] / unweighted[0] - payload.com)
    com_weighted = np.linalg.norm(result.com - payload.com)
    assert result.ok, result.reason
    assert com_weighted < 0.4 * com_unweighted and com_weighted < 5e-4, (com_weighted,
                                                                         com_unweighted)
    assert abs(result.mass - 1.5) < 0.01
    assert np.allclose(est.joint_sigma, np.maximum(
        error_size / np.sqrt(2), est.effort_noise), rtol=0.3)      # RMS of each joint's error
    assert np.all(result.com_sigma >= com_weighted / 3)
