"""Movement pain judged against the driver's own motion model: is a joint hurt, or on its way?

A joint far from its command is not necessarily hurt. A servo whose speed limit is below the
command's falls behind it; a simulation running slower than the wall clock lags too (in a
plain `./maxim sim` the pan joint was once 14 deg from its command while it was only
tracking). What hurts is a joint that does not move as its driver says it can: one that is
stalled (not moving while far from its command), blocked (moving towards it slower than the
model predicts), moving away from it, or held off by a limit.

So each joint keeps its measured trajectory (the last positions and their times, on the
measurement's own clock), and a joint farther than `tolerance` from its command is judged on
its speed towards the command over the last `window_s`: it is on its way while that speed is
at least `speed_ratio` times what the model expects, the driver's velocity limit, or less
when the joint is close enough to arrive within `error_s` (a servo slows down near its goal).
The caller turns a verdict that holds for `error_s` into pain, that time too on the
measurement's clock: a simulation whose thread is starved gives its joints no time to move,
and no time to be hurt in.

Plain Python: no clock is read, nothing of ROS is imported.
"""

from collections import deque
from dataclasses import dataclass
import math

STALLED = 'stalled'
MOVING_AWAY = 'moving away'
TOO_SLOW = 'too slow'
AT_LIMIT = 'held at its limit'


@dataclass(frozen=True)
class MotionModel:
    """How a driver's joints follow their commands: the yardstick of movement pain.

    max_velocity: rad/s at which a joint turns towards a command that is far away (a
        Dynamixel's profile velocity, a hobby servo's speed). None: the controller's own
        max_velocity (the simulated servo follows a ramp at it, ~0.1 rad behind). math.inf:
        the reading is the command itself, at once (a dry run; a board that echoes the pulses
        it applies), so any lasting distance is a fault.
    pan_limits, tilt_limits: (min, max) rad, the limits the driver imposes itself (a servo's
        position limits, a board's pulse range) where they may be narrower than the
        controller's; None: the controller's limits.
    feedback: the driver's reading is measured by the joints themselves (a Dynamixel's
        encoder, a simulated joint). False for a driver whose reading is what it was told (a
        dry run, a board that echoes its own pulses, a mock controller): such a reading
        cannot show a stalled joint, so movement pain is off there rather than never raised.
    """

    max_velocity: float | None = None
    pan_limits: tuple[float, float] | None = None
    tilt_limits: tuple[float, float] | None = None
    feedback: bool = True

    def __post_init__(self):
        v = self.max_velocity
        if v is not None and not (isinstance(v, (int, float)) and v > 0 and not math.isnan(v)):
            raise ValueError(f'max_velocity must be > 0 rad/s (inf: at once) or None, got {v!r}')
        for name in ('pan_limits', 'tilt_limits'):
            limits = getattr(self, name)
            if limits is not None and not (len(limits) == 2
                                           and all(math.isfinite(x) for x in limits)
                                           and limits[0] < limits[1]):
                raise ValueError(f'{name} must be finite (min, max) with min < max, '
                                 f'got {limits!r}')

    @classmethod
    def of(cls, driver) -> 'MotionModel':
        """The model a driver declares with its `max_velocity`, `joint_limits` and `feedback`
        attributes (joint_limits: ((pan_min, pan_max), (tilt_min, tilt_max))). A driver that
        declares none is judged against the controller's max_velocity and limits, as one that
        measures its joints."""
        limits = getattr(driver, 'joint_limits', None) or (None, None)
        return cls(getattr(driver, 'max_velocity', None), limits[0], limits[1],
                   bool(getattr(driver, 'feedback', True)))


@dataclass(frozen=True)
class Verdict:
    """One joint at one tick: how far from its command, how fast towards it, and whether
    that is harm (`cause` says which kind; '' when the joint is fine)."""

    distance: float          # rad, |command - measured|
    speed: float             # rad/s towards the command (negative: away), measured
    expected: float          # rad/s the motion model predicts towards the command
    cause: str = ''

    @property
    def hurt(self) -> bool:
        return bool(self.cause)


class Trajectory:
    """A joint's recent measured positions and their times (on the measurement's clock)."""

    def __init__(self, window_s: float):
        if not (math.isfinite(window_s) and window_s > 0):
            raise ValueError(f'window_s must be a finite number > 0, got {window_s!r}')
        self.window_s = window_s
        self._points: deque[tuple[float, float]] = deque(maxlen=512)

    def add(self, t: float, position: float) -> None:
        points = self._points
        if points and t < points[-1][0]:
            points.clear()              # the clock went back (a simulation restarted)
        if points and t == points[-1][0]:
            points.pop()                # the same instant read twice: keep the newest
        points.append((t, position))
        while points[0][0] < t - 2 * self.window_s:
            points.popleft()

    def clear(self) -> None:
        self._points.clear()

    @property
    def position(self) -> float | None:
        return self._points[-1][1] if self._points else None

    @property
    def time(self) -> float | None:
        """When the newest position was measured (the measurement's clock)."""
        return self._points[-1][0] if self._points else None

    def velocity(self) -> float | None:
        """rad/s over about the last window_s (from the newest point at least window_s old,
        else the oldest); None while the points span less than half a window."""
        points = self._points
        if len(points) < 2:
            return None
        t1, p1 = points[-1]
        t0, p0 = points[0]
        for t, p in reversed(points):
            if t <= t1 - self.window_s:
                t0, p0 = t, p
                break
        if t1 - t0 < self.window_s / 2:
            return None
        return (p1 - p0) / (t1 - t0)


def judge(command: float, trajectory: Trajectory, limits: tuple[float, float],
          max_velocity: float, tolerance: float, speed_ratio: float, error_s: float,
          limit_tolerance: float) -> Verdict | None:
    """Is this joint hurt now? None when its trajectory is too short to tell.

    command: where the joint was told to be (rad); limits: (min, max) the joint can reach;
    max_velocity: the model's speed towards a far command (rad/s, may be inf); tolerance: a
    joint closer than this to its command is fine; speed_ratio: on its way while moving
    towards the command at least this fraction of the expected speed; error_s: the expected
    speed is no more than what closes the distance in this time; limit_tolerance: a joint this
    close to a limit, with its command beyond it, is held off by the limit.
    """
    position = trajectory.position
    if position is None:
        return None
    error = command - position
    distance = abs(error)
    if distance <= tolerance:
        return Verdict(distance, 0.0, 0.0)
    velocity = trajectory.velocity()
    if velocity is None:
        return None
    speed = math.copysign(1.0, error) * velocity
    arrive = distance / error_s if error_s > 0 else math.inf
    expected = min(max_velocity, arrive)
    if speed >= speed_ratio * expected:
        return Verdict(distance, speed, expected)
    lo, hi = limits
    if (error > 0 and position >= hi - limit_tolerance) or \
            (error < 0 and position <= lo + limit_tolerance):
        cause = AT_LIMIT
    elif abs(speed) < 0.1 * speed_ratio * expected:
        cause = STALLED
    elif speed < 0:
        cause = MOVING_AWAY
    else:
        cause = TOO_SLOW
    return Verdict(distance, speed, expected, cause)
