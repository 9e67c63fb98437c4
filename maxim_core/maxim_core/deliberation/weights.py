"""The weights that sum the terms of the choice (scorers.py), and where they came from.

Today's hand-set ones (`Weights.hand`, the defaults of `ChoiceConfig`) or the ones fitted on
the dev split of the decision benchmark (`Weights.fitted`, loaded from `weights.json` beside
this file, with their provenance).

Pure Python; no ROS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import json
import math
from pathlib import Path
from typing import Mapping, Sequence

WEIGHTS_FILE = Path(__file__).with_name('weights.json')


@dataclass(frozen=True)
class Weights:
    """One weight per feature, and where the numbers came from."""

    w: Mapping[str, float]
    source: str = 'hand'
    provenance: Mapping = field(default_factory=dict)

    def total(self, f: Mapping[str, float]) -> float:
        return sum(self.w.get(k, 0.0) * v for k, v in f.items())

    def part(self, f: Mapping[str, float], names: Sequence[str]) -> float:
        return sum(self.w.get(k, 0.0) * f.get(k, 0.0) for k in names)

    @staticmethod
    def hand(cfg) -> 'Weights':
        """Today's hand-set sum, term for term (`ChoiceConfig`'s defaults: not fits)."""
        return Weights({
            'relevance': cfg.w_relevance, 'value': cfg.w_value, 'goal': cfg.w_goal,
            'avoid': -cfg.w_avoid, 'hurt': -cfg.w_avoid, 'prior': 1.0,
            'obstacle': cfg.w_need, 'memory_tool': cfg.w_memory,
            'memory_link': cfg.w_memory, 'resume': cfg.w_need, 'moot': -cfg.habit_done,
            'restore': cfg.w_need, 'frontier': cfg.w_frontier, 'answer': cfg.w_answer,
            'intent': cfg.w_intent, 'pain': -cfg.w_pain, 'redirect': 1.0,
            'done': -cfg.habit_done, 'failed': -cfg.habit_failed,
            'tool_used': -cfg.habit_tool, 'dull': -cfg.habit_dull,
            'wait': cfg.wait_bias, 'stale': cfg.effort, 'settled': cfg.w_need}, 'hand')

    @staticmethod
    def load(path: str | Path = WEIGHTS_FILE) -> 'Weights':
        """Weights saved by `save` (the fit's output), with their provenance."""
        try:
            data = json.loads(Path(path).read_text())
            w = {str(k): float(v) for k, v in data['weights'].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f'{path}: not a weights file ({exc})') from exc
        if not all(math.isfinite(v) for v in w.values()):
            raise ValueError(f'{path}: a weight is not finite')
        return Weights(w, 'fitted', dict(data.get('provenance') or {}))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(
            {'weights': {k: round(v, 6) for k, v in sorted(self.w.items())},
             'provenance': dict(self.provenance)}, indent=1, sort_keys=True) + '\n')
