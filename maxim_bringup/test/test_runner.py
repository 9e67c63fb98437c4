"""The in-process runner over real DDS: nodes from the params YAML, messages crossing, and a
clean stop on Ctrl-C (exit 0, no traceback)."""

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.ros
def test_console_node_prints_a_thought_published_by_another_node(tmp_path):
    from helpers.runner_probe import probe_beside
    from rich.console import Console

    from maxim_bringup.runner import Runner, RunConfig
    from maxim_interfaces.msg import Thought

    params = tmp_path / 'p.yaml'
    params.write_text('console:\n  ros__parameters:\n    percept_min_salience: 0.5\n')
    out = Console(record=True, width=120, color_system=None)
    runner = Runner(RunConfig(graph='headless', params_file=str(params), only=['none']),
                    console=out)
    assert [s.name for s in runner.specs] == ['console']
    runner.start()
    console_node = runner.nodes[0]
    assert console_node.get_parameter('percept_min_salience').value == 0.5

    with probe_beside(runner, 'thought_source') as (node, executor):
        pub = node.create_publisher(Thought, 'thoughts', 10)
        msg = Thought(cycle=1, max_cycles=3, text='I see a red ball rolling left.',
                      salience=0.7, enriched_by=['hippocampus'])
        seen = threading.Event()
        for _ in range(200):
            pub.publish(msg)
            executor.spin_once(timeout_sec=0.05)
            if 'red ball rolling left' in out.export_text(clear=False):
                seen.set()
                break
        assert seen.is_set(), out.export_text()
        assert 'Cycle 1/3' in out.export_text()


@pytest.mark.ros
def test_ctrl_c_stops_cleanly_with_exit_zero(tmp_path):
    params = tmp_path / 'p.yaml'
    params.write_text('console:\n  ros__parameters:\n    show_percepts: false\n')
    proc = subprocess.Popen(
        [sys.executable, '-P', '-m', 'maxim_bringup.cli', 'headless', '--params-file',
         str(params), '--only', 'none'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    running = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            if 'running' in line:
                running.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert running.wait(60), ''.join(lines)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0, ''.join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(timeout=5)
    output = ''.join(lines)
    assert 'Traceback' not in output
    assert 'stopped' in output


def test_missing_dependency_is_one_line(monkeypatch):
    from maxim_bringup import cli
    monkeypatch.setattr(cli, 'DEPENDENCIES', [('no_such_module_xyz', 'Thing', 'do this')])
    problems = cli.check_dependencies()
    assert problems == [
        "Thing is missing or broken (No module named 'no_such_module_xyz'): do this"]


def test_unknown_params_file_is_reported_without_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, '-P', '-m', 'maxim_bringup.cli', 'headless', '--params-file',
         str(tmp_path / 'missing.yaml'), '--only', 'none'],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert 'params file not found' in proc.stderr
    assert 'Traceback' not in proc.stderr + proc.stdout


def test_foxglove_and_record_options_compose_the_recorder():
    from maxim_bringup.cli import build_parser
    from maxim_bringup.runner import Runner, RunConfig

    args = build_parser().parse_args(['headless', '--foxglove', '--only', 'none'])
    assert args.foxglove == 8765
    live = Runner(RunConfig(graph='headless', only=['none'], console=False,
                            foxglove_port=args.foxglove))
    assert [s.name for s in live.specs] == ['recorder']
    assert live.config.overrides['recorder'] == {'foxglove.enabled': True,
                                                 'foxglove.port': 8765, 'write_file': False}
    both = Runner(RunConfig(graph='headless', only=['none'], console=False,
                            record='/tmp/x.mcap', foxglove_port=9000))
    assert json.loads(both.config.overrides['recorder'].pop('run_info'))['graph'] == 'headless'
    assert both.config.overrides['recorder'] == {'path': '/tmp/x.mcap', 'foxglove.enabled': True,
                                                 'foxglove.port': 9000, 'write_file': True}
    plain = Runner(RunConfig(graph='headless', only=['none'], console=False))
    assert plain.specs == []


def test_a_recorded_run_keeps_its_parameters_and_model():
    """--record hands the recorder how the run was started: every node's parameters (with
    the --set overrides) and the model, which the report shows."""
    from maxim_bringup.runner import Runner, RunConfig

    runner = Runner(RunConfig(graph='sim', console=False, record='/tmp/x.mcap',
                              overrides={'agent': {'idle.drives_enabled': False}}))
    info = json.loads(runner.config.overrides['recorder']['run_info'])
    assert info['graph'] == 'sim' and 'recorder' in info['nodes']
    assert 'recorder' not in info['parameters']
    assert info['parameters']['agent']['idle.drives_enabled'] is False
    assert info['model'].startswith('embedded gemma-3-270m')
    custom = Runner(RunConfig(graph='sim', console=False, record='/tmp/x.mcap',
                              overrides={'llm': {'model_path': '/models/other.gguf'}}))
    assert json.loads(custom.config.overrides['recorder']['run_info'])['model'] == \
        '/models/other.gguf'


@pytest.mark.ros
def test_memory_is_brought_up_and_down_by_the_runner_and_a_failed_open_is_one_line(tmp_path):
    """The runner configures and activates memory (a lifecycle node) and takes it down in
    reverse: the session is persisted and the database closed. A database that cannot open
    (corrupt, with recover_corrupt false) stops the start with the node's reason."""
    from rich.console import Console

    from maxim_bringup.lifecycle import ACTIVE
    from maxim_bringup.runner import Runner, RunConfig, StartupError
    from maxim_memory.store import MemoryStore

    db = tmp_path / 'memory.db'
    overrides = {'memory': {'db_path': str(db), 'embedding.backend': 'hashing'}}
    out = Console(record=True, width=120, color_system=None)
    runner = Runner(RunConfig(graph='headless', params_file=os.path.join(
        PKG, 'config', 'sim.yaml'), console=False, only=['memory'], overrides=overrides),
        console=out)
    try:
        runner.start()
        [memory] = runner.nodes
        assert runner.lifecycle.transport.state('memory') == ACTIVE
        hub = memory.hub
        assert hub is not None and db.exists()
    finally:
        runner.stop()
    assert memory.hub is None and hub.store._db is None        # noqa: SLF001 - closed
    with MemoryStore(db) as st:
        assert st.get_state('relationship_registry') is not None  # the session persisted

    bad = tmp_path / 'bad.db'
    bad.write_bytes(b'not a database' * 64)
    overrides = {'memory': {'db_path': str(bad), 'embedding.backend': 'hashing',
                            'recover_corrupt': False}}
    runner = Runner(RunConfig(graph='headless', params_file=os.path.join(
        PKG, 'config', 'sim.yaml'), console=False, only=['memory'], overrides=overrides),
        console=out)
    try:
        with pytest.raises(StartupError, match=r'memory: configure failed: memory did not '
                                               r'open: memory database .* is unreadable'):
            runner.start()
    finally:
        runner.stop()


@pytest.mark.ros
def test_the_agent_is_brought_up_by_the_runner_and_closed_on_the_way_down(tmp_path):
    """The agent is a lifecycle node: the runner configures and activates it (its Mind built
    and thinking) and takes it down (deactivate, cleanup: the Mind closed)."""
    from rich.console import Console

    from maxim_bringup.lifecycle import ACTIVE
    from maxim_bringup.runner import Runner, RunConfig

    overrides = {'agent': {'workspace_root': str(tmp_path), 'tools.index_path': '',
                           'idle.task_db_path': str(tmp_path / 'tasks.db'),
                           'idle.provenance_path': ''}}
    runner = Runner(RunConfig(graph='headless', params_file=os.path.join(
        PKG, 'config', 'sim.yaml'), console=False, only=['agent'], overrides=overrides),
        console=Console(record=True, width=120, color_system=None))
    try:
        runner.start()
        [agent] = runner.nodes
        assert runner.lifecycle.transport.state('agent') == ACTIVE
        mind = agent.mind
        assert mind is not None and mind.running and mind.tasks is not None
    finally:
        runner.stop()
    assert agent.mind is None and not mind.running and mind.tasks is None
    assert [(s.node, s.transition) for s in runner.lifecycle.log] == [
        ('agent', 'configure'), ('agent', 'activate'), ('agent', 'deactivate'),
        ('agent', 'cleanup')]


@pytest.mark.ros
def test_nodes_on_sim_time_share_one_clock_subscription_and_each_spins_on_its_own():
    """The runner's graph: one /clock subscription sets every node's clock (the same time
    as before, at a fraction of the callbacks), and each node has an executor of its own,
    so a node added while the graph spins is served at once."""
    import rclpy
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock

    from helpers.runner_probe import probe_beside
    from maxim_bringup.runner import Runner, RunConfig, share_sim_clock

    runner = Runner(RunConfig(graph='headless', only=['none'], console=False))
    runner.context = rclpy.Context()
    rclpy.init(context=runner.context)
    sim_time = [Parameter('use_sim_time', value=True)]
    first = rclpy.create_node('clock_source', context=runner.context,
                              parameter_overrides=sim_time)
    wall = rclpy.create_node('on_wall_time', context=runner.context)
    runner.add_node(first)
    runner.add_node(wall)                  # not on sim time: left with its own clock
    with probe_beside(runner, 'sim_clock') as (pub_node, ex):
        second = rclpy.create_node('clock_reader', context=runner.context,
                                   parameter_overrides=sim_time)
        runner.add_node(second, threads=2)     # added while spinning: spun at once
        assert len(runner.executors) == 3
        assert not share_sim_clock(first, wall) and not share_sim_clock(first, first)
        pub = pub_node.create_publisher(Clock, '/clock', 10)
        got = None
        for i in range(200):
            msg = Clock()
            msg.clock.sec = 1000 + i
            pub.publish(msg)
            ex.spin_once(timeout_sec=0.05)
            t1 = first.get_clock().now().nanoseconds // 10**9
            t2 = second.get_clock().now().nanoseconds // 10**9
            if t1 >= 1000 and t2 >= 1000:
                got = (t1, t2)
                break
        assert got is not None, 'the sim clock never reached both nodes'
        assert abs(got[0] - got[1]) <= 1
        assert wall.get_clock().now().nanoseconds // 10**9 > 10**9     # still wall time
        assert pub_node.count_subscribers('/clock') == 1                 # one, not two
    assert runner.executors == [] and not runner._spinners
