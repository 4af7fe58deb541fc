"""The observer's model terms and its one-call step, against Pinocchio and the numpy forms.

:func:`rnea_ros.core.kernels.observer.momentum_terms` computes p = M qd and beta = C^T qd - g by
an O(n) recursion, without the Coriolis matrix: it must equal Pinocchio's ``crba``,
``computeCoriolisMatrix`` and ``computeGeneralizedGravity`` on every valid example-robot-data
URDF, fixed and floating base.  :func:`rnea_ros.core.kernels.observer.observer_step` (what
:meth:`rnea_ros.MomentumObserver.update` runs) must equal the observer's numpy form, written
with the library's mass matrix, Coriolis matrix, gravity and friction.
"""

import numpy as np
import pytest
from rnea_ros import (coriolis_matrix, gravity_torques, mass_matrix, MomentumObserver,
                      RobotModel)
from rnea_ros.core.dynamics import joint_friction
from rnea_ros.core.kernels.observer import momentum_terms
from robots import all_urdfs, PinocchioOracle, random_state, urdf_path
from test_dynamics_pinocchio import KNOWN_INVALID

TOL = 1e-10                 # relative to the largest entry (measured ~1e-14)


def assert_close(ours, theirs, what):
    """Assert max |ours - theirs| <= TOL relative to the largest magnitude (at least 1)."""
    scale = max(1.0, np.abs(theirs).max(initial=0.0))
    err = np.abs(ours - theirs).max(initial=0.0)
    assert err <= TOL * scale, f'{what}: error {err:.3g}'


def terms(model, q, qd, gravity=(0.0, 0.0, -9.81)):
    """Return (status, p, beta) of the kernel, a workspace with a_0 = -gravity."""
    ws = model.create_workspace()
    ws.a0[:] = 0.0
    ws.a0[:3] = -np.asarray(gravity)
    p, beta = np.full(model.nv, np.nan), np.full(model.nv, np.nan)
    return momentum_terms(model.kernel_model, ws.buffer, q, qd, p, beta), p, beta


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('rel', all_urdfs())
def test_momentum_terms_of_every_example_robot_equal_pinocchio(rel, floating):
    """Every valid URDF: p = M qd (crba), beta = C^T qd - g (computeCoriolisMatrix, gravity)."""
    pin = pytest.importorskip('pinocchio')
    if rel in KNOWN_INVALID:
        pytest.skip(f'{rel}: {KNOWN_INVALID[rel]}')
    model = RobotModel.from_urdf_file(urdf_path(rel), floating_base=floating)
    oracle = PinocchioOracle(model, urdf_path(rel))
    pm, pd = oracle.pm, oracle.pd
    rng = np.random.default_rng(12)
    for _ in range(2):
        q, qd, _ = random_state(model, rng, scale=5.0)
        status, p, beta = terms(model, q, qd)
        assert status == 0
        if model.nv == 0:
            continue
        qp, vp, _ = oracle.to_pin(q, qd, qd)
        M = pin.crba(pm, pd, qp)
        M = np.triu(M) + np.triu(M, 1).T
        C = pin.computeCoriolisMatrix(pm, pd, qp, vp)
        g = pin.computeGeneralizedGravity(pm, pd, qp)
        assert_close(p, (M @ vp)[oracle.vidx], f'{rel}: p')
        assert_close(beta, (C.T @ vp - g)[oracle.vidx], f'{rel}: beta')


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
def test_momentum_terms_include_rotor_inertia_and_any_gravity(floating):
    """With armature and a tilted gravity: the library's M qd, C^T qd and g; bad q refused."""
    from rnea_ros.core.layout import STATUS_BAD_Q, STATUS_LEN_QD
    model = RobotModel.from_urdf_file(urdf_path('panda'), floating_base=floating,
                                      armature={'panda_joint2': 0.3, 'panda_joint7': 0.05})
    rng = np.random.default_rng(4)
    gravity = (1.0, -2.0, -9.0)
    for _ in range(3):
        q, qd, _ = random_state(model, rng, scale=3.0)
        status, p, beta = terms(model, q, qd, gravity)
        assert status == 0
        np.testing.assert_allclose(p, mass_matrix(model, q) @ qd, rtol=1e-10, atol=1e-10)
        expected = coriolis_matrix(model, q, qd).T @ qd - gravity_torques(model, q, gravity)
        np.testing.assert_allclose(beta, expected, rtol=1e-10, atol=1e-10)
    assert terms(model, q, qd[:-1])[0] == STATUS_LEN_QD
    q[-1] = np.nan
    assert terms(model, q, qd)[0] == STATUS_BAD_Q


def numpy_observer(model, t, Q, QD, E, gains, held):
    """Return r per sample by the observer's numpy form (rnea_ros.core.observer), no restarts."""
    off = model.nv - model.njoints
    R, last = [], None
    r = np.zeros(model.nv)
    for k in range(len(t)):
        q, qd = Q[k], QD[k]
        p = mass_matrix(model, q) @ qd
        g = gravity_torques(model, q) - joint_friction(model, np.zeros(model.nv))   # no offsets
        beta = coriolis_matrix(model, q, qd).T @ qd - g - joint_friction(model, qd)
        tau = np.zeros(model.nv)
        tau[off:] = E[k]
        if last is not None:
            h = t[k] - t[k - 1]
            p0, beta0, tau0 = last
            effort = tau if held else 0.5 * (tau + tau0)
            hat = (p - p0) / h - 0.5 * (beta + beta0) - effort
            r = hat + np.exp(-gains * h) * (r - hat)
        last = p, beta, tau
        R.append(r.copy())
    return np.array(R)


@pytest.mark.parametrize('held', [False, True], ids=['instant', 'held'])
@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
def test_observer_step_equals_the_numpy_form_with_friction_and_irregular_steps(floating, held):
    """20 samples, steps of 0.5-3 ms, fast random states, friction and armature in the model."""
    names = RobotModel.from_urdf_file(urdf_path('panda')).joint_names
    rng = np.random.default_rng(9)
    per_joint = {name: float(v) for name, v in zip(names, rng.uniform(0.1, 1.0, len(names)))}
    model = RobotModel.from_urdf_file(
        urdf_path('panda'), floating_base=floating, friction_law='tanh', coulomb_band=0.05,
        friction_viscous=per_joint, friction_coulomb=per_joint, effort_offset=per_joint,
        armature={'panda_joint4': 0.2})
    n = 20
    t = np.cumsum(rng.uniform(0.0005, 0.003, n))
    states = [random_state(model, rng, scale=2.0) for _ in range(n)]
    Q, QD = np.array([s[0] for s in states]), np.array([s[1] for s in states])
    E = rng.normal(scale=5.0, size=(n, model.njoints))
    gains = rng.uniform(20.0, 400.0, model.nv)
    obs = MomentumObserver(model, gains, effort_sampling='held' if held else 'instant')
    ours = np.array([obs.update(t[k], Q[k], QD[k], E[k]).copy() for k in range(n)])
    expected = numpy_observer(model, t, Q, QD, E, gains, held)
    scale = np.abs(expected).max()
    assert scale > 1.0
    np.testing.assert_allclose(ours, expected, rtol=0.0, atol=1e-9 * scale)
    np.testing.assert_allclose(obs.largest, np.abs(ours).max(axis=0), rtol=1e-15)


def test_efforts_by_index_are_the_efforts_in_model_order():
    """update(t, q, qd, msg_efforts, index) = update with msg_efforts[index], read-only too."""
    model = RobotModel.from_urdf_file(urdf_path('panda'))
    rng = np.random.default_rng(3)
    a, b = MomentumObserver(model, 100.0), MomentumObserver(model, 100.0)
    order = rng.permutation(model.njoints + 2)[:model.njoints]    # a message with 2 more
    for k in range(5):
        q, qd, _ = random_state(model, rng)
        msg = rng.normal(size=model.njoints + 2)       # joint j's effort: msg[order[j]]
        frozen = msg.copy()
        frozen.flags.writeable = False          # as a view of received bytes
        np.testing.assert_array_equal(a.update(0.001 * k, q, qd, msg[order]),
                                      b.update(0.001 * k, q, qd, frozen, order))
    assert b.update(0.006, q, qd, frozen[:3], order) is None and 'partial' in b.suspended
    bad = msg.copy()
    bad[order[4]] = np.inf
    assert b.update(0.006, q, qd, bad, order) is None
    assert 'not finite' in b.suspended and '[4]' in b.suspended


def test_inputs_of_any_type_are_converted_or_suspend_with_a_reason():
    """Lists and integers are used as numbers; garbage of any type suspends, never raises."""
    model = RobotModel.from_urdf_file(urdf_path('panda'))
    obs = MomentumObserver(model)
    z = np.zeros(model.nv)
    assert obs.update(0, list(z), list(z), [0] * model.nv) is not None
    assert obs.update(np.int64(1) * 1e-3, z, z, z, index=list(range(model.nv))) is not None
    bad = [(('x', z, z, z), 'not a number'), ((np.nan, z, z, z), 'not finite'),
           ((1.0, 'abc', z, z), 'not numbers'), ((1.0, z, z, ['a'] * 9), 'not numbers'),
           ((1.0, z[:5], z, z), 'state of shapes'), ((1.0, z, z, np.zeros((3, 3))), 'shape'),
           ((1.0, z, z, z, ['a', 'b']), 'index'), ((1.0, z, z, z, [0, 1, 2]), 'index'),
           ((1.0, z, z, np.full(9, 1e10)), 'not finite (or above')]
    for args, reason in bad:
        assert obs.update(*args) is None, args
        assert reason in obs.suspended, (args, obs.suspended)
    assert obs.samples == 2
    floating = RobotModel.from_urdf_file(urdf_path('panda'), floating_base=True)
    q = np.zeros(floating.nq)                   # quaternion (0, 0, 0, 0)
    obs = MomentumObserver(floating)
    assert obs.update(0.0, q, np.zeros(floating.nv), z) is None
    assert 'quaternion' in obs.suspended
