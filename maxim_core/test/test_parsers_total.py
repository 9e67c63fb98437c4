"""The model-output parsers are total: any text gives a typed outcome, never an exception
(deep nesting, lone surrogates, control characters, huge input), and what they return can be
carried by a ROS message (valid UTF-8)."""

import json

from hypothesis import given, HealthCheck, settings, strategies as st
import pytest

from maxim_core.deliberation.answer import decision_schema, parse_answer, tool_arg_schemas
from maxim_core.deliberation.cycles import DeliberationConfig, Deliberator
from maxim_core.deliberation.thoughts import OUT_UNPARSABLE
from maxim_core.idle.intent import Intent, parse_output, text_from_json_output
from maxim_core.llm.backend import ScriptedBackend
from maxim_core.prompt.tools import ToolSpec

LOOK = ToolSpec('look_at', 'Turn the head.', {'pan': 'number', 'tilt': 'number'})
SPEAK = ToolSpec('speak', 'Say something.', {'text': 'string'})
SCHEMA = decision_schema(tool_arg_schemas([LOOK, SPEAK]))
ACTIVE = ['look_at', 'speak']
PROPERTY = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

# Text a model could emit, and text no model should: every code point incl. lone surrogates
# and control characters, plus the JSON-ish pieces that steer the parsers somewhere deep.
CHARS = st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr),
                  st.integers(0, 0x1F).map(chr))
ANY_TEXT = st.text(alphabet=CHARS, max_size=200)
PIECES = st.sampled_from(['{', '}', '[', ']', '"', ':', ',', '\\ud800', '\\u0000', '1e999',
                          'null', 'true', '"reasoning"', '"action"', '"tool"', '"args"',
                          '[GOAL: ', '[goal:', 'look_at', ' ', '\x00', '\u017f', '\u212a',
                          '9' * 5000])
JSONISH = st.lists(PIECES, max_size=60).map(''.join)


def _encodable(value) -> bool:
    json.dumps(value, ensure_ascii=False).encode('utf-8')   # raises on a lone surrogate
    return True


def _parse(text):
    try:
        return parse_answer(text, SCHEMA, ACTIVE, {'say': 'speak'}.get)
    except ValueError as exc:
        str(exc).encode('utf-8', 'backslashreplace')
        return exc


@PROPERTY
@given(st.one_of(ANY_TEXT, JSONISH))
def test_parse_answer_is_total(text):
    out = _parse(text)
    if not isinstance(out, ValueError):
        assert _encodable(out)


@pytest.mark.parametrize('text', [
    '[' * 100_000 + ']' * 100_000,
    '{"reasoning": ' + '[' * 5000 + ']' * 5000 + ', "ready_to_act": true, "action": null}',
    '{"a":' * 3000 + '1' + '}' * 3000,
    '{"reasoning": "x", "ready_to_act": true, "action": {"tool": "speak", "args": {"text": '
    + '[' * 990 + ']' * 990 + '}}}',
    '9' * 10_000,
    '{"reasoning": "' + 'x' * 2_000_000 + '", "ready_to_act": false, "action": null}',
    '{"reasoning": "a\x01b", "ready_to_act": false, "action": null}',
])
def test_parse_answer_refuses_deep_huge_and_raw_control_input_with_a_value_error(text):
    out = _parse(text)
    assert isinstance(out, (ValueError, dict))


def test_a_lone_surrogate_in_the_reasoning_becomes_a_replacement_character():
    text = '{"reasoning": "I see \\ud800 here", "ready_to_act": true, "action": ' \
           '{"tool": "speak", "args": {"text": "hi \\udfff"}}}'
    answer = parse_answer(text, SCHEMA, ACTIVE)
    assert answer['reasoning'] == 'I see \ufffd here'
    assert answer['action']['args']['text'] == 'hi \ufffd'
    assert _encodable(answer)


def test_a_deeply_nested_answer_is_an_unparsable_outcome_not_a_crash():
    script = ['{"reasoning": ' + '[' * 50_000 + ']' * 50_000 + '}',
              '{"reasoning": "\\ud83d", "ready_to_act": true, "action": null}']
    backend = ScriptedBackend(script)
    d = Deliberator(backend, config=DeliberationConfig(max_tokens=64, retries=0))
    res = d.deliberate('A ball rolls by.', [LOOK, SPEAK])
    assert res.status == OUT_UNPARSABLE and 'nested too deep' in res.status_msg
    res = d.deliberate('A ball rolls by.', [LOOK, SPEAK])
    assert res.thoughts and all(_encodable(t.text) for t in res.thoughts)


@PROPERTY
@given(st.one_of(ANY_TEXT, JSONISH), st.booleans())
def test_parse_output_is_total_and_its_thought_is_utf8(text, strict):
    p = parse_output(text, require_explicit_goal_tag=strict, allowed_actions=())
    p.thought.encode('utf-8')
    if p.intent is not None:
        assert p.intent.goal.isascii()


@PROPERTY
@given(st.one_of(ANY_TEXT, JSONISH))
def test_text_from_json_output_is_total(text):
    out = text_from_json_output(text)
    if out is not None:
        out.encode('utf-8')
        parse_output(out, require_explicit_goal_tag=False)


@pytest.mark.parametrize('text', [
    '[' * 100_000,
    '{"thought": "x", "goal": ' + '[' * 5000 + ']' * 5000 + '}',
    '{"thought": "x", "goal": {"action": "look", "target": "door", "amount": '
    + '9' * 5000 + '}}',
    '{"thought": "\\ud800", "goal": {"action": ["x"], "target": {}, "amount": true}}',
])
def test_text_from_json_output_never_raises(text):
    out = text_from_json_output(text)
    if out is not None:
        out.encode('utf-8')
        assert parse_output(out, require_explicit_goal_tag=False).intent is None


@pytest.mark.parametrize('tag', ['[goal: \u017ftop ball 1]',      # long s: not an ASCII s
                                 '[goal: look \u212aitchen 1]',   # Kelvin sign: not a k
                                 '[GOAL: look_at d\u0131or 1]'])  # dotless i
def test_lenient_goal_tags_are_ascii_only(tag):
    for strict in (True, False):
        p = parse_output(f'Something. {tag}', require_explicit_goal_tag=strict)
        assert p.intent is None and p.reason == 'malformed_tag'


def test_lenient_tags_still_accept_any_ascii_case():
    p = parse_output('ok [GoAl: LOOK_AT Kitchen 2]', require_explicit_goal_tag=False)
    assert p.intent == Intent('look_at', 'kitchen', 2)
