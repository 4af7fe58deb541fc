"""Link-frame kinematics and the Coriolis matrix agree with Pinocchio on example-robot-data.

``frame_placement`` is Pinocchio's ``data.oMf`` and ``frame_jacobian`` its ``getFrameJacobian``
in the three references, for every link of every valid URDF (links merged over fixed joints,
such as tool and sensor frames, included), fixed and floating base; ``coriolis_matrix`` is
``computeCoriolisMatrix``.  Tolerance 1e-10 relative to the largest entry (measured ~1e-14).
"""

import numpy as np
import pytest

from rnea_ros import (coriolis_matrix, coriolis_torques, frame_jacobian, frame_placement,
                      RobotModel)
from robots import all_urdfs, PinocchioOracle, random_state, URDF, urdf_path
from test_dynamics_pinocchio import KNOWN_INVALID

pin = pytest.importorskip('pinocchio')

TOL = 1e-10
REFERENCES = {'LOCAL': 'LOCAL', 'WORLD': 'WORLD', 'LOCAL_WORLD_ALIGNED': 'LOCAL_WORLD_ALIGNED'}


def assert_close(ours, theirs, what):
    """Assert max |ours - theirs| <= TOL relative to the largest magnitude (at least 1)."""
    scale = max(1.0, np.abs(theirs).max(initial=0.0))
    err = np.abs(ours - theirs).max(initial=0.0)
    assert err <= TOL * scale, f'{what}: error {err:.3g}'


def load(rel, floating):
    """Return (model, oracle) of a URDF; skip the known invalid ones by name."""
    if rel in KNOWN_INVALID:
        with pytest.raises(ValueError):
            RobotModel.from_urdf_file(urdf_path(rel), floating_base=floating)
        pytest.skip(f'{rel}: {KNOWN_INVALID[rel]}')
    model = RobotModel.from_urdf_file(urdf_path(rel), floating_base=floating)
    return model, PinocchioOracle(model, urdf_path(rel))


def pin_frames(model, oracle, q):
    """Return {link: (oMf, {reference: J})} from Pinocchio, columns in our velocity order."""
    pm, pd = oracle.pm, oracle.pd
    qp, _, _ = oracle.to_pin(q, np.zeros(model.nv), np.zeros(model.nv))
    pin.computeJointJacobians(pm, pd, qp)
    pin.updateFramePlacements(pm, pd)
    out = {}
    for link in model.link_names:
        fid = pm.getFrameId(link, pin.FrameType.BODY)
        # Pinocchio 3 crashes on getFrameJacobian for a model without joints (nv = 0).
        J = {name: pin.getFrameJacobian(pm, pd, fid, getattr(pin.ReferenceFrame, name))
             [:, oracle.vidx] if pm.nv else np.zeros((6, 0)) for name in REFERENCES}
        out[link] = (pd.oMf[fid].homogeneous, J)
    return out


def check_frames(model, oracle, q):
    """Compare placement and the three Jacobians of every link with Pinocchio's."""
    for link, (M, J) in pin_frames(model, oracle, q).items():
        assert_close(frame_placement(model, q, link), M, f'placement of {link}')
        for name, J_pin in J.items():
            J_ours = frame_jacobian(model, q, link, name)
            assert J_ours.shape == (6, model.nv)
            assert_close(J_ours, J_pin, f'{name} J of {link}')


def pin_coriolis(oracle, q, qd):
    """Return Pinocchio's Coriolis matrix in our velocity order."""
    if oracle.pm.nv == 0:
        return np.zeros((0, 0))
    qp, vp, _ = oracle.to_pin(q, qd, qd)
    C = pin.computeCoriolisMatrix(oracle.pm, oracle.pd, qp, vp)
    return C[np.ix_(oracle.vidx, oracle.vidx)]


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('rel', all_urdfs())
def test_every_example_robot_frames_and_coriolis_match_pinocchio(rel, floating):
    """Every valid URDF, fixed and floating: every link's placement and Jacobians, and C.

    Two random states with |qd| up to 5; C qd also equals coriolis_torques (RNEA, g = 0).
    """
    model, oracle = load(rel, floating)
    rng = np.random.default_rng(11)
    for _ in range(2):
        q, qd, _ = random_state(model, rng, scale=5.0)
        check_frames(model, oracle, q)
        C = coriolis_matrix(model, q, qd)
        assert C.shape == (model.nv, model.nv)
        assert_close(C, pin_coriolis(oracle, q, qd), 'C')
        assert_close(C @ qd, coriolis_torques(model, q, qd), 'C qd')


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
def test_merged_tool_frames_are_covered(floating):
    """ur5's ee_link and tool0 and panda's hand hang on fixed joints: they match too."""
    for robot, links in (('ur5', ('ee_link', 'tool0')), ('panda', ('panda_link8', 'panda_hand'))):
        model = RobotModel.from_urdf_file(urdf_path(robot), floating_base=floating)
        oracle = PinocchioOracle(model, urdf_path(robot))
        q, _, _ = random_state(model, np.random.default_rng(2))
        frames = pin_frames(model, oracle, q)
        for link in links:
            assert link not in model.body_links          # merged over a fixed joint
            M, J = frames[link]
            assert_close(frame_placement(model, q, link), M, link)
            for name in REFERENCES:
                J_ours = frame_jacobian(model, q, link, name)
                assert np.abs(J_ours).max() > 0.1
                assert_close(J_ours, J[name], f'{name} J of {link}')


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('robot', sorted(URDF))
def test_jacobian_maps_velocity_to_the_frame_twist(robot, floating):
    """J_WORLD qd is the finite-difference rate of the frame placement (d/dt M = [v] M)."""
    model = RobotModel.from_urdf_file(urdf_path(robot), floating_base=floating)
    oracle = PinocchioOracle(model, urdf_path(robot))
    rng = np.random.default_rng(3)
    q, qd, _ = random_state(model, rng)
    link = model.link_names[-1]
    h = 1e-6
    Mp = frame_placement(model, integrate(model, oracle, q, qd, h), link)
    Mm = frame_placement(model, integrate(model, oracle, q, qd, -h), link)
    M = frame_placement(model, q, link)
    Md = (Mp - Mm) / (2 * h)
    twist = frame_jacobian(model, q, link, 'LOCAL_WORLD_ALIGNED') @ qd
    np.testing.assert_allclose(Md[:3, 3], twist[:3], atol=1e-7)
    W = Md[:3, :3] @ M[:3, :3].T               # = [w] in root axes
    np.testing.assert_allclose([W[2, 1], W[0, 2], W[1, 0]], twist[3:], atol=1e-7)


def integrate(model, oracle, q, qd, h):
    """Return q moved by qd during h (floating base: on SE(3), by Pinocchio's integrate)."""
    if not model.floating_base:
        return q + h * qd
    out = q + h * np.concatenate([np.zeros(1), qd])
    base = pin.XYZQUATToSE3(q[:7]) * pin.exp6(pin.Motion(h * qd[:6]))
    out[:7] = pin.SE3ToXYZQUAT(base)
    return out


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('robot', ['ur5', 'panda', 'talos_reduced'])
def test_coriolis_matrix_makes_hdot_minus_2c_skew(robot, floating):
    """Hdot = C + C^T (Hdot by central differences of mass_matrix along qd): Hdot - 2C skew."""
    from rnea_ros import mass_matrix
    model = RobotModel.from_urdf_file(urdf_path(robot), floating_base=floating)
    oracle = PinocchioOracle(model, urdf_path(robot))
    rng = np.random.default_rng(5)
    q, qd, _ = random_state(model, rng, scale=2.0)
    h = 1e-6
    Hd = (mass_matrix(model, integrate(model, oracle, q, qd, h))
          - mass_matrix(model, integrate(model, oracle, q, qd, -h))) / (2 * h)
    C = coriolis_matrix(model, q, qd)
    N = Hd - 2 * C
    scale = max(1.0, np.abs(Hd).max())
    np.testing.assert_allclose(N + N.T, 0.0, atol=1e-6 * scale)
    np.testing.assert_allclose(Hd, C + C.T, atol=1e-6 * scale)


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('robot', sorted(URDF))
def test_kernels_equal_the_numpy_reference(robot, floating):
    """The numba kernels compute what core.reference computes (6x6 matrices), to 1e-12."""
    from rnea_ros.core import reference
    model = RobotModel.from_urdf_file(urdf_path(robot), floating_base=floating)
    rng = np.random.default_rng(13)
    q, qd, _ = random_state(model, rng, scale=3.0)
    C_ref = reference.coriolis_matrix(model, q, qd)
    np.testing.assert_allclose(coriolis_matrix(model, q, qd), C_ref, rtol=0,
                               atol=1e-12 * max(1.0, np.abs(C_ref).max()))
    for link in model.link_names[::3]:
        R, p = reference.link_pose(model, q, link)
        M = frame_placement(model, q, link)
        np.testing.assert_allclose(M[:3, :3], R, rtol=0, atol=1e-12)
        np.testing.assert_allclose(M[:3, 3], p, rtol=0, atol=1e-12)
        assert np.array_equal(M[3], [0.0, 0.0, 0.0, 1.0])
        for name in REFERENCES:
            np.testing.assert_allclose(frame_jacobian(model, q, link, name),
                                       reference.frame_jacobian(model, q, link, name),
                                       rtol=0, atol=1e-12)


def test_custom_joint_order_permutes_rows_and_columns():
    """With joint_names reversed, C and J are the tree-order ones permuted."""
    path = urdf_path('panda')
    tree = RobotModel.from_urdf_file(path)
    model = RobotModel.from_urdf_file(path, joint_names=list(reversed(tree.joint_names)))
    perm = [tree.joint_names.index(n) for n in model.joint_names]
    q, qd, _ = random_state(tree, np.random.default_rng(3))
    np.testing.assert_allclose(coriolis_matrix(model, q[perm], qd[perm]),
                               coriolis_matrix(tree, q, qd)[np.ix_(perm, perm)], atol=1e-13)
    np.testing.assert_allclose(frame_jacobian(model, q[perm], 'panda_hand', 'WORLD'),
                               frame_jacobian(tree, q, 'panda_hand', 'WORLD')[:, perm],
                               atol=1e-13)


def test_own_workspace_and_plain_call_give_the_same_bits():
    """Calls with a caller's workspace equal the plain call (the model's workspace)."""
    model = RobotModel.from_urdf_file(urdf_path('talos_reduced'), floating_base=True)
    ws = model.create_workspace()
    q, qd, _ = random_state(model, np.random.default_rng(9))
    assert np.array_equal(coriolis_matrix(model, q, qd), coriolis_matrix(model, q, qd, ws=ws))
    for link in ('gripper_left_base_link', 'imu_link', 'left_sole_link'):
        assert np.array_equal(frame_placement(model, q, link),
                              frame_placement(model, q, link, ws=ws))
        assert np.array_equal(frame_jacobian(model, q, link, 'WORLD'),
                              frame_jacobian(model, q, link, 'WORLD', ws=ws))
