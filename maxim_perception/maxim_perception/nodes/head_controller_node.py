"""The head controller node: attention's reflex and the agent's goals -> smooth joint commands."""

from collections import deque
from dataclasses import dataclass
import math
import threading
import time
from typing import Callable

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header
from trajectory_msgs.msg import JointTrajectory

from maxim_common.conversions import joint_values, stamp_to_seconds
from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health, not_ready
from maxim_common.lifetime import run
from maxim_common.qos import COMMANDS, EVENTS, LATCHED, SENSOR
from maxim_common.throttle import LogThrottle
from maxim_interfaces.msg import AttentionState, HeadGoal, HeadState, PainSignal
from maxim_perception.conversions import controller_command_to_msg, stamp_error
from maxim_perception.head.control import (HeadConfig, HeadController, HeadGoalSpec, HeadMode,
                                           HeadStatus, PainEvent, TargetView)
from maxim_perception.head.drivers import (DriverError, DryRunDriver, HeadDriver,
                                           SerialServoDriver, ServoMapping, SimDriver)
from maxim_perception.head.dynamixel import DynamixelDriver, DynamixelJoint
from maxim_perception.head.motion import MotionModel
from maxim_perception.head.ros2_control import (ControllerCommand, FORWARD_POSITION,
                                                Ros2ControlConfig, Ros2ControlDriver)
from maxim_perception.health import driver_health

JOINTS = ('head_pan_joint', 'head_tilt_joint')
# Goals that follow attention's targets (and so act on each new attention state at once).
FOLLOWING_GOALS = (HeadMode.TRACK_TARGET, HeadMode.FOCUS_INTERESTS, HeadMode.NOVELTY_TRACK)
DRIVERS = ('sim', 'serial', 'dry_run', 'dynamixel', 'ros2_control')
# Drivers whose read() is the hardware's measured position (published on joint_states).
MEASURING = ('serial', 'dynamixel')
# Drivers whose head holds while the driver is down: the core does not step, so its command
# stays the controller's last one and goes on from there when the driver is back (a forward
# position controller would jump to wherever the core had got meanwhile), and the first
# command of all starts from the first measured position (the core syncs to it).
HOLDING = ('ros2_control',)


@dataclass(frozen=True)
class HeadControllerParams:
    """The node's parameters, read once at start."""

    driver: str
    rate_hz: float
    state_rate_hz: float
    head: HeadConfig
    serial_port: str
    serial_baud: int
    serial_readback: bool
    pan_us: tuple[int, int]
    tilt_us: tuple[int, int]
    reconnect_max_s: float
    dxl_port: str = '/dev/ttyUSB0'
    dxl_baud: int = 57600
    dxl_ids: tuple[int, int] = (1, 2)
    dxl_zero: tuple[int, int] = (2048, 2048)
    dxl_reverse: tuple[bool, bool] = (False, False)
    dxl_profile_velocity: float = 0.0
    ros2_control: Ros2ControlConfig | None = None   # driver ros2_control


def _f(lo: float, hi: float) -> list:
    return [FloatingPointRange(from_value=lo, to_value=hi)]


def _i(lo: int, hi: int) -> list:
    return [IntegerRange(from_value=lo, to_value=hi, step=1)]


# name: (default, description, float or integer range, or None)
_PARAMS = {
    'driver': ('sim', 'Head driver: sim (publish head/joint_commands), serial, dry_run, '
               'dynamixel, ros2_control', None),
    'rate_hz': (50.0, 'Control rate: joint commands per second', _f(1.0, 1000.0)),
    'state_rate_hz': (10.0, 'head/state messages per second', _f(0.1, 100.0)),
    'pan.min': (-2.6, 'Pan lower limit, rad (must match the URDF)', None),
    'pan.max': (2.6, 'Pan upper limit, rad (must match the URDF)', None),
    'tilt.min': (-0.8, 'Tilt lower limit, rad (must match the URDF)', None),
    'tilt.max': (0.8, 'Tilt upper limit, rad (must match the URDF)', None),
    'max_velocity': (3.0, 'Joint speed limit, rad/s', _f(0.01, 20.0)),
    'max_acceleration': (15.0, 'Joint acceleration limit, rad/s^2', _f(0.01, 500.0)),
    'command_timeout_s': (0.5, 'Reflex targets and goals older than this are stale',
                          _f(0.01, 60.0)),
    'goal_tolerance_rad': (0.02, 'Measured within this of the goal: goal reached',
                           _f(0.0001, 1.0)),
    'movement_error_rad': (0.2, 'A joint farther than this from its command ...',
                           _f(0.001, 3.0)),
    'movement_error_s': (0.5, '... that moves towards it slower than its driver allows for '
                         'longer than this is a movement-error pain, s', _f(0.0, 60.0)),
    'movement_speed_ratio': (0.5, "Slower than this fraction of the driver's speed (its "
                             'velocity limit, or what arrives within movement_error_s) is '
                             'held back', _f(0.01, 1.0)),
    'movement_window_s': (0.25, "A joint's speed is measured over this much of its "
                          'trajectory, s', _f(0.02, 10.0)),
    'thrash_window_s': (2.0, 'Window over which pan reversals are counted', _f(0.1, 60.0)),
    'thrash_reversals': (6, 'Pan reversals within the window that count as thrashing',
                         _i(2, 1000)),
    'thrash_min_swing_rad': (0.05, 'A reversal counts only after a swing this long, rad',
                             _f(0.0, 3.0)),
    'focus_dwell_s': (3.0, 'FOCUS_INTERESTS: seconds on each target', _f(0.1, 600.0)),
    'reflex.predict_max_s': (0.3, 'Aim a moving focus ahead by its frame age, at most this '
                             '(s; 0: no prediction)', _f(0.0, 2.0)),
    'reflex.lead_s': (0.04, 'Extra lead for the servo lag behind its command, s',
                      _f(0.0, 1.0)),
    'reflex.rate_window_s': (0.4, 'The focus rate is fitted over this window, s',
                             _f(0.05, 5.0)),
    'serial.port': ('/dev/ttyUSB0', 'Servo board serial port (driver serial)', None),
    'serial.baud': (115200, 'Servo board baud rate', None),
    'serial.readback': (True, 'The board echoes P<us> T<us> lines: use them as measured', None),
    'serial.pan_us_min': (500, 'Pulse width (us) at pan.min', None),
    'serial.pan_us_max': (2500, 'Pulse width (us) at pan.max', None),
    'serial.tilt_us_min': (500, 'Pulse width (us) at tilt.min', None),
    'serial.tilt_us_max': (2500, 'Pulse width (us) at tilt.max', None),
    'dynamixel.port': ('/dev/ttyUSB0', 'Dynamixel bus adapter (driver dynamixel); a '
                       '/dev/serial/by-id/... link survives a replug', None),
    'dynamixel.baud': (57600, "The servos' baud rate (57600 from the factory; 1000000 for "
                       '50 Hz control with margin)', None),
    'dynamixel.pan_id': (1, 'Dynamixel ID of the pan servo', _i(0, 252)),
    'dynamixel.tilt_id': (2, 'Dynamixel ID of the tilt servo', _i(0, 252)),
    'dynamixel.pan_zero': (2048, 'Pan servo position (ticks, 4096 a turn) at 0 rad',
                           _i(0, 4095)),
    'dynamixel.tilt_zero': (2048, 'Tilt servo position (ticks) at 0 rad', _i(0, 4095)),
    'dynamixel.pan_reverse': (False, 'The pan servo turns the other way (ticks fall as the '
                              'angle grows)', None),
    'dynamixel.tilt_reverse': (False, 'The tilt servo turns the other way', None),
    'dynamixel.profile_velocity': (0.0, "The servos' own speed limit, rad/s (0: "
                                   'max_velocity)', _f(0.0, 20.0)),
    'ros2_control.interface': ('forward_position', 'Driver ros2_control: forward_position '
                               '(Float64MultiArray on <controller>/commands) or '
                               'joint_trajectory (JointTrajectory on '
                               '<controller>/joint_trajectory)', None),
    'ros2_control.controller': ('', "The controller's name; empty: head_position_controller "
                                '(forward_position) or head_trajectory_controller '
                                '(joint_trajectory), as in config/ros2_controllers.yaml', None),
    'ros2_control.joints': (['head_pan_joint', 'head_tilt_joint'], "The controller's joints "
                            'parameter, in its order: the order of the positions sent', None),
    'ros2_control.pan_joint': ('head_pan_joint', "The pan joint's name in the controller and "
                               'in joint_states', None),
    'ros2_control.tilt_joint': ('head_tilt_joint', "The tilt joint's name", None),
    'ros2_control.state_timeout_s': (0.5, 'joint_states older than this: the driver is down '
                                     'and the head holds', _f(0.01, 60.0)),
    'reconnect_max_s': (10.0, 'Longest wait between driver reconnection attempts',
                        _f(0.1, 600.0)),
}


# ---- message <-> core (to move into maxim_perception/conversions.py) ------------------------

def _stamp_age_s(stamp, now_ns: int) -> float:
    """Seconds between a (valid: see stamp_error) header stamp and now; 0 for an unset one.
    Plain float arithmetic: no stamp, however far off, raises here."""
    if stamp.sec == 0 and stamp.nanosec == 0:
        return 0.0
    return now_ns * 1e-9 - stamp_to_seconds(stamp)


def _goal_from_msg(msg: HeadGoal, stamp: float | None) -> HeadGoalSpec:
    return HeadGoalSpec(mode=msg.mode, goal_id=msg.goal_id, requested_by=msg.requested_by,
                        pan=msg.pan, tilt=msg.tilt, track_id=msg.track_id,
                        target_label=msg.target_label, speed=float(msg.speed),
                        duration_s=float(msg.duration_s), stamp=stamp)


def _targets_from_attention(msg: AttentionState) -> list[TargetView]:
    return [TargetView(track_id=d.track_id, pan=float(d.pan), tilt=float(d.tilt), label=d.label,
                       salience=float(d.salience), novelty=float(d.novelty))
            for d in msg.targets]


def _status_to_msg(status: HeadStatus, driver: str, ok: bool, error: str, stamp) -> HeadState:
    msg = HeadState()
    msg.header.stamp = stamp
    msg.mode = int(status.mode)
    msg.reflex_active = status.reflex_active
    msg.active_goal_id = status.active_goal_id
    msg.pan, msg.tilt = status.pan, status.tilt
    msg.pan_command, msg.tilt_command = status.pan_command, status.tilt_command
    msg.pan_velocity, msg.tilt_velocity = status.pan_velocity, status.tilt_velocity
    msg.goal_reached = status.goal_reached
    msg.tracking_error_deg = float(status.tracking_error_deg)
    msg.driver, msg.driver_ok, msg.error_msg = driver, ok, error
    return msg


def _pain_to_msg(pain: PainEvent, stamp) -> PainSignal:
    msg = PainSignal()
    msg.header.stamp = stamp
    msg.pain_type = int(pain.pain_type)
    msg.type_name = pain.type_name
    msg.intensity = float(pain.intensity)
    msg.source, msg.context, msg.description = pain.source, pain.context, pain.message
    msg.repeat_count = pain.repeat_count
    return msg


def _joint_state_msg(positions, velocities, stamp) -> JointState:
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(JOINTS)
    msg.position = [float(p) for p in positions]
    msg.velocity = [float(v) for v in velocities] if velocities is not None else []
    return msg


def _joints_from_msg(msg: JointState) -> tuple[tuple[float, float], tuple | None] | None:
    """(pan, tilt) positions and velocities by joint name; None if either joint is absent."""
    pos = joint_values(msg.name, msg.position, JOINTS)
    if pos is None:
        return None
    return pos, joint_values(msg.name, msg.velocity, JOINTS)


# ---- the node --------------------------------------------------------------------------------

class HeadControllerNode(LifecycleNode):
    """Drives the pan/tilt head: attention's reflex at control rate, agent goals over it.

    Lifecycle: activate opens the driver (the serial port, the Dynamixel bus) and starts the
    control loop; deactivate stops the loop and closes the driver (a Dynamixel's torque goes
    off). `autostart` (constructor, default true) brings the node up at construction, for
    graphs composed by hand; the launch files and the runner leave that to the lifecycle
    manager.

    Parameters:
        driver (string): sim | serial | dry_run | dynamixel.
        rate_hz (double, 50): control rate; state_rate_hz (double, 10): head/state rate.
        pan.min, pan.max, tilt.min, tilt.max (double, -2.6/2.6/-0.8/0.8 rad): joint limits,
            equal to maxim_bringup/urdf/maxim_head.urdf.
        max_velocity (double, 3.0 rad/s), max_acceleration (double, 15 rad/s^2).
        command_timeout_s (double, 0.5): older reflex targets and goals are rejected as stale.
        goal_tolerance_rad (double, 0.02), movement_error_rad (double, 0.2),
        movement_error_s (double, 0.5), movement_speed_ratio (double, 0.5),
        movement_window_s (double, 0.25): movement pain, judged against the driver's motion
            model (head/motion.py), thrash_window_s (double, 2.0),
        thrash_reversals (int, 6), thrash_min_swing_rad (double, 0.05),
        focus_dwell_s (double, 3.0).
        reflex.predict_max_s (double, 0.3), reflex.lead_s (double, 0.04),
        reflex.rate_window_s (double, 0.4): latency compensation of the reflex and of the goals
            that follow a target (HeadConfig).
        serial.port (string, /dev/ttyUSB0), serial.baud (int, 115200), serial.readback (bool),
        serial.pan_us_min/max, serial.tilt_us_min/max (int, 500/2500): pulse-width map.
        dynamixel.port (string, /dev/ttyUSB0), dynamixel.baud (int, 57600),
        dynamixel.pan_id, dynamixel.tilt_id (int, 1/2), dynamixel.pan_zero/tilt_zero (int,
        2048: ticks at 0 rad), dynamixel.pan_reverse/tilt_reverse (bool, false),
        dynamixel.profile_velocity (double, 0: max_velocity, rad/s): a Dynamixel X-series
            pan/tilt over protocol 2.0 (head/dynamixel.py); the servos' own position limits
            are written from pan.min/max and tilt.min/max.
        ros2_control.interface (string, forward_position | joint_trajectory),
        ros2_control.controller (string, '': head_position_controller or
        head_trajectory_controller), ros2_control.joints (string[], the controller's joint
        order; head_pan_joint, head_tilt_joint), ros2_control.pan_joint,
        ros2_control.tilt_joint (string), ros2_control.state_timeout_s (double, 0.5): a head
            under ros2_control (head/ros2_control.py).
        reconnect_max_s (double, 10): longest backoff between driver reconnection attempts.
    Publishers:
        head/joint_commands (sensor_msgs/JointState, driver sim),
        joint_states (sensor_msgs/JointState, drivers serial, dynamixel and dry_run: measured
            or commanded; never with ros2_control, whose joint_state_broadcaster publishes it),
        <controller>/commands (std_msgs/Float64MultiArray, driver ros2_control with
            forward_position) or <controller>/joint_trajectory (trajectory_msgs/JointTrajectory,
            with joint_trajectory),
        head/state (maxim_interfaces/HeadState, latched), pain (maxim_interfaces/PainSignal),
        ~/reflex_source (std_msgs/Header, debug): published with the first command that acts
            on a new attention state, stamped with that state's stamp (its camera frame's), so
            the latency from a frame to the command it caused can be measured.
        diagnostics (diagnostic_msgs/DiagnosticArray, 1 Hz: the driver's state).
    Subscriptions:
        attention/state (maxim_interfaces/AttentionState), head/goal (maxim_interfaces/HeadGoal),
        joint_states (sensor_msgs/JointState, drivers sim and ros2_control).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, autostart: bool = True,
                 **kwargs):
        super().__init__('head_controller', **kwargs)
        self.params = self._read_params()
        self._now = clock  # Node owns self._clock
        self.core = HeadController(self.params.head)
        self._cmd_pub = None
        self._joint_pub = None
        self.driver: HeadDriver = self._make_driver()
        self.core.set_motion_model(MotionModel.of(self.driver))   # what pain is judged by
        self.driver_ok = False
        self.driver_error = ''
        self._retry_at = 0.0
        self._backoff = 0.5
        self._next_state = 0.0
        self._last_velocity = (0.0, 0.0)
        self.commands_sent = 0
        self.rejections: deque[str] = deque(maxlen=50)   # recent reasons, for inspection
        self._throttle = LogThrottle(2.0)   # one line per kind of rejection per 2 s
        self.tick_times: deque[float] = deque(maxlen=5000)  # monotonic s, for benchmarks

        if self.params.driver == 'sim':
            self._cmd_pub = self.create_publisher(JointState, 'head/joint_commands', COMMANDS)
            self.create_subscription(JointState, 'joint_states', self._on_joint_states, SENSOR)
        elif self.params.driver == 'ros2_control':
            # No joint_states publisher: joint_state_broadcaster is its one publisher.
            rc = self.params.ros2_control
            kind = Float64MultiArray if rc.interface == FORWARD_POSITION else JointTrajectory
            self._cmd_pub = self.create_publisher(kind, rc.command_topic, COMMANDS)
            self.driver.topic = self._cmd_pub.topic_name
            self.create_subscription(JointState, 'joint_states', self._on_controller_states,
                                     SENSOR)
        else:
            self._joint_pub = self.create_publisher(JointState, 'joint_states', 10)
        self._state_pub = self.create_publisher(HeadState, 'head/state', LATCHED)
        self._source_pub = self.create_publisher(Header, '~/reflex_source', COMMANDS)
        self._reflex_source: Header | None = None   # attention state not yet acted on
        self._wake = threading.Event()   # the schedule changed: the control loop re-reads it
        self._period = 1.0 / self.params.rate_hz
        # New-target ticks at most one per quarter period: a flood of attention states is no
        # flood of commands. Regular ticks do not hold them back (a state arriving just after
        # a regular tick is acted on at once: waiting out a gap from it measured p95 +3.9 ms).
        self._min_gap = self._period / 4
        self._last_tick = -math.inf       # time.monotonic() of the last tick
        self._last_target_tick = -math.inf  # ... and of the last new-target tick
        self._deadline = time.monotonic()  # of the next regular tick
        self._act_now = False             # a new target is waiting for the min gap to pass
        self._pain_pub = self.create_publisher(PainSignal, 'pain', EVENTS)
        # Best effort: compatible with a reliable or best-effort, latched or volatile publisher.
        self.create_subscription(AttentionState, 'attention/state', self._on_attention, SENSOR)
        self.create_subscription(HeadGoal, 'head/goal', self._on_goal, COMMANDS)

        self._lock = threading.Lock()     # the core is shared with the subscriptions
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.diagnostics = Diagnostics(self, 'driver', self.health)
        if autostart and self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
            self.trigger_activate()

    # ---- lifecycle: the driver is open and the loop runs only while active ---------------

    def on_activate(self, state) -> TransitionCallbackReturn:
        self._open_driver(self._now())     # a driver fault is retried by the loop
        # The control loop runs on its own thread with absolute deadlines on the steady clock:
        # an executor timer skips ticks when the process is starved for a moment (measured:
        # 0.87 of 50 Hz with both cores busy); this loop catches up instead, and it holds in
        # wall time even when the graph runs on sim time.
        self._stop.clear()
        self._thread = threading.Thread(target=self._control_loop, name='head_control',
                                        daemon=True)
        self._thread.start()
        return super().on_activate(state)

    def _release(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            if self._thread.is_alive():
                self.get_logger().error('head control thread did not stop within 5 s')
            self._thread = None
        with self._lock:
            self.driver.close()
            self.driver_ok = False

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._release()
        return super().on_deactivate(state)

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def health(self) -> Health:
        if getattr(self, 'driver', None) is None:
            return not_ready('no head driver')
        now = self._now()
        with self._lock:
            mode = self.core.status(now).mode
        return driver_health(self.driver.name, self.driver_ok, self.driver_error,
                             self.commands_sent, mode.name.lower(), self._retry_at - now)

    # ---- set-up -------------------------------------------------------------------------

    def _read_params(self) -> HeadControllerParams:
        values = {}
        for name, (default, description, frange) in _PARAMS.items():
            desc = ParameterDescriptor(description=description, read_only=True)
            if frange and isinstance(frange[0], IntegerRange):
                desc.integer_range = frange
            elif frange:
                desc.floating_point_range = frange
            values[name] = self.declare_parameter(name, default, desc).value
        driver = str(values['driver'])
        if driver not in DRIVERS:
            raise ValueError(f'head_controller: driver must be one of {", ".join(DRIVERS)}, '
                             f'got {driver!r}')
        head = HeadConfig(
            pan_min=float(values['pan.min']), pan_max=float(values['pan.max']),
            tilt_min=float(values['tilt.min']), tilt_max=float(values['tilt.max']),
            max_velocity=float(values['max_velocity']),
            max_acceleration=float(values['max_acceleration']),
            command_timeout_s=float(values['command_timeout_s']),
            goal_tolerance_rad=float(values['goal_tolerance_rad']),
            movement_error_rad=float(values['movement_error_rad']),
            movement_error_s=float(values['movement_error_s']),
            movement_speed_ratio=float(values['movement_speed_ratio']),
            movement_window_s=float(values['movement_window_s']),
            thrash_window_s=float(values['thrash_window_s']),
            thrash_reversals=int(values['thrash_reversals']),
            thrash_min_swing_rad=float(values['thrash_min_swing_rad']),
            focus_dwell_s=float(values['focus_dwell_s']),
            reflex_predict_max_s=float(values['reflex.predict_max_s']),
            reflex_lead_s=float(values['reflex.lead_s']),
            reflex_rate_window_s=float(values['reflex.rate_window_s']))
        rc = None
        if driver == 'ros2_control':
            rc = Ros2ControlConfig(
                interface=str(values['ros2_control.interface']),
                controller=str(values['ros2_control.controller']),
                joints=tuple(str(j) for j in values['ros2_control.joints']),
                pan_joint=str(values['ros2_control.pan_joint']),
                tilt_joint=str(values['ros2_control.tilt_joint']),
                state_timeout_s=float(values['ros2_control.state_timeout_s']),
                pan_limits=(head.pan_min, head.pan_max),
                tilt_limits=(head.tilt_min, head.tilt_max),
                max_velocity=head.max_velocity, min_time_s=1.0 / float(values['rate_hz']))
        return HeadControllerParams(
            driver=driver, rate_hz=float(values['rate_hz']),
            state_rate_hz=float(values['state_rate_hz']), head=head,
            serial_port=str(values['serial.port']), serial_baud=int(values['serial.baud']),
            serial_readback=bool(values['serial.readback']),
            pan_us=(int(values['serial.pan_us_min']), int(values['serial.pan_us_max'])),
            tilt_us=(int(values['serial.tilt_us_min']), int(values['serial.tilt_us_max'])),
            reconnect_max_s=float(values['reconnect_max_s']),
            dxl_port=str(values['dynamixel.port']), dxl_baud=int(values['dynamixel.baud']),
            dxl_ids=(int(values['dynamixel.pan_id']), int(values['dynamixel.tilt_id'])),
            dxl_zero=(int(values['dynamixel.pan_zero']), int(values['dynamixel.tilt_zero'])),
            dxl_reverse=(bool(values['dynamixel.pan_reverse']),
                         bool(values['dynamixel.tilt_reverse'])),
            dxl_profile_velocity=float(values['dynamixel.profile_velocity']),
            ros2_control=rc)

    def _make_driver(self) -> HeadDriver:
        p = self.params
        if p.driver == 'sim':
            return SimDriver(self._publish_command)
        if p.driver == 'dry_run':
            return DryRunDriver(log=self.get_logger().info)
        if p.driver == 'ros2_control':
            return Ros2ControlDriver(p.ros2_control, self._publish_controller_command,
                                     self._controller_subscribers, clock=self._now)
        h = p.head
        if p.driver == 'dynamixel':
            return DynamixelDriver(
                p.dxl_port, p.dxl_baud,
                pan=DynamixelJoint(p.dxl_ids[0], h.pan_min, h.pan_max, p.dxl_zero[0],
                                   p.dxl_reverse[0]),
                tilt=DynamixelJoint(p.dxl_ids[1], h.tilt_min, h.tilt_max, p.dxl_zero[1],
                                    p.dxl_reverse[1]),
                profile_velocity=p.dxl_profile_velocity or h.max_velocity,
                reconnect_min_s=min(0.5, p.reconnect_max_s),
                reconnect_max_s=p.reconnect_max_s)
        return SerialServoDriver(
            p.serial_port, p.serial_baud,
            pan=ServoMapping(h.pan_min, h.pan_max, p.pan_us[0], p.pan_us[1]),
            tilt=ServoMapping(h.tilt_min, h.tilt_max, p.tilt_us[0], p.tilt_us[1]),
            readback=p.serial_readback)

    def _open_driver(self, now: float) -> None:
        try:
            self.driver.open()
        except DriverError as exc:
            self._driver_fault(str(exc), now)
            return
        if not self.driver_ok:
            self.get_logger().info(f'head driver {self.driver.name} ready')
        self.driver_ok, self.driver_error, self._backoff = True, '', 0.5

    def _driver_fault(self, error: str, now: float) -> None:
        self.driver_ok, self.driver_error = False, error
        self._retry_at = now + self._backoff
        self.get_logger().warning(f'head driver fault: {error}; retrying in '
                                  f'{self._backoff:.1f} s')
        self._backoff = min(self.params.reconnect_max_s, self._backoff * 2)

    # ---- inputs -------------------------------------------------------------------------

    def _core_stamp(self, header_stamp, now: float) -> float:
        """A message's time on the core's clock: now minus the message's age."""
        return now - _stamp_age_s(header_stamp, self.get_clock().now().nanoseconds)

    def _reject(self, kind: str, reason: str) -> None:
        """Keep the reason; log it, at most one line per kind every 2 s (with a count of
        the lines held back): a flood of bad input is no flood of log lines."""
        self.rejections.append(reason)
        line = self._throttle(kind, reason)
        if line is not None:
            self.get_logger().warning(line)

    def _on_attention(self, msg: AttentionState) -> None:
        bad = stamp_error(msg.header.stamp)
        if bad:
            self._reject('attention', f'rejected attention state: {bad}')
            return
        with self._lock:
            self._attention(msg)

    def _attention(self, msg: AttentionState) -> None:
        now = self._now()
        stamp = self._core_stamp(msg.header.stamp, now)
        # The frame's own stamp times the rate fits: on sim time it is the simulation's clock,
        # which a slow simulation runs behind this process's (see set_reflex_target).
        source_t = stamp_to_seconds(msg.header.stamp) or None    # None: an unset stamp
        self.core.update_targets(_targets_from_attention(msg), now, stamp, source_t)
        goal = self.core.goal
        act = goal is not None and goal.mode in FOLLOWING_GOALS  # it follows a target
        if not msg.has_focus:
            self.core.clear_reflex()
        else:
            result = self.core.set_reflex_target(msg.focus_pan, msg.focus_tilt, now=now,
                                                 stamp=stamp, track_id=msg.focus_track_id,
                                                 source_t=source_t)
            if result.accepted and goal is None:
                self._reflex_source = msg.header
                act = True
            if result.reason:
                self._reject('reflex', result.reason)
        if act:
            self._act_on_new_target()

    def _act_on_new_target(self) -> None:
        """Tick now, in the subscription's thread (lock held), for a new target position.

        Waiting for the next regular tick would add up to a period to every frame's latency,
        and waking the control thread costs a thread hand-off (measured: p95 4.8 ms from the
        state's arrival to its command). Within the min gap of the last tick, the control
        loop ticks when the gap has passed. A driver in fault is left to the control loop,
        which reconnects it.
        """
        t = time.monotonic()
        if self.driver_ok and t - self._last_target_tick >= self._min_gap:
            self._tick(min(t - self._last_tick, self._period), t)
            self._last_target_tick = t
            self._deadline = t + self._period     # the regular ticks go on a period later
        else:
            self._act_now = True
        self._wake.set()

    def _on_goal(self, msg: HeadGoal) -> None:
        bad = stamp_error(msg.header.stamp)
        if bad:
            self._reject('goal', f'rejected goal {msg.goal_id!r}: {bad}')
            return
        now = self._now()
        stamp = self._core_stamp(msg.header.stamp, now)
        with self._lock:
            result = self.core.set_goal(_goal_from_msg(msg, stamp), now)
        if not result.accepted:
            self._reject('goal', result.reason)
        elif result.clamped:
            self._reject('clamped', result.reason)
        else:
            note = f': {result.reason}' if result.reason else ''
            self.get_logger().info(f'head goal {msg.goal_id!r} (mode {msg.mode}) from '
                                   f'{msg.requested_by or "?"}{note}')

    def _on_joint_states(self, msg: JointState) -> None:
        joints = _joints_from_msg(msg)
        if joints is None:
            return
        (pan, tilt), vel = joints
        source_t = stamp_to_seconds(msg.header.stamp) or None   # the simulation's own clock
        with self._lock:
            result = self.core.set_measured(pan, tilt, self._now(), *(vel or (None, None)),
                                            source_t=source_t)
            if result.accepted:
                self.driver.feed(pan, tilt)
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
        self._cmd_pub.publish(_joint_state_msg((pan, tilt), self._last_velocity,
                                               self.get_clock().now().to_msg()))

    def _control_loop(self) -> None:
        """Regular ticks on absolute deadlines (late ones catch up), plus the pending
        new-target tick once the min gap since the last new-target tick has passed."""
        period = self._period
        try:
            while not self._stop.is_set():
                with self._lock:
                    due = self._deadline
                    if self._act_now:
                        due = min(due, self._last_target_tick + self._min_gap)
                delay = due - time.monotonic()
                if delay > 0:
                    self._wake.wait(delay)
                    self._wake.clear()
                    continue          # woken or due: read the schedule again
                with self._lock:
                    t = time.monotonic()
                    if self._act_now:
                        if t - self._last_target_tick < self._min_gap:
                            continue
                        self._last_target_tick = t
                        self._deadline = t + period
                    elif t < self._deadline:
                        continue      # a new-target tick moved the deadline meanwhile
                    else:
                        self._deadline += period
                        if self._deadline < t - 5 * period:   # suspended or far behind
                            self._deadline = t + period
                    self._tick(min(t - self._last_tick, 5 * period), t)
        except Exception as exc:  # noqa: BLE001 - say loudly that the head stopped, then end
            self.get_logger().fatal(f'head control loop stopped: {type(exc).__name__}: {exc}')
            raise

    def _tick(self, dt: float, tick_at: float) -> None:
        """One control step of dt seconds at time.monotonic() `tick_at` (lock held): read,
        step the core, write, report."""
        now = self._now()
        self._last_tick, self._act_now = tick_at, False
        self.tick_times.append(tick_at)
        if not self.driver_ok and now >= self._retry_at:
            self.driver.close()
            self._open_driver(now)
        reading = None
        if self.driver_ok and self.params.driver != 'sim':
            try:
                reading = self.driver.read()
            except DriverError as exc:
                self._driver_fault(str(exc), now)
            if reading is not None:
                self.core.set_measured(reading[0], reading[1], now)
        if self.driver_ok or self.params.driver not in HOLDING:
            cmd = self.core.step(dt, now)
            self._last_velocity = (cmd.pan_velocity, cmd.tilt_velocity)
        else:
            cmd = None     # held (see HOLDING)
        if self.driver_ok:
            try:
                self.driver.write(cmd.pan, cmd.tilt)
                self.commands_sent += 1
            except DriverError as exc:
                self._driver_fault(str(exc), now)
            else:
                if self._reflex_source is not None and self.core.goal is None:
                    self._source_pub.publish(self._reflex_source)
        self._reflex_source = None
        stamp = self.get_clock().now().to_msg()
        if self._joint_pub is not None and cmd is not None:
            # What the hardware reported this tick, else what it was told (dry run: reached).
            if reading is not None and self.params.driver in MEASURING:
                self._joint_pub.publish(_joint_state_msg(reading, None, stamp))
            else:
                self._joint_pub.publish(_joint_state_msg((cmd.pan, cmd.tilt),
                                                         self._last_velocity, stamp))
        for pain in self.core.pop_pain():
            line = self._throttle(f'pain {pain.type_name}', f'pain ({pain.type_name}, '
                                  f'{pain.intensity:.2f}): {pain.message}')
            if line is not None:
                self.get_logger().warning(line)
            self._pain_pub.publish(_pain_to_msg(pain, stamp))
        for notice in self.core.pop_notices():
            self.get_logger().info(notice)
        if now >= self._next_state:
            self._next_state = now + 1.0 / self.params.state_rate_hz
            self._state_pub.publish(_status_to_msg(self.core.status(now), self.driver.name,
                                                   self.driver_ok, self.driver_error, stamp))

    def destroy_node(self):
        self._release()
        return super().destroy_node()


def main(args=None):
    run(lambda: HeadControllerNode(autostart=False), args)


if __name__ == '__main__':
    main()
