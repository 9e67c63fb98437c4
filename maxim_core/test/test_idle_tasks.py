"""The task store (real SQLite) and the executor's circuit breaker."""

import os
import sqlite3

import pytest

from maxim_core.idle.tasks import (ACTIVE, CircuitBreaker, CLOSED, DONE, FAILED, HALF_OPEN, OPEN,
                                   PAUSED, PENDING, STATUSES, TaskError, TaskNotFound,
                                   TaskStore, TaskStoreConfig)


class Clock:
    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(tmp_path, clock):
    s = TaskStore(str(tmp_path / 'tasks.db'), TaskStoreConfig(backoff_base_s=10,
                                                              backoff_max_s=60,
                                                              max_attempts=4), clock=clock)
    yield s
    s.close()


def test_status_names_follow_the_message_constants():
    assert STATUSES.index(PENDING) == 0 and STATUSES.index(ACTIVE) == 1
    assert STATUSES.index(DONE) == 2 and STATUSES.index(FAILED) == 3
    assert STATUSES.index(PAUSED) == 4


def test_add_get_and_goal_normalised(store):
    t = store.add('  look_at   door 1 ', origin='user')
    got = store.get(t.task_id)
    assert got.goal == 'look_at door 1'
    assert got.status == PENDING and got.attempts == 0 and got.origin == 'user'
    assert store.count() == 1 and store.tasks(open_only=True) == [got]


def test_bad_input_is_a_typed_error(store):
    with pytest.raises(TaskError):
        store.add('   ')
    with pytest.raises(TaskError):
        store.add('scan room 1', origin='somebody')
    with pytest.raises(TaskNotFound):
        store.add('scan room 1', prerequisites=['nope'])
    with pytest.raises(TaskNotFound):
        store.get('missing')
    t = store.add('scan room 1', task_id='a')
    with pytest.raises(TaskError):
        store.add('scan room 2', task_id='a')
    store.succeed(t.task_id)
    with pytest.raises(TaskError):
        store.fail(t.task_id, 'late')


def test_exponential_backoff_then_given_up(store, clock):
    t = store.add('track ball 1')
    delays = []
    for _ in range(3):
        store.start(t.task_id)
        t = store.fail(t.task_id, 'lost the target')
        delays.append(t.next_eligible_at - clock.t)
        assert t.status == PENDING
        assert not store.is_eligible(t, clock.t)
        assert store.is_eligible(t, t.next_eligible_at)
    assert delays == [10, 20, 40]
    t = store.fail(t.task_id, 'lost the target', deterministic=True)
    assert t.status == FAILED and t.attempts == 4 and t.last_failure_deterministic
    failures = store.recent_failures(3600, clock.t)
    assert len(failures) == 4
    assert [f.goal for f in store.recent_failures(3600, clock.t, deterministic_only=True)] \
        == ['track ball 1']


def test_backoff_is_capped(tmp_path, clock):
    s = TaskStore(str(tmp_path / 'c.db'), TaskStoreConfig(backoff_base_s=10, backoff_max_s=25,
                                                          max_attempts=9), clock=clock)
    t = s.add('scan room 1')
    for _ in range(4):
        t = s.fail(t.task_id)
    assert t.next_eligible_at - clock.t == 25
    s.close()


def test_prerequisites_pause_resume_cancel(store, clock):
    first = store.add('look_at door 1')
    second = store.add('track ball 1', prerequisites=[first.task_id])
    assert store.blocked_by_prereq(second) and not store.is_eligible(second, clock.t)
    store.succeed(first.task_id)
    assert store.is_eligible(store.get(second.task_id), clock.t)
    paused = store.pause(second.task_id)
    assert paused.status == PAUSED and paused.manual_pause
    assert not store.is_eligible(paused, clock.t)
    with pytest.raises(TaskError):
        store.start(second.task_id)
    resumed = store.resume(second.task_id)
    assert resumed.status == PENDING and store.is_eligible(resumed, clock.t)
    cancelled = store.cancel(second.task_id)
    assert cancelled.status == FAILED and cancelled.last_error == 'cancelled'
    assert store.tasks(open_only=True) == []


def test_persists_across_reopen_in_wal_mode(tmp_path, clock):
    path = str(tmp_path / 'p.db')
    s = TaskStore(path, clock=clock)
    t = s.add('scan room 1', task_id='t1')
    s.fail('t1', 'lost', deterministic=True)
    # Another connection sees the write at once: it is committed when the call returns.
    other = sqlite3.connect(path)
    assert other.execute('PRAGMA journal_mode').fetchone()[0] == 'wal'
    assert other.execute('SELECT attempts FROM tasks WHERE task_id=?', ('t1',)).fetchone() \
        == (1,)
    other.close()
    s.close()
    again = TaskStore(path, clock=clock)
    got = again.get(t.task_id)
    assert got.attempts == 1 and got.last_error == 'lost' and again.corruption is None
    assert len(again.recent_failures(60, clock.t)) == 1
    again.close()


def test_corrupt_file_is_moved_aside_not_overwritten(tmp_path, clock):
    path = tmp_path / 'bad.db'
    garbage = b'this is not a database at all\x00' * 200
    path.write_bytes(garbage)
    s = TaskStore(str(path), clock=clock)
    assert s.corruption is not None and os.path.exists(s.corruption)
    with open(s.corruption, 'rb') as f:
        assert f.read() == garbage
    assert s.count() == 0
    s.add('scan room 1')
    assert s.count() == 1
    s.close()


def test_closed_tasks_are_pruned(tmp_path, clock):
    s = TaskStore(str(tmp_path / 'b.db'), TaskStoreConfig(max_closed=3, max_failures=2),
                  clock=clock)
    for i in range(6):
        clock.t += 1
        t = s.add(f'scan room {i + 1}')
        if i % 2:
            s.fail(t.task_id, 'x')
            s.cancel(t.task_id)
        else:
            s.succeed(t.task_id)
    open_task = s.add('track ball 1')
    assert s.count() == 4          # 3 closed kept + the open one
    assert s.get(open_task.task_id).status == PENDING
    assert len(s.recent_failures(3600, clock.t)) == 2
    s.close()


def test_circuit_breaker_opens_half_opens_and_closes():
    b = CircuitBreaker(failure_threshold=2, cooldown_s=30)
    assert b.state(0) == CLOSED and b.allows(0)
    b.record_failure(0)
    assert b.state(1) == CLOSED
    b.record_failure(1)
    assert b.state(2) == OPEN and not b.allows(2) and b.remaining_s(2) == 29
    assert b.state(31) == HALF_OPEN and b.allows(31)
    b.record_failure(31)                   # the trial failed: open again
    assert b.state(32) == OPEN and b.trips == 2
    b.record_success(70)
    assert b.state(70) == CLOSED and b.consecutive_failures == 0
    with pytest.raises(ValueError):
        CircuitBreaker(failure_threshold=0)
