"""Prompt assembly under a token budget, stable part first (seed 003).

The stable part (identity, PFC preamble, foundational rules, tool manifest, mode context,
answer format) comes first and the changing part (context pool, working memory, transcript,
enrichment, the percept) last: llama.cpp reuses the KV cache of the longest common token
prefix of consecutive calls, so cycle 2 of a deliberation only pays for what changed.

Budgets are counted with `count_tokens` (the backend's own tokenizer) and the assembled text
is counted again as a whole, because tokens of joined text need not sum exactly.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from maxim_core.prompt.sections import Priority, Section
from maxim_core.prompt.tools import tool_manifest_section

SIMULATION_BLOCK = (
    'SIMULATION ENVIRONMENT: you are running in a simulation. Your body, camera and the '
    'people you see may be simulated; act exactly as you would in the real world, and never '
    'claim that an action happened unless a tool result says so.')

INTERACTIVE_BLOCK = (
    'INTERACTIVE MODE: a person is watching and may talk to you. Explore with your own tools, '
    'memories and predictions first; ask the person only for a genuine preference, as a last '
    'resort.')

PFC_PREAMBLE = (
    '=== Your inner deliberation (private - not speech) ===\n'
    'What follows is your own private inner thought. Nobody hears it. Think to yourself in '
    'the first person, briefly: what you notice, what you remember, what you predict, what '
    'you will do. Build on your previous thoughts instead of repeating them. When you know '
    'what to do, say you are ready to act and choose one action.')

FOUNDATIONAL_RULES = (
    'Rules:\n'
    '- Only the tools listed below exist. Name one of them, with its arguments, or no action.\n'
    '- Tool results are the only evidence that something happened.\n'
    '- Safety first: never move so as to hurt anyone or yourself; a blocked action is final.\n'
    '- Your memories and predictions are hints, not certainties.')

RESPONSE_FORMAT = (
    'Answer with one JSON object and nothing else, for example:\n'
    '{"reasoning": "A cup stands on the table and nobody needs me. I keep watching.", '
    '"ready_to_act": false, "action": null}\n'
    '"reasoning" is your own new thought, in the first person, about what you perceive now. '
    'When you know what to do, set "ready_to_act" to true and "action" to {"tool": "<one of '
    'your tools>", "args": {<its arguments>}}.')

ANSWER_CUE = 'Your thought, as JSON:\n'


class PromptBudgetError(ValueError):
    """The sections that may not be dropped do not fit the budget."""

    def __init__(self, tokens: int, budget: int, names: Sequence[str]):
        super().__init__(f'the prompt needs {tokens} tokens for sections that cannot be dropped '
                         f'({", ".join(names)}) but the budget is {budget}: raise n_ctx, lower '
                         f'max_tokens or shorten the percept')
        self.tokens = tokens
        self.budget = budget


@dataclass
class BuiltPrompt:
    """An assembled prompt and what the budget did to it."""

    text: str
    tokens: int
    budget: int
    included: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    stable_text: str = ''     # the stable prefix of `text`
    stable_tokens: int = 0


def identity_section(name: str = 'Maxim',
                     body: str = 'a robot head with a camera that can pan and tilt',
                     simulation: bool = False, interactive: bool = False,
                     extra: str = '') -> Section:
    """The CRITICAL identity section; the simulation/interactive blocks live here so a budget
    can never drop them."""
    parts = [f'You are {name}, {body}. You perceive the world through your camera and your '
             f'memory, and act only through your tools.']
    if extra:
        parts.append(extra)
    if simulation:
        parts.append(SIMULATION_BLOCK)
    if interactive:
        parts.append(INTERACTIVE_BLOCK)
    return Section('identity', '\n'.join(parts), Priority.CRITICAL, stable=True)


class PromptBuilder:
    """Assembles sections: stable ones first, changing ones last, each group in given order.

    Under a tight budget sections are dropped lowest priority first; at equal priority a
    changing section goes before a stable one (the cached prefix is worth keeping), and a
    later one before an earlier one. CRITICAL sections are never dropped.
    """

    def __init__(self, count_tokens: Callable[[str], int], *, identity: Section | None = None,
                 preamble: str = PFC_PREAMBLE, rules: str = FOUNDATIONAL_RULES,
                 mode_context: str = '', response_format: str = RESPONSE_FORMAT,
                 tool_table: Mapping[str, Any] | None = None, separator: str = '\n\n',
                 manifest: Callable[[Sequence[Any]], list[Section]] | None = None):
        if not callable(count_tokens):
            raise TypeError('count_tokens must be a callable str -> int (the model tokenizer)')
        self.count_tokens = count_tokens
        self.identity = identity or identity_section()
        if self.identity.priority != Priority.CRITICAL:
            raise ValueError('the identity section must be CRITICAL')
        self.preamble = preamble
        self.rules = rules
        self.mode_context = mode_context
        self.response_format = response_format
        self.tool_table = dict(tool_table or {})
        self.separator = separator
        # tools -> manifest sections (the mind's LearnedToolIndex: matched tools in full, the
        # rest by name); without it every active tool is described in full.
        self.manifest = manifest
        self._counts: dict[str, int] = {}

    def _count(self, text: str) -> int:
        # Stable sections are counted once: a tokenizer call on every cycle is wasted work.
        n = self._counts.get(text)
        if n is None:
            n = int(self.count_tokens(text))
            if len(self._counts) > 256:
                self._counts.clear()
            self._counts[text] = n
        return n

    def stable_sections(self, tools: Sequence[Any]) -> list[Section]:
        out = [self.identity]
        if self.preamble:
            out.append(Section('pfc_preamble', self.preamble, Priority.CRITICAL, stable=True))
        if self.rules:
            out.append(Section('rules', self.rules, Priority.CRITICAL, stable=True))
        if self.manifest is not None:
            out += [Section(s.name, s.text, s.priority, stable=True)
                    for s in self.manifest(tools)]
        else:
            out.append(tool_manifest_section(tools, self.tool_table))
        if self.mode_context:
            out.append(Section('mode_context', self.mode_context, Priority.NICE_TO_HAVE,
                               stable=True))
        if self.response_format:
            out.append(Section('response_format', self.response_format, Priority.CRITICAL,
                               stable=True))
        return out

    def build(self, changing: Sequence[Section], budget_tokens: int,
              tools: Sequence[Any] = (), stable: Sequence[Section] | None = None) -> BuiltPrompt:
        """Assemble within `budget_tokens`; raise PromptBudgetError if CRITICAL does not fit."""
        if budget_tokens <= 0:
            raise PromptBudgetError(0, budget_tokens, ['(any)'])
        stable = list(self.stable_sections(tools) if stable is None else stable)
        sections = [s for s in stable if not s.empty]
        sections += [Section(s.name, s.text, s.priority, stable=False)
                     for s in changing if not s.empty]
        names = [s.name for s in sections]
        if len(set(names)) != len(names):
            raise ValueError(f'duplicate section names: {names}')
        keep = list(sections)
        dropped: list[str] = []
        sep_tokens = self._count(self.separator) if self.separator.strip() else 0
        order = {s.name: i for i, s in enumerate(sections)}

        def estimate(parts):
            return sum(self._count(s.text) for s in parts) + sep_tokens * max(0, len(parts) - 1)

        droppable = sorted((s for s in sections if s.priority != Priority.CRITICAL),
                           key=lambda s: (s.priority, s.stable, -order[s.name]))
        total = estimate(keep)
        while True:
            while total > budget_tokens and droppable:
                victim = droppable.pop(0)
                keep.remove(victim)
                dropped.append(victim.name)
                total = estimate(keep)
            text = self.separator.join(s.text for s in keep)
            exact = int(self.count_tokens(text))
            if exact <= budget_tokens:
                break
            if not droppable:
                raise PromptBudgetError(exact, budget_tokens, [s.name for s in keep])
            # The estimate was low (tokens of joined text): drop one more and recount.
            victim = droppable.pop(0)
            keep.remove(victim)
            dropped.append(victim.name)
            total = estimate(keep)
        stable_keep = [s for s in keep if s.stable]
        stable_text = self.separator.join(s.text for s in stable_keep)
        if stable_keep and len(stable_keep) < len(keep):
            stable_text += self.separator
        return BuiltPrompt(text, exact, budget_tokens, [s.name for s in keep], dropped,
                           stable_text, self._count(stable_text) if stable_text else 0)

    def deliberation_sections(self, percept: str, *, goal: str = '', context_pool: str = '',
                              working_memory: str = '', transcript: str = '',
                              enrichment: str = '', cue: str = ANSWER_CUE) -> list[Section]:
        """The changing part of a deliberation prompt, in prompt order.

        The percept goes before the transcript and enrichment: it is the same in every cycle
        of a deliberation, so it stays in the reused KV prefix, and only the growing
        transcript is new to the model in cycle 2+.
        """
        out = []
        if context_pool:
            out.append(Section('context_pool', f'What you know right now:\n{context_pool}',
                               Priority.NORMAL))
        head = f'Current goal: {goal}\n' if goal else ''
        out.append(Section('percept', f'{head}What you perceive now: {percept}',
                           Priority.CRITICAL))
        if working_memory:
            out.append(Section('working_memory',
                               f'Your most salient earlier thoughts:\n{working_memory}',
                               Priority.NICE_TO_HAVE))
        if transcript:
            out.append(Section('transcript', transcript, Priority.IMPORTANT))
        if enrichment:
            out.append(Section('enrichment', f'Your experience responds:\n{enrichment}',
                               Priority.IMPORTANT))
        if cue:
            out.append(Section('cue', cue, Priority.CRITICAL))
        return out
