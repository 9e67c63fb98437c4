"""The agent's task store and the executor's circuit breaker.

Tasks persist in SQLite (WAL, `synchronous=FULL`: a call that returns has reached the disk),
so a restarted robot still knows what it was doing, which tasks are cooling down and why.
A task that fails waits `backoff_base_s * 2**(attempts-1)` seconds (capped) before it is
eligible again, and is given up after `max_attempts`. A corrupt database file is reported and
moved aside, never overwritten: the robot starts with an empty store and the file stays for
a person to look at.

Statuses are names whose index in STATUSES is the Task.msg STATUS_* constant.
"""

from dataclasses import dataclass, field, replace
import logging
import os
import sqlite3
import threading
import time
from typing import Callable
import uuid

PENDING = 'pending'
ACTIVE = 'active'
DONE = 'done'
FAILED = 'failed'
PAUSED = 'paused'
STATUSES = (PENDING, ACTIVE, DONE, FAILED, PAUSED)   # index == Task.msg STATUS_*
OPEN_STATUSES = (PENDING, ACTIVE, PAUSED)
ORIGINS = ('user', 'idle_intent', 'scenario')

SCHEMA_VERSION = 1

log = logging.getLogger(__name__)


class TaskError(ValueError):
    """A request the store cannot accept (bad goal, unknown prerequisite, closed task...)."""


class TaskNotFound(KeyError):
    """No task with that id."""


@dataclass(frozen=True)
class Task:
    """One task (maps onto maxim_interfaces/Task)."""

    task_id: str
    goal: str                       # 'action target amount', the content of a [GOAL: ...] tag
    status: str = PENDING
    attempts: int = 0
    next_eligible_at: float = 0.0   # robot time (s since the epoch)
    prerequisites: tuple = ()
    manual_pause: bool = False
    origin: str = 'user'
    created_at: float = 0.0
    updated_at: float = 0.0
    last_error: str = ''
    last_failure_deterministic: bool = False

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES


@dataclass(frozen=True)
class Failure:
    """One recorded failure of a task (the novelty gate reads these)."""

    task_id: str
    goal: str
    at: float
    deterministic: bool
    error: str


@dataclass
class TaskStoreConfig:
    """Backoff and retention of the store."""

    backoff_base_s: float = 30.0
    backoff_max_s: float = 3600.0
    max_attempts: int = 5
    max_closed: int = 500          # done/failed tasks kept; older ones are pruned
    max_failures: int = 1000       # failure rows kept

    def __post_init__(self):
        if self.backoff_base_s < 0 or self.backoff_max_s < self.backoff_base_s:
            raise ValueError('need 0 <= backoff_base_s <= backoff_max_s')
        if self.max_attempts < 1 or self.max_closed < 0 or self.max_failures < 0:
            raise ValueError('max_attempts must be >= 1, retention limits >= 0')


_SCHEMA = '''
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY,
    goal TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_eligible_at REAL NOT NULL,
    prerequisites TEXT NOT NULL,
    manual_pause INTEGER NOT NULL,
    origin TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    last_error TEXT NOT NULL,
    last_failure_deterministic INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    goal TEXT NOT NULL,
    at REAL NOT NULL,
    deterministic INTEGER NOT NULL,
    error TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS failures_at ON failures(at);
'''

_COLUMNS = ('task_id', 'goal', 'status', 'attempts', 'next_eligible_at', 'prerequisites',
            'manual_pause', 'origin', 'created_at', 'updated_at', 'last_error',
            'last_failure_deterministic')


def _row_to_task(row) -> Task:
    d = dict(zip(_COLUMNS, row))
    prereqs = tuple(p for p in d['prerequisites'].split(',') if p)
    return Task(d['task_id'], d['goal'], d['status'], int(d['attempts']),
                float(d['next_eligible_at']), prereqs, bool(d['manual_pause']), d['origin'],
                float(d['created_at']), float(d['updated_at']), d['last_error'],
                bool(d['last_failure_deterministic']))


def _task_to_row(t: Task) -> tuple:
    return (t.task_id, t.goal, t.status, t.attempts, t.next_eligible_at,
            ','.join(t.prerequisites), int(t.manual_pause), t.origin, t.created_at,
            t.updated_at, t.last_error, int(t.last_failure_deterministic))


class TaskStore:
    """Tasks with status, attempts, backoff, prerequisites and manual pause, in SQLite.

    Thread-safe (one lock): the agent node's executor and its services may share it.
    `corruption` holds the path the corrupt file was moved to, when that happened on open.
    """

    def __init__(self, path: str, config: TaskStoreConfig | None = None,
                 clock: Callable[[], float] = time.time):
        if not path:
            raise TaskError('a task store needs a file path')
        self.path = str(path)
        self.config = config or TaskStoreConfig()
        self.clock = clock
        self.corruption: str | None = None
        self._lock = threading.Lock()
        parent = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(parent, exist_ok=True)
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            self.corruption = self._move_aside(str(exc))
            self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                               timeout=5.0)
        try:
            conn.execute('PRAGMA journal_mode=WAL')
            conn.execute('PRAGMA synchronous=FULL')
            check = conn.execute('PRAGMA quick_check').fetchone()
            if not check or check[0] != 'ok':
                raise sqlite3.DatabaseError(f'quick_check: {check[0] if check else "no answer"}')
            version = conn.execute('PRAGMA user_version').fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise sqlite3.DatabaseError(f'unknown schema version {version}')
            conn.executescript(_SCHEMA)
            conn.execute(f'PRAGMA user_version={SCHEMA_VERSION}')
            conn.execute('SELECT count(*) FROM tasks').fetchone()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _move_aside(self, why: str) -> str:
        stamp = time.strftime('%Y%m%dT%H%M%S', time.gmtime())
        target = f'{self.path}.corrupt-{stamp}-{uuid.uuid4().hex[:6]}'
        os.replace(self.path, target)
        for suffix in ('-wal', '-shm'):
            if os.path.exists(self.path + suffix):
                os.replace(self.path + suffix, target + suffix)
        log.error('task store %s is corrupt (%s); moved aside to %s, starting empty',
                  self.path, why, target)
        return target

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # Reading -----------------------------------------------------------------------------

    def get(self, task_id: str) -> Task:
        with self._lock:
            return self._get(task_id)

    def _get(self, task_id: str) -> Task:
        row = self._conn.execute(
            f'SELECT {",".join(_COLUMNS)} FROM tasks WHERE task_id=?', (task_id,)).fetchone()
        if row is None:
            raise TaskNotFound(task_id)
        return _row_to_task(row)

    def tasks(self, open_only: bool = False) -> list[Task]:
        """All tasks (or the open ones: pending, active, paused), oldest first."""
        query = f'SELECT {",".join(_COLUMNS)} FROM tasks'
        if open_only:
            query += f' WHERE status IN ({",".join("?" * len(OPEN_STATUSES))})'
        query += ' ORDER BY created_at, rowid'
        with self._lock:
            rows = self._conn.execute(query, OPEN_STATUSES if open_only else ()).fetchall()
        return [_row_to_task(r) for r in rows]

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute('SELECT count(*) FROM tasks').fetchone()[0])

    def blocked_by_prereq(self, task: Task) -> bool:
        """True when a prerequisite is not done (a missing prerequisite also blocks)."""
        if not task.prerequisites:
            return False
        with self._lock:
            rows = dict(self._conn.execute(
                f'SELECT task_id, status FROM tasks WHERE task_id IN '
                f'({",".join("?" * len(task.prerequisites))})', task.prerequisites).fetchall())
        return any(rows.get(p) != DONE for p in task.prerequisites)

    def is_eligible(self, task: Task, now: float) -> bool:
        """May the executor run it now? An active task counts: it is being run."""
        if task.status == ACTIVE:
            return True
        return (task.status == PENDING and not task.manual_pause
                and task.next_eligible_at <= now and not self.blocked_by_prereq(task))

    def eligible(self, now: float) -> list[Task]:
        return [t for t in self.tasks(open_only=True) if self.is_eligible(t, now)]

    def recent_failures(self, window_s: float, now: float,
                        deterministic_only: bool = False) -> list[Failure]:
        query = 'SELECT task_id, goal, at, deterministic, error FROM failures WHERE at >= ?'
        if deterministic_only:
            query += ' AND deterministic = 1'
        with self._lock:
            rows = self._conn.execute(query + ' ORDER BY at', (now - window_s,)).fetchall()
        return [Failure(r[0], r[1], float(r[2]), bool(r[3]), r[4]) for r in rows]

    # Writing -----------------------------------------------------------------------------

    def add(self, goal: str, *, origin: str = 'user', prerequisites=(),
            task_id: str | None = None, manual_pause: bool = False,
            next_eligible_at: float = 0.0) -> Task:
        goal = ' '.join(str(goal).split())
        if not goal:
            raise TaskError('a task needs a goal')
        if origin not in ORIGINS:
            raise TaskError(f'origin must be one of {ORIGINS}, not {origin!r}')
        prerequisites = tuple(str(p) for p in prerequisites)
        if any(not p or ',' in p for p in prerequisites):
            raise TaskError('prerequisite ids must be non-empty and contain no comma')
        task_id = task_id or uuid.uuid4().hex[:12]
        if ',' in task_id:
            raise TaskError('a task id may not contain a comma')
        if task_id in prerequisites:
            raise TaskError('a task cannot be its own prerequisite')
        now = self.clock()
        task = Task(task_id, goal, PAUSED if manual_pause else PENDING, 0,
                    float(next_eligible_at), prerequisites, bool(manual_pause), origin, now, now)
        with self._lock:
            for p in prerequisites:
                self._get(p)    # raises TaskNotFound for an unknown prerequisite
            try:
                self._conn.execute(
                    f'INSERT INTO tasks ({",".join(_COLUMNS)}) VALUES '
                    f'({",".join("?" * len(_COLUMNS))})', _task_to_row(task))
            except sqlite3.IntegrityError as exc:
                raise TaskError(f'task {task_id!r} already exists') from exc
        return task

    def _update(self, task_id: str, change: Callable[[Task], Task],
                also: Callable[[Task], tuple] | None = None) -> Task:
        """Apply `change` (and the extra statement `also(task)` gives) in one transaction."""
        with self._lock:
            task = change(self._get(task_id))
            task = replace(task, updated_at=self.clock())
            self._conn.execute('BEGIN IMMEDIATE')
            try:
                self._conn.execute(
                    f'UPDATE tasks SET {",".join(c + "=?" for c in _COLUMNS[1:])} '
                    'WHERE task_id=?', _task_to_row(task)[1:] + (task.task_id,))
                if also is not None:
                    self._conn.execute(*also(task))
            except sqlite3.Error:
                self._conn.execute('ROLLBACK')
                raise
            self._conn.execute('COMMIT')
        return task

    @staticmethod
    def _require_open(task: Task) -> None:
        if not task.is_open:
            raise TaskError(f'task {task.task_id} is {task.status}')

    def start(self, task_id: str) -> Task:
        """The executor takes the task."""
        def change(t: Task) -> Task:
            self._require_open(t)
            if t.manual_pause:
                raise TaskError(f'task {task_id} is paused')
            return replace(t, status=ACTIVE)
        return self._update(task_id, change)

    def succeed(self, task_id: str) -> Task:
        def change(t: Task) -> Task:
            self._require_open(t)
            return replace(t, status=DONE, last_error='')
        task = self._update(task_id, change)
        self._prune()
        return task

    def fail(self, task_id: str, error: str = '', deterministic: bool = False) -> Task:
        """Record a failed attempt: back off exponentially, give up after max_attempts.

        `deterministic` says the same attempt would fail the same way (the novelty gate uses
        it to keep idle introspection from proposing the goal again soon).
        """
        cfg = self.config
        now = self.clock()

        def change(t: Task) -> Task:
            self._require_open(t)
            attempts = t.attempts + 1
            delay = min(cfg.backoff_base_s * 2 ** (attempts - 1), cfg.backoff_max_s)
            status = FAILED if attempts >= cfg.max_attempts else (
                PAUSED if t.manual_pause else PENDING)
            return replace(t, status=status, attempts=attempts, next_eligible_at=now + delay,
                           last_error=str(error), last_failure_deterministic=bool(deterministic))

        def failure_row(t: Task) -> tuple:
            return ('INSERT INTO failures (task_id, goal, at, deterministic, error) '
                    'VALUES (?, ?, ?, ?, ?)', (t.task_id, t.goal, now, int(deterministic),
                                               str(error)))
        task = self._update(task_id, change, failure_row)
        self._prune()
        return task

    def pause(self, task_id: str) -> Task:
        def change(t: Task) -> Task:
            self._require_open(t)
            return replace(t, status=PAUSED, manual_pause=True)
        return self._update(task_id, change)

    def resume(self, task_id: str) -> Task:
        def change(t: Task) -> Task:
            self._require_open(t)
            return replace(t, status=PENDING, manual_pause=False)
        return self._update(task_id, change)

    def cancel(self, task_id: str) -> Task:
        """Close an open task as failed with the error 'cancelled' (Task.msg has no
        cancelled status)."""
        def change(t: Task) -> Task:
            self._require_open(t)
            return replace(t, status=FAILED, last_error='cancelled')
        task = self._update(task_id, change)
        self._prune()
        return task

    def _prune(self) -> None:
        """Keep the store bounded: the newest closed tasks and failures only."""
        cfg = self.config
        with self._lock:
            self._conn.execute(
                'DELETE FROM tasks WHERE status IN (?, ?) AND task_id NOT IN ('
                'SELECT task_id FROM tasks WHERE status IN (?, ?) '
                'ORDER BY updated_at DESC, rowid DESC LIMIT ?)',
                (DONE, FAILED, DONE, FAILED, cfg.max_closed))
            self._conn.execute(
                'DELETE FROM failures WHERE id NOT IN ('
                'SELECT id FROM failures ORDER BY id DESC LIMIT ?)', (cfg.max_failures,))


# Circuit breaker --------------------------------------------------------------------------

CLOSED = 'closed'
OPEN = 'open'
HALF_OPEN = 'half_open'


@dataclass
class CircuitBreaker:
    """Protects the executor: open after `failure_threshold` consecutive failures, half-open
    (one trial allowed) once `cooldown_s` has passed; a success closes it, a failure while
    half-open opens it again."""

    failure_threshold: int = 3
    cooldown_s: float = 120.0
    consecutive_failures: int = 0
    opened_at: float | None = None
    trips: int = field(default=0)

    def __post_init__(self):
        if self.failure_threshold < 1 or self.cooldown_s < 0:
            raise ValueError('failure_threshold must be >= 1 and cooldown_s >= 0')

    def state(self, now: float) -> str:
        if self.opened_at is None:
            return CLOSED
        return HALF_OPEN if now - self.opened_at >= self.cooldown_s else OPEN

    def allows(self, now: float) -> bool:
        return self.state(now) != OPEN

    def remaining_s(self, now: float) -> float:
        """Seconds until half-open; 0 when not open."""
        if self.state(now) != OPEN:
            return 0.0
        return self.opened_at + self.cooldown_s - now

    def record_success(self, now: float) -> None:
        self.consecutive_failures = 0
        self.opened_at = None

    def record_failure(self, now: float) -> None:
        if self.state(now) == HALF_OPEN:
            self.opened_at = now
            self.trips += 1
            return
        self.consecutive_failures += 1
        if self.opened_at is None and self.consecutive_failures >= self.failure_threshold:
            self.opened_at = now
            self.trips += 1
