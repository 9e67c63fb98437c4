"""What the Mind asks memory, with typed answers: the enrichment channels for the prompt,
the NAc's learned values of the active tools, the sentence model's similarities for the
choice, and the introspection tools' queries (the energy budget answers its own).

Memory may be absent, slow or without a query (the text world's has no `relate`): each ask
then has a plain answer (nothing, no values, no similarities), never an exception.
"""

from __future__ import annotations

import math
from typing import Sequence

from maxim_core.agent.loop import Percept
from maxim_core.deliberation.energy import EnergyBudget
from maxim_core.deliberation.enrichment import EnrichQuery
from maxim_core.mind.config import MindConfig
from maxim_core.mind.ports import answered, channels_of, MemoryPort


class Recall:
    """See the module docstring."""

    def __init__(self, config: MindConfig, memory: MemoryPort | None, energy: EnergyBudget):
        self.config, self.memory, self.energy = config, memory, energy

    def query(self, name: str, fields: dict, timeout_s: float = 2.0) -> dict | None:
        """The introspection tools' queries: energy from the Mind itself, the rest from
        memory (None when memory is absent)."""
        if name == 'energy_status':
            try:
                report = self.energy_status(float(fields.get('window_seconds', 0.0)))
            except (TypeError, ValueError) as exc:
                return {'available': True, 'error_code': 1, 'error_msg': str(exc)}
            return {'available': True, **vars(report)}
        if self.memory is None:
            return None
        return self.memory.query(name, fields, timeout_s)

    def energy_status(self, window_seconds: float = 0.0):
        """The energy budget's report; ValueError for a window that is negative or not a
        number."""
        if not math.isfinite(window_seconds) or window_seconds < 0:
            raise ValueError(f'window_seconds must be a finite number >= 0, not '
                             f'{window_seconds}')
        return self.energy.status(window_seconds)

    def enrich(self, query: EnrichQuery) -> dict | None:
        """Memory's relevant channels for this situation, as lines that say why (the
        enrichment pipeline's memory provider)."""
        channels = channels_of(self.query('enrich', {
            'text': str(query)[:1000], 'objects': list(query.objects),
            'people': list(query.people), 'goal': query.goal, 'tools': list(query.tools),
            'context_key': query.context_key, 'channels': self.config.memory_channels()},
            self.config.memory_timeout_s))
        if channels is None:
            return None
        return {name: '\n'.join(f'{i.text} [{i.why}]' for i in items)
                for name, items in channels.items()}

    def values(self, percept: Percept, goal: str, key: str,
               tools: list[str]) -> tuple[list[str], dict[str, float]]:
        """The NAc's values of the active tools in this context: the causal notes for the
        prompt, and the numbers for the choice."""
        if self.memory is None or not self.config.on('nac'):
            return [], {}
        channels = channels_of(self.query('enrich', {
            'text': percept.narrative[:500], 'objects': list(percept.objects),
            'people': list(percept.people), 'goal': goal, 'tools': tools,
            'context_key': key, 'channels': ['values']}, self.config.memory_timeout_s))
        items = (channels or {}).get('values', [])
        values = {}
        for item in items:
            tool, value = item.data.get('tool'), item.data.get('value')
            if isinstance(tool, str) and isinstance(value, (int, float)):
                values[tool] = float(value)
        return [i.text for i in items], values

    def embed(self, texts: Sequence[str]):
        """The memory node's sentence-model embeddings of `texts` (`memory/embed`), rows in
        order, as a numpy array; None when memory cannot say (no memory, no sentence model,
        no answer in time): the probe's term is then 0."""
        if self.memory is None or not texts:
            return None
        texts = [str(t)[:2000] for t in texts][:64]
        try:
            answer = self.query('embed', {'texts': texts}, self.config.memory_timeout_s)
        except ValueError:               # a memory without that query (the text world's)
            return None
        if not answered(answer):
            return None
        dim = int(answer.get('dim') or 0)
        flat = answer.get('vectors') or []
        if dim <= 0 or len(flat) != dim * len(texts):
            return None
        import numpy as np
        return np.asarray(flat, dtype=np.float32).reshape(len(texts), dim)

    def relate(self, text: str, phrases: Sequence[str]) -> list[float] | None:
        """The memory node's sentence-model similarity of what a person said to each act
        (`memory/relate`), the choice's similarity term; None when memory cannot say (no
        memory, no sentence model, no answer in time): the term is then 0."""
        if self.memory is None:
            return None
        try:
            answer = self.query('relate', {'text': text[:2000], 'phrases': list(phrases)},
                                self.config.memory_timeout_s)
        except ValueError:               # a memory without that query (the text world's)
            return None
        if not answered(answer):
            return None
        sims = [float(s) for s in answer.get('similarities') or []]
        return sims if len(sims) == len(phrases) else None
