"""The memory node: episodes and pain in, introspection queries out, SQLite underneath."""

import threading
import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from std_srvs.srv import Trigger

from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health
from maxim_common.lifetime import run
from maxim_common.params import declare_table
from maxim_common.qos import EVENTS
from maxim_common.throttle import LoggerHandler, ThrottledLog
from maxim_interfaces.msg import Episode, MemoryUpdate, PainSignal
from maxim_memory import conversions as conv
from maxim_memory.health import memory_node_health
from maxim_memory.hub import memory_size, MemoryHub
from maxim_memory.nodes.queries import end_session, guarded, SERVICES
from maxim_memory.params import PARAMS, read_config
from maxim_memory.session import (capture, close_hub, drain, fault_line, LOST, open_hub,
                                  OpenError, opened_line, record_pain, STORED)
from maxim_memory.store import StoreFault


class MemoryNode(LifecycleNode):
    """Owns the MemoryHub; every capture is durable on arrival, every query read-only.

    Lifecycle: configure opens the database, the embedder and the EC index and creates the
    subscriptions and services; activate starts serving (captures, queries, the journal's
    replay); deactivate stops serving (an episode that arrives then is counted and logged as
    NOT stored, a query is answered unavailable); cleanup ends the session (SCN save ->
    promote -> consolidate -> persist, unless `quiesce()` did) and closes the database, as
    shutdown does from any state and `destroy_node()` does. A configure that cannot open
    memory fails with a one-line reason (session.OpenError) in the log and in `last_error`.
    `autostart` (constructor, default false) configures and activates at construction; the
    launch files and the runner leave that to the lifecycle manager.

    Parameters: maxim_memory/params.py (PARAMS, all read-only: they shape the database when
        it opens): db_path, synchronous, recover_corrupt, capacity.*, budgets.*, embedding.*.
    Subscriptions:
        episodes (maxim_interfaces/Episode), pain (maxim_interfaces/PainSignal)
    Publications:
        memory/updates (maxim_interfaces/MemoryUpdate): after each captured episode, the NAc
            prediction for its tool and context and the size of memory (what a recording
            needs to draw learning curves and memory growth); at session end (quiesce), what
            promotion did
        diagnostics (diagnostic_msgs/DiagnosticArray, every second in every state and on each
            storage fault or recovery): the database's health, journaled / replayed / lost
            writes.
    Services (maxim_interfaces/srv, the types in queries.SERVICES): memory/memory_recall,
        similarity_search, predict_outcome, causal_links, pain_history, temporal_patterns,
        concept_query, system_stats, enrich (what is relevant to a situation, by channel),
        relate; memory/end_session (std_srvs/Trigger: promote, consolidate, persist now)
    A storage fault is one error line when it begins and one when it ends, and no episode
    logged as stored is lost (maxim_memory/session.py). Bad input is logged at most once per
    kind every 2 s.
    """

    def __init__(self, autostart: bool = False, **kwargs):
        super().__init__('memory', **kwargs)
        declare_table(self, PARAMS, read_only=True)
        self.config = None
        self.hub: MemoryHub | None = None
        self.last_error = ''
        self._active = False
        self._session_ended = False
        self._release_lock = threading.Lock()
        self._input_lock = threading.Lock()   # an input being handled ends before release
        self._endpoints = []           # subscriptions, services and publisher of configure
        self._updates = None
        self._drain_timer = None
        # Bad input: a line per kind per 2 s, with a count, at most 500 characters.
        self._warn = ThrottledLog(self.get_logger().warning, 2.0, self.get_logger().error, 500)
        self._throttle = self._warn.throttle
        self.episodes_stored = 0       # captures acknowledged (in the database or journal)
        self.episodes_lost = 0         # captures neither took: logged as NOT stored
        # The package's log lines once, on the ROS logger (hub.warnings keeps them).
        self._log_handler = LoggerHandler(self.get_logger())
        self._log_handler.attach('maxim_memory')
        self._inputs = MutuallyExclusiveCallbackGroup()
        self._queries = ReentrantCallbackGroup()
        # In every state: an unconfigured memory reports that its database is not open.
        self.diagnostics = Diagnostics(self, 'database', self.health,
                                       callback_group=self._inputs)
        if autostart and self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
            self.trigger_activate()

    # --- lifecycle -----------------------------------------------------------------------------

    def on_configure(self, state) -> TransitionCallbackReturn:
        self.last_error = ''
        try:
            self.config = cfg = read_config(lambda name: self.get_parameter(name).value)
            hub = open_hub(cfg, self.get_logger().warning,
                           lambda: self.get_clock().now().nanoseconds * 1e-9)
        except OpenError as exc:
            return self._configure_failed(str(exc))
        self.hub, self._session_ended = hub, False
        hub.store.listeners.append(self._on_store_fault)
        self._updates = self.create_publisher(MemoryUpdate, 'memory/updates', EVENTS)
        self._endpoints = [
            self._updates,
            self.create_subscription(Episode, 'episodes', self._on_episode, EVENTS,
                                     callback_group=self._inputs),
            self.create_subscription(PainSignal, 'pain', self._on_pain, EVENTS,
                                     callback_group=self._inputs),
            self.create_service(Trigger, 'memory/end_session', self._end_session,
                                callback_group=self._inputs)]
        # Answered unavailable unless active; typed errors onto error_code (queries.answer).
        self._endpoints += [self.create_service(
            srv_type, f'memory/{name}', guarded(handler, self._serving, self.get_logger().error),
            callback_group=self._queries) for srv_type, name, handler in SERVICES]
        self.get_logger().info(opened_line(hub))
        return TransitionCallbackReturn.SUCCESS

    def _configure_failed(self, reason: str) -> TransitionCallbackReturn:
        self.last_error = f'memory did not open: {reason}'
        self.get_logger().error(self.last_error)
        return TransitionCallbackReturn.FAILURE

    def on_activate(self, state) -> TransitionCallbackReturn:
        self._drain_timer = self.create_timer(1.0, self._tick, callback_group=self._inputs)
        self._active = True
        return super().on_activate(state)

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._stop_serving()
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state) -> TransitionCallbackReturn:
        self.get_logger().error(f'memory: a transition from {state.label} failed '
                                f'unexpectedly; ending the session and closing the database')
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def _stop_serving(self) -> None:
        self._active = False
        if self._drain_timer is not None:
            self.destroy_timer(self._drain_timer)
            self._drain_timer = None

    def _release(self) -> None:
        """Stop serving, remove the subscriptions and services, end the session (unless
        quiesce() did) and close the database: nothing captured is lost. Idempotent."""
        with self._release_lock:
            self._stop_serving()
            with self._input_lock:     # a capture under way publishes its update first
                pass
            for entity in self._endpoints:
                kind = type(entity).__name__.lower()
                getattr(self, f'destroy_{kind}')(entity)
            self._endpoints, self._updates = [], None
            hub, self.hub = self.hub, None
            if hub is None:
                return
            self._report(*close_hub(hub, end_session=not self._session_ended))

    def quiesce(self) -> None:
        """End the session while the graph still runs (the runner calls this before it takes
        the nodes down), so the session-end update reaches the recorder; cleanup then only
        closes."""
        hub, updates = self.hub, self._updates
        if hub is None or self._session_ended:
            return
        self._session_ended = True
        report = hub.on_session_end()
        self.get_logger().info(f'memory session ended: {report.steps}')
        if updates is not None:
            updates.publish(conv.session_end_to_msg(memory_size(hub.system_stats()),
                                                    report.promotion,
                                                    self.get_clock().now().to_msg()))

    def destroy_node(self):
        self._release()
        self._log_handler.detach('maxim_memory')
        return super().destroy_node()

    # --- inputs --------------------------------------------------------------------------------

    def _on_episode(self, msg: Episode) -> None:
        with self._input_lock:
            self._capture(msg)

    def _capture(self, msg: Episode) -> None:
        updates = self._updates
        c = capture(self._serving() if updates is not None else None, msg.episode_id,
                    lambda: conv.msg_to_episode(msg, time.time()))
        if c.outcome == STORED:
            self.episodes_stored += 1
            updates.publish(conv.learning_to_msg(c.snapshot, self.get_clock().now().to_msg()))
        elif c.outcome == LOST:
            self.episodes_lost += 1
            self._warn('episode lost', c.line, error=True)
            if c.fault:
                self.diagnostics.publish()
        else:
            self._warn('episode rejected', c.line)

    def _on_pain(self, msg: PainSignal) -> None:
        line = record_pain(self._serving(), lambda: conv.msg_to_pain(msg, time.time()))
        if line:
            self._warn('pain', line)

    def _on_store_fault(self, fault: StoreFault | None) -> None:
        """One line when a storage fault begins or changes kind, one when writes reach the
        database again (the store calls this once per change, not per write)."""
        self._report(*fault_line(fault, self.hub))
        self.diagnostics.publish()

    def _report(self, error: bool, line: str) -> None:
        """A line of the session's (session.py) on the log: an error, or info ('': none)."""
        if line and error:
            self.get_logger().error(line)
        elif line:
            self.get_logger().info(line)

    def _tick(self) -> None:
        """Every second while active: replay the journal if the database takes writes
        again."""
        drain(self.hub)

    def health(self) -> Health:
        return memory_node_health(self.hub, self.last_error, self.episodes_stored,
                                  self.episodes_lost, self._active)

    # --- queries -------------------------------------------------------------------------------

    def _serving(self) -> MemoryHub | None:
        """The hub while active; None: memory is not active (answered unavailable)."""
        return self.hub if self._active else None

    def _end_session(self, request, response):
        return end_session(self._serving(), response, self.get_logger().error)


def main(args=None):
    # Unconfigured until a lifecycle manager (the launch files start one) or
    # `ros2 lifecycle set /memory configure` and `... activate` bring it up.
    run(MemoryNode, args, executor=MultiThreadedExecutor)
