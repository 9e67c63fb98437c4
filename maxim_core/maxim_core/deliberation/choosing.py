"""A cycle of deliberation by choosing: a thought written in the diary, grounded candidates
scored by the model and weighed by the chooser, free text written where the choice needs it.

`ChoosingCycle` is the part of `Deliberator` (cycles.py) that runs such a cycle; it uses the
deliberator's backend, chooser, config, clock and energy budget.

Pure Python; no ROS.
"""

from typing import Any, Callable

from maxim_core.deliberation.choice import THOUGHT_GRAMMAR
from maxim_core.deliberation.thoughts import (_CannotScore, _Failure, OUT_CANCELLED,
                                              OUT_MODEL_ERROR, OUT_TIMEOUT, OUT_UNPARSABLE)
from maxim_core.deliberation.why import why_chosen
from maxim_core.deliberation.words import FREE_TEXT_PARAMS, is_template
from maxim_core.llm.backend import BAD_REQUEST, CANCELLED, LLMError, STOP_CANCELLED, TIMEOUT
from maxim_core.prompt.diary import Diary, OPENINGS, own_words, restated_against, strip_reason


class ChoosingCycle:
    """One cycle by choosing (see the module docstring), for `Deliberator`."""

    def _choose(self, percept, goal, active, entries, enr, grounding, history, cancelled, res,
                forming: Callable[[str, float], None] = lambda text, llm_s: None):
        """One cycle by choosing: a thought written in the diary, grounded candidates scored
        by the model and weighed by value, free text written where the choice needs it.
        Returns (answer, completion, attempts, llm seconds, the candidates as dicts)."""
        cfg = self.config
        g = grounding()
        diary = self._diary(percept, goal, entries, enr, g, history)
        last: _Failure | None = None
        llm_s = 0.0
        for attempt in range(1 + cfg.retries):
            if cancelled():
                raise _Failure(OUT_CANCELLED, 'cancelled while thinking')
            t0 = self.clock()
            seed = cfg.seed + attempt if cfg.seed >= 0 else -1
            try:
                thought, done, best, ranked, prompt_tokens = self._weigh_once(
                    active, g, diary, seed, cancelled, forming, llm_s, t0)
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
            answer = self._answer(best, ranked, thought, g)
            done.prompt_tokens = tokens
            return answer, done, attempt + 1, llm_s, [c.as_dict() for c in ranked[:8]]
        assert last is not None
        raise last

    def _diary(self, percept, goal, entries, enr, g, history) -> Diary:
        """The diary of this cycle, what memory answered added to the grounding's recall."""
        recalled, learned = [], []
        for channel, text in enr.answers.items():
            lines = [strip_reason(ln.strip(' -*\t')) for ln in text.splitlines()]
            (learned if channel == 'values' else recalled).extend(ln for ln in lines if ln)
        g.recalled = list(g.recalled) + recalled
        heard = g.heard if g.heard.strip() != percept.strip() else ''    # said once
        return Diary(name=self.name, percept=percept, goal=goal, heard=heard,
                     remembered=recalled, learned=learned, history=list(history),
                     history_total=self._history_total,
                     thoughts=[e.thought for e in entries])

    def _weigh_once(self, active, g, diary: Diary, seed: int, cancelled, forming, llm_s: float,
                    t0: float):
        """One attempt: the candidates, the thought, the weighing and the best one's free
        text. Returns (thought, completion, best or None, all best first, prompt tokens)."""
        chooser = self.chooser
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
        return thought, done, best, ranked, prompt_tokens

    def _answer(self, best, ranked, thought: str, g) -> dict:
        """The cycle's answer: the thought, the act (None: wait) and why it was chosen."""
        chooser = self.chooser
        action = {'tool': best.tool, 'args': dict(best.args)} if best is not None else None
        # What was done (or the wait) first: `best` may be a later candidate than the top
        # one when the top one had nothing worth saying.
        first = [best] if best is not None else [c for c in ranked if c.tool is None][:1]
        order = first + [c for c in ranked if all(c is not f for f in first)]
        return {'reasoning': thought, 'ready_to_act': action is not None,
                'action': action, 'why': why_chosen(
                    order, g, chooser.config, chooser.weights.w.get('relevance', 0.0),
                    chooser.weights.w.get('avoid', 0.0))}

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
        ch = self.chooser.config
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
            opening = openings[i]
            done = self._draft(diary, opening, i == n - 1, said, again_in, seed, cancelled)
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

    def _draft(self, diary: Diary, opening: str, last: bool, said, again_in, seed: int,
               cancelled):
        """One draft of the thought begun with `opening`; given up (stopped as cancelled)
        once its first words restate the diary, unless it is the `last` draft."""
        cfg, ch = self.config, self.chooser.config
        text = [opening]
        # What the robot thought from this opening lately is not written again: the
        # model leaves it at its first word (pieces_to_avoid), not after it was written.
        avoid = [t[len(opening):] for t in said
                 if opening and t.startswith(opening) and t[len(opening):].strip()]

        def on_token(piece: str) -> bool:
            if cancelled():
                return False
            text[0] += piece
            # Whole words only, so a replayed run (tokens as words) stops where it did.
            words = text[0].split() if text[0][-1:].isspace() else text[0].split()[:-1]
            return last or len(words) < ch.restate_words or \
                again_in(' '.join(words), opening) < ch.restate_abort
        return self.backend.complete(
            diary.think_prompt(opening), max_tokens=ch.thought_max_tokens,
            temperature=ch.temperature, top_p=cfg.top_p, top_k=cfg.top_k,
            repeat_penalty=cfg.repeat_penalty, seed=seed, stop=['\n'],
            grammar=THOUGHT_GRAMMAR, on_token=on_token, **({'avoid': avoid} if avoid else {}))
