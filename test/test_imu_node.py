"""An IMU on a link that the joints move, through the running node (real rclpy, panda).

The panda stands on a platform that accelerates and rotates; its IMU sits in a sensor frame
merged over two fixed joints below panda_link7.  The IMU messages are synthesised exactly from
the floating-base model of the same URDF (:func:`test_imu.imu_reading`: base twist and
acceleration, arm moving).  The node takes the joint motion out of them and its efforts equal
``inverse_dynamics`` with the platform's base acceleration; unknown frames are refused and the
node keeps running.
"""

from builtin_interfaces.msg import Time
import numpy as np
from rnea_ros import inverse_dynamics, RobotModel
from rnea_ros.core.spatial import rpy_to_matrix
from sensor_msgs.msg import Imu
from test_imu import imu_reading
import test_node
from test_node import _array, _state, PANDA

context = test_node.context      # the node test fixtures: rclpy context, node harness, model
make = test_node.make
panda = test_node.panda

SENSOR = """
  <link name="imu_bracket"/><link name="imu_sensor"/>
  <joint name="imu_bracket_joint" type="fixed"><parent link="panda_link7"/>
    <child link="imu_bracket"/><origin xyz="0.03 -0.02 0.09" rpy="0 0 -0.785"/></joint>
  <joint name="imu_sensor_joint" type="fixed"><parent link="imu_bracket"/>
    <child link="imu_sensor"/><origin xyz="0.01 0.04 0.02" rpy="0.3 -0.2 1.1"/></joint>
</robot>"""
G_ROOT = rpy_to_matrix((0.15, -0.1, 0.0)).T @ np.array([0.0, 0.0, -9.81])   # tilted platform


def _panda_with_imu():
    with open(PANDA, encoding='utf-8') as f:
        xml = f.read().replace('</robot>', SENSOR)
    return xml, RobotModel.from_urdf_string(xml, floating_base=True)


def _imu(frame_id, gyro, accel, t):
    msg = Imu()
    msg.header.frame_id = frame_id
    msg.header.stamp = Time(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))
    w, a = msg.angular_velocity, msg.linear_acceleration
    w.x, w.y, w.z = [float(v) for v in gyro]
    a.x, a.y, a.z = [float(v) for v in accel]
    return msg


def _start(make, xml, mode):
    from rclpy.qos import qos_profile_sensor_data
    h = make(urdf_file='', robot_description=xml, mode=mode, use_imu=True, clamp_efforts=False,
             imu_angular_acceleration_filter=1e-9)         # the raw gyro difference
    h.pubs['imu'] = h.peer.create_publisher(Imu, '/rnea/imu', qos_profile_sensor_data)
    h.wait_connected()
    return h


def test_imu_below_the_moving_wrist_gives_the_platform_acceleration(make):
    """inverse_dynamics mode, arm moving, platform accelerating and turning (alpha from gyro).

    Three IMU samples 10 ms apart along the arm's motion, each after the joint states of its
    instant; the efforts then equal inverse_dynamics(q, qd, qdd, gravity, base_acceleration =
    [a_origin, alpha]) to 1e-9.  Before any joint state, an IMU on a moving link is refused.
    """
    xml, free = _panda_with_imu()
    h = _start(make, xml, 'inverse_dynamics')
    model = h.node._rt.model
    names = model.joint_names
    h.publish('imu', _imu('imu_sensor', (0, 0, 0), (0, 0, 9.81), 99.0))
    assert 'imu rejected' in h.node._last_error
    assert 'no joint states have arrived yet' in h.node._last_error
    q0, qd0, qdd = _state(model, seed=61)
    qdd[8] = qdd[7]                                          # the mimic finger follows
    h.publish('accelerations_array', _array(qdd))
    a_origin, v_origin = np.array([0.8, -0.5, 0.6]), np.array([0.4, 0.3, -0.1])
    w0, alpha = np.array([0.05, -0.08, 0.3]), np.array([0.4, 0.25, -0.6])
    for k in range(3):
        t = 0.01 * k
        q, qd = q0 + qd0 * t + 0.5 * qdd * t * t, qd0 + qdd * t
        h.joint_state(names, q, qd)
        gyro, accel = imu_reading(free, 'imu_sensor', q, qd, qdd, G_ROOT, a_origin,
                                  w0 + alpha * t, alpha, v_origin)
        h.publish('imu', _imu('imu_sensor', gyro, accel, 100.0 + t))
        assert h.node._rt.base_acceleration.imu.stamp > 0.0, h.node._last_error
    out = h.joint_state(names, q, qd)
    expected = inverse_dynamics(model, q, qd, qdd, gravity=G_ROOT,
                                base_acceleration=np.r_[a_origin, alpha])
    np.testing.assert_allclose(out.effort, expected, rtol=1e-9, atol=1e-9)
    still = inverse_dynamics(model, q, qd, qdd, gravity=G_ROOT)
    assert not np.allclose(expected, still, atol=1e-2)       # the platform's motion shows
    # An unknown frame is refused with the frames listed; the last valid IMU stays in use.
    h.publish('imu', _imu('imu_sensr', gyro, accel, 100.03))
    assert "'imu_sensr' is not a link of the model" in h.node._last_error
    assert 'imu_sensor' in h.node._last_error
    again = h.joint_state(names, q, qd)
    np.testing.assert_allclose(again.effort, expected, rtol=1e-9, atol=1e-9)


def test_imu_below_the_wrist_at_rest_on_an_accelerating_platform(make):
    """gravity_compensation, arm at rest: the efforts are those of the platform's acceleration."""
    xml, free = _panda_with_imu()
    h = _start(make, xml, 'gravity_compensation')
    model = h.node._rt.model
    q, _, _ = _state(model, seed=62)
    zero = np.zeros(model.nv)
    a_origin = np.array([-1.2, 0.7, 0.9])
    h.joint_state(model.joint_names, q, zero)
    gyro, accel = imu_reading(free, 'imu_sensor', q, zero, zero, G_ROOT, a_origin)
    h.publish('imu', _imu('imu_sensor', gyro, accel, 200.0))
    out = h.joint_state(model.joint_names, q, zero)
    expected = inverse_dynamics(model, q, zero, zero, gravity=G_ROOT,
                                base_acceleration=np.r_[a_origin, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(out.effort, expected, rtol=1e-9, atol=1e-9)
    assert not np.allclose(expected, inverse_dynamics(model, q, zero, zero, gravity=G_ROOT),
                           atol=1e-2)


def test_imu_below_the_wrist_uses_the_commanded_accelerations_in_computed_torque(make):
    """computed_torque: the joints' part of the reading is that of the commanded qdd_cmd."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    xml, free = _panda_with_imu()
    h = _start(make, xml, 'computed_torque')
    model = h.node._rt.model
    q, qd, _ = _state(model, seed=63)
    q_ref, qd_ref, qdd_ref = _state(model, seed=64)
    point = JointTrajectoryPoint(positions=list(q_ref[:8]), velocities=list(qd_ref[:8]),
                                 accelerations=list(qdd_ref[:8]))
    h.publish('reference', JointTrajectory(joint_names=list(model.joint_names[:8]),
                                           points=[point]))
    for ref in (q_ref, qd_ref, qdd_ref):                     # the mimic joint follows its driver
        ref[8] = ref[7]
    qdd_cmd = qdd_ref + 400.0 * (q_ref - q) + 40.0 * (qd_ref - qd)     # default kp, kd
    a_origin = np.array([0.3, 1.1, -0.7])
    h.joint_state(model.joint_names, q, qd)
    gyro, accel = imu_reading(free, 'imu_sensor', q, qd, qdd_cmd, G_ROOT, a_origin)
    h.publish('imu', _imu('imu_sensor', gyro, accel, 300.0))
    out = h.joint_state(model.joint_names, q, qd)
    expected = inverse_dynamics(model, q, qd, qdd_cmd, gravity=G_ROOT,
                                base_acceleration=np.r_[a_origin, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(out.effort, expected, rtol=1e-9, atol=1e-9)
