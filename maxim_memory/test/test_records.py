"""Records: confidence formula, ordered bounded refs, round trips."""

import math

import pytest

from maxim_memory.records import (Action, CompressedMemory, Concept, concept_confidence,
                                  EpisodicMemory, MathRecord, MAX_REFS_PER_LAYER, Outcome,
                                  Perception, Provenance, record_from_dict, record_to_dict,
                                  RecordError)


def test_confidence_follows_the_seed_formula_and_caps():
    assert concept_confidence(0) == 0.5
    assert concept_confidence(4) == pytest.approx(0.7)
    assert concept_confidence(10_000) == 0.99
    c = Concept(name='mug')
    for i in range(9):
        c.reinforce(f'ep-{i}', now=float(i))
    assert c.confidence == pytest.approx(min(0.99, 0.5 + 0.1 * math.sqrt(9)))
    assert c.access_count == 9 and c.last_accessed == 8.0


def test_memory_refs_are_ordered_sets_with_fifo_eviction():
    c = Concept(name='mug')
    for i in range(MAX_REFS_PER_LAYER + 5):
        c.add_ref('hippocampus', f'ep-{i}')
    refs = c.refs('hippocampus')
    assert len(refs) == MAX_REFS_PER_LAYER
    assert refs[0] == 'ep-5' and refs[-1] == f'ep-{MAX_REFS_PER_LAYER + 4}'
    c.add_ref('hippocampus', 'ep-5')  # re-adding makes it the newest
    assert c.refs('hippocampus')[-1] == 'ep-5'
    assert c.migrate_ref('hippocampus', 'ep-6', 'cm-ep-6')
    assert c.refs('hippocampus')[0] == 'cm-ep-6'
    assert c.remove_ref('hippocampus', 'cm-ep-6') and not c.remove_ref('atl', 'x')


def test_every_kind_round_trips_through_a_dict():
    ep = EpisodicMemory(perception=Perception('a mug', ['mug'], ['Dennis'], 0.8, 0.3),
                        action=Action('grasp', {'target': 'mug'}),
                        outcome=Outcome(success=True, valence=0.9), run_id='r1')
    c = Concept(name='mug', category='object', provenance=Provenance.HYBRID,
                properties={'color': 'blue'})
    c.add_ref('hippocampus', ep.id)
    for rec in (ep, CompressedMemory.from_episode(ep, 5.0), c,
                MathRecord(name='mug_salience', values={'mean': 0.8})):
        back = record_from_dict(record_to_dict(rec))
        assert back == rec and type(back) is type(rec)
    assert record_from_dict(record_to_dict(c)).provenance is Provenance.HYBRID


def test_compressed_episode_keeps_the_gist():
    ep = EpisodicMemory(perception=Perception('saw a mug on the table', ['mug']),
                        action=Action('grasp'), outcome=Outcome(True, 0.5, 'held it'))
    cm = CompressedMemory.from_episode(ep, now=10.0)
    assert cm.original_id == ep.id and cm.tool_name == 'grasp' and cm.success
    assert 'held it' in cm.summary and cm.episode_time == ep.created_at


def test_bad_dicts_raise_typed_errors():
    with pytest.raises(RecordError):
        record_from_dict({'id': 'x'})
    with pytest.raises(RecordError):
        record_from_dict({'kind': 'dream'})
    with pytest.raises(RecordError):
        record_from_dict({'kind': 'concept', 'provenance': 42})
