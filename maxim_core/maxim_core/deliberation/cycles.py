"""Multi-cycle deliberation: the PFC's inner monologue (seed 000).

Each cycle enriches the percept (cycle 1) or the previous thought (cycle 2+) from memory,
asks the model for `{"reasoning", "ready_to_act", "action"}` under a schema generated from the
tools active at that moment (so it can only name a tool that exists and is in scope), and
either stops (ready to act, converged with the previous thought, cycle cap) or feeds the
reasoning back. The transcript "[Cycle n] You thought / Your experience responded" keeps
within min(2000, 0.3 x available) tokens, oldest entries dropped first.

Every failure ends in a named outcome after a bounded retry budget: timeout, model_error,
unparsable, cancelled (and gated, for the ThoughtGate). Thoughts go to `on_thought` as they
form; their fields map onto maxim_interfaces/msg/Thought.msg.
"""

from dataclasses import dataclass, field
import json
import threading
import time
from typing import Any, Callable, Mapping, Sequence
import uuid

import jsonschema

from maxim_core.deliberation.choice import (FREE_TEXT_PARAMS, Grounding, is_template,
                                            THOUGHT_GRAMMAR, why_chosen)
from maxim_core.deliberation.chooser import Chooser
from maxim_core.deliberation.energy import EnergyBudget
from maxim_core.deliberation.enrichment import BioEnrichmentPipeline, Enrichment
from maxim_core.deliberation.salience import jaccard, thought_salience, THOUGHT, WorkingMemorySet
from maxim_core.llm.backend import (BAD_REQUEST, Backend, CANCELLED, LLMError, STOP_CANCELLED,
                                    TIMEOUT)
from maxim_core.prompt.builder import BuiltPrompt, PromptBudgetError, PromptBuilder
from maxim_core.prompt.diary import Diary, OPENINGS, own_words, restated_against, strip_reason
from maxim_core.prompt.tools import as_tool_spec, normalize_schema, ToolSpecError

# Thought.msg KIND_* and STATUS_*.
KIND_DELIBERATION = 0
KIND_IDLE = 1
KIND_STATUS = 2
KIND_FORMING = 3        # the thought as soon as it is written, before the decision
STATUS_OK = 0
STATUS_TIMEOUT = 1
STATUS_MODEL_ERROR = 2
STATUS_UNPARSABLE = 3
STATUS_CANCELLED = 4
STATUS_GATED = 5

# Deliberation outcomes (the agent loop's Decision.status) and Deliberate.action codes.
READY = 'ready'
CONVERGED = 'converged'
CYCLE_CAP = 'cycle_cap'
GATED = 'gated'
OUT_TIMEOUT = 'timeout'
OUT_MODEL_ERROR = 'model_error'
OUT_UNPARSABLE = 'unparsable'
OUT_CANCELLED = 'cancelled'
RESULT_CODES = {'acted': 0, READY: 1, CONVERGED: 2, CYCLE_CAP: 3, GATED: 4, OUT_TIMEOUT: 5,
                OUT_MODEL_ERROR: 6, OUT_UNPARSABLE: 7, OUT_CANCELLED: 8}
_STATUS_OF = {OUT_TIMEOUT: STATUS_TIMEOUT, OUT_MODEL_ERROR: STATUS_MODEL_ERROR,
              OUT_UNPARSABLE: STATUS_UNPARSABLE, OUT_CANCELLED: STATUS_CANCELLED,
              GATED: STATUS_GATED}
STATUS_NAMES = {STATUS_OK: 'OK', STATUS_TIMEOUT: 'TIMEOUT', STATUS_MODEL_ERROR: 'MODEL_ERROR',
                STATUS_UNPARSABLE: 'UNPARSABLE', STATUS_CANCELLED: 'CANCELLED',
                STATUS_GATED: 'GATED'}


@dataclass
class Thought:
    """One thought as it forms (Thought.msg)."""

    deliberation_id: str
    cycle: int
    max_cycles: int
    text: str = ''
    kind: int = KIND_DELIBERATION
    status: int = STATUS_OK
    status_msg: str = ''
    salience: float = 0.0
    enriched_by: list[str] = field(default_factory=list)
    experience: str = ''
    skipped: dict[str, str] = field(default_factory=dict)   # provider -> why (not in msg)
    ready_to_act: bool = False
    converged: bool = False
    jaccard_previous: float = 0.0
    action: dict | None = None
    enrichment_s: float = 0.0
    llm_s: float = 0.0
    cycle_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 0
    choice: list = field(default_factory=list)    # candidates weighed, best first
    why: str = ''               # why the choice won, in words (choice.why_chosen)

    @property
    def action_json(self) -> str:
        return json.dumps(self.action, sort_keys=True) if self.action else ''

    @property
    def choice_json(self) -> str:
        return json.dumps(self.choice, sort_keys=True) if self.choice else ''


@dataclass
class TranscriptEntry:
    """One transcript entry (TranscriptEntry.msg)."""

    cycle: int
    thought: str
    experience: str = ''
    tokens: int = 0

    def render(self) -> str:
        text = f'[Cycle {self.cycle}] You thought: {self.thought}'
        if self.experience:
            text += f'\nYour experience responded:\n{self.experience}'
        return text


@dataclass
class DeliberationResult:
    """How a deliberation ended (Deliberate.action result)."""

    status: str                 # READY, CONVERGED, CYCLE_CAP, GATED or a failure outcome
    deliberation_id: str
    status_msg: str = ''
    cycles: int = 0
    reasoning: str = ''
    action: dict | None = None
    thoughts: list[Thought] = field(default_factory=list)
    transcript: list[TranscriptEntry] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    inference_s: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status in (OUT_TIMEOUT, OUT_MODEL_ERROR, OUT_UNPARSABLE, OUT_CANCELLED)

    @property
    def code(self) -> int:
        return RESULT_CODES[self.status]

    @property
    def action_json(self) -> str:
        return json.dumps(self.action, sort_keys=True) if self.action else ''

    @property
    def confidence(self) -> float:
        """How the deliberation ended, not a probability: ready 1, converged its Jaccard,
        cycle cap 0.5, failures and gated 0."""
        if self.status == READY:
            return 1.0
        if self.status == CONVERGED and self.thoughts:
            return float(self.thoughts[-1].jaccard_previous)
        return 0.5 if self.status == CYCLE_CAP else 0.0


@dataclass(frozen=True)
class DeliberationConfig:
    """Node parameters `deliberation.*`."""

    max_cycles: int = 3
    convergence_threshold: float = 0.8
    max_tokens: int = 192              # per answer
    temperature: float = 0.8
    top_p: float = 0.95
    top_k: int = 40
    repeat_penalty: float = 1.1
    seed: int = -1
    retries: int = 2                   # extra attempts per cycle on timeout/error/unparsable
    llm_timeout_s: float = 60.0        # per call, checked as tokens arrive
    transcript_cap_tokens: int = 2000
    transcript_fraction: float = 0.3
    context_margin_tokens: int = 16    # BOS and joins the builder cannot see
    working_memory_items: int = 3

    def __post_init__(self):
        if self.max_cycles < 1:
            raise ValueError('max_cycles must be >= 1')
        if not 0.0 < self.convergence_threshold <= 1.0:
            raise ValueError('convergence_threshold must be within (0, 1]')
        if self.max_tokens < 16 or self.retries < 0 or self.llm_timeout_s <= 0:
            raise ValueError('need max_tokens >= 16, retries >= 0, llm_timeout_s > 0')
        if not 0.0 < self.transcript_fraction <= 1.0 or self.transcript_cap_tokens < 0:
            raise ValueError('transcript_fraction within (0, 1], transcript_cap_tokens >= 0')


def tool_arg_schemas(tools: Sequence[Any]) -> dict[str, dict]:
    """name -> closed JSON-schema of the arguments, for the tools given (the active set)."""
    out: dict[str, dict] = {}
    for tool in tools:
        spec = as_tool_spec(tool)
        if spec.name in out:
            raise ToolSpecError(f'duplicate active tool {spec.name!r}')
        out[spec.name] = normalize_schema(spec.input_schema, strict=True)
    return out


def decision_schema(arg_schemas: Mapping[str, dict]) -> dict:
    """The answer schema: `action` is null or one active tool with its own arguments."""
    actions: list[dict] = [{'type': 'null'}]
    for name, args in arg_schemas.items():
        actions.append({'type': 'object',
                        'properties': {'tool': {'const': name}, 'args': args},
                        'required': ['tool', 'args'], 'additionalProperties': False})
    return {'type': 'object',
            'properties': {'reasoning': {'type': 'string'},
                           'ready_to_act': {'type': 'boolean'},
                           'action': {'anyOf': actions}},
            'required': ['reasoning', 'ready_to_act', 'action'],
            'additionalProperties': False}


def _clean_strings(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (JSON may spell one, '\\ud800') made
    U+FFFD: such a string cannot be encoded as UTF-8, so no message could carry it. Walks
    without recursion (the value may nest as deep as the JSON parser allows)."""
    def clean(s: str) -> str:
        try:
            s.encode('utf-8')
        except UnicodeEncodeError:
            return s.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')
        return s

    if isinstance(value, str):
        return clean(value)
    root = [value]
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, item in list(items):
            if isinstance(item, str):
                node[key] = clean(item)
            elif isinstance(item, (dict, list)):
                stack.append(item)
            if isinstance(node, dict) and isinstance(key, str) and clean(key) != key:
                node[clean(key)] = node.pop(key)
    return root[0]


def parse_answer(text: str, schema: dict, active: Sequence[str],
                 lookup: Callable[[str], str | None] | None = None) -> dict:
    """The answer as a dict, or ValueError saying why it does not fit the schema.

    No input makes it raise anything else: JSON nested past the parser's depth, an integer
    too long to convert, a non-string are ValueErrors like any unparsable answer, and lone
    surrogates in the answer's strings come back as U+FFFD.

    With `lookup` (a name -> the registered tool it means, or None), an action naming an
    active tool by another name (an alias, other case) is checked as that tool, and one naming
    no tool at all is checked without its action; both keep the name the model wrote, so the
    agent loop resolves it, counts the miss and tells the model which tools exist. A name
    that means a registered tool outside the active set is still refused.
    """
    if not isinstance(text, str):
        raise ValueError(f'not text but {type(text).__name__}')
    try:
        answer = _clean_strings(json.loads(text))
    except json.JSONDecodeError as exc:
        raise ValueError(f'not JSON ({exc.msg} at {exc.pos}): {text[:80]!r}') from exc
    except RecursionError:
        raise ValueError(f'JSON nested too deep: {text[:80]!r}') from None
    except ValueError as exc:     # e.g. an integer past the 4300-digit conversion limit
        raise ValueError(f'not JSON ({str(exc)[:80]}): {text[:80]!r}') from None
    checked = answer
    action = answer.get('action') if isinstance(answer, dict) else None
    named = action.get('tool') if isinstance(action, dict) else None
    if lookup is not None and isinstance(named, str) and named not in active:
        meant = lookup(named)
        if meant is None and isinstance(action.get('args'), dict):
            checked = dict(answer, action=None)
        elif meant in active:
            checked = dict(answer, action=dict(action, tool=meant))
    try:
        jsonschema.validate(checked, schema)
    except jsonschema.ValidationError as exc:
        raise ValueError(f'does not fit the schema: {exc.message[:160]}') from exc
    except RecursionError:
        raise ValueError('does not fit the schema: nested too deep to check') from None
    action = checked['action']
    if action is not None and action['tool'] not in active:
        raise ValueError(f'names inactive tool {action["tool"]!r}')
    return answer


def fit_transcript(entries: Sequence[TranscriptEntry], budget: int,
                   count_tokens: Callable[[str], int]) -> tuple[list[TranscriptEntry], int]:
    """Keep the newest entries within `budget` tokens, oldest dropped first.

    The newest entry is kept even alone over budget, shortened (experience first, then the
    thought, by words) so the model always sees where its last thought went.
    Returns (kept, dropped count).
    """
    kept: list[TranscriptEntry] = []
    total = 0
    for entry in reversed(entries):
        entry.tokens = int(count_tokens(entry.render()))
        if total + entry.tokens > budget:
            if not kept and budget > 0:
                kept.append(_shorten(entry, budget, count_tokens))
            break
        kept.append(entry)
        total += entry.tokens
    kept.reverse()
    return kept, len(entries) - len(kept)


def _longest(n: int, fits: Callable[[int], bool]) -> int:
    """The largest k in 0..n with fits(k) (fits is monotone: true up to some k)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _shorten(entry: TranscriptEntry, budget: int,
             count_tokens: Callable[[str], int]) -> TranscriptEntry:
    t_words, e_words = entry.thought.split(' '), entry.experience.split(' ')

    def make(nt: int, ne: int) -> TranscriptEntry:
        thought = ' '.join(t_words[:nt]) + (' ...' if nt < len(t_words) else '')
        experience = (' '.join(e_words[:ne]) + (' ...' if ne < len(e_words) else '')
                      if ne else '')
        return TranscriptEntry(entry.cycle, thought, experience)

    def fits(nt: int, ne: int) -> bool:
        return count_tokens(make(nt, ne).render()) <= budget

    if fits(len(t_words), 0):
        out = make(len(t_words), _longest(len(e_words), lambda k: fits(len(t_words), k)))
    else:
        out = make(_longest(len(t_words), lambda k: fits(k, 0)), 0)
    out.tokens = int(count_tokens(out.render()))
    return out


class _CannotScore(Exception):
    """The backend refused to score: this deliberator decides by generating instead."""


class _Failure(Exception):
    def __init__(self, outcome: str, message: str):
        super().__init__(message)
        self.outcome = outcome
        self.message = message


class Deliberator:
    """Runs deliberations on a Backend.

    `grammar_for(arg_schemas) -> str` (optional; e.g. maxim_core.llm.grammar
    .deliberation_grammar) gives a lean GBNF for the active tools; without it the answer
    schema goes to the backend as `json_schema`. Answers are validated against the schema
    either way. `lookup` (optional; e.g. ToolRegistry.lookup) lets an answer name a tool by
    an alias, or name no tool at all, for the agent loop to resolve or report (parse_answer).
    """

    def __init__(self, backend: Backend, builder: PromptBuilder | None = None,
                 enrichment: BioEnrichmentPipeline | None = None,
                 config: DeliberationConfig = DeliberationConfig(),
                 grammar_for: Callable[[dict], str] | None = None,
                 energy: EnergyBudget | None = None,
                 working_memory: WorkingMemorySet | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 lookup: Callable[[str], str | None] | None = None,
                 chooser: Chooser | None = None, name: str = 'Maxim'):
        self.backend = backend
        self.lookup = lookup
        # With a chooser, a cycle that gets a grounding decides by choosing among grounded
        # candidates (deliberation.choice) instead of asking the model for a JSON answer.
        self.chooser = chooser
        self.fallback_reason = ''
        self.name = name
        self.count_tokens = lambda text: len(backend.tokenize(text))
        self.builder = builder or PromptBuilder(self.count_tokens)
        self.enrichment = enrichment
        self.config = config
        self.grammar_for = grammar_for
        self.energy = energy or EnergyBudget(clock=clock)
        self.wm = working_memory or WorkingMemorySet(clock=clock)
        self.clock = clock
        self._cancel = threading.Event()
        self._history_total = 0
        self._openings: list[str] = []   # how the thoughts kept began, latest last

    # -- budgets -----------------------------------------------------------------------------
    @property
    def available_tokens(self) -> int:
        """Prompt tokens the context leaves after the answer and a margin."""
        c = self.config
        return int(self.backend.n_ctx) - c.max_tokens - c.context_margin_tokens

    @property
    def transcript_budget(self) -> int:
        c = self.config
        return int(min(c.transcript_cap_tokens, c.transcript_fraction * self.available_tokens))

    def cancel(self) -> None:
        """Cancel the running deliberation (it ends with outcome 'cancelled')."""
        self._cancel.set()

    # -- outcomes without thinking -----------------------------------------------------------
    def gated(self, reason: str, on_thought: Callable[[Thought], None] | None = None,
              deliberation_id: str | None = None) -> DeliberationResult:
        """The ThoughtGate said no: a GATED status thought, and the gated outcome."""
        did = deliberation_id or uuid.uuid4().hex[:12]
        thought = Thought(did, 0, 0, kind=KIND_STATUS, status=STATUS_GATED, status_msg=reason,
                          text=f'(not thinking: {reason})')
        if on_thought is not None:
            on_thought(thought)
        return DeliberationResult(GATED, did, reason, thoughts=[thought])

    # -- deliberation ------------------------------------------------------------------------
    def deliberate(self, percept: str, tools: Sequence[Any] | Callable[[], Sequence[Any]],
                   *, goal: str = '', context: str = '', max_cycles: int = 0,
                   on_thought: Callable[[Thought], None] | None = None,
                   cancel: Callable[[], bool] | None = None,
                   deliberation_id: str | None = None,
                   situation: Mapping[str, Any] | None = None,
                   grounding: Callable[[], Grounding] | None = None,
                   history: Sequence[Any] = (), history_total: int = 0,
                   on_forming: Callable[[Thought], None] | None = None
                   ) -> DeliberationResult:
        """Deliberate on `percept` with `tools` active (a callable is asked every cycle).

        `situation` (objects, people, goal, tools, context_key) goes with every enrichment
        query, so memory answers about what is in view and not only about the words.

        With a chooser and `grounding` (what arguments may be made of, asked each cycle), a
        cycle writes a thought in the diary (`history`: the robot's earlier DiaryEntries, of
        `history_total` written so far) and
        chooses among grounded candidates; choosing to wait ends the deliberation.
        `on_forming` gets each cycle's thought (KIND_FORMING) as soon as it is written,
        before the decision is weighed: what a person sees first (the weighing and the
        reply take as long again).

        One deliberation at a time per Deliberator (the node runs them on one worker).
        """
        if not isinstance(percept, str) or not percept.strip():
            raise ValueError('percept must be a non-empty text')
        if max_cycles < 0:
            raise ValueError(f'max_cycles must be >= 0 (0 = the default), got {max_cycles}')
        cfg = self.config
        cap = max_cycles or cfg.max_cycles
        did = deliberation_id or uuid.uuid4().hex[:12]
        self._cancel.clear()
        self._history_total = history_total      # steps ever told (Diary.shown_history)

        def cancelled() -> bool:
            return self._cancel.is_set() or (cancel is not None and bool(cancel()))

        res = DeliberationResult(CYCLE_CAP, did)
        entries: list[TranscriptEntry] = []
        previous: str | None = None
        enrich_text = percept
        for cycle in range(1, cap + 1):
            t0 = self.clock()
            try:
                if cancelled():
                    raise _Failure(OUT_CANCELLED, f'cancelled before cycle {cycle}')
                enr = (self.enrichment.enrich(enrich_text, **dict(situation or {}))
                       if self.enrichment else Enrichment())
                t_enriched = self.clock()
                if entries:
                    entries[-1].experience = enr.text
                active = list(tools() if callable(tools) else tools)
                choice: list = []
                if self.chooser is not None and grounding is not None:
                    def forming(text: str, llm_s: float, enr=enr, cycle=cycle, t0=t0,
                                t_enriched=t_enriched) -> None:
                        if on_forming is not None:
                            on_forming(Thought(
                                did, cycle, cap, text, kind=KIND_FORMING,
                                enriched_by=list(enr.sources), experience=enr.text,
                                enrichment_s=t_enriched - t0, llm_s=llm_s,
                                cycle_s=self.clock() - t0))
                    try:
                        answer, completion, attempts, llm_s, choice = self._choose(
                            percept, goal, active, entries, enr, grounding, history,
                            cancelled, res, forming)
                    except _CannotScore as exc:
                        # The backend cannot score (a scripted one without a scorer, an llm
                        # node whose backend cannot): decide by generating from now on.
                        self.chooser = None
                        self.fallback_reason = str(exc)
                if self.chooser is None or grounding is None:
                    arg_schemas = tool_arg_schemas(active)
                    schema = decision_schema(arg_schemas)
                    prompt = self._prompt(percept, goal, context, active, entries, enr, did)
                    answer, completion, attempts, llm_s = self._ask(prompt, schema,
                                                                    arg_schemas, cancelled, res)
            except _Failure as failure:
                return self._fail(res, failure, cycle, cap, t0, on_thought, entries)
            text = answer['reasoning'].strip()
            j = jaccard(text, previous) if previous is not None else 0.0
            thought = Thought(
                did, cycle, cap, text,
                salience=thought_salience(enr.sections, enr.memories,
                                          j if previous is not None else None),
                enriched_by=list(enr.sources), experience=enr.text, skipped=dict(enr.skipped),
                ready_to_act=bool(answer['ready_to_act']),
                converged=previous is not None and j >= cfg.convergence_threshold,
                jaccard_previous=round(j, 4), action=answer['action'],
                enrichment_s=t_enriched - t0, llm_s=llm_s, cycle_s=self.clock() - t0,
                prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.completion_tokens, attempts=attempts,
                choice=choice, why=str(answer.get('why') or ''))
            res.thoughts.append(thought)
            res.cycles = cycle
            res.reasoning, res.action = text, thought.action
            entries.append(TranscriptEntry(cycle, text))
            self.wm.add(THOUGHT, text, thought.salience, deliberation_id=did, cycle=cycle)
            if on_thought is not None:
                on_thought(thought)
            if thought.ready_to_act:
                res.status, res.status_msg = READY, f'ready to act at cycle {cycle}'
                break
            if choice and not thought.ready_to_act:
                res.status, res.status_msg = CONVERGED, f'chose to wait at cycle {cycle}'
                break
            if thought.converged:
                res.status = CONVERGED
                res.status_msg = f'converged at cycle {cycle} (Jaccard {j:.2f})'
                break
            previous, enrich_text = text, text
        else:
            res.status_msg = f'cycle cap {cap} reached'
        res.transcript, _ = fit_transcript(entries, self.transcript_budget, self.count_tokens)
        return res

    def _prompt(self, percept, goal, context, active, entries, enr, did) -> BuiltPrompt:
        kept, dropped = fit_transcript(entries, self.transcript_budget, self.count_tokens)
        wm_text = ''
        if dropped:
            kept_cycles = {e.cycle for e in kept}
            items = [i for i in self.wm.top_by_salience(len(self.wm), THOUGHT)
                     if i.meta.get('deliberation_id') == did
                     and i.meta.get('cycle') not in kept_cycles]
            wm_text = '\n'.join(f'- (cycle {i.meta["cycle"]}, salience {i.salience:.2f}) '
                                f'{i.content}'
                                for i in items[:self.config.working_memory_items])
        sections = self.builder.deliberation_sections(
            percept, goal=goal, context_pool=context, working_memory=wm_text,
            transcript='\n\n'.join(e.render() for e in kept),
            enrichment='' if entries else enr.text)
        try:
            return self.builder.build(sections, self.available_tokens, tools=active)
        except PromptBudgetError as exc:
            raise _Failure(OUT_MODEL_ERROR, f'prompt over budget: {exc}') from exc

    def _ask(self, prompt: BuiltPrompt, schema: dict, arg_schemas: dict, cancelled, res):
        """One cycle's model call with its retry budget -> (answer, completion, attempts, s)."""
        cfg = self.config
        grammar = None
        if self.grammar_for is not None:
            try:
                grammar = self.grammar_for(arg_schemas)
            except ValueError:
                grammar = None   # a schema the lean grammar cannot express: generic path
        last: _Failure | None = None
        llm_s = 0.0
        for attempt in range(1 + cfg.retries):
            if cancelled():
                raise _Failure(OUT_CANCELLED, 'cancelled while thinking')
            t0 = self.clock()
            timed_out = []

            def on_token(piece: str) -> bool:
                if cancelled():
                    return False
                if self.clock() - t0 > cfg.llm_timeout_s:
                    timed_out.append(True)
                    return False
                return True

            seed = cfg.seed + attempt if cfg.seed >= 0 else -1
            try:
                completion = self.backend.complete(
                    prompt.text, max_tokens=cfg.max_tokens, temperature=cfg.temperature,
                    top_p=cfg.top_p, top_k=cfg.top_k, repeat_penalty=cfg.repeat_penalty,
                    seed=seed, json_schema=None if grammar else schema, grammar=grammar,
                    on_token=on_token)
            except LLMError as exc:
                spent = self.clock() - t0
                llm_s += spent
                self.energy.record(0, 0, spent)
                res.inference_s += spent
                if exc.code == CANCELLED:
                    raise _Failure(OUT_CANCELLED, exc.message) from exc
                if exc.code == BAD_REQUEST:      # the same request fails the same way again
                    raise _Failure(OUT_MODEL_ERROR, str(exc)) from exc
                outcome = OUT_TIMEOUT if exc.code == TIMEOUT else OUT_MODEL_ERROR
                last = _Failure(outcome, f'{exc} (attempt {attempt + 1}/{1 + cfg.retries})')
                continue
            spent = self.clock() - t0
            llm_s += spent
            self.energy.record(completion.prompt_tokens, completion.completion_tokens, spent)
            res.prompt_tokens += completion.prompt_tokens
            res.completion_tokens += completion.completion_tokens
            res.inference_s += spent
            if timed_out or completion.stop_reason == TIMEOUT:
                last = _Failure(OUT_TIMEOUT, f'no answer within {cfg.llm_timeout_s:.1f} s '
                                f'(attempt {attempt + 1}/{1 + cfg.retries})')
                continue
            if completion.stop_reason == STOP_CANCELLED:
                raise _Failure(OUT_CANCELLED, 'cancelled while thinking')
            try:
                answer = parse_answer(completion.text, schema, list(arg_schemas),
                                      self.lookup)
            except ValueError as exc:
                last = _Failure(OUT_UNPARSABLE, f'answer {exc} (stop: {completion.stop_reason}, '
                                f'attempt {attempt + 1}/{1 + cfg.retries})')
                continue
            return answer, completion, attempt + 1, llm_s
        assert last is not None
        raise last

    def _choose(self, percept, goal, active, entries, enr, grounding, history, cancelled, res,
                forming: Callable[[str, float], None] = lambda text, llm_s: None):
        """One cycle by choosing: a thought written in the diary, grounded candidates scored
        by the model and weighed by value, free text written where the choice needs it.
        Returns (answer, completion, attempts, llm seconds, the candidates as dicts)."""
        cfg, chooser = self.config, self.chooser
        g = grounding()
        recalled, learned = [], []
        for channel, text in enr.answers.items():
            lines = [strip_reason(ln.strip(' -*\t')) for ln in text.splitlines()]
            (learned if channel == 'values' else recalled).extend(ln for ln in lines if ln)
        g.recalled = list(g.recalled) + recalled
        heard = g.heard if g.heard.strip() != percept.strip() else ''    # said once
        diary = Diary(name=self.name, percept=percept, goal=goal, heard=heard,
                      remembered=recalled, learned=learned, history=list(history),
                      history_total=self._history_total,
                      thoughts=[e.thought for e in entries])
        last: _Failure | None = None
        llm_s = 0.0
        for attempt in range(1 + cfg.retries):
            if cancelled():
                raise _Failure(OUT_CANCELLED, 'cancelled while thinking')
            t0 = self.clock()
            seed = cfg.seed + attempt if cfg.seed >= 0 else -1
            try:
                try:
                    cands = chooser.candidates(active, g)
                except LLMError as exc:
                    if exc.code == BAD_REQUEST:
                        raise _CannotScore(exc.message) from exc
                    raise
                thought, done = self._write_thought(diary, g, seed, cancelled)
                if cancelled():
                    raise _Failure(OUT_CANCELLED, 'cancelled while thinking')
                forming(thought, llm_s + self.clock() - t0)
                best, ranked, prompt_tokens = chooser.decide(
                    cands, g, diary.decide_prompt(thought), thought)
                for c in ranked:
                    if c.free_param == 'thought':
                        c.args = {**c.args, 'thought': thought}
                if best is not None and best.free_param and best.free_param != 'thought':
                    said = [str(v) for r in g.recent for k, v in r.args.items()
                            if k in FREE_TEXT_PARAMS and k != 'thought' and v]
                    text = chooser.write(diary, thought, seed, said)
                    if text:
                        best.args = {**best.args, best.free_param: text}
                    else:                # nothing worth saying: the next choice that needs none
                        best = next((c for c in ranked if not c.free_param
                                     or c.free_param == 'thought'), None)
                        best = best if best is not None and best.tool is not None else None
            except LLMError as exc:
                spent = self.clock() - t0
                llm_s += spent
                res.inference_s += spent
                if exc.code == CANCELLED:
                    raise _Failure(OUT_CANCELLED, exc.message) from exc
                if exc.code == BAD_REQUEST:
                    raise _Failure(OUT_MODEL_ERROR, str(exc)) from exc
                outcome = OUT_TIMEOUT if exc.code == TIMEOUT else OUT_MODEL_ERROR
                last = _Failure(outcome, f'{exc} (attempt {attempt + 1}/{1 + cfg.retries})')
                continue
            except ValueError as exc:
                spent = self.clock() - t0
                llm_s += spent
                res.inference_s += spent
                last = _Failure(OUT_UNPARSABLE, f'{exc} (attempt {attempt + 1}/'
                                f'{1 + cfg.retries})')
                continue
            spent = self.clock() - t0
            llm_s += spent
            tokens = int(done.prompt_tokens) + prompt_tokens
            self.energy.record(tokens, int(done.completion_tokens), spent)
            res.prompt_tokens += tokens
            res.completion_tokens += int(done.completion_tokens)
            res.inference_s += spent
            action = {'tool': best.tool, 'args': dict(best.args)} if best is not None else None
            # What was done (or the wait) first: `best` may be a later candidate than the top
            # one when the top one had nothing worth saying.
            first = [best] if best is not None else [c for c in ranked if c.tool is None][:1]
            order = first + [c for c in ranked if all(c is not f for f in first)]
            answer = {'reasoning': thought, 'ready_to_act': action is not None,
                      'action': action, 'why': why_chosen(
                          order, g, chooser.config, chooser.weights.w.get('relevance', 0.0),
                          chooser.weights.w.get('avoid', 0.0))}
            done.prompt_tokens = tokens
            return answer, done, attempt + 1, llm_s, [c.as_dict() for c in ranked[:8]]
        assert last is not None
        raise last

    def _write_thought(self, diary: Diary, g, seed: int, cancelled) -> tuple[str, Any]:
        """The cycle's thought: the model continues the diary's open line "I think:". A
        draft that only says again what the diary says (`restated`: the percept, a memory
        line or one of the robot's earlier thoughts in its own words, the small model's
        habit; a person's words taken up are not counted) or names nothing the robot knows
        is written again, begun with the next of OPENINGS ("I want to", "I wonder what",
        "Should I"; the stance kept longest ago first), within `thought_drafts`. The first
        draft that adds something and names something known is the thought; else the one
        that restates least among those that name something.
        Returns (thought, the completion with every draft's tokens counted)."""
        cfg, ch = self.config, self.chooser.config
        # Measured against the diary and every thought of the steps the robot keeps, also
        # those the diary no longer shows: a thought told again three steps later is still
        # the stream going round ("I want to see a red object", four times in one sim).
        said = [str(getattr(e, 'thought', '')) for e in diary.history] + list(diary.thoughts)
        again_in = restated_against(f'{diary.head()}\n' + '\n'.join(said), own=g.heard)
        # The stance taken longest ago first: taken again, a draft said the last thought
        # again in its words ("I wonder what it is, with the red object" / "... with the
        # moving thing").
        openings = [''] + sorted(OPENINGS, key=lambda o: self._openings.index(o)
                                 if o in self._openings else -1)
        n = min(ch.thought_drafts, len(openings))
        drafts: list[tuple[tuple, str, str]] = []
        prompt_tokens = completion_tokens = 0
        done = None
        for i in range(n):
            opening, last = openings[i], i == n - 1
            text = [opening]
            # What the robot thought from this opening lately is not written again: the
            # model leaves it at its first word (pieces_to_avoid), not after it was written.
            avoid = [t[len(opening):] for t in said
                     if opening and t.startswith(opening) and t[len(opening):].strip()]

            def on_token(piece: str, text=text, last=last, opening=opening) -> bool:
                if cancelled():
                    return False
                text[0] += piece
                # Whole words only, so a replayed run (tokens as words) stops where it did.
                words = text[0].split() if text[0][-1:].isspace() else text[0].split()[:-1]
                return last or len(words) < ch.restate_words or \
                    again_in(' '.join(words), opening) < ch.restate_abort
            done = self.backend.complete(
                diary.think_prompt(opening), max_tokens=ch.thought_max_tokens,
                temperature=ch.temperature, top_p=cfg.top_p, top_k=cfg.top_k,
                repeat_penalty=cfg.repeat_penalty, seed=seed, stop=['\n'],
                grammar=THOUGHT_GRAMMAR, on_token=on_token, **({'avoid': avoid} if avoid else {}))
            prompt_tokens += int(done.prompt_tokens)
            completion_tokens += int(done.completion_tokens)
            if cancelled():
                raise _Failure(OUT_CANCELLED, 'cancelled while thinking')
            if done.stop_reason == STOP_CANCELLED:       # given up: it was restating
                continue
            # An opening taken for a label ("Should I: see the object ...") reads on.
            thought = own_words(f'{opening} {done.text.lstrip(" :;,-") if opening else done.text}')
            if not thought or thought == opening or is_template(thought):
                continue
            named, again = g.names_known(thought), again_in(thought, opening)
            if named and again < ch.restate_limit:
                drafts = [((False, again), thought, opening)]
                break
            drafts.append(((not named, again), thought, opening))
        if not drafts:
            raise ValueError(f'no thought of {n} draft(s) was more than empty, template or '
                             f'restated text (the last: {done.text if done else ""!r})')
        done.prompt_tokens, done.completion_tokens = prompt_tokens, completion_tokens
        _, thought, opening = min(drafts, key=lambda d: d[0])
        if opening:
            self._openings = [o for o in self._openings if o != opening] + [opening]
        return thought, done

    def _fail(self, res: DeliberationResult, failure: _Failure, cycle: int, cap: int,
              t0: float, on_thought, entries) -> DeliberationResult:
        thought = Thought(res.deliberation_id, cycle, cap, kind=KIND_STATUS,
                          status=_STATUS_OF[failure.outcome], status_msg=failure.message,
                          text=f'({STATUS_NAMES[_STATUS_OF[failure.outcome]].lower()}: '
                               f'{failure.message})',
                          cycle_s=self.clock() - t0)
        res.thoughts.append(thought)
        if on_thought is not None:
            on_thought(thought)
        res.status, res.status_msg = failure.outcome, failure.message
        res.action = None          # a failed deliberation never acts on an earlier cycle
        res.transcript, _ = fit_transcript(entries, self.transcript_budget, self.count_tokens)
        return res
