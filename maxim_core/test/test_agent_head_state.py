"""The agent knows where the head is from head/state (~10 Hz), carried forward along the
head's velocity for the time since the state was measured (bounded)."""

import time

import pytest


@pytest.mark.ros
def test_the_agent_reads_the_head_from_its_state_and_carries_it_along_its_velocity(tmp_path):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from maxim_core.nodes.agent_body import HEAD_EXTRAPOLATE_S
    from maxim_core.nodes.agent_node import AgentNode
    from maxim_common.qos import LATCHED
    from maxim_interfaces.msg import HeadState

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    agent = probe = None
    try:
        agent = AgentNode(context=ctx, autostart=True, parameter_overrides=[
            Parameter('workspace_root', value=str(tmp_path)),
            Parameter('idle.enabled', value=False),
            Parameter('idle.task_db_path', value=str(tmp_path / 'tasks.db')),
            Parameter('tools.index_path', value='')])
        probe = rclpy.create_node('head_probe', context=ctx)
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(agent)
        ex.add_node(probe)
        pub = probe.create_publisher(HeadState, 'head/state', LATCHED)
        assert agent.body.head_position() is None            # nothing heard: no position

        def state(pan, tilt, vpan, age_s):
            msg = HeadState(pan=pan, tilt=tilt, pan_velocity=vpan, tilt_velocity=0.0)
            now = agent.get_clock().now().nanoseconds - int(age_s * 1e9)
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now, 10**9)
            return msg

        deadline = time.monotonic() + 30.0
        while agent.body.head != (0.5, 0.1) and time.monotonic() < deadline:
            pub.publish(state(0.5, 0.1, 1.0, 0.1))       # 1 rad/s, measured 0.1 s ago
            ex.spin_once(timeout_sec=0.05)
        assert agent.body.head == (0.5, 0.1), 'head/state never reached the agent'
        pan, tilt = agent.body.head_position()
        assert 0.6 <= pan <= 0.5 + HEAD_EXTRAPOLATE_S + 1e-6 and tilt == 0.1
        # A state long past is carried at most HEAD_EXTRAPOLATE_S; a still head not at all.
        agent.body.state = (1.0, 0.0, agent.get_clock().now().nanoseconds * 1e-9 - 5.0)
        assert agent.body.head_position()[0] == pytest.approx(0.5 + HEAD_EXTRAPOLATE_S)
        agent.body.state = (0.0, 0.0, agent.get_clock().now().nanoseconds * 1e-9 - 0.1)
        assert agent.body.head_position() == (0.5, 0.1)
        # A non-finite reading is no position: the last good one stands.
        agent._on_head(HeadState(pan=float('nan'), tilt=0.0))
        assert agent.body.head == (0.5, 0.1)
        # The neck motor's fault reaches the mind as a percept of the body, once.
        agent._on_head(HeadState(pan=0.5, tilt=0.1, driver='dynamixel', driver_ok=True))
        while agent.mind.runtime.waiting():
            agent.mind.runtime._inbox.get_nowait()
        agent._on_head(HeadState(pan=0.5, tilt=0.1, driver='dynamixel', driver_ok=False,
                                 error_msg='tilt servo (ID 2) reports a hardware error'))
        percept = agent.mind.runtime._inbox.get_nowait()
        assert percept.source == 'body' and 'My neck motor stopped answering' in \
            percept.narrative and 'tilt servo (ID 2)' in percept.narrative
    finally:
        for node in (probe, agent):
            if node is not None:
                node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def _state(ok, error='', driver='dynamixel'):
    from types import SimpleNamespace
    stamp = SimpleNamespace(sec=0, nanosec=0)
    return SimpleNamespace(pan=0.0, tilt=0.0, pan_velocity=0.0, tilt_velocity=0.0,
                           header=SimpleNamespace(stamp=stamp), driver=driver, driver_ok=ok,
                           error_msg=error)


def test_a_neck_motor_that_stops_answering_is_news_once_and_so_is_its_return():
    from maxim_core.nodes.agent_body import HeadBody

    body = HeadBody(lambda: 0.0)
    body.update(_state(True))
    assert body.news is None                         # a head that works is no news
    body.update(_state(False, 'pan servo (ID 1) does not answer (power, cable, or the bus)'))
    assert body.news.startswith('My neck motor stopped answering (dynamixel driver: pan servo')
    assert 'will not move' in body.news
    body.update(_state(False, 'reconnecting in 1.0 s'))
    assert body.news is None                         # the same outage: said once
    body.update(_state(True))
    assert body.news == 'My neck motor answers again (dynamixel driver): my head can move.'
    body.update(_state(True))
    assert body.news is None
    # A head that is down from its first state on is news at once.
    fresh = HeadBody(lambda: 0.0)
    fresh.update(_state(False, 'cannot open Dynamixel bus on /dev/ttyUSB0'))
    assert 'cannot open Dynamixel bus' in fresh.news
