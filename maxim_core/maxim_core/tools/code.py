"""Code and git tools: search_code, run_tests, git_diff, git_commit.

They work inside the filesystem sandbox's root. run_tests and git_commit change or execute
things, so passive mode refuses them; search_code and git_diff only read. pytest and git run
inside the kernel sandbox (`maxim_core.tools.sandbox`) with a timeout; pytest reports through
a JUnit XML file written into the workspace's .maxim-reports folder (the only place it may
write), which gives structured results (counts, and each failure with its message) rather
than a wall of text. run_tests gives pytest the project's own import paths inside the
sandbox (`env_for_tests`: the workspace, its package folders and ``src/``, and the
visible entries of this process's PYTHONPATH and library paths), so a checkout's root
conftest.py imports what it imports outside. search_code walks in Python what read_file
could read (no secret, no hidden path, no link out of the readable folders;
`maxim_core.tools.secrets`), then matches the regular expression in a separate Python
process inside the kernel sandbox, so a pattern that backtracks for ever is killed at the
wall-clock limit (ERROR_TIMEOUT) instead of holding this process.
"""

import json
import os
from pathlib import Path
import re
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET

from maxim_common.errors import ERROR_TIMEOUT
from maxim_core.tools.base import bounded, Tool, ToolError, ToolOutcome
from maxim_core.tools.filesystem import (_inside, IN_PROCESS_TIMEOUT_S, run_process, Sandbox,
                                         SandboxError, walk_readable)
from maxim_core.tools.secrets import secret_reason

SEARCH_MAX_FILE_BYTES = 1_000_000
_SKIP_DIRS = {'.git', '__pycache__', '.venv', 'node_modules', 'build', 'install', 'log'}
GIT_IDENTITY = ('-c', 'user.name=Maxim', '-c', 'user.email=maxim@localhost')
REPORT_DIR = '.maxim-reports'
REPORT_MAX_BYTES = 4_000_000
# Variables of this process handed to pytest inside the sandbox (paths checked one by one).
TEST_PATH_VARS = ('PYTHONPATH', 'LD_LIBRARY_PATH', 'AMENT_PREFIX_PATH', 'CMAKE_PREFIX_PATH',
                  'COLCON_PREFIX_PATH')
TEST_PLAIN_VARS = ('ROS_DISTRO', 'ROS_VERSION', 'ROS_PYTHON_VERSION', 'RMW_IMPLEMENTATION',
                   'ROS_AUTOMATIC_DISCOVERY_RANGE', 'ROS_LOCALHOST_ONLY', 'MUJOCO_GL',
                   'PYOPENGL_PLATFORM')
# The search, in its own process: a JSON request on stdin, JSON lines out.
SEARCH_SCRIPT = r'''
import json, re, sys
req = json.load(sys.stdin)
rx = re.compile(req['pattern'])
limit, total, scanned = req['limit'], 0, 0
for path, rel in req['files']:
    try:
        with open(path, 'rb') as f:
            data = f.read(req['max_bytes'] + 1)
    except OSError:
        continue
    if len(data) > req['max_bytes']:
        continue
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError:
        continue
    scanned += 1
    for n, line in enumerate(text.splitlines(), 1):
        if rx.search(line):
            total += 1
            if total <= limit:
                print(json.dumps({'file': rel, 'line': n, 'text': line.strip()[:200]}))
print(json.dumps({'total': total, 'scanned': scanned}))
'''


class _CodeTool(Tool):
    category = 'code'

    def __init__(self, sandbox: Sandbox):
        super().__init__()
        self.sandbox = sandbox

    def _needs_active(self) -> None:
        if self.sandbox.mode == 'passive':
            raise SandboxError(f'{self.name} is not allowed in passive mode')


class SearchCodeTool(_CodeTool):
    """Searches what read_file could read (`walk_readable`: no secret, no hidden path, no
    link out of the readable folders), within a wall-clock limit; the matching runs in a
    process of its own (in the kernel sandbox when it is there), killed at that limit."""

    name = 'search_code'
    description = 'Search source files with a regular expression.'
    input_schema = {'type': 'object', 'properties': {
        'pattern': {'type': 'string', 'minLength': 1, 'maxLength': 200},
        'path': {'type': 'string', 'default': '.'},
        'file_glob': {'type': 'string', 'default': '*'},
        'limit': {'type': 'integer', 'minimum': 1, 'maximum': 500, 'default': 50}},
        'required': ['pattern']}

    def __init__(self, sandbox: Sandbox, timeout_s: float = IN_PROCESS_TIMEOUT_S):
        super().__init__(sandbox)
        self.timeout_s = timeout_s
        self.wall_clock_s = timeout_s + 10.0       # a backstop: both parts have their own

    def execute(self, pattern: str, path: str = '.', file_glob: str = '*',
                limit: int = 50) -> dict:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ToolError(f'search_code: bad regular expression: {exc}') from exc
        if file_glob.startswith('/') or '..' in file_glob.split('/'):
            raise SandboxError('search_code: file_glob is relative to the path, without ..')
        t0 = time.monotonic()
        base = self.sandbox.check_read(path)
        if base.is_file():
            files = [base]
        else:
            found = walk_readable(self.sandbox, base, '**/' + file_glob, self.timeout_s,
                                  'search_code', skip=_SKIP_DIRS)
            files = sorted(p for p, is_dir in found if not is_dir)
        pairs = []
        for f in files:
            rf = f.resolve()
            rel = rf.relative_to(self.sandbox.root) if _inside(rf, [self.sandbox.root]) else rf
            pairs.append((str(rf), str(rel)))
        remaining = self.timeout_s - (time.monotonic() - t0)
        if remaining <= 0:
            raise ToolError(f'search_code: stopped at its {self.timeout_s:g} s time limit '
                            f'while listing {len(files)} files; narrow the path or file_glob',
                            ERROR_TIMEOUT)
        request = json.dumps({'pattern': pattern, 'files': pairs, 'limit': limit,
                              'max_bytes': SEARCH_MAX_FILE_BYTES}).encode('utf-8')
        lines = self._match(request, remaining, len(files))
        summary = json.loads(lines[-1])
        matches = [json.loads(line) for line in lines[:-1]]
        return {'pattern': pattern, 'matches': matches, 'total': summary['total'],
                'files_scanned': summary['scanned'], 'truncated': summary['total'] > len(matches)}

    def _match(self, request: bytes, timeout_s: float, count: int) -> list[str]:
        argv = [sys.executable, '-I', '-S', '-c', SEARCH_SCRIPT]
        stop = ToolError(f'search_code: stopped at its {self.timeout_s:g} s time limit while '
                         f'searching {count} files (the search process was killed); narrow '
                         'the path, the file_glob or the pattern', ERROR_TIMEOUT)
        process = self.sandbox.process
        if process.available().ok or process.fallback == 'python':
            result = process.run(argv, self.sandbox.root, timeout_s, max_bytes=1_000_000,
                                 stdin=request)
            if result.timed_out:
                raise stop
            code, out, err = result.exit_code, result.stdout, result.stderr
        else:
            # No kernel sandbox and no leave to run without it: the search reads only the
            # files listed above, so it runs as a plain process (still killable).
            try:
                proc = subprocess.run(argv, input=request, capture_output=True,
                                      timeout=timeout_s, cwd=self.sandbox.root)
            except subprocess.TimeoutExpired as exc:
                raise stop from exc
            code = proc.returncode
            out = proc.stdout.decode('utf-8', 'replace')
            err = proc.stderr.decode('utf-8', 'replace')
        lines = out.splitlines()
        if code != 0 or not lines:
            raise ToolError(f'search_code: the search failed (exit code {code}): '
                            f'{err.strip().splitlines()[-1:] or ""}')
        return lines


def env_for_tests(sandbox: Sandbox) -> dict[str, str]:
    """The variables pytest gets inside the sandbox: PYTHONPATH holds the workspace, its
    package folders (``<name>/<name>/__init__.py``, or a setup.py, setup.cfg or
    pyproject.toml) and ``src/``, then the entries of this process's PYTHONPATH; the library
    and prefix paths of this process follow. An entry that names a secret, a hidden path or
    a missing folder is left out."""
    root = sandbox.root

    def keep(entry: str) -> bool:
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            return False
        p = Path(entry).resolve()
        return secret_reason(p) is None and not _inside(p, sandbox.hidden)

    own = [root]
    try:
        children = sorted(c for c in root.iterdir() if c.is_dir() and not c.is_symlink()
                          and not c.name.startswith('.'))
    except OSError:
        children = []
    for child in children:
        if (child / child.name / '__init__.py').is_file() or any(
                (child / f).is_file() for f in ('setup.py', 'setup.cfg', 'pyproject.toml')):
            own.append(child)
    if (root / 'src').is_dir():
        own.append(root / 'src')
    env = {}
    for var in TEST_PATH_VARS:
        entries = [str(p) for p in own] if var == 'PYTHONPATH' else []
        entries += [e for e in os.environ.get(var, '').split(':') if keep(e)]
        if entries:
            env[var] = ':'.join(dict.fromkeys(entries))
    for var in TEST_PLAIN_VARS:
        if os.environ.get(var):
            env[var] = os.environ[var]
    return env


def parse_junit(xml_text: str, limit: int = 20) -> dict:
    """Counts and failing cases from a pytest JUnit XML report."""
    root = ET.fromstring(xml_text)
    suites = [root] if root.tag == 'testsuite' else root.findall('testsuite')
    out = {'tests': 0, 'passed': 0, 'failed': 0, 'errors': 0, 'skipped': 0, 'failures': []}
    for suite in suites:
        for case in suite.iter('testcase'):
            out['tests'] += 1
            name = f'{case.get("classname", "")}::{case.get("name", "")}'.strip(':')
            kinds = {child.tag: child for child in case}
            if 'failure' in kinds or 'error' in kinds:
                kind = 'failure' if 'failure' in kinds else 'error'
                out['failed' if kind == 'failure' else 'errors'] += 1
                if len(out['failures']) < limit:
                    node = kinds[kind]
                    out['failures'].append({'test': name, 'kind': kind,
                                            'message': (node.get('message') or '')[:300],
                                            'detail': bounded(node.text or '', 600)})
            elif 'skipped' in kinds:
                out['skipped'] += 1
            else:
                out['passed'] += 1
    return out


class RunTestsTool(_CodeTool):
    name = 'run_tests'
    description = 'Run pytest and get structured results.'
    input_schema = {'type': 'object', 'properties': {
        'path': {'type': 'string', 'default': '.'},
        'keyword': {'type': 'string', 'default': '', 'maxLength': 200},
        'timeout_s': {'type': 'number', 'exclusiveMinimum': 0, 'maximum': 600,
                      'default': 120}}}

    def execute(self, path: str = '.', keyword: str = '', timeout_s: float = 120.0):
        self._needs_active()
        target = self.sandbox.check_read(path)
        reports = self.sandbox.root / REPORT_DIR
        if reports.is_symlink():
            raise SandboxError(f'run_tests: {REPORT_DIR} is a symlink; remove it')
        reports.mkdir(exist_ok=True)
        report = reports / f'pytest-{uuid.uuid4().hex[:12]}.xml'
        argv = [sys.executable, '-m', 'pytest', str(target), '-q', '-p',
                'no:cacheprovider', f'--junitxml={report}', '--rootdir',
                str(self.sandbox.root)]
        if keyword:
            argv += ['-k', keyword]
        try:
            proc = run_process(argv, self.sandbox, timeout_s, env=env_for_tests(self.sandbox))
            if report.is_symlink() or not report.is_file():
                return ToolOutcome.fail(f'pytest produced no report (exit code '
                                        f'{proc["exit_code"]})', output=proc)
            with open(os.open(report, os.O_RDONLY | os.O_NOFOLLOW), encoding='utf-8') as f:
                try:
                    result = parse_junit(f.read(REPORT_MAX_BYTES))
                except ET.ParseError as exc:
                    return ToolOutcome.fail(f'pytest wrote an unreadable report: {exc}',
                                            output=proc)
        finally:
            if report.is_symlink() or report.exists():
                report.unlink()
            if reports.is_dir() and not reports.is_symlink() and not any(reports.iterdir()):
                reports.rmdir()
        result['exit_code'] = proc['exit_code']
        result['summary'] = (proc['stdout'].strip().splitlines() or [''])[-1][:200]
        if proc.get('not_kept'):
            result['not_kept'] = proc['not_kept']
        if result['failed'] or result['errors'] or proc['exit_code'] not in (0, 5):
            return ToolOutcome.fail(f'{result["failed"]} failed, {result["errors"]} errors',
                                    output=result)
        return ToolOutcome.ok(result)


def _git(sandbox: Sandbox, *args: str, timeout_s: float = 30.0) -> dict:
    return run_process(['git', *GIT_IDENTITY, *args], sandbox, timeout_s)


class GitDiffTool(_CodeTool):
    name = 'git_diff'
    description = 'Show uncommitted changes.'
    input_schema = {'type': 'object', 'properties': {
        'path': {'type': 'string', 'default': ''},
        'staged': {'type': 'boolean', 'default': False}}}

    def execute(self, path: str = '', staged: bool = False) -> ToolOutcome:
        args = ['diff', '--no-color', '--stat', '-p']
        if staged:
            args.append('--cached')
        if path:
            args += ['--', str(self.sandbox.check_read(path))]
        result = _git(self.sandbox, *args)
        if result['exit_code'] != 0:
            return ToolOutcome.fail(f'git diff failed: {result["stderr"][:200]}',
                                    output=result)
        return ToolOutcome.ok({'diff': result['stdout'] or '(no changes)'})


class GitCommitTool(_CodeTool):
    name = 'git_commit'
    description = 'Commit changes.'
    input_schema = {'type': 'object', 'properties': {
        'message': {'type': 'string', 'minLength': 1, 'maxLength': 2000},
        'paths': {'type': 'string', 'default': '',
                  'description': 'space-separated paths; empty = all changes'}},
        'required': ['message']}

    def execute(self, message: str, paths: str = '') -> ToolOutcome:
        self._needs_active()
        targets = [str(self.sandbox.check_write(p)) for p in paths.split()] or ['-A']
        added = _git(self.sandbox, 'add', *(['--'] + targets if targets != ['-A'] else targets))
        if added['exit_code'] != 0:
            return ToolOutcome.fail(f'git add failed: {added["stderr"][:200]}', output=added)
        result = _git(self.sandbox, 'commit', '-m', message)
        if result['exit_code'] != 0:
            return ToolOutcome.fail(f'git commit failed: '
                                    f'{(result["stdout"] + result["stderr"])[:200]}',
                                    output=result)
        head = _git(self.sandbox, 'rev-parse', 'HEAD')['stdout'].strip()
        return ToolOutcome.ok({'commit': head, 'summary': result['stdout'].strip()[:300]},
                              commit=head)


def code_tools(sandbox: Sandbox) -> list[Tool]:
    return [cls(sandbox) for cls in (SearchCodeTool, RunTestsTool, GitDiffTool,
                                     GitCommitTool)]
