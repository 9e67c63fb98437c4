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
- A write the database refuses is a typed fault, never a lost record: a busy or locked
  database is retried within a time budget; then (and at once for a read-only file, a full
  disk or an I/O error) the write is appended to a journal beside the database
  (`<name>.journal`, JSON lines, fsync'd) and counts as stored. While the journal holds
  writes every new one goes there too (the order is kept); it is replayed into the database
  in one transaction as soon as a write succeeds again (`drain_journal`) and on the next
  open. Only when the journal cannot be written either is the write lost, and then it is a
  `StoreWriteError`: the caller must not acknowledge it.
- A database that cannot be opened at all (a directory in the way, a file written by a newer
  Maxim, an unreadable file that cannot be moved aside) gives a store in journal-only mode
  (`MemoryStore.journal_only`): every write goes to the journal until the next open.
"""

from __future__ import annotations

from dataclasses import dataclass
import json
import logging
import os
from pathlib import Path
import sqlite3
import threading
import time
from typing import Any, Callable, Iterable, Sequence
import uuid

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


class StoreOpenError(StoreError):
    """The database cannot be opened at all (a directory in its place, no permission)."""


class StoreWriteError(StoreError):
    """A write that reached neither the database nor the journal: it is NOT stored."""

    def __init__(self, fault: 'StoreFault', journal_error: str):
        self.fault = fault
        self.journal_error = journal_error
        super().__init__(f'{fault.message}; the journal failed too ({journal_error}): '
                         f'NOT stored')


# sqlite error names (sqlite3.Error.sqlite_errorname, Python 3.11+) -> fault kinds.
_FAULT_KINDS = (('SQLITE_BUSY', 'locked'), ('SQLITE_LOCKED', 'locked'),
                ('SQLITE_READONLY', 'read_only'), ('SQLITE_FULL', 'disk_full'),
                ('SQLITE_IOERR', 'io_error'), ('SQLITE_CANTOPEN', 'io_error'),
                ('SQLITE_CORRUPT', 'corrupt'), ('SQLITE_NOTADB', 'corrupt'))
_ADVICE = {
    'locked': 'another process holds the write lock',
    'read_only': 'the file or its directory is read-only',
    'disk_full': 'the disk (or the database size limit) is full: free space',
    'io_error': 'the disk reported an I/O error',
    'corrupt': 'the file is damaged',
    'unavailable': 'the database could not be opened',
}


@dataclass(frozen=True)
class StoreFault:
    """Why writes do not reach the database right now: a kind from _ADVICE, one clear line."""

    kind: str
    message: str
    since: float


def fault_kind(exc: BaseException) -> str:
    """The fault kind of a failed write (see _ADVICE)."""
    name = getattr(exc, 'sqlite_errorname', '') or ''
    for prefix, kind in _FAULT_KINDS:
        if name.startswith(prefix):
            return kind
    text = str(exc).lower()
    if 'locked' in text or 'busy' in text:
        return 'locked'
    if 'readonly' in text or 'read-only' in text:
        return 'read_only'
    if 'full' in text:
        return 'disk_full'
    return 'io_error'


# The writes the journal can hold: op name -> SQL run once per row (executemany). A journal
# names ops, never SQL: replay runs only these statements.
_OPS = {
    'put_record': 'INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?, ?)',
    'delete_record': 'DELETE FROM records WHERE layer = ? AND id = ?',
    'clear_layer': 'DELETE FROM records WHERE layer = ?',
    'put_edge': 'INSERT OR REPLACE INTO edges VALUES (?, ?, ?, ?, ?, ?)',
    'clear_edges': 'DELETE FROM edges WHERE graph = ?',
    'put_state': 'INSERT OR REPLACE INTO state VALUES (?, ?, ?)',
}
Step = tuple[str, Sequence[Sequence[Any]]]      # (op, rows)
JOURNAL_STATE = 'journal_applied'   # state row: {'jid', 'seq'} of the last entry replayed


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
                 clock: Callable[[], float] = time.time, busy_timeout_s: float = 5.0,
                 write_budget_s: float = 5.0, retry_interval_s: float = 1.0):
        if synchronous.upper() not in ('FULL', 'NORMAL', 'EXTRA'):
            raise ValueError(f'synchronous must be FULL, NORMAL or EXTRA, not {synchronous!r}')
        self._setup(path, clock, busy_timeout_s, write_budget_s, retry_interval_s)
        if self.path.is_dir():
            raise StoreOpenError(f'memory database path {self.path} is a directory: move it '
                                 f'or set db_path to a file')
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            existed = self.path.exists() and self.path.stat().st_size > 0
            if existed:
                self._check_header()
        except OSError as exc:
            raise StoreOpenError(f'memory database {self.path} cannot be read: '
                                 f'{exc.strerror or exc}') from exc
        try:
            self._db = sqlite3.connect(str(self.path), timeout=busy_timeout_s,
                                       check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise self._set_aside(CorruptStoreError, f'cannot open: {exc}') from exc
        try:
            self._validate_and_migrate(existed)
            self._set_journal_mode()
            self._db.execute(f'PRAGMA synchronous={synchronous.upper()}')
        except sqlite3.DatabaseError as exc:
            self._db.close()
            self._db = None
            if fault_kind(exc) in ('locked', 'read_only', 'disk_full', 'io_error'):
                raise StoreOpenError(f'memory database {self.path} cannot be prepared: '
                                     f'{exc}') from exc
            raise self._set_aside(CorruptStoreError, f'unreadable: {exc}') from exc
        except StoreError:
            self._db.close()
            self._db = None
            raise
        self.replayed = self._replay_journal()

    def _setup(self, path, clock, busy_timeout_s, write_budget_s, retry_interval_s) -> None:
        self.path = Path(os.path.expanduser(str(path)))
        self.journal_path = self.path.with_name(self.path.name + '.journal')
        self._clock = clock
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._busy_timeout_s = busy_timeout_s
        self.write_budget_s = write_budget_s
        self.retry_interval_s = retry_interval_s
        self.fault: StoreFault | None = None      # set while writes do not reach the db
        self.faults_seen = 0
        self.journaled = 0                        # writes in the journal, not yet replayed
        self.replayed = 0                         # journal writes replayed at open
        self.lost = 0                             # writes refused by the db and the journal
        self._seq = 0                             # last journal sequence number used
        self._jid = ''                            # this journal file's id (one per file)
        self._next_drain = 0.0
        self.listeners: list[Callable[[StoreFault | None], None]] = []

    @classmethod
    def journal_only(cls, path: str | os.PathLike, reason: str,
                     clock: Callable[[], float] = time.time) -> 'MemoryStore':
        """A store for a database that cannot be opened: reads find nothing, every write
        goes to the journal beside it, replayed by the next open that succeeds."""
        self = cls.__new__(cls)
        self._setup(path, clock, 5.0, 0.0, 1.0)
        self._load_journal_position()
        self.fault = StoreFault('unavailable', f'{reason}; writes go to {self.journal_path}',
                                clock())
        self.faults_seen = 1
        return self

    def _set_journal_mode(self) -> None:
        mode = self._db.execute('PRAGMA journal_mode').fetchone()[0]
        if str(mode).lower() != 'wal':
            self._db.execute('PRAGMA journal_mode=WAL')

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
        if 'schema_migrations' not in tables:   # no write at all on a current database
            db.execute('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY,'
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
            try:
                os.replace(self.path, target)
                moved = target
                for suffix in ('-wal', '-shm'):
                    side = Path(str(self.path) + suffix)
                    if side.exists():
                        os.replace(side, Path(str(target) + suffix))
            except OSError as exc:
                if moved is None:   # the file is still in the way: nothing can open there
                    return StoreOpenError(f'memory database {self.path} is unreadable '
                                          f'({reason}) and cannot be moved aside '
                                          f'({exc.strerror or exc})')
                log.error('moved %s aside, but not its -wal/-shm: %s', self.path, exc)
        return error_cls(self.path, reason, moved)

    # --- writing: the database, else the journal ---------------------------------------------

    def _apply(self, steps: Sequence[Step]) -> None:
        """One transaction: committed whole or rolled back whole."""
        db = self._db
        db.execute('BEGIN IMMEDIATE')
        try:
            for op, rows in steps:
                db.executemany(_OPS[op], rows)
            db.execute('COMMIT')
        except BaseException:
            if db.in_transaction:
                try:
                    db.execute('ROLLBACK')
                except sqlite3.Error as exc:   # the failed commit may have ended it
                    log.debug('rollback after a failed write: %s', exc)
            raise

    def _write(self, steps: Sequence[Step]) -> str:
        """Store `steps`: 'stored' (in the database) or 'journaled'; StoreWriteError when
        neither took them."""
        with self._lock:
            if self.journaled:
                self._drain(force=False)
            if self.journaled == 0 and self._db is not None:
                deadline = time.monotonic() + self.write_budget_s
                pause = 0.05
                while True:
                    try:
                        self._apply(steps)
                    except sqlite3.Error as exc:
                        kind = fault_kind(exc)
                        left = deadline - time.monotonic()
                        if kind != 'locked' or left <= 0:
                            self._set_fault(kind, str(exc))
                            break
                        time.sleep(min(pause, left))   # busy: retry within the budget
                        pause *= 2
                    else:
                        self._set_fault(None)
                        return 'stored'
            self._spill(steps)
            return 'journaled'

    def _set_fault(self, kind: str | None, detail: str = '') -> None:
        """Enter, change or leave the fault state; listeners hear of each change once."""
        if kind is None:
            if self.fault is None:
                return
            self.fault = None
        else:
            if self.fault is not None and self.fault.kind == kind:
                return
            self.fault = StoreFault(kind, f'memory database {self.path}: {detail} '
                                          f'({_ADVICE.get(kind, kind)}); writes go to '
                                          f'{self.journal_path} until it recovers',
                                    self._clock())
            self.faults_seen += 1
            self._next_drain = time.monotonic() + self.retry_interval_s
        if not self.listeners:   # a node reports it itself, on its own logger
            if self.fault is None:
                log.warning('memory database %s writable again', self.path)
            else:
                log.error('storage fault (%s): %s', self.fault.kind, self.fault.message)
        for listener in list(self.listeners):
            listener(self.fault)

    def _spill(self, steps: Sequence[Step]) -> None:
        fault = self.fault or StoreFault('io_error', f'memory database {self.path}: not open',
                                         self._clock())
        if not self.journal_path.exists() or not self._jid:
            self._jid, self._seq = uuid.uuid4().hex, 0   # a new file: a new id
        line = json.dumps({'jid': self._jid, 'seq': self._seq + 1, 'schema': SCHEMA_VERSION,
                           'steps': [[op, [list(r) for r in rows]] for op, rows in steps]},
                          separators=(',', ':')) + '\n'
        try:
            new = not self.journal_path.exists()
            with open(self.journal_path, 'a', encoding='utf-8') as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            if new:   # the new name must survive a power loss too
                fd = os.open(self.journal_path.parent, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        except OSError as exc:
            self.lost += 1
            raise StoreWriteError(fault, exc.strerror or str(exc)) from exc
        self._seq += 1
        self.journaled += 1

    def _read_journal(self) -> list[dict]:
        """The journal's entries, in order; a torn last line (a crash while appending:
        never acknowledged) is dropped."""
        try:
            text = self.journal_path.read_text(encoding='utf-8')
        except FileNotFoundError:
            return []
        entries = []
        lines = text.split('\n')
        for n, raw in enumerate(lines):
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
                steps = [(str(op), list(rows)) for op, rows in entry['steps']]
                if any(op not in _OPS for op, _ in steps):
                    raise ValueError('unknown op')
                entries.append({'jid': str(entry.get('jid', '')), 'seq': int(entry['seq']),
                                'schema': int(entry['schema']), 'steps': steps})
            except (ValueError, KeyError, TypeError) as exc:
                if n >= len(lines) - 2:
                    log.warning('%s: torn last line dropped (%s)', self.journal_path, exc)
                    continue
                raise StoreError(f'journal {self.journal_path} line {n + 1} is damaged: '
                                 f'{exc}') from exc
        return entries

    def _load_journal_position(self) -> None:
        """Continue the journal left by an earlier run: its id, last seq and length."""
        try:
            entries = self._read_journal()
        except StoreError as exc:   # appending to a damaged file would bury the new entries
            self._set_aside_journal(str(exc))
            entries = []
        self.journaled = len(entries)
        if entries:
            self._jid, self._seq = entries[-1]['jid'], entries[-1]['seq']

    def _drain(self, force: bool) -> bool:
        """Replay the journal into the database in one transaction (skipping what an earlier
        replay already applied), then empty it. At most once per retry interval unless
        forced; a busy database is waited for only briefly here. True when drained."""
        if self._db is None or (not force and time.monotonic() < self._next_drain):
            return False
        self._next_drain = time.monotonic() + self.retry_interval_s
        try:
            entries = self._read_journal()
        except StoreError as exc:
            self._set_aside_journal(str(exc))
            self.journaled = 0
            return True
        if not entries:
            self.journaled = 0
            return True
        try:
            row = self._db.execute('SELECT data FROM state WHERE name = ?',
                                   (JOURNAL_STATE,)).fetchone()
        except sqlite3.Error as exc:
            self._set_fault(fault_kind(exc), str(exc))
            return False
        try:
            applied = json.loads(row[0]) if row else {}
            done_jid, done_seq = str(applied['jid']), int(applied['seq'])
        except (KeyError, TypeError, ValueError):
            done_jid, done_seq = '', 0
        # Only a journal whose replay committed but whose file survived is skipped (the same
        # id): a new file has a new id, so nothing of it is ever taken as replayed.
        todo = [e for e in entries if e['jid'] != done_jid or e['seq'] > done_seq]
        foreign = [e for e in todo if e['schema'] != SCHEMA_VERSION]
        if foreign:
            self._set_aside_journal(f'{len(foreign)} entries of schema version '
                                    f'{foreign[0]["schema"]}, this Maxim writes '
                                    f'{SCHEMA_VERSION}')
            self.journaled = 0
            return True
        mark = {'jid': entries[-1]['jid'], 'seq': entries[-1]['seq']}
        steps = [step for e in todo for step in e['steps']]
        steps.append(('put_state', [(JOURNAL_STATE, json.dumps(mark), self._clock())]))
        if not force:
            self._db.execute('PRAGMA busy_timeout=100')
        try:
            self._apply(steps)
        except sqlite3.Error as exc:
            self._set_fault(fault_kind(exc), str(exc))
            return False
        finally:
            if not force:
                self._db.execute(f'PRAGMA busy_timeout={int(self._busy_timeout_s * 1000)}')
        try:
            self.journal_path.unlink()
        except OSError as exc:   # harmless: the applied seq in the database skips it
            log.warning('journal %s replayed but not removed: %s', self.journal_path, exc)
        self._jid, self._seq = '', 0
        self.replayed += len(todo)
        self.journaled = 0
        self._set_fault(None)
        return True

    def _set_aside_journal(self, why: str) -> None:
        stamp = time.strftime('%Y%m%dT%H%M%S', time.gmtime(self._clock()))
        target = self.journal_path.with_name(f'{self.journal_path.name}.unreplayed-{stamp}')
        try:
            os.replace(self.journal_path, target)
        except OSError as exc:
            log.error('journal %s cannot be replayed (%s) nor moved aside: %s',
                      self.journal_path, why, exc)
            return
        log.error('journal %s cannot be replayed (%s); moved aside to %s', self.journal_path,
                  why, target)

    def _replay_journal(self) -> int:
        """At open: replay what an earlier run journaled. Returns the entries replayed."""
        with self._lock:
            self._load_journal_position()
            if not self.journaled:
                return 0
            before = self.replayed
            if not self._drain(force=True):
                log.error('%s: %d journaled writes not replayed yet: %s', self.path,
                          self.journaled, self.fault.message if self.fault else '')
                return 0
            n = self.replayed - before
            if n:
                log.warning('%s: replayed %d journaled writes', self.path, n)
            return n

    def drain_journal(self) -> bool:
        """Try to replay the journal now (a node's timer calls it); True when it is empty."""
        with self._lock:
            if not self.journaled:
                return True
            return self._drain(force=False)

    def status(self) -> dict[str, Any]:
        """The store's health for diagnostics."""
        with self._lock:
            return {'ok': self.fault is None, 'fault': self.fault.kind if self.fault else '',
                    'message': self.fault.message if self.fault else '',
                    'journaled': self.journaled, 'replayed': self.replayed, 'lost': self.lost,
                    'faults_seen': self.faults_seen, 'journal': str(self.journal_path)}

    # --- records -------------------------------------------------------------------------------

    def put_record(self, layer: str, record: dict[str, Any]) -> str:
        """Insert or replace one record; durable (in the database or the journal) when this
        returns: 'stored' or 'journaled'."""
        return self._write([('put_record', self._record_rows(layer, [record]))])

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
        self._write([('put_record', rows)])
        return len(rows)

    def delete_records(self, layer: str, ids: Iterable[str]) -> None:
        self._write([('delete_record', [(layer, i) for i in ids])])

    def replace_layer(self, layer: str, records: Iterable[dict[str, Any]]) -> int:
        """Make the layer's rows exactly `records`, in one transaction (a snapshot save)."""
        rows = self._record_rows(layer, records)
        self._write([('clear_layer', [(layer,)]), ('put_record', rows)])
        return len(rows)

    def get_record(self, layer: str, record_id: str) -> dict[str, Any] | None:
        with self._lock:
            if self._db is None:
                return None
            row = self._db.execute('SELECT data FROM records WHERE layer = ? AND id = ?',
                                   (layer, record_id)).fetchone()
        return json.loads(row[0]) if row else None

    def load_records(self, layer: str) -> list[dict[str, Any]]:
        with self._lock:
            if self._db is None:
                return []
            rows = self._db.execute('SELECT data FROM records WHERE layer = ? ORDER BY created_at',
                                    (layer,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def record_ids(self, layer: str) -> list[str]:
        with self._lock:
            if self._db is None:
                return []
            return [r[0] for r in self._db.execute('SELECT id FROM records WHERE layer = ?',
                                                   (layer,))]

    def count(self, layer: str | None = None) -> int:
        with self._lock:
            if self._db is None:
                return 0
            if layer is None:
                return self._db.execute('SELECT COUNT(*) FROM records').fetchone()[0]
            return self._db.execute('SELECT COUNT(*) FROM records WHERE layer = ?',
                                    (layer,)).fetchone()[0]

    # --- named state (NAc, SCN, pain, registry) -----------------------------------------------

    def put_state(self, name: str, data: Any) -> None:
        self._write([('put_state', [(name, json.dumps(data, separators=(',', ':')),
                                     self._clock())])])

    def get_state(self, name: str) -> Any | None:
        with self._lock:
            if self._db is None:
                return None
            row = self._db.execute('SELECT data FROM state WHERE name = ?', (name,)).fetchone()
        return json.loads(row[0]) if row else None

    # --- graph edges ---------------------------------------------------------------------------

    def replace_edges(self, graph: str, edges: Iterable[EdgeRow]) -> int:
        rows = self._edge_rows(graph, edges)
        self._write([('clear_edges', [(graph,)]), ('put_edge', rows)])
        return len(rows)

    def put_edges(self, graph: str, edges: Iterable[EdgeRow]) -> int:
        """Add or update edges (incremental; `replace_edges` is the full snapshot)."""
        rows = self._edge_rows(graph, edges)
        self._write([('put_edge', rows)])
        return len(rows)

    def load_edges(self, graph: str) -> list[EdgeRow]:
        with self._lock:
            if self._db is None:
                return []
            rows = self._db.execute('SELECT src, dst, type, weight, data FROM edges'
                                    ' WHERE graph = ?', (graph,)).fetchall()
        return [EdgeRow(s, d, t, w, json.loads(x)) for s, d, t, w, x in rows]

    # --- housekeeping --------------------------------------------------------------------------

    def schema_version(self) -> int:
        """The open database's schema version (0: none open)."""
        with self._lock:
            if self._db is None:
                return 0
            return self._db.execute('PRAGMA user_version').fetchone()[0]

    def migrations(self) -> list[tuple[int, str]]:
        with self._lock:
            if self._db is None:
                return []
            return [(v, d) for v, d in self._db.execute(
                'SELECT version, description FROM schema_migrations ORDER BY version')]

    def checkpoint(self) -> None:
        """Fold the WAL into the database; a refused checkpoint loses nothing (the WAL
        keeps the commits), so it is logged, not raised."""
        with self._lock:
            if self._db is None:
                return
            try:
                self._db.execute('PRAGMA wal_checkpoint(TRUNCATE)')
            except sqlite3.Error as exc:
                log.warning('checkpoint of %s skipped: %s', self.path, exc)

    def size_bytes(self) -> int:
        total = 0
        for suffix in ('', '-wal'):
            p = Path(str(self.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total

    def close(self) -> None:
        """Replay what the journal holds if the database takes it now, then close."""
        with self._lock:
            if self._db is not None and self.journaled:
                self._drain(force=True)
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> 'MemoryStore':
        return self

    def __exit__(self, *exc) -> None:
        self.close()
