"""The per-topic rate limit shared by the MCAP file and the Foxglove live view."""

from dataclasses import dataclass


@dataclass
class RateGate:
    """Admits a message when at least `min_period_ns` of its stamps passed since the last one
    admitted; 0 admits every message. `dropped` counts what the limit skipped."""

    min_period_ns: int = 0
    last_ns: int = -1
    dropped: int = 0

    @classmethod
    def for_rate(cls, max_rate_hz: float) -> 'RateGate':
        return cls(int(1e9 / max_rate_hz) if max_rate_hz > 0 else 0)

    def admit(self, stamp_ns: int) -> bool:
        if self.min_period_ns and self.last_ns >= 0 and \
                stamp_ns - self.last_ns < self.min_period_ns:
            self.dropped += 1
            return False
        self.last_ns = stamp_ns
        return True
