"""The head under ros2_control (driver: ros2_control).

The contract's logic without ROS (head/ros2_control.py: joint order, units, limits, the time
of a trajectory point, staleness, a missing controller), the messages it becomes
(conversions.py), then the head controller node over real DDS against a stand-in controller:
an rclpy node that takes the controller's command message for its joints, in its order, and
publishes joint_states that move towards the command, as a ForwardCommandController or a
JointTrajectoryController with joint_state_broadcaster would.
"""

import math
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from maxim_common.qos import COMMANDS, LATCHED
from maxim_interfaces.msg import HeadGoal, HeadState
from maxim_perception.conversions import controller_command_to_msg
from maxim_perception.head.drivers import DriverError, HeadDriver
from maxim_perception.head.ros2_control import (ControllerCommand, head_joints,
                                                Ros2ControlConfig, Ros2ControlDriver,
                                                time_to_reach)
from maxim_perception.nodes.head_controller_node import HeadControllerNode

PAN, TILT = 'head_pan_joint', 'head_tilt_joint'


class Clock:
    def __init__(self, t=100.0):
        self.t = t

    def __call__(self):
        return self.t


class Controller:
    """The driver's view of the graph: what it sent, how many subscribe."""

    def __init__(self, subscribers=1):
        self.sent: list[ControllerCommand] = []
        self.subscribers = subscribers

    def send(self, command):
        self.sent.append(command)

    def count(self):
        return self.subscribers


def make(config=None, subscribers=1, **kw):
    clock, ctl = Clock(), Controller(subscribers)
    driver = Ros2ControlDriver(config or Ros2ControlConfig(**kw), ctl.send, ctl.count,
                               clock=clock)
    return driver, ctl, clock


# ---- the pure contract -------------------------------------------------------------------

def test_it_is_a_head_driver_and_names_its_topics():
    driver, _, _ = make()
    assert isinstance(driver, HeadDriver) and driver.name == 'ros2_control'
    assert Ros2ControlConfig().command_topic == 'head_position_controller/commands'
    assert (Ros2ControlConfig(interface='joint_trajectory').command_topic
            == 'head_trajectory_controller/joint_trajectory')
    assert Ros2ControlConfig(controller='neck').command_topic == 'neck/commands'


@pytest.mark.parametrize('kw,match', [
    ({'interface': 'effort'}, 'interface must be one of forward_position, joint_trajectory'),
    ({'joints': (PAN,)}, 'must list head_pan_joint and head_tilt_joint, once each'),
    ({'joints': (PAN, PAN)}, 'once each'),
    ({'joints': (PAN, TILT, 'gripper')}, 'once each'),
    ({'joints': ('pan', 'tilt')}, 'once each'),
    ({'controller': 'bad name!'}, 'is no ROS name'),
    ({'pan_joint': TILT}, 'pan and tilt joints must differ'),
    ({'state_timeout_s': 0.0}, 'state_timeout_s must be a finite number > 0'),
    ({'pan_limits': (1.0, -1.0)}, 'pan limits must be finite with min < max'),
])
def test_bad_configuration_is_refused_with_the_reason(kw, match):
    with pytest.raises(ValueError, match=match):
        Ros2ControlConfig(**kw)


def test_joint_states_are_read_by_name_in_any_order_extra_joints_ignored():
    names = ['wheel', TILT, 'gripper', PAN]
    assert head_joints(names, [9.0, -0.25, 7.0, 1.5]) == (1.5, -0.25)
    assert head_joints([PAN], [0.1]) is None                       # tilt missing
    assert head_joints([PAN, TILT], [0.1]) is None                 # positions too short
    assert head_joints([PAN, TILT], [math.nan, 0.0]) is None
    assert head_joints(['a', 'b'], [0.1, 0.2], pan_joint='b', tilt_joint='a') == (0.2, 0.1)


def test_commands_are_in_the_controllers_order_in_radians_clamped_to_the_limits():
    driver, ctl, _ = make(joints=(TILT, PAN))
    driver.feed([PAN, TILT], [0.0, 0.0])
    driver.open()
    driver.write(0.5, -0.3)
    assert ctl.sent[-1] == ControllerCommand((TILT, PAN), (-0.3, 0.5), None)
    driver.write(9.0, -9.0)
    assert ctl.sent[-1].positions == (-0.8, 2.6)
    driver.write(-9.0, 9.0)
    assert ctl.sent[-1].positions == (0.8, -2.6)
    narrow, ctl2, _ = make(pan_limits=(-1.0, 1.2), tilt_limits=(-0.1, 0.2))
    narrow.feed([PAN, TILT], [0.0, 0.0])
    narrow.open()
    narrow.write(3.0, -3.0)
    assert ctl2.sent[-1].positions == (1.2, -0.1)


def test_a_trajectory_point_takes_the_time_the_farthest_joint_needs_at_max_velocity():
    assert time_to_reach((0.0, 0.0), (1.5, -0.3), 3.0, 0.02) == pytest.approx(0.5)
    assert time_to_reach((0.5, 0.1), (0.5, 0.1), 3.0, 0.02) == 0.02
    assert time_to_reach(None, (1.0, 1.0), 3.0, 0.02) == 0.02
    driver, ctl, _ = make(interface='joint_trajectory', joints=(TILT, PAN), max_velocity=2.0)
    driver.feed([PAN, TILT], [0.25, 0.5])
    driver.open()
    driver.write(1.25, 0.0)            # pan 1.0 rad away at 2 rad/s: 0.5 s
    assert ctl.sent[-1] == ControllerCommand((TILT, PAN), (0.0, 1.25), pytest.approx(0.5))
    driver.write(9.0, 0.5)             # to the limit 2.6, not to 9: (2.6 - 0.25) / 2
    assert ctl.sent[-1].time_from_start_s == pytest.approx(2.35 / 2.0)


def test_the_measured_position_is_what_read_returns():
    driver, _, clock = make()
    driver.feed(['x', TILT, PAN], [3.0, -0.2, 0.7])
    driver.open()
    assert driver.read() == (0.7, -0.2)
    clock.t += 0.1
    assert not driver.feed(['x'], [1.0])            # no head joints: ignored
    assert driver.read() == (0.7, -0.2) and driver.ignored_states == 1


def test_no_controller_is_a_clear_error_and_nothing_is_sent():
    driver, ctl, _ = make(subscribers=0)
    driver.feed([PAN, TILT], [0.0, 0.0])
    with pytest.raises(DriverError, match='controller head_position_controller is not there: '
                       'nothing subscribes to head_position_controller/commands'):
        driver.open()
    with pytest.raises(DriverError, match='is not there'):
        driver.write(0.1, 0.1)
    assert ctl.sent == []
    ctl.subscribers = 1
    driver.open()
    driver.write(0.1, 0.1)
    ctl.subscribers = 0                              # it was there: now it went away
    with pytest.raises(DriverError, match='controller head_position_controller went away'):
        driver.write(0.2, 0.2)
    assert len(ctl.sent) == 1


def test_missing_or_stale_joint_states_hold_the_head_with_the_reason():
    driver, ctl, clock = make(state_timeout_s=0.5)
    with pytest.raises(DriverError, match='no joint_states with head_pan_joint and '
                       'head_tilt_joint yet .is joint_state_broadcaster active'):
        driver.open()
    driver.feed([PAN, TILT], [0.1, 0.0])
    driver.open()
    clock.t += 0.5
    driver.write(0.2, 0.0)                           # exactly the timeout: still fresh
    clock.t += 0.2
    with pytest.raises(DriverError, match=r'joint_states stopped: .* last reported 0\.7 s '
                       r'ago \(state_timeout_s 0\.5\); the head holds'):
        driver.read()
    with pytest.raises(DriverError, match='joint_states stopped'):
        driver.write(0.3, 0.0)
    assert [c.positions for c in ctl.sent] == [(0.2, 0.0)]
    driver.feed([PAN, TILT], [0.2, 0.0])             # back
    driver.open()
    assert driver.read() == (0.2, 0.0)


def test_write_before_open_and_after_close_is_refused():
    driver, ctl, _ = make()
    driver.feed([PAN, TILT], [0.0, 0.0])
    with pytest.raises(DriverError, match='before open'):
        driver.write(0.0, 0.0)
    driver.open()
    driver.close()
    driver.close()
    with pytest.raises(DriverError, match='before open'):
        driver.read()
    assert ctl.sent == []


def test_commands_become_the_controllers_messages():
    forward = controller_command_to_msg(ControllerCommand((TILT, PAN), (-0.3, 0.5)),
                                        'forward_position')
    assert isinstance(forward, Float64MultiArray) and list(forward.data) == [-0.3, 0.5]
    traj = controller_command_to_msg(ControllerCommand((TILT, PAN), (-0.3, 0.5), 1.25),
                                     'joint_trajectory')
    assert isinstance(traj, JointTrajectory)
    assert list(traj.joint_names) == [TILT, PAN] and len(traj.points) == 1
    point = traj.points[0]
    assert list(point.positions) == [-0.3, 0.5]
    assert (point.time_from_start.sec, point.time_from_start.nanosec) == (1, 250_000_000)
    assert (traj.header.stamp.sec, traj.header.stamp.nanosec) == (0, 0)   # start now


# ---- the node over real DDS, with a stand-in controller ----------------------------------

@pytest.fixture
def graph():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    probe = rclpy.create_node('probe', context=ctx)
    executor.add_node(probe)
    g = Graph(ctx, executor, probe)
    probe.create_subscription(HeadState, 'head/state', g.states.append, LATCHED)
    g.goal_pub = probe.create_publisher(HeadGoal, 'head/goal', COMMANDS)
    try:
        yield g
    finally:
        for node in list(executor.get_nodes()):
            executor.remove_node(node)
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)


class Graph:
    def __init__(self, ctx, executor, probe):
        self.ctx, self.executor, self.probe = ctx, executor, probe
        self.states = []
        self.goal_pub = None

    def spin_until(self, condition, timeout_s=30.0):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if condition():
                return True
            self.executor.spin_once(timeout_sec=0.02)
        return condition()

    def spin_states(self, n):
        """Spin until n more head/state messages have come (10 a second)."""
        want = len(self.states) + n
        return self.spin_until(lambda: len(self.states) >= want)

    def head(self, **params):
        params = {'driver': 'ros2_control', 'reconnect_max_s': 0.5, **params}
        node = HeadControllerNode(context=self.ctx, parameter_overrides=[
            Parameter(k, value=v) for k, v in params.items()])
        self.executor.add_node(node)
        return node

    def controller(self, **kw):
        node = StandInController(self.ctx, **kw)
        self.executor.add_node(node)
        return node

    def goal(self, goal_id, pan, tilt):
        assert self.spin_until(lambda: self.goal_pub.get_subscription_count() >= 1)
        self.goal_pub.publish(HeadGoal(mode=HeadGoal.MODE_MOVE, goal_id=goal_id,
                                       requested_by='test', pan=pan, tilt=tilt))

    def state(self, **want):
        if not self.states:
            return False
        s = self.states[-1]
        return all(abs(getattr(s, k) - v) <= 0.01 if isinstance(v, float)
                   else getattr(s, k) == v for k, v in want.items())


class StandInController(Node):
    """A controller and its joint_state_broadcaster, played in the test.

    Takes the command message of `interface` for `joints` in that order, as the real
    controllers do (a Float64MultiArray of another size is refused, as ForwardCommandController
    refuses it; a JointTrajectory names its joints), and publishes joint_states with the head's
    joints among others, in an order of its own, moving each joint towards its command at
    `speed` rad/s. `blocked` holds a joint back at a bound (a jammed joint); `publishing`
    False stops joint_states; `leave()` drops the command subscription (the controller is
    unloaded).
    """

    EXTRA = ('wheel_joint', 'gripper_joint')

    def __init__(self, ctx, interface='forward_position', joints=(PAN, TILT),
                 start=(0.0, 0.0), speed=2.0, rate_hz=50.0):
        super().__init__('stand_in_controller', context=ctx)
        self.joints = list(joints)
        self.position = {PAN: start[0], TILT: start[1], 'wheel_joint': 5.0,
                         'gripper_joint': -5.0}
        self.target: dict[str, float] = {}
        self.received: list[dict] = []   # {joint: position}, 'tfs', 'at': position on arrival
        self.refused: list[str] = []
        self.blocked: dict[str, tuple[float, float]] = {}
        self.speed = speed
        self.publishing = True
        qos = QoSProfile(depth=10)       # rclcpp's SystemDefaultsQoS, as the controllers use
        if interface == 'forward_position':
            self.sub = self.create_subscription(
                Float64MultiArray, 'head_position_controller/commands', self._on_forward, qos)
        else:
            self.sub = self.create_subscription(
                JointTrajectory, 'head_trajectory_controller/joint_trajectory',
                self._on_trajectory, qos)
        self.pub = self.create_publisher(JointState, 'joint_states', qos)
        self._last = time.monotonic()
        self.create_timer(1.0 / rate_hz, self._tick)

    def _command(self, positions: dict, tfs):
        self.received.append({**positions, 'tfs': tfs,
                              'at': {j: self.position[j] for j in (PAN, TILT)}})
        self.target.update(positions)

    def _on_forward(self, msg):
        if len(msg.data) != len(self.joints):
            self.refused.append(f'{len(msg.data)} values for {len(self.joints)} joints')
            return
        self._command(dict(zip(self.joints, msg.data)), None)

    def _on_trajectory(self, msg):
        if sorted(msg.joint_names) != sorted(self.joints) or len(msg.points) != 1:
            self.refused.append(f'joints {list(msg.joint_names)}, {len(msg.points)} points')
            return
        point = msg.points[0]
        tfs = point.time_from_start.sec + point.time_from_start.nanosec * 1e-9
        self._command(dict(zip(msg.joint_names, point.positions)), tfs)

    def leave(self):
        self.destroy_subscription(self.sub)

    def _tick(self):
        now = time.monotonic()
        step, self._last = self.speed * (now - self._last), now
        for joint, target in self.target.items():
            pos = self.position[joint]
            pos += max(-step, min(step, target - pos))
            lo, hi = self.blocked.get(joint, (-math.inf, math.inf))
            self.position[joint] = max(lo, min(hi, pos))
        if self.publishing:
            names = ['wheel_joint', TILT, 'gripper_joint', PAN]
            self.pub.publish(JointState(name=names, position=[self.position[n] for n in names]))

    def last(self, joint):
        return self.received[-1][joint] if self.received else None


def near(a, b, tol=1e-6):
    return a is not None and abs(a - b) <= tol


@pytest.mark.ros
def test_forward_commands_arrive_in_the_controllers_order_in_radians_within_the_limits(graph):
    """The controller's joints are tilt then pan (the head's are pan, tilt), joint_states list
    other joints too and in another order, and the head starts away from zero."""
    ctl = graph.controller(joints=(TILT, PAN), start=(0.3, -0.1), speed=1.5)
    head = graph.head(**{'ros2_control.joints': [TILT, PAN]})
    assert graph.spin_until(lambda: graph.state(driver='ros2_control', driver_ok=True)), (
        graph.states[-1:])
    assert graph.spin_until(lambda: ctl.received)
    # The first command holds the head where it measures it, in the controller's order: no
    # jump to zero, and not tilt's value on pan.
    first = ctl.received[0]
    assert near(first[PAN], 0.3) and near(first[TILT], -0.1), first

    graph.goal('look', 0.5, -0.3)
    assert graph.spin_until(lambda: near(ctl.last(PAN), 0.5) and near(ctl.last(TILT), -0.3))
    assert graph.spin_until(lambda: graph.state(active_goal_id='look', pan=0.5, tilt=-0.3,
                                                goal_reached=True))

    graph.goal('too-far', 9.0, -9.0)
    assert graph.spin_until(lambda: near(ctl.last(PAN), 2.6) and near(ctl.last(TILT), -0.8))
    assert max(r[PAN] for r in ctl.received) <= 2.6 + 1e-9
    assert min(r[TILT] for r in ctl.received) >= -0.8 - 1e-9
    assert ctl.refused == [] and head.commands_sent >= len(ctl.received)
    # joint_state_broadcaster (here: the stand-in) is the one publisher of joint_states.
    publishers = graph.probe.get_publishers_info_by_topic('/joint_states')
    assert [p.node_name for p in publishers] == ['stand_in_controller']


@pytest.mark.ros
def test_measured_states_close_the_loop(graph):
    """A goal counts as reached when the controller's joint_states say so, not when the
    command has got there: a held-back joint keeps it unreached."""
    ctl = graph.controller(speed=2.0)
    graph.head()
    assert graph.spin_until(lambda: graph.state(driver_ok=True))
    ctl.blocked[TILT] = (-0.25, math.inf)
    graph.goal('down', -0.4, -0.6)
    assert graph.spin_until(lambda: near(ctl.last(PAN), -0.4) and near(ctl.last(TILT), -0.6))
    assert graph.spin_until(lambda: graph.state(pan=-0.4, tilt=-0.25, tilt_command=-0.6))
    graph.spin_states(3)
    assert graph.state(goal_reached=False, tilt=-0.25), graph.states[-1]
    del ctl.blocked[TILT]
    assert graph.spin_until(lambda: graph.state(active_goal_id='down', pan=-0.4, tilt=-0.6,
                                                goal_reached=True))


@pytest.mark.ros
def test_trajectory_points_name_their_joints_and_take_the_time_the_distance_needs(graph):
    ctl = graph.controller(interface='joint_trajectory', joints=(TILT, PAN), speed=0.3)
    graph.head(max_velocity=1.0, **{'ros2_control.interface': 'joint_trajectory',
                                    'ros2_control.joints': [TILT, PAN]})
    assert graph.spin_until(lambda: graph.state(driver_ok=True))
    graph.goal('slow', 0.6, 0.4)
    assert graph.spin_until(lambda: near(ctl.last(PAN), 0.6) and near(ctl.last(TILT), 0.4))
    assert graph.spin_until(lambda: graph.state(active_goal_id='slow', goal_reached=True),
                            timeout_s=60)
    assert ctl.refused == []
    for r in ctl.received:
        # From where the joints were (measured) to the point, at max_velocity 1 rad/s: the
        # stand-in moves at 0.3 rad/s, so the state the head used is at most a little older.
        wanted = max(0.02, max(abs(r[j] - r['at'][j]) for j in (PAN, TILT)) / 1.0)
        assert r['tfs'] >= 0.02 - 1e-9 and abs(r['tfs'] - wanted) < 0.15, r
    assert max(r['tfs'] for r in ctl.received) > 0.3     # the slow joints fell behind


@pytest.mark.ros
def test_joint_states_that_stop_hold_the_head_until_they_come_back(graph):
    ctl = graph.controller()
    head = graph.head(**{'ros2_control.state_timeout_s': 0.3})
    assert graph.spin_until(lambda: graph.state(driver_ok=True))
    graph.goal('first', 0.2, 0.0)
    assert graph.spin_until(lambda: near(ctl.last(PAN), 0.2)
                            and graph.state(goal_reached=True))
    ctl.publishing = False
    assert graph.spin_until(lambda: graph.state(driver_ok=False))
    error = graph.states[-1].error_msg
    assert 'joint_states stopped: head_pan_joint and head_tilt_joint last reported' in error
    assert 'the head holds until they come back' in error
    health = head.health()
    assert health.level == 2 and 'joint_states stopped' in health.message
    graph.spin_states(3)
    held = len(ctl.received)
    graph.goal('second', -0.5, 0.1)
    graph.spin_states(10)                       # a second or so, retries included
    assert len(ctl.received) == held and near(ctl.last(PAN), 0.2), ctl.received[held:]
    assert graph.state(driver_ok=False, active_goal_id='second')

    ctl.publishing = True
    assert graph.spin_until(lambda: near(ctl.last(PAN), -0.5) and near(ctl.last(TILT), 0.1))
    assert graph.spin_until(lambda: graph.state(driver_ok=True, goal_reached=True))
    # The head went on from where it was held, not from where the goal had got meanwhile.
    assert abs(ctl.received[held][PAN] - 0.2) < 0.05, ctl.received[held]


@pytest.mark.ros
def test_a_missing_or_departed_controller_is_a_clear_diagnostic(graph):
    head = graph.head()
    assert graph.spin_until(lambda: graph.state(driver='ros2_control', driver_ok=False))
    error = graph.states[-1].error_msg
    assert ('controller head_position_controller is not there: nothing subscribes to '
            '/head_position_controller/commands') in error, error
    assert 'ros2 control list_controllers' in error
    assert 'is not there' in head.health().message and head.commands_sent == 0

    ctl = graph.controller()
    assert graph.spin_until(lambda: graph.state(driver_ok=True) and ctl.received)
    ctl.leave()
    assert graph.spin_until(lambda: graph.state(driver_ok=False))
    assert 'controller head_position_controller went away' in graph.states[-1].error_msg
    graph.spin_states(2)
    sent = head.commands_sent
    graph.spin_states(5)
    assert head.commands_sent == sent


@pytest.mark.ros
@pytest.mark.parametrize('params,match', [
    ({'ros2_control.joints': [PAN]}, 'ros2_control.joints must list head_pan_joint and '
                                     'head_tilt_joint'),
    ({'ros2_control.interface': 'velocity'}, 'ros2_control.interface must be one of'),
])
def test_a_bad_ros2_control_parameter_is_a_clear_error(graph, params, match):
    with pytest.raises(ValueError, match=match):
        graph.head(**params)
