"""The agent node: closes perceive -> decide -> act -> evaluate over ROS, runs the robot's
tasks, and introspects when none is eligible (IDLE-1 to IDLE-5)."""

from collections import OrderedDict
from dataclasses import dataclass
import json
import os
import queue
import sqlite3
import threading
import time
import uuid

import rclpy
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from sensor_msgs.msg import JointState

from maxim_core.agent.loop import AgentLoop, Decision, LoopConfig, Percept as CorePercept
from maxim_core.agent.verify import WorldVerifier
from maxim_core.conversions import (idle_status_to_msg, msg_to_new_task, provenance_to_msg,
                                    recall_to_events, task_to_msg)
from maxim_core.deliberation.cycles import DeliberationConfig, Deliberator
from maxim_core.deliberation.energy import EnergyBudget
from maxim_core.deliberation.enrichment import BioEnrichmentPipeline
from maxim_core.deliberation.gate import ThoughtGate
from maxim_core.fear.agent import ToolPainBridge
from maxim_core.idle.controller import IdleIntrospectionController, RetrievalError
from maxim_core.idle.provenance import ProvenanceLog
from maxim_core.idle.runtime import (Body, configs_from, IdleRuntime, IdleSettings,
                                     outcome_of_step, PARAMS as IDLE_PARAMS,
                                     task_percept_text, TaskOutcome)
from maxim_core.idle.tasks import TaskError, TaskNotFound, TaskStore
from maxim_core.llm.backend import LLMError
from maxim_core.llm.grammar import deliberation_grammar
from maxim_core.nodes.clients import FearClient, fill_msg, GenerateBackend, ServiceQuery
from maxim_core.prompt.builder import identity_section, PromptBuilder
from maxim_core.qos import COMMANDS, EVENTS, SENSOR
from maxim_core.tools.catalog import build_tool_registry
from maxim_core.tools.scope import ToolExecutor, ToolScope
from maxim_interfaces.action import Deliberate
from maxim_interfaces.msg import (Episode, HeadGoal, IdleEvent, IdleProvenance, PainSignal,
                                  Percept, Thought, ToolCall, ToolResult)
from maxim_interfaces.srv import EnergyStatus, SubmitTask

# A task's turn is routine: its episode is not, by itself, news for idle introspection's
# storage gate (idle.budgets.salient_delta_threshold); force=True makes the robot think on it.
TASK_SALIENCE = 0.5

# The tools active by default: looking, recalling, answering (the scene scope adds more).
DEFAULT_ACTIVE = ['move', 'track_target', 'focus_interests', 'novelty_track', 'respond',
                  'memory_recall', 'predict_outcome', 'scene_summary']


@dataclass(frozen=True)
class AgentConfig:
    mode: str
    simulation: bool
    interactive: bool
    goal: str
    workspace_root: str
    active_tools: tuple
    active_cap: int
    percept_min_salience: float
    max_cycles: int
    max_tokens: int
    temperature: float
    llm_timeout_s: float
    use_grammar: bool


def _declare(node, name, default, description):
    return node.declare_parameter(name, default,
                                  ParameterDescriptor(description=description)).value


def _declare_idle(node, run_id: str) -> IdleSettings:
    """Declare the `idle.*` parameters (read-only: they shape the task store and the
    controller at start) and build their configs; a bad value is a ValueError naming it."""
    values = {}
    for p in IDLE_PARAMS:
        d = ParameterDescriptor(description=p.description, read_only=True)
        if p.range is not None:
            lo, hi = p.range
            if isinstance(p.default, float):
                d.floating_point_range = [FloatingPointRange(from_value=float(lo),
                                                             to_value=float(hi))]
            else:
                d.integer_range = [IntegerRange(from_value=int(lo), to_value=int(hi), step=1)]
        if isinstance(p.default, list):  # an empty list has no ROS type of its own
            value = node.declare_parameter(p.name, Parameter.Type.STRING_ARRAY, d).value
            values[p.name] = list(value or [])
        else:
            values[p.name] = node.declare_parameter(p.name, p.default, d).value
    try:
        return configs_from(values, run_id=run_id)
    except ValueError as exc:
        raise ValueError(f'bad idle.* parameters: {exc}') from exc


def thought_to_msg(t) -> Thought:
    msg = Thought(deliberation_id=t.deliberation_id, kind=int(t.kind), status=int(t.status),
                  status_msg=t.status_msg, cycle=int(t.cycle), max_cycles=int(t.max_cycles),
                  text=t.text, salience=float(t.salience), enriched_by=list(t.enriched_by),
                  experience=t.experience, ready_to_act=bool(t.ready_to_act),
                  converged=bool(t.converged), jaccard_previous=float(t.jaccard_previous),
                  action_json=json.dumps(t.action) if t.action else '',
                  enrichment_s=float(t.enrichment_s), llm_s=float(t.llm_s),
                  cycle_s=float(t.cycle_s), prompt_tokens=int(t.prompt_tokens),
                  completion_tokens=int(t.completion_tokens))
    return msg


def run_to_call(run, deliberation_id: str = '') -> ToolCall:
    return ToolCall(call_id=run.call_id, deliberation_id=deliberation_id, tool_name=run.tool,
                    requested_name=run.requested_name, arguments_json=json.dumps(run.args),
                    introspection=bool(run.introspection))


def run_to_result(run, deliberation_id: str = '') -> ToolResult:
    return ToolResult(call=run_to_call(run, deliberation_id), success=bool(run.success),
                      output=str(run.output)[:4000], blocked=bool(run.blocked),
                      blocked_reason=run.blocked_reason, blocked_by=int(run.blocked_layer),
                      verified=bool(run.verified), verification=run.verification,
                      error_code=int(run.error_code), error_msg=run.error_msg[:2000],
                      duration_s=float(run.duration_s))


def percept_from_msg(msg: Percept) -> CorePercept:
    sources = {0: 'vision', 1: 'user', 2: 'simulation', 3: 'system', 4: 'body'}
    return CorePercept(narrative=msg.narrative or 'Nothing in particular.',
                       percept_id=msg.percept_id, source=sources.get(msg.source, 'vision'),
                       objects=[d.label for d in msg.objects],
                       people=[d.label for d in msg.people],
                       novelty=float(msg.novelty), salience=float(msg.salience))


class AgentNode(Node):
    """Percept -> ThoughtGate -> deliberation -> fear review -> tool -> verification -> episode.

    Parameters:
        mode (string): passive | active | singularity (what tools may touch).
        simulation (bool), interactive (bool): the identity blocks of the prompt.
        goal (string): the standing goal.
        workspace_root (string): root of the filesystem tools' sandbox.
        tools.active (string[]), tools.active_cap (int): the scene scope.
        percept_min_salience (double): vision percepts below this are not deliberated.
        deliberation.max_cycles/max_tokens/temperature/llm_timeout_s/use_grammar.
        idle.* (read-only; maxim_core.idle.runtime.PARAMS lists them with their defaults):
            idle.enabled (bool, true), idle.task_db_path (string, ~/.maxim/tasks.db),
            idle.provenance_path (string, ~/.maxim/idle_provenance.jsonl),
            idle.check_period_s (double, 5.0, robot time), idle.cycle_interval_s (60.0),
            idle.require_explicit_goal_tag (true), idle.drives_enabled (true),
            idle.output_mode, idle.allowed_actions (string[]), idle.prompt_template,
            idle.retrieval.*, idle.model.*, idle.budgets.*, idle.drives.*, idle.tasks.*,
            idle.breaker.*.
    Subscriptions: percepts (Percept), joint_states (JointState), pain (PainSignal),
        episodes (Episode: the modes and saliences idle retrieval needs)
    Publishers: thoughts (Thought), tool_calls (ToolCall), tool_results (ToolResult),
        episodes (Episode), head/goal (HeadGoal), idle (IdleEvent),
        idle/provenance (IdleProvenance), pain (PainSignal: tool failures)
    Services: agent/energy_status (EnergyStatus), agent/submit_task (SubmitTask)
    Actions: agent/deliberate (Deliberate)
    Clients: llm/generate, llm/tokenize, fear/review_action, memory/*, perception/*
    Time: robot time is the node's ROS clock, so with use_sim_time the task backoffs, idle
    periods and budgets follow /clock (a simulated clock may run it fast).
    """

    def __init__(self, **kwargs):
        super().__init__('agent', **kwargs)
        self.config = AgentConfig(
            mode=_declare(self, 'mode', 'passive', 'passive | active | singularity'),
            simulation=_declare(self, 'simulation', True, 'The robot lives in a simulation'),
            interactive=_declare(self, 'interactive', False, 'A person talks to the robot'),
            goal=_declare(self, 'goal', '', 'The standing goal'),
            workspace_root=_declare(self, 'workspace_root', '.', 'Filesystem tools sandbox'),
            active_tools=tuple(_declare(self, 'tools.active', DEFAULT_ACTIVE,
                                        'Tools active in the scene scope')),
            active_cap=_declare(self, 'tools.active_cap', 12, 'At most this many active'),
            percept_min_salience=_declare(self, 'percept_min_salience', 0.3,
                                          'Vision percepts below this are not deliberated'),
            max_cycles=_declare(self, 'deliberation.max_cycles', 3, 'Cycle cap'),
            max_tokens=_declare(self, 'deliberation.max_tokens', 192, 'Tokens per answer'),
            temperature=_declare(self, 'deliberation.temperature', 0.8, 'Sampling temperature'),
            llm_timeout_s=_declare(self, 'deliberation.llm_timeout_s', 120.0,
                                   'Bound on one LLM call'),
            use_grammar=_declare(self, 'deliberation.use_grammar', True,
                                 'Decode under the lean GBNF of the active tools'))
        run_id = uuid.uuid4().hex[:8]
        self.idle_settings = _declare_idle(self, run_id)
        c = self.config
        self._group = ReentrantCallbackGroup()
        self.backend = GenerateBackend(self, 'agent', callback_group=self._group,
                                       timeout_s=c.llm_timeout_s)
        self.query = ServiceQuery(self, callback_group=self._group)
        self.fear = FearClient(self, c.mode, callback_group=self._group)
        self.energy = EnergyBudget()
        self._head = None
        self._head_lock = threading.Lock()

        self.registry = build_tool_registry(
            mode=c.mode, root=c.workspace_root, send_head_goal=self._send_head_goal,
            query=self._query)
        self.scope = ToolScope(self.registry, cap=c.active_cap)
        unknown = [n for n in c.active_tools if n not in self.registry]
        if unknown:
            raise ValueError(f'tools.active names unknown tools: {", ".join(unknown)}')
        self.executor_tools = ToolExecutor(self.registry, self.scope)
        builder = PromptBuilder(lambda text: len(self.backend.tokenize(text)),
                                identity=identity_section(simulation=c.simulation,
                                                          interactive=c.interactive))
        self.enrichment = BioEnrichmentPipeline({
            'hippocampus': self._ask('memory_recall', lambda t: {'query': t[:200], 'limit': 3}),
            'ec': self._ask('similarity_search', lambda t: {'context': t[:300], 'limit': 3}),
            'nac': self._ask('causal_links', lambda t: {'limit': 3}),
            'concepts': self._ask('concept_query', lambda t: {'name': t[:60], 'limit': 3}),
        })
        self.deliberator = Deliberator(
            self.backend, builder=builder, energy=self.energy, enrichment=self.enrichment,
            config=DeliberationConfig(max_cycles=c.max_cycles, max_tokens=c.max_tokens,
                                      temperature=c.temperature,
                                      llm_timeout_s=c.llm_timeout_s),
            grammar_for=deliberation_grammar if c.use_grammar else None,
            lookup=self.registry.lookup)
        self.gate = ThoughtGate()
        self._tick = 0
        self.loop = AgentLoop(
            LoopConfig(mode=c.mode, run_id=run_id, goal=c.goal),
            think=self._think, review=self._review,
            resolve=lambda name: self.executor_tools.resolve(
                name, [t.name for t in self._tools_now()]),
            execute=self._execute, record_episode=self._publish_episode,
            verify=WorldVerifier(head_position=self._head_position),
            on_call=lambda run: self._calls.publish(run_to_call(run)),
            on_result=lambda run: self._results.publish(run_to_result(run)),
            on_outcome=lambda run: self._pain_bridge.record(
                run.tool, run.context, run.success, run.error_code, run.error_msg))
        # Failures hurt, escalating with repeats (the NAc learns from the episodes).
        self._pain_bridge = ToolPainBridge(pain=self._publish_pain)

        self._thoughts = self.create_publisher(Thought, 'thoughts', EVENTS)
        self._calls = self.create_publisher(ToolCall, 'tool_calls', EVENTS)
        self._results = self.create_publisher(ToolResult, 'tool_results', EVENTS)
        self._episodes = self.create_publisher(Episode, 'episodes', EVENTS)
        self._pains = self.create_publisher(PainSignal, 'pain', EVENTS)
        self._goals = self.create_publisher(HeadGoal, 'head/goal', COMMANDS)
        self.create_subscription(Percept, 'percepts', self._on_percept, EVENTS)
        self.create_subscription(JointState, 'joint_states', self._on_joints, SENSOR)
        self.create_service(EnergyStatus, 'agent/energy_status', self._on_energy,
                            callback_group=self._group)
        self._action = ActionServer(self, Deliberate, 'agent/deliberate', self._on_deliberate,
                                    cancel_callback=lambda _g: CancelResponse.ACCEPT,
                                    callback_group=self._group)
        self._inbox: queue.Queue = queue.Queue(maxsize=1)
        self._busy = threading.Lock()
        self._stop = threading.Event()
        self.dropped_percepts = 0
        self.percepts_received = 0
        self.percepts_pending = 0        # queued or being deliberated
        self.pains_received = 0
        self.episodes_published = 0
        self.idle_events_published = 0
        self.provenance_published = 0
        self._setup_idle()
        self._worker = threading.Thread(target=self._work, name='agent-loop', daemon=True)
        self._worker.start()
        if self.idle is not None:
            self._idle_worker.start()

    def _setup_idle(self) -> None:
        """Task store, executor with circuit breaker and idle introspection (IDLE-1..5)."""
        s = self.idle_settings.runtime
        self.tasks: TaskStore | None = None
        self.idle: IdleRuntime | None = None
        self._body: Body | None = None
        self._body_lock = threading.RLock()
        self._notes: OrderedDict = OrderedDict()     # episode id -> mode, salience, reasoning
        self._notes_lock = threading.Lock()
        self._idle_wake = threading.Event()
        self._tick_done = threading.Condition()
        self.idle_ticked_at = 0.0                    # robot time of the last finished check
        self.create_subscription(Episode, 'episodes', self._on_episode, EVENTS)
        self.create_service(SubmitTask, 'agent/submit_task', self._on_submit_task,
                            callback_group=self._group)
        if not s.enabled:
            return
        self.tasks = TaskStore(os.path.expanduser(s.task_db_path), self.idle_settings.tasks,
                               clock=self._robot_time)
        if self.tasks.corruption:
            self.get_logger().error(f'the task store was corrupt; moved aside to '
                                    f'{self.tasks.corruption}, starting empty')
        log = ProvenanceLog(os.path.expanduser(s.provenance_path)) \
            if s.provenance_path else None
        idle_cfg = self.idle_settings.idle
        controller = IdleIntrospectionController(
            self.backend, self.tasks, self._idle_retrieve, idle_cfg,
            rerank=self._idle_rerank if idle_cfg.semantic_top_k > 0 else None,
            provenance_log=log, clock=self._robot_time)
        self.idle = IdleRuntime(self.tasks, self.idle_settings.breaker(), controller)
        self._idle_events = self.create_publisher(IdleEvent, 'idle', EVENTS)
        self._idle_provenance = self.create_publisher(IdleProvenance, 'idle/provenance', EVENTS)
        self.create_subscription(PainSignal, 'pain', self._on_pain, EVENTS)
        self.create_timer(s.check_period_s, self._idle_wake.set,
                          callback_group=MutuallyExclusiveCallbackGroup())
        self._idle_worker = threading.Thread(target=self._idle_work, name='agent-idle',
                                             daemon=True)

    # -- ROS in ------------------------------------------------------------------------------
    def _on_joints(self, msg: JointState) -> None:
        pos = dict(zip(msg.name, msg.position))
        if 'head_pan_joint' in pos and 'head_tilt_joint' in pos:
            with self._head_lock:
                self._head = (float(pos['head_pan_joint']), float(pos['head_tilt_joint']))

    def _head_position(self):
        with self._head_lock:
            return self._head

    def _on_percept(self, msg: Percept) -> None:
        if msg.source_name == 'agent':
            return
        self.percepts_received += 1
        if msg.source == Percept.SOURCE_USER or msg.people:
            now = self._robot_time()
            if now > 0:
                with self._body_lock:
                    self._body_at(now).record_interaction(now)
        if msg.source == Percept.SOURCE_VISION and \
                msg.salience < self.config.percept_min_salience:
            return
        with self._tick_done:
            try:  # keep only the newest percept: a robot thinks about now, not a backlog
                self._inbox.get_nowait()
                self.dropped_percepts += 1
            except queue.Empty:
                self.percepts_pending += 1  # nothing waiting: nothing to drop
            self._inbox.put_nowait(msg)

    def _robot_time(self) -> float:
        """Seconds since the epoch on the node's clock (/clock under use_sim_time)."""
        return self.get_clock().now().nanoseconds / 1e9

    def _body_at(self, now: float) -> Body:
        with self._body_lock:
            if self._body is None:
                s = self.idle_settings.runtime
                self._body = Body(now, s.pain_window_s, s.memory_capacity)
            return self._body

    def _on_pain(self, msg: PainSignal) -> None:
        now = self._robot_time()
        if now > 0:
            with self._body_lock:
                self._body_at(now).record_pain(now, max(0.0, min(1.0, float(msg.intensity))))
        self.pains_received += 1

    def _on_episode(self, msg: Episode) -> None:
        self._note_episode(msg.episode_id, msg.mode, msg.salience, msg.reasoning)

    def _note_episode(self, episode_id: str, mode: str, salience: float,
                      reasoning: str) -> None:
        with self._notes_lock:
            self._notes[episode_id] = {'mode': mode, 'salience': float(salience),
                                       'reasoning': reasoning[:300]}
            while len(self._notes) > 2000:
                self._notes.popitem(last=False)

    def _on_submit_task(self, request, response):
        if self.tasks is None:
            response.error_code = response.ERROR_INVALID_REQUEST
            response.error_msg = 'idle.enabled is false: this agent keeps no tasks'
            return response
        ops = {request.OP_PAUSE: self.tasks.pause, request.OP_RESUME: self.tasks.resume,
               request.OP_CANCEL: self.tasks.cancel}
        try:
            if request.op == request.OP_ADD:
                task = self.tasks.add(**msg_to_new_task(request.task))
            elif request.op in ops:
                task = ops[request.op](request.task.task_id)
            else:
                raise ValueError(f'op must be OP_ADD, OP_PAUSE, OP_RESUME or OP_CANCEL, '
                                 f'not {request.op}')
        except TaskNotFound as exc:
            response.error_code = response.ERROR_NOT_FOUND
            response.error_msg = f'no task {exc.args[0]!r}'
            return response
        except (TaskError, ValueError) as exc:   # TaskError is a ValueError; named for clarity
            response.error_code = response.ERROR_INVALID_REQUEST
            response.error_msg = str(exc)
            return response
        response.accepted = True
        task_to_msg(task, response.task)
        return response

    def _on_energy(self, request, response):
        report = self.energy.status(request.window_seconds)
        for key, value in vars(report).items():
            if hasattr(response, key):
                setattr(response, key, value)
        response.available = True
        return response

    # -- the loop ----------------------------------------------------------------------------
    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self._inbox.get(timeout=0.2)
            except queue.Empty:
                continue
            with self._busy:
                try:
                    self.loop.step(percept_from_msg(msg))
                except LLMError as exc:
                    self._status_thought(f'the language model failed: {exc}')
                except (ValueError, RuntimeError) as exc:
                    self.get_logger().error(f'agent loop step failed: {exc}')
                    self._status_thought(f'this step failed: {exc}')
                finally:
                    with self._tick_done:
                        self.percepts_pending -= 1
                        self._tick_done.notify_all()

    # -- tasks and idle introspection ----------------------------------------------------------
    def _idle_work(self) -> None:
        while not self._stop.is_set():
            if not self._idle_wake.wait(timeout=0.2):
                continue
            self._idle_wake.clear()
            now = self._robot_time()
            if now <= 0:
                continue    # no clock yet (use_sim_time before the first /clock)
            try:
                self._idle_tick(now)
            except (ValueError, RuntimeError, sqlite3.Error, OSError) as exc:
                self.get_logger().error(f'idle check failed: {exc}')
            with self._tick_done:
                self.idle_ticked_at = max(self.idle_ticked_at, now)
                self._tick_done.notify_all()

    def _idle_tick(self, now: float) -> None:
        """One eligibility check: run an eligible task, or introspect when idle is due."""
        body = self._body_at(now)
        if not self._busy.acquire(blocking=False):
            self.idle.tick(now, self._run_task, busy=True)   # deliberating: not idle
            return
        try:
            result = self.idle.tick(
                now, self._run_task, drive_state=lambda: self._drive_state(body, now),
                on_event=self._publish_idle_event, busy=not self._inbox.empty())
        finally:
            self._busy.release()
        if result.outcome is not None and not result.outcome.success:
            self.get_logger().info(f'task {result.task.goal!r} failed: '
                                   f'{result.outcome.error}')
        if result.cycle is not None:
            msg = provenance_to_msg(result.cycle.provenance, IdleProvenance())
            msg.header.stamp = self.get_clock().now().to_msg()
            self._idle_provenance.publish(msg)
            self.provenance_published += 1
            if result.cycle.episode is not None:
                self._publish_episode(result.cycle.episode)

    def _publish_idle_event(self, status) -> None:
        msg = idle_status_to_msg(status, IdleEvent())
        msg.header.stamp = self.get_clock().now().to_msg()
        self._idle_events.publish(msg)
        self.idle_events_published += 1
        controller = self.idle.controller
        if not self.backend.model:
            try:
                self.backend.ensure_ready()    # learn the model's name for provenance
            except LLMError as exc:            # the cycle will record the failure itself
                self.get_logger().warning(f'idle: {exc}')
        controller.model_name = self.backend.model or controller.model_name

    def _run_task(self, task) -> TaskOutcome:
        """One attempt at a task: a pass of the agent loop on it (caller holds _busy)."""
        percept = CorePercept(narrative=task_percept_text(task), source='system',
                              percept_id=f'task-{task.task_id}-{task.attempts + 1}',
                              salience=TASK_SALIENCE)
        goal, think = self.loop.goal, self.loop.think
        self.loop.goal = task.goal
        self.loop.think = lambda p, c: self._think(p, c, force=True)
        try:
            return outcome_of_step(self.loop.step(percept))
        except LLMError as exc:
            return TaskOutcome(False, False, f'the language model failed: {exc}')
        except (ValueError, RuntimeError) as exc:
            return TaskOutcome(False, False, f'the step failed: {exc}')
        finally:
            self.loop.goal, self.loop.think = goal, think

    def _drive_state(self, body: Body, now: float):
        stats = self.query('system_stats', {}, 1.0)
        episodes = None
        if stats and stats.get('available') and not stats.get('error_code'):
            episodes = int(stats['episodes'])
        with self._body_lock:
            return body.state(now, self.energy.remaining_fraction(), episodes)

    def _idle_retrieve(self, max_events: int, window_s: float) -> list:
        """Structured retrieval: the last `max_events` episodes within `window_s`."""
        if max_events <= 0:
            return []
        start = max(0.0, self._robot_time() - window_s)
        answer = self.query('memory_recall', {'time_after': start, 'limit': max_events}, 2.0)
        if answer is None:
            raise RetrievalError('the memory node is not running')
        if answer.get('error_code') or not answer.get('available'):
            raise RetrievalError(answer.get('error_msg') or 'memory is unavailable')
        with self._notes_lock:
            notes = dict(self._notes)
        return recall_to_events(answer, notes)

    def _idle_rerank(self, query: str, events: list, top_k: int) -> list:
        """Semantic reranking through memory/similarity_search (the hybrid mode)."""
        answer = self.query('similarity_search',
                            {'context': query[:300], 'limit': max(top_k, len(events))}, 2.0)
        if answer is None:
            raise RetrievalError('the memory node is not running')
        if answer.get('error_code') or not answer.get('available'):
            raise RetrievalError(answer.get('error_msg') or 'similarity search unavailable')
        rank = {e['episode_id']: i for i, e in enumerate(answer.get('episodes') or [])}
        return sorted(events, key=lambda e: rank.get(e['id'], len(rank)))[:top_k]

    def wait_for_idle_check(self, robot_time: float, timeout_s: float) -> bool:
        """For in-process supervisors (soaks, tests): block until the eligibility check at
        or after `robot_time` has finished and no percept is waiting or being deliberated;
        False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._tick_done:
            while self.idle_ticked_at < robot_time or self.percepts_pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._tick_done.wait(min(0.05, remaining))
        return True

    def _status_thought(self, text: str) -> None:
        self._thoughts.publish(Thought(kind=Thought.KIND_STATUS, status=Thought.STATUS_MODEL_ERROR,
                                       status_msg=text[:500]))

    def _think(self, percept: CorePercept, context: str, force: bool = False,
               on_thought=None, max_cycles: int = 0) -> Decision:
        self._tick += 1
        if not self.backend.n_ctx:
            self.backend.ensure_ready()  # learn the model's context size (LLMError if absent)
        wm = self.deliberator.wm
        wm.add('percept', percept.narrative, max(0.0, min(1.0, percept.salience)))
        if percept.source == 'user':
            force = True  # a person speaking always gets a thought
        decision = self.gate.should_think(self._tick, wm, self.energy.remaining_fraction(),
                                          force=force)

        def publish(t):
            self._thoughts.publish(thought_to_msg(t))
            if on_thought is not None:
                on_thought(t)

        if not decision.think:
            result = self.deliberator.gated(decision.reason, on_thought=None)
        else:
            result = self.deliberator.deliberate(
                percept.narrative, self._tools_now, goal=self.loop.goal,
                context=context, max_cycles=max_cycles, on_thought=publish)
            self.gate.record_outcome(result.action is not None and not result.failed)
        self._last_result = result
        return Decision(result.status, result.reasoning, result.action, result.cycles,
                        result.confidence, result.deliberation_id)

    def _tools_now(self):
        """What the model may name now: the configured robot tools plus the scene's."""
        return [t for t in self.scope.active_tools()
                if t.name in self.config.active_tools or self.scope.is_scene_tool(t.name)]

    def _review(self, run, context: str) -> dict:
        return self.fear(run_to_call(run), context, run.context)

    def _execute(self, run):
        outcome = self.executor_tools.execute(run.tool, run.args)
        run.success = bool(outcome.success)
        run.output = outcome.text()
        run.error_code = int(outcome.error_code)
        run.error_msg = outcome.error_msg
        return run

    def _ask(self, name: str, fields):
        """An enrichment provider: a memory query whose LLM-formatted answer joins the
        prompt, or None when memory has nothing (or is absent)."""
        def provider(text: str):
            answer = self.query(name, fields(text), 1.0)
            if not answer or not answer.get('available') or answer.get('error_code'):
                return None
            found = answer.get('episodes') or answer.get('links') or answer.get('concepts')
            return answer.get('result_json') if found else None
        return provider

    def _query(self, name: str, fields: dict, timeout_s: float = 2.0):
        if name == 'energy_status':
            report = self.energy.status(float(fields.get('window_seconds', 0.0)))
            return {'available': True, **vars(report)}
        return self.query(name, fields, timeout_s)

    def _send_head_goal(self, goal: dict) -> None:
        msg = fill_msg(HeadGoal(), {k: v for k, v in goal.items()
                                    if k in HeadGoal.get_fields_and_field_types()})
        msg.header.stamp = self.get_clock().now().to_msg()
        self._goals.publish(msg)

    def _publish_episode(self, episode: dict) -> None:
        self._note_episode(episode.get('episode_id', ''), episode.get('mode', ''),
                           episode.get('salience', 0.0), episode.get('reasoning', ''))
        msg = fill_msg(Episode(), episode)
        msg.header.stamp = self.get_clock().now().to_msg()
        self._episodes.publish(msg)

    def _publish_pain(self, signal: dict) -> None:
        msg = fill_msg(PainSignal(), signal)
        msg.header.stamp = self.get_clock().now().to_msg()
        self._pains.publish(msg)
        self.episodes_published += 1

    # -- the Deliberate action ---------------------------------------------------------------
    def _on_deliberate(self, handle):
        goal = handle.request
        result = Deliberate.Result()
        feedback = []

        def on_thought(t):
            msg = thought_to_msg(t)
            feedback.append(msg)
            handle.publish_feedback(Deliberate.Feedback(thought=msg))
            if handle.is_cancel_requested:
                self.deliberator.cancel()

        percept = percept_from_msg(goal.percept)
        acquired = self._busy.acquire(timeout=self.config.llm_timeout_s)
        if not acquired:
            result.status = Deliberate.Result.STATUS_TIMEOUT
            result.status_msg = 'the agent stayed busy with another deliberation'
            handle.abort()
            return result
        try:
            if goal.goal:
                self.loop.goal = goal.goal
            if goal.execute:
                self.loop.think = lambda p, c: self._think(p, c, force=goal.force,
                                                           on_thought=on_thought,
                                                           max_cycles=goal.max_cycles)
                step = self.loop.step(percept)
                self.loop.think = self._think
                res = self._last_result
                if step.run is not None:
                    result.tool_result = run_to_result(step.run, res.deliberation_id)
            else:
                res = None
                self._think(percept, self.loop.context_text(), force=goal.force,
                            on_thought=on_thought, max_cycles=goal.max_cycles)
                res = self._last_result
        except LLMError as exc:
            result.status = Deliberate.Result.STATUS_MODEL_ERROR
            result.status_msg = str(exc)
            handle.abort()
            return result
        finally:
            self._busy.release()
        result.status = int(res.code)
        if res.status == 'ready' and goal.execute and result.tool_result.call.tool_name:
            result.status = Deliberate.Result.STATUS_ACTED
        result.status_msg = getattr(res, 'status_msg', '') or res.status
        result.deliberation_id = res.deliberation_id
        result.cycles = int(res.cycles)
        result.action_json = res.action_json
        result.thoughts = feedback
        if res.status == 'cancelled':
            handle.canceled()
        else:
            handle.succeed()
        return result

    def stop_workers(self) -> None:
        """Stop the loop and idle threads (call while the executor still spins, so calls in
        flight are answered; destroy_node does it too)."""
        self._stop.set()
        self.deliberator.cancel()
        self._worker.join(timeout=5.0)
        if self.idle is not None and self._idle_worker.is_alive():
            self._idle_worker.join(timeout=10.0)

    def quiesce(self) -> None:
        """Before the executor stops (the in-process runner calls it): stop the threads."""
        self.stop_workers()

    def destroy_node(self):
        self.stop_workers()
        if self.tasks is not None:
            self.tasks.close()
            self.tasks = None
        self.enrichment.close()
        self._action.destroy()
        return super().destroy_node()


def main(args=None):
    rclpy.init(args=args)
    node = AgentNode()
    executor = MultiThreadedExecutor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        node.get_logger().debug('agent stopping')
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
