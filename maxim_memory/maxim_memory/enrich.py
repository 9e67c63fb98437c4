"""What memory knows that is relevant to a situation, channel by channel (seed 002).

The mind asks once per deliberation cycle with what it perceives or thinks, the objects and
people in view, its goal and its active tools. Each channel answers with scored items, each
saying why it matched, or with nothing and the reason ("nothing relevant" is a valid and
common answer: a mind that is reminded of something every time learns nothing from being
reminded).

Channels, in the order the mind shows them:
- ``episodes``    hippocampus: past episodes sharing content words (stop words out) with the
  situation, scored by the share of the situation's words they hold;
- ``similar``     entorhinal cortex: episodes similar in meaning (the EC's fused score),
  above a threshold, not already among ``episodes``;
- ``concepts``    ConceptContextBuilder: ATL concepts for what is in view or named by the
  goal, with relationships, AG statistics and grounding, within its 50 ms budget;
- ``knowledge``   cross-layer spreading activation from the recalled episodes into the ATL
  and the angular gyrus (at most 8, as `knowledge_context`);
- ``predictions`` PatternCompleter: outcomes of past episodes linked to those concepts,
  pooled per tool, while this episode is still forming;
- ``values``      NAc: the learned value of each active tool in this context, for tools with
  experience, and the causal links whose event is one of them;
- ``rhythms``     SCN: rhythms whose bin is now (this hour, this weekday).

Pure Python over a MemoryHub; the memory node serves it as `memory/enrich`, and an
in-process mind (the scenario runner) calls it directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import time
from typing import Any, Callable, Iterable

from maxim_memory import relevance
from maxim_memory.layers.hippocampus import episode_time
from maxim_memory.records import CompressedMemory

CHANNELS = ('episodes', 'similar', 'concepts', 'knowledge', 'predictions', 'values',
            'rhythms')


def content_words(text: str) -> set[str]:
    """The words of `text` that say something (maxim_memory.relevance: stop words, the
    attention narrative's fixed words and numbers out, plurals folded)."""
    return set(relevance.content_words(str(text)))


@dataclass(frozen=True)
class EnrichConfig:
    """Per-channel relevance thresholds and caps."""

    limit: int = 3                       # items per channel
    knowledge_limit: int = 8
    knowledge_min_activation: float = 0.05
    value_min_confidence: float = 0.2    # NAc confidence for a tool's value to be shown
    prediction_min_episodes: int = 1
    rhythm_min_strength: float = 0.2


@dataclass
class Item:
    text: str
    score: float
    why: str
    ref: str = ''                        # a record id, when the item is one
    data: dict = field(default_factory=dict)   # numbers a reader may use (values: tool, value)

    def as_dict(self) -> dict[str, Any]:
        out = {'text': self.text, 'score': round(float(self.score), 3), 'why': self.why}
        if self.ref:
            out['ref'] = self.ref
        if self.data:
            out['data'] = dict(self.data)
        return out


@dataclass
class Channel:
    items: list[Item] = field(default_factory=list)
    reason: str = ''                     # why there are no items

    def as_dict(self) -> dict[str, Any]:
        return {'items': [i.as_dict() for i in self.items], 'reason': self.reason}


def _ago(t: float, now: float) -> str:
    d = max(0.0, now - t)
    if d < 90:
        return 'just now'
    if d < 5400:
        return f'{d / 60:.0f} min ago'
    if d < 172800:
        return f'{d / 3600:.0f} h ago'
    return f'{d / 86400:.0f} days ago'


def _short(text: str, n: int = 110) -> str:
    text = ' '.join(str(text).split())
    return text if len(text) <= n else text[:n].rsplit(' ', 1)[0] + ' ...'


def episode_line(rec: Any, now: float) -> str:
    """One episode as the mind reads it: when, what it perceived, what it did and how it went."""
    when = _ago(episode_time(rec), now)
    if isinstance(rec, CompressedMemory):
        what = rec.summary or rec.intent or 'an episode'
        did = f'{rec.tool_name} {"worked" if rec.success else "failed"}' if rec.tool_name \
            else ''
    else:
        what = rec.perception.narrative or ', '.join(rec.perception.detected_objects)
        tool = rec.action.tool_name
        did = (f'{tool} {"worked" if rec.outcome.success else "failed"}' if tool
               else (rec.decision.reasoning or ''))
    parts = [f'{when}: {_short(what)}']
    if did:
        parts.append(_short(did, 90))
    return '; '.join(parts)


class MemoryEnricher:
    """Answers `enrich(...)` over a MemoryHub (see the module docstring)."""

    def __init__(self, hub: Any, config: EnrichConfig = EnrichConfig(),
                 clock: Callable[[], float] = time.time,
                 stamp_clock: Callable[[], float] | None = None):
        self.hub = hub
        self.config = config
        self.clock = clock
        # "How long ago" is told against the clock the episodes' stamps are in: the robot's
        # (sim time on the simulated head, starting at 0), not necessarily the hub's.
        self.stamp_clock = stamp_clock or clock

    def enrich(self, text: str = '', objects: Iterable[str] = (), people: Iterable[str] = (),
               goal: str = '', tools: Iterable[str] = (), context_key: str = '',
               channels: Iterable[str] = (), limit: int = 0) -> dict[str, Channel]:
        wanted = [c for c in (tuple(channels) or CHANNELS)]
        unknown = [c for c in wanted if c not in CHANNELS]
        if unknown:
            raise ValueError(f'unknown channels {unknown}; known: {", ".join(CHANNELS)}')
        objects = [str(o) for o in objects if str(o).strip()]
        people = [str(p) for p in people if str(p).strip()]
        tools = [str(t) for t in tools if str(t).strip()]
        limit = int(limit) or self.config.limit
        if limit < 0:
            raise ValueError('limit must be >= 0')
        situation = ' '.join([text, ' '.join(objects), ' '.join(people), goal])
        out: dict[str, Channel] = {}
        seeds: list[str] = []
        if {'episodes', 'similar', 'knowledge', 'rhythms'} & set(wanted):
            out['episodes'], out['similar'] = self._relevant(situation, limit)
            seeds += [i.ref for i in out['episodes'].items + out['similar'].items]
        if 'concepts' in wanted:
            out['concepts'] = self._concepts(objects, people, goal, limit)
        if 'knowledge' in wanted:
            shown = {i.text.split('"')[1] for i in out.get('concepts', Channel()).items
                     if i.text.startswith('"')}
            out['knowledge'] = self._knowledge(seeds, shown)
        if 'predictions' in wanted:
            out['predictions'] = self._predictions(objects, people, goal, limit)
        if 'values' in wanted:
            out['values'] = self._values(tools, context_key, limit)
        if 'rhythms' in wanted:
            # Rhythms of what this situation is about: the tools of its recalled episodes.
            recalled = [self.hub.hippocampus.find(r) for r in seeds]
            acted = {getattr(getattr(r, 'action', None), 'tool_name', '') or
                     getattr(r, 'tool_name', '') for r in recalled if r is not None} - {''}
            out['rhythms'] = self._rhythms(limit, situation, acted)
        return {c: out[c] for c in wanted}

    # -- channels ----------------------------------------------------------------------------
    def _relevant(self, situation: str, limit: int) -> tuple[Channel, Channel]:
        """The hippocampus's and the EC's relevant episodes (MemoryHub.relevant_memories:
        shared content words, idf-weighted, or sentence similarity, each over its calibrated
        threshold): those that share words are `episodes`, those only similar in meaning are
        `similar`. Identical lines are one."""
        if not content_words(situation):
            reason = 'no content words to match'
            return Channel(reason=reason), Channel(reason=reason)
        now = self.stamp_clock()
        episodes, similar, seen = [], [], set()
        for rec, score, why in self.hub.relevant_memories(situation, limit=limit * 4):
            line = episode_line(rec, now)
            if line in seen:
                continue
            seen.add(line)
            item = Item(line, score, why, rec.id)
            (episodes if 'shared words' in why else similar).append(item)
        return (Channel(episodes[:limit]) if episodes else
                Channel(reason='no episode shares enough of this situation'),
                Channel(similar[:limit]) if similar else
                Channel(reason='no episode is similar enough in meaning'))

    def _concepts(self, objects, people, goal, limit) -> Channel:
        if not (objects or people or goal):
            return Channel(reason='nothing in view and no goal')
        ctx = self.hub.concept_context(objects, people, goal)
        named = {n.lower() for n in list(objects) + list(people)}
        items = []
        for e in ctx.entries[:limit]:
            rels = ', '.join(f'{r["type"]} {r["target"]}' for r in e.get('relationships', [])[:4])
            stats = ', '.join(f'{k}={v}' for k, v in list(e.get('properties', {}).items())[:3])
            text = (f'"{e["name"]}" ({e["category"]}, confidence={e["confidence"]:.2f}, '
                    f'{e["episode_count"]} episodes)')
            if rels:
                text += f': {rels}'
            if stats:
                text += f'; stats: {stats}'
            why = 'in view' if e['name'].lower() in named else 'named by the goal'
            items.append(Item(text, float(e['confidence']), f'{why} ({ctx.level} context)'))
        if not items:
            return Channel(reason='no concept for what is in view')
        return Channel(items)

    def _knowledge(self, seeds: list[str], shown: set[str] = frozenset()) -> Channel:
        """What spreading activation reaches from the recalled episodes, less the concepts
        the concepts channel already shows."""
        if not seeds:
            return Channel(reason='no recalled episode to spread from')
        found = self.hub.knowledge_context(seeds, limit=self.config.knowledge_limit)
        items = []
        for k in found:
            if k['activation'] < self.config.knowledge_min_activation or k['name'] in shown:
                continue
            layer = 'math:PATTERN' if k['layer'] == 'angular_gyrus' else k['category']
            text = f'"{k["name"]}" ({layer}, confidence={k["confidence"]:.2f})'
            if k.get('text'):
                text += f': {_short(k["text"], 100)}'
            items.append(Item(text, k['activation'] * k['confidence'],
                              f'reached from recalled episodes (activation '
                              f'{k["activation"]:.2f})', k['id']))
        if not items:
            return Channel(reason='spreading reached no concept or pattern')
        return Channel(items)

    def _predictions(self, objects, people, goal, limit) -> Channel:
        if not (objects or people or goal):
            return Channel(reason='nothing in view and no goal')
        preds = self.hub.complete_pattern(objects, people, goal)
        by_tool: dict[str, list] = {}
        for p in preds:
            if p.tool:
                by_tool.setdefault(p.tool, []).append(p)
        items = []
        for tool, ps in by_tool.items():
            if len(ps) < self.config.prediction_min_episodes:
                continue
            ok = sum(1 for p in ps if p.success)
            conf = sum(p.confidence for p in ps) / len(ps)
            text = (f'Predicted: {tool} {"succeeds" if ok * 2 >= len(ps) else "fails"} '
                    f'({ok} of {len(ps)} similar episodes succeeded, confidence {conf:.2f})')
            math = [m for p in ps for m in (p.math_context or [])]
            if math:
                text += f'; {_short(math[0].verbal, 80)}'
            items.append(Item(text, conf * len(ps) / (len(ps) + 1),
                              'episodes linked to the concepts in view'))
        items.sort(key=lambda i: -i.score)
        if not items:
            return Channel(reason='no concept-linked episode with an action')
        return Channel(items[:limit])

    def _values(self, tools, context_key, limit) -> Channel:
        if not tools:
            return Channel(reason='no active tools')
        if not getattr(self.hub.nac, 'available', False):
            return Channel(reason='the NAc is unavailable')
        items = []
        for tool in tools:
            pred = self.hub.predict_outcome(tool, context_key)
            # Only what was learned here: a value borrowed from other contexts is the
            # NAc's guess for a new situation, not something this situation reminds of.
            if pred.basis != 'context' or pred.confidence < self.config.value_min_confidence:
                continue
            verdict = ('works' if pred.value >= 0.6 else 'fails' if pred.value <= 0.4
                       else 'is uncertain')
            where = f'with {context_key}' if context_key not in ('', 'none') else 'here'
            items.append(Item(f'{tool} {verdict} {where} (value {pred.value:.2f}, '
                              f'confidence {pred.confidence:.2f}, '
                              f'{pred.observation_count} times)',
                              abs(pred.value - 0.5) * 2 * pred.confidence,
                              'learned from outcomes in this context',
                              data={'tool': tool, 'value': round(float(pred.value), 3),
                                    'confidence': round(float(pred.confidence), 3)}))
        items.sort(key=lambda i: -i.score)
        if not items:
            return Channel(reason='no experience with these tools here')
        return Channel(items[:limit])

    def _rhythms(self, limit, situation: str = '', tools=()) -> Channel:
        """Rhythms due now of what this situation is about: the outcomes of a tool its
        recalled episodes used, or an event its words name (the activity baseline never)."""
        if not getattr(self.hub.scn, 'available', False):
            return Channel(reason='the SCN is unavailable')
        words = content_words(situation) | set(tools)

        def about(event_type: str) -> bool:
            if event_type == 'episode':
                return False
            head = event_type.split(':', 1)[0]
            return head in tools or bool(content_words(event_type.replace('_', ' ')) & words)

        t = time.localtime(self.clock())
        now_bins = {'hour_of_day': t.tm_hour, 'day_of_week': t.tm_wday,
                    'week_of_month': (t.tm_mday - 1) // 7, 'month': t.tm_mon - 1}
        rhythms = self.hub.temporal_patterns(discover_rhythms=True, limit=50)['rhythms']
        items = [Item(r.description, r.strength, f'its bin is now ({r.period})')
                 for r in rhythms
                 if now_bins.get(r.period) == r.bin and about(r.event_type)
                 and r.strength >= self.config.rhythm_min_strength]
        if not items:
            return Channel(reason='no rhythm is due now')
        return Channel(items[:limit])


def channels_to_dict(channels: dict[str, Channel]) -> dict[str, Any]:
    return {'channels': {name: ch.as_dict() for name, ch in channels.items()}}
