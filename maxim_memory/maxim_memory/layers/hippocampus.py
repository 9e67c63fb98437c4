"""Hippocampus: episodic memory of every pass of the agent loop.

ASSOCIATES edges form at capture between episodes with perceptual overlap (shared objects or
people, Jaccard-weighted) or the same tool and goal; CAUSES edges are added by the hub when the
NAc reports a surprising outcome (|RPE| > 0.3). Consolidation compresses episodes older than a
day into their gist, prunes unused compressed ones past 7 days and decays the edges.

Recall never scans every episode when it has something to narrow by: the context index
holds, besides tool / outcome / object / person / mode / run, every word of the episode's
text (the keyword score is counted from those sets, not by re-reading texts) and the day of
the episode (a time window reads only its days' buckets).

The words are content words (relevance.py: stop words out, plurals folded), and a text query
scores each episode by the rarity-weighted share of the query's content words it holds: a
query that shares only "the" with an episode does not match it, and `min_score` drops the
episodes below a relevance threshold (`relevance.KEYWORD_THRESHOLD` for enrichment). A query
made only of stop words matches nothing.
"""

from __future__ import annotations

import bisect
from collections import defaultdict, deque
import heapq
from typing import Any, Iterable

from maxim_memory.layers.base import BaseLayer, ConsolidationReport, DAY_S, norm_key
from maxim_memory.records import CompressedMemory, EpisodicMemory, MemoryRecord
from maxim_memory.relevance import content_words, KeywordMatch, KeywordScorer

RECENT_PER_KEY = 20


def episode_time(rec: MemoryRecord) -> float:
    """When the episode happened (a compressed record keeps the original time)."""
    return rec.episode_time if isinstance(rec, CompressedMemory) else rec.created_at


def _tool(rec) -> str:
    return rec.tool_name if isinstance(rec, CompressedMemory) else rec.action.tool_name


def _goal(rec) -> str:
    return rec.goal if isinstance(rec, CompressedMemory) else rec.context.goal


def _success(rec) -> bool:
    return rec.success if isinstance(rec, CompressedMemory) else rec.outcome.success


def _objects(rec) -> list[str]:
    return rec.objects if isinstance(rec, CompressedMemory) else rec.perception.detected_objects


def _people(rec) -> list[str]:
    return rec.people if isinstance(rec, CompressedMemory) else rec.perception.detected_people


def _rank(hit: tuple[MemoryRecord, float]) -> tuple[float, float, str]:
    """Best keyword score first, then the newest; the id breaks exact ties."""
    return (-hit[1], -episode_time(hit[0]), hit[0].id)


class Hippocampus(BaseLayer):
    """Episodes, indexed by tool, outcome, object, person, mode and run."""

    name = 'hippocampus'
    record_types = (EpisodicMemory, CompressedMemory)

    def __init__(self, *args, compress_after_s: float = DAY_S, max_age_s: float = 7 * DAY_S,
                 edge_decay: float = 0.9, associate_min: float = 0.2,
                 max_associations: int = 5, **kwargs):
        super().__init__(*args, **kwargs)
        self.compress_after_s = compress_after_s
        self.max_age_s = max_age_s
        self.edge_decay = edge_decay
        self.associate_min = associate_min
        self.max_associations = max_associations  # strongest few: the graph stays sparse
        self._recent: dict[tuple[str, str], deque] = defaultdict(
            lambda: deque(maxlen=RECENT_PER_KEY))
        self._last_in_run: dict[str, str] = {}
        self._days: list[int] = []

    def index_keys(self, rec: MemoryRecord) -> Iterable[tuple[str, str]]:
        keys = [('tool', _tool(rec)), ('success', _success(rec)), ('run', rec.run_id)]
        keys += [('object', o) for o in _objects(rec)]
        keys += [('person', p) for p in _people(rec)]
        if isinstance(rec, EpisodicMemory):
            keys.append(('mode', rec.context.mode))
        keys.append(('compressed', isinstance(rec, CompressedMemory)))
        keys.append(('day', int(episode_time(rec) // DAY_S)))
        keys += [('word', w) for w in content_words(rec.text())]
        return keys

    def _index_record(self, record: MemoryRecord) -> None:
        super()._index_record(record)
        day = int(episode_time(record) // DAY_S)
        at = bisect.bisect_left(self._days, day)
        if at == len(self._days) or self._days[at] != day:
            self._days.insert(at, day)  # the distinct days: a short list

    def _day_ids(self, after: float, before: float) -> set[str] | None:
        """Ids of the episodes of the days the window touches (a superset of it); None
        when there is no window or it spans most days."""
        if not (after or before):
            return None
        lo = bisect.bisect_left(self._days, int(after // DAY_S)) if after else 0
        hi = bisect.bisect_right(self._days, int(before // DAY_S)) if before \
            else len(self._days)
        if hi - lo > len(self._days) // 2:
            return None  # most of the history: checking every episode's time is cheaper
        out: set[str] = set()
        for day in self._days[lo:hi]:
            out |= self._index.get(('day', str(day)), set())
        return out

    # --- associations --------------------------------------------------------------------------

    def _after_store(self, rec: MemoryRecord, is_new: bool) -> None:
        if not is_new or not isinstance(rec, EpisodicMemory):
            return
        mine = {f'o:{o.lower()}' for o in rec.perception.detected_objects}
        mine |= {f'p:{p.lower()}' for p in rec.perception.detected_people}
        keys = self._assoc_keys(rec)
        candidates: dict[str, float] = {}
        for key in keys:
            for other_id in self._recent[key]:
                other = self._records.get(other_id)
                if other is None or other_id == rec.id or other_id in candidates:
                    continue
                theirs = {f'o:{o.lower()}' for o in _objects(other)}
                theirs |= {f'p:{p.lower()}' for p in _people(other)}
                union = mine | theirs
                w = len(mine & theirs) / len(union) if union else 0.0
                if key[0] == 'tg':
                    w = max(w, 0.5)
                candidates[other_id] = w
        best = sorted(((w, oid) for oid, w in candidates.items() if w >= self.associate_min),
                      key=lambda x: (-x[0], x[1]))[:self.max_associations]
        for w, other_id in best:
            self._graph.add_edge(rec.id, other_id, 'ASSOCIATES', round(min(1.0, w), 4))
        for key in keys:
            self._recent[key].append(rec.id)
        self._last_in_run[rec.run_id] = rec.id

    def load_from(self, st) -> int:
        self._days.clear()
        n = super().load_from(st)
        self._recent.clear()
        self._last_in_run.clear()
        for rec in sorted(self._records.values(), key=episode_time):
            if isinstance(rec, EpisodicMemory):  # later captures associate with these too
                for key in self._assoc_keys(rec):
                    self._recent[key].append(rec.id)
                self._last_in_run[rec.run_id] = rec.id
        return n

    @staticmethod
    def _assoc_keys(rec: EpisodicMemory) -> list[tuple[str, str]]:
        keys = [('o', o.lower()) for o in rec.perception.detected_objects]
        keys += [('p', p.lower()) for p in rec.perception.detected_people]
        if rec.action.tool_name:
            keys.append(('tg', f'{rec.action.tool_name}|{rec.context.goal.lower()}'))
        return keys

    def add_causal_link(self, cause_id: str, effect_id: str, rpe: float) -> None:
        """CAUSES edge for a surprising outcome; weight grows with the surprise."""
        if cause_id in self._records and effect_id in self._records:
            self._graph.add_edge(cause_id, effect_id, 'CAUSES', min(1.0, abs(rpe)),
                                 rpe=round(rpe, 4))

    # --- recall --------------------------------------------------------------------------------

    def search(self, query: str = '', tool_name: str = '', success: bool | None = None,
               object: str = '', person: str = '', mode: str = '', run_id: str = '',
               time_after: float = 0.0, time_before: float = 0.0,
               include_compressed: bool = True, min_score: float = 0.0
               ) -> list[tuple[MemoryRecord, float]]:
        """Every match with its relevance, best first (keyword score, then newest)."""
        out = self._matches(query, tool_name, success, object, person, mode, run_id,
                            time_after, time_before, include_compressed, min_score)
        out.sort(key=_rank)
        return out

    def search_top(self, limit: int, **filters: Any
                   ) -> tuple[list[tuple[MemoryRecord, float]], int]:
        """The best `limit` matches of `search(**filters)`, in its order, and how many match
        in all (a partial selection: no sort of every match)."""
        out = self._matches(**filters)
        return heapq.nsmallest(max(0, limit), out, key=_rank), len(out)

    def keyword_matches(self, query: str, limit: int, min_score: float = 0.0
                        ) -> list[tuple[MemoryRecord, KeywordMatch]]:
        """The best `limit` episodes for a text, each with its score and the content words
        it shares with the text; those under `min_score` are left out (so the answer is
        often empty: nothing relevant)."""
        if not query.strip():
            return []
        out, scorer, postings = self._matches(query=query, min_score=min_score,
                                              want_words=True)
        top = heapq.nsmallest(max(0, limit), out, key=_rank)
        return [(rec, scorer.match({w for w, p in postings.items() if rec.id in p}))
                for rec, _ in top]

    def _matches(self, query: str = '', tool_name: str = '', success: bool | None = None,
                 object: str = '', person: str = '', mode: str = '', run_id: str = '',
                 time_after: float = 0.0, time_before: float = 0.0,
                 include_compressed: bool = True, min_score: float = 0.0,
                 want_words: bool = False) -> Any:
        """(record, score) of every match; with `want_words`, also the scorer and the query
        words' postings (to tell which words each match shares)."""
        sets = []
        if tool_name:
            sets.append(self._index.get(('tool', norm_key(tool_name.lower())), set()))
        if success is not None:
            sets.append(self._index.get(('success', norm_key(str(bool(success)).lower())), set()))
        if object:
            sets.append(self._index.get(('object', norm_key(object.lower())), set()))
        if person:
            sets.append(self._index.get(('person', norm_key(person.lower())), set()))
        if mode:
            sets.append(self._index.get(('mode', norm_key(mode.lower())), set()))
        if run_id:
            sets.append(self._index.get(('run', norm_key(run_id.lower())), set()))
        days = self._day_ids(time_after, time_before)
        if days is not None:
            sets.append(days)
        words = content_words(query)
        if query.strip() and not words:  # only stop words: nothing to be relevant to
            return ([], None, {}) if want_words else []
        postings = {w: self._index.get(('word', w), set()) for w in words}
        scorer = KeywordScorer(words, lambda w: len(postings[w]), len(self._records))
        acc: dict[str, float] = {}  # summed weights of the query words each episode holds
        if sets:
            sets.sort(key=len)
            ids = set(sets[0]).intersection(*sets[1:])
            for w in words:  # word by word, as KeywordScorer.match sums: the same floats
                wt = scorer.weights[w]
                for rid in (ids & postings[w]):
                    acc[rid] = acc.get(rid, 0.0) + wt
        elif words:
            for w in words:
                wt = scorer.weights[w]
                for rid in postings[w]:
                    acc[rid] = acc.get(rid, 0.0) + wt
            ids = acc.keys()
        else:
            ids = self._records.keys()
        out = []
        for rid in ids:
            rec = self._records[rid]
            if not include_compressed and isinstance(rec, CompressedMemory):
                continue
            if time_after or time_before:
                t = episode_time(rec)
                if (time_after and t < time_after) or (time_before and t > time_before):
                    continue
            score = 1.0
            if words:  # the keyword score from the word sets: no text is re-read
                got = acc.get(rid, 0.0)
                score = round(got / scorer.total, 4) if scorer.total > 0 else 0.0
                if got <= 0.0 or score < min_score:
                    continue
            out.append((rec, score))
        if want_words:
            return out, scorer, postings
        return out

    def recall(self, limit: int = 10, **filters: Any) -> list[MemoryRecord]:
        return [r for r, _ in self.search_top(limit, **filters)[0]]

    def recent(self, limit: int = 20) -> list[MemoryRecord]:
        recs = sorted(self._records.values(), key=episode_time, reverse=True)
        return recs[:limit]

    def last_in_run(self, run_id: str) -> str | None:
        """Id of the latest episode captured in this run (the candidate cause of the next)."""
        rid = self._last_in_run.get(run_id)
        return rid if rid in self._records else None

    # --- consolidation -------------------------------------------------------------------------

    def consolidate(self, now: float | None = None, **kw: Any) -> ConsolidationReport:
        now = self._clock() if now is None else now
        report = ConsolidationReport(self.name)
        compress = []
        for rec in list(self._records.values()):
            if not isinstance(rec, EpisodicMemory):
                continue
            significant = abs(rec.outcome.valence) >= 0.8 or rec.access_count >= 3
            if significant and not rec.long_term:
                rec.long_term = True
                self.update(rec, durable=False)  # written below, in one transaction
            if rec.long_term or now - rec.created_at < self.compress_after_s:
                continue
            compress.append((rec.id, CompressedMemory.from_episode(rec, now)))
        self.flush()
        self.replace_many(compress)
        report.compressed = len(compress)
        stale = [r.id for r in self._records.values()
                 if isinstance(r, CompressedMemory) and not r.long_term and r.access_count == 0
                 and now - r.episode_time > self.max_age_s]
        self._remove_many(stale)
        report.pruned = len(stale)
        report.edges_decayed = self._graph.decay(self.edge_decay)
        return report

    def stats(self) -> dict[str, Any]:
        s = super().stats()
        s['episodes'] = sum(1 for r in self._records.values() if isinstance(r, EpisodicMemory))
        s['compressed'] = len(self._records) - s['episodes']
        return s
