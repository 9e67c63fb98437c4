"""The head controller node: attention's reflex and the agent's goals -> smooth joint commands.
The work is in maxim_perception.head (control, params, supervision, scheduler); this node
translates parameters and messages."""

from collections import deque
import threading
import time
from typing import Callable

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from maxim_common.conversions import stamp_age_s, stamp_to_seconds
from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health, not_ready
from maxim_common.lifetime import run
from maxim_common.params import declare_table
from maxim_common.qos import COMMANDS, EVENTS, LATCHED, SENSOR
from maxim_common.throttle import ThrottledLog
from maxim_interfaces.msg import AttentionState, HeadGoal, HeadState, PainSignal
from maxim_perception.conversions import (attention_to_targets, controller_command_to_msg,
                                          controller_command_type, head_status_to_msg,
                                          joint_state_to_msg, msg_to_head_goal, msg_to_joints,
                                          pain_to_msg, stamp_error)
from maxim_perception.head.params import compose, JOINTS, PARAMS, read_params
from maxim_perception.head.ros2_control import ControllerCommand
from maxim_perception.head.scheduler import attend, ControlLoop, TickSchedule


class HeadControllerNode(LifecycleNode):
    """Drives the pan/tilt head: attention's reflex at control rate, agent goals over it.

    Lifecycle: activate opens the driver (the serial port, the Dynamixel bus) and starts the
    control loop; deactivate stops the loop and closes the driver (a Dynamixel's torque goes
    off). `autostart` (constructor, default true) brings the node up at construction, for
    graphs composed by hand; the launch files and the runner leave that to the lifecycle
    manager.

    Parameters: head/params.py (PARAMS, all read-only: driver sim | serial | dry_run |
        dynamixel | ros2_control, rates, joint limits, pain thresholds, reflex.*, serial.*,
        dynamixel.*, ros2_control.*, reconnect_max_s), described there.
    Publishers:
        head/joint_commands (sensor_msgs/JointState, driver sim),
        joint_states (sensor_msgs/JointState, drivers serial, dynamixel and dry_run: measured
            or commanded; never with ros2_control, whose joint_state_broadcaster publishes it),
        <controller>/commands (std_msgs/Float64MultiArray, driver ros2_control with
            forward_position) or <controller>/joint_trajectory (trajectory_msgs/JointTrajectory,
            with joint_trajectory),
        head/state (maxim_interfaces/HeadState, latched), pain (maxim_interfaces/PainSignal),
        ~/reflex_source (std_msgs/Header, debug): the header of the attention state the
            command just sent first acts on, to measure the latency from frame to command.
        diagnostics (diagnostic_msgs/DiagnosticArray, 1 Hz: the driver's state).
    Subscriptions:
        attention/state (maxim_interfaces/AttentionState), head/goal (maxim_interfaces/HeadGoal),
        joint_states (sensor_msgs/JointState, drivers sim and ros2_control).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, autostart: bool = True,
                 **kwargs):
        super().__init__('head_controller', **kwargs)
        self.params = p = read_params(declare_table(self, PARAMS, read_only=True))
        self._now = clock  # Node owns self._clock
        self._cmd_pub = self._joint_pub = None
        self.supervisor = compose(p, self._publish_command, self._publish_controller_command,
                                  self._controller_subscribers, self._now,
                                  self.get_logger().info, self.get_logger().warning)
        self.core, self.driver = self.supervisor.core, self.supervisor.driver
        self.rejections: deque[str] = deque(maxlen=50)   # recent reasons, for inspection
        self._warn = ThrottledLog(self.get_logger().warning, 2.0)   # a line per kind per 2 s
        self._throttle = self._warn.throttle
        self.tick_times: deque[float] = deque(maxlen=5000)  # monotonic s, for benchmarks

        if p.driver == 'sim':
            self._cmd_pub = self.create_publisher(JointState, 'head/joint_commands', COMMANDS)
            self.create_subscription(JointState, 'joint_states', self._on_joint_states, SENSOR)
        elif p.driver == 'ros2_control':
            # No joint_states publisher: joint_state_broadcaster is its one publisher.
            rc = p.ros2_control
            self._cmd_pub = self.create_publisher(controller_command_type(rc.interface),
                                                  rc.command_topic, COMMANDS)
            self.driver.topic = self._cmd_pub.topic_name
            self.create_subscription(JointState, 'joint_states', self._on_controller_states,
                                     SENSOR)
        else:
            self._joint_pub = self.create_publisher(JointState, 'joint_states', 10)
        self._state_pub = self.create_publisher(HeadState, 'head/state', LATCHED)
        self._source_pub = self.create_publisher(Header, '~/reflex_source', COMMANDS)
        self._reflex_source: Header | None = None   # attention state not yet acted on
        self._pain_pub = self.create_publisher(PainSignal, 'pain', EVENTS)
        # Best effort: compatible with a reliable or best-effort, latched or volatile publisher.
        self.create_subscription(AttentionState, 'attention/state', self._on_attention, SENSOR)
        self.create_subscription(HeadGoal, 'head/goal', self._on_goal, COMMANDS)

        self._lock = threading.Lock()     # the core is shared with the subscriptions
        self.schedule = TickSchedule(1.0 / p.rate_hz, time.monotonic())
        self.loop = ControlLoop(self.schedule, self._tick, self._lock,
                                self.get_logger().fatal)
        self.diagnostics = Diagnostics(self, 'driver', self.health)
        if autostart and self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
            self.trigger_activate()

    # The driver's state and the schedule's, under the names the node tests read (and set).
    driver_ok = property(lambda self: self.supervisor.ok)
    commands_sent = property(lambda self: self.supervisor.commands_sent)
    _deadline = property(lambda self: self.schedule.deadline)
    _act_now = property(lambda self: self.schedule.act_now)
    _last_tick = property(lambda self: self.schedule.last_tick,
                          lambda self, t: setattr(self.schedule, 'last_tick', t))

    # ---- lifecycle: the driver is open and the loop runs only while active ---------------

    def on_activate(self, state) -> TransitionCallbackReturn:
        self.supervisor.open(self._now())     # a driver fault is retried by the loop
        self.loop.start()
        return super().on_activate(state)

    def _release(self) -> None:
        if not self.loop.stop(timeout_s=5.0):
            self.get_logger().error('head control thread did not stop within 5 s')
        with self._lock:
            self.supervisor.close()

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._release()
        return super().on_deactivate(state)

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def health(self) -> Health:
        if getattr(self, 'supervisor', None) is None:
            return not_ready('no head driver')
        with self._lock:
            return self.supervisor.health(self._now())

    # ---- inputs -------------------------------------------------------------------------

    def _core_stamp(self, header_stamp, now: float) -> float:
        """A message's time on the core's clock: now minus the message's age."""
        return now - stamp_age_s(header_stamp, self.get_clock().now().nanoseconds)

    def _reject(self, kind: str, reason: str) -> None:
        """Keep the reason; log it, at most one line per kind every 2 s (with a count of
        the lines held back): a flood of bad input is no flood of log lines."""
        self.rejections.append(reason)
        self._warn(kind, reason)

    def _on_attention(self, msg: AttentionState) -> None:
        bad = stamp_error(msg.header.stamp)
        if bad:
            self._reject('attention', f'rejected attention state: {bad}')
            return
        focus = (msg.focus_pan, msg.focus_tilt, msg.focus_track_id) if msg.has_focus else None
        with self._lock:
            now = self._now()
            # The frame's own stamp times the rate fits: on sim time it is the simulation's
            # clock, which a slow simulation runs behind this process's (set_reflex_target).
            attended = attend(self.core, attention_to_targets(msg), focus, now,
                              self._core_stamp(msg.header.stamp, now),
                              stamp_to_seconds(msg.header.stamp) or None)   # None: unset
            if attended.reflex:
                self._reflex_source = msg.header
            if attended.reason:
                self._reject('reflex', attended.reason)
            if attended.act:   # tick now, in this thread (head/scheduler.py)
                self.loop.new_target(ready=self.supervisor.ok)

    def _on_goal(self, msg: HeadGoal) -> None:
        bad = stamp_error(msg.header.stamp)
        if bad:
            self._reject('goal', f'rejected goal {msg.goal_id!r}: {bad}')
            return
        now = self._now()
        stamp = self._core_stamp(msg.header.stamp, now)
        with self._lock:
            result = self.core.set_goal(msg_to_head_goal(msg, stamp), now)
        if not result.accepted:
            self._reject('goal', result.reason)
        elif result.clamped:
            self._reject('clamped', result.reason)
        else:
            note = f': {result.reason}' if result.reason else ''
            self.get_logger().info(f'head goal {msg.goal_id!r} (mode {msg.mode}) from '
                                   f'{msg.requested_by or "?"}{note}')

    def _on_joint_states(self, msg: JointState) -> None:
        joints = msg_to_joints(msg, JOINTS)
        if joints is None:
            return
        (pan, tilt), vel = joints
        source_t = stamp_to_seconds(msg.header.stamp) or None   # the simulation's own clock
        with self._lock:
            result = self.supervisor.measured(pan, tilt, self._now(), vel, source_t)
        if not result.accepted:
            self._reject('joint_states', result.reason)

    def _on_controller_states(self, msg: JointState) -> None:
        """joint_state_broadcaster's joint_states: the driver's read() hands them to the
        core at the next tick."""
        with self._lock:
            self.driver.feed(msg.name, msg.position, self._now())

    # ---- control tick -------------------------------------------------------------------

    def _publish_controller_command(self, command: ControllerCommand) -> None:
        self._cmd_pub.publish(controller_command_to_msg(command,
                                                        self.params.ros2_control.interface))

    def _controller_subscribers(self) -> int:
        return self._cmd_pub.get_subscription_count() if self._cmd_pub is not None else 0

    def _publish_command(self, pan: float, tilt: float) -> None:
        self._cmd_pub.publish(joint_state_to_msg(JOINTS, (pan, tilt), self.supervisor.velocity,
                                                 self.get_clock().now().to_msg()))

    def _tick(self, dt: float, tick_at: float) -> None:
        """One control step of dt seconds at time.monotonic() `tick_at` (lock held): read,
        step the core, write (head/supervision.py), report."""
        self.tick_times.append(tick_at)
        step = self.supervisor.tick(dt, self._now())
        if step.sent and self._reflex_source is not None and self.core.goal is None:
            self._source_pub.publish(self._reflex_source)
        self._reflex_source = None
        stamp = self.get_clock().now().to_msg()
        if self._joint_pub is not None and step.joints is not None:
            self._joint_pub.publish(joint_state_to_msg(JOINTS, *step.joints, stamp))
        for pain in step.pains:
            self._warn(f'pain {pain.type_name}', f'pain ({pain.type_name}, '
                       f'{pain.intensity:.2f}): {pain.message}')
            self._pain_pub.publish(pain_to_msg(pain, stamp))
        for notice in step.notices:
            self.get_logger().info(notice)
        if step.status is not None:
            s = self.supervisor
            self._state_pub.publish(head_status_to_msg(step.status, self.driver.name, s.ok,
                                                       s.error, stamp))

    def destroy_node(self):
        self._release()
        return super().destroy_node()


def main(args=None):
    run(lambda: HeadControllerNode(autostart=False), args)


if __name__ == '__main__':
    main()
