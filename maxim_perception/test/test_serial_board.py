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
import termios
import time

from helpers.serial_board import (BAUD, BoardFirmware, LINE_MAX, PULSE_MAX_US, PULSE_MIN_US,
                                  SerialBoard, SKETCH)
import pytest
import serial

from maxim_perception.head.control import (HeadConfig, HeadController, HeadGoalSpec, HeadMode,
                                           PainType)
from maxim_perception.head.drivers import (BOARD_PULSE_US, DriverError, SerialServoDriver,
                                           ServoMapping)
from maxim_perception.head.motion import MotionModel
from maxim_perception.head.supervision import DriverSupervisor

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


def connect(driver, timeout_s=5.0):
    """open(), then read() until the board has said where its servos are (or that they are
    limp): the driver sends no command before. The reading then, or None."""
    driver.open()
    assert until(lambda: driver.read() is not None or not driver.awaiting_position,
                 timeout_s), 'the board never answered the query'
    return driver.read()


@pytest.fixture
def board(request):
    """The board on a pty; parametrized indirectly with SerialBoard's keywords (default:
    just plugged in, so the first open restarts it)."""
    b = SerialBoard(**getattr(request, 'param', {}))
    yield b
    b.close()


# ---- the responder is the sketch -------------------------------------------------------------

def _script():
    """Chunks of serial input, (millis, bytes): every rule of the parser, the watchdog, and
    a seeded stream of near-miss bytes."""
    ok = b'P1500 T1500'
    chunks = [
        (5, b'?\n'), (6, b'? \n'), (7, b'??\n'), (8, b'?\r\n'),
        (10, b'P2000 T1000\n'), (11, b'?\n'), (20, b'P1500 T1500\r\n'), (30, b'P0 T99999\n'),
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
    alphabet = b'PT0123456789  \r\n\n\x00x-?'
    t = 2000
    for _ in range(400):
        t += rng.choice((0, 1, 5, 20, 99, 100, 101, 150))
        chunks.append((t, bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))))
    return chunks


def _responder_answers(chunks):
    def line(fw):
        pulses = ' '.join('-' if us is None else str(us) for us in (fw.pan_us, fw.tilt_us))
        return f'{fw.take_output().hex() or "-"} {pulses}'

    fw = BoardFirmware()
    fw.setup()
    out = [line(fw)]
    for ms, data in chunks:
        fw.loop(ms, data)
        out.append(line(fw))
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
                   b'P1600 T1400\n', b'P1500 T500\n', b'D\n', b'P2000 T1000\nP2000 T1000\n'):
        assert answer in said
    assert sketch[0] == '440a - -'              # "D\n" at start-up, no pulse on either servo


def test_the_firmware_rules_by_hand():
    fw = BoardFirmware()
    fw.setup()
    assert fw.take_output() == b'D\n' and (fw.pan_us, fw.tilt_us) == (None, None)  # limp
    fw.loop(0, b'?\n')                                # asked: still detached, nothing moves
    assert fw.take_output() == b'D\n' and not fw.attached
    fw.loop(0, b'P2600 T400\n')                       # attached, clamped to the pulse range
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
    fw.loop(10_010, b'?\n')                           # asked: where they are, nothing moves
    assert fw.take_output() == b'P1700 T1500\n'
    assert fw.applied == [(2500, 500), (1700, 1500)]


def test_the_sketch_the_driver_and_the_readme_agree():
    assert BOARD_PULSE_US == (PULSE_MIN_US, PULSE_MAX_US) == (500, 2500)
    assert inspect.signature(SerialServoDriver).parameters['baud'].default == BAUD == 115200
    assert ServoMapping(-2.6, 2.6).to_us(0.0) == ServoMapping(-0.8, 0.8).to_us(0.0) == 1500
    with open(README, encoding='utf-8') as f:
        readme = f.read()
    for needed in (str(BAUD), 'arduino:avr:uno', 'arduino:avr:nano', 'arduino-cli compile',
                   'arduino-cli upload', 'common ground'):
        assert needed in readme


# ---- the host driver against the board -------------------------------------------------------

def test_goals_in_radians_arrive_as_pulse_widths_and_the_readback_says_so(board):
    driver = SerialServoDriver(board.port)
    assert connect(driver) is None and driver.detached      # limp until the first line
    assert board.pulses == (None, None)
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
    connect(driver)
    try:
        driver.write(2.6, 0.0)
        assert until(lambda: board.pulses == (2500, 1500))
        assert board.received[-1] == b'P2700 T1500'
        inside = 5.2 * 200 / 2400                      # the 200 us the board cut, in rad
        assert read_until(driver, (2.6 - inside, 0.0)) == pytest.approx((2.6 - inside, 0.0))
        assert MotionModel.of(driver).pan_limits == pytest.approx((-2.6 + inside, 2.6 - inside))
    finally:
        driver.close()


def _closed_loop(driver, goal, seconds, start=None):
    """The head controller drives the board at 50 Hz through the driver, its readback the
    measurement (as the node does), from `start` (where the board said its servos are).
    Returns the controller."""
    ctrl = HeadController(HeadConfig())
    ctrl.restart_from(start)
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


def test_the_readback_closes_the_loop_and_its_echo_feels_nothing(board):
    driver = SerialServoDriver(board.port)
    connect(driver)
    try:
        ctrl = _closed_loop(driver, (1.0, 0.3), 1.5)
        status = ctrl.status(1.5)
        assert status.measurement_fresh and status.goal_reached
        assert board.pulses == (1885, 1875)              # 1500 + 1.0 * 384.6, 1500 + 375
        assert ctrl.pop_pain() == []
    finally:
        driver.close()
    # A pan map past the board's range: the board holds the joint at 2500 us while the
    # command goes on to 2.6 rad. The echo says where the pulse is, not where the servo is
    # (a hand holding the horn gets the same echo): no feeling, so no movement pain, and the
    # driver's health says so.
    driver = SerialServoDriver(board.port, pan=ServoMapping(-2.6, 2.6, 300, 2700))
    reading = connect(driver)
    try:
        ctrl = _closed_loop(driver, (2.6, 0.0), 2.5, reading)
        assert board.pulses[0] == 2500
        assert ctrl.status(2.5).pan < 2.6 - 0.2             # far from its command, and ...
        assert [p for p in ctrl.pop_pain() if p.pain_type == PainType.MOVEMENT_ERROR] == []
        assert not driver.feedback and not ctrl.feels_movement
        health = DriverSupervisor(ctrl, driver, 10.0).health(2.5)
        assert 'no feedback: movement pain off' in health.message
        assert health.values['movement_pain'] == 'off'
    finally:
        driver.close()
    # A board whose servos report measured positions (a finite speed) feels.
    assert SerialServoDriver(board.port, max_velocity=2.0).feedback


@pytest.mark.parametrize('board', [{'dtr': True, 'hupcl': False}], indirect=True)
def test_a_malformed_reply_is_a_driver_error(board):
    clock = Clock()
    board.reply_with = b'OK\n'                         # other firmware on the board
    driver = SerialServoDriver(board.port, clock=clock)
    driver.open()
    # While the board may still be booting, a stray line is only noted, and the driver
    # still waits for an answer it understands ...
    assert until(lambda: driver.read() is None and driver.last_error == 'OK')
    assert driver.is_open and driver.awaiting_position
    with pytest.raises(DriverError, match='has not said yet where its servos are'):
        driver.write(0.1, 0.1)
    assert board.received == [b'?']                     # nothing but the query went out
    clock.t += 3.1                                      # ... after boot_s none came.
    with pytest.raises(DriverError, match='did not answer within 0.5 s'):
        driver.read()
    assert not driver.is_open
    # Once the board has spoken, another line is a malformed one at once.
    board.reply_with = None
    connect(driver)
    driver.write(0.52, -0.16)
    assert read_until(driver, (0.52, -0.16)) == pytest.approx((0.52, -0.16))
    board.reply_with = b'OK\n'
    driver.write(0.52, -0.16)
    with pytest.raises(DriverError, match=r"sent a malformed line 'OK' \(expected P<us> T<us> "
                                          r'or E<reason>: is the maxim_head_servo firmware'):
        until(lambda: driver.read() and False)
    assert not driver.is_open
    # Reopened, the real firmware answers again, with the pulses it holds.
    board.reply_with = None
    assert connect(driver) == pytest.approx((0.52, -0.16))
    driver.close()


def test_a_missing_reply_is_a_driver_error_after_the_boot_grace(board):
    clock = Clock()
    board.silent = True
    driver = SerialServoDriver(board.port, clock=clock, reply_timeout_s=0.5, boot_s=2.5)
    driver.open()
    assert until(lambda: board.received == [b'?'])     # it heard, it does not answer
    clock.t += 2.9                                      # booting (2.5 s) + 0.4 s
    assert driver.read() is None and driver.is_open
    clock.t += 0.2
    with pytest.raises(DriverError, match=r'did not answer within 0.5 s .*115200 baud'):
        driver.read()
    assert not driver.is_open
    # Once the board has spoken, there is no boot grace: half a second without an answer
    # is an error.
    board.silent = False
    assert connect(driver) is None                      # D: its servos are limp
    board.silent = True
    driver.write(0.3, 0.0)
    clock.t += 0.6
    with pytest.raises(DriverError, match='did not answer'):
        driver.read()


def test_a_board_restarted_mid_run_lets_go_and_the_next_line_attaches_at_the_command(board):
    driver = SerialServoDriver(board.port)
    connect(driver)
    try:
        driver.write(0.52, -0.16)
        assert read_until(driver, (0.52, -0.16))
        board.reset()                                   # a brown-out: limp, says D
        assert until(lambda: driver.read() is None and driver.detached)
        assert board.pulses == (None, None)
        driver.write(0.5, -0.16)
        assert until(lambda: board.pulses == (1692, 1300))
    finally:
        driver.close()


def test_a_board_at_another_baud_rate_hears_noise_and_the_driver_says_so(board):
    clock = Clock()
    driver = SerialServoDriver(board.port, 57600, clock=clock)
    driver.open()
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


# ---- no snap on connect --------------------------------------------------------------------

def test_only_the_first_open_after_plugging_in_resets_the_board():
    """The stand-in drives DTR as the kernel does: the first open asserts it (an Uno
    restarts), a close drops it while HUPCL is set. The driver clears HUPCL, so its later
    opens find DTR asserted and the board running, holding its pulses."""
    with SerialBoard() as board:                       # just plugged in: DTR down, HUPCL on
        driver = SerialServoDriver(board.port)
        assert connect(driver) is None and driver.detached
        assert (board.dtr_toggles, board.resets) == (1, 1)
        driver.write(0.52, -0.16)
        assert until(lambda: board.pulses == (1700, 1300))
        for _ in range(3):                             # reconnections, node restarts
            driver.close()
            assert connect(driver) == pytest.approx((0.52, -0.16), abs=0.002)
            assert not driver.detached
        driver.close()
        assert until(lambda: board.opened_by_others == 0)      # the close seen
        assert (board.dtr_toggles, board.resets) == (1, 1)
        assert board.pulses == (1700, 1300) and board.applied == [None, (1700, 1300)]
        # A program that sets HUPCL (`stty -F <port> hupcl`) drops DTR at its close, and the
        # next open restarts the board: the stand-in sees it.
        other = serial.Serial(board.port, BAUD)
        attrs = termios.tcgetattr(other.fileno())
        attrs[2] |= termios.HUPCL
        termios.tcsetattr(other.fileno(), termios.TCSANOW, attrs)
        other.close()
        assert until(lambda: board.dtr_toggles == 2 and board.opened_by_others == 0)
        assert connect(driver) is None and driver.detached
        assert (board.dtr_toggles, board.resets) == (3, 2) and board.pulses == (None, None)
        driver.close()


def test_no_reset_on_open_after_an_earlier_session():
    """A board left by an earlier session (DTR asserted, HUPCL off): opening it toggles
    nothing, and the servos stay where they are until the host moves them."""
    with SerialBoard(dtr=True, hupcl=False) as board:
        board.hold(2000, 1000)
        driver = SerialServoDriver(board.port)
        assert connect(driver) == pytest.approx((1.3, -0.4), abs=0.002)
        driver.close()
        assert (board.dtr_toggles, board.resets) == (0, 0)
        assert board.received == [b'?', b'?'] or board.received == [b'?']
        assert board.applied == [(2000, 1000)]


class SyntheticClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _steps_within(pulses, us_per_rad, vmax, amax, dt, at_rest_from=None):
    """Every step between consecutive pulses within the velocity limit (one us of rounding);
    from index `at_rest_from` on (a start at rest), also within the acceleration limit."""
    v_step, a_step = vmax * dt * us_per_rad + 1, amax * dt * dt * us_per_rad + 2
    steps = [b - a for a, b in zip(pulses, pulses[1:])]
    assert max(map(abs, steps)) <= v_step, (max(map(abs, steps)), v_step)
    if at_rest_from is not None:
        tail = [0] + steps[at_rest_from:]
        jerks = [abs(b - a) for a, b in zip(tail, tail[1:])]
        assert max(jerks) <= a_step, (max(jerks), a_step)


def test_after_a_start_and_a_reconnect_no_pulse_step_exceeds_the_rate_limit():
    """The head controller's supervised loop (as the node runs it) on the board: a start on
    a board that holds pulses from an earlier session; then the board stops answering, and
    while the driver is down a new goal moves the command on; then the reconnection. The
    pulses the board applies never step by more than max_velocity allows in a tick, and
    after each (re)connection they start at rest, within max_acceleration. The core's time
    is synthetic (20 ms a tick), the pty real."""
    config = HeadConfig()
    dt = 0.02
    clock = SyntheticClock()
    with SerialBoard(dtr=True, hupcl=False) as board:
        board.hold(2000, 1000)                          # pan 1.3, tilt -0.4 rad
        driver = SerialServoDriver(board.port, clock=clock)
        core = HeadController(config)
        supervisor = DriverSupervisor(core, driver, reconnect_max_s=1.0)
        supervisor.open(clock.t)
        core.set_goal(HeadGoalSpec(HeadMode.MOVE, 'first', pan=-1.0, tilt=0.6), clock.t)
        reconnected_at = down_since = None
        command_while_down = None
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline:
            before, applied_before = len(board.received), len(board.applied)
            step = supervisor.tick(dt, clock.t)
            if step.sent and not board.silent:     # the line taken, answered at once
                until(lambda: len(board.received) > before)
            if supervisor.ok and driver.awaiting_position:
                time.sleep(0.002)                   # the board answers the query: no tick
                continue
            status = step.status
            if down_since is None and status is not None and status.goal_reached \
                    and core.goal.goal_id == 'first':
                board.silent = True                 # the board stops answering ...
            if down_since is None and not supervisor.ok:
                down_since = clock.t                # ... the driver is down, the command
                core.set_goal(HeadGoalSpec(HeadMode.MOVE, 'second', pan=1.0, tilt=-0.5),
                              clock.t)              # moves on to a new goal ...
            if down_since is not None and reconnected_at is None:
                if not supervisor.ok:
                    command_while_down = core.command
                    if board.silent and clock.t >= down_since + 0.2:
                        board.silent = False        # ... and the board is back
                else:                               # this tick's line: the first after
                    reconnected_at = applied_before
            if reconnected_at is not None and status is not None and status.goal_reached:
                break
            clock.t += dt
        else:
            pytest.fail('the head never reached its goals')
        driver.close()
    assert reconnected_at is not None and not board.resets
    applied = board.applied
    held = applied[reconnected_at - 1]
    assert applied[0] == (2000, 1000)
    assert abs(held[0] - 1115) <= 8 and abs(held[1] - 2250) <= 25  # -1.0, 0.6 rad, +-0.02
    assert applied[-1] == (1885, 875)                                 # 1.0, -0.5 rad
    # The command had moved on while the board held: a restart from it, not from where
    # the board held the servos, would have been a jump.
    assert command_while_down[0] > -1.0 + 0.5
    pans, tilts = [p for p, _ in applied], [t for _, t in applied]
    for pulses, k in ((pans, 2000 / 5.2), (tilts, 2000 / 1.6)):
        _steps_within(pulses[:reconnected_at], k, config.max_velocity,
                      config.max_acceleration, dt, at_rest_from=0)
        _steps_within(pulses[reconnected_at - 1:], k, config.max_velocity,
                      config.max_acceleration, dt, at_rest_from=0)
