"""Mimic joints read from a URDF: two mimics with different multipliers and offsets.

The UR5 URDF is rewritten so that wrist_2 mimics shoulder_lift (q = 2 q_d + 0.3) and wrist_3
mimics elbow (q = -0.5 q_d - 0.7).  The core must read both offsets, the node's bookkeeping must
fill each mimic joint from its own driver with its own offset, and the torques at the filled
state must equal Pinocchio's at the explicitly expanded state.
"""

from types import SimpleNamespace
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from rnea_ros import inverse_dynamics, RobotModel
from rnea_ros.node import bookkeeping as node_io
from robots import PinocchioOracle, urdf_path

MIMICS = {'wrist_2_joint': ('shoulder_lift_joint', 2.0, 0.3),
          'wrist_3_joint': ('elbow_joint', -0.5, -0.7)}
DRIVERS = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint']


def mimic_urdf():
    """Return the UR5 URDF with the two mimic joints of MIMICS."""
    root = ET.parse(urdf_path('ur5')).getroot()
    for joint in root.iter('joint'):
        if joint.get('name') in MIMICS:
            driver, mult, off = MIMICS[joint.get('name')]
            ET.SubElement(joint, 'mimic', joint=driver, multiplier=str(mult), offset=str(off))
    return ET.tostring(root, encoding='unicode')


@pytest.fixture(scope='module')
def urdf_file(tmp_path_factory):
    path = tmp_path_factory.mktemp('mimic') / 'ur5_mimic.urdf'
    path.write_text(mimic_urdf())
    return str(path)


@pytest.fixture(scope='module')
def model(urdf_file):
    return RobotModel.from_urdf_file(urdf_file)


def expand(model, q_d, qd_d, qdd_d):
    """Return (q, qd, qdd) of every joint, the mimic joints expanded by hand from MIMICS."""
    names = list(model.joint_names)
    q, qd, qdd = np.zeros(model.nv), np.zeros(model.nv), np.zeros(model.nv)
    for k, name in enumerate(DRIVERS):
        i = names.index(name)
        q[i], qd[i], qdd[i] = q_d[k], qd_d[k], qdd_d[k]
    for name, (driver, mult, off) in MIMICS.items():
        i, d = names.index(name), names.index(driver)
        q[i], qd[i], qdd[i] = mult * q[d] + off, mult * qd[d], mult * qdd[d]
    return q, qd, qdd


def _point(q, qd, qdd):
    return SimpleNamespace(positions=list(q), velocities=list(qd), accelerations=list(qdd))


def test_the_core_reads_both_mimics_with_multiplier_and_offset(model):
    assert {m[0]: m[1:] for m in model.mimic} == MIMICS


def test_joint_state_input_fills_each_mimic_from_its_driver_with_its_offset(model):
    rng = np.random.default_rng(1)
    q_d, qd_d = rng.uniform(-1, 1, 4), rng.uniform(-3, 3, 4)
    js = node_io.JointStateInput(model.joint_names, model.mimic)
    assert js.update(DRIVERS, q_d, qd_d) is None
    assert js.ready
    q, qd, _ = expand(model, q_d, qd_d, np.zeros(4))
    np.testing.assert_allclose(js.q, q, rtol=0, atol=1e-15)
    np.testing.assert_allclose(js.qd, qd, rtol=0, atol=1e-15)


def test_reference_input_fills_each_mimic_from_its_driver_with_its_offset(model):
    rng = np.random.default_rng(2)
    q_d, qd_d, qdd_d = rng.uniform(-1, 1, 4), rng.uniform(-3, 3, 4), rng.uniform(-5, 5, 4)
    ref = node_io.ReferenceInput(model.joint_names, model.mimic, timeout=1.0)
    assert ref.from_trajectory(DRIVERS, [_point(q_d, qd_d, qdd_d)], now=0.0) is None
    q, qd, qdd = expand(model, q_d, qd_d, qdd_d)
    np.testing.assert_allclose(ref.q, q, rtol=0, atol=1e-15)
    np.testing.assert_allclose(ref.qd, qd, rtol=0, atol=1e-15)
    np.testing.assert_allclose(ref.qdd, qdd, rtol=0, atol=1e-15)


def test_torques_at_the_filled_state_match_pinocchio_at_the_expanded_state(model, urdf_file):
    """Pinocchio (mimic joints independent) at the hand-expanded state gives the same torques."""
    oracle = PinocchioOracle(model, urdf_file)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q_d, qd_d, qdd_d = rng.uniform(-1, 1, 4), rng.uniform(-3, 3, 4), rng.uniform(-5, 5, 4)
        js = node_io.JointStateInput(model.joint_names, model.mimic)
        js.update(DRIVERS, q_d, qd_d)
        ref = node_io.ReferenceInput(model.joint_names, model.mimic, timeout=1.0)
        ref.from_trajectory(DRIVERS, [_point(q_d, qd_d, qdd_d)], now=0.0)
        q, qd, qdd = expand(model, q_d, qd_d, qdd_d)
        tau_pin, _ = oracle.rnea(q, qd, qdd)
        tau = inverse_dynamics(model, js.q, js.qd, ref.qdd)
        assert np.abs(tau - tau_pin).max() <= 1e-12 * max(1.0, np.abs(tau_pin).max())
