"""IDLE-2: the strict `[GOAL: action target amount]` parser and its constrained forms."""

import json

import jsonschema
import llama_cpp
import pytest

from maxim_core.idle.intent import (Intent, IntentError, OUTPUT_GBNF, OUTPUT_JSON_SCHEMA,
                                    output_gbnf, output_json_schema, parse_output,
                                    text_from_json_output)


def test_a_well_formed_tag_is_an_intent_and_the_rest_is_thought():
    p = parse_output('The door is still open. [GOAL: look_at door 1]')
    assert p.intent == Intent('look_at', 'door', 1)
    assert p.intent.tag == '[GOAL: look_at door 1]' and p.intent.goal == 'look_at door 1'
    assert p.thought == 'The door is still open.'


@pytest.mark.parametrize('text', [
    'Maybe I should gather some wood.',
    'I could look at the door, then scan the room and track the ball.',
    'GOAL: look_at door 1',
    'Next: look_at door 1',
])
def test_action_verbs_without_a_tag_are_thought(text):
    p = parse_output(text)
    assert p.intent is None and p.thought == text and p.tags_found == 0


@pytest.mark.parametrize('text', [
    '[goal: look_at door 1]',          # lower-case GOAL
    '[GOAL: look_at door]',            # no amount
    '[GOAL:look_at door 1]',           # no space after the colon
    '[GOAL: look at door 1]',          # four parts
    '[GOAL: Look_at door 1]',          # upper-case action
    '[GOAL: look_at door 0]',          # amount must be positive
    '[GOAL: look_at door 1.5]',
    '[GOAL: look_at door 1',           # unclosed
    '[GOAL:  look_at door 1]',         # two spaces
])
def test_malformed_tags_are_thought(text):
    p = parse_output(f'Something. {text}')
    assert p.intent is None and p.reason == 'malformed_tag' and p.rejected
    assert p.thought.startswith('Something.')


def test_two_tags_are_ambiguous_and_create_nothing():
    p = parse_output('[GOAL: look_at door 1] and [GOAL: scan room 2]')
    assert p.intent is None and p.reason == 'multiple_tags' and p.tags_found == 2


def test_lenient_mode_relaxes_spelling_only():
    p = parse_output('ok [goal:Look_At Door]', require_explicit_goal_tag=False)
    assert p.intent == Intent('look_at', 'door', 1)
    # Still no path from free text to a task.
    assert parse_output('Maybe I should scan the room.', False).intent is None


def test_intent_validates_and_round_trips():
    assert Intent.from_goal('scan room 3') == Intent('scan', 'room', 3)
    for bad in ('scan room', 'scan room x', 'Scan room 1', 'scan room 1 2'):
        with pytest.raises(IntentError):
            Intent.from_goal(bad)
    with pytest.raises(TypeError):
        parse_output(None)


def test_json_schema_is_valid_and_converts_to_the_tag_form():
    jsonschema.Draft202012Validator.check_schema(OUTPUT_JSON_SCHEMA)
    good = {'thought': 'A quiet room.', 'goal': {'action': 'scan', 'target': 'room',
                                                 'amount': 2}}
    jsonschema.validate(good, OUTPUT_JSON_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        bad_goal = {'action': 'Scan Room', 'target': 'r', 'amount': 1}
        jsonschema.validate({'thought': 'x', 'goal': bad_goal}, OUTPUT_JSON_SCHEMA)
    assert parse_output(text_from_json_output(json.dumps(good))).intent == \
        Intent('scan', 'room', 2)
    none = text_from_json_output(json.dumps({'thought': 'nothing [GOAL: a b 1]',
                                             'goal': None}))
    assert parse_output(none).intent is None          # no tag smuggled in the thought
    assert text_from_json_output('not json') is None
    # llama.cpp's converter accepts the schema (its GBNF is what constrains the model).
    gbnf = llama_cpp.llama_grammar.json_schema_to_gbnf(json.dumps(OUTPUT_JSON_SCHEMA))
    assert 'root ::=' in gbnf


def test_gbnf_names_the_same_form():
    assert OUTPUT_GBNF.startswith('root ::= thought (" " goal)?')
    assert '"[GOAL: " goal-action " " goal-target " " goal-amount "]"' in OUTPUT_GBNF


def test_allowed_actions_reject_echoed_placeholders():
    actions = ('look_at', 'scan')
    p = parse_output('[GOAL: action target 1]', allowed_actions=actions)
    assert p.intent is None and p.reason == 'unknown_action'
    assert parse_output('[GOAL: scan room 1]', allowed_actions=actions).intent.action == 'scan'
    gbnf = output_gbnf(actions)
    assert 'goal-action ::= "look_at" | "scan"' in gbnf and output_gbnf() == OUTPUT_GBNF
    schema = output_json_schema(actions)
    goal = schema['properties']['goal']['anyOf'][1]
    assert goal['properties']['action'] == {'type': 'string', 'enum': ['look_at', 'scan']}
    assert OUTPUT_JSON_SCHEMA['properties']['goal']['anyOf'][1]['properties']['action'] \
        .get('enum') is None                          # the shared schema is not mutated
    with pytest.raises(IntentError):
        output_gbnf(['Look At'])
