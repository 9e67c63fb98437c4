"""The memory node's lifecycle with real rclpy: configure opens the database and creates the
services, activate serves, deactivate stops serving, cleanup ends the session and closes the
database (and a new configure finds everything again), shutdown does the same from any
state; a database or embedder that cannot open fails configure with one clear line."""

import time

from lifecycle_msgs.msg import State
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger

from maxim_common.qos import EVENTS
from maxim_interfaces.msg import Episode
from maxim_interfaces.srv import MemoryRecall, SystemStats
from maxim_memory.nodes.memory_node import MemoryNode
from maxim_memory.store import MemoryStore

pytestmark = pytest.mark.ros

SUCCESS, FAILURE = TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE


def spin_until(executor, cond, timeout=15.0):
    deadline = time.monotonic() + timeout  # a bounded wait, not a timing assertion
    while time.monotonic() < deadline:
        if cond():
            return True
        executor.spin_once(timeout_sec=0.05)
    return cond()


def call(executor, peer, srv_type, service, **fields):
    client = peer.create_client(srv_type, f'memory/{service}')
    try:
        assert spin_until(executor, client.service_is_ready), f'no memory/{service}'
        future = client.call_async(srv_type.Request(**fields))
        assert spin_until(executor, future.done), f'memory/{service} did not answer'
        return future.result()
    finally:
        peer.destroy_client(client)


def episode(i):
    m = Episode(episode_id=f'ep-{i}', run_id='run-1', perception='I see a mug',
                detected_objects=['mug'], goal='grasp_the_mug', tool_name='grasp',
                arguments_json='{"target": "mug"}', success=True, valence=0.6, outcome='held',
                duration_s=1.0)
    m.header.stamp.sec = 1_800_000_000 + i * 60
    return m


def state(node) -> int:
    return node._state_machine.current_state[0]  # noqa: SLF001 - no public getter


def services(node) -> set:
    """The node's own services (not the lifecycle and parameter services every node has)."""
    return {s.srv_name for s in node.services
            if s.srv_type.__module__.split('.')[0] in ('maxim_interfaces', 'std_srvs')}


@pytest.fixture
def ros():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    nodes = []

    def make(namespace='', **params):
        node = MemoryNode(context=ctx, namespace=namespace, parameter_overrides=[
            Parameter(k, value=v) for k, v in {'embedding.backend': 'hashing',
                                               **params}.items()])
        nodes.append(node)
        executor.add_node(node)
        return node

    peer = rclpy.create_node('peer', context=ctx)
    executor.add_node(peer)
    try:
        yield make, peer, executor
    finally:
        for node in nodes + [peer]:
            executor.remove_node(node)
            node.destroy_node()
        executor.shutdown()
        rclpy.try_shutdown(context=ctx)


def test_configure_opens_activate_serves_deactivate_stops_cleanup_persists(ros, tmp_path):
    make, peer, executor = ros
    db = tmp_path / 'memory.db'
    node = make(db_path=str(db))
    assert state(node) == State.PRIMARY_STATE_UNCONFIGURED
    assert node.hub is None and not db.exists() and not services(node)
    assert node.diagnostics.health().message == 'not configured: the database is not open'

    assert node.trigger_configure() == SUCCESS, node.last_error
    assert node.hub is not None and db.exists()
    assert {'memory/system_stats', 'memory/enrich', 'memory/end_session'} <= services(node)
    inactive = call(executor, peer, SystemStats, 'system_stats')   # open, not serving yet
    assert not inactive.available and inactive.error_msg == 'memory is not active'
    assert inactive.error_code == SystemStats.Response.ERROR_UNAVAILABLE
    assert node.diagnostics.health().values['state'] == 'inactive'

    assert node.trigger_activate() == SUCCESS
    pub = peer.create_publisher(Episode, 'episodes', EVENTS)
    assert spin_until(executor, lambda: pub.get_subscription_count() > 0)
    for i in range(3):
        pub.publish(episode(i))
    assert spin_until(executor, lambda: node.episodes_stored == 3)
    assert call(executor, peer, SystemStats, 'system_stats').episodes == 3

    assert node.trigger_deactivate() == SUCCESS
    stopped = call(executor, peer, MemoryRecall, 'memory_recall', tool_name='grasp')
    assert not stopped.available and stopped.error_msg == 'memory is not active'
    end = call(executor, peer, Trigger, 'end_session')
    assert not end.success and end.message == 'memory is not active'
    pub.publish(episode(3))                   # not taken, and says so (counted as lost)
    assert spin_until(executor, lambda: node.episodes_lost == 1)
    assert node.episodes_stored == 3

    hub = node.hub
    assert node.trigger_cleanup() == SUCCESS
    assert state(node) == State.PRIMARY_STATE_UNCONFIGURED
    assert node.hub is None and not services(node) and not list(node.subscriptions)
    assert hub.store._db is None                      # noqa: SLF001 - the file is closed
    with MemoryStore(db) as st:                       # the session ended and persisted
        assert st.count('hippocampus') == 3
        assert st.get_state('relationship_registry') is not None
        assert st.get_state('nac') is not None

    assert node.trigger_configure() == SUCCESS, node.last_error   # reopens what was kept
    assert node.trigger_activate() == SUCCESS
    again = call(executor, peer, MemoryRecall, 'memory_recall', tool_name='grasp', limit=10)
    assert again.available and again.total_matches == 3
    assert sorted(e.episode_id for e in again.episodes) == ['ep-0', 'ep-1', 'ep-2']


def test_shutdown_from_active_persists_and_closes(ros, tmp_path):
    make, peer, executor = ros
    db = tmp_path / 'memory.db'
    node = make(db_path=str(db))
    assert node.trigger_configure() == SUCCESS and node.trigger_activate() == SUCCESS
    pub = peer.create_publisher(Episode, 'episodes', EVENTS)
    assert spin_until(executor, lambda: pub.get_subscription_count() > 0)
    pub.publish(episode(0))
    assert spin_until(executor, lambda: node.episodes_stored == 1)
    hub = node.hub
    assert node.trigger_shutdown() == SUCCESS
    assert state(node) == State.PRIMARY_STATE_FINALIZED
    assert node.hub is None and hub.store._db is None   # noqa: SLF001
    with MemoryStore(db) as st:
        assert st.count('hippocampus') == 1 and st.get_state('scn') is not None


def test_a_corrupt_database_fails_configure_with_one_clear_line(ros, tmp_path, capfd):
    make, _, _ = ros
    db = tmp_path / 'memory.db'
    db.write_bytes(b'this is not an SQLite database at all' * 100)
    node = make(db_path=str(db), recover_corrupt=False)
    capfd.readouterr()
    assert node.trigger_configure() == FAILURE
    assert state(node) == State.PRIMARY_STATE_UNCONFIGURED and node.hub is None
    assert node.last_error.startswith(f'memory did not open: memory database {db} is '
                                      f'unreadable: not an SQLite database (bad header); '
                                      f'moved aside to '), node.last_error
    moved = node.last_error.rsplit('moved aside to ', 1)[1]
    assert open(moved, 'rb').read(4) == b'this'           # kept, for a person to look at
    err = capfd.readouterr().err
    assert node.last_error in err and 'Traceback' not in err
    health = node.diagnostics.health()
    assert 'configure failed: memory did not open' in health.message
    # The bad file is out of the way: configuring again starts a fresh database.
    assert node.trigger_configure() == SUCCESS, node.last_error
    assert node.hub is not None and len(node.hub.hippocampus) == 0


def test_an_embedder_that_does_not_load_fails_configure(ros, tmp_path, capfd):
    make, _, _ = ros
    missing = tmp_path / 'no-such-model.gguf'
    node = make(db_path=str(tmp_path / 'memory.db'), **{
        'embedding.backend': 'llama', 'embedding.model_path': str(missing)})
    assert node.trigger_configure() == FAILURE
    assert node.last_error == f'memory did not open: model file {missing} does not exist'
    bad = make(namespace='other', db_path=str(tmp_path / 'other.db'),
               **{'embedding.backend': 'words'})
    assert bad.trigger_configure() == FAILURE
    assert bad.last_error.startswith("memory did not open: embedding backend must be 'sentence'")
    assert 'Traceback' not in capfd.readouterr().err
    assert not (tmp_path / 'memory.db').exists()   # nothing opened before the embedder


def test_quiesce_then_cleanup_ends_the_session_once(ros, tmp_path, capfd):
    """The runner quiesces (the session-end update goes out while the graph runs) and then
    the lifecycle manager cleans up: the session is not ended twice."""
    from maxim_interfaces.msg import MemoryUpdate
    make, peer, executor = ros
    node = make(db_path=str(tmp_path / 'memory.db'))
    assert node.trigger_configure() == SUCCESS and node.trigger_activate() == SUCCESS
    updates = []
    peer.create_subscription(MemoryUpdate, 'memory/updates', updates.append, EVENTS)
    assert spin_until(executor, lambda: node._updates.get_subscription_count() > 0)  # noqa
    node.quiesce()
    assert spin_until(executor, lambda: any(u.session_end for u in updates))
    assert node.trigger_deactivate() == SUCCESS and node.trigger_cleanup() == SUCCESS
    assert capfd.readouterr().err.count('memory session ended') == 1
    assert [u.session_end for u in updates].count(True) == 1
