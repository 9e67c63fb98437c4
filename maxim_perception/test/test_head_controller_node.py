"""The head_controller node over real DDS: with the MuJoCo head, the dry-run driver, a
serial servo board played by a pty and Dynamixel servos on an emulated bus."""

import math
import os
import select
import signal
import subprocess
import sys
import time
import tty

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from maxim_common.qos import COMMANDS, EVENTS, LATCHED
from maxim_interfaces.msg import AttentionState, HeadGoal, HeadState, PainSignal
from maxim_perception.nodes.head_controller_node import HeadControllerNode
from maxim_perception.nodes.sim_head_node import SimHeadNode

pytestmark = pytest.mark.ros


def spin_until(executor, condition, timeout_s=20.0, each=None):
    """Spin until condition() holds or the deadline passes; `each` runs every iteration."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if each:
            each()
        if condition():
            return True
        executor.spin_once(timeout_sec=0.05)
    return condition()


class Graph:
    def __init__(self, ctx, executor, probe):
        self.ctx, self.executor, self.probe = ctx, executor, probe
        self.state, self.pain, self.commands, self.joints = [], [], [], []
        probe.create_subscription(HeadState, 'head/state', self.state.append, LATCHED)
        probe.create_subscription(PainSignal, 'pain', self.pain.append, EVENTS)
        probe.create_subscription(JointState, 'head/joint_commands', self.commands.append,
                                  COMMANDS)
        probe.create_subscription(JointState, 'joint_states', self.joints.append, 10)
        self.attention_pub = probe.create_publisher(AttentionState, 'attention/state', 10)
        self.goal_pub = probe.create_publisher(HeadGoal, 'head/goal', COMMANDS)
        self.joint_pub = probe.create_publisher(JointState, 'joint_states', 10)

    def add(self, node):
        self.executor.add_node(node)
        return node

    def spin_until(self, condition, timeout_s=20.0, each=None):
        return spin_until(self.executor, condition, timeout_s, each)

    def focus(self, pan, tilt, age_s=0.0):
        msg = AttentionState(mode=AttentionState.MODE_TRACK, has_focus=True, focus_track_id=3,
                             focus_pan=pan, focus_tilt=tilt)
        stamp = self.probe.get_clock().now().nanoseconds * 1e-9 - age_s
        msg.header.stamp.sec = int(stamp)
        msg.header.stamp.nanosec = int((stamp % 1) * 1e9)
        self.attention_pub.publish(msg)

    def goal(self, mode, goal_id, pan=0.0, tilt=0.0, age_s=None, **kw):
        msg = HeadGoal(mode=mode, goal_id=goal_id, requested_by='test', pan=pan, tilt=tilt, **kw)
        if age_s is not None:
            stamp = self.probe.get_clock().now().nanoseconds * 1e-9 - age_s
            msg.header.stamp.sec = int(stamp)
            msg.header.stamp.nanosec = int((stamp % 1) * 1e9)
        self.goal_pub.publish(msg)

    def wait_matched(self):
        assert self.spin_until(lambda: self.goal_pub.get_subscription_count() >= 1
                               and self.attention_pub.get_subscription_count() >= 1)

    def last_state(self):
        return self.state[-1] if self.state else None


@pytest.fixture
def graph():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    probe = rclpy.create_node('probe', context=ctx)
    executor.add_node(probe)
    g = Graph(ctx, executor, probe)
    try:
        yield g
    finally:
        for node in list(executor.get_nodes()):
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def head(graph, **params):
    overrides = [Parameter(k, value=v) for k, v in params.items()]
    return graph.add(HeadControllerNode(context=graph.ctx, parameter_overrides=overrides))


def state_is(graph, **want):
    s = graph.last_state()
    if s is None:
        return False
    for key, value in want.items():
        got = getattr(s, key)
        if isinstance(value, float):
            if abs(got - value) > 0.02:
                return False
        elif got != value:
            return False
    return True


def test_default_limits_match_the_urdf(graph):
    node = head(graph)
    h = node.params.head
    assert (h.pan_min, h.pan_max, h.tilt_min, h.tilt_max) == (-2.6, 2.6, -0.8, 0.8)
    assert node.params.rate_hz == 50.0 and node.params.driver == 'sim'


def test_reflex_goal_override_and_release_with_the_mujoco_head(graph):
    sim_head = graph.add(SimHeadNode(context=graph.ctx, parameter_overrides=[
        Parameter('width', value=32), Parameter('height', value=24),
        Parameter('fps', value=5.0), Parameter('moving_target', value=False)]))
    started, sim_started = time.monotonic(), sim_head.sim.time
    head(graph)
    reflex = lambda: graph.focus(0.5, 0.1)   # noqa: E731 - attention at spin rate

    assert graph.spin_until(lambda: state_is(graph, reflex_active=True, pan=0.5, tilt=0.1,
                                             goal_reached=True), each=reflex)
    assert graph.commands
    assert list(graph.commands[-1].name) == ['head_pan_joint', 'head_tilt_joint']
    assert graph.last_state().driver == 'sim' and graph.last_state().driver_ok
    # A goal overrides the reflex while it holds ...
    graph.wait_matched()
    graph.goal(HeadGoal.MODE_MOVE, 'look-right', pan=-0.4, tilt=0.0)
    assert graph.spin_until(lambda: state_is(graph, active_goal_id='look-right',
                                             mode=HeadGoal.MODE_MOVE, reflex_active=False,
                                             pan=-0.4, goal_reached=True), each=reflex)
    # ... and RELEASE gives the head back to attention.
    graph.goal(HeadGoal.MODE_RELEASE, 'release')
    assert graph.spin_until(lambda: state_is(graph, active_goal_id='', reflex_active=True,
                                             mode=HeadGoal.MODE_RELEASE, pan=0.5),
                            each=reflex)
    # No pain: the head followed its commands. The one pain a starved machine may rightly
    # cause is movement_error, when the simulation thread stalled (its steps are capped at
    # 0.1 s, so a stall is time the simulated body lost while the controller's clock went
    # on): allowed only when the simulation fell measurably behind the wall clock.
    lost_s = (time.monotonic() - started) - (sim_head.sim.time - sim_started)
    lag_pains = [p for p in graph.pain if p.pain_type == PainSignal.TYPE_MOVEMENT_ERROR]
    assert graph.pain == lag_pains and (lost_s > 0.25 or not lag_pains), (
        [(p.type_name, p.context) for p in graph.pain], f'simulation lost {lost_s:.2f} s')


def test_each_new_focus_is_acted_on_and_its_frame_stamp_echoed_with_the_command(graph):
    """head_controller/reflex_source carries the stamp of the attention state (its frame)
    that the command published with it acts on: one per new state, none under a goal."""
    from std_msgs.msg import Header

    sources = []
    graph.probe.create_subscription(Header, 'head_controller/reflex_source', sources.append,
                                    COMMANDS)
    node = head(graph)
    graph.wait_matched()
    stamps = []
    for i in range(5):
        graph.focus(0.1 * i, 0.0, age_s=0.01)
        stamps.append(graph.probe.get_clock().now())
        assert graph.spin_until(lambda: len(sources) > i, timeout_s=10.0)
    assert len(sources) == 5 and len({(h.stamp.sec, h.stamp.nanosec) for h in sources}) == 5
    for header, sent_after in zip(sources, stamps):
        t = header.stamp.sec + header.stamp.nanosec * 1e-9
        assert 0.0 < sent_after.nanoseconds * 1e-9 - t < 5.0   # the state's own stamp
    assert node.commands_sent > 0
    graph.goal(HeadGoal.MODE_STOP, 'hold')
    assert graph.spin_until(lambda: state_is(graph, active_goal_id='hold'))
    graph.focus(0.3, 0.0)
    graph.spin_until(lambda: False, timeout_s=0.3)
    assert len(sources) == 5                      # the goal drives the head, not this focus


def test_a_new_focus_ticks_at_once_in_its_callback_and_bursts_wait_for_the_min_gap(graph):
    """A new attention state is acted on inside its own callback (no wait for the control
    thread), even just after a regular tick; the regular ticks go on a period after it; a
    second state within a quarter period of it is left to the control loop, which ticks once
    the quarter period has passed."""
    node = head(graph, rate_hz=1.0)        # regular ticks 1 s apart, min gap 0.25 s
    assert graph.spin_until(lambda: len(node.tick_times) >= 1)

    def state(pan):
        msg = AttentionState(mode=AttentionState.MODE_TRACK, has_focus=True, focus_track_id=3,
                             focus_pan=pan, focus_tilt=0.0)
        msg.header.stamp = node.get_clock().now().to_msg()
        return msg

    with node._lock:
        node._last_tick = time.monotonic()  # as if a regular tick had just happened
        before = len(node.tick_times)
    node._on_attention(state(0.2))
    assert len(node.tick_times) == before + 1      # ticked in this call, in this thread
    assert node._deadline == pytest.approx(node.tick_times[-1] + 1.0)
    assert not node._act_now
    node._on_attention(state(0.25))                # within the min gap: not now ...
    assert len(node.tick_times) == before + 1 and node._act_now
    assert graph.spin_until(lambda: len(node.tick_times) == before + 2, timeout_s=5.0)
    gap = node.tick_times[-1] - node.tick_times[-2]
    assert 0.25 <= gap < 1.0                       # ... but at the min gap, before the period
    assert not node._act_now


def test_bad_and_stale_goals_are_rejected_and_the_node_keeps_running(graph):
    node = head(graph, driver='dry_run')
    assert graph.spin_until(lambda: graph.last_state() is not None)
    graph.wait_matched()
    graph.goal(HeadGoal.MODE_MOVE, 'nan-goal', pan=math.nan)
    graph.goal(HeadGoal.MODE_MOVE, 'old-goal', pan=1.0, age_s=10.0)
    graph.goal(HeadGoal.MODE_TRACK_TARGET, 'nobody')
    graph.goal(42, 'bad-mode')
    graph.focus(1.0, 0.0, age_s=10.0)          # a stale reflex target
    assert graph.spin_until(lambda: len(node.rejections) >= 5)
    reasons = ' | '.join(node.rejections)
    for why in ("goal 'nan-goal': not finite", "goal 'old-goal': stale",
                "'nobody': track_target needs", "'bad-mode': unknown mode 42",
                'reflex target: stale'):
        assert why in reasons
    graph.state.clear()
    assert graph.spin_until(lambda: len(graph.state) >= 3)
    assert state_is(graph, active_goal_id='', pan=0.0, tilt=0.0, reflex_active=False)
    # Still alive and obeying: an out-of-range goal is clamped to the limits.
    graph.goal(HeadGoal.MODE_MOVE, 'too-far', pan=9.0, tilt=0.3)
    assert graph.spin_until(lambda: state_is(graph, active_goal_id='too-far', pan=2.6,
                                             tilt=0.3, goal_reached=True))
    assert graph.spin_until(lambda: any(p.pain_type == PainSignal.TYPE_JOINT_LIMIT
                                        for p in graph.pain))
    assert node.commands_sent > 0


def test_dry_run_publishes_joint_states_and_goal_expires(graph):
    head(graph, driver='dry_run')
    graph.wait_matched()
    graph.goal(HeadGoal.MODE_MOVE, 'brief', pan=0.3, tilt=-0.2, duration_s=0.5)
    assert graph.spin_until(lambda: graph.joints and abs(graph.joints[-1].position[0] - 0.3)
                            < 1e-6)
    assert list(graph.joints[-1].name) == ['head_pan_joint', 'head_tilt_joint']
    assert graph.spin_until(lambda: state_is(graph, active_goal_id='', pan=0.3, tilt=-0.2,
                                             driver='dry_run', driver_ok=True))


def test_a_stuck_head_hurts(graph):
    head(graph, movement_error_s=0.2)
    stuck = lambda: graph.joint_pub.publish(JointState(   # noqa: E731 - a jammed servo
        name=['head_pan_joint', 'head_tilt_joint'], position=[0.0, 0.0]))
    assert graph.spin_until(lambda: graph.last_state() is not None, each=stuck)
    graph.wait_matched()
    graph.goal(HeadGoal.MODE_MOVE, 'blocked', pan=1.5)
    assert graph.spin_until(lambda: graph.pain, each=stuck)
    pain = graph.pain[0]
    assert pain.pain_type == PainSignal.TYPE_MOVEMENT_ERROR
    assert pain.type_name == 'movement_error' and pain.source == 'head_pan_joint'
    assert 0 < pain.intensity <= 1 and pain.repeat_count == 1
    assert 'deg from its command' in pain.description


class FakeBoard:
    """A servo board on the far end of a pty pair: it answers every P line with itself,
    as the firmware does (the query is left to the test)."""

    def __init__(self):
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)
        self.port = os.ttyname(self._slave)
        self.lines, self._buffer = [], b''

    def poll(self):
        while select.select([self.master], [], [], 0)[0]:
            self._buffer += os.read(self.master, 4096)
        *done, self._buffer = self._buffer.split(b'\n')
        self.lines += [d.decode('ascii') for d in done]
        for line in done:
            if line.startswith(b'P'):
                os.write(self.master, line + b'\n')

    def close(self):
        os.close(self.master)
        os.close(self._slave)


def test_serial_driver_drives_a_board_on_a_pty_and_reads_its_echo(graph):
    board = FakeBoard()
    try:
        head(graph, driver='serial', **{'serial.port': board.port, 'serial.baud': 115200})
        assert graph.spin_until(lambda: board.lines, each=board.poll)
        assert board.lines == ['?']                  # where are the servos? nothing moves
        graph.spin_until(lambda: False, timeout_s=0.3, each=board.poll)
        assert board.lines == ['?']
        os.write(board.master, b'D\n')               # limp: the head starts where it is told
        assert graph.spin_until(lambda: len(board.lines) > 1, each=board.poll)
        assert board.lines[1] == 'P1500 T1500'
        graph.wait_matched()
        graph.goal(HeadGoal.MODE_MOVE, 'left', pan=1.3, tilt=-0.4)
        assert graph.spin_until(lambda: board.lines[-1] == 'P2000 T1000', each=board.poll)

        def echo():
            board.poll()
            os.write(board.master, b'P2000 T1000\n')

        assert graph.spin_until(lambda: state_is(graph, pan=1.3, tilt=-0.4, driver='serial',
                                                 driver_ok=True, goal_reached=True), each=echo)
        assert graph.spin_until(lambda: graph.joints and abs(graph.joints[-1].position[0]
                                                             - 1.3) < 1e-6)
    finally:
        for node in list(graph.executor.get_nodes()):
            if isinstance(node, HeadControllerNode):
                graph.executor.remove_node(node)
                node.destroy_node()
        board.close()


def test_missing_serial_port_is_reported_not_fatal(graph):
    head(graph, driver='serial', **{'serial.port': '/dev/maxim-no-such-port'})
    assert graph.spin_until(lambda: state_is(graph, driver='serial', driver_ok=False))
    assert 'cannot open servo board on /dev/maxim-no-such-port' in graph.last_state().error_msg


def test_dynamixel_driver_drives_an_emulated_servo_bus(graph):
    """driver: dynamixel with the default IDs (pan 1, tilt 2) and the default limits, against
    the emulated protocol-2.0 bus of test/helpers/dynamixel_bus.py (test_dynamixel_driver.py
    covers the driver's faults)."""
    from helpers.dynamixel_bus import DynamixelBus

    bus = DynamixelBus(ids=(1, 2))
    tick = 2 * math.pi / 4096
    try:
        head(graph, driver='dynamixel', **{'dynamixel.port': bus.port})
        assert graph.spin_until(lambda: state_is(graph, driver='dynamixel', driver_ok=True))
        # The servos' own limits come from the URDF's.
        assert bus.limits(1) == (354, 3742) and bus.limits(2) == (1527, 2569)
        assert bus.torque(1) == 1 and bus.torque(2) == 1
        graph.wait_matched()
        graph.goal(HeadGoal.MODE_MOVE, 'left', pan=0.5, tilt=-0.3)
        assert graph.spin_until(lambda: (bus.goal(1), bus.goal(2)) == (2048 + 326, 2048 - 196))
        assert graph.spin_until(lambda: state_is(graph, active_goal_id='left', pan=0.5,
                                                 tilt=-0.3, goal_reached=True,
                                                 driver='dynamixel', driver_ok=True))
        # joint_states carry what the servos measure (whole ticks), not the command.
        assert graph.spin_until(lambda: graph.joints and graph.joints[-1].position[0]
                                == pytest.approx(326 * tick, abs=1e-9)
                                and graph.joints[-1].position[1]
                                == pytest.approx(-196 * tick, abs=1e-9))
        graph.goal(HeadGoal.MODE_MOVE, 'too-far', pan=-9.0, tilt=9.0)
        assert graph.spin_until(lambda: (bus.goal(1), bus.goal(2)) == (354, 2569))
    finally:
        for node in list(graph.executor.get_nodes()):
            if isinstance(node, HeadControllerNode):
                graph.executor.remove_node(node)
                node.destroy_node()
        torque = (bus.torque(1), bus.torque(2))
        bus.close()
    assert torque == (0, 0)        # deactivated: the torque is off


def _head_on_bus(graph, bus):
    node = head(graph, driver='dynamixel', **{'dynamixel.port': bus.port})
    assert graph.spin_until(lambda: state_is(graph, driver='dynamixel', driver_ok=True))
    assert (bus.torque(1), bus.torque(2)) == (1, 1)
    return node


def _fault(graph, bus):
    """The pan servo stops answering: the driver drops the port and goes down."""
    bus.silence(1)
    assert graph.spin_until(lambda: state_is(graph, driver='dynamixel', driver_ok=False))
    assert bus.torque(2) == 1                        # the tilt servo holds meanwhile


def test_deactivate_after_a_bus_fault_turns_off_the_servo_that_still_answers(graph):
    from helpers.dynamixel_bus import DynamixelBus

    with DynamixelBus(ids=(1, 2)) as bus:
        node = _head_on_bus(graph, bus)
        _fault(graph, bus)
        assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
        assert bus.torque(2) == 0
        assert 'pan servo (ID 1)' in node.driver.release_failures[0]
        # Active again, both answering: deactivate turns both off.
        bus.silence(1, False)
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        assert graph.spin_until(lambda: (bus.torque(1), bus.torque(2)) == (1, 1))
        assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
        assert (bus.torque(1), bus.torque(2)) == (0, 0)


def test_shutdown_from_active_turns_the_torque_off(graph):
    from helpers.dynamixel_bus import DynamixelBus

    with DynamixelBus(ids=(1, 2)) as bus:
        node = _head_on_bus(graph, bus)
        assert node.trigger_shutdown() == TransitionCallbackReturn.SUCCESS
        assert (bus.torque(1), bus.torque(2)) == (0, 0)


NODE_PROCESS = '''
import sys
import threading
from maxim_common.lifetime import run
from maxim_perception.nodes.head_controller_node import HeadControllerNode

if sys.argv[1] == 'crash':
    # The node is built and activated, then a bug ends the process before any stop:
    # no deactivate, no destroy_node. Only the driver's exit handler is left.
    import rclpy
    rclpy.init(args=sys.argv)
    node = HeadControllerNode()
    print('active', flush=True)
    sys.stdin.readline()
    raise RuntimeError('a bug nobody caught')
run(lambda: HeadControllerNode(), sys.argv)
'''


def _node_process(bus, how):
    return subprocess.Popen(
        [sys.executable, '-c', NODE_PROCESS, how, '--ros-args', '-p', 'driver:=dynamixel',
         '-p', f'dynamixel.port:={bus.port}'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _reconnect_attempted(bus, pings_before):
    """The driver has dropped the port and tried again (a PING of the silent servo)."""
    return bus.instructions(1).count(0x01) > pings_before


@pytest.mark.parametrize('how', ['sigint', 'crash'])
def test_ctrl_c_and_a_crash_of_the_node_process_leave_the_torque_off(how):
    """The node in a process of its own, as `ros2 run` starts it, on the emulated bus: a
    bus fault (the pan servo stops answering, the tilt servo holds), then Ctrl-C (SIGINT)
    or a crash. The tilt servo, which still answers, ends with its torque off."""
    from helpers.dynamixel_bus import DynamixelBus

    with DynamixelBus(ids=(1, 2)) as bus:
        proc = _node_process(bus, how)
        try:
            deadline = time.monotonic() + 60.0
            while (bus.torque(1), bus.torque(2)) != (1, 1):
                assert proc.poll() is None, proc.communicate()[1]
                assert time.monotonic() < deadline, 'the node never turned the torque on'
                time.sleep(0.05)
            pings = bus.instructions(1).count(0x01)
            bus.silence(1)
            deadline = time.monotonic() + 30.0
            while not _reconnect_attempted(bus, pings):
                assert time.monotonic() < deadline, 'the driver never went down'
                time.sleep(0.05)
            assert bus.torque(2) == 1
            if how == 'sigint':
                proc.send_signal(signal.SIGINT)
            else:
                proc.stdin.write('go\n')
                proc.stdin.flush()
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        if how == 'sigint':
            assert proc.returncode == 0, err
        else:
            assert proc.returncode == 1 and 'RuntimeError: a bug nobody caught' in err
        assert bus.torque(2) == 0, err


def test_missing_dynamixel_port_is_reported_not_fatal(graph):
    head(graph, driver='dynamixel', **{'dynamixel.port': '/dev/maxim-no-such-port'})
    assert graph.spin_until(lambda: state_is(graph, driver='dynamixel', driver_ok=False))
    assert 'cannot open Dynamixel bus on /dev/maxim-no-such-port' in graph.last_state().error_msg


def test_dynamixel_limits_beyond_one_turn_are_a_clear_error(graph, tmp_path):
    from maxim_common.urdf import shipped_urdf
    wide = tmp_path / 'wide.urdf'
    wide.write_text(open(shipped_urdf(), encoding='utf-8').read().replace(
        'lower="-2.6" upper="2.6"', 'lower="-3.5" upper="3.5"'))
    with pytest.raises(ValueError, match="outside the servo's 0..4095"):
        HeadControllerNode(context=graph.ctx, parameter_overrides=[
            Parameter('driver', value='dynamixel'), Parameter('urdf', value=str(wide))])


def test_unknown_driver_is_a_clear_error(graph):
    with pytest.raises(ValueError, match='driver must be one of sim, serial, dry_run, dynamixel'):
        HeadControllerNode(context=graph.ctx,
                           parameter_overrides=[Parameter('driver', value='telepathy')])


def test_stamps_that_are_no_time_are_rejected_and_the_node_keeps_running(graph):
    node = head(graph, driver='dry_run')
    assert graph.spin_until(lambda: graph.last_state() is not None)
    graph.wait_matched()
    for sec, nanosec in ((-1, 0), (-2 ** 31, 999_999_999), (5, 2 ** 32 - 1)):
        goal = HeadGoal(mode=HeadGoal.MODE_MOVE, goal_id=f'g{sec}', pan=0.5)
        goal.header.stamp.sec, goal.header.stamp.nanosec = sec, nanosec
        graph.goal_pub.publish(goal)
        att = AttentionState(mode=AttentionState.MODE_TRACK, has_focus=True, focus_pan=0.5)
        att.header.stamp.sec, att.header.stamp.nanosec = sec, nanosec
        graph.attention_pub.publish(att)
    far = HeadGoal(mode=HeadGoal.MODE_MOVE, goal_id='far-future', pan=0.5)
    far.header.stamp.sec = 2 ** 31 - 1
    graph.goal_pub.publish(far)
    assert graph.spin_until(lambda: len(node.rejections) >= 7)
    reasons = ' | '.join(node.rejections)
    assert "rejected goal 'g-1': negative stamp (-1 s)" in reasons
    assert 'rejected attention state: negative stamp' in reasons
    assert 'nanosec 4294967295 >= 1e9' in reasons
    assert "goal 'far-future': stamped" in reasons and 'in the future' in reasons
    # Alive and obeying.
    graph.goal(HeadGoal.MODE_MOVE, 'after', pan=0.4, tilt=0.1)
    assert graph.spin_until(lambda: state_is(graph, active_goal_id='after', pan=0.4,
                                             tilt=0.1, goal_reached=True))


def test_a_flood_of_bad_goals_is_a_few_log_lines_that_count_the_rest(graph, capfd):
    node = head(graph, driver='dry_run')
    graph.wait_matched()
    capfd.readouterr()
    for i in range(300):
        graph.goal(HeadGoal.MODE_MOVE, f'nan-{i}', pan=math.nan)
        graph.executor.spin_once(timeout_sec=0.01)
    assert graph.spin_until(lambda: node._throttle.suppressed_total >= 100, timeout_s=30)
    graph.spin_until(lambda: False, timeout_s=2.5)
    graph.goal(HeadGoal.MODE_MOVE, 'nan-last', pan=math.nan)   # the period has passed
    assert graph.spin_until(lambda: "'nan-last'" in node.rejections[-1])
    lines = [ln for ln in capfd.readouterr().err.splitlines() if 'rejected goal' in ln]
    assert 2 <= len(lines) <= 6, lines
    assert 'more like it suppressed since the last one' in lines[-1]
