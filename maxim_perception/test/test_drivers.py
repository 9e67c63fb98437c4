"""Head drivers: the serial servo board over a real pty pair, the sim and dry-run drivers."""

import os
import select
import tty

import pytest

from maxim_perception.head.drivers import (DriverError, DryRunDriver, HeadDriver,
                                           SerialServoDriver, ServoMapping, SimDriver)


class FakeBoard:
    """The far end of a pty pair, playing the servo board: reads lines, can answer."""

    def __init__(self):
        self.master, slave = os.openpty()
        tty.setraw(slave)        # no echo, no newline translation: a plain serial line
        self.port = os.ttyname(slave)
        self._slave = slave       # kept open so the pty stays alive until close()
        self._buffer = b''

    def read_line(self, timeout_s: float = 2.0) -> str:
        while b'\n' not in self._buffer:
            ready, _, _ = select.select([self.master], [], [], timeout_s)
            if not ready:
                raise TimeoutError(f'no line from the driver within {timeout_s} s')
            self._buffer += os.read(self.master, 1024)
        line, self._buffer = self._buffer.split(b'\n', 1)
        return line.decode('ascii')

    def send(self, text: str) -> None:
        os.write(self.master, text.encode('ascii'))

    def close(self):
        """Unplug the board (idempotent)."""
        if self.master is not None:
            os.close(self.master)
            os.close(self._slave)
            self.master = self._slave = None


@pytest.fixture
def board():
    b = FakeBoard()
    yield b
    b.close()


def wait_read(driver, want, tries=200):
    """read() until it returns `want` (bounded: the pty may deliver a moment later)."""
    got = None
    for _ in range(tries):
        got = driver.read()
        if got is not None and want is not None and all(
                abs(a - b) < 1e-9 for a, b in zip(got, want)):
            return got
        select.select([], [], [], 0.005)
    return got


def test_servo_mapping_is_linear_and_reversible():
    m = ServoMapping(-2.6, 2.6, 500, 2500)
    assert m.to_us(0.0) == 1500
    assert m.to_us(-2.6) == 500 and m.to_us(2.6) == 2500
    assert m.to_us(9.0) == 2500    # clamped to the range
    assert m.to_angle(2000) == pytest.approx(1.3)
    reversed_servo = ServoMapping(-0.8, 0.8, 2400, 600)
    assert reversed_servo.to_us(0.8) == 600
    with pytest.raises(ValueError, match='angle_min'):
        ServoMapping(1.0, -1.0)
    with pytest.raises(ValueError, match='outside 100..5000'):
        ServoMapping(-1.0, 1.0, 50, 2500)


def answer_query(driver, board, answer='D'):
    """The board's side of the driver's query after open(): `?`, answered."""
    assert board.read_line() == '?'
    with pytest.raises(DriverError, match='has not said yet'):
        driver.write(0.0, 0.0)                # nothing goes out before the answer
    board.send(f'{answer}\n')
    for _ in range(200):
        if driver.read() is not None or not driver.awaiting_position:
            return
        select.select([], [], [], 0.005)
    raise AssertionError('the driver did not take the answer')


def test_serial_driver_writes_the_line_protocol_and_reads_echoes(board):
    driver = SerialServoDriver(board.port, 115200)
    assert isinstance(driver, HeadDriver)
    driver.open()
    try:
        answer_query(driver, board)
        assert driver.detached and driver.read() is None
        driver.write(0.0, 0.0)
        assert board.read_line() == 'P1500 T1500'
        driver.write(1.3, -0.4)
        assert board.read_line() == 'P2000 T1000'
        assert driver.read() is None      # the board has not answered yet
        board.send('P2000 T1000\n')
        assert wait_read(driver, (1.3, -0.4)) == pytest.approx((1.3, -0.4))
        # A partial line waits for its end; error lines are kept aside.
        board.send('E overcurrent on pan\nP15')
        wait_read(driver, None, tries=20)
        assert driver.last_error == 'E overcurrent on pan'
        assert driver.read() == pytest.approx((1.3, -0.4))
        board.send('00 T1500\n')
        assert wait_read(driver, (0.0, 0.0)) == pytest.approx((0.0, 0.0))
    finally:
        driver.close()
        driver.close()  # twice is fine
    assert not driver.is_open


def test_serial_driver_custom_pulse_ranges(board):
    driver = SerialServoDriver(board.port, 57600, pan=ServoMapping(-1.0, 1.0, 1000, 2000),
                               tilt=ServoMapping(-0.5, 0.5, 2000, 1000), readback=False)
    driver.open()
    try:
        driver.write(0.5, 0.5)
        assert board.read_line() == 'P1750 T1000'
        board.send('P1000 T1000\n')
        assert driver.read() is None      # readback off: the driver does not claim to know
    finally:
        driver.close()


def test_serial_driver_errors_are_typed():
    with pytest.raises(ValueError, match='needs a port'):
        SerialServoDriver('')
    driver = SerialServoDriver('/dev/does-not-exist-maxim')
    with pytest.raises(DriverError, match='cannot open servo board on /dev/does-not-exist'):
        driver.open()
    with pytest.raises(DriverError, match='not open'):
        driver.write(0.0, 0.0)
    with pytest.raises(ValueError, match='finite'):
        driver.encode(float('nan'), 0.0)


def test_serial_driver_reports_a_board_that_goes_away(board):
    driver = SerialServoDriver(board.port)
    driver.open()
    answer_query(driver, board, 'P1700 T1300')         # where it holds them
    assert driver.read() == pytest.approx((0.52, -0.16))
    driver.write(0.1, 0.1)
    assert board.read_line().startswith('P')
    board.close()
    # The line is gone; a write or a read now fails with a DriverError, never crashes.
    with pytest.raises(DriverError):
        for _ in range(50):     # the kernel may buffer a few writes first
            driver.write(0.2, 0.2)
            driver.read()
    assert not driver.is_open


def test_sim_driver_forwards_and_reads_back():
    sent = []
    driver = SimDriver(lambda pan, tilt: sent.append((pan, tilt)))
    assert isinstance(driver, HeadDriver)
    with pytest.raises(DriverError, match='before open'):
        driver.write(0.0, 0.0)
    driver.open()
    driver.write(0.5, -0.25)
    assert sent == [(0.5, -0.25)]
    assert driver.read() is None
    driver.feed(0.49, -0.24)
    assert driver.read() == (0.49, -0.24)
    driver.close()


def test_dry_run_reports_the_command_as_reached_and_logs_sparingly():
    lines = []
    driver = DryRunDriver(log=lines.append, log_step=0.1)
    assert isinstance(driver, HeadDriver)
    driver.open()
    assert driver.read() is None
    for i in range(50):
        driver.write(i * 0.01, 0.0)
    assert driver.read() == (0.49, 0.0)
    assert driver.writes == 50
    assert 'dry-run head driver' in lines[0]
    assert 2 <= len(lines) <= 7    # one per 0.1 rad moved, not one per write
