"""Multi-target tracking with stable ids: a constant-velocity Kalman filter per track and an
optimal (Hungarian) assignment of detections to tracks on IoU and centre distance.

A track is tentative until it has `min_hits` detections, and is deleted when it has not been
seen for `max_age_s` (a brief occlusion or a missed detection keeps its id). Ids start at 1
(0 means "not tracked" in maxim_interfaces/Detection) and are never reused.
"""

from dataclasses import dataclass, field
import math

import numpy as np

from maxim_perception.attention.detectors import BBox, iou, KIND_MOTION, RawDetection

try:  # scipy is optional: a small exact Hungarian below covers the sizes attention sees.
    from scipy.optimize import linear_sum_assignment as _scipy_lsa
except ImportError:  # pragma: no cover - depends on the environment
    _scipy_lsa = None


def linear_sum_assignment(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of a minimum-cost assignment of a rectangular cost matrix.

    scipy's implementation when installed, else the O(n^2 m) Hungarian algorithm with
    potentials (exact, fine for the tens of targets a camera frame holds).
    """
    cost = np.asarray(cost, dtype=float)
    if cost.ndim != 2:
        raise ValueError(f'cost must be 2-D, got shape {cost.shape}')
    if not np.all(np.isfinite(cost)):
        raise ValueError('cost must be finite (use a large value for forbidden pairs)')
    if cost.size == 0:
        return np.zeros(0, int), np.zeros(0, int)
    if _scipy_lsa is not None:
        rows, cols = _scipy_lsa(cost)
        return np.asarray(rows), np.asarray(cols)
    transposed = cost.shape[0] > cost.shape[1]
    a = cost.T if transposed else cost
    n, m = a.shape  # n <= m
    u, v = np.zeros(n + 1), np.zeros(m + 1)
    p = np.zeros(m + 1, dtype=int)  # p[j]: row (1-based) matched to column j
    way = np.zeros(m + 1, dtype=int)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = np.full(m + 1, math.inf)
        used = np.zeros(m + 1, dtype=bool)
        while True:
            used[j0] = True
            i0 = p[j0]
            free = ~used[1:]
            cur = a[i0 - 1] - u[i0] - v[1:]
            better = free & (cur < minv[1:])
            minv[1:][better] = cur[better]
            way[1:][better] = j0
            cand = np.where(free, minv[1:], math.inf)
            j1 = int(np.argmin(cand)) + 1
            delta = cand[j1 - 1]
            u[p[used]] += delta
            v[used] -= delta
            minv[1:][free] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
    rows, cols = [], []
    for j in range(1, m + 1):
        if p[j]:
            rows.append(p[j] - 1)
            cols.append(j - 1)
    rows, cols = np.array(rows, int), np.array(cols, int)
    if transposed:
        rows, cols = cols, rows
    order = np.argsort(rows)
    return rows[order], cols[order]


class _Kalman:
    """Constant-velocity filter on the box centre (state cx, cy, vx, vy); size is smoothed."""

    def __init__(self, cx: float, cy: float, pos_std: float, accel_std: float) -> None:
        self.x = np.array([cx, cy, 0.0, 0.0])
        self.P = np.diag([pos_std ** 2, pos_std ** 2, (10 * pos_std) ** 2, (10 * pos_std) ** 2])
        self.accel_std = accel_std
        self.R = np.eye(2) * pos_std ** 2
        self.H = np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0]])

    def predict(self, dt: float) -> None:
        if dt <= 0:
            return
        F = np.eye(4)
        F[0, 2] = F[1, 3] = dt
        q = self.accel_std ** 2
        G = np.array([[0.5 * dt * dt, 0], [0, 0.5 * dt * dt], [dt, 0], [0, dt]])
        self.x = F @ self.x
        self.P = F @ self.P @ F.T + G @ G.T * q

    def update(self, cx: float, cy: float) -> None:
        y = np.array([cx, cy]) - self.H @ self.x
        S = self.H @ self.P @ self.H.T + self.R
        K = self.P @ self.H.T @ np.linalg.inv(S)
        self.x = self.x + K @ y
        self.P = (np.eye(4) - K @ self.H) @ self.P


@dataclass
class Track:
    """A target followed across frames."""

    track_id: int
    kind: str
    label: str
    bbox: BBox
    confidence: float
    first_seen: float
    last_seen: float
    hits: int = 1
    misses: int = 0
    moving: bool = False
    confirmed: bool = False
    dwell_s: float = 0.0  # total time in attention's focus (kept here so it survives)
    searched_t: float = 0.0   # when its kind's detector last looked for it
    _kf: _Kalman | None = field(default=None, repr=False)
    _size: tuple[float, float] = (0.0, 0.0)

    @property
    def center(self) -> tuple[float, float]:
        return self.bbox[0] + self.bbox[2] / 2.0, self.bbox[1] + self.bbox[3] / 2.0

    @property
    def velocity(self) -> tuple[float, float]:
        """Pixels per second, from the filter."""
        return (float(self._kf.x[2]), float(self._kf.x[3])) if self._kf else (0.0, 0.0)

    def age(self, t: float) -> float:
        return max(0.0, t - self.first_seen)


@dataclass(frozen=True)
class TrackerConfig:
    min_hits: int = 2             # detections before a track is confirmed (reported)
    max_age_s: float = 1.0        # unseen this long -> deleted
    min_iou: float = 0.05         # below this, a pair may still match on centre distance
    gate_factor: float = 1.5      # max centre distance, in box diagonals, for a match
    pos_std_px: float = 6.0       # measurement noise of a box centre
    accel_std_px: float = 400.0   # process noise (pixels/s^2): objects change speed quickly
    size_smoothing: float = 0.5   # weight of the new box size
    report_coast_s: float = 0.3   # unseen longer than this: kept for re-association, unreported

    def __post_init__(self) -> None:
        if self.min_hits < 1 or not self.max_age_s > 0 or not self.gate_factor > 0:
            raise ValueError(f'invalid tracker config {self}')


class Tracker:
    """Assigns each frame's detections to tracks; see the module docstring."""

    _FORBIDDEN = 1e6

    def __init__(self, config: TrackerConfig | None = None) -> None:
        self.config = config or TrackerConfig()
        self._tracks: list[Track] = []
        self._next_id = 1
        self._last_t: float | None = None

    @property
    def tracks(self) -> list[Track]:
        """Confirmed tracks seen within `report_coast_s` (tentative and stale ones are not
        reported: a stale track's position is a guess)."""
        if self._last_t is None:
            return []
        return [tr for tr in self._tracks if tr.confirmed
                and (self._last_t - tr.last_seen <= self.config.report_coast_s
                     or tr.searched_t <= tr.last_seen)]

    def get(self, track_id: int) -> Track | None:
        for tr in self._tracks:
            if tr.track_id == track_id:
                return tr
        return None

    def reset(self) -> None:
        self._tracks.clear()
        self._last_t = None

    def shift(self, du: float, dv: float) -> None:
        """Move every track by (du, dv) pixels: the image shift a head rotation causes."""
        if not (math.isfinite(du) and math.isfinite(dv)):
            raise ValueError(f'shift must be finite, got ({du}, {dv})')
        for tr in self._tracks:
            tr._kf.x[0] += du
            tr._kf.x[1] += dv
            x, y, w, h = tr.bbox
            tr.bbox = (x + du, y + dv, w, h)

    def _compatible(self, tr: Track, det: RawDetection) -> bool:
        # Motion blobs may continue any track (a face that moves); other kinds must agree.
        if det.kind == KIND_MOTION or tr.kind == KIND_MOTION:
            return det.kind == tr.kind or det.kind == KIND_MOTION
        return det.kind == tr.kind and det.label == tr.label

    def _cost(self, tr: Track, pred: BBox, det: RawDetection) -> float:
        if not self._compatible(tr, det):
            return self._FORBIDDEN
        overlap = iou(pred, det.bbox)
        pcx, pcy = pred[0] + pred[2] / 2.0, pred[1] + pred[3] / 2.0
        dcx, dcy = det.bbox[0] + det.bbox[2] / 2.0, det.bbox[1] + det.bbox[3] / 2.0
        diag = max(1.0, math.hypot(max(pred[2], det.bbox[2]), max(pred[3], det.bbox[3])))
        dist = math.hypot(pcx - dcx, pcy - dcy) / (self.config.gate_factor * diag)
        if overlap < self.config.min_iou and dist > 1.0:
            return self._FORBIDDEN
        return (1.0 - overlap) * 0.5 + 0.5 * min(1.0, dist)

    def update(self, detections: list[RawDetection], t: float,
               unsearched: frozenset | set = frozenset()) -> list[Track]:
        """Advance to time t with this frame's detections; returns the confirmed tracks.

        `unsearched`: kinds whose detector did not look at this frame (faces searched on
        some frames only). A track of such a kind that finds no detection has not been
        missed: it coasts, keeps its tentative or confirmed standing, and is reported until
        its detector looks again and does not find it (or `max_age_s` passes)."""
        if not math.isfinite(t):
            raise ValueError(f'time must be finite, got {t}')
        dt = 0.0 if self._last_t is None else max(0.0, t - self._last_t)
        self._last_t = t if self._last_t is None else max(t, self._last_t)
        cfg = self.config
        preds = []
        for tr in self._tracks:
            tr._kf.predict(dt)
            cx, cy = float(tr._kf.x[0]), float(tr._kf.x[1])
            w, h = tr._size
            preds.append((cx - w / 2.0, cy - h / 2.0, w, h))
        matched_tracks, matched_dets = set(), set()
        if self._tracks and detections:
            cost = np.array([[self._cost(tr, pred, det) for det in detections]
                             for tr, pred in zip(self._tracks, preds)])
            rows, cols = linear_sum_assignment(cost)
            for r, c in zip(rows, cols):
                if cost[r, c] >= self._FORBIDDEN:
                    continue
                self._apply(self._tracks[r], detections[c], t)
                matched_tracks.add(r)
                matched_dets.add(c)
        for i, (tr, pred) in enumerate(zip(self._tracks, preds)):
            if i not in matched_tracks:
                if tr.kind not in unsearched:
                    tr.misses += 1
                    tr.searched_t = t
                tr.bbox = pred  # coast on the prediction through short gaps
        self._tracks = [tr for tr in self._tracks
                        if t - tr.last_seen <= cfg.max_age_s
                        and (tr.confirmed or tr.misses == 0)]
        for j, det in enumerate(detections):
            if j not in matched_dets:
                self._tracks.append(self._new_track(det, t))
        return self.tracks

    def _new_track(self, det: RawDetection, t: float) -> Track:
        cx, cy = det.bbox[0] + det.bbox[2] / 2.0, det.bbox[1] + det.bbox[3] / 2.0
        tr = Track(self._next_id, det.kind, det.label, det.bbox, det.confidence, t, t,
                   moving=det.moving, confirmed=self.config.min_hits <= 1, searched_t=t)
        tr._kf = _Kalman(cx, cy, self.config.pos_std_px, self.config.accel_std_px)
        tr._size = (det.bbox[2], det.bbox[3])
        self._next_id += 1
        return tr

    def _apply(self, tr: Track, det: RawDetection, t: float) -> None:
        cx, cy = det.bbox[0] + det.bbox[2] / 2.0, det.bbox[1] + det.bbox[3] / 2.0
        tr._kf.update(cx, cy)
        a = self.config.size_smoothing
        w = a * det.bbox[2] + (1 - a) * tr._size[0]
        h = a * det.bbox[3] + (1 - a) * tr._size[1]
        tr._size = (w, h)
        fx, fy = float(tr._kf.x[0]), float(tr._kf.x[1])
        tr.bbox = (fx - w / 2.0, fy - h / 2.0, w, h)
        tr.confidence = 0.7 * tr.confidence + 0.3 * det.confidence
        tr.last_seen = tr.searched_t = t
        tr.hits += 1
        tr.misses = 0
        tr.moving = det.moving
        if tr.kind == KIND_MOTION and det.kind != KIND_MOTION:
            tr.kind, tr.label = det.kind, det.label  # the moving thing turned out to be a face
        if tr.hits >= self.config.min_hits:
            tr.confirmed = True
