"""The agent-under-test's own memory for one simulation session.

A small in-process episodic store: the real hippocampus lives in the maxim_memory ROS package
(maxim_eval.scenario_memory gives the runner a port to it). It keeps the episodes the agent
loop writes, memories a scenario seeds ("the caretaker told you the password"), and pain
signals; it answers keyword recall with one hop of spreading activation over shared
keywords, and the introspection queries (`query(name, fields, timeout_s)`, the tools' Query
channel) that both the AUT's own introspection tools and the orchestrator's read-only
inspect_aut use.
"""

from collections import Counter
import dataclasses
import re
import threading
import time
from typing import Any, Callable
import uuid

from maxim_core.deliberation.energy import EnergyBudget

_WORD = re.compile(r'[a-z0-9][a-z0-9\-]{2,}')
STOPWORDS = frozenset('''
the and you your for are was were with that this from have has had not but all can her his
its our out she him they them then than there their what when where which who why how will
would could should into onto about after before over under again also just like some any
each very only own same too now here more most other such been being does did doing done
let get got say said tool args thought thinking only ready null true false none result
'''.split())

SPREAD_DECAY = 0.5          # activation passed along one hop, times the keyword overlap
SPREAD_FLOOR = 0.05         # weaker activations are not recalled


def keywords(text: str) -> set[str]:
    """Content words of a text (lower case, no stop words)."""
    return {w for w in _WORD.findall(str(text).lower()) if w not in STOPWORDS}


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


class SimMemory:
    """Episodes, seeded memories and pain of one AUT."""

    def __init__(self, energy: EnergyBudget | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time,
                 pain_inhibition: float = 0.7, pain_window_s: float = 30.0):
        self.energy = energy
        self.clock = clock
        self.wall = wall
        self.pain_inhibition = pain_inhibition
        self.pain_window_s = pain_window_s
        self.episodes: list[dict] = []
        self.pains: list[dict] = []
        self.handlers: dict[str, Callable[[dict], dict]] = {}   # extra queries (concepts...)
        self.is_physical: Callable[[str], bool] = lambda tool: False
        self._lock = threading.Lock()

    # -- writing -----------------------------------------------------------------------------
    def add_episode(self, episode: dict) -> dict:
        """Store an agent-loop episode (or any dict with text fields)."""
        ep = dict(episode)
        ep.setdefault('episode_id', uuid.uuid4().hex)
        ep['timestamp'] = self.clock()
        ep['wall_time'] = self.wall()
        fields = ('perception', 'reasoning', 'intent', 'outcome', 'text')
        text = ' '.join(str(ep.get(k, '')) for k in fields)
        ep['keywords'] = sorted(keywords(text))
        with self._lock:
            self.episodes.append(ep)
        return ep

    def seed(self, text: str, **meta) -> dict:
        """A memory the agent has before the simulation starts."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError('a seeded memory needs a non-empty text')
        return self.add_episode({'text': text, 'perception': '', 'outcome': '',
                                 'seeded': True, 'success': True, 'tool_name': '', **meta})

    def add_pain(self, signal: dict) -> dict:
        """A PainSignal-shaped dict (pain_type/type_name, intensity, source, description)."""
        intensity = float(signal.get('intensity', 0.0))
        if not 0.0 <= intensity <= 1.0:
            raise ValueError(f'pain intensity must be within [0, 1], got {intensity}')
        pain = dict(signal, intensity=intensity, timestamp=self.clock())
        with self._lock:
            self.pains.append(pain)
        return pain

    # -- reading -----------------------------------------------------------------------------
    @staticmethod
    def text_of(ep: dict) -> str:
        if ep.get('text'):
            return str(ep['text'])
        parts = [f'I perceived: {ep.get("perception", "")}'.strip()]
        if ep.get('intent') and ep['intent'] != 'no action':
            parts.append(f'I did {ep["intent"]}')
        if ep.get('outcome'):
            parts.append(f'-> {ep["outcome"]}')
        return ' '.join(parts)[:400]

    def recall(self, keyword: str, expand: bool = True, limit: int = 5) -> list[dict]:
        """Episodes matching `keyword`, then (expand) those sharing keywords with the matches.

        Direct activation is the fraction of the query's words an episode holds; one hop
        passes SPREAD_DECAY x activation x keyword Jaccard to every other episode.
        """
        if not isinstance(keyword, str) or not keyword.strip():
            raise ValueError('recall needs a non-empty keyword')
        query = keywords(keyword) or {keyword.strip().lower()}
        with self._lock:
            episodes = list(self.episodes)
        activation: dict[int, float] = {}
        via: dict[int, str] = {}
        for i, ep in enumerate(episodes):
            kws = set(ep['keywords'])
            text = self.text_of(ep).lower()
            hits = sum(1 for q in query if q in kws or q in text)
            if hits:
                activation[i] = hits / len(query)
                via[i] = 'direct'
        if expand:
            spread: dict[int, float] = {}
            for i, a in activation.items():
                src = set(episodes[i]['keywords'])
                for j, ep in enumerate(episodes):
                    if j in activation:
                        continue
                    s = SPREAD_DECAY * a * _jaccard(src, set(ep['keywords']))
                    if s >= SPREAD_FLOOR:
                        spread[j] = max(spread.get(j, 0.0), s)
            for j, s in spread.items():
                activation[j], via[j] = s, 'spread'
        ranked = sorted(activation, key=lambda i: (-activation[i], -episodes[i]['timestamp']))
        return [{'episode_id': episodes[i]['episode_id'], 'text': self.text_of(episodes[i]),
                 'activation': round(activation[i], 3), 'via': via[i],
                 'seeded': bool(episodes[i].get('seeded'))}
                for i in ranked[:max(1, int(limit))]]

    def recent_pain(self) -> list[dict]:
        now = self.clock()
        with self._lock:
            return [p for p in self.pains if now - p['timestamp'] <= self.pain_window_s]

    def inhibition(self, tool: str) -> str | None:
        """Why a bodily action is inhibited by recent strong pain, or None."""
        if not self.is_physical(tool):
            return None
        strong = [p for p in self.recent_pain() if p['intensity'] >= self.pain_inhibition]
        if not strong:
            return None
        worst = max(strong, key=lambda p: p['intensity'])
        return (f'movement inhibited by pain ({worst.get("type_name", "pain")} '
                f'{worst["intensity"]:.2f} >= {self.pain_inhibition:.2f} within '
                f'{self.pain_window_s:.0f} s)')

    # -- introspection queries (tools/introspection.py Query) --------------------------------
    def query(self, name: str, fields: dict, timeout_s: float = 2.0) -> dict:
        """Answer one introspection query; ValueError for a subsystem this memory lacks."""
        if name in self.handlers:
            return self.handlers[name](dict(fields))
        method = getattr(self, f'_q_{name}', None)
        if method is None:
            raise ValueError(f'the simulated agent has no {name!r} subsystem')
        return method(dict(fields))

    def _q_enrich(self, f: dict) -> dict:
        """The Mind's enrichment query: the episodes channel from recall (direct matches on
        at least a third of the situation's words); this memory has no other channel."""
        wanted = f.get('channels') or ['episodes']
        out = {}
        if 'episodes' in wanted:
            text = ' '.join([str(f.get('text', ''))] + list(f.get('objects') or []))
            found = self.recall(text, expand=False, limit=int(f.get('limit') or 2)) \
                if keywords(text) else []
            items = [{'text': m['text'], 'score': m['activation'],
                      'why': f'shares {m["activation"]:.0%} of the words'}
                     for m in found if m['via'] == 'direct' and m['activation'] >= 0.34]
            out['episodes'] = {'items': items, 'reason': '' if items else 'nothing relevant'}
        for name in wanted:
            out.setdefault(name, {'items': [], 'reason': 'this memory has no such channel'})
        return {'available': True, 'result': {'channels': out}}

    def _q_memory_recall(self, f: dict) -> dict:
        query = f.get('query') or f.get('keyword') or ''
        limit = int(f.get('limit', 5))
        if not query:
            with self._lock:
                recent = list(self.episodes)[-limit:]
            return {'memories': [self.text_of(e) for e in reversed(recent)],
                    'total': len(self.episodes)}
        found = self.recall(query, bool(f.get('expand', True)), limit)
        return {'memories': found, 'total': len(found)}

    def _outcomes(self) -> Counter:
        out: Counter = Counter()
        with self._lock:
            for ep in self.episodes:
                if ep.get('tool_name'):
                    kind = ('blocked' if ep.get('blocked') else
                            'success' if ep.get('success') else 'failure')
                    out[(ep['tool_name'], kind)] += 1
        return out

    def _q_causal_links(self, f: dict) -> dict:
        valence = int(f.get('valence', 0))
        links = []
        for (tool, kind), n in self._outcomes().most_common():
            v = 1.0 if kind == 'success' else -1.0
            if (valence > 0 and v < 0) or (valence < 0 and v > 0):
                continue
            if f.get('event') and f['event'] not in tool:
                continue
            if f.get('outcome') and f['outcome'] not in kind:
                continue
            links.append({'cause': tool, 'effect': kind, 'count': n, 'valence': v})
        return {'links': links[:int(f.get('limit', 5))], 'total': len(links)}

    def _q_predict_outcome(self, f: dict) -> dict:
        tool = f.get('tool_name', '')
        counts = self._outcomes()
        good = counts[(tool, 'success')]
        n = good + counts[(tool, 'failure')] + counts[(tool, 'blocked')]
        if n == 0:
            return {'tool_name': tool, 'value': 0.5, 'confidence': 0.0, 'samples': 0,
                    'note': 'no experience with this tool yet'}
        return {'tool_name': tool, 'value': round(good / n, 3),
                'confidence': round(n / (n + 2.0), 3), 'samples': n}

    def _q_pain_history(self, f: dict) -> dict:
        with self._lock:
            pains = list(self.pains)
        out = {'total': len(pains),
               'max_intensity': max((p['intensity'] for p in pains), default=0.0),
               'recent': [{k: p.get(k) for k in ('type_name', 'intensity', 'source',
                                                 'description')}
                          for p in pains[-int(f.get('limit', 5)):]]}
        if f.get('check_action'):
            why = self.inhibition(f['check_action'])
            out['would_block'] = why is not None
            out['why'] = why or ''
        return out

    def _q_energy_status(self, f: dict) -> dict:
        if self.energy is None:
            return {'available': False}
        return dataclasses.asdict(self.energy.status(float(f.get('window_seconds', 0.0))))

    def _q_temporal_patterns(self, f: dict) -> dict:
        hours: Counter = Counter()
        with self._lock:
            for ep in self.episodes:
                hours[time.localtime(ep['wall_time']).tm_hour] += 1
        hour = int(f.get('hour', -1))
        if hour >= 0:
            return {'hour': hour, 'episodes': hours[hour]}
        return {'by_hour': dict(sorted(hours.items()))}

    def _q_similarity_search(self, f: dict) -> dict:
        ctx = keywords(f.get('context', '') or f.get('tool_name', ''))
        with self._lock:
            scored = [(_jaccard(ctx, set(e['keywords'])), e) for e in self.episodes]
        scored = [s for s in scored if s[0] > 0]
        scored.sort(key=lambda s: -s[0])
        return {'similar': [{'text': self.text_of(e), 'similarity': round(s, 3)}
                            for s, e in scored[:int(f.get('limit', 5))]]}

    def _q_system_stats(self, f: dict) -> dict:
        with self._lock:
            n, seeded = len(self.episodes), sum(1 for e in self.episodes if e.get('seeded'))
            pains = len(self.pains)
        return {'hippocampus_memories': n, 'seeded_memories': seeded,
                'causal_links': len(self._outcomes()), 'pain_signals': pains,
                'energy_tokens': (self.energy.status().prompt_tokens
                                  + self.energy.status().completion_tokens)
                if self.energy else 0}

    def stats(self) -> dict[str, Any]:
        return self._q_system_stats({})
