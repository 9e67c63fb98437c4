"""The memory node: episodes and pain in, introspection queries out, SQLite underneath."""

from dataclasses import dataclass
import logging
import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from std_srvs.srv import Trigger

from maxim_interfaces.msg import Episode, MemoryUpdate, PainSignal
from maxim_interfaces.srv import (CausalLinks, ConceptQuery, Enrich, MemoryRecall,
                                  PainHistory, PredictOutcome, SimilaritySearch, SystemStats,
                                  TemporalPatterns)
from maxim_memory import conversions as conv
from maxim_memory.embedding import make_embedder
from maxim_memory.enrich import channels_to_dict, MemoryEnricher
from maxim_memory.health import database_health, Health, not_ready
from maxim_memory.hub import (HubConfig, memory_size, MemoryHub, QueryError, to_plain,
                              UnavailableError)
from maxim_memory.nodes.diagnostics import Diagnostics
from maxim_memory.qos import EVENTS
from maxim_memory.store import StoreError, StoreFault
from maxim_memory.throttle import LogThrottle
from maxim_memory.nodes.lifetime import run


@dataclass(frozen=True)
class MemoryNodeConfig:
    db_path: str = '~/.maxim/memory.db'
    synchronous: str = 'FULL'
    hippocampus_capacity: int = 100_000
    atl_capacity: int = 20_000
    ag_capacity: int = 20_000
    context_budget_s: float = 0.05
    max_results: int = 50
    state_flush_every: int = 20
    embedder: str = 'sentence'
    embedding_model_path: str = ''
    write_budget_s: float = 5.0

    def hub_config(self) -> HubConfig:
        return HubConfig(db_path=self.db_path, synchronous=self.synchronous,
                         write_budget_s=self.write_budget_s,
                         hippocampus_capacity=self.hippocampus_capacity,
                         atl_capacity=self.atl_capacity, ag_capacity=self.ag_capacity,
                         context_budget_s=self.context_budget_s, max_results=self.max_results,
                         state_flush_every=self.state_flush_every)


_PARAMS = [
    # name, default, description, range
    ('db_path', '~/.maxim/memory.db', 'SQLite memory database (created if absent)', None),
    ('synchronous', 'FULL', 'FULL: a capture is durable on return; NORMAL: survives a crash '
     'of the process, may lose the last captures on power loss', None),
    ('capacity.hippocampus', 100_000, 'Most episodes kept (0 = unbounded)', (0, 10_000_000)),
    ('capacity.atl', 20_000, 'Most concepts kept (0 = unbounded)', (0, 10_000_000)),
    ('capacity.angular_gyrus', 20_000, 'Most math records kept (0 = unbounded)',
     (0, 10_000_000)),
    ('budgets.context_s', 0.05, 'Time budget of the concept context builder, seconds',
     (0.001, 10.0)),
    ('budgets.max_results', 50, 'Hard cap on the items any query returns', (1, 1000)),
    ('budgets.state_flush_every', 20, 'Snapshot NAc/SCN/pain state every N captures',
     (0, 100_000)),
    ('budgets.write_s', 5.0, 'A busy database is retried this long (s); then the capture '
     'goes to the journal beside it', (0.0, 60.0)),
    ('embedding.backend', 'sentence', "'sentence' (all-MiniLM-L6-v2, offline; falls back to "
     "'hashing' with a warning when its package is missing), 'hashing' (word hashing, "
     "instant, matches words not meaning) or 'llama' (the GGUF model)", None),
    ('embedding.model_path', '', "'sentence': another model.zip ('' = the installed "
     "package's); 'llama': a GGUF ('' = the embedded gemma-3-270m, assembled into the model "
     'cache on first use)', None),
]


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


def _descriptor(description, rng, read_only=True):
    d = ParameterDescriptor(description=description, read_only=read_only)
    if rng is not None:
        lo, hi = rng
        if isinstance(lo, float):
            d.floating_point_range = [FloatingPointRange(from_value=lo, to_value=hi)]
        else:
            d.integer_range = [IntegerRange(from_value=lo, to_value=hi, step=1)]
    return d


class MemoryNode(Node):
    """Owns the MemoryHub; every capture is durable on arrival, every query read-only.

    Parameters:
        db_path (string), synchronous (string), capacity.hippocampus / capacity.atl /
        capacity.angular_gyrus (int), budgets.context_s (double), budgets.max_results (int),
        budgets.state_flush_every (int), budgets.write_s (double), embedding.backend (string),
        embedding.model_path (string). All read-only (they shape the database at start).
    Subscriptions:
        episodes (maxim_interfaces/Episode), pain (maxim_interfaces/PainSignal)
    Publications:
        memory/updates (maxim_interfaces/MemoryUpdate): after each captured episode, the NAc
            prediction for its tool and context and the size of memory (what a recording
            needs to draw learning curves and memory growth); at session end (quiesce), what
            promotion did
    Services:
        memory/memory_recall (MemoryRecall), memory/similarity_search (SimilaritySearch),
        memory/predict_outcome (PredictOutcome), memory/causal_links (CausalLinks),
        memory/pain_history (PainHistory), memory/temporal_patterns (TemporalPatterns),
        memory/concept_query (ConceptQuery), memory/system_stats (SystemStats),
        memory/enrich (Enrich: what is relevant to a situation, by channel),
        memory/end_session (std_srvs/Trigger: promote, consolidate, persist now)
    Publishers:
        diagnostics (diagnostic_msgs/DiagnosticArray, every second and on each storage fault
        or recovery): the database's health, journaled / replayed / lost writes.
    A storage fault (locked, read-only, full disk, a directory in the way, a newer schema) is
    one error line when it begins and one when it ends; captures meanwhile go to the journal
    beside the database (retried every second, replayed at the next open), so an episode
    logged as stored is never lost. Bad input is logged at most once per kind every 2 s.
    """

    def __init__(self, **kwargs):
        super().__init__('memory', **kwargs)
        for name, default, description, rng in _PARAMS:
            self.declare_parameter(name, default, _descriptor(description, rng))
        p = self.get_parameter
        self.config = MemoryNodeConfig(
            db_path=p('db_path').value, synchronous=p('synchronous').value,
            hippocampus_capacity=p('capacity.hippocampus').value,
            atl_capacity=p('capacity.atl').value, ag_capacity=p('capacity.angular_gyrus').value,
            context_budget_s=p('budgets.context_s').value,
            max_results=p('budgets.max_results').value,
            state_flush_every=p('budgets.state_flush_every').value,
            write_budget_s=p('budgets.write_s').value,
            embedder=p('embedding.backend').value,
            embedding_model_path=p('embedding.model_path').value)
        self._log_handler = _RosLogHandler(self.get_logger())
        package_log = logging.getLogger('maxim_memory')
        package_log.addHandler(self._log_handler)
        package_log.setLevel(logging.INFO)
        package_log.propagate = False     # once, on the ROS logger (hub.warnings keeps them)
        self.hub = MemoryHub(self.config.hub_config(), embedder=self._embedder())
        self.enricher = MemoryEnricher(self.hub)
        self._closed = False
        self._session_ended = False
        self._throttle = LogThrottle(2.0)
        self.episodes_stored = 0       # captures acknowledged (in the database or journal)
        self.episodes_lost = 0         # captures neither took: logged as NOT stored
        self.diagnostics = Diagnostics(self, 'database', self.health, period_s=None)
        self.hub.store.listeners.append(self._on_store_fault)

        self._updates = self.create_publisher(MemoryUpdate, 'memory/updates', EVENTS)
        inputs = MutuallyExclusiveCallbackGroup()
        queries = ReentrantCallbackGroup()
        self.create_subscription(Episode, 'episodes', self._on_episode, EVENTS,
                                 callback_group=inputs)
        self.create_subscription(PainSignal, 'pain', self._on_pain, EVENTS,
                                 callback_group=inputs)
        for srv_type, name, handler in (
                (MemoryRecall, 'memory_recall', self._recall),
                (SimilaritySearch, 'similarity_search', self._similarity),
                (PredictOutcome, 'predict_outcome', self._predict),
                (CausalLinks, 'causal_links', self._causal_links),
                (PainHistory, 'pain_history', self._pain_history),
                (TemporalPatterns, 'temporal_patterns', self._temporal),
                (ConceptQuery, 'concept_query', self._concepts),
                (SystemStats, 'system_stats', self._stats),
                (Enrich, 'enrich', self._enrich)):
            self.create_service(srv_type, f'memory/{name}', self._guard(handler),
                                callback_group=queries)
        self.create_service(Trigger, 'memory/end_session', self._end_session,
                            callback_group=inputs)
        self.create_timer(1.0, self._tick, callback_group=inputs)
        ec = self.hub.ec_startup
        self.get_logger().info(f'memory open at {self.hub.store.path}: '
                               f'{len(self.hub.hippocampus)} episodes, '
                               f'{len(self.hub.atl)} concepts; EC index '
                               f'{"loaded" if ec.get("loaded") else "built"}, '
                               f'{ec.get("embedded", 0)} episodes embedded '
                               f'({self._embedder_name()})')

    def _embedder_name(self) -> str:
        sim = self.hub.similarity
        return getattr(sim.obj.embedder, 'name', '?') if sim.available else 'no EC'

    def _embedder(self):
        return make_embedder(self.config.embedder, self.config.embedding_model_path,
                             warn=self.get_logger().warning)

    # --- inputs --------------------------------------------------------------------------------

    def _log(self, kind: str, text: str, error: bool = False) -> None:
        if len(text) > 500:    # a line for a person, however long the bad input was
            text = f'{text[:500]} … ({len(text) - 500} more characters)'
        line = self._throttle(kind, text)
        if line is not None:
            (self.get_logger().error if error else self.get_logger().warning)(line)

    def _on_episode(self, msg: Episode) -> None:
        try:
            ep = conv.msg_to_episode(msg, time.time())
            self.hub.capture_episode(ep)
        except (conv.ConversionError, ValueError, TypeError) as exc:
            self._log('episode rejected', f'episode {msg.episode_id[:80]!r} rejected: {exc}')
        except StoreError as exc:
            self.episodes_lost += 1
            self._log('episode lost', f'episode {msg.episode_id[:80]!r} NOT stored: {exc}',
                      error=True)
            self._publish_diagnostics()
        else:
            self.episodes_stored += 1
            self._updates.publish(conv.learning_to_msg(self.hub.learning_snapshot(ep),
                                                       self.get_clock().now().to_msg()))

    def _on_pain(self, msg: PainSignal) -> None:
        try:
            self.hub.record_pain(conv.msg_to_pain(msg, time.time()))
        except (conv.ConversionError, UnavailableError, ImportError, ValueError,
                TypeError) as exc:
            self._log('pain', f'pain signal not recorded: {exc}')

    def _on_store_fault(self, fault: StoreFault | None) -> None:
        """One line when a storage fault begins or changes kind, one when writes reach the
        database again (the store calls this once per change, not per write)."""
        if fault is None:
            st = self.hub.store.status()
            self.get_logger().info(f'memory database {self.hub.store.path} writable again; '
                                   f'journal replayed ({st["replayed"]} writes so far)')
        else:
            self.get_logger().error(f'storage fault ({fault.kind}): {fault.message}')
        self._publish_diagnostics()

    def _tick(self) -> None:
        """Every second: replay the journal if the database takes writes again, report."""
        if self.hub.store.journaled:
            self.hub.store.drain_journal()
        self._publish_diagnostics()

    def health(self) -> Health:
        if getattr(self, 'hub', None) is None:
            return not_ready('the database is not open')
        return database_health(self.hub.store.status(), self.episodes_stored,
                               self.episodes_lost, str(self.hub.store.path))

    def _publish_diagnostics(self) -> None:
        self.diagnostics.publish()

    def _end_session(self, request, response):
        try:
            report = self.hub.on_session_end()
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

    # --- queries -------------------------------------------------------------------------------

    def _guard(self, handler):
        """Map the core's typed errors onto the answer's error_code / available fields."""
        def call(request, response):
            try:
                return handler(request, response)
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

    def _recall(self, req, res):
        success = {req.SUCCESS_ANY: None, req.SUCCESS_ONLY: True,
                   req.FAILURE_ONLY: False}.get(req.success, 'bad')
        if success == 'bad':
            raise QueryError(f'success must be 0, 1 or 2, not {req.success}')
        r = self.hub.recall(query=req.query, tool_name=req.tool_name, success=success,
                            object=req.object, person=req.person, mode=req.mode,
                            time_after=req.time_after, time_before=req.time_before,
                            expand=req.expand, limit=req.limit)
        res.available = True
        res.episodes = [conv.episode_to_summary(rec, s) for rec, s in r.hits]
        res.total_matches = r.total_matches
        res.result_json = conv.bounded_json({
            'total_matches': r.total_matches, 'expanded': r.expanded,
            'episodes': [conv.episode_to_dict(rec, s) for rec, s in r.hits]})
        return res

    def _similarity(self, req, res):
        hits = self.hub.similarity_search(req.tool_name, req.memory_id, req.context, req.limit)
        res.available = True
        res.episodes = [conv.episode_to_summary(rec, s) for rec, s, _ in hits]
        modalities = sorted({k for _, _, b in hits for k, v in b.items() if v})
        res.modalities = modalities
        res.result_json = conv.bounded_json({
            'modalities': modalities,
            'episodes': [conv.episode_to_dict(rec, s) | {'breakdown': to_plain(b)}
                         for rec, s, b in hits]})
        return res

    def _predict(self, req, res):
        p = self.hub.predict_outcome(req.tool_name, req.context)
        res.available = True
        res.known = p.observation_count > 0
        res.value, res.expected_valence = float(p.value), float(p.expected_valence)
        res.confidence, res.observations = float(p.confidence), int(p.observation_count)
        res.delay_mean_s = float(p.delay_s)
        res.delay_low_s, res.delay_high_s = float(p.delay_low_s), float(p.delay_high_s)
        if req.include_all_outcomes:
            res.outcomes = conv.outcomes_to_msgs(p)[:self.config.max_results]
        plain = to_plain(p)
        if not req.include_all_outcomes:
            plain.pop('outcomes', None)
        res.result_json = conv.bounded_json(plain)
        return res

    def _causal_links(self, req, res):
        links, total = self.hub.causal_links(req.event, req.outcome, req.memory_id,
                                             int(req.valence), req.limit)
        res.available = True
        res.links = [conv.causal_link_to_msg(ln) for ln in links]
        res.total_links = total
        res.result_json = conv.bounded_json({'total_links': total,
                                             'links': to_plain(links)})
        return res

    def _pain_history(self, req, res):
        if req.action_params_json.strip():
            conv.json_object(req.action_params_json, 'action_params_json')
        h = self.hub.pain_history(req.check_action, req.limit)
        res.available = True
        res.pain_types = list(h['counts'])
        res.pain_counts = [int(v) for v in h['counts'].values()]
        res.recent = [conv.pain_to_msg(e) for e in h['recent']]
        res.current_intensity = float(h['current_intensity'])
        check = h.get('check', {})
        res.would_block = bool(check.get('would_block', check.get('blocked', False)))
        res.block_reason = str(check.get('reason', ''))
        res.result_json = conv.bounded_json(to_plain(h))
        return res

    def _temporal(self, req, res):
        t = self.hub.temporal_patterns(int(req.hour), int(req.day), req.discover_rhythms,
                                       req.limit)
        res.available = t['scn_available']
        res.episodes = [conv.episode_to_summary(rec) for rec in t['episodes']]
        res.rhythms = [conv.rhythm_to_msg(r) for r in t['rhythms']]
        res.result_json = conv.bounded_json({
            'episodes': [conv.episode_to_dict(rec) for rec in t['episodes']],
            'rhythms': to_plain(t['rhythms']), 'patterns': to_plain(t['patterns'])})
        return res

    def _concepts(self, req, res):
        found = self.hub.concept_query(req.name, req.category, req.concept_id,
                                       req.relationship_type, req.limit)
        res.available = True
        res.concepts = [conv.concept_to_msg(rec, rels) for rec, rels in found]
        res.result_json = conv.bounded_json([
            {'id': rec.id, 'name': rec.name, 'category': rec.category,
             'definition': rec.definition, 'confidence': round(rec.confidence, 3),
             'relationships': rels} for rec, rels in found])
        return res

    def _enrich(self, req, res):
        try:
            found = self.enricher.enrich(req.text, req.objects, req.people, req.goal,
                                         req.tools, req.context_key, req.channels, req.limit)
        except ValueError as exc:
            raise QueryError(str(exc)) from exc
        res.available = True
        res.result_json = conv.bounded_json(channels_to_dict(found))
        return res

    def _stats(self, req, res):
        s = self.hub.system_stats()
        res.available = True
        res.episodes, res.compressed_episodes = s['episodes'], s['compressed_episodes']
        res.causal_links, res.ec_signatures = s['causal_links'], s['ec_signatures']
        res.concepts, res.math_records = s['concepts'], s['math_records']
        res.pain_signals, res.graph_edges = s['pain_signals'], s['graph_edges']
        res.result_json = conv.bounded_json(to_plain(s))
        return res

    # --- shutdown ------------------------------------------------------------------------------

    def quiesce(self) -> None:
        """End the session while the graph still runs (the runner calls this before it takes
        the nodes down), so the session-end update reaches the recorder; close() then only
        closes."""
        if self._closed or self._session_ended:
            return
        self._session_ended = True
        report = self.hub.on_session_end()
        self.get_logger().info(f'memory session ended: {report.steps}')
        self._updates.publish(conv.session_end_to_msg(memory_size(self.hub.system_stats()),
                                                      report.promotion,
                                                      self.get_clock().now().to_msg()))

    def close(self) -> None:
        """End the session (SCN save -> promote -> consolidate -> persist) once, unless
        quiesce() did; close the store."""
        if not self._closed:
            self._closed = True
            try:
                report = self.hub.close(end_session=not self._session_ended)
            except StoreError as exc:
                self.get_logger().error(f'memory session end not persisted: {exc}')
                return
            if report is not None:
                self.get_logger().info(f'memory session ended: {report.steps}')

    def destroy_node(self):
        self.close()
        package_log = logging.getLogger('maxim_memory')
        package_log.removeHandler(self._log_handler)
        if not package_log.handlers:
            package_log.propagate = True
        return super().destroy_node()


def main(args=None):
    run(MemoryNode, args, executor=MultiThreadedExecutor)
