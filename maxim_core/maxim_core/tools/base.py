"""The Tool base: a name, a description, a validated JSON-schema input and a structured outcome.

Tools are the only way the mind acts on the world (seed 001). Every call validates its
arguments with a real JSON-schema validator before anything runs, because a small model's
arguments are often almost right, and "almost" must fail loudly rather than half-execute.
Both schema styles of seed 003 are accepted (full JSON Schema, or the flat
``{"param": {"type": ...}}`` style); they are normalised once, at construction.

`execute()` returns a `ToolOutcome` (or a dict / str that is wrapped into one): success, a
bounded output the LLM can read, and one of the ToolResult.ERROR_* codes, kept numeric so the
core needs no message import.
"""

from dataclasses import dataclass, field
import json
import threading
from typing import Any, Callable, Mapping

import jsonschema

from maxim_common.errors import (ERROR_EXECUTION, ERROR_INACTIVE_TOOL, ERROR_INVALID_ARGUMENTS,
                                 ERROR_NONE, ERROR_TIMEOUT, ERROR_UNKNOWN_TOOL)
from maxim_core.prompt.tools import normalize_schema, ToolSpecError

OUTPUT_MAX_CHARS = 4000     # bound on the text an outcome hands to the LLM


class ToolError(Exception):
    """A tool could not do what it was asked; `code` is a ToolResult.ERROR_* value."""

    def __init__(self, message: str, code: int = ERROR_EXECUTION):
        super().__init__(message)
        self.code = code


class ToolInputError(ToolError):
    """The arguments do not fit the tool's input schema."""

    def __init__(self, message: str):
        super().__init__(message, ERROR_INVALID_ARGUMENTS)


class UnknownToolError(ToolError, KeyError):
    """No tool of that name and no alias for it (a KeyError for the agent loop's resolve)."""

    def __init__(self, message: str):
        ToolError.__init__(self, message, ERROR_UNKNOWN_TOOL)

    def __str__(self) -> str:
        return self.args[0] if self.args else ''


class InactiveToolError(ToolError):
    """The tool exists but is outside the current scene's scope."""

    def __init__(self, message: str):
        super().__init__(message, ERROR_INACTIVE_TOOL)


def bounded(text: str, limit: int = OUTPUT_MAX_CHARS) -> str:
    """`text` cut to `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return text[:limit] + f'... [{cut} more characters cut]'


@dataclass
class ToolOutcome:
    """What a tool call produced: maps onto ToolResult (success, output, error_code/msg)."""

    success: bool
    output: Any = None            # dict (JSON-able) or text
    error_code: int = ERROR_NONE
    error_msg: str = ''
    tool: str = ''
    data: dict = field(default_factory=dict)   # structured extras (head goal, file path...)

    def text(self, limit: int = OUTPUT_MAX_CHARS) -> str:
        """The output as bounded text for the LLM and for ToolResult.output."""
        if isinstance(self.output, str):
            body = self.output
        else:
            body = json.dumps(self.output, sort_keys=True, default=str)
        return bounded(body, limit)

    @classmethod
    def ok(cls, output: Any = None, **data) -> 'ToolOutcome':
        return cls(True, output, data=dict(data))

    @classmethod
    def fail(cls, message: str, code: int = ERROR_EXECUTION, output: Any = None,
             **data) -> 'ToolOutcome':
        return cls(False, output if output is not None else {'error': message}, code,
                   message, data=dict(data))


class Tool:
    """A callable action with a validated JSON-schema input.

    Subclasses set `name`, `description`, `input_schema` (either style) and implement
    `execute(**args)`. `introspection` tools are read-only and bypass the fear gate.
    `wall_clock_s`: for a tool that works in this process, the most one call may take; the
    call then fails with ERROR_TIMEOUT and its work is abandoned (it runs in a worker thread,
    which cannot be killed: such tools are also written not to block).

    A tool written outside maxim_core, once registered, runs each call in a process of its
    own inside the registry's kernel sandbox (`maxim_core.tools.contained`), killed at its
    wall clock, unless it declares `in_process`: the reason it may run in this process (it
    holds no path and has no side effect), which its registration logs.
    """

    name: str = ''
    description: str = ''
    input_schema: dict = {}
    introspection: bool = False
    category: str = 'user'
    wall_clock_s: float | None = None
    in_process: str = ''
    _runner = None          # set by the registry: runs the calls in the kernel sandbox

    def __init__(self, name: str | None = None, description: str | None = None,
                 input_schema: Mapping | None = None, introspection: bool | None = None,
                 category: str | None = None):
        if name is not None:
            self.name = name
        if description is not None:
            self.description = description
        if input_schema is not None:
            self.input_schema = dict(input_schema)
        if introspection is not None:
            self.introspection = bool(introspection)
        if category is not None:
            self.category = category
        if not isinstance(self.name, str) or not self.name.strip():
            raise ToolSpecError(f'a tool needs a non-empty name, got {self.name!r}')
        try:
            self._schema = normalize_schema(self.input_schema)
            jsonschema.Draft7Validator.check_schema(self._schema)
        except jsonschema.SchemaError as exc:
            raise ToolSpecError(
                f'tool {self.name!r}: invalid input schema: {exc.message}') from exc
        self._validator = jsonschema.Draft7Validator(self._schema)

    @property
    def schema(self) -> dict:
        """The input schema as JSON Schema (whatever style it was written in)."""
        return self._schema

    def validate(self, args: Any) -> dict:
        """The arguments with declared defaults filled in; ToolInputError when they do not fit."""
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise ToolInputError(f'{self.name}: arguments must be an object, '
                                 f'not {type(args).__name__}')
        args = dict(args)
        errors = sorted(self._validator.iter_errors(args), key=lambda e: list(e.path))
        if errors:
            where = '/'.join(str(p) for p in errors[0].path) or '(arguments)'
            raise ToolInputError(f'{self.name}: {where}: {errors[0].message}')
        for key, prop in self._schema.get('properties', {}).items():
            if key not in args and isinstance(prop, Mapping) and 'default' in prop:
                args[key] = prop['default']
        return args

    def execute(self, **args) -> 'ToolOutcome | dict | str':
        raise NotImplementedError(f'tool {self.name!r} does not implement execute()')

    def run(self, args: Any) -> ToolOutcome:
        """Validate, execute and wrap: never raises for a tool's own failure."""
        try:
            clean = self.validate(args)
            if self._runner is not None:
                result = self._runner.call(self, clean)
            elif self.wall_clock_s:
                result = self._execute_bounded(clean, self.wall_clock_s)
            else:
                result = self.execute(**clean)
        except ToolError as exc:
            outcome = ToolOutcome.fail(str(exc), exc.code)
        except (OSError, ValueError, TypeError, RuntimeError, LookupError) as exc:
            # A failing tool is a result the mind must learn from, not a crash of the agent.
            outcome = ToolOutcome.fail(f'{type(exc).__name__}: {exc}', ERROR_EXECUTION)
        else:
            outcome = as_outcome(result)
        outcome.tool = self.name
        return outcome

    def contained_call(self) -> Callable[..., Any]:
        """What a process of its own calls with the arguments: `execute` of this tool."""
        return self.execute

    def __getstate__(self) -> dict:
        # Sent to a contained process: the validator is rebuilt there, the runner stays here.
        state = dict(self.__dict__)
        state.pop('_validator', None)
        state.pop('_runner', None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if '_schema' in state:
            self._validator = jsonschema.Draft7Validator(self._schema)

    def _execute_bounded(self, args: dict, limit_s: float):
        """`execute` in a worker thread, waited for at most `limit_s` seconds."""
        box: list = []

        def work():
            try:
                box.append((True, self.execute(**args)))
            except BaseException as exc:           # handed to the caller, raised there
                box.append((False, exc))

        worker = threading.Thread(target=work, name=f'tool-{self.name}', daemon=True)
        worker.start()
        worker.join(limit_s)
        if not box:
            raise ToolError(f'{self.name} did not finish within its {limit_s:g} s wall clock '
                            '(abandoned)', ERROR_TIMEOUT)
        ok, value = box[0]
        if not ok:
            raise value
        return value


def as_outcome(result: Any) -> ToolOutcome:
    """A ToolOutcome from what `execute` returned."""
    if isinstance(result, ToolOutcome):
        return result
    return ToolOutcome.ok(result)


class FunctionTool(Tool):
    """A tool around a plain function (what `register_tool` and `@tool` build).

    Registered, its function runs in a process of its own inside the kernel sandbox, so it
    must be importable by name (a module-level ``def``); `wall_clock_s` bounds each call
    (default `maxim_core.tools.contained.DEFAULT_TIMEOUT_S`). `in_process`: the reason it may
    run in this process instead (it holds no path and has no side effect).
    """

    def __init__(self, func: Callable[..., Any], name: str | None = None,
                 description: str | None = None, input_schema: Mapping | None = None,
                 introspection: bool = False, category: str = 'user',
                 in_process: str = '', wall_clock_s: float | None = None):
        if not callable(func):
            raise ToolSpecError(f'a function tool needs a callable, got {func!r}')
        self.func = func
        self.in_process = in_process
        if wall_clock_s is not None:
            if not isinstance(wall_clock_s, (int, float)) or wall_clock_s <= 0:
                raise ToolSpecError(f'wall_clock_s must be a positive number of seconds, not '
                                    f'{wall_clock_s!r}')
            self.wall_clock_s = float(wall_clock_s)
        doc = (func.__doc__ or '').strip().split('\n')[0]
        super().__init__(name or getattr(func, '__name__', None), description or doc,
                         input_schema if input_schema is not None else {}, introspection,
                         category)

    def contained_call(self) -> Callable[..., Any]:
        return self.func

    def execute(self, **args):
        return self.func(**args)
