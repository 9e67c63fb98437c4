"""The `maxim` command.

    maxim sim      the simulated head with the embedded model (the main job)
    maxim robot    the real head (camera + serial pan/tilt), in one process
    maxim nodes    list the nodes of each graph
    maxim check    is a running robot healthy? (every node's diagnostics; --deps: imports)
    maxim calibrate  jog the real head on keypresses; write its zero and limits
    maxim report   an HTML report of a session recording (--record), or of two compared
    maxim scenario run|suite|list|agent|generate   the simulation scenarios (text and robot)

Missing or broken dependencies are reported in one line with what to do, never a traceback.
"""

import argparse
import importlib
import os
import signal
import subprocess
import sys
import time

# (module, what it is, what to do) for every dependency a run needs.
DEPENDENCIES = [
    ('rclpy', 'ROS 2 Python client', 'run ./maxim setup (or source your ROS 2 Jazzy setup.bash)'),
    ('maxim_interfaces.msg', "Maxim's interfaces",
     'run ./maxim setup (it builds the workspace with colcon)'),
    ('yaml', 'PyYAML', 'run ./maxim setup'),
    ('rich', 'rich (console display)', 'run ./maxim setup'),
    ('numpy', 'NumPy', 'run ./maxim setup'),
    ('cv2', 'OpenCV', 'run ./maxim setup (opencv-python-headless 4.x)'),
    ('llama_cpp', 'llama-cpp-python', 'run ./maxim setup (it compiles llama.cpp, ~5 min)'),
    ('mujoco', 'MuJoCo (simulated head)', 'run ./maxim setup'),
    ('networkx', 'networkx', 'run ./maxim setup'),
    ('faiss', 'faiss-cpu', 'run ./maxim setup'),
]


def check_dependencies(names: list[str] | None = None) -> list[str]:
    """One line per missing or broken dependency (empty when all import)."""
    problems = []
    for module, what, todo in DEPENDENCIES:
        if names is not None and module not in names:
            continue
        try:
            importlib.import_module(module)
        except ImportError as exc:
            problems.append(f'{what} is missing or broken ({exc}): {todo}')
        except OSError as exc:  # a shared library that does not load
            problems.append(f'{what} does not load ({exc}): {todo}')
    return problems


def _parse_set(values: list[str]) -> dict:
    """--set node.param=value (YAML-typed) -> {node: {param: value}}."""
    import yaml
    out: dict = {}
    for item in values or []:
        key, sep, raw = item.partition('=')
        node, dot, param = key.partition('.')
        if not sep or not dot or not node or not param:
            raise SystemExit(f'maxim: --set takes node.param=value, got {item!r}')
        out.setdefault(node, {})[param] = yaml.safe_load(raw)
    return out


def _run(args) -> int:
    problems = check_dependencies()
    if problems:
        for line in problems:
            print(f'maxim: {line}', file=sys.stderr)
        return 2
    from maxim_bringup.params import ParamsError
    from maxim_bringup.runner import run, RunConfig, StartupError
    try:
        config = RunConfig(graph=args.command, params_file=args.params_file or '',
                           console=not args.no_console, duration_s=args.duration,
                           overrides=_parse_set(args.set), only=args.only or [],
                           record=args.record, foxglove_port=args.foxglove,
                           hear='voice' if args.voice else (args.hear or ''))
        if args.panel:
            from maxim_bringup.panel.run import run_with_panel
            return run_with_panel(config)
        return run(config)
    except (ParamsError, StartupError, KeyError) as exc:
        print(f'maxim: {exc}', file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='maxim', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command')
    for name, text in (('sim', 'run the simulated head with the embedded model'),
                       ('robot', 'run the real head in one process'),
                       ('headless', 'run the mind without a body (no camera, no head)')):
        p = sub.add_parser(name, help=text)
        p.add_argument('--params-file', help='params YAML (default: config/<graph>.yaml)')
        p.add_argument('--duration', type=float, default=0.0,
                       help='stop by itself after this many seconds (default: run until Ctrl-C)')
        p.add_argument('--no-console', action='store_true',
                       help='do not print thoughts and events')
        p.add_argument('--set', action='append', metavar='NODE.PARAM=VALUE',
                       help='override a parameter, e.g. --set llm.model_path=/models/x.gguf')
        p.add_argument('--only', nargs='+', metavar='NODE', help='start only these nodes')
        p.add_argument('--panel', action='store_true',
                       help='the interactive thinking panel instead of the plain console')
        p.add_argument('--record', nargs='?', const='auto', default='', metavar='FILE.mcap',
                       help='record the session to MCAP (default file under ~/.maxim/recordings)')
        p.add_argument('--foxglove', nargs='?', type=int, const=8765, default=None,
                       metavar='PORT', help='serve the session live to Foxglove on '
                       'ws://127.0.0.1:PORT (default 8765)')
        ears = p.add_mutually_exclusive_group()
        ears.add_argument('--voice', action='store_true',
                          help="talk to it: the machine's microphone in, replies spoken")
        ears.add_argument('--hear', metavar='FILE.wav',
                          help='play a recording in as a person speaking to the robot')
        p.set_defaults(func=_run)
    p = sub.add_parser('nodes', help='list the nodes of each graph')
    p.set_defaults(func=_nodes)
    p = sub.add_parser('check', help="check a running robot: every node's diagnostics "
                       '(exit 1 when a node is missing or in ERROR)')
    p.add_argument('--deps', action='store_true',
                   help='only check that every dependency imports')
    p.add_argument('--graph', default='auto', help='the graph to expect: auto (from what '
                   'reports), sim, robot or headless')
    p.add_argument('--nodes', nargs='+', metavar='NODE', help='expect exactly these nodes')
    p.add_argument('--namespace', default='', help="the robot's namespace (e.g. r1)")
    p.add_argument('--domain-id', type=int, default=None,
                   help='ROS domain id (default: ROS_DOMAIN_ID)')
    p.add_argument('--timeout', type=float, default=5.0,
                   help='seconds to listen for statuses at most (default 5; nodes report '
                   'every 1 s, and a new participant may take seconds to discover them all '
                   'on a busy machine); with --graph or --nodes it stops once all reported')
    p.set_defaults(func=_check)
    p = sub.add_parser('report', help='an HTML report of a session recording, or of two '
                       'compared side by side')
    p.add_argument('recordings', nargs='+', metavar='FILE.mcap',
                   help='an .mcap file written with --record, or two to compare')
    p.add_argument('--out', default='', help='output folder (default: <recording>.report)')
    p.set_defaults(func=_report)
    from maxim_bringup.calibrate import add_parser as add_calibrate
    add_calibrate(sub, check_dependencies)
    return parser


def _nodes(_args) -> int:
    from maxim_bringup.graph import GRAPHS, NODES
    for name, nodes in GRAPHS.items():
        print(f'{name}:')
        for n in nodes:
            spec = NODES[n]
            print(f'  {n:16s} {spec.package}/{spec.executable}')
    return 0


def _report(args) -> int:
    from maxim_core.recording.report import main as report_main
    return report_main(list(args.recordings) + (['--out', args.out] if args.out else []))


def _check(args) -> int:
    problems = check_dependencies()
    for line in problems:
        print(f'maxim: {line}', file=sys.stderr)
    if problems:
        return 2
    if args.deps:
        print('maxim: every dependency imports')
        return 0
    if not args.timeout > 0:
        print('maxim: --timeout must be a positive number of seconds', file=sys.stderr)
        return 2
    from maxim_bringup.check import check
    try:
        return check(args.graph, args.namespace, args.domain_id, args.timeout, args.nodes,
                     out=lambda line: print(line, flush=True))
    except KeyError as exc:
        print(f'maxim: {exc.args[0]}', file=sys.stderr)
        return 2


# The scenario runner is evaluation code (maxim_eval), which no product package imports:
# `maxim scenario ...` runs it as a child process.
SCENARIO_MODULE = 'maxim_eval.cli'
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM)
SI_KERNEL = 0x80       # siginfo si_code of a signal the kernel sent (a terminal's Ctrl-C)
STOP_GRACE_S = 30.0    # after a Ctrl-C, how long the child may take to end before SIGKILL
PR_SET_PDEATHSIG = 1   # prctl(2): the signal a process gets when its parent dies


def _child_setup(mask):
    """What the child does before it runs: the signal mask this process had, and (Linux) a
    SIGKILL when this process dies, so a kill of `maxim` leaves no runner behind."""
    parent = os.getpid()
    prctl = None
    if sys.platform.startswith('linux'):
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl

    def setup():
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:     # this process died before that was set
                os._exit(1)
    return setup


def _scenario(argv: list[str], module: str = SCENARIO_MODULE) -> int:
    """`python -m maxim_eval.cli ARGV` with this process's stdin, stdout, stderr and
    environment (the DDS profile main() applied); returns its exit status, and ends this
    process by the signal that ended the child, as one process would have ended.

    Ctrl-C at a terminal reaches the child by itself (the same process group); a SIGINT or
    SIGTERM sent to this process alone is passed on. A child still running STOP_GRACE_S after
    either is killed, so this command always ends; and it dies with this process when that
    is killed outright (SIGKILL, a timeout's kill), as the one process did."""
    cmd = [sys.executable, *(['-P'] if sys.flags.safe_path else []), '-m', module, *argv]
    # Blocked here from before the child starts (it gets the mask as it was), taken one at a
    # time below.
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED_SIGNALS)
    try:
        try:
            child = subprocess.Popen(cmd, preexec_fn=_child_setup(old_mask))
        except OSError as exc:
            print(f'maxim: cannot start the scenario runner ({exc})', file=sys.stderr)
            return 2
        deadline = None
        while child.poll() is None:
            info = signal.sigtimedwait(FORWARDED_SIGNALS, 0.2)
            if info is not None:
                if info.si_code != SI_KERNEL:    # sent to this process, not to the group
                    child.send_signal(info.si_signo)
                if deadline is None:
                    deadline = time.monotonic() + STOP_GRACE_S
            elif deadline is not None and time.monotonic() > deadline:
                print(f'maxim: the scenario runner did not end {STOP_GRACE_S:.0f} s after '
                      'the stop: killed', file=sys.stderr, flush=True)
                child.kill()
                child.wait()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    code = child.returncode
    if code < 0 and -code != signal.SIGKILL:    # ended by a signal: end the same way
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return 128 - code if code < 0 else code


def main(argv: list[str] | None = None) -> None:
    argv = list(argv if argv is not None else sys.argv[1:])
    # Before any participant exists: the frame transport of every node this command starts.
    from maxim_bringup import dds
    dds.apply()
    stale = dds.clean_stale_shm()
    if stale:
        print(f'maxim: removed {len(stale)} shared-memory files of Fast DDS processes that '
              'ended without closing them', file=sys.stderr, flush=True)
    if argv[:1] == ['scenario']:  # the simulation orchestrator has its own command line
        sys.exit(_scenario(argv[1:]))
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, 'command', None):
        args = parser.parse_args(['sim'] + list(argv if argv is not None else sys.argv[1:]))
    sys.exit(args.func(args))


if __name__ == '__main__':
    main()
