"""Detectors on real rendered pixels: the Haar cascade on a drawn face, HSV colour blobs,
frame-difference motion (and its ego-motion guard)."""

import numpy as np
import pytest

from maxim_perception.attention.detectors import (ColorDetector, DetectorError, FaceDetector,
                                                  iou, KIND_COLOR, KIND_FACE, KIND_MOTION,
                                                  merge_motion, MotionDetector, RawDetection)
from maxim_perception.camera import draw_face, SyntheticCamera


def blank(w=640, h=480, level=70):
    return np.full((h, w, 3), level, np.uint8)


def centre(box):
    return box[0] + box[2] / 2.0, box[1] + box[3] / 2.0


@pytest.fixture(scope='module')
def faces():
    return FaceDetector()


@pytest.mark.parametrize('cx,cy,half', [(320, 240, 70), (180, 200, 45), (470, 300, 110)])
def test_haar_cascade_finds_the_drawn_face(faces, cx, cy, half):
    img = blank()
    draw_face(img, cx, cy, half)
    found = faces.detect(img)
    assert faces.backend == 'haar'
    assert len(found) == 1
    det = found[0]
    assert det.kind == KIND_FACE and det.label == 'face' and 0 < det.confidence <= 1
    fx, fy = centre(det.bbox)
    assert abs(fx - cx) < 0.3 * half and abs(fy - cy) < 0.5 * half
    assert 0.6 * half < det.bbox[2] < 2.5 * half


def test_no_face_among_coloured_shapes(faces):
    img = SyntheticCamera(objects=('red', 'green', 'blue')).render(0.0)
    assert faces.detect(img) == []


def test_colour_blobs_match_ground_truth():
    cam = SyntheticCamera()
    img = cam.render(0.4)
    found = ColorDetector().detect(img)
    by_label = {d.label: d for d in found}
    assert set(by_label) == {'red object', 'green object', 'blue object'}
    for obj in cam.last_objects:
        if obj.kind != 'color':
            continue
        det = by_label[f'{obj.color} object']
        assert det.kind == KIND_COLOR
        assert iou(det.bbox, obj.bbox) > 0.6, (obj, det)


def test_the_saturation_gate_finds_exactly_what_the_whole_image_does():
    """Run only inside the saturated pixels' box, the colour ranges find the same blobs,
    boxes and confidences as over the whole image: scenes with one colour, several, none,
    and blobs touching the image's edges."""
    import cv2

    rng = np.random.default_rng(7)
    frames = [SyntheticCamera().render(t) for t in (0.0, 0.4, 1.3, 2.9)]
    one = blank(level=170)
    cv2.circle(one, (400, 240), 38, (30, 30, 210), -1, cv2.LINE_AA)
    frames.append(one)
    frames.append(blank(level=120))
    for _ in range(6):
        img = blank(level=int(rng.integers(40, 200)))
        for _ in range(int(rng.integers(1, 5))):
            colour = tuple(int(c) for c in rng.integers(0, 256, 3))
            centre_xy = (int(rng.integers(-20, 660)), int(rng.integers(-20, 500)))
            cv2.circle(img, centre_xy, int(rng.integers(8, 80)), colour, -1)
        frames.append(img)
    gated, whole = ColorDetector(), ColorDetector(gate=False)
    found = 0
    for img in frames:
        a, b = gated.detect(img), whole.detect(img)
        assert a == b
        found += len(a)
    assert found >= 8


def test_skin_and_grey_are_not_colour_objects():
    img = blank()
    draw_face(img, 320, 240, 90)
    assert ColorDetector().detect(img) == []


def test_motion_by_frame_difference_and_ego_motion_guard():
    cam = SyntheticCamera(objects=('red', 'green'))
    motion = MotionDetector()
    assert motion.detect(cam.render(0.0)) == []            # first frame: the reference
    moved = motion.detect(cam.render(1 / 15))
    assert len(moved) == 1 and moved[0].kind == KIND_MOTION and moved[0].moving
    red = next(o for o in cam.last_objects if o.name == 'red')
    assert iou(moved[0].bbox, red.bbox) > 0.2
    still = cam.render(1 / 15)
    assert motion.detect(still) == []                      # nothing moved
    # The whole image changing (the light came on) is not a moving object.
    assert motion.detect(np.clip(still.astype(int) + 60, 0, 255).astype(np.uint8)) == []
    motion.reset()                                         # the head moved: new reference
    assert motion.detect(np.roll(still, 40, axis=1)) == []


def test_mog2_learns_the_background_then_sees_the_mover():
    cam = SyntheticCamera(objects=('green',))
    motion = MotionDetector(method='mog2')
    for _ in range(30):
        motion.detect(cam.render(0.0))
    img = cam.render(0.0).copy()
    img[200:260, 100:160] = (30, 30, 210)
    found = motion.detect(img)
    assert any(iou(d.bbox, (100, 200, 60, 60)) > 0.3 for d in found)


def test_merge_motion_marks_movers_and_keeps_unexplained_motion():
    face = RawDetection(KIND_FACE, 'face', (100, 100, 50, 50), 0.9)
    ball = RawDetection(KIND_COLOR, 'red object', (300, 300, 40, 40), 0.8)
    m1 = RawDetection(KIND_MOTION, 'moving thing', (290, 290, 70, 50), 0.7, moving=True)
    m2 = RawDetection(KIND_MOTION, 'moving thing', (500, 50, 30, 30), 0.7, moving=True)
    out = merge_motion([face, ball], [m1, m2])
    assert [d.label for d in out] == ['face', 'red object', 'moving thing']
    assert not out[0].moving and out[1].moving and out[2].bbox == m2.bbox


def test_bad_inputs_are_typed_errors(tmp_path):
    with pytest.raises(DetectorError):
        ColorDetector().detect(np.zeros((10, 10), np.uint8))
    with pytest.raises(DetectorError):
        FaceDetector().detect(np.zeros((10, 10, 3), np.float32))
    with pytest.raises(DetectorError):
        FaceDetector(yunet_path=str(tmp_path / 'absent.onnx'))
    with pytest.raises(DetectorError):
        FaceDetector(cascade_path=str(tmp_path / 'absent.xml'))
    with pytest.raises(DetectorError):
        ColorDetector({'odd': [((50, 0, 0), (10, 255, 255))]})
    with pytest.raises(DetectorError):
        MotionDetector(method='optical-flow')


def test_iou():
    assert iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert iou((0, 0, 10, 10), (20, 20, 5, 5)) == 0.0
    assert iou((0, 0, 10, 10), (5, 0, 10, 10)) == pytest.approx(50 / 150)
