"""The attention node: camera frames in; attention state, percepts, a debug image and rviz
markers out; the scene_summary service for the agent's tool."""

from dataclasses import dataclass
import json
import math
import threading
import time
import uuid

import cv2
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, JointState
from visualization_msgs.msg import MarkerArray

from maxim_common.conversions import stamp_to_seconds
from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health
from maxim_common.lifetime import run
from maxim_common.qos import LATCHED, SENSOR, SENSOR_LATEST
from maxim_common.throttle import LogThrottle
from maxim_interfaces.msg import AttentionState, Percept
from maxim_interfaces.srv import SceneSummary
from maxim_perception.attention.attention import (AttentionConfig, AttentionCore,
                                                  AttentionError, PerceptGate)
from maxim_perception.attention.detectors import DetectorError
from maxim_perception.camera_model import CameraModel, CameraModelError
from maxim_perception.conversions import (attention_to_markers, attention_to_msg,
                                          image_to_compressed, image_to_msg, ImageConversionError,
                                          msg_to_bgr, msg_to_camera_model, percept_to_msg,
                                          target_dict_to_msg)
from maxim_perception.head.pose_history import PoseHistory
from maxim_perception.health import attention_health, RateMeter


@dataclass(frozen=True)
class AttentionNodeConfig:
    percept_period_s: float
    hfov_deg: float
    max_rate_hz: float
    pan_joint: str
    tilt_joint: str
    use_camera_info: bool
    debug_image: bool
    markers: bool
    opencv_threads: int
    attention: AttentionConfig


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

    Parameters:
        percept_period_s (double, 2.0): percepts at most this often, and only when the scene
            changed meaningfully (targets appeared/left, the focus changed). Settable at run
            time (`ros2 param set /attention percept_period_s 5.0`); the others are read once.
        hfov_deg (double, 60.0): horizontal field of view until a CameraInfo arrives.
        use_camera_info (bool, true): take the intrinsics from camera/camera_info.
        max_rate_hz (double, 15.0): processing rate ceiling (on the frames' stamps).
        joints.pan (string, 'head_pan_joint'), joints.tilt (string, 'head_tilt_joint').
        detect.faces, detect.colors, detect.motion (bool, true), detect.motion_method
            (string, 'diff' | 'mog2'), detect.yunet_path (string, ''), detect.width (int, 320),
            detect.faces_async (bool, true): faces on a worker thread (on another core),
            joining the tracking a frame later, so the face cascade does not delay each frame.
        focus.min_dwell_s (double, 1.5), focus.habituated_novelty (double, 0.35),
        focus.switch_margin (double, 0.1).
        publish.debug_image (bool, true), publish.markers (bool, true).
        opencv_threads (int, 1): cv2.setNumThreads for the process; 0 keeps OpenCV's default
            (every core). With one, the face cascade keeps to one core and leaves the others
            to the rest of the graph: on two cores, the cascade's threads delayed the head
            controller's receipt of each state (measured: p95 5.0 ms against 1.3 ms with one
            thread; frame to command p95 11.1 against 8.7-9.8 ms).
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
        self._throttle = LogThrottle(5.0)   # bad input: a line per kind per 5 s, with a count
        self.config = cfg = self._declare()
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
        self._next_due = -math.inf   # frame time from which the next frame may be processed
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

    def _declare(self) -> AttentionNodeConfig:
        def p(name, default, description, **extra):
            return self.declare_parameter(
                name, default, ParameterDescriptor(description=description, **extra)).value

        positive = FloatingPointRange(from_value=1e-3, to_value=1e6, step=0.0)
        unit = FloatingPointRange(from_value=0.0, to_value=1.0, step=0.0)
        attention = AttentionConfig(
            faces=p('detect.faces', True, 'Detect faces'),
            colors=p('detect.colors', True, 'Detect saturated coloured objects'),
            motion=p('detect.motion', True, 'Detect moving regions'),
            motion_method=p('detect.motion_method', 'diff', "'diff' or 'mog2'"),
            faces_async=p('detect.faces_async', True,
                          'Faces on their own thread, beside the other detectors'),
            face_period_s=p('detect.faces_period_s', 0.0,
                            'With faces_async, a frame to the face detector at most this '
                            'often (s; 0: every frame)',
                            floating_point_range=[FloatingPointRange(
                                from_value=0.0, to_value=60.0, step=0.0)]),
            yunet_path=p('detect.yunet_path', '', 'YuNet ONNX model; empty: Haar cascade'),
            detect_width=p('detect.width', 320, 'Detectors run on a copy this wide'),
            min_dwell_s=p('focus.min_dwell_s', 1.5, 'Keep a new focus at least this long',
                          floating_point_range=[FloatingPointRange(
                              from_value=0.0, to_value=600.0, step=0.0)]),
            habituated_novelty=p('focus.habituated_novelty', 0.35,
                                 'Novelty below which the focus is given up',
                                 floating_point_range=[unit]),
            switch_margin=p('focus.switch_margin', 0.1,
                            'Salience margin a rival needs to take the focus',
                            floating_point_range=[unit]),
        )
        return AttentionNodeConfig(
            percept_period_s=p('percept_period_s', 2.0, 'Percepts at most this often (s)',
                               floating_point_range=[positive]),
            hfov_deg=p('hfov_deg', 60.0, 'Horizontal FOV until CameraInfo arrives',
                       floating_point_range=[FloatingPointRange(from_value=1.0,
                                                                to_value=179.0, step=0.0)]),
            max_rate_hz=p('max_rate_hz', 15.0, 'Processing rate ceiling',
                          floating_point_range=[positive]),
            pan_joint=p('joints.pan', 'head_pan_joint', 'Pan joint name in joint_states'),
            tilt_joint=p('joints.tilt', 'head_tilt_joint', 'Tilt joint name in joint_states'),
            use_camera_info=p('use_camera_info', True, 'Intrinsics from camera/camera_info'),
            debug_image=p('publish.debug_image', True, 'Publish attention/debug_image'),
            markers=p('publish.markers', True, 'Publish attention/markers'),
            opencv_threads=p('opencv_threads', 1, 'cv2.setNumThreads; 0: OpenCV default',
                             integer_range=[IntegerRange(from_value=0, to_value=256,
                                                         step=1)]),
            attention=attention,
        )

    # ---- inputs (cheap: they only store) -------------------------------------------------

    def _on_image(self, msg: Image) -> None:
        with self._lock:
            if self._latest is not None:
                self.frames_dropped += 1
            self._latest = msg
            self.frames_received += 1
            self._last_frame_at = time.monotonic()
        self._wake.trigger()

    def _warn(self, kind: str, text: str) -> None:
        line = self._throttle(kind, text)
        if line is not None:
            self.get_logger().warning(line)

    def _on_joints(self, msg: JointState) -> None:
        names = list(msg.name)
        pan, tilt = self._head
        try:
            if self.config.pan_joint in names:
                pan = float(msg.position[names.index(self.config.pan_joint)])
            if self.config.tilt_joint in names:
                tilt = float(msg.position[names.index(self.config.tilt_joint)])
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
        period = 1.0 / self.config.max_rate_hz
        if t < self._next_due - 2.0 * period:    # the clock went back (a restarted sim)
            self._next_due = -math.inf
        if t < self._next_due - 0.1 * period:    # over the rate ceiling: skip this one
            with self._lock:
                self.frames_dropped += 1
            return
        # On schedule (or late by less than a period): the next one is due a period after
        # this one was, so the average rate reaches the ceiling; after a pause, start over.
        if t - self._next_due > period:
            self._next_due = t + period
        else:
            self._next_due += period
        with self._lock:
            head = self._poses.at(t) or self._head
            info_model = self._info_model
        try:
            frame = msg_to_bgr(msg)
        except ImageConversionError as exc:
            self.get_logger().warning(f'image ignored: {exc}', throttle_duration_sec=5.0)
            return
        with self._core_lock:
            self._fit_model(frame, info_model)
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

    def _fit_model(self, frame, info_model: CameraModel | None) -> None:
        """Use CameraInfo's intrinsics when they match the frame, else the configured FOV."""
        h, w = frame.shape[:2]
        cm = self.core.camera_model
        if info_model is not None and (info_model.width, info_model.height) == (w, h):
            if info_model.intrinsics != cm.intrinsics or (cm.width, cm.height) != (w, h):
                self.core.set_camera_model(info_model)
        elif (cm.width, cm.height) != (w, h):
            self.core.set_camera_model(CameraModel(w, h, math.radians(self.config.hfov_deg)))

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
        response.available = bool(summary['available'])
        response.narrative = summary['narrative']
        response.result_json = json.dumps(summary)
        if not response.available:
            response.error_code = SceneSummary.Response.ERROR_UNAVAILABLE
            response.error_msg = 'no camera frame processed yet'
            return response
        response.targets = [target_dict_to_msg(d) for d in summary['targets']]
        if request.include_attention and last is not None:
            response.attention = attention_to_msg(last)
        response.error_code = SceneSummary.Response.ERROR_NONE
        return response

    def destroy_node(self):
        self.core.close()
        return super().destroy_node()


def main(args=None):
    run(AttentionNode, args)
