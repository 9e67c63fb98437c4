"""A component's health as plain data (no rclpy, no messages).

Each node reports once a second on `diagnostics`: its node calls a builder in its package's
health.py with the numbers it keeps and gets a `Health`; maxim_common.diagnostics turns it into
a diagnostic_msgs/DiagnosticStatus and publishes it. Keeping the judgement (what is OK, what is
a warning) in plain code means it is unit-tested without ROS, and `maxim check` shows the same
words a test asserts.
"""

from dataclasses import dataclass, field

# The levels of diagnostic_msgs/DiagnosticStatus (byte values), so no message import is needed.
OK, WARN, ERROR, STALE = 0, 1, 2, 3


@dataclass(frozen=True)
class Health:
    """One component's state: a level, one line for a person, key values for tools."""

    level: int
    message: str
    values: dict = field(default_factory=dict)
    hardware_id: str = ''


def not_ready(what: str) -> Health:
    """A node whose resources are not acquired yet (a lifecycle node before configure or
    after cleanup): a warning that says which, not a failure."""
    return Health(WARN, f'not configured: {what}', {'state': 'unconfigured'})
