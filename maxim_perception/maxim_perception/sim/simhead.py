"""The simulated head: a MuJoCo pan/tilt with a camera, rendered offscreen (EGL, on the CPU).

It is the default robot on a machine with no hardware: it takes joint targets, steps the
physics, moves one target on a circle, and renders what the head's camera sees. It also knows
the ground truth (where each object is, the angle between the camera axis and it), which is
what the tracking tests measure against.
"""

import math
import os
from pathlib import Path

import numpy as np

EGL_HINT = ('apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri, and set MUJOCO_GL=egl '
            'before importing mujoco')


class SimRenderError(RuntimeError):
    """Offscreen rendering is unavailable on this machine."""


# Offscreen rendering without a display; must be set before mujoco is imported.
os.environ.setdefault('MUJOCO_GL', 'egl')
try:
    import mujoco  # noqa: E402
except RuntimeError as exc:   # mujoco picks its GL backend at import time
    raise SimRenderError(f'MuJoCo cannot load its GL backend ({exc}); {EGL_HINT}') from exc

SCENE_PATH = Path(__file__).with_name('head_scene.xml')
JOINT_NAMES = ('head_pan_joint', 'head_tilt_joint')
CAMERA_NAME = 'camera_optical_frame'
OBJECT_NAMES = ('red_box', 'green_cylinder', 'blue_box', 'face', 'moving_ball')


class SimHead:
    """The MuJoCo head and its scene.

    Args:
        width, height: camera image size in pixels (320x240 renders ~3x faster than 640x480).
        fps: the camera rate the caller intends (kept for camera_info users and the node).
        moving_target: whether the orange ball circles in front of the head.
        target_period_s: seconds per turn of the moving ball.
        target_radius: (sideways, vertical) half-axes in metres of the ball's ellipse.
        scene_path: an MJCF file with the same joint, camera and body names.
    """

    def __init__(self, width: int = 320, height: int = 240, fps: float = 15.0,
                 moving_target: bool = True, target_period_s: float = 10.0,
                 target_radius: tuple[float, float] = (0.45, 0.2),
                 scene_path: str | Path | None = None):
        if width <= 0 or height <= 0:
            raise ValueError(f'image size must be positive, got {width}x{height}')
        if not (fps > 0 and math.isfinite(fps)):
            raise ValueError(f'fps must be > 0, got {fps}')
        if target_period_s <= 0:
            raise ValueError(f'target_period_s must be > 0, got {target_period_s}')
        self.width, self.height, self.fps = int(width), int(height), float(fps)
        self.moving_target = moving_target
        self.target_period_s = float(target_period_s)
        self.target_radius = target_radius
        path = Path(scene_path) if scene_path else SCENE_PATH
        self.model = mujoco.MjModel.from_xml_path(str(path))
        self.model.vis.global_.offwidth = max(self.model.vis.global_.offwidth, self.width)
        self.model.vis.global_.offheight = max(self.model.vis.global_.offheight, self.height)
        self.data = mujoco.MjData(self.model)
        m = self.model
        self._qpos = [m.jnt_qposadr[m.joint(n).id] for n in JOINT_NAMES]
        self._qvel = [m.jnt_dofadr[m.joint(n).id] for n in JOINT_NAMES]
        self._actuators = [m.actuator(n).id for n in ('head_pan', 'head_tilt')]
        self.ranges = [tuple(m.jnt_range[m.joint(n).id]) for n in JOINT_NAMES]
        self._camera = m.camera(CAMERA_NAME).id
        self.fovy_deg = float(m.cam_fovy[self._camera])
        ball = m.body('moving_ball')
        self._mocap = int(m.body_mocapid[ball.id])
        self._ball_centre = np.array(m.body_pos[ball.id], dtype=float)
        self._tilt_body = m.body('tilt_link').id
        self._renderer = None
        self._move_ball()
        mujoco.mj_forward(m, self.data)

    # ---- commands and physics -----------------------------------------------------------

    def set_joint_targets(self, pan: float, tilt: float) -> tuple[float, float]:
        """Servo set points in radians, clamped to the joint ranges; returns what was set."""
        if not (math.isfinite(pan) and math.isfinite(tilt)):
            raise ValueError(f'joint targets must be finite, got pan={pan}, tilt={tilt}')
        out = []
        for value, (lo, hi), act in zip((pan, tilt), self.ranges, self._actuators):
            value = min(hi, max(lo, float(value)))
            self.data.ctrl[act] = value
            out.append(value)
        return out[0], out[1]

    def step(self, dt: float) -> None:
        """Advance the simulation by dt seconds (whole physics steps, at least one)."""
        if not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f'dt must be > 0, got {dt}')
        n = max(1, int(round(dt / self.model.opt.timestep)))
        # The ball is kinematic (a mocap body): placed once where it is at the end of the
        # step, then all n physics steps run in one call. A Python loop over the steps
        # released and re-took the GIL n times per tick; with busy threads beside it each
        # re-take can wait a switch interval, and the simulation fell to a third of real
        # time (measured in the end-to-end tracking test's one process).
        self._move_ball(self.data.time + n * self.model.opt.timestep)
        mujoco.mj_step(self.model, self.data, n)

    def _move_ball(self, t: float | None = None) -> None:
        """Put the ball where it is at time t (default: now)."""
        pos = self._ball_centre.copy()
        if self.moving_target:
            t = self.data.time if t is None else t
            phase = 2 * math.pi * t / self.target_period_s
            pos[1] += self.target_radius[0] * math.sin(phase)
            pos[2] += self.target_radius[1] * math.cos(phase)
        self.data.mocap_pos[self._mocap] = pos

    @property
    def time(self) -> float:
        """Simulated seconds since start."""
        return float(self.data.time)

    def joint_state(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions, velocities) of (pan, tilt), radians and rad/s."""
        return (np.array([self.data.qpos[i] for i in self._qpos]),
                np.array([self.data.qvel[i] for i in self._qvel]))

    # ---- camera -------------------------------------------------------------------------

    def render(self) -> np.ndarray:
        """The head camera's image, HxWx3 uint8 RGB."""
        if self._renderer is None:
            try:
                self._renderer = mujoco.Renderer(self.model, self.height, self.width)
            except (RuntimeError, ImportError, OSError, mujoco.FatalError) as exc:
                raise SimRenderError(f'MuJoCo offscreen rendering unavailable ({exc}); '
                                     f'{EGL_HINT}') from exc
        self._renderer.update_scene(self.data, camera=self._camera)
        return self._renderer.render()

    def camera_info(self) -> dict:
        """Pinhole intrinsics of the rendered image (no distortion), sensor_msgs-shaped."""
        fy = (self.height / 2.0) / math.tan(math.radians(self.fovy_deg) / 2.0)
        fx = fy  # square pixels: MuJoCo's fovy fixes both
        cx, cy = (self.width - 1) / 2.0, (self.height - 1) / 2.0
        return {
            'width': self.width, 'height': self.height, 'frame_id': CAMERA_NAME,
            'distortion_model': 'plumb_bob', 'd': [0.0] * 5,
            'k': [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0],
            'r': [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
            'p': [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0],
        }

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    # ---- ground truth -------------------------------------------------------------------

    def target_world_positions(self) -> dict[str, np.ndarray]:
        """World position (m) of each object worth looking at, by name."""
        return {name: self.data.xpos[self.model.body(name).id].copy() for name in OBJECT_NAMES}

    def _point(self, target) -> np.ndarray:
        if isinstance(target, str):
            if target not in OBJECT_NAMES:
                raise KeyError(f'unknown object {target!r}; known: {", ".join(OBJECT_NAMES)}')
            return self.data.xpos[self.model.body(target).id].copy()
        point = np.asarray(target, dtype=float)
        if point.shape != (3,):
            raise ValueError(f'a point must have 3 coordinates, got shape {point.shape}')
        return point

    def camera_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """(position, unit viewing direction) of the camera in the world."""
        pos = self.data.cam_xpos[self._camera].copy()
        forward = -self.data.cam_xmat[self._camera].reshape(3, 3)[:, 2]
        return pos, forward

    def angle_to(self, target) -> float:
        """Degrees between the camera axis and an object (by name) or a world point."""
        pos, forward = self.camera_pose()
        ray = self._point(target) - pos
        cos = float(np.dot(forward, ray) / np.linalg.norm(ray))
        return math.degrees(math.acos(max(-1.0, min(1.0, cos))))

    def centring_angles(self, target) -> tuple[float, float]:
        """The (pan, tilt) that puts an object (or a world point) on the camera axis.

        Exact for this head's geometry: the camera sits on the pan plane, offset forward and
        up from the tilt axis; positive tilt looks down.
        """
        m = self.model
        pan_origin = self.data.xpos[m.body('pan_link').id]
        tilt_origin = self.data.xpos[self._tilt_body]
        cam_offset = m.body_pos[m.body('camera_link').id]   # in the tilt link's frame
        rel = self._point(target) - pan_origin
        pan = math.atan2(rel[1], rel[0])
        rel_t = self._point(target) - tilt_origin
        r = math.hypot(rel_t[0], rel_t[1])
        h = rel_t[2]
        # The camera axis runs at height b above the tilt axis in the tilt frame; solve
        # r sin(t) + h cos(t) = b for t.
        b = float(cam_offset[2])
        dist = math.hypot(r, h)
        tilt = math.asin(max(-1.0, min(1.0, b / dist))) - math.atan2(h, r)
        return pan, tilt
