"""Calibrating a real head: find each joint's zero and limits by jogging it, and write them.

`./maxim calibrate` (maxim_bringup/calibrate.py) is the terminal around this module; all that
decides lives here, with no terminal, no clock and no ROS:

- `Calibrator`: a state machine fed key names (`key()`), time steps (`tick()`) and the
  driver's readings (`feed()`). It ramps each joint's command towards a jog target at a low
  speed, keeps the marks (zero, lower and upper limit of each joint) and, on Enter, the
  result. Any key that is no command stops the head; a joint that falls far behind its
  command (blocked) is stopped where it is; a limit beyond the URDF's is refused unless
  `allow_beyond_urdf`, and so is jogging past it.
- The joint frame of each driver (`DryRunAxis`, `SerialAxis`, `DynamixelAxis`): the range its
  hardware reaches, how a mark is quantized (whole microseconds, whole ticks) and which
  driver parameters the marks become (pulse widths, zero ticks).
- `calibration_driver()`: the driver to calibrate with, built from the head controller's
  parameters, and the two joints' frames.
- The writers: `calibrated_params_text()` (the params file with head_controller's values
  replaced, its comments kept) and `calibrated_urdf_text()` (the URDF with the two joints'
  limits replaced), and `urdf_limits()` to read the URDF's.

Angles: the calibration frame is the driver's angle as the params file maps it when the
calibration starts (its "old zero"). Marking zero moves 0 rad to where the joint is; the limits
written are relative to the new zero. Positive pan turns left, positive tilt looks down.
"""

from dataclasses import dataclass, field
from enum import Enum
import math
import re

from maxim_common.urdf import joint_limits, read_head_limits, UrdfError
from maxim_perception.head.drivers import (BOARD_PULSE_US, DryRunDriver, SerialServoDriver,
                                           ServoMapping)
from maxim_perception.head.dynamixel import (DynamixelDriver, DynamixelJoint, MAX_TICK,
                                             RAD_PER_TICK)

JOINTS = ('pan', 'tilt')
URDF_JOINTS = ('head_pan_joint', 'head_tilt_joint')
CALIBRATABLE = ('serial', 'dynamixel', 'dry_run')
PULSE_CENTRE_US = 1500             # where a serial joint starts when the board cannot say (limp)

DEFAULT_STEP = math.radians(2.0)   # one jog
MIN_STEP, MAX_STEP = math.radians(0.1), math.radians(10.0)
DEFAULT_SPEED = 0.3                # rad/s the command ramps at (and a Dynamixel's own limit)
MAX_SPEED = 1.0
TOLERANCE = 0.02                   # rad: a joint this close to its command has arrived
MAX_LAG = 0.15                     # rad: a joint this far behind its command is held back
URDF_SLACK = 1e-3                  # rad: rounding, not a limit beyond the URDF's
MIN_SPAN = 0.01                    # rad between a joint's lower and upper limit at least
DECIMALS = 4                       # radians written with this many decimals

# Key names (what the terminal's bytes and a key script become).
JOG = {'left': (0, +1), 'a': (0, +1), 'right': (0, -1), 'd': (0, -1),
       'up': (1, -1), 'w': (1, -1), 'down': (1, +1), 's': (1, +1)}
QUIT_KEYS = ('q', 'esc', 'ctrl-c', 'eof')
NAMED_KEYS = ('left', 'right', 'up', 'down', 'tab', 'enter', 'esc', 'space', 'backspace',
              'ctrl-c', 'ctrl-d', 'eof', 'unknown')

HELP = ('keys: a/d or left/right jog pan (left/right), w/s or up/down jog tilt (up/down); '
        'tab switches joint; z marks zero, [ the lower limit, ] the upper limit of the joint '
        'being jogged; + and - change the step; Enter saves; q or Esc quits without saving; '
        'any other key stops the head')


class CalibrationError(ValueError):
    """A calibration that cannot start or be written (the message says why)."""


def _deg(rad: float) -> str:
    return f'{math.degrees(rad):+.1f} deg'


def _rad(rad: float) -> str:
    return f'{rad:+.3f} rad ({_deg(rad)})'


# ---- the joints' frames, per driver -----------------------------------------------------------

class DryRunAxis:
    """No hardware: any angle, as it is."""

    def __init__(self, initial: tuple[float, float]):
        self.range = (-math.pi, math.pi)
        self.initial = (float(initial[0]), float(initial[1]))
        self.rest = 0.0
        self.unit = 0.0                 # rad of the smallest step the hardware takes

    def quantize(self, angle: float) -> float:
        return angle

    def raw(self, angle: float) -> str:
        return ''

    def params(self, joint: str, zero: float, lower: float, upper: float) -> dict:
        return {}

    def check(self, joint: str, zero: float, lower: float, upper: float) -> None:
        return None


class SerialAxis:
    """A hobby servo on the maxim_head_servo board: angles map linearly onto pulse widths,
    `us_per_rad` (negative: a reversed servo) with `us_at_zero` at 0 rad. The hardware's
    range is the board's pulse range (BOARD_PULSE_US)."""

    def __init__(self, us_per_rad: float, us_at_zero: float, initial_us: tuple[int, int]):
        if not (math.isfinite(us_per_rad) and abs(us_per_rad) > 1.0
                and math.isfinite(us_at_zero)):
            raise CalibrationError(f'a pulse map of {us_per_rad} us/rad with {us_at_zero} us '
                                   'at 0 rad is no servo: check serial.*_us_min/max and the '
                                   'joint limits')
        self.k, self.us0 = float(us_per_rad), float(us_at_zero)
        self.unit = 1.0 / abs(self.k)
        ends = sorted(self.angle(us) for us in BOARD_PULSE_US)
        self.range = (ends[0], ends[1])
        # The params file's limits (pulses at its min, max) as angles of this frame.
        self.initial = tuple(sorted(self.angle(us) for us in initial_us))
        self.rest = min(max(self.angle(PULSE_CENTRE_US), ends[0]), ends[1])

    def angle(self, us: float) -> float:
        return (us - self.us0) / self.k

    def pulse(self, angle: float) -> int:
        return int(round(self.us0 + self.k * angle))

    def quantize(self, angle: float) -> float:
        return self.angle(self.pulse(angle))

    def raw(self, angle: float) -> str:
        return f'{self.pulse(angle)} us'

    def mapping(self) -> ServoMapping:
        """The map the driver uses while calibrating: the board's whole pulse range."""
        lo_us, hi_us = BOARD_PULSE_US
        if self.k < 0:
            lo_us, hi_us = hi_us, lo_us
        return ServoMapping(self.angle(lo_us), self.angle(hi_us), lo_us, hi_us)

    def params(self, joint: str, zero: float, lower: float, upper: float) -> dict:
        return {f'serial.{joint}_us_min': self.pulse(lower),
                f'serial.{joint}_us_max': self.pulse(upper)}

    def check(self, joint: str, zero: float, lower: float, upper: float) -> None:
        ServoMapping(round(lower - zero, DECIMALS), round(upper - zero, DECIMALS),
                     self.pulse(lower), self.pulse(upper))


class DynamixelAxis:
    """An X-series servo: 4096 ticks a turn, `zero_tick` at 0 rad, `reverse`d or not; the
    hardware's range is one turn, ticks 0..4095."""

    def __init__(self, zero_tick: int, reverse: bool, initial: tuple[float, float]):
        if not 0 <= int(zero_tick) <= MAX_TICK:
            raise CalibrationError(f'a zero of {zero_tick} ticks is outside 0..{MAX_TICK}')
        self.zero_tick, self.reverse = int(zero_tick), bool(reverse)
        self.sign = -1.0 if self.reverse else 1.0
        self.unit = RAD_PER_TICK
        ends = sorted(self.angle(t) for t in (0, MAX_TICK))
        self.range = (ends[0], ends[1])
        self.initial = (float(initial[0]), float(initial[1]))
        self.rest = 0.0

    def angle(self, tick: int) -> float:
        return self.sign * (tick - self.zero_tick) * RAD_PER_TICK

    def tick(self, angle: float) -> int:
        return int(round(self.zero_tick + self.sign * angle / RAD_PER_TICK))

    def quantize(self, angle: float) -> float:
        return self.angle(self.tick(angle))

    def raw(self, angle: float) -> str:
        return f'tick {self.tick(angle)}'

    def joint(self, servo_id: int) -> DynamixelJoint:
        """The servo while calibrating: its whole turn (the calibrator keeps the jogs inside
        the URDF's limits; the head controller writes the calibrated limits at its start)."""
        return DynamixelJoint(servo_id, self.range[0], self.range[1], self.zero_tick,
                              self.reverse)

    def params(self, joint: str, zero: float, lower: float, upper: float) -> dict:
        return {f'dynamixel.{joint}_zero': self.tick(zero)}

    def check(self, joint: str, zero: float, lower: float, upper: float) -> None:
        DynamixelJoint(1, round(lower - zero, DECIMALS), round(upper - zero, DECIMALS),
                       self.tick(zero), self.reverse)


def calibration_driver(values: dict, speed: float = DEFAULT_SPEED,
                       servo_travel_deg: float | None = None, log=None):
    """(driver, (pan axis, tilt axis)) to calibrate with, from the head controller's
    parameters (`values`: every one of its dotted parameters, defaults included; the joint
    limits the calibration starts from are those of the URDF its `urdf` names).

    The driver is built as the head controller builds it, with the whole range of the
    hardware open to the calibrator: the serial board's 500..2500 us, a Dynamixel's whole
    turn (at `speed` rad/s, its profile velocity). `servo_travel_deg` (serial only): the
    angle the servos turn over the board's 500..2500 us, instead of the params file's map.
    """
    driver = str(values.get('driver', ''))
    if driver not in CALIBRATABLE:
        if driver == 'ros2_control':
            raise CalibrationError(
                'driver ros2_control: calibrate speaks to the servos itself, not through a '
                "controller. Calibrate with your hardware interface's own tools, then set "
                "the URDF's joint limits to match (the head controller and the xacro read them)")
        raise CalibrationError(f'driver {driver!r} cannot be calibrated: use one of '
                               f'{", ".join(CALIBRATABLE)} (--driver)')
    if not (math.isfinite(speed) and 0 < speed <= MAX_SPEED):
        raise CalibrationError(f'speed must be in (0, {MAX_SPEED}] rad/s, got {speed}')
    if servo_travel_deg is not None and driver != 'serial':
        raise CalibrationError('--servo-travel-deg is for the serial hobby-servo board only')
    try:
        urdf = read_head_limits(str(values.get('urdf', '')))
    except UrdfError as exc:
        raise CalibrationError(str(exc)) from exc
    limits = [urdf[joint] for joint in JOINTS]
    if driver == 'dry_run':
        return DryRunDriver(log=log), tuple(DryRunAxis(lim) for lim in limits)
    if driver == 'serial':
        axes = []
        for joint, (lo, hi) in zip(JOINTS, limits):
            us = (int(values[f'serial.{joint}_us_min']), int(values[f'serial.{joint}_us_max']))
            k = (us[1] - us[0]) / (hi - lo)
            us0 = us[0] - k * lo
            if servo_travel_deg is not None:
                if not 10.0 <= servo_travel_deg <= 360.0:
                    raise CalibrationError('--servo-travel-deg must be 10..360, got '
                                           f'{servo_travel_deg}')
                span = BOARD_PULSE_US[1] - BOARD_PULSE_US[0]
                k = math.copysign(span / math.radians(servo_travel_deg), k)
            axes.append(SerialAxis(k, us0, us))
        port = str(values['serial.port'])
        try:
            drv = SerialServoDriver(port, int(values['serial.baud']), pan=axes[0].mapping(),
                                    tilt=axes[1].mapping(),
                                    readback=bool(values['serial.readback']))
        except ValueError as exc:
            raise CalibrationError(f'serial driver: {exc}') from exc
        return drv, tuple(axes)
    axes = tuple(DynamixelAxis(int(values[f'dynamixel.{j}_zero']),
                               bool(values[f'dynamixel.{j}_reverse']), lim)
                 for j, lim in zip(JOINTS, limits))
    try:
        drv = DynamixelDriver(str(values['dynamixel.port']), int(values['dynamixel.baud']),
                              pan=axes[0].joint(int(values['dynamixel.pan_id'])),
                              tilt=axes[1].joint(int(values['dynamixel.tilt_id'])),
                              profile_velocity=speed, retries=1)
    except ValueError as exc:
        raise CalibrationError(f'dynamixel driver: {exc}') from exc
    return drv, axes


def _quantize_within(axis, angle: float, lo: float, hi: float) -> float:
    """The hardware's nearest position to `angle` inside [lo, hi] (one unit inwards where
    rounding would step out)."""
    angle = min(max(angle, lo), hi)
    q = axis.quantize(angle)
    if q > hi:
        q = axis.quantize(angle - axis.unit)
    elif q < lo:
        q = axis.quantize(angle + axis.unit)
    return q


# ---- the state machine --------------------------------------------------------------------

class State(Enum):
    RUNNING = 'running'
    SAVED = 'saved'
    QUIT = 'quit'


@dataclass
class _Joint:
    name: str
    urdf_joint: str
    axis: object
    urdf: tuple[float, float]
    command: float
    target: float
    lower: float
    upper: float
    zero: float = 0.0
    measured: float | None = None
    marked: set = field(default_factory=set)


@dataclass(frozen=True)
class JointCalibration:
    """One joint's calibration: `zero` in the old frame, `lower`/`upper` relative to it."""

    name: str
    urdf_joint: str
    zero: float
    lower: float
    upper: float
    marked: tuple[str, ...]


@dataclass(frozen=True)
class CalibrationResult:
    """What Enter saves: both joints, and the head controller's parameters they make."""

    driver: str
    joints: tuple[JointCalibration, JointCalibration]
    params: dict

    def urdf_limits(self) -> dict[str, tuple[float, float]]:
        return {j.urdf_joint: (j.lower, j.upper) for j in self.joints}

    def summary(self) -> list[str]:
        out = []
        for j in self.joints:
            kept = [m for m in ('zero', 'lower', 'upper') if m not in j.marked]
            note = f' (kept from the URDF: {", ".join(kept)})' if kept else ''
            out.append(f'{j.name}: zero moved {_rad(j.zero)} from the old zero; limits '
                       f'{j.lower:+.4f}..{j.upper:+.4f} rad ({_deg(j.lower)}..{_deg(j.upper)})'
                       f'{note}')
        return out


class Calibrator:
    """Jog, mark and save (see the module docstring). Feed it `key(name)` for each key,
    `tick(dt)` at the control rate (it returns the (pan, tilt) command to send) and `feed()`
    with each reading of the driver; each returns the messages for the user."""

    def __init__(self, axes, urdf: dict[str, tuple[float, float]], start: tuple[float, float],
                 driver: str = 'dry_run', step: float = DEFAULT_STEP,
                 speed: float = DEFAULT_SPEED, allow_beyond_urdf: bool = False,
                 tolerance: float = TOLERANCE, max_lag: float = MAX_LAG):
        if not MIN_STEP <= step <= MAX_STEP:
            raise CalibrationError(f'step must be {math.degrees(MIN_STEP):g}..'
                                   f'{math.degrees(MAX_STEP):g} deg, got {math.degrees(step):g}')
        if not (math.isfinite(speed) and 0 < speed <= MAX_SPEED):
            raise CalibrationError(f'speed must be in (0, {MAX_SPEED}] rad/s, got {speed}')
        missing = [j for j in URDF_JOINTS if j not in urdf]
        if missing:
            raise CalibrationError(f'the URDF has no limits for {", ".join(missing)}')
        self.driver = driver
        self.step = step
        self.speed = speed
        self.allow_beyond_urdf = allow_beyond_urdf
        self.tolerance = tolerance
        self.max_lag = max_lag
        self.state = State.RUNNING
        self.result: CalibrationResult | None = None
        self.selected = 0
        self.joints = []
        for name, urdf_joint, axis, position in zip(JOINTS, URDF_JOINTS, axes, start):
            position = _quantize_within(axis, float(position), *axis.range)
            self.joints.append(_Joint(name, urdf_joint, axis, tuple(urdf[urdf_joint]),
                                      position, position, axis.initial[0], axis.initial[1]))

    # ---- what the terminal shows ----------------------------------------------------------

    @property
    def command(self) -> tuple[float, float]:
        return self.joints[0].command, self.joints[1].command

    def jog_range(self, i: int) -> tuple[float, float]:
        """Where joint i may be jogged, in the old frame: the hardware's range, inside the
        URDF's limits around the current zero unless allow_beyond_urdf."""
        j = self.joints[i]
        lo, hi = j.axis.range
        if not self.allow_beyond_urdf:
            lo, hi = max(lo, j.zero + j.urdf[0]), min(hi, j.zero + j.urdf[1])
        return lo, hi

    def settled(self) -> bool:
        """Both joints are where they were told to go, and at rest."""
        return all(self._at_rest(j) is None for j in self.joints)

    def status(self) -> str:
        parts = []
        for i, j in enumerate(self.joints):
            mark = '*' if i == self.selected else ' '
            raw = j.axis.raw(j.command)
            parts.append(f'{mark}{j.name} {j.command - j.zero:+.3f} rad '
                         f'({_deg(j.command - j.zero)}{", " + raw if raw else ""}) '
                         f'[{j.lower - j.zero:+.2f}..{j.upper - j.zero:+.2f}]')
        return '  '.join(parts) + f'  step {math.degrees(self.step):.1f} deg'

    # ---- inputs ---------------------------------------------------------------------------

    def key(self, name: str) -> list[str]:
        """One key; the messages it gives."""
        if self.state is not State.RUNNING:
            return []
        name = name.lower() if len(name) == 1 else name
        if name in JOG:
            joint, sign = JOG[name]
            return self._jog(joint, sign)
        if name in QUIT_KEYS:
            self._stop()
            self.state = State.QUIT
            return ['quit: nothing saved']
        self._stop()          # every other key stops the head first
        if name == 'tab':
            self.selected = 1 - self.selected
            return [f'jogging {self.joints[self.selected].name}']
        if name == 'z':
            return self._mark_zero(self.joints[self.selected])
        if name in ('[', ']'):
            return self._mark_limit(self.joints[self.selected], name == ']')
        if name in ('+', '='):
            self.step = min(MAX_STEP, self.step * 2)
            return [f'step {math.degrees(self.step):.2f} deg']
        if name == '-':
            self.step = max(MIN_STEP, self.step / 2)
            return [f'step {math.degrees(self.step):.2f} deg']
        if name == 'enter':
            return self._save()
        if name in ('h', '?'):
            return [HELP]
        return ['stopped']

    def tick(self, dt: float) -> tuple[float, float]:
        """Advance each command towards its target by at most speed * dt; the command."""
        if not (math.isfinite(dt) and dt >= 0):
            raise ValueError(f'dt must be a finite number >= 0, got {dt!r}')
        for j in self.joints:
            gap = j.target - j.command
            move = self.speed * dt
            if abs(gap) <= move:
                j.command = j.target
            else:
                j.command += math.copysign(move, gap)
        return self.command

    def feed(self, pan: float, tilt: float) -> list[str]:
        """A reading of the driver; a joint held far behind its command is stopped where it
        is (blocked by the bracket, a cable, a hand)."""
        out = []
        for j, value in zip(self.joints, (pan, tilt)):
            if value is None or not math.isfinite(value):
                continue
            j.measured = float(value)
            lag = j.command - j.measured
            if abs(lag) > self.max_lag:
                lo, hi = j.axis.range
                j.command = j.target = _quantize_within(j.axis, j.measured, lo, hi)
                out.append(f'{j.name} is held back {_deg(abs(lag))} from its command '
                           '(blocked?): stopped where it is')
        return out

    # ---- internals ------------------------------------------------------------------------

    def _stop(self) -> None:
        for j in self.joints:
            j.target = j.command

    def _jog(self, i: int, sign: int) -> list[str]:
        self.selected = i
        j = self.joints[i]
        lo, hi = self.jog_range(i)
        # Beyond the range already (a zero marked since): back towards it, never further out.
        lo, hi = min(lo, j.target), max(hi, j.target)
        want = j.target + sign * self.step
        # The target leads the command by two steps at most: a held key does not run ahead.
        lead = 2 * self.step
        want = min(max(want, j.command - lead), j.command + lead)
        target = _quantize_within(j.axis, want, lo, hi)
        out = []
        if (sign > 0 and want > hi) or (sign < 0 and want < lo):
            out.append(self._edge_message(i, sign > 0))
        j.target = target
        return out

    def _edge_message(self, i: int, upper: bool) -> str:
        j = self.joints[i]
        hw = j.axis.range[1 if upper else 0]
        urdf = j.zero + j.urdf[1 if upper else 0]
        if not self.allow_beyond_urdf and (urdf < hw if upper else urdf > hw):
            return (f"{j.name} is at the URDF's {'upper' if upper else 'lower'} limit "
                    f'({_rad(j.urdf[1 if upper else 0])} from the zero): it goes no further '
                    '(--allow-beyond-urdf to go past it)')
        return f"{j.name} is at the end of the hardware's range ({j.axis.raw(hw) or _rad(hw)})"

    def _at_rest(self, j: _Joint) -> str | None:
        """Why joint j cannot be marked now, or None."""
        if j.target != j.command:
            return f'{j.name} is still moving: wait for it to stop, then mark'
        if j.measured is not None and abs(j.measured - j.command) > self.tolerance:
            return (f'{j.name} has not reached its command ({_deg(abs(j.measured - j.command))} '
                    'away): blocked? jog it back a little, then mark')
        return None

    def _beyond_urdf(self, j: _Joint, value: float, upper: bool) -> str | None:
        rel = value - j.zero
        bound = j.urdf[1 if upper else 0]
        beyond = rel > bound + URDF_SLACK if upper else rel < bound - URDF_SLACK
        if beyond and not self.allow_beyond_urdf:
            return (f"{j.name} {'upper' if upper else 'lower'} limit {_rad(rel)} is beyond "
                    f"the URDF's {_rad(bound)} ({j.urdf_joint})")
        return None

    def _mark_zero(self, j: _Joint) -> list[str]:
        why = self._at_rest(j)
        if why:
            return [f'zero not marked: {why}']
        j.zero = j.axis.quantize(j.command)
        j.marked.add('zero')
        raw = j.axis.raw(j.zero)
        out = [f'{j.name} zero marked {_rad(j.zero)} from the old zero'
               f'{" (" + raw + ")" if raw else ""}']
        for upper in (False, True):
            which = 'upper' if upper else 'lower'
            value = j.upper if upper else j.lower
            why = self._beyond_urdf(j, value, upper)
            if why and which in j.marked:
                j.marked.discard(which)
                initial = j.axis.initial[1 if upper else 0]
                if upper:
                    j.upper = initial
                else:
                    j.lower = initial
                out.append(f'{why} from the new zero: cleared, mark it again')
        return out

    def _mark_limit(self, j: _Joint, upper: bool) -> list[str]:
        which = 'upper' if upper else 'lower'
        why = self._at_rest(j)
        if why:
            return [f'{which} limit not marked: {why}']
        value = j.axis.quantize(j.command)
        why = self._beyond_urdf(j, value, upper)
        if why:
            return [f'{which} limit refused: {why}: stay inside it, or run with '
                    '--allow-beyond-urdf (the calibrated URDF then gets the wider limit)']
        other = j.lower if upper else j.upper
        if (value - other if upper else other - value) < MIN_SPAN:
            return [f'{which} limit refused: {j.name} {_rad(value - j.zero)} is not '
                    f"{'above' if upper else 'below'} its {'lower' if upper else 'upper'} "
                    f'limit {_rad(other - j.zero)}']
        if upper:
            j.upper = value
        else:
            j.lower = value
        j.marked.add(which)
        raw = j.axis.raw(value)
        return [f'{j.name} {which} limit marked {_rad(value - j.zero)} from the zero'
                f'{" (" + raw + ")" if raw else ""}']

    def _problems(self, j: _Joint) -> list[str]:
        problems = []
        kept = [m for m in ('lower', 'upper') if m not in j.marked]
        hint = (f' (the {" and ".join(kept)} limit{"s" if len(kept) > 1 else ""} of the URDF: '
                'mark them)' if kept else '')
        if j.upper - j.lower < MIN_SPAN:
            problems.append(f'{j.name}: the lower limit {_rad(j.lower - j.zero)} is not below '
                            f'the upper {_rad(j.upper - j.zero)}{hint}')
        elif not j.lower - 1e-9 <= j.zero <= j.upper + 1e-9:
            problems.append(f'{j.name}: the zero lies outside its limits '
                            f'{_rad(j.lower - j.zero)}..{_rad(j.upper - j.zero)}{hint}')
        for upper in (False, True):
            value = j.upper if upper else j.lower
            why = self._beyond_urdf(j, value, upper)
            if why:
                problems.append(f'{why}{hint}')
            lo, hi = j.axis.range
            if not lo - 1e-9 <= value <= hi + 1e-9:
                problems.append(f"{j.name} {'upper' if upper else 'lower'} limit "
                                f"{_rad(value - j.zero)} is outside the hardware's range{hint}")
        if not problems:
            try:
                j.axis.check(j.name, j.zero, j.lower, j.upper)
            except ValueError as exc:
                problems.append(f'{j.name}: {exc}')
        return problems

    def _save(self) -> list[str]:
        problems = [p for j in self.joints for p in self._problems(j)]
        if problems:
            return ['not saved: ' + p for p in problems]
        joints, params = [], {}
        for j in self.joints:
            lower, upper = (round(v - j.zero, DECIMALS) for v in (j.lower, j.upper))
            if not self.allow_beyond_urdf:     # within the slack: the URDF's own value
                lower, upper = max(lower, j.urdf[0]), min(upper, j.urdf[1])
            joints.append(JointCalibration(j.name, j.urdf_joint, j.zero, lower, upper,
                                           tuple(m for m in ('zero', 'lower', 'upper')
                                                 if m in j.marked)))
            params.update(j.axis.params(j.name, j.zero, j.lower, j.upper))
        self.result = CalibrationResult(self.driver, (joints[0], joints[1]), params)
        self.state = State.SAVED
        return ['saved'] + self.result.summary()


# ---- keys ---------------------------------------------------------------------------------

_BYTES = {b'\t': 'tab', b'\r': 'enter', b'\n': 'enter', b' ': 'space', b'\x7f': 'backspace',
          b'\x08': 'backspace', b'\x03': 'ctrl-c', b'\x04': 'ctrl-d'}
_ARROWS = {'A': 'up', 'B': 'down', 'C': 'right', 'D': 'left'}


class KeyDecoder:
    """A terminal's bytes (raw mode) -> key names: arrows (ESC [ A.., ESC O A..), tab,
    enter, esc, ctrl-c, printable characters; other escape sequences are 'unknown'. A lone
    ESC stays `pending` until more bytes come or `flush()` says none will."""

    def __init__(self):
        self._buffer = b''

    @property
    def pending(self) -> bool:
        return bool(self._buffer)

    def feed(self, data: bytes) -> list[str]:
        self._buffer += data
        out = []
        buf = self._buffer
        i = 0
        while i < len(buf):
            c = buf[i:i + 1]
            if c == b'\x1b':
                if i + 1 >= len(buf):
                    break                               # maybe an arrow's start: wait
                nxt = buf[i + 1:i + 2]
                if nxt in (b'[', b'O'):
                    j = i + 2
                    while j < len(buf) and not 0x40 <= buf[j] <= 0x7e:
                        j += 1
                    if j >= len(buf):
                        break                           # the sequence is not complete yet
                    final = chr(buf[j])
                    out.append(_ARROWS.get(final, 'unknown') if j == i + 2 else 'unknown')
                    i = j + 1
                    continue
                out.append('esc')
                i += 1
                continue
            if c in _BYTES:
                out.append(_BYTES[c])
            elif 0x20 < buf[i] < 0x7f:
                out.append(c.decode('ascii'))
            else:
                out.append('unknown')
            i += 1
        self._buffer = buf[i:]
        return out

    def flush(self) -> list[str]:
        """No more bytes are coming soon: what is pending is what it is."""
        buf, self._buffer = self._buffer, b''
        if not buf:
            return []
        return ['esc'] + (['unknown'] if len(buf) > 1 else [])


def parse_key_script(text: str) -> list[str]:
    """A key script -> key names. Whitespace between keys; `#` to the end of a line is a
    comment; a key is a name (left, right, up, down, tab, enter, esc, space, ...) or one
    character (a, d, w, s, z, [, ], q...); `KEY*N` is the key N times, e.g. `a*10 z`."""
    keys = []
    for line in text.splitlines():
        line = line.split('#', 1)[0]
        for token in line.split():
            name, star, count = token.rpartition('*') if '*' in token[1:] else (token, '', '')
            times = 1
            if star:
                if not count.isdigit() or not 0 < int(count) <= 1000:
                    raise ValueError(f'key script: {token!r}: KEY*N takes N from 1 to 1000')
                times = int(count)
            lowered = name.lower()
            if lowered in NAMED_KEYS:
                name = lowered
            elif len(name) != 1:
                raise ValueError(f'key script: unknown key {name!r} (a name: '
                                 f'{", ".join(NAMED_KEYS[:9])}; or one character)')
            keys += [name] * times
    return keys


# ---- the writers --------------------------------------------------------------------------

def urdf_limits(text: str) -> dict[str, tuple[float, float]]:
    """{joint name: (lower, upper)} of every joint with a <limit> in a URDF (the one parser
    the head controller, the body model and the xacro read too: maxim_common.urdf)."""
    try:
        return joint_limits(text)
    except UrdfError as exc:
        raise CalibrationError(str(exc)) from exc


def _number(value: float) -> str:
    return f'{round(float(value), DECIMALS):g}'


def calibrated_urdf_text(text: str, limits: dict[str, tuple[float, float]],
                         note: str = '') -> str:
    """The URDF with each named joint's <limit lower=.. upper=..> replaced (everything else
    as it was), and `note` as a comment after the XML declaration."""
    out = text
    for name, (lower, upper) in limits.items():
        joint = re.search(r'<joint\b[^>]*\bname="%s"[^>]*>.*?</joint>' % re.escape(name), out,
                          re.S)
        if joint is None:
            raise CalibrationError(f'the URDF has no joint {name}')
        block = joint.group(0)
        limit = re.search(r'<limit\b[^>]*/?>', block)
        if limit is None:
            raise CalibrationError(f'the URDF joint {name} has no <limit>')
        tag = limit.group(0)
        for attr, value in (('lower', lower), ('upper', upper)):
            tag, n = re.subn(r'\b%s="[^"]*"' % attr, f'{attr}="{_number(value)}"', tag)
            if n != 1:
                raise CalibrationError(f'the URDF joint {name} has no {attr} limit')
        block = block[:limit.start()] + tag + block[limit.end():]
        out = out[:joint.start()] + block + out[joint.end():]
    if note:
        comment = '<!-- ' + note.replace('--', '- -') + ' -->\n'
        decl = re.match(r'\s*<\?xml[^>]*\?>\s*\n?', out)
        at = decl.end() if decl else 0
        out = out[:at] + comment + out[at:]
    got = urdf_limits(out)
    for name, (lower, upper) in limits.items():
        if got.get(name) != (float(_number(lower)), float(_number(upper))):
            raise CalibrationError(f'the URDF joint {name} was not rewritten as expected')
    return out


_KEY = re.compile(r'^(?P<indent> *)(?P<key>[A-Za-z0-9_/*.\-]+)\s*:(?P<rest>(\s.*)?)$')
HEADER = '# maxim calibrate: '


def _scalar(value) -> str:
    """A scalar as YAML writes it on one line (-1.2346, 1500, true, dry_run)."""
    import yaml
    text = yaml.safe_dump(value, default_flow_style=True, width=10 ** 6).strip()
    return text.removesuffix('...').strip()


def _content(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith('#')


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(' '))


def _block_end(lines: list[str], i: int) -> int:
    """The index after the last line of the entry at line i (its deeper-indented lines)."""
    indent, last = _indent(lines[i]), i
    for j in range(i + 1, len(lines)):
        if not _content(lines[j]):
            continue
        if _indent(lines[j]) <= indent:
            break
        last = j
    return last + 1


class _NoTextEdit(Exception):
    """The file's layout is beyond the line editor: write it whole instead."""


def _child(lines: list[str], parent: int, key: str) -> tuple[int | None, int]:
    """(line of `key` among the children of the entry at line `parent`, or None; the
    children's indent)."""
    end = _block_end(lines, parent)
    indent = None
    for j in range(parent + 1, end):
        if not _content(lines[j]):
            continue
        if indent is None:
            indent = _indent(lines[j])
        if _indent(lines[j]) != indent:
            continue
        m = _KEY.match(lines[j])
        if m is None:
            raise _NoTextEdit(f'line {j + 1}')
        if m.group('key') == key:
            return j, indent
    return None, _indent(lines[parent]) + 2 if indent is None else indent


def _set_line_value(line: str, value: str) -> str:
    m = _KEY.match(line)
    rest = m.group('rest')
    stripped = rest.strip()
    if not stripped or stripped.startswith('#') or stripped[0] in '|>&*!{[\'"':
        raise _NoTextEdit(line)
    head = line[:len(line) - len(rest)]
    lead = len(rest) - len(rest.lstrip(' '))
    comment_at = rest.find(' #')
    new = head + ' ' * max(1, lead) + value
    if comment_at < 0:
        return new
    comment = rest[comment_at:].lstrip(' ')
    column = len(head) + comment_at + (len(rest[comment_at:]) - len(comment))
    return new + ' ' * max(2, column - len(new)) + comment


def _edit_lines(lines: list[str], node_line: int, values: dict) -> list[str]:
    params, _ = _child(lines, node_line, 'ros__parameters')
    if params is None:
        raise _NoTextEdit('no ros__parameters')
    for dotted, value in values.items():
        parts = dotted.split('.')
        parent = params
        for depth, part in enumerate(parts):
            found, indent = _child(lines, parent, part)
            last = depth == len(parts) - 1
            if found is None:
                rest = _KEY.match(lines[parent]).group('rest').strip()
                if rest and not rest.startswith('#'):
                    raise _NoTextEdit(f'{part} under a scalar')
                new = []
                for k, p in enumerate(parts[depth:]):
                    pad = ' ' * (indent + 2 * k)
                    new.append(f'{pad}{p}: {_scalar(value)}' if depth + k == len(parts) - 1
                               else f'{pad}{p}:')
                at = _block_end(lines, parent)
                lines[at:at] = new
                break
            if last:
                lines[found] = _set_line_value(lines[found], _scalar(value))
            else:
                parent = found
    return lines


def _flat_params(data: dict) -> dict:
    def flatten(tree, prefix=''):
        out = {}
        for key, value in (tree or {}).items():
            name = f'{prefix}.{key}' if prefix else str(key)
            if isinstance(value, dict):
                out.update(flatten(value, name))
            else:
                out[name] = value
        return out
    return {key: flatten(body.get('ros__parameters') if isinstance(body, dict) else None)
            for key, body in data.items()}


def _dotted_keys(tree) -> bool:
    """A mapping with a dotted key (`pan.min: ...`) anywhere in it."""
    return isinstance(tree, dict) and any('.' in str(k) or _dotted_keys(v)
                                          for k, v in tree.items())


def _node_key(data: dict, node: str):
    keys = [k for k in data if str(k).rstrip('/').split('/')[-1] == node]
    return keys[0] if keys else None


def _apply(data: dict, node_key, values: dict) -> dict:
    import copy
    out = copy.deepcopy(data)
    body = out.setdefault(node_key, {})
    params = body.get('ros__parameters')
    if not isinstance(params, dict):
        params = body['ros__parameters'] = {}
    for dotted, value in values.items():
        parts = dotted.split('.')
        for k in range(1, len(parts)):      # the same name written flat: one form only
            tree = params
            for p in parts[:k - 1]:
                tree = tree.get(p) if isinstance(tree.get(p), dict) else {}
            tree.pop('.'.join(parts[k - 1:]), None)
        tree = params
        for p in parts[:-1]:
            if not isinstance(tree.get(p), dict):
                tree[p] = {}
            tree = tree[p]
        tree[parts[-1]] = value
    return out


def calibrated_params_text(text: str, values: dict, header: list[str] = (),
                           node: str = 'head_controller') -> str:
    """The params file `text` with `node`'s dotted parameters `values` set (replaced where
    they are, added where they are not), every other line and comment as it was, and
    `header` as comment lines on top (replacing those of an earlier calibration). A layout
    the line editor does not follow is written whole from its data instead (comments lost);
    either way the result is checked to hold exactly the values wanted."""
    import yaml
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise CalibrationError(f'the params file is not valid YAML: {exc}') from exc
    if not isinstance(data, dict):
        raise CalibrationError('the params file must map node names to ros__parameters')
    key = _node_key(data, node)
    want = _apply(data, key if key is not None else node, values)
    lines = text.splitlines()
    while lines and lines[0].startswith(HEADER):
        lines.pop(0)
    top = [HEADER + h for h in header]
    body = None
    if key is not None:
        node_lines = [i for i, line in enumerate(lines)
                      if _indent(line) == 0 and _content(line) and _KEY.match(line)
                      and _KEY.match(line).group('key') == str(key)]
        body_data = data[key]
        dotted = not isinstance(body_data, dict) or _dotted_keys(
            body_data.get('ros__parameters'))
        if len(node_lines) == 1 and not dotted:
            try:
                body = '\n'.join(_edit_lines(list(lines), node_lines[0], values)) + '\n'
                if _flat_params(yaml.safe_load(body) or {}) != _flat_params(want):
                    body = None
            except (_NoTextEdit, yaml.YAMLError, AttributeError):
                body = None
    if body is None:
        body = yaml.safe_dump(want, sort_keys=False, default_flow_style=None)
    return '\n'.join(top) + ('\n' if top else '') + body
