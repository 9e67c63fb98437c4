"""Bio-enrichment: parallel memory queries within a budget, degrading gracefully."""

import threading

import pytest

from maxim_core.deliberation.enrichment import BioEnrichmentPipeline


def test_answers_are_labelled_in_canonical_order_and_counted():
    asked = []

    def hippocampus(text):
        asked.append(text)
        return 'You greeted a waving person yesterday\n- People wave to be seen'

    pipe = BioEnrichmentPipeline({'values': lambda t: 'greeting -> 80% positive',
                                  'episodes': hippocampus,
                                  'similar': lambda t: 'A similar scene at the door'})
    try:
        out = pipe.enrich('a person waves')
    finally:
        pipe.close()
    assert asked == ['a person waves']
    assert out.sources == ['episodes', 'similar', 'values'] and out.sections == 3
    assert out.text.splitlines() == ['- Memory: You greeted a waving person yesterday',
                                     '- Memory: People wave to be seen',
                                     '- Similar situation: A similar scene at the door',
                                     '- What works here: greeting -> 80% positive']
    assert out.memories == 3                     # episodes 2 + similar 1
    assert out.skipped == {c: 'absent' for c in ('concepts', 'knowledge', 'predictions',
                                                 'motor', 'rhythms')}


def test_one_provider_answers_several_channels_and_gets_the_situation():
    seen = []

    def memory(query):
        seen.append((str(query), query.objects, query.goal, query.tools, query.context_key))
        return {'episodes': 'the red ball rolled away [shares ball, red]',
                'concepts': '', 'knowledge': None,
                'predictions': 'Predicted: track_target succeeds [episodes with ball]'}

    pipe = BioEnrichmentPipeline({'memory': memory, 'motor': lambda q: None})
    try:
        out = pipe.enrich('a red ball', objects=['ball'], goal='play', tools=['move'],
                          context_key='ball')
    finally:
        pipe.close()
    assert seen == [('a red ball', ('ball',), 'play', ('move',), 'ball')]
    assert out.sources == ['episodes', 'predictions'] and out.sections == 2
    assert out.skipped['concepts'] == out.skipped['knowledge'] == 'nothing relevant'
    assert out.skipped['motor'] == 'nothing relevant' and 'episodes' not in out.skipped
    assert out.text.splitlines()[1] == ('- Prediction: Predicted: track_target succeeds '
                                        '[episodes with ball]')


def test_failures_and_empty_answers_are_reported_not_raised():
    def broken(text):
        raise ConnectionError('memory service gone')

    pipe = BioEnrichmentPipeline({'episodes': broken, 'values': lambda t: None,
                                  'similar': lambda t: 42, 'rhythms': lambda t: 'It is evening'},
                                 expected=())
    try:
        out = pipe.enrich('x')
        assert out.sources == ['rhythms'] and out.text == '- Time: It is evening'
        assert out.skipped['episodes'].startswith('failed: ConnectionError')
        assert out.skipped['values'] == 'nothing relevant'
        assert 'int' in out.skipped['similar']
        assert pipe.enrich('   ').skipped['rhythms'] == 'nothing to ask about'
    finally:
        pipe.close()


def test_a_slow_provider_never_blocks_past_the_budget():
    release = threading.Event()
    finished = threading.Event()
    calls = []

    def slow(text):
        calls.append(text)
        release.wait(timeout=30)       # bounded even if the test fails
        finished.set()
        return 'late'

    ticks = iter(range(100))
    pipe = BioEnrichmentPipeline({'hippocampus': slow, 'nac': lambda t: 'fast'},
                                 budget_s=0.05, clock=lambda: float(next(ticks)))
    try:
        out = pipe.enrich('q1')
        # enrich came back while the slow provider was still waiting: it did not block.
        assert not finished.is_set()
        assert out.sources == ['nac'] and 'no answer within 0.05 s' in out.skipped['hippocampus']
        assert out.duration_s == 1.0                  # measured on the injected clock
        # Still hung: not asked again, so a hung service holds one thread at most.
        again = pipe.enrich('q2')
        assert again.skipped['hippocampus'] == 'still busy with an earlier query'
        assert calls == ['q1']
    finally:
        release.set()
        pipe.close()
    assert finished.wait(timeout=5)


def test_bad_configuration_is_rejected():
    with pytest.raises(ValueError):
        BioEnrichmentPipeline({}, budget_s=0)
    with pytest.raises(TypeError):
        BioEnrichmentPipeline({'hippocampus': 'not callable'})
