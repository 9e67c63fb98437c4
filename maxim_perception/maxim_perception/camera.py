"""Camera sources (a V4L2 device, a video file, a synthetic scene) and a reconnecting reader;
and the bookkeeping of the source `topic` (frames from a camera driver already in the ROS
graph), which the camera node feeds with what its subscriptions receive.

The node only ever calls `ReconnectingCamera.poll()`: a missing or unplugged device, a video
file that ended or was deleted, or a read error becomes a `CameraStatus` with a message and a
retry scheduled with exponential backoff (capped), never an exception out of the loop. Each
attempt has a bounded budget (OpenCV's open/read timeouts), so a dead device cannot hang it.

`SyntheticCamera` renders real pixels with OpenCV drawing (the image_tools "burger mode"):
coloured moving shapes and a face-like drawing that OpenCV's frontal-face Haar cascade detects.
Frames are BGR uint8, as OpenCV produces them.
"""

from dataclasses import dataclass
import enum
import math
import os
import time
from typing import Callable, Protocol

import cv2
import numpy as np

from maxim_perception.health import missed_periods


class CameraError(RuntimeError):
    """A camera could not be opened or read (the reconnecting reader turns it into a status)."""


class CameraEnded(CameraError):
    """A finite source (a video file) has no more frames."""


class CameraMissing(CameraError):
    """The device or file is not there (never plugged in, unplugged, deleted)."""


class CameraStatus(enum.Enum):
    OK = 'ok'                  # frames are flowing
    CONNECTING = 'connecting'  # never opened yet
    MISSING = 'missing'        # the device or file is not there (unplugged, deleted)
    ENDED = 'ended'            # a video file reached its end; it will be reopened
    ERROR = 'error'            # opened but not delivering frames


class CameraSource(Protocol):
    """What a camera is to the reader: open, read BGR frames, close."""

    width: int
    height: int
    fps: float

    def open(self) -> None:
        """Acquire the device; raises CameraError (or a subclass) on failure."""

    def read(self) -> np.ndarray:
        """The next HxWx3 uint8 BGR frame; raises CameraEnded at the end, CameraError else."""

    def close(self) -> None:
        """Release the device (idempotent)."""

    def describe(self) -> str:
        """A short human-readable name of the source."""


# ---- OpenCV devices and files ----------------------------------------------------------------

def parse_device(device: str | int) -> str | int:
    """'' -> /dev/video0; '2' or 2 -> index 2; anything else is a path or a video file."""
    if isinstance(device, int):
        if device < 0:
            raise ValueError(f'camera index must be >= 0, got {device}')
        return device
    text = str(device).strip()
    if not text:
        return '/dev/video0'
    if text.isdigit():
        return int(text)
    return text


def is_device(device: str | int) -> bool:
    """A V4L2 device (an index or a /dev path) rather than a video file."""
    parsed = parse_device(device)
    return isinstance(parsed, int) or parsed.startswith('/dev/')


# The camera node's `source` values; 'auto' is synthetic, device or video from the other
# parameters (`synthetic`, `device`), as before `source` existed.
SOURCES = ('auto', 'device', 'video', 'synthetic', 'topic')


def resolve_source(source: str, synthetic: bool, device: str | int) -> str:
    """The source to open: 'device', 'video', 'synthetic' or 'topic'. ValueError (a line
    for the user) for an unknown source, or a device where a video file is asked and the
    other way round."""
    source = str(source).strip().lower()
    if source not in SOURCES:
        raise ValueError(f'unknown camera source {source!r}; one of {", ".join(SOURCES)}')
    if source == 'auto':
        return 'synthetic' if synthetic else ('device' if is_device(device) else 'video')
    if source == 'device' and not is_device(device):
        raise ValueError(f'camera source device needs a V4L2 device in `device` (an index or a '
                         f'/dev path), not {device!r}: a video file is source video')
    if source == 'video' and is_device(device):
        raise ValueError(f'camera source video needs a video file in `device`, not '
                         f'{parse_device(device)!r}')
    return source


class OpenCVCamera:
    """A V4L2 device (index or /dev path) or a video file read with cv2.VideoCapture.

    Frames are resized to width x height when the device delivers another size (many webcams
    ignore the requested size). `open_timeout_s` / `read_timeout_s` bound each attempt.
    """

    def __init__(self, device: str | int = '', width: int = 640, height: int = 480,
                 fps: float = 30.0, open_timeout_s: float = 2.0,
                 read_timeout_s: float = 1.0) -> None:
        if width <= 0 or height <= 0 or not fps > 0:
            raise ValueError(f'invalid camera size/rate {width}x{height}@{fps}')
        self.device = parse_device(device)
        self.width, self.height, self.fps = int(width), int(height), float(fps)
        self.open_timeout_s, self.read_timeout_s = float(open_timeout_s), float(read_timeout_s)
        self._cap: cv2.VideoCapture | None = None

    @property
    def is_device(self) -> bool:
        return is_device(self.device)

    def describe(self) -> str:
        kind = 'device' if self.is_device else 'video file'
        return f'{kind} {self.device}'

    def open(self) -> None:
        self.close()
        if isinstance(self.device, str) and not os.path.exists(self.device):
            raise CameraMissing(f'{self.describe()} does not exist')
        if isinstance(self.device, int) and os.path.isdir('/dev') \
                and not os.path.exists(f'/dev/video{self.device}'):
            raise CameraMissing(f'{self.describe()} (/dev/video{self.device}) does not exist')
        params = [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, int(self.open_timeout_s * 1000),
                  cv2.CAP_PROP_READ_TIMEOUT_MSEC, int(self.read_timeout_s * 1000)]
        api = cv2.CAP_V4L2 if self.is_device else cv2.CAP_ANY
        cap = cv2.VideoCapture(self.device, api, params)
        if not cap.isOpened():
            cap.release()
            raise CameraError(f'{self.describe()} could not be opened')
        if self.is_device:
            cap.set(cv2.CAP_PROP_FRAME_WIDTH, self.width)
            cap.set(cv2.CAP_PROP_FRAME_HEIGHT, self.height)
            cap.set(cv2.CAP_PROP_FPS, self.fps)
        self._cap = cap

    def read(self) -> np.ndarray:
        if self._cap is None:
            raise CameraError(f'{self.describe()} is not open')
        ok, frame = self._cap.read()
        if not ok or frame is None:
            if not self.is_device:
                if not os.path.exists(str(self.device)):
                    raise CameraMissing(f'{self.describe()} disappeared')
                raise CameraEnded(f'{self.describe()} ended')
            if isinstance(self.device, str) and not os.path.exists(self.device):
                raise CameraMissing(f'{self.describe()} disappeared (unplugged?)')
            raise CameraError(f'{self.describe()} delivered no frame')
        if frame.ndim == 2:
            frame = cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
        if frame.shape[1] != self.width or frame.shape[0] != self.height:
            frame = cv2.resize(frame, (self.width, self.height), interpolation=cv2.INTER_AREA)
        return frame

    def close(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None


# ---- synthetic scene -------------------------------------------------------------------------

SKIN_BGR = (140, 170, 210)
DARK_BGR = (40, 45, 60)


def draw_face(img: np.ndarray, cx: int, cy: int, half_height: int) -> tuple[int, int, int, int]:
    """Draw a face-like cartoon (skin oval, hair, brows, eyes, nose, mouth); returns its bbox.

    Drawn so OpenCV's haarcascade_frontalface_default fires on it over a darker background
    (dark eye band over brighter cheeks, a bright nose bridge): measured for half heights
    30..120 px.
    """
    s = int(half_height)
    cv2.ellipse(img, (cx, cy), (int(s * 0.75), s), 0, 0, 360, SKIN_BGR, -1)
    cv2.ellipse(img, (cx, cy - int(s * 0.6)), (int(s * 0.8), int(s * 0.45)), 0, 180, 360,
                DARK_BGR, -1)
    ex, ey = int(s * 0.32), int(s * 0.1)
    for side in (-1, 1):
        cv2.ellipse(img, (cx + side * ex, cy - ey - int(s * 0.2)),
                    (int(s * 0.18), int(s * 0.05)), 0, 0, 360, DARK_BGR, -1)
        cv2.ellipse(img, (cx + side * ex, cy - ey), (int(s * 0.15), int(s * 0.08)), 0, 0, 360,
                    DARK_BGR, -1)
    cv2.ellipse(img, (cx, cy + int(s * 0.2)), (int(s * 0.08), int(s * 0.05)), 0, 0, 360,
                (100, 120, 160), -1)
    cv2.ellipse(img, (cx, cy + int(s * 0.5)), (int(s * 0.28), int(s * 0.07)), 0, 0, 360,
                (60, 60, 140), -1)
    w = int(s * 0.8)
    return cx - w, cy - int(s * 1.05), 2 * w, int(s * 2.05)


@dataclass(frozen=True)
class SceneObject:
    """Ground truth of one synthetic object in a rendered frame (for tests)."""

    name: str
    kind: str       # 'face' or 'color'
    color: str      # colour name for 'color' objects, '' for the face
    bbox: tuple[int, int, int, int]


class SyntheticCamera:
    """A rendered scene at width x height: a red disc moving left-right, a blue square on a
    circle, a still green triangle and a face-like drawing drifting slowly, on a dark, lightly
    textured background. Frame n shows time n / fps, so runs are reproducible.

    `objects` picks which of 'red', 'blue', 'green', 'face' are drawn.
    """

    ALL_OBJECTS = ('red', 'blue', 'green', 'face')

    def __init__(self, width: int = 640, height: int = 480, fps: float = 30.0,
                 objects: tuple[str, ...] = ALL_OBJECTS, seed: int = 7,
                 noise: float = 3.0) -> None:
        if width < 64 or height < 48 or not fps > 0:
            raise ValueError(f'invalid synthetic camera {width}x{height}@{fps}')
        unknown = set(objects) - set(self.ALL_OBJECTS)
        if unknown:
            raise ValueError(f'unknown synthetic objects {sorted(unknown)}; '
                             f'known: {self.ALL_OBJECTS}')
        self.width, self.height, self.fps = int(width), int(height), float(fps)
        self.objects = tuple(objects)
        rng = np.random.default_rng(seed)
        yy, xx = np.mgrid[0:self.height, 0:self.width]
        base = 55 + 25 * (yy / self.height) + 10 * (xx / self.width)
        bg = np.repeat(base[:, :, None], 3, axis=2)
        bg += rng.normal(0.0, noise, size=bg.shape)
        self._background = np.clip(bg, 0, 255).astype(np.uint8)
        self._index = 0
        self._open = False
        self.last_objects: list[SceneObject] = []

    def describe(self) -> str:
        return f'synthetic scene {self.width}x{self.height}'

    def open(self) -> None:
        self._open = True

    def close(self) -> None:
        self._open = False

    def read(self) -> np.ndarray:
        if not self._open:
            raise CameraError('synthetic camera is not open')
        frame = self.render(self._index / self.fps)
        self._index += 1
        return frame

    def render(self, t: float) -> np.ndarray:
        """The scene at time t (seconds); also sets `last_objects` (ground truth)."""
        img = self._background.copy()
        w, h = self.width, self.height
        k = min(w / 640.0, h / 480.0)
        objs: list[SceneObject] = []
        if 'face' in self.objects:
            cx = int(w * 0.25 + w * 0.04 * math.sin(0.3 * t))
            cy = int(h * 0.42)
            bbox = draw_face(img, cx, cy, int(70 * k))
            objs.append(SceneObject('face', 'face', '', bbox))
        if 'green' in self.objects:
            cx, cy, r = int(w * 0.86), int(h * 0.8), int(40 * k)
            pts = np.array([[cx, cy - r], [cx - r, cy + r], [cx + r, cy + r]], np.int32)
            cv2.fillPoly(img, [pts], (40, 200, 40))
            objs.append(SceneObject('green', 'color', 'green', (cx - r, cy - r, 2 * r, 2 * r)))
        if 'blue' in self.objects:
            cx = int(w * 0.7 + w * 0.08 * math.cos(0.8 * t))
            cy = int(h * 0.3 + h * 0.08 * math.sin(0.8 * t))
            r = int(28 * k)
            cv2.rectangle(img, (cx - r, cy - r), (cx + r, cy + r), (200, 60, 30), -1)
            objs.append(SceneObject('blue', 'color', 'blue', (cx - r, cy - r, 2 * r, 2 * r)))
        if 'red' in self.objects:
            cx = int(w * 0.5 + w * 0.25 * math.sin(1.2 * t))
            cy, r = int(h * 0.65), int(30 * k)
            cv2.circle(img, (cx, cy), r, (30, 30, 210), -1)
            objs.append(SceneObject('red', 'color', 'red', (cx - r, cy - r, 2 * r, 2 * r)))
        self.last_objects = objs
        return img


# ---- the reconnecting reader -----------------------------------------------------------------

@dataclass(frozen=True)
class PollResult:
    """One poll of the camera: a frame when status is OK, else why there is none."""

    frame: np.ndarray | None
    status: CameraStatus
    message: str
    changed: bool  # the status differs from the previous poll (log it once)


class ReconnectingCamera:
    """Reads a CameraSource, reopening it with exponential backoff when it fails.

    Backoff starts at `initial_backoff_s`, doubles per failed attempt up to `max_backoff_s`,
    and resets after a frame is read. It never gives up (a robot's camera may be plugged in
    later), but each attempt is bounded by the source's own timeouts and retries are spaced,
    so the cost of a missing camera is small and constant.
    """

    def __init__(self, source: CameraSource, initial_backoff_s: float = 0.5,
                 max_backoff_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not (0 < initial_backoff_s <= max_backoff_s):
            raise ValueError(f'need 0 < initial_backoff_s ({initial_backoff_s}) <= '
                             f'max_backoff_s ({max_backoff_s})')
        self.source = source
        self.initial_backoff_s, self.max_backoff_s = initial_backoff_s, max_backoff_s
        self._clock = clock
        self.status = CameraStatus.CONNECTING
        self.message = f'{source.describe()}: not opened yet'
        self._opened = False
        self._backoff = initial_backoff_s
        self._next_attempt = -math.inf
        self.attempts = 0           # open attempts so far
        self.failures = 0           # failed attempts/reads since the last good frame
        self.frames = 0             # frames delivered
        self.last_frame_time: float | None = None

    @property
    def next_attempt_in(self) -> float:
        return max(0.0, self._next_attempt - self._clock())

    def _fail(self, status: CameraStatus, message: str) -> PollResult:
        self.source.close()
        self._opened = False
        self.failures += 1
        now = self._clock()
        self._next_attempt = now + self._backoff
        message = f'{message}; retry in {self._backoff:.1f} s'
        self._backoff = min(self.max_backoff_s, self._backoff * 2.0)
        changed = status != self.status
        self.status, self.message = status, message
        return PollResult(None, status, message, changed)

    def poll(self) -> PollResult:
        """A frame if one is available; otherwise the status and, when due, one reopen attempt."""
        if not self._opened:
            if self._clock() < self._next_attempt:
                return PollResult(None, self.status, self.message, False)
            self.attempts += 1
            try:
                self.source.open()
            except CameraMissing as exc:
                return self._fail(CameraStatus.MISSING, str(exc))
            except CameraError as exc:
                return self._fail(CameraStatus.ERROR, str(exc))
            self._opened = True
        try:
            frame = self.source.read()
        except CameraEnded as exc:
            return self._fail(CameraStatus.ENDED, str(exc))
        except CameraMissing as exc:
            return self._fail(CameraStatus.MISSING, str(exc))
        except CameraError as exc:
            return self._fail(CameraStatus.ERROR, str(exc))
        changed = self.status != CameraStatus.OK
        self.status = CameraStatus.OK
        self.message = f'{self.source.describe()}: streaming'
        self._backoff = self.initial_backoff_s
        self.failures = 0
        self.frames += 1
        self.last_frame_time = self._clock()
        return PollResult(frame, CameraStatus.OK, self.message, changed)

    def close(self) -> None:
        self.source.close()
        self._opened = False


# ---- frames from a ROS topic (the source `topic`) --------------------------------------------

IMAGE_TYPE = 'sensor_msgs/msg/Image'
COMPRESSED_TYPE = 'sensor_msgs/msg/CompressedImage'


def camera_info_topic(image_topic: str) -> str:
    """The CameraInfo topic beside an image topic, by image_transport's rule: the last name
    replaced by `camera_info` (`/cam/image_raw` -> `/cam/camera_info`; a transport's
    sub-topic, `/cam/image_raw/compressed`, goes with its base topic)."""
    topic = image_topic.rstrip('/')
    if topic.endswith('/compressed'):
        topic = topic[:-len('/compressed')]
    head, sep, _ = topic.rpartition('/')
    return f'{head}{sep}camera_info'


def parse_compressed(value: str | bool) -> str:
    """The `compressed` parameter as 'auto', 'true' or 'false' (a YAML bool or a string)."""
    text = str(value).strip().lower()
    if text not in ('auto', 'true', 'false'):
        raise ValueError(f'camera compressed must be auto, true or false, not {value!r}')
    return text


def choose_compressed(mode: str, topic: str, types: tuple[str, ...] = ()) -> bool:
    """Whether to subscribe `topic` as CompressedImage: as `mode` says when it is 'true' or
    'false'; with 'auto', the type the graph gives the topic when it is one of the two, else
    image_transport's naming (a topic named `.../compressed` is JPEG or PNG)."""
    if mode != 'auto':
        return mode == 'true'
    kinds = set(types) & {IMAGE_TYPE, COMPRESSED_TYPE}
    if len(kinds) == 1:
        return COMPRESSED_TYPE in kinds
    name = topic.rstrip('/')
    return name == 'compressed' or name.endswith('/compressed')


class FramePacer:
    """At most `rate_hz` frames a second on average, counted on the frames' own stamps: a
    token bucket that fills at the rate and holds `burst` frames. Frames that come faster are
    skipped, evenly (a 60 fps driver into 30 passes every other frame); a driver at the rate
    loses none however its stamps jitter, as long as the jitter spans under a period (a
    bucket of 2; a fixed schedule from the first frame would lose a frame whenever a stamp
    came half a period early against it). A stamp that goes back more than two periods (a
    bag replayed from the start, a restarted simulator) starts the count over.
    """

    def __init__(self, rate_hz: float, burst: float = 2.0) -> None:
        if not rate_hz > 0 or not burst >= 1:
            raise ValueError(f'need rate_hz > 0 and burst >= 1, got {rate_hz!r}, {burst!r}')
        self.period_s = 1.0 / float(rate_hz)
        self.burst = float(burst)
        self._tokens = self.burst
        self._last: float | None = None

    def reset(self) -> None:
        self._tokens = self.burst
        self._last = None

    def admit(self, t: float) -> bool:
        """True when a frame stamped `t` (seconds) is within the rate; False: skip it."""
        if self._last is not None and t < self._last - 2.0 * self.period_s:
            self.reset()
        if self._last is None:
            self._last = t
        elif t > self._last:
            self._tokens = min(self.burst, self._tokens + (t - self._last) / self.period_s)
            self._last = t
        if self._tokens >= 1.0 - 1e-6:
            self._tokens -= 1.0
            return True
        return False


class TopicCamera:
    """The source `topic`: images come from a camera driver already in the ROS graph
    (usb_cam, v4l2_camera, a RealSense, a Gazebo bridge) and the camera node passes them on.

    Bookkeeping only; the node handles the messages. For each image that arrives the node
    asks `pace(stamp)` (within the `fps` ceiling?), then reports `delivered()` or
    `rejected(kind, reason)`; `info()` counts CameraInfo messages. `judge()` turns the numbers
    and what the graph says of the topic into a CameraStatus and the line a person needs:
    nothing publishes the topic, something does but no image came (its type, its QoS), every
    image was rejected (and why), images stopped. Frames missed while streaming count in
    `dropped` as the device source counts them (frame periods with no frame).

    What the camera node does with them: the images go on to camera/image_raw with their stamp
    and frame_id. An Image in an encoding attention reads (bgr8, rgb8, mono8, bgra8, rgba8) is
    passed on as it came, the same message, rows padded or not; YUV 4:2:2 (yuv422/uyvy,
    yuv422_yuy2/yuyv) is converted once into bgr8, and so is a JPEG or PNG CompressedImage
    (conversions.image_to_pass_on). Images faster than `fps` are skipped evenly (on their
    stamps), as the device source reads at `fps`; a malformed image (data that does not hold
    width x height at its step) is dropped, counted and logged (throttled), an unsupported
    encoding likewise with a one-line error. The driver's CameraInfo is passed on to
    camera/camera_info; without one (`info_topic: none`) it is made from `hfov_deg`. A topic
    with no image within `timeout_s` is an ERROR on diagnostics that says why (nothing
    publishes it, the wrong type, every image rejected); the node keeps waiting.
    """

    def __init__(self, topic: str, fps: float, timeout_s: float, info_topic: str = '',
                 clock: Callable[[], float] = time.monotonic, mode: str = 'auto') -> None:
        if not timeout_s > 0:
            raise ValueError(f'timeout_s must be positive, got {timeout_s!r}')
        self.topic, self.info_topic = topic, info_topic
        self.mode = mode             # subscribe as CompressedImage: auto, true or false
        self.compressed = False      # ... as chosen (choose)
        self.fps, self.timeout_s = float(fps), float(timeout_s)
        self.pacer = FramePacer(fps)
        self._clock = clock
        self.status = CameraStatus.CONNECTING
        self.message = f'{topic}: not subscribed (inactive)'
        self._since: float | None = None      # when the subscription began
        self.frames = 0          # images passed on
        self.skipped = 0         # over the fps ceiling
        self.dropped = 0         # frame periods without a frame while streaming
        self.malformed = 0       # data that does not hold the image, undecodable bytes
        self.unsupported = 0     # encodings or formats the pipeline does not read
        self.infos = 0           # CameraInfo messages passed on
        self.last_rejection = ''
        self.last_frame_time: float | None = None
        self._last_rejection_time: float | None = None

    def describe(self) -> str:
        return f'topic {self.topic}'

    def choose(self, types: tuple[str, ...]) -> bool:
        """Subscribe as CompressedImage? By `mode` and the topic's `types` in the graph
        (choose_compressed); kept in `compressed`."""
        self.compressed = choose_compressed(self.mode, self.topic, types)
        return self.compressed

    def retype(self, types: tuple[str, ...]) -> bool:
        """The driver came up after the subscription and its type decides otherwise (auto,
        before any image): subscribe again, as `choose(types)` says."""
        return self.mode == 'auto' and self.frames == 0 and \
            choose_compressed('auto', self.topic, types) != self.compressed

    @property
    def expected(self) -> str:
        """The message type subscribed."""
        return COMPRESSED_TYPE if self.compressed else IMAGE_TYPE

    @property
    def active(self) -> bool:
        return self._since is not None

    def start(self) -> None:
        """The subscription began: the wait for the first image starts now."""
        self._since = self._clock()
        self.last_frame_time = None
        self.pacer.reset()
        self.status = CameraStatus.CONNECTING
        self.message = f'waiting for the first image on {self.topic}'

    def stop(self) -> None:
        self._since = None
        self.status = CameraStatus.CONNECTING
        self.message = f'{self.topic}: not subscribed (inactive)'

    def pace(self, stamp_s: float) -> bool:
        """An image came, stamped `stamp_s` (<= 0: no stamp, its arrival counts): True to
        pass it on, False (counted in `skipped`) when it comes faster than `fps`."""
        t = stamp_s if stamp_s > 0 else self._clock()
        if self.pacer.admit(t):
            return True
        self.skipped += 1
        return False

    def delivered(self) -> None:
        now = self._clock()
        if self.last_frame_time is not None:
            self.dropped += missed_periods(now - self.last_frame_time, 1.0 / self.fps)
        self.last_frame_time = now
        self.frames += 1

    def rejected(self, kind: str, reason: str) -> None:
        """An image dropped: kind 'malformed' or 'unsupported', with the one-line reason."""
        if kind == 'unsupported':
            self.unsupported += 1
        else:
            self.malformed += 1
        self.last_rejection = reason
        self._last_rejection_time = self._clock()

    def info(self) -> None:
        self.infos += 1

    def info_overdue(self) -> bool:
        """Images flow but no CameraInfo came on `info_topic` within the timeout."""
        return bool(self.info_topic) and self.infos == 0 and self.frames > 0 and \
            self._since is not None and self._clock() - self._since > self.timeout_s

    def judge(self, publishers: int, types: tuple[str, ...] = (),
              expected: str = IMAGE_TYPE) -> bool:
        """Set `status` and `message` from the images so far and the graph (`publishers` of
        the topic, its `types`, the type subscribed); True when the status changed."""
        before = self.status
        self.status, self.message = self._judge(publishers, tuple(types), expected)
        return self.status != before

    def _judge(self, publishers: int, types: tuple[str, ...],
               expected: str) -> tuple[CameraStatus, str]:
        topic = self.topic
        if self._since is None:
            return CameraStatus.CONNECTING, f'{topic}: not subscribed (inactive)'
        now = self._clock()
        last = self.last_frame_time
        quiet = now - (self._since if last is None else last)
        if quiet <= self.timeout_s:
            if last is None:
                return (CameraStatus.CONNECTING, f'waiting for the first image on {topic} '
                        f'({publishers} publisher{"s" if publishers != 1 else ""})')
            return CameraStatus.OK, f'{topic}: streaming'
        what = (f'no image on {topic} in {quiet:.1f} s' if last is None else
                f'no image on {topic} for {quiet:.1f} s (after {self.frames} frames)')
        if publishers == 0:
            if last is None:
                return (CameraStatus.MISSING, f'{what}: nothing publishes it (is the camera '
                        'driver running, and is camera.topic its image topic? '
                        '`ros2 topic list -t`)')
            return CameraStatus.MISSING, f'{what}: its publisher is gone'
        if types and expected not in types:
            return (CameraStatus.ERROR, f'{what}: it carries {", ".join(types)}, the camera '
                    f'node takes {expected} (set camera.compressed)')
        rejected_since = self._last_rejection_time is not None and (
            last is None or self._last_rejection_time > last)
        if rejected_since:
            return CameraStatus.ERROR, f'{what} usable; the last rejected: {self.last_rejection}'
        nodes = f'{publishers} node publishes' if publishers == 1 else \
            f'{publishers} nodes publish'
        return (CameraStatus.ERROR, f'{what} although {nodes} it: is the driver streaming? '
                f'(`ros2 topic hz {topic}`)')
