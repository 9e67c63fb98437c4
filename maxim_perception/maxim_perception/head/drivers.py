"""Drivers behind one interface: the simulated head, a serial pan/tilt servo board, a dry run
(and, in dynamixel.py, Dynamixel X-series servos).

The head controller calls `write(pan, tilt)` at control rate with angles already inside the
joint limits, and `read()` for the measured position when the hardware can tell it.
"""

from dataclasses import dataclass
import math
import re
from typing import Callable, Protocol, runtime_checkable


class DriverError(RuntimeError):
    """The driver cannot reach or command its hardware (port missing, write failed...)."""


@runtime_checkable
class HeadDriver(Protocol):
    """What the head controller needs from a pan/tilt: open, command, read back, close."""

    name: str

    def open(self) -> None:
        """Acquire the hardware; raises DriverError when it is not there."""

    def write(self, pan: float, tilt: float) -> None:
        """Command joint angles in radians; raises DriverError on failure."""

    def read(self) -> tuple[float, float] | None:
        """The measured (pan, tilt) in radians, or None when nothing is known."""

    def close(self) -> None:
        """Release the hardware; safe to call twice."""


class SimDriver:
    """The simulated head: commands go out through a callback (the node publishes them on
    head/joint_commands), readings come back through `feed()` (the node's joint_states)."""

    name = 'sim'

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


class SerialServoDriver:
    """A real pan/tilt: two hobby servos driven by a microcontroller on a serial port.

    Wiring: the pan servo's signal wire to the board's pan PWM pin, the tilt servo's to the
    tilt pin; both servos powered from a separate 5-6 V supply (a USB port cannot feed them)
    whose ground is tied to the board's ground; the board on USB (/dev/ttyUSB0,
    /dev/ttyACM0...). The servos' zero (1500 us on the default map) should point the camera
    straight ahead and level.

    Line protocol (ASCII, 8N1, default 115200 baud, newline-terminated):
      host -> board  `P<pan_us> T<tilt_us>\\n`, e.g. `P1500 T1500\\n`: pulse widths in
                      microseconds, integers. Angles map linearly onto pulses: the pan range
                      [pan_min, pan_max] rad onto [pan_us_min, pan_us_max] us (default
                      -2.6..2.6 rad -> 500..2500 us), tilt likewise (-0.8..0.8 rad ->
                      500..2500 us by default; swap the two pulse values to reverse a servo).
                      The board sets both PWM outputs and need not answer.
      board -> host  optional: `P<pan_us> T<tilt_us>\\n` reporting the pulses it is applying
                      (an echo) or measuring (servos with feedback). With `readback=True`
                      read() returns the newest report as angles; other lines (e.g.
                      `E<message>`) are kept in `last_error` and otherwise ignored.
    A 20-line Arduino sketch (Servo.h, Serial.parseInt on 'P'/'T', writeMicroseconds, then
    Serial.print back) implements it.
    """

    name = 'serial'

    def __init__(self, port: str, baud: int = 115200, pan: ServoMapping | None = None,
                 tilt: ServoMapping | None = None, readback: bool = True,
                 timeout_s: float = 0.05):
        if not port:
            raise ValueError('serial driver needs a port, e.g. /dev/ttyUSB0')
        if baud <= 0:
            raise ValueError(f'baud must be > 0, got {baud}')
        self.port = port
        self.baud = int(baud)
        self.pan = pan or ServoMapping(-2.6, 2.6)
        self.tilt = tilt or ServoMapping(-0.8, 0.8)
        self.readback = readback
        self.timeout_s = timeout_s
        self.last_error = ''
        self._serial = None
        self._buffer = b''
        self._measured: tuple[float, float] | None = None

    def open(self) -> None:
        import serial  # pyserial: only a real head needs it

        try:
            self._serial = serial.Serial(self.port, self.baud, timeout=self.timeout_s,
                                         write_timeout=self.timeout_s)
        except (serial.SerialException, OSError, ValueError) as exc:
            self._serial = None
            raise DriverError(f'cannot open servo board on {self.port} at {self.baud} baud: '
                              f'{exc}') from exc

    @property
    def is_open(self) -> bool:
        return self._serial is not None and self._serial.is_open

    def encode(self, pan: float, tilt: float) -> bytes:
        """The line written for these angles."""
        if not (math.isfinite(pan) and math.isfinite(tilt)):
            raise ValueError(f'angles must be finite, got pan={pan}, tilt={tilt}')
        return f'P{self.pan.to_us(pan)} T{self.tilt.to_us(tilt)}\n'.encode('ascii')

    def write(self, pan: float, tilt: float) -> None:
        import serial

        if not self.is_open:
            raise DriverError(f'servo board on {self.port} is not open')
        line = self.encode(pan, tilt)
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
        *lines, self._buffer = self._buffer.split(b'\n')
        if len(self._buffer) > 4096:   # a board spewing garbage without newlines
            self._buffer = b''
        for raw in lines:
            text = raw.decode('ascii', errors='replace').strip()
            match = _REPORT.match(text)
            if match:
                self._measured = (self.pan.to_angle(int(match.group(1))),
                                  self.tilt.to_angle(int(match.group(2))))
            elif text:
                self.last_error = text
        return self._measured

    def close(self) -> None:
        if self._serial is not None:
            try:
                self._serial.close()
            except OSError as exc:
                self.last_error = f'close failed: {exc}'
            self._serial = None
