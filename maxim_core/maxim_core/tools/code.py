"""Code and git tools: search_code, run_tests, git_diff, git_commit.

They work inside the filesystem sandbox's root. run_tests and git_commit change or execute
things, so passive mode refuses them; search_code and git_diff only read. pytest and git run
inside the kernel sandbox (`maxim_core.tools.sandbox`) with a timeout; pytest reports through
a JUnit XML file written into the workspace's .maxim-reports folder (the only place it may
write), which gives structured results (counts, and each failure with its message) rather
than a wall of text. search_code reads files in Python and starts no process: it searches
only what read_file could read (no secret, no hidden path, no link out of the readable
folders; `maxim_core.tools.secrets`) and stops with ERROR_TIMEOUT at its wall-clock limit.
"""

import os
import re
import sys
import time
import uuid
import xml.etree.ElementTree as ET

from maxim_core.tools.base import bounded, ERROR_TIMEOUT, Tool, ToolError, ToolOutcome
from maxim_core.tools.filesystem import (_inside, IN_PROCESS_TIMEOUT_S, run_process, Sandbox,
                                         SandboxError, walk_readable)

SEARCH_MAX_FILE_BYTES = 1_000_000
_SKIP_DIRS = {'.git', '__pycache__', '.venv', 'node_modules', 'build', 'install', 'log'}
GIT_IDENTITY = ('-c', 'user.name=Maxim', '-c', 'user.email=maxim@localhost')
REPORT_DIR = '.maxim-reports'
REPORT_MAX_BYTES = 4_000_000


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
    link out of the readable folders), within a wall-clock limit."""

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

    def execute(self, pattern: str, path: str = '.', file_glob: str = '*',
                limit: int = 50) -> dict:
        try:
            regex = re.compile(pattern)
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
        matches, total, scanned = [], 0, 0
        for f in files:
            if time.monotonic() - t0 > self.timeout_s:
                raise ToolError(f'search_code: stopped at its {self.timeout_s:g} s time '
                                f'limit after searching {scanned} of {len(files)} files; '
                                'narrow the path or file_glob', ERROR_TIMEOUT)
            rf = f.resolve()
            if not rf.is_file() or rf.stat().st_size > SEARCH_MAX_FILE_BYTES:
                continue
            scanned += 1
            try:
                text = rf.read_text(encoding='utf-8')
            except UnicodeDecodeError:
                continue      # binary file: nothing to search
            for n, line in enumerate(text.splitlines(), 1):
                if regex.search(line):
                    total += 1
                    if len(matches) < limit:
                        rel = rf.relative_to(self.sandbox.root) if _inside(
                            rf, [self.sandbox.root]) else rf
                        matches.append({'file': str(rel), 'line': n,
                                        'text': line.strip()[:200]})
        return {'pattern': pattern, 'matches': matches, 'total': total,
                'files_scanned': scanned, 'truncated': total > len(matches)}


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
            proc = run_process(argv, self.sandbox, timeout_s)
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
