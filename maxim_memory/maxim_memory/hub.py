"""MemoryHub: every memory part wired together behind one object the node translates.

Capture path (durable when `capture_episode` returns): hippocampus write-through to SQLite ->
NAc observation (RPE; |RPE| > 0.3 adds a CAUSES edge from the run's previous episode) -> SCN
bins -> EC similarity index; the concept extractor runs behind, on its own thread.
Queries are read-only: they never touch access counts or learned state.
`on_session_end` runs the mandatory order: SCN save -> detect -> promote -> consolidate ->
persist. Detect is the statistician's PATTERN records (tool trends, context rates, salience
trends), Jaccard RELATED_TO between co-occurring concepts and proposed relationship types; it
runs before promotion so the confirmed patterns are promoted in the same session end.
Persist also saves the EC similarity index next to the database (`<db>.ec.npz`), so a restart
loads it and embeds only the episodes captured since; an index built by another embedder is
rebuilt, and an unreadable one is moved aside and rebuilt.

The NAc, SCN, pain and EC parts live in their own modules; one that cannot be imported is
reported as absent (`available: False` with the reason) instead of being faked.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, is_dataclass
import importlib
import logging
import math
import os
import threading
import time
from typing import Any, Callable, NamedTuple

from maxim_memory import relevance
from maxim_memory.graph import CrossLayerGraph, Edge, RelationshipRegistry
from maxim_memory.knowledge import (ConceptContext, ConceptContextBuilder, ConceptExtractor,
                                    ConceptGrounder, IPS, NAcPromotionSource, normalize_tokens,
                                    PatternCompleter, PredictedOutcome, PromotionReport,
                                    SemanticPromoter, StatisticianPromotionSource)
from maxim_memory.layers import (AccessBasedStrategy, AngularGyrus, ATL, CapacityPolicy,
                                 episode_time, Hippocampus, HourProfile,
                                 TemporalAwareStrategy)
from maxim_memory.layers.base import ConsolidationReport
from maxim_memory.records import (CompressedMemory, Concept, EpisodicMemory, MemoryRecord,
                                  SemanticMemory)
from maxim_memory.statistician import (ProposalReport, RelationProposer, Statistician,
                                       StatisticianReport)
from maxim_memory.store import CorruptStoreError, EdgeRow, MemoryStore, StoreError

log = logging.getLogger(__name__)

CROSS_GRAPH = 'cross_layer'


@dataclass(frozen=True)
class HubConfig:
    db_path: str = '~/.maxim/memory.db'
    synchronous: str = 'FULL'              # FULL: durable on return; NORMAL: crash-safe only
    hippocampus_capacity: int = 100_000    # 0 = unbounded
    atl_capacity: int = 20_000
    ag_capacity: int = 20_000
    state_flush_every: int = 20            # NAc/SCN/pain snapshot every N captures
    rpe_causes_threshold: float = 0.3
    spread_decay: float = 0.5
    spread_threshold: float = 0.05
    spread_max_depth: int = 3
    context_budget_s: float = 0.05
    promote_min_confidence: float = 0.6
    promote_min_observations: int = 3
    max_results: int = 50                  # hard cap on any query's answer
    background_extraction: bool = True
    recover_corrupt: bool = True           # set a bad file aside and start a fresh one
    persist_ec_index: bool = True          # save the EC index at persist, load it at start
    ec_index_path: str = ''                # '' = next to the database: <db_path>.ec.npz
    write_budget_s: float = 5.0            # busy database: retried this long, then journaled

    def ec_index_file(self) -> str:
        return os.path.expanduser(self.ec_index_path or f'{self.db_path}.ec.npz')


@dataclass
class Subsystem:
    """An optional part: the object, or why it is absent."""

    obj: Any = None
    reason: str = ''

    @property
    def available(self) -> bool:
        return self.obj is not None


def _optional(module: str, attr: str, *args: Any, **kwargs: Any) -> Subsystem:
    try:
        cls = getattr(importlib.import_module(f'maxim_memory.{module}'), attr)
    except (ImportError, AttributeError) as exc:
        return Subsystem(None, f'{module}.{attr} missing: {exc}')
    return Subsystem(cls(*args, **kwargs))


def _restore(sub: Subsystem, state: Any, **kwargs: Any) -> None:
    """Replace a fresh part by its saved state, if any and if it loads."""
    if sub.obj is None or state is None:
        return
    try:
        sub.obj = type(sub.obj).from_dict(state, **kwargs)
    except (KeyError, TypeError, ValueError) as exc:
        log.error('saved %s state unreadable (%s); starting it fresh', type(sub.obj).__name__,
                  exc)


def context_signature(ep: EpisodicMemory) -> str:
    """The context an outcome is learned in: an explicit one, the scene, the objects, the goal."""
    explicit = ep.context.extra.get('context') if isinstance(ep.context.extra, dict) else None
    if explicit:
        return str(explicit)
    if ep.context.scene:
        return ep.context.scene
    if ep.perception.detected_objects:
        return '+'.join(sorted({o.lower() for o in ep.perception.detected_objects})[:3])
    return '_'.join(normalize_tokens(ep.context.goal)) or 'none'


def outcome_signature(ep: EpisodicMemory) -> str:
    if ep.outcome.blocked:
        return 'blocked'
    return 'success' if ep.outcome.success else 'failure'


def memory_size(stats: dict[str, Any]) -> dict[str, int]:
    """The size of memory from system_stats(): episodes counts every hippocampus record,
    compressed ones included (consolidation compresses, it does not forget)."""
    return {'episodes': int(stats['episodes']) + int(stats['compressed_episodes']),
            'concepts': int(stats['concepts']), 'causal_links': int(stats['causal_links']),
            'graph_edges': int(stats['graph_edges'])}


def to_plain(obj: Any) -> Any:
    """Dataclasses (of any part) as JSON-ready values."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return to_plain(asdict(obj))
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [to_plain(v) for v in obj]
    if hasattr(obj, 'item'):  # numpy scalars
        return obj.item()
    return obj


@dataclass
class RecallResult:
    hits: list[tuple[MemoryRecord, float]]
    total_matches: int
    expanded: int = 0


@dataclass
class SessionEndReport:
    steps: list[str] = field(default_factory=list)
    patterns: StatisticianReport | None = None   # AG PATTERN records of the statistician
    related_to: int = 0                           # Jaccard RELATED_TO edges (re)weighted
    relations: ProposalReport | None = None       # proposed types and the edges they typed
    promotion: PromotionReport | None = None
    consolidation: list[ConsolidationReport] = field(default_factory=list)
    persisted_records: int = 0
    errors: list[str] = field(default_factory=list)
    durations_s: dict[str, float] = field(default_factory=dict)  # per step, wall time


class RelevantMemory(NamedTuple):
    """An episode offered to the model, its relevance (0..1) and why it matched."""

    record: MemoryRecord
    score: float
    why: str


class QueryError(ValueError):
    """A query parameter out of range or malformed."""


class UnavailableError(RuntimeError):
    """The subsystem that answers this query is absent."""


class MemoryHub:
    """Owns the layers, graphs, learned state and persistence of one robot's memory."""

    def __init__(self, config: HubConfig = HubConfig(), embedder: Any = None,
                 clock: Callable[[], float] = time.time,
                 stamp_clock: Callable[[], float] | None = None):
        self.config = config
        self._clock = clock
        # The clock the stamps of arriving episodes are in (the node's ROS clock: sim time
        # on the simulated head); the hub's own clock when not given.
        self.stamp_now = stamp_clock or clock
        self._lock = threading.RLock()
        self.warnings: list[str] = []
        self.store = self._open_store(config)
        state = self.store.get_state
        self.registry = RelationshipRegistry.from_dict(state('relationship_registry'))
        access = AccessBasedStrategy()
        self.hours = HourProfile()

        def policy(cap, temporal=False):
            strategies = [access, TemporalAwareStrategy(self.hours.activity)] if temporal \
                else [access]
            return CapacityPolicy(capacity=cap, strategies=strategies)

        self.hippocampus = Hippocampus(store=self.store, registry=self.registry,
                                       capacity=policy(config.hippocampus_capacity, True),
                                       clock=clock)
        self.atl = ATL(store=self.store, registry=self.registry,
                       capacity=policy(config.atl_capacity), clock=clock, embedder=embedder)
        self.angular_gyrus = AngularGyrus(store=self.store, registry=self.registry,
                                          capacity=policy(config.ag_capacity), clock=clock)
        self.layers = {layer.layer_name: layer for layer in
                       (self.hippocampus, self.atl, self.angular_gyrus)}
        for layer in self.layers.values():
            layer.load_from(self.store)
        for rec in self.hippocampus:
            self.hours.observe(episode_time(rec))
        self.cross = CrossLayerGraph(self.registry)
        self.cross.load_edges(Edge(e.src, e.dst, e.type, e.weight, e.data)
                              for e in self.store.load_edges(CROSS_GRAPH))
        for layer in self.layers.values():
            layer.register_deletion_callback(
                lambda rid, name=layer.layer_name: self.cross.remove_record(name, rid))
            layer.register_compression_callback(
                lambda old, new, name=layer.layer_name: self.cross.relabel(name, old, new.id))

        self.nac = _optional('nac', 'NucleusAccumbens', clock=clock)
        _restore(self.nac, state('nac'), clock=clock)
        self.scn = _optional('scn', 'SuprachiasmaticNucleus')
        _restore(self.scn, state('scn'))
        self.pain_detector = _optional('pain', 'PainDetector')
        self.pain = _optional('pain', 'PainHistory', clock=clock)
        _restore(self.pain, state('pain'), clock=clock)
        self.ec_startup: dict[str, Any] = {}  # how the EC index came up (loaded, embedded)
        self.similarity = self._build_similarity(embedder)
        if self.similarity.available:  # the EC index follows evictions and compressions
            self.hippocampus.register_deletion_callback(self._sim_forget)
            self.hippocampus.register_compression_callback(self._sim_compressed)

        self.ips = IPS()
        self.extractor = ConceptExtractor(self.atl, self.cross, lock=self._lock)
        self.hippocampus.register_capture_callback(self.extractor.on_capture)
        self.hippocampus.register_compression_callback(self.extractor.on_compress)
        self.hippocampus.register_deletion_callback(self.extractor.on_delete)
        self.recovered_extractions = 0
        for rec in self.hippocampus:  # after a crash: episodes no concept cites yet
            if isinstance(rec, EpisodicMemory) and not self.atl.citing('hippocampus', rec.id):
                self.extractor.on_capture(rec)
                self.recovered_extractions += 1
        if config.background_extraction:
            self.extractor.start()
        self.grounder = ConceptGrounder(self.hippocampus, self.atl, self.angular_gyrus,
                                        self.cross, self.ips)
        sources: list[Any] = [StatisticianPromotionSource(self.angular_gyrus)]
        if self.nac.available:
            sources.insert(0, NAcPromotionSource(self.nac.obj, self.hippocampus))
        self.statistician = Statistician(self.hippocampus, self.atl, self.angular_gyrus,
                                         self.cross, self.ips, context_of=context_signature)
        self.relations = RelationProposer(self.hippocampus, self.atl, self.cross, self.registry)
        self.promoter = SemanticPromoter(self.atl, self.hippocampus, self.cross, sources,
                                         self.ips)
        self.completer = PatternCompleter(self.atl, self.hippocampus, self.angular_gyrus)
        self.context_builder = ConceptContextBuilder(self.atl, self.angular_gyrus,
                                                     self.grounder, config.context_budget_s)
        self._captures = 0
        self._closed = False

    # --- set-up --------------------------------------------------------------------------------

    def _open_store(self, config: HubConfig) -> MemoryStore:
        """The database; a corrupt one is set aside for a fresh one. One that cannot be
        opened at all (a directory in the way, a newer schema, a bad file that cannot be
        moved) is one clear warning and a journal-only store: captures are kept in the
        journal beside it and replayed by the next open that succeeds."""
        try:
            try:
                return MemoryStore(config.db_path, synchronous=config.synchronous,
                                   busy_timeout_s=config.write_budget_s,
                                   write_budget_s=config.write_budget_s)
            except CorruptStoreError as exc:
                if not config.recover_corrupt:
                    raise
                self.warnings.append(str(exc))
                log.error('%s; starting a fresh memory database', exc)
                return MemoryStore(config.db_path, synchronous=config.synchronous,
                                   busy_timeout_s=config.write_budget_s,
                                   write_budget_s=config.write_budget_s)
        except CorruptStoreError:
            raise
        except StoreError as exc:
            store = MemoryStore.journal_only(config.db_path, str(exc), clock=self._clock)
            self.warnings.append(store.fault.message)
            log.error('%s', store.fault.message)
            return store

    def _build_similarity(self, embedder: Any) -> Subsystem:
        try:
            sim_mod = importlib.import_module('maxim_memory.similarity')
            if embedder is None:
                embedder = importlib.import_module('maxim_memory.embedding').HashingEmbedder()
            index = self._load_similarity(sim_mod, embedder)
        except (ImportError, AttributeError) as exc:
            return Subsystem(None, f'similarity index missing: {exc}')
        # follow the database: drop what it no longer holds, embed what the file lacks
        have = {rec.id for rec in self.hippocampus}
        gone = [i for i in index.ids() if i not in have]
        for i in gone:
            index.remove(i)
        self.ec_startup['removed'] = len(gone)
        self.ec_startup['embedded'] = index.add_many(
            (rec.id, rec.text(), self._sim_context(rec), episode_time(rec))
            for rec in self.hippocampus if rec.id not in index)  # batched embedding
        return Subsystem(index)

    def _load_similarity(self, sim_mod: Any, embedder: Any) -> Any:
        """The saved EC index when it is sound and built by this embedder, else a new one."""
        path = self.config.ec_index_file()
        self.ec_startup = {'path': path if self.config.persist_ec_index else '',
                           'loaded': False, 'embedded': 0, 'removed': 0, 'rebuild_reason': ''}
        if not self.config.persist_ec_index:
            return sim_mod.EpisodeSimilarityIndex(embedder)
        try:
            index = sim_mod.EpisodeSimilarityIndex.load(path, embedder)
        except FileNotFoundError:
            self.ec_startup['rebuild_reason'] = 'no saved index'
        except sim_mod.IndexMismatchError as exc:
            self.ec_startup['rebuild_reason'] = str(exc)
            log.warning('%s; re-embedding every episode', exc)
        except sim_mod.IndexFileError as exc:
            self.ec_startup['rebuild_reason'] = str(exc)
            self.warnings.append(str(exc))
            log.error('%s; re-embedding every episode', exc)
        else:
            self.ec_startup['loaded'] = True
            return index
        return sim_mod.EpisodeSimilarityIndex(embedder)

    def save_similarity(self) -> int:
        """Write the EC index next to the database; returns bytes written (0: not saved).
        A failed save is reported, never fatal: the next start re-embeds instead."""
        if not (self.similarity.available and self.config.persist_ec_index):
            return 0
        try:
            return self.similarity.obj.save(self.config.ec_index_file())
        except OSError as exc:
            msg = f'similarity index not saved to {self.config.ec_index_file()}: {exc}'
            self.warnings.append(msg)
            log.error(msg)
            return 0

    def _sim_forget(self, record_id: str) -> None:
        self.similarity.obj.remove(record_id)

    def _sim_compressed(self, old_id: str, new: MemoryRecord) -> None:
        # the gist keeps its episode's vector: re-embedding every compressed episode at the
        # session end would cost the llama embedder ~90 ms each
        if not self.similarity.obj.rename(old_id, new.id, self._sim_context(new)):
            self.similarity.obj.add(new.id, new.text(), self._sim_context(new),
                                    episode_time(new))

    @staticmethod
    def _sim_context(rec: MemoryRecord) -> dict[str, Any]:
        if isinstance(rec, CompressedMemory):
            return {'tool': rec.tool_name, 'goal': rec.goal, 'success': rec.success,
                    'objects': list(rec.objects)}
        return {'tool': rec.action.tool_name, 'goal': rec.context.goal,
                'mode': rec.context.mode, 'scene': rec.context.scene,
                'success': rec.outcome.success, 'objects': list(rec.perception.detected_objects),
                'people': list(rec.perception.detected_people)}

    # --- capture -------------------------------------------------------------------------------

    def capture_episode(self, ep: EpisodicMemory) -> str:
        """Remember one episode; it is on disk when this returns. Returns its id."""
        if not isinstance(ep, EpisodicMemory):
            raise TypeError(f'capture_episode takes an EpisodicMemory, not {type(ep).__name__}')
        v, d = ep.outcome.valence, ep.outcome.duration_s
        if not -1.0 <= v <= 1.0 or not d >= 0.0:  # checked before anything is written
            raise ValueError(f'episode {ep.id}: valence {v} outside -1..1 or duration {d} < 0')
        with self._lock:
            if ep.id in self.hippocampus:  # a redelivered message: learn from it once
                return ep.id
            prev = self.hippocampus.last_in_run(ep.run_id) if ep.run_id else None
            self.hippocampus.store(ep)
            self.hours.observe(ep.created_at)
            tool = ep.action.tool_name
            # A blocked call never ran: it says nothing about what the tool does here, and
            # learning "blocked" as its outcome would let one block breed the next.
            if self.nac.available and tool and not ep.outcome.blocked:
                rpe = self.nac.obj.observe(tool, context_signature(ep), outcome_signature(ep),
                                           float(ep.outcome.valence),
                                           delay_s=float(ep.outcome.duration_s),
                                           memory_id=ep.id)
                if prev is not None and abs(rpe) > self.config.rpe_causes_threshold:
                    self.hippocampus.add_causal_link(prev, ep.id, rpe)
            if self.scn.available:
                self.scn.obj.record('episode', ep.created_at)
                if tool:
                    self.scn.obj.record(f'{tool}:{outcome_signature(ep)}', ep.created_at)
            if self.similarity.available:
                self.similarity.obj.add(ep.id, ep.text(), self._sim_context(ep), ep.created_at)
            self._captures += 1
            if self.config.state_flush_every and self._captures % self.config.state_flush_every \
                    == 0:
                try:
                    self._save_state()
                except StoreError as exc:   # the episode is kept; the snapshot is redone later
                    log.error('memory state snapshot not saved: %s', exc)
        return ep.id

    def learning_snapshot(self, ep: EpisodicMemory) -> dict[str, Any]:
        """What memory holds about `ep` after capturing it: the NAc prediction for its tool in
        its context (the key the outcome was learned under) and the size of memory. This is
        the learning curve a session recording carries, one point per episode."""
        tool = ep.action.tool_name
        context = context_signature(ep)
        out: dict[str, Any] = {
            'episode_id': ep.id, 'tool_name': tool, 'context': context,
            'outcome': outcome_signature(ep), 'learned': bool(
                self.nac.available and tool and not ep.outcome.blocked),
            'prediction_available': False, 'value': 0.0, 'expected_valence': 0.0,
            'confidence': 0.0, 'observations': 0}
        if self.nac.available and tool:
            with self._lock:
                p = self.nac.obj.predict_outcome(tool, context)
            out.update(prediction_available=True, value=float(p.value),
                       expected_valence=float(p.expected_valence),
                       confidence=float(p.confidence),
                       observations=int(p.observation_count))
        out.update(memory_size(self.system_stats()))
        return out

    def record_pain(self, event: Any) -> None:
        """A pain signal (pain.PainEvent) into the history and the SCN."""
        if not self.pain.available:
            raise UnavailableError(self.pain.reason)
        with self._lock:
            self.pain.obj.record(event)
            if self.scn.available:
                self.scn.obj.record(f'pain:{event.pain_type}', event.timestamp)

    # --- queries (read-only) -------------------------------------------------------------------

    def _limit(self, limit: int, default: int = 10) -> int:
        if limit < 0:
            raise QueryError('limit must be >= 0')
        return min(limit or default, self.config.max_results)

    def recall(self, query: str = '', tool_name: str = '', success: bool | None = None,
               object: str = '', person: str = '', mode: str = '', time_after: float = 0.0,
               time_before: float = 0.0, expand: bool = False, limit: int = 10) -> RecallResult:
        if not (math.isfinite(time_after) and math.isfinite(time_before)):
            raise QueryError(f'time_after and time_before must be finite, not {time_after} '
                             f'and {time_before}')
        if time_after and time_before and time_after > time_before:
            raise QueryError('time_after is later than time_before')
        limit = self._limit(limit)
        with self._lock:
            hits, total = self.hippocampus.search_top(
                limit, query=query, tool_name=tool_name, success=success, object=object,
                person=person, mode=mode, time_after=time_after, time_before=time_before)
            expanded = 0
            if expand and hits:
                have = {r.id for r, _ in hits}
                for rid, act in self.hippocampus.recall_associated(
                        list(have), limit=limit, decay=self.config.spread_decay,
                        threshold=self.config.spread_threshold,
                        max_depth=self.config.spread_max_depth):
                    if rid not in have:
                        hits.append((self.hippocampus.get(rid), act))
                        expanded += 1
            return RecallResult(hits, total, expanded)

    def _sentence_model(self):
        """The EC's embedder when it is a sentence model; UnavailableError otherwise (a
        hashing embedder's closeness is not meaning)."""
        if not self.similarity.available:
            raise UnavailableError(self.similarity.reason)
        embedder = getattr(self.similarity.obj, 'embedder', None)
        if getattr(embedder, 'name', '') != 'sentence':
            raise UnavailableError('the EC runs no sentence model '
                                   f'({getattr(embedder, "name", "none")})')
        return embedder

    def embed(self, texts: list[str]):
        """The sentence model's embeddings of `texts` (rows, L2-normalised) and the model's
        name: what the chooser's probe of what a person wants reads."""
        embedder = self._sentence_model()
        if len(texts) > 64 or any(len(t) > 2000 for t in texts):
            raise QueryError('at most 64 texts of 2000 characters')
        import numpy as np
        if not texts:
            return np.zeros((0, int(embedder.dim)), dtype=np.float32), \
                str(getattr(embedder, 'identity', 'sentence'))
        return np.asarray(embedder.embed(list(texts)), dtype=np.float32), \
            str(getattr(embedder, 'identity', 'sentence'))

    def relate(self, text: str, phrases: list[str]) -> tuple[list[float], str]:
        """Cosine similarity of `text` to each phrase by the EC's sentence model, and that
        model's name: the chooser's reading of how close what a person said is to an act."""
        embedder = self._sentence_model()
        if len(phrases) > 64 or len(text) > 2000 or any(len(p) > 300 for p in phrases):
            raise QueryError('at most 64 phrases of 300 characters and a text of 2000')
        identity = str(getattr(embedder, 'identity', 'sentence'))
        if not phrases:
            return [], identity
        vectors = embedder.embed([text] + list(phrases))
        return [float(vectors[0] @ v) for v in vectors[1:]], identity

    def similarity_search(self, tool_name: str = '', memory_id: str = '', context: str = '',
                          limit: int = 10) -> list[tuple[MemoryRecord, float, dict]]:
        if not self.similarity.available:
            raise UnavailableError(self.similarity.reason)
        if not (tool_name or memory_id or context):
            raise QueryError('give a tool_name, a memory_id or a context text')
        limit = self._limit(limit)
        with self._lock:
            ctx: dict[str, Any] = {}
            text = context
            if memory_id:
                rec = self.hippocampus.find(memory_id)
                if rec is None:
                    raise QueryError(f'no episode {memory_id!r}')
                text = f'{rec.text()} {context}'.strip()
                ctx = self._sim_context(rec)
            if tool_name:
                ctx['tool'] = tool_name
                text = text or tool_name
            if memory_id and not context and memory_id in self.similarity.obj:
                raw = self.similarity.obj.search_episode(memory_id, k=limit * 3 + 1)
            elif not (text.strip() or ctx):
                raise QueryError('the query gives nothing to compare: a blank context text')
            else:
                try:
                    raw = self.similarity.obj.search(text, ctx or None, k=limit * 3 + 1)
                except ValueError as exc:   # e.g. no modality left to compare by
                    raise QueryError(str(exc)) from exc
            out = []
            for hit in raw:
                if hit.episode_id == memory_id:
                    continue
                rec = self.hippocampus.find(hit.episode_id)
                if rec is None:
                    continue
                if tool_name and self._sim_context(rec).get('tool') != tool_name:
                    continue
                out.append((rec, float(hit.score), dict(hit.breakdown)))
                if len(out) >= limit:
                    break
            return out

    def predict_outcome(self, tool_name: str, context: str = '') -> Any:
        if not tool_name:
            raise QueryError('tool_name is required')
        if not self.nac.available:
            raise UnavailableError(self.nac.reason)
        with self._lock:
            return self.nac.obj.predict_outcome(tool_name, context)

    def causal_links(self, event: str = '', outcome: str = '', memory_id: str = '',
                     valence: int = 0, limit: int = 10) -> tuple[list[Any], int]:
        if valence not in (-1, 0, 1):
            raise QueryError('valence must be -1, 0 or 1')
        if not self.nac.available:
            raise UnavailableError(self.nac.reason)
        limit = self._limit(limit)
        with self._lock:
            links = self.nac.obj.causal_links(limit=1_000_000)
        keep = [ln for ln in links
                if (not event or event.lower() in ln.event.lower())
                and (not outcome or outcome.lower() in ln.outcome.lower())
                and (not memory_id or memory_id in ln.memory_ids)
                and (valence == 0 or (ln.valence > 0 if valence > 0 else ln.valence < 0))]
        return keep[:limit], len(keep)

    def pain_history(self, check_action: str = '', limit: int = 10) -> dict[str, Any]:
        if not self.pain.available:
            raise UnavailableError(self.pain.reason)
        limit = self._limit(limit)
        with self._lock:
            out = {'counts': dict(self.pain.obj.counts_by_type()),
                   'recent': list(self.pain.obj.history(limit=limit)),
                   'current_intensity': float(self.pain.obj.current_intensity())}
            if check_action:
                out['check'] = dict(self.pain.obj.check_action(check_action))
        return out

    def temporal_patterns(self, hour: int = -1, day: int = -1, discover_rhythms: bool = False,
                          limit: int = 10) -> dict[str, Any]:
        if not -1 <= hour <= 23 or not -1 <= day <= 6:
            raise QueryError('hour must be -1..23 and day -1..6')
        limit = self._limit(limit)
        with self._lock:
            eps = []
            for rec in sorted(self.hippocampus, key=episode_time, reverse=True):
                t = time.localtime(episode_time(rec))
                if (hour < 0 or t.tm_hour == hour) and (day < 0 or t.tm_wday == day):
                    eps.append(rec)
                    if len(eps) >= limit:
                        break
            out: dict[str, Any] = {'episodes': eps, 'rhythms': [], 'patterns': [],
                                   'scn_available': self.scn.available}
            if self.scn.available:
                out['patterns'] = list(self.scn.obj.temporal_patterns(limit=limit))
                if discover_rhythms:
                    out['rhythms'] = list(self.scn.obj.discover_rhythms())[:limit]
        return out

    def concept_query(self, name: str = '', category: str = '', concept_id: str = '',
                      relationship_type: str = '', limit: int = 10
                      ) -> list[tuple[SemanticMemory, list[dict[str, Any]]]]:
        limit = self._limit(limit)
        if relationship_type and relationship_type not in self.registry:
            raise QueryError(f'unknown relationship type {relationship_type!r}')
        with self._lock:
            if concept_id:
                rec = self.atl.find(concept_id)
                recs = [rec] if isinstance(rec, SemanticMemory) else []
            else:
                recs = [r for r in self.atl.recall(limit=self.config.max_results * 4, name=name,
                                                   category=category)
                        if isinstance(r, SemanticMemory)]
            out = []
            for rec in recs:
                rels = []
                for e in self.atl.relationships(rec.id, relationship_type or None):
                    target = self.atl.find(e.dst)
                    rt = self.registry.get(e.type)
                    rels.append({'type': e.type, 'target_id': e.dst,
                                 'target_name': getattr(target, 'name', ''),
                                 'weight': e.weight, 'symmetric': rt.symmetric,
                                 'builtin': rt.builtin})
                if relationship_type and not rels:
                    continue
                out.append((rec, rels[:self.config.max_results]))
                if len(out) >= limit:
                    break
            return out

    def knowledge_context(self, seed_episode_ids: list[str], limit: int = 8
                          ) -> list[dict[str, Any]]:
        """ATL concepts and AG patterns reached by cross-layer activation, best first."""
        with self._lock:
            seeds = [('hippocampus', i) for i in seed_episode_ids if i in self.hippocampus]
            acts = self.cross.spread_activation(
                seeds, self.layers, decay=self.config.spread_decay,
                threshold=self.config.spread_threshold, max_depth=self.config.spread_max_depth)
            out = []
            for layer in ('atl', 'angular_gyrus'):
                for rid, act in acts.get(layer, []):
                    rec = self.layers[layer].find(rid)
                    if rec is None:
                        continue
                    text = getattr(rec, 'definition', '') or getattr(rec, 'verbal', '')
                    out.append({'layer': layer, 'id': rid, 'name': rec.name,
                                'category': rec.category, 'text': text,
                                'confidence': round(rec.confidence, 3),
                                'activation': round(act, 4)})
            out.sort(key=lambda d: (-d['activation'] * d['confidence'], d['name']))
            return out[:limit]

    def concept_context(self, objects=(), people=(), goal: str = '') -> ConceptContext:
        with self._lock:
            return self.context_builder.build(objects, people, goal)

    def complete_pattern(self, objects=(), people=(), goal: str = '') -> list[PredictedOutcome]:
        with self._lock:
            return self.completer.complete(objects, people, goal)

    def now(self) -> float:
        """The hub's own time (wall time in the memory node: records outlive a run); the
        stamps of arriving episodes are in `stamp_now`'s time."""
        return self._clock()

    def system_stats(self) -> dict[str, Any]:
        with self._lock:
            h = self.hippocampus.stats()
            atl = self.atl.stats()
            out = {
                'available': True,
                'episodes': h['episodes'], 'compressed_episodes': h['compressed'],
                'concepts': atl['concepts'], 'math_records': len(self.angular_gyrus),
                'graph_edges': self.cross.edge_count(),
                'layers': {n: layer.stats() for n, layer in self.layers.items()},
                'relationship_types': {'builtin': len(self.registry.types(True)),
                                       'proposed': len(self.registry.types(False))},
                'extractor': {'processed': self.extractor.processed,
                              'dropped': self.extractor.dropped},
                'store': {'path': str(self.store.path), 'bytes': self.store.size_bytes(),
                          'schema_version': self.store.schema_version(),
                          **self.store.status()},
                'warnings': list(self.warnings),
            }
            for name, sub in (('nac', self.nac), ('scn', self.scn), ('pain', self.pain),
                              ('ec', self.similarity)):
                out[name] = {'available': sub.available}
                if not sub.available:
                    out[name]['reason'] = sub.reason
            out['causal_links'] = (len(self.nac.obj.causal_links(limit=1_000_000))
                                   if self.nac.available else 0)
            out['ec_signatures'] = len(self.similarity.obj) if self.similarity.available else 0
            if self.similarity.available:
                out['ec']['startup'] = dict(self.ec_startup)
            out['pain_signals'] = (sum(self.pain.obj.counts_by_type().values())
                                   if self.pain.available else 0)
            return out

    # --- session end and persistence -----------------------------------------------------------

    def on_session_end(self) -> SessionEndReport:
        """SCN save -> detect -> promote -> consolidate (all layers) -> persist. The order
        matters: detection reads the episodes' detail and feeds promotion, and promotion
        needs the source episodes before consolidation compresses them."""
        report = SessionEndReport()
        t = time.perf_counter()

        def step(name: str) -> None:
            nonlocal t
            report.steps.append(name)
            now = time.perf_counter()
            report.durations_s[name] = now - t
            t = now

        self.extractor.drain(timeout=10.0)
        with self._lock:
            if self.scn.available:
                self.store.put_state('scn', to_plain(self.scn.obj.to_dict()))
            step('scn_save')
            try:  # derived knowledge: its failure must not cost the promotion and the persist
                report.patterns = self.statistician.run()
                report.related_to = self.grounder.cooccurrence()
                report.relations = self.relations.run()
            except Exception as exc:  # noqa: BLE001 - reported, and the session end goes on
                log.exception('session-end detection failed')
                report.errors.append(f'detect failed: {type(exc).__name__}: {exc}')
            step('detect')
            report.promotion = self.promoter.promote(self.config.promote_min_confidence,
                                                     self.config.promote_min_observations)
            step('promote')
            for layer in self.layers.values():
                report.consolidation.append(layer.consolidate(now=self._clock()))
        # the concept refs follow the compressed episodes (one job per record, queued while
        # the lock was held): a budget that grows with the work, ~10 ms a job at most
        if not self.extractor.drain(timeout=10.0 + 0.01 * self.extractor.pending()):
            report.errors.append(f'concept ref migration unfinished: '
                                 f'{self.extractor.pending()} jobs left to the worker')
        step('consolidate')
        with self._lock:
            report.persisted_records = self.persist()
            step('persist')
        return report

    def _save_state(self) -> None:
        for layer in self.layers.values():
            layer.flush()
        pending = self.cross.take_pending()
        if pending:
            self.store.put_edges(CROSS_GRAPH, [EdgeRow(e.src, e.dst, e.type, e.weight, e.data)
                                               for e in pending])
        self.store.put_state('relationship_registry', self.registry.to_dict())
        for name, sub in (('nac', self.nac), ('scn', self.scn), ('pain', self.pain)):
            if sub.available:
                self.store.put_state(name, to_plain(sub.obj.to_dict()))

    def persist(self) -> int:
        """Snapshot every layer, graph and learned state; returns the records written."""
        with self._lock:
            n = 0
            for layer in self.layers.values():
                layer.save_to(self.store)
                n += len(layer)
            self.cross.take_pending()
            self.store.replace_edges(CROSS_GRAPH, [EdgeRow(e.src, e.dst, e.type, e.weight,
                                                           e.data)
                                                   for e in self.cross.to_edges()])
            self._save_state()
            self.store.checkpoint()
            self.save_similarity()
            return n

    def close(self, end_session: bool = True) -> SessionEndReport | None:
        """End the session (unless told not to), stop the worker, close the database."""
        if self._closed:
            return None
        self._closed = True
        try:
            return self.on_session_end() if end_session else None
        finally:  # even when the session end fails, the worker stops and the file closes
            self.extractor.stop(timeout=10.0)
            self.store.close()

    def concept_by_id(self, concept_id: str) -> Concept | None:
        rec = self.atl.find(concept_id)
        return rec if isinstance(rec, Concept) else None

    # --- relevance (what enrichment offers the model) ------------------------------------------

    def relevant_memories(self, text: str, limit: int = 3, keyword_threshold: float | None = None,
                          semantic_threshold: float | None = None) -> list[RelevantMemory]:
        """Episodes relevant to `text` (a percept, a request), best first, each as
        (record, score, why): from the hippocampus when they share enough content words
        (idf-weighted share >= `keyword_threshold`, default relevance.KEYWORD_THRESHOLD), from
        the EC when their embedding is close enough (cosine >= `semantic_threshold`, default
        the embedder's calibrated one). The score is the better of the two (0..1); `why`
        names the shared words and/or the similarity. Often empty: nothing is relevant.
        Read-only."""
        if not isinstance(text, str):
            raise QueryError('text must be a string')
        limit = self._limit(limit, default=3)
        kw_min = relevance.KEYWORD_THRESHOLD if keyword_threshold is None \
            else float(keyword_threshold)
        found: dict[str, list[Any]] = {}  # id -> [record, score, reasons]
        with self._lock:
            for rec, match in self.hippocampus.keyword_matches(text, limit, kw_min):
                found[rec.id] = [rec, match.score, [match.why()]]
            if self.similarity.available and text.strip():
                index = self.similarity.obj
                sem_min = index.relevance_threshold if semantic_threshold is None \
                    else float(semantic_threshold)
                for hit in index.search(text, None, k=limit):
                    sim = hit.breakdown.get('semantic', 0.0)
                    rec = self.hippocampus.find(hit.episode_id)
                    if sim < sem_min or rec is None:
                        continue
                    entry = found.setdefault(rec.id, [rec, 0.0, []])
                    entry[1] = max(entry[1], round(sim, 4))
                    entry[2].append(f'semantic similarity {sim:.2f}')
        out = [RelevantMemory(rec, score, '; '.join(why)) for rec, score, why in found.values()]
        out.sort(key=lambda r: (-r.score, -episode_time(r.record), r.record.id))
        return out[:limit]


def default_db_path() -> str:
    return os.path.expanduser('~/.maxim/memory.db')
