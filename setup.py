"""Install rnea_ros as an ament_python package (colcon) or with pip."""
from glob import glob

from setuptools import find_packages, setup

package_name = 'rnea_ros'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'benchmarks']),
    package_data={'rnea_ros.khalil': ['data/*.yaml', 'data/*.csv']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch',
         glob('launch/*.launch.py') + glob('launch/*.launch.xml')),
        ('share/' + package_name + '/config', glob('config/*.yaml')),
        ('share/' + package_name + '/urdf', glob('urdf/*.urdf') + glob('urdf/*.yaml')),
    ],
    install_requires=['setuptools', 'numpy', 'numba>=0.57', 'urdfdom-py', 'PyYAML'],
    zip_safe=True,
    maintainer='rnea_ros developers',
    maintainer_email='rnea-ros@example.org',
    description='Recursive Newton-Euler robot dynamics and effort commands for ROS 2.',
    license='Apache-2.0',
    # optional dependencies, each named by a one-line hint when missing (entry_points.py):
    # `pip install .[identify]` for rnea-ros excite/identify, `.[analyze]` for rnea-ros analyze
    extras_require={
        'identify': ['scipy', 'rosbags', 'matplotlib'],
        'analyze': ['scipy', 'rosbags', 'matplotlib'],
        'sim': ['mujoco', 'matplotlib'],
        'test': ['pytest'],
    },
    entry_points={
        'console_scripts': [
            # rnea_ros.entry_points: a missing dependency is one line, not a traceback
            'rnea-ros = rnea_ros.entry_points:rnea_ros_cli',
            'rnea_node = rnea_ros.entry_points:rnea_node',
            'rnea_lifecycle_node = rnea_ros.entry_points:rnea_lifecycle_node',
            'mujoco_sim = rnea_ros.entry_points:mujoco_sim',
            'reference_trajectory = rnea_ros.entry_points:reference_trajectory',
            'add_ros2_control = rnea_ros.entry_points:add_ros2_control',
            'trajectory_feedforward = rnea_ros.entry_points:trajectory_feedforward',
            'feedforward_action_proxy = rnea_ros.entry_points:feedforward_action_proxy',
        ],
    },
)
