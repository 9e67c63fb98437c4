"""The agent node: the robot's Mind (maxim_core.mind) on ROS. It only translates: parameters
into a MindConfig, messages into Mind calls and the Mind's records into messages."""

import sqlite3
import threading
import uuid

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn

from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health
from maxim_common.lifetime import run
from maxim_common.qos import EVENTS, LATCHED
from maxim_common.throttle import ThrottledLog
from maxim_core import conversions as conv
from maxim_core.health import agent_health
from maxim_core.mind import Mind, MindConfig
from maxim_core.nodes import agent_params, agent_services as services, generate_client
from maxim_core.nodes.agent_body import HeadBody
from maxim_core.nodes.agent_deliberate import DeliberateServer
from maxim_core.nodes.agent_events import AgentEvents, Interaction
from maxim_core.nodes.clients import FearClient, ServiceQuery
from maxim_core.tools import sandbox
from maxim_interfaces.msg import Episode, HeadState, PainSignal, Percept, ToolCall
from maxim_interfaces.srv import EnergyStatus, SubmitTask

SUCCESS, FAILURE = TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE


class AgentNode(LifecycleNode):
    """Percept -> Mind (gate, enrichment, deliberation, fear review, tool, verification) ->
    thoughts, tool calls and results, episodes, head goals, pain; tasks and idle time.

    Lifecycle: configure builds the Mind (it opens the task store and the tool index; a bad
    parameter fails it, the reason in the log and `last_error`); activate starts its threads
    and the idle timer; deactivate stops them (cancelling a deliberation under way), the next
    activate starts a new Mind on the same config, and cleanup and shutdown close it.
    Until active, percepts, pain and episodes are dropped (a line per kind every 5 s) and
    Deliberate goals refused; tasks and energy are answered from configure on; `autostart`
    (default false) configures and activates at once, else a lifecycle manager does.
    Parameters (agent_params.py): read-only: mode, simulation, interactive, workspace_root, urdf,
        tools.* (active, active_cap, index_path, process, network, hidden), deliberation.
        max_tokens/llm_timeout_s/use_grammar/thought_drafts/decision/choice.weights(_path),
        enrichment.budget_s, systems.off (string[]), idle.* (maxim_core.idle.runtime.PARAMS).
        Settable at run time (`ros2 param set /agent goal '...'`; the next pass reads it):
        goal, percept_min_salience, deliberation.max_cycles/temperature/seed/
        goal_max_cycles, energy.token_budget, energy.refill_tokens_per_s.
    Subscriptions: percepts (Percept), head/state (HeadState: where the head is; ~10 Hz
        is enough to close a move's trial and check it arrived), pain (PainSignal),
        episodes (Episode: the modes and saliences idle retrieval needs),
        interaction/response (InteractionResponse: the person's answers)
    Publishers: thoughts (Thought), tool_calls (ToolCall), tool_results (ToolResult),
        episodes (Episode), head/goal (HeadGoal), idle (IdleEvent),
        idle/provenance (IdleProvenance), pain (PainSignal: tool failures),
        interaction/request (InteractionRequest: request_interaction's questions),
        diagnostics (DiagnosticArray, 1 Hz in every state: the mind, the sandbox, the model)
    Services: agent/energy_status (EnergyStatus), agent/submit_task (SubmitTask)
    Actions: agent/deliberate (Deliberate): one goal at a time, another answered busy at
        once (goals waiting for each other would starve their model calls' executor).
    Clients: llm/generate, llm/tokenize, fear/review_action, memory/*, perception/*. Robot
        time is the node's ROS clock (/clock under use_sim_time).
    """

    def __init__(self, autostart: bool = False, **kwargs):
        super().__init__('agent', **kwargs)
        agent_params.declare(self)
        self.add_on_set_parameters_callback(self._check_params)
        self.add_post_set_parameters_callback(self._apply_params)
        self.last_error, self._idle_timer = '', None
        self.mind: Mind | None = None
        self.config: MindConfig | None = None    # what the Mind runs with (configure on)
        self._config_lock = threading.Lock()     # configure, activate, parameter changes
        self._active = self._stopped = False
        self._warn = ThrottledLog(self.get_logger().warning, 5.0)
        group = ReentrantCallbackGroup()
        p = self.get_parameter
        self.backend = generate_client.GenerateBackend(
            self, 'agent', callback_group=group, timeout_s=p('deliberation.llm_timeout_s').value)
        self._fear = FearClient(self, p('mode').value, callback_group=group)
        self._memory = ServiceQuery(self, callback_group=group)
        self._events = AgentEvents(self)
        self.body = HeadBody(lambda: self.get_clock().now().nanoseconds * 1e-9,
                             p('urdf').value, self.get_logger().warning)
        self.interaction = Interaction(self)
        self.create_subscription(Percept, 'percepts', self._on_percept, EVENTS)
        self.create_subscription(HeadState, 'head/state', self._on_head, LATCHED)
        self.create_subscription(PainSignal, 'pain', self._on_pain, EVENTS)
        self.create_subscription(Episode, 'episodes', self._on_episode, EVENTS)
        self.create_service(EnergyStatus, 'agent/energy_status', lambda rq, rs: services
                            .energy_status(self.mind, rq, rs), callback_group=group)
        self.create_service(SubmitTask, 'agent/submit_task', lambda rq, rs: services
                            .submit_task(self.mind, rq, rs), callback_group=group)
        self._action = DeliberateServer(self, self._live, p('deliberation.goal_max_cycles')
                                        .value, callback_group=group)
        self.diagnostics = Diagnostics(self, 'mind', self.health)
        if autostart and self.trigger_configure() == SUCCESS:
            self.trigger_activate()

    def _build_mind(self, config: MindConfig) -> Mind:
        """The one place this node composes the Mind; its ports are the node's clients and
        publishers, the head's state, and the node's fear/review_action client (review)."""
        return Mind(config, model=self.backend, memory=self._memory, fear=self, body=self.body,
                    events=self._events, ask=self.interaction.ask,
                    robot_clock=lambda: self.get_clock().now().nanoseconds / 1e9)

    def _new_mind(self, config_of) -> bool:
        """Build the Mind on `config_of()` (the caller holds the config lock); False, with
        the reason logged and in `last_error`, when a parameter or a file refuses."""
        try:
            config = config_of()
            self.mind, self.config, self._stopped = self._build_mind(config), config, False
            return True
        except (ValueError, OSError, sqlite3.Error) as exc:
            self.mind, self.last_error = None, f'the mind was not built: {exc}'
            self.get_logger().error(self.last_error)
            return False

    # Lifecycle.
    def on_configure(self, state) -> TransitionCallbackReturn:
        self.last_error = ''
        with self._config_lock:      # a parameter set meanwhile is read here or applied after
            built = self._new_mind(lambda: agent_params.read_config(self, uuid.uuid4().hex[:8]))
        return SUCCESS if built else FAILURE

    def on_activate(self, state) -> TransitionCallbackReturn:
        with self._config_lock:
            if self._stopped:        # a Mind's threads start once: a new Mind, the same config
                self.mind.close()
                if not self._new_mind(lambda: self.config):
                    return FAILURE
            mind = self.mind
        mind.start()
        if mind.idle is not None:   # robot time; the check itself runs on the Mind's thread
            self._idle_timer = self.create_timer(
                self.config.idle.runtime.check_period_s, mind.wake_idle,
                callback_group=MutuallyExclusiveCallbackGroup())
        self._active = True
        return super().on_activate(state)

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._pause()
        self.mind.stop()
        self._stopped = True
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._close()
        return SUCCESS

    on_shutdown = on_cleanup

    def on_error(self, state) -> TransitionCallbackReturn:
        self.get_logger().error(f'a transition from {state.label} failed; closing the mind')
        self._close()
        return SUCCESS

    def _pause(self) -> None:
        self._active = False
        if self._idle_timer is not None:
            self.destroy_timer(self._idle_timer)
            self._idle_timer = None

    def _close(self) -> None:
        self._pause()
        with self._config_lock:
            mind, self.mind, self.config = self.mind, None, None
        if mind is not None:
            mind.close()

    def _live(self, what: str = '') -> Mind | None:
        """The Mind while active; else None, and `what` is dropped (a line a kind per 5 s)."""
        mind = self.mind
        if self._active and mind is not None:
            return mind
        if what:
            self._warn(what, f'{what} dropped: the agent is not active (lifecycle: '
                             f'{"inactive" if mind else "unconfigured"})')
        return None

    # Parameters that change at run time (agent_params.RUNTIME).
    def _check_params(self, params):
        changes = {p.name: p.value for p in params}
        with self._config_lock:
            config, running = self.config or MindConfig(), self.mind is not None
        return agent_params.check(config, changes, running)

    def _apply_params(self, params) -> None:
        changes = {p.name: p.value for p in params}
        if 'deliberation.goal_max_cycles' in changes:
            self._action.max_cycles = int(changes['deliberation.goal_max_cycles'])
        with self._config_lock:
            if self.config is None:
                return                  # configure reads them
            old, self.config = self.config, agent_params.with_changes(self.config, changes)
            if self.mind is not None:
                agent_params.apply(self.mind, old, self.config)
        self.get_logger().info('set ' + ', '.join(f'{k}={v!r}' for k, v in changes.items()))

    def health(self) -> Health:
        mind, config = self.mind, self.config
        probe = sandbox.probe()    # started once per process, then remembered
        return agent_health(
            self.get_parameter('mode').value, mind is not None and mind.running,
            self.get_parameter('tools.process').value, probe.ok, probe.reason,
            self.backend.ready(), mind.energy.remaining_fraction() if mind else 1.0,
            dict(mind.counts) if mind else {}, state='active' if self._active else (
                'inactive' if config else 'unconfigured'))

    def review(self, run, context: str) -> dict:
        """The Mind's fear port: fear/review_action."""
        return self._fear(conv.run_to_call(run, ToolCall()), context, run.context)

    # ROS in.
    def _on_percept(self, msg: Percept) -> None:
        if (mind := self._live('percept')) is not None:
            mind.offer(conv.msg_to_percept(msg), from_self=msg.source_name == 'agent')

    def _on_head(self, msg: HeadState) -> None:
        head, mind = self.body.update(msg), self._live()
        if head is not None and mind is not None:
            mind.joint_state(*head)
        if self.body.news is not None and mind is not None:   # the neck motor: down, back
            mind.offer(self.body.news_percept(uuid.uuid4().hex[:12]))

    def _on_pain(self, msg: PainSignal) -> None:
        if (mind := self._live('pain')) is not None:
            mind.feel_pain(msg.type_name, msg.intensity, msg.source)

    def _on_episode(self, msg: Episode) -> None:
        if (mind := self._live('episode')) is not None:
            mind.note_episode(msg.episode_id, msg.mode, msg.salience, msg.reasoning)

    def quiesce(self) -> None:
        """Before the executor stops (the in-process runner calls it): stop the threads;
        a model call in flight is abandoned (the llm node may be stopping too)."""
        self.backend.abort()
        self._pause()
        if self.mind is not None:
            self.mind.stop()

    def destroy_node(self):
        self._close()
        self._action.destroy()
        return super().destroy_node()


def main(args=None):
    run(AgentNode, args, executor=MultiThreadedExecutor)
