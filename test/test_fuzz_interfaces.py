"""Every interface of every node, fuzzed: no message, request or goal takes a node down.

Each node of the graph (maxim_bringup.graph.NODES) starts in this process on its own executor
thread, with the parameters a test run uses (a dry-run head driver, a scripted model inside
the real llm node, a temporary memory database and workspace). Its subscriptions, services
and action servers are found by introspecting the running node (its own entity lists, and the
ROS graph for its action servers), never from a hand-written list. For each interface the
fuzzer builds messages from the rosidl type (helpers/fuzz.py: extreme and negative stamps,
NaN / inf / huge numbers, empty and huge strings and arrays, invalid enum values, wrong frame
ids) and publishes them, some in bursts, or calls the service / sends the goal. Then:
- every node is still up: its executor thread did not end, and it answers a parameter
  service (served by the node's own executor);
- every message a node published meanwhile has only finite floats, and joint positions
  within the joint limits;
- every service answered, every accepted goal ended, with a typed error where they failed
  (an error code comes with an error message).

MAXIM_FUZZ_CASES (default 8) sets the cases per interface, MAXIM_FUZZ_SEED the seed,
MAXIM_FUZZ_NODES a comma-separated subset of nodes. The report lists every interface covered.
"""

import hashlib
import io
import json
import math
import os
import random
import threading
import time
import traceback

import pytest

from helpers.fuzz import float_paths, Generator

pytestmark = [pytest.mark.ros, pytest.mark.timeout(3600)]

CASES = int(os.environ.get('MAXIM_FUZZ_CASES', '8'))
SEED = int(os.environ.get('MAXIM_FUZZ_SEED', '1414'))
ONLY = [n for n in os.environ.get('MAXIM_FUZZ_NODES', '').split(',') if n]
LIMITS = {'head_pan_joint': (-2.6, 2.6), 'head_tilt_joint': (-0.8, 0.8)}
# Entities rclpy adds to every node (parameters, type descriptions) and the lifecycle
# transitions a manager drives: not the node's own interfaces.
FRAMEWORK = ('rcl_interfaces/', 'type_description_interfaces/', 'lifecycle_msgs/')
# Interfaces that still take their node down, with the defect: left out of the sweep (so the
# node's other interfaces are still fuzzed) until fixed. MAXIM_FUZZ_KNOWN=1 fuzzes them anyway.
KNOWN_DEFECTS: dict[str, str] = {}
# Outputs known to carry a non-finite value from their input (topic, field): reported, not
# failed, until fixed.
KNOWN_OUTPUT_DEFECTS: dict[tuple[str, str], str] = {}
INCLUDE_KNOWN = os.environ.get('MAXIM_FUZZ_KNOWN', '') == '1'
ANSWER_S = 20.0      # bound on one service answer or one goal's result
BURST = 10
SETTLE_S = 0.2       # after a topic's messages, before the liveness check


def _decisions():
    """The scripted model's answers: valid decisions and ones with bad numbers in them."""
    nan_move = '{"reasoning": "turn", "ready_to_act": true, "action": {"tool": "move", ' \
               '"args": {"pan": 0.1, "tilt": 0.0, "relative": true, "speed": NaN}}}'
    answers = [json.dumps({'reasoning': 'nothing to do', 'ready_to_act': True,
                           'action': None}),
               json.dumps({'reasoning': 'look', 'ready_to_act': True,
                           'action': {'tool': 'move', 'args': {'pan': 9e99, 'tilt': 0.0}}}),
               nan_move, '{"reasoning": ' + '[' * 3000, 'not json at all \udc80']
    state = {'n': 0}

    def answer(_prompt):
        state['n'] += 1
        return answers[state['n'] % len(answers)]
    return answer


class NodeRun:
    """One node under test, spinning on its own executor thread."""

    def __init__(self, name, node, ctx):
        from rclpy.executors import MultiThreadedExecutor
        self.name, self.node = name, node
        self.executor = MultiThreadedExecutor(num_threads=3, context=ctx)
        self.executor.add_node(node)
        self.error = ''
        self.thread = threading.Thread(target=self._spin, name=f'fuzz-{name}', daemon=True)
        self.thread.start()

    def _spin(self):
        from rclpy.executors import ExternalShutdownException
        try:
            self.executor.spin()
        except ExternalShutdownException:
            pass
        except BaseException:  # noqa: BLE001 - the death of the node is what the test finds
            self.error = traceback.format_exc()

    @property
    def alive(self) -> bool:
        return self.thread.is_alive() and not self.error

    def stop(self):
        quiesce = getattr(self.node, 'quiesce', None)
        if callable(quiesce):
            quiesce()
        self.executor.shutdown(timeout_sec=5.0)
        self.thread.join(timeout=10.0)
        self.node.destroy_node()


def _start_nodes(ctx, tmp):
    """The graph's nodes with test parameters (only those MAXIM_FUZZ_NODES names)."""
    from rclpy.parameter import Parameter
    from rich.console import Console

    from maxim_bringup.graph import NODES
    from maxim_core.llm.backend import ScriptedBackend

    ws = tmp / 'workspace'
    ws.mkdir()
    (ws / 'notes.txt').write_text('a note\n')
    params = {
        'sim_head': {'width': 64, 'height': 48, 'fps': 2.0, 'physics_rate_hz': 50.0,
                     'joint_state_rate_hz': 10.0, 'publish_clock': False},
        'camera': {'synthetic': True, 'width': 64, 'height': 48, 'fps': 2.0},
        'attention': {'max_rate_hz': 5.0, 'percept_period_s': 0.5},
        'head_controller': {'driver': 'dry_run', 'rate_hz': 20.0},
        'memory': {'db_path': str(tmp / 'memory.db'), 'budgets.write_s': 0.5},
        'llm': {},
        'fear': {'mode': 'passive', 'sandbox.root': str(ws), 'nac.timeout_s': 2.0},
        'agent': {'workspace_root': str(ws), 'deliberation.max_cycles': 1,
                  'deliberation.llm_timeout_s': 10.0, 'deliberation.retries': 0,
                  'idle.enabled': False, 'idle.task_db_path': str(tmp / 'tasks.db'),
                  'tools.active': ['move', 'track_target', 'focus_interests',
                                   'novelty_track', 'respond', 'memory_recall', 'read_file']},
        'console': {},
        'recorder': {'path': str(tmp / 'session.mcap')},
    }
    extra = {'llm': {'backend': ScriptedBackend(_decisions())},
             'console': {'console': Console(file=io.StringIO(), width=100)}}
    runs = []
    for name, spec in NODES.items():
        if ONLY and name not in ONLY:
            continue
        overrides = [Parameter(k, value=v) for k, v in params[name].items()]
        node = spec.load()(context=ctx, parameter_overrides=overrides, **extra.get(name, {}))
        if spec.lifecycle:
            from rclpy.lifecycle import TransitionCallbackReturn
            assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.last_error
            assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        runs.append(NodeRun(name, node, ctx))
    return runs


def _type_name(cls) -> str:
    mod = cls.__module__.split('.')
    return f'{mod[0]}/{mod[1]}/{cls.__name__}'


def _interfaces(run, probe):
    """(kind, name, type class, qos) of the node's own subscriptions, services and actions."""
    from rclpy.action import get_action_server_names_and_types_by_node
    from rclpy.qos import qos_profile_services_default
    node = run.node
    out = []
    tap = getattr(node, 'tap', None)    # the recorder takes its topics through a tap node
    for sub in [*node.subscriptions, *(tap.subscriptions if tap is not None else [])]:
        out.append(('topic', sub.topic_name, sub.msg_type, sub.qos_profile))
    for srv in node.services:
        if not _type_name(srv.srv_type).startswith(FRAMEWORK):
            out.append(('service', srv.service_name, srv.srv_type, qos_profile_services_default))
    actions = get_action_server_names_and_types_by_node(probe, node.get_name(),
                                                        node.get_namespace())
    for name, types in actions:
        pkg, _, cls = types[0].split('/')
        mod = __import__(f'{pkg}.action', fromlist=[cls])
        out.append(('action', name, getattr(mod, cls), None))
    return out


class Watch:
    """Every message the nodes under test publish, checked as it arrives."""

    def __init__(self, probe, runs):
        self.probe = probe
        self.bad: list[str] = []
        self.known: set[str] = set()    # KNOWN_OUTPUT_DEFECTS seen
        self.seen = 0
        self.topics = set()
        self._lock = threading.Lock()
        for run in runs:
            for pub in run.node.publishers:
                key = (pub.topic_name, pub.msg_type)
                if key in self.topics or pub.topic_name in ('/rosout', '/parameter_events'):
                    continue
                self.topics.add(key)
                probe.create_subscription(pub.msg_type, pub.topic_name,
                                          self._checker(pub.topic_name), pub.qos_profile)
        self.fuzzed: set = set()    # digests of the messages the fuzzer itself published

    @staticmethod
    def digest(msg, sent: bool = False) -> bytes:
        """A message's content as received (CDR bytes are no key: their padding is not
        zeroed; a sent message goes through CDR first, so float32 fields are rounded)."""
        if sent:
            from rclpy.serialization import deserialize_message, serialize_message
            msg = deserialize_message(serialize_message(msg), type(msg))
        return hashlib.blake2b(repr(msg).encode('utf-8', 'replace'), digest_size=16).digest()

    def _checker(self, topic):
        def check(msg):
            if self.digest(msg) in self.fuzzed:
                return                      # our own fuzzed input, not a node's output
            with self._lock:
                self.seen += 1
                for path, value in float_paths(msg):
                    if math.isfinite(value):
                        continue
                    line = f'{topic}: {path} = {value}'
                    if (topic, path) in KNOWN_OUTPUT_DEFECTS and not INCLUDE_KNOWN:
                        self.known.add(line)
                    else:
                        self.bad.append(line)
                names = getattr(msg, 'name', None)
                if topic.endswith(('joint_states', 'joint_commands')) and names is not None:
                    for joint, pos in zip(names, msg.position):
                        lo, hi = LIMITS.get(joint, (-math.inf, math.inf))
                        if not lo - 1e-6 <= pos <= hi + 1e-6:
                            self.bad.append(f'{topic}: {joint} at {pos} outside [{lo}, {hi}]')
        return check


def _wait(executor, cond, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        executor.spin_once(timeout_sec=0.02)
    return cond()


def _typed(resp) -> str:
    """'' when an answer's error fields are consistent (a code comes with a message)."""
    code = getattr(resp, 'error_code', None)
    if code is not None and code != 0 and not getattr(resp, 'error_msg', 'x'):
        return f'error_code {code} without an error_msg'
    return ''


def _fuzz(interface, gen, probe, executor, watch, report):
    """Publish / call / send CASES generated inputs to one interface; returns failures."""
    from action_msgs.msg import GoalStatus
    from rclpy.action import ActionClient
    kind, name, cls, qos = interface
    failures = []
    if kind == 'topic':
        pub = probe.create_publisher(cls, name, qos)
        _wait(executor, lambda: pub.get_subscription_count() > 0, 5.0)
        for case in range(CASES):
            msg = gen.message(cls, wildness=gen.rng.choice([0.1, 0.5, 1.0]))
            watch.fuzzed.add(watch.digest(msg, sent=True))
            for _ in range(BURST if case % 4 == 3 else 1):
                pub.publish(msg)
            executor.spin_once(timeout_sec=0.01)
        report['messages'] += CASES
        _wait(executor, lambda: False, SETTLE_S)      # the node works through them
        probe.destroy_publisher(pub)
    elif kind == 'service':
        client = probe.create_client(cls, name)
        if not _wait(executor, client.service_is_ready, 10.0):
            return [f'{name}: service not ready']
        for _ in range(CASES):
            req = gen.message(cls.Request, wildness=gen.rng.choice([0.1, 0.5, 1.0]))
            future = client.call_async(req)
            if not _wait(executor, future.done, ANSWER_S):
                failures.append(f'{name}: no answer within {ANSWER_S} s to '
                                f'{repr(req)[:600]}')
                client.remove_pending_request(future)
                break                 # the node is likely gone: the liveness check says

            answer = future.result()
            bad = _typed(answer)
            if bad:
                failures.append(f'{name}: {bad}')
            internal = getattr(answer, 'ERROR_INTERNAL', None)
            if internal is not None and answer.error_code == internal:
                report['internal'].setdefault(name, []).append(answer.error_msg[:120])
        report['requests'] += CASES
        probe.destroy_client(client)
    else:
        client = ActionClient(probe, cls, name)
        if not _wait(executor, client.server_is_ready, 10.0):
            return [f'{name}: action server not ready']
        for case in range(CASES):
            goal = gen.message(cls.Goal, wildness=gen.rng.choice([0.1, 0.5, 1.0]))
            sent = client.send_goal_async(goal)
            if not _wait(executor, sent.done, ANSWER_S):
                failures.append(f'{name}: goal neither accepted nor rejected')
                continue
            handle = sent.result()
            if not handle.accepted:
                continue
            if case % 3 == 2:
                handle.cancel_goal_async()
            result = handle.get_result_async()
            if not _wait(executor, result.done, ANSWER_S):
                failures.append(f'{name}: accepted goal did not end within {ANSWER_S} s')
                continue
            answer = result.result()
            bad = _typed(answer.result)
            if answer.status == GoalStatus.STATUS_ABORTED and \
                    getattr(answer.result, 'error_code', 1) == 0:
                bad = 'aborted without an error_code'   # the execute callback raised
            if bad:
                failures.append(f'{name}: {bad}')
        report['goals'] += CASES
        client.destroy()
    return failures


def _alive(run, probe, executor) -> str:
    """'' when the node's executor runs and answers its own list_parameters service."""
    from rcl_interfaces.srv import ListParameters
    if not run.alive:
        return f'{run.name} died:\n{run.error[-3000:]}'
    client = probe.create_client(ListParameters, f'{run.node.get_fully_qualified_name()}'
                                                 '/list_parameters')
    try:
        if not _wait(executor, client.service_is_ready, 10.0):
            return f'{run.name}: its parameter service is gone'
        future = client.call_async(ListParameters.Request())
        if not _wait(executor, future.done, ANSWER_S):
            return f'{run.name}: did not answer list_parameters within {ANSWER_S} s'
    finally:
        probe.destroy_client(client)
    return ''


def test_no_input_on_any_interface_takes_a_node_down(tmp_path):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    runs = []
    try:
        runs = _start_nodes(ctx, tmp_path)
        probe = rclpy.create_node('fuzzer', context=ctx)
        executor = SingleThreadedExecutor(context=ctx)
        executor.add_node(probe)
        watch = Watch(probe, runs)
        gen = Generator(random.Random(SEED), huge=100_000 if CASES > 100 else 4_000,
                        now_s=time.time())
        interfaces = {}
        for run in runs:
            for itf in _interfaces(run, probe):
                interfaces.setdefault((itf[0], itf[1], _type_name(itf[2])), (itf, []))[1] \
                    .append(run.name)
        report = {'messages': 0, 'requests': 0, 'goals': 0, 'internal': {}}
        failures, lines = [], []
        t0 = time.monotonic()
        for (kind, name, type_name), (itf, owners) in sorted(interfaces.items()):
            if name in KNOWN_DEFECTS and not INCLUDE_KNOWN:
                lines.append(f'  {kind:7s} {name:36s} {type_name:40s} {",".join(owners):28s} '
                             f'NOT FUZZED, known defect: {KNOWN_DEFECTS[name]}')
                continue
            started = time.monotonic()
            failures += _fuzz(itf, gen, probe, executor, watch, report)
            for run in runs:
                dead = _alive(run, probe, executor)
                if dead:
                    failures.append(f'after {kind} {name}: {dead}')
            lines.append(f'  {kind:7s} {name:36s} {type_name:40s} {",".join(owners):28s} '
                         f'{CASES} cases {time.monotonic() - started:6.2f} s')
            if any(not r.alive for r in runs):
                break
        _wait(executor, lambda: False, 1.0)       # the last outputs arrive
        failures += [f'{r.name} died:\n{r.error[-3000:]}' for r in runs if not r.alive]
        print(f'\nfuzz report: seed {SEED}, {CASES} cases per interface, '
              f'{len(interfaces)} interfaces of {len(runs)} nodes '
              f'({", ".join(r.name for r in runs)}), {time.monotonic() - t0:.1f} s')
        print('\n'.join(lines))
        print(f'  inputs: {report["messages"]} messages (+ bursts of {BURST}), '
              f'{report["requests"]} requests, {report["goals"]} goals; outputs checked: '
              f'{watch.seen} messages on {len(watch.topics)} topics; node deaths: '
              f'{sum(not r.alive for r in runs)}; non-finite or out-of-limit outputs: '
              f'{len(watch.bad)}')
        if watch.bad:
            print('  first bad outputs:\n    ' + '\n    '.join(sorted(set(watch.bad))[:15]))
        for srv, msgs in sorted(report['internal'].items()):
            print(f'  {srv}: {len(msgs)} answers ERROR_INTERNAL (typed, but a defect): '
                  f'{sorted(set(msgs))[:3]}')
        for line in sorted(watch.known):
            topic, field = line.split(': ')[0], line.split(': ')[1].split(' = ')[0]
            print(f'  known output defect: {line} ({KNOWN_OUTPUT_DEFECTS[(topic, field)]})')
        assert not failures, '\n'.join(failures)
        assert not watch.bad, '\n'.join(sorted(set(watch.bad))[:40])
        kinds = {k for k, _, _ in interfaces}
        if not ONLY:
            assert kinds == {'topic', 'service', 'action'}, kinds
    finally:
        for run in reversed(runs):
            run.stop()
        rclpy.try_shutdown(context=ctx)


def test_a_negative_energy_window_is_an_invalid_request_not_a_dead_agent(tmp_path):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from maxim_interfaces.srv import EnergyStatus

    global ONLY
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    runs, only = [], ONLY
    try:
        ONLY = ['agent']
        runs = _start_nodes(ctx, tmp_path)
        probe = rclpy.create_node('fuzzer', context=ctx)
        executor = SingleThreadedExecutor(context=ctx)
        executor.add_node(probe)
        client = probe.create_client(EnergyStatus, 'agent/energy_status')
        assert _wait(executor, client.service_is_ready, 10.0)
        future = client.call_async(EnergyStatus.Request(window_seconds=-1.0))
        answered = _wait(executor, future.done, 5.0)
        assert answered and future.result().error_code == EnergyStatus.Response \
            .ERROR_INVALID_REQUEST and runs[0].alive
        nan = client.call_async(EnergyStatus.Request(window_seconds=float('nan')))
        assert _wait(executor, nan.done, 5.0) and nan.result().error_code != 0
        assert runs[0].alive
    finally:
        ONLY = only
        for run in reversed(runs):
            run.stop()
        rclpy.try_shutdown(context=ctx)
