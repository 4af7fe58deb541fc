"""Spatial vector algebra: the identities of RBDA chapter 2 in [linear; angular] order."""

import numpy as np

from rnea_ros.core.spatial import (crf, crm, force_transform, inertia_transform, mcI, plucker,
                                   plucker_inverse, quat_to_matrix, rot_axis, rpy_to_matrix, skew)

rng = np.random.default_rng(0)


def random_rotation():
    return quat_to_matrix(rng.normal(size=4))


def test_skew_is_cross_product():
    a, b = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(skew(a) @ b, np.cross(a, b))


def test_rotations_are_orthonormal_and_rodrigues_matches_rpy():
    R = rpy_to_matrix([0.3, -0.2, 1.1])
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-15)
    np.testing.assert_allclose(rot_axis(np.array([0.0, 0.0, 1.0]), 1.1),
                               rpy_to_matrix([0, 0, 1.1]), atol=1e-15)


def test_plucker_inverse_and_composition():
    E, r = random_rotation(), rng.normal(size=3)
    X = plucker(E, r)
    np.testing.assert_allclose(plucker_inverse(X) @ X, np.eye(6), atol=1e-14)
    E2, r2 = random_rotation(), rng.normal(size=3)
    # C_X_A = C_X_B B_X_A: rotation E2 E, origin r + E^T r2
    np.testing.assert_allclose(plucker(E2, r2) @ X, plucker(E2 @ E, r + E.T @ r2), atol=1e-14)


def test_motion_transform_moves_velocity_to_new_origin():
    w, v = rng.normal(size=3), rng.normal(size=3)
    r = rng.normal(size=3)
    moved = plucker(np.eye(3), r) @ np.concatenate([v, w])
    np.testing.assert_allclose(moved, np.concatenate([v + np.cross(w, r), w]), atol=1e-14)


def test_force_transform_preserves_power():
    X = plucker(random_rotation(), rng.normal(size=3))
    m, f = rng.normal(size=6), rng.normal(size=6)
    np.testing.assert_allclose((force_transform(X) @ f) @ (X @ m), f @ m, atol=1e-12)


def test_cross_products_are_dual_and_derivative_of_transform():
    v, m, f = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    np.testing.assert_allclose(crf(v), -crm(v).T)
    np.testing.assert_allclose(crm(v) @ v, np.zeros(6), atol=1e-15)
    # (v x m) . f + m . (v x* f) = 0
    np.testing.assert_allclose((crm(v) @ m) @ f + m @ (crf(v) @ f), 0.0, atol=1e-12)


def test_inertia_transform_moves_centre_of_mass():
    mass, c = 2.5, rng.normal(size=3)
    A = rng.normal(size=(3, 3))
    Ic = A @ A.T
    E, r = random_rotation(), rng.normal(size=3)
    X = plucker(E, r)                       # B_X_A; inertia given in B
    I_A = inertia_transform(mcI(mass, c, Ic), X)
    np.testing.assert_allclose(I_A, mcI(mass, E.T @ c + r, E.T @ Ic @ E), atol=1e-12)
    np.testing.assert_allclose(I_A, I_A.T, atol=1e-12)
    assert np.linalg.eigvalsh(I_A).min() > 0.0
