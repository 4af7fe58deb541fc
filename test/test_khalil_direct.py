"""Recursive NE direct dynamics (Khalil 2010 §3.3.2, eqs. 32-54)."""

from khalil_robots import random_tree
import numpy as np
import pytest

import rnea_ros
from rnea_ros import reaction_wrenches
from rnea_ros.khalil.direct import direct_dynamics, hybrid_dynamics
from rnea_ros.khalil.mdh_files import data_path, load_mdh
from rnea_ros.khalil.mdh_model import mdh_to_urdf, model_from_mdh
from rnea_ros.khalil.newton_euler import bias_vector, inertia_matrix, KhalilTree, newton_euler


def test_recursive_direct_model_solves_a_qdd_equals_gamma_minus_h():
    """The qdd of eqs. (41)-(43) equals A^-1 (Gamma - H), A and H by the inverse model (§3.3.1).

    With rotor inertias, friction, prismatic joints, fixed frames and external wrenches.
    """
    rng = np.random.default_rng(40)
    for _ in range(5):
        tree = KhalilTree(random_tree(rng))
        q, qd, gamma = rng.normal(size=(3, tree.nq))
        f_env = rng.normal(size=(tree.n, 6))
        A, H = inertia_matrix(tree, q), bias_vector(tree, q, qd, f_env=f_env)
        qdd = direct_dynamics(tree, q, qd, gamma, f_env=f_env)
        assert np.allclose(qdd, np.linalg.solve(A, gamma - H), atol=1e-10)
        assert np.allclose(newton_euler(tree, q, qd, qdd, f_env=f_env), gamma, atol=1e-10)


def test_recursive_wrenches_are_the_joint_reaction_wrenches_of_the_core():
    """f_j of eq. (42) is the wrench of link a(j) on link j: the core's reaction_wrenches."""
    table = load_mdh(data_path('rx90.yaml'))
    tree, model = KhalilTree(table), model_from_mdh(table)
    rng = np.random.default_rng(41)
    for _ in range(5):
        q, qd, gamma = rng.normal(size=(3, 6))
        qdd, _, f = hybrid_dynamics(tree, q, qd, gamma, np.zeros(6), np.ones(6, dtype=bool))
        assert np.allclose(f, reaction_wrenches(model, q, qd, qdd), atol=1e-9)


def test_all_accelerations_known_gives_the_inverse_model():
    """With every acceleration given, eqs. (75), (76), (79), (82) reduce to the NE of §3.2."""
    rng = np.random.default_rng(42)
    tree = KhalilTree(random_tree(rng))
    q, qd, qdd = rng.normal(size=(3, tree.nq))
    _, gamma, _ = hybrid_dynamics(tree, q, qd, np.zeros(tree.nq), qdd,
                                  np.zeros(tree.nq, dtype=bool))
    assert np.allclose(gamma, newton_euler(tree, q, qd, qdd), atol=1e-10)


def test_matches_pinocchio_aba_with_armature():
    """Same accelerations as Pinocchio's articulated-body algorithm with armature = Ia."""
    pin = pytest.importorskip('pinocchio')
    table = load_mdh(data_path('rx90.yaml'))
    tree = KhalilTree(table)
    pmodel = pin.buildModelFromXML(mdh_to_urdf(table))
    pmodel.armature = np.array(tree.Ia)
    pdata = pmodel.createData()
    idx_v = [pmodel.joints[pmodel.getJointId(n)].idx_v for n in table.joint_names]
    rng = np.random.default_rng(43)
    for _ in range(5):
        q, qd, gamma = rng.normal(size=(3, 6))
        qd = np.where(np.abs(qd) < 0.05, 0.05, qd)     # outside the Coulomb band: sign(qd)
        qp = np.zeros(pmodel.nq)
        for k, n in enumerate(table.joint_names):
            iq = pmodel.joints[pmodel.getJointId(n)].idx_q
            qp[iq:iq + 2] = np.cos(q[k]), np.sin(q[k])
        vp, tp = np.zeros(pmodel.nv), np.zeros(pmodel.nv)
        vp[idx_v] = qd
        tp[idx_v] = gamma - tree.Fs * np.sign(qd) - tree.Fv * qd           # eq. (44)
        expected = pin.aba(pmodel, pdata, qp, vp, tp)[idx_v]
        assert np.allclose(direct_dynamics(tree, q, qd, gamma), expected, atol=1e-9)


def test_matches_the_core_mass_matrix_and_forward_dynamics():
    """Against the core's CRBA mass matrix and ABA forward dynamics (issue 6), with Ia, Fs, Fv."""
    fd = getattr(rnea_ros, 'forward_dynamics', None)
    mm = getattr(rnea_ros, 'mass_matrix', None)
    if fd is None or mm is None:
        pytest.skip('the core has no forward_dynamics or mass_matrix (issue 6)')
    rng = np.random.default_rng(44)
    for table in (load_mdh(data_path('rx90.yaml')), random_tree(rng)):
        tree, model = KhalilTree(table), model_from_mdh(table)      # the same Coulomb band
        for _ in range(5):
            q, qd, gamma = rng.normal(size=(3, tree.nq))
            qd[0] = 0.004                                  # inside the band
            assert np.allclose(mm(model, q), inertia_matrix(tree, q), atol=1e-9)
            assert np.allclose(fd(model, q, qd, gamma), direct_dynamics(tree, q, qd, gamma),
                               atol=1e-9)
