"""The lifecycle sequence (ordered bring-up, reverse shutdown) on a table of node states, and
on real rclpy lifecycle nodes in this process."""

import pytest

from maxim_bringup.lifecycle import (ACTIVE, INACTIVE, LifecycleError, LifecycleSequence,
                                     UNCONFIGURED)

NEXT = {'configure': (UNCONFIGURED, INACTIVE), 'activate': (INACTIVE, ACTIVE),
        'deactivate': (ACTIVE, INACTIVE), 'cleanup': (INACTIVE, UNCONFIGURED)}


class Table:
    """Node states in a dict, as a lifecycle node's state machine moves them; `refuse`
    names the (node, transition) pairs that fail (a failed transition keeps the state)."""

    def __init__(self, names, refuse=()):
        self.states = {n: UNCONFIGURED for n in names}
        self.refuse = set(refuse)
        self.calls = []

    def state(self, name):
        return self.states[name]

    def change(self, name, transition):
        before, after = NEXT[transition]
        assert self.states[name] == before, f'invalid {transition} of {name}'
        self.calls.append((name, transition))
        if (name, transition) in self.refuse:
            return False, 'model file missing'
        self.states[name] = after
        return True, ''


def test_bring_up_in_order_and_down_in_reverse():
    table = Table(['memory', 'llm', 'camera'])
    seq = LifecycleSequence(['memory', 'llm', 'camera'], table)
    seq.startup()
    assert table.calls == [('memory', 'configure'), ('memory', 'activate'),
                           ('llm', 'configure'), ('llm', 'activate'),
                           ('camera', 'configure'), ('camera', 'activate')]
    seq.startup()                       # already up: nothing asked again
    assert len(table.calls) == 6
    table.calls.clear()
    results = seq.shutdown()
    assert [(r.node, r.transition) for r in results] == [
        ('camera', 'deactivate'), ('camera', 'cleanup'), ('llm', 'deactivate'),
        ('llm', 'cleanup'), ('memory', 'deactivate'), ('memory', 'cleanup')]
    assert set(table.states.values()) == {UNCONFIGURED}


def test_a_failed_configure_stops_the_bring_up_and_stays_unconfigured():
    table = Table(['memory', 'llm', 'camera'], refuse={('llm', 'configure')})
    seq = LifecycleSequence(['memory', 'llm', 'camera'], table)
    with pytest.raises(LifecycleError, match='llm: configure failed: model file missing'):
        seq.startup()
    assert table.states == {'memory': ACTIVE, 'llm': UNCONFIGURED, 'camera': UNCONFIGURED}
    assert ('llm', 'activate') not in table.calls          # no transition its state lacks
    results = seq.shutdown()                               # only what came up goes down
    assert [(r.node, r.transition) for r in results] == [('memory', 'deactivate'),
                                                         ('memory', 'cleanup')]


def test_a_refused_step_on_the_way_down_does_not_keep_the_others_up():
    table = Table(['a', 'b'], refuse={('b', 'deactivate')})
    seq = LifecycleSequence(['a', 'b'], table)
    seq.startup()
    results = seq.shutdown()
    assert [(r.node, r.transition, r.ok) for r in results] == [
        ('b', 'deactivate', False), ('a', 'deactivate', True), ('a', 'cleanup', True)]


@pytest.mark.ros
def test_direct_transport_on_real_lifecycle_nodes(tmp_path):
    import rclpy

    from maxim_bringup.lifecycle import DirectTransport
    from maxim_core.nodes.llm_node import LLMNode
    from rclpy.parameter import Parameter

    script = tmp_path / 'script.yaml'
    script.write_text('- hello\n')
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        good = LLMNode(context=ctx, parameter_overrides=[
            Parameter('backend', value='scripted'),
            Parameter('scripted.script_file', value=str(script))])
        bad = LLMNode(context=ctx, namespace='bad', parameter_overrides=[
            Parameter('backend', value='scripted'),
            Parameter('scripted.script_file', value=str(tmp_path / 'missing.yaml'))])
        seq = LifecycleSequence(['good', 'bad'], DirectTransport({'good': good, 'bad': bad}))
        with pytest.raises(LifecycleError, match='bad: configure failed: cannot read'):
            seq.startup()
        assert seq.transport.state('good') == ACTIVE
        assert seq.transport.state('bad') == UNCONFIGURED
        assert [r.ok for r in seq.shutdown()] == [True, True]
        assert seq.transport.state('good') == UNCONFIGURED
        good.destroy_node()
        bad.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)


@pytest.mark.ros
def test_a_lost_get_state_reply_is_asked_again_within_the_budget():
    """ServiceTransport over real DDS, against a get_state service whose first reply comes
    too late (as one DDS dropped never comes): the state is asked again and answered."""
    import threading
    import time

    import rclpy
    from lifecycle_msgs.srv import GetState
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor

    from maxim_bringup.nodes.lifecycle_manager import ServiceTransport

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    server = rclpy.create_node('slow_lc', context=ctx)
    manager = rclpy.create_node('manager', context=ctx)
    group = ReentrantCallbackGroup()
    asked, delays = [], [2.0]      # the first reply is late: the manager stopped waiting
    replied = threading.Condition()
    sent = []

    def get_state(_request, response):
        asked.append(time.monotonic())
        if delays:
            time.sleep(delays.pop())     # the slow service under test
        response.current_state.id = INACTIVE
        with replied:
            sent.append(True)
            replied.notify_all()
        return response

    server.create_service(GetState, 'slow_lc/get_state', get_state, callback_group=group)
    executor = MultiThreadedExecutor(num_threads=4, context=ctx)
    executor.add_node(server)
    executor.add_node(manager)
    halt = threading.Event()

    def spin_loop():
        while not halt.is_set():
            executor.spin_once(timeout_sec=0.1)

    spin = threading.Thread(target=spin_loop, daemon=True)
    spin.start()
    try:
        transport = ServiceTransport(manager, ['slow_lc'], 30.0, 30.0, threading.Event(),
                                     ReentrantCallbackGroup())
        transport.ASK_AGAIN_S = 0.5
        assert transport.state('slow_lc') == INACTIVE
        assert len(asked) >= 2
        transport.timeout_s = 0.2           # the overall budget still holds
        delays.append(1.0)
        with pytest.raises(LifecycleError, match='no answer within 0.2 s'):
            transport.state('slow_lc')
        with replied:                       # the late reply is sent before the teardown
            assert replied.wait_for(lambda: len(sent) == len(asked), timeout=10.0)
    finally:
        halt.set()
        spin.join(timeout=10.0)
        executor.shutdown(timeout_sec=5.0)
        server.destroy_node()
        manager.destroy_node()
        rclpy.try_shutdown(context=ctx)
