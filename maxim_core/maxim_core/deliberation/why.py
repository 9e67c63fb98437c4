"""Why the choice went as it did, in the robot's words, read off the weighed candidates.

Pure Python; no ROS.
"""

from typing import Sequence

from maxim_core.deliberation.candidates import Candidate
from maxim_core.deliberation.choice import ChoiceConfig
from maxim_core.deliberation.grounding import Grounding
from maxim_core.deliberation.words import _stem, content_words


_WHY_ACT = {
    'answer': 'because I was asked something',
    'asked': 'because I was asked to',
    'goal': 'because it serves my goal',
    'value': 'because it worked here before',
    'need': 'because it is the next step',
    'memory': 'because memory points to it',
    'relevance': 'because it follows from what I think',
    'intent': 'because it is what I was thinking of',
}
_HELD = {'hurt': 'which hurt before', 'avoid': 'which I was told not to do'}


def why_chosen(ranked: Sequence[Candidate], g: Grounding,
               config: ChoiceConfig = ChoiceConfig(), w_relevance: float | None = None,
               w_avoid: float | None = None) -> str:
    """Why the first of `ranked` (weighed, best first) won, in the robot's words: the term
    that gave it most ('because I was asked to', 'because it worked here before'), and an
    act it would have taken but for pain or a person's 'do not' ('not look left, which hurt
    before'). The mind's own reasons, read off the weighing, not written by the model; shown
    with the decision, so a person sees why the head turned where it did."""
    if not ranked:
        return ''
    # The weights the choice was summed with (the chooser's), else the config's hand ones.
    w_rel = config.w_relevance if w_relevance is None else w_relevance
    w_av = config.w_avoid if w_avoid is None else abs(w_avoid)
    best = ranked[0]
    if best.tool is None:
        stale = best.features.get('stale', 0.0) if best.features else \
            (best.total - config.w_relevance * best.relevance - config.wait_bias
             - best.need) / max(config.effort, 1e-9)
        why = 'because the goal is met' if best.need > 0 else \
            'because my last acts brought nothing new' if stale >= 1 else \
            'because nothing calls for an act'
    else:
        terms = {'relevance': w_rel * best.relevance, 'value': best.value,
                 'goal': best.goal, 'need': best.need, 'memory': best.memory,
                 'intent': best.intent}
        top = max(terms, key=lambda k: terms[k])
        if top == 'goal':
            heard = {_stem(w) for w in content_words(g.heard)}
            if 'speech' in best.sources and g.heard and \
                    best.goal >= config.w_answer:
                top = 'answer'
            elif heard & {_stem(w) for w in content_words(best.phrase)}:
                top = 'asked'
        why = _WHY_ACT[top] if terms.get(top, 1.0) > 0 else ''
    # An act it would have taken but for pain or a 'do not'; else one it did just now (or
    # that just failed, or told nothing new).
    held = next((f'not {c.phrase}, {_HELD[c.held]}' for c in ranked[1:]
                 if c.held and c.tool is not None and c.total + w_av > best.total),
                '')
    if not held:
        done = {r.tool for r in g.recent}
        held = next((f'not {c.phrase} again' if c.tool in done else
                     f'not {c.phrase}, which the moment already tells' if c.introspective else
                     f'not {c.phrase}, which is so already' for c in ranked[1:]
                     if c.habit > 0 and c.tool is not None
                     and c.total + c.habit > best.total), '')
    if not why:
        why = 'because nothing else fits better'
    return f'{why}; {held}' if held else why
