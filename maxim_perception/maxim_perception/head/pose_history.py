"""Where the head pointed a moment ago: a short history of (time, pan, tilt) readings.

A camera frame shows the world as it was when the frame was taken, but it is processed tens of
milliseconds later, when a moving head has already turned further. Converting the frame's
pixels to head angles with the head's pose at the frame's own time (interpolated between the
joint readings around it) instead of the newest reading removes that error, which is the
head's speed times the processing delay (about 0.5 deg at 10 deg/s and 50 ms).
"""

from bisect import bisect_left
from collections import deque
import math


class PoseHistory:
    """Timestamped (pan, tilt) readings, the newest `horizon_s` seconds of them.

    `at(t)` interpolates linearly between the readings around t. A time inside the history's
    span, or within `tolerance_s` of its ends, gets the interpolated or nearest reading; a time
    further away means the two clocks disagree (a frame stamped on another clock, or a reading
    from long ago), and the newest reading is the best guess there is.
    """

    def __init__(self, horizon_s: float = 2.0, tolerance_s: float = 0.25,
                 max_samples: int = 1000) -> None:
        if not (math.isfinite(horizon_s) and horizon_s > 0):
            raise ValueError(f'horizon_s must be > 0, got {horizon_s}')
        if not (math.isfinite(tolerance_s) and tolerance_s >= 0):
            raise ValueError(f'tolerance_s must be >= 0, got {tolerance_s}')
        if max_samples < 2:
            raise ValueError(f'max_samples must be >= 2, got {max_samples}')
        self.horizon_s = float(horizon_s)
        self.tolerance_s = float(tolerance_s)
        self._t: deque[float] = deque(maxlen=max_samples)
        self._pose: deque[tuple[float, float]] = deque(maxlen=max_samples)

    def __len__(self) -> int:
        return len(self._t)

    def add(self, t: float, pan: float, tilt: float) -> bool:
        """Record a reading; False (and nothing recorded) for a non-finite one.

        A reading older than the newest one means the clock went back (a simulation restart,
        a replayed bag): the history starts over from it.
        """
        if not all(math.isfinite(v) for v in (t, pan, tilt)):
            return False
        if self._t and t < self._t[-1]:
            self.clear()
        if self._t and t == self._t[-1]:
            self._pose[-1] = (float(pan), float(tilt))
            return True
        self._t.append(float(t))
        self._pose.append((float(pan), float(tilt)))
        while len(self._t) > 2 and self._t[-1] - self._t[0] > self.horizon_s:
            self._t.popleft()
            self._pose.popleft()
        return True

    def clear(self) -> None:
        self._t.clear()
        self._pose.clear()

    def latest(self) -> tuple[float, float] | None:
        return self._pose[-1] if self._pose else None

    def at(self, t: float) -> tuple[float, float] | None:
        """The (pan, tilt) at time t; None while empty. See the class docstring."""
        if not self._t:
            return None
        if not math.isfinite(t) or t < self._t[0] - self.tolerance_s \
                or t > self._t[-1] + self.tolerance_s:
            return self._pose[-1]
        if t <= self._t[0]:
            return self._pose[0]
        if t >= self._t[-1]:
            return self._pose[-1]
        i = bisect_left(self._t, t)     # _t[i - 1] < t <= _t[i]
        t0, t1 = self._t[i - 1], self._t[i]
        (p0, q0), (p1, q1) = self._pose[i - 1], self._pose[i]
        w = (t - t0) / (t1 - t0)
        return p0 + w * (p1 - p0), q0 + w * (q1 - q0)
