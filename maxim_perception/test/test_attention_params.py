"""The attention node's parameters, its frame rate ceiling and its camera model's fit, and the
joint reading it takes from joint_states, without ROS."""

import math

import pytest
from sensor_msgs.msg import JointState

from maxim_perception.attention.pacing import FrameCeiling
from maxim_perception.attention.params import PARAMS, read_config
from maxim_perception.camera_model import CameraModel, fit_model, FovModels
from maxim_perception.conversions import joint_state_pose


def test_the_defaults_make_the_attention_config():
    cfg = read_config({name: spec[0] for name, spec in PARAMS.items()})
    assert cfg.max_rate_hz == 15.0 and cfg.percept_period_s == 2.0
    assert cfg.attention.faces_async and cfg.attention.detect_width == 320
    assert (cfg.pan_joint, cfg.tilt_joint) == ('head_pan_joint', 'head_tilt_joint')


def test_frames_over_the_ceiling_are_skipped_evenly():
    ceiling = FrameCeiling(10.0)
    stamps = [k / 30.0 for k in range(90)]          # 30 fps for 3 s
    admitted = [t for t in stamps if ceiling.admit(t)]
    assert len(admitted) == pytest.approx(30, abs=1)
    gaps = [b - a for a, b in zip(admitted, admitted[1:])]
    assert all(g == pytest.approx(0.1, abs=0.02) for g in gaps)


def test_a_pause_or_a_clock_that_went_back_starts_over():
    ceiling = FrameCeiling(10.0)
    assert ceiling.admit(100.0) and not ceiling.admit(100.01)
    assert ceiling.admit(200.0)                      # after a pause: at once
    assert ceiling.admit(1.0)                        # a restarted simulation
    with pytest.raises(ValueError):
        FrameCeiling(0.0)


def test_the_camera_model_fits_the_frame():
    fov = FovModels(60.0)
    current = CameraModel(640, 480, math.radians(60.0))
    assert fit_model(current, 640, 480, None, fov) is None
    assert (fit_model(current, 320, 240, None, fov).width) == 320
    info = CameraModel(640, 480, math.radians(70.0))
    assert fit_model(current, 640, 480, info, fov) is info
    assert fit_model(info, 640, 480, info, fov) is None
    small = fit_model(current, 320, 240, info, fov)  # the info is for another size
    assert (small.width, small.height) == (320, 240)


def test_a_joint_reading_keeps_the_joint_it_lacks():
    msg = JointState(name=['head_tilt_joint'], position=[0.3])
    assert joint_state_pose(msg, 'head_pan_joint', 'head_tilt_joint', (0.5, 0.0)) == (0.5, 0.3)
    with pytest.raises(IndexError):
        joint_state_pose(JointState(name=['head_pan_joint']), 'head_pan_joint',
                         'head_tilt_joint', (0.0, 0.0))
