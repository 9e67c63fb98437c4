"""IDLE-5: every idle cycle leaves a provenance record; two runs can be compared.

The record holds what shaped the cycle (contract version, prompt template hash, retrieval
mode and parameters, model and sampling parameters, the idle reason and the interoceptive
summary the model saw) and what came of it (outcome, intent, suppression, storage). Records
are appended as JSON lines (flushed and fsynced: a crash loses at most the cycle in flight)
and map field for field onto maxim_interfaces/IdleProvenance.

`compare(a, b)` sorts the differences between two runs into config (contract, template,
retrieval, switches), model (model file and sampling), environment (what the robot met:
idle reasons, situations, the host) and, when none of those differ but outcomes do, model
stochasticity (same inputs, different samples).
"""

from collections import Counter
from dataclasses import asdict, dataclass, field
import hashlib
import json
import os
import platform
import sys

CONTRACT_VERSION = 'v2.0.0'

NO_OP = 'no_op'
THOUGHT_ONLY = 'thought_only'
INTENT_EMITTED = 'intent_emitted'
OUTCOMES = (NO_OP, THOUGHT_ONLY, INTENT_EMITTED)                 # IdleProvenance OUTCOME_*
RETRIEVAL_MODES = ('structured', 'semantic', 'hybrid')          # IdleProvenance RETRIEVAL_*

CONFIG_FIELDS = ('contract_version', 'prompt_template_hash', 'retrieval_mode',
                 'retrieval_time_window_s', 'retrieval_max_events', 'semantic_top_k',
                 'drives_enabled', 'require_explicit_goal_tag', 'output_mode', 'config_hash')
MODEL_FIELDS = ('model', 'temperature', 'max_tokens', 'top_p', 'top_k', 'repeat_penalty',
                'seed')
ENVIRONMENT_FIELDS = ('idle_reason', 'salience_summary', 'situation_hash',
                      'retrieved_events')
HOST_FIELDS = ('python', 'platform', 'backend')
OUTCOME_FIELDS = ('decision_outcome', 'intent_emitted', 'intent_suppressed',
                  'suppression_reason', 'stored', 'storage_reason')


class ProvenanceError(ValueError):
    """A provenance file that cannot be read as records."""


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def host_fingerprint(backend: object = None) -> dict:
    """The parts of the machine that can change a run's behaviour without a config change."""
    return {'python': sys.version.split()[0], 'platform': platform.platform(),
            'backend': type(backend).__name__ if backend is not None else ''}


@dataclass
class ProvenanceRecord:
    """One idle cycle (maps onto maxim_interfaces/IdleProvenance; record_json is to_json())."""

    contract_version: str
    prompt_template_hash: str
    retrieval_mode: str
    retrieval_time_window_s: float
    retrieval_max_events: int
    semantic_top_k: int
    model: str
    temperature: float
    max_tokens: int
    idle_reason: str
    salience_summary: str
    decision_outcome: str
    intent_emitted: str
    intent_suppressed: bool
    suppression_reason: str
    timestamp: float
    # Beyond the message's fields: what compare() needs to attribute differences.
    cycle_id: str = ''
    config_hash: str = ''
    drives_enabled: bool = True
    require_explicit_goal_tag: bool = True
    output_mode: str = ''
    top_p: float = 0.0
    top_k: int = 0
    repeat_penalty: float = 0.0
    seed: int = -1
    situation_hash: str = ''
    retrieved_events: int = 0
    retrieval_error: str = ''
    llm_error: str = ''
    stop_reason: str = ''
    completion_tokens: int = 0
    tags_rejected: str = ''
    thresholds_crossed: str = ''      # drives at or above their urgent threshold
    stored: bool = False
    storage_reason: str = ''
    host: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.decision_outcome not in OUTCOMES:
            raise ValueError(f'decision_outcome must be one of {OUTCOMES}')
        if self.retrieval_mode not in RETRIEVAL_MODES:
            raise ValueError(f'retrieval_mode must be one of {RETRIEVAL_MODES}')

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


class ProvenanceLog:
    """Appends records to a JSON-lines file, one durable line per cycle."""

    def __init__(self, path: str):
        if not path:
            raise ProvenanceError('a provenance log needs a file path')
        self.path = str(path)
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)

    def append(self, record: ProvenanceRecord) -> None:
        line = record.to_json() + '\n'
        with open(self.path, 'a', encoding='utf-8') as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


def read_records(path: str) -> list[dict]:
    """The records of a JSON-lines file; a line that is not a record is a ProvenanceError."""
    records = []
    try:
        with open(path, encoding='utf-8') as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ProvenanceError(f'{path}:{n}: not JSON ({exc.msg})') from exc
                if not isinstance(rec, dict) or 'decision_outcome' not in rec:
                    raise ProvenanceError(f'{path}:{n}: not a provenance record')
                records.append(rec)
    except OSError as exc:
        raise ProvenanceError(f'cannot read {path}: {exc}') from exc
    return records


def _values(records: list[dict], name: str) -> list:
    return sorted({json.dumps(r.get(name), sort_keys=True) for r in records})


def _field_diffs(a: list[dict], b: list[dict], names) -> dict:
    diffs = {}
    for name in names:
        va, vb = _values(a, name), _values(b, name)
        if va != vb:
            diffs[name] = {'a': [json.loads(v) for v in va], 'b': [json.loads(v) for v in vb]}
    return diffs


def _counts(records: list[dict], name: str) -> dict:
    return dict(sorted(Counter(str(r.get(name, '')) for r in records).items()))


def compare_records(a: list[dict], b: list[dict]) -> dict:
    """Differences between two runs and what they are attributed to."""
    config = _field_diffs(a, b, CONFIG_FIELDS)
    model = _field_diffs(a, b, MODEL_FIELDS)
    host = _field_diffs([r.get('host') or {} for r in a], [r.get('host') or {} for r in b],
                        HOST_FIELDS)
    env = {}
    for name in ('idle_reason', 'salience_summary'):
        ca, cb = _counts(a, name), _counts(b, name)
        if ca != cb:
            env[name] = {'a': ca, 'b': cb}
    sa = {r.get('situation_hash') for r in a}
    sb = {r.get('situation_hash') for r in b}
    if sa != sb:
        env['situation_hash'] = {'only_a': len(sa - sb), 'only_b': len(sb - sa),
                                 'shared': len(sa & sb)}
    env.update({f'host.{k}': v for k, v in host.items()})

    outcomes = {name: {'a': _counts(a, name), 'b': _counts(b, name)}
                for name in ('decision_outcome', 'suppression_reason', 'storage_reason')}
    outcomes['cycles'] = {'a': len(a), 'b': len(b)}
    outcomes_differ = any(v['a'] != v['b'] for v in outcomes.values())

    # Same situation in both runs but a different outcome: the model sampled differently.
    by_situation: dict = {}
    for r in a:
        by_situation.setdefault(r.get('situation_hash'), set()).add(_outcome_key(r))
    same_input_diff_output = sum(
        1 for r in b if r.get('situation_hash') in by_situation
        and _outcome_key(r) not in by_situation[r.get('situation_hash')])

    attribution = []
    if config:
        attribution.append('config')
    if model:
        attribution.append('model')
    if env:
        attribution.append('environment')
    if outcomes_differ and not attribution:
        attribution.append('model_stochasticity')
    elif same_input_diff_output and not config and not model:
        attribution.append('model_stochasticity')
    return {'attribution': attribution, 'config': config, 'model': model,
            'environment': env, 'outcomes': outcomes, 'outcomes_differ': outcomes_differ,
            'same_situation_different_outcome': same_input_diff_output}


def _outcome_key(r: dict) -> str:
    return json.dumps([r.get(k) for k in OUTCOME_FIELDS[:4]])


def compare(run_a_path: str, run_b_path: str) -> dict:
    """Compare two provenance files (see compare_records)."""
    report = compare_records(read_records(run_a_path), read_records(run_b_path))
    report['runs'] = {'a': str(run_a_path), 'b': str(run_b_path)}
    return report


def format_report(report: dict) -> str:
    """A short human reading of a compare() report."""
    lines = [f"attribution: {', '.join(report['attribution']) or 'no difference'}"]
    for part in ('config', 'model', 'environment'):
        for name, diff in report[part].items():
            lines.append(f'  {part}.{name}: {json.dumps(diff, sort_keys=True)[:300]}')
    oc = report['outcomes']
    lines.append(f"cycles: a={oc['cycles']['a']} b={oc['cycles']['b']}")
    for name in ('decision_outcome', 'suppression_reason', 'storage_reason'):
        lines.append(f"{name}: a={oc[name]['a']} b={oc[name]['b']}")
    lines.append('same situation, different outcome: '
                 f"{report['same_situation_different_outcome']}")
    return '\n'.join(lines)
