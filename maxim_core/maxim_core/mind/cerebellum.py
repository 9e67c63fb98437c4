"""The cerebellum: motor programs learned from the head's own movements.

A motor program is a kind of head movement: a move in one direction by about some amount, or
following a labelled target. Each time the mind sends a head goal the cerebellum opens a trial
from where the head is; joint states then tell whether and how fast the head got there, and a
pain signal about a joint (limit, movement error, thrashing) while the trial is open marks it
as hurt. What it has learned per program (attempts, reached, hurt, mean time to reach) is
what it tells the mind when a movement is relevant: a program that hurt is worth knowing
before moving again, one that works is worth repeating.

Pure Python, clock injected; thread-safe (joint states and deliberation run on different
threads).
"""

from __future__ import annotations

from dataclasses import dataclass
import math
import threading
import time
from typing import Callable, Iterable

# HeadGoal.MODE_* (numeric, so the core needs no message import).
MODE_MOVE, MODE_MOVE_RELATIVE, MODE_TRACK_TARGET = 0, 1, 2
MODE_FOCUS_INTERESTS, MODE_NOVELTY_TRACK = 3, 4

HEAD_TOOLS = ('move', 'track_target', 'focus_interests', 'novelty_track')
MOVE_WORDS = frozenset('move moving turn turning look looking left right up down pan tilt '
                       'head track follow'.split())


@dataclass
class MotorProgram:
    key: str
    description: str
    attempts: int = 0
    reached: int = 0
    hurt: int = 0
    reach_time_s: float = 0.0          # running mean over reached trials

    @property
    def success_rate(self) -> float:
        return self.reached / self.attempts if self.attempts else 0.0


@dataclass
class _Trial:
    program: str
    target: tuple[float, float] | None
    started: float
    tracking: bool = False       # no pose to reach: held for a second counts as reached
    hurt: bool = False


def _direction(dpan: float, dtilt: float) -> str:
    parts = []
    if abs(dpan) >= 0.05:
        parts.append('left' if dpan > 0 else 'right')      # REP 103: +pan turns left
    if abs(dtilt) >= 0.05:
        parts.append('down' if dtilt > 0 else 'up')        # +tilt looks down
    return ' and '.join(parts) or 'in place'


def _size(d: float) -> str:
    return 'a little' if d < 0.3 else 'far' if d > 1.0 else 'some way'


# The pain a motor program causes: the head's own (PainSignal's type names), including what
# its servos report of themselves while the program runs.
MOTOR_PAIN = ('joint_limit', 'movement_error', 'direction_thrashing', 'overload',
              'overheating', 'electrical_shock', 'encoder_error', 'overcurrent')


class Cerebellum:
    """Learns motor programs from head goals, joint states and pain."""

    def __init__(self, tolerance_rad: float = 0.08, trial_timeout_s: float = 4.0,
                 limits: dict | None = None, clock: Callable[[], float] = time.monotonic):
        self.tolerance = tolerance_rad
        self.trial_timeout_s = trial_timeout_s
        self.limits = limits      # the URDF's {'pan': (lo, hi), 'tilt': ...}; None: unknown
        self.clock = clock
        self.programs: dict[str, MotorProgram] = {}
        self._trial: _Trial | None = None
        self._position: tuple[float, float] | None = None
        self._lock = threading.Lock()

    # -- learning ----------------------------------------------------------------------------
    def command(self, goal) -> str:
        """A head goal was sent: open a trial for its program; returns the program key."""
        with self._lock:
            self._close_locked(timed_out=True)
            start = self._position
            target = None
            if goal.mode in (MODE_MOVE, MODE_MOVE_RELATIVE):
                pan, tilt = float(goal.pan), float(goal.tilt)
                if goal.mode == MODE_MOVE_RELATIVE:
                    dpan, dtilt = pan, tilt
                    target = (start[0] + pan, start[1] + tilt) if start is not None else None
                else:
                    dpan, dtilt = ((pan - start[0], tilt - start[1]) if start is not None
                                   else (pan, tilt))
                    target = (pan, tilt)
                if target is not None:
                    pan, tilt = target
                direction = _direction(dpan, dtilt)
                key = f'move:{direction}:{_size(math.hypot(dpan, dtilt))}'
                desc = f'moving the head {direction} {_size(math.hypot(dpan, dtilt))}'
                if self._beyond_limits(pan, tilt):
                    key += ':limit'
                    desc += ' up to a joint limit'
            elif goal.mode == MODE_TRACK_TARGET:
                label = (goal.target_label or f'track {goal.track_id}').strip().lower()
                key, desc = f'track:{label}', f'following the {label}'
            elif goal.mode == MODE_FOCUS_INTERESTS:
                key, desc = 'focus_interests', 'looking at interesting things in turn'
            elif goal.mode == MODE_NOVELTY_TRACK:
                key, desc = 'novelty_track', 'following whatever is new'
            else:
                return ''
            prog = self.programs.setdefault(key, MotorProgram(key, desc))
            prog.attempts += 1
            self._trial = _Trial(key, target, self.clock(), tracking=not key.startswith('move'))
            return key

    def joints(self, pan: float, tilt: float) -> None:
        """A joint state: closes a move trial that reached its goal."""
        with self._lock:
            self._position = (float(pan), float(tilt))
            t = self._trial
            if t is None:
                return
            if t.target is not None:
                if math.hypot(pan - t.target[0], tilt - t.target[1]) <= self.tolerance:
                    self._close_locked(reached=True)
                    return
            elif t.tracking and self.clock() - t.started >= 1.0 and not t.hurt:
                self._close_locked(reached=True)     # a tracking goal that held for 1 s
                return
            self._close_locked(timed_out=True)

    def pain(self, type_name: str, intensity: float, source: str = '') -> None:
        """Pain while a trial is open: that program hurt."""
        if type_name not in MOTOR_PAIN or intensity <= 0:
            return
        with self._lock:
            t = self._trial
            if t is not None and not t.hurt:
                t.hurt = True
                self.programs[t.program].hurt += 1

    def _close_locked(self, reached: bool = False, timed_out: bool = False) -> None:
        t = self._trial
        if t is None:
            return
        elapsed = self.clock() - t.started
        if timed_out and elapsed < self.trial_timeout_s:
            return
        prog = self.programs[t.program]
        if reached:
            prog.reached += 1
            prog.reach_time_s += (elapsed - prog.reach_time_s) / prog.reached
        self._trial = None

    def _beyond_limits(self, pan: float, tilt: float) -> bool:
        if not self.limits:
            return False          # unknown limits: no move is known to reach one
        (p0, p1), (t0, t1) = self.limits['pan'], self.limits['tilt']
        margin = 0.05
        return pan <= p0 + margin or pan >= p1 - margin or tilt <= t0 + margin \
            or tilt >= t1 - margin

    # -- recall ------------------------------------------------------------------------------
    def relevant(self, text: str, objects: Iterable[str] = (),
                 tools: Iterable[str] = (), limit: int = 3) -> list[tuple[MotorProgram, str]]:
        """Programs worth knowing now, with why: tracking programs for what is in view, and
        moves when the situation is about moving (the ones that hurt first)."""
        tools = set(tools)
        if tools and not tools & set(HEAD_TOOLS):
            return []
        words = set(str(text).lower().replace(',', ' ').split())
        labels = {str(o).strip().lower() for o in objects}
        about_moving = bool(words & MOVE_WORDS)
        out = []
        with self._lock:
            for p in self.programs.values():
                if p.key.startswith('track:') and p.key[6:] in labels:
                    out.append((p, f'{p.key[6:]} is in view'))
                elif p.key.startswith('move:') and about_moving:
                    out.append((p, 'it hurt before' if p.hurt else 'the situation is about '
                                'moving'))
        out.sort(key=lambda pw: (-pw[0].hurt, -pw[0].attempts))
        return out[:limit]

    def provider(self, query) -> str | None:
        """An enrichment provider: the relevant programs as lines, or None."""
        found = self.relevant(str(query), getattr(query, 'objects', ()),
                              getattr(query, 'tools', ()))
        lines = []
        for p, why in found:
            text = f'{p.description}: reached {p.reached} of {p.attempts}'
            if p.hurt:
                text += f', hurt {p.hurt} time{"s" if p.hurt > 1 else ""}'
            if p.reached:
                text += f', {p.reach_time_s:.1f} s to get there'
            lines.append(f'{text} [{why}]')
        return '\n'.join(lines) or None

    def stats(self) -> dict:
        with self._lock:
            return {k: {'attempts': p.attempts, 'reached': p.reached, 'hurt': p.hurt}
                    for k, p in self.programs.items()}
