"""The maxim_head_servo board on a pty, for the serial servo driver's tests.

`BoardFirmware` is a line-for-line transcription of the Arduino sketch
firmware/maxim_head_servo/maxim_head_servo.ino (setup(), loop(), handleLine(), parseLine(),
readNumber(), clampPulse(), report()): the same line buffer of LINE_MAX characters, the same
parsing, the same clamping to PULSE_MIN_US..PULSE_MAX_US, the servos detached until the first
valid line, the same replies and the same watchdog that drops a half line after
LINE_TIMEOUT_MS. THE TWO MUST STAY EQUAL: change both together. The constants are read from
the sketch itself, and test_serial_board.py builds the sketch for the host with g++ and checks
that both answer the same bytes with the same bytes.

`SerialBoard` runs it on the master side of a pseudo-terminal pair: the driver (through
pyserial) opens the slave path as its serial port, and a thread here feeds what it writes to
the firmware and writes the firmware's answers back, as the board on USB would. It records
every pulse pair the firmware applies (`applied`), so a test can check the steps between
them. Faults: a board that says nothing (`silent`), one that answers with other lines
(`reply_with`, a board with other firmware), and a port set to another baud rate than the
board's, which then hears only noise and answers nothing. `reset()` runs setup() again.

The DTR line of a USB serial chip, wired to the reset pin as on an Uno or Nano, is modelled
as the Linux kernel drives it: the first open of the port asserts DTR, and the last close
drops it while the port's termios has HUPCL set (a USB serial port's default; a pty has
none, so the slave gets it here). Asserting a dropped DTR restarts the board (setup() again,
its start-up line). A pty carries no modem lines, so the opens and closes of the slave are
watched with inotify; `dtr_toggles` and `resets` count what they did.
"""

import ctypes
import os
import re
import select
import struct
import termios
import threading
import time
import tty

SKETCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), 'firmware', 'maxim_head_servo', 'maxim_head_servo.ino')


def sketch_constants(path: str = SKETCH) -> dict[str, int]:
    """The sketch's integer constants (`const <type> NAME = <number>;`)."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r'^const\s+[\w ]+?\s+(\w+)\s*=\s*(\d+)\s*;', text, re.M)}


_C = sketch_constants()
PAN_PIN, TILT_PIN, BAUD = _C['PAN_PIN'], _C['TILT_PIN'], _C['BAUD']
PULSE_MIN_US, PULSE_MAX_US = _C['PULSE_MIN_US'], _C['PULSE_MAX_US']
LINE_MAX, LINE_TIMEOUT_MS, DIGITS_MAX = _C['LINE_MAX'], _C['LINE_TIMEOUT_MS'], _C['DIGITS_MAX']


class BoardFirmware:
    """The sketch, transcribed (see the module docstring). `setup()` once, then
    `loop(now_ms, incoming)` for each batch of received bytes, as Serial.available() would
    hand them to one loop(); what it prints collects in `output` (bytes)."""

    def __init__(self):
        self.line = bytearray()          # char line[LINE_MAX + 1]; uint8_t length
        self.overflow = False
        self.last_byte_ms = 0
        self.attached = False
        self.pan_us = self.tilt_us = None   # the pulses applied; None while detached
        self.output = bytearray()
        self.applied: list[tuple[int, int]] = []   # every pulse pair applied, in order

    # ---- the sketch's functions ---------------------------------------------------------

    def _read_number(self, text: bytes, i: int) -> tuple[bool, int, int]:
        """readNumber(): 1..DIGITS_MAX digits at text[i]; (ok, value, next index)."""
        digits, value = 0, 0
        while i < len(text) and 0x30 <= text[i] <= 0x39:
            if digits == DIGITS_MAX:
                return False, value, i
            value = value * 10 + (text[i] - 0x30)
            i += 1
            digits += 1
        return digits > 0, value, i

    def _parse_line(self, text: bytes) -> tuple[int, int] | None:
        """parseLine(): "P<digits> +T<digits> *" and nothing else."""
        i = 0
        if text[i:i + 1] != b'P':
            return None
        i += 1
        ok, pan_us, i = self._read_number(text, i)
        if not ok:
            return None
        if text[i:i + 1] != b' ':
            return None
        while text[i:i + 1] == b' ':
            i += 1
        if text[i:i + 1] != b'T':
            return None
        i += 1
        ok, tilt_us, i = self._read_number(text, i)
        if not ok:
            return None
        while text[i:i + 1] == b' ':
            i += 1
        return (pan_us, tilt_us) if i == len(text) else None

    @staticmethod
    def _clamp_pulse(us: int) -> int:
        if us < PULSE_MIN_US:
            return PULSE_MIN_US
        if us > PULSE_MAX_US:
            return PULSE_MAX_US
        return us

    def _report(self, pan_us: int, tilt_us: int) -> None:
        self.output += f'P{pan_us} T{tilt_us}\n'.encode('ascii')

    def _handle_line(self) -> None:
        if self.overflow:
            self.output += b'E line too long\n'
            return
        length = len(self.line)
        if length > 0 and self.line[length - 1] == 0x0D:
            length -= 1
        if length == 0:
            return                        # a blank line: nothing to do, nothing to say
        if length == 1 and self.line[0] == 0x3F:        # '?'
            if self.attached:
                self._report(self.pan_us, self.tilt_us)
            else:
                self.output += b'D\n'
            return
        # line[length] = '\0': C's parser stops there, or at a NUL byte the host sent.
        text = bytes(self.line[:length]).split(b'\0', 1)[0]
        parsed = self._parse_line(text)
        if parsed is None:
            self.output += b'E bad line\n'
            return
        pan_us, tilt_us = (self._clamp_pulse(v) for v in parsed)
        self.attached = True              # attach() with the first pulses, interrupts off
        self.pan_us, self.tilt_us = pan_us, tilt_us
        self.applied.append((pan_us, tilt_us))
        self._report(pan_us, tilt_us)

    def setup(self) -> None:
        self.output += b'D\n'             # detached until the host's first valid line

    def loop(self, now_ms: int, incoming: bytes = b'') -> None:
        if self.line and (now_ms - self.last_byte_ms) % 2 ** 32 > LINE_TIMEOUT_MS:
            self.line.clear()             # the watchdog: drop the half line
            self.overflow = False
        for c in incoming:
            self.last_byte_ms = now_ms
            if c == 0x0A:
                self._handle_line()
                self.line.clear()
                self.overflow = False
            elif len(self.line) < LINE_MAX:
                self.line.append(c)
            else:
                self.overflow = True

    def take_output(self) -> bytes:
        out, self.output = bytes(self.output), bytearray()
        return out


_IN_OPEN, _IN_CLOSE_WRITE, _IN_CLOSE_NOWRITE = 0x20, 0x08, 0x10
_EVENT = struct.Struct('iIII')          # struct inotify_event, before its name


class _OpenWatch:
    """The opens and closes of one path by anyone (inotify, through libc)."""

    def __init__(self, path: str):
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), 'inotify_init1 failed')
        if libc.inotify_add_watch(self.fd, path.encode(), _IN_OPEN | _IN_CLOSE_WRITE
                                  | _IN_CLOSE_NOWRITE) < 0:
            err = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(err, f'inotify_add_watch {path} failed')

    def events(self) -> list[str]:
        """'open' and 'close', in the order they happened, since the last call."""
        out = []
        while True:
            try:
                data = os.read(self.fd, 4096)
            except BlockingIOError:
                return out
            i = 0
            while i + _EVENT.size <= len(data):
                _, mask, _, name_len = _EVENT.unpack_from(data, i)
                if mask & _IN_OPEN:
                    out.append('open')
                if mask & (_IN_CLOSE_WRITE | _IN_CLOSE_NOWRITE):
                    out.append('close')
                i += _EVENT.size + name_len

    def close(self) -> None:
        os.close(self.fd)


class SerialBoard:
    """The board on a pty (see the module docstring); `port` is the path to open.

    dtr: the DTR line when the test starts (False: the board was just plugged in, and the
    first open restarts it; True: a session before this one left it asserted, HUPCL off).
    hupcl: the port's HUPCL flag when the test starts (a USB serial port's default is on).
    """

    def __init__(self, baud: int = BAUD, dtr: bool = False, hupcl: bool = True):
        self.baud = baud
        self.firmware = BoardFirmware()
        self.silent = False
        self.reply_with: bytes | None = None   # answer every line with this instead
        self.received = []                     # complete lines the board was sent (bytes)
        self.noise_bytes = 0
        self.dtr = dtr
        self.dtr_toggles = 0                   # edges of the DTR line, either way
        self.resets = 0                        # restarts, by DTR or reset()
        # Every pulse pair the servos got, in order, across restarts; None where the board
        # restarted (its servos let go).
        self.applied: list[tuple[int, int] | None] = []
        self._opens = 0                        # the slave's open file descriptions but ours
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pending = b''
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)        # no echo, no translation: a plain serial line
        attrs = termios.tcgetattr(self._slave)
        attrs[2] = attrs[2] | termios.HUPCL if hupcl else attrs[2] & ~termios.HUPCL
        termios.tcsetattr(self._slave, termios.TCSANOW, attrs)
        self.port = os.ttyname(self._slave)
        self._watch = _OpenWatch(self.port)     # after our own open: it sees the others'
        with self._lock:
            self.firmware.setup()
            self.firmware.take_output()   # printed before anyone listened
        self._thread = threading.Thread(target=self._run, name='serial_board', daemon=True)
        self._thread.start()

    # ---- what the tests do and look at --------------------------------------------------

    @property
    def pulses(self) -> tuple[int | None, int | None]:
        """(pan, tilt) pulse widths the servos now get, us."""
        with self._lock:
            return self.firmware.pan_us, self.firmware.tilt_us

    @property
    def opened_by_others(self) -> int:
        """How many open file descriptions of the port the board has seen, but its own."""
        with self._lock:
            return self._opens

    def reset(self) -> None:
        """The board restarts (a brown-out, or its reset button): setup() runs again and
        prints its start-up line; the servos let go."""
        with self._lock:
            self._restart()

    def hold(self, pan_us: int, tilt_us: int) -> None:
        """The servos attached and holding these pulses, as a session before the test left
        them (the board did not restart since)."""
        with self._lock:
            self.firmware.loop(self.firmware.last_byte_ms,
                               f'P{pan_us} T{tilt_us}\n'.encode('ascii'))
            self.firmware.take_output()
            self._collect()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            assert not self._thread.is_alive(), 'the emulated board thread did not stop'
            self._thread = None
        for fd in (self.master, self._slave):
            if fd is not None:
                os.close(fd)
        self.master = self._slave = None
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the thread ---------------------------------------------------------------------

    def _speed_matches(self) -> bool:
        """The port is set to the board's baud rate (a pty keeps the setting, not the rate)."""
        want = getattr(termios, f'B{self.baud}', None)
        if want is None:
            return True
        try:
            attrs = termios.tcgetattr(self._slave)
        except termios.error:
            return True
        return attrs[4] == want and attrs[5] == want

    def _restart(self) -> None:
        self.resets += 1
        self._collect()
        self.applied.append(None)
        self.firmware = BoardFirmware()
        self.firmware.setup()
        out = self.firmware.take_output()
        if self._speed_matches():      # at another baud rate the host hears no line
            self._send(self.reply_with if self.reply_with is not None and out else out)

    def _collect(self) -> None:
        self.applied += self.firmware.applied
        self.firmware.applied = []

    def _hupcl(self) -> bool:
        try:
            return bool(termios.tcgetattr(self._slave)[2] & termios.HUPCL)
        except termios.error:
            return True

    def _modem_lines(self) -> None:
        """DTR as the kernel drives it for the opens and closes since the last call."""
        for event in self._watch.events():
            if event == 'open':
                self._opens += 1
                if self._opens == 1 and not self.dtr:     # the first open asserts DTR
                    self.dtr = True
                    self.dtr_toggles += 1
                    self._restart()                       # the auto-reset circuit
            else:
                self._opens = max(0, self._opens - 1)
                if self._opens == 0 and self.dtr and self._hupcl():   # hang up at close
                    self.dtr = False
                    self.dtr_toggles += 1

    def _send(self, data: bytes) -> None:
        if data and not self.silent:
            try:
                os.write(self.master, data)
            except OSError:
                pass                      # the port went away: nobody hears it

    def _run(self) -> None:
        master, watch = self.master, self._watch.fd
        while not self._stop.is_set():
            ready, _, _ = select.select([watch, master], [], [], 0.02)
            now_ms = int(time.monotonic() * 1000) % 2 ** 32
            with self._lock:
                if watch in ready:          # an open comes before what is written after it
                    self._modem_lines()
                if master not in ready:
                    self.firmware.loop(now_ms)      # the watchdog runs on its own
                    continue
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    return
                if not self._speed_matches():
                    self.noise_bytes += len(chunk)  # another baud rate: noise, no answer
                    continue
                *lines, self._pending = (self._pending + chunk).split(b'\n')
                self.received += lines
                self.firmware.loop(now_ms, chunk)
                self._collect()
                out = self.firmware.take_output()
                if self.reply_with is not None and out:
                    out = self.reply_with
                self._send(out)
