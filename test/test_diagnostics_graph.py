"""Health on the real graph: every node of maxim_bringup.graph.NODES reports on `diagnostics`,
and `maxim check` reads them from another process and fails on a missing node; attention's
debug image arrives JPEG-compressed and decodes.

The robot graph runs in-process (synthetic camera, dry-run head driver, the scripted LLM
backend, hashing embedder), with the console and recorder the runner adds; the simulated
head runs beside it in the probe's process, and the hearing node plays a recording in,
so all eleven node kinds report."""

import os
import subprocess
import sys
import threading

import pytest


def _params(tmp_path) -> str:
    script = tmp_path / 'answers.yaml'
    script.write_text('- \'{"thought": "I see something.", "action": null}\'\n')
    params = tmp_path / 'p.yaml'
    params.write_text(f'''
camera:
  ros__parameters: {{synthetic: true, width: 320, height: 240, fps: 10.0}}
head_controller:
  ros__parameters: {{driver: dry_run}}
memory:
  ros__parameters:
    db_path: {tmp_path / 'memory.db'}
    embedding: {{backend: hashing}}
llm:
  ros__parameters:
    backend: scripted
    scripted: {{script_file: {script}}}
agent:
  ros__parameters:
    workspace_root: {tmp_path}
    tools: {{index_path: ''}}
    idle: {{task_db_path: {tmp_path / 'tasks.db'}, provenance_path: ''}}
''')
    return str(params)


@pytest.mark.ros
@pytest.mark.slow
def test_every_node_reports_and_maxim_check_reads_them(tmp_path):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rich.console import Console
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import CompressedImage

    from maxim_bringup.check import check
    from maxim_bringup.graph import GRAPHS, NODES
    from maxim_bringup.runner import Runner, RunConfig
    from maxim_perception.conversions import compressed_to_bgr
    from maxim_perception.nodes.sim_head_node import SimHeadNode
    from maxim_common.qos import SENSOR

    from helpers.room import say_wav

    out = Console(record=True, width=120, color_system=None)
    # The ears too (a recording played in): every node kind of the project reports.
    wav = say_wav('Hello there, can you hear me?', tmp_path / 'hello.wav')
    runner = Runner(RunConfig(graph='robot', params_file=_params(tmp_path), console=True,
                              record=str(tmp_path / 'run.mcap'), hear=wav), console=out)
    runner.start()
    spin = threading.Thread(target=runner.spin, daemon=True)
    spin.start()
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    sim = None
    extra = []
    try:
        # Its images and joints kept apart from the robot graph's (only its health is shared).
        remap = [f'{t}:=sim/{t}' for t in ('camera/image_raw', 'camera/camera_info',
                                           'joint_states', 'head/joint_commands')]
        sim = SimHeadNode(context=ctx, cli_args=['--ros-args'] + [
            a for r in remap for a in ('-r', r)], parameter_overrides=[
            Parameter('width', value=160), Parameter('height', value=120),
            Parameter('fps', value=5.0), Parameter('publish_clock', value=False)])
        probe = rclpy.create_node('diag_probe', context=ctx)
        executor.add_node(sim)
        executor.add_node(probe)
        latest = {}

        def on_diag(msg):
            for st in msg.status:
                latest[st.name.partition(': ')[0]] = st
        probe.create_subscription(DiagnosticArray, 'diagnostics', on_diag, 50)
        jpegs = []
        probe.create_subscription(CompressedImage, 'attention/debug_image/compressed',
                                  jpegs.append, SENSOR)
        for _ in range(1200):      # at most ~60 s on a loaded machine
            executor.spin_once(timeout_sec=0.05)
            if set(NODES) <= set(latest) and latest['attention'].level[0] == 0 and jpegs:
                break
        # The debug view for a viewer on another machine: a JPEG of the camera's size.
        assert jpegs, 'no attention/debug_image/compressed'
        assert {compressed_to_bgr(j).shape for j in jpegs} == {(240, 320, 3)}
        assert jpegs[-1].format.endswith('jpeg compressed bgr8')
        assert set(NODES) <= set(latest), f'no diagnostics from {set(NODES) - set(latest)}'
        for name, st in latest.items():
            assert st.message and st.values, (name, st)
        values = {name: {kv.key: kv.value for kv in st.values} for name, st in latest.items()}
        assert values['camera']['status'] == 'ok' and int(values['camera']['frames']) > 0
        assert values['llm']['model_loaded'] == 'true' and values['llm']['state'] == 'active'
        assert values['memory']['ok'] == 'True'
        assert values['agent']['sandbox_available'] in ('true', 'false')
        assert values['head_controller']['driver'] == 'dry_run'
        assert values['hearing']['source'].startswith('file ')
        assert values['hearing']['model'].endswith('model')
        assert int(values['attention']['frames_received']) > 0

        # `maxim check` as a person runs it: another process, same domain.
        env = dict(os.environ)
        cli = subprocess.run(
            [sys.executable, '-m', 'maxim_bringup.cli', 'check', '--graph', 'robot',
             '--timeout', '10'], env=env, capture_output=True, text=True, timeout=120)
        print(cli.stdout)
        assert cli.returncode == 0, cli.stdout + cli.stderr
        lines = cli.stdout.splitlines()
        for node in GRAPHS['robot']:
            assert any(line.split()[1:2] == [node] for line in lines), (node, cli.stdout)
        assert 'healthy' in lines[-1]

        # A second robot in its own namespace: checked there, and not seen from another.
        from maxim_core.nodes.fear_node import FearNode
        other = FearNode(context=ctx, namespace='r1')
        executor.add_node(other)
        extra.append(other)
        spinning = threading.Event()

        def spin_probe():       # the r1 node reports while check() spins its own node
            while not spinning.is_set():
                executor.spin_once(timeout_sec=0.05)
        spinner = threading.Thread(target=spin_probe, daemon=True)
        spinner.start()
        try:
            printed = []
            assert check(nodes=['fear'], namespace='r1', timeout_s=10.0, out=printed.append,
                         context=ctx) == 0, printed
            assert 'in r1 healthy' in printed[-1]
            printed = []
            assert check(nodes=['fear'], namespace='r2', timeout_s=2.0, out=printed.append,
                         context=ctx) == 1
            assert printed[0].startswith('MISSING') and 'fear' in printed[0]
        finally:
            spinning.set()
            spinner.join(timeout=5.0)

        # A node that is not there fails the check, with its name.
        printed = []
        code = check(nodes=['camera', 'no_such_node'], timeout_s=2.0, out=printed.append,
                     context=ctx)
        assert code == 1
        assert any(p.startswith('MISSING') and 'no_such_node' in p for p in printed), printed
        assert 'no_such_node' in printed[-1]
    finally:
        for node in extra + ([sim] if sim is not None else []):
            executor.remove_node(node)
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)
        runner.request_stop()
        spin.join(timeout=10)
        runner.stop()
