"""A tool a user registers is contained by the kernel by default, for real, against canaries.

A function given to `register_tool` (or a Tool subclass written outside maxim_core) runs each
call in a Python process of its own inside the registry's kernel sandbox
(`maxim_core/tools/contained.py`): a registered tool that tries to read a secret in the home,
write a file outside the workspace, reach a UNIX-socket listener or the loopback fails with
one line saying why; a benign one works in the workspace. The same function called in this
process does read the secret, which is the hole the kernel closes. Running in this process
instead is declared (`in_process`, with its reason) and logged.

The user's tools live in a module written into the test's temporary folder, which the
sandbox hides: the module itself is bound read-only inside so its process can import it.
Canaries come from helpers/canaries.py; every call is bounded by a wall clock; every listener
is closed and removed afterwards. When bwrap cannot start here the tests skip with the reason.
"""

import importlib
import json
import logging
import os
from pathlib import Path
import shutil
import socket
import subprocess
import sys
import tempfile
from types import SimpleNamespace
import uuid
import venv

import pytest

from helpers.canaries import CanaryServer, Canaries, TEST_LIMITS
from maxim_core.prompt.tools import ToolSpecError
from maxim_core.tools import build_tool_registry, FunctionTool, register_tool, ToolRegistry
from maxim_common.errors import ERROR_BLOCKED, ERROR_TIMEOUT, ERROR_UNAVAILABLE
from maxim_core.tools.contained import containment_of

PLAIN = '''"""A user's tools, written as a person would: plain Python, no import of maxim."""
import os
import socket
import subprocess
import time


def read_text(path):
    """Read a text file."""
    with open(path, encoding='utf-8') as f:
        return f.read()


def write_text(path, text):
    """Write a text file."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    return {'path': path, 'bytes': len(text)}


def connect_unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(path)
        s.sendall(b'leak')
    finally:
        s.close()
    return 'connected'


def connect_tcp(port):
    with socket.create_connection(('127.0.0.1', port), timeout=2) as s:
        s.sendall(b'GET /leak HTTP/1.0\\r\\n\\r\\n')
    return 'connected'


def shell(line):
    p = subprocess.run(['sh', '-c', line], capture_output=True, text=True, timeout=10)
    return {'exit_code': p.returncode, 'stdout': p.stdout, 'stderr': p.stderr}


def word_count(path):
    """Count the words of a file."""
    print('counting', path)            # what a tool prints is not its result
    with open(path, encoding='utf-8') as f:
        return {'words': len(f.read().split())}


def add(a, b):
    return a + b


def pid():
    return os.getpid()


def sleepy(seconds):
    time.sleep(seconds)
    return 'woke'
'''

WITH_MAXIM = '''"""A user's Tool subclass, and a function that answers with maxim's errors."""
from maxim_common.errors import ERROR_BLOCKED
from maxim_core.tools.base import Tool, ToolError, ToolOutcome


class FindWord(Tool):
    name = 'find_word'
    description = 'Lines of a file that hold a word.'
    input_schema = {'path': {'type': 'string'}, 'word': {'type': 'string'}}

    def execute(self, path, word):
        with open(path, encoding='utf-8') as f:
            lines = [n for n, line in enumerate(f, 1) if word in line]
        return ToolOutcome.ok({'lines': lines}, word=word)


def refuse(why):
    raise ToolError(why, ERROR_BLOCKED)
'''

SCHEMAS = {
    'read_text': {'path': 'string'}, 'write_text': {'path': 'string', 'text': 'string'},
    'connect_unix': {'path': 'string'}, 'connect_tcp': {'port': 'integer'},
    'shell': {'line': 'string'}, 'word_count': {'path': 'string'},
    'add': {'a': 'number', 'b': 'number'}, 'pid': {}, 'sleepy': {'seconds': 'number'},
    'refuse': {'why': 'string'},
}


@pytest.fixture
def canaries(tmp_path, monkeypatch):
    server = CanaryServer(max_s=600).start()
    try:
        assert server.reachable()
        c = Canaries(tmp_path, server)
        reason = c.verify()
        if reason is not None:
            pytest.skip(f'the kernel sandbox cannot be used here: {reason}')
        c.reset_workspace()
        monkeypatch.setenv('HOME', str(c.home))      # the registry's sandbox hides this home
        yield c
    finally:
        server.stop()


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """The user's modules, in a folder of the temporary one (hidden from the sandbox)."""
    folder = tmp_path / 'plugins'
    folder.mkdir()
    names = {'plain': f'user_tools_{uuid.uuid4().hex[:8]}',
             'with_maxim': f'user_tools_{uuid.uuid4().hex[:8]}'}
    (folder / f'{names["plain"]}.py').write_text(PLAIN)
    (folder / f'{names["with_maxim"]}.py').write_text(WITH_MAXIM)
    monkeypatch.syspath_prepend(str(folder))
    modules = {k: importlib.import_module(v) for k, v in names.items()}
    yield SimpleNamespace(folder=folder, **modules)
    for name in names.values():
        sys.modules.pop(name, None)


def registry_of(c, mode='active', **kw):
    """The tools as the Mind builds them, on the canaries."""
    return build_tool_registry(mode, c.workspace, read_roots=[c.outside],
                               hidden=[c.home / '.maxim'], protected=[c.gate],
                               process='bwrap', limits=TEST_LIMITS, **kw)


def register(reg, module, *names, **kw):
    for name in names:
        register_tool(getattr(module, name), registry=reg, input_schema=SCHEMAS[name],
                      wall_clock_s=kw.get('wall_clock_s', 30))


class Listener:
    """An AF_UNIX listener that counts the connections it was offered (never blocks)."""

    def __init__(self, folder: Path):
        self.path = folder / 'l.sock'
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        self.sock.listen(16)
        self.sock.setblocking(False)

    def pending(self) -> int:
        n = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return n
            conn.close()
            n += 1

    def close(self) -> None:
        self.sock.close()
        if self.path.exists():
            self.path.unlink()


def _listeners(c) -> tuple[list[Listener], list[Path]]:
    """Listeners under /var/tmp and /run when writable, in the bound outside folder and in
    the workspace; and the folders made for them."""
    made = []
    for base in ('/var/tmp', '/run'):
        if os.path.isdir(base) and os.access(base, os.W_OK | os.X_OK):
            made.append(Path(tempfile.mkdtemp(prefix='maxim-sock-', dir=base)))
    return [Listener(f) for f in made + [c.outside, c.workspace]], made


def _refused(out, c) -> None:
    assert not out.success, out.output
    assert len(out.error_msg.splitlines()) == 1, out.error_msg
    assert 'kernel sandbox' in out.error_msg, out.error_msg
    assert c.secret not in out.error_msg + out.text(100_000)


# -- hostile ---------------------------------------------------------------------------------
def test_a_registered_function_cannot_reach_outside_the_workspace(canaries, plugins):
    c = canaries
    reg = registry_of(c)
    register(reg, plugins.plain, 'read_text', 'write_text', 'connect_unix', 'connect_tcp',
             'shell')
    assert reg.containment('read_text') == 'kernel'
    # In this process the same function reads the secret: the hole the kernel closes.
    assert c.secret in plugins.plain.read_text(str(c.secret_file))
    own_source = plugins.folder / f'{plugins.plain.__name__}.py'
    listeners, made = _listeners(c)
    try:
        calls = [('read_text', {'path': str(c.secret_file)}),
                 ('read_text', {'path': str(c.home / '.maxim' / 'memory.db')}),
                 ('read_text', {'path': str(c.unbound_file)}),
                 ('write_text', {'path': str(c.outside_file), 'text': 'pwned'}),
                 ('write_text', {'path': str(c.gate / 'patterns.py'), 'text': 'BLOCK = None'}),
                 ('write_text', {'path': str(c.outside / 'new.txt'), 'text': 'pwned'}),
                 ('write_text', {'path': str(own_source), 'text': 'pwned'}),
                 ('write_text', {'path': '/etc/maxim-pwned', 'text': 'pwned'}),
                 ('connect_tcp', {'port': c.server.port})]
        calls += [('connect_unix', {'path': str(lst.path)}) for lst in listeners]
        for name, args in calls:
            _refused(reg.get(name).run(args), c)
        # A folder the sandbox does not show is written in its private /tmp, then dropped.
        reg.get('write_text').run({'path': str(c.unbound_file), 'text': 'pwned'})
        line = (f'cat {c.secret_file}; echo pwned > {c.outside_file}; '
                f'echo pwned > {c.gate / "patterns.py"}; ls -A /run /var/tmp')
        out = reg.get('shell').run({'line': line})
        assert out.success and c.secret not in out.text(100_000), out.output
        assert 'Read-only file system' in out.output['stderr'], out.output
        assert [lst.pending() for lst in listeners] == [0] * len(listeners)
    finally:
        for lst in listeners:
            lst.close()
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)
    assert own_source.read_text() == PLAIN
    assert not c.check()


def test_a_registered_tool_class_is_contained_too(canaries, plugins):
    c = canaries
    reg = registry_of(c)
    reg.register(plugins.with_maxim.FindWord())
    register(reg, plugins.with_maxim, 'refuse')
    assert reg.containment('find_word') == 'kernel'
    _refused(reg.get('find_word').run({'path': str(c.secret_file), 'word': 'BEGIN'}), c)
    out = reg.get('find_word').run({'path': 'notes.txt', 'word': 'TODO'})
    assert out.success and out.output == {'lines': [2]} and out.data['word'] == 'TODO', out
    out = reg.get('refuse').run({'why': 'not today'})
    assert not out.success and out.error_code == ERROR_BLOCKED and 'not today' in out.error_msg
    assert not c.check()


# -- benign ----------------------------------------------------------------------------------
def test_a_benign_registered_function_works_in_the_workspace(canaries, plugins):
    c = canaries
    reg = registry_of(c)
    register(reg, plugins.plain, 'word_count', 'write_text', 'read_text', 'add')
    out = reg.get('word_count').run({'path': 'notes.txt'})
    assert out.success and out.output == {'words': 3}, out          # prints are not results
    assert out.data['contained'] == 'kernel' and out.data['sandboxed'] is True
    out = reg.get('write_text').run({'path': 'out/report.txt', 'text': 'done'})
    assert out.success, out.error_msg
    assert (c.workspace / 'out' / 'report.txt').read_text() == 'done'
    assert reg.get('read_text').run({'path': str(c.outside_file)}).output == 'outside canary\n'
    assert reg.get('add').run({'a': 2, 'b': 3}).output == 5
    passive = registry_of(c, mode='passive')
    register(passive, plugins.plain, 'write_text', 'read_text')
    out = passive.get('write_text').run({'path': 'x.txt', 'text': 'x'})
    assert not out.success and 'Read-only file system' in out.error_msg
    assert passive.get('read_text').run({'path': 'out/report.txt'}).output == 'done'
    assert not c.check()


def test_a_registered_tool_is_killed_at_its_wall_clock(canaries, plugins):
    reg = registry_of(canaries)
    register(reg, plugins.plain, 'sleepy', wall_clock_s=1)
    out = reg.get('sleepy').run({'seconds': 60})
    assert not out.success and out.error_code == ERROR_TIMEOUT, out
    assert 'killed' in out.error_msg and len(out.error_msg.splitlines()) == 1


# -- declaring, refusing ---------------------------------------------------------------------
def test_running_in_this_process_is_declared_and_logged(plugins, caplog):
    reg = ToolRegistry()
    why = 'arithmetic on its arguments: no path, no side effect'
    with caplog.at_level(logging.WARNING, logger='maxim_core.tools.contained'):
        register_tool(plugins.plain.add, registry=reg, input_schema=SCHEMAS['add'],
                      in_process=why)
        register_tool(plugins.plain.pid, registry=reg, in_process=why)
    assert caplog.text.count('runs in this process, outside the kernel sandbox') == 2
    assert why in caplog.text and "'add'" in caplog.text
    assert reg.containment('add') == 'in-process'
    assert reg.get('add').run({'a': 1, 'b': 2}).output == 3
    assert reg.get('pid').run({}).output == os.getpid()              # this very process
    for bad in (True, 1, ['x']):
        with pytest.raises(ToolSpecError, match='in_process takes the reason'):
            register_tool(plugins.plain.add, name='add_bad', registry=reg, in_process=bad)
    assert 'add_bad' not in reg
    built = build_tool_registry('passive', plugins.folder)
    assert built.containment('bash') == 'built-in' and built.containment('read_file') == \
        'built-in'


def test_a_tool_its_process_cannot_import_is_refused_at_registration():
    reg = ToolRegistry()

    def nested(x):
        return x

    for func in (lambda x: x, nested):
        with pytest.raises(ToolSpecError, match='module-level') as err:
            register_tool(func, name='helper', registry=reg)
        assert len(str(err.value).splitlines()) == 1 and 'in_process' in str(err.value)
    assert 'helper' not in reg
    unregistered = FunctionTool(nested, name='helper')     # a tool run by its own code, here
    assert unregistered.run({'x': 1}).output == 1 and containment_of(unregistered) == 'kernel'


def test_a_registry_without_a_sandbox_refuses_user_tools_until_it_has_one(canaries, plugins):
    c = canaries
    reg = ToolRegistry()
    register(reg, plugins.plain, 'word_count')
    out = reg.get('word_count').run({'path': 'notes.txt'})
    assert not out.success and out.error_code == ERROR_UNAVAILABLE, out
    assert len(out.error_msg.splitlines()) == 1 and 'refused' in out.error_msg
    reg.contain_with(c.sandbox())
    assert reg.get('word_count').run({'path': 'notes.txt'}).output == {'words': 3}
    early = ToolRegistry()                   # registered first, then the built-in set added
    register(early, plugins.plain, 'read_text')
    registry_of(c, registry=early)
    _refused(early.get('read_text').run({'path': str(c.secret_file)}), c)
    assert early.get('read_text').run({'path': 'notes.txt'}).output.startswith('a\n')
    assert not c.check()


# -- any checkout path -----------------------------------------------------------------------
WHERE = '''"""A user's tool that says where the project it runs with was imported from."""
from maxim_core.tools.base import Tool, ToolOutcome


class Where(Tool):
    name = 'where'
    description = 'Where maxim_core and maxim_common come from, and whether they can be written.'
    input_schema = {'paths': {'type': 'array', 'items': {'type': 'string'}}}

    def execute(self, paths):
        import os
        import maxim_common
        import maxim_core
        read = {}
        for path in paths:
            try:
                with open(path, encoding='utf-8') as f:
                    read[path] = f.read()
            except OSError as exc:
                read[path] = type(exc).__name__
        core = os.path.dirname(maxim_core.__file__)
        return ToolOutcome.ok({'core': maxim_core.__file__, 'common': maxim_common.__file__,
                               'writable': os.access(core, os.W_OK), 'read': read})
'''

DRIVER = '''
import json, sys
import maxim_core
from maxim_core.tools import build_tool_registry
import user_tools_where
reg = build_tool_registry('active', sys.argv[1], process='bwrap')
reg.register(user_tools_where.Where())
out = reg.get('where').run({'paths': sys.argv[2:]})
print(json.dumps({'here': maxim_core.__file__, 'containment': reg.containment('where'),
                  'success': out.success, 'output': out.output, 'error': out.error_msg}))
'''


def test_a_contained_tool_imports_the_project_from_a_checkout_anywhere():
    """A checkout and its virtual environment under /tmp (hidden by the sandbox), in a folder
    whose name has a space and a non-ASCII character, laid out as colcon builds it
    (build/<pkg>/<pkg> a symlink to the source): a contained tool imports the project from
    there, read-only, and a secret kept in the checkout stays hidden."""
    from maxim_core.tools.sandbox import probe
    found = probe()
    if not found.ok:
        pytest.skip(f'the kernel sandbox cannot be used here: {found.reason}')
    base = Path(tempfile.mkdtemp(prefix='maxim-anywhere-', dir='/tmp'))
    try:
        root = base / 'a checkout é'
        source = Path(__file__).resolve().parent.parent
        entries = []
        for pkg in ('maxim_common', 'maxim_core'):
            shutil.copytree(source / pkg / pkg, root / pkg / pkg,
                            ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
            (root / 'build' / pkg).mkdir(parents=True)
            (root / 'build' / pkg / pkg).symlink_to(root / pkg / pkg)
            entries.append(str(root / 'build' / pkg))
        secret = root / 'build' / 'maxim_core' / '.env'
        secret.write_text('API_KEY=canary-anywhere\n')
        notes = secret.with_name('notes.txt')
        notes.write_text('plain notes\n')
        venv.EnvBuilder(with_pip=False, symlinks=True).create(root / '.venv')
        (root / 'plugins').mkdir()
        (root / 'plugins' / 'user_tools_where.py').write_text(WHERE)
        workspace, home = root / 'ws', root / 'home'
        workspace.mkdir()
        home.mkdir()
        # The third-party packages the project needs, from this environment (visible inside).
        third = [p for p in sys.path if p.endswith('site-packages') and
                 Path(p).resolve().is_relative_to(Path(sys.prefix).resolve())]
        env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'), 'HOME': str(home),
               'LANG': 'C.UTF-8',
               'PYTHONPATH': os.pathsep.join(entries + [str(root / 'plugins')] + third)}
        proc = subprocess.run([str(root / '.venv' / 'bin' / 'python'), '-c', DRIVER,
                               str(workspace), str(secret), str(notes)],
                              env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        reply = json.loads(proc.stdout.strip().splitlines()[-1])
        assert reply['here'].startswith(str(root)), reply          # the copy, not this checkout
        assert reply['containment'] == 'kernel'
        assert reply['success'], reply['error']
        out = reply['output']
        assert out['core'].startswith(str(root / 'build' / 'maxim_core')), out
        assert out['common'].startswith(str(root / 'build' / 'maxim_common')), out
        assert out['writable'] is False, out
        assert out['read'][str(notes)] == 'plain notes\n', out          # bound, readable
        assert 'canary-anywhere' not in json.dumps(reply), out         # a secret: hidden
    finally:
        shutil.rmtree(base, ignore_errors=True)
