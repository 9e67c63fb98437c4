"""`maxim scenario ...` runs the scenario runner (maxim_eval, which no product package imports)
as a child process: its arguments, terminal and exit status are the command's, and a stop
reaches it once. These tests stand a small module in for maxim_eval.cli."""

import os
import select
import signal
import subprocess
import sys
import textwrap
import time

import pytest

CHILD = textwrap.dedent('''
    import os, signal, sys, time
    # Ctrl-C as a terminal gives it, whatever the shell that started the tests left (a job
    # started in the background of a script inherits SIGINT ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if '--wait' in sys.argv:
        try:
            print('child', sys.argv[1:], flush=True)
            time.sleep(60)
        except KeyboardInterrupt:
            print('stopping', flush=True)
            time.sleep(0.5)          # a second SIGINT here would cut the clean-up short
            print('clean', flush=True)
            raise
    print('child', sys.argv[1:], flush=True)
    if '--read' in sys.argv:
        print('read', sys.stdin.readline().strip(), flush=True)
    if '--stubborn' in sys.argv:
        import signal
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print('ignoring', flush=True)
        time.sleep(60)
    sys.exit(int(os.environ.get('CHILD_CODE', '0')))
''')
DRIVER = textwrap.dedent('''
    import sys
    import maxim_bringup.cli as cli
    cli.STOP_GRACE_S = float(sys.argv[1])
    sys.exit(cli._scenario(sys.argv[2:], module='fake_scenario'))
''')


@pytest.fixture
def driver(tmp_path):
    (tmp_path / 'fake_scenario.py').write_text(CHILD)
    (tmp_path / 'driver.py').write_text(DRIVER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path)] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]))

    def command(*args, grace=30.0, code=0):
        return ([sys.executable, str(tmp_path / 'driver.py'), str(grace), *args],
                dict(env, CHILD_CODE=str(code)))

    def start(*args, grace=30.0, code=0, **kw):
        cmd, child_env = command(*args, grace=grace, code=code)
        return subprocess.Popen(cmd, env=child_env, text=True, **kw)
    start.command = command
    return start


def wait_for_line(proc, text, timeout=30.0):
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f'no {text!r} in {seen}')


def test_arguments_stdin_stdout_and_exit_status_are_the_childs(driver):
    proc = driver('run', 'a name with spaces', '--read', code=3, stdin=subprocess.PIPE,
                  stdout=subprocess.PIPE)
    out, _ = proc.communicate('hello\n', timeout=60)
    assert out.splitlines() == ["child ['run', 'a name with spaces', '--read']", 'read hello']
    assert proc.returncode == 3


def test_a_sigint_sent_to_maxim_alone_reaches_the_child_once(driver):
    proc = driver('--wait', stdout=subprocess.PIPE)
    wait_for_line(proc, 'child')
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert out.splitlines()[-2:] == ['stopping', 'clean']
    assert proc.returncode == -signal.SIGINT       # ends as the one process did


def test_ctrl_c_at_a_terminal_reaches_the_child_once(driver):
    """The terminal's Ctrl-C goes to its whole foreground group, the child included (the
    command does not pass that one on): the child stops once, cleans up, and the command
    ends by SIGINT as the one process did."""
    pty = pytest.importorskip('pty')
    cmd, env = driver.command('--wait')
    pid, master = pty.fork()
    if pid == 0:                      # the command, on a terminal of its own
        try:
            os.execve(cmd[0], cmd, env)
        finally:
            os._exit(127)
    out = b''
    try:
        out = read_until(master, b'child', out)
        os.write(master, b'\x03')     # Ctrl-C
        _, status = os.waitpid(pid, 0)
        out = read_until(master, None, out)
    finally:
        os.close(master)
    text = out.decode(errors='replace')
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT, (status, text)
    assert text.count('stopping') == 1 and 'clean' in text, text


def read_until(fd, text, out, timeout=30.0):
    """Read the terminal until `text` (None: until it closes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (text is None or text not in out):
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 1000)
            except OSError:           # the other end closed
                return out
            if not chunk:
                return out
            out += chunk
    if text is not None and text not in out:
        raise AssertionError(f'no {text!r} in {out!r}')
    return out


def test_a_child_that_does_not_stop_is_killed_after_the_grace(driver):
    proc = driver('--stubborn', grace=1.0, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_line(proc, 'ignoring')
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGKILL
    assert 'did not end 1 s after the stop: killed' in err


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='prctl(PR_SET_PDEATHSIG)')
def test_a_kill_of_maxim_takes_the_child_with_it(driver):
    proc = driver('--wait', stdout=subprocess.PIPE)
    line = wait_for_line(proc, 'child')[-1]
    child = None
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
                    fields = f.read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == proc.pid:         # the driver's child
                child = int(pid)
    assert child is not None, line
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and os.path.exists(f'/proc/{child}') \
            and not _zombie(child):
        time.sleep(0.1)
    assert not os.path.exists(f'/proc/{child}') or _zombie(child)


def _zombie(pid):
    try:
        with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
            return f.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except OSError:
        return True
