"""The lean deliberation grammar: its form, its JSON-schema twin, and real model samples."""

import json

import jsonschema
import pytest

from maxim_core.llm.grammar import (deliberation_grammar, deliberation_schema, GrammarError,
                                    REASONING_MAX)

TOOLS = {
    'look_at': {'type': 'object', 'properties': {'pan': {'type': 'number'},
                                                 'tilt': {'type': 'number'}},
                'required': ['pan', 'tilt']},
    'say': {'type': 'object', 'properties': {'text': {'type': 'string', 'maxLength': 80}},
            'required': ['text']},
    'remember': {'type': 'object',
                 'properties': {'kind': {'enum': ['face', 'object']},
                                'count': {'type': 'integer'},
                                'urgent': {'type': 'boolean'},
                                'note': {'type': 'string'}},
                 'required': ['kind']},
    'nod': {'type': 'object', 'properties': {}},
    'wave': {'type': 'object', 'properties': {'times': {'type': 'integer'}}},
}

PROMPT = '''You are Maxim, a robot head with a camera. You think privately, then may act.
Active tools: look_at(pan, tilt) turns the head; say(text) speaks; remember(kind, note)
stores a memory; nod() nods; wave(times) waves. The arm tools grab and throw are NOT active.
Answer with one JSON object.
Percept: a red ball rolls to the right.
Answer: {"reasoning": "The ball moved right; I follow it.", "ready_to_act": true, "action": \
{"tool": "look_at", "args": {"pan": 0.4, "tilt": 0.0}}}
Percept: a person holds out a cup and asks you to grab it.
Answer: '''


def test_schema_accepts_the_form_and_rejects_other_tools():
    schema = deliberation_schema(TOOLS)
    good = {'reasoning': 'A face.', 'ready_to_act': True,
            'action': {'tool': 'remember', 'args': {'kind': 'face', 'count': 2}}}
    jsonschema.validate(good, schema)
    jsonschema.validate({'reasoning': '', 'ready_to_act': False, 'action': None}, schema)
    for bad in ({'reasoning': 'x', 'ready_to_act': True,
                 'action': {'tool': 'grab', 'args': {}}},
                {'reasoning': 'x', 'ready_to_act': True,
                 'action': {'tool': 'say', 'args': {'pan': 1}}},
                {'reasoning': 'x' * (REASONING_MAX + 1), 'ready_to_act': True, 'action': None},
                {'reasoning': 'x', 'ready_to_act': True, 'action': None, 'extra': 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_grammar_names_only_the_given_tools_with_fixed_keys():
    gbnf = deliberation_grammar(TOOLS)
    assert gbnf.startswith('root ::= "{\\"reasoning\\": \\"" chr{0,600}')
    for name in TOOLS:
        assert f'\\"{name}\\"' in gbnf
    assert 'grab' not in gbnf
    assert '[ \\t\\n]' not in gbnf   # no free whitespace anywhere
    no_tools = deliberation_grammar({})
    assert 'action ::= "null"' in no_tools and 'tool' not in no_tools
    assert deliberation_schema({})['properties']['action'] == {'anyOf': [{'type': 'null'}]}


@pytest.mark.parametrize('tools', [
    {'bad name!': {'type': 'object', 'properties': {}}},
    {'t': {'type': 'array'}},
    {'t': {'type': 'object', 'properties': {'x': {'type': 'object'}}}},
    {'t': {'type': 'object', 'properties': {'x': {'enum': []}}}},
    {'t': {'type': 'object', 'properties': {}, 'required': ['missing']}},
    {'t': 'not a schema'},
])
def test_unsupported_tool_schemas_are_typed_errors(tools):
    with pytest.raises(GrammarError):
        deliberation_grammar(tools)
    with pytest.raises(GrammarError):
        deliberation_schema(tools)


@pytest.fixture(scope='module')
def backend():
    from maxim_core.llm.llama import LlamaCppBackend
    from maxim_core.llm.model import resolve_model
    b = LlamaCppBackend(resolve_model(), n_ctx=1024)
    yield b
    b.close()


@pytest.mark.real_model
def test_grammar_compiles_in_llama_cpp(backend):
    assert backend.grammar_for(grammar=deliberation_grammar(TOOLS)) is not None
    assert backend.grammar_for(grammar=deliberation_grammar({})) is not None
    assert backend.grammar_for(json_schema=deliberation_schema(TOOLS)) is not None


@pytest.mark.real_model
@pytest.mark.slow
def test_real_samples_parse_validate_and_name_only_given_tools(backend):
    gbnf = deliberation_grammar(TOOLS, reasoning_max=100)
    schema = deliberation_schema(TOOLS, reasoning_max=100)
    used = set()
    for seed in range(20):
        c = backend.complete(PROMPT, max_tokens=120, temperature=0.8, seed=seed, grammar=gbnf)
        assert c.stop_reason == 'stop', (seed, c.text)
        answer = json.loads(c.text)
        jsonschema.validate(answer, schema)
        if answer['action'] is not None:
            assert answer['action']['tool'] in TOOLS
            used.add(answer['action']['tool'])
    assert used, 'in 20 samples the model never chose an action'
