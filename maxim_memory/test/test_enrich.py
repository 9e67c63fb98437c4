"""MemoryEnricher: what memory finds relevant to a situation, channel by channel, and the
"nothing relevant" answer for a situation it knows nothing about."""

import pytest

from maxim_memory.enrich import CHANNELS, channels_to_dict, content_words, MemoryEnricher
from maxim_memory.hub import HubConfig, MemoryHub
from maxim_memory.records import (Action, Decision, EpisodeContext, EpisodicMemory, Outcome,
                                  Perception)

T0 = 1_800_000_000.0


def ball_episode(i: int, ok: bool) -> EpisodicMemory:
    return EpisodicMemory(
        created_at=T0 + i * 60, run_id='r',
        perception=Perception('A red ball rolls across the table', ['ball', 'table']),
        context=EpisodeContext(goal='', mode='active'),
        decision=Decision(intent='track_target {"target_label": "ball"}', confidence=0.8,
                          reasoning='I follow the ball'),
        action=Action('track_target'),
        outcome=Outcome(ok, 0.6 if ok else -0.6, 'done' if ok else 'lost it'))


@pytest.fixture
def enricher(tmp_path):
    hub = MemoryHub(HubConfig(db_path=str(tmp_path / 'm.db')), clock=lambda: T0 + 1000)
    for i in range(6):
        hub.capture_episode(ball_episode(i, ok=i % 3 != 2))
    hub.on_session_end()              # concepts are extracted, the graphs are linked
    yield MemoryEnricher(hub, clock=lambda: T0 + 1000)
    hub.close(end_session=False)


def test_a_known_situation_gets_episodes_concepts_knowledge_and_predictions(enricher):
    out = enricher.enrich('A red ball bounces near the table', ['ball'], [], '',
                          ['track_target', 'move'], 'ball')
    assert list(out) == list(CHANNELS)
    for name in ('episodes', 'concepts', 'knowledge', 'predictions'):
        assert out[name].items, (name, out[name].reason)
        assert all(i.why for i in out[name].items)
    why = out['episodes'].items[0].why
    assert 'shared words' in why and 'ball' in why
    assert out['concepts'].items[0].text.startswith('"ball" (object')
    assert 'in view' in out['concepts'].items[0].why
    # The knowledge channel does not repeat the concept already shown.
    assert not any(i.text.startswith('"ball"') for i in out['knowledge'].items)
    assert out['predictions'].items[0].text.startswith('Predicted: track_target succeeds')
    assert '4 of 6' in out['predictions'].items[0].text
    # Identical episodes are one line, not three.
    texts = [i.text for i in out['episodes'].items]
    assert len(texts) == len(set(texts))


def test_an_unrelated_situation_gets_nothing_and_says_why(enricher):
    out = enricher.enrich('A person in a blue coat waves', ['person'], [], '',
                          ['track_target', 'move'], 'person')
    for name, channel in out.items():
        assert channel.items == [], (name, [i.text for i in channel.items])
        assert channel.reason
    as_json = channels_to_dict(out)['channels']
    assert as_json['episodes'] == {'items': [], 'reason': out['episodes'].reason}


def test_stop_words_match_nothing(enricher):
    out = enricher.enrich('it is there and I see that it is', [], [], '', [], '',
                          channels=['episodes'])
    assert out['episodes'].items == [] and content_words('it is there and I see') == set()


def test_channels_can_be_chosen_and_unknown_ones_are_refused(enricher):
    out = enricher.enrich('a red ball', ['ball'], channels=['values'], tools=['track_target'],
                          context_key='ball+table')
    assert list(out) == ['values']
    assert out['values'].items and 'track_target' in out['values'].items[0].text
    with pytest.raises(ValueError, match='unknown channels'):
        enricher.enrich('a red ball', channels=['telepathy'])


def test_an_object_label_that_names_nothing_makes_no_concept(tmp_path):
    hub = MemoryHub(HubConfig(db_path=str(tmp_path / 'm.db'), background_extraction=False),
                    clock=lambda: T0)
    try:
        ep = ball_episode(0, ok=True)
        ep.perception.detected_objects = ['_', ' - ', 'ball']
        hub.capture_episode(ep)
        assert hub.extractor.run_pending() == 1 and hub.extractor.processed == 1
        assert [c.name for c in hub.atl if c.name in ('', 'ball')] == ['ball']
    finally:
        hub.close(end_session=False)


def test_the_node_tells_how_long_ago_in_the_time_episodes_are_stamped_in(tmp_path):
    """On the simulated head episodes are stamped in sim time while the hub keeps wall
    time (the memory node gives it the ROS clock as `stamp_clock`): "how long ago" must be
    measured on the stamps' clock (against wall time a moment ago read "20782 days ago")."""
    from types import SimpleNamespace
    from maxim_memory.nodes.queries import enrich
    sim_now = [400.0]
    hub = MemoryHub(HubConfig(db_path=str(tmp_path / 'm.db')),
                    stamp_clock=lambda: sim_now[0])
    try:
        ep = ball_episode(0, ok=True)
        ep.created_at = 280.0                       # two minutes of sim time before now
        hub.capture_episode(ep)
        req = SimpleNamespace(text='A red ball rolls across the table', objects=['ball'],
                              people=[], goal='', tools=[], context_key='',
                              channels=['episodes'], limit=3)
        res = enrich(hub, req, SimpleNamespace(available=False, result_json=''))
        assert res.available
        assert '2 min ago' in res.result_json and 'days ago' not in res.result_json
    finally:
        hub.close(end_session=False)
