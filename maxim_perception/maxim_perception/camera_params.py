"""The camera node's parameters: the table it declares, the frozen config they are read into,
and the source they choose (plain Python, no rclpy: the node resolves topic names and hands
them in).

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
"""

from dataclasses import dataclass
from typing import Callable

from maxim_perception.camera import (camera_info_topic, OpenCVCamera, parse_compressed,
                                     ReconnectingCamera, SOURCES, SyntheticCamera, TopicCamera)

_POSITIVE = (1e-3, 1e6)
_SIZE = (16, 8192)
_DYNAMIC = {'dynamic_typing': True}     # a string or an int (device), a string or a bool

# name: (default, description, (low, high) range or None[, other descriptor fields]), in the
# order the node declares them (maxim_common.params).
PARAMS = {
    'device': ('', "'' -> /dev/video0; an index, a /dev path or a video file", None, _DYNAMIC),
    'source': ('auto', f'Where frames come from: {" | ".join(SOURCES)}', None),
    'width': (640, 'Image width in pixels', _SIZE),
    'height': (480, 'Image height in pixels', _SIZE),
    'fps': (30.0, 'Frame rate (source topic: at most)', _POSITIVE),
    'frame_id': ('camera_optical_frame', 'frame_id of images and info', None),
    'hfov_deg': (60.0, 'Horizontal field of view (degrees)', (1.0, 179.0)),
    'synthetic': (False, 'Render a synthetic test scene', None),
    'reconnect.initial_backoff_s': (0.5, 'First retry delay after a failure', _POSITIVE),
    'reconnect.max_backoff_s': (5.0, 'Longest retry delay', _POSITIVE),
    'reconnect.open_timeout_s': (2.0, 'Budget of one open attempt', _POSITIVE),
    'diagnostics_period_s': (1.0, 'Diagnostics period', _POSITIVE),
    'topic': ('image_raw', "Source topic: the camera driver's image topic", None),
    'compressed': ('auto', 'Source topic: CompressedImage (true), Image (false) or auto (from '
                   'its type or name)', None, _DYNAMIC),
    'info_topic': ('', "Source topic: the driver's CameraInfo ('': beside the image topic; "
                   "'none': made from hfov_deg)", None),
    'topic_timeout_s': (5.0, 'Source topic: no image for this long is an error', _POSITIVE),
}


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


def read_config(v: dict) -> CameraNodeConfig:
    """The config from the declared values by name."""
    return CameraNodeConfig(
        source=str(v['source']), device=str(v['device']), width=v['width'],
        height=v['height'], fps=float(v['fps']), frame_id=v['frame_id'],
        hfov_deg=float(v['hfov_deg']), synthetic=bool(v['synthetic']),
        initial_backoff_s=float(v['reconnect.initial_backoff_s']),
        max_backoff_s=float(v['reconnect.max_backoff_s']),
        open_timeout_s=float(v['reconnect.open_timeout_s']),
        diagnostics_period_s=float(v['diagnostics_period_s']), topic=str(v['topic']),
        compressed=str(v['compressed']), info_topic=str(v['info_topic']),
        topic_timeout_s=float(v['topic_timeout_s']))


def device_camera(cfg: CameraNodeConfig, kind: str) -> ReconnectingCamera:
    """The reconnecting reader of a `kind` source: synthetic, or a device or video file."""
    if kind == 'synthetic':
        source = SyntheticCamera(cfg.width, cfg.height, cfg.fps)
    else:
        source = OpenCVCamera(cfg.device, cfg.width, cfg.height, cfg.fps,
                              open_timeout_s=cfg.open_timeout_s,
                              read_timeout_s=min(cfg.open_timeout_s, 1.0))
    return ReconnectingCamera(source, cfg.initial_backoff_s, cfg.max_backoff_s)


def topic_camera(cfg: CameraNodeConfig, resolve: Callable[[str], str], image_out: str,
                 info_out: str) -> TopicCamera:
    """The source topic from the parameters, with its `compressed` mode (auto, true, false);
    `resolve` is the node's topic name resolution (a RuntimeError on a bad name), `image_out`
    and `info_out` the topics the node publishes. A ValueError is a line for the user."""
    mode = parse_compressed(cfg.compressed)
    try:
        topic = resolve(cfg.topic)
        own = resolve(image_out)
        info = cfg.info_topic.strip()
        info_topic = '' if info.lower() == 'none' else \
            resolve(info or camera_info_topic(cfg.topic))
        own_info = resolve(info_out)
    except RuntimeError as exc:        # rclpy's RCLError: not a valid topic name
        raise ValueError(f'camera topic names: {exc}') from exc
    if topic == own:
        raise ValueError(f'camera.topic {topic} is the topic this node publishes: point it '
                         "to the driver's image topic (a driver that already publishes "
                         f'{own} needs no camera node)')
    if info_topic == own_info:
        raise ValueError(f'camera.info_topic {info_topic} is the topic this node publishes')
    return TopicCamera(topic, cfg.fps, cfg.topic_timeout_s, info_topic, mode=mode)
