"""The tool registry, the description table, the alias map and user tool registration.

- TOOL_DESCRIPTIONS (seed 003) is the primary text the model reads about a built-in tool
  (description, params, example, followup_type); a tool missing from it falls back to its
  own `description` and input schema, which are often too terse.
- TOOL_ALIASES (seed 001) silently redirects names small models hallucinate from their
  training data (remember -> memory_recall, look -> examine). A value may list several
  targets: the first one registered wins, so `look` means `examine` in the narrative
  simulation and `scene_summary` on the robot.
- After two or more consecutive unknown names the error lists the available tools, which is
  what breaks a model out of a hallucination loop.
- `register_tool()` and the `@tool` decorator (exported as `maxim_core.tools.tool`) add user
  tools to a registry (the module's default one unless told otherwise).
- A user tool (one not defined in maxim_core) runs its calls in a process of its own inside
  the registry's kernel sandbox (`contain_with`; `build_tool_registry` gives the mode's), or
  declares `in_process` with its reason, which is logged (`maxim_core.tools.contained`).
  A registry without a sandbox refuses a user tool's calls until it gets one.
"""

import re
import threading
from typing import Any, Callable, Iterable, Mapping

from maxim_core.prompt.tools import (as_tool_description, describe_tool, ToolDescription,
                                     tool_manifest, ToolSpecError)
from maxim_core.tools import contained
from maxim_core.tools.base import FunctionTool, Tool, UnknownToolError
from maxim_core.tools.sandbox import ProcessSandbox

TOOL_DESCRIPTIONS: dict[str, dict] = {
    # Robot.
    'move': {
        'description': 'Turn the head to a pan/tilt angle in radians (or by an offset with '
                       'relative=true). Overrides the attention reflex for duration_s.',
        # The joint ranges join these lines where the limits are known (catalog.py).
        'params': {'pan': 'radians, left positive',
                   'tilt': 'radians, down positive (REP 103)',
                   'relative': 'true to move by an offset from where the head is'},
        'example': '{"tool": "move", "args": {"pan": 0.5, "tilt": 0.0}}',
        'followup_type': 'observe: check head/state or scene_summary',
    },
    'track_target': {
        'description': 'Follow one target with the head, by track id or by label.',
        'params': {'target_label': 'what to follow, e.g. "person"',
                   'track_id': 'a tracker id from scene_summary (0 = use the label)'},
        'example': '{"tool": "track_target", "args": {"target_label": "person"}}',
        'followup_type': 'observe',
    },
    'focus_interests': {
        'description': 'Look at the most salient things in the scene in turn.',
        'params': {'duration_s': 'seconds before the reflex resumes (0 = until replaced)'},
        'example': '{"tool": "focus_interests", "args": {"duration_s": 10}}',
        'followup_type': 'observe',
    },
    'novelty_track': {
        'description': 'Follow whatever is most novel in view (curiosity).',
        'params': {'duration_s': 'seconds before the reflex resumes (0 = until replaced)'},
        'example': '{"tool": "novelty_track", "args": {"duration_s": 10}}',
        'followup_type': 'observe',
    },
    # Filesystem.
    'read_file': {
        'description': 'Read a text file inside the workspace.',
        'params': {'path': 'file path, relative to the workspace',
                   'offset': 'first line (0-based)', 'limit': 'lines to read'},
        'example': '{"tool": "read_file", "args": {"path": "notes.txt"}}',
        'followup_type': 'reason about the content',
    },
    'write_file': {
        'description': 'Create or overwrite a text file inside the workspace (not in passive '
                       'mode).',
        'params': {'path': 'file path, relative to the workspace', 'content': 'the text'},
        'example': '{"tool": "write_file", "args": {"path": "notes.txt", "content": "hi"}}',
        'followup_type': 'read_file to check',
    },
    'edit_file': {
        'description': 'Replace one occurrence of old_text by new_text in a file; give '
                       'context_before/context_after when old_text occurs more than once.',
        'params': {'path': 'file path', 'old_text': 'exact text to replace',
                   'new_text': 'replacement', 'context_before': 'text just before old_text',
                   'context_after': 'text just after old_text'},
        'example': '{"tool": "edit_file", "args": {"path": "a.py", "old_text": "x = 1", '
                   '"new_text": "x = 2"}}',
        'followup_type': 'read_file or run_tests to check',
    },
    'glob': {
        'description': 'List files matching a glob pattern inside the workspace.',
        'params': {'pattern': 'e.g. "**/*.py"', 'limit': 'at most this many paths'},
        'example': '{"tool": "glob", "args": {"pattern": "*.txt"}}',
        'followup_type': 'read_file',
    },
    'bash': {
        'description': 'Run a shell command in the workspace; which commands are allowed '
                       'depends on the mode (passive: read-only commands).',
        'params': {'command': 'the command line', 'timeout_s': 'time limit in seconds'},
        'example': '{"tool": "bash", "args": {"command": "ls -la"}}',
        'followup_type': 'reason about the output',
    },
    # Code and git.
    'search_code': {
        'description': 'Search source files in the workspace with a regular expression.',
        'params': {'pattern': 'regular expression', 'path': 'folder to search',
                   'file_glob': 'file name filter, e.g. "*.py"', 'limit': 'max matches'},
        'example': '{"tool": "search_code", "args": {"pattern": "def main"}}',
        'followup_type': 'read_file around a match',
    },
    'run_tests': {
        'description': 'Run pytest in the workspace and get structured results.',
        'params': {'path': 'test file or folder', 'keyword': 'pytest -k expression',
                   'timeout_s': 'time limit in seconds'},
        'example': '{"tool": "run_tests", "args": {"path": "tests"}}',
        'followup_type': 'read the failures, then edit_file',
    },
    'git_diff': {
        'description': 'Show uncommitted changes in the workspace repository.',
        'params': {'path': 'limit to this path', 'staged': 'only staged changes'},
        'example': '{"tool": "git_diff", "args": {}}',
        'followup_type': 'git_commit when the change is right',
    },
    'git_commit': {
        'description': 'Commit changes in the workspace repository (not in passive mode).',
        'params': {'message': 'the commit message', 'paths': 'space-separated paths '
                   '(empty = all changes)'},
        'example': '{"tool": "git_commit", "args": {"message": "Fix the parser"}}',
        'followup_type': 'done',
    },
    # Communication.
    'respond': {
        'description': 'Say something to the person at the console (text).',
        'params': {'text': 'what to say'},
        'example': '{"tool": "respond", "args": {"text": "Hello!"}}',
        'followup_type': 'wait for an answer',
    },
    'request_interaction': {
        'description': 'Ask the person a question and wait for the answer; a last resort, '
                       'for a genuine preference only.',
        'params': {'question': 'the question',
                   'timeout_s': 'seconds to wait for the answer (default 60)'},
        'example': '{"tool": "request_interaction", "args": {"question": "Which ball should '
                   'I follow?"}}',
        'followup_type': 'use the answer',
    },
    'speak': {
        'description': 'Say something aloud through the speaker (text to speech).',
        'params': {'text': 'what to say'},
        'example': '{"tool": "speak", "args": {"text": "Hello!"}}',
        'followup_type': 'wait for an answer',
    },
    'send_message': {
        'description': 'Send a text message to a person through the messaging gateway.',
        'params': {'to': 'recipient', 'text': 'the message'},
        'example': '{"tool": "send_message", "args": {"to": "owner", "text": "Done."}}',
        'followup_type': 'done',
    },
    'call_user': {
        'description': 'Place a voice call to the user through the gateway (urgent only).',
        'params': {'text': 'what to say on the call'},
        'example': '{"tool": "call_user", "args": {"text": "The robot fell."}}',
        'followup_type': 'done',
    },
    # Introspection.
    'memory_recall': {
        'description': 'Search your episodic memories (what you remember) by text, tool, '
                       'outcome, object or person; expand=true adds associated memories.',
        'params': {'query': 'free text', 'tool_name': 'only episodes using this tool',
                   'success': '"any", "success" or "failure"', 'limit': 'max results'},
        'example': '{"tool": "memory_recall", "args": {"query": "red ball", "limit": 3}}',
        'followup_type': 'reason with what you remember',
    },
    'similarity_search': {
        'description': 'Find past situations similar to a text, a tool or a memory.',
        'params': {'context': 'situation text', 'tool_name': 'tool',
                   'memory_id': 'an episode id', 'limit': 'max results'},
        'example': '{"tool": "similarity_search", "args": {"context": "someone waved"}}',
        'followup_type': 'reason with the similar cases',
    },
    'predict_outcome': {
        'description': 'Ask what will probably happen if you use a tool in this context '
                       '(0 = bad, 1 = good) before acting.',
        'params': {'tool_name': 'the tool you consider', 'context': 'the situation'},
        'example': '{"tool": "predict_outcome", "args": {"tool_name": "move"}}',
        'followup_type': 'act or choose another tool',
    },
    'causal_links': {
        'description': 'Inspect learned cause -> effect links (what led to what).',
        'params': {'event': 'event filter', 'outcome': 'outcome filter',
                   'valence': '"any", "positive" or "negative"', 'limit': 'max links'},
        'example': '{"tool": "causal_links", "args": {"valence": "negative", "limit": 5}}',
        'followup_type': 'avoid what hurt',
    },
    'pain_history': {
        'description': 'Pain statistics, and whether an action would be blocked now.',
        'params': {'check_action': 'a tool name to test', 'limit': 'recent signals'},
        'example': '{"tool": "pain_history", "args": {"check_action": "move"}}',
        'followup_type': 'avoid what hurts',
    },
    'temporal_patterns': {
        'description': 'Memories by hour of day or day of week; discover_rhythms finds '
                       'recurring patterns.',
        'params': {'hour': '0-23 (-1 any)', 'day': '0=Mon..6=Sun (-1 any)',
                   'discover_rhythms': 'true to look for rhythms', 'limit': 'max results'},
        'example': '{"tool": "temporal_patterns", "args": {"discover_rhythms": true}}',
        'followup_type': 'plan around the rhythm',
    },
    'concept_query': {
        'description': 'Look up concepts you have learned and how they relate.',
        'params': {'name': 'concept name', 'category': 'category filter',
                   'relationship_type': 'IS_A, PART_OF, CAUSES, EXECUTES_WITH',
                   'limit': 'max results'},
        'example': '{"tool": "concept_query", "args": {"name": "cup"}}',
        'followup_type': 'reason with the concept',
    },
    'scene_summary': {
        'description': 'What you see now: salient objects with novelty, your gaze and the '
                       'suggested next target.',
        'params': {'limit': 'max objects', 'include_attention': 'include the gaze state'},
        'example': '{"tool": "scene_summary", "args": {"limit": 3}}',
        'followup_type': 'track_target or move',
    },
    'energy_status': {
        'description': 'How many tokens and how much inference time you have spent, and the '
                       'budget left.',
        'params': {'window_seconds': 'time window (0 = the whole session)'},
        'example': '{"tool": "energy_status", "args": {}}',
        'followup_type': 'slow down when the budget is low',
    },
    'system_stats': {
        'description': 'Health of every memory subsystem in one call.',
        'params': {},
        'example': '{"tool": "system_stats", "args": {}}',
        'followup_type': 'reason about your state',
    },
}

# Hallucinated name -> target(s), first registered target wins.
TOOL_ALIASES: dict[str, tuple[str, ...]] = {
    'remember': ('memory_recall',),
    'recall': ('memory_recall',),
    'recall_memory': ('memory_recall',),
    'search_memory': ('memory_recall',),
    'memory_search': ('memory_recall',),
    'query_memory': ('memory_recall',),
    'look': ('examine', 'scene_summary'),
    'look_around': ('scene_summary',),
    'see': ('scene_summary',),
    'observe': ('scene_summary',),
    'describe_scene': ('scene_summary',),
    'inspect': ('examine',),
    'speech': ('say', 'speak'),
    'talk': ('say', 'respond'),
    'say': ('respond',),
    'reply': ('respond',),
    'answer': ('respond',),
    'print': ('respond',),
    'tts': ('speak',),
    'reflection': ('think',),
    'reflect': ('think',),
    'ponder': ('think',),
    'look_at': ('move',),
    'turn_head': ('move',),
    'move_head': ('move',),
    'pan': ('move',),
    'rotate': ('move',),
    'follow': ('track_target',),
    'track': ('track_target',),
    'explore': ('novelty_track',),
    'cat': ('read_file',),
    'open_file': ('read_file',),
    'read': ('read_file',),
    'write': ('write_file',),
    'create_file': ('write_file',),
    'save_file': ('write_file',),
    'edit': ('edit_file',),
    'replace': ('edit_file',),
    'ls': ('glob',),
    'list_files': ('glob',),
    'find_files': ('glob',),
    'shell': ('bash',),
    'run': ('bash',),
    'execute': ('bash',),
    'run_command': ('bash',),
    'terminal': ('bash',),
    'grep': ('search_code',),
    'search': ('search_code',),
    'pytest': ('run_tests',),
    'test': ('run_tests',),
    'diff': ('git_diff',),
    'commit': ('git_commit',),
    'message': ('send_message',),
    'sms': ('send_message',),
    'text_user': ('send_message',),
    'phone': ('call_user',),
    'predict': ('predict_outcome',),
    'forecast': ('predict_outcome',),
    'causes': ('causal_links',),
    'pain': ('pain_history',),
    'concepts': ('concept_query',),
    'energy': ('energy_status',),
    'stats': ('system_stats',),
    'status': ('system_stats',),
}

MISSES_BEFORE_LISTING = 2


def normalize_name(name: str) -> str:
    """Lower case, separators to underscores: 'Memory-Recall ' -> 'memory_recall'."""
    return re.sub(r'[\s\-.]+', '_', str(name).strip().lower()).strip('_')


class ToolRegistry:
    """Tools by name, with alias resolution and the description table."""

    def __init__(self, descriptions: Mapping[str, Any] | None = None,
                 aliases: Mapping[str, Iterable[str]] | None = None,
                 process: ProcessSandbox | None = None):
        self._tools: dict[str, Tool] = {}
        self.process = process         # the kernel sandbox of the user tools' calls
        self.descriptions = dict(TOOL_DESCRIPTIONS if descriptions is None else descriptions)
        self.aliases = {normalize_name(k): tuple([v] if isinstance(v, str) else v)
                        for k, v in (TOOL_ALIASES if aliases is None else aliases).items()}
        self.consecutive_misses = 0
        self._lock = threading.Lock()

    # -- registration ------------------------------------------------------------------------
    def register(self, tool: Tool, replace: bool = False) -> Tool:
        if not isinstance(tool, Tool):
            raise ToolSpecError(f'register() takes a Tool, not {type(tool).__name__}; '
                                'use register_tool() for a function')
        with self._lock:
            if tool.name in self._tools and not replace:
                raise ToolSpecError(f'a tool named {tool.name!r} is already registered')
            contained.admit(tool, self.process)
            self._tools[tool.name] = tool
        return tool

    def contain_with(self, process: ProcessSandbox) -> None:
        """Run the calls of the user tools, registered and to come, in `process`."""
        with self._lock:
            self.process = process
            for t in self._tools.values():
                if t._runner is not None:
                    t._runner.bind(process)

    def containment(self, name: str) -> str:
        """How a tool's calls are contained: 'built-in', 'kernel' or 'in-process'."""
        return contained.containment_of(self.get(name))

    def unregister(self, name: str) -> None:
        with self._lock:
            if name not in self._tools:
                raise UnknownToolError(f'no tool named {name!r} to unregister')
            del self._tools[name]

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownToolError(f'no tool named {name!r}') from None

    def names(self) -> list[str]:
        return sorted(self._tools)

    def tools(self, names: Iterable[str] | None = None) -> list[Tool]:
        chosen = self.names() if names is None else names
        return [self._tools[n] for n in chosen if n in self._tools]

    # -- resolution --------------------------------------------------------------------------
    def lookup(self, requested: str) -> str | None:
        """The registered name `requested` means (exact, normalised or alias), else None."""
        if requested in self._tools:
            return requested
        norm = normalize_name(requested)
        if norm in self._tools:
            return norm
        for target in self.aliases.get(norm, ()):
            if target in self._tools:
                return target
        return None

    def resolve(self, requested: str, available: Iterable[str] | None = None) -> Tool:
        """The tool `requested` means; UnknownToolError otherwise.

        Counts consecutive misses: from the second one on, the error lists `available`
        (default: every registered tool) so the model can pick a real name.
        """
        name = self.lookup(requested) if isinstance(requested, str) else None
        with self._lock:
            if name is not None:
                self.consecutive_misses = 0
                return self._tools[name]
            self.consecutive_misses += 1
            misses = self.consecutive_misses
        message = f'unknown tool {requested!r}'
        if misses >= MISSES_BEFORE_LISTING:
            listed = sorted(available) if available is not None else self.names()
            message += (f' ({misses} unknown names in a row). Available tools: '
                        + ', '.join(listed))
        raise UnknownToolError(message)

    # -- descriptions ------------------------------------------------------------------------
    def description(self, name: str) -> ToolDescription:
        """The table entry, or the fallback built from the tool itself."""
        entry = self.descriptions.get(name)
        if entry is not None:
            return as_tool_description(entry)
        tool = self.get(name)
        params = {k: (v.get('description') or v.get('type', 'any'))
                  for k, v in tool.schema.get('properties', {}).items()
                  if isinstance(v, Mapping)}
        return ToolDescription(tool.description or '(no description)', params or None, '',
                               '')

    def describe(self, name: str) -> str:
        """The text the model reads about one tool."""
        return describe_tool(self.get(name), self.descriptions)

    def manifest(self, names: Iterable[str] | None = None) -> str:
        """Full descriptions of the tools named (default: all)."""
        return tool_manifest(self.tools(names), self.descriptions)


default_registry = ToolRegistry()


def register_tool(func_or_tool: 'Callable | Tool', name: str | None = None,
                  description: str | None = None, input_schema: Mapping | None = None,
                  introspection: bool = False, registry: ToolRegistry | None = None,
                  replace: bool = False, table_entry: Mapping | None = None,
                  in_process: str = '', wall_clock_s: float | None = None) -> Tool:
    """Register a Tool, or a function as a tool, in `registry` (default: the module's).

    The function runs in a process of its own inside the registry's kernel sandbox, bounded
    by `wall_clock_s`, unless `in_process` says why it may run here (logged)."""
    registry = default_registry if registry is None else registry
    if isinstance(func_or_tool, Tool):
        tool_obj = func_or_tool
        if in_process:
            tool_obj.in_process = in_process
    else:
        tool_obj = FunctionTool(func_or_tool, name, description, input_schema, introspection,
                                in_process=in_process, wall_clock_s=wall_clock_s)
    registry.register(tool_obj, replace=replace)
    if table_entry is not None:
        registry.descriptions[tool_obj.name] = dict(as_tool_description(table_entry).__dict__)
    return tool_obj


def tool(func: Callable | None = None, *, name: str | None = None,
         description: str | None = None, input_schema: Mapping | None = None,
         introspection: bool = False, registry: ToolRegistry | None = None,
         replace: bool = False, table_entry: Mapping | None = None, in_process: str = '',
         wall_clock_s: float | None = None):
    """Decorator: `@maxim_core.tools.tool` or `@tool(name=..., input_schema=...)`.

    The function stays callable as before; its Tool is on `func.tool`. Its calls as a tool
    run in the kernel sandbox unless `in_process='<why it holds no path and has no side
    effect>'` (see `register_tool`).
    """
    def wrap(f: Callable) -> Callable:
        f.tool = register_tool(f, name, description, input_schema, introspection, registry,
                               replace, table_entry, in_process, wall_clock_s)
        return f

    if func is not None:
        return wrap(func)
    return wrap
