"""The attention node over real DDS: synthetic camera frames in; attention state, percepts,
the debug image, markers and the scene_summary service out."""

import json
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, ReliabilityPolicy
from sensor_msgs.msg import Image, JointState
from visualization_msgs.msg import Marker, MarkerArray

from maxim_common.qos import LATCHED, SENSOR
from maxim_interfaces.msg import AttentionState, Detection, Percept
from maxim_interfaces.srv import SceneSummary
from maxim_perception.nodes.attention_node import AttentionNode
from maxim_perception.nodes.camera_node import CameraNode

pytestmark = pytest.mark.ros


def spin_until(executor, condition, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        executor.spin_once(timeout_sec=0.05)
    return condition()


@pytest.fixture
def graph():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    nodes = []
    try:
        cam = CameraNode(context=ctx, parameter_overrides=[
            Parameter('synthetic', value=True), Parameter('width', value=320),
            Parameter('height', value=240), Parameter('fps', value=15.0)])
        att = AttentionNode(context=ctx, parameter_overrides=[
            Parameter('percept_period_s', value=0.5), Parameter('max_rate_hz', value=15.0),
            Parameter('focus.min_dwell_s', value=0.5)])
        probe = rclpy.create_node('probe', context=ctx)
        nodes += [cam, att, probe]
        for node in nodes:
            executor.add_node(node)
        got = {'state': [], 'percept': [], 'debug': [], 'markers': []}
        probe.create_subscription(AttentionState, 'attention/state', got['state'].append,
                                  LATCHED)
        probe.create_subscription(Percept, 'percepts', got['percept'].append, 10)
        probe.create_subscription(Image, 'attention/debug_image', got['debug'].append, SENSOR)
        probe.create_subscription(MarkerArray, 'attention/markers', got['markers'].append, 10)
        joints = probe.create_publisher(JointState, 'joint_states', 10)
        client = probe.create_client(SceneSummary, 'perception/scene_summary')
        yield executor, att, got, joints, client
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def call(executor, client, **fields):
    assert client.wait_for_service(timeout_sec=5.0)
    future = client.call_async(SceneSummary.Request(**fields))
    assert spin_until(executor, future.done, 10.0)
    return future.result()


def test_frames_become_percepts_state_debug_image_and_markers(graph):
    executor, att, got, joints, client = graph

    def percept_with_everything():
        return any(p.people and len(p.objects) >= 3 for p in got['percept'])

    assert spin_until(executor, percept_with_everything)
    p = next(p for p in got['percept'] if p.people and len(p.objects) >= 3)
    assert p.source == Percept.SOURCE_VISION and p.source_name == 'camera'
    assert p.people[0].kind == Detection.KIND_FACE and p.people[0].track_id > 0
    assert {d.label for d in p.objects} >= {'red object', 'blue object', 'green object'}
    assert p.narrative.startswith('I see 1 face') and p.percept_id.startswith('vision-')
    assert p.header.frame_id == 'camera_optical_frame'
    assert spin_until(executor, lambda: got['state'] and got['state'][-1].has_focus
                      and got['debug'] and len(got['markers']) > 0)
    st = got['state'][-1]
    assert st.mode in (AttentionState.MODE_TRACK, AttentionState.MODE_SCAN)
    assert st.focus_track_id in {d.track_id for d in st.targets}
    dbg = got['debug'][-1]
    assert (dbg.width, dbg.height, dbg.encoding) == (320, 240, 'bgr8')
    m = got['markers'][-1].markers
    assert m[0].action == Marker.DELETEALL and any(x.type == Marker.ARROW for x in m)
    # Percepts are rate limited and only sent on change: far fewer than processed frames.
    assert len(got['percept']) < att.frames_processed


def test_head_angles_from_joint_states_shift_target_angles(graph):
    executor, att, got, joints, client = graph
    assert spin_until(executor, lambda: got['state'] and len(got['state'][-1].targets) >= 4)
    green0 = next(d for d in got['state'][-1].targets if d.label == 'green object')
    msg = JointState(name=['head_tilt_joint', 'head_pan_joint'], position=[0.0, 0.4])
    for _ in range(3):
        joints.publish(msg)
        executor.spin_once(timeout_sec=0.05)

    def shifted():
        g = [d for d in got['state'][-1].targets if d.label == 'green object']
        return g and abs(g[0].pan - (green0.pan + 0.4)) < 0.05
    assert spin_until(executor, shifted)


def test_scene_summary_service(graph):
    executor, att, got, joints, client = graph
    early = call(executor, client, top_n=3, include_attention=True)
    if not early.available:  # before the first frame: a clear "unavailable"
        assert early.error_code == SceneSummary.Response.ERROR_UNAVAILABLE
    assert spin_until(executor, lambda: got['state'] and len(got['state'][-1].targets) >= 4)
    res = call(executor, client, top_n=2, include_attention=True)
    assert res.available and res.error_code == SceneSummary.Response.ERROR_NONE
    assert len(res.targets) == 2 and res.targets[0].salience >= res.targets[1].salience
    assert res.attention.has_focus and res.narrative.startswith('I see')
    data = json.loads(res.result_json)
    assert [t['track_id'] for t in data['targets']] == [d.track_id for d in res.targets]
    assert data['attention']['focus']['track_id'] == res.attention.focus_track_id
    res = call(executor, client, top_n=0, include_attention=False)
    assert len(res.targets) >= 4 and 'attention' not in json.loads(res.result_json)


def test_only_the_newest_frame_is_processed_and_bad_frames_are_skipped():
    from maxim_perception.camera import SyntheticCamera
    from maxim_perception.conversions import image_to_msg, time_msg
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        att = AttentionNode(context=ctx, parameter_overrides=[
            Parameter('max_rate_hz', value=1.0)])  # the timer stays out of the way
        # Frames never queue in DDS either: the subscription keeps the newest one only.
        (sub,) = [s for s in att.subscriptions if s.topic_name == '/camera/image_raw']
        assert (sub.qos_profile.depth, sub.qos_profile.history) == (1, HistoryPolicy.KEEP_LAST)
        assert sub.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
        cam = SyntheticCamera(320, 240, fps=10.0)
        old = image_to_msg(cam.render(0.0), 'bgr8', time_msg(1.0), 'cam')
        new = image_to_msg(cam.render(0.1), 'bgr8', time_msg(1.1), 'cam')
        att._on_image(old)
        att._on_image(new)           # arrives before the first was processed: old is dropped
        att._process_latest()
        att._process_latest()        # nothing new: nothing done
        assert (att.frames_processed, att.frames_dropped) == (1, 1)
        assert att.core.last_result.t == pytest.approx(1.1)
        assert (att.core.camera_model.width, att.core.camera_model.height) == (320, 240)
        att._on_image(Image(height=2, width=2, encoding='yuv422', step=4, data=b'12345678'))
        att._process_latest()        # logged and skipped, the node carries on
        assert att.frames_processed == 1
        att._on_joints(JointState(name=['head_pan_joint'], position=[]))  # malformed: ignored
        att._on_image(image_to_msg(cam.render(0.2), 'bgr8', time_msg(1.2), 'cam'))
        att._process_latest()
        assert att.frames_processed == 2 and att.core.last_result.head_pan == 0.0
        att.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)


def test_rate_ceiling_counts_frame_stamps_and_pixels_use_the_pose_at_the_frame_time():
    from maxim_perception.camera import SyntheticCamera
    from maxim_perception.conversions import image_to_msg, time_msg
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        att = AttentionNode(context=ctx, parameter_overrides=[
            Parameter('max_rate_hz', value=10.0), Parameter('detect.faces', value=False)])
        cam = SyntheticCamera(320, 240, fps=20.0)
        # 20 frames/s against a 10 Hz ceiling: every other frame is processed, none waits.
        for i in range(10):
            att._on_image(image_to_msg(cam.render(i / 20), 'bgr8', time_msg(1.0 + i / 20),
                                       'cam'))
            att._process_latest()
        assert (att.frames_processed, att.frames_dropped) == (5, 5)
        # The head turned from pan 0 (t=2.0) to 0.4 (t=3.0); a frame taken at t=2.5 and
        # processed later is seen with the head at 0.2, where it was when the frame was taken.
        for t, pan in ((2.0, 0.0), (3.0, 0.4)):
            js = JointState(name=['head_pan_joint', 'head_tilt_joint'], position=[pan, 0.0])
            js.header.stamp = time_msg(t)
            att._on_joints(js)
        att._on_image(image_to_msg(cam.render(0.6), 'bgr8', time_msg(2.5), 'cam'))
        att._process_latest()
        assert att.core.last_result.head_pan == pytest.approx(0.2)
        # A clock that goes back (a restarted simulation) does not stall the ceiling.
        att._on_image(image_to_msg(cam.render(0.7), 'bgr8', time_msg(0.1), 'cam'))
        att._process_latest()
        assert att.frames_processed == 7
        att.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
