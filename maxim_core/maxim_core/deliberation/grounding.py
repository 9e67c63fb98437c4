"""The grounding of a choice: what arguments may be made of, and the acts the robot took
lately with what came of them.

Pure Python; no ROS.
"""

from dataclasses import dataclass, field
import json
from typing import Any, Mapping, Sequence

from maxim_core.deliberation.words import (_CODE_NUMBER, _FRAME_WORDS, _stem, _WHERE,
                                           content_words, memory_content, noun_phrases,
                                           said_words)


@dataclass
class RecentAct:
    """An action the robot took lately and what came of it."""

    tool: str
    args: dict
    success: bool
    result: str = ''
    blocked: bool = False
    introspection: bool = False        # read-only (looking, recalling): changes nothing
    entity: str = ''                   # the thing the result is about, when it says
    state: Mapping[str, Any] = field(default_factory=dict)   # that thing's state after it

    @staticmethod
    def state_of(output: str) -> tuple[str, dict]:
        """(thing, state) of a tool's JSON output that reports one ({"entity": "door",
        "state": {"locked": false, "open": false}}), else ('', {})."""
        text = (output or '').strip()
        if not text.startswith('{'):
            return '', {}
        try:
            data = json.loads(text)
        except ValueError:
            return '', {}
        thing, state = data.get('entity'), data.get('state', data.get('sensors'))
        if not isinstance(thing, str) or not isinstance(state, dict):
            return '', {}
        return thing.strip().lower(), {str(k): v for k, v in state.items()}


@dataclass
class Grounding:
    """What arguments may be made of, and what the choice weighs besides the model."""

    percept: str = ''
    goal: str = ''
    heard: str = ''                         # a person's words, when a person spoke
    objects: Sequence[str] = ()             # in view, tracked
    people: Sequence[str] = ()
    entities: Sequence[str] = ()            # things the world names (scene entities)
    recalled: Sequence[str] = ()            # memory lines (their reasons stripped)
    values: Mapping[str, float] = field(default_factory=dict)   # tool -> value 0..1
    recent: Sequence[RecentAct] = ()        # oldest first
    pains: Sequence[tuple] = ()             # (tool, args, intensity)
    acts_since_news: int = 0                # actions since the last percept from outside
    scene: str = ''                         # that percept (the situation the acts are in)
    acts_since_heard: int = -1              # actions since a person spoke (-1: not known)
    someone_there: bool = False             # a person is there to talk to
    addressed: bool = False                 # what was heard is said to the robot
    salient: Sequence[str] = ()             # memory_terms ranked (Chooser.candidates)
    surprise: Mapping[str, float] = field(default_factory=dict)  # memory word -> the model's
    related: Mapping[str, float] = field(default_factory=dict)   # recalled line -> sentence-
    #                                         model similarity to what a person said
    from_tool: bool = False                 # the percept is a tool's result
    states: Mapping[str, Mapping] = field(default_factory=dict)   # thing -> its last state
    changed: Mapping[tuple, bool] = field(default_factory=dict)   # (thing, state) -> set to,
    #                                       by the robot's own acts (see `own_changes`)
    name: str = ''                          # the robot's own: how it is addressed, not news
    new: Sequence[str] = ()                 # names that came into view with this percept
    # The word the scene used for a thing the world names otherwise ("gate" for the door it
    # is, "soldier" for the guard): a goal or a person's words that use it mean the thing.
    aliases: Mapping[str, str] = field(default_factory=dict)   # word -> a name of names()
    # What each active tool says of itself (name -> description): "Unlock the chest with a
    # key you hold" tells that the key is a means to the chest (`scorers.means`).
    described: Mapping[str, str] = field(default_factory=dict)
    # Replies built from what is known (answers.py): (sentence, source, closeness to what was
    # heard), filled by the chooser before the candidates are built.
    answers: Sequence[tuple] = ()
    reply_tool: str = ''                    # the speech tool the built replies go to

    def names(self) -> list[str]:
        out, seen = [], set()
        for name in list(self.objects) + list(self.people) + list(self.entities):
            n = ' '.join(str(name).split()).strip().lower()
            if n and n not in seen:
                seen.add(n)
                out.append(n)
        return out

    def memory_terms(self, limit: int = 3, ranked: bool = True) -> list[str]:
        """Words recalled lines add to the situation (not in the percept or goal): what
        memory knows that the moment does not say. The most informative first once the
        chooser has ranked them (`salient`, unless not `ranked`), else in the order memory
        gave them."""
        if self.salient and ranked:
            return list(self.salient)[:limit]
        # Nor what is in view: "object" of "blue object" is no word memory adds.
        here = {_stem(w) for w in content_words(
            f'{self.percept} {self.goal} {self.heard} {self.name} {" ".join(self.names())} '
            f'{" ".join(self.aliases)}')}
        found = []
        for line in self.recalled:
            text = memory_content(line)
            # A number of three digits or more is a code memory holds ("the code is 4172").
            for w in content_words(text) + _CODE_NUMBER.findall(text):
                if _stem(w) not in here and w not in found:
                    found.append(w)
        return found[:limit]

    def names_known(self, text: str) -> bool:
        """Whether `text` names something the robot perceives, was told or recalls (a
        content word of the percept, what was heard, the goal, a name in view, or a recalled
        line): a thought of nothing it knows ("I want to go to the park") is made up."""
        known = {_stem(w) for w in content_words(
            ' '.join([self.percept, self.heard, self.goal, *self.names()]
                     + [memory_content(line) for line in self.recalled]))
                 if w not in _WHERE and w not in _FRAME_WORDS}
        return any(_stem(w) in known for w in content_words(text))

    def phrases(self, limit: int = 6, exclude: Sequence[str] = ()) -> list[str]:
        """Things named by what a person said, the percept (not a tool's own result) and
        the goal (`noun_phrases`): whole noun phrases and their head words."""
        out = []
        for text in (said_words(self.heard), '' if self.from_tool else said_words(self.percept),
                     self.goal):
            for p in noun_phrases(text, known=self.names() + list(self.aliases)):
                if p not in out and p not in exclude:
                    out.append(p)
        return out[:limit]

    def terms(self, limit: int = 4, exclude: Sequence[str] = ()) -> list[str]:
        """Content words of what a person said, the percept (not a tool's own result: what
        the robot did is no news about the world) and the goal."""
        out = []
        texts = (self.heard, '' if self.from_tool else self.percept, self.goal)
        for text in texts:
            for w in content_words(text):
                if w not in out and w not in exclude:
                    out.append(w)
        return out[:limit]
