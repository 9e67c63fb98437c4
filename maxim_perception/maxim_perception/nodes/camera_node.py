"""The camera node: frames from a V4L2 device, a video file, a synthetic scene or a camera
driver already in the ROS graph, published as sensor_msgs/Image + CameraInfo. A missing or
unplugged camera, or a topic that sends nothing, is reported (and a device retried); the node
never dies of it."""

from dataclasses import dataclass
import math
import time

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from sensor_msgs.msg import CameraInfo, CompressedImage, Image

from maxim_common.conversions import stamp_to_seconds
from maxim_common.diagnostics import Diagnostics
from maxim_common.health import ERROR, Health, not_ready
from maxim_common.lifetime import run
from maxim_common.qos import SENSOR
from maxim_common.throttle import LogThrottle
from maxim_perception.camera import (camera_info_topic, CameraStatus, choose_compressed,
                                     COMPRESSED_TYPE, IMAGE_TYPE, OpenCVCamera,
                                     parse_compressed, ReconnectingCamera, resolve_source,
                                     SOURCES, SyntheticCamera, TopicCamera)
from maxim_perception.camera_model import CameraModel
from maxim_perception.conversions import (camera_info_to_msg, check_image, compressed_to_image_msg,
                                          image_to_msg, MalformedImage, stamp_error,
                                          UnsupportedEncoding, YUV422_ENCODINGS,
                                          yuv422_to_image_msg)
from maxim_perception.health import camera_health, missed_periods, RateMeter, topic_camera_health

# The topics this node publishes (the ones attention and the recorder read).
IMAGE_OUT = 'camera/image_raw'
INFO_OUT = 'camera/camera_info'


@dataclass(frozen=True)
class CameraNodeConfig:
    source: str
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
    topic: str
    compressed: str
    info_topic: str
    topic_timeout_s: float


class CameraNode(LifecycleNode):
    """Publishes camera frames; reconnects with backoff when a device goes away.

    Lifecycle: configure sets up the source, activate starts reading frames (the device
    opens on the first read; a topic is subscribed), deactivate stops and releases the device
    or the subscriptions, cleanup drops the source; diagnostics go out in every state.
    `autostart` (constructor, default true) brings the node up at construction, for graphs
    composed by hand; the launch files and the runner leave that to the lifecycle manager.

    With `source: topic` the images of a camera driver already in the graph (usb_cam,
    v4l2_camera, a RealSense, a Gazebo bridge) go on to camera/image_raw with their stamp and
    frame_id: an Image in an encoding attention reads (bgr8, rgb8, mono8, bgra8, rgba8) is
    passed on as it came, the same message, rows padded or not; YUV 4:2:2 (yuv422/uyvy,
    yuv422_yuy2/yuyv) is converted once into bgr8, and so is a JPEG or PNG CompressedImage.
    Images faster than `fps` are skipped evenly (on their stamps), as the device source reads
    at `fps`; a malformed image (data that does not hold width x height at its step) is
    dropped, counted and logged (throttled), an unsupported encoding likewise with a one-line
    error. The driver's CameraInfo is passed
    on to camera/camera_info; without one (`info_topic: none`) it is made from `hfov_deg`.
    A topic with no image within `topic_timeout_s` is an ERROR on diagnostics that says why
    (nothing publishes it, the wrong type, every image rejected); the node keeps waiting.

    Parameters:
        source (string, 'auto'): device | video | synthetic | topic; auto: synthetic when
            `synthetic` is true, else device or video from `device`.
        device (string or int, ''): '' -> /dev/video0; an index ('0', 0), a /dev path or a
            video file.
        width (int, 640), height (int, 480): the published size of device, video and
            synthetic frames (others are resized); a topic's images keep their own size.
        fps (double, 30.0): the frame rate read from a device; a topic's images at most this
            often (and the rate expected of it).
        frame_id (string, 'camera_optical_frame'), hfov_deg (double, 60.0): CameraInfo; a
            topic's images keep their frame_id (this one when they have none).
        synthetic (bool, false): a rendered test scene instead of a device (burger mode).
        topic (string, 'image_raw'): source topic: the driver's image topic.
        compressed (string or bool, 'auto'): source topic: subscribe sensor_msgs/Image (false)
            or CompressedImage (true); auto: the type the graph gives the topic, else true for
            a name ending in /compressed.
        info_topic (string, ''): source topic: the driver's CameraInfo; '' the one beside
            `topic` (image_transport's rule), 'none' made from hfov_deg.
        topic_timeout_s (double, 5.0): source topic: no image for this long is an ERROR.
        reconnect.initial_backoff_s (double, 0.5), reconnect.max_backoff_s (double, 5.0),
        reconnect.open_timeout_s (double, 2.0): retry spacing and the budget of one attempt.
        diagnostics_period_s (double, 1.0).
    Subscriptions (source topic only, sensor QoS):
        <topic> (sensor_msgs/Image or sensor_msgs/CompressedImage),
        <info_topic> (sensor_msgs/CameraInfo).
    Publishers:
        camera/image_raw (sensor_msgs/Image, sensor QoS; bgr8 from a device, video, the
            synthetic scene, a YUV or a compressed topic),
        camera/camera_info (sensor_msgs/CameraInfo, sensor QoS),
        diagnostics (diagnostic_msgs/DiagnosticArray).
    """

    def __init__(self, autostart: bool = True, **kwargs):
        super().__init__('camera', **kwargs)
        self.config = cfg = self._declare()
        self.model = CameraModel(cfg.width, cfg.height, math.radians(cfg.hfov_deg))
        self.camera: ReconnectingCamera | None = None
        self.topic_camera: TopicCamera | None = None
        self.last_error = ''
        self._frame_timer = None
        self._watch_timer = None
        self._image_sub = None
        self._info_sub = None
        self._compressed_mode = 'auto'
        self._compressed = False
        self._topic_publishers = 0
        self._info_models: dict[tuple[int, int], CameraModel] = {}
        self._throttle = LogThrottle(5.0)   # bad images: a line per kind per 5 s, with a count
        self.image_pub = self.create_publisher(Image, IMAGE_OUT, SENSOR)
        self.info_pub = self.create_publisher(CameraInfo, INFO_OUT, SENSOR)
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
        try:
            kind = resolve_source(cfg.source, cfg.synthetic, cfg.device)
            if kind == 'topic':
                self.topic_camera = self._topic_camera()
        except ValueError as exc:
            self.last_error = str(exc)
            self.get_logger().error(f'camera not configured: {exc}')
            return TransitionCallbackReturn.FAILURE
        self.last_error = ''
        if kind == 'topic':
            tc = self.topic_camera
            info = tc.info_topic or f'made from hfov_deg {cfg.hfov_deg:g}'
            self.get_logger().info(f'camera: images from topic {tc.topic} (compressed: '
                                   f'{self._compressed_mode}), camera_info {info}, up to '
                                   f'{cfg.fps:g} fps')
            return TransitionCallbackReturn.SUCCESS
        if kind == 'synthetic':
            source = SyntheticCamera(cfg.width, cfg.height, cfg.fps)
        else:
            source = OpenCVCamera(cfg.device, cfg.width, cfg.height, cfg.fps,
                                  open_timeout_s=cfg.open_timeout_s,
                                  read_timeout_s=min(cfg.open_timeout_s, 1.0))
        self.camera = ReconnectingCamera(source, cfg.initial_backoff_s, cfg.max_backoff_s)
        self.get_logger().info(f'camera: {source.describe()} at {cfg.width}x{cfg.height} '
                               f'{cfg.fps:g} fps, frame {cfg.frame_id!r}')
        return TransitionCallbackReturn.SUCCESS

    def _topic_camera(self) -> TopicCamera:
        """The source topic from the parameters (ValueError: a line for the user)."""
        cfg = self.config
        self._compressed_mode = parse_compressed(cfg.compressed)
        try:
            topic = self.resolve_topic_name(cfg.topic)
            own = self.resolve_topic_name(IMAGE_OUT)
            info = cfg.info_topic.strip()
            info_topic = '' if info.lower() == 'none' else \
                self.resolve_topic_name(info or camera_info_topic(cfg.topic))
            own_info = self.resolve_topic_name(INFO_OUT)
        except RuntimeError as exc:        # rclpy's RCLError: not a valid topic name
            raise ValueError(f'camera topic names: {exc}') from exc
        if topic == own:
            raise ValueError(f'camera.topic {topic} is the topic this node publishes: point it '
                             "to the driver's image topic (a driver that already publishes "
                             f'{own} needs no camera node)')
        if info_topic == own_info:
            raise ValueError(f'camera.info_topic {info_topic} is the topic this node publishes')
        return TopicCamera(topic, cfg.fps, cfg.topic_timeout_s, info_topic)

    def on_activate(self, state) -> TransitionCallbackReturn:
        tc = self.topic_camera
        if tc is not None:
            self._subscribe_image(self._publishers_of(tc.topic)[1])
            if tc.info_topic:
                self._info_sub = self.create_subscription(CameraInfo, tc.info_topic,
                                                          self._on_topic_info, SENSOR)
            tc.start()
            period = min(0.5, max(0.05, tc.timeout_s / 4.0))
            self._watch_timer = self.create_timer(period, self._watch_topic)
        else:
            self._frame_timer = self.create_timer(1.0 / self.config.fps, self._on_frame_timer)
        return super().on_activate(state)

    def _release(self) -> None:
        for timer in (self._frame_timer, self._watch_timer):
            if timer is not None:
                self.destroy_timer(timer)
        self._frame_timer = self._watch_timer = None
        for sub in (self._image_sub, self._info_sub):
            if sub is not None:
                self.destroy_subscription(sub)
        self._image_sub = self._info_sub = None
        if self.camera is not None:
            self.camera.close()
        if self.topic_camera is not None:
            self.topic_camera.stop()

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._release()
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._release()
        self.camera = None
        self.topic_camera = None
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
            source=str(p('source', 'auto', f'Where frames come from: {" | ".join(SOURCES)}')),
            device=str(device),
            width=p('width', 640, 'Image width in pixels', integer_range=[size]),
            height=p('height', 480, 'Image height in pixels', integer_range=[size]),
            fps=float(p('fps', 30.0, 'Frame rate (source topic: at most)',
                        floating_point_range=[positive])),
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
            topic=str(p('topic', 'image_raw', "Source topic: the camera driver's image topic")),
            compressed=str(p('compressed', 'auto', 'Source topic: CompressedImage (true), '
                             'Image (false) or auto (from its type or name)',
                             dynamic_typing=True)),
            info_topic=str(p('info_topic', '', "Source topic: the driver's CameraInfo ('': "
                             "beside the image topic; 'none': made from hfov_deg)")),
            topic_timeout_s=float(p('topic_timeout_s', 5.0, 'Source topic: no image for this '
                                    'long is an error', floating_point_range=[positive])),
        )

    # -- device, video and synthetic sources -------------------------------------------------
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

    # -- the source topic --------------------------------------------------------------------
    def _publishers_of(self, topic: str) -> tuple[int, tuple[str, ...]]:
        """How many publish `topic`, and their types (our own subscription's type is no
        evidence of what the driver sends)."""
        infos = self.get_publishers_info_by_topic(topic)
        return len(infos), tuple(sorted({info.topic_type for info in infos}))

    def _subscribe_image(self, types: tuple[str, ...]) -> None:
        tc = self.topic_camera
        self._compressed = choose_compressed(self._compressed_mode, tc.topic, types)
        if self._image_sub is not None:
            self.destroy_subscription(self._image_sub)
        self._image_sub = self.create_subscription(
            CompressedImage if self._compressed else Image, tc.topic, self._on_topic_image,
            SENSOR)

    def _watch_topic(self) -> None:
        """Twice a second: what the graph says of the topic, and the status it makes."""
        tc = self.topic_camera
        if tc is None or not tc.active:
            return
        self._topic_publishers, types = self._publishers_of(tc.topic)
        if self._compressed_mode == 'auto' and tc.frames == 0 and \
                choose_compressed('auto', tc.topic, types) != self._compressed:
            self._subscribe_image(types)     # the driver came up after us: its type decides
            self.get_logger().info(f'camera: {tc.topic} carries {", ".join(types)}: '
                                   f'subscribed as {"compressed" if self._compressed else "raw"}')
        expected = COMPRESSED_TYPE if self._compressed else IMAGE_TYPE
        if tc.judge(self._topic_publishers, types, expected):
            if tc.status == CameraStatus.OK:
                self.get_logger().info(f'camera streaming: {tc.describe()}')
            elif tc.status != CameraStatus.CONNECTING:
                self.get_logger().error(f'camera {tc.status.value}: {tc.message}')

    def _warn(self, kind: str, text: str, error: bool = False) -> None:
        line = self._throttle(kind, text)
        if line is not None:
            (self.get_logger().error if error else self.get_logger().warning)(line)

    def _on_topic_image(self, msg) -> None:
        tc = self.topic_camera
        if tc is None:
            return
        stamp = 0.0 if stamp_error(msg.header.stamp) else stamp_to_seconds(msg.header.stamp)
        try:
            if self._compressed:
                if not tc.pace(stamp):        # decode only the images passed on
                    return
                out = compressed_to_image_msg(msg)
            else:
                check_image(msg)
                if not tc.pace(stamp):
                    return
                # Passed on as it came (no copy), but YUV, which attention does not read.
                out = yuv422_to_image_msg(msg) if msg.encoding in YUV422_ENCODINGS else msg
        except UnsupportedEncoding as exc:
            tc.rejected('unsupported', str(exc))
            self._warn('unsupported', f'camera: {tc.topic}: {exc}', error=True)
            return
        except MalformedImage as exc:
            tc.rejected('malformed', str(exc))
            self._warn('malformed', f'camera: dropped a malformed image on {tc.topic}: {exc} '
                       f'({tc.malformed} so far)')
            return
        if not out.header.frame_id:
            out.header.frame_id = self.config.frame_id
        tc.delivered()
        self.rate.tick()
        self.image_pub.publish(out)
        if not tc.info_topic:
            self.info_pub.publish(camera_info_to_msg(self._info_model(out.width, out.height),
                                                     out.header.frame_id, out.header.stamp))

    def _info_model(self, width: int, height: int) -> CameraModel:
        model = self._info_models.get((width, height))
        if model is None:
            model = CameraModel(width, height, math.radians(self.config.hfov_deg))
            self._info_models = {(width, height): model}
        return model

    def _on_topic_info(self, msg: CameraInfo) -> None:
        tc = self.topic_camera
        if tc is None:
            return
        if not msg.header.frame_id:
            msg.header.frame_id = self.config.frame_id
        tc.info()
        self.info_pub.publish(msg)

    # -- health ------------------------------------------------------------------------------
    def health(self) -> Health:
        tc = getattr(self, 'topic_camera', None)
        if tc is not None:
            return topic_camera_health(
                tc.status.value, tc.message, tc.topic, tc.frames, self.rate.rate(),
                self.config.fps, tc.dropped, tc.skipped, tc.malformed, tc.unsupported,
                self._topic_publishers, tc.info_topic, tc.infos, tc.info_overdue(),
                self.rate.settled())
        cam = getattr(self, 'camera', None)
        if cam is None:
            if getattr(self, 'last_error', ''):
                return Health(ERROR, f'not configured: {self.last_error}',
                              {'state': 'unconfigured'})
            return not_ready('the camera is not open')
        return camera_health(cam.status.value, cam.message, cam.source.describe(), cam.frames,
                             self.rate.rate(), self.config.fps, self.dropped, cam.attempts,
                             cam.failures, cam.next_attempt_in, self.rate.settled())

    def destroy_node(self):
        self._release()
        return super().destroy_node()


def main(args=None):
    run(lambda: CameraNode(autostart=False), args)
