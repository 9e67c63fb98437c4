"""The serial hobby-servo board: its firmware (firmware/maxim_head_servo) and the host's
SerialServoDriver against it over a real pty.

The board is test/helpers/serial_board.py, a transcription of the sketch; the first test
builds the sketch itself for the host with g++ (test/helpers/arduino: stand-ins for Serial,
millis() and Servo) and checks that both answer the same bytes with the same bytes.

test_drivers.py already covers the line format against a bare pty, E lines kept aside, a
board that goes away and a port that does not exist; these tests add the firmware's side:
pulses as the board applies them, clamping on both ends, readback closing the control loop,
and the replies that are missing or malformed.

The expected pulses are worked out by hand (pan -2.6..2.6 rad onto 500..2500 us: 384.6 us
per rad; tilt -0.8..0.8 rad onto 500..2500 us: 1250 us per rad), not with the driver's own
mapping.
"""

import inspect
import os
import random
import shutil
import subprocess
import time

from helpers.serial_board import (BAUD, BoardFirmware, LINE_MAX, PULSE_CENTRE_US,
                                  PULSE_MAX_US, PULSE_MIN_US, SerialBoard, SKETCH)
import pytest

from maxim_perception.head.control import (HeadConfig, HeadController, HeadGoalSpec, HeadMode,
                                           PainType)
from maxim_perception.head.drivers import (BOARD_PULSE_US, DriverError, SerialServoDriver,
                                           ServoMapping)
from maxim_perception.head.motion import MotionModel

ARDUINO_SHIM = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'test', 'helpers', 'arduino')
README = os.path.join(os.path.dirname(os.path.dirname(SKETCH)), 'README.md')


class Clock:
    """The driver's monotonic clock, moved by the test (timeouts without waiting)."""

    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def until(condition, timeout_s=5.0):
    """Poll condition() until it holds or the deadline passes; its last value."""
    deadline = time.monotonic() + timeout_s
    while not (ok := condition()) and time.monotonic() < deadline:
        time.sleep(0.005)
    return ok


def read_until(driver, want, timeout_s=5.0):
    """driver.read() until it returns (about) `want`."""
    got = []

    def check():
        got.append(driver.read())
        return got[-1] is not None and all(abs(a - b) < 1e-9 for a, b in zip(got[-1], want))

    until(check, timeout_s)
    return got[-1]


@pytest.fixture
def board():
    b = SerialBoard()
    yield b
    b.close()


# ---- the responder is the sketch -------------------------------------------------------------

def _script():
    """Chunks of serial input, (millis, bytes): every rule of the parser, the watchdog, and
    a seeded stream of near-miss bytes."""
    ok = b'P1500 T1500'
    chunks = [
        (10, b'P2000 T1000\n'), (20, b'P1500 T1500\r\n'), (30, b'P0 T99999\n'),
        (40, b'P123456 T1500\n'), (50, b'P1500  T1500   \n'), (60, b' P1500 T1500\n'),
        (70, b'p1500 t1500\n'), (80, b'P1500T1500\n'), (90, b'P-100 T1500\n'),
        (100, b'P1500 T\n'), (110, b'P1500 T1500 X\n'), (120, b'\n'), (121, b'\r\n'),
        (130, b'P' + b'1' * 40 + b'\n'), (140, b'P1600 T14'), (180, b'00\n'),
        (300, b'P1700 T13'), (500, b'00\n'), (600, b'P1800 T1200\nP1900 T1100\n'),
        (700, b'P1500 T1500\x00junk\n'), (800, bytes(range(0x80, 0x90)) + b'\n'),
        (900, b'P1500 T1500\rX\n'), (1000, ok + b' ' * (LINE_MAX - len(ok)) + b'\n'),
        (1010, ok + b' ' * (LINE_MAX - len(ok) + 1) + b'\n'), (1100, b'P01500 T0500\n'),
        (1200, b''), (1300, b'T1500 P1500\n'), (1400, b'P2600 T400\n'),
    ]
    rng = random.Random(33)
    alphabet = b'PT0123456789  \r\n\n\x00x-'
    t = 2000
    for _ in range(400):
        t += rng.choice((0, 1, 5, 20, 99, 100, 101, 150))
        chunks.append((t, bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))))
    return chunks


def _responder_answers(chunks):
    fw = BoardFirmware()
    fw.setup()
    out = [f'{fw.take_output().hex() or "-"} {fw.pan_us} {fw.tilt_us}']
    for ms, data in chunks:
        fw.loop(ms, data)
        out.append(f'{fw.take_output().hex() or "-"} {fw.pan_us} {fw.tilt_us}')
    return out


def test_the_responder_answers_as_the_sketch_itself_built_for_the_host(tmp_path):
    gxx = shutil.which('g++')
    if gxx is None:
        pytest.skip('g++ is not installed: the sketch cannot be built for the host')
    exe = str(tmp_path / 'maxim_head_servo')
    build = subprocess.run(
        [gxx, '-std=c++17', '-Wall', '-Wextra', '-Werror', '-I', ARDUINO_SHIM, '-include',
         'Arduino.h', '-x', 'c++', SKETCH, '-x', 'none',
         os.path.join(ARDUINO_SHIM, 'host_main.cpp'), '-o', exe],
        capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr
    chunks = _script()
    stdin = ''.join(f'{ms} {data.hex() or "-"}\n' for ms, data in chunks)
    run = subprocess.run([exe], input=stdin, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    sketch = run.stdout.splitlines()
    responder = _responder_answers(chunks)
    assert len(sketch) == len(responder) == len(chunks) + 1
    for i, (a, b) in enumerate(zip(sketch, responder)):
        assert a == b, (f'chunk {i - 1} {chunks[i - 1] if i else "setup()"}: the sketch says '
                        f'{a}, the responder {b}')
    # The script did reach every kind of answer.
    said = b''.join(bytes.fromhex(line.split()[0]) for line in sketch if line[0] != '-')
    for answer in (b'P1500 T1500\n', b'P500 T2500\n', b'E bad line\n', b'E line too long\n',
                   b'P1600 T1400\n', b'P1500 T500\n'):
        assert answer in said


def test_the_firmware_rules_by_hand():
    fw = BoardFirmware()
    fw.setup()
    assert fw.take_output() == b'P1500 T1500\n' and (fw.pan_us, fw.tilt_us) == (1500, 1500)
    fw.loop(0, b'P2600 T400\n')                       # clamped to the pulse range
    assert fw.take_output() == b'P2500 T500\n' and (fw.pan_us, fw.tilt_us) == (2500, 500)
    fw.loop(10, b'P1700 X\n')                         # refused: the servos hold
    assert fw.take_output() == b'E bad line\n' and (fw.pan_us, fw.tilt_us) == (2500, 500)
    fw.loop(20, b'P1700 T15')
    fw.loop(20 + 101, b'00\n')                        # the watchdog dropped the half line
    assert fw.take_output() == b'E bad line\n' and (fw.pan_us, fw.tilt_us) == (2500, 500)
    fw.loop(200, b'P1700 T15')
    fw.loop(300, b'00\n')                             # 100 ms is still in time
    assert fw.take_output() == b'P1700 T1500\n'
    fw.loop(10_000)                                   # a silent host: the servos hold
    assert fw.take_output() == b'' and (fw.pan_us, fw.tilt_us) == (1700, 1500)


def test_the_sketch_the_driver_and_the_readme_agree():
    assert BOARD_PULSE_US == (PULSE_MIN_US, PULSE_MAX_US) == (500, 2500)
    assert inspect.signature(SerialServoDriver).parameters['baud'].default == BAUD == 115200
    assert ServoMapping(-2.6, 2.6).to_us(0.0) == ServoMapping(-0.8, 0.8).to_us(0.0) \
        == PULSE_CENTRE_US
    with open(README, encoding='utf-8') as f:
        readme = f.read()
    for needed in (str(BAUD), 'arduino:avr:uno', 'arduino:avr:nano', 'arduino-cli compile',
                   'arduino-cli upload', 'common ground'):
        assert needed in readme


# ---- the host driver against the board -------------------------------------------------------

def test_goals_in_radians_arrive_as_pulse_widths_and_the_readback_says_so(board):
    driver = SerialServoDriver(board.port)
    driver.open()
    try:
        for (pan, tilt), want in (((0.0, 0.0), (1500, 1500)),
                                  ((1.3, -0.4), (2000, 1000)),     # 1500 + 1.3 * 384.6
                                  ((-2.6, 0.8), (500, 2500)),      # both ends
                                  ((0.52, -0.16), (1700, 1300))):
            driver.write(pan, tilt)
            assert until(lambda: board.pulses == want), (pan, tilt, board.pulses)
            assert read_until(driver, (pan, tilt)) == pytest.approx((pan, tilt), abs=1e-9)
        assert board.received[-1] == b'P1700 T1300'
        # Out of range in radians: the driver's map clamps to the joint's ends.
        driver.write(9.0, -9.0)
        assert until(lambda: board.pulses == (2500, 500))
        assert read_until(driver, (2.6, -0.8)) == pytest.approx((2.6, -0.8))
    finally:
        driver.close()


def test_a_map_past_the_boards_range_is_clamped_by_the_board_and_the_readback_shows_it(board):
    # The pan map reaches 300..2700 us; the board applies 500..2500 and says so.
    driver = SerialServoDriver(board.port, pan=ServoMapping(-2.6, 2.6, 300, 2700))
    driver.open()
    try:
        driver.write(2.6, 0.0)
        assert until(lambda: board.pulses == (2500, 1500))
        assert board.received[-1] == b'P2700 T1500'
        inside = 5.2 * 200 / 2400                      # the 200 us the board cut, in rad
        assert read_until(driver, (2.6 - inside, 0.0)) == pytest.approx((2.6 - inside, 0.0))
        assert MotionModel.of(driver).pan_limits == pytest.approx((-2.6 + inside, 2.6 - inside))
    finally:
        driver.close()


def _closed_loop(driver, goal, seconds):
    """The head controller drives the board at 50 Hz through the driver, its readback the
    measurement (as the node does). Returns the controller."""
    ctrl = HeadController(HeadConfig())
    ctrl.set_motion_model(MotionModel.of(driver))
    ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='look', pan=goal[0], tilt=goal[1]), 0.0)
    t0 = time.monotonic()
    last = t0
    while (now := time.monotonic()) - t0 < seconds:
        reading = driver.read()
        if reading is not None:
            ctrl.set_measured(reading[0], reading[1], now - t0)
        cmd = ctrl.step(max(1e-3, now - last), now - t0)
        driver.write(cmd.pan, cmd.tilt)
        last = now
        time.sleep(0.02)
    return ctrl


def test_the_readback_closes_the_loop_and_a_board_limit_is_felt(board):
    driver = SerialServoDriver(board.port)
    driver.open()
    try:
        ctrl = _closed_loop(driver, (1.0, 0.3), 1.5)
        status = ctrl.status(1.5)
        assert status.measurement_fresh and status.goal_reached
        assert board.pulses == (1885, 1875)              # 1500 + 1.0 * 384.6, 1500 + 375
        assert ctrl.pop_pain() == []
    finally:
        driver.close()
    # A pan map past the board's range: the board holds the joint at 2500 us while the
    # command goes on to 2.6 rad. That is pain, held off by a limit.
    driver = SerialServoDriver(board.port, pan=ServoMapping(-2.6, 2.6, 300, 2700))
    driver.open()
    try:
        ctrl = _closed_loop(driver, (2.6, 0.0), 2.5)
        pain = [p for p in ctrl.pop_pain() if p.pain_type == PainType.MOVEMENT_ERROR]
        assert pain and pain[0].source == 'head_pan_joint'
        assert 'held at its limit' in pain[0].message
    finally:
        driver.close()


def test_a_malformed_reply_is_a_driver_error(board):
    clock = Clock()
    driver = SerialServoDriver(board.port, clock=clock)
    driver.open()
    board.reply_with = b'OK\n'                         # other firmware on the board
    driver.write(0.1, 0.1)
    # While the board may still be booting, a stray line is only noted ...
    assert until(lambda: driver.read() is None and driver.last_error == 'OK')
    assert driver.is_open
    clock.t += 3.0                                      # ... after boot_s it is an error.
    driver.write(0.1, 0.1)
    with pytest.raises(DriverError, match=r"sent a malformed line 'OK' \(expected P<us> T<us> "
                                          r'or E<reason>: is the maxim_head_servo firmware'):
        until(lambda: driver.read() and False)
    assert not driver.is_open
    # Reopened, the real firmware answers again.
    board.reply_with = None
    driver.open()
    driver.write(0.0, 0.0)
    assert read_until(driver, (0.0, 0.0)) == (0.0, 0.0)
    driver.close()


def test_a_missing_reply_is_a_driver_error_after_the_boot_grace(board):
    clock = Clock()
    board.silent = True
    driver = SerialServoDriver(board.port, clock=clock, reply_timeout_s=0.5, boot_s=2.5)
    driver.open()
    driver.write(0.2, 0.0)
    assert until(lambda: board.received)                # it heard, it does not answer
    clock.t += 2.9                                      # booting (2.5 s) + 0.4 s
    assert driver.read() is None and driver.is_open
    clock.t += 0.2
    with pytest.raises(DriverError, match=r'did not answer within 0.5 s .*115200 baud'):
        driver.read()
    assert not driver.is_open
    # Once the board has spoken (an Uno's start-up line after the open reset it), there is
    # no boot grace: half a second without an answer is an error.
    board.silent = False
    driver.open()
    board.reset()
    assert read_until(driver, (0.0, 0.0)) == (0.0, 0.0)     # P1500 T1500: centred
    board.silent = True
    driver.write(0.3, 0.0)
    clock.t += 0.6
    with pytest.raises(DriverError, match='did not answer'):
        driver.read()


def test_a_board_at_another_baud_rate_hears_noise_and_the_driver_says_so(board):
    clock = Clock()
    driver = SerialServoDriver(board.port, 57600, clock=clock)
    driver.open()
    driver.write(0.0, 0.0)
    assert until(lambda: board.noise_bytes > 0)
    clock.t += 3.1
    with pytest.raises(DriverError, match='did not answer within .* at 57600 baud'):
        driver.read()
    assert board.received == []


def test_a_path_that_is_no_serial_port_is_a_clear_error(tmp_path):
    # (A path that does not exist: test_drivers.py.) A plain file is there but is no tty.
    path = tmp_path / 'not-a-port'
    path.write_text('')
    driver = SerialServoDriver(str(path))
    with pytest.raises(DriverError, match=f'cannot open servo board on {path} at 115200 baud'):
        driver.open()
    assert not driver.is_open
