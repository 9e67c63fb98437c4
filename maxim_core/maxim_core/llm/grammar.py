"""A lean GBNF grammar for the deliberation answer, generated from the tools in scope.

The deliberation answer is `{"reasoning": str, "ready_to_act": bool, "action": null |
{"tool": <active tool>, "args": {...}}}`. llama.cpp checks every candidate token against every
live parse stack of the grammar, so the cost of constrained decoding grows with the number of
alternations the grammar keeps open. The generic JSON-schema conversion keeps many open
(optional whitespace everywhere, any key order, unbounded strings, escapes); this generator
fixes the key order and the separators, bounds string lengths and allows no free whitespace,
so at most a couple of stacks are alive at any point. `deliberation_schema` is the equivalent
JSON schema, used to validate answers and for the generic path.
"""

import json
import re

REASONING_MAX = 600      # characters of the reasoning string
STRING_ARG_MAX = 200     # default bound of a string argument without maxLength
_NUMBER_DIGITS = 6       # integer part digits of a number argument
_FRACTION_DIGITS = 4
_INTEGER_DIGITS = 9
_SIMPLE = ('string', 'number', 'integer', 'boolean')
_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$')


class GrammarError(ValueError):
    """A tool argument schema this generator cannot express."""


def literal(text: str) -> str:
    """`text` as a GBNF string literal (quotes, backslashes and control characters escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append('\\' + ch)
        elif ch == '\n':
            out.append('\\n')
        elif ord(ch) < 0x20 or ord(ch) == 0x7f:
            out.append(f'\\x{ord(ch):02X}')
        else:
            out.append(ch)
    return '"' + ''.join(out) + '"'


def _json_literal(value) -> str:
    return literal(json.dumps(value))


def _rule_name(text: str) -> str:
    return re.sub(r'[^a-z0-9]+', '-', text.lower()).strip('-') or 'x'


def _check_tools(tools: dict[str, dict]) -> None:
    if not isinstance(tools, dict):
        raise GrammarError(f'tools must be a dict of name -> args schema, got {type(tools)}')
    for name, schema in tools.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise GrammarError(f'tool name {name!r} is not a plain identifier')
        if not isinstance(schema, dict):
            raise GrammarError(f'tool {name!r}: the args schema must be a dict')
        if schema.get('type', 'object') != 'object':
            raise GrammarError(f'tool {name!r}: the args schema must be an object')
        props = schema.get('properties', {}) or {}
        for key in schema.get('required', []) or []:
            if key not in props:
                raise GrammarError(f'tool {name!r}: required {key!r} is not a property')
        for key, prop in props.items():
            if not isinstance(prop, dict):
                raise GrammarError(f'tool {name!r}: property {key!r} schema must be a dict')
            if 'enum' in prop:
                if not prop['enum'] or not all(
                        isinstance(v, (str, int, float, bool)) for v in prop['enum']):
                    raise GrammarError(f'tool {name!r}: enum of {key!r} must hold scalars')
            elif prop.get('type') not in _SIMPLE:
                raise GrammarError(
                    f'tool {name!r}: property {key!r} has type {prop.get("type")!r}; '
                    f'only {", ".join(_SIMPLE)} and enum are supported')


def _ordered(schema: dict) -> tuple[list[str], list[str]]:
    """Required properties first (schema order), then the optional ones."""
    props = list((schema.get('properties') or {}).keys())
    required = [k for k in props if k in set(schema.get('required') or [])]
    return required, [k for k in props if k not in required]


def _value_rule(prop: dict) -> str:
    if 'enum' in prop:
        return ' | '.join(_json_literal(v) for v in prop['enum'])
    kind = prop['type']
    if kind == 'string':
        bound = max(0, min(int(prop.get('maxLength', STRING_ARG_MAX)), STRING_ARG_MAX))
        low = max(0, min(int(prop.get('minLength', 0)), bound))
        return f'"\\"" chr{{{low},{bound}}} "\\""'
    if kind == 'boolean':
        return '"true" | "false"'
    if kind == 'integer':
        return f'"-"? ("0" | [1-9] [0-9]{{0,{_INTEGER_DIGITS - 1}}})'
    return (f'"-"? ("0" | [1-9] [0-9]{{0,{_NUMBER_DIGITS - 1}}}) '
            f'("." [0-9]{{1,{_FRACTION_DIGITS}}})?')


def deliberation_grammar(tools: dict[str, dict], reasoning_max: int = REASONING_MAX) -> str:
    """GBNF for the deliberation answer with `action` limited to `tools` (name -> args schema).

    Strings hold no quotes, backslashes or control characters (so no escapes are needed),
    the reasoning is at most `reasoning_max` characters, number arguments are plain decimals.
    With no tools the action can only be null.
    """
    _check_tools(tools)
    if reasoning_max < 1:
        raise GrammarError(f'reasoning_max must be >= 1, got {reasoning_max}')
    rules = [
        'root ::= "{\\"reasoning\\": \\"" chr{0,%d} "\\", \\"ready_to_act\\": " '
        '("true" | "false") ", \\"action\\": " action "}"' % reasoning_max,
        'chr ::= [^"\\\\\\x00-\\x1F\\x7F]',
    ]
    if not tools:
        rules.insert(1, 'action ::= "null"')
        return '\n'.join(rules) + '\n'
    names = {}
    alternatives = []
    for tool, schema in tools.items():
        rule = 't-' + _rule_name(tool)
        while rule in names.values():
            rule += '-x'
        names[tool] = rule
        alternatives.append(rule)
        required, optional = _ordered(schema)
        props = schema.get('properties') or {}
        head = literal(json.dumps(tool) + ', "args": {')
        values = {}
        for key in required + optional:
            vrule = f'{rule}-{_rule_name(key)}'
            while vrule in values.values():
                vrule += '-x'
            values[key] = vrule
        body = []
        for i, key in enumerate(required):
            sep = '' if i == 0 else ', '
            body.append(f'{literal(sep + json.dumps(key) + ": ")} {values[key]}')
        tail = []
        for key in optional:
            tail.append(f'({literal(", " + json.dumps(key) + ": ")} {values[key]})?')
        if required:
            args = ' '.join(body + tail)
            rules.append(f'{rule} ::= {head} {args} "}}"')
        elif optional:
            first = optional[0]
            inner = ' '.join([f'{literal(json.dumps(first) + ": ")} {values[first]}']
                             + tail[1:])
            rules.append(f'{rule} ::= {head} ({inner})? "}}"')
        else:
            rules.append(f'{rule} ::= {head} "}}"')
        for key in required + optional:
            rules.append(f'{values[key]} ::= {_value_rule(props[key])}')
    rules.insert(1, 'action ::= "null" | "{\\"tool\\": " (' + ' | '.join(alternatives)
                 + ') "}"')
    return '\n'.join(rules) + '\n'


def _arg_schema(prop: dict) -> dict:
    if 'enum' in prop:
        return {'enum': list(prop['enum'])}
    out = {'type': prop['type']}
    if prop['type'] == 'string':
        out['maxLength'] = max(0, min(int(prop.get('maxLength', STRING_ARG_MAX)),
                                      STRING_ARG_MAX))
        if prop.get('minLength'):
            out['minLength'] = int(prop['minLength'])
    return out


def deliberation_schema(tools: dict[str, dict], reasoning_max: int = REASONING_MAX) -> dict:
    """The JSON schema equivalent to `deliberation_grammar(tools)` (modulo key order)."""
    _check_tools(tools)
    actions: list[dict] = [{'type': 'null'}]
    for tool, schema in tools.items():
        props = schema.get('properties') or {}
        actions.append({
            'type': 'object',
            'properties': {
                'tool': {'const': tool},
                'args': {
                    'type': 'object',
                    'properties': {k: _arg_schema(v) for k, v in props.items()},
                    'required': list(schema.get('required') or []),
                    'additionalProperties': False,
                },
            },
            'required': ['tool', 'args'],
            'additionalProperties': False,
        })
    return {
        'type': 'object',
        'properties': {
            'reasoning': {'type': 'string', 'maxLength': reasoning_max},
            'ready_to_act': {'type': 'boolean'},
            'action': {'anyOf': actions},
        },
        'required': ['reasoning', 'ready_to_act', 'action'],
        'additionalProperties': False,
    }
