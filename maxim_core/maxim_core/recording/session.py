"""A recording read into plain series, and the numbers a report states about it.

Every series is a list of dicts with `t`, seconds since the recording's first message (MCAP
log time, the recorder's clock when the message arrived), plus the message fields the report
uses, copied as they are. `figures()` computes every number the report prints from these
series and nothing else, so each one can be recomputed from the file's messages.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass, field
import json
import os
import statistics

from maxim_core.deliberation.thoughts import KIND_FORMING
from maxim_core.idle.provenance import compare_records
from maxim_core.recording.writer import read_messages, read_metadata

# What the report reads; the camera images are left out (large, and not plotted).
TOPICS = ['thoughts', 'percepts', 'attention/state', 'tool_calls', 'tool_results', 'pain',
          'episodes', 'idle', 'idle/provenance', 'memory/updates', 'head/state', 'joint_states']

THOUGHT_KINDS = {0: 'deliberation', 1: 'idle', 2: 'status'}
THOUGHT_STATUS = {0: 'ok', 1: 'timeout', 2: 'model error', 3: 'unparsable', 4: 'cancelled',
                  5: 'gated'}
ATTENTION_MODES = {0: 'idle', 1: 'track', 2: 'scan', 3: 'goal'}
PERCEPT_SOURCES = {0: 'vision', 1: 'user', 2: 'sim', 3: 'system', 4: 'body'}
BLOCK_LAYERS = {0: 'none', 1: 'pattern rules', 2: 'LLM review', 3: 'learned prediction (NAc)',
                4: 'bypass', 5: 'fail-closed'}
PAN_NAMES = ('pan', 'head_pan', 'pan_joint', 'head_pan_joint')
TILT_NAMES = ('tilt', 'head_tilt', 'tilt_joint', 'head_tilt_joint')


class ReportError(ValueError):
    """A recording the report cannot read."""


def outcome_of(result: dict) -> str:
    """'blocked', 'success' or 'failed' for a tool result."""
    return 'blocked' if result['blocked'] else 'success' if result['success'] else 'failed'


@dataclass
class Session:
    """The series of one recording."""

    path: str
    duration_s: float = 0.0
    start_ns: int = 0
    counts: dict = field(default_factory=dict)        # messages per topic
    metadata: dict = field(default_factory=dict)      # MCAP metadata {name: {key: value}}
    thoughts: list = field(default_factory=list)
    forming: list = field(default_factory=list)     # (t, deliberation_id, cycle, text): the
    #                                                 thoughts shown before their decision
    percepts: list = field(default_factory=list)
    attention: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    results: list = field(default_factory=list)
    pain: list = field(default_factory=list)
    episodes: list = field(default_factory=list)
    idle: list = field(default_factory=list)
    provenance: list = field(default_factory=list)
    memory: list = field(default_factory=list)
    head: list = field(default_factory=list)
    joints: list = field(default_factory=list)

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def run_info(self) -> dict:
        """The 'maxim_run' metadata record with its JSON values decoded."""
        out = {}
        for key, value in self.metadata.get('maxim_run', {}).items():
            try:
                out[key] = json.loads(value)
            except json.JSONDecodeError:
                out[key] = value
        return out


def _joint(names: list, positions: list, wanted: tuple) -> float | None:
    for i, name in enumerate(names):
        if name in wanted and i < len(positions):
            return float(positions[i])
    return None


def load(path: str) -> Session:
    """Read a recording into a Session; ReportError when it is missing or unreadable."""
    if not os.path.isfile(path):
        raise ReportError(f'no such recording: {path}')
    try:
        messages = read_messages(path, topics=TOPICS)
        metadata = read_metadata(path)
    except Exception as exc:  # noqa: BLE001 - the mcap readers raise many types; one line out
        raise ReportError(f'{path} is not a readable MCAP recording: '
                          f'{type(exc).__name__}: {exc}') from exc
    s = Session(path=os.path.abspath(path), metadata=metadata)
    if not messages:
        return s
    s.start_ns = messages[0][1]
    s.duration_s = (messages[-1][1] - s.start_ns) / 1e9
    counts: Counter = Counter()
    for topic, stamp, m in messages:
        t = (stamp - s.start_ns) / 1e9
        counts[topic] += 1
        if topic == 'thoughts' and int(m.kind) == KIND_FORMING:
            s.forming.append({'t': t, 'deliberation_id': m.deliberation_id,
                              'cycle': int(m.cycle), 'text': m.text})
        elif topic == 'thoughts':
            s.thoughts.append({
                't': t, 'deliberation_id': m.deliberation_id, 'kind': int(m.kind),
                'status': int(m.status), 'status_msg': m.status_msg, 'cycle': int(m.cycle),
                'max_cycles': int(m.max_cycles), 'text': m.text,
                'salience': float(m.salience), 'enriched_by': list(m.enriched_by),
                'experience': m.experience, 'ready_to_act': bool(m.ready_to_act),
                'converged': bool(m.converged), 'jaccard_previous': float(m.jaccard_previous),
                'action_json': m.action_json, 'choice_json': getattr(m, 'choice_json', ''),
                'why': getattr(m, 'why', ''),
                'enrichment_s': float(m.enrichment_s),
                'llm_s': float(m.llm_s), 'cycle_s': float(m.cycle_s),
                'prompt_tokens': int(m.prompt_tokens),
                'completion_tokens': int(m.completion_tokens)})
        elif topic == 'percepts':
            s.percepts.append({
                't': t, 'source': int(m.source), 'source_name': m.source_name,
                'narrative': m.narrative, 'novelty': float(m.novelty),
                'salience': float(m.salience),
                'labels': [d.label for d in list(m.people) + list(m.objects)]})
        elif topic == 'attention/state':
            s.attention.append({
                't': t, 'mode': int(m.mode), 'has_focus': bool(m.has_focus),
                'focus_track_id': int(m.focus_track_id), 'focus_pan': float(m.focus_pan),
                'focus_tilt': float(m.focus_tilt),
                'focus_label': next((d.label for d in m.targets
                                     if d.track_id == m.focus_track_id), '')})
        elif topic == 'tool_calls':
            s.calls.append({'t': t, 'call_id': m.call_id, 'tool_name': m.tool_name,
                            'arguments_json': m.arguments_json,
                            'deliberation_id': m.deliberation_id})
        elif topic == 'tool_results':
            s.results.append({
                't': t, 'call_id': m.call.call_id, 'tool_name': m.call.tool_name,
                'arguments_json': m.call.arguments_json, 'success': bool(m.success),
                'blocked': bool(m.blocked), 'blocked_reason': m.blocked_reason,
                'blocked_by': int(m.blocked_by), 'verified': bool(m.verified),
                'error_code': int(m.error_code), 'error_msg': m.error_msg,
                'output': m.output, 'duration_s': float(m.duration_s)})
        elif topic == 'pain':
            s.pain.append({'t': t, 'type_name': m.type_name, 'intensity': float(m.intensity),
                           'source': m.source, 'description': m.description})
        elif topic == 'episodes':
            s.episodes.append({'t': t, 'episode_id': m.episode_id, 'tool_name': m.tool_name,
                               'success': bool(m.success), 'blocked': bool(m.blocked),
                               'valence': float(m.valence), 'cycles': int(m.cycles)})
        elif topic == 'idle':
            s.idle.append({'t': t, 'reason': m.idle_reason_name or str(m.idle_reason),
                           'task_count': int(m.task_count),
                           'next_eligible_in_s': float(m.next_eligible_in_s)})
        elif topic == 'idle/provenance':
            try:
                record = json.loads(m.record_json) if m.record_json else {}
            except json.JSONDecodeError:
                record = {}
            s.provenance.append({
                't': t, 'model': m.model, 'temperature': float(m.temperature),
                'max_tokens': int(m.max_tokens), 'idle_reason': int(m.idle_reason),
                'decision_outcome': int(m.decision_outcome),
                'intent_emitted': m.intent_emitted,
                'intent_suppressed': bool(m.intent_suppressed),
                'suppression_reason': m.suppression_reason,
                'salience_summary': m.salience_summary, 'record': record})
        elif topic == 'memory/updates':
            s.memory.append({
                't': t, 'episode_id': m.episode_id, 'tool_name': m.tool_name,
                'context': m.context, 'outcome': m.outcome, 'learned': bool(m.learned),
                'prediction_available': bool(m.prediction_available),
                'value': float(m.value), 'confidence': float(m.confidence),
                'observations': int(m.observations), 'episodes': int(m.episodes),
                'concepts': int(m.concepts), 'causal_links': int(m.causal_links),
                'session_end': bool(m.session_end),
                'concepts_created': int(m.concepts_created),
                'concepts_reinforced': int(m.concepts_reinforced)})
        elif topic == 'head/state':
            s.head.append({'t': t, 'pan': float(m.pan), 'tilt': float(m.tilt),
                           'pan_command': float(m.pan_command),
                           'tilt_command': float(m.tilt_command)})
        elif topic == 'joint_states':
            pan = _joint(list(m.name), list(m.position), PAN_NAMES)
            tilt = _joint(list(m.name), list(m.position), TILT_NAMES)
            if pan is not None or tilt is not None:
                s.joints.append({'t': t, 'pan': pan, 'tilt': tilt})
    s.counts = dict(counts)
    return s


def deliberations(s: Session) -> dict[str, list[dict]]:
    """The deliberation thoughts (kind deliberation, status ok) grouped by deliberation_id,
    in order; a thought without an id is a deliberation of its own."""
    out: dict[str, list[dict]] = defaultdict(list)
    for i, th in enumerate(s.thoughts):
        if th['kind'] == 0 and th['status'] == 0:
            out[th['deliberation_id'] or f'#{i}'].append(th)
    return dict(out)


def _mean(values: list) -> float:
    return float(statistics.fmean(values)) if values else 0.0


def _median(values: list) -> float:
    return float(statistics.median(values)) if values else 0.0


def figures(s: Session) -> dict:
    """Every number the report states, computed from the session's series."""
    groups = deliberations(s)
    cycles = [max(th['cycle'] for th in g) for g in groups.values()]
    ok = [th for g in groups.values() for th in g]
    enrich: Counter = Counter(src for th in ok for src in th['enriched_by'])
    outcomes = Counter(outcome_of(r) for r in s.results)
    per_tool: dict = defaultdict(Counter)
    for r in s.results:
        per_tool[r['tool_name']][outcome_of(r)] += 1
    statuses = Counter(THOUGHT_STATUS.get(th['status'], str(th['status']))
                       for th in s.thoughts if th['status'])
    last = s.memory[-1] if s.memory else {}
    learning: dict = {}
    for u in s.memory:
        if u['prediction_available']:
            learning[f"{u['tool_name']} | {u['context']}"] = {
                'value': u['value'], 'confidence': u['confidence'],
                'observations': u['observations']}
    run = s.run_info()
    return {
        'file': s.path,
        'duration_s': round(s.duration_s, 3),
        'messages': dict(sorted(s.counts.items())),
        'thoughts': len(s.thoughts),
        'forming_thoughts': len(s.forming),       # shown before their decision (kind 3)
        'deliberation_thoughts': len(ok),
        'idle_thoughts': sum(1 for th in s.thoughts if th['kind'] == 1),
        'thought_problems': dict(statuses),
        'deliberations': len(groups),
        'mean_salience': round(_mean([th['salience'] for th in ok]), 4),
        'cycles_per_deliberation': {str(k): v for k, v in sorted(Counter(cycles).items())},
        'mean_cycles_per_deliberation': round(_mean(cycles), 4),
        'cycle_s_mean': round(_mean([th['cycle_s'] for th in ok]), 4),
        'cycle_s_median': round(_median([th['cycle_s'] for th in ok]), 4),
        'llm_s_mean': round(_mean([th['llm_s'] for th in ok]), 4),
        'enrichment_s_mean': round(_mean([th['enrichment_s'] for th in ok]), 4),
        'converged_deliberations': sum(1 for g in groups.values()
                                       if any(th['converged'] for th in g)),
        'acted_deliberations': sum(1 for g in groups.values()
                                   if any(th['ready_to_act'] and th['action_json']
                                          for th in g)),
        'enrichment_sources': dict(enrich.most_common()),
        'percepts': len(s.percepts),
        'tool_calls': len(s.calls),
        'tool_outcomes': dict(outcomes),
        'tool_outcomes_by_tool': {k: dict(v) for k, v in sorted(per_tool.items())},
        'blocked_calls': outcomes.get('blocked', 0),
        'pain_events': len(s.pain),
        'max_pain': round(max((p['intensity'] for p in s.pain), default=0.0), 4),
        'idle_events': len(s.idle),
        'idle_reasons': dict(Counter(e['reason'] for e in s.idle)),
        'idle_cycles': len(s.provenance),
        'episodes': len(s.episodes),
        'memory_updates': sum(1 for u in s.memory if not u['session_end']),
        'memory_at_end': {k: last[k] for k in ('episodes', 'concepts', 'causal_links')
                          } if last else {},
        'promotion_at_end': {k: sum(u[k] for u in s.memory if u['session_end'])
                             for k in ('concepts_created', 'concepts_reinforced')
                             } if any(u['session_end'] for u in s.memory) else {},
        'nac_at_end': learning,
        'model': model_of(s, run),
        'graph': run.get('graph', ''),
    }


def model_of(s: Session, run: dict | None = None) -> str:
    """The model of the run: what the runner recorded, the llm node's model_path parameter,
    else what idle provenance names, else ''."""
    run = s.run_info() if run is None else run
    if run.get('model'):
        return str(run['model'])
    llm = (run.get('parameters') or {}).get('llm') or {}
    path = llm.get('model_path')
    if path:
        return str(path)
    names = sorted({p['model'] for p in s.provenance if p['model']})
    if names:
        return ', '.join(names)
    return 'embedded default (llm.model_path not set)' if 'llm' in (
        run.get('parameters') or {}) else ''


def compare_sessions(a: Session, b: Session) -> dict:
    """The two runs' figures side by side and the attribution of their idle cycles'
    differences (IDLE-5 provenance comparison of the records the recordings carry)."""
    fa, fb = figures(a), figures(b)
    provenance = compare_records([p['record'] for p in a.provenance if p['record']],
                                 [p['record'] for p in b.provenance if p['record']])
    params_a = a.run_info().get('parameters') or {}
    params_b = b.run_info().get('parameters') or {}
    params = {}
    for node in sorted(set(params_a) | set(params_b)):
        pa, pb = params_a.get(node) or {}, params_b.get(node) or {}
        for key in sorted(set(pa) | set(pb)):
            if pa.get(key) != pb.get(key):
                params[f'{node}.{key}'] = {'a': pa.get(key), 'b': pb.get(key)}
    return {'a': fa, 'b': fb, 'provenance': provenance, 'parameters': params}
