"""Khalil's modified DH tables (Khalil 2010 §2): loaders, conversion to RobotModel, NE of §3.2."""

import math

from khalil_robots import random_tree
import numpy as np
import pytest

from rnea_ros import inverse_dynamics, reaction_wrenches, RobotModel
from rnea_ros.core.spatial import rotx, rotz
from rnea_ros.khalil.mdh import (com_to_khalil, khalil_to_com, loop_constraints, make_table,
                                 mdh_transform)
from rnea_ros.khalil.mdh_files import data_path, load_mdh, load_mdh_csv, load_mdh_yaml
from rnea_ros.khalil.mdh_model import main as mdh_main, mdh_to_urdf, model_from_mdh
from rnea_ros.khalil.newton_euler import KhalilTree, newton_euler as khalil_ne

# The RX-90 of rnea_ros/khalil/data/rx90.yaml written by hand as a URDF: joint origins read off
# the MDH table (alpha -> roll, d -> x, r -> z after the roll), inertias about the COM.
RX90_URDF = """<robot name="rx90_by_hand">
  <link name="base_link"/>
  <link name="link1"><inertial><origin xyz="0 0.02 -0.15"/><mass value="12"/>
    <inertia ixx="0.30" ixy="0" ixz="0" iyy="0.28" iyz="0" izz="0.12"/></inertial></link>
  <link name="link2"><inertial><origin xyz="0.225 0 0.12"/><mass value="9"/>
    <inertia ixx="0.05" ixy="0" ixz="0.01" iyy="0.40" iyz="0" izz="0.40"/></inertial></link>
  <link name="link3"><inertial><origin xyz="0 0.18 0.02"/><mass value="6"/>
    <inertia ixx="0.20" ixy="-0.005" ixz="0" iyy="0.03" iyz="0" izz="0.20"/></inertial></link>
  <link name="link4"><inertial><origin xyz="0 0 -0.05"/><mass value="2.5"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"/></inertial></link>
  <link name="link5"><inertial><origin xyz="0 0 0.02"/><mass value="1.2"/>
    <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.003"/></inertial></link>
  <link name="link6"><inertial><origin xyz="0 0 0.05"/><mass value="0.5"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.001"/></inertial></link>
  <joint name="joint1" type="continuous"><parent link="base_link"/><child link="link1"/>
    <origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="joint2" type="continuous"><parent link="link1"/><child link="link2"/>
    <origin xyz="0 0 0" rpy="1.5707963267948966 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="joint3" type="continuous"><parent link="link2"/><child link="link3"/>
    <origin xyz="0.45 0 0" rpy="0 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="joint4" type="continuous"><parent link="link3"/><child link="link4"/>
    <origin xyz="0 0.45 0" rpy="-1.5707963267948966 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="joint5" type="continuous"><parent link="link4"/><child link="link5"/>
    <origin xyz="0 0 0" rpy="1.5707963267948966 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="joint6" type="continuous"><parent link="link5"/><child link="link6"/>
    <origin xyz="0 0 0" rpy="-1.5707963267948966 0 0"/><axis xyz="0 0 1"/></joint>
</robot>
"""


def test_rx90_mdh_and_handwritten_urdf_give_the_same_dynamics():
    table = load_mdh(data_path('rx90.yaml'))
    from_mdh = model_from_mdh(table)
    terms = {'armature': {'joint1': 1.5, 'joint2': 1.2, 'joint3': 0.6, 'joint4': 0.2,
                          'joint5': 0.2, 'joint6': 0.15},
             'friction_coulomb': {'joint1': 6.0, 'joint2': 7.0, 'joint3': 4.0, 'joint4': 2.0,
                                  'joint5': 1.5, 'joint6': 1.0},
             'friction_viscous': {'joint1': 8.0, 'joint2': 6.0, 'joint3': 3.0, 'joint4': 1.0,
                                  'joint5': 1.0, 'joint6': 0.5}}
    from_urdf = RobotModel.from_urdf_string(RX90_URDF, **terms)
    assert from_mdh.joint_names == from_urdf.joint_names
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(20):
        q, qd, qdd = rng.uniform(-3, 3, size=(3, 6))
        f_ext = {'link6': rng.normal(size=6), 'link3': rng.normal(size=6)}
        for kw in ({}, {'f_ext': f_ext}, {'gravity': rng.normal(size=3)}):
            worst = max(worst, np.abs(inverse_dynamics(from_mdh, q, qd, qdd, **kw)
                                      - inverse_dynamics(from_urdf, q, qd, qdd, **kw)).max())
        worst = max(worst, np.abs(reaction_wrenches(from_mdh, q, qd, qdd)
                                  - reaction_wrenches(from_urdf, q, qd, qdd)).max())
    assert worst <= 1e-9


def test_khalil_newton_euler_on_the_table_matches_the_core_on_the_urdf():
    """Eqs. (13)-(31) on the MDH table against the core's RNEA on the hand-written URDF."""
    table = load_mdh(data_path('rx90.yaml'))
    tree = KhalilTree(table)
    model = RobotModel.from_urdf_string(RX90_URDF)
    rng = np.random.default_rng(2)
    for _ in range(10):
        q, qd, qdd = rng.uniform(-3, 3, size=(3, 6))
        ne = khalil_ne(tree, q, qd, qdd, friction=False) - tree.Ia * qdd
        assert np.allclose(ne, inverse_dynamics(model, q, qd, qdd), rtol=0, atol=1e-9)
        extra = khalil_ne(tree, q, qd, qdd) - khalil_ne(tree, q, qd, qdd, friction=False)
        assert np.allclose(extra, tree.Fs * np.sign(qd) + tree.Fv * qd, atol=1e-12)


def test_random_tree_with_gamma_b_prismatic_and_fixed_frames():
    rng = np.random.default_rng(3)
    table = random_tree(rng)
    tree, model = KhalilTree(table), model_from_mdh(table, coulomb_band=1e-12)
    assert model.joint_names == table.joint_names
    assert model.joint_types.count('prismatic') == 2
    for _ in range(10):
        q, qd, qdd = rng.normal(size=(3, tree.nq))
        f_env = rng.normal(size=(tree.n, 6))
        ne = khalil_ne(tree, q, qd, qdd, f_env=f_env)         # with Ia, Fs, Fv (eq. 31)
        # Khalil's f_e is the wrench of the link ON the environment: the core's f_ext = -f_e
        f_ext = {table.frames[j].link_name: -f_env[j] for j in range(tree.n)}
        assert np.allclose(ne, inverse_dynamics(model, q, qd, qdd, f_ext=f_ext), atol=1e-9)


def test_mdh_to_urdf_loads_in_pinocchio_with_the_same_dynamics():
    pin = pytest.importorskip('pinocchio')
    rng = np.random.default_rng(4)
    for table in (load_mdh(data_path('rx90.yaml')), random_tree(rng)):
        tree = KhalilTree(table)
        pmodel = pin.buildModelFromXML(mdh_to_urdf(table))
        pdata = pmodel.createData()
        joints = [pmodel.joints[pmodel.getJointId(n)] for n in table.joint_names]
        for _ in range(5):
            q, qd, qdd = rng.normal(size=(3, tree.nq))
            qp, vp, ap = np.zeros(pmodel.nq), np.zeros(pmodel.nv), np.zeros(pmodel.nv)
            for k, jm in enumerate(joints):
                if jm.nq == 2:              # continuous joint: (cos q, sin q)
                    qp[jm.idx_q:jm.idx_q + 2] = np.cos(q[k]), np.sin(q[k])
                else:
                    qp[jm.idx_q] = q[k]
                vp[jm.idx_v], ap[jm.idx_v] = qd[k], qdd[k]
            tau = pin.rnea(pmodel, pdata, qp, vp, ap)[[jm.idx_v for jm in joints]]
            ne = khalil_ne(tree, q, qd, qdd, friction=False) - tree.Ia * qdd
            assert np.allclose(ne, tau, atol=1e-9)


def test_yaml_and_csv_describe_the_same_robot():
    """The example RX-90 table reads the same from YAML, CSV, text, and as a model path."""
    names = model_from_mdh(data_path('rx90.csv')).joint_names
    assert names == ('joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6')
    a = load_mdh_yaml(data_path('rx90.yaml'))
    b = load_mdh_csv(data_path('rx90.csv'))
    assert a == b
    text = open(data_path('rx90.yaml'), encoding='utf-8').read()
    assert load_mdh_yaml(text) == a


def test_transform_is_the_product_of_eq_1():
    rng = np.random.default_rng(5)
    for _ in range(10):
        g, b, al, d, th, r = rng.normal(size=6)

        def tran(axis, x):
            T = np.eye(4)
            T[axis, 3] = x
            return T

        def rot(Rm):
            T = np.eye(4)
            T[:3, :3] = Rm
            return T
        expected = (rot(rotz(g)) @ tran(2, b) @ rot(rotx(al)) @ tran(0, d) @ rot(rotz(th))
                    @ tran(2, r))
        assert np.allclose(mdh_transform(g, b, al, d, th, r), expected, atol=1e-14)


def test_inertial_parameters_about_origin_and_about_com_round_trip():
    rng = np.random.default_rng(6)
    A = rng.normal(size=(3, 3))
    m, c, Ic = 2.5, rng.normal(size=3), A @ A.T
    M, MS, J = com_to_khalil(m, c, Ic)
    assert np.allclose(MS, m * c)
    m2, c2, Ic2 = khalil_to_com(M, MS, J)
    assert m2 == m and np.allclose(c2, c) and np.allclose(Ic2, Ic)


def test_closed_loop_table_gives_the_tree_model_and_the_cut_joints():
    table = load_mdh(data_path('fourbar.yaml'))
    model = model_from_mdh(table)
    assert model.joint_names == ('crank', 'coupler_joint', 'rocker_joint')
    (loop,) = loop_constraints(table)
    assert (loop.cut.j, loop.i, loop.aligned.j, loop.j) == (4, 2, 5, 3)
    assert table.B == 1 and list(table.active) == [True, False, False]


def test_angles_may_be_written_with_pi():
    table = make_table([{'j': 1, 'a': 0, 'alpha': '-pi/2', 'theta': '2*pi/3', 'd': '0.1 + 0.05'}])
    f = table.frames[0]
    assert f.alpha == -math.pi / 2 and f.theta == 2 * math.pi / 3 and f.d == pytest.approx(0.15)


@pytest.mark.parametrize('rows, kwargs, message', [
    ([{'j': 2, 'a': 0}], {}, 'numbered'),
    ([{'j': 1, 'a': 1}], {}, 'antecedent'),
    ([{'j': 1, 'a': 0, 'sigma': 3}], {}, 'sigma'),
    ([{'j': 1, 'a': 0, 'sigma': 2, 'mu': 1}], {}, 'fixed frame'),
    ([{'j': 1, 'a': 0, 'colour': 3}], {}, 'unknown column'),
    ([{'j': 1, 'a': 0, 'alpha': 'import os'}], {}, 'expression'),
    ([{'j': 1, 'a': 0, 'alpha': 'nan'}], {}, 'expression'),
    ([{'j': 1, 'a': 0, 'M': -1}], {}, 'negative'),
    ([{'j': 1, 'a': 0}, {'j': 2, 'a': 1}], {'NL': 2, 'NJ': 3}, 'frames'),
    ([{'j': 1, 'a': 0}, {'j': 2, 'a': 0}, {'j': 3, 'a': 1, 'M': 1}, {'j': 4, 'a': 2, 'sigma': 2}],
     {'NL': 2, 'NJ': 3}, 'cut-joint frames'),
    ([{'j': 1, 'a': 0}, {'j': 2, 'a': 0}, {'j': 3, 'a': 1, 'sigma': 2},
      {'j': 4, 'a': 2, 'sigma': 2}],
     {'NL': 2, 'NJ': 3}, 'passive'),
])
def test_malformed_tables_are_rejected_with_a_clear_message(rows, kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_table(rows, **kwargs)


def test_inconsistent_inertial_parameters_name_the_frame():
    table = make_table([{'j': 1, 'a': 0, 'M': 1.0, 'MX': 0.5, 'ZZ': 0.01}])
    with pytest.raises(ValueError, match='MDH frame 1: the inertial parameters are not'):
        model_from_mdh(table)
    with pytest.raises(ValueError, match='M = 0'):
        model_from_mdh(make_table([{'j': 1, 'a': 0, 'MX': 0.5}]))


def test_closed_loop_csv_with_directives_equals_the_yaml():
    """CSV directives '# NL = 3' and '# NJ = 4' describe the cut joint of the four-bar."""
    rows = ['j, a, mu, sigma, d, XX, XY, YY, ZZ, MX, MY, M, Ia, Fv, name, link']
    rows += ['1, 0, 1, 0, 0, 0.0001, 0, 0.0134, 0.0135, 0.1, 0, 1.0, 0.001, 0.01, crank, '
             'crank_link',
             '2, 1, 0, 0, 0.2, 0.001, -0.005, 0.167, 0.168, 0.5, 0.02, 2.0, 0, 0, coupler_joint, '
             'coupler',
             '3, 0, 0, 0, 0.6, 0.0005, 0, 0.08, 0.08, 0.3, 0, 1.5, 0, 0, rocker_joint, rocker',
             '4, 2, 0, 0, 0.5, , , , , , , , , , cut_joint_C,',
             '5, 3, 0, 2, 0.4, , , , , , , , , , frame_C_on_rocker,']
    text = '# name = fourbar\n# NL = 3\n# NJ = 4\n' + '\n'.join(rows) + '\n'
    assert load_mdh_csv(text) == load_mdh(data_path('fourbar.yaml'))


def test_command_line_prints_the_urdf(capsys):
    """``python -m rnea_ros.khalil table`` prints a URDF the core reads back."""
    assert mdh_main([data_path('rx90.csv')]) == 0
    model = RobotModel.from_urdf_string(capsys.readouterr().out)
    assert model.joint_names == load_mdh(data_path('rx90.csv')).joint_names
    assert mdh_main(['/nonexistent.yaml']) == 1
    assert 'cannot read' in capsys.readouterr().err


def test_bad_files_are_rejected():
    with pytest.raises(ValueError, match='frames'):
        load_mdh_yaml('name: x\n')
    with pytest.raises(ValueError, match='number of columns'):
        load_mdh_csv('j, a, alpha\n1, 0\n')
    with pytest.raises(ValueError, match='cannot read'):
        load_mdh('/nonexistent/robot.yaml')


def test_khalil_functions_take_a_table_or_a_tree_but_not_a_core_model():
    """The Khalil recursions accept an MDHTable directly; a RobotModel is a clear error."""
    table = load_mdh(data_path('rx90.yaml'))
    q = np.linspace(-1, 1, 6)
    assert np.allclose(khalil_ne(table, q, q, q), khalil_ne(KhalilTree(table), q, q, q))
    with pytest.raises(ValueError, match='KhalilTree or an MDHTable'):
        khalil_ne(model_from_mdh(table), q, q, q)


def test_from_mdh_lives_in_the_khalil_package_not_in_the_core():
    """rnea_ros.khalil.model_from_mdh builds the model; the core's RobotModel has no from_mdh.

    The core never imports the Khalil add-on (issue 13: no import cycle), so the convenience
    moved from ``RobotModel.from_mdh`` to :func:`rnea_ros.khalil.model_from_mdh`.
    """
    import numpy as np
    from rnea_ros import gravity_torques, RobotModel
    from rnea_ros.khalil import data_path, model_from_mdh
    from rnea_ros.khalil.mdh_model import model_from_mdh as mdh_model_from_mdh
    assert not hasattr(RobotModel, 'from_mdh')
    a = model_from_mdh(data_path('rx90.yaml'))
    b = mdh_model_from_mdh(data_path('rx90.yaml'))
    q = np.linspace(-1.0, 1.0, a.nq)
    assert a.joint_names == b.joint_names
    np.testing.assert_array_equal(gravity_torques(a, q), gravity_torques(b, q))
