"""Robot tools: head goals for maxim_perception's head controller.

Each tool builds a dict with the fields of maxim_interfaces/HeadGoal (goal_id, requested_by,
mode, pan, tilt, track_id, target_label, speed, duration_s) and hands it to an injected
`send_head_goal(dict)`; the agent node turns it into a message on `head/goal`. With no sender
(headless: no head at all) the tool does not pretend: it fails with ERROR_UNAVAILABLE and says
it is headless, so the mind learns that moving does nothing here.

Angles are checked against the head's joint limits before anything is sent, so an
out-of-range goal is an argument error, not a strained servo. The limits are handed in
(`limits`: {'pan': (lo, hi), 'tilt': (lo, hi)} rad, which the agent node reads from the URDF,
their one source: maxim_common.urdf); without them (no URDF, a test) the head controller's own
clamp is the only check, and it hurts (joint_limit pain) when it clamps.

A tool that would do nothing says so instead of succeeding. Given `in_view` (the labels of
what the robot sees now; None while it has seen nothing yet), track_target resolves the name
it is given to the one thing in view that it names ("blue" -> "blue object", by the rule the
head controller follows too: `maxim_common.labels`), or fails with the labels in view; and
focus_interests and novelty_track fail while nothing is in view to look at. That a track later
loses its target is told by the Mind (`maxim_core.mind.tracking`). `move` is checked against
the joint states after it is sent (`maxim_core.agent.verify`).
"""

import math
from typing import Callable, Sequence
import uuid

from maxim_common.errors import ERROR_EXECUTION, ERROR_UNAVAILABLE
from maxim_common.labels import resolve_label
from maxim_core.tools.base import Tool, ToolInputError, ToolOutcome

# maxim_interfaces/msg/HeadGoal.msg MODE_* values.
MODE_MOVE = 0
MODE_MOVE_RELATIVE = 1
MODE_TRACK_TARGET = 2
MODE_FOCUS_INTERESTS = 3
MODE_NOVELTY_TRACK = 4
MODE_RELEASE = 5
MODE_STOP = 6

# The head's joint limits, {'pan': (lo, hi), 'tilt': (lo, hi)} rad (the URDF's), or None.
HeadLimits = 'dict[str, tuple[float, float]] | None'

HeadGoalSender = Callable[[dict], None]
# The labels of what is in view now (objects and people), None when nothing was seen yet.
InView = Callable[[], 'Sequence[str] | None']

_DURATION = {'type': 'number', 'minimum': 0, 'maximum': 600, 'default': 0,
             'description': 'seconds the goal holds (0 = until replaced)'}
_SPEED = {'type': 'number', 'minimum': 0, 'maximum': 1, 'default': 0,
          'description': 'fraction of the maximum speed (0 = default)'}


SPEED_RANGE = (0.0, 1.0)
DURATION_RANGE = (0.0, 600.0)


def _number(tool: str, name: str, value, lo: float | None = None,
            hi: float | None = None) -> float:
    """`value` as a finite float within [lo, hi], else ToolInputError naming it. JSON schema
    bounds do not catch NaN (every comparison with NaN is false), so every number is checked
    here before a goal can be sent."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolInputError(f'{tool}: {name} must be a number, not {value!r}')
    try:
        number = float(value)
    except OverflowError:    # an int past the float range
        raise ToolInputError(f'{tool}: {name} {value} is out of range') from None
    if not math.isfinite(number):
        raise ToolInputError(f'{tool}: {name} must be finite, not {number}')
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        raise ToolInputError(f'{tool}: {name} {number} is outside [{lo}, {hi}]')
    return number


def head_goal(requested_by: str, mode: int, pan: float = 0.0, tilt: float = 0.0,
              track_id: int = 0, target_label: str = '', speed: float = 0.0,
              duration_s: float = 0.0) -> dict:
    """A HeadGoal-shaped dict with a fresh goal id."""
    return {'goal_id': uuid.uuid4().hex[:12], 'requested_by': requested_by, 'mode': int(mode),
            'pan': float(pan), 'tilt': float(tilt), 'track_id': int(track_id),
            'target_label': str(target_label), 'speed': float(speed),
            'duration_s': float(duration_s)}


class _HeadTool(Tool):
    category = 'robot'

    def __init__(self, send_head_goal: HeadGoalSender | None = None,
                 limits: HeadLimits = None, in_view: InView | None = None):
        super().__init__()
        self.send_head_goal = send_head_goal
        self.pan_limits = tuple(limits['pan']) if limits else None
        self.tilt_limits = tuple(limits['tilt']) if limits else None
        self.in_view = in_view

    def _view(self) -> list[str] | None:
        """The labels in view now; None when unknown (no view port, or nothing seen yet)."""
        labels = self.in_view() if self.in_view is not None else None
        return None if labels is None else [str(label) for label in labels]

    def _nothing_to_look_at(self, goal: dict) -> ToolOutcome | None:
        """A failure when the view is known to be empty: the goal would leave the head still."""
        if self._view() == [] and self.send_head_goal is not None:
            return ToolOutcome.fail(f'nothing in view: {self.name} would leave the head still, '
                                    'so nothing was sent', ERROR_EXECUTION,
                                    output={'sent': False, 'in_view': []}, goal=goal)
        return None

    def _send(self, goal: dict, summary: str) -> ToolOutcome:
        if self.send_head_goal is None:
            return ToolOutcome.fail(
                f'headless: no head to move, {self.name} did nothing', ERROR_UNAVAILABLE,
                output={'available': False, 'headless': True, 'goal': goal}, goal=goal)
        self.send_head_goal(goal)
        return ToolOutcome.ok({'sent': True, 'summary': summary, 'goal_id': goal['goal_id']},
                              goal=goal)


class MoveTool(_HeadTool):
    name = 'move'
    description = 'Turn the head to a pan/tilt angle (radians), or by an offset.'
    input_schema = {
        'type': 'object',
        'properties': {
            'pan': {'type': 'number', 'description': 'radians, left positive'},
            'tilt': {'type': 'number', 'description': 'radians, down positive (REP 103)'},
            'relative': {'type': 'boolean', 'default': False,
                         'description': 'move by an offset from the current pose'},
            'speed': _SPEED,
            'duration_s': _DURATION,
        },
        'required': ['pan', 'tilt'],
    }

    # The moves the body offers when deciding by choosing: a glance each way, by an offset
    # (radians) from where the head is, in the words a request uses for them ("turn your
    # head to the left"; "look left" alone shared no word with "turn" or "move", and the
    # model's liking went to "predict outcome move" instead).
    GLANCE_RAD = 0.4

    def proposals(self, grounding=None) -> list[tuple[dict, str]]:
        step = self.GLANCE_RAD
        return [({'pan': step, 'tilt': 0.0, 'relative': True}, 'turn my head left'),
                ({'pan': -step, 'tilt': 0.0, 'relative': True}, 'turn my head right'),
                ({'pan': 0.0, 'tilt': -step, 'relative': True}, 'look up'),
                ({'pan': 0.0, 'tilt': step, 'relative': True}, 'look down')]

    def execute(self, pan: float, tilt: float, relative: bool = False, speed: float = 0.0,
                duration_s: float = 0.0) -> ToolOutcome:
        pan, tilt = _number(self.name, 'pan', pan), _number(self.name, 'tilt', tilt)
        speed = _number(self.name, 'speed', speed, *SPEED_RANGE)
        duration_s = _number(self.name, 'duration_s', duration_s, *DURATION_RANGE)
        if self.pan_limits is not None and self.tilt_limits is not None:
            self._check_range(pan, tilt, relative)   # unknown: the head controller clamps
        mode = MODE_MOVE_RELATIVE if relative else MODE_MOVE
        goal = head_goal(self.name, mode, pan, tilt, speed=speed, duration_s=duration_s)
        what = 'by' if relative else 'to'
        return self._send(goal, f'head moving {what} pan {pan:.2f}, tilt {tilt:.2f} rad')

    def _check_range(self, pan: float, tilt: float, relative: bool) -> None:
        if not relative:
            lo, hi = self.pan_limits
            if not lo <= pan <= hi:
                raise ToolInputError(f'move: pan {pan} is outside the joint range [{lo}, {hi}]')
            lo, hi = self.tilt_limits
            if not lo <= tilt <= hi:
                raise ToolInputError(f'move: tilt {tilt} is outside the joint range '
                                     f'[{lo}, {hi}]')
            return
        span_p = self.pan_limits[1] - self.pan_limits[0]
        span_t = self.tilt_limits[1] - self.tilt_limits[0]
        if abs(pan) > span_p or abs(tilt) > span_t:
            raise ToolInputError('move: the relative offset exceeds the joint range')


class TrackTargetTool(_HeadTool):
    name = 'track_target'
    description = 'Follow one target with the head, by track id or label.'
    input_schema = {
        'type': 'object',
        'properties': {
            'target_label': {'type': 'string', 'maxLength': 64, 'default': '',
                             'description': 'what to follow, e.g. "person"',
                             'x-grounding': 'names'},
            'track_id': {'type': 'integer', 'minimum': 0, 'default': 0,
                         'description': 'tracker id (0 = use the label)'},
            'duration_s': _DURATION,
        },
    }

    def execute(self, target_label: str = '', track_id: int = 0,
                duration_s: float = 0.0) -> ToolOutcome:
        duration_s = _number(self.name, 'duration_s', duration_s, *DURATION_RANGE)
        if isinstance(track_id, bool) or not isinstance(track_id, int) or \
                not 0 <= track_id < 2 ** 32:
            raise ToolInputError(f'track_target: track_id must be an integer in '
                                 f'[0, 2^32), not {track_id!r}')
        if not target_label.strip() and track_id == 0:
            raise ToolInputError('track_target: give a target_label or a track_id')
        asked = target_label.strip()
        label, view = asked, self._view()
        if track_id == 0 and view is not None and self.send_head_goal is not None:
            label = resolve_label(asked, view)
            if label is None:
                seen = ', '.join(f'"{v}"' for v in dict.fromkeys(view)) or 'nothing'
                why = ('names more than one of them' if view and any(
                    resolve_label(asked, [v]) for v in view) else 'is not among them')
                return ToolOutcome.fail(
                    f'track_target: "{asked}" {why}; in view: {seen}. Nothing was sent',
                    ERROR_EXECUTION, output={'sent': False, 'asked': asked,
                                             'in_view': list(dict.fromkeys(view))})
        goal = head_goal(self.name, MODE_TRACK_TARGET, track_id=track_id,
                         target_label=label, duration_s=duration_s)
        what = label or f'track {track_id}'
        if label and label != asked:
            what = f'{label} (for "{asked}")'
        return self._send(goal, f'tracking {what}')


class FocusInterestsTool(_HeadTool):
    name = 'focus_interests'
    description = 'Look at the most salient things in turn.'
    input_schema = {'type': 'object', 'properties': {'duration_s': _DURATION}}

    def execute(self, duration_s: float = 0.0) -> ToolOutcome:
        duration_s = _number(self.name, 'duration_s', duration_s, *DURATION_RANGE)
        goal = head_goal(self.name, MODE_FOCUS_INTERESTS, duration_s=duration_s)
        return self._nothing_to_look_at(goal) or \
            self._send(goal, 'looking at the most salient things in turn')


class NoveltyTrackTool(_HeadTool):
    name = 'novelty_track'
    description = 'Follow whatever is most novel in view.'
    input_schema = {'type': 'object', 'properties': {'duration_s': _DURATION}}

    def execute(self, duration_s: float = 0.0) -> ToolOutcome:
        duration_s = _number(self.name, 'duration_s', duration_s, *DURATION_RANGE)
        goal = head_goal(self.name, MODE_NOVELTY_TRACK, duration_s=duration_s)
        return self._nothing_to_look_at(goal) or \
            self._send(goal, 'following whatever is most novel')


def robot_tools(send_head_goal: HeadGoalSender | None = None,
                in_view: InView | None = None, limits: HeadLimits = None) -> list[Tool]:
    return [cls(send_head_goal, limits=limits, in_view=in_view)
            for cls in (MoveTool, TrackTargetTool, FocusInterestsTool, NoveltyTrackTool)]


def move_params_text(limits: HeadLimits) -> dict[str, str]:
    """The move tool's pan and tilt lines for the description table, with the joint
    ranges when they are known."""
    def rng(name):
        return f', {limits[name][0]:g}..{limits[name][1]:g}' if limits else ''
    return {'pan': f'radians, left positive{rng("pan")}',
            'tilt': f'radians, down positive (REP 103){rng("tilt")}'}
