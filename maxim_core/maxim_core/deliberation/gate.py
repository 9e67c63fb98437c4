"""The ThoughtGate: whether the situation warrants deliberation at all (seed 000).

A short-circuit cascade, cheapest first: refractory (no re-fire within `refractory_ticks`
of the last pass), energy (no thinking below `energy_floor` of the token budget), salience of
the working-memory head, then the adaptive threshold, which lowers when thinking helped and
rises when it was wasted. Reflexes never pass through here.
"""

from dataclasses import dataclass
from typing import Callable

from maxim_core.deliberation.salience import WorkingItem, WorkingMemorySet

REFRACTORY = 'refractory'
ENERGY = 'energy'
EMPTY = 'empty'
THRESHOLD = 'threshold'
FORCED = 'forced'
PASSED = 'passed'


@dataclass(frozen=True)
class GateDecision:
    think: bool
    stage: str           # which step of the cascade decided
    reason: str
    score: float = 0.0
    threshold: float = 0.0


class ThoughtGate:
    """Composite go/no-go gate on the working-memory state."""

    def __init__(self, refractory_ticks: int = 2, energy_floor: float = 0.15,
                 threshold: float = 0.4, threshold_min: float = 0.1, threshold_max: float = 0.9,
                 step: float = 0.05,
                 scorer: Callable[[WorkingItem], float] | None = None):
        if refractory_ticks < 0:
            raise ValueError('refractory_ticks cannot be negative')
        if not 0.0 <= energy_floor <= 1.0:
            raise ValueError('energy_floor must be within 0..1')
        if not 0.0 <= threshold_min <= threshold <= threshold_max <= 1.0:
            raise ValueError('need 0 <= threshold_min <= threshold <= threshold_max <= 1')
        if step <= 0.0:
            raise ValueError('step must be positive')
        self.refractory_ticks = refractory_ticks
        self.energy_floor = energy_floor
        self.threshold = threshold
        self.threshold_min = threshold_min
        self.threshold_max = threshold_max
        self.step = step
        self.scorer = scorer or (lambda item: item.salience)
        self.last_fire_tick: int | None = None
        self.fired = 0
        self.helped = 0
        self.wasted = 0

    def should_think(self, tick: int, wm: WorkingMemorySet, energy_remaining: float = 1.0,
                     force: bool = False) -> GateDecision:
        """Decide for this tick; a decision to think records the tick as the last pass.

        Refractory: after firing at tick t, ticks t+1 .. t+refractory_ticks are blocked.
        """
        if force:
            return self._fire(tick, FORCED, 'forced by the caller', 0.0)
        if (self.last_fire_tick is not None
                and tick - self.last_fire_tick <= self.refractory_ticks):
            return GateDecision(False, REFRACTORY,
                                f'thought {tick - self.last_fire_tick} tick(s) ago '
                                f'(refractory {self.refractory_ticks})', 0.0, self.threshold)
        if energy_remaining < self.energy_floor:
            return GateDecision(False, ENERGY,
                                f'energy {energy_remaining:.0%} of the token budget is below '
                                f'{self.energy_floor:.0%}', 0.0, self.threshold)
        item = wm.head()
        if item is None:
            return GateDecision(False, EMPTY, 'working memory is empty', 0.0, self.threshold)
        score = float(self.scorer(item))
        if score < self.threshold:
            return GateDecision(False, THRESHOLD,
                                f'salience {score:.2f} below threshold {self.threshold:.2f}',
                                score, self.threshold)
        return self._fire(tick, PASSED,
                          f'salience {score:.2f} >= threshold {self.threshold:.2f}', score)

    def _fire(self, tick: int, stage: str, reason: str, score: float) -> GateDecision:
        self.last_fire_tick = tick
        self.fired += 1
        return GateDecision(True, stage, reason, score, self.threshold)

    def record_outcome(self, helped: bool) -> float:
        """Learn from a deliberation: helped -> think more readily; wasted -> act faster."""
        if helped:
            self.helped += 1
            self.threshold = max(self.threshold_min, self.threshold - self.step)
        else:
            self.wasted += 1
            self.threshold = min(self.threshold_max, self.threshold + self.step)
        return self.threshold
