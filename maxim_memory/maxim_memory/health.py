"""Health of the memory node as plain data (no rclpy, no messages).

Each node reports once a second on `diagnostics`: its node calls a builder here with the numbers
it keeps, conversions.py turns the result into a diagnostic_msgs/DiagnosticStatus and
nodes/diagnostics.py publishes it. Keeping the judgement (what is OK, what is a warning) here
means it is unit-tested without ROS, and `maxim check` shows the same words a test asserts.
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


def database_health(st: dict, episodes_stored: int, episodes_lost: int, path: str,
                    state: str = 'active') -> Health:
    """The memory database: OK while writable and served, WARN while writes wait in the
    journal (none is lost) or while the node is open but not serving (`state` 'inactive'),
    ERROR once a write was lost. `st` is MemoryStore.status()."""
    if st['ok'] and not st['journaled'] and not episodes_lost:
        level, message = (OK, 'database writable') if state == 'active' else (
            WARN, f'{state}: database open, not serving')
    elif episodes_lost or st['lost']:
        level = ERROR
        message = (f'{st["fault"] or "storage fault"}: {st["lost"]} writes NOT stored; '
                   f'{st["message"]}')
    else:
        level = WARN
        message = (f'{st["fault"] or "journal pending"}: {st["journaled"]} writes '
                   f'journaled; {st["message"]}')
    values = {k: str(v) for k, v in st.items()}
    values.update(episodes_stored=str(episodes_stored), episodes_lost=str(episodes_lost),
                  state=state)
    return Health(level, message, values, path)
