"""IDLE-1: the robot is idle when no task is eligible to run, and it says why.

Not "no active task": tasks that exist but wait (backoff, a prerequisite, a pause, a tripped
circuit breaker) are not work the robot can do now, and idle introspection must know which
of these it is. Reason names and their order match maxim_interfaces/IdleEvent REASON_*.

When the open tasks wait for different reasons, the reason reported is the one that will
resolve by itself soonest: backoff (time alone clears it), then prerequisites (other work
clears it), then manual pause (only a person clears it).
"""

from dataclasses import dataclass

from .tasks import CircuitBreaker, TaskStore

NO_TASKS = 'no_tasks'
ALL_IN_BACKOFF = 'all_in_backoff'
CIRCUIT_BREAKER_OPEN = 'circuit_breaker_open'
BLOCKED_ON_PREREQ = 'blocked_on_prereq'
MANUAL_PAUSE = 'manual_pause'
REASONS = (NO_TASKS, ALL_IN_BACKOFF, CIRCUIT_BREAKER_OPEN, BLOCKED_ON_PREREQ, MANUAL_PAUSE)


@dataclass(frozen=True)
class IdleStatus:
    """What an IdleEvent carries. `reason` is None when some task is eligible (not idle)."""

    reason: str | None
    task_count: int             # open tasks
    eligible_count: int
    next_eligible_in_s: float   # -1 when nothing becomes eligible by time alone

    @property
    def idle(self) -> bool:
        return self.reason is not None

    @property
    def reason_index(self) -> int:
        """IdleEvent.REASON_* of the reason (only meaningful when idle)."""
        return REASONS.index(self.reason) if self.reason else -1


def assess(store: TaskStore, breaker: CircuitBreaker | None, now: float) -> IdleStatus:
    """Eligibility of the open tasks at `now`, and the idle reason if none is eligible."""
    tasks = store.tasks(open_only=True)
    if not tasks:
        return IdleStatus(NO_TASKS, 0, 0, -1.0)
    breaker_open = breaker is not None and not breaker.allows(now)
    waits: list[float] = []
    kinds = set()
    eligible = 0
    for task in tasks:
        if task.manual_pause:
            kinds.add(MANUAL_PAUSE)
        elif store.blocked_by_prereq(task):
            kinds.add(BLOCKED_ON_PREREQ)
        elif task.status != 'active' and task.next_eligible_at > now:
            kinds.add(ALL_IN_BACKOFF)
            waits.append(task.next_eligible_at - now)
        else:
            eligible += 1
            waits.append(0.0)
    next_in = min(waits) if waits else -1.0
    if breaker_open:
        wait = breaker.remaining_s(now)
        next_in = max(wait, next_in) if waits else wait
        return IdleStatus(CIRCUIT_BREAKER_OPEN, len(tasks), 0, next_in)
    if eligible:
        return IdleStatus(None, len(tasks), eligible, 0.0)
    for reason in (ALL_IN_BACKOFF, BLOCKED_ON_PREREQ, MANUAL_PAUSE):
        if reason in kinds:
            return IdleStatus(reason, len(tasks), 0, next_in)
    raise RuntimeError('an open task was neither eligible nor waiting')   # unreachable


def idle_reason(store: TaskStore, breaker: CircuitBreaker | None, now: float) -> str | None:
    """The idle reason at `now`, or None when some task is eligible."""
    return assess(store, breaker, now).reason
