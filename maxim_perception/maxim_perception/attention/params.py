"""The attention node's parameters: the table it declares, in its order, and the frozen config
they are read into (plain Python, no rclpy).

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
"""

from dataclasses import dataclass

from maxim_perception.attention.attention import AttentionConfig

_POSITIVE = (1e-3, 1e6)
_UNIT = (0.0, 1.0)

# name: (default, description, (low, high) range or None), declared in this order by
# maxim_common.params; percept_period_s may be set at run time, the others are read once.
PARAMS = {
    'detect.faces': (True, 'Detect faces', None),
    'detect.colors': (True, 'Detect saturated coloured objects', None),
    'detect.motion': (True, 'Detect moving regions', None),
    'detect.motion_method': ('diff', "'diff' or 'mog2'", None),
    'detect.faces_async': (True, 'Faces on their own thread, beside the other detectors',
                           None),
    'detect.faces_period_s': (0.0, 'With faces_async, a frame to the face detector at most '
                              'this often (s; 0: every frame)', (0.0, 60.0)),
    'detect.yunet_path': ('', 'YuNet ONNX model; empty: Haar cascade', None),
    'detect.width': (320, 'Detectors run on a copy this wide', None),
    'focus.min_dwell_s': (1.5, 'Keep a new focus at least this long', (0.0, 600.0)),
    'focus.habituated_novelty': (0.35, 'Novelty below which the focus is given up', _UNIT),
    'focus.switch_margin': (0.1, 'Salience margin a rival needs to take the focus', _UNIT),
    'percept_period_s': (2.0, 'Percepts at most this often (s)', _POSITIVE),
    'hfov_deg': (60.0, 'Horizontal FOV until CameraInfo arrives', (1.0, 179.0)),
    'max_rate_hz': (15.0, 'Processing rate ceiling', _POSITIVE),
    'joints.pan': ('head_pan_joint', 'Pan joint name in joint_states', None),
    'joints.tilt': ('head_tilt_joint', 'Tilt joint name in joint_states', None),
    'use_camera_info': (True, 'Intrinsics from camera/camera_info', None),
    'publish.debug_image': (True, 'Publish attention/debug_image', None),
    'publish.markers': (True, 'Publish attention/markers', None),
    'opencv_threads': (1, 'cv2.setNumThreads; 0: OpenCV default', (0, 256)),
}


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


def read_config(v: dict) -> AttentionNodeConfig:
    """The config from the declared values by name (AttentionConfig checks its own)."""
    attention = AttentionConfig(
        faces=v['detect.faces'], colors=v['detect.colors'], motion=v['detect.motion'],
        motion_method=v['detect.motion_method'], faces_async=v['detect.faces_async'],
        face_period_s=v['detect.faces_period_s'], yunet_path=v['detect.yunet_path'],
        detect_width=v['detect.width'], min_dwell_s=v['focus.min_dwell_s'],
        habituated_novelty=v['focus.habituated_novelty'],
        switch_margin=v['focus.switch_margin'])
    return AttentionNodeConfig(
        percept_period_s=v['percept_period_s'], hfov_deg=v['hfov_deg'],
        max_rate_hz=v['max_rate_hz'], pan_joint=v['joints.pan'], tilt_joint=v['joints.tilt'],
        use_camera_info=v['use_camera_info'], debug_image=v['publish.debug_image'],
        markers=v['publish.markers'], opencv_threads=v['opencv_threads'],
        attention=attention)
