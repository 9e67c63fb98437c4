"""Drivers behind one interface: the simulated head, a serial pan/tilt servo board, a dry run
(and, in dynamixel.py, Dynamixel X-series servos).

The head controller calls `write(pan, tilt)` at control rate with angles already inside the
joint limits, and `read()` for the measured position when the hardware can tell it.

Each driver also states its motion model, what movement pain is judged against
(head/motion.py, MotionModel.of): `max_velocity`, the rad/s at which its joints turn towards a
far command (None: the controller's max_velocity; math.inf: the reading is the command, at
once), `joint_limits`, the limits it imposes itself, or None, and `feedback`, whether its
reading is measured by the joints (False: what it reads is what it was told, so it cannot
feel a stalled joint, and movement pain is off; its diagnostics say so).

A driver that needs a moment after open() to learn where its joints are (the serial board
answers a query) says so with `awaiting_position`: while it is true, the head controller
neither steps nor writes, and then starts its command from that position (supervision.py).
"""

from dataclasses import dataclass
import math
import re
import time
from typing import Callable, Protocol, runtime_checkable

WRITE_TIMEOUT_S = 0.5     # the serial board's write deadline (see SerialDriver.open)


class DriverError(RuntimeError):
    """The driver cannot reach or command its hardware (port missing, write failed...)."""


@runtime_checkable
class HeadDriver(Protocol):
    """What the head controller needs from a pan/tilt: open, command, read back, close."""

    name: str

    def open(self) -> None:
        """Acquire the hardware, or acquire it again after a fault; raises DriverError when
        it is not there."""

    def write(self, pan: float, tilt: float) -> None:
        """Command joint angles in radians; raises DriverError on failure."""

    def read(self) -> tuple[float, float] | None:
        """The measured (pan, tilt) in radians, or None when nothing is known."""

    def close(self) -> None:
        """Release the hardware and leave it safe (a servo that can be let go is let go);
        safe to call twice, and after a fault."""


class SimDriver:
    """The simulated head: commands go out through a callback (the node publishes them on
    head/joint_commands), readings come back through `feed()` (the node's joint_states)."""

    name = 'sim'
    # The simulated servo follows a ramp at the controller's max_velocity (~0.1 rad behind;
    # it tops out near 4.3 rad/s: sim/head_scene.xml), within the URDF's limits.
    max_velocity = None
    joint_limits = None
    feedback = True             # the simulated joints are measured

    def __init__(self, send: Callable[[float, float], None]):
        self._send = send
        self._measured: tuple[float, float] | None = None
        self._open = False

    def open(self) -> None:
        self._open = True

    def write(self, pan: float, tilt: float) -> None:
        if not self._open:
            raise DriverError('sim driver: write before open()')
        self._send(float(pan), float(tilt))

    def feed(self, pan: float, tilt: float) -> None:
        """A joint reading from the simulated head."""
        self._measured = (float(pan), float(tilt))

    def read(self) -> tuple[float, float] | None:
        return self._measured

    def close(self) -> None:
        self._open = False


class DryRunDriver:
    """No hardware: logs what it would command and reports it as reached at once.

    Logs a line when the command has moved by more than `log_step` radians since the last
    line, not on every 50 Hz tick.
    """

    name = 'dry_run'
    max_velocity = math.inf     # what it reads is what it was told, at once
    joint_limits = None
    feedback = False

    def __init__(self, log: Callable[[str], None] | None = None, log_step: float = 0.05):
        self._log = log
        self._log_step = log_step
        self._position: tuple[float, float] | None = None
        self._logged: tuple[float, float] | None = None
        self.writes = 0

    def open(self) -> None:
        if self._log:
            self._log('dry-run head driver: commands are logged, not sent to hardware')

    def write(self, pan: float, tilt: float) -> None:
        self._position = (float(pan), float(tilt))
        self.writes += 1
        last = self._logged
        if self._log and (last is None or abs(last[0] - pan) > self._log_step
                          or abs(last[1] - tilt) > self._log_step):
            self._logged = self._position
            self._log(f'dry-run head: pan {pan:+.3f} rad, tilt {tilt:+.3f} rad')

    def read(self) -> tuple[float, float] | None:
        return self._position

    def close(self) -> None:
        return None


@dataclass(frozen=True)
class ServoMapping:
    """Linear angle <-> pulse-width map of one servo channel.

    `us_at_min` is the pulse at `angle_min`, `us_at_max` at `angle_max`; swap them to reverse a
    servo mounted the other way round.
    """

    angle_min: float
    angle_max: float
    us_at_min: int = 500
    us_at_max: int = 2500

    def __post_init__(self):
        if not self.angle_min < self.angle_max:
            raise ValueError(f'angle_min must be < angle_max, got {self.angle_min}, '
                             f'{self.angle_max}')
        if self.us_at_min == self.us_at_max:
            raise ValueError('us_at_min and us_at_max must differ')
        for us in (self.us_at_min, self.us_at_max):
            if not 100 <= us <= 5000:
                raise ValueError(f'pulse width {us} us is outside 100..5000 us')

    def to_us(self, angle: float) -> int:
        angle = max(self.angle_min, min(self.angle_max, angle))
        frac = (angle - self.angle_min) / (self.angle_max - self.angle_min)
        return int(round(self.us_at_min + frac * (self.us_at_max - self.us_at_min)))

    def to_angle(self, us: float) -> float:
        frac = (us - self.us_at_min) / (self.us_at_max - self.us_at_min)
        return self.angle_min + frac * (self.angle_max - self.angle_min)


_REPORT = re.compile(r'^P(\d+)\s+T(\d+)\s*$')
QUERY = b'?\n'         # where are the servos? (answered with a report, or DETACHED)
DETACHED = 'D'         # the board's servos get no pulse yet: it has just started
# The pulse range the board's firmware applies (firmware/maxim_head_servo/maxim_head_servo.ino,
# PULSE_MIN_US and PULSE_MAX_US): it clamps every pulse into it and reports what it applied.
BOARD_PULSE_US = (500, 2500)


class SerialServoDriver:
    """A real pan/tilt: two hobby servos driven by a microcontroller on a serial port.

    Wiring: the pan servo's signal wire to the board's pan PWM pin, the tilt servo's to the
    tilt pin; both servos powered from a separate 5-6 V supply (a USB port cannot feed them)
    whose ground is tied to the board's ground; the board on USB (/dev/ttyUSB0,
    /dev/ttyACM0...). The servos' zero (1500 us on the default map) should point the camera
    straight ahead and level. The board's firmware ships in firmware/maxim_head_servo (an
    Arduino sketch; firmware/README.md says how to build and flash it).

    Line protocol (ASCII, 8N1, default 115200 baud, lines end with '\n', a '\r' before it is
    ignored):
      host -> board  `P<pan_us> T<tilt_us>`, e.g. `P1500 T1500`: pulse widths in
                      microseconds, 1 to 5 digits each, one or more spaces between. Angles map
                      linearly onto pulses: the pan range [pan_min, pan_max] rad onto
                      [pan_us_min, pan_us_max] us (default -2.6..2.6 rad -> 500..2500 us),
                      tilt likewise (-0.8..0.8 rad -> 500..2500 us by default; swap the two
                      pulse values to reverse a servo).
                     `?`: where are the servos? Nothing moves.
      board -> host  one line for every non-blank line it receives:
                      `P<pan_us> T<tilt_us>`: the pulses it now applies, each clamped to its
                        range (BOARD_PULSE_US, 500..2500 us);
                      `D`: its servos are detached, no pulse yet (the answer to `?` before
                        the first valid P line);
                      `E<reason>`: the line was refused (`E bad line`, `E line too long`)
                        and the servos hold their last pulses;
                      and once at start-up, `D`: the servos stay detached (limp) until the
                        first valid P line, which attaches them at its pulses.
                     A line cut off for 100 ms is dropped without an answer, and the servos
                     hold their last pulses whenever the host is silent.

    No snap on connect: open() keeps the port's DTR line as it is and clears HUPCL, so that
    neither this open nor the close after it resets the board (an Uno or Nano restarts when
    DTR is asserted after having been dropped; the kernel drops it at close while HUPCL is
    set, and asserts it at open). Only the first open after the board is plugged in resets
    it. Then it asks `?` and sends nothing until the board answers (`awaiting_position`):
    a report is where the servos are, and the head controller ramps from there; `D` (or a
    board that just restarted) means they are limp, and the first line attaches them where
    the head controller's command is.

    With `readback=True` (the firmware's way) read() returns the newest report as angles;
    `E` lines are kept in `last_error`. A line that is neither, or no answer for
    `reply_timeout_s` after a write, is a DriverError (the port is closed; the node reopens
    it with backoff). A board that did restart on open hears nothing while its bootloader
    runs (up to ~2 s): during `boot_s` after open() a missing answer is no error and a stray
    line is only kept in `last_error`.
    With `readback=False` (a board that does not answer) read() returns None, nothing is
    asked, and the first line goes out at once.

    max_velocity: the servos' speed (rad/s) when the board reports measured positions (servos
    with position feedback); the default, math.inf, is the firmware's echo of what it applies,
    which is the command at once. joint_limits: the angles of the board's pulse range.
    feedback: only with such a measured reading (a finite max_velocity). The firmware's echo
    is no feeling: a hobby servo held by a hand echoes the pulse all the same, so movement
    pain is off on this driver by default.
    """

    name = 'serial'

    def __init__(self, port: str, baud: int = 115200, pan: ServoMapping | None = None,
                 tilt: ServoMapping | None = None, readback: bool = True,
                 timeout_s: float = 0.05, reply_timeout_s: float = 0.5, boot_s: float = 2.5,
                 max_velocity: float = math.inf,
                 clock: Callable[[], float] = time.monotonic):
        if not port:
            raise ValueError('serial driver needs a port, e.g. /dev/ttyUSB0')
        if baud <= 0:
            raise ValueError(f'baud must be > 0, got {baud}')
        if not (reply_timeout_s > 0 and boot_s >= 0):
            raise ValueError(f'need reply_timeout_s > 0 and boot_s >= 0, got '
                             f'{reply_timeout_s}, {boot_s}')
        if not max_velocity > 0:
            raise ValueError(f'max_velocity must be > 0 rad/s, got {max_velocity}')
        self.port = port
        self.baud = int(baud)
        self.pan = pan or ServoMapping(-2.6, 2.6)
        self.tilt = tilt or ServoMapping(-0.8, 0.8)
        self.readback = readback
        self.timeout_s = timeout_s
        self.reply_timeout_s = reply_timeout_s
        self.boot_s = boot_s
        self.max_velocity = max_velocity
        self.feedback = readback and math.isfinite(max_velocity)
        self.last_error = ''
        self._clock = clock
        self._serial = None
        self._buffer = b''
        self._measured: tuple[float, float] | None = None
        self._opened_at = -math.inf
        self._heard = False                    # a line came since open()
        self._awaiting: float | None = None    # when the oldest unanswered write went out
        self._asked = False                    # `?` sent, no answer yet
        self.detached = False                  # the board said its servos get no pulse

    @property
    def joint_limits(self) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """((pan_min, pan_max), (tilt_min, tilt_max)) rad that the board's pulse range
        allows (narrower than the mappings' when they reach past it)."""
        out = []
        for m in (self.pan, self.tilt):
            a, b = sorted(m.to_angle(us) for us in BOARD_PULSE_US)
            lo, hi = max(m.angle_min, a), min(m.angle_max, b)
            if not lo < hi:
                return None      # the map lies outside the board's range: claim nothing
            out.append((lo, hi))
        return out[0], out[1]

    def open(self) -> None:
        import serial  # pyserial: only a real head needs it

        self.close()                           # a reconnection: the old handle goes first
        port = serial.Serial()
        port.port, port.baudrate = self.port, self.baud
        port.timeout = self.timeout_s
        # pyserial checks a write's deadline after the bytes went out, so a write deadline as
        # short as the read timeout fails a loaded machine's writes that did succeed. A line
        # is ~16 bytes (under 2 ms at 115200 baud): WRITE_TIMEOUT_S still bounds a stuck port.
        port.write_timeout = max(self.timeout_s, WRITE_TIMEOUT_S)
        port.dtr = True        # as the kernel sets it at open: asserted, no edge
        try:
            port.open()
        except (serial.SerialException, OSError, ValueError) as exc:
            raise DriverError(f'cannot open servo board on {self.port} at {self.baud} baud: '
                              f'{exc}') from exc
        self._serial = port
        self._keep_dtr_at_close()
        self._buffer = b''
        self._measured = None                  # a new connection knows nothing yet
        self._opened_at = self._clock()
        self._heard = False
        self._awaiting = None
        self._asked = False
        self.detached = False
        if self.readback:
            self._send(QUERY)
            self._asked = True
            self._awaiting = self._opened_at

    def _keep_dtr_at_close(self) -> None:
        """Clear HUPCL: the kernel then leaves DTR asserted when the port closes, and the
        next open does not reset the board. The setting stays with the device until it is
        unplugged. Not fatal where the port has no such flag (kept in last_error)."""
        import termios

        try:
            fd = self._serial.fileno()
            attrs = termios.tcgetattr(fd)
            if attrs[2] & termios.HUPCL:
                attrs[2] &= ~termios.HUPCL
                termios.tcsetattr(fd, termios.TCSANOW, attrs)
        except (termios.error, OSError, ValueError, AttributeError) as exc:
            self.last_error = f'cannot clear HUPCL on {self.port} (the next open may reset ' \
                              f'the board): {exc}'

    @property
    def awaiting_position(self) -> bool:
        """Opened, and the board has not yet said where its servos are (or that they are
        limp): no command goes out until it has."""
        return self._asked and self.is_open

    @property
    def is_open(self) -> bool:
        return self._serial is not None and self._serial.is_open

    def encode(self, pan: float, tilt: float) -> bytes:
        """The line written for these angles."""
        if not (math.isfinite(pan) and math.isfinite(tilt)):
            raise ValueError(f'angles must be finite, got pan={pan}, tilt={tilt}')
        return f'P{self.pan.to_us(pan)} T{self.tilt.to_us(tilt)}\n'.encode('ascii')

    def write(self, pan: float, tilt: float) -> None:
        if not self.is_open:
            raise DriverError(f'servo board on {self.port} is not open')
        if self._asked:
            raise DriverError(f'servo board on {self.port} has not said yet where its servos '
                              'are: no command goes out before it has (awaiting_position)')
        self._send(self.encode(pan, tilt))
        self.detached = False
        if self.readback and self._awaiting is None:
            self._awaiting = self._clock()

    def _send(self, line: bytes) -> None:
        import serial

        try:
            self._serial.write(line)
        except (serial.SerialException, serial.SerialTimeoutException, OSError) as exc:
            self.close()
            raise DriverError(f'write to servo board on {self.port} failed: {exc}') from exc

    def read(self) -> tuple[float, float] | None:
        import serial

        if not (self.readback and self.is_open):
            return self._measured if self.readback else None
        try:
            waiting = self._serial.in_waiting
            if waiting:
                self._buffer += self._serial.read(waiting)
        except (serial.SerialException, OSError) as exc:
            self.close()
            raise DriverError(f'read from servo board on {self.port} failed: {exc}') from exc
        now = self._clock()
        booting = not self._heard and now - self._opened_at < self.boot_s
        *lines, self._buffer = self._buffer.split(b'\n')
        if len(self._buffer) > 4096:   # a board spewing garbage without newlines
            lines.append(self._buffer[:80])
            self._buffer = b''
        for raw in lines:
            text = raw.decode('ascii', errors='replace').strip()
            match = _REPORT.match(text)
            if match:
                self._measured = (self.pan.to_angle(int(match.group(1))),
                                  self.tilt.to_angle(int(match.group(2))))
                self.detached = False
            elif text == DETACHED:
                # The board has just started (on this open, or a brown-out mid-run): its
                # servos are limp, and the next line attaches them at the command.
                self._measured = None
                self.detached = True
            elif text.startswith('E'):
                self.last_error = text
                if self._asked:        # firmware without `?`: it cannot say, go on
                    self.last_error = (f'{text} to `?`: the board cannot say where its '
                                       'servos are (flash the current maxim_head_servo)')
            elif not text:
                continue
            elif booting:              # bootloader noise, or a line cut by the open
                self.last_error = text
                continue
            else:
                self._fail(f'servo board on {self.port} sent a malformed line {text[:80]!r} '
                           '(expected P<us> T<us> or E<reason>: is the maxim_head_servo '
                           f'firmware on it, at {self.baud} baud?)')
            self._heard = True
            self._awaiting = None
            self._asked = False
        if self._awaiting is not None:
            since = self._awaiting if self._heard else max(self._awaiting,
                                                           self._opened_at + self.boot_s)
            if now - since > self.reply_timeout_s:
                self._fail(f'servo board on {self.port} did not answer within '
                           f'{self.reply_timeout_s:g} s (is the maxim_head_servo firmware on '
                           f'it, at {self.baud} baud? without answers set readback off)')
        return self._measured

    def _fail(self, message: str) -> None:
        self.last_error = message
        self.close()
        raise DriverError(message)

    def close(self) -> None:
        import termios

        if self._serial is not None:
            try:
                # Unsent commands are dropped, not drained: closing a tty waits until its
                # output is sent, and a board (or a stand-in) that stopped reading would hold
                # the node's stop for seconds.
                self._serial.reset_output_buffer()
            except (OSError, ValueError, termios.error) as exc:
                self.last_error = f'output flush failed: {exc}'
            try:
                self._serial.close()
            except OSError as exc:
                self.last_error = f'close failed: {exc}'
            self._serial = None
        self._awaiting = None
        self._asked = False
