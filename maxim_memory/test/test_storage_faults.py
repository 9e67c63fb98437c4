"""Storage faults are outcomes, not crashes: a locked, read-only or full database, a directory
in its place, a newer schema. Under each, every episode the hub acknowledged (capture
returned) is found again after the fault clears, and the fault is one clear log line."""

import contextlib
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import uuid

import pytest

from maxim_memory.hub import HubConfig, MemoryHub
from maxim_memory.records import Action, EpisodicMemory, Outcome, Perception
from maxim_memory.store import (MemoryStore, SCHEMA_VERSION, StoreError, StoreWriteError)


def _config(db, **kw):
    kw.setdefault('write_budget_s', 0.3)
    return HubConfig(db_path=str(db), background_extraction=False, persist_ec_index=False,
                     **kw)


def _episode(i, pad=0):
    return EpisodicMemory(id=f'ep-{i}', run_id='r',
                          perception=Perception('saw a mug ' + 'x' * pad, ['mug']),
                          action=Action('grasp'), outcome=Outcome(i % 3 != 0, 0.5))


def _capture(hub, i, acked, refused, pad=0):
    """Capture episode i: acknowledged (capture returned) or refused (StoreWriteError)."""
    try:
        hub.capture_episode(_episode(i, pad))
    except StoreWriteError:
        refused.append(i)
        return False
    acked.append(i)
    return True


def _stored_ids(db):
    """The episode ids a fresh open of the database finds (the journal replayed)."""
    with MemoryStore(db) as st:
        return {r['id'] for r in st.load_records('hippocampus')}


def _fault_lines(caplog, kind):
    return [r for r in caplog.records if r.levelno >= logging.ERROR
            and f'storage fault ({kind})' in r.getMessage()]


def test_locked_by_another_connection_journals_then_replays(tmp_path, caplog):
    db = tmp_path / 'memory.db'
    hub = MemoryHub(_config(db))
    acked, refused = [], []
    _capture(hub, 0, acked, refused)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute('BEGIN IMMEDIATE')          # another process holds the write lock
    holder.execute("INSERT INTO state VALUES ('holder', '1', 0)")
    try:
        for i in range(1, 4):
            assert _capture(hub, i, acked, refused)
        st = hub.store.status()
        assert st['fault'] == 'locked' and st['journaled'] >= 3 and st['lost'] == 0
        assert len(hub.hippocampus) == 4 and hub.system_stats()['episodes'] == 4
        assert hub.system_stats()['store']['fault'] == 'locked'
    finally:
        holder.execute('COMMIT')
        holder.close()
    assert len(_fault_lines(caplog, 'locked')) == 1      # one line for three refused writes
    hub.close(end_session=False)
    assert _stored_ids(db) == {f'ep-{i}' for i in acked}
    assert not (tmp_path / 'memory.db.journal').exists()
    assert refused == []


def test_the_journal_drains_while_running_once_the_lock_is_gone(tmp_path, caplog):
    db = tmp_path / 'memory.db'
    hub = MemoryHub(_config(db))
    hub.store.retry_interval_s = 0.0
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute('BEGIN IMMEDIATE')
    acked, refused = [], []
    for i in range(3):
        _capture(hub, i, acked, refused)
    holder.execute('ROLLBACK')
    holder.close()
    assert hub.store.drain_journal()
    assert hub.store.status()['ok'] and hub.store.status()['journaled'] == 0
    _capture(hub, 3, acked, refused)                      # straight to the database again
    assert any('writable again' in r.getMessage() for r in caplog.records)
    with MemoryStore(db) as st:                           # no reopen needed: it is all there
        assert {r['id'] for r in st.load_records('hippocampus')} == {
            f'ep-{i}' for i in range(4)}
    hub.close(end_session=False)


@contextlib.contextmanager
def _read_only(path):
    """Make `path` unwritable even for root (chattr +i), else by mode for other users."""
    if os.geteuid() == 0:
        if shutil.which('chattr') is None or subprocess.run(
                ['chattr', '+i', str(path)], capture_output=True).returncode != 0:
            pytest.skip('root, and chattr +i is not available here: no read-only file')
        try:
            yield
        finally:
            subprocess.run(['chattr', '-i', str(path)], check=True)
    else:
        mode = path.stat().st_mode
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(mode)


def test_read_only_database_journals_and_replays_when_writable(tmp_path, caplog):
    db = tmp_path / 'memory.db'
    hub = MemoryHub(_config(db))
    acked, refused = [], []
    _capture(hub, 0, acked, refused)
    hub.close(end_session=False)
    with _read_only(db):
        hub = MemoryHub(_config(db))
        assert len(hub.hippocampus) == 1                  # still read
        for i in range(1, 4):
            _capture(hub, i, acked, refused)
        assert hub.store.status()['fault'] in ('read_only', 'unavailable', 'io_error')
        hub.close(end_session=False)
    assert refused == [] and len(acked) == 4
    print(f'read-only: {[r.getMessage() for r in caplog.records if r.levelno >= 30]}')
    lines = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert _stored_ids(db) == {f'ep-{i}' for i in acked}


@contextlib.contextmanager
def _small_disk(tmp_path, size_kb):
    """A directory on a tmpfs of `size_kb` (root with mount rights), else None (also for a
    size of 0)."""
    mnt = tmp_path / 'disk'
    mnt.mkdir()
    if not size_kb or os.geteuid() != 0 or subprocess.run(
            ['mount', '-t', 'tmpfs', '-o', f'size={size_kb}k', 'tmpfs', str(mnt)],
            capture_output=True).returncode != 0:
        yield None
        return
    try:
        yield mnt
    finally:
        subprocess.run(['umount', '-l', str(mnt)], capture_output=True)


@pytest.mark.parametrize('medium', ['tmpfs', 'max_page_count'])
def test_full_disk_loses_no_acknowledged_episode(tmp_path, caplog, medium):
    with _small_disk(tmp_path, 256 if medium == 'tmpfs' else 0) as disk:
        db = (disk or tmp_path) / 'memory.db'
        hub = MemoryHub(_config(db))
        if disk is None:    # no tmpfs here: sqlite's own size limit gives the same SQLITE_FULL
            pages = hub.store._db.execute('PRAGMA page_count').fetchone()[0]
            hub.store._db.execute(f'PRAGMA max_page_count={pages + 8}')
        acked, refused = [], []
        i = 0
        while hub.store.status()['ok'] and i < 400:
            _capture(hub, i, acked, refused, pad=3000)
            i += 1
        assert hub.store.status()['fault'] == 'disk_full', hub.store.status()
        for j in range(i, i + 5):
            _capture(hub, j, acked, refused, pad=3000)
        assert len(hub.hippocampus) == len(acked)    # a refused episode is not counted
        assert len(_fault_lines(caplog, 'disk_full')) == 1
        if disk is not None:                         # the disk grows: everything fits again
            subprocess.run(['mount', '-o', 'remount,size=16m', str(disk)], check=True)
        else:
            hub.store._db.execute('PRAGMA max_page_count=1073741823')
        hub.close(end_session=False)
        assert _stored_ids(db) == {f'ep-{k}' for k in acked}
        print(f'full disk ({"a tmpfs" if disk else "max_page_count"}): {len(acked)} '
              f'acknowledged, all found again; {len(refused)} refused as NOT stored')
    assert len(acked) > 0


def test_a_directory_in_the_way_journals_beside_it(tmp_path, caplog):
    db = tmp_path / 'memory.db'
    db.mkdir()
    hub = MemoryHub(_config(db))                      # no traceback: journal-only
    assert hub.store.status()['fault'] == 'unavailable'
    assert any('is a directory' in w for w in hub.warnings)
    acked, refused = [], []
    for i in range(3):
        _capture(hub, i, acked, refused)
    hub.close(end_session=False)
    lines = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and 'is a directory' in lines[0].getMessage()
    db.rmdir()                                        # the person moves it away
    assert _stored_ids(db) == {'ep-0', 'ep-1', 'ep-2'}


def test_a_newer_schema_is_untouched_and_captures_wait_in_the_journal(tmp_path, caplog):
    db = tmp_path / 'memory.db'
    MemoryStore(db).close()
    con = sqlite3.connect(db)
    con.execute(f'PRAGMA user_version={SCHEMA_VERSION + 1}')
    con.commit()
    con.close()
    before = db.read_bytes()
    hub = MemoryHub(_config(db))
    acked, refused = [], []
    for i in range(3):
        _capture(hub, i, acked, refused)
    hub.close(end_session=False)
    assert db.read_bytes() == before                  # a newer Maxim's file is not touched
    lines = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and 'schema version' in lines[0].getMessage()
    journal = [json.loads(ln) for ln in (tmp_path / 'memory.db.journal').read_text()
               .splitlines()]
    kept = {row[1] for e in journal for op, rows in e['steps'] if op == 'put_record'
            for row in rows if row[0] == 'hippocampus'}
    assert kept == {f'ep-{i}' for i in acked} and len(acked) == 3


def test_an_unreadable_file_that_cannot_be_moved_aside_is_no_traceback(tmp_path, caplog):
    if os.geteuid() != 0 or shutil.which('chattr') is None:
        pytest.skip('needs chattr +i to pin a file in place')
    db = tmp_path / 'memory.db'
    db.write_bytes(b'not a database' * 100)
    if subprocess.run(['chattr', '+i', str(db)], capture_output=True).returncode != 0:
        pytest.skip('chattr +i is not supported on this filesystem')
    try:
        hub = MemoryHub(_config(db))
        assert 'cannot be moved aside' in hub.store.status()['message']
        acked, refused = [], []
        _capture(hub, 0, acked, refused)
        hub.close(end_session=False)
        assert acked == [0]
    finally:
        subprocess.run(['chattr', '-i', str(db)], check=True)
    db.unlink()
    assert _stored_ids(db) == {'ep-0'}


def test_a_write_neither_the_database_nor_the_journal_takes_changes_nothing(tmp_path):
    """The layer adds a record in memory only after the store took it."""
    db = tmp_path / 'memory.db'
    hub = MemoryHub(_config(db))
    acked, refused = [], []
    _capture(hub, 0, acked, refused)
    pages = hub.store._db.execute('PRAGMA page_count').fetchone()[0]
    hub.store._db.execute(f'PRAGMA max_page_count={pages}')   # the database is full ...
    (tmp_path / 'memory.db.journal').mkdir()                   # ... and the journal blocked
    stats = hub.system_stats()['episodes']
    with pytest.raises(StoreWriteError, match='NOT stored'):
        hub.capture_episode(_episode(1, pad=20000))
    assert len(hub.hippocampus) == 1 and 'ep-1' not in hub.hippocampus
    assert hub.system_stats()['episodes'] == stats
    assert hub.store.status()['lost'] == 1
    assert isinstance(StoreWriteError.__mro__[1](), StoreError)
    hub.store._db.execute('PRAGMA max_page_count=1073741823')
    hub.close(end_session=False)


def test_a_torn_last_journal_line_is_dropped_and_the_rest_replayed(tmp_path):
    db = tmp_path / 'memory.db'
    MemoryStore(db).close()
    line = {'jid': 'j1', 'seq': 1, 'schema': SCHEMA_VERSION, 'steps': [['put_record', [
        ['atl', 'c1', 'concept', 1.0, json.dumps({'id': 'c1'})]]]]}
    (tmp_path / 'memory.db.journal').write_text(json.dumps(line) + '\n{"seq": 2, "sch')
    with MemoryStore(db) as st:
        assert st.replayed == 1 and st.record_ids('atl') == ['c1']
    assert not (tmp_path / 'memory.db.journal').exists()


def test_a_replay_that_was_applied_but_not_removed_is_not_applied_twice(tmp_path):
    db = tmp_path / 'memory.db'
    journal = tmp_path / 'memory.db.journal'
    rid = uuid.uuid4().hex
    put = {'jid': 'j1', 'seq': 1, 'schema': SCHEMA_VERSION, 'steps': [['put_record', [
        ['atl', rid, 'concept', 1.0, json.dumps({'id': rid})]]]]}
    MemoryStore(db).close()
    journal.write_text(json.dumps(put) + '\n')
    MemoryStore(db).close()                           # replayed: (j1, 1) recorded as applied
    with MemoryStore(db) as st:
        st.delete_records('atl', [rid])               # a later write in the database
    journal.write_text(json.dumps(put) + '\n')        # as if the unlink had failed
    with MemoryStore(db) as st:
        assert st.replayed == 0 and st.record_ids('atl') == []
    journal.write_text(json.dumps(put | {'jid': 'j2'}) + '\n')   # a new journal: replayed
    with MemoryStore(db) as st:
        assert st.replayed == 1 and st.record_ids('atl') == [rid]


@pytest.mark.ros
def test_the_memory_node_stays_up_under_a_lock_and_reports_it_once(tmp_path, capfd):
    import time

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus

    from maxim_interfaces.msg import Episode
    from maxim_interfaces.srv import SystemStats
    from maxim_memory.nodes.memory_node import MemoryNode
    from maxim_common.qos import EVENTS

    db = tmp_path / 'memory.db'
    MemoryStore(db).close()
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    holder = sqlite3.connect(db, isolation_level=None)

    def spin_until(cond, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not cond():
            executor.spin_once(timeout_sec=0.05)
        return cond()

    try:
        node = MemoryNode(context=ctx, autostart=True, parameter_overrides=[
            Parameter('db_path', value=str(db)), Parameter('budgets.write_s', value=0.3)])
        assert node.hub is not None, node.last_error
        probe = rclpy.create_node('probe', context=ctx)
        executor.add_node(node)
        executor.add_node(probe)
        diags = []
        probe.create_subscription(DiagnosticArray, 'diagnostics', diags.append, 10)
        pub = probe.create_publisher(Episode, 'episodes', EVENTS)
        assert spin_until(lambda: pub.get_subscription_count() >= 1)
        capfd.readouterr()
        holder.execute('BEGIN IMMEDIATE')
        for i in range(3):
            pub.publish(Episode(episode_id=f'ep-{i}', run_id='r', perception='a mug',
                                tool_name='grasp', success=True, valence=0.5))
        assert spin_until(lambda: node.episodes_stored == 3)
        assert spin_until(lambda: any(s.level == DiagnosticStatus.WARN and 'locked' in s.message
                                      for d in diags for s in d.status))
        holder.execute('ROLLBACK')
        assert spin_until(lambda: node.hub.store.status()['journaled'] == 0
                          and node.hub.store.status()['ok'])
        assert spin_until(lambda: diags and diags[-1].status[0].level == DiagnosticStatus.OK)
        client = probe.create_client(SystemStats, 'memory/system_stats')
        future = client.call_async(SystemStats.Request())
        assert spin_until(future.done)
        assert future.result().episodes == 3
        err = capfd.readouterr().err
        assert err.count('storage fault (locked)') == 1, err
        assert 'writable again' in err and 'NOT stored' not in err
    finally:
        holder.close()
        for n in list(executor.get_nodes()):
            n.destroy_node()
        executor.shutdown()
        rclpy.try_shutdown(context=ctx)
    assert _stored_ids(db) == {'ep-0', 'ep-1', 'ep-2'}
