"""The sim_head node over real DDS: camera images, camera info, joint states and the clock."""

import math
import time

import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState

from maxim_common.qos import COMMANDS, SENSOR
from maxim_perception.nodes.sim_head_node import SimHeadNode

pytestmark = pytest.mark.ros


def spin_until(executor, condition, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        executor.spin_once(timeout_sec=0.1)
    return condition()


@pytest.fixture
def graph():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    nodes = []
    try:
        sim = SimHeadNode(context=ctx, parameter_overrides=[
            Parameter('width', value=80), Parameter('height', value=60),
            Parameter('fps', value=20.0), Parameter('moving_target', value=False)])
        probe = rclpy.create_node('probe', context=ctx)
        nodes += [sim, probe]
        for node in nodes:
            executor.add_node(node)
        got = {'image': [], 'info': [], 'joints': [], 'clock': []}
        probe.create_subscription(Image, 'camera/image_raw', got['image'].append, SENSOR)
        probe.create_subscription(CameraInfo, 'camera/camera_info', got['info'].append, SENSOR)
        probe.create_subscription(JointState, 'joint_states', got['joints'].append, 10)
        probe.create_subscription(Clock, 'clock', got['clock'].append, 10)
        cmd_pub = probe.create_publisher(JointState, 'head/joint_commands', COMMANDS)
        yield executor, sim, got, cmd_pub
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def command(pan, tilt, names=('head_pan_joint', 'head_tilt_joint')):
    return JointState(name=list(names), position=[pan, tilt])


def image_array(msg):
    return np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3)


def test_publishes_camera_joints_and_clock_and_follows_commands(graph):
    executor, sim, got, cmd_pub = graph
    assert spin_until(executor, lambda: all(got.values()))
    img, info = got['image'][-1], got['info'][-1]
    assert (img.width, img.height, img.encoding, img.step) == (80, 60, 'rgb8', 240)
    assert img.header.frame_id == 'camera_optical_frame' == info.header.frame_id
    assert info.k[0] > 0 and info.k[2] == pytest.approx(39.5) and len(info.d) == 5
    assert list(got['joints'][-1].name) == ['head_pan_joint', 'head_tilt_joint']
    first = image_array(img)
    assert first.std() > 5
    # Sim time advances on the clock topic and stamps the images.
    t0 = got['clock'][-1].clock
    assert spin_until(executor, lambda: got['clock'][-1].clock.sec * 1e9
                      + got['clock'][-1].clock.nanosec > t0.sec * 1e9 + t0.nanosec + 2e8)

    def pan_reached(target):
        return got['joints'] and abs(got['joints'][-1].position[0] - target) < 0.01

    # Commands names in any order; the head moves and the picture changes.
    for _ in range(3):
        cmd_pub.publish(command(0.2, 0.7, names=('head_tilt_joint', 'head_pan_joint')))
        if spin_until(executor, lambda: pan_reached(0.7), timeout_s=3.0):
            break
    assert pan_reached(0.7)
    assert got['joints'][-1].position[1] == pytest.approx(0.2, abs=0.01)
    got['image'].clear()
    assert spin_until(executor, lambda: len(got['image']) >= 2)
    moved = image_array(got['image'][-1])
    assert np.abs(moved.astype(int) - first.astype(int)).mean() > 10


def test_bad_commands_are_ignored_and_the_sim_keeps_running(graph):
    executor, sim, got, cmd_pub = graph
    assert spin_until(executor, lambda: got['joints'])
    cmd_pub.publish(command(math.nan, 0.0))
    cmd_pub.publish(command(0.5, 0.0, names=('neck', 'head_tilt_joint')))
    cmd_pub.publish(JointState(name=['head_pan_joint', 'head_tilt_joint'], position=[0.5]))
    cmd_pub.publish(command(9.0, -9.0))      # out of range: the servo's range clamps it
    assert spin_until(executor, lambda: abs(got['joints'][-1].position[0] - 2.6) < 0.01)
    got['joints'].clear()
    got['image'].clear()
    assert spin_until(executor, lambda: got['joints'] and got['image'])
    assert got['joints'][-1].position[1] == pytest.approx(-0.8, abs=0.01)
    assert sim.render_error == ''
