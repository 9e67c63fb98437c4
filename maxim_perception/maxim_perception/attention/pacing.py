"""Which camera frames attention processes: at most `max_rate_hz` on average, counted on the
frames' own stamps (plain Python, no rclpy)."""

import math


class FrameCeiling:
    """A rate ceiling on frame stamps: frames that come faster than `max_rate_hz` are skipped,
    evenly.

    Each admitted frame makes the next one due a period after the one before was due, so the
    average rate reaches the ceiling however the stamps jitter; a frame later than a period
    after its due time (a pause) starts the schedule over from itself, and a stamp more than
    two periods before the due time (the clock went back: a restarted simulation) resets it.
    """

    def __init__(self, max_rate_hz: float):
        if not (math.isfinite(max_rate_hz) and max_rate_hz > 0):
            raise ValueError(f'max_rate_hz must be a finite number > 0, got {max_rate_hz!r}')
        self.period_s = 1.0 / max_rate_hz
        self.next_due = -math.inf   # frame time from which the next frame may be processed

    def admit(self, t: float) -> bool:
        """True to process the frame stamped `t` (seconds); False: skip it."""
        period = self.period_s
        if t < self.next_due - 2.0 * period:    # the clock went back (a restarted sim)
            self.next_due = -math.inf
        if t < self.next_due - 0.1 * period:    # over the rate ceiling: skip this one
            return False
        # On schedule (or late by less than a period): the next one is due a period after
        # this one was, so the average rate reaches the ceiling; after a pause, start over.
        if t - self.next_due > period:
            self.next_due = t + period
        else:
            self.next_due += period
        return True
