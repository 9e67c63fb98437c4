"""The perception nodes' health builders (pure) and their message conversions, and the JPEG
debug image: real OpenCV on a rendered frame."""

import numpy as np
import pytest

from maxim_common.health import ERROR, not_ready, OK, WARN
from maxim_perception.health import (attention_health, camera_health, driver_health,
                                     missed_periods, RateMeter, sim_head_health)


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_rate_meter_counts_the_last_window_and_falls_to_zero_when_events_stop():
    clock = Clock()
    meter = RateMeter(window_s=2.0, clock=clock)
    for _ in range(66):            # 30 per second for 2.2 s
        clock.t += 1 / 30
        meter.tick()
    assert meter.rate() == pytest.approx(30.0, rel=0.05) and meter.settled()
    assert meter.count == 66
    clock.t += 2.5                 # the source stopped
    assert meter.rate() == 0.0
    with pytest.raises(ValueError):
        RateMeter(window_s=0)


def test_rate_meter_younger_than_its_window_divides_by_its_age():
    clock = Clock()
    meter = RateMeter(window_s=5.0, clock=clock)
    clock.t += 1.0
    meter.tick(10)
    assert meter.rate() == pytest.approx(10.0) and not meter.settled()


def test_missed_periods_tolerates_jitter_and_counts_whole_gaps():
    assert missed_periods(1 / 30, 1 / 30) == 0
    assert missed_periods(1.4 / 30, 1 / 30) == 0     # late, but not a lost frame
    assert missed_periods(3 / 30, 1 / 30) == 2
    assert missed_periods(0.0, 1 / 30) == 0 and missed_periods(1.0, 0.0) == 0


def _camera(status='ok', fps=29.5, frames=100):
    return camera_health(status, 'synthetic: streaming', 'synthetic', frames, fps, 30.0, 3, 1,
                         0, 0.0)


def test_camera_levels_follow_its_status_and_rate():
    h = _camera()
    assert h.level == OK and h.hardware_id == 'synthetic'
    assert list(h.values)[0] == 'status'
    assert h.values['fps'] == '29.5' and h.values['dropped_frames'] == '3'
    assert _camera('connecting', 0.0, 0).level == WARN
    assert _camera('ended').level == WARN
    assert _camera('missing', 0.0).level == ERROR
    slow = _camera(fps=9.0)
    assert slow.level == WARN and '9.0 fps of 30' in slow.message
    starting = camera_health('ok', 'x', 'synthetic', 2, 9.0, 30.0, 0, 1, 0, 0.0, settled=False)
    assert starting.level == OK      # a rate over a part of the window is no verdict yet


def test_sim_head_reports_render_errors_and_a_slow_simulation():
    ok = sim_head_health(120, 14.8, 15.0, '', (0.1, -0.2), 640, 480)
    assert ok.level == OK and ok.values['command'] == '0.100,-0.200'
    assert sim_head_health(0, 0.0, 15.0, '', None, 640, 480).level == WARN
    bad = sim_head_health(3, 0.0, 15.0, 'EGL not available', None, 640, 480)
    assert bad.level == ERROR and 'EGL not available' in bad.message
    assert sim_head_health(50, 5.0, 15.0, '', None, 640, 480).level == WARN
    assert sim_head_health(5, 5.0, 15.0, '', None, 640, 480, settled=False).level == OK


def test_driver_down_is_an_error_with_its_reason():
    up = driver_health('dry_run', True, '', 12, 'release', 0.0)
    assert up.level == OK and up.values['driver_ok'] == 'true'
    down = driver_health('serial', False, '/dev/ttyUSB0: no such device', 0, 'release', 1.5)
    assert down.level == ERROR and '/dev/ttyUSB0' in down.message
    assert down.values['retry_in_s'] == '1.50'


def test_attention_waits_for_frames_then_reports_its_rate():
    assert attention_health(0.0, 0, 0, 0, 0, float('inf')).level == WARN
    h = attention_health(14.9, 300, 290, 10, 4, 0.05)
    assert h.level == OK and h.values['frames_skipped'] == '10'
    stalled = attention_health(0.0, 300, 290, 10, 4, 3.5)
    assert stalled.level == WARN and '3.5 s' in stalled.message


def test_health_becomes_a_diagnostic_status():
    from diagnostic_msgs.msg import DiagnosticStatus

    from maxim_common.diagnostics import health_to_status
    st = health_to_status(_camera('missing', 0.0), 'camera: camera')
    assert st.level == DiagnosticStatus.ERROR and st.name == 'camera: camera'
    assert {kv.key: kv.value for kv in st.values}['status'] == 'missing'


def test_the_debug_image_as_jpeg_decodes_to_the_same_picture():
    from maxim_perception.camera import SyntheticCamera
    from maxim_perception.conversions import (compressed_to_bgr, ImageConversionError,
                                              image_to_compressed, time_msg)
    cam = SyntheticCamera(640, 480, 30.0)
    cam.open()
    frame = cam.read()
    msg = image_to_compressed(frame, time_msg(12.5), 'camera_optical_frame')
    assert msg.format == 'bgr8; jpeg compressed bgr8'
    assert msg.header.frame_id == 'camera_optical_frame' and msg.header.stamp.sec == 12
    assert len(msg.data) < frame.nbytes / 5           # compressed for a network
    back = compressed_to_bgr(msg)
    assert back.shape == frame.shape
    assert float(np.mean(np.abs(back.astype(int) - frame.astype(int)))) < 4.0
    with pytest.raises(ImageConversionError):
        image_to_compressed(np.zeros((4, 4, 3), np.float32))
    msg.data = b'not a jpeg'
    with pytest.raises(ImageConversionError):
        compressed_to_bgr(msg)


def test_a_node_not_configured_yet_is_a_warning_that_says_what_is_missing():
    h = not_ready('the camera is not open')
    assert h.level == WARN and h.message == 'not configured: the camera is not open'
    assert h.values == {'state': 'unconfigured'}
