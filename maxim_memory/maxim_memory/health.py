"""Health of the memory node as plain data (no rclpy, no messages).

Each node calls a builder here with the numbers it keeps; maxim_common.diagnostics publishes
the result on `diagnostics` (maxim_common.health says why the judgement is plain code).
"""

from maxim_common.health import ERROR, Health, not_ready, OK, WARN


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


def memory_node_health(hub, last_error: str, episodes_stored: int, episodes_lost: int,
                       active: bool) -> Health:
    """The memory node: its database's health (database_health) once `hub` (a MemoryHub) is
    open, else why not (`last_error`: the configure failure)."""
    if hub is None:
        reason = f'configure failed: {last_error}' if last_error else ''
        return not_ready(reason or 'the database is not open')
    return database_health(hub.store.status(), episodes_stored, episodes_lost,
                           str(hub.store.path), 'active' if active else 'inactive')
