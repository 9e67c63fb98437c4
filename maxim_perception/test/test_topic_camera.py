"""The source `topic` without ROS: choosing the source, topic names, compressed or not, the
frame pacer and the status of a topic that sends, stops or never sends."""

import random

import pytest

from maxim_common.health import ERROR, OK, WARN
from maxim_perception.camera import (camera_info_topic, CameraStatus, choose_compressed,
                                     COMPRESSED_TYPE, FramePacer, IMAGE_TYPE,
                                     parse_compressed, resolve_source, TopicCamera)
from maxim_perception.health import topic_camera_health


class Clock:
    def __init__(self, t=100.0):
        self.t = t

    def __call__(self):
        return self.t


@pytest.mark.parametrize('source,synthetic,device,want', [
    ('auto', False, '', 'device'), ('auto', False, '/dev/video2', 'device'),
    ('auto', False, 3, 'device'), ('auto', False, '/tmp/clip.avi', 'video'),
    ('auto', True, '/dev/video0', 'synthetic'), ('topic', False, '/dev/video0', 'topic'),
    ('Video', False, 'clip.mp4', 'video'), ('device', True, '1', 'device'),
])
def test_the_source_follows_the_parameters(source, synthetic, device, want):
    assert resolve_source(source, synthetic, device) == want


@pytest.mark.parametrize('source,device,match', [
    ('video', '/dev/video0', 'needs a video file'), ('video', '', 'needs a video file'),
    ('device', 'clip.avi', 'is source video'), ('webcam', '', 'one of auto, device'),
])
def test_a_source_that_cannot_be_is_one_clear_line(source, device, match):
    with pytest.raises(ValueError, match=match):
        resolve_source(source, False, device)


@pytest.mark.parametrize('image,info', [
    ('/image_raw', '/camera_info'), ('image_raw', 'camera_info'),
    ('/cam/color/image_raw', '/cam/color/camera_info'),
    ('/cam/image_raw/compressed', '/cam/camera_info'), ('/cam/image_rect/', '/cam/camera_info'),
])
def test_camera_info_beside_the_image_as_image_transport_names_it(image, info):
    assert camera_info_topic(image) == info


def test_compressed_from_the_parameter_the_graph_or_the_name():
    assert parse_compressed(True) == 'true' and parse_compressed('AUTO') == 'auto'
    assert parse_compressed(False) == 'false'
    with pytest.raises(ValueError, match='auto, true or false'):
        parse_compressed('jpeg')
    assert choose_compressed('true', '/image_raw') is True
    assert choose_compressed('false', '/image_raw/compressed') is False
    assert choose_compressed('auto', '/image_raw') is False
    assert choose_compressed('auto', '/image_raw/compressed') is True
    assert choose_compressed('auto', '/cam/jpeg', (COMPRESSED_TYPE,)) is True
    assert choose_compressed('auto', '/x/compressed', (IMAGE_TYPE,)) is False
    # Both types on one name (two drivers?): the name decides.
    assert choose_compressed('auto', '/img', (IMAGE_TYPE, COMPRESSED_TYPE)) is False


@pytest.mark.parametrize('rate_in,rate,jitter', [
    (60, 30, 0.0), (45, 30, 0.3), (30, 30, 0.45), (20, 30, 0.45), (30, 10, 0.2)])
def test_the_pacer_holds_the_rate_and_loses_nothing_to_jitter(rate_in, rate, jitter):
    rng = random.Random(5)
    pacer = FramePacer(rate)
    stamps = [50.0 + (k + rng.uniform(-jitter, jitter)) / rate_in for k in range(600)]
    passed = [t for t in stamps if pacer.admit(t)]
    want = 600 * min(1.0, rate / rate_in)
    assert want <= len(passed) <= want + 2            # a burst of two at the start at most
    if rate_in <= rate:
        assert len(passed) == 600                     # a driver within the rate loses none


def test_the_pacer_skips_evenly_and_starts_over_when_stamps_go_back():
    pacer = FramePacer(10.0)
    first = [pacer.admit(1.0 + k / 20.0) for k in range(20)]
    assert sum(first) in (10, 11) and first[-6:] in ([True, False] * 3, [False, True] * 3)
    assert pacer.admit(0.0)                 # a replay from the start: counted afresh
    assert pacer.admit(0.1) and pacer.admit(0.2)


def test_a_topic_that_streams_stops_and_comes_back():
    clock = Clock()
    tc = TopicCamera('/cam/image_raw', fps=10.0, timeout_s=2.0, clock=clock)
    assert tc.status == CameraStatus.CONNECTING and 'not subscribed' in tc.message
    tc.start()
    assert not tc.judge(1) and 'waiting for the first image' in tc.message
    for k in range(5):
        clock.t += 0.1
        assert tc.pace(10.0 + k * 0.1)
        tc.delivered()
    assert tc.judge(1) and tc.status == CameraStatus.OK and tc.frames == 5
    assert tc.dropped == 0
    clock.t += 0.4                            # a gap of four frame periods: three missed
    tc.pace(20.0)
    tc.delivered()
    assert tc.dropped == 3
    clock.t += 2.5
    assert tc.judge(1) and tc.status == CameraStatus.ERROR
    assert 'no image on /cam/image_raw for 2.5 s (after 6 frames)' in tc.message
    assert tc.judge(0) and tc.status == CameraStatus.MISSING
    assert 'its publisher is gone' in tc.message
    tc.pace(30.0)
    tc.delivered()
    assert tc.judge(1) and tc.status == CameraStatus.OK
    tc.stop()
    assert tc.status == CameraStatus.CONNECTING and not tc.active


@pytest.mark.parametrize('publishers,types,rejected,status,words', [
    (0, (), None, CameraStatus.MISSING, 'nothing publishes it'),
    (1, (COMPRESSED_TYPE,), None, CameraStatus.ERROR, 'set camera.compressed'),
    (1, (IMAGE_TYPE,), ('unsupported', "image encoding 'bayer_rggb8' is not supported"),
     CameraStatus.ERROR, "the last rejected: image encoding 'bayer_rggb8'"),
    (2, (IMAGE_TYPE,), None, CameraStatus.ERROR, 'although 2 nodes publish it'),
])
def test_no_image_within_the_timeout_says_why(publishers, types, rejected, status, words):
    clock = Clock()
    tc = TopicCamera('/image_raw', fps=30.0, timeout_s=3.0, clock=clock)
    tc.start()
    if rejected:
        tc.rejected(*rejected)
    clock.t += 2.0
    tc.judge(publishers, types)
    assert tc.status == CameraStatus.CONNECTING        # still within the timeout
    clock.t += 1.5
    assert tc.judge(publishers, types, IMAGE_TYPE)
    assert tc.status == status and words in tc.message, tc.message
    assert 'no image on /image_raw in 3.5 s' in tc.message


def test_rejections_are_counted_by_kind():
    tc = TopicCamera('/image_raw', fps=30.0, timeout_s=3.0, clock=Clock())
    tc.rejected('malformed', 'a')
    tc.rejected('malformed', 'b')
    tc.rejected('unsupported', 'c')
    assert (tc.malformed, tc.unsupported, tc.last_rejection) == (2, 1, 'c')


def test_topic_health_levels_and_values():
    def health(status='ok', fps=30.0, settled=True, info_topic='/camera_info', infos=3,
               overdue=False):
        return topic_camera_health(status, 'm', '/image_raw', 90, fps, 30.0, 1, 4, 2, 0, 1,
                                   info_topic, infos, overdue, settled)

    h = health()
    assert h.level == OK and h.hardware_id == 'topic /image_raw'
    assert {k: h.values[k] for k in ('frames', 'dropped_frames', 'skipped_frames',
                                     'malformed_frames', 'unsupported_frames', 'camera_info')} \
        == {'frames': '90', 'dropped_frames': '1', 'skipped_frames': '4',
            'malformed_frames': '2', 'unsupported_frames': '0', 'camera_info': '3'}
    assert health(fps=10.0).level == WARN and health(fps=10.0, settled=False).level == OK
    slow = health(overdue=True, infos=0)
    assert slow.level == WARN and 'no camera_info on /camera_info' in slow.message
    assert health(info_topic='').values['camera_info'] == 'from hfov_deg'
    assert health('missing').level == ERROR and health('error').level == ERROR
    assert health('connecting').level == WARN
