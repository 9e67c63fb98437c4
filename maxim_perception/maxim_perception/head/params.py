"""The head controller's parameters: the table the node declares, the frozen set they are read
into (once, at start), the driver they choose and the supervised core they compose.

Plain Python (no rclpy, no messages): `maxim calibrate` reads the defaults from the same table,
and the tests build the parameters and the drivers without a node.

Parameters:
    driver (string): sim | serial | dry_run | dynamixel | ros2_control.
    rate_hz (double, 50): control rate; state_rate_hz (double, 10): head/state rate.
    urdf (string, '': maxim_bringup's urdf/maxim_head.urdf): the URDF whose
        head_pan_joint and head_tilt_joint limits are the head's joint limits, their one
        source (maxim_common.urdf); `./maxim calibrate` writes a calibrated copy.
    max_velocity (double, 3.0 rad/s), max_acceleration (double, 15 rad/s^2).
    command_timeout_s (double, 0.5): older reflex targets and goals are rejected as stale.
    goal_tolerance_rad (double, 0.02), movement_error_rad (double, 0.2),
    movement_error_s (double, 0.5), movement_speed_ratio (double, 0.5),
    movement_window_s (double, 0.25): movement pain, judged against the driver's motion
        model (head/motion.py; off for a driver without feedback),
    effort_limit (double, 0.8), effort_s (double, 0.2): a servo's present current over this
        fraction of its full scale for this long hurts (overcurrent; Dynamixel),
    thrash_window_s (double, 2.0),
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
        are written from the URDF's.
    ros2_control.interface (string, forward_position | joint_trajectory),
    ros2_control.controller (string, '': head_position_controller or
    head_trajectory_controller), ros2_control.joints (string[], the controller's joint
    order; head_pan_joint, head_tilt_joint), ros2_control.pan_joint,
    ros2_control.tilt_joint (string), ros2_control.state_timeout_s (double, 0.5),
    ros2_control.feedback (bool, false: mock_components echoes the command): a head
        under ros2_control (head/ros2_control.py).
    reconnect_max_s (double, 10): longest backoff between driver reconnection attempts.
"""

from dataclasses import dataclass
from typing import Callable

from maxim_common.urdf import read_head_limits
from maxim_perception.head.control import HeadConfig, HeadController
from maxim_perception.head.drivers import (DryRunDriver, HeadDriver, SerialServoDriver,
                                           ServoMapping, SimDriver)
from maxim_perception.head.dynamixel import DynamixelDriver, DynamixelJoint
from maxim_perception.head.motion import MotionModel
from maxim_perception.head.ros2_control import (ControllerCommand, Ros2ControlConfig,
                                                Ros2ControlDriver)
from maxim_perception.head.supervision import DriverSupervisor

DRIVERS = ('sim', 'serial', 'dry_run', 'dynamixel', 'ros2_control')
# The head's joints in (pan, tilt) order, as the URDF names them.
JOINTS = ('head_pan_joint', 'head_tilt_joint')


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


# name: (default, description, (low, high) range or None); maxim_common.params declares them
# (read-only), and `maxim calibrate` reads their defaults.
PARAMS = {
    'driver': ('sim', 'Head driver: sim (publish head/joint_commands), serial, dry_run, '
               'dynamixel, ros2_control', None),
    'rate_hz': (50.0, 'Control rate: joint commands per second', (1.0, 1000.0)),
    'state_rate_hz': (10.0, 'head/state messages per second', (0.1, 100.0)),
    'urdf': ('', "The head's URDF: its joints' limits are the head's (''; "
                 "maxim_bringup's urdf/maxim_head.urdf)", None),
    'max_velocity': (3.0, 'Joint speed limit, rad/s', (0.01, 20.0)),
    'max_acceleration': (15.0, 'Joint acceleration limit, rad/s^2', (0.01, 500.0)),
    'command_timeout_s': (0.5, 'Reflex targets and goals older than this are stale',
                          (0.01, 60.0)),
    'goal_tolerance_rad': (0.02, 'Measured within this of the goal: goal reached',
                           (0.0001, 1.0)),
    'movement_error_rad': (0.2, 'A joint farther than this from its command ...',
                           (0.001, 3.0)),
    'movement_error_s': (0.5, '... that moves towards it slower than its driver allows for '
                         'longer than this is a movement-error pain, s', (0.0, 60.0)),
    'movement_speed_ratio': (0.5, "Slower than this fraction of the driver's speed (its "
                             'velocity limit, or what arrives within movement_error_s) is '
                             'held back', (0.01, 1.0)),
    'movement_window_s': (0.25, "A joint's speed is measured over this much of its "
                          'trajectory, s', (0.02, 10.0)),
    'effort_limit': (0.8, "A servo's present current over this fraction of its full scale "
                     '(Current Limit, or 100 % load) ...', (0.01, 1.0)),
    'effort_s': (0.2, '... for longer than this is an overcurrent pain, s', (0.0, 60.0)),
    'thrash_window_s': (2.0, 'Window over which pan reversals are counted', (0.1, 60.0)),
    'thrash_reversals': (6, 'Pan reversals within the window that count as thrashing',
                         (2, 1000)),
    'thrash_min_swing_rad': (0.05, 'A reversal counts only after a swing this long, rad',
                             (0.0, 3.0)),
    'focus_dwell_s': (3.0, 'FOCUS_INTERESTS: seconds on each target', (0.1, 600.0)),
    'reflex.predict_max_s': (0.3, 'Aim a moving focus ahead by its frame age, at most this '
                             '(s; 0: no prediction)', (0.0, 2.0)),
    'reflex.lead_s': (0.04, 'Extra lead for the servo lag behind its command, s',
                      (0.0, 1.0)),
    'reflex.rate_window_s': (0.4, 'The focus rate is fitted over this window, s',
                             (0.05, 5.0)),
    'serial.port': ('/dev/ttyUSB0', 'Servo board serial port (driver serial)', None),
    'serial.baud': (115200, 'Servo board baud rate', None),
    'serial.readback': (True, 'The board echoes P<us> T<us> lines: use them as measured', None),
    'serial.pan_us_min': (500, "Pulse width (us) at the URDF's pan lower limit", None),
    'serial.pan_us_max': (2500, 'Pulse width (us) at pan.max', None),
    'serial.tilt_us_min': (500, "Pulse width (us) at the URDF's tilt lower limit", None),
    'serial.tilt_us_max': (2500, 'Pulse width (us) at tilt.max', None),
    'dynamixel.port': ('/dev/ttyUSB0', 'Dynamixel bus adapter (driver dynamixel); a '
                       '/dev/serial/by-id/... link survives a replug', None),
    'dynamixel.baud': (57600, "The servos' baud rate (57600 from the factory; 1000000 for "
                       '50 Hz control with margin)', None),
    'dynamixel.pan_id': (1, 'Dynamixel ID of the pan servo', (0, 252)),
    'dynamixel.tilt_id': (2, 'Dynamixel ID of the tilt servo', (0, 252)),
    'dynamixel.pan_zero': (2048, 'Pan servo position (ticks, 4096 a turn) at 0 rad',
                           (0, 4095)),
    'dynamixel.tilt_zero': (2048, 'Tilt servo position (ticks) at 0 rad', (0, 4095)),
    'dynamixel.pan_reverse': (False, 'The pan servo turns the other way (ticks fall as the '
                              'angle grows)', None),
    'dynamixel.tilt_reverse': (False, 'The tilt servo turns the other way', None),
    'dynamixel.profile_velocity': (0.0, "The servos' own speed limit, rad/s (0: "
                                   'max_velocity)', (0.0, 20.0)),
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
                                     'and the head holds', (0.01, 60.0)),
    'ros2_control.feedback': (False, "The hardware interface's position state is measured "
                              '(false: mock_components/GenericSystem, whose state is the '
                              'command; movement pain is off then)', None),
    'reconnect_max_s': (10.0, 'Longest wait between driver reconnection attempts',
                        (0.1, 600.0)),
}


def read_params(values: dict) -> HeadControllerParams:
    """The parameters from their declared values by name, the joint limits from the URDF
    they name (ValueError: a bad one, named; UrdfError is one)."""
    driver = str(values['driver'])
    if driver not in DRIVERS:
        raise ValueError(f'head_controller: driver must be one of {", ".join(DRIVERS)}, '
                         f'got {driver!r}')
    limits = read_head_limits(str(values['urdf']))
    head = HeadConfig(
        pan_min=limits['pan'][0], pan_max=limits['pan'][1],
        tilt_min=limits['tilt'][0], tilt_max=limits['tilt'][1],
        max_velocity=float(values['max_velocity']),
        max_acceleration=float(values['max_acceleration']),
        command_timeout_s=float(values['command_timeout_s']),
        goal_tolerance_rad=float(values['goal_tolerance_rad']),
        movement_error_rad=float(values['movement_error_rad']),
        movement_error_s=float(values['movement_error_s']),
        movement_speed_ratio=float(values['movement_speed_ratio']),
        movement_window_s=float(values['movement_window_s']),
        effort_limit=float(values['effort_limit']), effort_s=float(values['effort_s']),
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
            max_velocity=head.max_velocity, min_time_s=1.0 / float(values['rate_hz']),
            feedback=bool(values['ros2_control.feedback']))
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


def make_driver(p: HeadControllerParams, publish_command: Callable[[float, float], None],
                publish_controller_command: Callable[[ControllerCommand], None],
                controller_subscribers: Callable[[], int], clock: Callable[[], float],
                log: Callable[[str], None]) -> HeadDriver:
    """The driver `p.driver` names, wired to the node's publishers (sim, ros2_control) and
    logger (dry_run). A bad servo setting is a ValueError."""
    if p.driver == 'sim':
        return SimDriver(publish_command)
    if p.driver == 'dry_run':
        return DryRunDriver(log=log)
    if p.driver == 'ros2_control':
        return Ros2ControlDriver(p.ros2_control, publish_controller_command,
                                 controller_subscribers, clock=clock)
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


def compose(p: HeadControllerParams, publish_command: Callable[[float, float], None],
            publish_controller_command: Callable[[ControllerCommand], None],
            controller_subscribers: Callable[[], int], clock: Callable[[], float],
            info: Callable[[str], None], warn: Callable[[str], None]) -> DriverSupervisor:
    """The head's core behind its driver (make_driver) under supervision; the core's movement
    pain is judged by the driver's motion model."""
    core = HeadController(p.head)
    driver = make_driver(p, publish_command, publish_controller_command,
                         controller_subscribers, clock, info)
    core.set_motion_model(MotionModel.of(driver))
    return DriverSupervisor(core, driver, p.reconnect_max_s, info, warn, 1.0 / p.state_rate_hz)
