"""What the memory node does with its hub, without ROS: opening, captures and their typed
outcomes, pain, the fault lines and the close."""

import pytest

from maxim_memory.params import MemoryNodeConfig
from maxim_memory.records import (Action, Decision, EpisodeContext, EpisodicMemory, Outcome,
                                  Perception)
from maxim_memory.session import (capture, close_hub, fault_line, LOST, open_hub, OpenError,
                                  opened_line, record_pain, REJECTED, STORED)
from maxim_memory.store import StoreError, StoreFault

T0 = 1_800_000_000.0


def episode():
    return EpisodicMemory(created_at=T0, run_id='run-1',
                          perception=Perception('I see a mug', ['mug']),
                          context=EpisodeContext(goal='grasp_mug', mode='active'),
                          decision=Decision(intent='grasp_mug', confidence=0.7),
                          action=Action('grasp'), outcome=Outcome(True, 0.6, 'done'))


@pytest.fixture
def hub(tmp_path):
    cfg = MemoryNodeConfig(db_path=str(tmp_path / 'memory.db'), embedder='hashing')
    h = open_hub(cfg, warn=lambda line: None, stamp_clock=lambda: T0)
    yield h
    h.close(end_session=False)


def test_an_open_hub_says_where_and_how_much(hub):
    line = opened_line(hub)
    assert line.startswith(f'memory open at {hub.store.path}: 0 episodes, 0 concepts; EC index')


def test_a_memory_that_does_not_open_is_one_line(tmp_path, monkeypatch):
    with pytest.raises(OpenError, match='telepathy'):
        open_hub(MemoryNodeConfig(db_path=str(tmp_path / 'm.db'), embedder='telepathy'),
                 warn=lambda line: None, stamp_clock=lambda: T0)

    def broken(*args, **kwargs):
        raise RuntimeError('sqlite went away')
    monkeypatch.setattr('maxim_memory.session.MemoryHub', broken)
    with pytest.raises(OpenError, match='^RuntimeError: sqlite went away$'):
        open_hub(MemoryNodeConfig(db_path=str(tmp_path / 'm.db'), embedder='hashing'),
                 warn=lambda line: None, stamp_clock=lambda: T0)


def test_captures_are_stored_rejected_or_lost(hub):
    c = capture(hub, 'ep-1', episode)
    assert c.outcome == STORED and c.snapshot is not None and c.line == ''
    assert len(hub.hippocampus) == 1

    def bad():
        raise ValueError('outcome_json is not JSON')
    c = capture(hub, 'ep-2', bad)
    assert c.outcome == REJECTED and c.line == "episode 'ep-2' rejected: outcome_json is not JSON"
    c = capture(None, 'x' * 200, episode)
    assert c.outcome == LOST and c.line == f"episode {'x' * 80!r} NOT stored: memory is not active"
    assert not c.fault


def test_a_capture_neither_the_database_nor_the_journal_takes_is_lost_to_a_fault(hub):
    class Broken:
        def capture_episode(self, ep):
            raise StoreError('disk full')
    c = capture(Broken(), 'ep-3', episode)
    assert c.outcome == LOST and c.fault and c.line == "episode 'ep-3' NOT stored: disk full"


def test_pain_is_recorded_or_says_why_not(hub):
    assert record_pain(None, lambda: None) == 'pain signal not recorded: memory is not active'

    def bad():
        raise ValueError('unknown pain type 99')
    assert record_pain(hub, bad) == 'pain signal not recorded: unknown pain type 99'


def test_fault_lines_and_the_close(hub):
    error, line = fault_line(StoreFault('locked', 'the database is locked', T0), hub)
    assert error and line == 'storage fault (locked): the database is locked'
    error, line = fault_line(None, hub)
    assert not error and line.startswith(f'memory database {hub.store.path} writable again')
    assert fault_line(None, None) == (False, '')
    error, line = close_hub(hub, end_session=True)
    assert not error and line.startswith('memory session ended: ')
