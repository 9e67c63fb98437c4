"""Registered tools run by the kernel: a tool a user registers gets the treatment of the
built-in tools that start processes, by default.

A tool written outside the maxim_core package (a function given to `register_tool` or
`@tool`, or a `Tool` subclass) runs each call, once registered, in a Python process of its
own inside its registry's kernel sandbox (`ProcessSandbox`, the one `build_tool_registry`
makes for the mode: read-only root, the workspace the only writable place (read-only too in
passive mode), homes, secrets, ``/run`` and socket files hidden, no network, resource limits,
the disk quota, traps not kept, a scrubbed environment), killed at its wall clock
(`Tool.wall_clock_s`, default `DEFAULT_TIMEOUT_S`).

The call goes to that process pickled, on stdin, the way `concurrent.futures`'s process pool
sends one: by reference, so the function (or the Tool's class) must be importable by name (a
module-level ``def`` or ``class``, not a lambda, a nested function or ``__main__``). That is
checked when the tool is registered. When its module lies in a folder hidden from the sandbox
(a home, ``/tmp``), that module (or its top-level package) is bound read-only inside, so the
process can import it; so are the folders of this process's import path that the sandbox
would hide (the project's packages, its build and install trees, the virtual environment), so
a checkout works wherever it lives: under ``/tmp``, in a home, in a path with spaces
(`ProcessSandbox.import_binds`). The result comes back as JSON on stdout, never pickled: this
process never unpickles what contained code wrote. What the tool prints goes to stderr.

Opting out is explicit: ``in_process='<why it holds no path and has no side effect>'`` on the
registration (or as a class attribute of a Tool subclass). Such a tool runs in this process,
and its registration is logged at WARNING level with that reason. Built-in tools (classes
defined in the maxim_core package) contain themselves: their commands run in the kernel
sandbox and their in-process work applies the same rules.
"""

import dataclasses
import json
import logging
import os
from pathlib import Path
import pickle
import sys
from typing import Any, Callable

from maxim_common.errors import ERROR_EXECUTION, ERROR_TIMEOUT, ERROR_UNAVAILABLE
import maxim_core
from maxim_core.prompt.tools import ToolSpecError
from maxim_core.tools.base import FunctionTool, Tool, ToolError, ToolOutcome
from maxim_core.tools.sandbox import ProcessSandbox, SandboxUnavailable
from maxim_core.tools.secrets import secret_reason

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0        # a contained call without a wall clock of its own
RESULT_MAX_BYTES = 1_000_000    # the JSON result a contained call may send back
ERROR_MAX_CHARS = 400
KERNEL_NOTE = ('(registered tools run in the kernel sandbox: the workspace is the only '
               'writable place; homes, secrets, /run and socket files are hidden; no network)')
BUILT_IN = 'built-in'
KERNEL = 'kernel'
IN_PROCESS = 'in-process'
_PACKAGE = Path(maxim_core.__file__).resolve().parent

# The contained process: a JSON line (its import path) then a pickle (the callable and its
# arguments) on stdin; one JSON reply on the real stdout, whatever the call prints.
CHILD = r'''
import json, os, pickle, sys
reply_to = os.fdopen(os.dup(1), 'w', encoding='utf-8')
os.dup2(2, 1)
head = json.loads(sys.stdin.buffer.readline())
sys.path[:0] = [p for p in head['path'] if p not in sys.path]


def send(reply):
    try:
        text = json.dumps(reply, default=str)
    except (TypeError, ValueError, RecursionError) as exc:
        text = json.dumps({'ok': False, 'type': 'TypeError', 'code': 0, 'os': False,
                           'error': 'the result cannot be sent as JSON: %s' % exc})
    reply_to.write(text)
    reply_to.flush()


try:
    func, args = pickle.load(sys.stdin.buffer)
    result = func(**args)
except BaseException as exc:
    base = sys.modules.get('maxim_core.tools.base')
    code = exc.code if base is not None and isinstance(exc, base.ToolError) else 0
    send({'ok': False, 'type': type(exc).__name__, 'error': str(exc), 'code': code,
          'os': isinstance(exc, OSError)})
else:
    base = sys.modules.get('maxim_core.tools.base')
    if base is not None and isinstance(result, base.ToolOutcome):
        send({'ok': True, 'outcome': {'success': result.success, 'output': result.output,
                                      'error_code': result.error_code,
                                      'error_msg': result.error_msg, 'data': result.data}})
    else:
        send({'ok': True, 'result': result})
'''


def is_built_in(tool: Tool) -> bool:
    """A tool whose class is defined in the maxim_core package itself (not FunctionTool,
    which wraps a user's function)."""
    cls = type(tool)
    if cls is FunctionTool:
        return False
    module = sys.modules.get(cls.__module__)
    where = getattr(module, '__file__', None)
    return bool(where) and _inside(Path(where).resolve(), _PACKAGE)


def containment_of(tool: Tool) -> str:
    """'built-in', 'in-process' (declared, with a reason) or 'kernel' (the default)."""
    if is_built_in(tool):
        return BUILT_IN
    return IN_PROCESS if declared_in_process(tool) else KERNEL


def declared_in_process(tool: Tool) -> str:
    """The tool's reason to run in this process, or '' when it declares none.
    ToolSpecError when `in_process` is not a string."""
    reason = getattr(tool, 'in_process', '')
    if reason is None or reason is False:
        return ''
    if not isinstance(reason, str):
        raise ToolSpecError(f'tool {tool.name!r}: in_process takes the reason it may run in '
                            'this process (a string: it holds no path and has no side '
                            f'effect), not {reason!r}')
    return ' '.join(reason.split())


def admit(tool: Tool, process: ProcessSandbox | None) -> str:
    """Make `tool` ready to be registered: a user tool gets a `KernelRunner` on `process`
    (None: its calls are refused until the registry gets one), or, when it declares
    `in_process`, is logged with its reason. The containment it got. ToolSpecError (one
    line) when its call cannot be sent to a process of its own."""
    kind = containment_of(tool)
    if kind == BUILT_IN:
        return kind
    if kind == IN_PROCESS:
        tool._runner = None
        log.warning('tool %r runs in this process, outside the kernel sandbox, as its '
                    'declaration says: %s', tool.name, declared_in_process(tool))
        return kind
    target = tool.contained_call()
    _check_sendable(tool.name, target)
    tool._runner = KernelRunner(process, import_roots(target))
    return kind


def _check_sendable(name: str, target: Callable) -> None:
    hint = ("; or declare in_process='<why it holds no path and has no side effect>' to "
            'run it in this process')
    modules = {getattr(target, '__module__', None)}
    owner = getattr(target, '__self__', None)
    if owner is not None:
        modules.add(type(owner).__module__)
    if '__main__' in modules:
        raise ToolSpecError(f'tool {name!r} runs in a process of its own inside the kernel '
                            'sandbox, which cannot import __main__: define it in a module'
                            + hint)
    try:
        pickle.dumps(target, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError, RecursionError) as exc:
        raise ToolSpecError(f'tool {name!r} runs in a process of its own inside the kernel '
                            'sandbox, which imports it by name: make it a module-level '
                            f'function or class (not a lambda or a nested function): '
                            f'{_one_line(str(exc), 160)}' + hint) from exc


def import_roots(target: Callable) -> list[tuple[Path, Path]]:
    """(what to bind read-only, the import path entry that finds it) for the modules `target`
    is imported from in its process: the top-level package folder, or the module's file."""
    names = {getattr(target, '__module__', None)}
    owner = getattr(target, '__self__', None)
    if owner is not None:
        names.add(type(owner).__module__)
    out = []
    for name in sorted(n for n in names if n):
        top = sys.modules.get(name.split('.')[0])
        where = getattr(top, '__file__', None)
        if not where:
            continue                 # built in, or a namespace package: nothing to bind
        path = Path(where).resolve()
        if path.name == '__init__.py':
            out.append((path.parent, path.parent.parent))
        else:
            out.append((path, path.parent))
    return out


class KernelRunner:
    """Runs a registered tool's calls in a Python process inside a `ProcessSandbox`."""

    def __init__(self, process: ProcessSandbox | None, roots: list[tuple[Path, Path]]):
        self.roots = roots
        self._base: ProcessSandbox | None = None
        self._made: dict[tuple, ProcessSandbox] = {}
        self.bind(process)

    def bind(self, process: ProcessSandbox | None) -> None:
        """Use `process` (a registry's sandbox) for the calls (`process_for` adds what the
        tool imports)."""
        if process is not self._base:
            self._base = process
            self._made = {}

    @property
    def process(self) -> ProcessSandbox | None:
        """The sandbox of a call made now, with this process's import path."""
        return self.process_for(_import_path(self.roots))

    def process_for(self, entries: list[str]) -> ProcessSandbox | None:
        """The registry's sandbox, with what the call imports made visible read-only when it
        lies in a folder the sandbox hides: the tool's own module, and the folders of the
        import path `entries` (the project's packages, its build and install trees, the
        environment), so a checkout works wherever it lives (`ProcessSandbox.import_binds`).
        One sandbox (one session) per set of extra folders."""
        process = self._base
        if process is None:
            return None
        extra = [src for src, _ in self.roots
                 if not process.sees(src) and not any(_inside(src, h) for h in process.hidden)
                 and secret_reason(src) is None]
        # A tool's own import root gets only its module (above), not the whole folder.
        own = {str(e) for _, e in self.roots}
        extra += [p for p in process.import_binds(e for e in entries if e not in own)
                  if not any(_inside(p, e) for e in extra)]
        if not extra:
            return process
        key = tuple(extra)
        if key not in self._made:
            self._made = {key: dataclasses.replace(
                process, read_roots=list(process.read_roots) + extra)}
        return self._made[key]

    def call(self, tool: Tool, args: dict) -> ToolOutcome:
        entries = _import_path(self.roots)
        process = self.process_for(entries)
        if process is None:
            raise SandboxUnavailable(
                f'refused: {tool.name} is a registered tool, which runs only in the kernel '
                'sandbox, and its registry has none (register it in the registry '
                'build_tool_registry makes, or give one with ToolRegistry.contain_with)')
        timeout_s = float(tool.wall_clock_s or DEFAULT_TIMEOUT_S)
        try:
            call = pickle.dumps((tool.contained_call(), args), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError, RecursionError) as exc:
            raise ToolError(_one_line(f'{tool.name}: cannot be sent to its process in the '
                                      f'kernel sandbox: {exc}')) from exc
        stdin = json.dumps({'path': entries}).encode('utf-8') + b'\n' + call
        argv = [sys.executable, '-I', '-S', '-c', CHILD]
        result = process.run(argv, timeout_s=timeout_s, max_bytes=RESULT_MAX_BYTES,
                             stdin=stdin)
        if result.timed_out:
            raise ToolError(f'{tool.name} did not finish within its {timeout_s:g} s wall clock '
                            '(its process in the kernel sandbox was killed)', ERROR_TIMEOUT)
        reply = _reply(result.stdout) if not result.stdout_dropped else None
        if reply is None:
            why = result.stderr.strip().splitlines()[-1:] or ['']
            size = (f'its result passed {RESULT_MAX_BYTES} bytes' if result.stdout_dropped
                    else f'exit code {result.exit_code}')
            raise ToolError(_one_line(f'{tool.name}: its process in the kernel sandbox ended '
                                      f'without a result ({size}) {why[0]}'.rstrip()))
        if not reply.get('ok'):
            note = f' {KERNEL_NOTE}' if reply.get('os') is True else ''
            message = _one_line(f'{tool.name}: {reply.get("type", "Error")}: '
                                f'{reply.get("error", "")}') + note
            raise ToolError(message, _code(reply.get('code')))
        outcome = _outcome(reply)
        outcome.data['contained'] = KERNEL
        outcome.data['sandboxed'] = result.sandboxed
        if result.warning:
            outcome.data['warning'] = result.warning
        if result.not_kept:
            # What the call wrote that the kernel layer did not keep, one line each.
            outcome.data['not_kept'] = result.not_kept[:50]
            if isinstance(outcome.output, dict):
                outcome.output.setdefault('not_kept', result.not_kept[:50])
        return outcome


def _import_path(roots: list[tuple[Path, Path]]) -> list[str]:
    """The import path of a contained call: this process's, then the tool's own roots."""
    entries = [p for p in sys.path if p and os.path.isabs(p)]
    return entries + [str(e) for _, e in roots if str(e) not in entries]


def _reply(stdout: str) -> dict | None:
    try:
        reply = json.loads(stdout)
    except (ValueError, RecursionError):
        return None
    return reply if isinstance(reply, dict) else None


def _code(value: Any) -> int:
    """A ToolResult.ERROR_* code from the contained process (any other value: execution)."""
    if isinstance(value, int) and not isinstance(value, bool) and \
            0 < value <= ERROR_UNAVAILABLE:
        return value
    return ERROR_EXECUTION


def _outcome(reply: dict) -> ToolOutcome:
    body = reply.get('outcome')
    if not isinstance(body, dict):
        return ToolOutcome.ok(reply.get('result'))
    data = body.get('data') if isinstance(body.get('data'), dict) else {}
    success = bool(body.get('success'))
    return ToolOutcome(success, body.get('output'),
                       0 if success else _code(body.get('error_code')),
                       _one_line(str(body.get('error_msg') or '')), data=dict(data))


def _one_line(text: str, limit: int = ERROR_MAX_CHARS) -> str:
    line = ' '.join(text.split())
    return line if len(line) <= limit else line[:limit] + '...'


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
