"""The attention node: camera frames in; attention state, percepts, a debug image and rviz
markers out; the scene_summary service for the agent's tool."""

import math
import threading
import time
import uuid

import cv2
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, JointState
from visualization_msgs.msg import MarkerArray

from maxim_common.conversions import stamp_to_seconds
from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health
from maxim_common.lifetime import run
from maxim_common.params import declare_table
from maxim_common.qos import LATCHED, SENSOR, SENSOR_LATEST
from maxim_common.throttle import ThrottledLog
from maxim_interfaces.msg import AttentionState, Percept
from maxim_interfaces.srv import SceneSummary
from maxim_perception.attention.attention import AttentionCore, AttentionError, PerceptGate
from maxim_perception.attention.detectors import DetectorError
from maxim_perception.attention.pacing import FrameCeiling
from maxim_perception.attention.params import PARAMS, read_config
from maxim_perception.camera_model import (CameraModel, CameraModelError, fit_model,
                                           FovModels)
from maxim_perception.conversions import (attention_to_markers, attention_to_msg,
                                          image_to_compressed, image_to_msg, ImageConversionError,
                                          joint_state_pose, msg_to_bgr, msg_to_camera_model,
                                          percept_to_msg, scene_summary_to_response)
from maxim_perception.head.pose_history import PoseHistory
from maxim_perception.health import attention_health, RateMeter


class AttentionNode(Node):
    """Turns camera frames into tracked targets, a focus and percepts.

    A frame is processed as soon as it arrives, in its own callback group (woken by a guard
    condition, not polled by a timer, which would add up to a timer period of latency); only
    the newest frame is kept, older ones are dropped (never queued): the subscription's depth
    is 1 (with the sensor default of 5, a fully delivered 640x480 stream measured 140 ms p95
    from frame to state, every frame waiting behind stale ones) and the slot holds one frame.
    `max_rate_hz` is a ceiling on the average rate, counted on the frames' stamps: frames that
    come faster are dropped, evenly. Pixels become head angles with the head's pose at the
    frame's stamp, interpolated from joint_states, not the newest pose (the head keeps turning
    while a frame is processed).

    main() spins a SingleThreadedExecutor: a MultiThreadedExecutor's Python scheduling cost
    more than the processing (measured in bench/perception/latency.py: p95 frame to state
    12.3 ms against 8.7 ms); the service and joint_states wait at most one frame's processing
    (about 2 ms at 640x480). The callback groups keep the node correct under the in-process
    runner's MultiThreadedExecutor too, where processing inside the image callback instead
    (no hand-off) made the end-to-end tracking test lose the ball.

    Parameters: attention/params.py (PARAMS; described there): percept_period_s (settable
        at run time), hfov_deg, use_camera_info, max_rate_hz, joints.pan, joints.tilt,
        detect.*, focus.*, publish.debug_image, publish.markers, opencv_threads.
    Publishers:
        attention/state (maxim_interfaces/AttentionState, latched), percepts
        (maxim_interfaces/Percept, reliable), attention/debug_image (sensor_msgs/Image, bgr8),
        attention/debug_image/compressed (sensor_msgs/CompressedImage, JPEG: for rviz or
        Foxglove across a network; encoded only while someone subscribes),
        attention/markers (visualization_msgs/MarkerArray),
        diagnostics (diagnostic_msgs/DiagnosticArray, 1 Hz: frames received, processed, fps).
    Subscriptions:
        camera/image_raw (sensor_msgs/Image, sensor QoS), camera/camera_info
        (sensor_msgs/CameraInfo), joint_states (sensor_msgs/JointState).
    Services:
        perception/scene_summary (maxim_interfaces/SceneSummary).
    """

    def __init__(self, **kwargs):
        super().__init__('attention', **kwargs)
        # Bad input: a line per kind per 5 s, with a count.
        self._warn = ThrottledLog(self.get_logger().warning, 5.0)
        self.config = cfg = read_config(declare_table(self, PARAMS))
        if cfg.opencv_threads > 0:
            cv2.setNumThreads(cfg.opencv_threads)
        model = CameraModel(640, 480, math.radians(cfg.hfov_deg))
        self.core = AttentionCore(model, cfg.attention)
        self.gate = PerceptGate(cfg.percept_period_s)
        self.add_post_set_parameters_callback(self._on_params_set)
        self._lock = threading.Lock()       # guards the slots below
        self._core_lock = threading.Lock()  # guards the core (processing vs the service)
        self._latest: Image | None = None
        self._head = (0.0, 0.0)
        self._poses = PoseHistory()
        self.ceiling = FrameCeiling(cfg.max_rate_hz)   # on the frames' stamps
        self._fov_models = FovModels(cfg.hfov_deg)
        self._info_model: CameraModel | None = None
        self.frames_processed = 0
        self.frames_dropped = 0
        self.percepts_published = 0
        self.frames_received = 0
        self._last_frame_at = None      # time.monotonic() of the last frame received
        self.rate = RateMeter()         # frames processed per second

        self.state_pub = self.create_publisher(AttentionState, 'attention/state', LATCHED)
        self.percept_pub = self.create_publisher(Percept, 'percepts', 10)
        self.debug_pub = self.create_publisher(Image, 'attention/debug_image', SENSOR)
        self.debug_jpeg_pub = self.create_publisher(
            CompressedImage, 'attention/debug_image/compressed', SENSOR)
        self.marker_pub = self.create_publisher(MarkerArray, 'attention/markers', 10)
        self.create_subscription(Image, 'camera/image_raw', self._on_image, SENSOR_LATEST)
        self.create_subscription(JointState, 'joint_states', self._on_joints, SENSOR)
        if cfg.use_camera_info:
            self.create_subscription(CameraInfo, 'camera/camera_info', self._on_info, SENSOR)
        self.create_service(SceneSummary, 'perception/scene_summary', self._on_scene_summary)
        self._processing = MutuallyExclusiveCallbackGroup()
        self._wake = self.create_guard_condition(self._process_latest,
                                                 callback_group=self._processing)
        self.diagnostics = Diagnostics(self, 'attention', self.health)

    def health(self) -> Health:
        with self._lock:
            received, dropped, last = (self.frames_received, self.frames_dropped,
                                       self._last_frame_at)
        age = math.inf if last is None else time.monotonic() - last
        return attention_health(self.rate.rate(), received, self.frames_processed, dropped,
                                self.percepts_published, age)

    def _on_params_set(self, params) -> None:
        """Run-time changes (the descriptor's range has already been checked)."""
        for param in params:
            if param.name == 'percept_period_s':
                self.gate.period_s = float(param.value)
                self.get_logger().info(f'percept_period_s is now {param.value:g} s')

    # ---- inputs (cheap: they only store) -------------------------------------------------

    def _on_image(self, msg: Image) -> None:
        with self._lock:
            if self._latest is not None:
                self.frames_dropped += 1
            self._latest = msg
            self.frames_received += 1
            self._last_frame_at = time.monotonic()
        self._wake.trigger()

    def _on_joints(self, msg: JointState) -> None:
        try:
            pan, tilt = joint_state_pose(msg, self.config.pan_joint, self.config.tilt_joint,
                                         self._head)
        except IndexError:
            self._warn('joints', 'joint_states: fewer positions than names; ignored')
            return
        if math.isfinite(pan) and math.isfinite(tilt):
            t = stamp_to_seconds(msg.header.stamp)
            if t <= 0.0:
                t = self.get_clock().now().nanoseconds * 1e-9
            with self._lock:
                self._head = (pan, tilt)
                self._poses.add(t, pan, tilt)

    def _on_info(self, msg: CameraInfo) -> None:
        try:
            model = msg_to_camera_model(msg)
        except CameraModelError as exc:
            self.get_logger().warning(f'camera_info ignored: {exc}', throttle_duration_sec=5.0)
            return
        with self._lock:
            self._info_model = model

    # ---- processing (own callback group) --------------------------------------------------

    def _process_latest(self) -> None:
        with self._lock:
            msg, self._latest = self._latest, None
        if msg is None:
            return
        t = stamp_to_seconds(msg.header.stamp)
        if t <= 0.0:
            t = self.get_clock().now().nanoseconds * 1e-9
        if not self.ceiling.admit(t):    # over the rate ceiling: skip this one
            with self._lock:
                self.frames_dropped += 1
            return
        with self._lock:
            head = self._poses.at(t) or self._head
            info_model = self._info_model
        try:
            frame = msg_to_bgr(msg)
        except ImageConversionError as exc:
            self.get_logger().warning(f'image ignored: {exc}', throttle_duration_sec=5.0)
            return
        with self._core_lock:
            model = fit_model(self.core.camera_model, frame.shape[1], frame.shape[0],
                              info_model, self._fov_models)
            if model is not None:    # CameraInfo's intrinsics, else hfov_deg at its size
                self.core.set_camera_model(model)
            try:
                result = self.core.process(frame, t, head[0], head[1], start_faces=False)
            except (AttentionError, DetectorError, CameraModelError) as exc:
                self._warn('frame', f'frame not processed: {exc}')
                return
            model = self.core.camera_model
        self.frames_processed += 1
        self.rate.tick()
        stamp, frame_id = msg.header.stamp, msg.header.frame_id
        self.state_pub.publish(attention_to_msg(result, stamp, frame_id))
        with self._core_lock:
            self.core.start_faces()
        if self.gate.offer(result.percept, t):
            self.percept_pub.publish(percept_to_msg(result.percept,
                                                    f'vision-{uuid.uuid4().hex[:12]}',
                                                    stamp, frame_id))
            self.percepts_published += 1
        if self.config.debug_image and (self.debug_pub.get_subscription_count()
                                        or self.debug_jpeg_pub.get_subscription_count()):
            debug = self.core.annotate(frame, result)
            if self.debug_pub.get_subscription_count():
                self.debug_pub.publish(image_to_msg(debug, 'bgr8', stamp, frame_id))
            if self.debug_jpeg_pub.get_subscription_count():
                self.debug_jpeg_pub.publish(image_to_compressed(debug, stamp, frame_id))
        if self.config.markers and self.marker_pub.get_subscription_count():
            self.marker_pub.publish(attention_to_markers(result, model, stamp, frame_id))

    # ---- service --------------------------------------------------------------------------

    def _on_scene_summary(self, request, response):
        try:
            with self._core_lock:
                summary = self.core.scene_summary(int(request.top_n),
                                                  bool(request.include_attention))
                last = self.core.last_result
        except AttentionError as exc:
            response.error_code = SceneSummary.Response.ERROR_INVALID_REQUEST
            response.error_msg = str(exc)
            return response
        return scene_summary_to_response(summary, last, request.include_attention, response)

    def destroy_node(self):
        self.core.close()
        return super().destroy_node()


def main(args=None):
    run(AttentionNode, args)
