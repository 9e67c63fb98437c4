"""The safety corpus executed for real, with the fear gate switched off: the sandbox alone.

Every dangerous call of test/safety_corpus runs: shell lines inside the kernel sandbox
(bubblewrap), the other calls through the tools themselves (their path policy, and the
kernel sandbox for whatever starts a process; a `my_plugin` user tool that runs its argument
as a shell line stands for the worst user tool). Canaries (helpers/canaries.py) must all be
intact after each call and the canary server on 127.0.0.1 must get nothing. The benign shell
lines run in a prepared workspace and must not be stopped by the sandbox, except those that
need the network, which the sandbox cuts by design. Each call is bounded by a timeout.
"""

import json
import os
from pathlib import Path
import re
import shutil
import subprocess

import pytest

from helpers.canaries import CanaryServer, Canaries
from maxim_core.tools.code import code_tools
from maxim_core.tools.communication import communication_tools
from maxim_core.tools.filesystem import filesystem_tools, Sandbox
from maxim_core.tools.robot import robot_tools
from maxim_core.tools.sandbox import CommandTool

CORPUS = Path(__file__).resolve().parent / 'safety_corpus' / 'corpus.jsonl'
CLASSES = Path(__file__).resolve().parent / 'safety_corpus' / 'classes.jsonl'
CALL_TIMEOUT_S = 2.5
# What a command prints when the sandbox (not the command's own logic) stopped it.
SANDBOX_SIGNS = re.compile(r'Read-only file system|Operation not permitted|Permission denied'
                           r'|Could not resolve host|Temporary failure in name resolution'
                           r'|Network is unreachable|Failed to establish a new connection'
                           r'|unable to resolve host|Could not resolve|No route to host'
                           r'|Name or service not known|unable to access')
NEEDS_NETWORK = re.compile(r'\b(curl|wget)\b.*https?://|git push|pip (install|download)')


def rows(expect, path=CORPUS):
    out = [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines()
           if line.strip()]
    return [r for r in out if r['expect'] == expect]


@pytest.fixture
def canaries(tmp_path):
    server = CanaryServer(max_s=1200).start()
    try:
        assert server.reachable()
        c = Canaries(tmp_path, server)
        reason = c.verify()
        if reason is not None:
            pytest.skip(f'the kernel sandbox cannot be used here: {reason}')
        yield c
    finally:
        server.stop()


def tools_for(c):
    sandbox = Sandbox('active', c.workspace, read_roots=[c.outside],
                      hidden=[c.home / '.maxim'], protected=[c.gate], process=c.sandbox())
    tools = filesystem_tools(sandbox) + code_tools(sandbox) + robot_tools(None) + \
        communication_tools(None, None, speak_executable=None)
    tools.append(CommandTool(
        'my_plugin', 'A user tool that runs its argument as a shell line (worst case).',
        {'cmd': {'type': 'string'}, 'query': {'type': 'string'}, 'file': {'type': 'string'}},
        lambda **a: ['bash', '--noprofile', '--norc', '-c',
                     a.get('cmd') or f'echo {a.get("query", "")}; cat {a.get("file", "")}'],
        c.sandbox(), timeout_s=CALL_TIMEOUT_S))
    return {t.name: t for t in tools}


def test_every_dangerous_call_leaves_every_canary_intact(canaries):
    c = canaries
    sandbox = c.sandbox()
    tools = tools_for(c)
    damaged, counts = [], {'shell': 0, 'tool': 0, 'timed_out': 0, 'nonzero': 0,
                           'refused_by_tool': 0}
    dangerous = rows('block') + rows('block', CLASSES)
    for row in dangerous:
        c.reset_workspace()
        if row['tool'] == 'bash':
            result = sandbox.run(['bash', '--noprofile', '--norc', '-c', row['args']['command']],
                                 timeout_s=CALL_TIMEOUT_S)
            counts['shell'] += 1
            counts['timed_out'] += result.timed_out
            counts['nonzero'] += result.exit_code != 0 and not result.timed_out
            problems = c.check(result)
        else:
            out = tools[row['tool']].run(row['args'])
            counts['tool'] += 1
            counts['refused_by_tool'] += not out.success
            problems = c.check()
            if c.secret in out.text(100_000):
                problems.append('the canary secret appeared in the tool output')
        if problems:
            damaged.append((row, problems))
    total = counts['shell'] + counts['tool']
    print(f'\nsandbox alone (gate off): {total} dangerous calls run ({len(rows("block"))} of '
          f'the corpus, {len(rows("block", CLASSES))} of the class set), '
          f'{total - len(damaged)} left every canary intact; {counts["shell"]} shell lines in '
          f'bwrap ({counts["timed_out"]} killed at {CALL_TIMEOUT_S} s, {counts["nonzero"]} '
          f'failed), {counts["tool"]} tool calls ({counts["refused_by_tool"]} refused)')
    assert total == len(dangerous) and total >= 300
    assert not damaged, damaged[:3]


def _prepare(ws: Path) -> None:
    files = {
        'notes.txt': 'robot notes\nTODO: x\n', 'README.md': '# readme\n', 'log.txt': 'log\n',
        'names.txt': 'b\na\nb\n', 'data.csv': 'a,b\n1,2\n', 'data.json': '{"a": 1}\n',
        'data.txt': 'x y\n', 'a.txt': 'a\n', 'b.txt': 'b\n', 'a.bin': 'a', 'b.bin': 'a',
        'image.png': '\x89PNG', 'main.py': 'print(1)\n', 'script.py': 'print("script")\n',
        'app.py': 'import os\nprint(os.environ.get("DEBUG"))\n', 'config.ini': 'foo=1\n',
        'draft.txt': 'draft\n', 'notes.bak': 'bak\n', 'secrets.example': 'X=1\n',
        'src/main.py': 'def main():\n    pass\n', 'src/parser.py': 'def parse():\n    pass\n',
        'tests/test_parser.py': 'def test_parse():\n    assert True\n',
        'tools/gen.py': 'import sys\nopen(sys.argv[-1], "w").write("{}")\n',
        'build/out.bin': 'bin', 'run.sh': 'echo run\n', 'docs/safety.md': 'rm -rf /\n',
        'Makefile': 'test:\n\ttrue\n',
    }
    for name, text in files.items():
        p = ws / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (ws / 'empty_dir').mkdir()
    git = ['git', '-c', 'user.name=t', '-c', 'user.email=t@localhost', '-C', str(ws)]
    subprocess.run(git + ['init', '-q'], check=True, timeout=30)
    subprocess.run(git + ['add', '-A'], check=True, timeout=30)
    subprocess.run(git + ['commit', '-qm', 'one'], check=True, timeout=30)
    (ws / 'src' / 'main.py').write_text('def main():\n    return 1\n')
    subprocess.run(git + ['commit', '-qam', 'two'], check=True, timeout=30)
    (ws / 'src' / 'parser.py').write_text('def parse():\n    return 2\n')


@pytest.mark.skipif(shutil.which('git') is None, reason='git is not installed')
def test_benign_shell_lines_are_not_stopped_by_the_sandbox(canaries, tmp_path):
    c = canaries
    template = tmp_path / 'template'
    template.mkdir()
    _prepare(template)
    sandbox = c.sandbox()
    stopped, network, ran = [], [], 0
    for row in rows('allow'):
        if row['tool'] != 'bash':
            continue
        line = row['args']['command']
        shutil.rmtree(c.workspace / 'work', ignore_errors=True)
        shutil.copytree(template, c.workspace / 'work', symlinks=True)
        result = c.sandbox(env={'GIT_AUTHOR_NAME': 't', 'GIT_AUTHOR_EMAIL': 't@localhost',
                                'GIT_COMMITTER_NAME': 't',
                                'GIT_COMMITTER_EMAIL': 't@localhost'}).run(
            ['bash', '--noprofile', '--norc', '-c', line], cwd=c.workspace / 'work',
            timeout_s=30)
        ran += 1
        assert not c.check(result), line
        failed = result.timed_out or result.exit_code != 0
        if failed and NEEDS_NETWORK.search(line):
            network.append(line)
        elif failed and SANDBOX_SIGNS.search(result.stderr + result.stdout):
            stopped.append((line, result.exit_code, result.stderr[-200:]))
    print(f'\nbenign shell lines in bwrap: {ran} run, {len(stopped)} stopped by the sandbox, '
          f'{len(network)} need the network (cut by design): {network}')
    assert ran >= 150
    assert not stopped, stopped
    assert sandbox.available().ok and os.path.isdir(c.workspace)
