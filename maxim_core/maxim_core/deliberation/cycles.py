"""Multi-cycle deliberation: the PFC's inner monologue (seed 000).

Each cycle enriches the percept (cycle 1) or the previous thought (cycle 2+) from memory,
asks the model for `{"reasoning", "ready_to_act", "action"}` under a schema generated from the
tools active at that moment (so it can only name a tool that exists and is in scope), and
either stops (ready to act, converged with the previous thought, cycle cap) or feeds the
reasoning back. The transcript "[Cycle n] You thought / Your experience responded" keeps
within min(2000, 0.3 x available) tokens, oldest entries dropped first.

Every failure ends in a named outcome after a bounded retry budget: timeout, model_error,
unparsable, cancelled (and gated, for the ThoughtGate). Thoughts go to `on_thought` as they
form; their fields map onto maxim_interfaces/msg/Thought.msg (thoughts.py). With a chooser, a
cycle decides by choosing instead (choosing.py); the JSON answer's schema and parse are in
answer.py.
"""

from dataclasses import dataclass
import threading
import time
from typing import Any, Callable, Mapping, Sequence
import uuid

from maxim_core.deliberation.answer import decision_schema, parse_answer, tool_arg_schemas
from maxim_core.deliberation.chooser import Chooser
from maxim_core.deliberation.choosing import ChoosingCycle
from maxim_core.deliberation.energy import EnergyBudget
from maxim_core.deliberation.enrichment import BioEnrichmentPipeline, Enrichment
from maxim_core.deliberation.grounding import Grounding
from maxim_core.deliberation.salience import jaccard, thought_salience, THOUGHT, WorkingMemorySet
from maxim_core.deliberation.thoughts import (_CannotScore, _Failure, _STATUS_OF, CONVERGED,
                                              CYCLE_CAP, DeliberationResult, fit_transcript,
                                              GATED, KIND_FORMING, KIND_STATUS,
                                              OUT_CANCELLED, OUT_MODEL_ERROR, OUT_TIMEOUT,
                                              OUT_UNPARSABLE, READY, STATUS_GATED,
                                              STATUS_NAMES, Thought, TranscriptEntry)
from maxim_core.llm.backend import (BAD_REQUEST, Backend, CANCELLED, LLMError, STOP_CANCELLED,
                                    TIMEOUT)
from maxim_core.prompt.builder import BuiltPrompt, PromptBudgetError, PromptBuilder


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


class Deliberator(ChoosingCycle):
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
        cap = max_cycles or self.config.max_cycles
        did = deliberation_id or uuid.uuid4().hex[:12]
        self._cancel.clear()
        self._history_total = history_total      # steps ever told (Diary.shown_history)

        def cancelled() -> bool:
            return self._cancel.is_set() or (cancel is not None and bool(cancel()))

        res = DeliberationResult(CYCLE_CAP, did)
        entries: list[TranscriptEntry] = []
        previous: str | None = None
        enrich_text = percept
        asks = dict(goal=goal, context=context, situation=situation, grounding=grounding,
                    history=history, cancelled=cancelled, on_forming=on_forming)
        for cycle in range(1, cap + 1):
            t0 = self.clock()
            try:
                step = self._cycle(res, cycle, cap, t0, percept, enrich_text, tools, entries,
                                   **asks)
            except _Failure as failure:
                return self._fail(res, failure, cycle, cap, t0, on_thought, entries)
            thought, j = self._thought(res, step, cycle, cap, t0, previous)
            self._keep(res, entries, thought, on_thought)
            if self._ends(res, thought, step[4], cycle, j):
                break
            previous, enrich_text = thought.text, thought.text
        else:
            res.status_msg = f'cycle cap {cap} reached'
        res.transcript, _ = fit_transcript(entries, self.transcript_budget, self.count_tokens)
        return res

    def _cycle(self, res, cycle, cap, t0, percept, enrich_text, tools, entries, *, goal,
               context, situation, grounding, history, cancelled, on_forming):
        """One cycle up to its answer: enrich, then choose (with a chooser and a grounding)
        or ask the model for JSON. Returns (answer, completion, attempts, llm seconds, the
        candidates weighed, the enrichment, when the enrichment ended)."""
        did = res.deliberation_id
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
            def forming(text: str, llm_s: float) -> None:
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
        return answer, completion, attempts, llm_s, choice, enr, t_enriched

    def _thought(self, res, step, cycle: int, cap: int, t0: float,
                 previous: str | None) -> tuple[Thought, float]:
        """The cycle's thought from its answer (`_cycle`'s step), and its Jaccard similarity
        to the previous one."""
        answer, completion, attempts, llm_s, choice, enr, t_enriched = step
        text = answer['reasoning'].strip()
        j = jaccard(text, previous) if previous is not None else 0.0
        return Thought(
            res.deliberation_id, cycle, cap, text,
            salience=thought_salience(enr.sections, enr.memories,
                                      j if previous is not None else None),
            enriched_by=list(enr.sources), experience=enr.text, skipped=dict(enr.skipped),
            ready_to_act=bool(answer['ready_to_act']),
            converged=previous is not None and j >= self.config.convergence_threshold,
            jaccard_previous=round(j, 4), action=answer['action'],
            enrichment_s=t_enriched - t0, llm_s=llm_s, cycle_s=self.clock() - t0,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens, attempts=attempts,
            choice=choice, why=str(answer.get('why') or '')), j

    def _keep(self, res: DeliberationResult, entries: list, thought: Thought,
              on_thought) -> None:
        """The cycle's thought into the result, the transcript and working memory."""
        text, cycle = thought.text, thought.cycle
        res.thoughts.append(thought)
        res.cycles = cycle
        res.reasoning, res.action = text, thought.action
        entries.append(TranscriptEntry(cycle, text))
        self.wm.add(THOUGHT, text, thought.salience, deliberation_id=res.deliberation_id,
                    cycle=cycle)
        if on_thought is not None:
            on_thought(thought)

    @staticmethod
    def _ends(res: DeliberationResult, thought: Thought, choice: list, cycle: int,
              j: float) -> bool:
        """Whether the deliberation ends with this thought (and how, in `res`)."""
        if thought.ready_to_act:
            res.status, res.status_msg = READY, f'ready to act at cycle {cycle}'
            return True
        if choice and not thought.ready_to_act:
            res.status, res.status_msg = CONVERGED, f'chose to wait at cycle {cycle}'
            return True
        if thought.converged:
            res.status = CONVERGED
            res.status_msg = f'converged at cycle {cycle} (Jaccard {j:.2f})'
            return True
        return False

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
        grammar = self._grammar(arg_schemas)
        last: _Failure | None = None
        llm_s = 0.0
        for attempt in range(1 + cfg.retries):
            if cancelled():
                raise _Failure(OUT_CANCELLED, 'cancelled while thinking')
            t0 = self.clock()
            timed_out: list[bool] = []
            seed = cfg.seed + attempt if cfg.seed >= 0 else -1
            try:
                completion = self.backend.complete(
                    prompt.text, max_tokens=cfg.max_tokens, temperature=cfg.temperature,
                    top_p=cfg.top_p, top_k=cfg.top_k, repeat_penalty=cfg.repeat_penalty,
                    seed=seed, json_schema=None if grammar else schema, grammar=grammar,
                    on_token=self._watch(cancelled, t0, timed_out))
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

    def _grammar(self, arg_schemas: dict) -> str | None:
        """The lean grammar of the active tools, None for the generic JSON-schema path."""
        if self.grammar_for is None:
            return None
        try:
            return self.grammar_for(arg_schemas)
        except ValueError:
            return None   # a schema the lean grammar cannot express: generic path

    def _watch(self, cancelled, t0: float, timed_out: list) -> Callable[[str], bool]:
        """A token callback that stops on cancel or past the call's timeout (noted in
        `timed_out`)."""
        def on_token(piece: str) -> bool:
            if cancelled():
                return False
            if self.clock() - t0 > self.config.llm_timeout_s:
                timed_out.append(True)
                return False
            return True
        return on_token

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
