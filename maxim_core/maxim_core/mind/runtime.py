"""How the Mind runs: the inbox, the worker and idle threads, and the turn.

A percept from outside is offered to the inbox, one place where the newest wins (a robot
thinks about now, not a backlog), except that a person's words are not pushed out by what
is seen or by an act's result; a person speaking while the Mind thinks about something else
cancels that deliberation. The worker takes the newest percept and runs a turn on it.

A turn is passes of the Mind until it stops acting: each act's result comes back as the next
percept (`result_percept`), always thought about, so a response can unfold (recall -> say ->
open) and the choice sees how many acts it has made since news from outside. A turn ends
when nothing is pending and no act has come for `settle_s`, when `budget` acts were made, or
at `timeout_s`. The agent node's worker and the scenario bridges run this same turn: the
bridges on a scenario's clock, with the world's own arrivals and their budget and timeout;
the robot with no settling (the inbox is its arrival) and `MAX_CHAIN` acts.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
import math
import queue
import threading
import time
from typing import Any, Callable, Iterable
import uuid

from maxim_core.agent.loop import Percept, ToolRun
from maxim_core.deliberation.words import result_words
from maxim_core.llm.backend import LLMError
from maxim_core.deliberation.choice import RESULT_FRAME
from maxim_core.mind.situation import HEARD_SOURCES

RESULT_SOURCE = 'tool_result'
# Acts in a row on the robot before the chain ends and the inbox is read again (the scenario
# runner's default turn budget; chosen by hand as a bound, the choice's effort rule decides
# to wait well before it).
MAX_CHAIN = 6


def result_percept(run: ToolRun) -> Percept:
    """What an act brought, as the percept the next pass is on."""
    if run.blocked:
        text = (f'Your action {run.tool} was blocked ({run.blocked_reason}). A '
                'blocked action is final: do something else or nothing.')
    elif run.success:
        text = f'{RESULT_FRAME.format(tool=run.tool)}{result_words(run.output, 600)}'
    else:
        text = f'Your {run.tool} failed: {run.error_msg[:300]}'
    return Percept(text, uuid.uuid4().hex[:12], RESULT_SOURCE)


@dataclass
class TurnEnd:
    """How a turn ended, and its passes."""

    steps: int = 0
    acts: int = 0
    settled: bool = False
    timed_out: bool = False
    budget_exhausted: bool = False


class Runtime:
    """See the module docstring. Composed by the Mind (`mind.runtime`), whose `step`,
    `perceive`, `cancel`, `idle_tick` it drives."""

    def __init__(self, mind: Any):
        self.mind = mind
        self.counts = mind.counts
        self._inbox: queue.Queue = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self._idle_worker: threading.Thread | None = None
        self._idle_wake = threading.Event()
        self._tick_done = threading.Condition()
        self.idle_ticked_at = 0.0

    # -- the inbox ---------------------------------------------------------------------------
    def offer(self, percept: Percept, from_self: bool = False) -> bool:
        """A percept arrives; True when it was queued for a turn. Vision below
        `percept_min_salience` is not deliberated; a view in which a track lost its target
        is thought about as that loss (`Mind.perceive`)."""
        if from_self:
            return False
        percept = self.mind.perceive(percept) or percept
        if percept.source == 'vision' and \
                percept.salience < self.mind.config.percept_min_salience:
            return False
        if percept.source in HEARD_SOURCES and self.mind.situation.source and \
                self.mind.busy():
            # A person spoke while the mind mulls over something else (what it sees, what an
            # act brought, what was said before): their newest words come first.
            self.counts['percepts_preempted'] = self.counts.get('percepts_preempted', 0) + 1
            self.mind.cancel()
        with self._tick_done:
            try:
                waiting = self._inbox.get_nowait()
                self.counts['percepts_dropped'] += 1
            except queue.Empty:
                waiting = None
                self.counts['percepts_pending'] += 1
            if waiting is not None and waiting.source in HEARD_SOURCES and \
                    percept.source not in HEARD_SOURCES:
                self._inbox.put_nowait(waiting)      # their words wait; this one goes
                return False
            self._inbox.put_nowait(percept)
        return True

    def waiting(self) -> bool:
        """A percept waits in the inbox."""
        return not self._inbox.empty()

    def run_next(self, timeout_s: float = 0.2) -> Any:
        """Take the newest waiting percept (waiting up to `timeout_s`) and run a turn on it;
        the first pass's result."""
        try:
            percept = self._inbox.get(timeout=timeout_s)
        except queue.Empty:
            return None
        first = []
        try:
            self.turn(percept, budget=MAX_CHAIN, on_step=first.append)
        except LLMError as exc:
            self.mind.report(f'the language model failed: {exc}')
        except (ValueError, RuntimeError) as exc:
            self.mind.report(f'this step failed: {exc}')
        finally:
            with self._tick_done:
                self.counts['percepts_pending'] -= 1
                self._tick_done.notify_all()
        return first[0] if first else None

    # -- the turn ----------------------------------------------------------------------------
    def turn(self, first: Percept | None, *, force: bool = False, budget: int = MAX_CHAIN,
             timeout_s: float = math.inf, settle_s: float = 0.0, poll_s: float = 0.2,
             arrivals: Callable[[], Iterable[Percept]] | None = None,
             on_step: Callable[[Any], None] | None = None,
             clock: Callable[[], float] = time.monotonic,
             sleep: Callable[[float], None] = time.sleep) -> TurnEnd:
        """Passes on `first`, then on what each act brought and on what `arrivals` gives
        (asked before each pass and while settling), until the turn ends (module
        docstring). `on_step` sees every pass as it ends."""
        end, pending = TurnEnd(), deque([first] if first is not None else [])
        start = last_act = clock()
        while not self._stop.is_set():
            if arrivals is not None:
                pending.extend(arrivals())
            if clock() - start >= timeout_s:
                end.timed_out = True
                break
            if pending:
                if end.acts >= budget:
                    end.budget_exhausted = True
                    break
                percept = pending.popleft()
                step = self.mind.step(percept, force=force or percept.source == RESULT_SOURCE)
                end.steps += 1
                if on_step is not None:
                    on_step(step)
                if step.loop.run is not None:
                    end.acts += 1
                    pending.append(result_percept(step.loop.run))
                    last_act = clock()
                continue
            if clock() - last_act >= settle_s:
                end.settled = True
                break
            sleep(max(0.0, min(poll_s, settle_s - (clock() - last_act),
                               timeout_s - (clock() - start))))
        return end

    # -- the threads -------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker thread that runs turns on offered percepts, and the idle thread
        that runs an eligibility check whenever `wake_idle` is called (a timer of robot
        time)."""
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name='mind', daemon=True)
            self._worker.start()
        if self.mind.idle is not None and self._idle_worker is None:
            self._idle_worker = threading.Thread(target=self._idle_work, name='mind-idle',
                                                 daemon=True)
            self._idle_worker.start()

    @property
    def running(self) -> bool:
        """The worker thread is alive: started and not stopped."""
        return self._worker is not None and self._worker.is_alive() and not self._stop.is_set()

    def _work(self) -> None:
        while not self._stop.is_set():
            self.run_next(0.2)

    def wake_idle(self) -> None:
        """Ask the idle thread for one eligibility check at the robot clock's now."""
        self._idle_wake.set()

    def _idle_work(self) -> None:
        while not self._stop.is_set():
            if self._idle_wake.wait(timeout=0.2):
                self._idle_wake.clear()
                self.mind.idle_tick(self.mind.robot_clock())

    def ticked(self, now: float) -> None:
        """An eligibility check at robot time `now` has finished."""
        with self._tick_done:
            self.idle_ticked_at = max(self.idle_ticked_at, now)
            self._tick_done.notify_all()

    def wait_for_idle_check(self, robot_time: float, timeout_s: float) -> bool:
        """Block until the eligibility check at or after `robot_time` has finished and no
        percept is waiting or being deliberated; False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._tick_done:
            while self.idle_ticked_at < robot_time or self.counts['percepts_pending']:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._tick_done.wait(min(0.05, remaining))
        return True

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the threads (a running deliberation is cancelled). Both are told first, then
        joined against deadlines that start together: the mind's thread `timeout_s` from now,
        the idle thread (an idle task may be mid-step) twice that, so the stop waits at most
        2 * timeout_s, not the sum."""
        start = time.monotonic()
        self._stop.set()
        self.mind.cancel()
        for thread, limit in ((self._worker, timeout_s), (self._idle_worker, 2 * timeout_s)):
            if thread is not None:
                thread.join(timeout=max(0.0, start + limit - time.monotonic()))
