"""The head controller's schedule and control loop, and what an attention state does to the
head, without ROS: times are passed in, the loop's clock is a fake one where it matters."""

import threading
import time

import pytest

from maxim_perception.head.control import HeadConfig, HeadController, HeadGoalSpec, HeadMode
from maxim_perception.head.control import TargetView
from maxim_perception.head.scheduler import attend, ControlLoop, TickSchedule

PERIOD = 0.02     # 50 Hz


def run_poll(schedule, t):
    """What the loop does when it wakes at t: poll, and mark the tick it runs."""
    dt = schedule.poll(t)
    if dt is not None:
        schedule.ticked(t)
    return dt


def test_regular_ticks_keep_absolute_deadlines_and_catch_up():
    s = TickSchedule(PERIOD, start=10.0)
    assert s.due() == 10.0
    assert run_poll(s, 9.99) is None                 # early: not yet
    assert run_poll(s, 10.0) == pytest.approx(5 * PERIOD)   # the first dt is capped
    assert s.deadline == pytest.approx(10.02)
    # Late by most of a period: the next deadline stays on the grid (it catches up).
    assert run_poll(s, 10.035) == pytest.approx(0.035)
    assert s.deadline == pytest.approx(10.04)
    assert run_poll(s, 10.04) == pytest.approx(0.005)
    assert s.deadline == pytest.approx(10.06)


def test_a_loop_far_behind_starts_over_rather_than_bursting():
    s = TickSchedule(PERIOD, start=0.0)
    run_poll(s, 0.0)
    dt = run_poll(s, 5.0)                            # suspended for seconds
    assert dt == pytest.approx(5 * PERIOD)           # dt capped at five periods
    assert s.deadline == pytest.approx(5.0 + PERIOD)  # not 0.04: no burst of catch-up ticks


def test_a_new_target_ticks_at_once_then_waits_out_the_min_gap():
    s = TickSchedule(PERIOD, start=0.0)
    run_poll(s, 0.0)
    assert s.min_gap == pytest.approx(PERIOD / 4)
    dt = s.new_target(0.001, ready=True)             # just after a regular tick: at once
    assert dt == pytest.approx(0.001)
    s.ticked(0.001)
    s.target_ticked(0.001)
    assert s.deadline == pytest.approx(0.001 + PERIOD)   # regular ticks a period later
    assert not s.act_now
    assert s.new_target(0.002, ready=True) is None   # within the min gap: left to the loop
    assert s.act_now and s.due() == pytest.approx(0.001 + PERIOD / 4)
    assert run_poll(s, 0.003) is None                # still within the gap
    assert run_poll(s, 0.001 + PERIOD / 4) is not None
    assert not s.act_now
    assert s.deadline == pytest.approx(0.001 + PERIOD / 4 + PERIOD)


def test_a_new_target_with_the_driver_down_is_left_to_the_loop():
    s = TickSchedule(PERIOD, start=0.0)
    assert s.new_target(1.0, ready=False) is None
    assert s.act_now


def test_the_period_must_be_positive():
    with pytest.raises(ValueError):
        TickSchedule(0.0, start=0.0)


def test_the_control_loop_ticks_on_its_thread_and_stops():
    lock = threading.Lock()
    ticks, tickers = [], set()
    three = threading.Event()

    def tick(dt, t):
        ticks.append(t)
        tickers.add(threading.current_thread())
        if len(ticks) >= 3:
            three.set()

    loop = ControlLoop(TickSchedule(0.01, time.monotonic()), tick, lock)
    loop.start()
    assert three.wait(timeout=10.0), ticks
    assert loop.stop(timeout_s=5.0)
    assert len(ticks) >= 3 and ticks == sorted(ticks)
    # Stopped: the one thread that ticked has ended, so no tick can come after this.
    [ticker] = tickers
    assert ticker is not threading.current_thread() and not ticker.is_alive()
    assert loop.stop()                               # idempotent


def test_a_new_target_ticks_in_the_callers_thread():
    lock = threading.Lock()
    threads = []
    now = [100.0]
    loop = ControlLoop(TickSchedule(1.0, 100.0), lambda dt, t: threads.append(
        threading.current_thread()), lock, clock=lambda: now[0])
    with lock:
        loop.new_target(ready=True)
    assert threads == [threading.current_thread()]
    assert loop.schedule.last_target_tick == 100.0
    assert loop.schedule.deadline == 101.0


@pytest.mark.filterwarnings('ignore::pytest.PytestUnhandledThreadExceptionWarning')
def test_a_tick_that_raises_stops_the_loop_with_one_line():
    lines = []
    done = threading.Event()

    def tick(dt, t):
        done.set()
        raise RuntimeError('servo on fire')

    loop = ControlLoop(TickSchedule(0.01, time.monotonic()), tick, threading.Lock(),
                       on_fatal=lines.append)
    loop.start()
    assert done.wait(10.0)
    assert loop.stop(timeout_s=5.0)
    assert lines == ['head control loop stopped: RuntimeError: servo on fire']


def core():
    return HeadController(HeadConfig())


def test_an_accepted_focus_without_a_goal_drives_the_head_now():
    c = core()
    a = attend(c, [TargetView(3, 0.2, 0.1)], (0.2, 0.1, 3), now=1.0, stamp=1.0, source_t=None)
    assert a.act and a.reflex and a.reason == ''


def test_no_focus_lets_the_reflex_go_and_moves_nothing():
    c = core()
    attend(c, [], (0.2, 0.1, 3), now=1.0, stamp=1.0, source_t=None)
    a = attend(c, [], None, now=1.1, stamp=1.1, source_t=None)
    assert not a.act and not a.reflex
    assert not c.status(1.1).reflex_active


def test_a_stale_focus_is_rejected_with_its_reason():
    c = core()
    a = attend(c, [], (0.2, 0.1, 3), now=10.0, stamp=1.0, source_t=None)
    assert not a.act and not a.reflex and a.reason


def test_under_a_goal_only_the_goals_that_follow_a_target_act_on_attention():
    c = core()
    assert c.set_goal(HeadGoalSpec(HeadMode.MOVE, 'still', pan=0.5), 1.0).accepted
    a = attend(c, [TargetView(3, 0.2, 0.1)], (0.2, 0.1, 3), now=1.0, stamp=1.0, source_t=None)
    assert not a.act and not a.reflex                # the MOVE goal holds the head
    assert c.set_goal(HeadGoalSpec(HeadMode.TRACK_TARGET, 'follow', track_id=3), 1.0).accepted
    a = attend(c, [TargetView(3, 0.2, 0.1)], (0.2, 0.1, 3), now=1.1, stamp=1.1, source_t=None)
    assert a.act and not a.reflex                    # the goal follows the target
