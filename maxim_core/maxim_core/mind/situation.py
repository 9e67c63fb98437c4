"""The situation: what the Mind keeps about the moment, between and across its passes.

What a person said last and when, what is in view and what came into view, the scene the
robot's acts are in and how many acts it has made since news from outside, since words said
to it, the pains and the acts they are pinned on, what acts' results told of things' states,
and the diary's history. The decision reads all of it from here, once a cycle, as a
`Grounding` (deliberation.grounding); nothing else keeps a copy.

A pass begins on a percept (`begin`) and ends (`end`); between the two an act may start
(`acting`) and end (`acted`). Pain may come from another thread at any time (`feel`): it is
pinned on the act running when it came, or on the last act within PAIN_PIN_S, under the
situation's own lock.
"""

from __future__ import annotations

from collections import deque
import re
import threading
from typing import Any, Callable, Mapping, Sequence

from maxim_core.agent.loop import Percept, ToolRun
from maxim_core.deliberation.grounding import Grounding, RecentAct
from maxim_core.deliberation.words import phrase_of, result_words
from maxim_core.deliberation.world import own_changes, thing_states
from maxim_core.prompt.diary import DiaryEntry

# Percept sources that are someone's words (the panel, a console): arguments may quote them.
HEARD_SOURCES = ('user', 'cli')
# How long what was last seen counts as still in view, for a percept that names nothing
# (a person's words) (s).
IN_VIEW_S = 30.0
MAX_THINGS = 256        # things whose state the mind keeps (the oldest go first)
# A pain this soon after an act ended is that act's (robot time, s; chosen by hand: a move
# settles within a few seconds, and the head controller reports its pain as it happens).
PAIN_PIN_S = 10.0
# Signs that someone addresses the robot: a question, quoted words, "Name: ..." speech.
ADDRESSED = re.compile(r'\?|"|^\s*[A-Z][\w ]{0,30}:\s', re.M)


def recent_acts(runs: Sequence[ToolRun]) -> list[RecentAct]:
    """The loop's recent tool runs as the choice reads them, oldest first."""
    return [RecentAct(r.tool, dict(r.args), bool(r.success),
                      (result_words(r.output) if r.success
                       else r.error_msg or r.blocked_reason)[:200],
                      bool(r.blocked), bool(r.introspection), *RecentAct.state_of(r.output))
            for r in runs]


class Situation:
    """See the module docstring. `clock` is the Mind's (monotonic) clock."""

    def __init__(self, clock: Callable[[], float], name: str = 'Maxim'):
        self.clock, self.name = clock, name
        self.heard = ('', 0.0, '')          # a person's latest words, when, and from where
        self.acts_since_heard = -1          # since words said to the robot (-1: none yet)
        self.acts_since_news = 0            # since the last percept from outside the robot
        self.scene = ''                     # that percept
        self.source = ''                    # what the running pass is about ('' between)
        self.in_view: tuple = ((), 0.0)     # labels of the last view, and when
        self.view: tuple | None = None      # objects and people of the last view (None: none)
        self.seen_at_pass: set = set()      # what was in view at the last pass on a view
        self.new_now: list = []             # what came into view since then (this pass)
        # What acts' results told of things' states, and what the robot's own acts set:
        # kept beyond the loop's few recent outcomes (the door it opened stays open).
        self.states: dict[str, dict] = {}
        self.changed: dict[tuple, bool] = {}
        self.values: dict[str, float] = {}  # the NAc's values of the active tools, this pass
        self.history: deque = deque(maxlen=6)     # the diary's entries, latest last
        self.history_total = 0
        self.pains: deque = deque(maxlen=20)      # (tool, args, intensity)
        self._act: tuple | None = None      # (tool, args, running, robot time it ended)
        self._lock = threading.Lock()       # pains and the act they are pinned on

    # -- what comes in ----------------------------------------------------------------------
    def note_view(self, percept: Percept) -> None:
        """What is in view, kept for a person's words that come without a view. A view with
        nothing in it is a view too: what left it is not in view any more (perception sends
        a view when the scene changes, so the last one stands until the next)."""
        if percept.source == 'vision':
            self.in_view = (tuple(str(o) for o in percept.objects), self.clock())
            self.view = tuple(str(o) for o in list(percept.objects) + list(percept.people))

    def labels_in_view(self) -> list[str] | None:
        """The labels of everything in the last view (objects and people), None before the
        first view (the robot tools then cannot tell what is there)."""
        return None if self.view is None else list(self.view)

    def begin(self, percept: Percept) -> None:
        """A pass starts on `percept`: what is new since the last view thought about, and
        whether it is news from outside (acting is fresh again) or an act's own result."""
        self.note_view(percept)      # a percept stepped directly (scenarios) counts too
        # What came into view since the robot last thought about a view (not since the last
        # frame: most views are never thought about); nothing is new at the first one.
        self.new_now = []
        if percept.source == 'vision' and percept.objects:
            seen, self.seen_at_pass = self.seen_at_pass, {str(o) for o in percept.objects}
            self.new_now = [str(o) for o in percept.objects if seen and str(o) not in seen]
        if percept.source != 'tool_result':
            self.acts_since_news = 0
            self.scene = percept.narrative
            if percept.source in HEARD_SOURCES:
                self.heard = (percept.narrative, self.clock(), percept.source)
                if percept.source == 'user' or ADDRESSED.search(percept.narrative):
                    self.acts_since_heard = 0      # words said to the robot
        self.source = percept.source

    def end(self) -> None:
        self.source = ''

    # -- acts and pain ----------------------------------------------------------------------
    def acting(self, tool: str, args: dict) -> None:
        """An act starts: a pain that comes while it runs is this act's."""
        with self._lock:
            self._act = (tool, dict(args), True, 0.0)

    def acted(self, run: ToolRun, now: float) -> None:
        """An act ended (run, blocked or refused) at robot time `now`."""
        self.acts_since_news += 1
        if self.acts_since_heard >= 0:
            self.acts_since_heard += 1
        with self._lock:
            self._act = (run.tool, dict(run.args), False, now)

    def feel(self, intensity: float, now: float) -> None:
        """Pain at robot time `now` (0: unknown): pinned on the act running, or on the last
        act when it ended within PAIN_PIN_S."""
        with self._lock:
            if self._act is None or intensity <= 0:
                return
            tool, args, running, at = self._act
            if running or now <= 0 or at <= 0 or now - at <= PAIN_PIN_S:
                self.pains.append((tool, args, intensity))

    def remember(self, thought: str, run: ToolRun | None) -> None:
        """The diary's history: what was thought, done and what came of it."""
        if not thought and run is None:
            return
        action = outcome = ''
        if run is not None:
            action = phrase_of(run.tool, run.args)
            outcome = ('blocked' if run.blocked else
                       result_words(run.output) or 'done' if run.success else
                       f'failed, {run.error_msg or "no reason given"}')
        self.history.append(DiaryEntry(thought, action, outcome[:200]))
        self.history_total += 1

    # -- what the decision reads ------------------------------------------------------------
    def grounding(self, percept: Percept, goal: str, runs: Sequence[ToolRun],
                  entities: Sequence[Any] = (), values_on: bool = True) -> Grounding:
        """What this pass's arguments may be made of, and what the choice weighs."""
        text = percept.narrative
        recent = recent_acts(runs)
        self._keep_states(recent)
        objects = list(percept.objects)
        labels, seen_at = self.in_view
        if not objects and labels and self.clock() - seen_at <= IN_VIEW_S:
            objects = list(labels)           # a person's words: what is in view still is
        heard = text if percept.source in HEARD_SOURCES else ''
        said, said_at, said_by = self.heard
        said_by = percept.source if heard else said_by
        if not heard and percept.source == 'tool_result' and said \
                and self.clock() - said_at <= IN_VIEW_S:
            heard = said          # acting on a person's words: they still stand
        with self._lock:
            pains = list(self.pains)
        names, aliases = entity_names(entities)
        return Grounding(
            percept=text, goal=goal, heard=heard, aliases=aliases,
            objects=objects, people=list(percept.people), entities=names,
            values=dict(self.values) if values_on else {}, recent=recent,
            pains=pains, acts_since_news=self.acts_since_news,
            scene=self.scene, acts_since_heard=self.acts_since_heard,
            from_tool=percept.source == 'tool_result',
            states=dict(self.states), changed=dict(self.changed), name=self.name,
            new=list(self.new_now) if percept.source == 'vision' else [],
            # Someone is there when a person is in view or spoke: what the robot says of
            # its own view ("I see 2 objects: ...") is no one talking, whatever its marks.
            someone_there=bool(percept.people) or bool(heard),
            addressed=bool(heard) and (said_by == 'user' or bool(ADDRESSED.search(heard))))

    def _keep_states(self, recent: list[RecentAct]) -> None:
        kept = Grounding(states=self.states, changed=self.changed, recent=recent)
        self.states, self.changed = thing_states(kept), own_changes(kept)
        while len(self.states) > MAX_THINGS:
            self.states.pop(next(iter(self.states)))
        while len(self.changed) > MAX_THINGS:
            self.changed.pop(next(iter(self.changed)))


def entity_names(entities: Sequence[Any]) -> tuple[list[str], dict[str, str]]:
    """The world's things as names, and the words the scene used for them: an entity is a
    name, or {'name': ..., 'called': the scene's word} ("the gate" the world knows as a
    door)."""
    names, aliases = [], {}
    for e in entities:
        name = str(e.get('name', '')) if isinstance(e, Mapping) else str(e)
        called = str(e.get('called', '')).strip().lower() if isinstance(e, Mapping) else ''
        if name:
            names.append(name)
            if called and called != name.lower():
                aliases[called] = name.lower()
    return names, aliases
