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
MAXIM_FUZZ_NODES a comma-separated subset of nodes to fuzz, MAXIM_FUZZ_WITH nodes started
beside them but not fuzzed (the agent's llm, memory and fear: its deliberations then reach a
model, scripted here, and its memory). A long run is bounded: MAXIM_FUZZ_BUDGET_S cuts an
interface short after that many seconds (the report says how many cases were done), and a
service answer or a goal's result is awaited MAXIM_FUZZ_ANSWER_S (default 20) at most; a
goal that outlives it is cancelled and counted as no answer in time, which is no death (the
liveness check after each interface decides that). MAXIM_FUZZ_REPORT names a directory that
gets one JSON file per interface as it finishes, and summary.md, so a cut run leaves figures
(and progress.json every 100 cases). MAXIM_FUZZ_INTERFACES names the only interfaces to fuzz,
MAXIM_FUZZ_PARAMS overrides node parameters (JSON: {"agent": {"idle.enabled": true}}).
The report lists every interface covered.
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
WITH = [n for n in os.environ.get('MAXIM_FUZZ_WITH', '').split(',') if n]
BUDGET_S = float(os.environ.get('MAXIM_FUZZ_BUDGET_S', '0'))    # per interface; 0: no bound
REPORT_DIR = os.environ.get('MAXIM_FUZZ_REPORT', '')
# Only these interfaces (names, comma-separated), and parameter overrides as JSON
# ({"agent": {"idle.enabled": true}}): for a second long run of what the first one cut short.
INTERFACES = [n for n in os.environ.get('MAXIM_FUZZ_INTERFACES', '').split(',') if n]
PARAMS = json.loads(os.environ.get('MAXIM_FUZZ_PARAMS', '') or '{}')
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
ANSWER_S = float(os.environ.get('MAXIM_FUZZ_ANSWER_S', '20'))   # one answer or goal result
CANCEL_S = 5.0       # after cancelling a goal that outlived ANSWER_S, for its end
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
        'hearing': {'source': 'topic'},
        'console': {},
        'recorder': {'path': str(tmp / 'session.mcap')},
    }
    extra = {'llm': {'backend': ScriptedBackend(_decisions())},
             'console': {'console': Console(file=io.StringIO(), width=100)}}
    runs = []
    for name, spec in NODES.items():
        if ONLY and name not in ONLY and name not in WITH:
            continue
        overrides = [Parameter(k, value=v)
                     for k, v in {**params[name], **PARAMS.get(name, {})}.items()]
        node = spec.load()(context=ctx, parameter_overrides=overrides, **extra.get(name, {}))
        if spec.lifecycle:
            from lifecycle_msgs.msg import State
            from rclpy.lifecycle import TransitionCallbackReturn
            # Nodes built by hand may bring themselves up (autostart); the rest are brought
            # up here as the lifecycle manager would.
            state = node._state_machine.current_state[0]  # noqa: SLF001
            if state == State.PRIMARY_STATE_UNCONFIGURED:
                assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, \
                    node.last_error
                assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        runs.append(NodeRun(name, node, ctx))
        runs[-1].fuzzed = not ONLY or name in ONLY
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
    # The graph names the action servers; the node's own waitables say how many to expect,
    # so a graph not yet up to date is waited for (bounded), not read as "no actions".
    from rclpy.action import ActionServer
    expected = sum(isinstance(w, ActionServer) for w in node.waitables)
    deadline = time.monotonic() + 15.0
    while True:
        actions = get_action_server_names_and_types_by_node(probe, node.get_name(),
                                                            node.get_namespace())
        if len(actions) >= expected or time.monotonic() > deadline:
            break
        time.sleep(0.1)
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


class Budget:
    """The cases one interface gets: CASES, or fewer when BUDGET_S runs out or a node died."""

    def __init__(self, stats, runs):
        self.stats, self.runs = stats, runs
        self.deadline = time.monotonic() + BUDGET_S if BUDGET_S > 0 else math.inf

    def cases(self):
        for case in range(CASES):
            if time.monotonic() > self.deadline:
                self.stats['cut_by_budget'] = True
                return
            if case % 50 == 49 and any(not r.alive for r in self.runs):
                return                  # a node died: the liveness check reports it
            yield case
            self.stats['cases'] = case + 1
            if REPORT_DIR and case % 100 == 99:     # where a long run is, while it runs
                os.makedirs(REPORT_DIR, exist_ok=True)
                with open(os.path.join(REPORT_DIR, 'progress.json'), 'w',
                          encoding='utf-8') as f:
                    json.dump(self.stats, f, default=str)


def _fuzz(interface, gen, probe, executor, watch, stats, runs):
    """Publish / call / send up to CASES generated inputs to one interface, counting in
    `stats` what happened; returns failures (an untyped answer, a server that never came)."""
    from action_msgs.msg import GoalStatus
    from rclpy.action import ActionClient
    kind, name, cls, qos = interface
    failures = []
    budget = Budget(stats, runs)
    if kind == 'topic':
        pub = probe.create_publisher(cls, name, qos)
        _wait(executor, lambda: pub.get_subscription_count() > 0, 5.0)
        for case in budget.cases():
            msg = gen.message(cls, wildness=gen.rng.choice([0.1, 0.5, 1.0]))
            watch.fuzzed.add(watch.digest(msg, sent=True))
            for _ in range(BURST if case % 4 == 3 else 1):
                pub.publish(msg)
                stats['published'] += 1
            executor.spin_once(timeout_sec=0.01)
        _wait(executor, lambda: False, SETTLE_S)      # the node works through them
        probe.destroy_publisher(pub)
    elif kind == 'service':
        client = probe.create_client(cls, name)
        if not _wait(executor, client.service_is_ready, 10.0):
            return [f'{name}: service not ready']
        for _ in budget.cases():
            req = gen.message(cls.Request, wildness=gen.rng.choice([0.1, 0.5, 1.0]))
            future = client.call_async(req)
            if not _wait(executor, future.done, ANSWER_S):
                stats['timeouts'] += 1          # no death by itself: the liveness check says
                stats.setdefault('timeout_examples', []).append(repr(req)[:300])
                client.remove_pending_request(future)
                continue
            answer = future.result()
            bad = _typed(answer)
            if bad:
                failures.append(f'{name}: {bad}')
            if getattr(answer, 'error_code', 0):
                stats['typed_errors'] += 1
                if len(set(stats['error_examples'])) < 8:   # what the typed errors say
                    stats['error_examples'].append(answer.error_msg[:160])
            internal = getattr(answer, 'ERROR_INTERNAL', None)
            if internal is not None and answer.error_code == internal:
                stats['internal'].append(answer.error_msg[:120])
        probe.destroy_client(client)
    else:
        client = ActionClient(probe, cls, name)
        if not _wait(executor, client.server_is_ready, 10.0):
            return [f'{name}: action server not ready']
        for case in budget.cases():
            goal = gen.message(cls.Goal, wildness=gen.rng.choice([0.1, 0.5, 1.0]))
            sent = client.send_goal_async(goal)
            if not _wait(executor, sent.done, ANSWER_S):
                stats['timeouts'] += 1
                stats.setdefault('timeout_examples', []).append('not accepted nor rejected')
                continue
            handle = sent.result()
            if not handle.accepted:
                stats['rejected'] += 1
                continue
            if case % 3 == 2:
                handle.cancel_goal_async()
            result = handle.get_result_async()
            if not _wait(executor, result.done, ANSWER_S):
                handle.cancel_goal_async()      # a goal outliving the bound: cancelled
                stats['timeouts'] += 1
                stats.setdefault('timeout_examples', []).append(repr(goal)[:300])
                _wait(executor, result.done, CANCEL_S)
                continue
            answer = result.result()
            bad = _typed(answer.result)
            if answer.status == GoalStatus.STATUS_ABORTED and not (
                    getattr(answer.result, 'error_code', 0) or
                    getattr(answer.result, 'status_msg', '')):
                bad = 'aborted without a reason'   # the execute callback raised
            if bad:
                failures.append(f'{name}: {bad}')
            if answer.status == GoalStatus.STATUS_SUCCEEDED:
                stats['succeeded'] += 1
            elif answer.status == GoalStatus.STATUS_CANCELED:
                stats['cancelled'] += 1
            else:
                stats['typed_errors'] += 1
                reason = getattr(answer.result, 'error_msg', '') or \
                    getattr(answer.result, 'status_msg', '')
                if len(set(stats['error_examples'])) < 8:
                    stats['error_examples'].append(reason[:160])
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


def _new_stats(kind, name, type_name, owners) -> dict:
    return {'kind': kind, 'name': name, 'type': type_name, 'nodes': owners, 'planned': CASES,
            'cases': 0, 'cut_by_budget': False, 'published': 0, 'succeeded': 0,
            'cancelled': 0, 'rejected': 0, 'typed_errors': 0, 'timeouts': 0, 'internal': [],
            'deaths': 0, 'non_finite': 0, 'outputs_checked': 0, 'seconds': 0.0,
            'failures': [], 'error_examples': []}


def _line(st) -> str:
    cut = ' CUT BY BUDGET' if st['cut_by_budget'] else ''
    answers = '' if st['kind'] == 'topic' else (
        f', typed errors {st["typed_errors"]}, no answer in time {st["timeouts"]}' +
        (f', rejected {st["rejected"]}, cancelled {st["cancelled"]}'
         if st['kind'] == 'action' else ''))
    return (f'  {st["kind"]:7s} {st["name"]:36s} {st["type"]:40s} {",".join(st["nodes"]):20s} '
            f'{st["cases"]}/{st["planned"]} cases{cut}, deaths {st["deaths"]}, non-finite '
            f'{st["non_finite"]}{answers}, {st["seconds"]:.1f} s')


def _write_report(st, header):
    """One JSON file for the interface and its row in summary.md, as soon as it is done."""
    if not REPORT_DIR:
        return
    os.makedirs(REPORT_DIR, exist_ok=True)
    stem = f'{st["kind"]}-{st["name"].strip("/").replace("/", "_")}'
    with open(os.path.join(REPORT_DIR, f'{stem}.json'), 'w', encoding='utf-8') as f:
        json.dump(st, f, indent=1, default=str)
    summary = os.path.join(REPORT_DIR, 'summary.md')
    fresh = not os.path.exists(summary)
    with open(summary, 'a', encoding='utf-8') as f:
        if fresh:
            f.write(f'# {header}\n\n| kind | interface | type | node | cases | cut | deaths | '
                    'non-finite | typed errors | no answer in time | s |\n'
                    '|---|---|---|---|---|---|---|---|---|---|---|\n')
        f.write(f'| {st["kind"]} | {st["name"]} | {st["type"]} | {",".join(st["nodes"])} | '
                f'{st["cases"]}/{st["planned"]} | {"yes" if st["cut_by_budget"] else ""} | '
                f'{st["deaths"]} | {st["non_finite"]} | {st["typed_errors"]} | '
                f'{st["timeouts"]} | {st["seconds"]:.1f} |\n')


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
            if not run.fuzzed:
                continue
            for itf in _interfaces(run, probe):
                if INTERFACES and itf[1] not in INTERFACES:
                    continue
                interfaces.setdefault((itf[0], itf[1], _type_name(itf[2])), (itf, []))[1] \
                    .append(run.name)
        fuzzed = [r.name for r in runs if r.fuzzed]
        header = (f'fuzz report: seed {SEED}, {CASES} cases per interface, '
                  f'{len(interfaces)} interfaces of {len(fuzzed)} nodes ({", ".join(fuzzed)})' +
                  (f', with {", ".join(r.name for r in runs if not r.fuzzed)} running' if
                   len(fuzzed) < len(runs) else '') +
                  (f', budget {BUDGET_S:.0f} s per interface' if BUDGET_S > 0 else ''))
        print(f'\n{header}', flush=True)
        failures, rows = [], []
        t0 = time.monotonic()
        for (kind, name, type_name), (itf, owners) in sorted(interfaces.items()):
            if name in KNOWN_DEFECTS and not INCLUDE_KNOWN:
                print(f'  {kind:7s} {name:36s} {type_name:40s} {",".join(owners):20s} '
                      f'NOT FUZZED, known defect: {KNOWN_DEFECTS[name]}', flush=True)
                continue
            st = _new_stats(kind, name, type_name, owners)
            started, bad_before, seen_before = time.monotonic(), len(watch.bad), watch.seen
            st['failures'] = _fuzz(itf, gen, probe, executor, watch, st, runs)
            for run in runs:
                dead = _alive(run, probe, executor)
                if dead:
                    st['deaths'] += 1
                    st['failures'].append(f'after {kind} {name}: {dead}')
            st['seconds'] = time.monotonic() - started
            st['non_finite'] = len(watch.bad) - bad_before
            st['outputs_checked'] = watch.seen - seen_before
            failures += st['failures']
            rows.append(st)
            print(_line(st), flush=True)
            _write_report(st, header)
            if any(not r.alive for r in runs):
                break
        _wait(executor, lambda: False, 1.0)       # the last outputs arrive
        failures += [f'{r.name} died:\n{r.error[-3000:]}' for r in runs if not r.alive]
        print(f'{header}: {time.monotonic() - t0:.1f} s')
        print('\n'.join(_line(st) for st in rows))
        print(f'  inputs: {sum(st["cases"] for st in rows if st["kind"] == "topic")} messages '
              f'({sum(st["published"] for st in rows)} published with bursts of {BURST}), '
              f'{sum(st["cases"] for st in rows if st["kind"] == "service")} requests, '
              f'{sum(st["cases"] for st in rows if st["kind"] == "action")} goals; no answer '
              f'in time: {sum(st["timeouts"] for st in rows)}; outputs checked: '
              f'{watch.seen} messages on {len(watch.topics)} topics; node deaths: '
              f'{sum(not r.alive for r in runs)}; non-finite or out-of-limit outputs: '
              f'{len(watch.bad)}', flush=True)
        if watch.bad:
            print('  first bad outputs:\n    ' + '\n    '.join(sorted(set(watch.bad))[:15]))
        for st in rows:
            if st['internal']:
                print(f'  {st["name"]}: {len(st["internal"])} answers ERROR_INTERNAL (typed, '
                      f'but a defect): {sorted(set(st["internal"]))[:3]}')
        for line in sorted(watch.known):
            topic, field = line.split(': ')[0], line.split(': ')[1].split(' = ')[0]
            print(f'  known output defect: {line} ({KNOWN_OUTPUT_DEFECTS[(topic, field)]})')
        assert not failures, '\n'.join(failures)
        assert not watch.bad, '\n'.join(sorted(set(watch.bad))[:40])
        kinds = {k for k, _, _ in interfaces}
        if not ONLY and not INTERFACES:
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
