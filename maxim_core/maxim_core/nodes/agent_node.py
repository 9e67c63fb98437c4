"""The agent node: closes perceive -> decide -> act -> evaluate over ROS."""

from dataclasses import dataclass
import json
import queue
import threading
import uuid

import rclpy
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rcl_interfaces.msg import ParameterDescriptor
from sensor_msgs.msg import JointState

from maxim_core.agent.loop import AgentLoop, Decision, LoopConfig, Percept as CorePercept
from maxim_core.agent.verify import WorldVerifier
from maxim_core.deliberation.cycles import DeliberationConfig, Deliberator
from maxim_core.deliberation.energy import EnergyBudget
from maxim_core.deliberation.enrichment import BioEnrichmentPipeline
from maxim_core.deliberation.gate import ThoughtGate
from maxim_core.llm.backend import LLMError
from maxim_core.llm.grammar import deliberation_grammar
from maxim_core.nodes.clients import FearClient, fill_msg, GenerateBackend, ServiceQuery
from maxim_core.prompt.builder import identity_section, PromptBuilder
from maxim_core.qos import COMMANDS, EVENTS, SENSOR
from maxim_core.tools.catalog import build_tool_registry
from maxim_core.tools.scope import ToolExecutor, ToolScope
from maxim_interfaces.action import Deliberate
from maxim_interfaces.msg import Episode, HeadGoal, Percept, Thought, ToolCall, ToolResult
from maxim_interfaces.srv import EnergyStatus

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
    Subscriptions: percepts (Percept), joint_states (JointState)
    Publishers: thoughts (Thought), tool_calls (ToolCall), tool_results (ToolResult),
        episodes (Episode), head/goal (HeadGoal)
    Services: agent/energy_status (EnergyStatus)
    Actions: agent/deliberate (Deliberate)
    Clients: llm/generate, llm/tokenize, fear/review_action, memory/*, perception/*
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
            grammar_for=deliberation_grammar if c.use_grammar else None)
        self.gate = ThoughtGate()
        self._tick = 0
        self.loop = AgentLoop(
            LoopConfig(mode=c.mode, run_id=uuid.uuid4().hex[:8], goal=c.goal),
            think=self._think, resolve=self.executor_tools.resolve, review=self._review,
            execute=self._execute, record_episode=self._publish_episode,
            verify=WorldVerifier(head_position=self._head_position),
            on_call=lambda run: self._calls.publish(run_to_call(run)),
            on_result=lambda run: self._results.publish(run_to_result(run)))

        self._thoughts = self.create_publisher(Thought, 'thoughts', EVENTS)
        self._calls = self.create_publisher(ToolCall, 'tool_calls', EVENTS)
        self._results = self.create_publisher(ToolResult, 'tool_results', EVENTS)
        self._episodes = self.create_publisher(Episode, 'episodes', EVENTS)
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
        self._worker = threading.Thread(target=self._work, name='agent-loop', daemon=True)
        self._worker.start()

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
        if msg.source == Percept.SOURCE_VISION and \
                msg.salience < self.config.percept_min_salience:
            return
        try:  # keep only the newest percept: a robot thinks about now, not a backlog
            self._inbox.get_nowait()
            self.dropped_percepts += 1
        except queue.Empty:
            pass  # nothing waiting: nothing to drop
        self._inbox.put_nowait(msg)

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
        return self.fear(run_to_call(run), context)

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
        msg = fill_msg(Episode(), episode)
        msg.header.stamp = self.get_clock().now().to_msg()
        self._episodes.publish(msg)

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

    def destroy_node(self):
        self._stop.set()
        self.deliberator.cancel()
        self._worker.join(timeout=5.0)
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
