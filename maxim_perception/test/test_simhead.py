"""The MuJoCo head: real physics, real offscreen pixels, and a model that matches the URDF."""

import math
import os
from pathlib import Path
import subprocess
import sys
import xml.etree.ElementTree as ET

import cv2
import numpy as np
import pytest

from maxim_perception.sim.simhead import JOINT_NAMES, OBJECT_NAMES, SimHead

URDF = Path(__file__).resolve().parents[2] / 'maxim_bringup' / 'urdf' / 'maxim_head.urdf'


@pytest.fixture(scope='module')
def sim():
    head = SimHead(width=320, height=240, moving_target=False)
    yield head
    head.close()


def settle(sim, pan, tilt, seconds=0.6):
    sim.set_joint_targets(pan, tilt)
    sim.step(seconds)


def colour_centroid(img, lo, hi):
    mask = cv2.inRange(img, np.array(lo, np.uint8), np.array(hi, np.uint8))
    ys, xs = np.nonzero(mask)
    assert len(xs) > 20, 'colour not in view'
    return float(xs.mean()), float(ys.mean())


def test_joints_match_the_urdf(sim):
    root = ET.parse(URDF).getroot()
    for name, (lo, hi) in zip(JOINT_NAMES, sim.ranges):
        joint = root.find(f"joint[@name='{name}']")
        assert joint is not None, name
        limit = joint.find('limit')
        assert (lo, hi) == pytest.approx((float(limit.get('lower')), float(limit.get('upper'))))
    assert sim.camera_info()['frame_id'] == 'camera_optical_frame'
    assert root.find("link[@name='camera_optical_frame']") is not None


def test_renders_real_pixels_that_change_when_the_head_moves(sim):
    settle(sim, 0.0, 0.0)
    front = sim.render()
    assert front.shape == (240, 320, 3) and front.dtype == np.uint8
    assert front.std() > 10                 # a scene, not a blank frame
    settle(sim, 0.8, 0.0)
    left = sim.render()
    assert np.abs(front.astype(int) - left.astype(int)).mean() > 10
    settle(sim, 0.8, 0.5)                    # positive tilt looks down: more floor
    down = sim.render()
    assert np.abs(left.astype(int) - down.astype(int)).mean() > 10


def test_servos_settle_fast_and_respect_limits(sim):
    settle(sim, 0.0, 0.0)
    sim.set_joint_targets(0.3, 0.3)
    settled_at = None
    start = sim.time
    for _ in range(250):
        sim.step(0.002)
        pos, _ = sim.joint_state()
        if np.all(np.abs(pos - 0.3) < 0.006):
            settled_at = sim.time - start
            break
    assert settled_at is not None and settled_at < 0.3
    assert sim.set_joint_targets(5.0, -3.0) == (2.6, -0.8)
    sim.step(1.5)
    pos, vel = sim.joint_state()
    assert pos == pytest.approx([2.6, -0.8], abs=0.01)
    assert np.abs(vel).max() < 0.05
    with pytest.raises(ValueError, match='finite'):
        sim.set_joint_targets(math.nan, 0.0)
    with pytest.raises(ValueError, match='dt must be > 0'):
        sim.step(0.0)


def test_centring_angles_put_objects_on_the_camera_axis_and_image_centre(sim):
    info = sim.camera_info()
    cx, cy = info['k'][2], info['k'][5]
    for name in ('red_box', 'green_cylinder', 'face'):
        pan, tilt = sim.centring_angles(name)
        settle(sim, pan, tilt)
        assert sim.angle_to(name) < 0.3, name
    pan, tilt = sim.centring_angles('red_box')
    settle(sim, pan, tilt)
    x, y = colour_centroid(sim.render(), (150, 0, 0), (255, 60, 60))
    assert abs(x - cx) < 3 and abs(y - cy) < 3


def test_camera_info_projects_like_the_renderer(sim):
    """A world point projected with camera_info's K lands where the renderer draws it."""
    settle(sim, 0.2, 0.0)
    info = sim.camera_info()
    fx, cx, fy, cy = info['k'][0], info['k'][2], info['k'][4], info['k'][5]
    pos, forward = sim.camera_pose()
    rot = sim.data.cam_xmat[sim.model.camera('camera_optical_frame').id].reshape(3, 3)
    # The ball (a sphere: its image centroid is its centre's projection) held still.
    rel = rot.T @ (sim.target_world_positions()['moving_ball'] - pos)   # MuJoCo camera frame
    # MuJoCo camera: x right, y up, looking along -z; optical: x right, y down, z forward.
    u = cx + fx * rel[0] / -rel[2]
    v = cy - fy * rel[1] / -rel[2]
    x, y = colour_centroid(sim.render(), (170, 90, 0), (255, 200, 60))
    assert abs(u - cx) > 20          # off-centre, so the test says something about fx
    assert abs(x - u) < 1.5 and abs(y - v) < 1.5
    assert info['width'] == 320 and info['height'] == 240 and len(info['p']) == 12


def test_the_face_target_fires_the_haar_face_cascade(sim):
    cascade = cv2.CascadeClassifier(
        os.path.join(cv2.data.haarcascades, 'haarcascade_frontalface_default.xml'))
    assert not cascade.empty()
    settle(sim, *sim.centring_angles('face'))
    grey = cv2.cvtColor(sim.render(), cv2.COLOR_RGB2GRAY)
    faces = cascade.detectMultiScale(grey, scaleFactor=1.1, minNeighbors=4, minSize=(20, 20))
    assert len(faces) >= 1
    x, y, w, h = faces[0]
    assert abs(x + w / 2 - 160) < 20 and abs(y + h / 2 - 120) < 20


def test_moving_target_moves_and_static_objects_stay():
    head = SimHead(width=64, height=48, moving_target=True, target_period_s=4.0)
    try:
        before = head.target_world_positions()
        head.step(1.0)
        after = head.target_world_positions()
        assert set(before) == set(OBJECT_NAMES)
        assert np.linalg.norm(after['moving_ball'] - before['moving_ball']) > 0.3
        for name in ('red_box', 'green_cylinder', 'blue_box', 'face'):
            assert after[name] == pytest.approx(before[name])
        assert head.time == pytest.approx(1.0)
        with pytest.raises(KeyError, match='unknown object'):
            head.angle_to('unicorn')
    finally:
        head.close()


def test_missing_gl_backend_gives_a_one_line_hint():
    code = ('from maxim_perception.sim.simhead import SimHead\n'
            'SimHead(width=32, height=24).render()\n')
    env = dict(os.environ, MUJOCO_GL='osmesa', PYOPENGL_PLATFORM='egl')
    proc = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith('maxim_perception.sim.simhead.SimRenderError')
    assert 'apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri' in last
