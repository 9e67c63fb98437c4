"""The head's pose history: the pose at a frame's time, interpolated from joint readings."""

import math

import pytest

from maxim_perception.head.pose_history import PoseHistory


def test_interpolates_between_readings_and_clamps_near_the_ends():
    h = PoseHistory(tolerance_s=0.2)
    assert h.at(1.0) is None and h.latest() is None
    h.add(1.0, 0.0, 0.1)
    h.add(2.0, 0.4, -0.1)
    assert h.at(1.5) == pytest.approx((0.2, 0.0))
    assert h.at(1.0) == pytest.approx((0.0, 0.1))
    assert h.at(0.9) == pytest.approx((0.0, 0.1))      # a little before: the oldest
    assert h.at(2.1) == pytest.approx((0.4, -0.1))     # a little after: the newest
    assert h.latest() == (0.4, -0.1)


def test_a_time_far_outside_the_history_gets_the_newest_reading():
    """Clocks that disagree (a frame on another clock): no better guess than the newest."""
    h = PoseHistory(tolerance_s=0.2)
    h.add(100.0, 0.0, 0.0)
    h.add(101.0, 0.5, 0.0)
    assert h.at(5.0) == (0.5, 0.0)
    assert h.at(1e9) == (0.5, 0.0)
    assert h.at(math.nan) == (0.5, 0.0)


def test_old_readings_are_forgotten_and_a_clock_going_back_starts_over():
    h = PoseHistory(horizon_s=1.0)
    for i in range(50):
        h.add(i * 0.1, i * 0.01, 0.0)
    assert len(h) <= 12
    assert h.at(4.85) == pytest.approx((0.485, 0.0))
    h.add(1.0, -0.3, 0.0)                  # the simulation restarted
    assert len(h) == 1 and h.at(1.0) == (-0.3, 0.0)


def test_bad_readings_and_settings_are_refused():
    h = PoseHistory()
    assert h.add(math.nan, 0.0, 0.0) is False
    assert h.add(1.0, math.inf, 0.0) is False
    assert len(h) == 0
    h.add(1.0, 0.1, 0.0)
    h.add(1.0, 0.2, 0.0)                   # same time: the newer reading replaces it
    assert len(h) == 1 and h.latest() == (0.2, 0.0)
    with pytest.raises(ValueError, match='horizon_s'):
        PoseHistory(horizon_s=0.0)
    with pytest.raises(ValueError, match='tolerance_s'):
        PoseHistory(tolerance_s=-1.0)
