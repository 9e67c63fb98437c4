"""Tool descriptions: the table first, the tool's own description and schema as fallback."""

from dataclasses import dataclass

import pytest

from maxim_core.prompt.tools import (as_tool_spec, describe_tool, normalize_schema,
                                     tool_manifest, tool_manifest_section, ToolDescription,
                                     ToolSpec, ToolSpecError)
from maxim_core.prompt.sections import Priority

TABLE = {
    'look_at': {'description': 'Turn your head so the camera looks at a direction.',
                'params': {'pan': 'radians, left positive', 'tilt': 'radians, up positive'},
                'example': 'look_at(pan=0.3, tilt=0.0)', 'followup_type': 'observe'},
}


@dataclass
class RegisteredTool:           # what a tool registry object looks like
    name: str
    description: str
    input_schema: dict


def test_table_entry_is_the_primary_source():
    tool = ToolSpec('look_at', 'Move.', {'pan': 'number', 'tilt': 'number'})
    text = describe_tool(tool, TABLE)
    assert 'Turn your head so the camera looks at a direction.' in text
    assert 'pan: radians, left positive' in text
    assert 'example: look_at(pan=0.3, tilt=0.0)' in text and 'then: observe' in text
    assert 'Move.' not in text
    entry = ToolDescription('Say it.', params='text: what to say')
    assert 'params: text: what to say' in describe_tool(ToolSpec('speak'), {'speak': entry})


def test_fallback_uses_the_tools_description_and_schema():
    tool = RegisteredTool('track_target', 'Follow a target.',
                          {'type': 'object',
                           'properties': {'target': {'type': 'string',
                                                     'description': 'a label'},
                                          'speed': {'type': 'number'}},
                           'required': ['target']})
    text = describe_tool(tool, TABLE)
    assert text.startswith('- track_target: Follow a target.')
    assert 'target (string): a label' in text and 'speed (number, optional)' in text
    assert '(no description)' in describe_tool({'name': 'ping'})


def test_both_schema_styles_normalise_to_the_same_json_schema():
    flat = {'pan': {'type': 'number', 'description': 'rad'}, 'tilt': 'number',
            'speed': {'type': 'number', 'default': 1.0}, 'note': {'type': 'string',
                                                                  'required': False}}
    full = {'type': 'object',
            'properties': {'pan': {'type': 'number', 'description': 'rad'},
                           'tilt': {'type': 'number'},
                           'speed': {'type': 'number', 'default': 1.0},
                           'note': {'type': 'string'}},
            'required': ['pan', 'tilt']}
    assert normalize_schema(flat) == normalize_schema(full) == full
    strict = normalize_schema(flat, strict=True)
    assert strict['additionalProperties'] is False
    assert normalize_schema({}) == {'type': 'object', 'properties': {}}
    assert normalize_schema({'properties': {}}) == {'type': 'object', 'properties': {}}


@pytest.mark.parametrize('schema', [
    {'type': 'array'}, {'x': 'complex'}, {'x': 3}, [1, 2],
    {'type': 'object', 'properties': {}, 'required': ['ghost']},
    {'type': 'object', 'properties': []},
])
def test_bad_schemas_are_typed_errors(schema):
    with pytest.raises(ToolSpecError):
        normalize_schema(schema)


def test_manifest_is_sorted_stable_and_rejects_duplicates():
    tools = [ToolSpec('speak', 'Say.', {'text': 'string'}),
             {'name': 'look_at', 'description': 'x', 'input_schema': {'pan': 'number'}}]
    a = tool_manifest(tools, TABLE)
    assert a == tool_manifest(list(reversed(tools)), TABLE)
    assert a.index('- look_at') < a.index('- speak')
    section = tool_manifest_section(tools, TABLE)
    assert section.stable and section.priority == Priority.IMPORTANT
    assert 'no tools' in tool_manifest([])
    with pytest.raises(ToolSpecError):
        tool_manifest([ToolSpec('a'), ToolSpec('a')])
    with pytest.raises(ToolSpecError):
        as_tool_spec({'description': 'nameless'})
    with pytest.raises(ToolSpecError):
        describe_tool(ToolSpec('look_at'), {'look_at': {'params': {}}})
