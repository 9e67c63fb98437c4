"""Relevance: content words, keyword scores, thresholds, and the hub's relevant_memories."""

import pytest

from maxim_memory import relevance
from maxim_memory.embedding import HashingEmbedder, SentenceEmbedder
from maxim_memory.hub import HubConfig, MemoryHub, QueryError
from maxim_memory.layers import Hippocampus
from maxim_memory.records import Action, EpisodeContext, EpisodicMemory, Outcome, Perception
from maxim_memory.relevance import (content_words, fold, keyword_score, KeywordScorer,
                                    strip_percept_template)


def ep(narrative, objects=(), people=(), tool='', t=1000.0, goal=''):
    return EpisodicMemory(created_at=t, perception=Perception(narrative, list(objects),
                                                              list(people)),
                          context=EpisodeContext(goal=goal), action=Action(tool),
                          outcome=Outcome(True, 0.5))


def test_content_words_drop_stop_words_percept_scaffolding_and_numbers():
    assert content_words('The cat is on the mat and it is what it is') == ['cat', 'mat']
    assert content_words('I see 2 objects: a red mug, to my left, familiar. I am looking at '
                         'the mug (#3) for 1.2 s.') == ['red', 'mug']
    assert content_words("Someone put Sarah's batteries in the boxes") == \
        ['put', 'sarah', 'battery', 'box']
    assert content_words('the is a of') == [] and content_words('') == []
    assert [fold(w) for w in ('cups', 'glasses', 'bus', 'this', 'dishes', 'ladies')] == \
        ['cup', 'glass', 'bus', 'this', 'dish', 'lady']


def test_keyword_score_shares_and_rarity():
    m = keyword_score('a red mug on the table', 'I picked up the red mug')
    assert m.score == pytest.approx(2 / 3, abs=1e-4) and set(m.shared) == {'red', 'mug'}
    assert m.why().startswith('shared words: ')
    assert keyword_score('the of and', 'the of and').score == 0.0  # stop words alone: nothing
    # a rare shared word outweighs a common one
    df = {'person': 90, 'charger': 1, 'table': 40}
    rare = KeywordScorer('person charger', df, 100).match({'charger'})
    common = KeywordScorer('person charger', df, 100).match({'person'})
    assert rare.score > 0.8 > 0.2 > common.score
    assert rare.shared == ('charger',)


def test_strip_percept_template_keeps_the_labels():
    text = ('I see 1 face and 2 objects: a person, to my left, familiar; a cup, straight '
            'ahead, new. I am looking at the cup (#3) for 1.2 s. Next: the person (#2, '
            'novelty).')
    assert strip_percept_template(text) == 'a person; a cup. cup. person.'
    assert strip_percept_template('I see nothing that stands out.') == ''
    assert strip_percept_template('Sarah made tea.') == 'Sarah made tea.'


def test_thresholds_per_channel_and_embedder():
    assert relevance.threshold('hippocampus') == relevance.KEYWORD_THRESHOLD
    assert relevance.threshold('ec', HashingEmbedder()) == HashingEmbedder.relevance_threshold
    assert relevance.semantic_threshold(SentenceEmbedder) == \
        SentenceEmbedder.relevance_threshold
    assert relevance.semantic_threshold(object()) == relevance.DEFAULT_SEMANTIC_THRESHOLD
    from maxim_memory.similarity import EpisodeSimilarityIndex
    assert EpisodeSimilarityIndex(HashingEmbedder()).relevance_threshold == 0.5
    with pytest.raises(ValueError, match='no relevance threshold'):
        relevance.threshold('nac')


def test_hippocampus_ignores_stop_words_and_drops_weak_matches():
    h = Hippocampus()
    mug = ep('the red mug is on the table', ['mug'], t=1)
    door = ep('the door is open', ['door'], t=2)
    h.store(mug)
    h.store(door)
    assert h.search(query='the is on') == []          # only stop words: nothing matches
    assert [r.id for r, _ in h.search(query='is the door open')] == [door.id]
    assert [r.id for r, _ in h.search(query='mugs')] == [mug.id]  # plural folded
    hits = h.keyword_matches('a red bicycle, a green kite and a blue train', 5)
    assert [r.id for r, _ in hits] == [mug.id] and hits[0][1].shared == ('red',)
    assert h.keyword_matches('a red bicycle, a green kite and a blue train', 5,
                             min_score=relevance.KEYWORD_THRESHOLD) == []
    top, total = h.search_top(5, query='red mug', min_score=0.9)
    assert [r.id for r, _ in top] == [mug.id] and total == 1 and top[0][1] == 1.0


@pytest.fixture
def hub(tmp_path):
    h = MemoryHub(HubConfig(db_path=str(tmp_path / 'm.db'), background_extraction=False,
                            persist_ec_index=False), embedder=HashingEmbedder())
    yield h
    h.close(end_session=False)


def test_relevant_memories_says_why_or_nothing(hub):
    keys = ep('Sarah put her keys on the shelf by the door', ['keys'], ['Sarah'], t=10)
    tea = ep('Sarah boiled the kettle to make tea', ['kettle'], ['Sarah'], t=20)
    for e in (keys, tea):
        hub.capture_episode(e)
    found = hub.relevant_memories('Where did I leave my keys?')
    assert [r.record.id for r in found] == [keys.id]
    rec, score, why = found[0]  # a plain (record, score, why) tuple
    assert score >= relevance.KEYWORD_THRESHOLD and why == 'shared words: key'
    found = hub.relevant_memories('Sarah asks: where are my keys?')
    assert found[0].record.id == keys.id and found[0].why == 'shared words: key, sarah'
    assert all(r.score >= relevance.KEYWORD_THRESHOLD for r in found)
    assert hub.relevant_memories('A bicycle leans on the fence.') == []  # nothing relevant
    assert hub.relevant_memories('the of and is') == []
    # the semantic channel: a near-duplicate text passes the hashing threshold
    same = hub.relevant_memories('Sarah boiled the kettle to make tea', limit=1)
    assert same[0].record.id == tea.id and 'semantic similarity' in same[0].why
    # thresholds can be given; a threshold above any score leaves nothing
    assert hub.relevant_memories('Sarah keys', keyword_threshold=1.01,
                                 semantic_threshold=1.01) == []
    with pytest.raises(QueryError):
        hub.relevant_memories(None)
    with pytest.raises(QueryError):
        hub.relevant_memories('keys', limit=-1)


def test_relevant_memories_finds_paraphrases_with_the_sentence_model(tmp_path):
    h = MemoryHub(HubConfig(db_path=str(tmp_path / 's.db'), background_extraction=False,
                            persist_ec_index=False), embedder=SentenceEmbedder())
    try:
        door = ep('A visitor rapped on the front door.', tool='move_head', t=10)
        ball = ep('A ball rolled under the sofa.', ['ball'], tool='track_target', t=20)
        for e in (door, ball):
            h.capture_episode(e)
        found = h.relevant_memories('Someone is knocking at the entrance.')
        assert [r.record.id for r in found] == [door.id]
        assert found[0].why.startswith('semantic similarity 0.')
        assert h.relevant_memories('Fireworks are exploding in the sky.') == []
    finally:
        h.close(end_session=False)
