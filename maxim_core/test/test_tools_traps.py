"""Files that code runs on its own (maxim_core/tools/traps.py), read by every layer: the file
tools refuse them with one line, the gate flags a git configuration that runs a command, and
the in-process tools are bounded in time and never block. No process of the kernel sandbox
is started here; the kernel layer is tested in test/test_tool_bounds.py."""

import os
from pathlib import Path
import time

import pytest

from maxim_common.errors import ERROR_TIMEOUT
from maxim_core.fear.patterns import git_config_exec, scan_call, ScanPolicy
from maxim_core.tools.base import Tool, ToolError
from maxim_core.tools.filesystem import filesystem_tools, Sandbox, SandboxError
from maxim_core.tools.sandbox import ProcessSandbox
from maxim_core.tools.traps import (git_config_danger, hooks_paths, kernel_refusal,
                                    trap_reason, write_refusal)

TRAPS = ['/w/.git/hooks/pre-commit', '/w/.git/hooks/post-checkout', '/w/.git/config',
         '/w/.git/config.worktree', '/w/.git/modules/lib/config',
         '/w/.git/modules/lib/hooks/pre-push', '/w/.git/worktrees/b/config.worktree',
         '/w/conftest.py', '/w/tests/unit/conftest.py', '/w/sitecustomize.py',
         '/w/lib/usercustomize.py', '/w/evil.pth', '/w/.venv/lib/site-packages/x.pth',
         '/w/.bashrc', '/w/.bash_profile', '/w/.profile', '/w/.zshrc', '/w/.zshenv',
         '/w/.envrc', '/w/.gitconfig', '/w/.config/fish/config.fish',
         '/w/.config/autostart/x.desktop', '/w/.github/workflows/ci.yml',
         '/w/.gitlab-ci.yml', '/w/.circleci/config.yml', '/w/.travis.yml', '/w/Jenkinsfile',
         '/w/.pre-commit-config.yaml', '/w/.husky/pre-commit', '/w/.vscode/tasks.json',
         '/w/.vscode/settings.json', '/w/sub/.git', '/w/src/__pycache__/m.cpython-311.pyc',
         '/w/src/m.cpython-311-x86_64-linux-gnu.so', '/w/src/m.abi3.so',
         '/w/other.git/hooks/pre-receive', '/w/other.git/config']
NOT_TRAPS = ['/w/Makefile', '/w/setup.py', '/w/noxfile.py', '/w/pyproject.toml',
             '/w/tox.ini', '/w/src/main.py', '/w/tests/test_parser.py', '/w/package.json',
             '/w/.git/refs/heads/config', '/w/.git/hooks/pre-commit.sample',
             '/w/.git/objects/ab/cdef', '/w/.github/CODEOWNERS', '/w/.vscode/launch.json',
             '/w/docs/conftest.md', '/w/.gitignore', '/w/.gitattributes', '/w/lib/libx.so',
             '/w/other.git/objects/ab/cd', '/w/src/hooks/x.py']
INERT = ['[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n'
         '\tlogallrefupdates = true\n',
         '[user]\n\tname = Maxim\n\temail = maxim@localhost\n[remote "origin"]\n'
         '\turl = https://example.com/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
         '[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n',
         '[alias]\n\tst = status\n\tco = checkout\n# fsmonitor = x (a comment)\n']
ARMED = {
    '[core]\n\tfsmonitor = sh -c id\n': ['core.fsmonitor'],
    '[core]\n\thooksPath = .githooks\n': ['core.hookspath'],
    '[core]\n\tsshCommand = ssh -o ProxyCommand=id\n': ['core.sshcommand'],
    '[core] pager = less; sh -c id\n': ['core.pager'],
    '[alias]\n\tx = "!sh -c id"\n': ['alias.x'],
    '[filter "lfs"]\n\tclean = sh -c id\n': ['filter.lfs.clean'],
    '[diff "pdf"]\n\ttextconv = sh -c id\n': ['diff.pdf.textconv'],
    '[credential]\n\thelper = !sh -c id\n': ['credential.helper'],
    '[include]\n\tpath = /tmp/evil.cfg\n': ['include.path'],
    '[core.x]\n\tfsmonitor = x\n': [],            # another section: not core
    '[Core]\n\tFSMonitor = x\n': ['core.fsmonitor'],
    '[submodule "a"]\n\tupdate = !sh -c id\n': ['submodule.a.update'],
}


@pytest.mark.parametrize('path', TRAPS)
def test_every_trap_is_a_trap(path):
    assert trap_reason(path) is not None, path


@pytest.mark.parametrize('path', NOT_TRAPS)
def test_ordinary_files_are_not_traps(path):
    assert trap_reason(path) is None, path


def test_a_link_named_as_something_else_to_a_trap_is_a_trap(tmp_path):
    (tmp_path / 'conftest.py').write_text('')
    (tmp_path / 'helper.py').symlink_to(tmp_path / 'conftest.py')
    assert trap_reason(tmp_path / 'helper.py') is not None


def test_git_configuration_is_judged_by_its_keys():
    for text in INERT:
        assert git_config_danger(text) == [], text
    for text, keys in ARMED.items():
        assert git_config_danger(text) == keys, text


def test_the_gate_and_the_kernel_layer_judge_git_configurations_alike():
    for text in INERT + list(ARMED):
        assert set(git_config_exec(text)) == set(git_config_danger(text)), text


def test_core_hookspath_of_the_workspace_is_a_hooks_folder(tmp_path):
    (tmp_path / '.git').mkdir()
    (tmp_path / '.git' / 'config').write_text('[core]\n\thooksPath = githooks\n')
    assert hooks_paths(tmp_path) == [tmp_path / 'githooks']
    assert trap_reason(tmp_path / 'githooks' / 'pre-commit',
                       hook_dirs=hooks_paths(tmp_path)) is not None
    (tmp_path / '.git' / 'config').write_text('[core]\n\thooksPath = /etc/elsewhere\n')
    assert hooks_paths(tmp_path) == []


def test_kernel_keeps_an_inert_git_config_and_no_other_trap(tmp_path):
    cfg = tmp_path / 'config'
    cfg.write_text(INERT[1])
    assert kernel_refusal('.git/config', tmp_path / '.git' / 'config', cfg) is None
    cfg.write_text('[core]\n\tfsmonitor = sh -c id\n')
    why = kernel_refusal('.git/config', tmp_path / '.git' / 'config', cfg)
    assert 'core.fsmonitor' in why and 'not kept' in why and '\n' not in why
    for rel in ('conftest.py', 'a/x.pth', '.git/hooks/pre-commit', '.bashrc',
                '.github/workflows/x.yml'):
        why = kernel_refusal(rel, tmp_path / rel)
        assert why.startswith(rel + ':') and 'not kept' in why and '\n' not in why
    assert kernel_refusal('src/main.py', tmp_path / 'src' / 'main.py') is None
    assert write_refusal(tmp_path / 'Makefile') is None


# -- the file tools --------------------------------------------------------------------------
@pytest.fixture
def ws(tmp_path):
    root = tmp_path / 'ws'
    (root / '.git' / 'hooks').mkdir(parents=True)
    (root / '.git' / 'config').write_text(INERT[0])
    (root / 'src').mkdir()
    (root / 'src' / 'main.py').write_text('x = 1\n')
    return root


def _python_only(ws: Path) -> Sandbox:
    missing = str(ws.parent / 'no-such-bwrap')
    return Sandbox('active', ws, process=ProcessSandbox(ws, bwrap=missing, fallback='python'))


def test_write_and_edit_refuse_traps_with_one_line(ws):
    tools = {t.name: t for t in filesystem_tools(_python_only(ws))}
    for path in ('conftest.py', 'tests/conftest.py', 'sitecustomize.py', 'lib/evil.pth',
                 '.git/hooks/pre-commit', '.git/config', '.bashrc', '.envrc',
                 '.github/workflows/ci.yml', '.pre-commit-config.yaml', '.husky/pre-commit'):
        out = tools['write_file'].run({'path': path, 'content': 'import os\n'})
        assert not out.success and len(out.error_msg.splitlines()) == 1, path
        assert 'runs on its own' in out.error_msg, out.error_msg
        assert not (ws / path).exists() or path == '.git/config'
    assert (ws / '.git' / 'config').read_text() == INERT[0]
    out = tools['edit_file'].run({'path': '.git/config', 'old_text': 'bare',
                                  'new_text': 'fsmonitor = x\n\tbare'})
    assert not out.success and 'git configuration' in out.error_msg
    assert (ws / '.git' / 'config').read_text() == INERT[0]
    for path, content in (('Makefile', 'all:\n\ttrue\n'), ('setup.py', 'x = 1\n'),
                          ('src/util.py', 'y = 2\n'), ('.git/hooks/x.sample', '#\n')):
        assert tools['write_file'].run({'path': path, 'content': content}).success, path


def test_a_bash_redirect_into_a_trap_is_refused(ws):
    sandbox = _python_only(ws)
    with pytest.raises(SandboxError, match='runs on its own'):
        sandbox.check_command('echo "import os" > conftest.py')
    with pytest.raises(SandboxError, match='runs on its own'):
        sandbox.check_command('echo x >> .git/hooks/pre-commit')


def test_active_mode_with_the_kernel_runs_ordinary_lines(ws, monkeypatch):
    sandbox = _python_only(ws)
    monkeypatch.setattr(Sandbox, 'kernel', lambda self: True)
    for line in ('for f in *.txt; do wc -l $f; done', 'bash -c "ls src"', 'echo $HOME',
                 'find . -name "*.pyc" -delete', 'ls 2>&1 | wc -l', 'ls ~/x 2>/dev/null',
                 'ps aux | grep python', 'DEBUG=1 python3 app.py', '[ -f a ] && echo yes',
                 'sleep 1 & wait', "awk '{print $1}' data.txt", 'node -e "1"'):
        assert sandbox.check_command(line) is None, line
    for line, why in (('cat $(echo notes.txt)', 'substitution'),
                      ('echo `id`', 'substitution'), ('diff <(ls) <(ls -a)', 'substitution'),
                      ('cat ~/.ssh/id_rsa', 'key'), ('cat .env', 'key'),
                      ('echo x > ../out.txt', 'outside'), ('echo x > conftest.py', 'own'),
                      ('echo x &> .bashrc', 'own')):
        with pytest.raises(ToolError, match=why):
            sandbox.check_command(line)
    monkeypatch.setattr(Sandbox, 'kernel', lambda self: False)
    with pytest.raises(SandboxError, match='without the kernel sandbox'):
        sandbox.check_command('echo $HOME')


def test_singularity_reads_what_its_commands_see(tmp_path, monkeypatch):
    home = tmp_path / 'home'
    home.mkdir()
    (home / 'notes.txt').write_text('private\n')
    monkeypatch.setenv('HOME', str(home))
    ws = tmp_path / 'ws'
    ws.mkdir()
    sandbox = Sandbox('singularity', ws, process='python')
    read = {t.name: t for t in filesystem_tools(sandbox)}['read_file']
    out = read.run({'path': str(home / 'notes.txt')})
    assert not out.success and 'hidden from commands' in out.error_msg
    assert 'processes' in read.run({'path': '/proc/1/cmdline'}).error_msg
    assert read.run({'path': '/proc/self/status'}).success
    write = {t.name: t for t in filesystem_tools(sandbox)}['write_file']
    assert not write.run({'path': str(tmp_path / 'x.txt'), 'content': 'x'}).success


# -- in-process bounds -----------------------------------------------------------------------
class Slow(Tool):
    name = 'slow'
    input_schema = {'type': 'object', 'properties': {}}
    wall_clock_s = 0.2

    def execute(self):
        time.sleep(3)
        return 'late'


def test_an_in_process_tool_stops_at_its_wall_clock():
    t0 = time.monotonic()
    out = Slow().run({})
    assert not out.success and out.error_code == ERROR_TIMEOUT
    assert time.monotonic() - t0 < 2 and len(out.error_msg.splitlines()) == 1


def test_file_tools_never_block_on_a_fifo(ws):
    os.mkfifo(ws / 'pipe')
    tools = {t.name: t for t in filesystem_tools(_python_only(ws))}
    t0 = time.monotonic()
    for tool, args in (('read_file', {'path': 'pipe'}),
                       ('write_file', {'path': 'pipe', 'content': 'x'}),
                       ('edit_file', {'path': 'pipe', 'old_text': 'a', 'new_text': 'b'})):
        out = tools[tool].run(args)
        assert not out.success and len(out.error_msg.splitlines()) == 1, (tool, out)
    assert time.monotonic() - t0 < 5


# -- the gate --------------------------------------------------------------------------------
FLAGGED = [
    ('bash', {'command': 'git config core.fsmonitor "sh -c id"'}),
    ('bash', {'command': 'git config --local core.hooksPath .githooks'}),
    ('bash', {'command': 'git config core.sshCommand "ssh -i x"'}),
    ('bash', {'command': 'git config core.pager "sh -c id"'}),
    ('bash', {'command': "git config alias.st '!sh -c id'"}),
    ('bash', {'command': 'git -c core.fsmonitor=./x.sh status'}),
    ('bash', {'command': 'echo "[core]\n\tfsmonitor = sh -c id" >> .git/config'}),
    ('bash', {'command': "printf '[alias]\\n\\tx = !id\\n' >> .git/config"}),
    ('bash', {'command': 'sed -i "s/bare = false/fsmonitor = evil/" .git/config'}),
    ('bash', {'command': "tee -a .git/config <<< '[core] hooksPath = h'"}),
    ('write_file', {'path': '.git/config', 'content': '[core]\n\tfsmonitor = sh -c id\n'}),
    ('write_file', {'path': '/home/u/.gitconfig', 'content': '[alias]\n  x = !rm -rf ~\n'}),
    ('edit_file', {'path': '.git/config', 'old_text': 'bare = false',
                   'new_text': 'bare = false\n\tpager = sh -c id'}),
]
QUIET = [
    ('bash', {'command': 'git config user.name Maxim'}),
    ('bash', {'command': 'git config alias.st status'}),
    ('bash', {'command': 'git config --get core.pager'}),
    ('bash', {'command': 'git -c core.pager=cat log --oneline'}),
    ('bash', {'command': 'echo "[user]\n\tname = x" >> .git/config'}),
    ('bash', {'command': 'git commit -m "document core.pager"'}),
    ('write_file', {'path': '.git/config', 'content': INERT[0]}),
    ('write_file', {'path': 'notes.txt', 'content': '[core]\n\tfsmonitor = x\n'}),
]


def test_the_gate_flags_a_git_config_that_runs_a_command():
    policy = ScanPolicy('/work/ws', mode='active')
    for tool, args in FLAGGED:
        rules = [f.rule for f in scan_call(tool, args, policy)]
        assert 'git_config_exec' in rules, (tool, args)
    for tool, args in QUIET:
        rules = [f.rule for f in scan_call(tool, args, policy)]
        assert 'git_config_exec' not in rules, (tool, args, rules)
