"""The model's answer when it decides by writing JSON: the schema of the active tools it is
written under, and its parse.

Pure Python; no ROS.
"""

import json
from typing import Any, Callable, Mapping, Sequence

import jsonschema

from maxim_core.prompt.tools import as_tool_spec, normalize_schema, ToolSpecError


def tool_arg_schemas(tools: Sequence[Any]) -> dict[str, dict]:
    """name -> closed JSON-schema of the arguments, for the tools given (the active set)."""
    out: dict[str, dict] = {}
    for tool in tools:
        spec = as_tool_spec(tool)
        if spec.name in out:
            raise ToolSpecError(f'duplicate active tool {spec.name!r}')
        out[spec.name] = normalize_schema(spec.input_schema, strict=True)
    return out


def decision_schema(arg_schemas: Mapping[str, dict]) -> dict:
    """The answer schema: `action` is null or one active tool with its own arguments."""
    actions: list[dict] = [{'type': 'null'}]
    for name, args in arg_schemas.items():
        actions.append({'type': 'object',
                        'properties': {'tool': {'const': name}, 'args': args},
                        'required': ['tool', 'args'], 'additionalProperties': False})
    return {'type': 'object',
            'properties': {'reasoning': {'type': 'string'},
                           'ready_to_act': {'type': 'boolean'},
                           'action': {'anyOf': actions}},
            'required': ['reasoning', 'ready_to_act', 'action'],
            'additionalProperties': False}


def _clean_strings(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (JSON may spell one, '\\ud800') made
    U+FFFD: such a string cannot be encoded as UTF-8, so no message could carry it. Walks
    without recursion (the value may nest as deep as the JSON parser allows)."""
    def clean(s: str) -> str:
        try:
            s.encode('utf-8')
        except UnicodeEncodeError:
            return s.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')
        return s

    if isinstance(value, str):
        return clean(value)
    root = [value]
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, item in list(items):
            if isinstance(item, str):
                node[key] = clean(item)
            elif isinstance(item, (dict, list)):
                stack.append(item)
            if isinstance(node, dict) and isinstance(key, str) and clean(key) != key:
                node[clean(key)] = node.pop(key)
    return root[0]


def parse_answer(text: str, schema: dict, active: Sequence[str],
                 lookup: Callable[[str], str | None] | None = None) -> dict:
    """The answer as a dict, or ValueError saying why it does not fit the schema.

    No input makes it raise anything else: JSON nested past the parser's depth, an integer
    too long to convert, a non-string are ValueErrors like any unparsable answer, and lone
    surrogates in the answer's strings come back as U+FFFD.

    With `lookup` (a name -> the registered tool it means, or None), an action naming an
    active tool by another name (an alias, other case) is checked as that tool, and one naming
    no tool at all is checked without its action; both keep the name the model wrote, so the
    agent loop resolves it, counts the miss and tells the model which tools exist. A name
    that means a registered tool outside the active set is still refused.
    """
    if not isinstance(text, str):
        raise ValueError(f'not text but {type(text).__name__}')
    try:
        answer = _clean_strings(json.loads(text))
    except json.JSONDecodeError as exc:
        raise ValueError(f'not JSON ({exc.msg} at {exc.pos}): {text[:80]!r}') from exc
    except RecursionError:
        raise ValueError(f'JSON nested too deep: {text[:80]!r}') from None
    except ValueError as exc:     # e.g. an integer past the 4300-digit conversion limit
        raise ValueError(f'not JSON ({str(exc)[:80]}): {text[:80]!r}') from None
    checked = answer
    action = answer.get('action') if isinstance(answer, dict) else None
    named = action.get('tool') if isinstance(action, dict) else None
    if lookup is not None and isinstance(named, str) and named not in active:
        meant = lookup(named)
        if meant is None and isinstance(action.get('args'), dict):
            checked = dict(answer, action=None)
        elif meant in active:
            checked = dict(answer, action=dict(action, tool=meant))
    try:
        jsonschema.validate(checked, schema)
    except jsonschema.ValidationError as exc:
        raise ValueError(f'does not fit the schema: {exc.message[:160]}') from exc
    except RecursionError:
        raise ValueError('does not fit the schema: nested too deep to check') from None
    action = checked['action']
    if action is not None and action['tool'] not in active:
        raise ValueError(f'names inactive tool {action["tool"]!r}')
    return answer
