"""An emulated Dynamixel protocol-2.0 bus on a pty, for the Dynamixel driver's tests.

`DynamixelBus` opens a pseudo-terminal pair: the driver (through the real `dynamixel-sdk`
and pyserial) opens the slave path as its serial port, and a thread here plays the servos on
the master side. It is no mock of the SDK: it reads the bytes the SDK writes, checks their
framing (header FF FF FD 00, ID, length, byte stuffing) and their CRC-16 (polynomial 0x8005,
computed here from the polynomial, not taken from the SDK), and answers PING, READ, WRITE,
SYNC_READ and SYNC_WRITE with status packets of its own making, as X-series servos
(XL430-W250 by default) would:

- each servo keeps a control table (model number, firmware, ID, operating mode, position
  limits, torque enable, hardware error status, profile velocity, goal and present position);
- EEPROM (addresses below 64) is writable only with the torque off, read-only fields never
  (access error); a goal position outside the position limits is refused (data limit error,
  and a SYNC_WRITE's is dropped, since SYNC_WRITE has no status packet);
- with the torque on in position mode, the present position moves toward the goal at the
  profile velocity (at `max_speed` when it is 0);
- a hardware error (`set_hardware_error`) sets the alert bit of every status packet, turns
  the torque off and keeps it off, as the real servos' shutdown does;
- address 126 is Present Load (0.1 % of the maximum torque) on the models that report load
  (the XL430-W250 among them) and Present Current on the others, whose Current Limit (38)
  holds their full scale; a blocked servo (`block`: a hand holds it, the bracket stops it)
  stays where it is and, while its goal is away, reports the effort it was given there;
- a silenced servo (`silence`) answers nothing; a bus at another baud rate than the port is
  set to hears only noise and answers nothing; `unplug` and `replug` take the adapter away
  and bring it back (behind a symlink, as /dev/serial/by-id/... names behave).

The thread waits on select() with a short timeout and stops on an event; every public method
takes the lock the thread holds while it works.
"""

import os
import select
import termios
import threading
import time
import tty

HEADER = bytes([0xFF, 0xFF, 0xFD, 0x00])
BROADCAST = 0xFE
PING, READ, WRITE, SYNC_READ, SYNC_WRITE, STATUS = 0x01, 0x02, 0x03, 0x82, 0x83, 0x55
# Status errors (the error byte's low 7 bits) and the alert bit.
(RESULT_FAIL, INSTRUCTION_ERROR, CRC_ERROR, DATA_RANGE, DATA_LENGTH, DATA_LIMIT,
 ACCESS) = range(1, 8)
ALERT = 0x80

# X-series control table addresses used here.
MODEL_NUMBER, FIRMWARE, ID, BAUD_RATE, OPERATING_MODE = 0, 6, 7, 8, 11
CURRENT_LIMIT, MAX_POSITION_LIMIT, MIN_POSITION_LIMIT = 38, 48, 52
TORQUE_ENABLE, HARDWARE_ERROR_STATUS, PRESENT_CURRENT = 64, 70, 126
PROFILE_VELOCITY, GOAL_POSITION, PRESENT_POSITION = 112, 116, 132
TABLE_SIZE = 147
EEPROM_END = 64
READ_ONLY = set(range(0, 7)) | {HARDWARE_ERROR_STATUS} | set(range(120, TABLE_SIZE))
OPERATING_MODES = {0, 1, 3, 4, 5, 16}
LOAD_MODELS = {30, 1060, 1070, 1080, 1090, 1160}   # Present Load at 126, not Present Current
CURRENT_LIMIT_DEFAULT = 1750                        # an XL330-M288's, in its 1 mA unit
BAUD_SETTINGS = {9600: 0, 57600: 1, 115200: 2, 1000000: 3, 2000000: 4, 3000000: 5, 4000000: 6}


def _crc_table(poly: int = 0x8005) -> list[int]:
    table = []
    for i in range(256):
        crc = i << 8
        for _ in range(8):
            crc = ((crc << 1) ^ poly) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return table


CRC_TABLE = _crc_table()


def crc16(data: bytes, crc: int = 0) -> int:
    """Dynamixel protocol 2.0's CRC-16 (polynomial 0x8005, MSB first, initial value 0)."""
    for byte in data:
        crc = ((crc << 8) ^ CRC_TABLE[((crc >> 8) ^ byte) & 0xFF]) & 0xFFFF
    return crc


def stuff(body: bytes) -> bytes:
    """Byte stuffing of the instruction and parameters: FF FF FD -> FF FF FD FD."""
    out = bytearray()
    for b in body:
        out.append(b)
        if b == 0xFD and out[-3:-1] == b'\xff\xff' and len(out) >= 3:
            out.append(0xFD)
    return bytes(out)


def unstuff(packet: bytes, start: int, end: int) -> bytes:
    """The instruction and parameters of a received packet, stuffing bytes removed."""
    out = bytearray()
    for i in range(start, end):
        if packet[i] == 0xFD and packet[i - 1] == 0xFD and packet[i - 3:i - 1] == b'\xff\xff':
            continue
        out.append(packet[i])
    return bytes(out)


def build_packet(servo_id: int, body: bytes) -> bytes:
    """Header, ID, length, (stuffed) body, CRC."""
    body = stuff(body)
    head = HEADER + bytes([servo_id]) + (len(body) + 2).to_bytes(2, 'little')
    packet = head + body
    return packet + crc16(packet).to_bytes(2, 'little')


def status_packet(servo_id: int, error: int, params: bytes = b'') -> bytes:
    return build_packet(servo_id, bytes([STATUS, error]) + params)


class EmulatedServo:
    """One X-series servo's control table and motion."""

    def __init__(self, servo_id: int, model: int = 1060, firmware: int = 46, baud: int = 57600,
                 present: int = 2048, max_speed: float = 4000.0):
        self.id = servo_id
        self.table = bytearray(TABLE_SIZE)
        self._set(MODEL_NUMBER, 2, model)
        self._set(FIRMWARE, 1, firmware)
        self._set(ID, 1, servo_id)
        self._set(BAUD_RATE, 1, BAUD_SETTINGS.get(baud, 1))
        self._set(OPERATING_MODE, 1, 3)
        self._set(MAX_POSITION_LIMIT, 4, 4095)
        self._set(MIN_POSITION_LIMIT, 4, 0)
        self._set(GOAL_POSITION, 4, present)
        if model not in LOAD_MODELS:
            self._set(CURRENT_LIMIT, 2, CURRENT_LIMIT_DEFAULT)
        self.position = float(present)          # ticks; the table's 132 is its rounding
        self.blocked: int | None = None         # held where it is: the effort it reports
        self.max_speed = max_speed              # ticks/s with profile velocity 0
        self.silent = False
        self.rejected: list[tuple[int, int, int]] = []   # (address, value, status error)
        self._moved_at = time.monotonic()

    # ---- the table ----------------------------------------------------------------------

    def _set(self, address: int, size: int, value: int) -> None:
        self.table[address:address + size] = int(value).to_bytes(size, 'little',
                                                                 signed=value < 0)

    def get(self, address: int, size: int, signed: bool = False) -> int:
        self.advance()
        return int.from_bytes(self.table[address:address + size], 'little', signed=signed)

    @property
    def hardware_error(self) -> int:
        return self.table[HARDWARE_ERROR_STATUS]

    def error_byte(self, error: int = 0) -> int:
        return error | (ALERT if self.hardware_error else 0)

    def advance(self, now: float | None = None) -> None:
        """Move the present position toward the goal for the time since the last call."""
        now = time.monotonic() if now is None else now
        dt, self._moved_at = max(0.0, now - self._moved_at), now
        torque = self.table[TORQUE_ENABLE] == 1
        goal = int.from_bytes(self.table[GOAL_POSITION:GOAL_POSITION + 4], 'little', signed=True)
        straining = torque and self.blocked is not None and abs(goal - self.position) > 1
        self._set(PRESENT_CURRENT, 2, self.blocked if straining else 0)
        if torque and self.blocked is None and self.table[OPERATING_MODE] == 3:
            units = int.from_bytes(self.table[PROFILE_VELOCITY:PROFILE_VELOCITY + 4], 'little')
            speed = units * 0.229 / 60.0 * 4096 if units else self.max_speed
            step = speed * dt
            delta = goal - self.position
            self.position = goal if abs(delta) <= step else self.position + step * (
                1 if delta > 0 else -1)
        self._set(PRESENT_POSITION, 4, int(round(self.position)))

    def settle(self) -> None:
        """The present position at the goal now (with the torque on)."""
        if self.table[TORQUE_ENABLE] == 1:
            self.position = float(self.get(GOAL_POSITION, 4, signed=True))
        self.advance()

    # ---- instructions -------------------------------------------------------------------

    def read(self, address: int, length: int) -> tuple[int, bytes]:
        if address + length > TABLE_SIZE or length == 0:
            return ACCESS, b''
        self.advance()
        return 0, bytes(self.table[address:address + length])

    def write(self, address: int, data: bytes) -> int:
        """Apply a write as the servo would; the status error (0: written)."""
        end = address + len(data)
        error = self._check_write(address, data)
        if error:
            value = int.from_bytes(data, 'little') if data else 0
            self.rejected.append((address, value, error))
            return error
        self.advance()
        self.table[address:end] = data
        if address <= TORQUE_ENABLE < end and self.table[TORQUE_ENABLE] == 0:
            self.position = float(round(self.position))
        return 0

    def _check_write(self, address: int, data: bytes) -> int:
        end = address + len(data)
        if not data or end > TABLE_SIZE or any(a in READ_ONLY for a in range(address, end)):
            return ACCESS
        if address < EEPROM_END and self.table[TORQUE_ENABLE] == 1:
            return ACCESS
        staged = bytearray(self.table)
        staged[address:end] = data

        def field(a, size, signed=False):
            return int.from_bytes(staged[a:a + size], 'little', signed=signed)

        if address <= TORQUE_ENABLE < end:
            if staged[TORQUE_ENABLE] not in (0, 1):
                return DATA_RANGE
            if staged[TORQUE_ENABLE] == 1 and self.hardware_error:
                return RESULT_FAIL
        if address <= OPERATING_MODE < end and staged[OPERATING_MODE] not in OPERATING_MODES:
            return DATA_RANGE
        for limit in (MAX_POSITION_LIMIT, MIN_POSITION_LIMIT):
            if address < limit + 4 and end > limit and not 0 <= field(limit, 4) <= 4095:
                return DATA_RANGE
        if address < GOAL_POSITION + 4 and end > GOAL_POSITION:
            goal = field(GOAL_POSITION, 4, signed=True)
            if not field(MIN_POSITION_LIMIT, 4) <= goal <= field(MAX_POSITION_LIMIT, 4):
                return DATA_LIMIT
        return 0


class DynamixelBus:
    """Emulated X-series servos behind a pty (see the module docstring).

    bus = DynamixelBus(ids=(1, 2)); driver = DynamixelDriver(bus.port, ...); ...; bus.close()
    `link`: a path made a symlink to the pty, and `port` then (survives unplug/replug).
    """

    def __init__(self, ids=(1, 2), model: int = 1060, baud: int = 57600, link: str | None = None,
                 **servo_kw):
        self.servos = {i: EmulatedServo(i, model=model, baud=baud, **servo_kw) for i in ids}
        self.baud = baud
        self.link = link
        self.packets: list[tuple[int, int, bytes]] = []  # valid ones: (id, instruction, params)
        self.crc_errors = 0
        self.framing_errors = 0
        self.noise_bytes = 0        # bytes heard at another baud rate, or outside any packet
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.master = self._slave = None
        self._buffer = b''
        self.replug()

    # ---- the adapter --------------------------------------------------------------------

    @property
    def port(self) -> str:
        return self.link or self._tty

    def replug(self) -> None:
        """Plug the adapter in (again): a new pty, the same servos, the thread running."""
        if self.master is not None:
            self.unplug()
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)        # no echo, no translation: a plain serial line
        self._tty = os.ttyname(self._slave)
        self._buffer = b''
        if self.link:
            if os.path.lexists(self.link):
                os.remove(self.link)
            os.symlink(self._tty, self.link)
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name='dynamixel_bus', daemon=True)
        self._thread.start()

    def unplug(self) -> None:
        """Take the adapter away: the thread stops, the pty closes, the link goes."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            assert not self._thread.is_alive(), 'the emulated bus thread did not stop'
            self._thread = None
        for fd in (self.master, self._slave):
            if fd is not None:
                os.close(fd)
        self.master = self._slave = None
        if self.link and os.path.lexists(self.link):
            os.remove(self.link)

    def close(self) -> None:
        if self.master is not None:
            self.unplug()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- what the tests do and look at --------------------------------------------------

    def servo(self, servo_id: int) -> EmulatedServo:
        return self.servos[servo_id]

    def value(self, servo_id: int, address: int, size: int, signed: bool = False) -> int:
        with self._lock:
            return self.servos[servo_id].get(address, size, signed)

    def goal(self, servo_id: int) -> int:
        return self.value(servo_id, GOAL_POSITION, 4, signed=True)

    def present(self, servo_id: int) -> int:
        return self.value(servo_id, PRESENT_POSITION, 4, signed=True)

    def torque(self, servo_id: int) -> int:
        return self.value(servo_id, TORQUE_ENABLE, 1)

    def limits(self, servo_id: int) -> tuple[int, int]:
        """(Min, Max Position Limit)."""
        return (self.value(servo_id, MIN_POSITION_LIMIT, 4),
                self.value(servo_id, MAX_POSITION_LIMIT, 4))

    def poke(self, servo_id: int, address: int, size: int, value: int) -> None:
        """Set a control-table field directly (a servo configured otherwise beforehand)."""
        with self._lock:
            servo = self.servos[servo_id]
            servo._set(address, size, value)
            if address == PRESENT_POSITION:
                servo.position = float(value)

    def settle(self) -> None:
        with self._lock:
            for servo in self.servos.values():
                servo.settle()

    def silence(self, servo_id: int, silent: bool = True) -> None:
        with self._lock:
            self.servos[servo_id].silent = silent

    def set_hardware_error(self, servo_id: int, bits: int) -> None:
        """A hardware fault (e.g. 0x20 overload): alert bit on, torque off."""
        with self._lock:
            servo = self.servos[servo_id]
            servo.advance()
            servo.table[HARDWARE_ERROR_STATUS] = bits
            if bits:
                servo.table[TORQUE_ENABLE] = 0

    def block(self, servo_id: int, effort: int | None) -> None:
        """Hold the servo where it is (None: let it go): while its goal is away it reports
        `effort` at address 126 (Present Load in 0.1 %, or Present Current in its unit)."""
        with self._lock:
            servo = self.servos[servo_id]
            servo.advance()
            servo.blocked = effort
            servo.advance()

    def instructions(self, servo_id: int | None = None) -> list[int]:
        with self._lock:
            return [ins for i, ins, _ in self.packets if servo_id is None or i == servo_id]

    # ---- the thread ---------------------------------------------------------------------

    def _speed_matches(self) -> bool:
        """The port is set to the servos' baud rate (a pty keeps the setting, not the rate)."""
        want = getattr(termios, f'B{self.baud}', None)
        if want is None:
            return True
        try:
            attrs = termios.tcgetattr(self._slave)
        except termios.error:
            return True
        return attrs[4] == want and attrs[5] == want

    def _run(self) -> None:
        master = self.master
        while not self._stop.is_set():
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return
            with self._lock:
                if not self._speed_matches():
                    self.noise_bytes += len(chunk)
                    continue
                self._buffer += chunk
                for reply in self._process():
                    try:
                        os.write(master, reply)
                    except OSError:
                        return

    def _process(self) -> list[bytes]:
        """Take the complete packets off the buffer; the status packets to send back."""
        replies = []
        while True:
            start = self._buffer.find(HEADER)
            if start < 0:       # keep a header's beginning for the next chunk
                keep = next(n for n in (3, 2, 1, 0) if self._buffer.endswith(HEADER[:n]))
                self.noise_bytes += len(self._buffer) - keep
                self._buffer = self._buffer[len(self._buffer) - keep:]
                return replies
            self.noise_bytes += start
            self._buffer = self._buffer[start:]
            if len(self._buffer) < 7:
                return replies
            length = int.from_bytes(self._buffer[5:7], 'little')
            if not 3 <= length <= 1024:
                self.framing_errors += 1
                self._buffer = self._buffer[1:]
                continue
            total = 7 + length
            if len(self._buffer) < total:
                return replies
            packet, self._buffer = self._buffer[:total], self._buffer[total:]
            servo_id = packet[4]
            if crc16(packet[:-2]) != int.from_bytes(packet[-2:], 'little'):
                self.crc_errors += 1
                servo = self.servos.get(servo_id)
                if servo is not None and not servo.silent:
                    replies.append(status_packet(servo_id, servo.error_byte(CRC_ERROR)))
                continue
            body = unstuff(packet, 7, total - 2)
            instruction, params = body[0], body[1:]
            self.packets.append((servo_id, instruction, params))
            replies += self._execute(servo_id, instruction, params)

    def _answering(self, servo_id: int) -> EmulatedServo | None:
        servo = self.servos.get(servo_id)
        return servo if servo is not None and not servo.silent else None

    def _execute(self, servo_id: int, instruction: int, params: bytes) -> list[bytes]:
        if servo_id == BROADCAST:
            return self._broadcast(instruction, params)
        servo = self._answering(servo_id)
        if servo is None:
            return []
        if instruction == PING:
            if params:
                return [status_packet(servo_id, servo.error_byte(DATA_LENGTH))]
            return [status_packet(servo_id, servo.error_byte(), bytes(servo.table[0:2])
                                  + bytes([servo.table[FIRMWARE]]))]
        if instruction == READ:
            if len(params) != 4:
                return [status_packet(servo_id, servo.error_byte(DATA_LENGTH))]
            address = int.from_bytes(params[0:2], 'little')
            error, data = servo.read(address, int.from_bytes(params[2:4], 'little'))
            return [status_packet(servo_id, servo.error_byte(error), data)]
        if instruction == WRITE:
            if len(params) < 3:
                return [status_packet(servo_id, servo.error_byte(DATA_LENGTH))]
            error = servo.write(int.from_bytes(params[0:2], 'little'), params[2:])
            return [status_packet(servo_id, servo.error_byte(error))]
        return [status_packet(servo_id, servo.error_byte(INSTRUCTION_ERROR))]

    def _broadcast(self, instruction: int, params: bytes) -> list[bytes]:
        if instruction == PING:
            return [status_packet(s.id, s.error_byte(), bytes(s.table[0:2])
                                  + bytes([s.table[FIRMWARE]]))
                    for _, s in sorted(self.servos.items()) if not s.silent]
        if instruction == WRITE and len(params) >= 3:
            for servo in self.servos.values():
                if not servo.silent:
                    servo.write(int.from_bytes(params[0:2], 'little'), params[2:])
            return []
        if instruction in (SYNC_READ, SYNC_WRITE) and len(params) >= 4:
            address = int.from_bytes(params[0:2], 'little')
            size = int.from_bytes(params[2:4], 'little')
            rest = params[4:]
            if instruction == SYNC_READ:
                replies = []
                for servo_id in rest:          # in the order asked, as the servos do
                    servo = self._answering(servo_id)
                    if servo is not None:
                        error, data = servo.read(address, size)
                        replies.append(status_packet(servo_id, servo.error_byte(error), data))
                return replies
            step = 1 + size
            if size == 0 or len(rest) % step:
                self.framing_errors += 1
                return []
            for i in range(0, len(rest), step):
                servo = self._answering(rest[i])
                if servo is not None:
                    servo.write(address, rest[i + 1:i + step])   # refused: dropped
            return []
        return []      # other broadcasts (bulk, action, ...) are not emulated: no answer
