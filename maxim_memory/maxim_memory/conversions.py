"""maxim_interfaces messages <-> memory core objects (`msg_to_x()` / `x_to_msg()`).

The only module besides nodes/ that imports message types; the core never does.
"""

from __future__ import annotations

import json
from typing import Any

from maxim_common.conversions import stamp_to_seconds
from maxim_interfaces.msg import (CausalLink, Concept, Episode, EpisodeSummary,
                                  MemoryUpdate, OutcomePrediction, PainSignal, Relationship,
                                  Rhythm)

from maxim_memory.layers.hippocampus import episode_time
from maxim_memory.records import (Action, CompressedMemory, Decision, EpisodeContext,
                                  EpisodicMemory, MemoryRecord, Outcome, Perception,
                                  SemanticMemory)

TEXT_MAX = 240          # characters of narrative per summary
JSON_MAX = 64_000       # characters of result_json

PAIN_TYPES = {'tool_failure': PainSignal.TYPE_TOOL_FAILURE, 'timeout': PainSignal.TYPE_TIMEOUT,
              'movement_error': PainSignal.TYPE_MOVEMENT_ERROR,
              'direction_thrashing': PainSignal.TYPE_DIRECTION_THRASHING,
              'joint_limit': PainSignal.TYPE_JOINT_LIMIT, 'injected': PainSignal.TYPE_INJECTED,
              'overload': PainSignal.TYPE_OVERLOAD, 'overheating': PainSignal.TYPE_OVERHEATING,
              'electrical_shock': PainSignal.TYPE_ELECTRICAL_SHOCK,
              'encoder_error': PainSignal.TYPE_ENCODER_ERROR,
              'overcurrent': PainSignal.TYPE_OVERCURRENT}
PAIN_NAMES = {v: k for k, v in PAIN_TYPES.items()}


class ConversionError(ValueError):
    """A message whose content cannot become a memory record."""


def json_object(text: str, field: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:   # JSONDecodeError, or an integer past the conversion limit
        raise ConversionError(f'{field} is not valid JSON: {str(exc)[:200]}') from exc
    except RecursionError:
        raise ConversionError(f'{field} is nested too deep') from None
    if not isinstance(value, dict):
        raise ConversionError(f'{field} must be a JSON object, not {type(value).__name__}')
    return value


def msg_to_episode(msg: Episode, now: float) -> EpisodicMemory:
    """An Episode message as a hippocampal record (its id kept; `now` when unstamped)."""
    t = stamp_to_seconds(msg.header.stamp) or now
    if not -1.0 <= msg.valence <= 1.0 or not msg.duration_s >= 0.0:
        raise ConversionError(f'valence {msg.valence} must be in -1..1 and duration_s '
                              f'{msg.duration_s} >= 0')
    kwargs = {'id': msg.episode_id} if msg.episode_id else {}
    return EpisodicMemory(
        created_at=t, run_id=msg.run_id,
        perception=Perception(msg.perception, list(msg.detected_objects),
                              list(msg.detected_people), float(msg.salience),
                              float(msg.novelty)),
        context=EpisodeContext(msg.goal, msg.mode, msg.scene,
                               json_object(msg.context_json, 'context_json')),
        decision=Decision(msg.intent, msg.reasoning, float(msg.confidence), int(msg.cycles)),
        action=Action(msg.tool_name, json_object(msg.arguments_json, 'arguments_json')),
        outcome=Outcome(bool(msg.success), float(msg.valence), msg.outcome, bool(msg.blocked),
                        bool(msg.verified), msg.error, float(msg.duration_s)),
        **kwargs)


def _cut(text: str, n: int = TEXT_MAX) -> str:
    return text if len(text) <= n else text[:n - 3] + '...'


def episode_to_summary(rec: MemoryRecord, score: float = 0.0) -> EpisodeSummary:
    s = EpisodeSummary(episode_id=rec.id, stamp=float(episode_time(rec)), score=float(score))
    if isinstance(rec, CompressedMemory):
        s.perception, s.goal, s.tool_name = _cut(rec.summary), rec.goal, rec.tool_name
        s.success, s.valence, s.compressed = rec.success, float(rec.valence), True
    else:
        s.perception, s.goal = _cut(rec.perception.narrative), rec.context.goal
        s.tool_name, s.success = rec.action.tool_name, rec.outcome.success
        s.valence, s.outcome = float(rec.outcome.valence), _cut(rec.outcome.description)
    return s


def episode_to_dict(rec: MemoryRecord, score: float = 0.0) -> dict[str, Any]:
    s = episode_to_summary(rec, score)
    return {'id': s.episode_id, 'time': round(s.stamp, 3), 'perception': s.perception,
            'goal': s.goal, 'tool': s.tool_name, 'success': s.success,
            'valence': round(s.valence, 3), 'outcome': s.outcome, 'score': round(s.score, 4),
            'compressed': s.compressed}


def msg_to_pain(msg: PainSignal, now: float):
    """A PainSignal as the pain module's PainEvent."""
    from maxim_memory.pain import PAIN_TYPES as KNOWN, PainEvent  # may be absent: see hub
    name = msg.type_name or PAIN_NAMES.get(msg.pain_type, '')
    if name not in KNOWN:
        raise ConversionError(f'unknown pain type {msg.type_name or msg.pain_type!r}')
    if not 0.0 <= msg.intensity <= 1.0:
        raise ConversionError(f'pain intensity {msg.intensity} is outside 0..1')
    return PainEvent(pain_type=name, intensity=float(msg.intensity), source=msg.source,
                     message=msg.description, timestamp=stamp_to_seconds(msg.header.stamp) or now,
                     repeat_count=max(1, int(msg.repeat_count)), context=msg.context)


def pain_to_msg(event: Any) -> PainSignal:
    m = PainSignal(type_name=str(event.pain_type), intensity=float(event.intensity),
                   source=str(getattr(event, 'source', '')),
                   description=_cut(str(getattr(event, 'message', ''))))
    m.pain_type = PAIN_TYPES.get(m.type_name, PainSignal.TYPE_INJECTED)
    ts = float(getattr(event, 'timestamp', 0.0))
    m.header.stamp.sec, m.header.stamp.nanosec = int(ts), int((ts % 1) * 1e9)
    m.repeat_count = int(getattr(event, 'repeat_count', 0))
    return m


def causal_link_to_msg(link: Any) -> CausalLink:
    return CausalLink(event=link.event, context=link.context, outcome=link.outcome,
                      valence=float(link.valence), strength=float(link.strength),
                      confidence=float(link.confidence),
                      observations=int(link.observation_count),
                      delay_mean_s=float(link.mean_delay_s),
                      delay_std_s=float(getattr(link, 'delay_std_s', 0.0)),
                      memory_ids=list(link.memory_ids)[-20:])


def learning_to_msg(snapshot: dict[str, Any], stamp) -> MemoryUpdate:
    """A MemoryHub.learning_snapshot() as the MemoryUpdate message (stamp: a builtin Time)."""
    msg = MemoryUpdate(**{k: snapshot[k] for k in (
        'episode_id', 'tool_name', 'context', 'outcome', 'learned', 'prediction_available',
        'value', 'expected_valence', 'confidence', 'observations', 'episodes', 'concepts',
        'causal_links', 'graph_edges')})
    msg.header.stamp = stamp
    return msg


def session_end_to_msg(stats: dict[str, int], promotion: Any, stamp) -> MemoryUpdate:
    """The session-end MemoryUpdate: memory's size after it (hub.memory_size) and what
    promotion did."""
    msg = MemoryUpdate(session_end=True,
                       concepts_created=len(getattr(promotion, 'created', ()) or ()),
                       concepts_reinforced=len(getattr(promotion, 'reinforced', ()) or ()),
                       **stats)
    msg.header.stamp = stamp
    return msg


def outcomes_to_msgs(prediction: Any) -> list[OutcomePrediction]:
    """The prediction's outcomes: (outcome, probability) pairs."""
    out = []
    for item in prediction.outcomes:
        name, prob = item[0], item[1]
        out.append(OutcomePrediction(outcome=str(name), probability=float(prob)))
    return out


def concept_to_msg(rec: SemanticMemory, relationships: list[dict[str, Any]]) -> Concept:
    m = Concept(concept_id=rec.id, name=rec.name, definition=_cut(rec.definition, 1000),
                category=rec.category, confidence=float(rec.confidence),
                reinforcement_count=int(rec.reinforcement_count))
    m.properties_json = json.dumps(rec.properties, default=str)[:4000]
    m.provenance = int(rec.provenance)
    m.episode_count = len(getattr(rec, 'memory_refs', {}).get('hippocampus', {}))
    m.relationships = [Relationship(type=r['type'], target_id=r['target_id'],
                                    target_name=r['target_name'], weight=float(r['weight']),
                                    symmetric=r['symmetric'], builtin=r['builtin'])
                       for r in relationships]
    return m


def rhythm_to_msg(r: Any) -> Rhythm:
    return Rhythm(period=str(getattr(r, 'period', '')), bin=int(getattr(r, 'bin', 0)),
                  count=int(getattr(r, 'count', 0)), strength=float(getattr(r, 'strength', 0.0)),
                  success_rate=float(getattr(r, 'success_rate', 0.0)),
                  description=_cut(str(getattr(r, 'description', ''))))


def bounded_json(value: Any) -> str:
    """JSON for the LLM, never longer than JSON_MAX characters (then marked truncated)."""
    text = json.dumps(value, default=str, separators=(',', ':'))
    if len(text) <= JSON_MAX:
        return text
    return json.dumps({'truncated': True, 'head': text[:JSON_MAX - 100]})
