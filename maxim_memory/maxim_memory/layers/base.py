"""The MemoryLayer protocol of seed 002, a shared base implementation, capacity strategies.

A layer keeps its records in memory (dict by id, insertion-ordered), an O(1) context index
(key, value) -> ids, its own associative graph, and optionally writes through to a
`MemoryStore`, so that a record is durable when `store()` returns. The write comes first:
the in-memory state changes only once the store took the record (in the database or its
journal), so a write that failed leaves no record that counts but was never kept.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import defaultdict
from dataclasses import dataclass, field
import logging
import math
import time
from typing import Any, Callable, Iterable, Iterator, Protocol

from maxim_memory.graph import AssociativeGraph, Edge, RelationshipRegistry
from maxim_memory.records import MemoryRecord, record_from_dict, record_to_dict
from maxim_memory.store import EdgeRow, MemoryStore

log = logging.getLogger(__name__)

DAY_S = 86400.0

CaptureCallback = Callable[[MemoryRecord], None]
DeletionCallback = Callable[[str], None]
CompressionCallback = Callable[[str, MemoryRecord], None]


class RecordNotFoundError(KeyError):
    """No record with this id in the layer."""


class RecordTypeError(TypeError):
    """A record of the wrong type for this layer."""


@dataclass
class ConsolidationReport:
    layer: str
    compressed: int = 0
    pruned: int = 0
    edges_decayed: int = 0
    evicted: int = 0
    details: dict[str, Any] = field(default_factory=dict)


class MemoryLayer(ABC):
    """The interface every layer implements, so the hub and cross-layer graph are generic."""

    @property
    @abstractmethod
    def layer_name(self) -> str: ...

    @abstractmethod
    def store(self, record: MemoryRecord) -> str: ...

    @abstractmethod
    def get(self, record_id: str) -> MemoryRecord: ...

    @abstractmethod
    def remove(self, record_id: str) -> None: ...

    @abstractmethod
    def recall(self, limit: int = 10, **filters: Any) -> list[MemoryRecord]: ...

    @abstractmethod
    def recall_associated(self, seed_ids: Iterable[str], limit: int = 10,
                          **kw: Any) -> list[tuple[str, float]]: ...

    @property
    @abstractmethod
    def graph(self) -> AssociativeGraph: ...

    @abstractmethod
    def save(self, path: str) -> None: ...

    @abstractmethod
    def load(self, path: str) -> None: ...

    @abstractmethod
    def consolidate(self, **kw: Any) -> ConsolidationReport: ...

    @abstractmethod
    def register_capture_callback(self, cb: CaptureCallback) -> None: ...

    @abstractmethod
    def register_deletion_callback(self, cb: DeletionCallback) -> None: ...

    @abstractmethod
    def stats(self) -> dict[str, Any]: ...

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def __iter__(self) -> Iterator[MemoryRecord]: ...


# --- capacity ----------------------------------------------------------------------------------

class MemoryStrategy(Protocol):
    """Scores a record's claim to stay (higher keeps); strategies multiply."""

    def score(self, record: MemoryRecord, now: float) -> float: ...


class AccessBasedStrategy:
    """Recently and often used records stay; idle ones past the window score low."""

    def __init__(self, window_s: float = 30 * DAY_S):
        if window_s <= 0:
            raise ValueError('window_s must be > 0')
        self.window_s = window_s

    def score(self, record: MemoryRecord, now: float) -> float:
        last = max(record.last_accessed, record.created_at)
        recency = math.exp(-max(0.0, now - last) / self.window_s)
        use = 1.0 + math.log1p(record.access_count)
        return recency * use * (4.0 if record.long_term else 1.0)


class TemporalAwareStrategy:
    """Records from the robot's active hours stay longer (its circadian rhythm, from the SCN).

    `activity(ts)` returns 0..1, how typical the hour of `ts` is for the robot; the hub builds
    it from the SCN's hour bins.
    """

    def __init__(self, activity: Callable[[float], float], weight: float = 0.5):
        self.activity = activity
        self.weight = weight

    def score(self, record: MemoryRecord, now: float) -> float:
        a = min(1.0, max(0.0, self.activity(record.created_at)))
        return (1.0 - self.weight) + self.weight * a


class HourProfile:
    """How active each hour of the day (UTC) has been: the circadian profile the
    temporal-aware strategy keeps records by."""

    def __init__(self):
        self.counts = [0] * 24

    def observe(self, ts: float) -> None:
        self.counts[int(ts // 3600) % 24] += 1

    def activity(self, ts: float) -> float:
        peak = max(self.counts)
        return self.counts[int(ts // 3600) % 24] / peak if peak else 1.0


@dataclass
class CapacityPolicy:
    """Keeps a layer under `capacity` records; evicts the lowest-scored down to `low_water`."""

    capacity: int = 0                      # 0 = unbounded
    strategies: list[MemoryStrategy] = field(default_factory=lambda: [AccessBasedStrategy()])
    low_water: float = 0.9                 # evict in batches so each store stays cheap

    def select(self, records: Iterable[MemoryRecord], count: int, now: float) -> list[str]:
        if self.capacity <= 0 or count <= self.capacity:
            return []
        target = max(0, int(self.capacity * self.low_water))
        scored = []
        for r in records:
            s = 1.0
            for strat in self.strategies:
                s *= strat.score(r, now)
            scored.append((s, r.created_at, r.id))
        scored.sort()
        return [rid for _, _, rid in scored[:count - target]]


# --- shared base -------------------------------------------------------------------------------

class BaseLayer(MemoryLayer):
    """The machinery the three layers share; subclasses say what to index and how to age."""

    record_types: tuple[type, ...] = (MemoryRecord,)
    name = 'base'

    def __init__(self, store: MemoryStore | None = None,
                 registry: RelationshipRegistry | None = None,
                 capacity: CapacityPolicy | None = None,
                 clock: Callable[[], float] = time.time):
        self._records: dict[str, MemoryRecord] = {}
        self._index: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._keys_of: dict[str, list[tuple[str, str]]] = {}
        self._dirty: set[str] = set()
        self._graph = AssociativeGraph(registry)
        self._store = store
        self._capacity = capacity or CapacityPolicy()
        self._clock = clock
        self._capture_cbs: list[CaptureCallback] = []
        self._deletion_cbs: list[DeletionCallback] = []
        self._compression_cbs: list[CompressionCallback] = []

    # --- protocol ------------------------------------------------------------------------------

    @property
    def layer_name(self) -> str:
        return self.name

    @property
    def graph(self) -> AssociativeGraph:
        return self._graph

    def now(self) -> float:
        return self._clock()

    def attach_store(self, store: MemoryStore | None) -> None:
        """Write through to `store` from now on (None: memory only)."""
        self._store = store

    def store(self, record: MemoryRecord) -> str:
        if not isinstance(record, self.record_types):
            raise RecordTypeError(f'{self.name} stores {[t.__name__ for t in self.record_types]}'
                                  f', not {type(record).__name__}')
        if self._store is not None:   # first: a refused write changes nothing here
            self._store.put_record(self.name, record_to_dict(record))
        old = self._records.get(record.id)
        if old is not None:
            self._unindex(old)
        self._records[record.id] = record
        self._index_record(record)
        self._after_store(record, is_new=old is None)
        if old is None:
            for cb in list(self._capture_cbs):
                self._call(cb, record)
        self._enforce_capacity()
        return record.id

    def update(self, record: MemoryRecord, durable: bool = True) -> None:
        """Re-index a changed record and persist it now, or (durable=False, for derived
        data such as concept refs) at the next `flush()`."""
        if record.id not in self._records:
            raise RecordNotFoundError(record.id)
        if self._store is not None and durable:
            self._store.put_record(self.name, record_to_dict(record))
        self._unindex(self._records[record.id])
        self._records[record.id] = record
        self._index_record(record)
        if self._store is not None:
            if durable:
                self._dirty.discard(record.id)
            else:
                self._dirty.add(record.id)

    def flush(self) -> int:
        """Write the records changed with durable=False and the new graph edges."""
        if self._store is None:
            return 0
        edges = self._graph.take_pending()
        if edges:
            self._store.put_edges(self.name, [EdgeRow(e.src, e.dst, e.type, e.weight, e.data)
                                              for e in edges])
        if not self._dirty:
            return 0
        recs = [record_to_dict(self._records[i]) for i in self._dirty if i in self._records]
        self._store.put_records(self.name, recs)
        self._dirty.clear()
        return len(recs)

    def get(self, record_id: str) -> MemoryRecord:
        try:
            return self._records[record_id]
        except KeyError:
            raise RecordNotFoundError(f'{self.name} has no record {record_id!r}') from None

    def find(self, record_id: str) -> MemoryRecord | None:
        return self._records.get(record_id)

    def access(self, record_id: str) -> MemoryRecord:
        """Retrieve for use (counts toward keeping it); queries use get(), which does not."""
        rec = self.get(record_id)
        rec.touch(self._clock())
        self.update(rec)
        return rec

    def remove(self, record_id: str) -> None:
        self.get(record_id)  # unknown ids are an error, not a no-op
        self._remove_many([record_id])

    def _remove_many(self, ids: list[str]) -> None:
        gone = [rid for rid in dict.fromkeys(ids) if rid in self._records]
        if self._store is not None and gone:
            self._store.delete_records(self.name, gone)
        for rid in gone:
            self._unindex(self._records.pop(rid))
            self._graph.remove_node(rid)
        for rid in gone:
            for cb in list(self._deletion_cbs):
                self._call(cb, rid)

    def replace(self, old_id: str, new_record: MemoryRecord) -> None:
        """Swap a record for its compressed form; its graph node and refs follow it."""
        self.replace_many([(old_id, new_record)])

    def replace_many(self, pairs: list[tuple[str, MemoryRecord]]) -> None:
        """`replace` for many records, with two store transactions in all (not two each):
        a consolidation compresses thousands at once."""
        olds = [self.get(old_id) for old_id, _ in pairs]  # unknown ids fail before any change
        if len({old_id for old_id, _ in pairs}) != len(pairs):
            raise ValueError('replace_many: an id appears twice')
        if self._store is not None and pairs:
            # new rows first: a crash in between duplicates, never loses
            self._store.put_records(self.name, [record_to_dict(n) for _, n in pairs])
            self._store.delete_records(self.name, [old_id for old_id, _ in pairs])
        for old, (old_id, new_record) in zip(olds, pairs):
            self._unindex(old)
            del self._records[old_id]
            self._records[new_record.id] = new_record
            self._index_record(new_record)
            self._graph.relabel(old_id, new_record.id)
        for old_id, new_record in pairs:
            for cb in list(self._compression_cbs):
                self._call(cb, old_id, new_record)

    def recall_associated(self, seed_ids: Iterable[str], limit: int = 10, decay: float = 0.5,
                          threshold: float = 0.05, max_depth: int = 2,
                          **kw: Any) -> list[tuple[str, float]]:
        seeds = [s for s in seed_ids if s in self._records]
        acts = self._graph.spread(seeds, decay=decay, threshold=threshold, max_depth=max_depth)
        found = [(rid, a) for rid, a in acts.items()
                 if rid not in seeds and rid in self._records]
        found.sort(key=lambda x: (-x[1], x[0]))
        return found[:max(0, limit)]

    def register_capture_callback(self, cb: CaptureCallback) -> None:
        self._capture_cbs.append(cb)

    def register_deletion_callback(self, cb: DeletionCallback) -> None:
        self._deletion_cbs.append(cb)

    def register_compression_callback(self, cb: CompressionCallback) -> None:
        self._compression_cbs.append(cb)

    def save(self, path: str) -> None:
        """Snapshot records and graph into the SQLite database at `path`."""
        with MemoryStore(path) as st:
            self.save_to(st)

    def save_to(self, st: MemoryStore) -> None:
        if st is self._store:
            self._dirty.clear()
            self._graph.take_pending()
        st.replace_layer(self.name, [record_to_dict(r) for r in self._records.values()])
        st.replace_edges(self.name, [EdgeRow(e.src, e.dst, e.type, e.weight, e.data)
                                     for e in self._graph.to_edges()])

    def load(self, path: str) -> None:
        with MemoryStore(path) as st:
            self.load_from(st)

    def load_from(self, st: MemoryStore) -> int:
        self._records.clear()
        self._index.clear()
        self._keys_of.clear()
        for d in st.load_records(self.name):
            rec = record_from_dict(d)
            self._records[rec.id] = rec
            self._index_record(rec)
        self._graph = AssociativeGraph(self._graph.registry)
        self._graph.load_edges(Edge(e.src, e.dst, e.type, e.weight, e.data)
                               for e in st.load_edges(self.name) if e.src in self._records
                               and e.dst in self._records)
        return len(self._records)

    def stats(self) -> dict[str, Any]:
        kinds: dict[str, int] = defaultdict(int)
        for r in self._records.values():
            kinds[type(r).__name__] += 1
        return {'layer': self.name, 'records': len(self._records), 'by_type': dict(kinds),
                'graph_edges': self._graph.edge_count(),
                'capacity': self._capacity.capacity,
                'long_term': sum(1 for r in self._records.values() if r.long_term)}

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[MemoryRecord]:
        return iter(list(self._records.values()))

    def __contains__(self, record_id: str) -> bool:
        return record_id in self._records

    # --- index ---------------------------------------------------------------------------------

    def index_keys(self, record: MemoryRecord) -> Iterable[tuple[str, str]]:
        return ()

    def lookup(self, key: str, value: Any) -> set[str]:
        """O(1) ids of records whose index has key=value (a copy, safe to keep)."""
        return set(self._index.get((key, norm_key(value)), ()))

    def _index_record(self, record: MemoryRecord) -> None:
        keys = [(k, norm_key(v)) for k, v in self.index_keys(record)]
        self._keys_of[record.id] = keys  # kept: records are often mutated in place
        for key in keys:
            self._index[key].add(record.id)

    def _unindex(self, record: MemoryRecord) -> None:
        for key in self._keys_of.pop(record.id, ()):
            ids = self._index.get(key)
            if ids is not None:
                ids.discard(record.id)
                if not ids:
                    del self._index[key]

    # --- hooks ---------------------------------------------------------------------------------

    def _after_store(self, record: MemoryRecord, is_new: bool) -> None:
        """Subclasses form associations here."""

    def _enforce_capacity(self) -> None:
        evict = self._capacity.select(self._records.values(), len(self._records), self._clock())
        if evict:
            self._remove_many(evict)

    def _call(self, cb: Callable, *args: Any) -> None:
        # A failing listener (extractor, index) must not lose the capture that triggered it;
        # it is logged with its traceback, not swallowed.
        try:
            cb(*args)
        except Exception:  # noqa: BLE001 - callbacks are foreign code
            log.exception('%s callback %r failed', self.name, cb)


def norm_key(value: Any) -> str:
    return str(value).strip().lower()
