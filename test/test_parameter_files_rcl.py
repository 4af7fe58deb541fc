"""Parameter files we write are read by rcl itself, whatever values a fit leaves behind.

A bound-constrained fit can leave a coefficient at the subnormal 5e-324; rcl's parser cannot
read it and the node exits before it starts (seen in the demo's identified gravity phase).
"""
import numpy as np
from rclpy.utilities import remove_ros_args
from rnea_ros.analysis.output import node_parameters
from rnea_ros.core.model import RobotModel
from rnea_ros.demo.processes import ProcessRunner
import ros_domains
import yaml

ARM = """<robot name="two">
  <link name="base"/>
  <link name="l1"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1"
    iyz="0" izz="0.1"/></inertial></link>
  <link name="l2"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1"
    iyz="0" izz="0.1"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <axis xyz="0 0 1"/><limit effort="10" velocity="1" lower="-3" upper="3"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <axis xyz="0 1 0"/><limit effort="10" velocity="1" lower="-3" upper="3"/></joint>
</robot>"""
TINY = [5e-324, 1.5e-55]


def _rcl_reads(path):
    """Parse ``path`` as ``--params-file`` exactly as a node does; raises if rcl refuses it."""
    remove_ros_args(['node', '--ros-args', '--params-file', str(path)])


def test_rcl_itself_refuses_a_subnormal_so_the_writers_must_not_write_one(tmp_path):
    path = tmp_path / 'raw.yaml'
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': {'x': [0.1, 5e-324]}}}))
    try:
        _rcl_reads(path)
    except Exception as error:  # noqa: B902 (rclpy raises its own error type)
        assert 'same type' in str(error) or 'parse' in str(error).lower()
    else:
        raise AssertionError('rcl read a subnormal; the guard below may be unnecessary')


def test_identify_parameter_yaml_with_near_zero_fit_values_is_read_by_rcl(tmp_path):
    model = RobotModel.from_urdf_string(ARM)
    jp = np.array([[TINY[0], 0.2, TINY[1], -TINY[0]], [0.1, TINY[0], 0.01, 0.03]])
    path = tmp_path / 'PARAMS.yaml'
    path.write_text(node_parameters(model, jp))
    _rcl_reads(path)
    params = yaml.safe_load(path.read_text())['/**']['ros__parameters']
    assert params['friction_coulomb'] == [0.2, 0.0]
    assert params['friction_viscous'] == [0.0, 0.1]


def test_demo_process_parameter_files_with_subnormal_values_are_read_by_rcl(tmp_path):
    runner = ProcessRunner(str(tmp_path), domain_id=ros_domains.pick())
    params_file = tmp_path / 'params' / 'node.yaml'
    runner.write_parameters('node', {'friction_coulomb': np.array([0.05, 5e-324, 0.1])})
    _rcl_reads(params_file)
    params = yaml.safe_load(params_file.read_text())['/**']['ros__parameters']
    assert params['friction_coulomb'] == [0.05, 0.0, 0.1]
