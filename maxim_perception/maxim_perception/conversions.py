"""Message <-> core conversions of maxim_perception (the only module outside nodes/ that knows
message types; no rclpy here).

Images go through numpy buffers (np.frombuffer / reshape / tobytes), never per-pixel loops.
"""

import array
import json

from builtin_interfaces.msg import Duration as DurationMsg, Time as TimeMsg
import cv2
from geometry_msgs.msg import Point
import numpy as np
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

from maxim_common.conversions import joint_values
from maxim_interfaces.msg import (AttentionState, Detection, HeadGoal, HeadState, PainSignal,
                                  Percept, Utterance)
from maxim_perception.attention.attention import (AttentionResult, MODE_IDLE, MODE_SCAN,
                                                  MODE_TRACK, PerceptSummary, Target)
from maxim_perception.attention.detectors import KIND_COLOR, KIND_FACE, KIND_MOTION
from maxim_perception.camera_model import CameraModel
from maxim_perception.head.control import HeadGoalSpec, HeadStatus, PainEvent, TargetView
from maxim_perception.head.ros2_control import ControllerCommand, FORWARD_POSITION

# ==== camera and attention ====================================================================


class ImageConversionError(ValueError):
    """An Image message or array that cannot be converted (encoding, size, step)."""


class UnsupportedEncoding(ImageConversionError):
    """An encoding (or a compressed format) this package does not read."""


class MalformedImage(ImageConversionError):
    """An image whose bytes do not hold what its header says (size, step, length), or a
    compressed image that does not decode."""


# encoding -> (channels, numpy dtype). The YUV 4:2:2 encodings are two bytes a pixel.
_ENCODINGS = {
    'bgr8': (3, np.uint8), 'rgb8': (3, np.uint8), 'bgra8': (4, np.uint8),
    'rgba8': (4, np.uint8), 'mono8': (1, np.uint8), '8UC1': (1, np.uint8),
    '8UC3': (3, np.uint8), 'mono16': (1, np.uint16), '16UC1': (1, np.uint16),
    'yuv422': (2, np.uint8), 'uyvy': (2, np.uint8), 'yuv422_yuy2': (2, np.uint8),
    'yuyv': (2, np.uint8),
}

# YUV 4:2:2 byte orders as sensor_msgs/image_encodings names them: `yuv422` (and `uyvy`) is
# U Y0 V Y1, `yuv422_yuy2` (and `yuyv`) is Y0 U Y1 V; OpenCV converts both (BT.601).
_YUV422_TO_BGR = {'yuv422': cv2.COLOR_YUV2BGR_UYVY, 'uyvy': cv2.COLOR_YUV2BGR_UYVY,
                  'yuv422_yuy2': cv2.COLOR_YUV2BGR_YUY2,
                  'yuyv': cv2.COLOR_YUV2BGR_YUY2}

# What the attention pipeline reads from camera/image_raw (msg_to_bgr): a camera driver's
# images in these are passed on by the camera node untouched.
PIPELINE_ENCODINGS = ('bgr8', 'rgb8', 'mono8', 'bgra8', 'rgba8')
YUV422_ENCODINGS = tuple(_YUV422_TO_BGR)
# What the camera node takes from a driver's topic (YUV 4:2:2 it converts to bgr8).
CAMERA_ENCODINGS = PIPELINE_ENCODINGS + YUV422_ENCODINGS


def _unsupported(encoding: str) -> UnsupportedEncoding:
    return UnsupportedEncoding(
        f'image encoding {encoding!r} is not supported (supported: '
        f'{", ".join(CAMERA_ENCODINGS)}); set the camera driver to one of them or use its '
        'compressed (JPEG/PNG) topic')


def _byte_data(arr: np.ndarray) -> array.array:
    """An Image's data field from an array in one copy (bytes would take two: tobytes,
    then the message's own array.array)."""
    data = array.array('B')
    data.frombytes(np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data)
    return data


def time_msg(seconds: float) -> TimeMsg:
    sec = int(np.floor(seconds))
    return TimeMsg(sec=sec, nanosec=min(999_999_999, int(round((seconds - sec) * 1e9))))


def stamp_error(stamp: TimeMsg) -> str:
    """Why a header stamp is no time at all ('' when it is one): a negative second or a
    nanosecond field past 999,999,999 (rclpy's Time.from_msg raises on both)."""
    if stamp.sec < 0:
        return f'negative stamp ({stamp.sec} s)'
    if stamp.nanosec >= 1_000_000_000:
        return f'stamp nanosec {stamp.nanosec} >= 1e9'
    return ''


def image_to_msg(pixels: np.ndarray, encoding: str = 'bgr8', stamp: TimeMsg | None = None,
                 frame_id: str = '', step: int | None = None) -> Image:
    """An Image from an HxW or HxWxC array (one copy).

    `step` (bytes a row, at least width x pixel size) pads each row with zeros, as drivers
    that align rows do; None: rows are packed.
    """
    if encoding not in _ENCODINGS:
        raise UnsupportedEncoding(f'unsupported encoding {encoding!r}; '
                                  f'supported: {sorted(_ENCODINGS)}')
    channels, dtype = _ENCODINGS[encoding]
    arr = np.asarray(pixels)
    if arr.dtype != dtype:
        raise ImageConversionError(f'{encoding} needs dtype {np.dtype(dtype)}, got {arr.dtype}')
    shape_ok = (arr.ndim == 2 and channels == 1) or (arr.ndim == 3 and arr.shape[2] == channels)
    if not shape_ok:
        raise ImageConversionError(f'{encoding} needs {channels} channel(s), got {arr.shape}')
    msg = Image()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.height, msg.width = int(arr.shape[0]), int(arr.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = 0
    row = int(arr.shape[1]) * channels * np.dtype(dtype).itemsize
    msg.step = row if step is None else int(step)
    if msg.step < row:
        raise ImageConversionError(f'step {msg.step} is under a row of {row} bytes')
    little = np.ascontiguousarray(arr).astype(np.dtype(dtype).newbyteorder('<'), copy=False)
    if msg.step == row:
        msg.data = _byte_data(little)
    else:
        rows = np.zeros((msg.height, msg.step), np.uint8)
        rows[:, :row] = little.view(np.uint8).reshape(msg.height, row)
        msg.data = _byte_data(rows)
    return msg


def msg_to_image(msg: Image) -> np.ndarray:
    """An HxWxC (or HxW for one channel) array viewing the message's buffer (read-only).

    Rows padded beyond width (step > width * pixel size) are cropped without a copy.
    """
    if msg.encoding not in _ENCODINGS:
        raise _unsupported(msg.encoding)
    channels, dtype = _ENCODINGS[msg.encoding]
    dt = np.dtype(dtype).newbyteorder('>' if msg.is_bigendian else '<')
    row = msg.width * channels * dt.itemsize
    if msg.height == 0 or msg.width == 0:
        raise MalformedImage(f'empty image {msg.width}x{msg.height}')
    if msg.step < row or len(msg.data) < msg.step * msg.height:
        raise MalformedImage(f'{msg.width}x{msg.height} {msg.encoding}: step {msg.step}'
                             f' and {len(msg.data)} bytes do not hold the image')
    buf = np.frombuffer(msg.data, dtype=np.uint8, count=msg.step * msg.height)
    rows = buf.reshape(msg.height, msg.step)[:, :row]
    arr = rows.view(dt) if rows.flags['C_CONTIGUOUS'] else \
        np.ascontiguousarray(rows).view(dt)
    return arr.reshape(msg.height, msg.width) if channels == 1 else \
        arr.reshape(msg.height, msg.width, channels)


def msg_to_bgr(msg: Image) -> np.ndarray:
    """An HxWx3 uint8 BGR array for attention, whatever 8-bit colour encoding came in."""
    arr = msg_to_image(msg)
    enc = msg.encoding
    if enc in ('bgr8', '8UC3'):
        return arr
    if enc == 'rgb8':
        return cv2.cvtColor(arr, cv2.COLOR_RGB2BGR)
    if enc == 'bgra8':
        return cv2.cvtColor(arr, cv2.COLOR_BGRA2BGR)
    if enc == 'rgba8':
        return cv2.cvtColor(arr, cv2.COLOR_RGBA2BGR)
    if enc in ('mono8', '8UC1'):
        return cv2.cvtColor(arr, cv2.COLOR_GRAY2BGR)
    raise UnsupportedEncoding(f'{enc} is not an 8-bit colour or grey encoding')


def yuv422_to_bgr(msg: Image) -> np.ndarray:
    """The HxWx3 BGR array of a YUV 4:2:2 Image (either byte order; rows may be padded)."""
    if msg.encoding not in _YUV422_TO_BGR:
        raise UnsupportedEncoding(f'{msg.encoding!r} is not YUV 4:2:2')
    if msg.width % 2:
        raise MalformedImage(f'{msg.encoding} needs an even width (two pixels share U and V),'
                             f' got {msg.width}')
    return cv2.cvtColor(msg_to_image(msg), _YUV422_TO_BGR[msg.encoding])


def yuv422_to_image_msg(msg: Image) -> Image:
    """A bgr8 Image of a YUV 4:2:2 one, with its header (stamp, frame_id)."""
    out = image_to_msg(yuv422_to_bgr(msg), 'bgr8')
    out.header = msg.header
    return out


def check_image(msg: Image) -> None:
    """Raise UnsupportedEncoding unless the encoding is one the camera node takes
    (CAMERA_ENCODINGS), MalformedImage unless the data is exactly `step` x `height` bytes
    with `step` holding a row (the sensor_msgs/Image contract) and the stamp is a time.

    A cheap check (no pixel is touched) for images passed on as they came.
    """
    if msg.encoding not in CAMERA_ENCODINGS:
        raise _unsupported(msg.encoding)
    channels, dtype = _ENCODINGS[msg.encoding]
    row = msg.width * channels * np.dtype(dtype).itemsize
    size = f'{msg.width}x{msg.height} {msg.encoding}'
    if msg.width == 0 or msg.height == 0:
        raise MalformedImage(f'empty image {size}')
    if msg.step < row:
        raise MalformedImage(f'{size}: step {msg.step} is under a row of {row} bytes')
    if len(msg.data) != msg.step * msg.height:
        raise MalformedImage(f'{size}: {len(msg.data)} bytes of data, step x height is '
                             f'{msg.step * msg.height}')
    if msg.encoding in _YUV422_TO_BGR and msg.width % 2:
        raise MalformedImage(f'{size}: YUV 4:2:2 needs an even width')
    bad_stamp = stamp_error(msg.header.stamp)
    if bad_stamp:
        raise MalformedImage(f'{size}: {bad_stamp}')


def image_to_compressed(array: np.ndarray, stamp: TimeMsg | None = None, frame_id: str = '',
                        quality: int = 80) -> CompressedImage:
    """A JPEG CompressedImage of a BGR (or grey) array, as image_transport's `compressed`
    plugin sends it (format 'bgr8; jpeg compressed bgr8'): a 640x480 debug view in tens of KB,
    for rviz or Foxglove across a network."""
    arr = np.asarray(array)
    if arr.dtype != np.uint8 or not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] == 3)):
        raise ImageConversionError(f'JPEG needs an 8-bit BGR or grey image, got {arr.dtype} '
                                   f'{arr.shape}')
    ok, buf = cv2.imencode('.jpg', arr, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
    if not ok:
        raise ImageConversionError(f'JPEG encoding of a {arr.shape} image failed')
    msg = CompressedImage()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.format = 'bgr8; jpeg compressed bgr8' if arr.ndim == 3 else 'mono8; jpeg compressed mono8'
    msg.data = buf.tobytes()
    return msg


# Video codecs of image_transport plugins (a frame of theora or h264 is no still image).
_VIDEO_CODECS = ('theora', 'h264', 'h265', 'hevc', 'av1', 'vp8', 'vp9', 'ffmpeg')


def compressed_to_bgr(msg: CompressedImage) -> np.ndarray:
    """The BGR array of a JPEG or PNG CompressedImage (a grey one comes out as BGR too).

    The formats of image_transport's plugins: `jpeg`, `png`, `rgb8; jpeg compressed bgr8`...
    (OpenCV reads the codec from the bytes); a depth image (`compressedDepth`) or a video
    codec (`theora`, `h264`...) is UnsupportedEncoding, bytes that do not decode
    MalformedImage.
    """
    fmt = msg.format.lower()
    if 'compresseddepth' in fmt or any(codec in fmt for codec in _VIDEO_CODECS):
        raise UnsupportedEncoding(f'CompressedImage format {msg.format!r} is not supported: '
                                  'JPEG or PNG colour images only')
    if len(msg.data) == 0:
        raise MalformedImage(f'CompressedImage ({msg.format!r}) has no data')
    arr = cv2.imdecode(np.frombuffer(msg.data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if arr is None:
        raise MalformedImage(f'CompressedImage ({msg.format!r}, {len(msg.data)} bytes) does '
                             'not decode as JPEG or PNG')
    return arr


def compressed_to_image_msg(msg: CompressedImage) -> Image:
    """A bgr8 Image of a JPEG or PNG CompressedImage, with its header (stamp, frame_id)."""
    bad_stamp = stamp_error(msg.header.stamp)
    if bad_stamp:
        raise MalformedImage(f'CompressedImage: {bad_stamp}')
    out = image_to_msg(compressed_to_bgr(msg), 'bgr8')
    out.header = msg.header
    return out


def image_to_pass_on(msg, compressed: bool, admit) -> Image | None:
    """The Image the camera node passes on for a driver's Image or CompressedImage (`msg`),
    or None when `admit()` says to skip it (over the rate): an Image in an encoding attention
    reads is the same message (no copy), YUV 4:2:2 and a compressed image are converted once
    into bgr8. A raw image is checked before it is paced, a compressed one decoded only when
    admitted. UnsupportedEncoding or MalformedImage: the image is dropped."""
    if compressed:
        return compressed_to_image_msg(msg) if admit() else None
    check_image(msg)
    if not admit():
        return None
    return yuv422_to_image_msg(msg) if msg.encoding in YUV422_ENCODINGS else msg


def camera_info_to_msg(model: CameraModel, frame_id: str = '',
                       stamp: TimeMsg | None = None) -> CameraInfo:
    info = model.camera_info_dict(frame_id)
    msg = CameraInfo()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.width, msg.height = info['width'], info['height']
    msg.distortion_model = info['distortion_model']
    msg.d, msg.k, msg.r, msg.p = info['d'], info['k'], info['r'], info['p']
    return msg


def camera_info_dict_to_msg(info: dict, frame_id: str, stamp: TimeMsg) -> CameraInfo:
    """A CameraInfo from its fields as a dict (width, height, distortion_model, d, k, r, p:
    the simulated head's camera_info())."""
    msg = CameraInfo()
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    msg.width, msg.height = info['width'], info['height']
    msg.distortion_model = info['distortion_model']
    msg.d, msg.k, msg.r, msg.p = info['d'], info['k'], info['r'], info['p']
    return msg


def msg_to_camera_model(msg: CameraInfo) -> CameraModel:
    """The pinhole model of a CameraInfo (its K; distortion is ignored)."""
    return CameraModel.from_k(int(msg.width), int(msg.height), list(msg.k))


_KIND_TO_MSG = {KIND_FACE: Detection.KIND_FACE, KIND_COLOR: Detection.KIND_COLOR_BLOB,
                KIND_MOTION: Detection.KIND_MOTION}
_MODE_TO_MSG = {MODE_IDLE: AttentionState.MODE_IDLE, MODE_TRACK: AttentionState.MODE_TRACK,
                MODE_SCAN: AttentionState.MODE_SCAN}


def target_to_msg(tg: Target) -> Detection:
    x, y, w, h = tg.bbox
    return Detection(track_id=int(tg.track_id), kind=_KIND_TO_MSG.get(tg.kind,
                                                                      Detection.KIND_UNKNOWN),
                     label=tg.label, confidence=float(tg.confidence), x=float(x), y=float(y),
                     width=float(w), height=float(h), pan=float(tg.pan), tilt=float(tg.tilt),
                     novelty=float(tg.novelty), salience=float(tg.salience),
                     age_s=float(tg.age_s), dwell_s=float(tg.dwell_s))


def target_dict_to_msg(d: dict) -> Detection:
    """A Detection from scene_summary()'s plain target dict."""
    x, y, w, h = d['bbox']
    return Detection(track_id=int(d['track_id']),
                     kind=_KIND_TO_MSG.get(d['kind'], Detection.KIND_UNKNOWN),
                     label=d['label'], confidence=float(d['confidence']), x=float(x),
                     y=float(y), width=float(w), height=float(h), pan=float(d['pan']),
                     tilt=float(d['tilt']), novelty=float(d['novelty']),
                     salience=float(d['salience']), age_s=float(d['age_s']),
                     dwell_s=float(d['dwell_s']))


def attention_to_msg(result: AttentionResult, stamp: TimeMsg | None = None,
                     frame_id: str = '') -> AttentionState:
    msg = AttentionState()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.mode = _MODE_TO_MSG[result.mode]
    msg.targets = [target_to_msg(tg) for tg in result.targets]
    if result.focus is not None:
        msg.has_focus = True
        msg.focus_track_id = int(result.focus.track_id)
        msg.focus_pan, msg.focus_tilt = float(result.focus.pan), float(result.focus.tilt)
        msg.dwell_s = float(result.focus_dwell_s)
    if result.suggestion is not None:
        msg.has_suggestion = True
        msg.suggested_next_track_id = int(result.suggestion.track_id)
        msg.suggestion_reason = result.suggestion_reason
    return msg


def percept_to_msg(summary: PerceptSummary, percept_id: str, stamp: TimeMsg | None = None,
                   frame_id: str = '', source_name: str = 'camera') -> Percept:
    msg = Percept()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.percept_id = percept_id
    msg.source = Percept.SOURCE_VISION
    msg.source_name = source_name
    msg.objects = [target_to_msg(tg) for tg in summary.objects]
    msg.people = [target_to_msg(tg) for tg in summary.people]
    msg.narrative = summary.narrative
    msg.novelty = float(summary.novelty)
    msg.salience = float(summary.salience)
    return msg


def scene_summary_to_response(summary: dict, last: AttentionResult | None,
                              include_attention: bool, response):
    """AttentionCore.scene_summary (and the last result, for the attention state) as the
    SceneSummary response: ERROR_UNAVAILABLE before the first frame."""
    response.available = bool(summary['available'])
    response.narrative = summary['narrative']
    response.result_json = json.dumps(summary)
    if not response.available:
        response.error_code = response.ERROR_UNAVAILABLE
        response.error_msg = 'no camera frame processed yet'
        return response
    response.targets = [target_dict_to_msg(d) for d in summary['targets']]
    if include_attention and last is not None:
        response.attention = attention_to_msg(last)
    response.error_code = response.ERROR_NONE
    return response


def joint_state_pose(msg: JointState, pan_joint: str, tilt_joint: str,
                     previous: tuple[float, float]) -> tuple[float, float]:
    """The head's (pan, tilt) in a JointState, by joint name; a joint it does not carry keeps
    its `previous` value. IndexError: fewer positions than names."""
    names = list(msg.name)
    pan, tilt = previous
    if pan_joint in names:
        pan = float(msg.position[names.index(pan_joint)])
    if tilt_joint in names:
        tilt = float(msg.position[names.index(tilt_joint)])
    return pan, tilt


def heard_to_msg(heard, percept_id: str = '', stamp: TimeMsg | None = None) -> Utterance:
    """A hearing.listening.Heard as the Utterance message."""
    msg = Utterance(text=heard.text, confidence=float(heard.confidence),
                    no_speech=float(heard.no_speech), accepted=bool(heard.accepted),
                    addressed=bool(heard.addressed), reason=heard.reason,
                    barge_in=bool(heard.barge_in), duration_s=float(heard.duration_s),
                    transcribe_s=float(heard.transcribe_s), latency_s=float(heard.latency_s),
                    prompt=heard.prompt, percept_id=percept_id)
    if stamp is not None:
        msg.header.stamp = stamp
    return msg


def heard_to_percept(text: str, percept_id: str, stamp: TimeMsg | None = None) -> Percept:
    """What a person said aloud as the Percept the agent hears: the same form as a typed
    line (a person speaking is always salient and new), from source 'voice'."""
    msg = Percept(percept_id=percept_id, source=Percept.SOURCE_USER, source_name='voice',
                  narrative=f'The user says: "{text}"', salience=1.0, novelty=1.0)
    if stamp is not None:
        msg.header.stamp = stamp
    return msg


def detection_labels(msg: Percept) -> list[str]:
    """The labels of what a vision percept holds, people first."""
    return [d.label for d in list(msg.people) + list(msg.objects) if d.label]


def attention_to_markers(result: AttentionResult, model: CameraModel,
                         stamp: TimeMsg | None = None, frame_id: str = '',
                         distance_m: float = 1.0) -> MarkerArray:
    """An arrow from the camera along each target's ray (optical frame) and a text label.

    The first marker deletes the previous set, so lost targets vanish from rviz.
    """
    out = MarkerArray()
    clear = Marker(action=Marker.DELETEALL)
    clear.header.frame_id = frame_id
    out.markers.append(clear)
    focus_id = result.focus.track_id if result.focus else None
    for tg in result.targets:
        u, v = tg.center
        rx, ry, rz = model.ray_optical(u, v)
        tip = Point(x=rx * distance_m, y=ry * distance_m, z=rz * distance_m)
        is_focus = tg.track_id == focus_id
        colour = (1.0, 1.0, 0.0) if is_focus else (0.0, 0.8, 0.0)
        for ns, mtype in (('attention_rays', Marker.ARROW),
                          ('attention_labels', Marker.TEXT_VIEW_FACING)):
            m = Marker(ns=ns, id=int(tg.track_id), type=mtype, action=Marker.ADD)
            if stamp is not None:
                m.header.stamp = stamp
            m.header.frame_id = frame_id
            m.pose.orientation.w = 1.0
            m.color.r, m.color.g, m.color.b = colour
            m.color.a = 1.0
            if mtype == Marker.ARROW:
                m.points = [Point(), tip]
                m.scale.x, m.scale.y, m.scale.z = (0.02, 0.04, 0.06) if is_focus else \
                    (0.01, 0.02, 0.04)
            else:
                m.pose.position = Point(x=tip.x, y=tip.y - 0.05, z=tip.z)
                m.scale.z = 0.06
                m.text = f'#{tg.track_id} {tg.label} n{tg.novelty:.2f}'
            out.markers.append(m)
    return out

# ==== head control ============================================================================


def controller_command_type(interface: str):
    """The message type a ros2_control controller of `interface` takes its commands in."""
    return Float64MultiArray if interface == FORWARD_POSITION else JointTrajectory


def controller_command_to_msg(command: ControllerCommand, interface: str):
    """A ros2_control command as its controller takes it: std_msgs/Float64MultiArray for a
    forward_position controller, trajectory_msgs/JointTrajectory (one point, stamp unset: start
    now) for a joint_trajectory controller."""
    if interface == FORWARD_POSITION:
        return Float64MultiArray(data=[float(p) for p in command.positions])
    seconds = command.time_from_start_s or 0.0
    sec = int(seconds)
    point = JointTrajectoryPoint(
        positions=[float(p) for p in command.positions],
        time_from_start=DurationMsg(sec=sec, nanosec=min(999_999_999,
                                                         int(round((seconds - sec) * 1e9)))))
    return JointTrajectory(joint_names=list(command.joint_names), points=[point])


def msg_to_head_goal(msg: HeadGoal, stamp: float | None) -> HeadGoalSpec:
    """A HeadGoal as the core's goal, `stamp` on the core's clock (None: now)."""
    return HeadGoalSpec(mode=msg.mode, goal_id=msg.goal_id, requested_by=msg.requested_by,
                        pan=msg.pan, tilt=msg.tilt, track_id=msg.track_id,
                        target_label=msg.target_label, speed=float(msg.speed),
                        duration_s=float(msg.duration_s), stamp=stamp)


def attention_to_targets(msg: AttentionState) -> list[TargetView]:
    """The targets of an AttentionState as the head controller sees them."""
    return [TargetView(track_id=d.track_id, pan=float(d.pan), tilt=float(d.tilt), label=d.label,
                       salience=float(d.salience), novelty=float(d.novelty))
            for d in msg.targets]


def head_status_to_msg(status: HeadStatus, driver: str, ok: bool, error: str,
                       stamp: TimeMsg) -> HeadState:
    """The controller's status and its driver's as the HeadState message."""
    msg = HeadState()
    msg.header.stamp = stamp
    msg.mode = int(status.mode)
    msg.reflex_active = status.reflex_active
    msg.active_goal_id = status.active_goal_id
    msg.pan, msg.tilt = status.pan, status.tilt
    msg.pan_command, msg.tilt_command = status.pan_command, status.tilt_command
    msg.pan_velocity, msg.tilt_velocity = status.pan_velocity, status.tilt_velocity
    msg.goal_reached = status.goal_reached
    msg.tracking_error_deg = float(status.tracking_error_deg)
    msg.driver, msg.driver_ok, msg.error_msg = driver, ok, error
    return msg


def pain_to_msg(pain: PainEvent, stamp: TimeMsg) -> PainSignal:
    """A body pain event as the PainSignal message."""
    msg = PainSignal()
    msg.header.stamp = stamp
    msg.pain_type = int(pain.pain_type)
    msg.type_name = pain.type_name
    msg.intensity = float(pain.intensity)
    msg.source, msg.context, msg.description = pain.source, pain.context, pain.message
    msg.repeat_count = pain.repeat_count
    return msg


def joint_state_to_msg(names, positions, velocities, stamp: TimeMsg) -> JointState:
    """A JointState of `names` (velocities None: none)."""
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(names)
    msg.position = [float(p) for p in positions]
    msg.velocity = [float(v) for v in velocities] if velocities is not None else []
    return msg


def msg_to_joints(msg: JointState, joints) -> tuple[tuple, tuple | None] | None:
    """The positions and velocities (None: absent) of `joints` by name, in that order; None
    if a joint's position is absent."""
    pos = joint_values(msg.name, msg.position, joints)
    if pos is None:
        return None
    return pos, joint_values(msg.name, msg.velocity, joints)
