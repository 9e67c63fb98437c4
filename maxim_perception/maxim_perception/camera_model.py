"""Pinhole camera model: pixels <-> the pan/tilt angles that would centre them.

Sign convention (REP-103, the same as the head's joints in sim/head_scene.xml and
head/control.py):

- pan is a rotation about +z (up), counter-clockwise positive: a POSITIVE pan turns the head
  to the LEFT. Image u grows to the right, so a target right of the image centre needs a
  NEGATIVE pan.
- tilt is a rotation about +y (left): a POSITIVE tilt pitches the head DOWN. Image v grows
  downwards, so a target below the image centre needs a POSITIVE tilt, a target above it a
  negative tilt.

`pixel_to_angles()` returns the pan/tilt increments that centre a pixel when the head is at
zero tilt; `pixel_to_head_angles()` composes with the current head angles exactly (a pan then
a tilt, as a pan/tilt neck moves), which matters once the head is tilted. The camera sits on
the tilt axis (the small offset between the axes is ignored: targets are far compared to it).
No lens distortion: the model is the ideal pinhole of a rectified image.
"""

from dataclasses import dataclass
import math
from typing import Sequence


class CameraModelError(ValueError):
    """Invalid intrinsics or a point the camera cannot see (behind it)."""


@dataclass(frozen=True)
class Intrinsics:
    """fx, fy, cx, cy in pixels (the K matrix of sensor_msgs/CameraInfo)."""

    fx: float
    fy: float
    cx: float
    cy: float


class CameraModel:
    """A pinhole camera of `width` x `height` pixels and horizontal field of view `hfov_rad`.

    Square pixels unless `fy` is given; the principal point defaults to the image centre
    ((width - 1) / 2, (height - 1) / 2, pixel centres at integer coordinates).
    """

    def __init__(self, width: int, height: int, hfov_rad: float, *,
                 fy: float | None = None, cx: float | None = None,
                 cy: float | None = None) -> None:
        if int(width) <= 0 or int(height) <= 0:
            raise CameraModelError(f'image size must be positive, got {width}x{height}')
        if not (math.isfinite(hfov_rad) and 0.0 < hfov_rad < math.pi):
            raise CameraModelError(f'hfov_rad must be in (0, pi), got {hfov_rad}')
        self.width = int(width)
        self.height = int(height)
        self.hfov_rad = float(hfov_rad)
        fx = (self.width / 2.0) / math.tan(self.hfov_rad / 2.0)
        fy = fx if fy is None else float(fy)
        cx = (self.width - 1) / 2.0 if cx is None else float(cx)
        cy = (self.height - 1) / 2.0 if cy is None else float(cy)
        if not (math.isfinite(fy) and fy > 0 and math.isfinite(cx) and math.isfinite(cy)):
            raise CameraModelError(f'invalid intrinsics fy={fy} cx={cx} cy={cy}')
        self.intrinsics = Intrinsics(fx, fy, cx, cy)

    @classmethod
    def from_k(cls, width: int, height: int, k: Sequence[float]) -> 'CameraModel':
        """A model from a CameraInfo-like row-major 3x3 K (fx 0 cx / 0 fy cy / 0 0 1)."""
        if len(k) != 9:
            raise CameraModelError(f'K must have 9 elements, got {len(k)}')
        fx, fy, cx, cy = float(k[0]), float(k[4]), float(k[2]), float(k[5])
        if not (math.isfinite(fx) and fx > 0):
            raise CameraModelError(f'K has an invalid fx={fx}')
        hfov = 2.0 * math.atan((int(width) / 2.0) / fx)
        model = cls(width, height, hfov, fy=fy, cx=cx, cy=cy)
        # Keep fx exactly as given (the round trip through hfov may differ in the last bit).
        model.intrinsics = Intrinsics(fx, fy, cx, cy)
        return model

    @property
    def vfov_rad(self) -> float:
        return 2.0 * math.atan((self.height / 2.0) / self.intrinsics.fy)

    def __repr__(self) -> str:
        i = self.intrinsics
        return (f'CameraModel({self.width}x{self.height}, hfov={math.degrees(self.hfov_rad):.1f}'
                f' deg, fx={i.fx:.1f}, fy={i.fy:.1f}, cx={i.cx:.1f}, cy={i.cy:.1f})')

    # ---- image <-> angles relative to the optical axis ---------------------------------

    def _ray(self, u: float, v: float) -> tuple[float, float, float]:
        """(forward, left, up) direction of pixel (u, v) in the camera body frame."""
        if not (math.isfinite(u) and math.isfinite(v)):
            raise CameraModelError(f'pixel must be finite, got ({u}, {v})')
        i = self.intrinsics
        return 1.0, -(u - i.cx) / i.fx, -(v - i.cy) / i.fy

    def _project(self, forward: float, left: float, up: float) -> tuple[float, float]:
        if forward <= 1e-9:
            raise CameraModelError('the direction is behind the camera')
        i = self.intrinsics
        return i.cx - i.fx * left / forward, i.cy - i.fy * up / forward

    def pixel_to_angles(self, u: float, v: float) -> tuple[float, float]:
        """(dpan, dtilt) in radians that bring pixel (u, v) to the image centre.

        Positive dpan: the target is left of centre; positive dtilt: it is below centre.
        """
        forward, left, up = self._ray(u, v)
        return math.atan2(left, forward), math.atan2(-up, math.hypot(forward, left))

    def angles_to_pixel(self, dpan: float, dtilt: float) -> tuple[float, float]:
        """The pixel (u, v) seen at (dpan, dtilt) from the optical axis; may lie off-image.

        Raises CameraModelError for directions behind the camera.
        """
        forward, left, up = _direction(dpan, dtilt)
        return self._project(forward, left, up)

    # ---- image <-> absolute head angles -------------------------------------------------

    def pixel_to_head_angles(self, u: float, v: float, head_pan: float,
                             head_tilt: float) -> tuple[float, float]:
        """The head (pan, tilt) that centres pixel (u, v) seen with the head at these angles."""
        d = _rotate_pan_tilt(self._ray(u, v), head_pan, head_tilt)
        return math.atan2(d[1], d[0]), math.atan2(-d[2], math.hypot(d[0], d[1]))

    def head_angles_to_pixel(self, pan: float, tilt: float, head_pan: float,
                             head_tilt: float) -> tuple[float, float]:
        """Where the direction (pan, tilt) appears with the head at (head_pan, head_tilt)."""
        d = _direction(pan, tilt)
        forward, left, up = _unrotate_pan_tilt(d, head_pan, head_tilt)
        return self._project(forward, left, up)

    def in_image(self, u: float, v: float, margin: float = 0.0) -> bool:
        return (-0.5 + margin <= u <= self.width - 0.5 - margin
                and -0.5 + margin <= v <= self.height - 0.5 - margin)

    def ray_optical(self, u: float, v: float) -> tuple[float, float, float]:
        """Unit ray of pixel (u, v) in the optical frame (x right, y down, z forward)."""
        i = self.intrinsics
        x, y = (u - i.cx) / i.fx, (v - i.cy) / i.fy
        n = math.sqrt(x * x + y * y + 1.0)
        return x / n, y / n, 1.0 / n

    def camera_info_dict(self, frame_id: str = '') -> dict:
        """sensor_msgs/CameraInfo fields (plumb_bob, no distortion) as plain Python values."""
        i = self.intrinsics
        return {
            'width': self.width, 'height': self.height, 'frame_id': frame_id,
            'distortion_model': 'plumb_bob', 'd': [0.0] * 5,
            'k': [i.fx, 0.0, i.cx, 0.0, i.fy, i.cy, 0.0, 0.0, 1.0],
            'r': [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
            'p': [i.fx, 0.0, i.cx, 0.0, 0.0, i.fy, i.cy, 0.0, 0.0, 0.0, 1.0, 0.0],
        }


class FovModels:
    """CameraModels made from a horizontal field of view for the image size asked, the last
    one kept (a stream's size rarely changes): for images that come without a CameraInfo."""

    def __init__(self, hfov_deg: float):
        self.hfov_rad = math.radians(hfov_deg)
        self._last: CameraModel | None = None

    def __call__(self, width: int, height: int) -> CameraModel:
        model = self._last
        if model is None or (model.width, model.height) != (width, height):
            model = self._last = CameraModel(width, height, self.hfov_rad)
        return model


def fit_model(current: CameraModel, width: int, height: int, info_model: CameraModel | None,
              fov_models: FovModels) -> CameraModel | None:
    """The model a `width` x `height` frame needs instead of `current`, or None when `current`
    fits: CameraInfo's intrinsics (`info_model`) when they match the frame, else the
    configured field of view (`fov_models`) at the frame's size."""
    cm = current
    if info_model is not None and (info_model.width, info_model.height) == (width, height):
        if info_model.intrinsics != cm.intrinsics or (cm.width, cm.height) != (width, height):
            return info_model
    elif (cm.width, cm.height) != (width, height):
        return fov_models(width, height)
    return None


def _direction(pan: float, tilt: float) -> tuple[float, float, float]:
    """Unit (forward, left, up) vector for a pan/tilt (positive tilt looks down)."""
    if not (math.isfinite(pan) and math.isfinite(tilt)):
        raise CameraModelError(f'angles must be finite, got ({pan}, {tilt})')
    return (math.cos(tilt) * math.cos(pan), math.cos(tilt) * math.sin(pan), -math.sin(tilt))


def _rotate_pan_tilt(d, pan: float, tilt: float) -> tuple[float, float, float]:
    """Rz(pan) @ Ry(tilt) @ d: from the camera body frame to the head's base frame."""
    if not (math.isfinite(pan) and math.isfinite(tilt)):
        raise CameraModelError(f'head angles must be finite, got ({pan}, {tilt})')
    ct, st, cp, sp = math.cos(tilt), math.sin(tilt), math.cos(pan), math.sin(pan)
    x = ct * d[0] + st * d[2]
    y = d[1]
    z = -st * d[0] + ct * d[2]
    return cp * x - sp * y, sp * x + cp * y, z


def _unrotate_pan_tilt(d, pan: float, tilt: float) -> tuple[float, float, float]:
    """Ry(tilt)^T @ Rz(pan)^T @ d: from the head's base frame to the camera body frame."""
    if not (math.isfinite(pan) and math.isfinite(tilt)):
        raise CameraModelError(f'head angles must be finite, got ({pan}, {tilt})')
    ct, st, cp, sp = math.cos(tilt), math.sin(tilt), math.cos(pan), math.sin(pan)
    x = cp * d[0] + sp * d[1]
    y = -sp * d[0] + cp * d[1]
    z = d[2]
    return ct * x - st * z, y, st * x + ct * z
