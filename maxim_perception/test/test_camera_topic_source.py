"""The camera node's source `topic` over real DDS: a stand-in camera driver publishes rendered
frames with known pixels (Image rgb8 and bgr8 with padded rows, CompressedImage JPEG) and its
CameraInfo at a rate; the camera node passes them on to camera/image_raw and
camera/camera_info, where the device source puts its frames, with the same pixels, stamps and
frame ids, at most `fps` of them. A topic that sends nothing is a clear diagnostic, a
malformed image is dropped and counted, and attention reads what comes out."""

import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from sensor_msgs.msg import CameraInfo, CompressedImage, Image

from maxim_common.qos import SENSOR
from maxim_perception.conversions import (image_to_compressed, image_to_msg, msg_to_bgr,
                                          time_msg)
from maxim_perception.nodes.camera_node import CameraNode

pytestmark = pytest.mark.ros

FRAME_ID = 'standin_optical'
T0 = 1000.0          # the stand-in's stamps: T0 + k * stamp_step


def spin_until(executor, condition, timeout_s=20.0, others=()):
    """Spin `executor` (and `others`: the stand-ins' executors) until `condition()`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        executor.spin_once(timeout_sec=0.02)
        for other in others:
            other.spin_once(timeout_sec=0.0)
    return condition()


def pattern(k: int, height: int = 48, width: int = 64) -> np.ndarray:
    """Frame k: BGR blocks of 16x16 px in known colours, shifted a block per frame (flat
    8x8-aligned blocks keep JPEG's error small)."""
    colours = np.array([[30, 30, 210], [200, 60, 30], [40, 200, 40], [128, 128, 128],
                        [0, 0, 0], [255, 255, 255], [0, 200, 255]], np.uint8)
    yy, xx = np.mgrid[0:height, 0:width]
    return colours[(yy // 16 * 5 + xx // 16 + k) % len(colours)]


def stamp_key(stamp) -> tuple[int, int]:
    return stamp.sec, stamp.nanosec


class StandInCamera:
    """A camera driver in the graph (as usb_cam or v4l2_camera): frames at `rate_hz` on
    `topic`, each stamped T0 + k * stamp_step, with a CameraInfo (fx 111) on `info_topic`.
    It has a context of its own, so a DDS participant of its own, as a driver's process has.

    kind: 'rgb8' | 'bgr8' (rows padded with `pad` bytes) | 'jpeg' (CompressedImage);
    `render(k)` draws frame k (BGR; default: `pattern`).
    `bad_every` n: every n-th frame is malformed (a byte short); `bad_encoding`: every
    n-th frame is sent in that encoding instead. `sent` maps stamps to the BGR pixels of the
    good frames, `bad` holds the stamps of the others.
    """

    def __init__(self, ctx, topic, kind='rgb8', pad=0, rate_hz=20.0, info_topic='',
                 stamp_step=None, bad_every=0, bad_encoding='', render=pattern):
        self.node = rclpy.create_node('standin_camera', context=ctx)
        self.kind, self.pad, self.render = kind, pad, render
        self.stamp_step = stamp_step or 1.0 / rate_hz
        self.bad_every, self.bad_encoding = bad_every, bad_encoding
        self.pub = self.node.create_publisher(CompressedImage if kind == 'jpeg' else Image,
                                              topic, SENSOR)
        self.info_pub = self.node.create_publisher(CameraInfo, info_topic, SENSOR) \
            if info_topic else None
        self.sent: dict[tuple[int, int], np.ndarray] = {}
        self.bad: set[tuple[int, int]] = set()
        self.k = 0
        self.node.create_timer(1.0 / rate_hz, self.tick)

    def tick(self) -> None:
        k, self.k = self.k, self.k + 1
        stamp = time_msg(T0 + k * self.stamp_step)
        bgr = self.render(k)
        if self.kind == 'jpeg':
            msg = image_to_compressed(bgr, stamp, FRAME_ID, quality=95)
        else:
            pixels = np.ascontiguousarray(bgr[:, :, ::-1]) if self.kind == 'rgb8' else bgr
            msg = image_to_msg(pixels, self.kind, stamp, FRAME_ID,
                               step=bgr.shape[1] * 3 + self.pad)
        if self.bad_every and k % self.bad_every == self.bad_every - 1:
            if self.bad_encoding:
                msg.encoding = self.bad_encoding
            else:
                msg.data = msg.data[:-1]            # a byte short of step x height
            self.bad.add(stamp_key(stamp))
        else:
            self.sent[stamp_key(stamp)] = bgr
        self.pub.publish(msg)
        if self.info_pub is not None:
            info = CameraInfo(width=64, height=48, distortion_model='plumb_bob',
                              k=[111.0, 0.0, 31.5, 0.0, 111.0, 23.5, 0.0, 0.0, 1.0])
            info.header.stamp, info.header.frame_id = stamp, FRAME_ID
            self.info_pub.publish(info)


class Graph:
    """The camera node and a probe in one context; stand-in drivers each in their own."""

    def __init__(self):
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.executor = SingleThreadedExecutor(context=self.ctx)
        self.nodes = []
        self.drivers = []        # (context, executor, node)

    def spin_until(self, condition, timeout_s=20.0):
        return spin_until(self.executor, condition, timeout_s,
                          [ex for _, ex, _ in self.drivers])

    def camera(self, **params):
        overrides = [Parameter('source', value='topic'), Parameter('fps', value=30.0),
                     Parameter('diagnostics_period_s', value=0.2)]
        overrides += [Parameter(k.replace('__', '.'), value=v) for k, v in params.items()]
        cam = CameraNode(context=self.ctx, parameter_overrides=overrides)
        probe = rclpy.create_node('probe', context=self.ctx)
        self.nodes.extend([cam, probe])
        got = {'image': [], 'info': [], 'diag': []}
        probe.create_subscription(Image, 'camera/image_raw', got['image'].append, SENSOR)
        probe.create_subscription(CameraInfo, 'camera/camera_info', got['info'].append, SENSOR)
        probe.create_subscription(DiagnosticArray, 'diagnostics', got['diag'].append, 10)
        self.executor.add_node(cam)
        self.executor.add_node(probe)
        return cam, got

    def add(self, node):
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def standin(self, topic, **kwargs) -> StandInCamera:
        ctx = rclpy.Context()
        rclpy.init(context=ctx)
        driver = StandInCamera(ctx, topic, **kwargs)
        executor = SingleThreadedExecutor(context=ctx)
        executor.add_node(driver.node)
        self.drivers.append((ctx, executor, driver.node))
        return driver

    def close(self):
        for node in self.nodes:
            node.destroy_node()
        for ctx, executor, node in self.drivers:
            executor.shutdown()
            node.destroy_node()
            rclpy.try_shutdown(context=ctx)
        rclpy.try_shutdown(context=self.ctx)


@pytest.fixture
def graph():
    g = Graph()
    try:
        yield g
    finally:
        g.close()


def last_status(got):
    return got['diag'][-1].status[0] if got['diag'] else None


def values(status) -> dict:
    return {kv.key: kv.value for kv in status.values}


@pytest.mark.parametrize('encoding', ['rgb8', 'bgr8'])
def test_padded_images_come_out_with_their_pixels_stamps_and_frame_ids(graph, encoding):
    cam, got = graph.camera(topic='/standin/image_raw')          # info: /standin/camera_info
    driver = graph.standin('/standin/image_raw', kind=encoding, pad=13, rate_hz=20.0,
                           info_topic='/standin/camera_info')
    assert graph.spin_until(lambda: len(got['image']) >= 15 and len(got['info']) >= 5)
    for msg in got['image']:
        key = stamp_key(msg.header.stamp)
        assert key in driver.sent, key                      # the driver's own stamp
        assert (msg.header.frame_id, msg.encoding) == (FRAME_ID, encoding)
        assert (msg.width, msg.height, msg.step) == (64, 48, 64 * 3 + 13)   # as it came
        assert np.array_equal(msg_to_bgr(msg), driver.sent[key])
    # Every frame the driver sent once the link was up came through, none skipped.
    first = min(stamp_key(m.header.stamp) for m in got['image'])
    last = max(stamp_key(m.header.stamp) for m in got['image'])
    since = [k for k in driver.sent if first <= k <= last]
    assert len({stamp_key(m.header.stamp) for m in got['image']}) >= 0.9 * len(since)
    assert cam.topic_camera.skipped == 0 and cam.topic_camera.malformed == 0
    # The driver's CameraInfo is where the device source's goes, untouched.
    info = got['info'][-1]
    assert info.k[0] == 111.0 and info.header.frame_id == FRAME_ID
    assert stamp_key(info.header.stamp) in driver.sent
    assert graph.spin_until(lambda: last_status(got) is not None
                            and last_status(got).level == DiagnosticStatus.OK)
    st = last_status(got)
    assert st.hardware_id == 'topic /standin/image_raw' and 'streaming' in st.message
    assert values(st)['info_topic'] == '/standin/camera_info'
    assert int(values(st)['camera_info']) > 0


def test_jpeg_is_decoded_to_bgr8_and_camera_info_made_from_the_fov(graph):
    cam, got = graph.camera(topic='/standin/image_raw/compressed', info_topic='none',
                            hfov_deg=90.0)
    driver = graph.standin('/standin/image_raw/compressed', kind='jpeg', rate_hz=20.0)
    assert graph.spin_until(lambda: len(got['image']) >= 10 and len(got['info']) >= 10)
    for msg in got['image']:
        key = stamp_key(msg.header.stamp)
        assert key in driver.sent and msg.header.frame_id == FRAME_ID
        assert (msg.encoding, msg.width, msg.height) == ('bgr8', 64, 48)
        diff = np.abs(msg_to_bgr(msg).astype(int) - driver.sent[key])
        assert diff.mean() < 8 and diff[8::16, 8::16].max() <= 10    # JPEG's tolerance
    stamps = {stamp_key(m.header.stamp) for m in got['image']}
    info = got['info'][-1]
    assert stamp_key(info.header.stamp) in stamps and info.header.frame_id == FRAME_ID
    assert (info.width, info.height) == (64, 48) and info.k[0] == pytest.approx(32.0)


def test_compressed_is_told_by_the_topic_type_when_the_driver_comes_up_later(graph):
    cam, got = graph.camera(topic='/standin/jpeg', info_topic='none')
    graph.spin_until(lambda: False, timeout_s=0.6)      # subscribed as raw Image
    assert cam._compressed is False                         # noqa: SLF001
    driver = graph.standin('/standin/jpeg', kind='jpeg', rate_hz=20.0)
    assert graph.spin_until(lambda: len(got['image']) >= 5)
    assert cam._compressed is True                          # noqa: SLF001
    assert all(stamp_key(m.header.stamp) in driver.sent for m in got['image'])


def test_a_driver_faster_than_fps_is_paced_on_its_stamps(graph):
    cam, got = graph.camera(topic='/fast/image_raw', info_topic='none', fps=10.0)
    # Stamps 1/30 s apart: a 30 fps driver (sent at 20 a second here; the stamps count).
    graph.standin('/fast/image_raw', kind='bgr8', rate_hz=20.0, stamp_step=1.0 / 30.0)
    tc = None

    def enough():
        nonlocal tc
        tc = cam.topic_camera
        return tc.frames + tc.skipped >= 45
    assert graph.spin_until(enough)
    assert abs(tc.skipped - 2 * tc.frames) <= 3, (tc.frames, tc.skipped)   # a third passed
    gaps = np.diff(sorted(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9
                          for m in got['image']))
    assert np.median(gaps) == pytest.approx(0.1, abs=0.01)


def test_a_topic_that_sends_nothing_is_a_clear_diagnostic_and_the_node_waits_on(graph):
    cam, got = graph.camera(topic='/nobody/image_raw', topic_timeout_s=1.0)
    assert graph.spin_until(lambda: last_status(got) is not None
                            and values(last_status(got))['status'] == 'connecting')
    assert 'waiting for the first image on /nobody/image_raw' in last_status(got).message
    assert graph.spin_until(lambda: values(last_status(got))['status'] == 'missing')
    st = last_status(got)
    assert st.level == DiagnosticStatus.ERROR
    assert 'no image on /nobody/image_raw in' in st.message
    assert 'nothing publishes it' in st.message and got['image'] == []
    # The driver starts late: the same node streams. Its CameraInfo never comes: a warning.
    graph.standin('/nobody/image_raw', kind='rgb8', rate_hz=20.0)
    assert graph.spin_until(lambda: len(got['image']) >= 3
                            and values(last_status(got))['status'] == 'ok')
    st = last_status(got)
    assert st.level == DiagnosticStatus.WARN
    assert 'no camera_info on /nobody/camera_info' in st.message, st.message


def test_malformed_images_are_dropped_and_counted(graph):
    cam, got = graph.camera(topic='/standin/image_raw', info_topic='none')
    driver = graph.standin('/standin/image_raw', kind='rgb8', pad=4, rate_hz=20.0, bad_every=3)
    assert graph.spin_until(lambda: cam.topic_camera.malformed >= 4
                            and len(got['image']) >= 8)
    out = {stamp_key(m.header.stamp) for m in got['image']}
    assert out <= set(driver.sent) and not out & driver.bad
    assert graph.spin_until(lambda: int(values(last_status(got))['malformed_frames']) >= 4)
    assert cam.topic_camera.unsupported == 0
    assert 'bytes of data' in cam.topic_camera.last_rejection


def test_an_unsupported_encoding_is_dropped_counted_and_said_in_one_line(graph):
    cam, got = graph.camera(topic='/standin/image_raw', info_topic='none', topic_timeout_s=1.0)
    graph.standin('/standin/image_raw', kind='rgb8', rate_hz=20.0, bad_every=1,
                  bad_encoding='bayer_rggb8')
    assert graph.spin_until(lambda: last_status(got) is not None
                            and values(last_status(got))['status'] == 'error')
    st = last_status(got)
    assert "image encoding 'bayer_rggb8' is not supported" in st.message, st.message
    assert int(values(st)['unsupported_frames']) > 0 and got['image'] == []


def test_a_topic_that_is_the_nodes_own_output_fails_configure_with_the_reason(graph):
    cam, got = graph.camera(topic='camera/image_raw')
    assert cam.topic_camera is None and 'is the topic this node publishes' in cam.last_error
    assert graph.spin_until(lambda: last_status(got) is not None)
    st = last_status(got)
    assert st.level == DiagnosticStatus.ERROR and '/camera/image_raw' in st.message


def test_deactivate_unsubscribes_and_activate_takes_the_stream_back(graph):
    cam, got = graph.camera(topic='/standin/image_raw', info_topic='none')
    graph.standin('/standin/image_raw', kind='bgr8', rate_hz=20.0)
    assert graph.spin_until(lambda: len(got['image']) >= 3)
    assert cam.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
    assert cam.count_subscribers('/standin/image_raw') == 0
    graph.spin_until(lambda: False, timeout_s=0.3)
    count = len(got['image'])
    graph.spin_until(lambda: False, timeout_s=0.5)
    assert len(got['image']) == count
    assert cam.trigger_activate() == TransitionCallbackReturn.SUCCESS
    assert graph.spin_until(lambda: len(got['image']) >= count + 3)


def test_attention_reads_what_the_topic_source_passes_on(graph):
    """The same pipeline as the device source: a driver's rgb8 frames (rows padded) of the
    synthetic scene become attention targets."""
    from maxim_interfaces.msg import AttentionState
    from maxim_perception.camera import SyntheticCamera
    from maxim_perception.nodes.attention_node import AttentionNode
    from maxim_common.qos import LATCHED

    cam, got = graph.camera(topic='/driver/image_raw', info_topic='none', fps=15.0)
    att = graph.add(AttentionNode(context=graph.ctx, parameter_overrides=[
        Parameter('max_rate_hz', value=15.0), Parameter('detect.faces', value=False)]))
    watcher = graph.add(rclpy.create_node('watcher', context=graph.ctx))
    states = []
    watcher.create_subscription(AttentionState, 'attention/state', states.append, LATCHED)
    scene = SyntheticCamera(320, 240, fps=10.0, objects=('red', 'blue', 'green'))
    graph.standin('/driver/image_raw', kind='rgb8', pad=64, rate_hz=10.0,
                  render=lambda k: scene.render(k / 10.0))

    def sees_all():
        return states and {d.label for d in states[-1].targets} >= {
            'red object', 'blue object', 'green object'}
    assert graph.spin_until(sees_all, timeout_s=30.0)
    assert states[-1].header.frame_id == FRAME_ID and att.frames_processed >= 1
