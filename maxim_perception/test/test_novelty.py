"""Novelty habituates with dwell time, recovers out of focus, remembers labels; salience."""

import math

import pytest

from maxim_perception.attention.detectors import KIND_COLOR, KIND_FACE, KIND_MOTION
from maxim_perception.attention.novelty import NoveltyConfig, NoveltyModel, salience


def run(model, tracks, focus, t0, t1, dt=0.1):
    out = None
    t = t0
    while t <= t1 + 1e-9:
        out = model.update(tracks, focus, t)
        t += dt
    return out


def test_focus_habituates_faster_than_the_periphery():
    cfg = NoveltyConfig(focus_tau_s=4.0, view_tau_s=40.0, recover_tau_s=20.0)
    model = NoveltyModel(cfg)
    values = []
    t = 0.0
    while t <= 4.0 + 1e-9:
        values.append(model.update({1: 'face', 2: 'red object'}, 1, t)[1])
        t += 0.1
    assert values[0] == 1.0
    assert all(b < a for a, b in zip(values, values[1:]))      # strictly habituating
    assert model.novelty(1) == pytest.approx(math.exp(-1.0), rel=1e-6)
    assert model.novelty(2) > 0.85                              # only looked at sideways


def test_novelty_recovers_when_the_gaze_leaves():
    model = NoveltyModel(NoveltyConfig(focus_tau_s=2.0, recover_tau_s=10.0, view_tau_s=1e6))
    run(model, {1: 'face'}, 1, 0.0, 6.0)
    low = model.novelty(1)
    assert low < 0.1
    run(model, {1: 'face'}, None, 6.1, 16.0)
    high = model.novelty(1)
    assert high > low + 0.5 and high < 1.0
    expected = 1.0 - (1.0 - low) * math.exp(-10.0 / 10.0)
    assert high == pytest.approx(expected, abs=0.02)


def test_a_reappearing_label_is_familiar_for_a_while():
    model = NoveltyModel(NoveltyConfig(focus_tau_s=1.0, label_memory_tau_s=30.0))
    run(model, {1: 'red object'}, 1, 0.0, 5.0)
    model.update({}, None, 5.1)                                 # it leaves the view
    again = model.update({2: 'red object', 3: 'blue object'}, None, 6.0)
    assert again[2] < 0.45 and again[3] == 1.0
    later = model.update({4: 'red object'}, None, 200.0)        # long forgotten
    assert later[4] > 0.95


def test_time_going_backwards_does_not_un_habituate():
    model = NoveltyModel()
    run(model, {1: 'face'}, 1, 0.0, 3.0)
    n = model.novelty(1)
    model.update({1: 'face'}, 1, 1.0)
    assert model.novelty(1) == pytest.approx(n)
    with pytest.raises(ValueError):
        model.update({1: 'face'}, 1, float('nan'))
    with pytest.raises(ValueError):
        NoveltyConfig(focus_tau_s=0.0)


def test_salience_orders_kinds_motion_novelty_and_is_bounded():
    base = dict(novelty=0.5, moving=False, area_frac=0.02, centre_dist=0.5)
    assert salience(KIND_FACE, **base) > salience(KIND_MOTION, **base) > \
        salience(KIND_COLOR, **base)
    assert salience(KIND_COLOR, **{**base, 'moving': True}) > salience(KIND_COLOR, **base)
    assert salience(KIND_COLOR, **{**base, 'novelty': 1.0}) > salience(KIND_COLOR, **base)
    assert 0.0 <= salience(KIND_FACE, 5.0, True, 9.0, -3.0) <= 1.0
