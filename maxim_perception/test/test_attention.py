"""The attention core on rendered frames: targets, focus, habituation-driven gaze shifts,
head-angle bookkeeping, percepts, scene_summary and the debug image."""

import math

import numpy as np
import pytest

from maxim_perception.attention import (AttentionConfig, AttentionCore, AttentionError,
                                        PerceptGate)
from maxim_perception.attention.attention import MODE_IDLE, MODE_SCAN, PerceptSummary
from maxim_perception.camera import SyntheticCamera
from maxim_perception.camera_model import CameraModel

FPS = 10.0


def model():
    return CameraModel(640, 480, math.radians(60.0))


@pytest.fixture(scope='module')
def run():
    """12 s of the synthetic scene at 10 frames/s with the head still."""
    cam = SyntheticCamera(fps=FPS)
    core = AttentionCore(model(), AttentionConfig(min_dwell_s=1.5))
    results = []
    for i in range(120):
        t = i / FPS
        results.append(core.process(cam.render(t), t))
    return core, cam, results


def test_sees_the_face_and_the_coloured_objects_with_stable_ids(run):
    core, cam, results = run
    labels = {tg.label for tg in results[-1].targets}
    assert labels == {'face', 'red object', 'blue object', 'green object'}
    ids = {}
    for r in results[5:]:
        for tg in r.targets:
            ids.setdefault(tg.label, set()).add(tg.track_id)
    assert all(len(v) == 1 for v in ids.values()), ids
    assert any(tg.moving for r in results for tg in r.targets if tg.label == 'red object')
    face = next(tg for tg in results[-1].targets if tg.label == 'face')
    assert face.kind == 'face' and face.is_person and face.age_s > 10.0
    assert face.pan > 0.0 and face.tilt < 0.0          # left of and above the centre
    green = next(tg for tg in results[-1].targets if tg.label == 'green object')
    assert green.pan < 0.0 and green.tilt > 0.0        # right of and below the centre
    assert [tg.salience for tg in results[-1].targets] == sorted(
        (tg.salience for tg in results[-1].targets), reverse=True)


def test_focus_dwells_habituates_and_moves_on(run):
    core, cam, results = run
    assert results[0].mode == MODE_IDLE and results[0].focus is None
    focused = [r for r in results if r.focus is not None]
    assert focused and focused[-1].mode == MODE_SCAN   # the head never moved here
    switches = [(a.focus.track_id, b.focus.track_id, b.t) for a, b in
                zip(focused, focused[1:]) if a.focus.track_id != b.focus.track_id]
    assert len(switches) >= 2                          # gaze moved around the scene
    focus_starts = [focused[0].t] + [t for _, _, t in switches]
    assert all(b - a >= 1.5 - 1e-6 for a, b in zip(focus_starts, focus_starts[1:]))
    # Dwell grows while the focus stays, and the focus's novelty habituates.
    stretch = [r for r in focused if r.focus.track_id == focused[-1].focus.track_id][-5:]
    dwells = [r.focus_dwell_s for r in stretch]
    assert dwells == sorted(dwells) and dwells[-1] > dwells[0]
    novs = [r.focus.novelty for r in stretch]
    assert novs == sorted(novs, reverse=True)
    for r in focused:
        if r.suggestion is not None:
            assert r.suggestion.track_id != r.focus.track_id
            assert r.suggestion_reason in ('most novel', 'most salient', 'habituated to focus')
    # Total dwell per target is kept on the target.
    assert max(tg.dwell_s for tg in results[-1].targets) >= 1.5


def test_percept_and_scene_summary(run):
    core, cam, results = run
    p = results[-1].percept
    assert [tg.label for tg in p.people] == ['face']
    assert {tg.label for tg in p.objects} == {'red object', 'blue object', 'green object'}
    assert p.narrative.startswith('I see 1 face and 3 objects')
    assert 'I am looking at' in p.narrative and 'Next:' in p.narrative
    assert 0 < p.novelty <= 1 and 0 < p.salience <= 1
    s = core.scene_summary(top_n=2, include_attention=True)
    assert s['available'] and len(s['targets']) == 2
    assert s['attention']['focus']['track_id'] == results[-1].focus.track_id
    assert s['attention']['dwell_s'] == pytest.approx(results[-1].focus_dwell_s)
    assert 'attention' not in core.scene_summary(top_n=0, include_attention=False)
    assert len(core.scene_summary(0)['targets']) == 4  # 0 = default (5)
    with pytest.raises(AttentionError):
        core.scene_summary(top_n=-1)
    assert AttentionCore(model()).scene_summary()['available'] is False


def test_annotate_draws_on_a_copy(run):
    core, cam, results = run
    frame = cam.render(results[-1].t)
    before = frame.copy()
    out = core.annotate(frame, results[-1])
    assert out.shape == frame.shape and np.array_equal(frame, before)
    assert np.count_nonzero(np.any(out != frame, axis=2)) > 1000


def test_head_angles_give_absolute_target_angles():
    cam = SyntheticCamera(objects=('green',), fps=FPS)
    img = cam.render(0.0)
    still = AttentionCore(model())
    turned = AttentionCore(model())
    for i in range(3):
        a = still.process(img, i / FPS, 0.0, 0.0)
        b = turned.process(img, i / FPS, 0.5, 0.1)
    ga, gb = a.targets[0], b.targets[0]
    assert ga.label == gb.label == 'green object'
    expected = model().pixel_to_head_angles(*ga.center, 0.5, 0.1)
    assert (gb.pan, gb.tilt) == pytest.approx(expected, abs=1e-6)
    assert gb.pan == pytest.approx(ga.pan + 0.5, abs=0.02)


def test_a_head_turn_keeps_track_ids_and_does_not_make_motion():
    """The head pans while the scene is still: the image slides, ids and angles stay."""
    m = model()
    cam = SyntheticCamera(objects=('blue', 'green'), fps=FPS)
    core = AttentionCore(m)
    world = {}
    for i in range(20):
        t = i / FPS
        pan = -0.04 * min(i, 8)                          # the head turns right...
        shift = int(round(m.intrinsics.fx * math.tan(pan)))
        img = np.roll(cam.render(0.0), shift, axis=1)    # ...so the scene slides left
        r = core.process(img, t, pan, 0.0)
        for tg in r.targets:
            world.setdefault(tg.label, []).append((tg.track_id, tg.pan, tg.moving, tg.kind))
    for label in ('blue object', 'green object'):
        ids = {x[0] for x in world[label]}
        pans = [x[1] for x in world[label]]
        assert len(ids) == 1 and max(pans) - min(pans) < 0.02
    assert all(not x[2] for v in world.values() for x in v)
    assert all(x[3] != 'motion' for v in world.values() for x in v)


def test_bad_input_is_a_typed_error():
    core = AttentionCore(model())
    with pytest.raises(AttentionError):
        core.process(np.zeros((240, 320, 3), np.uint8), 0.0)
    with pytest.raises(AttentionError):
        core.process(np.zeros((480, 640), np.uint8), 0.0)
    with pytest.raises(AttentionError):
        core.process(np.zeros((480, 640, 3), np.uint8), 0.0, float('nan'), 0.0)
    with pytest.raises(ValueError):
        AttentionConfig(habituated_novelty=2.0)


def test_percept_gate_publishes_changes_at_most_once_per_period():
    def summary(*labels, focus=1):
        return PerceptSummary((), (), '', 0.5, 0.5, (tuple(sorted(labels)), focus))

    gate = PerceptGate(period_s=2.0)
    assert gate.offer(summary('face'), 0.0)
    assert not gate.offer(summary('face'), 5.0)                  # nothing changed
    gate2 = PerceptGate(period_s=2.0)
    assert gate2.offer(summary('face'), 10.0)
    assert not gate2.offer(summary('face', 'red object'), 11.0)  # changed, but too soon
    assert gate2.offer(summary('face', 'red object'), 12.0)      # published when allowed
    assert not gate2.offer(summary('face', 'red object'), 20.0)
    assert gate2.offer(summary('face', 'red object', focus=2), 20.0)
    with pytest.raises(ValueError):
        PerceptGate(-1.0)


def test_faces_on_a_worker_thread_join_a_frame_later_moved_with_the_head():
    """faces_async: a frame's faces come with the next frame, shifted by the head's turn."""
    from maxim_perception.attention.detectors import FaceDetector, KIND_FACE

    frame = SyntheticCamera(fps=FPS).render(0.0)
    sync = [d for d in FaceDetector().detect(frame)]
    assert len(sync) == 1
    core = AttentionCore(model(), AttentionConfig(faces_async=True, motion=False))
    try:
        first = core.detect(frame, False, 0.0, 0.0, 0.0)
        assert not [d for d in first if d.kind == KIND_FACE]   # not detected yet
        core.start_faces()                                     # the worker takes the frame
        assert core.start_faces() is None and core._face_job is None   # once
        assert core.face_worker.wait_idle(10.0)
        turned = core.detect(frame, False, 0.1, 0.0, 0.1)      # the head turned left 0.1 rad
        faces = [d for d in turned if d.kind == KIND_FACE]
        assert len(faces) == 1
        shift = core.camera_model.intrinsics.fx * math.tan(0.1)
        assert faces[0].bbox[0] == pytest.approx(sync[0].bbox[0] + shift)
        assert faces[0].bbox[1:] == pytest.approx(sync[0].bbox[1:])
        # Through process(): the face becomes a tracked target like any other.
        for i in range(6):
            result = core.process(frame, 0.2 + i / FPS, 0.1, 0.0)
            core.face_worker.wait_idle(10.0)
        assert [tg for tg in result.targets if tg.kind == 'face']
        # start_faces=False: the frame waits for the caller (the node publishes first).
        core.process(frame, 1.0, 0.1, 0.0, start_faces=False)
        assert core.face_worker.wait_idle(10.0) and core.face_worker.take() is None
        core.start_faces()
        assert core.face_worker.wait_idle(10.0)
        assert core.face_worker.take()[1] == 1.0          # the frame at t=1.0
    finally:
        core.close()
    assert not core.face_worker._thread.is_alive()


def test_faces_period_sends_a_frame_to_the_face_worker_at_most_that_often():
    """face_period_s: frames between go without a new face search; the face stays tracked
    from the last result (the tracker keeps it for max_age_s)."""
    frame = SyntheticCamera(fps=FPS).render(0.0)
    core = AttentionCore(model(), AttentionConfig(faces_async=True, motion=False,
                                                  face_period_s=0.5))
    sent = []
    submit = core.face_worker.submit
    core.face_worker.submit = lambda *job: (sent.append(job[1]), submit(*job))
    try:
        results = []
        for i in range(12):                       # 1.2 s at 10 fps
            results.append(core.process(frame, i / 10.0, 0.0, 0.0))
            core.face_worker.wait_idle(10.0)
        assert sent == [0.0, 0.5, 1.0]
        # Found in frame 0 (its result joins frame 0.1) and again in frame 0.5 (joining
        # 0.6): confirmed, the face is a target on every later frame, searched or not.
        assert all([tg for tg in r.targets if tg.kind == 'face'] for r in results[6:])
        assert not [tg for tg in results[5].targets if tg.kind == 'face']
        core.process(frame, 0.2, 0.0, 0.0)         # time went back (a new sim run): restart
        assert sent[-1] == 0.2
    finally:
        core.close()
    with pytest.raises(ValueError):
        AttentionConfig(face_period_s=-1.0)
