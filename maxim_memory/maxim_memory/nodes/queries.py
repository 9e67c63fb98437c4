"""The query services of the memory node: each request's fields to a MemoryHub call, the
answer to the response (message fields and a bounded `result_json`), the typed errors they
raise (QueryError, UnavailableError) mapped onto the response's error_code (`answer`), and the
end of a session on request. No rclpy: the node registers these."""

from maxim_interfaces.srv import (CausalLinks, ConceptQuery, Embed, Enrich, MemoryRecall,
                                  PainHistory, PredictOutcome, Relate, SimilaritySearch,
                                  SystemStats, TemporalPatterns)
from maxim_memory import conversions as conv
from maxim_memory.enrich import channels_to_dict, MemoryEnricher
from maxim_memory.hub import QueryError, to_plain, UnavailableError
from maxim_memory.store import StoreError


def recall(hub, req, res):
    success = {req.SUCCESS_ANY: None, req.SUCCESS_ONLY: True,
               req.FAILURE_ONLY: False}.get(req.success, 'bad')
    if success == 'bad':
        raise QueryError(f'success must be 0, 1 or 2, not {req.success}')
    r = hub.recall(query=req.query, tool_name=req.tool_name, success=success,
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


def similarity(hub, req, res):
    hits = hub.similarity_search(req.tool_name, req.memory_id, req.context, req.limit)
    res.available = True
    res.episodes = [conv.episode_to_summary(rec, s) for rec, s, _ in hits]
    modalities = sorted({k for _, _, b in hits for k, v in b.items() if v})
    res.modalities = modalities
    res.result_json = conv.bounded_json({
        'modalities': modalities,
        'episodes': [conv.episode_to_dict(rec, s) | {'breakdown': to_plain(b)}
                     for rec, s, b in hits]})
    return res


def predict(hub, req, res):
    p = hub.predict_outcome(req.tool_name, req.context)
    res.available = True
    res.known = p.observation_count > 0
    res.value, res.expected_valence = float(p.value), float(p.expected_valence)
    res.confidence, res.observations = float(p.confidence), int(p.observation_count)
    res.delay_mean_s = float(p.delay_s)
    res.delay_low_s, res.delay_high_s = float(p.delay_low_s), float(p.delay_high_s)
    if req.include_all_outcomes:
        res.outcomes = conv.outcomes_to_msgs(p)[:hub.config.max_results]
    plain = to_plain(p)
    if not req.include_all_outcomes:
        plain.pop('outcomes', None)
    res.result_json = conv.bounded_json(plain)
    return res


def causal_links(hub, req, res):
    links, total = hub.causal_links(req.event, req.outcome, req.memory_id, int(req.valence),
                                    req.limit)
    res.available = True
    res.links = [conv.causal_link_to_msg(ln) for ln in links]
    res.total_links = total
    res.result_json = conv.bounded_json({'total_links': total,
                                         'links': to_plain(links)})
    return res


def pain_history(hub, req, res):
    if req.action_params_json.strip():
        conv.json_object(req.action_params_json, 'action_params_json')
    h = hub.pain_history(req.check_action, req.limit)
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


def temporal(hub, req, res):
    t = hub.temporal_patterns(int(req.hour), int(req.day), req.discover_rhythms, req.limit)
    res.available = t['scn_available']
    res.episodes = [conv.episode_to_summary(rec) for rec in t['episodes']]
    res.rhythms = [conv.rhythm_to_msg(r) for r in t['rhythms']]
    res.result_json = conv.bounded_json({
        'episodes': [conv.episode_to_dict(rec) for rec in t['episodes']],
        'rhythms': to_plain(t['rhythms']), 'patterns': to_plain(t['patterns'])})
    return res


def concepts(hub, req, res):
    found = hub.concept_query(req.name, req.category, req.concept_id, req.relationship_type,
                              req.limit)
    res.available = True
    res.concepts = [conv.concept_to_msg(rec, rels) for rec, rels in found]
    res.result_json = conv.bounded_json([
        {'id': rec.id, 'name': rec.name, 'category': rec.category,
         'definition': rec.definition, 'confidence': round(rec.confidence, 3),
         'relationships': rels} for rec, rels in found])
    return res


def enrich(hub, req, res):
    try:
        # "how long ago" in the time the episodes are stamped in (sim time on the simulated
        # head: against the hub's wall clock a moment ago read "20782 days ago")
        enricher = MemoryEnricher(hub, clock=hub.now, stamp_clock=hub.stamp_now)
        found = enricher.enrich(req.text, req.objects, req.people, req.goal, req.tools,
                                req.context_key, req.channels, req.limit)
    except ValueError as exc:
        raise QueryError(str(exc)) from exc
    res.available = True
    res.result_json = conv.bounded_json(channels_to_dict(found))
    return res


def relate(hub, req, res):
    sims, model = hub.relate(req.text, list(req.phrases))
    res.available = True
    res.similarities = sims
    res.model = model
    res.result_json = conv.bounded_json({'similarities': [round(s, 4) for s in sims]})
    return res


def embed(hub, req, res):
    vectors, model = hub.embed(list(req.texts))
    res.available = True
    res.dim = int(vectors.shape[1]) if vectors.ndim == 2 else 0
    res.vectors = [float(x) for x in vectors.reshape(-1)]
    res.model = model
    res.result_json = conv.bounded_json({'n': int(vectors.shape[0]), 'dim': res.dim})
    return res


def stats(hub, req, res):
    s = hub.system_stats()
    res.available = True
    res.episodes, res.compressed_episodes = s['episodes'], s['compressed_episodes']
    res.causal_links, res.ec_signatures = s['causal_links'], s['ec_signatures']
    res.concepts, res.math_records = s['concepts'], s['math_records']
    res.pain_signals, res.graph_edges = s['pain_signals'], s['graph_edges']
    res.result_json = conv.bounded_json(to_plain(s))
    return res


# (service type, name under memory/, handler(hub, request, response) -> response)
SERVICES = (
    (MemoryRecall, 'memory_recall', recall),
    (SimilaritySearch, 'similarity_search', similarity),
    (PredictOutcome, 'predict_outcome', predict),
    (CausalLinks, 'causal_links', causal_links),
    (PainHistory, 'pain_history', pain_history),
    (TemporalPatterns, 'temporal_patterns', temporal),
    (ConceptQuery, 'concept_query', concepts),
    (SystemStats, 'system_stats', stats),
    (Enrich, 'enrich', enrich),
    (Relate, 'relate', relate),
    (Embed, 'embed', embed),
)


def answer(handler, hub, request, response, log_error):
    """`handler`'s answer from `hub` (None: memory is not active), its typed errors mapped onto
    the response's error_code and available fields; any other failure is ERROR_INTERNAL, and
    a line for `log_error`."""
    try:
        if hub is None:
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
        log_error(f'{handler.__name__} failed: {exc!r}')
        response.error_code = response.ERROR_INTERNAL
        response.error_msg = f'{type(exc).__name__}: {exc}'
        response.available = True
    return response


def guarded(handler, serving, log_error):
    """The service callback of `handler`: its answer from the hub `serving()` returns (None:
    not active), through `answer`."""
    return lambda request, response: answer(handler, serving(), request, response, log_error)


def end_session(hub, response, log_error):
    """memory/end_session (std_srvs/Trigger): promote, consolidate, persist now; `hub` None:
    memory is not active. A store that cannot persist is a failure, and a line for
    `log_error`."""
    if hub is None:
        response.success, response.message = False, 'memory is not active'
        return response
    try:
        report = hub.on_session_end()
    except StoreError as exc:
        response.success = False
        response.message = f'session end not persisted: {exc}'
        log_error(response.message)
        return response
    response.success = True
    response.message = conv.bounded_json(to_plain({
        'steps': report.steps, 'promotion': report.promotion,
        'consolidation': report.consolidation, 'persisted': report.persisted_records}))
    return response
