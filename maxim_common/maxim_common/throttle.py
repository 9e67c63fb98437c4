"""Log lines for a node's logger (no rclpy here; the node hands its logger in): rate-limited
lines, where a flood of one kind of bad input writes one line per period and the next line says
how many were held back, and a package's Python `logging` records passed on to the logger."""

import logging
import time
from typing import Callable


class LogThrottle:
    """At most one line per key every `period_s`; the next one counts what was suppressed.

    `throttle(key, text)` returns the line to log now, or None while the key is muted. ROS's
    `throttle_duration_sec` mutes as well but never says how much it dropped: here a flood of
    2,000 bad messages is one line, then one line a period saying '(N more suppressed)'.
    """

    def __init__(self, period_s: float = 2.0, clock: Callable[[], float] = time.monotonic):
        if not period_s > 0:
            raise ValueError(f'period_s must be > 0, not {period_s}')
        self.period_s = period_s
        self._clock = clock
        self._next: dict[str, float] = {}
        self._muted: dict[str, int] = {}
        self.suppressed_total = 0

    def __call__(self, key: str, text: str) -> str | None:
        now = self._clock()
        if now < self._next.get(key, -float('inf')):
            self._muted[key] = self._muted.get(key, 0) + 1
            self.suppressed_total += 1
            return None
        self._next[key] = now + self.period_s
        muted = self._muted.pop(key, 0)
        if muted:
            text = f'{text} ({muted} more like it suppressed since the last one)'
        return text

    def pending(self) -> dict[str, int]:
        """Suppressed lines not yet reported, by key."""
        return dict(self._muted)


class ThrottledLog:
    """A logger's calls behind a LogThrottle: `log(kind, text)` writes at most one line per
    kind every `period_s` (the next one counting what was held back), on `error` when asked
    (`log(kind, text, error=True)`), else on `warn`. The node hands its logger's methods in.
    A text longer than `max_chars` (0: no limit) is cut, saying how much: a line for a person,
    however long the bad input was."""

    def __init__(self, warn: Callable[[str], None], period_s: float = 2.0,
                 error: Callable[[str], None] | None = None, max_chars: int = 0,
                 clock: Callable[[], float] = time.monotonic):
        self.throttle = LogThrottle(period_s, clock)
        self._warn = warn
        self._error = error or warn
        self.max_chars = max_chars

    def __call__(self, kind: str, text: str, error: bool = False) -> None:
        n = self.max_chars
        if n and len(text) > n:
            text = f'{text[:n]} … ({len(text) - n} more characters)'
        line = self.throttle(kind, text)
        # One call per level, each on its own line: rclpy's logger keeps a severity per
        # calling line and raises when one line logs at two.
        if line is None:
            return
        if error:
            self._error(line)
        else:
            self._warn(line)


class LoggerHandler(logging.Handler):
    """A package's Python log lines (logging.getLogger('maxim_memory')...) on a node's ROS
    logger: each one line, where the node's other lines are (ERROR and above as errors,
    WARNING as warnings, the rest as info)."""

    def __init__(self, logger, level: int = logging.INFO):
        super().__init__(level)
        self._ros = logger

    def attach(self, name: str) -> None:
        """Take the records of the Python logger `name` (and only here: not propagated, so
        each is logged once)."""
        log = logging.getLogger(name)
        log.addHandler(self)
        log.setLevel(self.level)
        log.propagate = False

    def detach(self, name: str) -> None:
        log = logging.getLogger(name)
        log.removeHandler(self)
        if not log.handlers:
            log.propagate = True

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        if record.levelno >= logging.ERROR:
            self._ros.error(text)
        elif record.levelno >= logging.WARNING:
            self._ros.warning(text)
        else:
            self._ros.info(text)
