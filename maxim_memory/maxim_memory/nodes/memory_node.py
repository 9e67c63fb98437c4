"""The memory node: episodes and pain in, introspection queries out, SQLite underneath."""

import logging
import threading
import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from std_srvs.srv import Trigger

from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health, not_ready
from maxim_common.lifetime import run
from maxim_common.qos import EVENTS
from maxim_common.throttle import LogThrottle
from maxim_interfaces.msg import Episode, MemoryUpdate, PainSignal
from maxim_memory import conversions as conv
from maxim_memory.embedding import EmbedderError, make_embedder
from maxim_memory.health import database_health
from maxim_memory.hub import memory_size, MemoryHub, QueryError, to_plain, UnavailableError
from maxim_memory.nodes.memory_params import descriptor, PARAMS, read_config
from maxim_memory.nodes.queries import SERVICES
from maxim_memory.store import StoreError, StoreFault


class _RosLogHandler(logging.Handler):
    """The memory package's Python log lines (store faults, set-aside files, replays) on the
    node's ROS logger: each one line, where the node's other lines are."""

    def __init__(self, logger):
        super().__init__(logging.INFO)
        self._ros = logger

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        if record.levelno >= logging.ERROR:
            self._ros.error(text)
        elif record.levelno >= logging.WARNING:
            self._ros.warning(text)
        else:
            self._ros.info(text)


class MemoryNode(LifecycleNode):
    """Owns the MemoryHub; every capture is durable on arrival, every query read-only.

    Lifecycle: configure opens the database, the embedder and the EC index and creates the
    subscriptions and services; activate starts serving (captures, queries, the journal's
    replay); deactivate stops serving (an episode that arrives then is counted and logged as
    NOT stored, a query is answered unavailable); cleanup ends the session (SCN save ->
    promote -> consolidate -> persist, unless `quiesce()` did) and closes the database, as
    shutdown does from any state and `destroy_node()` does. A configure that cannot open
    memory (an embedder that does not load, a corrupt database with recover_corrupt false,
    a bad parameter) fails with a one-line reason in the log and in `last_error`.
    `autostart` (constructor, default false) configures and activates at construction; the
    launch files and the runner leave that to the lifecycle manager.

    Parameters (all read-only: they shape the database when it opens):
        db_path (string), synchronous (string), recover_corrupt (bool),
        capacity.hippocampus / capacity.atl / capacity.angular_gyrus (int),
        budgets.context_s (double), budgets.max_results (int), budgets.state_flush_every
        (int), budgets.write_s (double), embedding.backend (string), embedding.model_path
        (string). See memory_params.py.
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
    Services:
        memory/memory_recall (MemoryRecall), memory/similarity_search (SimilaritySearch),
        memory/predict_outcome (PredictOutcome), memory/causal_links (CausalLinks),
        memory/pain_history (PainHistory), memory/temporal_patterns (TemporalPatterns),
        memory/concept_query (ConceptQuery), memory/system_stats (SystemStats),
        memory/enrich (Enrich: what is relevant to a situation, by channel),
        memory/end_session (std_srvs/Trigger: promote, consolidate, persist now)
    A storage fault (locked, read-only, full disk, a directory in the way, a newer schema) is
    one error line when it begins and one when it ends; captures meanwhile go to the journal
    beside the database (retried every second, replayed at the next open), so an episode
    logged as stored is never lost. Bad input is logged at most once per kind every 2 s.
    """

    def __init__(self, autostart: bool = False, **kwargs):
        super().__init__('memory', **kwargs)
        for name, default, description, rng in PARAMS:
            self.declare_parameter(name, default, descriptor(description, rng))
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
        self._throttle = LogThrottle(2.0)
        self.episodes_stored = 0       # captures acknowledged (in the database or journal)
        self.episodes_lost = 0         # captures neither took: logged as NOT stored
        self._log_handler = _RosLogHandler(self.get_logger())
        package_log = logging.getLogger('maxim_memory')
        package_log.addHandler(self._log_handler)
        package_log.setLevel(logging.INFO)
        package_log.propagate = False     # once, on the ROS logger (hub.warnings keeps them)
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
            embedder = make_embedder(cfg.embedder, cfg.embedding_model_path,
                                     warn=self.get_logger().warning)
            hub = MemoryHub(cfg.hub_config(), embedder=embedder,
                            stamp_clock=lambda: self.get_clock().now().nanoseconds * 1e-9)
        except (StoreError, EmbedderError, ValueError, TypeError, OSError) as exc:
            return self._configure_failed(str(exc))
        except Exception as exc:  # noqa: BLE001 - one line for the person, not a trace
            return self._configure_failed(f'{type(exc).__name__}: {exc}')
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
        self._endpoints += [self.create_service(srv_type, f'memory/{name}',
                                                self._guard(handler),
                                                callback_group=self._queries)
                            for srv_type, name, handler in SERVICES]
        ec = hub.ec_startup
        sim = hub.similarity
        embedder_name = getattr(sim.obj.embedder, 'name', '?') if sim.available else 'no EC'
        self.get_logger().info(f'memory open at {hub.store.path}: {len(hub.hippocampus)} '
                               f'episodes, {len(hub.atl)} concepts; EC index '
                               f'{"loaded" if ec.get("loaded") else "built"}, '
                               f'{ec.get("embedded", 0)} episodes embedded ({embedder_name})')
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
            try:
                report = hub.close(end_session=not self._session_ended)
            except StoreError as exc:
                self.get_logger().error(f'memory session end not persisted: {exc}')
                return
            if report is not None:
                self.get_logger().info(f'memory session ended: {report.steps}')

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
        package_log = logging.getLogger('maxim_memory')
        package_log.removeHandler(self._log_handler)
        if not package_log.handlers:
            package_log.propagate = True
        return super().destroy_node()

    # --- inputs --------------------------------------------------------------------------------

    def _log(self, kind: str, text: str, error: bool = False) -> None:
        if len(text) > 500:    # a line for a person, however long the bad input was
            text = f'{text[:500]} … ({len(text) - 500} more characters)'
        line = self._throttle(kind, text)
        if line is not None:
            (self.get_logger().error if error else self.get_logger().warning)(line)

    def _on_episode(self, msg: Episode) -> None:
        with self._input_lock:
            self._capture(msg)

    def _capture(self, msg: Episode) -> None:
        hub, updates = self.hub, self._updates
        if not self._active or hub is None or updates is None:
            self.episodes_lost += 1
            self._log('episode lost', f'episode {msg.episode_id[:80]!r} NOT stored: memory '
                      f'is not active', error=True)
            return
        try:
            ep = conv.msg_to_episode(msg, time.time())
            hub.capture_episode(ep)
        except (conv.ConversionError, ValueError, TypeError) as exc:
            self._log('episode rejected', f'episode {msg.episode_id[:80]!r} rejected: {exc}')
        except StoreError as exc:
            self.episodes_lost += 1
            self._log('episode lost', f'episode {msg.episode_id[:80]!r} NOT stored: {exc}',
                      error=True)
            self.diagnostics.publish()
        else:
            self.episodes_stored += 1
            updates.publish(conv.learning_to_msg(hub.learning_snapshot(ep),
                                                 self.get_clock().now().to_msg()))

    def _on_pain(self, msg: PainSignal) -> None:
        hub = self.hub
        try:
            if not self._active or hub is None:
                raise UnavailableError('memory is not active')
            hub.record_pain(conv.msg_to_pain(msg, time.time()))
        except (conv.ConversionError, UnavailableError, ImportError, ValueError,
                TypeError) as exc:
            self._log('pain', f'pain signal not recorded: {exc}')

    def _on_store_fault(self, fault: StoreFault | None) -> None:
        """One line when a storage fault begins or changes kind, one when writes reach the
        database again (the store calls this once per change, not per write)."""
        hub = self.hub
        if fault is None and hub is not None:
            st = hub.store.status()
            self.get_logger().info(f'memory database {hub.store.path} writable again; '
                                   f'journal replayed ({st["replayed"]} writes so far)')
        elif fault is not None:
            self.get_logger().error(f'storage fault ({fault.kind}): {fault.message}')
        self.diagnostics.publish()

    def _tick(self) -> None:
        """Every second while active: replay the journal if the database takes writes
        again."""
        hub = self.hub
        if hub is not None and hub.store.journaled:
            hub.store.drain_journal()

    def health(self) -> Health:
        hub = self.hub
        if hub is None:
            reason = f'configure failed: {self.last_error}' if self.last_error else ''
            return not_ready(reason or 'the database is not open')
        return database_health(hub.store.status(), self.episodes_stored, self.episodes_lost,
                               str(hub.store.path), 'active' if self._active else 'inactive')

    # --- queries -------------------------------------------------------------------------------

    def _end_session(self, request, response):
        hub = self.hub
        if not self._active or hub is None:
            response.success, response.message = False, 'memory is not active'
            return response
        try:
            report = hub.on_session_end()
        except StoreError as exc:
            response.success = False
            response.message = f'session end not persisted: {exc}'
            self.get_logger().error(response.message)
            return response
        response.success = True
        response.message = conv.bounded_json(to_plain({
            'steps': report.steps, 'promotion': report.promotion,
            'consolidation': report.consolidation, 'persisted': report.persisted_records}))
        return response

    def _guard(self, handler):
        """Answer unavailable unless active; map the core's typed errors onto the answer's
        error_code / available fields."""
        def call(request, response):
            hub = self.hub
            try:
                if not self._active or hub is None:
                    raise UnavailableError('memory is not active')
                return handler(hub, request, response)
            except (QueryError, conv.ConversionError) as exc:
                response.error_code = response.ERROR_INVALID_REQUEST
                response.error_msg = str(exc)
                response.available = True
            except UnavailableError as exc:
                response.error_code = response.ERROR_UNAVAILABLE
                response.error_msg = str(exc)
                response.available = False
            except Exception as exc:  # noqa: BLE001 - any failure becomes ERROR_INTERNAL
                self.get_logger().error(f'{handler.__name__} failed: {exc!r}')
                response.error_code = response.ERROR_INTERNAL
                response.error_msg = f'{type(exc).__name__}: {exc}'
                response.available = True
            return response
        return call


def main(args=None):
    # Unconfigured until a lifecycle manager (the launch files start one) or
    # `ros2 lifecycle set /memory configure` and `... activate` bring it up.
    run(MemoryNode, args, executor=MultiThreadedExecutor)
