"""Queries with values no caller should send are QueryErrors (ERROR_INVALID_REQUEST at the
node), not internal failures."""

import math

import pytest

from maxim_memory import conversions as conv
from maxim_memory.hub import HubConfig, MemoryHub, QueryError


@pytest.fixture
def hub(tmp_path):
    h = MemoryHub(HubConfig(db_path=str(tmp_path / 'm.db'), background_extraction=False,
                            persist_ec_index=False))
    yield h
    h.close(end_session=False)


@pytest.mark.parametrize('after, before', [(math.nan, 0.0), (0.0, math.inf), (-math.inf, 1.0)])
def test_recall_with_a_non_finite_window_is_a_query_error(hub, after, before):
    with pytest.raises(QueryError, match='finite'):
        hub.recall(query='mug', time_after=after, time_before=before)


def test_similarity_search_with_a_blank_context_is_a_query_error(hub):
    with pytest.raises(QueryError, match='nothing to compare'):
        hub.similarity_search(context='   ')


@pytest.mark.parametrize('text', ['{"a": ' + '9' * 5000 + '}', '[' * 100_000, '{"a": [}'])
def test_json_fields_that_do_not_parse_are_conversion_errors(text):
    with pytest.raises(conv.ConversionError):
        conv.json_object(text, 'action_params_json')


def test_a_stamp_in_sim_time_is_kept_as_the_wall_time_it_happened():
    """Records outlive a run, and sim time starts at 0 with every simulated run: an episode
    stamped 5 s before the node's sim clock is kept 5 s before the wall clock (recalled as
    'just now', not as 20,000 days ago)."""
    from builtin_interfaces.msg import Time
    from maxim_interfaces.msg import Episode
    from maxim_memory.enrich import _ago
    msg = Episode(episode_id='e1', perception='A red ball.', tool_name='track_target')
    msg.header.stamp = Time(sec=95, nanosec=0)
    wall = 1_795_000_000.0
    ep = conv.msg_to_episode(msg, wall, ros_now=100.0)
    assert ep.created_at == pytest.approx(wall - 5.0)
    assert _ago(ep.created_at, wall) == 'just now'
    assert conv.msg_to_episode(msg, wall).created_at == 95.0        # no clock: as stamped
    msg.header.stamp = Time()
    assert conv.msg_to_episode(msg, wall, ros_now=100.0).created_at == wall   # unstamped
