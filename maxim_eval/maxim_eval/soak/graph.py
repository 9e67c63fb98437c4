"""Idle introspection on the real node graph, with robot time on a simulated clock.

`IdleGraph` runs the memory, llm, agent (and fear) nodes in this process over DDS, every one
with `use_sim_time`, and a probe node that publishes `/clock`, percepts and pain and calls
`agent/submit_task` as any other node would. Robot time moves only when `step()` publishes
the next `/clock`; the agent's eligibility timer fires on it, and `step()` waits until the
agent has finished that check (and any percept deliberation) before the next one. Inference
therefore takes no robot time, and two hours of robot time take as long as the agent's work
in them: seconds to minutes with a scripted model, longer with the real one.

`python -m maxim_eval.soak.graph --hours 2 --out DIR [--real-model]` runs the soak twice
(drives on, drives off: the IDLE-3 ablation) in the same synthetic world as
maxim_eval.soak.idle and prints the report: the idle share of stored episodes, goal emissions
against the budgets, memory size, and the decision outcomes each run's provenance records.
"""

import argparse
from collections import Counter
import json
import os
import random
import re
import sys
import threading
import time

import rclpy
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.node import Node
from rclpy.parameter import Parameter
from builtin_interfaces.msg import Time
from rosgraph_msgs.msg import Clock

from maxim_common.qos import EVENTS
from maxim_core.idle.budgets import BudgetConfig
from maxim_core.idle.provenance import compare, INTENT_EMITTED, read_records, THOUGHT_ONLY
from maxim_core.llm.backend import ScriptedBackend
from maxim_core.nodes.clients import wait_for_future
from maxim_interfaces.action import Generate
from maxim_interfaces.msg import (Detection, Episode, IdleEvent, IdleProvenance, PainSignal,
                                  Percept, Task)
from maxim_interfaces.srv import MemoryRecall, SubmitTask, SystemStats
from maxim_eval.soak.idle import (_poisson_schedule, ACTIONS, EPOCH, fact_driven_script,
                                  PEOPLE, SCENES, SoakConfig, UNREACHABLE, USER_GOALS,
                                  check_budgets)


class GraphError(RuntimeError):
    """The graph did not come up, or a node did not answer in time."""


def _stamp(t: float) -> Time:
    sec = int(t)
    return Time(sec=sec, nanosec=int(round((t - sec) * 1e9)) % 1_000_000_000)


def graph_script(seed: int):
    """A deterministic stand-in for the model on the whole graph (tests and fast soaks).

    Idle prompts get maxim_eval.soak.idle's fact-driven answers. Deliberation prompts get
    one decision: a task is carried out by recalling what memory holds about its target,
    except a target beyond the tilt range, which the model tries to look at anyway (the move
    tool refuses: a deterministic failure); a percept is looked up in memory the same way.
    """
    idle = fact_driven_script(seed)

    def decision(reasoning: str, tool: str, args: dict) -> str:
        return json.dumps({'reasoning': reasoning, 'ready_to_act': True,
                           'action': {'tool': tool, 'args': args}})

    def answer(prompt: str) -> str:
        if 'Idle log of Maxim' in prompt:
            return idle(prompt)
        task = re.search(r'A task of yours is due[^:]*: (\S+) (\S+) (\d+)\.', prompt)
        if task:
            target = task.group(2)
            if target in UNREACHABLE:
                return decision(f'The {target} is above me.', 'move',
                                {'pan': 0.0, 'tilt': 1.5})
            return decision(f'What do I know about the {target}?', 'memory_recall',
                            {'query': target, 'limit': 3})
        seen = re.findall(r'saw (?:[A-Z][a-z]+ near )?(?:an? |the )?(\w+)', prompt)
        return decision('Have I seen this before?', 'memory_recall',
                        {'query': seen[-1] if seen else 'scene', 'limit': 3})
    return answer


class IdleGraph:
    """memory + llm (+ fear) + agent (+ a probe) in one process, on a simulated clock."""

    def __init__(self, workdir: str, backend=None, agent_params: dict | None = None,
                 memory_params: dict | None = None, real_model: bool = False,
                 with_fear: bool = False, start: float = EPOCH, step_timeout_s: float = 60.0):
        from maxim_core.nodes.agent_node import AgentNode
        from maxim_core.nodes.fear_node import FearNode
        from maxim_core.nodes.llm_node import LLMNode
        from maxim_memory.nodes.memory_node import MemoryNode

        os.makedirs(workdir, exist_ok=True)
        self.workdir = workdir
        self.t = float(start)
        self.step_timeout_s = step_timeout_s
        self.provenance_path = os.path.join(workdir, 'idle_provenance.jsonl')
        self._capacity = int((memory_params or {}).get('capacity.hippocampus', 100_000)) or \
            sys.maxsize
        self._stored = self._synced = 0
        self.task_db_path = os.path.join(workdir, 'tasks.db')
        self.memory_db_path = os.path.join(workdir, 'memory.db')
        sim = Parameter('use_sim_time', value=True)

        def params(values: dict) -> list:
            return [sim] + [Parameter(k, value=v) for k, v in values.items()]

        self._closed = False
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.nodes = []
        self.executor = MultiThreadedExecutor(num_threads=6, context=self.ctx)
        self._spin = None
        try:
            self.memory = MemoryNode(
                context=self.ctx, autostart=True, parameter_overrides=params(
                    {'db_path': self.memory_db_path, **(memory_params or {})}))
            self.nodes.append(self.memory)
            if self.memory.hub is None:
                raise GraphError(f'the memory node did not open: {self.memory.last_error}')
            llm_values = {} if real_model else {'backend': 'scripted'}
            self.llm = LLMNode(backend=None if real_model else backend, context=self.ctx,
                               parameter_overrides=params(llm_values))
            self.nodes.append(self.llm)
            if self.llm.trigger_configure() != TransitionCallbackReturn.SUCCESS:
                raise GraphError(f'the llm node did not configure: {self.llm.last_error}')
            self.llm.trigger_activate()
            if with_fear:     # without it, acting tools are blocked (fail closed)
                self.nodes.append(FearNode(context=self.ctx, parameter_overrides=params(
                    {'mode': 'passive', 'sandbox.root': workdir})))
            values = {'workspace_root': workdir, 'idle.task_db_path': self.task_db_path,
                      'idle.provenance_path': self.provenance_path,
                      'deliberation.max_cycles': 1, **(agent_params or {})}
            self.agent = AgentNode(context=self.ctx, autostart=True,
                                   parameter_overrides=params(values))
            self.nodes.append(self.agent)
            if self.agent.mind is None:
                raise GraphError(f'the agent did not configure: {self.agent.last_error}')
            self.probe = Node('idle_probe', context=self.ctx)
            self.nodes.append(self.probe)
        except Exception:
            self.close()
            raise
        self.events: list = []
        self.provenance: list = []
        self.episodes: list = []
        p = self.probe
        p.create_subscription(IdleEvent, 'idle', self.events.append, EVENTS)
        p.create_subscription(IdleProvenance, 'idle/provenance', self.provenance.append,
                              EVENTS)
        p.create_subscription(Episode, 'episodes', self.episodes.append, EVENTS)
        self._clock = p.create_publisher(Clock, '/clock', 10)
        self._percepts = p.create_publisher(Percept, 'percepts', EVENTS)
        self._pain = p.create_publisher(PainSignal, 'pain', EVENTS)
        self._submit = p.create_client(SubmitTask, 'agent/submit_task')
        self._recall = p.create_client(MemoryRecall, 'memory/memory_recall')
        self._stats = p.create_client(SystemStats, 'memory/system_stats')
        self._generate = ActionClient(p, Generate, 'llm/generate')
        for n in self.nodes:
            self.executor.add_node(n)
        self._spinning = threading.Event()
        self._spinning.set()
        self._spin = threading.Thread(target=self._spin_loop, name='idle-graph', daemon=True)
        self._spin.start()
        try:
            self._wait_ready(30.0)
        except GraphError:
            self.close()
            raise

    # -- plumbing -----------------------------------------------------------------------------
    def _spin_loop(self) -> None:
        while self._spinning.is_set():
            self.executor.spin_once(timeout_sec=0.05)

    def _wait_until(self, condition, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise GraphError(f'timed out after {timeout_s:.0f} s waiting for {what}')
            time.sleep(0.02)

    def _wait_ready(self, timeout_s: float) -> None:
        # One context, one DDS participant: what the probe sees, the agent sees.
        agent = self.agent
        services = (self._submit, self._recall, self._stats)
        try:
            self._wait_until(lambda: all(c.service_is_ready() for c in services), timeout_s,
                             'the memory and agent services')
        except GraphError as exc:
            missing = [c.srv_name for c in services if not c.service_is_ready()]
            raise GraphError(f'{exc} (not ready: {", ".join(missing)})') from None
        self._wait_until(self._generate.server_is_ready, timeout_s, 'the llm/generate action')
        self._wait_until(lambda: self._clock.get_subscription_count() >= len(self.nodes) - 1,
                         timeout_s,
                         'every node to subscribe to /clock')
        self._wait_until(lambda: self._percepts.get_subscription_count() >= 1
                         and self._pain.get_subscription_count() >= 1, timeout_s,
                         'the agent to subscribe to percepts and pain')
        self._publish_clock()
        self._wait_until(lambda: abs(agent.get_clock().now().nanoseconds / 1e9 - self.t)
                         < 1e-3, timeout_s, 'the agent to take the simulated clock')
        if not agent.mind.wait_for_idle_check(self.t, timeout_s):     # the check at the start
            raise GraphError('the agent did not run its first eligibility check')
        self._stored = int(self._call(self._stats, SystemStats.Request()).episodes)

    def _call(self, client, request, timeout_s: float = 10.0):
        future = client.call_async(request)
        if not wait_for_future(future, timeout_s):
            future.cancel()
            raise GraphError(f'{client.srv_name} did not answer in {timeout_s} s')
        return future.result()

    def _publish_clock(self) -> None:
        self._clock.publish(Clock(clock=_stamp(self.t)))

    # -- driving the graph --------------------------------------------------------------------
    def step(self, dt: float) -> None:
        """Advance robot time by `dt`, wait for the agent's check at the new time, for the
        probe to have received what the agent published, and for memory to hold every
        episode the agent has published (the next retrieval sees them: runs repeat)."""
        self.t += float(dt)
        self._publish_clock()
        if not self.agent.mind.wait_for_idle_check(self.t, self.step_timeout_s):
            raise GraphError(f'the agent did not finish its check at robot time '
                             f'{self.t - EPOCH:.0f} s within {self.step_timeout_s} s')
        self._sync_topics()
        self._sync_memory()

    def _sync_topics(self) -> None:
        n = self.agent.mind.counts
        self._wait_until(lambda: len(self.events) >= n['idle_events']
                         and len(self.provenance) >= n['provenance_records']
                         and len(self.episodes) >= n['episodes_sent'], 10.0,
                         'the probe to receive what the agent published')

    def _sync_memory(self) -> None:
        published = self.agent.mind.counts['episodes_sent']
        if published == self._synced:
            return
        want = min(self._stored + published - self._synced, self._capacity)
        deadline = time.monotonic() + 10.0
        while True:
            stored = int(self._call(self._stats, SystemStats.Request()).episodes)
            if stored >= want:
                break
            if time.monotonic() > deadline:
                raise GraphError(f'memory holds {stored} episodes, {want} were published')
            time.sleep(0.01)
        self._stored, self._synced = stored, published

    def pain(self, intensity: float, source: str = 'head_pan_joint',
             description: str = 'the pan servo stalled against its limit') -> None:
        """Publish a pain signal and wait until the agent has felt it."""
        before = self.agent.mind.counts['pains_received']
        msg = PainSignal(pain_type=PainSignal.TYPE_JOINT_LIMIT, type_name='joint_limit',
                         intensity=float(intensity), source=source, description=description)
        msg.header.stamp = _stamp(self.t)
        self._pain.publish(msg)
        self._wait_until(lambda: self.agent.mind.counts['pains_received'] > before, 10.0,
                         'the agent to receive the pain signal')

    def submit(self, goal: str = '', op: int = SubmitTask.Request.OP_ADD, task_id: str = '',
               next_eligible_at: float = 0.0, manual_pause: bool = False,
               prerequisites=(), origin: str = ''):
        request = SubmitTask.Request(op=op, task=Task(
            task_id=task_id, goal=goal, next_eligible_at=float(next_eligible_at),
            manual_pause=manual_pause, prerequisites=list(prerequisites), origin=origin))
        return self._call(self._submit, request)

    def percept(self, narrative: str, people=(), objects=(), salience: float = 0.6,
                source: int = Percept.SOURCE_VISION) -> None:
        """Publish a percept and wait until the agent has taken it in."""
        before = self.agent.mind.counts['percepts_received']
        msg = Percept(percept_id=f'p{int(self.t)}-{before}', source=source,
                      source_name='idle_probe', narrative=narrative, salience=float(salience),
                      novelty=0.5, people=[Detection(label=p) for p in people],
                      objects=[Detection(label=o) for o in objects])
        msg.header.stamp = _stamp(self.t)
        self._percepts.publish(msg)
        self._wait_until(lambda: self.agent.mind.counts['percepts_received'] > before, 10.0,
                         'the agent to receive the percept')

    def wait_for(self, condition, timeout_s: float = 10.0, what: str = 'a message') -> None:
        self._wait_until(condition, timeout_s, what)

    def memory_counts(self) -> dict:
        """Episodes in memory (all, and the agent's idle thoughts) and the DB size."""
        stats = self._call(self._stats, SystemStats.Request())
        idle = self._call(self._recall, MemoryRecall.Request(mode='idle', limit=1))
        size = sum(os.path.getsize(p) for p in (self.memory_db_path,
                                                self.memory_db_path + '-wal')
                   if os.path.exists(p))
        return {'episodes': int(stats.episodes), 'idle_episodes': int(idle.total_matches),
                'db_bytes': size}

    def close(self) -> None:
        """Stop and destroy every node (a second call does nothing)."""
        if self._closed:
            return
        self._closed = True
        if self._spin is not None:
            self.agent.mind.stop()      # while spinning: calls in flight get answers
            self._spinning.clear()
            self._spin.join(timeout=10.0)
        self.executor.shutdown(timeout_sec=5.0)
        for n in reversed(self.nodes):
            n.destroy_node()
        rclpy.try_shutdown(context=self.ctx)


# The soak -----------------------------------------------------------------------------------

def run_graph_soak(workdir: str, label: str, soak: SoakConfig | None = None,
                   drives_enabled: bool = True, real_model: bool = False,
                   memory_capacity: int = 500, log=None) -> dict:
    """One soak on the graph: the synthetic world of maxim_eval.soak.idle, delivered over
    ROS, one `/clock` step of `soak.tick_s` at a time."""
    soak = soak or SoakConfig()
    out = os.path.join(workdir, label)
    os.makedirs(out, exist_ok=True)
    for name in ('idle_provenance.jsonl', 'tasks.db', 'memory.db'):
        for suffix in ('', '-wal', '-shm'):
            if os.path.exists(os.path.join(out, name + suffix)):
                os.remove(os.path.join(out, name + suffix))
    backend = None if real_model else ScriptedBackend(graph_script(soak.seed))
    agent_params = {
        'idle.drives_enabled': drives_enabled, 'idle.check_period_s': soak.tick_s,
        'idle.cycle_interval_s': soak.tick_s, 'idle.allowed_actions': list(ACTIONS),
        'idle.model.seed': soak.seed, 'idle.drives.memory_capacity': memory_capacity}
    g = IdleGraph(out, backend, agent_params,
                  memory_params={'capacity.hippocampus': memory_capacity},
                  real_model=real_model, step_timeout_s=600.0 if real_model else 60.0)
    wall0 = time.monotonic()
    try:
        rng = random.Random(soak.seed)
        percepts = _poisson_schedule(rng, soak.percepts_per_hour, soak.hours)
        user_tasks = _poisson_schedule(rng, soak.user_tasks_per_hour, soak.hours)
        pains = _poisson_schedule(rng, soak.pain_events_per_hour, soak.hours)
        world = random.Random(soak.seed + 1)
        ticks = int(soak.hours * 3600.0 / soak.tick_s)
        task_rows_max, delivered = 0, 0
        for tick in range(ticks):
            elapsed = tick * soak.tick_s
            while percepts and percepts[0] <= elapsed:
                percepts.pop(0)
                scene = world.choice(SCENES)
                people = ()
                if world.random() < soak.person_share:
                    people = (world.choice(PEOPLE),)
                    scene = f'{people[0]} near {scene}'
                g.percept(f'I saw {scene}.', people=people,
                          salience=round(world.uniform(0.2, 0.9), 2))
                delivered += 1
            while user_tasks and user_tasks[0] <= elapsed:
                user_tasks.pop(0)
                r = g.submit(world.choice(USER_GOALS))
                if not r.accepted:
                    raise GraphError(f'submit_task refused a world task: {r.error_msg}')
            while pains and pains[0] <= elapsed:
                pains.pop(0)
                g.pain(0.9)
            g.step(soak.tick_s)
            task_rows_max = max(task_rows_max, g.agent.mind.tasks.count())
            if log is not None and tick % 30 == 29:
                log(f'{label}: {tick + 1}/{ticks} steps, {g.agent.mind.idle.cycles} idle cycles, '
                    f'{time.monotonic() - wall0:.0f} s')
        memory = g.memory_counts()
        origins = Counter(t.origin for t in g.agent.mind.tasks.tasks())
        statuses = Counter(t.status for t in g.agent.mind.tasks.tasks())
        cycles, tasks_run = g.agent.mind.idle.cycles, g.agent.mind.idle.tasks_run
        idle_checks = g.agent.mind.idle.idle_checks
        topic_records = len(g.provenance)
        kinds = Counter('idle' if e.mode == 'idle' else
                        'task' if e.perception.startswith('A task of yours') else 'percept'
                        for e in g.episodes)
    finally:
        g.close()
    wall = time.monotonic() - wall0
    records = read_records(g.provenance_path)
    outcomes = Counter(r['decision_outcome'] for r in records)
    stored_reflections = sum(1 for r in records
                             if r['stored'] and r['decision_outcome'] == THOUGHT_ONLY)
    hours = max(1, int(round(soak.hours)))
    per_hour = [0] * hours
    for r in records:
        if r['decision_outcome'] == INTENT_EMITTED:
            per_hour[min(hours - 1, int((r['timestamp'] - EPOCH) // 3600))] += 1
    total = max(1, memory['episodes'])
    return {
        'label': label, 'hours': soak.hours, 'ticks': ticks, 'tick_s': soak.tick_s,
        'wall_s': round(wall, 1), 'drives_enabled': drives_enabled,
        'model': 'real (embedded gemma-3-270m)' if real_model else 'scripted (graph_script)',
        'idle_checks': idle_checks, 'idle_cycles': cycles,
        'provenance_records': len(records),
        'provenance_on_topic': topic_records, 'tasks_run': tasks_run,
        'outcomes': dict(outcomes),
        'suppressions': dict(Counter(r['suppression_reason'] for r in records
                                     if r['suppression_reason'])),
        'storage': dict(Counter(r['storage_reason'] for r in records)),
        'percepts_delivered': delivered, 'episodes_by_kind': dict(kinds),
        'episodes_total': memory['episodes'], 'idle_episodes': memory['idle_episodes'],
        'idle_share': round(memory['idle_episodes'] / total, 4),
        'reflection_share': round(stored_reflections / total, 4),
        'memory_db_bytes': memory['db_bytes'], 'memory_capacity': memory_capacity,
        'goal_emissions': outcomes[INTENT_EMITTED], 'emissions_per_hour': per_hour,
        'budget_violations': check_budgets(records, BudgetConfig()),
        'task_rows_max': task_rows_max, 'tasks_by_origin': dict(origins),
        'tasks_by_status': dict(statuses), 'provenance_path': g.provenance_path,
    }


def run_graph_ablation(workdir: str, soak: SoakConfig | None = None,
                       real_model: bool = False, log=None) -> dict:
    """The graph soak with drives on and off, and the comparison of their provenance."""
    reports = {label: run_graph_soak(workdir, label, soak, enabled, real_model, log=log)
               for label, enabled in (('drives_on', True), ('drives_off', False))}
    diff = compare(reports['drives_on']['provenance_path'],
                   reports['drives_off']['provenance_path'])
    return {**reports, 'compare': diff}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog='python -m maxim_eval.soak.graph',
        description='Idle soak on the node graph (simulated /clock), drives on and off.')
    parser.add_argument('--hours', type=float, default=2.0, help='robot time per run')
    parser.add_argument('--tick', type=float, default=60.0,
                        help='seconds of robot time per /clock step (= the check period)')
    parser.add_argument('--seed', type=int, default=7)
    parser.add_argument('--out', required=True, help='directory for databases and logs')
    parser.add_argument('--real-model', action='store_true',
                        help='the embedded GGUF through the llm node instead of the script')
    args = parser.parse_args(argv)
    # A graph of its own: another soak or robot on this machine would share /clock and
    # every topic (tests get the same isolation from conftest.py).
    os.environ.setdefault('ROS_DOMAIN_ID', str(1 + os.getpid() % 200))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    result = run_graph_ablation(
        args.out, SoakConfig(hours=args.hours, tick_s=args.tick, seed=args.seed),
        args.real_model, log=lambda m: print(m, file=sys.stderr, flush=True))
    print(json.dumps(result, indent=2, sort_keys=True, default=str))
    return 0


if __name__ == '__main__':
    sys.exit(main())
