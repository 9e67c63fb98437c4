"""The diary's words for memory's lines, on lines the real enricher writes: `in_words` reads
memory's concept and knowledge format, so a change to that format that it no longer reads
shows here instead of as bookkeeping copied into the robot's thoughts."""

from maxim_core.prompt.diary import Diary, in_words, strip_reason
from maxim_memory.enrich import MemoryEnricher
from maxim_memory.hub import HubConfig, MemoryHub
from maxim_memory.records import (Action, Decision, EpisodeContext, EpisodicMemory, Outcome,
                                  Perception)

T0 = 1_800_000_000.0


def test_every_concept_and_knowledge_line_of_the_enricher_is_told_without_bookkeeping(
        tmp_path):
    hub = MemoryHub(HubConfig(db_path=str(tmp_path / 'm.db')), clock=lambda: T0 + 1000)
    try:
        for i in range(6):
            hub.capture_episode(EpisodicMemory(
                created_at=T0 + i * 60, run_id='r',
                perception=Perception('A red ball rolls across the table', ['ball', 'table'],
                                      ['face']),
                context=EpisodeContext(goal='Keep the body safe', mode='active'),
                decision=Decision(intent='track_target {"target_label": "ball"}',
                                  confidence=0.8, reasoning='I follow the ball'),
                action=Action('track_target'),
                outcome=Outcome(i % 3 != 2, 0.6, 'done')))
        hub.on_session_end()
        out = MemoryEnricher(hub, clock=lambda: T0 + 1000).enrich(
            'A red ball bounces near the table', ['ball'], ['face'], 'Keep the body safe',
            ['track_target'], 'ball')
    finally:
        hub.close(end_session=False)
    lines = [strip_reason(i.text) for name in ('concepts', 'knowledge') for i in out[name].items]
    assert any(line.startswith('"ball" (object') for line in lines), lines
    assert any('goal_term' in line for line in lines), lines   # the goal's words are concepts
    told = [in_words(line) for line in lines]
    assert 'the ball, seen many times' in told[lines.index(next(
        line for line in lines if line.startswith('"ball"')))]
    for line, words in zip(lines, told):
        assert not any(mark in words for mark in ('confidence', 'episodes)', '=', 'related_to',
                                                  'goal_term', '"')), (line, words)
        if 'goal_term' in line:
            assert words == ''
    diary = Diary(percept='I see a red ball.', remembered=[i.text for i in out['concepts'].items])
    assert 'confidence' not in diary.think_prompt()


def test_a_prediction_of_the_memory_node_is_told_as_what_it_means(tmp_path):
    """predict_outcome's answer, as the memory node writes it and the introspection tool
    trims it, reaches the diary as its meaning; its strings alone read 'all_contexts move'."""
    import json
    from types import SimpleNamespace
    from maxim_core.deliberation.words import result_words
    from maxim_core.tools.introspection import compact
    from maxim_memory.nodes.queries import predict
    hub = MemoryHub(HubConfig(db_path=str(tmp_path / 'm.db')), clock=lambda: T0 + 1000)
    try:
        for i in range(5):
            hub.nac.obj.observe('move', 'ball', 'worked' if i else 'failed', 0.8 if i else -0.8)
        told = {}
        for context in ('ball', '', 'kitchen'):
            res = predict(hub, SimpleNamespace(tool_name='move', context=context,
                                               include_all_outcomes=False),
                          SimpleNamespace())
            told[context] = result_words(json.dumps(compact(json.loads(res.result_json), 5)))
        res = predict(hub, SimpleNamespace(tool_name='wave', context='',
                                           include_all_outcomes=False), SimpleNamespace())
        told['unseen'] = result_words(json.dumps(compact(json.loads(res.result_json), 5)))
    finally:
        hub.close(end_session=False)
    assert told['ball'] == 'move: likely to work here, from 5 tries', told
    assert told[''] == 'move: likely to work, from 5 tries', told
    assert told['kitchen'] == 'move: not tried here; from elsewhere, likely to work', told
    assert told['unseen'] == 'wave: never tried, no telling how it goes', told
    assert not any(w in ' '.join(told.values()) for w in ('all_contexts', 'generalized', '0.'))
