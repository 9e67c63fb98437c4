"""SQLite store: durability across kill -9, schema versioning, corrupt files set aside."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from maxim_memory.hub import HubConfig, MemoryHub
from maxim_memory.store import (CorruptStoreError, EdgeRow, ForeignStoreError, MemoryStore,
                                SCHEMA_VERSION, SchemaVersionError)


def _rec(i):
    return {'id': f'r{i}', 'kind': 'math', 'created_at': float(i), 'name': f'n{i}'}


def test_records_state_and_edges_persist(tmp_path):
    db = tmp_path / 'm.db'
    with MemoryStore(db) as st:
        st.put_record('atl', _rec(1))
        st.put_records('atl', [_rec(2), _rec(3)])
        st.delete_records('atl', ['r2'])
        st.put_state('nac', {'links': [1, 2]})
        st.replace_edges('atl', [EdgeRow('r1', 'r3', 'IS_A', 0.5, {'k': 1})])
    with MemoryStore(db) as st:
        assert [r['id'] for r in st.load_records('atl')] == ['r1', 'r3']
        assert st.count('atl') == 2 and st.count() == 2
        assert st.get_state('nac') == {'links': [1, 2]} and st.get_state('none') is None
        assert st.load_edges('atl') == [EdgeRow('r1', 'r3', 'IS_A', 0.5, {'k': 1})]
        assert st.schema_version() == SCHEMA_VERSION
        assert st.migrations()[0][0] == 1
        assert st._db.execute('PRAGMA journal_mode').fetchone()[0] == 'wal'


def test_garbage_file_is_reported_and_moved_aside(tmp_path):
    db = tmp_path / 'm.db'
    db.write_bytes(b'this is not a database at all' * 100)
    with pytest.raises(CorruptStoreError) as err:
        MemoryStore(db, clock=lambda: 0.0)
    assert 'bad header' in str(err.value)
    assert not db.exists()
    assert err.value.moved_to == tmp_path / 'm.db.corrupt-19700101T000000'
    assert err.value.moved_to.read_bytes().startswith(b'this is not')  # kept, not emptied
    with MemoryStore(db) as st:  # the path is free again: a fresh store opens
        assert st.count() == 0


def test_truncated_file_is_reported_and_kept(tmp_path):
    db = tmp_path / 'm.db'
    with MemoryStore(db) as st:
        st.put_records('hippocampus', [_rec(i) | {'pad': 'x' * 2000} for i in range(200)])
        st.checkpoint()
    data = db.read_bytes()
    db.write_bytes(data[:len(data) // 3])
    with pytest.raises(CorruptStoreError) as err:
        MemoryStore(db)
    assert err.value.moved_to.exists() and err.value.moved_to.stat().st_size == len(data) // 3
    assert not db.exists()


def test_foreign_sqlite_database_is_not_adopted(tmp_path):
    db = tmp_path / 'other.db'
    con = sqlite3.connect(db)
    con.execute('CREATE TABLE customers (name TEXT)')
    con.execute("INSERT INTO customers VALUES ('x')")
    con.commit()
    con.close()
    with pytest.raises(ForeignStoreError) as err:
        MemoryStore(db)
    con = sqlite3.connect(err.value.moved_to)
    assert con.execute('SELECT name FROM customers').fetchall() == [('x',)]
    con.close()


def test_newer_schema_is_left_untouched(tmp_path):
    db = tmp_path / 'm.db'
    MemoryStore(db).close()
    con = sqlite3.connect(db)
    con.execute(f'PRAGMA user_version={SCHEMA_VERSION + 1}')
    con.commit()
    con.close()
    with pytest.raises(SchemaVersionError):
        MemoryStore(db)
    assert db.exists()


def test_bad_synchronous_mode_is_rejected(tmp_path):
    with pytest.raises(ValueError):
        MemoryStore(tmp_path / 'm.db', synchronous='OFF')


_WRITER = textwrap.dedent('''
    import sys
    from maxim_memory.hub import HubConfig, MemoryHub
    from maxim_memory.records import Action, EpisodicMemory, Outcome, Perception
    hub = MemoryHub(HubConfig(db_path=sys.argv[1]))
    i = 0
    while True:  # the real capture path: hippocampus, NAc, SCN, EC, extractor
        ep = EpisodicMemory(id=f'ep-{i}', run_id='r', perception=Perception('saw mug', ['mug']),
                            action=Action('grasp'), outcome=Outcome(i % 3 != 0, 0.5))
        hub.capture_episode(ep)
        print(f'ack {i}', flush=True)
        i += 1
''')


@pytest.mark.slow
def test_kill_9_mid_capture_loses_nothing_acknowledged(tmp_path, record_property):
    db = tmp_path / 'memory.db'
    proc = subprocess.Popen([sys.executable, '-c', _WRITER, str(db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    acked = []
    try:
        for line in proc.stdout:  # bounded: we kill after 150 acknowledgements
            acked.append(int(line.split()[1]))
            if len(acked) >= 150:
                proc.send_signal(signal.SIGKILL)
                break
        else:
            pytest.fail(f'writer ended early: {proc.stderr.read()[-2000:]}')
        acked += [int(line.split()[1]) for line in proc.stdout.read().splitlines()
                  if line.startswith('ack')]
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    with MemoryStore(db) as st:
        stored = {int(i.split('-')[1]) for i in st.record_ids('hippocampus')}
    assert stored >= set(acked), f'lost acknowledged: {sorted(set(acked) - stored)}'
    attempted = max(acked) + 1  # the store in flight when the signal landed
    in_flight_lost = 0 if attempted in stored else 1
    record_property('acknowledged', len(acked))
    record_property('in_flight_lost', in_flight_lost)
    print(f'kill -9: {len(acked)} acknowledged, all present; stored {len(stored)}; '
          f'in-flight lost: {in_flight_lost}')
    hub = MemoryHub(HubConfig(db_path=str(db), recover_corrupt=False))  # the memory reopens
    try:
        assert len(hub.hippocampus) == len(stored) and not hub.warnings
        assert hub.extractor.drain(timeout=20)  # concept refs lost in the crash are rebuilt
        assert all(hub.atl.citing('hippocampus', f'ep-{i}') for i in stored)
    finally:
        hub.close(end_session=False)
