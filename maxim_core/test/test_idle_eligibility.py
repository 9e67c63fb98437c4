"""IDLE-1: idle only when no task is eligible, with the reason."""

import pytest

from maxim_core.idle.eligibility import (ALL_IN_BACKOFF, assess, BLOCKED_ON_PREREQ,
                                         CIRCUIT_BREAKER_OPEN, idle_reason, MANUAL_PAUSE,
                                         NO_TASKS, REASONS)
from maxim_core.idle.tasks import CircuitBreaker, TaskStore

NOW = 5000.0


@pytest.fixture
def store(tmp_path):
    s = TaskStore(str(tmp_path / 'tasks.db'), clock=lambda: NOW)
    yield s
    s.close()


def test_reason_order_matches_the_idle_event_constants():
    assert REASONS == ('no_tasks', 'all_in_backoff', 'circuit_breaker_open',
                       'blocked_on_prereq', 'manual_pause')


def test_no_tasks(store):
    status = assess(store, CircuitBreaker(), NOW)
    assert status.reason == NO_TASKS and status.idle and status.reason_index == 0
    assert status.next_eligible_in_s == -1


def test_an_eligible_task_means_not_idle(store):
    store.add('scan room 1')
    store.add('track ball 1', next_eligible_at=NOW + 100)
    status = assess(store, CircuitBreaker(), NOW)
    assert status.reason is None and status.eligible_count == 1 and not status.idle
    assert idle_reason(store, CircuitBreaker(), NOW) is None


def test_all_in_backoff_even_though_tasks_exist(store):
    for i, wait in enumerate((30, 90, 60)):
        store.add(f'scan room {i + 1}', next_eligible_at=NOW + wait)
    status = assess(store, CircuitBreaker(), NOW)
    assert status.reason == ALL_IN_BACKOFF and status.task_count == 3
    assert status.eligible_count == 0 and status.next_eligible_in_s == 30
    assert idle_reason(store, None, NOW + 30) is None


def test_active_task_is_not_idle(store):
    t = store.add('scan room 1')
    store.start(t.task_id)
    assert idle_reason(store, CircuitBreaker(), NOW) is None


def test_circuit_breaker_open_overrides(store):
    store.add('scan room 1')
    breaker = CircuitBreaker(failure_threshold=1, cooldown_s=50)
    breaker.record_failure(NOW)
    status = assess(store, breaker, NOW + 10)
    assert status.reason == CIRCUIT_BREAKER_OPEN and status.next_eligible_in_s == 40
    assert idle_reason(store, breaker, NOW + 50) is None      # half-open: a trial may run


def test_blocked_on_prereq_and_manual_pause(store):
    first = store.add('look_at door 1', manual_pause=True)
    store.add('track ball 1', prerequisites=[first.task_id])
    assert idle_reason(store, CircuitBreaker(), NOW) == BLOCKED_ON_PREREQ
    store.cancel(store.tasks(open_only=True)[1].task_id)
    assert idle_reason(store, CircuitBreaker(), NOW) == MANUAL_PAUSE


def test_mixed_waits_report_the_one_time_clears(store):
    store.add('scan room 1', manual_pause=True)
    store.add('scan room 2', next_eligible_at=NOW + 20)
    status = assess(store, CircuitBreaker(), NOW)
    assert status.reason == ALL_IN_BACKOFF and status.next_eligible_in_s == 20
