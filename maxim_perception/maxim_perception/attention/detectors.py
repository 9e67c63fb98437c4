"""Per-frame detectors on BGR uint8 images: faces, coloured objects, motion.

Each returns `RawDetection`s in the input image's pixel coordinates. They work on a
downscaled copy for speed (attention needs where, not fine detail) and scale boxes back.
"""

from dataclasses import dataclass, replace
import os

import cv2
import numpy as np

KIND_FACE = 'face'
KIND_COLOR = 'color'
KIND_MOTION = 'motion'

BBox = tuple[float, float, float, float]  # x, y, width, height in pixels


class DetectorError(ValueError):
    """A detector was configured with something it cannot use (missing model, bad range)."""


@dataclass(frozen=True)
class RawDetection:
    """One thing found in one frame, before tracking."""

    kind: str            # KIND_FACE, KIND_COLOR or KIND_MOTION
    label: str           # 'face', 'red object', 'moving thing', ...
    bbox: BBox
    confidence: float    # 0..1
    moving: bool = False


def _check_frame(frame: np.ndarray) -> None:
    if not isinstance(frame, np.ndarray) or frame.dtype != np.uint8 or frame.ndim != 3 \
            or frame.shape[2] != 3:
        shape = getattr(frame, 'shape', None)
        raise DetectorError(f'expected an HxWx3 uint8 BGR image, got {type(frame).__name__} '
                            f'{shape}')


def _blobs(mask: np.ndarray) -> list[tuple[int, int, int, int, int]]:
    """(x, y, w, h, pixel count) of each 8-connected blob of a binary mask.

    The outer contours give the boxes (cv2.findContours is ~40x faster here than
    connectedComponentsWithStats); the count is the mask's pixels inside each box, which is
    the blob's own pixel count unless another blob reaches into its box.
    """
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    out = []
    for c in contours:
        x, y, w, h = cv2.boundingRect(c)
        out.append((x, y, w, h, cv2.countNonZero(mask[y:y + h, x:x + w])))
    return out


def downscaled(img: np.ndarray, width: int) -> tuple[np.ndarray, float]:
    """img resized to `width` columns (never enlarged) and the factor back to the input."""
    w = img.shape[1]
    if width <= 0 or w <= width:
        return img, 1.0
    f = width / w
    return cv2.resize(img, (width, int(round(img.shape[0] * f))),
                      interpolation=cv2.INTER_AREA), 1.0 / f


def _box(x, y, w, h, back: float) -> BBox:
    return float(x) * back, float(y) * back, float(w) * back, float(h) * back


def iou(a: BBox, b: BBox) -> float:
    """Intersection over union of two (x, y, w, h) boxes."""
    ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def overlap_fraction(a: BBox, b: BBox) -> float:
    """Fraction of box a covered by box b."""
    ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    area = a[2] * a[3]
    return ix * iy / area if area > 0 else 0.0


class FaceDetector:
    """Frontal faces: a YuNet ONNX model when `yunet_path` is given, else a Haar cascade.

    The Haar cascade comes from the OpenCV 4.x wheel (`cv2.data.haarcascades`) unless
    `cascade_path` names another file. Detection runs at `detect_width` columns.
    `equalize` applies histogram equalisation first: it helps in dim light but, on scenes
    dominated by one flat tone, it stretches noise and costs detections (measured on the
    synthetic face), so it is off by default.
    """

    def __init__(self, cascade_path: str = '', yunet_path: str = '', detect_width: int = 320,
                 scale_factor: float = 1.1, min_neighbors: int = 4, min_size: int = 20,
                 score_threshold: float = 0.6, equalize: bool = False) -> None:
        self.detect_width = int(detect_width)
        self.equalize = bool(equalize)
        self.scale_factor, self.min_neighbors = float(scale_factor), int(min_neighbors)
        self.min_size = int(min_size)
        self._yunet = None
        self._cascade = None
        if yunet_path:
            if not os.path.isfile(yunet_path):
                raise DetectorError(f'YuNet model not found: {yunet_path}')
            self._yunet = cv2.FaceDetectorYN.create(yunet_path, '', (320, 240),
                                                    float(score_threshold))
            self.backend = 'yunet'
        else:
            path = cascade_path or os.path.join(cv2.data.haarcascades,
                                                'haarcascade_frontalface_default.xml')
            if not os.path.isfile(path):
                raise DetectorError(f'Haar cascade not found: {path} (opencv 5.x wheels do not '
                                    'ship them; use opencv 4.x or Debian opencv-data)')
            cascade = cv2.CascadeClassifier(path)
            if cascade.empty():
                raise DetectorError(f'Haar cascade could not be loaded: {path}')
            self._cascade = cascade
            self.backend = 'haar'

    def detect(self, frame: np.ndarray) -> list[RawDetection]:
        _check_frame(frame)
        small, back = downscaled(frame, self.detect_width)
        out = []
        if self._yunet is not None:
            self._yunet.setInputSize((small.shape[1], small.shape[0]))
            _, faces = self._yunet.detect(small)
            for row in (faces if faces is not None else []):
                x, y, w, h = (float(v) * back for v in row[:4])
                out.append(RawDetection(KIND_FACE, 'face', (x, y, w, h),
                                        float(np.clip(row[-1], 0.0, 1.0))))
            return out
        gray = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
        if self.equalize:
            gray = cv2.equalizeHist(gray)
        boxes, _, weights = self._cascade.detectMultiScale3(
            gray, scaleFactor=self.scale_factor, minNeighbors=self.min_neighbors,
            minSize=(self.min_size, self.min_size), outputRejectLevels=True)
        for (x, y, w, h), wgt in zip(boxes, np.ravel(weights) if len(boxes) else []):
            # The cascade's final-stage weight is unbounded; squash it into 0..1.
            conf = float(1.0 / (1.0 + np.exp(-float(wgt))))
            out.append(RawDetection(KIND_FACE, 'face',
                                    _box(x, y, w, h, back), conf))
        return out


# Hue in OpenCV is 0..179. Red wraps around 0.
DEFAULT_COLOR_RANGES: dict[str, list[tuple[tuple[int, int, int], tuple[int, int, int]]]] = {
    # Red starts at a higher saturation: lips and skin are desaturated reds.
    'red': [((0, 170, 70), (8, 255, 255)), ((170, 170, 70), (179, 255, 255))],
    # Orange needs full saturation: skin is a desaturated orange.
    'orange': [((9, 170, 90), (19, 255, 255))],
    'yellow': [((20, 120, 90), (34, 255, 255))],
    'green': [((40, 100, 60), (85, 255, 255))],
    'blue': [((95, 120, 60), (130, 255, 255))],
}


class ColorDetector:
    """Saturated coloured blobs by HSV thresholds (`ranges`: name -> list of (lo, hi)).

    With `gate` (the default), one threshold first finds the pixels saturated and bright
    enough for any of the ranges, and the ranges run only inside their bounding box (padded,
    so the blobs come out exactly as on the whole image): most of a scene is not saturated,
    and the per-range thresholds were a third of attention's per-frame time at 640x480.
    """

    def __init__(self, ranges: dict | None = None, detect_width: int = 320,
                 min_area_frac: float = 0.0015, max_blobs_per_color: int = 3,
                 gate: bool = True) -> None:
        self.ranges = {}
        for name, spans in (ranges or DEFAULT_COLOR_RANGES).items():
            checked = []
            for lo, hi in spans:
                lo, hi = np.array(lo, np.uint8), np.array(hi, np.uint8)
                if len(lo) != 3 or len(hi) != 3 or np.any(lo > hi):
                    raise DetectorError(f'bad HSV range for {name!r}: {lo} .. {hi}')
                checked.append((lo, hi))
            self.ranges[name] = checked
        self.detect_width = int(detect_width)
        self.min_area_frac = float(min_area_frac)
        self.max_blobs = int(max_blobs_per_color)
        self.gate = bool(gate)
        # The least saturation and value any range accepts (hue: any).
        spans = [span for checked in self.ranges.values() for span in checked]
        self._gate_lo = np.array([0, min(lo[1] for lo, _ in spans),
                                  min(lo[2] for lo, _ in spans)], np.uint8)
        self._gate_hi = np.array([255, 255, 255], np.uint8)
        self._kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3))

    def detect(self, frame: np.ndarray) -> list[RawDetection]:
        _check_frame(frame)
        small, back = downscaled(frame, self.detect_width)
        hsv = cv2.cvtColor(small, cv2.COLOR_BGR2HSV)
        min_area = self.min_area_frac * small.shape[0] * small.shape[1]
        x0 = y0 = 0
        if self.gate:
            gate = cv2.inRange(hsv, self._gate_lo, self._gate_hi)
            if cv2.countNonZero(gate) < min_area:
                return []
            gx, gy, gw, gh = cv2.boundingRect(gate)
            pad = 2     # the opening's 3x3 kernel sees the unsaturated pixels around the box
            x0, y0 = max(0, gx - pad), max(0, gy - pad)
            x1 = min(hsv.shape[1], gx + gw + pad)
            y1 = min(hsv.shape[0], gy + gh + pad)
            hsv = hsv[y0:y1, x0:x1]
        out = []
        for name, spans in self.ranges.items():
            mask = cv2.inRange(hsv, spans[0][0], spans[0][1])
            for lo, hi in spans[1:]:
                mask |= cv2.inRange(hsv, lo, hi)
            if cv2.countNonZero(mask) < min_area:
                continue        # most colours are absent from most frames: skip the labelling
            mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, self._kernel)
            blobs = sorted((b for b in _blobs(mask) if b[4] >= min_area),
                           key=lambda b: -b[4])[:self.max_blobs]
            for x, y, w, h, area in blobs:
                fill = area / float(w * h)
                out.append(RawDetection(KIND_COLOR, f'{name} object',
                                        _box(x + x0, y + y0, w, h, back),
                                        float(np.clip(0.5 + 0.5 * fill, 0.0, 1.0))))
        return out


class MotionDetector:
    """Moving regions by frame differencing ('diff') or background subtraction ('mog2').

    `reset()` forgets the reference when the camera itself moved (the whole image shifts);
    a frame where more than `max_area_frac` of the pixels changed is treated the same way.
    """

    def __init__(self, method: str = 'diff', detect_width: int = 160, threshold: int = 25,
                 min_area_frac: float = 0.002, max_area_frac: float = 0.4) -> None:
        if method not in ('diff', 'mog2'):
            raise DetectorError(f"motion method must be 'diff' or 'mog2', got {method!r}")
        self.method = method
        self.detect_width, self.threshold = int(detect_width), int(threshold)
        self.min_area_frac, self.max_area_frac = float(min_area_frac), float(max_area_frac)
        self._prev: np.ndarray | None = None
        self._mog = None
        self._kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5))

    def reset(self) -> None:
        self._prev = None
        self._mog = None

    def detect(self, frame: np.ndarray) -> list[RawDetection]:
        _check_frame(frame)
        small, back = downscaled(frame, self.detect_width)
        # Colour, not grey: a red thing on a grey wall can have the wall's luminance.
        blurred = cv2.GaussianBlur(small, (5, 5), 0)
        if self.method == 'mog2':
            if self._mog is None:
                self._mog = cv2.createBackgroundSubtractorMOG2(history=100, varThreshold=32,
                                                               detectShadows=False)
            mask = self._mog.apply(blurred)
        else:
            if self._prev is None or self._prev.shape != blurred.shape:
                self._prev = blurred
                return []
            b, g, r = cv2.split(cv2.absdiff(blurred, self._prev))
            diff = cv2.max(cv2.max(b, g), r)    # the largest channel change (numpy's is slower)
            self._prev = blurred
            _, mask = cv2.threshold(diff, self.threshold, 255, cv2.THRESH_BINARY)
        total = mask.shape[0] * mask.shape[1]
        if cv2.countNonZero(mask) > self.max_area_frac * total:
            # A global change (the camera moved, the light changed) is not a moving object;
            # the difference reference has already moved on and MOG2 adapts by itself.
            return []
        mask = cv2.dilate(mask, self._kernel, iterations=2)
        out = []
        for x, y, w, h, area in _blobs(mask):
            if area < self.min_area_frac * total:
                continue
            out.append(RawDetection(KIND_MOTION, 'moving thing',
                                    _box(x, y, w, h, back),
                                    float(min(1.0, 0.4 + area / (0.05 * total))), moving=True))
        return out


def merge_motion(detections: list[RawDetection], motion: list[RawDetection],
                 min_overlap: float = 0.3) -> list[RawDetection]:
    """Mark faces/colour blobs that overlap motion as moving; keep only motion not explained.

    Frame differencing lights up both the old and the new position of a moving object, so a
    detection moves when a motion blob covers `min_overlap` of its box, and a motion blob is
    explained (dropped) when it covers that much of a detection or a detection covers that
    much of it.
    """
    out = []
    explained = [False] * len(motion)
    for det in detections:
        moving = False
        for j, m in enumerate(motion):
            covers_det = overlap_fraction(det.bbox, m.bbox) >= min_overlap
            if covers_det or overlap_fraction(m.bbox, det.bbox) >= min_overlap:
                explained[j] = True
                moving = moving or covers_det
        out.append(replace(det, moving=True) if moving and not det.moving else det)
    out.extend(m for j, m in enumerate(motion) if not explained[j])
    return out
