"""Deciding by choosing: grounded candidate actions, scored by the model and by value.

The parts, each cut along the data it reads: words.py (tokens, stems, content words, the word
sets and patterns), grounding.py (what arguments may be made of), world.py (things, their
states, what stands in the way), recall.py (what memory ties to what is asked),
candidates.py (the candidates and their arguments), facts.py (what the weighing knows of the
moment), scorers.py (one term of the sum each), weights.py (the weights that sum them),
chooser.py (the model scores, the scorers weigh) and why.py (the choice in words). This
module holds the choice's parameters and constants.

A 270M base model cannot write a correct tool call: asked for JSON it copies the prompt's
example and slot text into its arguments. It can, however, say how likely a short
continuation is (ENVIRONMENT.md, "Scoring candidate actions"). So the mind proposes and the
model weighs, as in SayCan: every candidate is an action with its arguments already filled
from what the robot perceives or remembers, and the choice is

    total = relevance (the model: how well the action continues the situation)
          + value     (the NAc: how well this tool did in this context)
          + goal      (the words of the goal and of what a person said; minus what they
                       say not to do: "without waking the guard")
          + need      (the act deals with what stands in the way: a failure's reason,
                       "its locked is True", or a state it undoes: 'unlock' a locked chest;
                       or it acts on what the last act changed: open the unlocked chest)
          + memory    (a recalled episode or prediction that names the action, or a recalled
                       line that links what is asked to the action's argument)
          - habit     (an action just done, or just failed with nothing changed since)
          - pain      (an action that hurt)

with "wait and watch" as one candidate among the others, so doing nothing is a choice the
model weighs too and the bar to act rises with every action that brought no news from the
world: a look at what was already known, one's own words, a blocked act (the basal ganglia's
go/no-go; the ThoughtGate decides before this whether to think at all). A failure whose reason
names an obstacle is news: it sets a subgoal ("you need a key"), and acts that deal with it
gain (`obstacles`). Relevance is pointwise mutual information, log p(action | situation)
- log p(action | a neutral line), over the square root of the action's length, so a generic
short action ("open door") does not win by being likely everywhere.

Arguments come from the situation only (`Grounding`): names of things in view and of people,
entities the world names, the tracked labels, content words of what a person said and of
recalled lines (words memory adds to the situation first), spans of a person's words that
look like a command. Free text (say, respond, think) is where free text is the point: it is
written by the model after an open quote in the diary, and text that copies the prompt's fixed
labels or holds a template (`<...>`, braces) is refused.

Pure Python: the backend is anything with `score(prompt, continuations)` and `complete`.
"""

from dataclasses import dataclass

WAIT = 'wait and watch'
# How a result of the robot's own act is told to it (and kept by memory): a line with this
# frame and a speech tool holds the robot's own words, no thing it was told.
RESULT_FRAME = 'Result of your {tool}: '
NEUTRAL_PREFIX = 'So I'


@dataclass(frozen=True)
class ChoiceConfig:
    """Parameters `deliberation.choice.*` (weights are defaults from the design, not fits)."""

    max_candidates: int = 24
    values_per_param: int = 3
    w_relevance: float = 2.0
    w_value: float = 3.0
    w_goal: float = 1.0
    w_avoid: float = 4.0               # what the goal or a person says not to do
    w_memory: float = 1.0
    w_intent: float = 2.0              # an act on the thing the cycle's thought is about
    w_need: float = 2.0                # an act that deals with an obstacle (means-ends)
    w_frontier: float = 1.5            # an act on what the last act changed
    w_answer: float = 3.0              # speech, when a person asked and was not answered
    habit_done: float = 6.0            # the same action just succeeded
    habit_failed: float = 4.0          # the same action just failed, nothing changed since
    habit_tool: float = 1.5            # per recent use of the same tool with other arguments
    habit_dull: float = 3.0            # a read-only tool whose last use told nothing new
    w_pain: float = 8.0
    effort: float = 1.5                # the bar to act rises per action since news
    wait_bias: float = 0.0
    # Which weights sum the terms: 'fitted' (weights.json beside weights.py, or
    # `weights_path`; fitted on the decision benchmark's dev split) or 'hand' (the w_* above).
    weights: str = 'fitted'
    weights_path: str = ''
    thought_max_tokens: int = 40
    say_max_tokens: int = 30
    temperature: float = 0.7
    # A thought is written again, begun with the next of the diary's OPENINGS, when the
    # draft only says again what the diary says: `restate_limit` or more of its word runs
    # are in the diary (prompt.diary.restated). At most `thought_drafts` drafts a cycle; a
    # draft is given up as soon as its first `restate_words` words are `restate_abort`
    # restated (the rest of it would cost time for nothing). The last draft is never cut.
    thought_drafts: int = 4
    restate_limit: float = 0.5
    restate_words: int = 8
    restate_abort: float = 0.8

    def __post_init__(self):
        if self.max_candidates < 2 or self.values_per_param < 1:
            raise ValueError('choice needs max_candidates >= 2 and values_per_param >= 1')
        if self.thought_max_tokens < 4 or self.say_max_tokens < 2:
            raise ValueError('thought_max_tokens >= 4 and say_max_tokens >= 2')
        if self.weights not in ('hand', 'fitted'):
            raise ValueError(f"choice.weights is 'hand' or 'fitted', not {self.weights!r}")
        if self.thought_drafts < 1 or not 0 < self.restate_limit <= 1 \
                or not 0 < self.restate_abort <= 1 or self.restate_words < 3:
            raise ValueError('thought_drafts >= 1, restate_limit and restate_abort within '
                             '(0, 1], restate_words >= 3')


# Plain text without quotes, braces, angle brackets or line breaks: no slot or template can
# be written, and a line is one utterance or one thought.
_PLAIN = r'[^"\\<>{}\[\]\x00-\x1F\x7F]'
SAY_GRAMMAR = f'root ::= {_PLAIN}{{1,160}} "\\""\n'
# A thought is one sentence: what the small model wrote after its first one was mostly the
# percept told again ("I wonder what this face is? I am looking at the orange object for a
# moment."), which hid a thought said before behind a new tail; one sentence is also a
# third fewer tokens.
_IN_SENTENCE = _PLAIN[:-1] + '.?!]'
THOUGHT_GRAMMAR = f'root ::= " "? {_IN_SENTENCE}{{1,240}} [.?!]? "\\n"\n'
