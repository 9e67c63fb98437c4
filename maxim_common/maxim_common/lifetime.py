"""How a node process lives and ends, the same for every Maxim node started on its own
(`ros2 run`, `ros2 launch`):

- it ends with the process that started it (Linux's parent-death signal), so a launch that
  fails part-way or is killed leaves no node thinking on by itself;
- Ctrl-C and SIGTERM end it cleanly and promptly: the context stays valid while the node
  quiesces (a goal in progress gets its result, threads that publish stop), then spinning
  stops, then the node is destroyed, then the context shuts down. rclpy's own handler would
  shut the context down first, under threads that still publish. Every step of that stop
  shares one deadline (STOP_BUDGET_S): no step waits its own timeout after another's, so the
  stop stays bounded on a loaded machine, within launch's escalation to SIGTERM;
- once stopped, the process ends at once (exit handlers run, output flushed): the
  interpreter's own teardown is skipped (see _end_process).

Every node of every Maxim package starts through `run()` here.
"""

import atexit
import ctypes
import inspect
import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
# One deadline for the whole stop: quiesce (given what is left of it, when it takes
# `timeout_s`), the last replies, the spin loop's end and the executor's shutdown. Chosen by
# hand, well inside launch's escalation to SIGTERM (maxim_bringup/launch/common.py,
# SIGTERM_TIMEOUT_S): a node at nice 10 on a loaded machine also waits for the CPU.
STOP_BUDGET_S = 3.0
QUIESCE_S = 0.2             # after quiesce(): the last results and replies go out
SPIN_JOIN_MIN_S = 0.5       # the spin loop leaves within its 0.1 s wait: always given this
ORPHAN_STOP_S = 10.0        # with the parent gone, a stop that takes longer ends the process
SPIN_ERRORS = 10            # callbacks that raised before the node gives up
ORPHAN_KILL_S = 12          # and the kernel ends it, should the interpreter itself be stuck


LAUNCH_PID = 'MAXIM_LAUNCH_PID'   # set by the launch files: the process that started us


def launching_parent() -> int:
    """The process that started this one: MAXIM_LAUNCH_PID (set by the launch files) or
    else the parent process now."""
    try:
        return int(os.environ.get(LAUNCH_PID, '') or os.getppid())
    except ValueError:
        return os.getppid()


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Have the kernel send `sig` to this process when its parent process ends.

    Returns False where prctl is not available (not Linux); the process then only ends by
    its own signals. A parent that ended before the request took effect (a launch that
    failed while this process was still importing) is noticed through the parent id, the
    one the launch files pass in MAXIM_LAUNCH_PID or else the one at the start of this call,
    and the signal is sent at once.
    """
    parent = launching_parent()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)
    return True


def run(make_node, args=None, executor=None) -> None:
    """Start a node in this process and spin it until SIGINT or SIGTERM, then stop it
    cleanly: `quiesce()` (when the node has it) while the executor still spins, stop the
    executor, `destroy_node()`, shut the context down, and end the process (a stop that went
    through does not return; a node that failed to start raises as before).

    `make_node()` builds the node after rclpy is initialised; `executor` (optional) is a
    callable returning the executor to spin it on (default: single-threaded).
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    # Once, now: with the parent gone, the parent process "now" is whoever adopted us.
    parent = launching_parent()
    die_with_parent()
    stop = threading.Event()        # set by the spin thread when it ends
    # Set by the signal handlers, which must take no lock: Event.set() takes the lock that
    # the interrupted main thread may be holding inside Event.wait(), and a SIGTERM landing
    # there (a launch killed: every node gets one at once) deadlocked the node for good.
    signalled = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: signalled.append(True))
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = spin_thread = exec_ = None
    halt = threading.Event()      # the spin loop ends (after the node has quiesced)
    try:
        if signalled:
            return
        node = make_node()
        exec_ = executor() if executor is not None else SingleThreadedExecutor()
        exec_.add_node(node)

        def spin():
            # spin_once in a loop rather than spin(): the executor is shut down only after
            # this loop has left it (shutting it down under a spinning thread destroys guard
            # conditions the thread is waiting on).
            failed = 0
            try:
                while not halt.is_set():
                    try:
                        exec_.spin_once(timeout_sec=0.1)
                    except RuntimeError as exc:
                        # A callback that raised (rclpy hands it back here), e.g. an action
                        # client given the same goal response twice by DDS: one bad message
                        # must not end the node, a run of them does.
                        failed += 1
                        node.get_logger().error(
                            f'a callback failed ({failed}/{SPIN_ERRORS}): {exc}')
                        if failed >= SPIN_ERRORS:
                            raise
            except ExternalShutdownException:
                pass
            finally:
                stop.set()

        spin_thread = threading.Thread(target=spin, name='spin', daemon=True)
        spin_thread.start()
        while not (signalled or stop.is_set()):
            if os.getppid() != parent:   # the parent-death signal's backstop
                break
            time.sleep(0.1)
    finally:
        # A terminal's Ctrl-C reaches every process of the group and launch sends its own
        # SIGINT too: the second one must not cut the stop short, nor kill the interpreter
        # while it finalizes (Python restores the default handler then, unless ignored).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if os.getppid() != parent:
            # Nobody waits for this stop (the launch died): a node stuck on a peer that died
            # with it (a reply that never comes) must not outlive it.
            watchdog = threading.Timer(ORPHAN_STOP_S, _orphan_exit)
            watchdog.daemon = True
            watchdog.start()
            # The timer is Python code: it never runs while a call into the DDS library holds
            # the interpreter (rclpy's C calls keep the GIL; destroying a participant can wait
            # on a peer's shared-memory port). SIGALRM's default action ends the process in
            # the kernel, whatever the interpreter is doing.
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(ORPHAN_KILL_S)
        if node is not None:
            _stop_node(node, exec_, spin_thread, halt)
        rclpy.try_shutdown()
    if node is not None:
        _end_process()


def _orphan_exit() -> None:
    sys.stderr.write(f'the parent is gone and the stop took over {ORPHAN_STOP_S:.0f} s: '
                     'exiting now\n')
    sys.stderr.flush()
    os._exit(1)


def _stop_node(node, executor, spin_thread, halt, budget_s: float = STOP_BUDGET_S) -> None:
    """Quiesce while the executor still spins (a goal's result, a last reply go out), then
    end the spin loop, shut the executor down and destroy the node; every wait within one
    deadline, `budget_s` from now."""
    deadline = time.monotonic() + budget_s

    def left() -> float:
        return max(0.0, deadline - time.monotonic())

    quiesce = getattr(node, 'quiesce', None)
    if callable(quiesce):
        try:
            if _takes_timeout(quiesce):
                # What is left after the spin loop's share: a node's own waits (threads to
                # join, callbacks to return) end within the one deadline.
                quiesce(timeout_s=max(0.0, left() - SPIN_JOIN_MIN_S - QUIESCE_S))
            else:
                quiesce()
        except Exception as exc:  # noqa: BLE001 - stopping goes on regardless
            node.get_logger().warning(f'did not quiesce: {type(exc).__name__}: {exc}')
        if spin_thread is not None and spin_thread.is_alive():
            time.sleep(min(QUIESCE_S, left()))
    halt.set()
    if spin_thread is not None:
        # A spin thread still inside rcl when the node is destroyed aborts the process: it is
        # always given the time to leave its 0.1 s wait, even past the deadline.
        spin_thread.join(timeout=max(left(), SPIN_JOIN_MIN_S))
    if executor is not None:
        executor.shutdown(timeout_sec=left())
    node.destroy_node()


def _takes_timeout(quiesce) -> bool:
    try:
        return 'timeout_s' in inspect.signature(quiesce).parameters
    except (TypeError, ValueError):     # a builtin or a callable without a signature
        return False


def _end_process() -> None:
    """End the process now that its node is stopped and destroyed (the DDS participant goes
    with the node), the context shut down: exit handlers run (a driver's torque-off, a
    temporary folder removed), output is flushed, and the interpreter's own teardown is
    skipped. That teardown runs after Python has restored the default signal handlers: an
    llm node that logged no failed stop was killed there by launch's SIGTERM 5 s after
    Ctrl-C (exit -15, the default handler's), and with both cores busy it took 0.3-0.6 s of
    a node's stop (stop done 0.3 s after SIGINT, process gone at 0.6-1.0 s). Threads still
    running here are ones the stop already gave up on."""
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):   # closed or replaced streams
                continue
        os._exit(0)
