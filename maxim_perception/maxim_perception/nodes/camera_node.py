"""The camera node: frames from a V4L2 device, a video file or a synthetic scene, published as
sensor_msgs/Image + CameraInfo. A missing or unplugged camera is reported and retried; the node
never dies of it."""

from dataclasses import dataclass
import math
import time

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from sensor_msgs.msg import CameraInfo, Image

from maxim_perception.camera import (CameraStatus, OpenCVCamera, ReconnectingCamera,
                                     SyntheticCamera)
from maxim_perception.camera_model import CameraModel
from maxim_perception.conversions import camera_info_to_msg, image_to_msg
from maxim_perception.health import camera_health, Health, missed_periods, not_ready, RateMeter
from maxim_perception.nodes.diagnostics import Diagnostics
from maxim_perception.nodes.lifetime import run
from maxim_perception.qos import SENSOR


@dataclass(frozen=True)
class CameraNodeConfig:
    device: str
    width: int
    height: int
    fps: float
    frame_id: str
    hfov_deg: float
    synthetic: bool
    initial_backoff_s: float
    max_backoff_s: float
    open_timeout_s: float
    diagnostics_period_s: float


class CameraNode(LifecycleNode):
    """Publishes camera frames; reconnects with backoff when the camera goes away.

    Lifecycle: configure sets up the source, activate starts reading frames (the device
    opens on the first read), deactivate stops and releases the device, cleanup drops the
    source; diagnostics go out in every state. `autostart` (constructor, default true)
    brings the node up at construction, for graphs composed by hand; the launch files and
    the runner leave that to the lifecycle manager.

    Parameters:
        device (string or int, ''): '' -> /dev/video0; an index ('0', 0), a /dev path or a
            video file.
        width (int, 640), height (int, 480), fps (double, 30.0): the published image size and
            rate (frames of another size are resized).
        frame_id (string, 'camera_optical_frame'), hfov_deg (double, 60.0): CameraInfo.
        synthetic (bool, false): a rendered test scene instead of a device (burger mode).
        reconnect.initial_backoff_s (double, 0.5), reconnect.max_backoff_s (double, 5.0),
        reconnect.open_timeout_s (double, 2.0): retry spacing and the budget of one attempt.
        diagnostics_period_s (double, 1.0).
    Publishers:
        camera/image_raw (sensor_msgs/Image, bgr8, sensor QoS),
        camera/camera_info (sensor_msgs/CameraInfo, sensor QoS),
        diagnostics (diagnostic_msgs/DiagnosticArray).
    """

    def __init__(self, autostart: bool = True, **kwargs):
        super().__init__('camera', **kwargs)
        self.config = cfg = self._declare()
        self.model = CameraModel(cfg.width, cfg.height, math.radians(cfg.hfov_deg))
        self.camera: ReconnectingCamera | None = None
        self.last_error = ''
        self._frame_timer = None
        self.image_pub = self.create_publisher(Image, 'camera/image_raw', SENSOR)
        self.info_pub = self.create_publisher(CameraInfo, 'camera/camera_info', SENSOR)
        self.rate = RateMeter()
        self.dropped = 0       # frame periods without a frame while streaming
        self._last_frame_at = None
        # Diagnostics in every state: an unconfigured camera reports that it is not open.
        self.diagnostics = Diagnostics(self, 'camera', self.health, cfg.diagnostics_period_s)
        if autostart and self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
            self.trigger_activate()

    # -- lifecycle ---------------------------------------------------------------------------
    def on_configure(self, state) -> TransitionCallbackReturn:
        cfg = self.config
        if cfg.synthetic:
            source = SyntheticCamera(cfg.width, cfg.height, cfg.fps)
        else:
            source = OpenCVCamera(cfg.device, cfg.width, cfg.height, cfg.fps,
                                  open_timeout_s=cfg.open_timeout_s,
                                  read_timeout_s=min(cfg.open_timeout_s, 1.0))
        self.camera = ReconnectingCamera(source, cfg.initial_backoff_s, cfg.max_backoff_s)
        self.get_logger().info(f'camera: {source.describe()} at {cfg.width}x{cfg.height} '
                               f'{cfg.fps:g} fps, frame {cfg.frame_id!r}')
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        self._frame_timer = self.create_timer(1.0 / self.config.fps, self._on_frame_timer)
        return super().on_activate(state)

    def _release(self) -> None:
        if self._frame_timer is not None:
            self.destroy_timer(self._frame_timer)
            self._frame_timer = None
        if self.camera is not None:
            self.camera.close()

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._release()
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._release()
        self.camera = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        return self.on_cleanup(state)

    def _declare(self) -> CameraNodeConfig:
        def p(name, default, description, **extra):
            return self.declare_parameter(
                name, default, ParameterDescriptor(description=description, **extra)).value

        device = p('device', '', "'' -> /dev/video0; an index, a /dev path or a video file",
                   dynamic_typing=True)
        size = IntegerRange(from_value=16, to_value=8192, step=1)
        positive = FloatingPointRange(from_value=1e-3, to_value=1e6, step=0.0)
        return CameraNodeConfig(
            device=str(device),
            width=p('width', 640, 'Image width in pixels', integer_range=[size]),
            height=p('height', 480, 'Image height in pixels', integer_range=[size]),
            fps=float(p('fps', 30.0, 'Frame rate', floating_point_range=[positive])),
            frame_id=p('frame_id', 'camera_optical_frame', 'frame_id of images and info'),
            hfov_deg=float(p('hfov_deg', 60.0, 'Horizontal field of view (degrees)',
                             floating_point_range=[FloatingPointRange(
                                 from_value=1.0, to_value=179.0, step=0.0)])),
            synthetic=bool(p('synthetic', False, 'Render a synthetic test scene')),
            initial_backoff_s=float(p('reconnect.initial_backoff_s', 0.5,
                                      'First retry delay after a failure',
                                      floating_point_range=[positive])),
            max_backoff_s=float(p('reconnect.max_backoff_s', 5.0, 'Longest retry delay',
                                  floating_point_range=[positive])),
            open_timeout_s=float(p('reconnect.open_timeout_s', 2.0,
                                   'Budget of one open attempt', floating_point_range=[positive])),
            diagnostics_period_s=float(p('diagnostics_period_s', 1.0, 'Diagnostics period',
                                         floating_point_range=[positive])),
        )

    def _on_frame_timer(self) -> None:
        camera = self.camera
        if camera is None:
            return
        result = camera.poll()
        if result.changed:
            if result.status == CameraStatus.OK:
                self.get_logger().info(f'camera streaming: {camera.source.describe()}')
            else:
                self.get_logger().warning(f'camera {result.status.value}: {result.message}')
        if result.frame is None:
            self._last_frame_at = None     # a gap while reconnecting is not a dropped frame
            return
        now = time.monotonic()
        if self._last_frame_at is not None:
            self.dropped += missed_periods(now - self._last_frame_at, 1.0 / self.config.fps)
        self._last_frame_at = now
        self.rate.tick()
        stamp = self.get_clock().now().to_msg()
        frame_id = self.config.frame_id
        self.image_pub.publish(image_to_msg(result.frame, 'bgr8', stamp, frame_id))
        self.info_pub.publish(camera_info_to_msg(self.model, frame_id, stamp))

    def health(self) -> Health:
        cam = getattr(self, 'camera', None)
        if cam is None:
            return not_ready('the camera is not open')
        return camera_health(cam.status.value, cam.message, cam.source.describe(), cam.frames,
                             self.rate.rate(), self.config.fps, self.dropped, cam.attempts,
                             cam.failures, cam.next_attempt_in, self.rate.settled())

    def destroy_node(self):
        self._release()
        return super().destroy_node()


def main(args=None):
    run(lambda: CameraNode(autostart=False), args)
