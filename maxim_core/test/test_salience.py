"""Computed salience of thoughts and the working-memory set."""

import pytest

from maxim_core.deliberation.salience import (jaccard, PERCEPT, THOUGHT, thought_salience,
                                              WorkingMemorySet, words)


def test_word_jaccard():
    assert words('The guard, the KEYS!') == {'the', 'guard', 'keys'}
    assert jaccard('the guard sleeps', 'the guard sleeps') == 1.0
    assert jaccard('a b c d', 'a b x y') == pytest.approx(2 / 6)
    assert jaccard('', '') == 1.0 and jaccard('a', '') == 0.0


def test_salience_weights():
    # Two bio-systems of four, two memories of five, first thought (novelty 1).
    assert thought_salience(2, 2, None) == pytest.approx(0.3 * 0.5 + 0.3 * 0.4 + 0.4)
    # A repeated thought with nothing recalled is not salient.
    assert thought_salience(0, 0, 1.0) == 0.0
    # Everything saturates at 1.
    assert thought_salience(9, 9, 0.0) == 1.0
    # Novelty carries 0.4: a converging thought scores lower than a novel one.
    assert thought_salience(1, 1, 0.9) < thought_salience(1, 1, 0.1)
    with pytest.raises(ValueError):
        thought_salience(-1, 0, None)
    with pytest.raises(ValueError):
        thought_salience(1, 1, None, max_sections=0)


def test_working_memory_top_by_salience_and_capacity():
    wm = WorkingMemorySet(capacity=3, clock=lambda: 5.0)
    wm.add(PERCEPT, 'p', 0.5)
    wm.add(THOUGHT, 'low', 0.1)
    wm.add(THOUGHT, 'high', 0.9)
    assert [i.content for i in wm.top_by_salience(2)] == ['high', 'p']
    assert [i.content for i in wm.top_by_salience(5, THOUGHT)] == ['high', 'low']
    wm.add(THOUGHT, 'mid', 0.6)                 # full: the least salient goes
    assert len(wm) == 3 and 'low' not in [i.content for i in wm.items()]
    assert wm.head().content == 'mid' and wm.head().t == 5.0
    with pytest.raises(ValueError):
        wm.add(THOUGHT, 'x', 1.5)
    wm.clear()
    assert wm.head() is None and wm.top_by_salience() == []
