"""The momentum observer, collision detector and external wrench against MuJoCo ground truth.

MuJoCo simulates the panda of its URDF (4 kHz physics, 1 kHz control and recording, see
``observer_sim``); pushes are forces on links through ``xfrc_applied`` and the true external
joint torques are MuJoCo's own J^T F.  The observer knows the same URDF (the "identified"
model: here the true one) and sees only q, qd and the motor efforts.
"""

import numpy as np
from observer_sim import panda_setup, simulate
import pytest
from rnea_ros import (CollisionDetector, external_wrench, gravity_torques, MomentumObserver,
                      observe_recording)

GAIN = 200.0            # 1/s
HELD = 'held'           # the simulator's efforts: applied over the step ending at the sample
THRESHOLD = 0.3         # N m: > 3 x the largest |r| of free fast motion (0.08, test below)
PUSH_START, PUSH_END = 0.3, 0.6


@pytest.fixture(scope='module')
def setup():
    return panda_setup()


def _world_jacobian_torques(model, q, link, wrench_world_origin):
    from rnea_ros import frame_jacobian
    return frame_jacobian(model, q, link, reference='WORLD').T @ wrench_world_origin


# Link, push point on its surface (link frame, m), push direction (world frame): a direction
# with a lever on some joint at the start pose (a force through every joint axis has none).
PUSHES = [('panda_link1', (0.08, 0.0, 0.0), (0.0, 1.0, 0.0)),
          ('panda_link2', (0.0, 0.0, 0.08), (1.0, 0.0, 0.0)),
          ('panda_link3', (0.0, 0.0, 0.08), (1.0, 0.0, 0.0)),
          ('panda_link4', (0.0, 0.08, 0.0), (1.0, 0.0, 0.0)),
          ('panda_link5', (0.0, 0.0, 0.08), (0.0, 1.0, 0.0)),
          ('panda_link6', (0.08, 0.0, 0.0), (0.0, 1.0, 0.0)),
          ('panda_link7', (0.08, 0.0, 0.0), (0.0, 1.0, 0.0)),
          ('panda_hand', (0.08, 0.0, 0.0), (0.0, 1.0, 0.0))]


@pytest.mark.parametrize('link, point, direction', PUSHES)
@pytest.mark.parametrize('force', [10.0, 50.0])
def test_pushes_on_each_link_are_estimated_and_detected(setup, link, point, direction, force):
    """10 and 50 N pushes: |r - J^T F| within 5 % or 0.2 N m after 50 ms; detected in 20 ms."""
    model = setup[0]
    push = (link, force * np.asarray(direction), PUSH_START, PUSH_END, np.asarray(point))
    t, Q, QD, E, true = simulate(setup, 0.7, push=push, seed=len(link))
    result = observe_recording(model, t, Q, QD, E, gains=GAIN, thresholds=THRESHOLD,
                               min_duration=0.005, effort_sampling=HELD)
    r = result['r']
    settled = (t >= PUSH_START + 0.05) & (t < PUSH_END)
    error = np.abs(r[settled] - true[settled])
    allowed = np.maximum(0.05 * np.abs(true[settled]), 0.2)
    assert np.all(error <= allowed), (link, force, error.max(axis=0))
    assert np.abs(true[settled]).max() > THRESHOLD       # the push is detectable at all
    starts = [e for e in result['events'] if e.kind == 'collision']
    assert len(starts) == 1, [e.describe() for e in result['events']]
    assert PUSH_START <= starts[0].t <= PUSH_START + 0.020, starts[0].describe()
    above = np.abs(true[np.searchsorted(t, PUSH_START)]) > THRESHOLD
    assert set(starts[0].joints) <= {model.joint_names[j] for j in range(model.nv)}
    assert {model.joint_names[j] for j in np.flatnonzero(above)} & set(starts[0].joints)


def test_no_collision_in_free_fast_motion_with_the_true_model(setup):
    """30 s of fast tracking (up to ~2.5 rad/s, 2 seeds): no event, |r| far below THRESHOLD."""
    model = setup[0]
    largest = 0.0
    for seed in (1, 2):
        t, Q, QD, E, _ = simulate(setup, 15.0, amplitude=0.8, frequency=0.8, seed=seed)
        assert np.abs(QD).max() > 2.0           # fast
        result = observe_recording(model, t, Q, QD, E, gains=GAIN, thresholds=THRESHOLD,
                                   min_duration=0.005, effort_sampling=HELD)
        assert result['events'] == []
        largest = max(largest, float(np.nanmax(np.abs(result['r']))))
    assert largest < THRESHOLD / 3.0, largest


def test_friction_of_the_identified_model_keeps_free_motion_quiet():
    """An arm with viscous friction: no alarm with it in the model, false alarms without it."""
    from observer_sim import PANDA
    from rnea_ros import RobotModel
    rubbing = panda_setup(viscous=1.5)
    assert np.all(rubbing[0].friction_viscous[:7] == 1.5)
    t, Q, QD, E, _ = simulate(rubbing, 10.0, amplitude=0.8, frequency=0.8, seed=1)
    largest = {}
    for name, model in (('identified', rubbing[0]), ('nominal', RobotModel.from_urdf_file(PANDA))):
        result = observe_recording(model, t, Q, QD, E, gains=GAIN, thresholds=THRESHOLD,
                                   min_duration=0.005, effort_sampling=HELD)
        largest[name] = (float(np.nanmax(np.abs(result['r']))), len(result['events']))
    assert largest['identified'][1] == 0 and largest['identified'][0] < THRESHOLD / 3.0
    assert largest['nominal'][1] > 0 and largest['nominal'][0] > 10 * THRESHOLD, largest


def test_tool_wrench_from_the_observer_is_the_applied_push(setup):
    """A 30 N push on the hand: the wrench at panda_hand (world axes) within 10 %."""
    import mujoco
    model, mj = setup[0], setup[1]
    force = np.array([12.0, -20.0, 18.0])
    t, Q, QD, E, true = simulate(setup, 0.5, push=('panda_hand', force, 0.2, 0.5), seed=3)
    r = observe_recording(model, t, Q, QD, E, gains=GAIN, effort_sampling=HELD)['r']
    k = len(t) - 1
    data = mujoco.MjData(mj)
    qpos = setup[2]
    data.qpos[qpos] = Q[k]
    mujoco.mj_kinematics(mj, data)
    body = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, 'panda_hand')
    arm = data.xipos[body] - data.xpos[body]          # push at the COM, wrench about origin
    applied = np.concatenate([force, np.cross(arm, force)])
    estimated = external_wrench(model, Q[k], r[k], 'panda_hand',
                                reference='LOCAL_WORLD_ALIGNED')
    assert np.linalg.norm(estimated[:3] - force) <= 0.1 * np.linalg.norm(force)
    assert np.linalg.norm(estimated - applied) <= 0.1 * np.linalg.norm(applied)
    # Same wrench in the link frame (the node's ~/external_wrench): rotated by the link axes.
    R = data.xmat[body].reshape(3, 3)
    local = external_wrench(model, Q[k], r[k], 'panda_hand', reference='LOCAL')
    np.testing.assert_allclose(local, np.concatenate([R.T @ estimated[:3],
                                                      R.T @ estimated[3:]]), atol=1e-9)


def test_external_wrench_inverts_the_jacobian_transpose_and_is_bounded_at_singularities(setup):
    """The wrench of r = J^T F is F (nv >= 6); at a singular pose the gain is <= 1/damping."""
    from rnea_ros import frame_jacobian
    model = setup[0]
    rng = np.random.default_rng(5)
    q = np.array([0.3, -0.5, 0.2, -2.0, 0.4, 1.6, 0.5, 0.02, 0.02])
    F = rng.normal(size=6)
    for reference in ('LOCAL', 'WORLD', 'LOCAL_WORLD_ALIGNED'):
        J = frame_jacobian(model, q, 'panda_link7', reference=reference)
        np.testing.assert_allclose(external_wrench(model, q, J.T @ F, 'panda_link7',
                                                   reference=reference), F, atol=1e-9)
    stretched = np.zeros(model.nq)                       # arm straight up: singular
    J = frame_jacobian(model, stretched, 'panda_hand', reference='LOCAL')
    assert np.linalg.svd(J, compute_uv=False)[-1] < 1e-9
    r = rng.normal(size=model.nv)
    F = external_wrench(model, stretched, r, 'panda_hand', damping=0.05)
    assert np.all(np.isfinite(F)) and np.linalg.norm(F) <= np.linalg.norm(r) / 0.05 + 1e-9


def test_static_push_converges_to_j_transpose_f_and_follows_the_gain(setup):
    """At rest, tau_m = g(q) - J^T F: r -> J^T F as 1 - exp(-K t) per joint (no simulator)."""
    model = setup[0]
    q = np.array([0.1, -0.4, 0.3, -2.1, 0.2, 1.7, 0.6, 0.02, 0.02])
    wrench = np.array([5.0, -3.0, 8.0, 0.5, 0.2, -0.4])
    tau_ext = _world_jacobian_torques(model, q, 'panda_link6', wrench)
    gains = np.linspace(20.0, 200.0, model.nv)
    obs = MomentumObserver(model, gains)
    zero = np.zeros(model.nv)
    tau_m = gravity_torques(model, q) - tau_ext        # the arm is held still by the push
    for k in range(101):
        r = obs.update(0.001 * k, q, zero, tau_m)
    np.testing.assert_allclose(r, tau_ext * (1.0 - np.exp(-gains * 0.1)), atol=1e-9)


def test_output_filter_gives_the_second_order_step_response(setup):
    """Output filter K_f: a static push shows as 1 - (K_f e^-Kt - K e^-K_f t) / (K_f - K)."""
    model = setup[0]
    q = np.array([0.1, -0.4, 0.3, -2.1, 0.2, 1.7, 0.6, 0.02, 0.02])
    tau_ext = _world_jacobian_torques(model, q, 'panda_link6',
                                      np.array([5.0, -3.0, 8.0, 0.5, 0.2, -0.4]))
    K, Kf = 200.0, 120.0
    obs = MomentumObserver(model, K, output_filter=Kf)
    zero = np.zeros(model.nv)
    tau_m = gravity_torques(model, q) - tau_ext
    for k in range(41):
        t = 0.001 * k
        r = obs.update(t, q, zero, tau_m)
        step = 1.0 - (Kf * np.exp(-K * t) - K * np.exp(-Kf * t)) / (Kf - K)
        # the filter's input is held over each step (exact for its samples, not the ODE's)
        np.testing.assert_allclose(r, tau_ext * step, atol=0.03 * np.abs(tau_ext).max())
    assert np.abs(r - tau_ext).max() < 0.05 * np.abs(tau_ext).max()
    for bad in (-1.0, np.nan, 1e7, True):
        with pytest.raises(ValueError, match='output_filter'):
            MomentumObserver(model, K, output_filter=bad)


def test_output_filter_is_the_low_pass_of_r_and_cuts_velocity_noise(setup):
    """Same samples with and without the filter: filtered = output_step over the plain r.

    White velocity noise at rest (0.002 rad/s, 1 kHz) reaches r through p = M qd: its standard
    deviation is sqrt(2 / (1 + a)) (1 - a) / h sigma |M_j| (a = exp(-K h); |M_j| the norm of
    row j of M), about K sigma |M_j|; the filter at 200 1/s cuts it by more than 2.5x.
    """
    from rnea_ros import mass_matrix
    from rnea_ros.core.kernels.observer import output_step
    model = setup[0]
    q = np.array([0.1, -0.4, 0.3, -2.1, 0.2, 1.7, 0.6, 0.02, 0.02])
    rng = np.random.default_rng(2)
    plain = MomentumObserver(model, 200.0, friction=False)
    filtered = MomentumObserver(model, 200.0, friction=False, output_filter=200.0)
    tau_m = gravity_torques(model, q)
    R, RF = [], []
    for k in range(3000):
        qd = 0.002 * rng.standard_normal(model.nv)
        R.append(plain.update(0.001 * k, q, qd, tau_m).copy())
        RF.append(filtered.update(0.001 * k, q, qd, tau_m).copy())
    R, RF = np.array(R), np.array(RF)
    out = np.zeros(model.nv)
    expected = []
    for k in range(1, len(R)):
        output_step(R[k], 200.0, 0.001, out)
        expected.append(out.copy())
    np.testing.assert_allclose(RF[1:], expected, rtol=1e-9, atol=1e-12)
    M = np.linalg.norm(mass_matrix(model, q), axis=1)
    std, std_f = R[500:].std(axis=0), RF[500:].std(axis=0)
    arm = slice(0, 7)
    a = np.exp(-0.2)
    np.testing.assert_allclose(std[arm], np.sqrt(2.0 / (1.0 + a)) * (1.0 - a) / 0.001 * 0.002
                               * M[arm], rtol=0.15)
    assert np.all(std_f[arm] < std[arm] / 2.5), std / std_f


def test_irregular_sampling_keeps_the_estimate(setup):
    """Samples dropped at random (steps of 1 to 4 ms): the estimate stays within tolerance."""
    model = setup[0]
    push = ('panda_link4', np.array([0.0, 25.0, 0.0]), PUSH_START, PUSH_END)
    t, Q, QD, E, true = simulate(setup, 0.7, push=push, seed=4)
    rng = np.random.default_rng(0)
    keep = np.sort(np.concatenate([[0], rng.choice(np.arange(1, t.size), t.size // 2,
                                                   replace=False)]))
    assert np.diff(t[keep]).max() >= 0.004
    r = observe_recording(model, t[keep], Q[keep], QD[keep], E[keep], gains=GAIN,
                          effort_sampling=HELD)['r']
    tk = t[keep]
    settled = (tk >= PUSH_START + 0.05) & (tk < PUSH_END)
    error = np.abs(r[settled] - true[keep][settled])
    assert np.all(error <= np.maximum(0.05 * np.abs(true[keep][settled]), 0.2)), \
        error.max(axis=0)


def test_bad_samples_suspend_the_observer_and_say_why(setup):
    """NaN, partial or missing efforts and a bad state are not used; short gaps are bridged."""
    model = setup[0]
    q = np.array([0.1, -0.4, 0.3, -2.1, 0.2, 1.7, 0.6, 0.02, 0.02])
    zero = np.zeros(model.nv)
    tau_ext = np.linspace(-1.0, 1.0, model.nv)
    tau_m = gravity_torques(model, q) - tau_ext
    obs = MomentumObserver(model, GAIN, max_gap=0.05)
    assert np.all(obs.update(0.0, q, zero, tau_m) == 0.0)
    bad = tau_m.copy()
    bad[2] = np.nan
    cases = [(bad, 'not finite'), (tau_m[:5], 'partial'), (None, 'no measured efforts')]
    for k, (effort, reason) in enumerate(cases):
        before = obs.r.copy()
        assert obs.update(0.001 * (k + 1), q, zero, effort) is None
        assert reason in obs.suspended
        np.testing.assert_array_equal(obs.r, before)
    q_bad = q.copy()
    q_bad[0] = np.inf
    assert obs.update(0.004, q_bad, zero, tau_m) is None and 'not finite' in obs.suspended
    assert obs.update(0.0, q, zero, tau_m) is None or obs.note       # time went back
    obs.reset()
    obs.update(0.0, q, zero, tau_m)
    for k in range(1, 51):                          # every 5th sample lost
        obs.update(0.002 * k, q, zero, tau_m if k % 5 else None)
    assert 'no measured efforts' in obs.suspended
    r = obs.update(0.102, q, zero, tau_m)            # bridges 0.098 -> 0.102
    assert obs.suspended == '' and obs.note == ''
    np.testing.assert_allclose(r, tau_ext * (1.0 - np.exp(-GAIN * 0.102)), atol=1e-9)
    r = obs.update(0.202, q, zero, tau_m)            # 100 ms gap > max_gap: restart
    assert 'restarted' in obs.note and np.all(r == 0.0)
    assert obs.update(0.203, q, zero, tau_m) is not None


def test_absurd_gains_and_detector_settings_are_refused(setup):
    """Gains <= 0, NaN or huge, wrong lengths, thresholds <= 0: ValueError naming them."""
    model = setup[0]
    for gains in (0.0, -5.0, np.nan, 1e9, [1.0, 2.0]):
        with pytest.raises(ValueError, match='gains'):
            MomentumObserver(model, gains)
    names = model.joint_names
    for thresholds in (0.0, -1.0, np.nan, [1.0, 2.0]):
        with pytest.raises(ValueError, match='thresholds'):
            CollisionDetector(names, thresholds)
    with pytest.raises(ValueError, match='hysteresis'):
        CollisionDetector(names, 1.0, hysteresis=1.0)


def test_detector_hysteresis_and_minimum_duration():
    """A blip shorter than min_duration is ignored; the collision ends below (1 - h) thr."""
    det = CollisionDetector(('a', 'b'), [1.0, 2.0], hysteresis=0.25, min_duration=0.003)
    events = []
    signal = ([(0.0, 0.0)] * 3 + [(1.5, 0.0)] * 2 + [(0.0, 0.0)] * 3 + [(0.0, 2.5)] * 6
              + [(1.2, 1.7)] * 3 + [(0.9, 1.6)] * 2 + [(0.7, 1.4)] * 2)
    for k, (a, b) in enumerate(signal):
        event = det.update(0.001 * k, np.array([a, -b]))
        if event:
            events.append((k, event))
    assert [(k, e.kind, e.joints) for k, e in events] == [
        (11, 'collision', ('b',)), (19, 'clear', ('b', 'a'))]
    assert events[1][1].peak == {'b': 2.5, 'a': 1.2}
    assert events[0][1].start == pytest.approx(0.008)
    assert 'panda' not in events[0][1].describe() and "['b']" in events[0][1].describe()
    for wrong in (np.zeros(3), [1.0]):              # a residual of another length: refused
        with pytest.raises(ValueError, match='entries'):
            det.update(1.0, wrong)


def test_gated_threshold_kernel_equals_its_numpy_form():
    """exceed_gated: |r|, the reversal window state and each joint's threshold, as documented."""
    from rnea_ros.core.kernels.observer import exceed_gated
    rng = np.random.default_rng(11)
    n = 9
    moving = rng.uniform(0.1, 0.5, n)
    reversal = moving + rng.uniform(0.0, 2.0, n)
    band, hold = 0.1, 0.02
    slow_until, slow_until_np = np.full(n, -np.inf), np.full(n, -np.inf)
    thresholds, out = np.empty(n), np.empty(n)
    for k in range(300):
        t = 0.001 * k
        r, qd = rng.normal(0.0, 1.0, n), rng.normal(0.0, 0.2, n)
        qd[rng.random(n) < 0.05] = np.nan
        count = exceed_gated(r, qd, t, moving, reversal, band, hold, slow_until, thresholds,
                             out)
        slow = ~(np.abs(qd) >= band)
        slow_until_np[slow] = t + hold
        expected = np.where(t <= slow_until_np, reversal, moving)
        np.testing.assert_array_equal(slow_until, slow_until_np)
        np.testing.assert_array_equal(thresholds, expected)
        np.testing.assert_array_equal(out, np.abs(r))
        assert count == int((np.abs(r) > expected).sum())
    assert exceed_gated(r, qd[:3], 1.0, moving, reversal, band, hold, slow_until, thresholds,
                        out) == -1


def test_reversal_windows_follow_the_detectors_rule():
    """reversal_windows over a recording marks exactly the samples the detector gates."""
    from rnea_ros.core.observer import reversal_windows
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.uniform(0.0005, 0.0015, 2000))
    QD = 0.3 * np.sin(2.0 * np.pi * np.outer(t, [0.5, 1.3, 2.0])) + rng.normal(0, 0.01, (2000, 3))
    det = CollisionDetector(('a', 'b', 'c'), 1.0, reversal_thresholds=2.0, reversal_band=0.1,
                            reversal_hold=0.02)
    gated = np.empty_like(QD, dtype=bool)
    for k in range(t.size):
        det.update(t[k], np.zeros(3), QD[k])
        gated[k] = det.thresholds == 2.0
    windows = reversal_windows(t, QD, 0.1, 0.02)
    np.testing.assert_array_equal(windows, gated)
    assert 0.1 < windows.mean() < 0.9


def test_reversal_gated_thresholds_ride_out_a_reversal_and_catch_the_same_torque_in_motion():
    """1.0 N m on a slow (reversing) joint is not a collision at 2 N m; in motion at 0.5 it is.

    With one threshold of 2 N m (above the reversal's residual) the same 1.0 N m in motion is
    missed: that is what the gating buys.  The window lasts ``reversal_hold`` after the joint
    leaves the band; a collision needs ``min_duration`` above the moving threshold.
    """
    dt = 0.001
    gated = CollisionDetector(('a', 'b'), 0.5, min_duration=0.005, reversal_thresholds=2.0,
                              reversal_band=0.1, reversal_hold=0.02)
    single = CollisionDetector(('a', 'b'), 2.0, min_duration=0.005)
    events, missed = [], []
    for k in range(200):
        t = k * dt
        qd = np.array([0.05 if t < 0.1 else 0.8, 0.8])     # joint a reverses until 0.1 s
        r = np.array([1.0 if 0.03 <= t < 0.18 else 0.0, 0.1])
        event = gated.update(t, r, qd)
        if event is not None:
            events.append((round(t, 4), event.kind, event.joints))
        if single.update(t, r) is not None:
            missed.append(t)
    # In the window until 0.1 + 0.02 s; above 0.5 from then on for 5 ms: raised at 0.125 s.
    assert events == [(0.125, 'collision', ('a',)), (0.18, 'clear', ('a',))]
    assert missed == []
    with pytest.raises(ValueError, match='velocities'):
        gated.update(1.0, np.zeros(2))
    with pytest.raises(ValueError, match='qd 3'):
        gated.update(1.0, np.zeros(2), np.zeros(3))


def test_bad_reversal_settings_are_refused():
    """Reversal thresholds below the moving ones, <= 0 or of another length; bad band, hold."""
    names = ('a', 'b')
    with pytest.raises(ValueError, match=r"reversal_thresholds must be >= thresholds.*'b'"):
        CollisionDetector(names, [1.0, 1.0], reversal_thresholds=[2.0, 0.5])
    for bad in (0.0, np.nan, [1.0, 2.0, 3.0]):
        with pytest.raises(ValueError, match='reversal_thresholds'):
            CollisionDetector(names, 0.5, reversal_thresholds=bad)
    for band in (-0.1, np.inf, np.nan):
        with pytest.raises(ValueError, match='reversal_band'):
            CollisionDetector(names, 0.5, reversal_thresholds=1.0, reversal_band=band)
    with pytest.raises(ValueError, match='reversal_hold'):
        CollisionDetector(names, 0.5, reversal_thresholds=1.0, reversal_hold=-1.0)
    assert not CollisionDetector(names, 0.5, reversal_thresholds=[]).gated


def test_residual_step_kernel_equals_its_numpy_form():
    """The residual step of the observer kernel computes its documented numpy form."""
    from rnea_ros.core.kernels.observer import residual_step
    rng = np.random.default_rng(7)
    n = 9
    p, p_prev, beta, beta_prev, tau, tau_prev, gains, r = (
        *rng.normal(size=(6, n)), rng.uniform(1, 500, n), rng.normal(size=n))
    r0 = r.copy()
    h = 0.0013
    for held in (True, False):
        r = r0.copy()
        assert residual_step(p, p_prev, beta, beta_prev, tau, tau_prev, gains, h, held, r) == 0
        hat = ((p - p_prev) / h - (beta + beta_prev) / 2
               - (tau if held else (tau + tau_prev) / 2))
        np.testing.assert_allclose(r, hat + np.exp(-gains * h) * (r0 - hat), rtol=1e-12)
    p[0] = np.nan
    assert residual_step(p, p_prev, beta, beta_prev, tau, tau_prev, gains, h, True, r) == 1


def test_rnea_ros_observe_on_a_bag_reports_the_push_and_suggests_thresholds(
        setup, tmp_path, capsys):
    """A recorded push on a bag: `rnea-ros observe` names the collision; params file honoured."""
    import json
    from rnea_ros.analysis.recordings import write_joint_states
    from rnea_ros.analysis.cli import main
    from observer_sim import PANDA
    model = setup[0]
    push = ('panda_link5', np.array([0.0, 30.0, 0.0]), 0.3, 0.45, np.array([0.0, 0.0, 0.08]))
    t, Q, QD, E, _ = simulate(setup, 0.6, push=push, seed=6)
    bag = str(tmp_path / 'bag')
    write_joint_states(bag, t + 50.0, list(model.joint_names), Q, QD, E)
    params = tmp_path / 'params.yaml'
    params.write_text('rnea:\n  ros__parameters:\n    observer_gains: [200.0]\n'
                      '    observer_effort_sampling: held\n'
                      f'    collision_thresholds: [{THRESHOLD}]\n')
    assert main(['observe', bag, '--urdf', PANDA, '--params', str(params), '--json']) == 0
    out = json.loads(capsys.readouterr().out)
    starts = [e for e in out['events'] if e['kind'] == 'collision']
    assert len(starts) == 1 and 0.3 <= starts[0]['t'] <= 0.32 and starts[0]['joints']
    assert out['suspended'] == 0 and out['used'] == t.size
    assert main(['observe', bag, '--urdf', PANDA, '--thresholds', '1e3', '--out',
                 str(tmp_path / 'plots')]) == 0
    text = capsys.readouterr().out
    assert '0 collision(s)' in text and 'suggest' in text
    assert (tmp_path / 'plots' / 'external_torques.png').is_file()
    assert main(['observe', bag, '--urdf', PANDA, '--gains', '-3']) == 2
    assert 'gains' in capsys.readouterr().err


def test_rnea_ros_observe_suggests_gated_thresholds_and_honours_them_from_params(
        setup, tmp_path, capsys):
    """Gated suggestions from the samples outside / inside the reversal windows; params used.

    Free motion: moving suggestion = max(1.5 x max |r| outside the windows, floor), reversal
    suggestion = the one-threshold one; as node parameter lines.  A push with the reversal
    thresholds of the parameter file far above it is still raised: the pushed joints move.
    """
    import json
    from rnea_ros.analysis.recordings import write_joint_states
    from rnea_ros.analysis.cli import main
    from rnea_ros.core.observer import reversal_windows
    from observer_sim import PANDA
    model = setup[0]
    t, Q, QD, E, _ = simulate(setup, 0.6, seed=6)
    bag = str(tmp_path / 'free')
    write_joint_states(bag, t + 50.0, list(model.joint_names), Q, QD, E)
    assert main(['observe', bag, '--urdf', PANDA, '--effort-sampling', 'held', '--floor',
                 '0.01', '--json']) == 0
    joints = json.loads(capsys.readouterr().out)['joints']
    obs = observe_recording(model, t, Q, QD, E, gains=GAIN, effort_sampling=HELD)
    windows = reversal_windows(t, QD)
    r = np.abs(obs['r'])
    for j, name in enumerate(model.joint_names):
        entry = joints[name]
        if windows[:, j].all():
            assert entry['suggested_moving_threshold'] == entry['suggested_threshold']
            continue
        moving = r[~windows[:, j], j].max()
        assert entry['max_moving'] == pytest.approx(moving, rel=1e-5, abs=1e-8)  # bag stamps
        assert entry['suggested_moving_threshold'] == pytest.approx(max(1.5 * moving, 0.01),
                                                                    rel=1e-5)
        assert entry['suggested_reversal_threshold'] == pytest.approx(
            max(entry['suggested_threshold'], entry['suggested_moving_threshold']))
    assert main(['observe', bag, '--urdf', PANDA, '--effort-sampling', 'held']) == 0
    text = capsys.readouterr().out
    assert 'collision_reversal_thresholds: [' in text and 'collision_reversal_band: 0.1' in text
    push = ('panda_link5', np.array([0.0, 30.0, 0.0]), 0.3, 0.45, np.array([0.0, 0.0, 0.08]))
    t, Q, QD, E, _ = simulate(setup, 0.6, push=push, seed=6)
    bag = str(tmp_path / 'push')
    write_joint_states(bag, t + 50.0, list(model.joint_names), Q, QD, E)
    params = tmp_path / 'params.yaml'
    params.write_text('/**:\n  ros__parameters:\n    observer_effort_sampling: held\n'
                      f'    collision_thresholds: [{THRESHOLD}]\n'
                      '    collision_reversal_thresholds: [1000.0]\n'
                      '    collision_reversal_band: 0.05\n')
    assert main(['observe', bag, '--urdf', PANDA, '--params', str(params), '--json']) == 0
    out = json.loads(capsys.readouterr().out)
    assert out['reversal_band'] == 0.05
    starts = [e for e in out['events'] if e['kind'] == 'collision']
    assert len(starts) == 1 and 0.3 <= starts[0]['t'] <= 0.32


@pytest.mark.parametrize('n, damping', [(9, 0.0), (9, 0.05), (7, 2.0), (4, 0.05), (4, 0.0)])
def test_damped_least_squares_kernel_equals_its_svd_form(n, damping):
    """(J J^T + l^2 I)^-1 J r by Jacobi rotations = U diag(s / (s^2 + l^2)) V^T r (SVD)."""
    from rnea_ros.core.kernels.observer import damped_least_squares
    rng = np.random.default_rng(n)
    for scale in (1.0, 1e-3):                    # well conditioned, then nearly singular
        J = rng.normal(size=(6, n))
        J[5] *= scale
        r = rng.normal(size=n)
        U, s, Vt = np.linalg.svd(J, full_matrices=False)
        lam2 = max(0.0, damping ** 2 - s[-1] ** 2)
        expected = U @ (s / (s ** 2 + lam2) * (Vt @ r))
        F = np.empty(6)
        assert damped_least_squares(J, r, damping, np.empty((6, 6)), np.empty((6, 6)),
                                    np.empty(6), F) >= 0
        np.testing.assert_allclose(F, expected, rtol=1e-8, atol=1e-8 * np.abs(expected).max())


def test_floating_base_observer_sees_the_support_wrench_and_the_push():
    """Floating panda at rest: base rows of r = support wrench g(q)[:6], joint rows = J^T F.

    The base has no actuation: efforts are given for the joints only.
    """
    from observer_sim import PANDA
    from rnea_ros import frame_jacobian, RobotModel
    model = RobotModel.from_urdf_file(PANDA, floating_base=True)
    q = np.concatenate([[0.1, -0.2, 0.3], [0.0, 0.0, np.sin(0.2), np.cos(0.2)],
                        [0.1, -0.4, 0.3, -2.1, 0.2, 1.7, 0.6, 0.02, 0.02]])
    wrench = np.array([3.0, -2.0, 5.0, 0.1, 0.2, -0.3])
    tau_ext = frame_jacobian(model, q, 'panda_link6', reference='LOCAL').T @ wrench
    g = gravity_torques(model, q)
    effort = (g - tau_ext)[6:]                          # the joints' motors hold the arm
    obs = MomentumObserver(model, GAIN)
    zero = np.zeros(model.nv)
    for k in range(101):
        r = obs.update(0.001 * k, q, zero, effort)
    expected = np.concatenate([g[:6], tau_ext[6:]]) * (1 - np.exp(-GAIN * 0.1))
    np.testing.assert_allclose(r, expected, atol=1e-8)


def test_rnea_ros_observe_builds_the_node_model_from_identify_params(tmp_path, capsys):
    """PARAMS.yaml of `rnea-ros identify` (under /**): law, Fv-, Fs-, Stribeck and offsets apply.

    Efforts of a recording made by a model with every friction term (tanh law, direction-
    dependent viscous and Coulomb friction, Stribeck, offsets) give external torques of ~0 in
    `rnea-ros observe` with that file, and a model equal to the one the node builds from it.
    Reading only friction_viscous / friction_coulomb / armature (as before) left newton-metres.
    """
    import json
    from types import SimpleNamespace
    import yaml
    from rnea_ros import inverse_dynamics_batch, RobotModel
    from rnea_ros.analysis.recordings import write_joint_states
    from rnea_ros.analysis.cli import main
    from rnea_ros.analysis.observe import observe, read_params
    from rnea_ros.analysis.output import node_parameters
    from rnea_ros.core.urdf import read_urdf
    from rnea_ros.node.params import node_config
    from rnea_ros.node.runtime import load_model
    from observer_sim import PANDA
    plain = RobotModel.from_urdf_file(PANDA)
    names, n = plain.joint_names, plain.nv
    rng = np.random.default_rng(3)

    def per_joint(low, high):
        return dict(zip(names, rng.uniform(low, high, n).tolist()))

    terms = {'friction_viscous': per_joint(0.5, 1.5),
             'friction_viscous_negative': per_joint(1.5, 3.0),
             'friction_coulomb': per_joint(0.5, 1.0), 'friction_coulomb_negative': per_joint(1, 2),
             'friction_stribeck': per_joint(0.3, 0.6), 'effort_offset': per_joint(-0.5, 0.5),
             'armature': per_joint(0.01, 0.1), 'friction_law': 'tanh', 'coulomb_band': 0.05,
             'stribeck_velocity': 0.2}
    truth = RobotModel.from_urdf_file(PANDA, **terms)
    identified = SimpleNamespace(model_options=lambda model: truth.joint_term_options())
    params = tmp_path / 'PARAMS.yaml'
    params.write_text(node_parameters(truth, identified))
    assert list(yaml.safe_load(params.read_text())) == ['/**']
    t = np.arange(1000) * 1e-3                  # 1 s at 1 kHz, every joint reversing
    w, phase = 2 * np.pi * rng.uniform(0.8, 1.5, n), rng.uniform(0, 2 * np.pi, n)
    Q = 0.3 * np.sin(w * t[:, None] + phase)
    QD = 0.3 * w * np.cos(w * t[:, None] + phase)
    QDD = -0.3 * w ** 2 * np.sin(w * t[:, None] + phase)
    E = inverse_dynamics_batch(truth, Q, QD, QDD)
    bag = str(tmp_path / 'bag')
    write_joint_states(bag, t + 10.0, list(names), Q, QD, E)

    assert main(['observe', bag, '--urdf', PANDA, '--params', str(params), '--json']) == 0
    out = json.loads(capsys.readouterr().out)
    assert out['used'] == t.size
    assert max(j['max'] for j in out['joints'].values()) < 0.01       # N m, of ~2 N m friction
    cfg = node_config(read_params(str(params)))
    node = load_model('file', PANDA, cfg)
    offline = observe(read_urdf(PANDA), t, list(names), Q, QD, E, read_params(str(params)))
    np.testing.assert_array_equal(offline['model'].friction_table, node.friction_table)
    np.testing.assert_array_equal(offline['model'].friction_table, truth.friction_table)
    assert offline['model'].friction_law == 'tanh' == node.friction_law

    legacy = {k: [terms[k][j] for j in names] for k in ('friction_viscous', 'friction_coulomb',
                                                        'armature')}
    partial = observe(read_urdf(PANDA), t, list(names), Q, QD, E, legacy)
    assert partial['max'].max() > 0.5               # what the old reading left unexplained


@pytest.mark.parametrize('law', ['linear', 'tanh'])
def test_friction_kernel_equals_joint_friction(law):
    """subtract_friction = joint_friction: both directions, Stribeck, offsets, at and near 0.

    With per-joint velocity scales v_s and v_st (friction_coulomb_band / _stribeck_velocity).
    """
    from observer_sim import PANDA
    from rnea_ros import RobotModel
    from rnea_ros.core.dynamics import joint_friction
    from rnea_ros.core.kernels.observer import subtract_friction
    plain = RobotModel.from_urdf_file(PANDA, floating_base=True)
    rng = np.random.default_rng(5)

    def per_joint(low=0.1, high=2.0):
        return dict(zip(plain.joint_names, rng.uniform(low, high, plain.njoints).tolist()))
    model = RobotModel.from_urdf_file(
        PANDA, floating_base=True, friction_law=law, coulomb_band=0.05, stribeck_velocity=0.2,
        friction_viscous=per_joint(), friction_viscous_negative=per_joint(),
        friction_coulomb=per_joint(), friction_coulomb_negative=per_joint(),
        friction_stribeck=per_joint(), effort_offset=per_joint(),
        friction_coulomb_band=per_joint(0.01, 0.2),
        friction_stribeck_velocity=per_joint(0.05, 0.5))
    assert np.ptp(model.coulomb_bands) > 0.05 and np.ptp(model.stribeck_velocities) > 0.1
    table = np.column_stack([model.friction_table, model.coulomb_bands,
                             model.stribeck_velocities])    # the kernel's 8-column table
    for scale in (0.01, 0.1, 1.0, 5.0):
        qd = rng.normal(scale=scale, size=model.nv)
        qd[-1] = 0.0
        beta = rng.normal(size=model.nv)
        expected = beta - joint_friction(model, qd)
        assert subtract_friction(table, qd, 6, law == 'tanh', beta) == 0
        np.testing.assert_allclose(beta, expected, rtol=1e-13, atol=1e-13)
