"""When the head controller ticks, and the thread that ticks it (plain Python, no rclpy).

Two kinds of tick step the head. Regular ticks keep absolute deadlines one period apart on the
steady clock: a late one catches up rather than being skipped, and a loop far behind (a
suspended process) starts over. A new target (attention's state) is acted on at once, in the
thread that brought it, rather than waiting for the next regular tick, which would add up to a
period to every frame's latency; waking the control thread instead costs a thread hand-off
(measured: p95 4.8 ms from the state's arrival to its command). New-target ticks come at most
one per quarter period, so a flood of attention states is no flood of commands; regular ticks
do not hold them back (a state arriving just after a regular tick is acted on at once: waiting
out a gap from it measured p95 +3.9 ms).

The control loop runs on its own thread, not on an executor timer: a timer skips ticks when
the process is starved for a moment (measured: 0.87 of 50 Hz with both cores busy); this loop
catches up instead, and it holds in wall time even when the graph runs on sim time.
"""

from dataclasses import dataclass
import math
import threading
import time
from typing import Callable

from maxim_perception.head.control import HeadController, HeadMode, TargetView

# Goals that follow attention's targets (and so act on each new attention state at once).
FOLLOWING_GOALS = (HeadMode.TRACK_TARGET, HeadMode.FOCUS_INTERESTS, HeadMode.NOVELTY_TRACK)


@dataclass(frozen=True)
class Attended:
    """What a new attention state does to the head."""

    act: bool           # it moves the head now: a new-target tick (ControlLoop.new_target)
    reflex: bool        # its focus drives the head (no goal holds)
    reason: str = ''    # why its focus was rejected or clamped ('' when plain)


def attend(core: HeadController, targets: list[TargetView],
           focus: tuple[float, float, int] | None, now: float, stamp: float,
           source_t: float | None) -> Attended:
    """Hand one attention state to the core: every target (for the goals that follow one) and
    the focus (pan, tilt, track id; None: no focus) as the reflex target. `stamp`: the state's
    time on `now`'s clock; `source_t`: its own stamp (see HeadController.set_reflex_target)."""
    core.update_targets(targets, now, stamp, source_t)
    goal = core.goal
    act = goal is not None and goal.mode in FOLLOWING_GOALS   # it follows a target
    if focus is None:
        core.clear_reflex()
        return Attended(act, False)
    result = core.set_reflex_target(focus[0], focus[1], now=now, stamp=stamp,
                                    track_id=focus[2], source_t=source_t)
    reflex = result.accepted and goal is None
    return Attended(act or reflex, reflex, result.reason)


class TickSchedule:
    """The schedule's state and decisions; times in seconds on one steady clock, passed in."""

    def __init__(self, period: float, start: float):
        if not (math.isfinite(period) and period > 0):
            raise ValueError(f'period must be a finite number > 0, got {period!r}')
        self.period = period
        self.min_gap = period / 4              # between two new-target ticks
        self.last_tick = -math.inf             # time of the last tick
        self.last_target_tick = -math.inf      # ... and of the last new-target tick
        self.deadline = start                  # of the next regular tick
        self.act_now = False                   # a new target waits for the min gap to pass

    def due(self) -> float:
        """When the loop is next due: the regular deadline, or sooner for a waiting target."""
        if self.act_now:
            return min(self.deadline, self.last_target_tick + self.min_gap)
        return self.deadline

    def new_target(self, t: float, ready: bool) -> float | None:
        """A new target at `t`: the dt of a tick to run now (then `target_ticked(t)`), or None
        when it waits for the loop (within the min gap of the last new-target tick, or not
        `ready`: a driver in fault is left to the loop, which reconnects it)."""
        if ready and t - self.last_target_tick >= self.min_gap:
            return min(t - self.last_tick, self.period)
        self.act_now = True
        return None

    def target_ticked(self, t: float) -> None:
        """A new-target tick ran at `t`: the regular ticks go on a period later."""
        self.last_target_tick = t
        self.deadline = t + self.period

    def poll(self, t: float) -> float | None:
        """The loop woke at `t`: the dt of the tick to run now, or None when the schedule moved
        meanwhile (a new-target tick ran, or the waiting one is still within its gap)."""
        if self.act_now:
            if t - self.last_target_tick < self.min_gap:
                return None
            self.target_ticked(t)
        elif t < self.deadline:
            return None
        else:
            self.deadline += self.period
            if self.deadline < t - 5 * self.period:     # suspended or far behind
                self.deadline = t + self.period
        return min(t - self.last_tick, 5 * self.period)

    def ticked(self, t: float) -> None:
        """A tick (of either kind) ran at `t`."""
        self.last_tick = t
        self.act_now = False


class ControlLoop:
    """Runs `tick(dt, t)` by a TickSchedule: regular ticks on a thread of its own, new-target
    ticks in the caller's thread (`new_target`). Every tick and every look at the schedule
    holds `lock`, the lock that guards what the tick steps. A tick that raises stops the loop:
    `on_fatal` gets one line, and the exception ends the thread.
    """

    def __init__(self, schedule: TickSchedule, tick: Callable[[float, float], None],
                 lock: threading.Lock, on_fatal: Callable[[str], None] = lambda line: None,
                 clock: Callable[[], float] = time.monotonic, name: str = 'head_control'):
        self.schedule = schedule
        self._tick = tick
        self._lock = lock
        self._on_fatal = on_fatal
        self._clock = clock
        self._name = name
        self._wake = threading.Event()   # the schedule changed: the loop reads it again
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> bool:
        """Stop the thread; False when it did not end within `timeout_s`."""
        self._stop.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is None:
            return True
        thread.join(timeout=timeout_s)
        return not thread.is_alive()

    def new_target(self, ready: bool) -> None:
        """A new target position (call with the lock held): tick now, in this thread, or
        leave it to the loop, which ticks once the min gap has passed."""
        t = self._clock()
        dt = self.schedule.new_target(t, ready)
        if dt is not None:
            self._run_tick(dt, t)
            self.schedule.target_ticked(t)
        self._wake.set()

    def _run_tick(self, dt: float, t: float) -> None:
        self.schedule.ticked(t)
        self._tick(dt, t)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                with self._lock:
                    due = self.schedule.due()
                delay = due - self._clock()
                if delay > 0:
                    self._wake.wait(delay)
                    self._wake.clear()
                    continue          # woken or due: read the schedule again
                with self._lock:
                    t = self._clock()
                    dt = self.schedule.poll(t)
                    if dt is not None:
                        self._run_tick(dt, t)
        except Exception as exc:  # noqa: BLE001 - say loudly that the head stopped, then end
            self._on_fatal(f'head control loop stopped: {type(exc).__name__}: {exc}')
            raise
