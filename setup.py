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
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'rnea-ros = rnea_ros.analysis.cli:main',
            'rnea_node = rnea_ros.node.rnea_node:main',
            'mujoco_sim = rnea_ros.sim.mujoco_sim:main',
            'reference_trajectory = rnea_ros.sim.reference_trajectory:main',
            'add_ros2_control = rnea_ros.sim.ros2_control_urdf:main',
        ],
    },
)
