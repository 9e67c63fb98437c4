"""The FearAgent: reviews every non-introspection tool call before it runs (seed 001).

Three layers, first objection wins, every verdict says which layer decided and why:

1. pattern: deterministic rules (fear/patterns.py). A certain danger blocks at once.
   An ambiguous finding goes to layer 2; without it, it is blocked (fail-closed) unless
   `block_ambiguous` is off.
2. llm: an optional review of ambiguous calls through a `Backend`, bounded in time by a
   worker thread and `llm_timeout_s`; a timeout, a model error or an unparsable answer blocks
   (fail-closed: a layer that had to answer could not).
3. nac: the learned prediction `predict(tool, context) -> (value, confidence) | None`; a call
   predicted bad with high confidence (value < 0.1, confidence > 0.85) is blocked. None means
   the NAc is absent, and the reason says the layer was skipped.

Outbound channels (respond, speak, send_message, call_user, git_commit) are also rate and
size limited (`OutboundLimiter`, part of the pattern layer): a mind that leaks slowly, or
pastes a database into one message, is stopped by volume even when no pattern matches.

Introspection tools are read-only and bypass the gate (layer 'bypass').
`ToolPainBridge` feeds each outcome back: NAc observation and escalating pain on failure.
"""

from collections import deque
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
from dataclasses import dataclass, field
import json
import threading
import time
from typing import Any, Callable, Mapping

from maxim_core.fear.patterns import AMBIGUOUS, BLOCK, Finding, scan_call, ScanPolicy
from maxim_core.llm.backend import Backend, LLMError

LAYERS = ('none', 'pattern', 'llm', 'nac', 'bypass', 'fail_closed')
# ReviewAction.srv LAYER_* values for each layer name.
LAYER_CODES = {'none': 0, 'pattern': 1, 'llm': 2, 'nac': 3, 'bypass': 4, 'fail_closed': 5}

Predict = Callable[[str, str], 'tuple[float, float] | None']

# Read-only introspection tools: bypass the gate even when the caller forgets the flag.
INTROSPECTION_TOOLS = frozenset((
    'memory_recall', 'similarity_search', 'predict_outcome', 'causal_links', 'pain_history',
    'temporal_patterns', 'concept_query', 'scene_summary', 'energy_status', 'system_stats'))

_REVIEW_SCHEMA = {
    'type': 'object',
    'properties': {'safe': {'type': 'boolean'},
                   'reason': {'type': 'string', 'maxLength': 200}},
    'required': ['safe', 'reason'], 'additionalProperties': False}


@dataclass(frozen=True)
class ChannelLimit:
    """At most `calls` calls and `window_chars` characters per `window_s`, and `max_chars` per
    call, on one outbound channel."""

    calls: int
    window_s: float
    max_chars: int
    window_chars: int

    def __post_init__(self):
        if self.calls < 1 or self.window_s <= 0 or self.max_chars < 1 or \
                self.window_chars < self.max_chars:
            raise ValueError(f'invalid channel limit {self}')


DEFAULT_OUTBOUND_LIMITS = {
    'send_message': ChannelLimit(10, 600.0, 2000, 8000),
    'call_user': ChannelLimit(3, 3600.0, 1000, 3000),
    'speak': ChannelLimit(60, 60.0, 2000, 20000),
    'respond': ChannelLimit(120, 60.0, 4000, 100_000),
    'git_commit': ChannelLimit(30, 600.0, 4000, 60_000),
}


def _chars(args: Mapping) -> int:
    return sum(len(v) for v in args.values() if isinstance(v, str))


class OutboundLimiter:
    """Sliding-window rate and size limits per outbound channel (thread-safe)."""

    def __init__(self, limits: Mapping[str, ChannelLimit],
                 clock: Callable[[], float] = time.monotonic):
        self.limits = dict(limits)
        self.clock = clock
        self._sent: dict[str, deque] = {name: deque() for name in self.limits}
        self._lock = threading.Lock()

    def check(self, tool: str, args: Mapping) -> str | None:
        """Why this call would exceed its channel's limits, or None."""
        limit = self.limits.get(tool)
        if limit is None:
            return None
        size = _chars(args)
        if size > limit.max_chars:
            return f'{tool}: {size} characters in one call (limit {limit.max_chars})'
        with self._lock:
            sent = self._sent[tool]
            now = self.clock()
            while sent and sent[0][0] <= now - limit.window_s:
                sent.popleft()
            if len(sent) >= limit.calls:
                return (f'{tool}: {len(sent)} calls in the last {limit.window_s:.0f} s '
                        f'(limit {limit.calls})')
            total = sum(n for _, n in sent) + size
            if total > limit.window_chars:
                return (f'{tool}: {total} characters in {limit.window_s:.0f} s (limit '
                        f'{limit.window_chars})')
        return None

    def record(self, tool: str, args: Mapping) -> None:
        if tool in self.limits:
            with self._lock:
                self._sent[tool].append((self.clock(), _chars(args)))


@dataclass(frozen=True)
class Verdict:
    """The gate's answer about one call."""

    allowed: bool
    reason: str
    layer: str = 'none'
    risk: float = 0.0
    category: str = ''
    findings: tuple = ()

    @property
    def layer_code(self) -> int:
        return LAYER_CODES[self.layer]

    def as_dict(self) -> dict:
        """The shape the agent loop's `review` returns (layer as the srv code)."""
        return {'allowed': self.allowed, 'reason': self.reason, 'layer': self.layer_code,
                'layer_name': self.layer, 'risk': self.risk, 'category': self.category}


@dataclass(frozen=True)
class FearConfig:
    mode: str = 'passive'
    sandbox_root: str | None = None
    write_roots: tuple = ()
    llm_review: bool = False
    llm_timeout_s: float = 10.0
    llm_max_tokens: int = 96
    nac_block_value: float = 0.1
    nac_block_confidence: float = 0.85
    block_ambiguous: bool = True      # with no LLM review, an ambiguous call is blocked
    outbound_limits: Mapping[str, ChannelLimit] | None = None   # None: the defaults; {}: off

    def __post_init__(self):
        if self.llm_timeout_s <= 0:
            raise ValueError('llm_timeout_s must be > 0')
        if not 0.0 <= self.nac_block_value <= 1.0 or not 0.0 <= self.nac_block_confidence <= 1:
            raise ValueError('nac_block_value and nac_block_confidence must be within [0, 1]')


class FearAgent:
    """Pattern -> LLM -> NAc review of tool calls."""

    def __init__(self, config: FearConfig = FearConfig(), backend: Backend | None = None,
                 predict: Predict | None = None,
                 arg_kinds: Mapping[str, Mapping[str, str]] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.config = config
        self.backend = backend
        self.predict = predict
        self.arg_kinds = dict(arg_kinds or {})
        self.clock = clock
        self.policy = ScanPolicy(config.sandbox_root, tuple(config.write_roots), config.mode)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix='fear-llm') \
            if backend is not None and config.llm_review else None
        self.reviews = 0
        self.blocked = 0
        limits = DEFAULT_OUTBOUND_LIMITS if config.outbound_limits is None \
            else config.outbound_limits
        self.outbound = OutboundLimiter(limits, clock)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def findings(self, tool: str, args: Mapping) -> list[Finding]:
        """The deterministic layer alone."""
        return scan_call(tool, args, self.policy, self.arg_kinds)

    def review(self, tool: str, args: Any, context: str = '',
               introspection: bool = False, context_key: str | None = None) -> Verdict:
        """The verdict on one call. `context` is the situation text (for the LLM layer);
        `context_key` is the key the NAc learned outcomes under ('' = any context; None =
        the situation text itself is the key)."""
        self.reviews += 1
        key = context if context_key is None else context_key
        verdict = self._review(tool, args, context, introspection, key)
        if not verdict.allowed:
            self.blocked += 1
        elif verdict.layer != 'bypass' and isinstance(args, Mapping):
            self.outbound.record(tool, args)
        return verdict

    def _review(self, tool: str, args: Any, context: str, introspection: bool,
                key: str) -> Verdict:
        if introspection or tool in INTROSPECTION_TOOLS:
            return Verdict(True, 'read-only introspection: not reviewed', 'bypass')
        if not isinstance(tool, str) or not tool:
            return Verdict(False, 'no tool name given', 'pattern', 1.0, 'invalid')
        if isinstance(args, str):
            try:
                args = json.loads(args or '{}')
            except (ValueError, RecursionError):   # JSONDecodeError, int or depth limits
                return Verdict(False, 'arguments are not valid JSON', 'pattern', 1.0, 'invalid')
        if not isinstance(args, Mapping):
            return Verdict(False, 'arguments must be an object', 'pattern', 1.0, 'invalid')
        found = self.findings(tool, args)
        blocking = [f for f in found if f.severity == BLOCK]
        if blocking:
            worst = max(blocking, key=lambda f: f.risk)
            more = f' (+{len(blocking) - 1} more)' if len(blocking) > 1 else ''
            return Verdict(False, f'{worst.category}: {worst.detail}{more}', 'pattern',
                           worst.risk, worst.category, tuple(found))
        over = self.outbound.check(tool, args)
        if over is not None:
            return Verdict(False, f'exfiltration: outbound limit: {over}', 'pattern', 0.8,
                           'exfiltration', tuple(found))
        notes = []
        ambiguous = [f for f in found if f.severity == AMBIGUOUS]
        risk = max((f.risk for f in ambiguous), default=0.0)
        if ambiguous:
            verdict = self._ambiguous(tool, args, context, ambiguous)
            if verdict is not None:
                return verdict
            notes.append('LLM judged the ambiguous call safe')
        nac = self._nac(tool, key)
        if isinstance(nac, Verdict):
            return nac
        notes.append(nac)
        return Verdict(True, '; '.join(['no known danger'] + notes), 'none', risk,
                       ambiguous[0].category if ambiguous else '', tuple(found))

    def _ambiguous(self, tool: str, args: Mapping, context: str,
                   ambiguous: list[Finding]) -> Verdict | None:
        first = ambiguous[0]
        summary = '; '.join(f'{f.category}: {f.detail}' for f in ambiguous[:3])
        if self._pool is None:
            if self.config.block_ambiguous:
                return Verdict(False, f'ambiguous ({summary}) and no LLM review: blocked to be '
                               'safe', 'pattern', first.risk, first.category, tuple(ambiguous))
            return None
        prompt = (
            'You are the safety reviewer of a robot. Decide whether this tool call is safe '
            'to run. Answer with JSON {"safe": true|false, "reason": "..."}.\n'
            f'Mode: {self.config.mode}\nTool: {tool}\n'
            f'Arguments: {json.dumps(args, sort_keys=True)[:1500]}\n'
            f'Concerns: {summary}\nSituation: {context[:1000]}\nAnswer: ')
        future = self._pool.submit(self.backend.complete, prompt,
                                   max_tokens=self.config.llm_max_tokens, temperature=0.0,
                                   json_schema=_REVIEW_SCHEMA)
        try:
            completion = future.result(timeout=self.config.llm_timeout_s)
        except FutureTimeout:
            future.cancel()
            return Verdict(False, f'LLM review did not answer in {self.config.llm_timeout_s} s:'
                           ' blocked to be safe', 'fail_closed', 1.0, first.category,
                           tuple(ambiguous))
        except LLMError as exc:
            return Verdict(False, f'LLM review failed ({exc.code}): blocked to be safe',
                           'fail_closed', 1.0, first.category, tuple(ambiguous))
        try:
            answer = json.loads(completion.text)
            safe, why = answer['safe'], str(answer.get('reason', ''))[:200]
            if not isinstance(safe, bool):
                raise TypeError('safe is not a boolean')
        except (ValueError, RecursionError, KeyError, TypeError) as exc:
            return Verdict(False, f'LLM review answer unusable ({exc}): blocked to be safe',
                           'fail_closed', 1.0, first.category, tuple(ambiguous))
        if not safe:
            return Verdict(False, f'LLM review: {why or "unsafe"} ({summary})', 'llm',
                           max(first.risk, 0.7), first.category, tuple(ambiguous))
        return None

    def _nac(self, tool: str, key: str) -> 'Verdict | str':
        if self.predict is None:
            return 'NAc layer skipped (no predictor)'
        prediction = self.predict(tool, key)
        if prediction is None:
            return 'NAc layer skipped (no prediction available)'
        value, confidence = float(prediction[0]), float(prediction[1])
        if value < self.config.nac_block_value and \
                confidence > self.config.nac_block_confidence:
            return Verdict(False, f'NAc predicts a bad outcome for {tool} in {key!r} (value '
                           f'{value:.2f} < {self.config.nac_block_value}, confidence '
                           f'{confidence:.2f} > {self.config.nac_block_confidence})', 'nac',
                           round(1.0 - value, 3), 'learned_aversion')
        return f'NAc value {value:.2f} (confidence {confidence:.2f})'


# PainSignal.msg TYPE_* values.
PAIN_TOOL_FAILURE = 0
PAIN_TIMEOUT = 1
_TIMEOUT_CODE = 6        # ToolResult.ERROR_TIMEOUT
_BLOCKED_CODE = 4        # ToolResult.ERROR_BLOCKED


@dataclass
class ToolPainBridge:
    """Records each tool outcome to the NAc and, on failure, as escalating pain.

    observe(record) gets {tool, context, outcome, success, valence, error_code}; pain(signal)
    gets a PainSignal-shaped dict. Blocked calls did not run: they teach nothing about the
    tool and cause no pain.
    """

    observe: Callable[[dict], None] | None = None
    pain: Callable[[dict], None] | None = None
    base_intensity: float = 0.3
    step: float = 0.15
    repeats: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, tool: str, context: str, success: bool, error_code: int = 0,
               error_msg: str = '') -> dict | None:
        """Feed one outcome; returns the pain signal sent (or None)."""
        if error_code == _BLOCKED_CODE:
            return None
        outcome = 'success' if success else f'failure:{error_code}'
        if self.observe is not None:
            self.observe({'tool': tool, 'context': context, 'outcome': outcome,
                          'success': bool(success), 'valence': 1.0 if success else -1.0,
                          'error_code': int(error_code)})
        key = (tool, context)
        with self._lock:
            if success:
                self.repeats.pop(key, None)
                return None
            count = self.repeats.get(key, 0) + 1
            self.repeats[key] = count
        kind = PAIN_TIMEOUT if error_code == _TIMEOUT_CODE else PAIN_TOOL_FAILURE
        signal = {'pain_type': kind, 'type_name': 'timeout' if kind else 'tool_failure',
                  'intensity': min(1.0, self.base_intensity + self.step * (count - 1)),
                  'source': tool, 'context': context,
                  'description': f'{tool} failed: {error_msg}'[:300],
                  'repeat_count': count}
        if self.pain is not None:
            self.pain(signal)
        return signal
