"""A head under ros2_control: the head controller's joint targets as a ros2_control controller
takes them, and the measured joints from `joint_states` (HeadDriver `ros2_control`).

Two controller interfaces:
  forward_position  a forward_command_controller/ForwardCommandController (interface_name
                    position), fed std_msgs/Float64MultiArray on `<controller>/commands`: one
                    position per joint, in the controller's `joints` order;
  joint_trajectory  a joint_trajectory_controller/JointTrajectoryController, fed
                    trajectory_msgs/JointTrajectory on `<controller>/joint_trajectory`: one
                    point, reached in the time the farthest joint needs at max_velocity.
Positions are radians, clamped to the joint limits. The measured positions come from
sensor_msgs/JointState on `joint_states` (joint_state_broadcaster), found by joint name in any
order; other joints in the message are ignored.

The head is held (nothing is sent, so the controller keeps its last command) and the driver
raises a DriverError that says why while the controller is not there (nothing subscribes to
its command topic) or joint_states are missing or older than `state_timeout_s`. The head
controller node retries (open()) with backoff and goes on once both are back.

No rclpy and no message types here: the node publishes a `ControllerCommand` and feeds the
joint names and positions of each JointState (maxim_perception/conversions.py translates).
"""

from dataclasses import dataclass
import math
import re
import time
from typing import Callable, Sequence

from maxim_common.conversions import joint_values
from maxim_perception.head.drivers import DriverError

FORWARD_POSITION = 'forward_position'
JOINT_TRAJECTORY = 'joint_trajectory'
INTERFACES = (FORWARD_POSITION, JOINT_TRAJECTORY)
# The controllers config/ros2_controllers.yaml (maxim_bringup) defines, and their topics.
DEFAULT_CONTROLLERS = {FORWARD_POSITION: 'head_position_controller',
                       JOINT_TRAJECTORY: 'head_trajectory_controller'}
COMMAND_TOPICS = {FORWARD_POSITION: 'commands', JOINT_TRAJECTORY: 'joint_trajectory'}
PAN_JOINT, TILT_JOINT = 'head_pan_joint', 'head_tilt_joint'   # maxim_head.urdf's

_NAME = re.compile(r'^/?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$')


@dataclass(frozen=True)
class Ros2ControlConfig:
    """How the head's controller is reached.

    joints: the controller's `joints` parameter, in its order (a Float64MultiArray carries
    positions in this order); it must name pan_joint and tilt_joint, once each, and no other
    joint (the head controller has nothing to command another joint with). min_time_s: the
    shortest time_from_start of a trajectory point (a point at 0 s is a jump). feedback: the
    hardware interface's position state is measured by the joints; False for
    mock_components/GenericSystem, whose state is the command (movement pain is off then).
    """

    interface: str = FORWARD_POSITION
    controller: str = ''              # '' -> DEFAULT_CONTROLLERS[interface]
    joints: tuple[str, ...] = (PAN_JOINT, TILT_JOINT)
    pan_joint: str = PAN_JOINT
    tilt_joint: str = TILT_JOINT
    state_timeout_s: float = 0.5
    pan_limits: tuple[float, float] = (-2.6, 2.6)
    tilt_limits: tuple[float, float] = (-0.8, 0.8)
    max_velocity: float = 3.0         # rad/s
    min_time_s: float = 0.02
    feedback: bool = False

    def __post_init__(self):
        if self.interface not in INTERFACES:
            raise ValueError(f'ros2_control.interface must be one of {", ".join(INTERFACES)}, '
                             f'got {self.interface!r}')
        if self.controller and not _NAME.match(self.controller):
            raise ValueError(f'ros2_control.controller {self.controller!r} is no ROS name '
                             '(letters, digits, underscores, / between parts)')
        joints = tuple(self.joints)
        object.__setattr__(self, 'joints', joints)
        if self.pan_joint == self.tilt_joint:
            raise ValueError(f'pan and tilt joints must differ, both are {self.pan_joint!r}')
        if sorted(joints) != sorted((self.pan_joint, self.tilt_joint)):
            raise ValueError(
                f'ros2_control.joints must list {self.pan_joint} and {self.tilt_joint}, once '
                f"each, in the controller's order; got {list(joints)}")
        for name, (lo, hi) in (('pan', self.pan_limits), ('tilt', self.tilt_limits)):
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f'{name} limits must be finite with min < max, got {lo}, {hi}')
        for name in ('state_timeout_s', 'max_velocity', 'min_time_s'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f'{name} must be a finite number > 0, got {value!r}')

    @property
    def controller_name(self) -> str:
        return self.controller or DEFAULT_CONTROLLERS[self.interface]

    @property
    def command_topic(self) -> str:
        """Relative to the node's namespace, as the controller's own topic is to its
        controller manager's."""
        return f'{self.controller_name}/{COMMAND_TOPICS[self.interface]}'


@dataclass(frozen=True)
class ControllerCommand:
    """One command for the controller: positions in radians in the controller's joint order;
    time_from_start_s for a joint trajectory point (None for a forward controller)."""

    joint_names: tuple[str, ...]
    positions: tuple[float, ...]
    time_from_start_s: float | None = None


def head_joints(names: Sequence[str], positions: Sequence[float], pan_joint: str = PAN_JOINT,
                tilt_joint: str = TILT_JOINT) -> tuple[float, float] | None:
    """(pan, tilt) from a JointState's names and positions, by name, whatever their order and
    whatever other joints it carries; None when either joint is missing or not finite."""
    joints = joint_values(names, positions, (pan_joint, tilt_joint))
    if joints is None or not all(math.isfinite(v) for v in joints):
        return None
    return joints


def time_to_reach(start: tuple[float, float] | None, goal: tuple[float, float],
                  max_velocity: float, min_time_s: float) -> float:
    """Seconds the farthest joint needs from `start` to `goal` at max_velocity, at least
    min_time_s (and min_time_s when the start is unknown)."""
    if start is None:
        return min_time_s
    distance = max(abs(g - s) for g, s in zip(goal, start))
    return max(min_time_s, distance / max_velocity)


class Ros2ControlDriver:
    """HeadDriver for a head under ros2_control (see the module docstring).

    send: publishes a ControllerCommand (the node's publisher); subscribers: how many
    subscribers the command topic has now (0: the controller is not there); clock: monotonic
    seconds, the clock `feed()`'s arrival times are on.
    """

    name = 'ros2_control'
    # Its motion model (head/motion.py): the hardware behind the controller is not known
    # here, so the joints are judged against the head controller's own max_velocity (a
    # trajectory point is timed by it) and limits (commands are clamped to them).
    max_velocity = None
    joint_limits = None

    @property
    def feedback(self) -> bool:
        """The state is measured (a real hardware interface), not the mock's command."""
        return self.config.feedback

    def __init__(self, config: Ros2ControlConfig, send: Callable[[ControllerCommand], None],
                 subscribers: Callable[[], int], clock: Callable[[], float] = time.monotonic,
                 topic: str = ''):
        self.config = config
        self.topic = topic or config.command_topic
        self._send = send
        self._subscribers = subscribers
        self._clock = clock
        self._open = False
        self._seen_controller = False     # it was there once: missing now is "went away"
        self._measured: tuple[float, float] | None = None
        self._measured_at = -math.inf
        self.last_command: ControllerCommand | None = None
        self.ignored_states = 0           # joint_states without both head joints

    # ---- joint_states -------------------------------------------------------------------

    def feed(self, names: Sequence[str], positions: Sequence[float],
             now: float | None = None) -> bool:
        """One JointState's joints, received at `now` (default: the clock); False when it
        has no usable position for both head joints (it is ignored)."""
        c = self.config
        joints = head_joints(names, positions, c.pan_joint, c.tilt_joint)
        if joints is None:
            self.ignored_states += 1
            return False
        self._measured = joints
        self._measured_at = self._clock() if now is None else now
        return True

    def state_age(self, now: float | None = None) -> float:
        """Seconds since the last usable joint_states (inf: none yet)."""
        return (self._clock() if now is None else now) - self._measured_at

    # ---- HeadDriver ---------------------------------------------------------------------

    def open(self) -> None:
        """Ready when the controller subscribes and joint_states are fresh; else a
        DriverError with the reason (the node retries)."""
        self._open = True
        self._check_controller()
        self._check_states()

    def read(self) -> tuple[float, float] | None:
        if not self._open:
            raise DriverError('ros2_control driver: read before open()')
        self._check_states()
        return self._measured

    def write(self, pan: float, tilt: float) -> None:
        if not self._open:
            raise DriverError('ros2_control driver: write before open()')
        if not (math.isfinite(pan) and math.isfinite(tilt)):
            raise ValueError(f'angles must be finite, got pan={pan}, tilt={tilt}')
        self._check_controller()
        self._check_states()
        command = self.command(pan, tilt)
        self._send(command)
        self.last_command = command

    def close(self) -> None:
        self._open = False

    # ---- the message contract -----------------------------------------------------------

    def command(self, pan: float, tilt: float) -> ControllerCommand:
        """The command for these angles: clamped to the limits, in the controller's joint
        order, with a trajectory point's time from the measured position."""
        c = self.config
        pan = max(c.pan_limits[0], min(c.pan_limits[1], float(pan)))
        tilt = max(c.tilt_limits[0], min(c.tilt_limits[1], float(tilt)))
        by_name = {c.pan_joint: pan, c.tilt_joint: tilt}
        positions = tuple(by_name[j] for j in c.joints)
        when = None
        if c.interface == JOINT_TRAJECTORY:
            when = time_to_reach(self._measured, (pan, tilt), c.max_velocity, c.min_time_s)
        return ControllerCommand(c.joints, positions, when)

    def _check_controller(self) -> None:
        if self._subscribers() > 0:
            self._seen_controller = True
            return
        c = self.config
        if self._seen_controller:
            raise DriverError(
                f'controller {c.controller_name} went away: nothing subscribes to {self.topic} '
                'any more; the head holds until it is back')
        raise DriverError(
            f'controller {c.controller_name} is not there: nothing subscribes to {self.topic} '
            f'(is controller_manager running with {c.controller_name} active? '
            '`ros2 control list_controllers`)')

    def _check_states(self) -> None:
        c = self.config
        age = self.state_age()
        if age <= c.state_timeout_s:
            return
        if self._measured is None:
            raise DriverError(
                f'no joint_states with {c.pan_joint} and {c.tilt_joint} yet (is '
                'joint_state_broadcaster active?); the head holds until they come')
        raise DriverError(
            f'joint_states stopped: {c.pan_joint} and {c.tilt_joint} last reported '
            f'{age:.1f} s ago (state_timeout_s {c.state_timeout_s:g}); the head holds until '
            'they come back')
