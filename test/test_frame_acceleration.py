"""Link-frame velocity and spatial / classical acceleration agree with Pinocchio.

``frame_velocity`` is Pinocchio's ``getFrameVelocity``, ``frame_acceleration`` its
``getFrameAcceleration`` (spatial) and ``getFrameClassicalAcceleration`` after
``forwardKinematics(q, v, a)``, in the three references, for every link (links merged over
fixed joints included) of the robots of test/robots.py, fixed and floating base.  The numpy
reference (the book's forward pass) equals the kernel path; the classical acceleration is the
second derivative of the frame origin; a fixed base's ``base_acceleration`` equals a floating
base moved with that acceleration from rest.  Tolerance 1e-10 relative (measured ~1e-14).
"""

import re

import numpy as np
import pytest

from rnea_ros import (frame_acceleration, frame_jacobian, frame_motion, frame_placement,
                      frame_velocity, inverse_dynamics, last_reaction_wrenches, RobotModel)
from rnea_ros.core.frame_acceleration import frame_motion_reference, REFERENCES
from robots import PinocchioOracle, random_state, URDF, urdf_path

pin = pytest.importorskip('pinocchio')

TOL = 1e-10


def assert_close(ours, theirs, what, tol=TOL):
    """Assert max |ours - theirs| <= tol relative to the largest magnitude (at least 1)."""
    scale = max(1.0, np.abs(theirs).max(initial=0.0))
    err = np.abs(np.asarray(ours) - theirs).max(initial=0.0)
    assert err <= tol * scale, f'{what}: error {err:.3g}'


def pin_frame_motions(oracle, q, qd, qdd):
    """Return {link: {reference: (v, a spatial, a classical)}} from Pinocchio."""
    pm, pd = oracle.pm, oracle.pd
    qp, vp, ap = oracle.to_pin(q, qd, qdd)
    pin.forwardKinematics(pm, pd, qp, vp, ap)
    pin.updateFramePlacements(pm, pd)
    out = {}
    for link in oracle.model.link_names:
        fid = pm.getFrameId(link, pin.FrameType.BODY)
        out[link] = {}
        for name in REFERENCES:
            rf = getattr(pin.ReferenceFrame, name)
            out[link][name] = (pin.getFrameVelocity(pm, pd, fid, rf).vector,
                               pin.getFrameAcceleration(pm, pd, fid, rf).vector,
                               pin.getFrameClassicalAcceleration(pm, pd, fid, rf).vector)
    return out


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('robot', sorted(URDF))
def test_every_link_velocity_and_accelerations_match_pinocchio(robot, floating):
    """Every link, three references, spatial and classical, |qd|, |qdd| up to 3."""
    model = RobotModel.from_urdf_file(urdf_path(robot), floating_base=floating)
    oracle = PinocchioOracle(model, urdf_path(robot))
    q, qd, qdd = random_state(model, np.random.default_rng(5), scale=3.0)
    ws = model.create_workspace()
    for link, by_reference in pin_frame_motions(oracle, q, qd, qdd).items():
        for name, (v, a, a_classical) in by_reference.items():
            where = f'{robot} {link} {name}'
            assert_close(frame_velocity(model, q, qd, link, name, ws=ws), v, f'v {where}')
            assert_close(frame_acceleration(model, q, qd, qdd, link, name, classical=False,
                                            ws=ws), a, f'a {where}')
            assert_close(frame_acceleration(model, q, qd, qdd, link, name, ws=ws),
                         a_classical, f'classical a {where}')


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
def test_merged_sensor_and_tool_frames_are_covered(floating):
    """Frames hung on fixed joints (panda hand, ur5 tool0, talos IMU) move and match Pinocchio."""
    for robot, links in (('panda', ('panda_link8', 'panda_hand')), ('ur5', ('ee_link', 'tool0')),
                         ('talos_reduced', ('imu_link',))):
        model = RobotModel.from_urdf_file(urdf_path(robot), floating_base=floating)
        oracle = PinocchioOracle(model, urdf_path(robot))
        q, qd, qdd = random_state(model, np.random.default_rng(8), scale=2.0)
        expected = pin_frame_motions(oracle, q, qd, qdd)
        for link in links:
            assert link not in model.body_links                # merged over a fixed joint
            if not floating and model.link_body[link][0] < 0:
                continue                                       # fixed to the world here
            a = frame_acceleration(model, q, qd, qdd, link)
            assert np.abs(a).max() > 0.1
            assert_close(a, expected[link]['LOCAL'][2], f'{robot} {link}')


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('robot', ['panda', 'ur5', 'talos_reduced', 'anymal'])
def test_numpy_reference_equals_the_kernel_path(robot, floating):
    """The book's forward pass (6x6 matrices) equals the path through the RNEA kernel."""
    model = RobotModel.from_urdf_file(urdf_path(robot), floating_base=floating)
    rng = np.random.default_rng(9)
    q, qd, qdd = random_state(model, rng, scale=3.0)
    a_0 = None if floating else rng.normal(size=6)
    for link in model.link_names[::max(1, len(model.link_names) // 12)]:
        for name in REFERENCES:
            for classical in (True, False):
                ours = frame_motion(model, q, qd, qdd, link, name, classical, a_0)
                book = frame_motion_reference(model, q, qd, qdd, link, name, classical, a_0)
                for x, y, what in zip(ours, book, 'Xva'):
                    assert_close(x, y, f'{what} {link} {name}', 1e-12)


@pytest.mark.parametrize('robot, link', [('panda', 'panda_hand'), ('ur5', 'tool0')])
def test_classical_acceleration_is_the_second_derivative_of_the_frame_origin(robot, link):
    """Along q(t) = q + qd t + qdd t^2 / 2 the origin's d2p/dt2 is the classical acceleration.

    The spatial acceleration differs by w x v (RBDA §2.11): the test tells them apart.
    """
    model = RobotModel.from_urdf_file(urdf_path(robot))
    q, qd, qdd = random_state(model, np.random.default_rng(4), scale=2.0)
    h = 1e-4

    def origin(t):
        return frame_placement(model, q + qd * t + 0.5 * qdd * t * t, link)[:3, 3]

    d2p = (origin(h) - 2.0 * origin(0.0) + origin(-h)) / (h * h)
    classical = frame_acceleration(model, q, qd, qdd, link, 'LOCAL_WORLD_ALIGNED')
    spatial = frame_acceleration(model, q, qd, qdd, link, 'LOCAL_WORLD_ALIGNED', False)
    np.testing.assert_allclose(classical[:3], d2p, atol=1e-5)
    assert np.abs(spatial[:3] - d2p).max() > 1e-2
    v = frame_velocity(model, q, qd, link, 'LOCAL_WORLD_ALIGNED')
    assert_close(v, frame_jacobian(model, q, link, 'LOCAL_WORLD_ALIGNED') @ qd, 'J qd')


@pytest.mark.parametrize('robot', ['panda', 'ur5'])
def test_base_acceleration_equals_a_floating_base_accelerated_from_rest(robot):
    """A fixed base with a_0 (zero base velocity) is a free-flyer at the identity, v_b = 0.

    Pinocchio's free-flyer model with qdd[:6] = a_0 (the root's frame is the base frame at the
    identity pose) gives every link's classical acceleration; X a_0 + a(joints) is the same.
    """
    fixed = RobotModel.from_urdf_file(urdf_path(robot))
    free = RobotModel.from_urdf_file(urdf_path(robot), floating_base=True)
    oracle = PinocchioOracle(free, urdf_path(robot))
    rng = np.random.default_rng(6)
    q, qd, qdd = random_state(fixed, rng, scale=2.0)
    a_0 = rng.normal(size=6)
    base_q = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    expected = pin_frame_motions(oracle, np.r_[base_q, q], np.r_[np.zeros(6), qd],
                                 np.r_[a_0, qdd])
    for link in fixed.link_names:
        for name in REFERENCES:
            with_base = frame_acceleration(fixed, q, qd, qdd, link, name, base_acceleration=a_0)
            assert_close(with_base, expected[link][name][2], f'{link} {name}')
            X, _, a = frame_motion(fixed, q, qd, qdd, link, name)
            assert_close(X @ a_0 + a, with_base, f'X a_0 + a, {link} {name}', 1e-12)


def test_an_accelerometer_at_rest_reads_minus_gravity_in_its_frame():
    """With a_0 = -g (RBDA §5.3) and the arm at rest, the LOCAL classical part is R^T (-g)."""
    model = RobotModel.from_urdf_file(urdf_path('panda'))
    q, _, _ = random_state(model, np.random.default_rng(7))
    zero = np.zeros(model.nv)
    g = np.array([0.0, 0.0, -9.81])
    for link in ('panda_link0', 'panda_link4', 'panda_hand'):
        R = frame_placement(model, q, link)[:3, :3]
        f = frame_acceleration(model, q, zero, zero, link, base_acceleration=np.r_[-g, 0, 0, 0])
        np.testing.assert_allclose(f, np.r_[R.T @ -g, 0.0, 0.0, 0.0], atol=1e-12)


def test_the_last_reaction_wrenches_survive_a_frame_acceleration():
    """The kernel writes no body force: last_reaction_wrenches still holds the last RNEA's."""
    model = RobotModel.from_urdf_file(urdf_path('panda'))
    rng = np.random.default_rng(10)
    q, qd, qdd = random_state(model, rng)
    inverse_dynamics(model, q, qd, qdd)
    before = last_reaction_wrenches(model).copy()
    q2, qd2, qdd2 = random_state(model, rng)
    frame_acceleration(model, q2, qd2, qdd2, 'panda_hand')
    frame_acceleration(model, q2, qd2, qdd2, 'panda_hand', base_acceleration=np.ones(6))
    np.testing.assert_array_equal(last_reaction_wrenches(model), before)


def test_bad_inputs_are_refused_with_the_reason():
    """Unknown link or reference, NaN, wrong length, a base acceleration on a floating base."""
    model = RobotModel.from_urdf_file(urdf_path('ur5'))
    free = RobotModel.from_urdf_file(urdf_path('ur5'), floating_base=True)
    q = np.zeros(model.nq)
    cases = [
        (lambda: frame_acceleration(model, q, q, q, 'tool9'), "no link 'tool9'"),
        (lambda: frame_acceleration(model, q, q, q, 'tool0', 'GLOBAL'), 'reference must be'),
        (lambda: frame_acceleration(model, q, np.r_[np.nan, q[1:]], q, 'tool0'), 'qd[0]'),
        (lambda: frame_velocity(model, q[:3], q, 'tool0'), 'shape (3,)'),
        (lambda: frame_acceleration(model, q, q, q, 'tool0', base_acceleration=[1.0, 2.0]),
         '6 finite numbers'),
        (lambda: frame_acceleration(free, np.r_[0, 0, 0, 0, 0, 0, 1.0, q], np.zeros(free.nv),
                                    np.zeros(free.nv), 'tool0', base_acceleration=np.ones(6)),
         'fixed-base'),
        (lambda: frame_acceleration(free, np.r_[np.zeros(7), q], np.zeros(free.nv),
                                    np.zeros(free.nv), 'tool0'), 'quaternion'),
    ]
    for call, reason in cases:
        with pytest.raises(ValueError, match=re.escape(reason)):
            call()
