"""LearnedToolIndex: extraction, scoring, learning and persistence."""

import json

import pytest

from maxim_core.prompt.sections import Priority
from maxim_core.tools import build_tool_registry, LearnedToolIndex, TOOL_DESCRIPTIONS
from maxim_core.tools.learned_index import DISCOVER_WEIGHT, keywords


@pytest.fixture
def index(tmp_path):
    reg = build_tool_registry('active', tmp_path)
    return LearnedToolIndex(reg.tools(), TOOL_DESCRIPTIONS, path=tmp_path / 'idx.json')


def test_keywords_are_stemmed_content_words():
    words = keywords('Reading the files_in memory_recall')
    assert words == ['read', 'fil', 'memory', 'recall']
    assert keywords('moved moving move') == ['mov']


def test_goal_selects_relevant_tools_in_full(index):
    sel = index.select('turn the head to look left, move it')
    assert sel.critical[0] == 'move'
    assert 'git_commit' in sel.nice and 'move' not in sel.nice
    assert set(sel.critical) | set(sel.nice) == set(index.weights)
    sel = index.select('commit my changes to git')
    assert sel.critical[0] == 'git_commit'
    sections, sel = index.sections('what do I remember about the red ball')
    assert 'memory_recall' in sel.critical
    by_name = {s.name: s for s in sections}
    assert by_name['tools'].priority == Priority.CRITICAL
    assert by_name['tools_other'].priority == Priority.NICE_TO_HAVE
    assert '- memory_recall:' in by_name['tools'].text
    assert 'move' in by_name['tools_other'].text


def test_success_strengthens_and_discovers_failure_does_not_weaken(index):
    goal = 'greet the visitor warmly'
    assert index.score(goal)['speak'] == 0.0
    before = dict(index.weights['speak'])
    index.record_failure('speak', goal)
    assert index.weights['speak'] == before
    index.record_success('speak', goal)
    assert index.weights['speak']['greet'] == DISCOVER_WEIGHT
    assert index.score(goal)['speak'] > 0
    w = index.weights['speak']['greet']
    index.record_success('speak', goal)
    assert index.weights['speak']['greet'] > w
    assert 'speak' in index.select(goal).critical


def test_surfaced_but_unused_decays(index):
    goal = 'read the notes file'
    sel = index.select(goal)
    unused = [n for n in sel.critical if n != 'read_file']
    assert unused
    w = index.weights[unused[0]]['fil']
    index.record_unused(sel.critical, ['read_file'], goal)
    assert index.weights[unused[0]]['fil'] < w
    assert index.weights['read_file']['fil'] == 1.0


def test_weights_persist_across_sessions(index, tmp_path):
    index.record_success('speak', 'greet the visitor')
    path = index.save()
    data = json.loads(path.read_text())
    assert data['weights']['speak']['greet'] == DISCOVER_WEIGHT
    again = LearnedToolIndex(build_tool_registry('active', tmp_path).tools(),
                             TOOL_DESCRIPTIONS, path=path)
    assert again.weights['speak']['greet'] == DISCOVER_WEIGHT
    assert again.successes['speak'] == 1
    path.write_text('{"version": 99}')
    with pytest.raises(ValueError):
        LearnedToolIndex([], path=path)
