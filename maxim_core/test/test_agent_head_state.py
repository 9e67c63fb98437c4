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
    finally:
        for node in (probe, agent):
            if node is not None:
                node.destroy_node()
        rclpy.try_shutdown(context=ctx)
