"""The one friction law (rnea_ros.core.friction): values, and the same law in every algorithm."""

import numpy as np
import pytest

from rnea_ros.core import friction as fr
from rnea_ros.core.aba import forward_dynamics
from rnea_ros.core.dynamics import (coulomb_sign, gravity_torques, inverse_dynamics,
                                    inverse_dynamics_batch, joint_friction)
from rnea_ros.core.model import RobotModel
from rnea_ros.core.regressor import (inertial_parameters, joint_parameters, regressor,
                                     regressor_batch)
from robots import random_state, urdf_path

UR5 = urdf_path('ur5')


def _ur5_options(rng, law='linear'):
    model = RobotModel.from_urdf_file(UR5)
    names = model.joint_names

    def pick(lo, hi):
        return {n: float(rng.uniform(lo, hi)) for n in names}
    return {'friction_viscous': pick(0.1, 1.0), 'friction_viscous_negative': pick(0.1, 1.0),
            'friction_coulomb': pick(0.1, 1.0), 'friction_coulomb_negative': pick(0.1, 1.0),
            'friction_stribeck': pick(0.0, 0.5), 'effort_offset': pick(-0.3, 0.3),
            'armature': pick(0.0, 0.2), 'friction_law': law, 'stribeck_velocity': 0.05,
            'coulomb_band': 0.02}


def test_coulomb_band_value_is_linear_inside_and_saturated_outside():
    """sign(qd) is qd / band inside the band: a plain sign() in its place fails here."""
    band = 0.01
    assert coulomb_sign(np.array(0.5 * band), band) == pytest.approx(0.5)
    assert coulomb_sign(np.array(-0.25 * band), band) == pytest.approx(-0.25)
    assert coulomb_sign(np.array(0.0), band) == 0.0
    assert coulomb_sign(np.array(3.0 * band), band) == 1.0
    model = RobotModel.from_urdf_file(UR5, friction_coulomb={'elbow_joint': 2.0})
    qd = np.zeros(6)
    qd[2] = 0.5 * model.coulomb_band
    assert joint_friction(model, qd)[2] == pytest.approx(1.0)       # 2.0 * 0.5
    q = np.zeros(6)
    tau = inverse_dynamics(model, q, qd, np.zeros(6)) - gravity_torques(model, q)
    assert tau[2] == pytest.approx(1.0, abs=1e-9)


def test_law_values_by_direction_stribeck_tanh_and_offset():
    """Each term of the documented formula, at hand-picked velocities."""
    table = np.array([[0.5, 0.8, 1.0, 1.5, 0.4, -0.2]])        # Fv+ Fv- Fs+ Fs- Fx off
    v_s, v_st = 0.1, 0.2
    for law, s in (('linear', lambda v: np.clip(v / v_s, -1, 1)),
                   ('tanh', lambda v: np.tanh(v / v_s))):
        for v in (0.05, 0.3, -0.05, -0.3):
            fv, fs = (0.5, 1.0) if v > 0 else (0.8, 1.5)
            expected = fv * v + (fs + 0.4 * np.exp(-(v / v_st) ** 2)) * s(v) - 0.2
            got = fr.friction_effort(table, np.array([v]), v_s, law, v_st)[0]
            assert got == pytest.approx(expected, rel=1e-12), (law, v)
        assert fr.friction_effort(table, np.array([0.0]), v_s, law, v_st)[0] == -0.2


def test_basis_columns_reproduce_the_law():
    rng = np.random.default_rng(1)
    table = rng.uniform(0.0, 1.0, (5, 6))
    qd = rng.normal(0.0, 0.3, (40, 5))
    for law in fr.LAWS:
        B = fr.basis(qd, 0.05, law, 0.1)
        np.testing.assert_allclose(np.einsum('njk,jk->nj', B, table),
                                   fr.friction_effort(table, qd, 0.05, law, 0.1), atol=1e-14)


@pytest.mark.parametrize('law', fr.LAWS)
def test_inverse_dynamics_adds_the_law_batch_and_aba_agree(law):
    """ID(model with the options) - ID(rigid) = tau_f(qd) + Ia qdd; ABA inverts it."""
    rng = np.random.default_rng(2)
    options = _ur5_options(rng, law)
    model = RobotModel.from_urdf_file(UR5, **options)
    plain = RobotModel.from_urdf_file(UR5)
    names = model.joint_names
    table = fr.friction_table(
        6, *(np.array([options[k][n] for n in names]) for k in (
            'friction_viscous', 'friction_coulomb', 'friction_viscous_negative',
            'friction_coulomb_negative', 'friction_stribeck', 'effort_offset')))
    ia = np.array([options['armature'][n] for n in names])
    Q, QD, QDD = [], [], []
    for _ in range(20):
        q, qd, qdd = random_state(model, rng, scale=0.2)
        tau = inverse_dynamics(model, q, qd, qdd)
        expected = (inverse_dynamics(plain, q, qd, qdd) + ia * qdd
                    + np.einsum('jk,jk->j', fr.basis(qd, 0.02, law, 0.05), table))
        np.testing.assert_allclose(tau, expected, atol=1e-10)
        np.testing.assert_allclose(forward_dynamics(model, q, qd, tau), qdd, atol=1e-8)
        Q.append(q)
        QD.append(qd)
        QDD.append(qdd)
    batch = inverse_dynamics_batch(model, np.array(Q), np.array(QD), np.array(QDD))
    np.testing.assert_allclose(batch[-1], tau, atol=1e-10)


@pytest.mark.parametrize('law', fr.LAWS)
def test_per_joint_velocity_scales_in_inverse_dynamics_batch_aba_and_regressor(law):
    """friction_coulomb_band / friction_stribeck_velocity: v_s and v_st joint by joint.

    ID - ID(rigid) is the law with each joint's own scales (numpy basis), the batch kernel and
    ABA agree, the symmetric regressor uses them, and the options round-trip.
    """
    rng = np.random.default_rng(6)
    options = _ur5_options(rng, law)
    names = RobotModel.from_urdf_file(UR5).joint_names
    v_s, v_st = rng.uniform(0.01, 0.3, 6), rng.uniform(0.02, 0.5, 6)
    model = RobotModel.from_urdf_file(UR5, friction_coulomb_band=dict(zip(names, v_s)),
                                      friction_stribeck_velocity=dict(zip(names, v_st)),
                                      **options)
    np.testing.assert_array_equal(model.coulomb_bands, v_s)
    common = RobotModel.from_urdf_file(UR5, **options)
    np.testing.assert_array_equal(common.coulomb_bands, np.full(6, 0.02))
    plain = RobotModel.from_urdf_file(UR5)
    Q, QD, QDD, TAU = [], [], [], []
    for _ in range(10):
        q, qd, qdd = random_state(model, rng, scale=0.1)
        tau = inverse_dynamics(model, q, qd, qdd)
        B = fr.basis(qd, v_s, law, v_st)                    # (6, 6): joint j with its scales
        expected = (inverse_dynamics(plain, q, qd, qdd) + model.armature * qdd
                    + np.einsum('jk,jk->j', B, model.friction_table))
        np.testing.assert_allclose(tau, expected, atol=1e-10)
        assert np.max(np.abs(tau - inverse_dynamics(common, q, qd, qdd))) > 1e-3
        np.testing.assert_allclose(forward_dynamics(model, q, qd, tau), qdd, atol=1e-8)
        Q, QD, QDD, TAU = Q + [q], QD + [qd], QDD + [qdd], TAU + [tau]
    batch = inverse_dynamics_batch(model, np.array(Q), np.array(QD), np.array(QDD))
    np.testing.assert_allclose(batch, np.array(TAU), atol=1e-10)
    symmetric = {k: v for k, v in options.items() if k not in (
        'friction_viscous_negative', 'friction_coulomb_negative', 'friction_stribeck')}
    sym = RobotModel.from_urdf_file(UR5, friction_coulomb_band=dict(zip(names, v_s)),
                                    **symmetric)
    x = np.concatenate([inertial_parameters(sym), joint_parameters(sym)])
    np.testing.assert_allclose(regressor(sym, Q[0], QD[0], QDD[0], friction=True) @ x,
                               inverse_dynamics(sym, Q[0], QD[0], QDD[0]), atol=1e-9)
    again = RobotModel.from_urdf_file(UR5, **model.joint_term_options())
    np.testing.assert_array_equal(again.coulomb_bands, v_s)
    np.testing.assert_array_equal(again.stribeck_velocities, v_st)
    assert 'friction_coulomb_band' not in common.joint_term_options()
    for bad in ({'friction_coulomb_band': {'elbow_joint': 0.0}},
                {'friction_stribeck_velocity': {'elbow_joint': np.nan}}):
        with pytest.raises(ValueError, match='> 0'):
            RobotModel.from_urdf_file(UR5, **bad)
    with pytest.raises(ValueError, match='not a moving joint'):
        RobotModel.from_urdf_file(UR5, friction_coulomb_band={'nope': 0.1})


def test_effort_offset_acts_at_rest_and_may_be_negative():
    offsets = {'shoulder_lift_joint': -0.4, 'wrist_3_joint': 0.07}
    model = RobotModel.from_urdf_file(UR5, effort_offset=offsets)
    plain = RobotModel.from_urdf_file(UR5)
    q = np.linspace(-1, 1, 6)
    diff = gravity_torques(model, q) - gravity_torques(plain, q)
    np.testing.assert_allclose(diff, [0, -0.4, 0, 0, 0, 0.07], atol=1e-12)
    np.testing.assert_allclose(joint_friction(model, np.zeros(6)), diff, atol=1e-12)


def test_symmetric_regressor_columns_use_the_model_law():
    """Y [phi; Fv Fs Ia off] = ID for a symmetric law, linear or tanh, with offsets."""
    rng = np.random.default_rng(3)
    for law in fr.LAWS:
        opts = _ur5_options(rng, law)
        for side in ('friction_viscous_negative', 'friction_coulomb_negative',
                     'friction_stribeck'):
            del opts[side]
        model = RobotModel.from_urdf_file(UR5, **opts)
        x = np.concatenate([inertial_parameters(model), joint_parameters(model)])
        q, qd, qdd = random_state(model, rng, scale=0.05)
        np.testing.assert_allclose(regressor(model, q, qd, qdd, friction=True) @ x,
                                   inverse_dynamics(model, q, qd, qdd), atol=1e-9)
        Y = regressor_batch(model, q[None], qd[None], qdd[None], friction=True)
        np.testing.assert_allclose(Y @ x, inverse_dynamics(model, q, qd, qdd), atol=1e-9)


def test_options_are_checked_and_round_trip():
    rng = np.random.default_rng(4)
    options = _ur5_options(rng, 'tanh')
    model = RobotModel.from_urdf_file(UR5, **options)
    again = RobotModel.from_urdf_file(UR5, **model.joint_term_options())
    np.testing.assert_array_equal(again.friction_table, model.friction_table)
    settings = (again.friction_law, again.stribeck_velocity, again.coulomb_band)
    assert settings == ('tanh', 0.05, 0.02)
    for bad, match in (({'friction_viscous_negative': {'elbow_joint': -1.0}}, '>= 0'),
                       ({'friction_stribeck': {'elbow_joint': -0.1}}, '>= 0'),
                       ({'effort_offset': {'elbow_joint': np.nan}}, 'finite'),
                       ({'friction_law': 'stribeck'}, 'friction_law'),
                       ({'stribeck_velocity': -1.0}, 'stribeck_velocity'),
                       ({'effort_offset': {'nope': 1.0}}, 'not a moving joint')):
        with pytest.raises(ValueError, match=match):
            RobotModel.from_urdf_file(UR5, **bad)
    with pytest.raises(TypeError, match='unknown model options'):
        RobotModel.from_urdf_file(UR5, friction_viscose={'elbow_joint': 1.0})
    side = RobotModel.from_urdf_file(UR5, friction_viscous={'elbow_joint': 0.7})
    assert side.friction_table[2, fr.FV_NEG] == 0.7     # the negative side defaults to +
