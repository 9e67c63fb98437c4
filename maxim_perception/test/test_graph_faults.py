"""The perception graph survives its camera going away: camera (a video file) -> attention ->
head_controller (dry run) over DDS. The file ends and is replayed, then vanishes (a device path
that disappears); the reflex lets go and the head holds, every node keeps running and answering,
bad attention states are refused with reasons, and when the file comes back the graph picks up
again without a restart."""

import math
import time

import cv2
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter

from maxim_common.qos import LATCHED
from maxim_interfaces.msg import AttentionState, HeadState
from maxim_interfaces.srv import SceneSummary
from maxim_perception.camera import SyntheticCamera
from maxim_perception.nodes.attention_node import AttentionNode
from maxim_perception.nodes.camera_node import CameraNode
from maxim_perception.nodes.head_controller_node import HeadControllerNode

pytestmark = pytest.mark.ros


def write_clip(path, frames=10):
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*'MJPG'), 10.0, (320, 240))
    scene = SyntheticCamera(320, 240, fps=10.0)
    for i in range(frames):
        writer.write(scene.render(i / 10.0))
    writer.release()


def test_camera_file_vanishes_and_returns_and_the_graph_keeps_running(tmp_path):
    clip = tmp_path / 'clip.avi'
    write_clip(clip)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    nodes = []
    try:
        camera = CameraNode(context=ctx, parameter_overrides=[
            Parameter('device', value=str(clip)), Parameter('width', value=320),
            Parameter('height', value=240), Parameter('fps', value=20.0),
            Parameter('reconnect.initial_backoff_s', value=0.1),
            Parameter('reconnect.max_backoff_s', value=0.2)])
        attention = AttentionNode(context=ctx, parameter_overrides=[
            Parameter('publish.debug_image', value=False)])
        head = HeadControllerNode(context=ctx, parameter_overrides=[
            Parameter('driver', value='dry_run')])
        probe = rclpy.create_node('fault_probe', context=ctx)
        nodes += [camera, attention, head, probe]
        states: list[HeadState] = []
        probe.create_subscription(HeadState, 'head/state', states.append, LATCHED)
        bad = probe.create_publisher(AttentionState, 'attention/state', 10)
        summary = probe.create_client(SceneSummary, 'perception/scene_summary')
        for node in nodes:
            executor.add_node(node)

        def spin_until(condition, timeout_s=20.0):
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if condition():
                    return True
                executor.spin_once(timeout_sec=0.05)
            return condition()

        def reflex(active):
            return lambda: bool(states) and states[-1].reflex_active == active

        # Frames flow: attention finds a focus and the reflex drives the head, through the end
        # of the file and its replay.
        assert spin_until(reflex(True))
        assert spin_until(lambda: camera.camera.status.value == 'ended')
        assert spin_until(lambda: camera.camera.status.value == 'ok')
        # The file vanishes: no frames, the reflex goes stale and the head holds.
        clip.unlink()
        assert spin_until(lambda: camera.camera.status.value == 'missing')
        assert spin_until(reflex(False))
        processed, held = attention.frames_processed, len(states)
        # Bad attention states are refused with a reason, not followed.
        msg = AttentionState(has_focus=True, focus_track_id=1, focus_pan=math.nan,
                             focus_tilt=0.0)
        msg.header.stamp = probe.get_clock().now().to_msg()
        bad.publish(msg)
        assert spin_until(lambda: any('not finite' in r for r in head.rejections))
        # Everything still runs: head/state keeps coming, attention still answers.
        assert spin_until(lambda: len(states) >= held + 5)
        assert summary.wait_for_service(timeout_sec=5.0)
        future = summary.call_async(SceneSummary.Request(top_n=3))
        assert spin_until(future.done)
        assert future.result().available
        assert attention.frames_processed == processed
        # The file comes back: frames, attention and the reflex resume without a restart.
        write_clip(clip)
        assert spin_until(lambda: attention.frames_processed > processed + 3)
        assert spin_until(reflex(True))
        assert head.commands_sent > 0 and head.driver_ok
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)
