"""The camera node: frames from a V4L2 device, a video file, a synthetic scene or a camera
driver already in the ROS graph, published as sensor_msgs/Image + CameraInfo. A missing or
unplugged camera, or a topic that sends nothing, is reported (and a device retried); the node
never dies of it."""

import math
import time

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from sensor_msgs.msg import CameraInfo, CompressedImage, Image

from maxim_common.conversions import stamp_to_seconds
from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health
from maxim_common.lifetime import run
from maxim_common.params import declare_table
from maxim_common.qos import SENSOR
from maxim_common.throttle import ThrottledLog
from maxim_perception.camera import (CameraStatus, ReconnectingCamera, resolve_source,
                                     TopicCamera)
from maxim_perception.camera_model import CameraModel, FovModels
from maxim_perception.camera_params import (device_camera, PARAMS, read_config,
                                            topic_camera)
from maxim_perception.conversions import (camera_info_to_msg, image_to_msg, image_to_pass_on,
                                          MalformedImage, stamp_error, UnsupportedEncoding)
from maxim_perception.health import camera_node_health, GapMeter, RateMeter

# The topics this node publishes (the ones attention and the recorder read).
IMAGE_OUT = 'camera/image_raw'
INFO_OUT = 'camera/camera_info'


class CameraNode(LifecycleNode):
    """Publishes camera frames; reconnects with backoff when a device goes away.

    Lifecycle: configure sets up the source, activate starts reading frames (the device
    opens on the first read; a topic is subscribed), deactivate stops and releases the device
    or the subscriptions, cleanup drops the source; diagnostics go out in every state.
    `autostart` (constructor, default true) brings the node up at construction, for graphs
    composed by hand; the launch files and the runner leave that to the lifecycle manager.

    With `source: topic` the images of a camera driver already in the graph (usb_cam,
    v4l2_camera, a RealSense, a Gazebo bridge) go on to camera/image_raw, converted only when
    attention cannot read them, at most `fps` a second; a topic with no image within
    `topic_timeout_s` is an ERROR on diagnostics that says why (camera.py TopicCamera).

    Parameters: camera_params.py (PARAMS; described there): source, device, width,
        height, fps, frame_id, hfov_deg, synthetic, topic, compressed, info_topic,
        topic_timeout_s, reconnect.*, diagnostics_period_s.
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
        self.config = cfg = read_config(declare_table(self, PARAMS))
        self.model = CameraModel(cfg.width, cfg.height, math.radians(cfg.hfov_deg))
        self.camera: ReconnectingCamera | None = None
        self.topic_camera: TopicCamera | None = None
        self.last_error = ''
        self._frame_timer = self._watch_timer = None
        self._image_sub = self._info_sub = None
        self._topic_publishers = 0
        self._info_models = FovModels(cfg.hfov_deg)   # CameraInfo for a topic without one
        # Bad images: a line per kind per 5 s, with a count.
        self._warn = ThrottledLog(self.get_logger().warning, 5.0, self.get_logger().error)
        self.image_pub = self.create_publisher(Image, IMAGE_OUT, SENSOR)
        self.info_pub = self.create_publisher(CameraInfo, INFO_OUT, SENSOR)
        self.rate = RateMeter()
        self.gaps = GapMeter(1.0 / cfg.fps)   # frame periods without a frame while streaming
        # Diagnostics in every state: an unconfigured camera reports that it is not open.
        self.diagnostics = Diagnostics(self, 'camera', self.health, cfg.diagnostics_period_s)
        if autostart and self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
            self.trigger_activate()

    _compressed = property(lambda self: self.topic_camera.compressed)   # for the tests

    # -- lifecycle ---------------------------------------------------------------------------
    def on_configure(self, state) -> TransitionCallbackReturn:
        cfg = self.config
        try:
            kind = resolve_source(cfg.source, cfg.synthetic, cfg.device)
            if kind == 'topic':
                self.topic_camera = topic_camera(cfg, self.resolve_topic_name, IMAGE_OUT,
                                                 INFO_OUT)
        except ValueError as exc:
            self.last_error = str(exc)
            self.get_logger().error(f'camera not configured: {exc}')
            return TransitionCallbackReturn.FAILURE
        self.last_error = ''
        if kind == 'topic':
            tc = self.topic_camera
            info = tc.info_topic or f'made from hfov_deg {cfg.hfov_deg:g}'
            self.get_logger().info(f'camera: images from topic {tc.topic} (compressed: {tc.mode}'
                                   f'), camera_info {info}, up to {cfg.fps:g} fps')
            return TransitionCallbackReturn.SUCCESS
        self.camera = device_camera(cfg, kind)
        self.get_logger().info(f'camera: {self.camera.source.describe()} at {cfg.width}x'
                               f'{cfg.height} {cfg.fps:g} fps, frame {cfg.frame_id!r}')
        return TransitionCallbackReturn.SUCCESS

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
            self.gaps.gap()     # a gap while reconnecting is not a dropped frame
            return
        self.gaps.frame(time.monotonic())
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
        if self._image_sub is not None:
            self.destroy_subscription(self._image_sub)
        self._image_sub = self.create_subscription(
            CompressedImage if tc.choose(types) else Image, tc.topic, self._on_topic_image,
            SENSOR)

    def _watch_topic(self) -> None:
        """Twice a second: what the graph says of the topic, and the status it makes."""
        tc = self.topic_camera
        if tc is None or not tc.active:
            return
        self._topic_publishers, types = self._publishers_of(tc.topic)
        if tc.retype(types):
            self._subscribe_image(types)     # the driver came up after us: its type decides
            self.get_logger().info(f'camera: {tc.topic} carries {", ".join(types)}: '
                                   f'subscribed as {"compressed" if tc.compressed else "raw"}')
        if tc.judge(self._topic_publishers, types, tc.expected):
            if tc.status == CameraStatus.OK:
                self.get_logger().info(f'camera streaming: {tc.describe()}')
            elif tc.status != CameraStatus.CONNECTING:
                self.get_logger().error(f'camera {tc.status.value}: {tc.message}')

    def _on_topic_image(self, msg) -> None:
        tc = self.topic_camera
        if tc is None:
            return
        stamp = 0.0 if stamp_error(msg.header.stamp) else stamp_to_seconds(msg.header.stamp)
        try:
            out = image_to_pass_on(msg, tc.compressed, lambda: tc.pace(stamp))
        except UnsupportedEncoding as exc:
            tc.rejected('unsupported', str(exc))
            self._warn('unsupported', f'camera: {tc.topic}: {exc}', error=True)
            return
        except MalformedImage as exc:
            tc.rejected('malformed', str(exc))
            self._warn('malformed', f'camera: dropped a malformed image on {tc.topic}: {exc} '
                       f'({tc.malformed} so far)')
            return
        if out is None:                       # over the fps ceiling
            return
        if not out.header.frame_id:
            out.header.frame_id = self.config.frame_id
        tc.delivered()
        self.rate.tick()
        self.image_pub.publish(out)
        if not tc.info_topic:
            self.info_pub.publish(camera_info_to_msg(self._info_models(out.width, out.height),
                                                     out.header.frame_id, out.header.stamp))

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
        return camera_node_health(
            getattr(self, 'topic_camera', None), getattr(self, 'camera', None),
            self.rate.rate(), self.config.fps, self.rate.settled(), self.gaps.dropped,
            self._topic_publishers, getattr(self, 'last_error', ''))

    def destroy_node(self):
        self._release()
        return super().destroy_node()


def main(args=None):
    run(lambda: CameraNode(autostart=False), args)
