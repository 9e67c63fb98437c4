"""Pinhole model: pixel <-> pan/tilt, the REP-103 signs, exact composition with head angles."""

import math

import numpy as np
import pytest

from maxim_perception.camera_model import CameraModel, CameraModelError


@pytest.fixture
def model():
    return CameraModel(640, 480, math.radians(60.0))


def test_centre_is_zero_and_signs_follow_rep103(model):
    cx, cy = model.intrinsics.cx, model.intrinsics.cy
    assert model.pixel_to_angles(cx, cy) == pytest.approx((0.0, 0.0))
    pan_r, tilt_r = model.pixel_to_angles(cx + 100, cy)
    pan_l, _ = model.pixel_to_angles(cx - 100, cy)
    _, tilt_down = model.pixel_to_angles(cx, cy + 100)
    _, tilt_up = model.pixel_to_angles(cx, cy - 100)
    assert pan_r < 0 < pan_l and tilt_r == pytest.approx(0.0)  # right of centre: turn right
    assert tilt_up < 0 < tilt_down                            # below centre: tilt down (+)


def test_image_edge_is_half_the_field_of_view(model):
    dpan, _ = model.pixel_to_angles(-0.5, model.intrinsics.cy)
    assert dpan == pytest.approx(math.radians(30.0))
    assert model.vfov_rad == pytest.approx(2 * math.atan(240 / model.intrinsics.fx))


def test_pixel_angle_round_trip_over_the_image(model):
    for u in np.linspace(0, 639, 7):
        for v in np.linspace(0, 479, 5):
            du, dv = model.angles_to_pixel(*model.pixel_to_angles(u, v))
            assert (du, dv) == pytest.approx((u, v), abs=1e-9)


def test_head_angles_compose_exactly(model):
    # Independent check with rotation matrices: optical ray -> camera body -> head base.
    def rz(a):
        return np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0],
                         [0, 0, 1]])

    def ry(a):
        return np.array([[math.cos(a), 0, math.sin(a)], [0, 1, 0],
                         [-math.sin(a), 0, math.cos(a)]])

    fx, fy, cx, cy = (model.intrinsics.fx, model.intrinsics.fy, model.intrinsics.cx,
                      model.intrinsics.cy)
    for head_pan, head_tilt in [(0.0, 0.0), (0.7, 0.3), (-1.2, -0.5)]:
        for u, v in [(100.0, 50.0), (320.0, 400.0), (600.0, 240.0)]:
            body = np.array([1.0, -(u - cx) / fx, -(v - cy) / fy])
            d = rz(head_pan) @ ry(head_tilt) @ body
            want = (math.atan2(d[1], d[0]), math.atan2(-d[2], math.hypot(d[0], d[1])))
            pan, tilt = model.pixel_to_head_angles(u, v, head_pan, head_tilt)
            assert (pan, tilt) == pytest.approx(want, abs=1e-12)
            # Looking there puts the target at the image centre...
            assert model.head_angles_to_pixel(pan, tilt, pan, tilt) == pytest.approx(
                (cx, cy), abs=1e-9)
            # ...and from the original head pose it projects back to (u, v).
            assert model.head_angles_to_pixel(pan, tilt, head_pan, head_tilt) == pytest.approx(
                (u, v), abs=1e-9)


def test_zero_head_matches_relative_angles(model):
    assert model.pixel_to_head_angles(50, 400, 0.0, 0.0) == pytest.approx(
        model.pixel_to_angles(50, 400))


def test_from_k_and_camera_info(model):
    info = model.camera_info_dict('cam')
    again = CameraModel.from_k(info['width'], info['height'], info['k'])
    assert again.intrinsics == model.intrinsics
    assert again.hfov_rad == pytest.approx(model.hfov_rad)
    assert info['frame_id'] == 'cam' and len(info['p']) == 12 and info['d'] == [0.0] * 5
    odd = CameraModel.from_k(320, 240, [300.0, 0, 150.0, 0, 310.0, 110.0, 0, 0, 1])
    assert odd.pixel_to_angles(150.0, 110.0) == pytest.approx((0.0, 0.0))
    assert odd.in_image(0, 0) and not odd.in_image(320, 10)


@pytest.mark.parametrize('args', [(0, 480, 1.0), (640, 480, 0.0), (640, 480, math.pi),
                                  (640, 480, float('nan'))])
def test_invalid_models_are_rejected(args):
    with pytest.raises(CameraModelError):
        CameraModel(*args)


def test_invalid_points_are_rejected(model):
    with pytest.raises(CameraModelError):
        model.pixel_to_angles(float('nan'), 3.0)
    with pytest.raises(CameraModelError):
        model.angles_to_pixel(math.radians(120), 0.0)  # behind the camera
    with pytest.raises(CameraModelError):
        model.pixel_to_head_angles(1.0, 1.0, float('inf'), 0.0)
    with pytest.raises(CameraModelError):
        CameraModel.from_k(640, 480, [1.0, 2.0])
