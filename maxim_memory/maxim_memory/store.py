"""SQLite persistence of the memory layers, their graphs and the learned state.

Why these choices:
- WAL journal with `synchronous=FULL` by default: a record is durable (survives kill -9 and
  power loss) as soon as `put_record()` returns. `synchronous='NORMAL'` keeps durability across
  a process crash but may lose the last commits on power loss (a stated, configurable window).
- The file is checked before it is used: a file that is not SQLite, a truncated or corrupt
  one, or another program's database is reported with a typed error and moved aside to
  `<name>.corrupt-<timestamp>` (with its -wal/-shm). The store never writes over a file it
  failed to read, and never empties one silently.
- The schema is versioned (`PRAGMA user_version` and a `schema_migrations` table), with
  ordered migrations applied in one transaction each.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
import json
import logging
import os
from pathlib import Path
import sqlite3
import threading
import time
from typing import Any, Callable, Iterable

log = logging.getLogger(__name__)

APPLICATION_ID = 0x4D584D4D  # 'MXMM': marks a Maxim memory database
SQLITE_HEADER = b'SQLite format 3\x00'


class StoreError(RuntimeError):
    """Base of the persistence errors."""


class CorruptStoreError(StoreError):
    """The database file could not be read; it was moved aside (see `moved_to`)."""

    def __init__(self, path: Path, reason: str, moved_to: Path | None):
        self.path = path
        self.reason = reason
        self.moved_to = moved_to
        where = f'; moved aside to {moved_to}' if moved_to else ''
        super().__init__(f'memory database {path} is unreadable: {reason}{where}')


class ForeignStoreError(CorruptStoreError):
    """A valid SQLite file that belongs to another program; it was moved aside."""


class SchemaVersionError(StoreError):
    """The database was written by a newer Maxim; it is left untouched."""


def _create_v1(db: sqlite3.Connection) -> None:
    db.execute('CREATE TABLE records (layer TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL,'
               ' created_at REAL NOT NULL, data TEXT NOT NULL, PRIMARY KEY (layer, id))')
    db.execute('CREATE INDEX records_created ON records (layer, created_at)')
    db.execute('CREATE TABLE state (name TEXT PRIMARY KEY, data TEXT NOT NULL,'
               ' updated_at REAL NOT NULL)')
    db.execute('CREATE TABLE edges (graph TEXT NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL,'
               ' type TEXT NOT NULL, weight REAL NOT NULL, data TEXT NOT NULL,'
               ' PRIMARY KEY (graph, src, dst, type))')


# (version, description, function). Append only; never edit an applied migration.
MIGRATIONS: list[tuple[int, str, Callable[[sqlite3.Connection], None]]] = [
    (1, 'records, state and edges tables', _create_v1),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


@dataclass(frozen=True)
class EdgeRow:
    src: str
    dst: str
    type: str
    weight: float
    data: dict[str, Any]


class MemoryStore:
    """One SQLite file holding every layer; thread-safe (one connection behind a lock)."""

    def __init__(self, path: str | os.PathLike, synchronous: str = 'FULL',
                 clock: Callable[[], float] = time.time, busy_timeout_s: float = 5.0):
        if synchronous.upper() not in ('FULL', 'NORMAL', 'EXTRA'):
            raise ValueError(f'synchronous must be FULL, NORMAL or EXTRA, not {synchronous!r}')
        self.path = Path(os.path.expanduser(str(path)))
        self._clock = clock
        self._lock = threading.RLock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existed = self.path.exists() and self.path.stat().st_size > 0
        if existed:
            self._check_header()
        try:
            self._db = sqlite3.connect(str(self.path), timeout=busy_timeout_s,
                                       check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise self._set_aside(CorruptStoreError, f'cannot open: {exc}') from exc
        try:
            self._validate_and_migrate(existed)
            self._db.execute('PRAGMA journal_mode=WAL')
            self._db.execute(f'PRAGMA synchronous={synchronous.upper()}')
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise self._set_aside(CorruptStoreError, f'unreadable: {exc}') from exc
        except StoreError:
            self._db.close()
            raise

    # --- opening -------------------------------------------------------------------------------

    def _check_header(self) -> None:
        with open(self.path, 'rb') as f:
            head = f.read(len(SQLITE_HEADER))
        if head != SQLITE_HEADER:
            raise self._set_aside(CorruptStoreError, 'not an SQLite database (bad header)')

    def _validate_and_migrate(self, existed: bool) -> None:
        db = self._db
        check = db.execute('PRAGMA quick_check').fetchone()[0]
        if check != 'ok':
            raise self._set_aside(CorruptStoreError, f'integrity check failed: {check}')
        app_id = db.execute('PRAGMA application_id').fetchone()[0]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if app_id != APPLICATION_ID and (tables or existed):
            raise self._set_aside(ForeignStoreError,
                                  f'application_id {app_id:#x} is not a Maxim memory database')
        version = db.execute('PRAGMA user_version').fetchone()[0]
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(f'{self.path} has schema version {version}, this Maxim '
                                     f'knows up to {SCHEMA_VERSION}; refusing to touch it')
        if not existed:
            db.execute(f'PRAGMA application_id={APPLICATION_ID}')
        db.execute('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,'
                   ' description TEXT NOT NULL, applied_at REAL NOT NULL)')
        for number, description, apply in MIGRATIONS:
            if number <= version:
                continue
            db.execute('BEGIN IMMEDIATE')
            try:
                apply(db)
                db.execute('INSERT INTO schema_migrations VALUES (?, ?, ?)',
                           (number, description, self._clock()))
                db.execute(f'PRAGMA user_version={number}')
                db.execute('COMMIT')
            except sqlite3.Error:
                db.execute('ROLLBACK')
                raise

    def _set_aside(self, error_cls: type[CorruptStoreError], reason: str) -> CorruptStoreError:
        """Move the unreadable file (and its -wal/-shm) aside; return the error to raise."""
        if getattr(self, '_db', None) is not None:
            try:
                self._db.close()
            except sqlite3.Error as exc:  # a broken handle may not close; move the file anyway
                log.warning('closing unreadable %s failed: %s', self.path, exc)
        stamp = time.strftime('%Y%m%dT%H%M%S', time.gmtime(self._clock()))
        target = self.path.with_name(f'{self.path.name}.corrupt-{stamp}')
        n = 1
        while target.exists():
            target = self.path.with_name(f'{self.path.name}.corrupt-{stamp}-{n}')
            n += 1
        moved = None
        if self.path.exists():
            os.replace(self.path, target)
            moved = target
            for suffix in ('-wal', '-shm'):
                side = Path(str(self.path) + suffix)
                if side.exists():
                    os.replace(side, Path(str(target) + suffix))
        return error_cls(self.path, reason, moved)

    # --- records -------------------------------------------------------------------------------

    def put_record(self, layer: str, record: dict[str, Any]) -> None:
        """Insert or replace one record; durable when this returns."""
        self.put_records(layer, [record])

    @contextmanager
    def _transaction(self):
        """One write transaction under the lock: committed whole or rolled back whole."""
        with self._lock:
            self._db.execute('BEGIN IMMEDIATE')
            try:
                yield self._db
                self._db.execute('COMMIT')
            except sqlite3.Error:
                self._db.execute('ROLLBACK')
                raise

    @staticmethod
    def _record_rows(layer: str, records: Iterable[dict[str, Any]]) -> list[tuple]:
        return [(layer, r['id'], r['kind'], float(r.get('created_at', 0.0)),
                 json.dumps(r, separators=(',', ':'))) for r in records]

    @staticmethod
    def _edge_rows(graph: str, edges: Iterable[EdgeRow]) -> list[tuple]:
        return [(graph, e.src, e.dst, e.type, float(e.weight),
                 json.dumps(e.data, separators=(',', ':'))) for e in edges]

    def put_records(self, layer: str, records: Iterable[dict[str, Any]]) -> int:
        rows = self._record_rows(layer, records)
        with self._transaction() as db:
            db.executemany('INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?, ?)', rows)
        return len(rows)

    def delete_records(self, layer: str, ids: Iterable[str]) -> None:
        with self._transaction() as db:
            db.executemany('DELETE FROM records WHERE layer = ? AND id = ?',
                           [(layer, i) for i in ids])

    def replace_layer(self, layer: str, records: Iterable[dict[str, Any]]) -> int:
        """Make the layer's rows exactly `records`, in one transaction (a snapshot save)."""
        rows = self._record_rows(layer, records)
        with self._transaction() as db:
            db.execute('DELETE FROM records WHERE layer = ?', (layer,))
            db.executemany('INSERT INTO records VALUES (?, ?, ?, ?, ?)', rows)
        return len(rows)

    def get_record(self, layer: str, record_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute('SELECT data FROM records WHERE layer = ? AND id = ?',
                                   (layer, record_id)).fetchone()
        return json.loads(row[0]) if row else None

    def load_records(self, layer: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute('SELECT data FROM records WHERE layer = ? ORDER BY created_at',
                                    (layer,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def record_ids(self, layer: str) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute('SELECT id FROM records WHERE layer = ?',
                                                   (layer,))]

    def count(self, layer: str | None = None) -> int:
        with self._lock:
            if layer is None:
                return self._db.execute('SELECT COUNT(*) FROM records').fetchone()[0]
            return self._db.execute('SELECT COUNT(*) FROM records WHERE layer = ?',
                                    (layer,)).fetchone()[0]

    # --- named state (NAc, SCN, pain, registry) -----------------------------------------------

    def put_state(self, name: str, data: Any) -> None:
        with self._lock:
            self._db.execute('INSERT OR REPLACE INTO state VALUES (?, ?, ?)',
                             (name, json.dumps(data, separators=(',', ':')), self._clock()))

    def get_state(self, name: str) -> Any | None:
        with self._lock:
            row = self._db.execute('SELECT data FROM state WHERE name = ?', (name,)).fetchone()
        return json.loads(row[0]) if row else None

    # --- graph edges ---------------------------------------------------------------------------

    def replace_edges(self, graph: str, edges: Iterable[EdgeRow]) -> int:
        rows = self._edge_rows(graph, edges)
        with self._transaction() as db:
            db.execute('DELETE FROM edges WHERE graph = ?', (graph,))
            db.executemany('INSERT OR REPLACE INTO edges VALUES (?, ?, ?, ?, ?, ?)', rows)
        return len(rows)

    def put_edges(self, graph: str, edges: Iterable[EdgeRow]) -> int:
        """Add or update edges (incremental; `replace_edges` is the full snapshot)."""
        rows = self._edge_rows(graph, edges)
        with self._transaction() as db:
            db.executemany('INSERT OR REPLACE INTO edges VALUES (?, ?, ?, ?, ?, ?)', rows)
        return len(rows)

    def load_edges(self, graph: str) -> list[EdgeRow]:
        with self._lock:
            rows = self._db.execute('SELECT src, dst, type, weight, data FROM edges'
                                    ' WHERE graph = ?', (graph,)).fetchall()
        return [EdgeRow(s, d, t, w, json.loads(x)) for s, d, t, w, x in rows]

    # --- housekeeping --------------------------------------------------------------------------

    def schema_version(self) -> int:
        with self._lock:
            return self._db.execute('PRAGMA user_version').fetchone()[0]

    def migrations(self) -> list[tuple[int, str]]:
        with self._lock:
            return [(v, d) for v, d in self._db.execute(
                'SELECT version, description FROM schema_migrations ORDER BY version')]

    def checkpoint(self) -> None:
        with self._lock:
            self._db.execute('PRAGMA wal_checkpoint(TRUNCATE)')

    def size_bytes(self) -> int:
        total = 0
        for suffix in ('', '-wal'):
            p = Path(str(self.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> 'MemoryStore':
        return self

    def __exit__(self, *exc) -> None:
        self.close()
