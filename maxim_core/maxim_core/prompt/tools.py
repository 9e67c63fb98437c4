"""Tool descriptions for the prompt, and the argument schemas the decoder enforces.

Seed 003: a description table (TOOL_DESCRIPTIONS: description, params, example,
followup_type) is the primary source, because a tool's own one-line description is often too
terse for the model to know when to use it; the tool's description and input schema are the
fallback. Input schemas come in two styles and both are accepted:

- JSON Schema: ``{"type": "object", "properties": {...}, "required": [...]}``;
- flat: ``{"pan": {"type": "number", "description": "..."}, "note": "string"}`` where every
  parameter is required unless it says ``"required": false``/``"optional": true`` or has a
  ``default``.
"""

from dataclasses import dataclass, field
import json
from typing import Any, Mapping, Sequence

from maxim_core.prompt.sections import Priority, Section

JSON_TYPES = ('string', 'number', 'integer', 'boolean', 'object', 'array', 'null')


class ToolSpecError(ValueError):
    """A tool or its input schema cannot be described."""


@dataclass(frozen=True)
class ToolSpec:
    """What the prompt and the decoder need to know of a tool."""

    name: str
    description: str = ''
    input_schema: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ToolDescription:
    """One TOOL_DESCRIPTIONS entry."""

    description: str
    params: Any = None          # {name: text} or a free text
    example: str = ''
    followup_type: str = ''


def as_tool_spec(tool: Any) -> ToolSpec:
    """A ToolSpec from a ToolSpec, a mapping or any object with name/description/input_schema."""
    if isinstance(tool, ToolSpec):
        return tool
    if isinstance(tool, Mapping):
        name = tool.get('name')
        description = tool.get('description', '')
        schema = tool.get('input_schema', tool.get('parameters', {}))
    else:
        name = getattr(tool, 'name', None)
        description = getattr(tool, 'description', '')
        schema = getattr(tool, 'input_schema', {})
    if not isinstance(name, str) or not name:
        raise ToolSpecError(f'a tool needs a non-empty name: {tool!r}')
    return ToolSpec(name, str(description or ''), dict(schema or {}))


def as_tool_description(entry: Any) -> ToolDescription:
    if isinstance(entry, ToolDescription):
        return entry
    if isinstance(entry, Mapping):
        if not entry.get('description'):
            raise ToolSpecError(f'a description-table entry needs a description: {entry!r}')
        return ToolDescription(str(entry['description']), entry.get('params'),
                               str(entry.get('example') or ''),
                               str(entry.get('followup_type') or ''))
    raise ToolSpecError(f'a description-table entry must be a mapping, not {entry!r}')


def normalize_schema(schema: Mapping | None, *, strict: bool = False) -> dict:
    """Either schema style -> a JSON Schema object.

    `strict` closes the object (additionalProperties false unless it says otherwise): the
    decoder then can only produce the declared arguments, and the grammar stays small.
    """
    if schema is None:
        schema = {}
    if not isinstance(schema, Mapping):
        raise ToolSpecError(f'an input schema must be a mapping, not {type(schema).__name__}')
    if schema.get('type') == 'object' or 'properties' in schema:
        out = json.loads(json.dumps(schema))
        out['type'] = 'object'
        out.setdefault('properties', {})
        if not isinstance(out['properties'], dict):
            raise ToolSpecError('input schema "properties" must be an object')
        for name in out.get('required', []):
            if name not in out['properties']:
                raise ToolSpecError(f'required parameter {name!r} is not in properties')
    elif 'type' in schema:
        raise ToolSpecError(f'a tool input schema must be an object, not {schema["type"]!r}')
    else:
        properties, required = {}, []
        for name, spec in schema.items():
            if isinstance(spec, str):
                if spec not in JSON_TYPES:
                    raise ToolSpecError(f'parameter {name!r}: unknown type {spec!r}')
                prop, optional = {'type': spec}, False
            elif isinstance(spec, Mapping):
                prop = {k: v for k, v in spec.items() if k not in ('required', 'optional')}
                optional = (spec.get('required') is False or bool(spec.get('optional'))
                            or 'default' in spec)
            else:
                raise ToolSpecError(f'parameter {name!r}: expected a type name or an object')
            properties[str(name)] = json.loads(json.dumps(prop))
            if not optional:
                required.append(str(name))
        out = {'type': 'object', 'properties': properties}
        if required:
            out['required'] = required
    if strict:
        out.setdefault('additionalProperties', False)
    return out


def _param_lines(schema: dict) -> list[str]:
    required = set(schema.get('required', []))
    lines = []
    for name, prop in schema.get('properties', {}).items():
        kind = prop.get('type', 'any') if isinstance(prop, Mapping) else 'any'
        if isinstance(prop, Mapping) and 'enum' in prop:
            kind = ' | '.join(json.dumps(v) for v in prop['enum'])
        desc = prop.get('description', '') if isinstance(prop, Mapping) else ''
        opt = '' if name in required else ', optional'
        lines.append(f'    {name} ({kind}{opt})' + (f': {desc}' if desc else ''))
    return lines


def describe_tool(tool: Any, table: Mapping[str, Any] | None = None) -> str:
    """The text the model reads about one tool: the table entry first, else the fallback."""
    spec = as_tool_spec(tool)
    entry = (table or {}).get(spec.name)
    schema = normalize_schema(spec.input_schema)
    if entry is not None:
        d = as_tool_description(entry)
        lines = [f'- {spec.name}: {d.description}']
        if isinstance(d.params, Mapping):
            lines += [f'    {k}: {v}' for k, v in d.params.items()]
        elif d.params:
            lines.append(f'    params: {d.params}')
        else:
            lines += _param_lines(schema)
        if d.example:
            lines.append(f'    example: {d.example}')
        if d.followup_type:
            lines.append(f'    then: {d.followup_type}')
        return '\n'.join(lines)
    lines = [f'- {spec.name}: {spec.description or "(no description)"}']
    lines += _param_lines(schema)
    return '\n'.join(lines)


def tool_manifest(tools: Sequence[Any], table: Mapping[str, Any] | None = None) -> str:
    specs = sorted((as_tool_spec(t) for t in tools), key=lambda s: s.name)
    if not specs:
        return 'You have no tools available right now: think, and set "action" to null.'
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ToolSpecError(f'duplicate tool names in {names}')
    body = '\n'.join(describe_tool(s, table) for s in specs)
    return f'Your tools (the only actions you can take):\n{body}'


def tool_manifest_section(tools: Sequence[Any], table: Mapping[str, Any] | None = None,
                          priority: Priority = Priority.IMPORTANT) -> Section:
    """The manifest as a stable section (sorted by name so its text, and the cache, hold)."""
    return Section('tools', tool_manifest(tools, table), priority, stable=True)
