"""The multi-turn scenarios made from the decision benchmark's test families: at least 30,
each a valid scenario of the runner's format, worded only in the test split's phrasings, and
using the format's episode criteria (order, windows of turns, counts, what a recall
returned, what the head did, entities that wait on another entity)."""

import importlib.util
from pathlib import Path
import re

from maxim_eval.scenario.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
# By path: the decision benchmark's generator is also generate.py.
_spec = importlib.util.spec_from_file_location(
    'scenario_generator', ROOT / 'bench' / 'scenarios' / 'generate.py')
scenarios = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scenarios)
decisions = scenarios.DECISIONS


def test_thirty_or_more_valid_scenarios_in_every_family(tmp_path):
    made = scenarios.generate(per_family=3, seed=11)
    assert len(made) >= 30
    assert {s['family'] for s in made} == set(scenarios.FAMILIES)
    paths = scenarios.write(made, tmp_path)
    loaded = [Scenario.load(str(p)) for p in paths]
    assert len({s.name for s in loaded}) == len(loaded)
    kinds = {k for s in loaded for k in ('in_order', 'body', 'to_turn', 'at_least', 'output')
             if k in str(s.criteria.as_dict())}
    assert kinds == {'in_order', 'body', 'to_turn', 'at_least', 'output'}
    assert any('requires' in spec for s in loaded for spec in s.entities.values())


def test_no_dev_phrasing_is_in_a_generated_scenario():
    said = ' '.join(t.get('message', '') for s in scenarios.generate(3, 11)
                    for t in s['turns']).lower()
    for template in decisions.templates_of('dev'):
        # The fixed words of a dev template (between its slots) never appear.
        for piece in re.split(r'\{[^}]*\}', template):
            piece = piece.strip(' .,;?!').lower()
            if len(piece.split()) >= 3:
                assert piece not in said, (template, piece)
