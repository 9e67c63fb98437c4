"""Memory records of the three layers (seed 002), as plain dataclasses.

Every record derives from `MemoryRecord` (id, timestamps, access tracking, long-term flag).
Records round-trip through `record_to_dict` / `record_from_dict`, which tag each dict with its
kind, so the SQLite store can keep every layer in one JSON column.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
import enum
import math
import time
from typing import Any
import uuid

MAX_REFS_PER_LAYER = 200


class RecordError(ValueError):
    """A record dict that cannot be turned back into a record."""


def new_id(prefix: str) -> str:
    """A unique, sortable-enough record id."""
    return f'{prefix}-{uuid.uuid4().hex[:16]}'


@dataclass
class MemoryRecord:
    """What every layer's record shares: identity, time and use."""

    id: str = ''
    created_at: float = field(default_factory=time.time)
    last_accessed: float = 0.0
    access_count: int = 0
    long_term: bool = False

    def touch(self, now: float) -> None:
        """Count one retrieval (used by capacity strategies to keep what is used)."""
        self.access_count += 1
        self.last_accessed = now


# --- Hippocampus -------------------------------------------------------------------------------

@dataclass
class Perception:
    narrative: str = ''
    detected_objects: list[str] = field(default_factory=list)
    detected_people: list[str] = field(default_factory=list)
    salience: float = 0.0
    novelty: float = 0.0


@dataclass
class EpisodeContext:
    goal: str = ''
    mode: str = ''
    scene: str = ''
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Decision:
    intent: str = ''
    reasoning: str = ''
    confidence: float = 0.0
    cycles: int = 0


@dataclass
class Action:
    tool_name: str = ''
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    success: bool = False
    valence: float = 0.0
    description: str = ''
    blocked: bool = False
    verified: bool = False
    error: str = ''
    duration_s: float = 0.0


@dataclass
class EpisodicMemory(MemoryRecord):
    """One pass of the agent loop: perceive -> decide -> act -> evaluate."""

    perception: Perception = field(default_factory=Perception)
    context: EpisodeContext = field(default_factory=EpisodeContext)
    decision: Decision = field(default_factory=Decision)
    action: Action = field(default_factory=Action)
    outcome: Outcome = field(default_factory=Outcome)
    run_id: str = ''

    def __post_init__(self):
        if not self.id:
            self.id = new_id('ep')

    def text(self) -> str:
        """The words of the episode, for keyword search and embeddings."""
        parts = [self.perception.narrative, ' '.join(self.perception.detected_objects),
                 ' '.join(self.perception.detected_people), self.context.goal,
                 self.decision.intent, self.action.tool_name, self.outcome.description,
                 self.outcome.error]
        return ' '.join(p for p in parts if p)


@dataclass
class CompressedMemory(MemoryRecord):
    """What remains of an episode after consolidation: the gist, not the detail."""

    original_id: str = ''
    goal: str = ''
    tool_name: str = ''
    success: bool = False
    valence: float = 0.0
    intent: str = ''
    objects: list[str] = field(default_factory=list)
    people: list[str] = field(default_factory=list)
    summary: str = ''
    run_id: str = ''
    episode_time: float = 0.0

    def text(self) -> str:
        return ' '.join(p for p in (self.summary, ' '.join(self.objects), ' '.join(self.people),
                                    self.goal, self.intent, self.tool_name) if p)

    @classmethod
    def from_episode(cls, ep: EpisodicMemory, now: float) -> 'CompressedMemory':
        summary = ep.perception.narrative[:120]
        if ep.outcome.description:
            summary = f'{summary} -> {ep.outcome.description[:80]}'
        return cls(id=f'cm-{ep.id}', created_at=now, last_accessed=ep.last_accessed,
                   access_count=ep.access_count, long_term=ep.long_term, original_id=ep.id,
                   goal=ep.context.goal, tool_name=ep.action.tool_name,
                   success=ep.outcome.success, valence=ep.outcome.valence,
                   intent=ep.decision.intent, objects=list(ep.perception.detected_objects),
                   people=list(ep.perception.detected_people), summary=summary,
                   run_id=ep.run_id, episode_time=ep.created_at)


# --- ATL ---------------------------------------------------------------------------------------

class Provenance(enum.IntEnum):
    """How a concept was formed (values match maxim_interfaces/Concept PROVENANCE_*)."""

    EPISODIC_CONSOLIDATION = 0
    AGENT_INFERENCE = 1
    DIRECT_INGESTION = 2
    HYBRID = 3


def concept_confidence(reinforcements: int) -> float:
    """Seed 002: min(0.99, 0.5 + 0.1 * sqrt(reinforcement_count))."""
    return min(0.99, 0.5 + 0.1 * math.sqrt(max(0, reinforcements)))


@dataclass
class SemanticMemory(MemoryRecord):
    """A concept known independently of the episodes that formed it."""

    name: str = ''
    definition: str = ''
    category: str = ''
    properties: dict[str, Any] = field(default_factory=dict)
    provenance: Provenance = Provenance.EPISODIC_CONSOLIDATION
    source_episode_ids: list[str] = field(default_factory=list)
    reinforcement_count: int = 0
    embedding_text: str = ''

    def __post_init__(self):
        if not self.id:
            self.id = new_id('sm')
        if not isinstance(self.provenance, Provenance):
            self.provenance = Provenance(int(self.provenance))
        if not self.embedding_text:
            self.embedding_text = f'{self.name} {self.definition}'.strip()

    @property
    def confidence(self) -> float:
        return concept_confidence(self.reinforcement_count)


@dataclass
class Concept(SemanticMemory):
    """A concept with ordered, bounded references to the records that ground it."""

    memory_refs: dict[str, dict[str, None]] = field(default_factory=dict)

    def add_ref(self, layer: str, record_id: str) -> None:
        refs = self.memory_refs.setdefault(layer, {})
        refs.pop(record_id, None)  # a re-added ref becomes the newest
        refs[record_id] = None
        while len(refs) > MAX_REFS_PER_LAYER:  # FIFO: the oldest ref goes first
            del refs[next(iter(refs))]

    def remove_ref(self, layer: str, record_id: str) -> bool:
        refs = self.memory_refs.get(layer)
        if refs is None or record_id not in refs:
            return False
        del refs[record_id]
        return True

    def migrate_ref(self, layer: str, old_id: str, new_id_: str) -> bool:
        """Point a ref at a record's new id (an episode compressed), keeping its place."""
        refs = self.memory_refs.get(layer)
        if not refs or old_id not in refs:
            return False
        self.memory_refs[layer] = {(new_id_ if k == old_id else k): None for k in refs}
        return True

    def reinforce(self, source_id: str, now: float | None = None) -> None:
        self.reinforcement_count += 1
        if source_id and source_id not in self.source_episode_ids:
            self.source_episode_ids.append(source_id)
            del self.source_episode_ids[:-MAX_REFS_PER_LAYER]
        self.touch(time.time() if now is None else now)

    def refs(self, layer: str) -> list[str]:
        return list(self.memory_refs.get(layer, {}))


@dataclass
class CompressedSemantic(MemoryRecord):
    original_id: str = ''
    name: str = ''
    category: str = ''
    definition: str = ''
    reinforcement_count: int = 0

    @property
    def confidence(self) -> float:
        return concept_confidence(self.reinforcement_count)


# --- Angular gyrus -----------------------------------------------------------------------------

@dataclass
class MathRecord(MemoryRecord):
    """A quantitative fact: a statistic, a trend, a pattern with its evidence."""

    name: str = ''
    category: str = ''          # 'statistic', 'PATTERN', 'correlation', ...
    domain: str = ''            # 'concept_grounding', 'operational', ...
    verbal: str = ''            # 'mean=0.78, std=0.12'
    code: str = ''              # how it was computed, for reproducibility
    confidence: float = 0.0
    values: dict[str, float] = field(default_factory=dict)
    confirmed: bool = False     # passed the IPS/AG assessment (statistician patterns)

    def __post_init__(self):
        if not self.id:
            self.id = new_id('math')


@dataclass
class CompressedMathRecord(MemoryRecord):
    original_id: str = ''
    name: str = ''
    category: str = ''
    verbal: str = ''
    confidence: float = 0.0


# --- serialisation -----------------------------------------------------------------------------

RECORD_KINDS: dict[str, type] = {
    'episodic': EpisodicMemory, 'compressed_episodic': CompressedMemory,
    'semantic': SemanticMemory, 'concept': Concept, 'compressed_semantic': CompressedSemantic,
    'math': MathRecord, 'compressed_math': CompressedMathRecord,
}
_KIND_OF = {cls: kind for kind, cls in RECORD_KINDS.items()}
_NESTED = {'perception': Perception, 'context': EpisodeContext, 'decision': Decision,
           'action': Action, 'outcome': Outcome}


def record_kind(record: MemoryRecord) -> str:
    try:
        return _KIND_OF[type(record)]
    except KeyError:
        raise RecordError(f'unknown record type {type(record).__name__}') from None


def record_to_dict(record: MemoryRecord) -> dict[str, Any]:
    d = asdict(record)
    d['kind'] = record_kind(record)
    if 'provenance' in d:
        d['provenance'] = int(d['provenance'])
    return d


def record_from_dict(d: dict[str, Any]) -> MemoryRecord:
    if not isinstance(d, dict) or 'kind' not in d:
        raise RecordError('record dict without a kind')
    cls = RECORD_KINDS.get(d['kind'])
    if cls is None:
        raise RecordError(f'unknown record kind {d["kind"]!r}')
    names = {f.name for f in fields(cls)}
    kwargs = {}
    for key, value in d.items():
        if key not in names:
            continue  # fields of a newer schema are ignored, not fatal
        nested = _NESTED.get(key)
        if nested is not None and isinstance(value, dict):
            allowed = {f.name for f in fields(nested)}
            value = nested(**{k: v for k, v in value.items() if k in allowed})
        kwargs[key] = value
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise RecordError(f'bad {d["kind"]} record: {exc}') from exc
