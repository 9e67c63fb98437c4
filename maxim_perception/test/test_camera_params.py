"""The camera node's parameters and the sources they choose, the frame-gap meter and the
models made from a field of view, without ROS (topic names resolved by a stand-in)."""

import pytest

from maxim_perception.camera import OpenCVCamera, SyntheticCamera
from maxim_perception.camera_model import FovModels
from maxim_perception.camera_params import (device_camera, PARAMS, read_config,
                                            topic_camera)
from maxim_perception.health import GapMeter


def config(**changes):
    values = {name: spec[0] for name, spec in PARAMS.items()}
    values.update(changes)
    return read_config(values)


def resolve(name):
    if ' ' in name:
        raise RuntimeError(f'invalid topic name {name!r}')
    return name if name.startswith('/') else f'/{name}'


def test_the_defaults_and_their_sources():
    cfg = config()
    assert (cfg.width, cfg.height, cfg.fps, cfg.source) == (640, 480, 30.0, 'auto')
    assert isinstance(device_camera(config(), 'synthetic').source, SyntheticCamera)
    assert isinstance(device_camera(config(device='/dev/video9'), 'device').source,
                      OpenCVCamera)


def test_the_source_topic_and_its_camera_info_beside_it():
    tc = topic_camera(config(topic='/cam/image_raw', compressed=True), resolve,
                      'camera/image_raw', 'camera/camera_info')
    assert (tc.topic, tc.info_topic, tc.mode) == ('/cam/image_raw', '/cam/camera_info', 'true')
    tc = topic_camera(config(topic='/cam/image_raw', info_topic='none'), resolve,
                      'camera/image_raw', 'camera/camera_info')
    assert tc.info_topic == '' and tc.mode == 'auto'


@pytest.mark.parametrize('changes, error', [
    ({'topic': 'camera/image_raw'}, 'is the topic this node publishes'),
    ({'info_topic': '/camera/camera_info'}, 'camera.info_topic /camera/camera_info is'),
    ({'topic': 'bad name'}, 'camera topic names'),
    ({'compressed': 'maybe'}, 'compressed must be auto, true or false')])
def test_a_bad_source_topic_is_a_line_for_the_user(changes, error):
    with pytest.raises(ValueError, match=error):
        topic_camera(config(**changes), resolve, 'camera/image_raw', 'camera/camera_info')


def test_the_compressed_choice_follows_the_graph_until_the_first_image():
    tc = topic_camera(config(topic='/cam/image_raw'), resolve, 'camera/image_raw',
                      'camera/camera_info')
    assert tc.choose(()) is False and tc.expected == 'sensor_msgs/msg/Image'
    jpeg = ('sensor_msgs/msg/CompressedImage',)
    assert tc.retype(jpeg)
    assert tc.choose(jpeg) is True and not tc.retype(jpeg)
    tc.delivered()
    assert not tc.retype(('sensor_msgs/msg/Image',))   # images came: it stays


def test_frame_gaps_count_missed_periods_while_streaming():
    gaps = GapMeter(0.1)
    gaps.frame(0.0)
    gaps.frame(0.1)
    gaps.frame(0.4)                 # two periods without a frame
    assert gaps.dropped == 2
    gaps.gap()                      # reconnecting: the next frame starts over
    gaps.frame(9.0)
    assert gaps.dropped == 2


def test_fov_models_keep_the_last_size():
    models = FovModels(60.0)
    a = models(64, 48)
    assert models(64, 48) is a and (a.width, a.height) == (64, 48)
    b = models(32, 24)
    assert b is not a and (b.width, b.height) == (32, 24)
