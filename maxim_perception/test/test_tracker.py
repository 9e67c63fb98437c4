"""Tracking: optimal assignment, id stability over a moving object in rendered frames, gaps,
deletion, and the head-rotation shift."""

import itertools

import numpy as np
import pytest

from maxim_perception.attention.detectors import (ColorDetector, KIND_COLOR, KIND_FACE,
                                                  KIND_MOTION, RawDetection)
from maxim_perception.attention.tracker import (linear_sum_assignment, Tracker,
                                                TrackerConfig)
from maxim_perception.camera import SyntheticCamera


def brute_force(cost):
    n, m = cost.shape
    best = None
    if n <= m:
        for perm in itertools.permutations(range(m), n):
            total = sum(cost[i, perm[i]] for i in range(n))
            best = total if best is None else min(best, total)
    else:
        for perm in itertools.permutations(range(n), m):
            total = sum(cost[perm[j], j] for j in range(m))
            best = total if best is None else min(best, total)
    return best


@pytest.mark.parametrize('shape', [(1, 1), (3, 3), (4, 6), (6, 4), (5, 5), (2, 7)])
def test_assignment_is_optimal(shape):
    rng = np.random.default_rng(sum(shape))
    for _ in range(10):
        cost = rng.uniform(0, 10, size=shape)
        rows, cols = linear_sum_assignment(cost)
        assert len(rows) == min(shape) == len(set(cols)) == len(set(rows))
        assert cost[rows, cols].sum() == pytest.approx(brute_force(cost))


def test_assignment_rejects_bad_costs():
    assert [len(x) for x in linear_sum_assignment(np.zeros((0, 3)))] == [0, 0]
    with pytest.raises(ValueError):
        linear_sum_assignment(np.array([[np.inf, 1.0]]))
    with pytest.raises(ValueError):
        linear_sum_assignment(np.zeros(3))


def test_moving_object_keeps_one_id_over_rendered_frames():
    cam = SyntheticCamera(objects=('red', 'blue', 'green'), fps=15.0)
    colors = ColorDetector()
    tracker = Tracker()
    ids = {'red object': set(), 'blue object': set(), 'green object': set()}
    xs = []
    for i in range(60):  # 4 s: the red disc crosses most of the image and back
        t = i / 15.0
        tracks = tracker.update(colors.detect(cam.render(t)), t)
        for tr in tracks:
            ids[tr.label].add(tr.track_id)
            if tr.label == 'red object':
                xs.append(tr.center[0])
    assert all(len(v) == 1 for v in ids.values()), ids
    assert max(xs) - min(xs) > 200                     # it really moved
    red = next(tr for tr in tracker.tracks if tr.label == 'red object')
    truth = next(o for o in cam.last_objects if o.name == 'red')
    assert abs(red.center[0] - (truth.bbox[0] + truth.bbox[2] / 2)) < 10
    assert abs(red.velocity[0]) > 20                   # the filter learnt its speed


def det(x, y, label='red object', kind=KIND_COLOR, size=40):
    return RawDetection(kind, label, (x, y, size, size), 0.9)


def test_tentative_then_confirmed_and_ids_start_at_one():
    tracker = Tracker(TrackerConfig(min_hits=3))
    assert tracker.update([det(100, 100)], 0.0) == []
    assert tracker.update([det(102, 100)], 0.1) == []
    tracks = tracker.update([det(104, 100)], 0.2)
    assert [tr.track_id for tr in tracks] == [1] and tracks[0].hits == 3


def test_short_gap_keeps_the_id_long_gap_gives_a_new_one():
    tracker = Tracker(TrackerConfig(max_age_s=0.5))
    for i in range(5):
        tracker.update([det(100 + 10 * i, 100)], 0.1 * i)
    first = tracker.tracks[0].track_id
    tracker.update([], 0.5)
    tracker.update([], 0.6)                            # coasting on the prediction
    assert [tr.track_id for tr in tracker.tracks] == [first]
    assert tracker.update([], 0.75) == []              # stale: kept, but no longer reported
    tracks = tracker.update([det(180, 100)], 0.8)      # where the prediction expects it
    assert [tr.track_id for tr in tracks] == [first]
    for k in range(8):
        tracker.update([], 0.9 + 0.1 * k)
    assert tracker.tracks == []                        # deleted after max_age_s
    tracker.update([det(180, 100)], 2.0)
    tracks = tracker.update([det(181, 100)], 2.1)
    assert tracks and tracks[0].track_id != first


def test_labels_do_not_swap_and_motion_can_continue_a_track():
    tracker = Tracker()
    for i in range(4):
        t = 0.1 * i
        tracker.update([det(100 + 20 * i, 100, 'red object'),
                        det(300 - 20 * i, 100, 'blue object')], t)
    before = {tr.label: tr.track_id for tr in tracker.tracks}
    for i in range(4, 12):  # they pass each other
        t = 0.1 * i
        tracker.update([det(100 + 20 * i, 100, 'red object'),
                        det(300 - 20 * i, 100, 'blue object')], t)
    assert {tr.label: tr.track_id for tr in tracker.tracks} == before
    face = Tracker()
    face.update([det(50, 50, 'face', KIND_FACE)], 0.0)
    face.update([det(52, 50, 'face', KIND_FACE)], 0.1)
    fid = face.tracks[0].track_id
    tracks = face.update([RawDetection(KIND_MOTION, 'moving thing', (55, 50, 40, 40), 0.6,
                                       moving=True)], 0.2)
    assert [(tr.track_id, tr.label, tr.moving) for tr in tracks] == [(fid, 'face', True)]


def test_shift_follows_a_head_rotation():
    tracker = Tracker()
    tracker.update([det(100, 100)], 0.0)
    tracker.update([det(100, 100)], 0.1)
    tracker.shift(50.0, -20.0)
    tracks = tracker.update([det(150, 80)], 0.2)
    assert len(tracks) == 1 and tracks[0].hits == 3
    with pytest.raises(ValueError):
        tracker.shift(float('nan'), 0.0)
    with pytest.raises(ValueError):
        tracker.update([], float('inf'))
    with pytest.raises(ValueError):
        TrackerConfig(min_hits=0)


def test_a_kind_not_searched_in_a_frame_is_not_missed_there():
    """Faces looked for on some frames only: a new face is confirmed by two searches that
    find it, however many frames lie between, and stays reported in between; once a
    search does not find it, the usual coasting rules apply."""
    tr = Tracker(TrackerConfig(min_hits=2, max_age_s=1.0, report_coast_s=0.3))
    face = det(100, 100, label='face', kind=KIND_FACE)
    tr.update([face], 0.0)
    for i in range(1, 4):                         # three frames without a face search
        assert tr.update([], i / 10.0, unsearched={KIND_FACE}) == []
    assert tr._tracks and not tr._tracks[0].confirmed     # tentative, not dropped
    [t] = tr.update([face], 0.4)                  # the next search finds it: confirmed
    for i in range(5, 12):                        # 0.7 s unsearched: still reported
        assert [x.track_id for x in tr.update([], i / 10.0, unsearched={KIND_FACE})] \
            == [t.track_id]
    tr.update([], 1.2)                            # searched, not found: coasting again
    assert tr.update([], 1.7) == []               # past report_coast_s since seen at 0.4
    # A kind searched every frame is missed as before: a tentative colour track goes.
    tr2 = Tracker(TrackerConfig(min_hits=2))
    tr2.update([det(50, 50)], 0.0)
    tr2.update([], 0.1, unsearched={KIND_FACE})
    assert tr2._tracks == []
