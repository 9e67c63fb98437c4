"""What the memory node does with its hub, as plain Python (no rclpy, no messages): the hub
opened from the parameters, an episode captured or a pain recorded as it arrives (the node
hands in the conversion of the message), and the lines a person reads about them.

Every outcome is typed: a memory that does not open is an OpenError with one line; a capture
is stored (in the database or its journal), rejected (bad input: not stored, nothing lost) or
lost (memory not active, or neither the database nor the journal took it), each with its line
for the log. A storage fault (locked, read-only, full disk, a directory in the way, a newer
schema) is one error line when it begins and one when it ends (fault_line); captures meanwhile
go to the journal beside the database (retried every second, replayed at the next open), so an
episode logged as stored is never lost.
"""

from dataclasses import dataclass
from typing import Callable

from maxim_memory.embedding import EmbedderError, make_embedder
from maxim_memory.hub import MemoryHub, UnavailableError
from maxim_memory.params import MemoryNodeConfig
from maxim_memory.store import StoreError, StoreFault

STORED, REJECTED, LOST = 'stored', 'rejected', 'lost'


class OpenError(RuntimeError):
    """Memory did not open (an embedder that does not load, a corrupt database with
    recover_corrupt false, a bad parameter): one line for a person, not a trace."""


def open_hub(cfg: MemoryNodeConfig, warn: Callable[[str], None],
             stamp_clock: Callable[[], float]) -> MemoryHub:
    """The hub of `cfg`: its database, its embedder (a missing package is one `warn` line and
    a fallback), stamped on `stamp_clock` (the node's clock, seconds). OpenError: why not."""
    try:
        embedder = make_embedder(cfg.embedder, cfg.embedding_model_path, warn=warn)
        return MemoryHub(cfg.hub_config(), embedder=embedder, stamp_clock=stamp_clock)
    except (StoreError, EmbedderError, ValueError, TypeError, OSError) as exc:
        raise OpenError(str(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - one line for the person, not a trace
        raise OpenError(f'{type(exc).__name__}: {exc}') from exc


def opened_line(hub: MemoryHub) -> str:
    """What a person reads when memory opens: where, how much, and the EC index."""
    ec = hub.ec_startup
    sim = hub.similarity
    embedder_name = getattr(sim.obj.embedder, 'name', '?') if sim.available else 'no EC'
    return (f'memory open at {hub.store.path}: {len(hub.hippocampus)} episodes, '
            f'{len(hub.atl)} concepts; EC index {"loaded" if ec.get("loaded") else "built"}, '
            f'{ec.get("embedded", 0)} episodes embedded ({embedder_name})')


def fault_line(fault: StoreFault | None, hub: MemoryHub | None) -> tuple[bool, str]:
    """(an error?, the line) when a storage fault begins or changes kind (`fault`), or when
    writes reach the database again (None); '' when there is nothing to say."""
    if fault is not None:
        return True, f'storage fault ({fault.kind}): {fault.message}'
    if hub is None:
        return False, ''
    st = hub.store.status()
    return False, (f'memory database {hub.store.path} writable again; journal replayed '
                   f'({st["replayed"]} writes so far)')


@dataclass(frozen=True)
class Capture:
    """What became of one episode."""

    outcome: str                  # STORED, REJECTED or LOST
    line: str = ''                # for the log ('' when stored)
    snapshot: dict | None = None  # the learning snapshot of a stored episode
    fault: bool = False           # lost to a storage fault: report the health now


def capture(hub: MemoryHub | None, episode_id: str, to_episode: Callable) -> Capture:
    """Capture the episode `to_episode()` makes (a ValueError or TypeError: bad input) in
    `hub` (None: memory is not active)."""
    name = repr(episode_id[:80])
    if hub is None:
        return Capture(LOST, f'episode {name} NOT stored: memory is not active')
    try:
        ep = to_episode()
        hub.capture_episode(ep)
    except (ValueError, TypeError) as exc:     # conversions.ConversionError among them
        return Capture(REJECTED, f'episode {name} rejected: {exc}')
    except StoreError as exc:
        return Capture(LOST, f'episode {name} NOT stored: {exc}', fault=True)
    return Capture(STORED, snapshot=hub.learning_snapshot(ep))


def record_pain(hub: MemoryHub | None, to_pain: Callable) -> str:
    """Record the pain event `to_pain()` makes in `hub` (None: memory is not active); '' when
    recorded, else the line for the log."""
    try:
        if hub is None:
            raise UnavailableError('memory is not active')
        hub.record_pain(to_pain())
    except (UnavailableError, ImportError, ValueError, TypeError) as exc:
        return f'pain signal not recorded: {exc}'
    return ''


def close_hub(hub: MemoryHub, end_session: bool) -> tuple[bool, str]:
    """Close the hub, ending its session first when `end_session` (SCN save -> promote ->
    consolidate -> persist): (an error?, the line for the log; '' for none)."""
    try:
        report = hub.close(end_session=end_session)
    except StoreError as exc:
        return True, f'memory session end not persisted: {exc}'
    return False, f'memory session ended: {report.steps}' if report is not None else ''


def drain(hub: MemoryHub | None) -> None:
    """Replay the journal if the database takes writes again."""
    if hub is not None and hub.store.journaled:
        hub.store.drain_journal()
