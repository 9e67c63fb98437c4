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
