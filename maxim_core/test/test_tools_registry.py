"""Tool base, registry, aliases, decorator, scene scope and the executor gate."""

import pytest

from maxim_common.errors import ERROR_INACTIVE_TOOL, ERROR_INVALID_ARGUMENTS
from maxim_core.llm.grammar import deliberation_grammar
from maxim_core.prompt.tools import ToolSpecError
from maxim_core.tools import (build_tool_registry, FunctionTool, register_tool, tool, Tool,
                              ToolExecutor, ToolInputError, ToolRegistry, ToolScope,
                              UnknownToolError)
from maxim_core.tools.base import ToolOutcome

# These tools run in this process (they hold no path and have no side effect); what a
# registered tool gets by default, the kernel sandbox, is tested in test/test_tool_registered.py.
PURE = 'returns its arguments or a canned answer: no path, no side effect'


class Echo(Tool):
    name = 'echo'
    description = 'Echo the text.'
    input_schema = {'text': {'type': 'string'}, 'times': {'type': 'integer', 'default': 1}}

    def execute(self, text, times=1):
        return {'echo': text * times}


def test_flat_and_json_schema_styles_validate_with_defaults():
    flat = Echo()
    assert flat.schema['required'] == ['text']
    assert flat.validate({'text': 'a'}) == {'text': 'a', 'times': 1}
    full = FunctionTool(lambda n: n + 1, name='inc', input_schema={
        'type': 'object', 'properties': {'n': {'type': 'integer'}}, 'required': ['n']})
    assert full.run({'n': 2}).output == 3
    with pytest.raises(ToolInputError, match='times'):
        flat.validate({'text': 'a', 'times': 'x'})
    bad = flat.run({'times': 2})
    assert not bad.success and bad.error_code == ERROR_INVALID_ARGUMENTS
    assert "'text' is a required property" in bad.error_msg
    assert not flat.run('not a dict').success


def test_invalid_schema_and_name_are_typed_errors():
    with pytest.raises(ToolSpecError):
        FunctionTool(lambda: 1, name='x', input_schema={'type': 'object',
                                                        'properties': {'a': {'type': 'nope'}}})
    with pytest.raises(ToolSpecError):
        FunctionTool(lambda: 1, name='  ')


def test_execute_errors_become_outcomes():
    t = FunctionTool(lambda: 1 / 0 if False else open('/nonexistent/x'), name='boom')
    out = t.run({})
    assert not out.success and 'FileNotFoundError' in out.error_msg and out.tool == 'boom'


def test_decorator_and_register_tool():
    reg = ToolRegistry()

    @tool(registry=reg, input_schema={'city': 'string'}, in_process=PURE,
          table_entry={'description': 'Weather for a city', 'example': '{"city": "Paris"}'})
    def weather(city):
        """Look up weather."""
        return f'sunny in {city}'

    assert weather('Oslo') == 'sunny in Oslo'             # still a plain function
    assert reg.get('weather').run({'city': 'Paris'}).output == 'sunny in Paris'
    assert 'Weather for a city' in reg.describe('weather')
    register_tool(lambda x: x, name='ident', input_schema={'x': 'number'}, registry=reg,
                  in_process=PURE)
    assert reg.description('ident').description == '(no description)'
    assert reg.description('ident').params == {'x': 'number'}   # the fallback of seed 003
    with pytest.raises(ToolSpecError, match='already registered'):
        register_tool(lambda x: x, name='ident', registry=reg, in_process=PURE)


def test_builtin_descriptions_cover_every_builtin_tool(tmp_path):
    reg = build_tool_registry('active', tmp_path)
    assert len(reg) == 28
    for name in reg.names():
        d = reg.description(name)
        assert d.description != '(no description)' and d.example, name
    assert 'example:' in reg.describe('move')


def test_aliases_resolve_and_two_misses_list_tools(tmp_path):
    reg = build_tool_registry('passive', tmp_path)
    assert reg.resolve('remember').name == 'memory_recall'
    assert reg.resolve('Look').name == 'scene_summary'         # no 'examine' on the robot
    reg.register(FunctionTool(lambda target: target, name='examine',
                              input_schema={'target': 'string'}, in_process=PURE))
    assert reg.resolve('look').name == 'examine'               # first registered target wins
    assert reg.resolve('Memory-Recall').name == 'memory_recall'
    with pytest.raises(UnknownToolError) as first:
        reg.resolve('fly_away')
    assert 'Available tools' not in str(first.value)
    with pytest.raises(UnknownToolError) as second:
        reg.resolve('teleport')
    assert 'Available tools' in str(second.value) and 'move' in str(second.value)
    reg.resolve('move')
    with pytest.raises(UnknownToolError) as third:
        reg.resolve('jump')
    assert 'Available tools' not in str(third.value)          # the streak was broken
    assert isinstance(third.value, KeyError)                   # the agent loop's contract


def _entity(name):
    return FunctionTool(lambda: name, name=name, description=f'{name} tool', in_process=PURE)


def test_scene_scope_cap_lru_and_executor_gate(tmp_path):
    reg = build_tool_registry('passive', tmp_path)
    scope = ToolScope(reg, cap=3)
    scope.register_scene_tools([_entity('strike_anvil'), _entity('pump_bellows')], 'forge')
    ex = ToolExecutor(reg, scope)
    assert ex.execute('strike_anvil', {}).output == 'strike_anvil'
    evicted = scope.register_scene_tools([_entity('open_chest'), _entity('read_map')],
                                         'forge')
    assert evicted == ['pump_bellows']           # least recently used goes first
    assert scope.is_active('strike_anvil') and not scope.is_active('pump_bellows')
    out = ex.execute('pump_bellows', {})
    assert not out.success and out.error_code == ERROR_INACTIVE_TOOL
    assert 'Active tools' in out.error_msg and 'strike_anvil' in out.error_msg
    scope.register_scene_tools([_entity('row_boat')], 'river', activate=False)
    scope.enter_scene('river')
    assert scope.is_active('row_boat') and not scope.is_active('strike_anvil')
    assert 'move' in scope.active_names()          # core tools are always active
    schemas = scope.active_schemas()
    assert 'row_boat' in schemas and 'strike_anvil' not in schemas
    assert schemas['move']['additionalProperties'] is False
    grammar = deliberation_grammar(schemas)          # the grammar follows the active set
    assert 'row_boat' in grammar and 'strike_anvil' not in grammar
    assert ex.resolve('remember') == ('memory_recall', True)
    assert ex.resolve('bash') == ('bash', False)


def test_scope_rejects_bad_cap_and_unknown_scene_tool(tmp_path):
    reg = ToolRegistry()
    with pytest.raises(ValueError):
        ToolScope(reg, cap=0)
    with pytest.raises(UnknownToolError):
        ToolScope(reg).activate(['nothing'])


def test_outcome_text_is_bounded():
    out = ToolOutcome.ok('x' * 10_000)
    assert len(out.text(100)) < 150 and 'more characters cut' in out.text(100)
