"""IDLE-3 drives as facts and IDLE-4 budgets and storage gates."""

import pytest

from maxim_core.idle import budgets as B
from maxim_core.idle.budgets import BudgetConfig, GoalBudget, StorageGate
from maxim_core.idle.drives import DriveConfig, Drives, DriveState
from maxim_core.idle.intent import parse_output

PRESSED = DriveState(energy_fraction=0.1, pain_level=0.9, unexplored_fraction=0.7,
                     seconds_since_interaction=7200, memory_fill_fraction=0.3)


def test_drives_state_facts_and_crossings_never_goals():
    s = Drives().summarize(PRESSED)
    assert set(s.crossed) == {'energy', 'pain', 'social'}
    assert s.threshold_crossed
    assert len(s.facts) == 4                      # memory at 0.3 is below notice
    assert 'Energy budget left: 10%.' in s.facts
    for fact in s.facts:
        assert '[' not in fact and parse_output(fact).intent is None
    assert s.pressures['memory'] == pytest.approx(0.3)


def test_calm_body_and_unknowns_state_nothing():
    calm = DriveState(energy_fraction=0.95, pain_level=0.0, unexplored_fraction=0.1,
                      seconds_since_interaction=60)
    s = Drives().summarize(calm)
    assert s.facts == () and s.crossed == () and s.text == ''
    assert Drives().summarize(DriveState()).pressures == {}
    assert Drives().summarize(None).facts == ()


def test_drives_disabled_is_a_clean_ablation():
    on, off = Drives(DriveConfig()), Drives(DriveConfig(), enabled=False)
    assert on.summarize(PRESSED).facts
    s = off.summarize(PRESSED)
    assert s.facts == () and s.crossed == () and s.pressures == {}
    assert off.config == on.config


def test_drive_config_validates():
    with pytest.raises(ValueError):
        DriveConfig(notice=0.9, urgent=0.5)


def test_backoff_rate_limit_two_per_hour():
    budget = GoalBudget(BudgetConfig(min_goal_spacing_s=0))
    budget.record('scan room 1', 0)
    budget.record('look_at door 1', 600)
    assert budget.check('track ball 1', 'all_in_backoff', 1200) == B.RATE_LIMIT_BACKOFF
    assert budget.check('track ball 1', 'no_tasks', 1200) is None
    assert budget.check('track ball 1', 'all_in_backoff', 3601) is None   # window slid


def test_spacing_and_its_interoceptive_bypass():
    budget = GoalBudget(BudgetConfig())
    budget.record('scan room 1', 1000)
    assert budget.check('track ball 1', 'no_tasks', 1200) == B.MIN_SPACING
    assert budget.check('track ball 1', 'no_tasks', 1200, threshold_crossed=True) is None
    assert budget.check('track ball 1', 'no_tasks', 1300) is None
    strict = GoalBudget(BudgetConfig(threshold_bypasses_spacing=False))
    strict.record('scan room 1', 1000)
    assert strict.check('x y 1', 'no_tasks', 1200, threshold_crossed=True) == B.MIN_SPACING


def test_hourly_cap_and_novelty_gate():
    budget = GoalBudget(BudgetConfig(max_goals_per_hour=2, min_goal_spacing_s=0))
    assert budget.check('look_at ceiling 1', 'no_tasks', 0,
                        failed_goals=['look_at ceiling 1']) == B.NOVELTY_GATE
    budget.record('a b 1', 0)
    budget.record('c d 1', 1)
    assert budget.check('e f 1', 'no_tasks', 2) == B.RATE_LIMIT_HOUR
    assert budget.emissions_in_window(2) == 2


def test_storage_gates():
    gate = StorageGate(BudgetConfig(salient_delta_threshold=0.7,
                                    identity_checkpoint_interval_s=3600,
                                    max_stored_reflections_per_hour=2))
    assert gate.decide(False, True, 0.0, 0) == B.STORE_INTENT
    assert gate.decide(True, False, 0.0, 0) == B.STORE_CHECKPOINT    # the first is due
    assert gate.decide(True, False, 0.2, 60) == B.NOT_STORED
    assert gate.decide(False, False, 0.9, 90) == B.NOT_STORED        # nothing to store
    assert gate.decide(True, False, 0.8, 120) == B.STORE_SALIENT
    assert gate.decide(True, False, 0.9, 180) == B.REFLECTION_CAP     # 2 this hour already
    assert gate.decide(True, False, 0.9, 3601) == B.STORE_SALIENT
    assert gate.decide(True, False, 0.1, 3700) == B.REFLECTION_CAP    # checkpoint due, no room
    assert gate.decide(True, False, 0.1, 7300) == B.STORE_CHECKPOINT


def test_budget_config_validates():
    with pytest.raises(ValueError):
        BudgetConfig(max_goals_per_hour=-1)
    with pytest.raises(ValueError):
        BudgetConfig(salient_delta_threshold=2.0)
