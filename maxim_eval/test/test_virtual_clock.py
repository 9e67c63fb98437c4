"""VirtualClock cannot stall: a positive sleep always moves simulated time.

A turn that settles sleeps for the rest of its settle time. Near t = 9.15 s a float's step is
1.8e-15 s, so a rest under half of it (8.9e-16 s) leaves `now + rest == now`, and a scripted
scenario once waited for ever on a turn that could not settle."""

import math
import threading
from types import SimpleNamespace

import pytest

from maxim_core.mind.runtime import Runtime
from maxim_eval.scenario.bridge import VirtualClock


@pytest.mark.parametrize('rest', [1e-15, 2.0 ** -50, 5e-16, 1e-16, 1e-300])
def test_a_sleep_below_the_resolution_still_moves_the_clock(rest):
    clock = VirtualClock(9.15)
    clock.sleep(rest)
    assert clock() >= math.nextafter(9.15, math.inf)
    assert clock() - 9.15 <= max(rest, math.ulp(9.15)) * 1.5   # a tick, not a leap


def test_the_stall_is_real_without_the_tick():
    """The premise: plain float addition does not move t = 9.15 s by these rests."""
    assert 9.15 + 5e-16 == 9.15
    assert 9.15 + 1e-16 == 9.15


def test_ordinary_and_zero_sleeps_are_exact():
    clock = VirtualClock(100.0)
    clock.sleep(0.25)
    assert clock() == 100.25
    clock.sleep(0.0)
    assert clock() == 100.25
    with pytest.raises(ValueError):
        clock.sleep(-1e-3)


def test_a_turn_whose_rest_is_below_the_resolution_ends():
    """Runtime.turn on the VirtualClock with a settle rest of 5e-16 s at t = 9.15 s (it once
    looped for ever); run in a thread joined with a timeout so a stall fails the test instead
    of hanging it."""
    clock = VirtualClock(9.15)
    mind = SimpleNamespace(counts={}, cancel=lambda: None)
    runtime = Runtime(mind)
    ends = []
    worker = threading.Thread(
        target=lambda: ends.append(runtime.turn(None, settle_s=5e-16, poll_s=0.25,
                                                clock=clock, sleep=clock.sleep)),
        daemon=True)
    worker.start()
    worker.join(timeout=5.0)
    stalled = worker.is_alive()
    runtime.stop(timeout_s=1.0)           # ends a stalled turn's loop either way
    worker.join(timeout=5.0)
    assert not stalled, 'the turn never settled: the clock stalled'
    assert ends and ends[0].settled
    assert clock() > 9.15
