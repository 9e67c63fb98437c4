"""maxim_common.lifetime: a node whose launching process dies ends, even when its stop is stuck
in a call that holds the interpreter (as rclpy's C calls do), so the Python watchdog timer
cannot run."""

import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from maxim_common import lifetime

# The launching process: starts the node process, prints its pid, then waits to be killed.
LAUNCHER = textwrap.dedent('''
    import subprocess, sys, time
    node = subprocess.Popen([sys.executable, '-c', sys.argv[1]])
    print(node.pid, flush=True)
    time.sleep(120)
    ''')

# A node whose quiesce() blocks in C while holding the GIL (ctypes.PyDLL keeps it).
NODE = textwrap.dedent('''
    import ctypes, rclpy.node
    from maxim_common.lifetime import run

    class Stuck(rclpy.node.Node):
        def quiesce(self):
            ctypes.PyDLL(None).sleep(120)

    def make():
        node = Stuck('stuck_on_stop')
        print('up', flush=True)
        return node

    run(make)
    ''')


def alive(pid: int) -> bool:
    try:
        with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except FileNotFoundError:
        return False


@pytest.mark.ros
@pytest.mark.slow
def test_an_orphan_stuck_holding_the_interpreter_is_ended_by_the_kernel():
    launcher = subprocess.Popen([sys.executable, '-c', LAUNCHER, NODE],
                                stdout=subprocess.PIPE, text=True)
    node_pid = None
    try:
        assert select.select([launcher.stdout], [], [], 30)[0], 'the launcher did not start'
        node_pid = int(launcher.stdout.readline())
        assert select.select([launcher.stdout], [], [], 60)[0], 'the node did not start'
        assert launcher.stdout.readline().strip() == 'up'
        time.sleep(0.5)                         # into its spin loop
        assert alive(node_pid)
        launcher.send_signal(signal.SIGKILL)
        launcher.wait(timeout=10)
        t0 = time.monotonic()
        while alive(node_pid) and time.monotonic() - t0 < lifetime.ORPHAN_KILL_S + 15:
            time.sleep(0.1)
        gone = time.monotonic() - t0
        print(f'\norphan stuck holding the interpreter: gone after {gone:.1f} s')
        assert not alive(node_pid), 'the orphan outlived its stop deadline'
        assert gone >= lifetime.ORPHAN_STOP_S      # the timer could not run: the alarm did
    finally:
        launcher.kill()
        launcher.wait(timeout=10)
        launcher.stdout.close()
        if node_pid is not None and alive(node_pid):
            os.kill(node_pid, signal.SIGKILL)


# A node whose timer callback raises twice, then says it is still spinning.
FLAKY = textwrap.dedent('''
    import rclpy.node
    from maxim_common.lifetime import run

    class Flaky(rclpy.node.Node):
        def __init__(self):
            super().__init__('flaky_callback')
            self.calls = 0
            self.create_timer(0.05, self.tick)

        def tick(self):
            self.calls += 1
            if self.calls <= 2:
                raise RuntimeError('Two goals were accepted with the same ID (a duplicate)')
            if self.calls == 3:
                print('still spinning', flush=True)

    run(Flaky)
    ''')


@pytest.mark.ros
def test_a_callback_that_raises_does_not_end_the_node():
    """rclpy hands a callback's exception back to the spin loop (an action client given
    the same goal response twice raises there): one bad message must not end the node."""
    node = subprocess.Popen([sys.executable, '-c', FLAKY], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert select.select([node.stdout], [], [], 60)[0], 'the node said nothing'
        assert node.stdout.readline().strip() == 'still spinning'
        assert node.poll() is None
        node.send_signal(signal.SIGINT)
        node.wait(timeout=10)
        err = node.stderr.read()
        assert 'a callback failed (1/10)' in err and 'a callback failed (2/10)' in err, err
    finally:
        _reap(node)


# A node whose quiesce takes all the time it is given, with a thread that never ends (not a
# daemon: the interpreter's teardown would wait for it for ever) and an exit handler.
SLOW_STOP = textwrap.dedent('''
    import atexit, threading, time
    import rclpy.node
    from maxim_common.lifetime import run

    class SlowStop(rclpy.node.Node):
        def quiesce(self, timeout_s):
            print(f'quiesce given {timeout_s:.3f}', flush=True)
            time.sleep(timeout_s)

    def make():
        threading.Thread(target=threading.Event().wait, name='never-ends').start()
        atexit.register(print, 'exit handler ran', flush=True)
        node = SlowStop('slow_stop')
        print('up', flush=True)
        return node

    run(make)
    ''')


@pytest.mark.ros
def test_the_stop_shares_one_deadline_and_the_process_ends_after_it():
    """quiesce() gets what is left of the one stop budget (not a timeout of its own after
    which the others start), and once the node is stopped the process ends with status 0,
    its exit handlers run, though a thread it started never ends."""
    node = subprocess.Popen([sys.executable, '-c', SLOW_STOP], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert select.select([node.stdout], [], [], 60)[0], 'the node said nothing'
        assert node.stdout.readline().strip() == 'up'
        node.send_signal(signal.SIGINT)
        # A bound that holds on a loaded machine: the budget is 3 s, and without the end of
        # the process it never ends (the thread is joined for ever).
        node.wait(timeout=30)
        out = node.stdout.read()
        assert node.returncode == 0, (out, node.stderr.read())
        given = float(re.search(r'quiesce given (\S+)', out).group(1))
        assert 0.0 < given <= lifetime.STOP_BUDGET_S - lifetime.SPIN_JOIN_MIN_S
        assert 'exit handler ran' in out, out
    finally:
        _reap(node)


def _reap(node) -> None:
    """A node process a test started: killed if still running, its pipes closed."""
    if node.poll() is None:
        node.kill()
        node.wait(timeout=10)
    node.stdout.close()
    node.stderr.close()
