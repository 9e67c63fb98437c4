"""The ThoughtGate cascade: refractory, energy, salience, adaptive threshold."""

import pytest

from maxim_core.deliberation.energy import EnergyBudget
from maxim_core.deliberation.gate import (EMPTY, ENERGY, FORCED, PASSED, REFRACTORY, THRESHOLD,
                                          ThoughtGate)
from maxim_core.deliberation.salience import PERCEPT, WorkingMemorySet


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def wm_with(salience):
    wm = WorkingMemorySet()
    wm.add(PERCEPT, 'a person waves', salience)
    return wm


def test_refractory_blocks_two_ticks_after_a_pass():
    gate = ThoughtGate(refractory_ticks=2, threshold=0.4)
    wm = wm_with(0.9)
    assert gate.should_think(10, wm).stage == PASSED
    assert [gate.should_think(t, wm).stage for t in (11, 12)] == [REFRACTORY, REFRACTORY]
    assert gate.should_think(13, wm).think
    assert gate.fired == 2


def test_energy_floor_is_fifteen_percent_of_the_token_budget():
    clock = Clock()
    energy = EnergyBudget(token_budget=1000, clock=clock)
    gate = ThoughtGate()
    wm = wm_with(0.9)
    energy.record(800, 49, 1.0)      # 15.1% left
    assert gate.should_think(1, wm, energy.remaining_fraction()).think
    energy.record(0, 2, 0.1)         # 14.9% left
    d = gate.should_think(5, wm, energy.remaining_fraction())
    assert not d.think and d.stage == ENERGY and '15%' in d.reason


def test_salience_of_the_working_memory_head_against_the_threshold():
    gate = ThoughtGate(threshold=0.5)
    assert gate.should_think(0, WorkingMemorySet()).stage == EMPTY
    wm = wm_with(0.9)
    wm.add(PERCEPT, 'nothing new', 0.2)        # the head is the newest item
    d = gate.should_think(0, wm)
    assert not d.think and d.stage == THRESHOLD and d.score == 0.2
    assert gate.last_fire_tick is None          # a no does not start a refractory period
    custom = ThoughtGate(threshold=0.5, scorer=lambda item: 1.0 if 'new' in item.content else 0)
    assert custom.should_think(0, wm).think


def test_threshold_adapts_to_outcomes_within_bounds():
    gate = ThoughtGate(threshold=0.4, threshold_min=0.3, threshold_max=0.5, step=0.05)
    wm = wm_with(0.37)
    assert not gate.should_think(0, wm).think
    assert gate.record_outcome(helped=True) == pytest.approx(0.35)
    assert gate.should_think(1, wm).think               # thinking helped: think more readily
    for _ in range(5):
        gate.record_outcome(helped=True)
    assert gate.threshold == pytest.approx(0.3)
    for _ in range(10):
        gate.record_outcome(helped=False)               # wasted: act faster
    assert gate.threshold == pytest.approx(0.5)
    assert (gate.helped, gate.wasted) == (6, 10)


def test_force_bypasses_the_cascade_and_bad_settings_are_rejected():
    gate = ThoughtGate()
    assert gate.should_think(0, WorkingMemorySet(), energy_remaining=0.0,
                             force=True).stage == FORCED
    for kw in ({'refractory_ticks': -1}, {'energy_floor': 1.5}, {'threshold': 0.95},
               {'step': 0}):
        with pytest.raises(ValueError):
            ThoughtGate(**kw)
