"""Camera sources on real pixels: the synthetic scene, a video file that ends or disappears, a
device that is not there; the reconnecting reader reports and retries, never raises."""

import cv2
import numpy as np
import pytest

from maxim_perception.camera import (CameraEnded, CameraError, CameraStatus, OpenCVCamera,
                                     parse_device, ReconnectingCamera, SyntheticCamera)


class FakeClock:
    """An injected clock: tests advance time explicitly instead of sleeping."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def write_video(path, frames=6, size=(160, 120)):
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*'MJPG'), 10.0, size)
    assert writer.isOpened()
    cam = SyntheticCamera(*size, fps=10.0)
    for i in range(frames):
        writer.write(cam.render(i / 10.0))
    writer.release()
    return path


def test_parse_device():
    assert parse_device('') == '/dev/video0'
    assert parse_device('2') == 2 and parse_device(1) == 1
    assert parse_device('/tmp/x.avi') == '/tmp/x.avi'
    with pytest.raises(ValueError):
        parse_device(-1)


def test_synthetic_camera_renders_moving_real_pixels():
    cam = SyntheticCamera(320, 240, fps=10.0)
    with pytest.raises(CameraError):
        cam.read()
    cam.open()
    a, b = cam.read(), cam.read()
    assert a.shape == (240, 320, 3) and a.dtype == np.uint8
    assert np.abs(a.astype(int) - b).max() > 100          # the red disc moved
    assert np.array_equal(cam.render(0.0), a)              # deterministic
    names = {o.name for o in cam.last_objects}
    assert names == {'face', 'red', 'blue', 'green'}
    red = next(o for o in cam.last_objects if o.name == 'red')
    x, y, w, h = red.bbox
    patch = cam.render(1 / 10.0)[y + h // 2, x + w // 2]
    assert patch[2] > 150 and patch[0] < 80                # BGR: red in the middle of its box
    with pytest.raises(ValueError):
        SyntheticCamera(objects=('unicorn',))


def test_video_file_ends_then_is_reopened(tmp_path):
    path = write_video(tmp_path / 'clip.avi', frames=6)
    clock = FakeClock()
    cam = ReconnectingCamera(OpenCVCamera(str(path), 160, 120, 10.0), initial_backoff_s=0.5,
                             max_backoff_s=4.0, clock=clock)
    assert cam.status == CameraStatus.CONNECTING
    frames = []
    for _ in range(6):
        r = cam.poll()
        frames.append(r.frame)
        assert r.status == CameraStatus.OK
    assert all(f.shape == (120, 160, 3) for f in frames)
    ended = cam.poll()
    assert ended.frame is None and ended.status == CameraStatus.ENDED and ended.changed
    assert 'ended' in ended.message and 'retry in 0.5 s' in ended.message
    # Before the backoff expires nothing is attempted.
    attempts = cam.attempts
    quiet = cam.poll()
    assert quiet.status == CameraStatus.ENDED and not quiet.changed and cam.attempts == attempts
    clock.now += 0.6
    again = cam.poll()
    assert again.status == CameraStatus.OK and again.changed and again.frame is not None
    assert cam.attempts == attempts + 1 and cam.failures == 0


def test_deleted_video_is_reported_missing_and_retried_with_capped_backoff(tmp_path):
    path = write_video(tmp_path / 'clip.avi', frames=3)
    clock = FakeClock()
    cam = ReconnectingCamera(OpenCVCamera(str(path), 160, 120, 10.0), initial_backoff_s=0.5,
                             max_backoff_s=2.0, clock=clock)
    assert cam.poll().status == CameraStatus.OK
    path.unlink()  # the file vanishes while open: its frames may still drain, then it is gone
    statuses = [cam.poll().status for _ in range(5)]
    assert CameraStatus.MISSING in statuses
    delays = []
    for _ in range(5):
        delays.append(cam.next_attempt_in)
        clock.now += cam.next_attempt_in + 1e-3
        r = cam.poll()
        assert r.frame is None and r.status == CameraStatus.MISSING
        assert 'does not exist' in r.message
    assert delays[-3:] == pytest.approx([2.0, 2.0, 2.0])   # capped
    assert delays[0] < delays[-1]
    write_video(path, frames=3)                            # plugged back in
    clock.now += cam.next_attempt_in + 1e-3
    r = cam.poll()
    assert r.status == CameraStatus.OK and r.changed and r.frame is not None


def test_missing_device_never_raises():
    clock = FakeClock()
    cam = ReconnectingCamera(OpenCVCamera('/dev/video_maxim_absent', 320, 240, 30.0),
                             initial_backoff_s=0.25, max_backoff_s=1.0, clock=clock)
    for _ in range(4):
        clock.now += 5.0
        r = cam.poll()
        assert r.status == CameraStatus.MISSING and r.frame is None
    assert cam.attempts == 4 and cam.failures == 4
    index = ReconnectingCamera(OpenCVCamera(99), clock=clock)
    r = index.poll()
    assert r.status == CameraStatus.MISSING and '/dev/video99' in r.message


def test_opencv_camera_errors_are_typed(tmp_path):
    path = write_video(tmp_path / 'one.avi', frames=1)
    src = OpenCVCamera(str(path), 80, 60, 10.0)
    with pytest.raises(CameraError):
        src.read()                     # not open
    src.open()
    assert src.read().shape == (60, 80, 3)  # resized to the requested size
    with pytest.raises(CameraEnded):
        src.read()
    src.close()
    junk = tmp_path / 'junk.avi'
    junk.write_bytes(b'not a video')
    with pytest.raises(CameraError):
        OpenCVCamera(str(junk)).open()
    with pytest.raises(ValueError):
        OpenCVCamera('', 0, 480)
    with pytest.raises(ValueError):
        ReconnectingCamera(src, initial_backoff_s=2.0, max_backoff_s=1.0)
