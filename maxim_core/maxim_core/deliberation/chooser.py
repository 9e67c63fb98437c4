"""The chooser: the model scores the candidates, the scorers weigh them (candidates.py says
what a candidate is, grounding.py what it is grounded in, facts.py what the weighing knows
of the moment, scorers.py what each term of the sum is, probe.py the learned reading)."""

import math
from typing import Any, Callable, Mapping, Sequence

from maxim_core.deliberation import answers, scorers
from maxim_core.deliberation import probe as pr
from maxim_core.deliberation.candidates import Candidate, CandidateBuilder, _speaks
from maxim_core.deliberation.choice import ChoiceConfig, NEUTRAL_PREFIX, RESULT_FRAME, SAY_GRAMMAR
from maxim_core.deliberation.grounding import Grounding
from maxim_core.deliberation.recall import hurt_before
from maxim_core.deliberation.words import (content_words, is_template, memory_content,
                                           result_words, said_words, same_words, _stem)
from maxim_core.prompt.diary import Diary, own_words
from maxim_core.prompt.tools import as_tool_spec


# The speech tools that answer the person the robot talks with, in the order one is taken for
# the built replies (the console's reply, the scene's own speech, the voice).
REPLY_TOOLS = ('respond', 'say', 'speak')


class Chooser:
    """Scores candidates with the model and weighs them (see the module docstring)."""

    FEAR_SPAN = 30          # weighings an act memory said hurt stays held back

    def __init__(self, backend, config: ChoiceConfig = ChoiceConfig(),
                 tool_prior: Callable[[str], float] | None = None, weights=None,
                 relate: Callable[[str, Sequence[str]], Sequence[float]] | None = None,
                 danger: Callable[[str, Mapping], float] | None = None,
                 stance: 'scorers.st.Stance | None' = None, measure_all: bool = False,
                 embed: Callable[[list[str]], Any] | None = None, probe=None):
        """`weights`: a `scorers.Weights` (default: `ChoiceConfig.weights`, 'fitted' or
        'hand'); `relate(text, phrases)`: the sentence model's similarities, when one runs;
        `danger(tool, args)`: how dangerous the fear gate's patterns find a call; `stance`:
        the example clauses of stance.py (default: stance.json); `measure_all`: ask the
        sentence model even for terms the weights count 0 (the benchmark measures them all);
        `embed(texts)`: the sentence model's embeddings, which the probe of what a person wants
        reads (`probe`, default deliberation/probe.npz; the term is 0 without either)."""
        self.backend = backend
        self.config = config
        self.builder = CandidateBuilder(config)
        self.tool_prior = tool_prior
        self.relate, self.danger = relate, danger
        if weights is None:
            weights = scorers.Weights.hand(config) if config.weights == 'hand' else \
                scorers.Weights.load(config.weights_path or scorers.WEIGHTS_FILE)
        self.weights = weights
        self.stance = stance if stance is not None else scorers.st.Stance.load()
        self.measure_all = measure_all
        self.embed = embed
        self.probe = probe if probe is not None else pr.Probe.load()
        self._neutral: dict[str, float] = {}
        self._surprise: dict[str, float] = {}
        # What memory said hurt stays feared for a while after the line is no longer
        # recalled (root -> weighings left).
        self._feared: dict[str, int] = {}

    # -- the model ---------------------------------------------------------------------------
    def relevance(self, prompt: str, cands: Sequence[Candidate]) -> int:
        """Fill each candidate's relevance (PMI over sqrt length); the prompt's tokens."""
        conts = [f' {c.phrase}.' for c in cands]
        done = self.backend.score(prompt, conts)
        if len(done.logprobs) != len(conts):
            raise ValueError(f'{len(done.logprobs)} scores for {len(conts)} candidates')
        raw = [(float(lp) - self._neutral.get(cont, 0.0)) / math.sqrt(max(1, int(n)))
               for cont, lp, n in zip(conts, done.logprobs, done.token_counts)]
        # In units of the spread among these candidates: the model says which fit best,
        # on the same scale as what the other systems add.
        mean = sum(raw) / len(raw)
        spread = max(1.0, math.sqrt(sum((r - mean) ** 2 for r in raw) / len(raw)))
        for c, r in zip(cands, raw):
            c.pmi = r
            c.relevance = (r - mean) / spread
        return int(done.prompt_tokens)

    # -- what else weighs --------------------------------------------------------------------
    def weigh(self, cands: Sequence[Candidate], g: Grounding, thought: str = '') -> None:
        """Each candidate's features (one scorer each, deliberation/scorers.py) and its total
        under `self.weights`."""
        for root in hurt_before(g.recalled, g.names()):
            self._feared[root] = self.FEAR_SPAN
        hurt = set(self._feared)
        self._feared = {r: n - 1 for r, n in self._feared.items() if n > 1}
        # The sentence model is asked only when its term counts (a service call per weighing).
        w = self.weights.w
        relate = self.relate if self.measure_all or w.get('similarity') else None
        m = scorers.Moment(g, cands, thought, hurt, relate=relate, danger=self.danger,
                           stance=self.stance, stance_relate=self.relate
                           if self.measure_all or w.get('stance') else None,
                           understood=self._understood(cands, g)
                           if self.measure_all or w.get('understood') else {})
        W = self.weights
        asked_for: dict[str, float] = {}       # tool -> what was asked of it, held back
        for c in cands:
            f = scorers.features(c, m)
            c.relevance = f['relevance']
            if c.tool is not None:
                f['prior'] = self.tool_prior(c.tool) if self.tool_prior is not None else 0.0
                if f['avoid']:
                    c.held = 'avoid'
                if f['hurt']:
                    asked_for[c.tool] = max(asked_for.get(c.tool, 0.0),
                                            W.part(f, ('goal', 'goal_words', 'said_to',
                                                       'avoid', 'prior')))
                    c.held = 'hurt'
            c.features = f
        # Asked for what hurt before: the same kind of act done another way is what can be
        # done of what was asked (asked to turn further left where that hurt, turn the head
        # elsewhere; not stand still).
        for c in cands:
            f = c.features
            if c.tool in asked_for and not f.get('hurt'):
                own = W.part(f, ('goal', 'goal_words', 'said_to', 'avoid', 'prior'))
                f['redirect'] = max(0.0, asked_for[c.tool] - own)
            self._total(c, W)

    def _understood(self, cands: Sequence[Candidate], g: Grounding) -> dict[int, float]:
        """The probe's log-probability of each candidate's class of act (probe.py), read
        from the embeddings of the moment's texts; {} without a probe or embeddings."""
        if self.probe is None or self.embed is None or not cands:
            return {}
        texts = pr.texts_of(g)
        vecs = self.embed(texts)
        if vecs is None or len(vecs) != len(texts):
            return {}
        import numpy as np
        vecs = np.asarray(vecs, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[1] != self.probe.dim:
            return {}
        kinds = [pr.class_of(c.tool, c.args, g.entities, self.probe.classes, REPLY_TOOLS)
                 for c in cands]
        lp = self.probe.log_probs(pr.vector(vecs, pr.flags_of(g)), set(kinds))
        return {id(c): lp[k] for c, k in zip(cands, kinds)}

    @staticmethod
    def _total(c: Candidate, W) -> None:
        """The total, and the terms `why_chosen` and the panel show, under weights `W`."""
        f = c.features
        c.total = W.total(f)
        if c.tool is None:
            c.need = W.part(f, ('settled',))
            return
        c.value = W.part(f, ('value',))
        c.goal = W.part(f, ('goal', 'goal_words', 'said_to', 'avoid', 'prior', 'hurt',
                            'answer', 'redirect', 'similarity'))
        c.need = W.part(f, ('obstacle', 'resume', 'restore', 'frontier'))
        c.memory = W.part(f, ('memory_tool', 'memory_link'))
        c.intent = W.part(f, ('intent',))
        c.habit = -W.part(f, ('done', 'failed', 'tool_used', 'dull', 'moot'))
        c.pain = -W.part(f, ('pain',))

    def candidates(self, tools: Sequence[Any], g: Grounding) -> list[Candidate]:
        """The candidates for this situation (at most max_candidates, wait last), and their
        neutral likelihoods computed ahead: that short call would otherwise evict the diary
        from the model's cache between the thought and the decision."""
        self._rank_memory_terms(g)
        self._relate_lines(g)
        g.answers = ()
        speech = [s.name for s in map(as_tool_spec, tools) if _speaks(s)]
        g.reply_tool = next((n for n in REPLY_TOOLS if n in speech), speech[0] if speech
                            else '')
        if g.heard and g.someone_there and g.reply_tool:
            own = tuple(RESULT_FRAME.format(tool=t) for t in ('respond', 'say', 'speak'))
            found = answers.sources(g, memory_content, result_words, own)
            built = answers.ranked(found, said_words(g.heard), self.relate) + \
                answers.standing(g)
            # A source the weights never learned is not offered (the benchmark measures all).
            g.answers = tuple(a for a in built if self.measure_all
                              or self.weights.w.get(f'answer_{a[1]}'))
        g.described = {spec.name: spec.description or '' for spec in map(as_tool_spec, tools)}
        cands = self.builder.build(tools, g)
        wait = [c for c in cands if c.tool is None]
        acts = [c for c in cands if c.tool is not None]
        if len(acts) > self.config.max_candidates - 1:
            acts = self._prune(acts, g)
        cands = acts + wait
        missing = [f' {c.phrase}.' for c in cands if f' {c.phrase}.' not in self._neutral]
        if missing:
            base = self.backend.score(NEUTRAL_PREFIX, missing)
            if len(self._neutral) > 4096:
                self._neutral.clear()
            self._neutral.update(zip(missing, base.logprobs))
        return cands

    def _rank_memory_terms(self, g: Grounding, pool: int = 12, keep: int = 3) -> None:
        """The words memory adds, most informative first: by the model's own surprise at
        each word alone (a rare word like a password says more than 'told' or 'old')."""
        g.salient = ()
        words = g.memory_terms(pool)
        if not words:
            return
        missing = [f' {w}' for w in words if f' {w}' not in self._surprise]
        if missing:
            done = self.backend.score(NEUTRAL_PREFIX, missing)
            if len(self._surprise) > 8192:
                self._surprise.clear()
            for m, lp, n in zip(missing, done.logprobs, done.token_counts):
                self._surprise[m] = -float(lp)
        g.salient = tuple(sorted(words, key=lambda w: -self._surprise[f' {w}'])[:keep])
        g.surprise = {w: self._surprise[f' {w}'] for w in words}

    def _relate_lines(self, g: Grounding) -> None:
        """How close in meaning each recalled line is to what a person said (the sentence
        model, when one runs): memory's answer to a question that shares no word with it."""
        g.related = {}
        if self.relate is None or not g.heard or not g.recalled or '?' not in g.heard:
            return
        lines = list(g.recalled)
        sims = self.relate(said_words(g.heard), [memory_content(ln)[:300] for ln in lines[:64]])
        if sims is not None and len(sims) == len(lines[:64]):
            g.related = {ln: float(s) for ln, s in zip(lines, sims)}

    def decide(self, cands: list[Candidate], g: Grounding, prompt: str, thought: str = ''
               ) -> tuple[Candidate | None, list[Candidate], int]:
        """Score and weigh `cands` after `prompt` (the diary's decision line, which ends
        with `thought`): the chosen candidate (None: wait), all of them best first, and the
        prompt's tokens."""
        tokens = self.relevance(prompt, cands)
        self.weigh(cands, g, thought)
        ranked = sorted(cands, key=lambda c: -c.total)
        return (None if ranked[0].tool is None else ranked[0]), ranked, tokens

    def _prune(self, acts: list[Candidate], g: Grounding) -> list[Candidate]:
        """Keep the candidates most tied to the situation when there are too many: those
        whose words the goal, a person or memory share, then in the order proposed."""
        goal = {_stem(w) for w in content_words(f'{g.goal} {g.heard} {g.percept}')}
        order = {id(c): i for i, c in enumerate(acts)}
        acts = sorted(acts, key=lambda c: (-len({_stem(w) for w in content_words(c.phrase)}
                                                & goal), order[id(c)]))
        return acts[:self.config.max_candidates - 1]

    # -- free text ---------------------------------------------------------------------------
    def write(self, diary: Diary, thought: str, seed: int = -1,
              said: Sequence[str] = ()) -> str:
        """What the robot would say now, written by the model after an open quote; '' when
        what it wrote is empty, template text, or says again one of `said` (what the robot
        said lately: a reply repeated is nothing new to say)."""
        cfg = self.config
        done = self.backend.complete(diary.say_prompt(thought), max_tokens=cfg.say_max_tokens,
                                     temperature=cfg.temperature, top_p=0.95, top_k=40,
                                     repeat_penalty=1.1, seed=seed, stop=['"'],
                                     grammar=SAY_GRAMMAR)
        text = own_words(done.text)
        if not text or is_template(text) or any(same_words(text, s) for s in said):
            return ''
        return text
