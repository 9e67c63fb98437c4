"""The camera node over real DDS: synthetic frames, a video file that ends and vanishes, and a
device that is not there; the node keeps running and says why in diagnostics."""

import time

import cv2
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from sensor_msgs.msg import CameraInfo, Image

from maxim_common.qos import SENSOR
from maxim_perception.camera import SyntheticCamera
from maxim_perception.conversions import msg_to_image
from maxim_perception.nodes.camera_node import CameraNode

pytestmark = pytest.mark.ros


def spin_until(executor, condition, timeout_s=15.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        executor.spin_once(timeout_sec=0.05)
    return condition()


@pytest.fixture
def ros():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    nodes = []

    def start(**params):
        overrides = [Parameter(k.replace('__', '.'), value=v) for k, v in params.items()]
        cam = CameraNode(context=ctx, parameter_overrides=overrides)
        probe = rclpy.create_node('probe', context=ctx)
        nodes.extend([cam, probe])
        got = {'image': [], 'info': [], 'diag': []}
        probe.create_subscription(Image, 'camera/image_raw', got['image'].append, SENSOR)
        probe.create_subscription(CameraInfo, 'camera/camera_info', got['info'].append, SENSOR)
        probe.create_subscription(DiagnosticArray, 'diagnostics', got['diag'].append, 10)
        executor.add_node(cam)
        executor.add_node(probe)
        return cam, got

    try:
        yield executor, start
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def last_status(got):
    return got['diag'][-1].status[0] if got['diag'] else None


def test_synthetic_camera_publishes_images_and_info(ros):
    executor, start = ros
    cam, got = start(synthetic=True, width=160, height=120, fps=20.0, hfov_deg=90.0,
                     diagnostics_period_s=0.2)
    assert spin_until(executor, lambda: len(got['image']) >= 3 and got['info'] and got['diag'])
    img, info = got['image'][-1], got['info'][-1]
    assert (img.width, img.height, img.encoding, img.step) == (160, 120, 'bgr8', 480)
    assert img.header.frame_id == info.header.frame_id == 'camera_optical_frame'
    assert info.k[0] == pytest.approx(80.0) and info.k[2] == pytest.approx(79.5)
    arr = msg_to_image(img)
    assert arr.shape == (120, 160, 3) and arr.std() > 10
    st = last_status(got)
    assert st.level == DiagnosticStatus.OK and 'synthetic' in st.hardware_id
    assert {kv.key: kv.value for kv in st.values}['status'] == 'ok'


def test_video_file_ends_is_replayed_then_vanishes_and_the_node_survives(ros, tmp_path):
    path = tmp_path / 'clip.avi'
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*'MJPG'), 10.0, (96, 72))
    scene = SyntheticCamera(96, 72, fps=10.0)
    for i in range(5):
        writer.write(scene.render(i / 10.0))
    writer.release()
    executor, start = ros
    cam, got = start(device=str(path), width=96, height=72, fps=50.0,
                     reconnect__initial_backoff_s=0.1, reconnect__max_backoff_s=0.2,
                     diagnostics_period_s=0.05)
    assert spin_until(executor, lambda: len(got['image']) >= 5)
    frame = msg_to_image(got['image'][0])
    assert frame.shape == (72, 96, 3)
    assert np.abs(frame.astype(int) - scene.render(0.0)).mean() < 12  # the file's content
    # The file ends: reported, then replayed after the backoff.
    assert spin_until(executor, lambda: any(
        a.status[0].values[0].value == 'ended' for a in got['diag']))
    ended = next(a.status[0] for a in got['diag'] if a.status[0].values[0].value == 'ended')
    assert ended.level == DiagnosticStatus.WARN and 'ended' in ended.message
    assert spin_until(executor, lambda: len(got['image']) >= 10)
    # The file vanishes: reported missing, retried, and the node keeps spinning.
    path.unlink()
    assert spin_until(executor, lambda: last_status(got) is not None and
                      last_status(got).values[0].value == 'missing')
    st = last_status(got)
    assert st.level == DiagnosticStatus.ERROR
    assert 'disappeared' in st.message or 'does not exist' in st.message
    attempts = cam.camera.attempts
    assert spin_until(executor, lambda: cam.camera.attempts >= attempts + 2)
    # Back again: frames flow again without restarting the node.
    count = len(got['image'])
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*'MJPG'), 10.0, (96, 72))
    for i in range(5):
        writer.write(scene.render(i / 10.0))
    writer.release()
    assert spin_until(executor, lambda: len(got['image']) > count)


def test_missing_device_is_reported_not_fatal(ros):
    executor, start = ros
    cam, got = start(device='/dev/video_maxim_absent', fps=20.0,
                     reconnect__initial_backoff_s=0.1, reconnect__max_backoff_s=0.2,
                     diagnostics_period_s=0.1)
    assert spin_until(executor, lambda: cam.camera.attempts >= 3 and got['diag'])
    st = last_status(got)
    assert st.level == DiagnosticStatus.ERROR and st.values[0].value == 'missing'
    assert '/dev/video_maxim_absent' in st.message and got['image'] == []


def test_image_and_camera_info_conversions_without_pixel_loops():
    from maxim_perception.camera_model import CameraModel
    from maxim_perception.conversions import (camera_info_to_msg, ImageConversionError,
                                              image_to_msg, msg_to_bgr, msg_to_camera_model)
    rng = np.random.default_rng(3)
    bgr = rng.integers(0, 256, size=(7, 5, 3), dtype=np.uint8)
    msg = image_to_msg(bgr, 'bgr8', frame_id='f')
    assert (msg.width, msg.height, msg.step, msg.header.frame_id) == (5, 7, 15, 'f')
    assert np.array_equal(msg_to_image(msg), bgr)
    rgb = image_to_msg(np.ascontiguousarray(bgr[:, :, ::-1]), 'rgb8')
    assert np.array_equal(msg_to_bgr(rgb), bgr)
    # Rows padded to 16 bytes (as some drivers do) are cropped.
    padded = Image(height=7, width=5, encoding='bgr8', step=16,
                   data=np.pad(bgr.reshape(7, 15), ((0, 0), (0, 1))).tobytes())
    assert np.array_equal(msg_to_bgr(padded), bgr)
    mono16 = np.arange(12, dtype=np.uint16).reshape(3, 4) * 1000
    assert np.array_equal(msg_to_image(image_to_msg(mono16, 'mono16')), mono16)
    grey = msg_to_bgr(image_to_msg(bgr[:, :, 0].copy(), 'mono8'))
    assert grey.shape == (7, 5, 3) and np.array_equal(grey[:, :, 1], bgr[:, :, 0])
    with pytest.raises(ImageConversionError):
        msg_to_image(Image(height=2, width=2, encoding='yuv422', step=4, data=b'1234'))
    with pytest.raises(ImageConversionError):
        msg_to_image(Image(height=2, width=2, encoding='bgr8', step=6, data=b'123'))
    with pytest.raises(ImageConversionError):
        image_to_msg(bgr, 'mono8')
    model = CameraModel(320, 240, 1.2)
    again = msg_to_camera_model(camera_info_to_msg(model, 'cam'))
    assert again.intrinsics == model.intrinsics


def test_lifecycle_releases_the_camera_and_takes_it_back(ros, tmp_path):
    from lifecycle_msgs.msg import State
    from rclpy.lifecycle import TransitionCallbackReturn as R

    executor, start = ros
    clip = tmp_path / 'clip.avi'
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*'MJPG'), 10.0, (160, 120))
    scene = SyntheticCamera(160, 120, fps=10.0)
    for i in range(30):
        writer.write(scene.render(i / 10.0))
    writer.release()
    cam, got = start(device=str(clip), width=160, height=120, fps=20.0,
                     diagnostics_period_s=0.2)
    assert spin_until(executor, lambda: len(got['image']) >= 2)
    assert cam.trigger_deactivate() == R.SUCCESS
    assert not cam.camera._opened                        # noqa: SLF001 - device released
    spin_until(executor, lambda: False, timeout_s=0.3)
    count = len(got['image'])
    spin_until(executor, lambda: False, timeout_s=0.5)
    assert len(got['image']) == count                    # inactive: no frames
    assert cam.trigger_activate() == R.SUCCESS
    assert spin_until(executor, lambda: len(got['image']) >= count + 2)
    assert cam.trigger_deactivate() == R.SUCCESS and cam.trigger_cleanup() == R.SUCCESS
    assert cam.camera is None
    assert cam._state_machine.current_state[0] == State.PRIMARY_STATE_UNCONFIGURED  # noqa: SLF001
    assert spin_until(executor, lambda: got['diag'] and last_status(got).message
                      .startswith('not configured'))
