"""The agent node: the robot's Mind (maxim_core.mind) on ROS. It only translates: parameters
into a MindConfig, messages into Mind calls and the Mind's records into messages."""

from dataclasses import replace
import math
import uuid

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rcl_interfaces.msg import ParameterDescriptor

from maxim_common.conversions import stamp_to_seconds
from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health
from maxim_common.lifetime import run
from maxim_common.qos import EVENTS, LATCHED
from maxim_core import conversions as conv
from maxim_core.deliberation.choice import ChoiceConfig
from maxim_core.deliberation.cycles import DeliberationConfig
from maxim_core.health import agent_health
from maxim_core.idle.tasks import TaskError, TaskNotFound
from maxim_core.mind import DEFAULT_ACTIVE, Mind, MindConfig
from maxim_core.nodes.agent_deliberate import DeliberateServer
from maxim_core.nodes.agent_events import AgentEvents, Interaction
from maxim_core.nodes.clients import FearClient, GenerateBackend, ServiceQuery
from maxim_core.nodes.params import declare_idle, declare_string_array
from maxim_core.tools import sandbox
from maxim_interfaces.msg import Episode, HeadState, PainSignal, Percept, ToolCall
from maxim_interfaces.srv import EnergyStatus, SubmitTask


HEAD_EXTRAPOLATE_S = 0.2     # a head state older than this is carried no further


class AgentNode(Node):
    """Percept -> Mind (gate, enrichment, deliberation, fear review, tool, verification) ->
    thoughts, tool calls and results, episodes, head goals, pain; tasks and idle time.

    Parameters: mode, simulation, interactive, goal, workspace_root, tools.active (string[]),
        tools.active_cap, tools.index_path (the learned tool index's file, '' = in memory),
        tools.process (bwrap | python), tools.network, tools.hidden (string[]),
        percept_min_salience, deliberation.max_cycles/max_tokens/temperature/seed/llm_timeout_s/
        use_grammar/goal_max_cycles (the most a Deliberate goal may ask)/thought_drafts (1:
        the model's first draft is the thought), deliberation.choice.weights (fitted |
        hand), deliberation.choice.weights_path, enrichment.budget_s,
        energy.token_budget, energy.refill_tokens_per_s,
        systems.off (string[]: bio-systems switched off, for ablations), idle.* (read-only;
        maxim_core.idle.runtime.PARAMS lists them).
    Subscriptions: percepts (Percept), head/state (HeadState: where the head is; ~10 Hz
        is enough to close a move's trial and check it arrived, where joint_states' 50 Hz
        woke this node's executor five times as often), pain (PainSignal),
        episodes (Episode: the modes and saliences idle retrieval needs),
        interaction/response (InteractionResponse: the person's answers)
    Publishers: thoughts (Thought), tool_calls (ToolCall), tool_results (ToolResult),
        episodes (Episode), head/goal (HeadGoal), idle (IdleEvent),
        idle/provenance (IdleProvenance), pain (PainSignal: tool failures),
        interaction/request (InteractionRequest: request_interaction's questions),
        diagnostics (DiagnosticArray, 1 Hz: the mind, the tool sandbox, the model)
    Services: agent/energy_status (EnergyStatus), agent/submit_task (SubmitTask)
    Actions: agent/deliberate (Deliberate): one goal at a time (another is answered busy at
        once: a goal blocks an executor thread, and goals waiting for each other would
        starve the executor their model calls need).
    Clients: llm/generate, llm/tokenize, fear/review_action, memory/*, perception/*
    Time: robot time is the node's ROS clock (/clock under use_sim_time).
    """

    def __init__(self, **kwargs):
        super().__init__('agent', **kwargs)
        p = self._param
        c = DeliberationConfig()
        timeout = p('deliberation.llm_timeout_s', 120.0, 'Bound on one LLM call')
        config = MindConfig(
            mode=p('mode', 'passive', 'passive | active | singularity'),
            simulation=p('simulation', True, 'The robot lives in a simulation'),
            interactive=p('interactive', False, 'A person talks to the robot'),
            goal=p('goal', '', 'The standing goal'),
            workspace_root=p('workspace_root', '.', 'Filesystem tools sandbox'),
            active_tools=tuple(p('tools.active', list(DEFAULT_ACTIVE), 'Tools in scope')),
            active_cap=p('tools.active_cap', 12, 'At most this many active'),
            tool_index_path=p('tools.index_path', '', "Learned tool index file ('' = none)"),
            tool_process=p('tools.process', 'bwrap', 'Process tools run in: bwrap | python'),
            tool_network=p('tools.network', False, 'Process tools may reach the network'),
            tool_hidden=tuple(declare_string_array(self, 'tools.hidden', [],
                                                   'Paths the tool sandbox hides')),
            percept_min_salience=p('percept_min_salience', 0.3,
                                   'Vision percepts below this are not deliberated'),
            deliberation=DeliberationConfig(
                max_cycles=p('deliberation.max_cycles', 3, 'Cycle cap'),
                max_tokens=p('deliberation.max_tokens', c.max_tokens, 'Tokens per answer'),
                temperature=p('deliberation.temperature', 0.8, 'Sampling temperature'),
                seed=p('deliberation.seed', -1, 'Sampling seed (-1: a fresh one each call; '
                       'n: the same prompt samples the same tokens)'),
                llm_timeout_s=timeout),
            use_grammar=p('deliberation.use_grammar', True, 'Decode under the lean GBNF'),
            choice=ChoiceConfig(
                thought_drafts=p('deliberation.thought_drafts', ChoiceConfig().thought_drafts,
                                 'Drafts of a thought that only restates the diary (1: the '
                                 'first is kept)'),
                weights=p('deliberation.choice.weights', ChoiceConfig().weights,
                          'Weights of the choice: fitted (weights.json, fitted on the '
                          'decision benchmark) | hand'),
                weights_path=p('deliberation.choice.weights_path', '',
                               "Another fitted weights file ('' = the shipped one)")),
            decision=p('deliberation.decision', 'auto', 'choose | generate | auto'),
            enrichment_budget_s=p('enrichment.budget_s', 1.5, 'Bound on memory enrichment'),
            energy_token_budget=p('energy.token_budget', 24000, 'Tokens of thinking (0: no '
                                  'bound)'),
            energy_refill_tokens_per_s=p('energy.refill_tokens_per_s', 150.0,
                                         'Tokens the budget regains per second'),
            systems_off=frozenset(s for s in declare_string_array(
                self, 'systems.off', [], 'Bio-systems switched off') if s),
            run_id=uuid.uuid4().hex[:8])
        config = replace(config, idle=declare_idle(self, config.run_id))
        group = ReentrantCallbackGroup()
        self.backend = GenerateBackend(self, 'agent', callback_group=group, timeout_s=timeout)
        self._fear = FearClient(self, config.mode, callback_group=group)
        self._head = None
        self._head_state = None            # (pan velocity, tilt velocity, stamp seconds)
        self.interaction = Interaction(self)
        self.mind, self.runtime = self._build_mind(config, group)
        self.create_subscription(Percept, 'percepts', self._on_percept, EVENTS)
        self.create_subscription(HeadState, 'head/state', self._on_head, LATCHED)
        self.create_subscription(PainSignal, 'pain', self._on_pain, EVENTS)
        self.create_subscription(Episode, 'episodes', lambda m: self.mind.note_episode(
            m.episode_id, m.mode, m.salience, m.reasoning), EVENTS)
        self.create_service(EnergyStatus, 'agent/energy_status', self._on_energy,
                            callback_group=group)
        self.create_service(SubmitTask, 'agent/submit_task', self._on_submit_task,
                            callback_group=group)
        self._action = DeliberateServer(self, self.mind, p(
            'deliberation.goal_max_cycles', 16, 'The most cycles a Deliberate goal may ask'),
            callback_group=group)
        if self.mind.idle is not None:   # robot time; the check itself runs on the Mind's thread
            self._idle_timer = self.create_timer(
                config.idle.runtime.check_period_s, self.runtime.wake_idle,
                callback_group=MutuallyExclusiveCallbackGroup())
        self.runtime.start()
        self.diagnostics = Diagnostics(self, 'mind', self.health)

    def _build_mind(self, config: MindConfig, group):
        """The Mind on this node's ports, and the runtime that runs its turns (the one the
        scenario runner runs: an act's result is the next percept)."""
        mind = Mind(config, model=self.backend, memory=ServiceQuery(self, callback_group=group),
                    fear=self, body=self, events=AgentEvents(self), ask=self.interaction.ask,
                    robot_clock=lambda: self.get_clock().now().nanoseconds / 1e9)
        return mind, mind.runtime

    def health(self) -> Health:
        mind, config = self.mind, self.mind.config
        probe = sandbox.probe()    # started once per process, then remembered
        return agent_health(config.mode, self.runtime.running, config.tool_process, probe.ok,
                            probe.reason, self.backend.ready(),
                            mind.energy.remaining_fraction(), dict(mind.counts))

    def _param(self, name, default, description):
        return self.declare_parameter(name, default,
                                      ParameterDescriptor(description=description)).value

    # The Mind's body and fear ports.
    def head_position(self):
        """Where the head is: the last measured state, carried forward along its velocity
        for the time since (at most HEAD_EXTRAPOLATE_S: the state comes ~10 times a
        second, and a relative move is measured from where the head was when it was
        sent)."""
        if self._head is None or self._head_state is None:
            return self._head
        vp, vt, stamp = self._head_state
        age = self.get_clock().now().nanoseconds * 1e-9 - stamp
        if not (math.isfinite(vp) and math.isfinite(vt)) or stamp <= 0 or age <= 0:
            return self._head
        age = min(age, HEAD_EXTRAPOLATE_S)
        return (self._head[0] + vp * age, self._head[1] + vt * age)

    def send_head_goal(self, command) -> None:
        pass     # published by the event sink (one message per goal)

    def review(self, run, context: str) -> dict:
        return self._fear(conv.run_to_call(run, ToolCall()), context, run.context)

    # ROS in.
    def _on_percept(self, msg: Percept) -> None:
        self.runtime.offer(conv.msg_to_percept(msg), from_self=msg.source_name == 'agent')

    def _on_head(self, msg: HeadState) -> None:
        head = (msg.pan, msg.tilt)
        if all(isinstance(v, float) and math.isfinite(v) for v in head):
            self._head = head              # a non-finite reading is no position
            self._head_state = (msg.pan_velocity, msg.tilt_velocity,
                                stamp_to_seconds(msg.header.stamp))
            self.mind.joint_state(*head)

    def _on_pain(self, msg: PainSignal) -> None:
        self.mind.feel_pain(msg.type_name, msg.intensity, msg.source)

    def _on_energy(self, request, response):
        try:
            report = self.mind.energy_status(request.window_seconds)
        except ValueError as exc:
            response.error_code, response.error_msg = response.ERROR_INVALID_REQUEST, str(exc)
            return response
        for key, value in vars(report).items():
            if hasattr(response, key):     # each as its field's type (0 is no float64)
                setattr(response, key, type(getattr(response, key))(value))
        response.available = True
        return response

    def _on_submit_task(self, request, response):
        ops = {request.OP_ADD: 'add', request.OP_PAUSE: 'pause', request.OP_RESUME: 'resume',
               request.OP_CANCEL: 'cancel'}
        try:
            task = self.mind.submit_task(
                ops.get(request.op, str(request.op)), request.task.task_id,
                lambda: conv.msg_to_new_task(request.task))
        except TaskNotFound as exc:
            response.error_code, response.error_msg = response.ERROR_NOT_FOUND, exc.args[0]
            return response
        except (TaskError, ValueError) as exc:
            response.error_code, response.error_msg = response.ERROR_INVALID_REQUEST, str(exc)
            return response
        response.accepted = True
        conv.task_to_msg(task, response.task)
        return response

    def quiesce(self) -> None:
        """Before the executor stops (the in-process runner calls it): stop the threads;
        a model call in flight is abandoned (the llm node may be stopping too)."""
        self.backend.abort()
        self.mind.stop()

    def destroy_node(self):
        self.mind.close()
        self._action.destroy()
        return super().destroy_node()


def main(args=None):
    run(AgentNode, args, executor=MultiThreadedExecutor)
