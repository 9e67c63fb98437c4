"""Angular gyrus: mathematical memory (statistics, trends, confirmed patterns).

Records are keyed by name, so re-grounding a concept updates its statistic in place instead of
piling up copies.
"""

from __future__ import annotations

from typing import Any, Iterable

from maxim_memory.layers.base import BaseLayer, ConsolidationReport, DAY_S, norm_key
from maxim_memory.records import CompressedMathRecord, MathRecord, MemoryRecord


class AngularGyrus(BaseLayer):
    """MathRecords indexed by name, category and domain."""

    name = 'angular_gyrus'
    record_types = (MathRecord, CompressedMathRecord)

    def __init__(self, *args, max_age_s: float = 30 * DAY_S, **kwargs):
        super().__init__(*args, **kwargs)
        self.max_age_s = max_age_s

    def index_keys(self, rec: MemoryRecord) -> Iterable[tuple[str, str]]:
        return [('name', rec.name), ('category', rec.category),
                ('domain', getattr(rec, 'domain', ''))]

    def find_by_name(self, name: str) -> str | None:
        ids = self._index.get(('name', norm_key(name)))
        return min(ids) if ids else None

    def upsert(self, record: MathRecord) -> str:
        """Store, or update the record of the same name in place (its id is kept)."""
        existing = self.find_by_name(record.name)
        if existing is None:
            return self.store(record)
        record.id = existing
        old = self.get(existing)
        record.created_at, record.access_count = old.created_at, old.access_count
        self.update(record)
        return existing

    def recall(self, limit: int = 10, name: str = '', category: str = '', domain: str = '',
               confirmed: bool | None = None, min_confidence: float = 0.0,
               **_: Any) -> list[MemoryRecord]:
        sets = [self._index.get((k, norm_key(v)), set())
                for k, v in (('name', name), ('category', category), ('domain', domain)) if v]
        ids = set(sets[0]).intersection(*sets[1:]) if sets else set(self._records)
        recs = [self._records[i] for i in ids]
        recs = [r for r in recs if r.confidence >= min_confidence
                and (confirmed is None or getattr(r, 'confirmed', False) == confirmed)]
        recs.sort(key=lambda r: (-r.confidence, r.name))
        return recs[:max(0, limit)]

    def consolidate(self, now: float | None = None, **kw: Any) -> ConsolidationReport:
        """Unconfirmed, low-confidence records idle past max_age are pruned."""
        now = self._clock() if now is None else now
        report = ConsolidationReport(self.name)
        prune = [r.id for r in self._records.values()
                 if not r.long_term and not getattr(r, 'confirmed', False)
                 and r.confidence < 0.3 and now - max(r.created_at, r.last_accessed)
                 > self.max_age_s]
        self._remove_many(prune)
        report.pruned = len(prune)
        return report
