"""Attention: from camera frames to tracked targets, a focus, a suggested next target and a
percept the agent can read.

`AttentionCore.process(frame, t, head_pan, head_tilt)` runs the detectors, the tracker and the
novelty model on one BGR frame and decides where the gaze should rest. The focus is kept for
at least `min_dwell_s` (no thrashing), then given up when the focus has habituated or another
target is clearly more salient. Angles follow camera_model's convention (REP-103: positive pan
looks left, positive tilt looks down); each target carries the absolute head pan/tilt that
would centre it.
"""

from dataclasses import asdict, dataclass, field, replace
import math
import threading

import cv2
import numpy as np

from maxim_perception.attention.detectors import (ColorDetector, DetectorError, downscaled,
                                                  FaceDetector, KIND_FACE, merge_motion,
                                                  MotionDetector, RawDetection)
from maxim_perception.attention.novelty import (NoveltyConfig, NoveltyModel, salience,
                                                SalienceWeights)
from maxim_perception.attention.tracker import Track, Tracker, TrackerConfig
from maxim_perception.camera_model import CameraModel

MODE_IDLE = 'idle'
MODE_TRACK = 'track'
MODE_SCAN = 'scan'


class AttentionError(ValueError):
    """Bad input to attention (a frame of the wrong shape, a non-finite angle or time)."""


@dataclass(frozen=True)
class AttentionConfig:
    faces: bool = True
    colors: bool = True
    motion: bool = True
    motion_method: str = 'diff'         # 'diff' or 'mog2'
    yunet_path: str = ''                # a YuNet ONNX file: faces by YuNet instead of Haar
    # Faces on a worker thread, off the per-frame path: the face cascade is the costliest
    # detector (~2/3 of a 640x480 frame's time), and run beside colours and motion on a second
    # core it no longer delays every frame's result; its faces join the tracking a frame later.
    faces_async: bool = False
    # With faces_async, a frame goes to the face worker at most this often (frame time, s;
    # 0: every frame the worker is free for). Faces found persist in the tracker between
    # results (tracker.max_age_s), and on two cores shared with the model the cascade at
    # every frame took a quarter of a core (docs/ARCHITECTURE.md, "The model first").
    face_period_s: float = 0.0
    detect_width: int = 320             # detectors run on a copy this wide
    min_dwell_s: float = 1.5            # keep a new focus at least this long
    habituated_novelty: float = 0.35    # below this, the focus is "habituated": look elsewhere
    switch_margin: float = 0.1          # a rival must beat the focus salience by this much
    scan_threshold_rad: float = 0.09    # focus further than this from the centre: MODE_SCAN
    ego_motion_rad: float = 0.004       # head moved more than this: motion detection paused
    min_speed_frac: float = 0.03        # "moving" needs motion and this many widths per second
    max_targets: int = 20
    tracker: TrackerConfig = field(default_factory=TrackerConfig)
    novelty: NoveltyConfig = field(default_factory=NoveltyConfig)
    weights: SalienceWeights = field(default_factory=SalienceWeights)

    def __post_init__(self) -> None:
        if self.min_dwell_s < 0 or not 0 <= self.habituated_novelty <= 1 \
                or self.switch_margin < 0 or self.max_targets < 1 or self.detect_width < 32 \
                or not self.face_period_s >= 0:
            raise ValueError(f'invalid attention config {self}')


@dataclass(frozen=True)
class Target:
    """A tracked target as attention reports it (maps onto maxim_interfaces/Detection)."""

    track_id: int
    kind: str                 # 'face', 'color' or 'motion'
    label: str
    bbox: tuple[float, float, float, float]  # x, y, width, height in pixels
    confidence: float
    pan: float                # absolute head pan (rad) that centres it
    tilt: float               # absolute head tilt (rad) that centres it
    novelty: float
    salience: float
    age_s: float
    dwell_s: float
    moving: bool

    @property
    def center(self) -> tuple[float, float]:
        return self.bbox[0] + self.bbox[2] / 2.0, self.bbox[1] + self.bbox[3] / 2.0

    @property
    def is_person(self) -> bool:
        return self.kind == KIND_FACE


@dataclass(frozen=True)
class PerceptSummary:
    """What the agent should hear about the scene (maps onto maxim_interfaces/Percept)."""

    objects: tuple[Target, ...]   # non-people, most salient first
    people: tuple[Target, ...]    # faces, most salient first
    narrative: str
    novelty: float
    salience: float
    signature: tuple              # equal signatures: nothing meaningful changed


@dataclass(frozen=True)
class AttentionResult:
    t: float
    width: int
    height: int
    head_pan: float
    head_tilt: float
    targets: tuple[Target, ...]       # most salient first
    focus: Target | None
    focus_dwell_s: float              # seconds on the current focus
    suggestion: Target | None
    suggestion_reason: str
    mode: str                         # MODE_IDLE, MODE_TRACK or MODE_SCAN
    percept: PerceptSummary


def _direction_words(dpan: float, dtilt: float) -> str:
    horiz = 'left' if dpan > 0.1 else 'right' if dpan < -0.1 else ''
    vert = 'below' if dtilt > 0.1 else 'above' if dtilt < -0.1 else ''
    if horiz and vert:
        return f'{vert} to my {horiz}'
    if horiz:
        return f'to my {horiz}'
    if vert:
        return f'{vert} me'
    return 'straight ahead'


def _article(label: str) -> str:
    return f'a {label}' if label[:1] not in 'aeiou' else f'an {label}'


class PerceptGate:
    """Rate limit for percepts: publish when the scene changed meaningfully (another
    signature than the last published one), at most once per `period_s`. A change that
    arrives during the quiet period is published when it ends, if it still holds."""

    def __init__(self, period_s: float = 2.0) -> None:
        if not (math.isfinite(period_s) and period_s >= 0):
            raise ValueError(f'period_s must be >= 0, got {period_s}')
        self.period_s = period_s
        self._last_sig: tuple | None = None
        self._last_t = -math.inf

    def offer(self, summary: PerceptSummary, t: float) -> bool:
        if summary.signature == self._last_sig or t - self._last_t < self.period_s:
            return False
        self._last_sig, self._last_t = summary.signature, t
        return True


class FaceWorker:
    """Runs a face detector on a thread: `submit()` the newest frame, `take()` the newest
    finished result once. Frames submitted while the detector is busy replace each other (only
    the newest waits), so the worker never builds a backlog. OpenCV releases the GIL while it
    detects, so this runs beside the caller on another core."""

    def __init__(self, detector: FaceDetector) -> None:
        self.detector = detector
        self._cond = threading.Condition()
        self._pending: tuple | None = None    # (frame, t, head_pan, head_tilt)
        self._result: tuple | None = None     # (detections, t, head_pan, head_tilt)
        self._closed = False
        self._busy = False
        self.errors = 0
        self._thread = threading.Thread(target=self._run, name='attention-faces', daemon=True)
        self._thread.start()

    def submit(self, frame: np.ndarray, t: float, head_pan: float, head_tilt: float) -> None:
        with self._cond:
            self._pending = (frame, t, head_pan, head_tilt)
            self._cond.notify()

    def take(self) -> tuple | None:
        """(detections, frame time, head pan, head tilt) of the newest result, or None."""
        with self._cond:
            out, self._result = self._result, None
        return out

    def wait_idle(self, timeout_s: float = 5.0) -> bool:
        """Block until the submitted frame is done (tests); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and not self._busy,
                                       timeout_s)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None or self._closed)
                if self._closed:
                    return
                (frame, t, pan, tilt), self._pending = self._pending, None
                self._busy = True
            try:
                dets = self.detector.detect(frame)
            except DetectorError:
                dets = None
            with self._cond:
                self._busy = False
                if dets is None:
                    self.errors += 1
                else:
                    self._result = (dets, t, pan, tilt)
                self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=5.0)


class AttentionCore:
    """Detectors + tracker + novelty + focus selection on BGR frames; see the module docstring.

    With `faces_async`, faces run on a FaceWorker thread; call `close()` when done.
    """

    def __init__(self, camera_model: CameraModel, config: AttentionConfig | None = None) -> None:
        self.config = cfg = config or AttentionConfig()
        self.camera_model = camera_model
        self.faces = FaceDetector(yunet_path=cfg.yunet_path,
                                  detect_width=cfg.detect_width) if cfg.faces else None
        self.face_worker = FaceWorker(self.faces) if self.faces and cfg.faces_async else None
        self._faces_started_t: float | None = None   # frame time last sent to the worker
        self._unsearched: frozenset = frozenset()     # kinds not looked for in this frame
        self.colors = ColorDetector(detect_width=cfg.detect_width) if cfg.colors else None
        self.motion = MotionDetector(method=cfg.motion_method) if cfg.motion else None
        self.tracker = Tracker(cfg.tracker)
        self.novelty = NoveltyModel(cfg.novelty)
        self._focus_id: int | None = None
        self._focus_dwell = 0.0
        self._last_t: float | None = None
        self._last_head: tuple[float, float] | None = None
        self.last_result: AttentionResult | None = None
        self._face_job: tuple | None = None     # (frame, t, pan, tilt) for the face worker

    def set_camera_model(self, camera_model: CameraModel) -> None:
        """New intrinsics (e.g. from CameraInfo); tracks restart when the image size changes."""
        if (camera_model.width, camera_model.height) != (self.camera_model.width,
                                                         self.camera_model.height):
            self.tracker.reset()
            if self.motion:
                self.motion.reset()
        self.camera_model = camera_model

    # ---- per frame --------------------------------------------------------------------

    def close(self) -> None:
        """Stop the face worker thread, if any."""
        if self.face_worker is not None:
            self.face_worker.close()

    def detect(self, frame: np.ndarray, head_moved: bool, head_pan: float = 0.0,
               head_tilt: float = 0.0, t: float = 0.0) -> list[RawDetection]:
        dets: list[RawDetection] = []
        self._unsearched = frozenset()
        if self.face_worker is not None:
            # The newest faces found (on an earlier frame), moved by how far the head turned
            # since; this frame goes to the worker once its result is out (start_faces()).
            # A frame with no new result is one faces were not looked for: their tracks are
            # not missed (the tracker's `unsearched`).
            found = self._earlier_faces(head_pan, head_tilt)
            if found is None:
                self._unsearched = frozenset({KIND_FACE})
            else:
                dets.extend(found)
            self._face_job = (frame, t, head_pan, head_tilt)
        elif self.faces:
            dets.extend(self.faces.detect(frame))
        # Colours and motion share one downscaled copy (motion shrinks it further): resizing
        # a 640x480 frame straight to motion's 160 columns costs 4x the 320-column copy.
        small, back = downscaled(frame, self.config.detect_width)

        def full_size(found: list[RawDetection]) -> list[RawDetection]:
            if back == 1.0:
                return found
            return [replace(d, bbox=tuple(v * back for v in d.bbox)) for d in found]

        if self.colors:
            dets.extend(full_size(self.colors.detect(small)))
        if self.motion:
            if head_moved:
                self.motion.reset()
            else:
                dets = merge_motion(dets, full_size(self.motion.detect(small)))
        return dets

    def process(self, frame: np.ndarray, t: float, head_pan: float = 0.0,
                head_tilt: float = 0.0, start_faces: bool = True) -> AttentionResult:
        """One frame at time t (seconds, any monotonic origin) with the head at these angles.

        With `faces_async`, the frame goes to the face worker after its result is computed
        (`start_faces=False`: when the caller calls `start_faces()`, e.g. after publishing the
        result). Started before, the cascade's threads take the cores from this frame's own
        detectors: measured on 640x480 frames at 30 fps on two cores, a frame's p95 went from
        2.0 ms to 6.2 ms.
        """
        cm = self.camera_model
        if not isinstance(frame, np.ndarray) or frame.ndim != 3 or frame.shape[2] != 3 \
                or frame.dtype != np.uint8:
            raise AttentionError(f'expected an HxWx3 uint8 BGR frame, got '
                                 f'{getattr(frame, "shape", type(frame).__name__)}')
        if frame.shape[1] != cm.width or frame.shape[0] != cm.height:
            raise AttentionError(f'frame is {frame.shape[1]}x{frame.shape[0]} but the camera '
                                 f'model is {cm.width}x{cm.height}')
        if not all(math.isfinite(v) for v in (t, head_pan, head_tilt)):
            raise AttentionError(f'non-finite time or head angles: t={t} pan={head_pan} '
                                 f'tilt={head_tilt}')
        dt = 0.0 if self._last_t is None else max(0.0, t - self._last_t)
        self._last_t = t if self._last_t is None else max(t, self._last_t)

        head_moved = False
        if self._last_head is not None:
            dpan, dtilt = head_pan - self._last_head[0], head_tilt - self._last_head[1]
            head_moved = max(abs(dpan), abs(dtilt)) > self.config.ego_motion_rad
            if dpan or dtilt:
                # The head turned: everything in the image slid the other way.
                fx, fy = cm.intrinsics.fx, cm.intrinsics.fy
                self.tracker.shift(fx * math.tan(dpan), -fy * math.tan(dtilt))
        self._last_head = (head_pan, head_tilt)

        dets = self.detect(frame, head_moved, head_pan, head_tilt, t)
        tracks = self.tracker.update(dets, t, self._unsearched)
        tracks = tracks[:self.config.max_targets * 2]
        ids = {tr.track_id for tr in tracks}
        if self._focus_id not in ids:
            self._focus_id, self._focus_dwell = None, 0.0
        novelty = self.novelty.update({tr.track_id: tr.label for tr in tracks}, self._focus_id,
                                      t)
        if self._focus_id is not None:
            self._focus_dwell += dt
            focus_track = self.tracker.get(self._focus_id)
            focus_track.dwell_s += dt
        targets = sorted((self._target(tr, novelty[tr.track_id], t, head_pan, head_tilt)
                          for tr in tracks), key=lambda x: (-x.salience, x.track_id))
        targets = targets[:self.config.max_targets]
        focus, suggestion, reason = self._choose(targets)
        mode = MODE_IDLE
        if focus is not None:
            off = math.hypot(focus.pan - head_pan, focus.tilt - head_tilt)
            mode = MODE_SCAN if off > self.config.scan_threshold_rad else MODE_TRACK
        percept = self._percept(targets, focus, suggestion, reason, head_pan, head_tilt)
        result = AttentionResult(t, cm.width, cm.height, head_pan, head_tilt, tuple(targets),
                                 focus, self._focus_dwell, suggestion, reason, mode, percept)
        self.last_result = result
        if start_faces:
            self.start_faces()
        return result

    def start_faces(self) -> None:
        """Hand the last processed frame to the face worker (faces_async), once, and at most
        once per `face_period_s` of frame time."""
        job, self._face_job = self._face_job, None
        if job is None or self.face_worker is None:
            return
        t = job[1]
        last = self._faces_started_t
        if last is not None and 0.0 <= t - last < self.config.face_period_s:
            return                    # a frame from the past (t < last) restarts the period
        self._faces_started_t = t
        self.face_worker.submit(*job)

    def _earlier_faces(self, head_pan: float, head_tilt: float) -> list[RawDetection] | None:
        """The worker's newest faces, moved by the head's turn since; None: no new result."""
        done = self.face_worker.take()
        if done is None:
            return None
        faces, _, pan0, tilt0 = done
        cm = self.camera_model
        du = cm.intrinsics.fx * math.tan(head_pan - pan0)
        dv = -cm.intrinsics.fy * math.tan(head_tilt - tilt0)
        return [replace(f, bbox=(f.bbox[0] + du, f.bbox[1] + dv, f.bbox[2], f.bbox[3]))
                for f in faces]

    def _target(self, tr: Track, nov: float, t: float, head_pan: float,
                head_tilt: float) -> Target:
        cm = self.camera_model
        u, v = tr.center
        pan, tilt = cm.pixel_to_head_angles(u, v, head_pan, head_tilt)
        area = tr.bbox[2] * tr.bbox[3] / float(cm.width * cm.height)
        half_diag = math.hypot(cm.width, cm.height) / 2.0
        cdist = math.hypot(u - cm.intrinsics.cx, v - cm.intrinsics.cy) / half_diag
        # Motion evidence alone also fires on slow drift and on neighbours' motion blobs.
        moving = tr.moving and math.hypot(*tr.velocity) >= self.config.min_speed_frac * cm.width
        sal = salience(tr.kind, nov, moving, area, cdist, self.config.weights)
        return Target(tr.track_id, tr.kind, tr.label, tuple(float(b) for b in tr.bbox),
                      float(tr.confidence), pan, tilt, nov, sal, tr.age(t), tr.dwell_s,
                      moving)

    def _choose(self, targets: list[Target]) -> tuple[Target | None, Target | None, str]:
        cfg = self.config
        by_id = {tg.track_id: tg for tg in targets}
        focus = by_id.get(self._focus_id)
        if focus is None and self._focus_id is not None:
            self._focus_id, self._focus_dwell = None, 0.0
        others = [tg for tg in targets if focus is None or tg.track_id != focus.track_id]
        best = others[0] if others else None
        if focus is None:
            if best is None:
                return None, None, ''
            self._focus_id, self._focus_dwell = best.track_id, 0.0
            focus = best
            others = others[1:]
            best = others[0] if others else None
        elif best is not None and self._focus_dwell >= cfg.min_dwell_s and (
                focus.novelty < cfg.habituated_novelty
                or best.salience > focus.salience + cfg.switch_margin):
            self._focus_id, self._focus_dwell = best.track_id, 0.0
            previous = focus
            focus = best
            others = [tg for tg in targets if tg.track_id != focus.track_id]
            best = previous if not others else others[0]
        if best is None:
            return focus, None, ''
        if focus.novelty < cfg.habituated_novelty:
            reason = 'habituated to focus'
        elif best.novelty >= max(tg.novelty for tg in others):
            reason = 'most novel'
        else:
            reason = 'most salient'
        return focus, best, reason

    # ---- what the agent reads ---------------------------------------------------------

    def _describe(self, tg: Target, head_pan: float, head_tilt: float) -> str:
        words = [_article(tg.label), _direction_words(tg.pan - head_pan, tg.tilt - head_tilt)]
        if tg.moving:
            words.append('moving')
        if tg.novelty > 0.7:
            words.append('new')
        elif tg.novelty < 0.3:
            words.append('familiar')
        return ', '.join(words)

    def _percept(self, targets: list[Target], focus: Target | None,
                 suggestion: Target | None, reason: str, head_pan: float,
                 head_tilt: float) -> PerceptSummary:
        people = tuple(tg for tg in targets if tg.is_person)
        objects = tuple(tg for tg in targets if not tg.is_person)
        if not targets:
            narrative = 'I see nothing that stands out.'
        else:
            counts = []
            if people:
                counts.append(f'{len(people)} face' + ('s' if len(people) > 1 else ''))
            if objects:
                counts.append(f'{len(objects)} object' + ('s' if len(objects) > 1 else ''))
            parts = '; '.join(self._describe(tg, head_pan, head_tilt) for tg in targets[:5])
            narrative = f'I see {" and ".join(counts)}: {parts}.'
            if focus is not None:
                narrative += (f' I am looking at the {focus.label} (#{focus.track_id}) for '
                              f'{self._focus_dwell:.1f} s.')
            if suggestion is not None:
                narrative += (f' Next: the {suggestion.label} (#{suggestion.track_id}, '
                              f'{reason}).')
        labels = tuple(sorted(tg.label for tg in targets))
        signature = (labels, focus.track_id if focus else 0)
        return PerceptSummary(objects, people, narrative,
                              max((tg.novelty for tg in targets), default=0.0),
                              max((tg.salience for tg in targets), default=0.0), signature)

    def scene_summary(self, top_n: int = 5, include_attention: bool = True) -> dict:
        """The current scene as plain data (the scene_summary tool / service)."""
        if top_n < 0:
            raise AttentionError(f'top_n must be >= 0, got {top_n}')
        top_n = top_n or 5
        r = self.last_result
        if r is None:
            return {'available': False, 'targets': [], 'narrative': 'No camera frame yet.'}
        out = {'available': True, 't': r.t,
               'targets': [_target_dict(tg) for tg in r.targets[:top_n]],
               'narrative': r.percept.narrative}
        if include_attention:
            out['attention'] = {
                'mode': r.mode, 'head_pan': r.head_pan, 'head_tilt': r.head_tilt,
                'focus': _target_dict(r.focus) if r.focus else None,
                'dwell_s': r.focus_dwell_s,
                'suggested_next': _target_dict(r.suggestion) if r.suggestion else None,
                'suggestion_reason': r.suggestion_reason,
            }
        return out

    # ---- debug image ------------------------------------------------------------------

    def annotate(self, frame: np.ndarray, result: AttentionResult) -> np.ndarray:
        """A copy of the frame with boxes, ids, novelty/salience, the focus and the next target."""
        img = frame.copy()
        focus_id = result.focus.track_id if result.focus else None
        next_id = result.suggestion.track_id if result.suggestion else None
        for tg in result.targets:
            x, y, w, h = (int(round(v)) for v in tg.bbox)
            colour = (0, 255, 255) if tg.track_id == focus_id else \
                (255, 0, 255) if tg.track_id == next_id else (0, 200, 0)
            cv2.rectangle(img, (x, y), (x + w, y + h), colour, 3 if tg.track_id == focus_id
                          else 1)
            cv2.putText(img, f'#{tg.track_id} {tg.label}', (x, max(12, y - 16)),
                        cv2.FONT_HERSHEY_SIMPLEX, 0.45, colour, 1, cv2.LINE_AA)
            cv2.putText(img, f'n{tg.novelty:.2f} s{tg.salience:.2f}', (x, max(24, y - 4)),
                        cv2.FONT_HERSHEY_SIMPLEX, 0.4, colour, 1, cv2.LINE_AA)
            bar = int(round(w * tg.novelty))
            cv2.rectangle(img, (x, y + h + 2), (x + bar, y + h + 5), (0, 128, 255), -1)
        cx, cy = int(round(self.camera_model.intrinsics.cx)), \
            int(round(self.camera_model.intrinsics.cy))
        cv2.drawMarker(img, (cx, cy), (255, 255, 255), cv2.MARKER_CROSS, 16, 1)
        if result.focus and result.suggestion:
            a = tuple(int(v) for v in result.focus.center)
            b = tuple(int(v) for v in result.suggestion.center)
            cv2.arrowedLine(img, a, b, (255, 0, 255), 1, cv2.LINE_AA, tipLength=0.05)
        status = f'{result.mode} dwell {result.focus_dwell_s:.1f}s targets {len(result.targets)}'
        cv2.putText(img, status, (6, img.shape[0] - 8), cv2.FONT_HERSHEY_SIMPLEX, 0.5,
                    (255, 255, 255), 1, cv2.LINE_AA)
        return img


def _target_dict(tg: Target) -> dict:
    d = asdict(tg)
    d['bbox'] = list(d['bbox'])
    return d
