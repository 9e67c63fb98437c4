"""Pain: tool failures, timeouts, movement errors, direction thrashing and what a servo reports
of itself (overload, overheating, electrical shock, encoder error, overcurrent) as aversive
signals.

`PainDetector` turns raw outcomes into `PainEvent`s. Hurt from one source escalates: each
source keeps a pain level that grows by one per hurt and halves every `half_life_s` of quiet,
and intensity = base x (1 + escalation x (level - 1)), capped at 1, so three quick failures of
one tool hurt more than three failures spread over an hour. A success of the tool soothes it
(resets its level). `PainHistory` keeps what was felt, counts it by type and answers
"would acting with this tool now hurt again?" (`check_action`).

Type names are PainSignal.msg's TYPE_* constants in lower case.
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
import math
import time
from typing import Any, Callable

PAIN_TYPES = ('tool_failure', 'timeout', 'movement_error', 'direction_thrashing',
              'joint_limit', 'injected', 'overload', 'overheating', 'electrical_shock',
              'encoder_error', 'overcurrent')
# The servos' own harm (the head controller's HARM_INTENSITY, chosen by hand there).
BASE_INTENSITY = {'tool_failure': 0.3, 'timeout': 0.4, 'movement_error': 0.3,
                  'direction_thrashing': 0.5, 'joint_limit': 0.5, 'injected': 0.5,
                  'overload': 0.7, 'overheating': 0.7, 'electrical_shock': 0.8,
                  'encoder_error': 0.5, 'overcurrent': 0.5}


@dataclass
class PainEvent:
    """One pain signal (PainSignal.msg)."""

    pain_type: str             # one of PAIN_TYPES
    intensity: float           # 0..1
    source: str = ''           # a tool name, a joint name
    message: str = ''
    timestamp: float = 0.0     # wall time, seconds since the epoch
    repeat_count: int = 1      # hurts in a row from this source
    context: str = ''

    def __post_init__(self) -> None:
        if self.pain_type not in PAIN_TYPES:
            raise ValueError(f'unknown pain type {self.pain_type!r}; one of {PAIN_TYPES}')
        if not 0.0 <= float(self.intensity) <= 1.0:
            raise ValueError(f'pain intensity {self.intensity} is outside 0..1')


@dataclass(frozen=True)
class PainConfig:
    half_life_s: float = 120.0          # an unrepeated hurt's weight halves in this time
    escalation: float = 0.5             # extra intensity per repeat, as a share of the base
    movement_threshold_rad: float = 0.05  # smaller tracking errors do not hurt
    movement_max_rad: float = 0.5       # errors this large hurt at the full base
    velocity_deadband: float = 0.05     # rad/s: slower pan is no direction
    thrash_window_s: float = 3.0        # reversals counted within this window ...
    thrash_reversals: int = 3           # ... this many of them is thrashing


class PainDetector:
    """Raw outcomes in, escalating `PainEvent`s out (None when nothing hurts)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time,
                 config: PainConfig = PainConfig()):
        if config.half_life_s <= 0 or config.thrash_window_s <= 0 or config.thrash_reversals < 1:
            raise ValueError('half_life_s and thrash_window_s must be > 0, thrash_reversals >= 1')
        self.config = config
        self._clock = clock
        self._wall = wall_clock
        self._levels: dict[tuple[str, str], tuple[float, float]] = {}  # key -> (level, at)
        self._streaks: dict[tuple[str, str], int] = {}
        self._last_sign = 0
        self._reversals: deque[float] = deque()

    def _hurt(self, pain_type: str, source: str, message: str,
              scale: float = 1.0) -> PainEvent:
        now = self._clock()
        key = (pain_type, source)
        level, at = self._levels.get(key, (0.0, now))
        level = level * 0.5 ** ((now - at) / self.config.half_life_s) + 1.0
        self._levels[key] = (level, now)
        self._streaks[key] = self._streaks.get(key, 0) + 1
        base = BASE_INTENSITY[pain_type] * scale
        intensity = min(1.0, base * (1.0 + self.config.escalation * (level - 1.0)))
        return PainEvent(pain_type=pain_type, intensity=intensity, source=source,
                         message=message, timestamp=float(self._wall()),
                         repeat_count=self._streaks[key])

    def _soothe(self, source: str) -> None:
        for key in [k for k in self._levels if k[1] == source]:
            del self._levels[key]
            self._streaks.pop(key, None)

    def level(self, pain_type: str, source: str) -> float:
        """The decayed pain level of one source now (0 = calm)."""
        level, at = self._levels.get((pain_type, source), (0.0, self._clock()))
        return level * 0.5 ** ((self._clock() - at) / self.config.half_life_s)

    def tool_result(self, tool: str, success: bool, error: str = '',
                    timed_out: bool = False) -> PainEvent | None:
        """A tool's outcome: failures and timeouts hurt, a clean success soothes."""
        if not isinstance(tool, str) or not tool:
            raise ValueError('tool must be a non-empty string')
        if timed_out:
            return self._hurt('timeout', tool, error or f'{tool} timed out')
        if success:
            self._soothe(tool)
            return None
        return self._hurt('tool_failure', tool, error or f'{tool} failed')

    def movement_error(self, error_rad: float, joint: str = 'head') -> PainEvent | None:
        """A tracking/positioning error: above the threshold it hurts, more when larger."""
        err = abs(float(error_rad))
        if math.isnan(err):
            raise ValueError('error_rad is NaN')
        c = self.config
        if err < c.movement_threshold_rad:
            return None
        scale = min(1.0, err / c.movement_max_rad)
        return self._hurt('movement_error', joint,
                          f'{joint} missed its goal by {math.degrees(err):.1f} deg', scale)

    def direction(self, pan_velocity: float, joint: str = 'pan') -> PainEvent | None:
        """One pan velocity sample; `thrash_reversals` sign reversals within
        `thrash_window_s` hurt (then the count starts over)."""
        v = float(pan_velocity)
        if math.isnan(v):
            raise ValueError('pan_velocity is NaN')
        c = self.config
        if abs(v) < c.velocity_deadband:
            return None
        sign = 1 if v > 0 else -1
        now = self._clock()
        while self._reversals and now - self._reversals[0] > c.thrash_window_s:
            self._reversals.popleft()
        if self._last_sign and sign != self._last_sign:
            self._reversals.append(now)
        self._last_sign = sign
        if len(self._reversals) < c.thrash_reversals:
            return None
        n = len(self._reversals)
        self._reversals.clear()
        return self._hurt('direction_thrashing', joint,
                          f'{joint} reversed direction {n} times in {c.thrash_window_s:g} s')


class PainHistory:
    """What hurt: a bounded history, all-time counts by type, and per-tool checks."""

    def __init__(self, max_events: int = 1000, clock: Callable[[], float] = time.time,
                 half_life_s: float = 600.0, block_level: float = 2.0,
                 caution_level: float = 0.5):
        if max_events < 1 or half_life_s <= 0:
            raise ValueError('max_events must be >= 1 and half_life_s > 0')
        self.max_events = int(max_events)
        self.half_life_s = float(half_life_s)
        self.block_level = float(block_level)
        self.caution_level = float(caution_level)
        self._clock = clock
        self._events: deque[PainEvent] = deque(maxlen=self.max_events)
        self._counts = {t: 0 for t in PAIN_TYPES}

    def __len__(self) -> int:
        return len(self._events)

    def record(self, event: PainEvent) -> None:
        if not isinstance(event, PainEvent):
            raise TypeError(f'record takes a PainEvent, not {type(event).__name__}')
        self._events.append(event)
        self._counts[event.pain_type] += 1

    def history(self, limit: int = 10, pain_type: str | None = None) -> list[PainEvent]:
        """Most recent first."""
        if limit < 0:
            raise ValueError('limit must be >= 0')
        if pain_type is not None and pain_type not in PAIN_TYPES:
            raise ValueError(f'unknown pain type {pain_type!r}')
        out = []
        for e in reversed(self._events):
            if len(out) >= limit:
                break
            if pain_type is None or e.pain_type == pain_type:
                out.append(e)
        return out

    def counts_by_type(self) -> dict[str, int]:
        """All-time counts, every type listed (zeros included), in PainSignal.msg order."""
        return dict(self._counts)

    def current_intensity(self) -> float:
        """The strongest pain still felt now (intensities decay with `half_life_s`)."""
        now = self._clock()
        return max((e.intensity * self._decay(now, e) for e in self._events), default=0.0)

    def _decay(self, now: float, e: PainEvent) -> float:
        return 0.5 ** (max(0.0, now - e.timestamp) / self.half_life_s)

    def check_action(self, tool: str) -> dict[str, Any]:
        """Recent pain this tool caused and what to do: 'proceed', 'caution' or 'avoid'.
        The level sums decayed intensities of the tool's pain; `would_block` when it reaches
        `block_level` (the fear gate may also consult the NAc's prediction)."""
        if not isinstance(tool, str) or not tool:
            raise ValueError('tool must be a non-empty string')
        now = self._clock()
        mine = [e for e in self._events if e.source == tool]
        level = sum(e.intensity * self._decay(now, e) for e in mine)
        by_type: dict[str, int] = {}
        for e in mine:
            by_type[e.pain_type] = by_type.get(e.pain_type, 0) + 1
        last = mine[-1] if mine else None
        if level >= self.block_level:
            rec = 'avoid'
            reason = (f'{tool} hurt {len(mine)} times recently (pain level {level:.2f} >= '
                      f'{self.block_level:g}); last: {last.message}')
        elif level >= self.caution_level:
            rec, reason = 'caution', f'{tool} hurt recently (pain level {level:.2f})'
        else:
            rec, reason = 'proceed', ''
        return {'tool': tool, 'recent_count': len(mine), 'by_type': by_type,
                'pain_level': level, 'max_intensity': max((e.intensity for e in mine),
                                                          default=0.0),
                'last_message': last.message if last else '',
                'last_time': last.timestamp if last else 0.0,
                'recommendation': rec, 'would_block': rec == 'avoid', 'reason': reason}

    def to_dict(self) -> dict[str, Any]:
        return {'version': 1, 'max_events': self.max_events, 'half_life_s': self.half_life_s,
                'block_level': self.block_level, 'caution_level': self.caution_level,
                'counts': dict(self._counts), 'events': [asdict(e) for e in self._events]}

    @classmethod
    def from_dict(cls, d: dict[str, Any], clock: Callable[[], float] = time.time) -> PainHistory:
        """Rebuild from `to_dict()`; malformed state raises KeyError, TypeError or ValueError."""
        if not isinstance(d, dict):
            raise TypeError(f'pain state must be a dict, not {type(d).__name__}')
        if d.get('version') != 1:
            raise ValueError(f'unknown pain state version {d.get("version")!r}')
        h = cls(max_events=int(d['max_events']), clock=clock,
                half_life_s=float(d['half_life_s']), block_level=float(d['block_level']),
                caution_level=float(d['caution_level']))
        for e in d['events']:
            h._events.append(PainEvent(**e))
        for t, n in d['counts'].items():
            if t not in PAIN_TYPES:
                raise ValueError(f'pain state: unknown pain type {t!r}')
            h._counts[t] = int(n)
        return h
