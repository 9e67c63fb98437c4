"""How a node process lives and ends, the same for every Maxim node started on its own
(`ros2 run`, `ros2 launch`):

- it ends with the process that started it (Linux's parent-death signal), so a launch that
  fails part-way or is killed leaves no node thinking on by itself;
- Ctrl-C and SIGTERM end it cleanly and promptly: the context stays valid while the node
  quiesces (a goal in progress gets its result, threads that publish stop), then spinning
  stops, then the node is destroyed, then the context shuts down. rclpy's own handler would
  shut the context down first, under threads that still publish.

Every node of every Maxim package starts through `run()` here.
"""

import ctypes
import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
STOP_TIMEOUT_S = 2.0        # the executor's own shutdown; the whole stop stays under 3 s
QUIESCE_S = 0.2             # after quiesce(): the last results and replies go out
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
    executor, `destroy_node()`, shut the context down.

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


def _orphan_exit() -> None:
    sys.stderr.write(f'the parent is gone and the stop took over {ORPHAN_STOP_S:.0f} s: '
                     'exiting now\n')
    sys.stderr.flush()
    os._exit(1)


def _stop_node(node, executor, spin_thread, halt) -> None:
    """Quiesce while the executor still spins (a goal's result, a last reply go out), then
    end the spin loop, shut the executor down and destroy the node."""
    quiesce = getattr(node, 'quiesce', None)
    if callable(quiesce):
        try:
            quiesce()
        except Exception as exc:  # noqa: BLE001 - stopping goes on regardless
            node.get_logger().warning(f'did not quiesce: {type(exc).__name__}: {exc}')
        if spin_thread is not None and spin_thread.is_alive():
            time.sleep(QUIESCE_S)
    halt.set()
    if spin_thread is not None:
        # A spin thread still inside rcl when the node is destroyed aborts the process.
        spin_thread.join(timeout=STOP_TIMEOUT_S)
    if executor is not None:
        executor.shutdown(timeout_sec=STOP_TIMEOUT_S)
    node.destroy_node()
