"""Health of the perception nodes as plain data (no rclpy, no messages).

Each node calls a builder here with the numbers it keeps; maxim_common.diagnostics publishes
the result on `diagnostics` (maxim_common.health says why the judgement is plain code).
"""

from collections import deque
import math
import threading
import time
from typing import Callable

from maxim_common.health import ERROR, Health, not_ready, OK, WARN


class RateMeter:
    """Events per second over the last `window_s` seconds (frames received, processed...).

    The rate is the count of events in the window divided by the window (or by the time since
    the first event, while the meter is younger than the window), so a source that stops shows
    0 within one window rather than its last rate.
    """

    def __init__(self, window_s: float = 5.0, clock: Callable[[], float] = time.monotonic):
        if not window_s > 0:
            raise ValueError(f'window_s must be positive, got {window_s!r}')
        self.window_s = window_s
        self._clock = clock
        self._times: deque = deque()
        self._started = clock()
        self._lock = threading.Lock()   # ticked by a worker thread, read by the timer
        self.count = 0

    def tick(self, n: int = 1) -> None:
        now = self._clock()
        with self._lock:
            self._times.extend([now] * n)
            self.count += n
            self._trim(now)

    def _trim(self, now: float) -> None:
        while self._times and self._times[0] < now - self.window_s:
            self._times.popleft()

    def settled(self) -> bool:
        """The meter has run a whole window: its rate is no start-up estimate."""
        return self._clock() - self._started >= self.window_s

    def rate(self) -> float:
        now = self._clock()
        with self._lock:
            self._trim(now)
            n = len(self._times)
        span = min(self.window_s, now - self._started)
        return n / span if span > 0 else 0.0


def missed_periods(gap_s: float, period_s: float) -> int:
    """How many frame periods went by without a frame between two frames `gap_s` apart
    (a timer that fell behind, a device slower than asked). Half a period of jitter is not a
    miss."""
    if not (gap_s > 0 and period_s > 0):
        return 0
    return max(0, int(gap_s / period_s + 0.5) - 1)


class GapMeter:
    """Frame periods missed while a stream flows (missed_periods between frames): `frame(now)`
    for each frame, `gap()` when the stream stops (a reconnect is no dropped frame)."""

    def __init__(self, period_s: float):
        self.period_s = period_s
        self.dropped = 0
        self._last: float | None = None

    def frame(self, now: float) -> None:
        if self._last is not None:
            self.dropped += missed_periods(now - self._last, self.period_s)
        self._last = now

    def gap(self) -> None:
        self._last = None


def _fmt(x: float) -> str:
    return f'{x:.1f}' if math.isfinite(x) else str(x)


# Camera statuses (maxim_perception.camera.CameraStatus values) and how bad each is.
_CAMERA_LEVEL = {'ok': OK, 'connecting': WARN, 'ended': WARN, 'missing': ERROR,
                 'error': ERROR}


def camera_health(status: str, message: str, source: str, frames: int, fps: float,
                  target_fps: float, dropped: int, attempts: int, failures: int,
                  next_attempt_in_s: float, settled: bool = True) -> Health:
    """A camera: OK while streaming near its rate, WARN when slow (once the rate is
    `settled`: measured over a whole window) or (re)connecting.

    `dropped` counts frame periods in which the camera had no frame to publish while it was
    streaming (the device fell behind the requested rate).
    """
    level = _CAMERA_LEVEL.get(status, ERROR)
    line = f'{status}: {message}'
    if level == OK and settled and fps < 0.5 * target_fps:
        level, line = WARN, f'streaming at {_fmt(fps)} fps of {target_fps:g} requested'
    return Health(level, line, {
        'status': status, 'fps': _fmt(fps), 'target_fps': f'{target_fps:g}',
        'frames': str(frames), 'dropped_frames': str(dropped), 'open_attempts': str(attempts),
        'failures_since_last_frame': str(failures),
        'next_attempt_in_s': f'{next_attempt_in_s:.2f}'}, source)


def topic_camera_health(status: str, message: str, topic: str, frames: int, fps: float,
                        target_fps: float, dropped: int, skipped: int, malformed: int,
                        unsupported: int, publishers: int, info_topic: str, infos: int,
                        info_overdue: bool, settled: bool = True) -> Health:
    """The camera node on the source `topic`: the levels of camera_health (OK streaming,
    WARN waiting or slow, ERROR when nothing came within the timeout), and a WARN while images
    flow but their CameraInfo does not (attention then uses `hfov_deg`).

    `skipped` counts images over the `fps` ceiling (passed over on purpose), `malformed` and
    `unsupported` the images dropped as unreadable; `info_topic` '' means the CameraInfo is
    made from `hfov_deg`.
    """
    level = _CAMERA_LEVEL.get(status, ERROR)
    line = f'{status}: {message}'
    if level == OK and settled and fps < 0.5 * target_fps:
        level, line = WARN, f'{topic}: streaming at {_fmt(fps)} fps of {target_fps:g} expected'
    elif level == OK and info_overdue:
        level, line = WARN, (f'{topic}: streaming, but no camera_info on {info_topic} '
                             '(attention uses hfov_deg)')
    return Health(level, line, {
        'status': status, 'fps': _fmt(fps), 'target_fps': f'{target_fps:g}',
        'frames': str(frames), 'dropped_frames': str(dropped), 'skipped_frames': str(skipped),
        'malformed_frames': str(malformed), 'unsupported_frames': str(unsupported),
        'publishers': str(publishers),
        'camera_info': str(infos) if info_topic else 'from hfov_deg',
        'info_topic': info_topic or 'none'}, f'topic {topic}')


def camera_node_health(topic_camera, camera, fps: float, target_fps: float, settled: bool,
                       dropped: int, publishers: int, last_error: str) -> Health:
    """The camera node, whatever its source: the source topic's `topic_camera` (TopicCamera),
    else the device's `camera` (ReconnectingCamera), else why neither is open (`last_error`:
    the configure failure). `fps` is the rate published; `dropped` and `publishers` are the
    node's counts (the device's missed periods, the topic's publishers)."""
    tc = topic_camera
    if tc is not None:
        return topic_camera_health(
            tc.status.value, tc.message, tc.topic, tc.frames, fps, target_fps, tc.dropped,
            tc.skipped, tc.malformed, tc.unsupported, publishers, tc.info_topic, tc.infos,
            tc.info_overdue(), settled)
    if camera is None:
        if last_error:
            return Health(ERROR, f'not configured: {last_error}', {'state': 'unconfigured'})
        return not_ready('the camera is not open')
    return camera_health(camera.status.value, camera.message, camera.source.describe(),
                         camera.frames, fps, target_fps, dropped, camera.attempts,
                         camera.failures, camera.next_attempt_in, settled)


def sim_head_health(frames: int, fps: float, target_fps: float, render_error: str,
                    command: tuple | None, width: int, height: int,
                    settled: bool = True) -> Health:
    """The simulated head: its frames are its driver; a render error is an ERROR, a rate
    under half the target (once `settled`) a WARN."""
    values = {'driver': 'mujoco', 'fps': _fmt(fps), 'target_fps': f'{target_fps:g}',
              'frames': str(frames), 'size': f'{width}x{height}',
              'command': 'none' if command is None else
              f'{command[0]:.3f},{command[1]:.3f}'}
    if render_error:
        return Health(ERROR, f'render failed: {render_error}', values, 'mujoco')
    if frames == 0:
        return Health(WARN, 'starting: no frame rendered yet', values, 'mujoco')
    if settled and fps < 0.5 * target_fps:
        return Health(WARN, f'rendering at {_fmt(fps)} fps of {target_fps:g}', values, 'mujoco')
    return Health(OK, f'simulating at {_fmt(fps)} fps', values, 'mujoco')


def driver_health(driver: str, ok: bool, error: str, commands_sent: int, mode: str,
                  retry_in_s: float, numb: str = '') -> Health:
    """The head controller's driver: ERROR while it cannot be opened or written. `numb`: why
    the driver cannot feel, when it cannot ('no feedback: movement pain off'), said in every
    state."""
    values = {'driver': driver, 'driver_ok': str(ok).lower(), 'mode': mode,
              'commands_sent': str(commands_sent),
              'movement_pain': 'off' if numb else 'on'}
    tail = f'; {numb}' if numb else ''
    if not ok:
        values['retry_in_s'] = f'{max(0.0, retry_in_s):.2f}'
        return Health(ERROR, f'driver {driver} down: {error or "not opened yet"}{tail}',
                      values, driver)
    return Health(OK, f'driver {driver} ready, {mode}{tail}', values, driver)


def attention_health(fps: float, frames_received: int, frames_processed: int,
                     frames_dropped: int, percepts: int, input_age_s: float) -> Health:
    """Attention: WARN until frames arrive or when they stop (older than 2 s)."""
    values = {'fps': _fmt(fps), 'frames_received': str(frames_received),
              'frames_processed': str(frames_processed),
              'frames_skipped': str(frames_dropped), 'percepts': str(percepts),
              'input_age_s': _fmt(input_age_s)}
    if frames_received == 0:
        return Health(WARN, 'waiting for camera frames', values)
    if input_age_s > 2.0:
        return Health(WARN, f'no frame for {_fmt(input_age_s)} s', values)
    return Health(OK, f'processing at {_fmt(fps)} fps', values)


def hearing_health(source: str, error: str, listening: bool, level_db: float,
                   utterances: int, accepted: int, transcribe_s: float, latency_s: float,
                   voice_error: str = '', model: str = '', ended: bool = False) -> Health:
    """The ears: ERROR with the reason while no audio comes (no microphone, a device that
    went away, a corrupt file, no model), WARN when the voice cannot speak, else OK with the
    device (or a file read to its `ended`), the level and the transcription time."""
    values = {'source': source or 'none', 'level_dbfs': f'{level_db:.1f}',
              'utterances': str(utterances), 'accepted': str(accepted),
              'transcribe_s': f'{transcribe_s:.2f}', 'latency_s': f'{latency_s:.2f}',
              'model': model, 'voice_error': voice_error}
    if error:
        return Health(ERROR, error, values, source)
    if voice_error:
        return Health(WARN, f'the voice cannot speak: {voice_error}', values, source)
    if not listening and ended:
        return Health(OK, f'played to its end: {source}', values, source)
    if not listening:
        return Health(WARN, 'not listening', values, source)
    return Health(OK, f'listening: {source}', values, source)
