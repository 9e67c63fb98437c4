"""A Generate goal's numbers and schema, however bad, become a request with usable values or
a typed LLMError (never an exception the action server cannot map)."""

import math
from types import SimpleNamespace

import pytest

from maxim_core.conversions import goal_to_request
from maxim_core.llm.backend import LLMError

DEFAULTS = {'max_tokens': 64, 'temperature': 0.8, 'top_p': 0.95, 'top_k': 40, 'min_p': 0.05,
            'repeat_penalty': 1.1, 'timeout_s': 120.0}


def goal(**kw):
    fields = dict(messages=[], prompt='hi', max_tokens=0, temperature=-1.0, top_p=-1.0,
                  top_k=-1, min_p=-1.0, repeat_penalty=-1.0, seed=-1, stop=[], grammar='',
                  json_schema='', timeout_s=0.0, request_id='r', client='test')
    fields.update(kw)
    return SimpleNamespace(**fields)


def test_deeply_nested_json_schema_is_a_typed_error():
    with pytest.raises(LLMError, match='nested too deep'):
        goal_to_request(goal(json_schema='[' * 100_000), DEFAULTS, None)


@pytest.mark.parametrize('bad', [math.nan, math.inf])
def test_non_finite_numbers_take_the_node_defaults(bad):
    req = goal_to_request(goal(temperature=bad, top_p=bad, min_p=bad, repeat_penalty=bad,
                               timeout_s=bad), DEFAULTS, None)
    assert math.isfinite(req.timeout_s) and req.timeout_s == 120.0
    for key in ('temperature', 'top_p', 'min_p', 'repeat_penalty'):
        assert req.params[key] == DEFAULTS[key]


def test_continuations_to_avoid_reach_the_backend_and_blank_ones_do_not():
    req = goal_to_request(goal(avoid=[' put the ball down.', '  ', '']), DEFAULTS, None)
    assert req.params['avoid'] == [' put the ball down.']
    assert 'avoid' not in goal_to_request(goal(avoid=[]), DEFAULTS, None).params
    assert 'avoid' not in goal_to_request(goal(), DEFAULTS, None).params   # an older client
