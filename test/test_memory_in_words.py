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
