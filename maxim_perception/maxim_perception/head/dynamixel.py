"""A Dynamixel X-series pan/tilt (XL330, XL430, XC430, XM430...) over protocol 2.0.

Two servos on one bus (a U2D2 or any USB-TTL/RS-485 adapter): the pan servo and the tilt
servo, each with its own ID. The driver speaks to them through ROBOTIS' `dynamixel-sdk`
(PortHandler, PacketHandler 2.0, GroupSyncWrite) and implements the HeadDriver protocol of
`drivers.py`, so the head controller uses it as `driver: dynamixel`.

At open() it pings both IDs (a wrong ID or baud rate is a DriverError that names the IDs
that do answer), refuses a servo whose hardware error status is set, puts each servo in
position mode with its own Min/Max Position Limit written from the configured joint limits
(EEPROM: only rewritten when they differ, torque off meanwhile), sets the profile velocity,
holds the present position and turns the torque on. write() sends both goal positions in one
SYNC_WRITE; read() fetches both present positions in one SYNC_READ, with each servo's Present
Current (Present Load on the models that report load), and a status packet with the alert bit
set makes it read the Hardware Error Status and raise a DriverError that says what the servo
reports.

What the servos feel is kept for the head controller (supervision.py hands it to the core):
`harms`, the Hardware Error Status bits that are harm (overload, overheating, electrical
shock, motor encoder error; an input voltage error is the supply's, a driver fault only), and
`efforts`, each servo's present current as a fraction of its full scale (its Current Limit,
or 100 % load), from the last read.

The torque goes off on every way out. close() (the node's deactivate, shutdown and
destroy_node, and so Ctrl-C and SIGTERM) turns it off on every servo that answers; when a bus
fault has already dropped the port while a servo may still hold its torque (the one that
still answers, when the other stopped), close() opens the port once more for it. A process
that ends without close() (an exception nobody caught, sys.exit) does the same from an exit
handler, registered while the servos may hold their torque. Only what no process can catch
(SIGKILL, os._exit, a power cut of the computer) leaves the torque on.

When the bus goes away (the adapter is unplugged, a servo stops answering), the call that
found it raises a DriverError and closes the port; later calls reconnect, at most once per
backoff interval (doubling from `reconnect_min_s` to `reconnect_max_s`), and raise a
DriverError without touching the bus in between. Until then no command is sent: the servos
hold their last goal.

Angles: 4096 ticks per revolution, `zero_tick` (2048 by default) is 0 rad, positive angles
increase the tick count unless the joint is `reverse`d.
"""

import atexit
from dataclasses import dataclass
import math
import threading
import time
from typing import Callable

from maxim_perception.head.drivers import DriverError

TICKS_PER_REV = 4096
RAD_PER_TICK = 2 * math.pi / TICKS_PER_REV
MAX_TICK = TICKS_PER_REV - 1
RPM_PER_VELOCITY_UNIT = 0.229     # Profile Velocity's unit on the X series
MAX_PROFILE_VELOCITY = 32767
BAUD_RATES = (9600, 57600, 115200, 1000000, 2000000, 3000000, 4000000)  # X-series settings

# X-series control table (protocol 2.0): address, size in bytes.
MODEL_NUMBER = (0, 2)
OPERATING_MODE = (11, 1)
CURRENT_LIMIT = (38, 2)           # on the models that sense current
MAX_POSITION_LIMIT = (48, 4)
MIN_POSITION_LIMIT = (52, 4)
TORQUE_ENABLE = (64, 1)
HARDWARE_ERROR_STATUS = (70, 1)
PROFILE_VELOCITY = (112, 4)
GOAL_POSITION = (116, 4)
PRESENT_POSITION = (132, 4)
# Present Current (or Load), Present Velocity and Present Position, read in one go.
PRESENT_STATE = (126, 10)
POSITION_MODE = 3

ALERT_BIT = 0x80                  # in a status packet's error byte: see Hardware Error Status
HARDWARE_ERRORS = {0x01: 'input voltage error', 0x04: 'overheating', 0x08: 'motor encoder error',
                   0x10: 'electrical shock', 0x20: 'overload'}
# The Hardware Error Status bits that are harm to the servo, by the pain kind they become
# (head/control.py PainType, in lower case).
HARM_BITS = {0x04: 'overheating', 0x08: 'encoder_error', 0x10: 'electrical_shock',
             0x20: 'overload'}
STATUS_ERRORS = {1: 'result fail', 2: 'instruction error', 3: 'CRC error',
                 4: 'data range error', 5: 'data length error', 6: 'data limit error',
                 7: 'access error'}

# Servos whose control table is the X series' (protocol 2.0 firmware), by model number.
MODELS = {
    30: 'MX-28(2.0)', 311: 'MX-64(2.0)', 321: 'MX-106(2.0)',
    1000: 'XH430-W350', 1001: 'XD430-T350', 1010: 'XH430-W210', 1011: 'XD430-T210',
    1020: 'XM430-W350', 1030: 'XM430-W210', 1040: 'XH430-V350', 1050: 'XH430-V210',
    1060: 'XL430-W250', 1070: 'XC430-W150', 1080: 'XC430-W240', 1090: '2XL430-W250',
    1100: 'XH540-W270', 1101: 'XD540-T270', 1110: 'XH540-W150', 1111: 'XD540-T150',
    1120: 'XM540-W270', 1130: 'XM540-W150', 1140: 'XH540-V270', 1150: 'XH540-V150',
    1160: '2XC430-W250', 1170: 'XW540-T260', 1180: 'XW540-T140', 1190: 'XL330-M077',
    1200: 'XL330-M288', 1210: 'XC330-T181', 1220: 'XC330-T288', 1230: 'XC330-M181',
    1240: 'XC330-M288', 1270: 'XW430-T333', 1280: 'XW430-T200', 1310: 'XW540-H260',
}


# Models whose address 126 is Present Load (0.1 % of the maximum torque, +-1000) rather than
# Present Current (the others, with a Current Limit at address 38 in the same unit).
LOAD_MODELS = {30, 1060, 1070, 1080, 1090, 1160}
FULL_LOAD = 1000


def describe_hardware_error(bits: int) -> str:
    """Hardware Error Status bits in words, e.g. 'overload, overheating (0x24)'."""
    names = [name for bit, name in HARDWARE_ERRORS.items() if bits & bit]
    unknown = bits & ~sum(HARDWARE_ERRORS)
    if unknown:
        names.append(f'unknown bits 0x{unknown:02x}')
    return f'{", ".join(names) or "none"} (0x{bits:02x})'


def describe_status_error(error: int) -> str:
    """A status packet's error byte in words."""
    parts = []
    number = error & ~ALERT_BIT
    if number:
        parts.append(STATUS_ERRORS.get(number, f'error {number}'))
    if error & ALERT_BIT:
        parts.append('hardware alert')
    return ', '.join(parts) or 'no error'


def velocity_to_units(rad_s: float) -> int:
    """rad/s -> Profile Velocity units (0.229 rev/min), at least 1 (0 would be no limit)."""
    if not (math.isfinite(rad_s) and rad_s > 0):
        raise ValueError(f'profile velocity must be > 0 rad/s, got {rad_s}')
    rpm = rad_s * 60.0 / (2 * math.pi)
    return max(1, min(MAX_PROFILE_VELOCITY, int(round(rpm / RPM_PER_VELOCITY_UNIT))))


@dataclass(frozen=True)
class DynamixelJoint:
    """One servo: its ID, the joint's limits in radians and how angles map onto ticks."""

    servo_id: int
    angle_min: float
    angle_max: float
    zero_tick: int = TICKS_PER_REV // 2
    reverse: bool = False

    def __post_init__(self):
        if not 0 <= self.servo_id <= 252:
            raise ValueError(f'a Dynamixel ID is 0..252, got {self.servo_id}')
        if not (math.isfinite(self.angle_min) and math.isfinite(self.angle_max)
                and self.angle_min < self.angle_max):
            raise ValueError(f'angle_min must be < angle_max, got {self.angle_min}, '
                             f'{self.angle_max}')
        if not 0 <= self.zero_tick <= MAX_TICK:
            raise ValueError(f'zero_tick must be 0..{MAX_TICK}, got {self.zero_tick}')
        ends = sorted(self._raw(a) for a in (self.angle_min, self.angle_max))
        if ends[0] < -0.5 or ends[1] > MAX_TICK + 0.5:
            raise ValueError(
                f'limits {self.angle_min:g}..{self.angle_max:g} rad map onto ticks '
                f"{ends[0]:.0f}..{ends[1]:.0f}, outside the servo's 0..{MAX_TICK} "
                f'(one turn, {self.zero_tick} = 0 rad): narrow the limits or move the zero')

    def _raw(self, angle: float) -> float:
        sign = -1.0 if self.reverse else 1.0
        return self.zero_tick + sign * angle / RAD_PER_TICK

    @property
    def tick_limits(self) -> tuple[int, int]:
        """(Min, Max Position Limit) in ticks, inside the angle limits (rounded inwards)."""
        a, b = sorted(self._raw(x) for x in (self.angle_min, self.angle_max))
        lo, hi = max(0, math.ceil(a - 1e-9)), min(MAX_TICK, math.floor(b + 1e-9))
        return lo, hi

    def to_tick(self, angle: float) -> int:
        """The goal position for an angle, clamped to the limits."""
        lo, hi = self.tick_limits
        return max(lo, min(hi, int(round(self._raw(angle)))))

    def to_angle(self, tick: int) -> float:
        sign = -1.0 if self.reverse else 1.0
        return sign * (tick - self.zero_tick) * RAD_PER_TICK


class _BusFault(Exception):
    """The bus or a servo failed mid-transaction (internal: becomes a DriverError)."""


def _le(value: int, size: int) -> list[int]:
    return list(int(value).to_bytes(size, 'little', signed=value < 0))


def _from_le(data, signed: bool = False) -> int:
    return int.from_bytes(bytes(data), 'little', signed=signed)


class DynamixelDriver:
    """A Dynamixel X-series pan/tilt on one protocol-2.0 bus (see the module docstring).

    port: the adapter's device (/dev/ttyUSB0, or better its /dev/serial/by-id/... link, which
    survives a replug under another ttyUSB number); baud: the servos' Baud Rate setting
    (57600 from the factory); pan, tilt: the two servos; profile_velocity: rad/s, the speed
    the servos themselves never exceed; retries: extra tries of a transaction that got no
    or a corrupt answer before the bus counts as gone; clock: monotonic seconds (tests).
    """

    name = 'dynamixel'
    feedback = True          # the servos' encoders measure where they are

    def __init__(self, port: str, baud: int = 57600, pan: DynamixelJoint | None = None,
                 tilt: DynamixelJoint | None = None, profile_velocity: float = 3.0,
                 retries: int = 1, reconnect_min_s: float = 0.5, reconnect_max_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic):
        if not port:
            raise ValueError('dynamixel driver needs a port, e.g. /dev/ttyUSB0')
        if int(baud) not in BAUD_RATES:
            raise ValueError(f'baud {baud} is no Dynamixel X-series baud rate '
                             f'({", ".join(map(str, BAUD_RATES))})')
        self.pan = pan or DynamixelJoint(1, -2.6, 2.6)
        self.tilt = tilt or DynamixelJoint(2, -0.8, 0.8)
        if self.pan.servo_id == self.tilt.servo_id:
            raise ValueError(f'pan and tilt need different IDs, both are {self.pan.servo_id}')
        if not 0 < reconnect_min_s <= reconnect_max_s:
            raise ValueError('need 0 < reconnect_min_s <= reconnect_max_s, got '
                             f'{reconnect_min_s}, {reconnect_max_s}')
        self.port = port
        self.baud = int(baud)
        self.profile_units = velocity_to_units(profile_velocity)
        self.retries = max(0, int(retries))
        self.reconnect_min_s, self.reconnect_max_s = reconnect_min_s, reconnect_max_s
        self._clock = clock
        self.joints = {'pan': self.pan, 'tilt': self.tilt}
        self.models: dict[str, str] = {}            # joint -> model name, once pinged
        self.hardware_errors: dict[str, int] = {}   # joint -> Hardware Error Status bits
        self.efforts: dict[str, float] = {}         # joint -> |current| / full scale, last read
        self._model_numbers: dict[str, int] = {}
        self._full_scale: dict[str, int] = {}       # joint -> its current's full scale
        self.last_error = ''
        self.release_failures: list[str] = []       # what the last torque off did not reach
        self.reconnects = 0                         # successful reconnections after a fault
        self.attempts = 0                           # connection attempts (open + reconnect)
        self._sdk = None
        self._port = None                           # the SDK's PortHandler while connected
        self._ph = None
        self._writer = None
        self._wanted = False                        # open() was called, close() not since
        self._backoff = reconnect_min_s
        self._next_attempt = 0.0
        self._scanned: str | None = None            # the last broadcast PING's answer
        # A servo may hold its torque: set before the first torque-on write, cleared once
        # close() has tried to turn it off everywhere.
        self._engaged = False
        self._at_exit_registered = False
        self._exiting = False
        # One caller on the bus at a time: the exit handler runs in the main thread while the
        # control thread may be mid-transaction.
        self._lock = threading.RLock()

    # ---- HeadDriver ---------------------------------------------------------------------

    def open(self) -> None:
        """Connect now (whatever the backoff says), also to reconnect after a fault; raises
        DriverError with the reason."""
        with self._lock:
            if self._exiting:
                raise DriverError(f'Dynamixel bus on {self.port}: the process is exiting')
            self._wanted = True
            try:
                self._connect()
            except DriverError as exc:
                self._schedule_retry(str(exc))
                raise
            self._backoff = self.reconnect_min_s

    @property
    def is_open(self) -> bool:
        return self._port is not None

    @property
    def retry_in_s(self) -> float | None:
        """Seconds to the next reconnection attempt while the bus is down, else None."""
        if self._port is not None or not self._wanted:
            return None
        return max(0.0, self._next_attempt - self._clock())

    @property
    def max_velocity(self) -> float:
        """rad/s: the profile velocity the servos move at towards a far goal (what movement
        pain is judged against: head/motion.py)."""
        return self.profile_units * RPM_PER_VELOCITY_UNIT * 2 * math.pi / 60.0

    @property
    def joint_limits(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """The servos' own Min/Max Position Limits in rad, ((pan), (tilt))."""
        pan, tilt = (tuple(sorted(j.to_angle(t) for t in j.tick_limits))
                     for j in (self.pan, self.tilt))
        return pan, tilt

    @property
    def harms(self) -> dict[str, tuple[tuple[str, str], ...]]:
        """{joint: ((pain kind, what the servo reports), ...)} for the hardware error bits
        that are harm, as long as a servo reports them."""
        out = {}
        for name, bits in self.hardware_errors.items():
            servo_id = self.joints[name].servo_id
            kinds = tuple((kind, f'{name} servo (ID {servo_id}) reports {HARDWARE_ERRORS[bit]}')
                          for bit, kind in HARM_BITS.items() if bits & bit)
            if kinds:
                out[name] = kinds
        return out

    def encode(self, pan: float, tilt: float) -> dict[int, int]:
        """Goal positions {servo ID: ticks} for these angles (clamped to the limits)."""
        if not (math.isfinite(pan) and math.isfinite(tilt)):
            raise ValueError(f'angles must be finite, got pan={pan}, tilt={tilt}')
        return {self.pan.servo_id: self.pan.to_tick(pan),
                self.tilt.servo_id: self.tilt.to_tick(tilt)}

    def write(self, pan: float, tilt: float) -> None:
        goals = self.encode(pan, tilt)
        with self._lock:
            self._ensure_connected()
            try:
                self._sync_write(goals)
            except _BusFault as exc:
                self._lost(f'goal write failed: {exc}')

    def read(self) -> tuple[float, float] | None:
        with self._lock:
            self._ensure_connected()
            try:
                ticks = self._present_ticks()
            except _BusFault as exc:
                self._lost(str(exc))
        return self.pan.to_angle(ticks['pan']), self.tilt.to_angle(ticks['tilt'])

    def close(self) -> None:
        """Torque off on every servo that answers, and release the port; safe to call twice.
        After a bus fault (the port dropped, a servo perhaps still holding its torque) the
        port is opened once more to turn the torque off; what did not answer is kept in
        `last_error` and `release_failures`."""
        with self._lock:
            self._wanted = False
            if self._port is None and not self._engaged:
                return
            failed = self._release()
            self._forget_exit_handler()
            if failed:
                self.last_error = 'torque off failed: ' + '; '.join(failed)

    def torque_off(self) -> list[str]:
        """Turn both servos' torque off now, connected or not (the port is opened for it
        when a fault has closed it), and close the port: for a caller that leaves the head
        limp on its way out whatever the driver knows of it (`./maxim calibrate`). Best
        effort: returns what failed (empty when both answered)."""
        with self._lock:
            self._wanted = False
            failed = self._release()
            self._forget_exit_handler()
            return failed

    # ---- leaving the servos limp --------------------------------------------------------

    def _release(self) -> list[str]:
        """Torque off on both servos (the port reopened once when it is closed), then close
        the port; what failed, one line per servo or one for the bus."""
        failed = []
        try:
            if self._port is None:
                sdk = self._import_sdk()
                port = sdk.PortHandler(self.port)
                if not port.setBaudRate(self.baud):
                    failed.append(f'cannot open Dynamixel bus on {self._where()}')
                    return failed
                self._port, self._ph = port, sdk.PacketHandler(2.0)
            for name, joint in self.joints.items():
                try:
                    self._write_reg(joint, TORQUE_ENABLE, 0, tries=2)
                except (_BusFault, DriverError) as exc:
                    failed.append(f'{name} servo (ID {joint.servo_id}): {exc}')
        except Exception as exc:  # noqa: BLE001 - the port may be gone: say so, go on
            failed.append(f'Dynamixel bus on {self._where()}: {exc}')
        finally:
            # Tried once: a servo that did not answer now is not chased at every later call.
            self._engaged = False
            self._drop_port()
            self.release_failures = failed
        return failed

    def _forget_exit_handler(self) -> None:
        """Released by the caller: the exit handler (and its reference to this driver) goes
        until the torque is turned on again."""
        if self._at_exit_registered:
            atexit.unregister(self._at_exit)
            self._at_exit_registered = False

    def _at_exit(self) -> None:
        """The exit handler: the process is ending without close() (an uncaught exception,
        sys.exit): torque off, and no reconnection from a thread that still runs."""
        # Waits for a transaction in progress, but not forever: torque off on a bus that a
        # stuck thread holds is still better than torque left on.
        locked = self._lock.acquire(timeout=2.0)
        try:
            self._exiting = True
            self._wanted = False
            if self._port is not None or self._engaged:
                self._release()
        finally:
            if locked:
                self._lock.release()

    # ---- connection ---------------------------------------------------------------------

    def _import_sdk(self):
        if self._sdk is None:
            try:
                import dynamixel_sdk  # only a Dynamixel head needs it
            except ImportError as exc:
                raise DriverError(f'dynamixel-sdk is not installed ({exc}): run ./maxim setup '
                                  'or pip install dynamixel-sdk') from exc
            self._sdk = dynamixel_sdk
        return self._sdk

    def _where(self) -> str:
        return f'{self.port} at {self.baud} baud'

    def _connect(self) -> None:
        """Open the port, find and configure both servos; DriverError on any failure (the
        port is closed again then, and no servo's torque was changed before the checks)."""
        sdk = self._import_sdk()
        self._drop_port()
        self.attempts += 1
        port = sdk.PortHandler(self.port)
        try:
            opened = port.setBaudRate(self.baud)     # opens the port at this baud rate
        except Exception as exc:  # noqa: BLE001 - pyserial's and the OS's errors alike
            raise DriverError(f'cannot open Dynamixel bus on {self.port}: {exc}') from exc
        if not opened:
            raise DriverError(f'cannot open Dynamixel bus on {self._where()}')
        self._port, self._ph = port, sdk.PacketHandler(2.0)
        try:
            self._check_servos()
            for joint in self.joints.values():
                self._configure(joint)
            self._writer = sdk.GroupSyncWrite(self._port, self._ph, *GOAL_POSITION)
        except _BusFault as exc:
            self._drop_port()
            raise DriverError(f'Dynamixel bus on {self._where()}: {exc}') from exc
        except DriverError:
            self._drop_port()
            raise
        self.last_error = ''

    def _check_servos(self) -> None:
        """Both IDs answer a PING with an X-series model and no hardware error."""
        missing = []
        for name, joint in self.joints.items():
            model = self._ping(joint)
            if model is None:
                missing.append(f'{name} (ID {joint.servo_id})')
                continue
            if model not in MODELS:
                raise DriverError(
                    f'{name} servo (ID {joint.servo_id}) is model number {model}, not an '
                    'X-series servo: its control table differs, refusing to drive it')
            self.models[name] = MODELS[model]
            self._model_numbers[name] = model
        if not missing:
            self._scanned = None
        else:
            found = self._scan()
            raise DriverError(
                f'no Dynamixel answers as {" and ".join(missing)} on {self._where()}; '
                f'servos that do answer: {found or "none"}. Check the IDs, the baud rate '
                "and the servos' power")
        for name, joint in self.joints.items():
            bits = self._read_reg(joint, HARDWARE_ERROR_STATUS)
            if bits:
                self.hardware_errors[name] = bits
                raise DriverError(self._hardware_message(name, joint, bits))
            self.hardware_errors.pop(name, None)

    def _configure(self, joint: DynamixelJoint) -> None:
        """Position mode and the position limits (EEPROM, written only when they differ and
        with the torque off), the profile velocity, goal = present, then torque on."""
        lo, hi = joint.tick_limits
        mode = self._read_reg(joint, OPERATING_MODE)
        limits = self._read_bytes(joint, MAX_POSITION_LIMIT[0], 8)
        current = (_from_le(limits[4:8]), _from_le(limits[0:4]))      # (min, max)
        if mode != POSITION_MODE or current != (lo, hi):
            self._write_reg(joint, TORQUE_ENABLE, 0)
            if mode != POSITION_MODE:
                self._write_reg(joint, OPERATING_MODE, POSITION_MODE)
            if current != (lo, hi):
                self._write_bytes(joint, MAX_POSITION_LIMIT[0], _le(hi, 4) + _le(lo, 4))
        self._write_reg(joint, PROFILE_VELOCITY, self.profile_units)
        name = self._name(joint)
        self._full_scale[name] = (FULL_LOAD if self._model_numbers.get(name) in LOAD_MODELS
                                  else self._read_reg(joint, CURRENT_LIMIT))
        present = _from_le(self._read_bytes(joint, *PRESENT_POSITION), signed=True)
        # Hold where it is (inside the limits) rather than jump to a goal left from before.
        self._write_reg(joint, GOAL_POSITION, max(lo, min(hi, present)))
        self._engaged = True
        if not self._at_exit_registered:
            atexit.register(self._at_exit)
            self._at_exit_registered = True
        self._write_reg(joint, TORQUE_ENABLE, 1)

    def _scan(self) -> str:
        """The IDs that answer a broadcast PING, for the error message. The SDK waits for
        every possible ID (about a second, busy): done once until the servos are found."""
        if self._scanned is None:
            try:
                found, _ = self._ph.broadcastPing(self._port)
            except Exception:  # noqa: BLE001 - a diagnostic only
                found = {}
            self._scanned = ', '.join(f'ID {i} ({MODELS.get(m[0], f"model {m[0]}")})'
                                      for i, m in sorted(found.items()))
        return self._scanned

    def _drop_port(self) -> None:
        port, self._port, self._ph, self._writer = self._port, None, None, None
        if port is not None:
            try:
                port.closePort()
            except Exception as exc:  # noqa: BLE001 - the port may be gone already
                self.last_error = f'close failed: {exc}'

    def _schedule_retry(self, error: str) -> None:
        self.last_error = error
        self._next_attempt = self._clock() + self._backoff
        self._backoff = min(self.reconnect_max_s, self._backoff * 2)

    def _lost(self, error: str):
        """The bus failed under a call: close the port, schedule a retry, raise."""
        self._drop_port()
        message = f'Dynamixel bus on {self._where()}: {error}'
        wait = self._backoff
        self._schedule_retry(message)
        raise DriverError(f'{message}; reconnecting in {wait:.1f} s')

    def _ensure_connected(self) -> None:
        if self._port is not None:
            return
        if not self._wanted:
            raise DriverError(f'Dynamixel bus on {self.port} is not open')
        now = self._clock()
        if now < self._next_attempt:
            raise DriverError(f'{self.last_error}; reconnecting in '
                              f'{self._next_attempt - now:.1f} s')
        try:
            self._connect()
        except DriverError as exc:
            wait = self._backoff
            self._schedule_retry(str(exc))
            raise DriverError(f'{exc}; reconnecting in {wait:.1f} s') from exc
        self._backoff = self.reconnect_min_s
        self.reconnects += 1

    # ---- transactions (raise _BusFault; DriverError for what a servo says is wrong) --------

    def _call(self, what: str, fn, *args):
        if self._port is None:
            raise _BusFault(f'{what}: the port is closed')
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - the SDK lets pyserial's and OS errors out
            args = exc.args
            if len(args) == 2 and isinstance(args[0], int):    # OSError, termios.error
                raise _BusFault(f'{what}: {args[1]} (errno {args[0]})') from exc
            raise _BusFault(f'{what}: {type(exc).__name__}: {exc}') from exc

    def _txrx(self, what: str, joint: DynamixelJoint, tries: int | None, fn, *args):
        """A transaction with one servo, retried on no or a corrupt answer; returns
        (result tuple) with COMM_SUCCESS, raises _BusFault when the servo never answered."""
        sdk = self._sdk
        result = sdk.COMM_TX_FAIL
        for _ in range((self.retries + 1) if tries is None else tries):
            out = self._call(what, fn, self._port, joint.servo_id, *args)
            result = out[-2]      # (data, result, error) or (result, error)
            if result == sdk.COMM_SUCCESS:
                return out
            if result in (sdk.COMM_PORT_BUSY, sdk.COMM_TX_FAIL, sdk.COMM_TX_ERROR):
                break       # the port itself failed: retrying will not help
        raise _BusFault(f'{what}: servo ID {joint.servo_id} '
                        f'{self._ph.getTxRxResult(result) or result}')

    def _ping(self, joint: DynamixelJoint) -> int | None:
        """The model number, or None when the servo does not answer (retried)."""
        for _ in range(self.retries + 1):
            model, result, _ = self._call('ping', self._ph.ping, self._port, joint.servo_id)
            if result == self._sdk.COMM_SUCCESS:
                return model
        return None

    def _name(self, joint: DynamixelJoint) -> str:
        return next(n for n, j in self.joints.items() if j is joint)

    def _check_error(self, joint: DynamixelJoint, what: str, error: int) -> None:
        if error & ~ALERT_BIT:
            raise DriverError(f'{self._name(joint)} servo (ID {joint.servo_id}) refused '
                              f'{what}: {describe_status_error(error)}')

    def _read_bytes(self, joint: DynamixelJoint, address: int, size: int) -> list[int]:
        data, _, error = self._txrx(f'read {address}', joint, None, self._ph.readTxRx,
                                    address, size)
        self._check_error(joint, f'a read of address {address}', error)
        if len(data) < size:
            raise _BusFault(f'read {address}: {len(data)} of {size} bytes')
        return list(data[:size])

    def _read_reg(self, joint: DynamixelJoint, reg: tuple[int, int]) -> int:
        return _from_le(self._read_bytes(joint, *reg))

    def _write_bytes(self, joint: DynamixelJoint, address: int, data: list[int],
                     tries: int | None = None) -> None:
        _, error = self._txrx(f'write {address}', joint, tries, self._ph.writeTxRx, address,
                              len(data), data)
        self._check_error(joint, f'a write of {_from_le(data)} to address {address}', error)

    def _write_reg(self, joint: DynamixelJoint, reg: tuple[int, int], value: int,
                   tries: int | None = None) -> None:
        self._write_bytes(joint, reg[0], _le(value, reg[1]), tries)

    def _sync_write(self, goals: dict[int, int]) -> None:
        writer = self._writer
        writer.clearParam()
        for servo_id, tick in goals.items():
            writer.addParam(servo_id, bytes(_le(tick, 4)))
        result = self._call('sync write', writer.txPacket)
        if result != self._sdk.COMM_SUCCESS:
            raise _BusFault(f'sync write: {self._ph.getTxRxResult(result) or result}')

    def _present_ticks(self) -> dict[str, int]:
        """Both present positions in one SYNC_READ (retried), with each servo's present
        current kept in `efforts`; a status with the alert bit set -> the servo's Hardware
        Error Status, kept in `hardware_errors` and raised as a DriverError."""
        sdk, ph = self._sdk, self._ph
        ids = [j.servo_id for j in self.joints.values()]
        address, size = PRESENT_STATE
        failure = ''
        for _ in range(self.retries + 1):
            result = self._call('sync read', ph.syncReadTx, self._port, address, size, ids,
                                len(ids), False)
            if result != sdk.COMM_SUCCESS:
                raise _BusFault(f'sync read: {ph.getTxRxResult(result) or result}')
            ticks, errors, efforts, failure = {}, {}, {}, ''
            for name, joint in self.joints.items():
                data, result, error = self._call('sync read', ph.readRx, self._port,
                                                 joint.servo_id, size)
                if result != sdk.COMM_SUCCESS or len(data) < size:
                    failure = failure or name
                    continue
                ticks[name], errors[name] = _from_le(data[6:10], signed=True), error
                full = self._full_scale.get(name)
                if full:
                    efforts[name] = abs(_from_le(data[0:2], signed=True)) / full
            if not failure:
                break
        else:
            silent = [f'{n} servo (ID {j.servo_id})' for n, j in self.joints.items()
                      if self._ping(j) is None]
            raise _BusFault(f'{" and ".join(silent) or f"the {failure} servo"} does not '
                            'answer (power, cable, or the bus)')
        for name, error in errors.items():
            if error & ALERT_BIT:
                joint = self.joints[name]
                bits = self._read_reg(joint, HARDWARE_ERROR_STATUS)
                self.hardware_errors[name] = bits
                message = self._hardware_message(name, joint, bits)
                self._drop_port()
                self._schedule_retry(message)
                raise DriverError(message)
        self.efforts = efforts
        return ticks

    def _hardware_message(self, name: str, joint: DynamixelJoint, bits: int) -> str:
        return (f'{name} servo (ID {joint.servo_id}) reports a hardware error: '
                f'{describe_hardware_error(bits)}; its torque is off until the cause is '
                'removed and the servo is power-cycled or rebooted')
