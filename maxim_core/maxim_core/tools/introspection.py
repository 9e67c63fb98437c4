"""Introspection tools: the mind asking its own subsystems (seed 001).

memory_recall, similarity_search, predict_outcome, causal_links, pain_history,
temporal_patterns, concept_query, scene_summary, energy_status and system_stats are
read-only (flagged `introspection = True`, so they bypass the fear gate), take a `limit`,
return bounded output formatted for the LLM (header stamps dropped, floats rounded, lists cut
to `limit` with the total said), and answer through an injected
`query(name, fields, timeout_s) -> dict | None` (nodes/clients.py `ServiceQuery`): `name` is
the tool name, `fields` the request fields of the matching maxim_interfaces service
(MemoryRecall.srv, ...), None means the subsystem is absent and the tool answers
`{"available": false}` instead of failing obscurely.
"""

import json
from typing import Any, Callable

from maxim_common.errors import ERROR_EXECUTION, ERROR_UNAVAILABLE
from maxim_core.tools.base import Tool, ToolOutcome

Query = Callable[[str, dict, float], 'dict | None']

# Response fields that are plumbing, not content.
_PLUMBING = ('error_code', 'error_msg', 'result_json', 'header', 'stamp')
_UNAVAILABLE_CODE = 2         # the *.srv ERROR_UNAVAILABLE value
MAX_LIMIT = 50


def _limit(default: int = 5) -> dict:
    return {'type': 'integer', 'minimum': 1, 'maximum': MAX_LIMIT, 'default': default,
            'description': 'at most this many items'}


def compact(value: Any, limit: int, depth: int = 0) -> Any:
    """A response trimmed for the LLM: lists cut to `limit`, floats rounded, plumbing gone."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in _PLUMBING or v in ('', None) or v == [] or v == {}:
                continue
            out[k] = compact(v, limit, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        items = [compact(v, limit, depth + 1) for v in list(value)[:limit]]
        if len(value) > limit:
            items.append(f'... {len(value) - limit} more')
        return items
    if isinstance(value, float):
        return round(value, 3)
    return value


class IntrospectionTool(Tool):
    """One read-only query to a subsystem, answered through `query`."""

    introspection = True
    category = 'introspection'

    def __init__(self, name: str, description: str, input_schema: dict,
                 to_fields: Callable[[dict], dict], query: Query | None,
                 timeout_s: float = 2.0):
        super().__init__(name, description, input_schema, introspection=True)
        self.to_fields = to_fields
        self.query = query
        self.timeout_s = timeout_s

    def execute(self, **args) -> ToolOutcome:
        limit = int(args.get('limit', 5))
        fields = self.to_fields(args)
        if self.query is None:
            return _absent(self.name, 'no query channel configured')
        try:
            response = self.query(self.name, fields, self.timeout_s)
        except ValueError as exc:     # the channel does not know this subsystem
            return _absent(self.name, str(exc))
        if response is None:
            return _absent(self.name, 'the subsystem is not running')
        if not isinstance(response, dict):
            return ToolOutcome.fail(f'{self.name}: malformed answer '
                                    f'({type(response).__name__})')
        if response.get('available') is False or \
                response.get('error_code') == _UNAVAILABLE_CODE:
            return _absent(self.name, response.get('error_msg') or 'unavailable')
        if response.get('error_code'):
            return ToolOutcome.fail(f'{self.name}: {response.get("error_msg") or "failed"}',
                                    ERROR_EXECUTION)
        body: Any = None
        if response.get('result_json'):
            try:
                body = json.loads(response['result_json'])
            except json.JSONDecodeError:
                body = None   # fall back to the typed fields below
        if body is None:
            body = response
        out = compact(body, limit)
        if isinstance(out, dict):
            out.setdefault('available', True)
        return ToolOutcome.ok(out)


def _absent(name: str, why: str) -> ToolOutcome:
    return ToolOutcome.fail(f'{name}: not available ({why})', ERROR_UNAVAILABLE,
                            output={'available': False, 'reason': why})


_SUCCESS = {'any': 0, 'success': 1, 'failure': 2}
_VALENCE = {'any': 0, 'positive': 1, 'negative': -1}


def _str(desc: str, default: str = '') -> dict:
    return {'type': 'string', 'maxLength': 200, 'default': default, 'description': desc}


def introspection_tools(query: Query | None, timeout_s: float = 2.0) -> list[Tool]:
    """The ten introspection tools over one query channel."""
    specs = [
        ('memory_recall', 'Search episodic memories.', {
            'query': _str('free text'), 'keyword': _str('same as query'),
            'tool_name': _str('only episodes using this tool'),
            'success': {'enum': list(_SUCCESS), 'default': 'any'},
            'object': _str('detected object'), 'person': _str('detected person'),
            'mode': _str('operating mode'),
            'time_after': {'type': 'number', 'default': 0},
            'time_before': {'type': 'number', 'default': 0},
            'expand': {'type': 'boolean', 'default': False}, 'limit': _limit()},
         lambda a: {'query': a.get('query') or a.get('keyword', ''),
                    'tool_name': a['tool_name'], 'success': _SUCCESS[a['success']],
                    'object': a['object'], 'person': a['person'], 'mode': a['mode'],
                    'time_after': float(a['time_after']),
                    'time_before': float(a['time_before']), 'expand': a['expand'],
                    'limit': a['limit']}),
        ('similarity_search', 'Find similar past situations.', {
            'tool_name': _str('tool'), 'memory_id': _str('episode id'),
            'context': _str('situation text'), 'limit': _limit()},
         lambda a: {k: a[k] for k in ('tool_name', 'memory_id', 'context', 'limit')}),
        ('predict_outcome', 'Predict the outcome of a tool in a context.', {
            'tool_name': {'type': 'string', 'minLength': 1, 'maxLength': 64},
            'context': _str('situation'),
            'include_all_outcomes': {'type': 'boolean', 'default': False},
            'limit': _limit()},
         lambda a: {'tool_name': a['tool_name'], 'context': a['context'],
                    'include_all_outcomes': a['include_all_outcomes']}),
        ('causal_links', 'Inspect learned cause-effect links.', {
            'event': _str('event filter'), 'outcome': _str('outcome filter'),
            'memory_id': _str('episode id'),
            'valence': {'enum': list(_VALENCE), 'default': 'any'}, 'limit': _limit()},
         lambda a: {'event': a['event'], 'outcome': a['outcome'],
                    'memory_id': a['memory_id'], 'valence': _VALENCE[a['valence']],
                    'limit': a['limit']}),
        ('pain_history', 'Pain statistics and whether an action would be blocked.', {
            'check_action': _str('tool name to test'),
            'action_params': _str('its arguments as JSON'), 'limit': _limit()},
         lambda a: {'check_action': a['check_action'],
                    'action_params_json': a['action_params'], 'limit': a['limit']}),
        ('temporal_patterns', 'Memories by time of day and discovered rhythms.', {
            'hour': {'type': 'integer', 'minimum': -1, 'maximum': 23, 'default': -1},
            'day': {'type': 'integer', 'minimum': -1, 'maximum': 6, 'default': -1},
            'discover_rhythms': {'type': 'boolean', 'default': False}, 'limit': _limit()},
         lambda a: {k: a[k] for k in ('hour', 'day', 'discover_rhythms', 'limit')}),
        ('concept_query', 'Search learned concepts and relationships.', {
            'name': _str('concept name'), 'category': _str('category'),
            'concept_id': _str('concept id'), 'relationship_type': _str('relationship'),
            'limit': _limit()},
         lambda a: {k: a[k] for k in ('name', 'category', 'concept_id', 'relationship_type',
                                      'limit')}),
        ('scene_summary', 'The current visual scene.', {
            'include_attention': {'type': 'boolean', 'default': True}, 'limit': _limit()},
         lambda a: {'top_n': a['limit'], 'include_attention': a['include_attention']}),
        ('energy_status', 'Tokens and inference time spent, and the budget left.', {
            'window_seconds': {'type': 'number', 'minimum': 0, 'default': 0},
            'limit': _limit()},
         lambda a: {'window_seconds': float(a['window_seconds'])}),
        ('system_stats', 'Health of every subsystem.', {'limit': _limit(10)},
         lambda a: {}),
    ]
    # An argument without a default is required: the schema (and so the grammar) says so,
    # and a call without it is an argument error, not a failure inside the tool.
    return [IntrospectionTool(name, desc, {'type': 'object', 'properties': props,
                                           'required': [k for k, v in props.items()
                                                        if 'default' not in v]},
                              to_fields, query, timeout_s)
            for name, desc, props, to_fields in specs]
