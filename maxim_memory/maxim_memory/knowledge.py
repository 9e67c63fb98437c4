"""From episodes to knowledge (seed 002): extraction, grounding, promotion, completion, context.

- `ConceptExtractor` turns captured episodes into ATL concept refs on a worker thread, so a
  capture never waits for it.
- `IPS` gives the cheap statistics (mean, std, randomness) the grounder and the promotion gate
  need; `ConceptGrounder` stores them in the angular gyrus with QUANTIFIES edges and adds
  Jaccard-weighted RELATED_TO edges between co-occurring concepts.
- `SemanticPromoter` turns confident patterns of its `PromotionSource`s (the NAc, the
  statistician) into concepts with DERIVED_FROM / STATISTICALLY_CONFIRMS edges.
- `PatternCompleter` predicts outcomes of a forming episode from concept-linked episodes;
  `ConceptContextBuilder` builds percept-specific concept context within a time budget.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
import logging
import math
import queue
import re
import threading
import time
from typing import Any, Callable, Iterable, Protocol, Sequence

from maxim_memory.graph import CrossLayerGraph
from maxim_memory.layers.angular_gyrus import AngularGyrus
from maxim_memory.layers.atl import ATL, normalize_name
from maxim_memory.layers.hippocampus import episode_time, Hippocampus
from maxim_memory.records import (CompressedMemory, Concept, EpisodicMemory, MathRecord,
                                  MemoryRecord, Provenance)

log = logging.getLogger(__name__)

STOP_WORDS = frozenset(
    'a an the to of in on at is are was were be been and or for with by from into onto it its '
    'this that these those as do does did so then than up my your our me i you we'.split())
_CAMEL = re.compile(r'(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])')
_SPLIT = re.compile(r'[^A-Za-z0-9]+')


def normalize_tokens(text: str) -> list[str]:
    """'navigate_to_kitchen' -> ['navigate', 'kitchen']; 'graspObject' -> ['grasp', 'object']."""
    out: list[str] = []
    for chunk in _SPLIT.split(text or ''):
        for word in _CAMEL.split(chunk):
            w = word.lower()
            if len(w) > 1 and w not in STOP_WORDS and not w.isdigit() and w not in out:
                out.append(w)
    return out


# --- extraction --------------------------------------------------------------------------------

def extract_terms(ep: MemoryRecord) -> list[tuple[str, str]]:
    """(name, category) terms an episode mentions: objects, people, goal words, the tool."""
    if isinstance(ep, CompressedMemory):
        objects, people, goal, tool = ep.objects, ep.people, ep.goal, ep.tool_name
    elif isinstance(ep, EpisodicMemory):
        objects, people = ep.perception.detected_objects, ep.perception.detected_people
        goal, tool = ep.context.goal, ep.action.tool_name
    else:
        return []
    terms: dict[str, str] = {}
    for o in objects:
        terms.setdefault(o.strip().lower(), 'object')
    for p in people:
        terms.setdefault(p.strip().lower(), 'person')
    tool_tokens = normalize_tokens(tool)
    if tool:
        terms.setdefault(' '.join(tool_tokens) or tool.lower(), 'action')
    for tok in normalize_tokens(goal):
        terms.setdefault(tok, 'action' if tok in tool_tokens else 'goal_term')
    return [(n, c) for n, c in terms.items() if n]


class ConceptExtractor:
    """Background worker: captured episodes -> ATL concepts with refs back to them.

    Fed by the hippocampus' capture / compression / deletion callbacks; the callbacks only
    enqueue. `lock` is the hub's lock, held while one job touches the layers.
    Captures beyond `max_queue` waiting jobs are dropped and counted (the capture path never
    waits; a dropped episode is re-extracted at the next start). Compression and deletion
    jobs are never dropped: a consolidation queues one per record while it holds the hub's
    lock, so the worker cannot drain them until it ends, and a lost one would leave a
    concept citing an id that no longer exists. They are two ids each, and bounded by the
    layer's size.
    """

    def __init__(self, atl: ATL, cross: CrossLayerGraph | None = None,
                 lock: threading.RLock | None = None, max_queue: int = 10_000):
        self.atl = atl
        self.cross = cross
        self._lock = lock or threading.RLock()
        self.max_queue = int(max_queue)
        self._queue: queue.Queue = queue.Queue()  # bounded for captures only: see above
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.processed = 0
        self.dropped = 0

    # callbacks (never block the capture path)
    def on_capture(self, record: MemoryRecord) -> None:
        self._put(('capture', record))

    def on_compress(self, old_id: str, new_record: MemoryRecord) -> None:
        self._put(('compress', old_id, new_record.id))

    def on_delete(self, record_id: str) -> None:
        self._put(('delete', record_id))

    def _put(self, job: tuple) -> None:
        if job[0] == 'capture' and self._queue.qsize() >= self.max_queue:
            self.dropped += 1
            # One line at each power-of-two count and every 10,000th drop: a capture burst
            # must not become a log flood (the count stays exact in `dropped`).
            if self.dropped & (self.dropped - 1) == 0 or self.dropped % 10_000 == 0:
                log.warning('concept extractor queue full; dropped a %s job (%d so far)',
                            job[0], self.dropped)
            return
        self._queue.put_nowait(job)

    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name='concept-extractor',
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Finish queued work (bounded by timeout) and stop; True if the worker ended."""
        self.drain(timeout)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def drain(self, timeout: float = 5.0) -> bool:
        """Wait until every queued job is done (the worker runs) or timeout; True if done."""
        if self._thread is None or not self._thread.is_alive():
            self.run_pending()
            return True
        deadline = time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._queue.all_tasks_done.wait(left)
        return True

    def pending(self) -> int:
        """Jobs queued or in progress."""
        return self._queue.unfinished_tasks

    def run_pending(self) -> int:
        """Process queued jobs on the calling thread (no worker running)."""
        n = 0
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return n
            self._do(job)
            n += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                job = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            self._do(job)

    def _do(self, job: tuple) -> None:
        try:
            with self._lock:
                if job[0] == 'capture':
                    self.process(job[1])
                elif job[0] == 'compress':
                    self._migrate(job[1], job[2])
                else:
                    self._forget(job[1])
            self.processed += 1
        except Exception:  # noqa: BLE001 - one bad episode must not kill the worker
            log.exception('concept extraction failed for %s', job[0])
        finally:
            self._queue.task_done()

    def process(self, ep: MemoryRecord) -> list[str]:
        """Link one episode to the concepts it mentions; returns their ids."""
        ids = []
        for name, category in extract_terms(ep):
            if not normalize_name(name):
                continue            # a label of only separators ("_", " ") names nothing
            cid, _ = self.atl.find_or_create(name, category)
            concept = self.atl.get(cid)
            if not isinstance(concept, Concept):
                continue
            concept.add_ref('hippocampus', ep.id)
            concept.reinforce(ep.id, now=self.atl.now())
            self.atl.update(concept, durable=False)  # derived: re-extractable, flushed later
            if self.cross is not None:
                self.cross.link('hippocampus', ep.id, 'atl', cid, 'INSTANCE_OF')
            ids.append(cid)
        return ids

    def _migrate(self, old_id: str, new_id: str) -> None:
        for cid in self.atl.citing('hippocampus', old_id):
            rec = self.atl.get(cid)
            if isinstance(rec, Concept) and rec.migrate_ref('hippocampus', old_id, new_id):
                self.atl.update(rec, durable=False)

    def _forget(self, record_id: str) -> None:
        for cid in self.atl.citing('hippocampus', record_id):
            rec = self.atl.get(cid)
            if isinstance(rec, Concept) and rec.remove_ref('hippocampus', record_id):
                self.atl.update(rec, durable=False)


# --- IPS ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class IPSAssessment:
    n: int
    mean: float
    std: float
    is_random: bool | None   # None: too few samples to say
    statistic: float = 0.0


class IPS:
    """Intraparietal sulcus: quick numerical sense. Randomness needs >= min_samples values."""

    def __init__(self, min_samples: int = 8):
        self.min_samples = min_samples

    def assess(self, values: Sequence[float]) -> IPSAssessment:
        """Mean, std and a Wald-Wolfowitz runs test around the median (|z| < 1.96: random)."""
        xs = [float(v) for v in values]
        n = len(xs)
        if n == 0:
            return IPSAssessment(0, 0.0, 0.0, None)
        mean = sum(xs) / n
        std = math.sqrt(sum((x - mean) ** 2 for x in xs) / n)
        if n < self.min_samples:
            return IPSAssessment(n, mean, std, None)
        med = sorted(xs)[n // 2]
        signs = [x > med for x in xs if x != med]
        n1, n2 = sum(signs), len(signs) - sum(signs)
        if n1 == 0 or n2 == 0:
            return IPSAssessment(n, mean, std, False, float('inf'))  # constant: structure
        runs = 1 + sum(1 for a, b in zip(signs, signs[1:]) if a != b)
        mu = 2 * n1 * n2 / (n1 + n2) + 1
        var = 2 * n1 * n2 * (2 * n1 * n2 - n1 - n2) / ((n1 + n2) ** 2 * (n1 + n2 - 1))
        z = (runs - mu) / math.sqrt(var) if var > 0 else 0.0
        return IPSAssessment(n, mean, std, abs(z) < 1.96, z)

    def timing_randomness(self, timestamps: Sequence[float]) -> IPSAssessment:
        """Are events at Poisson-random times? Lilliefors-type test of the gaps against an
        exponential (Stephens' modified D, 5% level: D* > 1.094 means structured timing)."""
        ts = sorted(float(t) for t in timestamps)
        gaps = [b - a for a, b in zip(ts, ts[1:])]
        n = len(gaps)
        mean = sum(gaps) / n if n else 0.0
        std = math.sqrt(sum((g - mean) ** 2 for g in gaps) / n) if n else 0.0
        if n < self.min_samples:
            return IPSAssessment(n, mean, std, None)
        if mean <= 0:
            return IPSAssessment(n, mean, std, False, float('inf'))
        gs = sorted(gaps)
        d = 0.0
        for i, g in enumerate(gs):
            cdf = 1.0 - math.exp(-g / mean)
            d = max(d, (i + 1) / n - cdf, cdf - i / n)
        d_star = (d - 0.2 / n) * (math.sqrt(n) + 0.26 + 0.5 / math.sqrt(n))
        return IPSAssessment(n, mean, std, d_star <= 1.094, d_star)


# --- grounding ---------------------------------------------------------------------------------

def _stat_confidence(n: int) -> float:
    return min(0.99, 0.5 + 0.1 * math.sqrt(n))


class ConceptGrounder:
    """Concept refs -> statistics in the angular gyrus (QUANTIFIES) and co-occurrence edges."""

    def __init__(self, hippocampus: Hippocampus, atl: ATL, ag: AngularGyrus,
                 cross: CrossLayerGraph, ips: IPS | None = None, min_refs: int = 8):
        self.hippocampus, self.atl, self.ag, self.cross = hippocampus, atl, ag, cross
        self.ips = ips or IPS()
        self.min_refs = min_refs

    def episodes_of(self, concept: Concept) -> list[MemoryRecord]:
        found = (self.hippocampus.find(i) for i in concept.refs('hippocampus'))
        return [e for e in found if e is not None]

    def ground_concept(self, concept: Concept,
                       episodes: Sequence[MemoryRecord] | None = None) -> list[MathRecord]:
        eps = list(episodes) if episodes is not None else self.episodes_of(concept)
        if len(eps) < self.min_refs:
            return []
        full = [e for e in eps if isinstance(e, EpisodicMemory)]
        out = []
        for prop in ('salience', 'novelty'):
            values = [getattr(e.perception, prop) for e in full]
            if len(values) < self.min_refs:
                continue
            a = self.ips.assess(values)
            out.append(MathRecord(
                name=f'{concept.name}_{prop}', category='statistic', domain='concept_grounding',
                verbal=f'{concept.name} {prop}: mean={a.mean:.2f}, std={a.std:.2f}',
                code=f'IPS.assess(perception.{prop}) over {a.n} episodes',
                confidence=_stat_confidence(a.n),
                values={'mean': a.mean, 'std': a.std, 'n': a.n,
                        'is_random': -1.0 if a.is_random is None else float(a.is_random)}))
        wins = sum(1 for e in eps if (e.success if isinstance(e, CompressedMemory)
                                      else e.outcome.success))
        rate = wins / len(eps)
        out.append(MathRecord(
            name=f'{concept.name}_success_rate', category='statistic',
            domain='concept_grounding',
            verbal=f'{concept.name} success rate: {rate:.3f} ({wins}/{len(eps)})',
            code='mean(outcome.success)', confidence=_stat_confidence(len(eps)),
            values={'rate': rate, 'successes': wins, 'n': len(eps)}))
        for rec in out:
            rid = self.ag.upsert(rec)
            concept.add_ref('angular_gyrus', rid)
            self.cross.link('angular_gyrus', rid, 'atl', concept.id, 'QUANTIFIES',
                            rec.confidence)
        self.atl.update(concept)
        return out

    def cooccurrence(self, min_jaccard: float = 0.3, min_shared: int = 2) -> int:
        """RELATED_TO edges weighted by the Jaccard index of concepts' episode sets."""
        by_episode: dict[str, list[str]] = defaultdict(list)
        sets: dict[str, set[str]] = {}
        for rec in self.atl:
            if isinstance(rec, Concept):
                sets[rec.id] = set(rec.refs('hippocampus'))
                for eid in sets[rec.id]:
                    by_episode[eid].append(rec.id)
        shared: dict[tuple[str, str], int] = defaultdict(int)
        for cids in by_episode.values():
            cids = sorted(cids)
            for i, a in enumerate(cids):
                for b in cids[i + 1:]:
                    shared[(a, b)] += 1
        made = 0
        for (a, b), k in shared.items():
            j = k / len(sets[a] | sets[b])
            if k >= min_shared and j >= min_jaccard:
                self.atl.relate(a, b, 'RELATED_TO', round(j, 4), shared=k)
                made += 1
        return made


# --- promotion ---------------------------------------------------------------------------------

@dataclass
class PromotionCandidate:
    pattern_name: str
    category: str
    confidence: float
    source_memory_ids: list[str]
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str = ''           # 'nac', 'statistician', ...


class PromotionSource(Protocol):
    name: str

    def get_promotion_candidates(self, min_confidence: float = 0.6,
                                 min_observations: int = 3) -> list[PromotionCandidate]: ...


class NAcPromotionSource:
    """Confident causal links of the NAc; episode times feed the randomness gate."""

    name = 'nac'

    def __init__(self, nac: Any, hippocampus: Hippocampus, max_links: int = 1000):
        self.nac, self.hippocampus, self.max_links = nac, hippocampus, max_links

    def get_promotion_candidates(self, min_confidence: float = 0.6,
                                 min_observations: int = 3) -> list[PromotionCandidate]:
        out = []
        for link in self.nac.causal_links(limit=self.max_links):
            if link.confidence < min_confidence or link.observation_count < min_observations:
                continue
            times = [episode_time(r) for r in (self.hippocampus.find(i) for i in link.memory_ids)
                     if r is not None]
            ctx = f' + {link.context}' if link.context else ''
            out.append(PromotionCandidate(
                pattern_name=f'{link.event}{ctx} -> {link.outcome}', category='causal_pattern',
                confidence=link.confidence, source_memory_ids=list(link.memory_ids),
                metadata={'event': link.event, 'context': link.context,
                          'outcome': link.outcome, 'valence': link.valence,
                          'observations': link.observation_count, 'timestamps': times},
                source=self.name))
        return out


class StatisticianPromotionSource:
    """Confirmed PATTERN records of the angular gyrus (already assessed: no episode ids)."""

    name = 'statistician'

    def __init__(self, ag: AngularGyrus):
        self.ag = ag

    def get_promotion_candidates(self, min_confidence: float = 0.6,
                                 min_observations: int = 3) -> list[PromotionCandidate]:
        return [PromotionCandidate(pattern_name=r.name, category='operational_pattern',
                                   confidence=r.confidence, source_memory_ids=[],
                                   metadata={'math_id': r.id, 'verbal': r.verbal},
                                   source=self.name)
                for r in self.ag.recall(limit=1000, category='PATTERN', confirmed=True)]


@dataclass
class PromotionReport:
    created: list[str] = field(default_factory=list)
    reinforced: list[str] = field(default_factory=list)
    rejected_noise: list[str] = field(default_factory=list)
    rejected_low_confidence: list[str] = field(default_factory=list)


class SemanticPromoter:
    """Episodic/statistical patterns -> ATL concepts, deduplicated and traceable."""

    def __init__(self, atl: ATL, hippocampus: Hippocampus, cross: CrossLayerGraph,
                 sources: Iterable[PromotionSource] = (), ips: IPS | None = None,
                 dedup_threshold: float = 0.85, statistician_min_confidence: float = 0.4):
        self.atl, self.hippocampus, self.cross = atl, hippocampus, cross
        self.sources = list(sources)
        self.ips = ips or IPS()
        self.dedup_threshold = dedup_threshold
        self.statistician_min_confidence = statistician_min_confidence

    def passes_gate(self, cand: PromotionCandidate) -> bool:
        """IPS quality gate: NAc patterns at random times are coincidence; < 8 samples pass."""
        if cand.source == 'statistician':
            return cand.confidence >= self.statistician_min_confidence
        a = self.ips.timing_randomness(cand.metadata.get('timestamps', []))
        return a.is_random is not True

    def promote(self, min_confidence: float = 0.6, min_observations: int = 3) -> PromotionReport:
        report = PromotionReport()
        for source in self.sources:
            for cand in source.get_promotion_candidates(min_confidence, min_observations):
                cand.source = cand.source or getattr(source, 'name', '')
                if cand.source != 'statistician' and cand.confidence < min_confidence:
                    report.rejected_low_confidence.append(cand.pattern_name)
                elif not self.passes_gate(cand):
                    report.rejected_noise.append(cand.pattern_name)
                else:
                    cid, created = self._apply(cand)
                    (report.created if created else report.reinforced).append(cid)
        return report

    def _apply(self, cand: PromotionCandidate) -> tuple[str, bool]:
        provenance = (Provenance.AGENT_INFERENCE if cand.source == 'statistician'
                      else Provenance.EPISODIC_CONSOLIDATION)
        existing = self.atl.find_by_name(cand.pattern_name, fuzzy=False)
        if existing is None:
            hits = self.atl.recall_similar(cand.pattern_name, k=1,
                                           min_score=self.dedup_threshold)
            existing = hits[0][0] if hits else None
        episodes = [e for e in (self.hippocampus.find(i) for i in cand.source_memory_ids)
                    if e is not None]
        props = self._recurring(episodes)
        props.update({k: v for k, v in cand.metadata.items()
                      if k in ('event', 'context', 'outcome', 'valence', 'verbal')})
        if existing is None:
            concept = Concept(name=cand.pattern_name, category=cand.category,
                              definition=self._define(cand), properties=props,
                              provenance=provenance, created_at=self.atl.now())
            self.atl.store(concept)
            created = True
        else:
            concept = self.atl.get(existing)
            if not isinstance(concept, Concept):
                return existing, False
            if concept.provenance != provenance:
                concept.provenance = Provenance.HYBRID
            concept.properties.update(props)
            created = False
        new_sources = [e for e in episodes if e.id not in concept.source_episode_ids]
        for e in new_sources:
            concept.add_ref('hippocampus', e.id)
            concept.reinforce(e.id, now=self.atl.now())
            self.cross.link('atl', concept.id, 'hippocampus', e.id, 'DERIVED_FROM')
        if not episodes and created:
            concept.reinforce('', now=self.atl.now())
        math_id = cand.metadata.get('math_id')
        if math_id:
            concept.add_ref('angular_gyrus', math_id)
            self.cross.link('angular_gyrus', math_id, 'atl', concept.id,
                            'STATISTICALLY_CONFIRMS', min(1.0, cand.confidence))
        self.atl.update(concept)
        for obj in props.get('objects', []):
            oid = self.atl.find_by_name(obj, fuzzy=False)
            if oid is not None and oid != concept.id:
                self.atl.relate(concept.id, oid, 'RELATED_TO', 0.5)
        return concept.id, created

    @staticmethod
    def _recurring(episodes: Sequence[MemoryRecord]) -> dict[str, Any]:
        """Elements present in at least half of the source episodes."""
        if not episodes:
            return {}
        counts: dict[str, int] = defaultdict(int)
        tools: dict[str, int] = defaultdict(int)
        for e in episodes:
            objs = e.objects if isinstance(e, CompressedMemory) else e.perception.detected_objects
            for o in set(objs):
                counts[o] += 1
            tools[e.tool_name if isinstance(e, CompressedMemory) else e.action.tool_name] += 1
        half = len(episodes) / 2
        props: dict[str, Any] = {'objects': sorted(o for o, c in counts.items() if c >= half),
                                 'episode_count': len(episodes)}
        top_tool = max(tools.items(), key=lambda x: x[1])
        if top_tool[0] and top_tool[1] >= half:
            props['tool'] = top_tool[0]
        return props

    @staticmethod
    def _define(cand: PromotionCandidate) -> str:
        m = cand.metadata
        if cand.source == 'statistician':
            return f'Confirmed operational pattern: {m.get("verbal") or cand.pattern_name}.'
        where = f' in {m["context"]}' if m.get('context') else ''
        return (f'{m.get("event", cand.pattern_name)}{where} leads to {m.get("outcome", "?")} '
                f'({m.get("observations", len(cand.source_memory_ids))} observations, '
                f'confidence {cand.confidence:.2f}).')


# --- pattern completion ------------------------------------------------------------------------

@dataclass(frozen=True)
class MathContextEntry:
    name: str
    verbal: str
    confidence: float
    domain: str


@dataclass
class PredictedOutcome:
    tool: str
    success: bool
    goal: str | None
    confidence: float
    source_episode_id: str
    math_context: list[MathContextEntry] | None = None


def _matching_concepts(atl: ATL, objects: Iterable[str], people: Iterable[str],
                       goal: str) -> list[Concept]:
    names = [o for o in objects] + [p for p in people] + normalize_tokens(goal)
    found: dict[str, Concept] = {}
    for n in names:
        cid = atl.find_by_name(n, fuzzy=False)
        if cid is not None:
            rec = atl.get(cid)
            if isinstance(rec, Concept):
                found[cid] = rec
    return sorted(found.values(), key=lambda c: (-c.confidence, c.name))


class PatternCompleter:
    """Partial episode (percept + goal) -> concepts -> their episodes -> past outcomes."""

    MAX_EPISODES = 20
    COMPRESSED_CONFIDENCE = 0.3

    def __init__(self, atl: ATL, hippocampus: Hippocampus, ag: AngularGyrus | None = None):
        self.atl, self.hippocampus, self.ag = atl, hippocampus, ag

    def complete(self, objects: Iterable[str] = (), people: Iterable[str] = (),
                 goal: str = '') -> list[PredictedOutcome]:
        concepts = _matching_concepts(self.atl, objects, people, goal)
        ids = dict.fromkeys(i for c in concepts for i in c.refs('hippocampus'))
        eps = [e for e in (self.hippocampus.find(i) for i in ids) if e is not None]
        eps.sort(key=episode_time, reverse=True)
        out = []
        for e in eps[:self.MAX_EPISODES]:
            if isinstance(e, CompressedMemory):
                p = PredictedOutcome(e.tool_name, e.success, e.goal or e.intent or None,
                                     self.COMPRESSED_CONFIDENCE, e.id)
            else:
                p = PredictedOutcome(e.action.tool_name, e.outcome.success,
                                     e.decision.intent or e.context.goal or None,
                                     e.decision.confidence, e.id)
            p.math_context = self._math_for(e.id, concepts) or None
            out.append(p)
        return out

    def _math_for(self, episode_id: str, concepts: list[Concept]) -> list[MathContextEntry]:
        if self.ag is None:
            return []
        entries = []
        for c in concepts:
            if episode_id not in c.memory_refs.get('hippocampus', {}):
                continue
            for mid in c.refs('angular_gyrus'):
                m = self.ag.find(mid)
                if isinstance(m, MathRecord):
                    entries.append(MathContextEntry(m.name, m.verbal, m.confidence, m.domain))
        return entries


# --- concept context ---------------------------------------------------------------------------

LEVEL_FULL, LEVEL_LOW, LEVEL_EXHAUSTED = 'full', 'low', 'exhausted'


@dataclass
class ConceptContext:
    entries: list[dict[str, Any]]
    level: str            # the most degraded level any entry was built at
    elapsed_s: float


class ConceptContextBuilder:
    """Percept-specific concept context, bounded by a time budget (default 50 ms).

    Budget available: relationships + AG statistics + fresh grounding. Budget low (past
    `low_fraction` of it): relationships + cached AG records, no grounding. Exhausted: name,
    category and episode count only.
    """

    def __init__(self, atl: ATL, ag: AngularGyrus | None = None,
                 grounder: ConceptGrounder | None = None, budget_s: float = 0.05,
                 low_fraction: float = 0.5, clock: Callable[[], float] = time.monotonic):
        if budget_s <= 0:
            raise ValueError('budget_s must be > 0')
        self.atl, self.ag, self.grounder = atl, ag, grounder
        self.budget_s, self.low_fraction, self.clock = budget_s, low_fraction, clock

    def build(self, objects: Iterable[str] = (), people: Iterable[str] = (), goal: str = '',
              limit: int = 5) -> ConceptContext:
        start = self.clock()
        concepts = _matching_concepts(self.atl, objects, people, goal)[:limit]
        order = [LEVEL_FULL, LEVEL_LOW, LEVEL_EXHAUSTED]
        worst = LEVEL_FULL
        entries = []
        for c in concepts:
            elapsed = self.clock() - start
            level = (LEVEL_EXHAUSTED if elapsed >= self.budget_s else
                     LEVEL_LOW if elapsed >= self.budget_s * self.low_fraction else LEVEL_FULL)
            worst = max(worst, level, key=order.index)
            entry: dict[str, Any] = {'name': c.name, 'category': c.category,
                                     'confidence': round(c.confidence, 3),
                                     'episode_count': len(c.memory_refs.get('hippocampus', {}))}
            if level != LEVEL_EXHAUSTED:
                entry['relationships'] = self._relationships(c)
                if level == LEVEL_FULL and self.grounder is not None:
                    self.grounder.ground_concept(c)
                entry['layer_context'], entry['properties'] = self._enrichment(c)
            entries.append(entry)
        return ConceptContext(entries, worst, self.clock() - start)

    def _relationships(self, c: Concept) -> list[dict[str, Any]]:
        out = []
        for e in self.atl.relationships(c.id):
            target = self.atl.find(e.dst)
            out.append({'type': e.type, 'target': target.name if target else e.dst,
                        'weight': round(e.weight, 3)})
        return out

    def _enrichment(self, c: Concept) -> tuple[list[dict[str, Any]], dict[str, float]]:
        layer_ctx, props = [], {}
        if self.ag is None:
            return layer_ctx, props
        for mid in c.refs('angular_gyrus'):
            m = self.ag.find(mid)
            if not isinstance(m, MathRecord):
                continue
            layer_ctx.append({'layer': 'angular_gyrus', 'name': m.name, 'verbal': m.verbal,
                              'confidence': round(m.confidence, 3)})
            if m.category == 'PATTERN':
                continue  # a trend or a rate in context: its verbal line says it all
            suffix = m.name[len(c.name) + 1:] if m.name.startswith(c.name + '_') else m.name
            if 'mean' in m.values:
                props[f'mean_{suffix}'] = round(m.values['mean'], 3)
            if 'rate' in m.values:
                props[suffix] = round(m.values['rate'], 3)
        return layer_ctx, props
