"""The Dynamixel driver against an emulated protocol-2.0 bus on a pty (test/helpers/
dynamixel_bus.py): the real dynamixel-sdk writes real packets to a real serial line, and the
emulated servos check their framing and CRC and answer with status packets.

The expected ticks are worked out by hand here (4096 ticks a turn, 2048 = 0 rad,
4096 / 2 pi = 651.8986 ticks per radian), not with the driver's own conversion: a swapped
joint, a unit or a limit that were wrong fail these tests.
"""

import math
import os
import subprocess
import sys
import time

import dynamixel_sdk
from helpers.dynamixel_bus import (build_packet, crc16, DynamixelBus, GOAL_POSITION,
                                   OPERATING_MODE, PROFILE_VELOCITY, stuff, unstuff)
import pytest

from maxim_perception.head.drivers import DriverError, HeadDriver
from maxim_perception.head.dynamixel import (describe_hardware_error, DynamixelDriver,
                                             DynamixelJoint, velocity_to_units)

PAN_ID, TILT_ID = 3, 7              # not 1 and 2: a driver that ignored the IDs would fail
RAD = 2 * math.pi / 4096            # one tick
PAN_LIMITS = (354, 3742)            # -2.6..2.6 rad: 2048 -/+ 1694.94, rounded inwards
TILT_LIMITS = (1527, 2569)          # -0.8..0.8 rad: 2048 -/+ 521.52, rounded inwards


class Clock:
    """The driver's monotonic clock, moved by the test (backoff without waiting)."""

    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


@pytest.fixture
def bus():
    b = DynamixelBus(ids=(PAN_ID, TILT_ID))
    yield b
    b.close()


def make_driver(port, clock=None, **kw):
    kw.setdefault('pan', DynamixelJoint(PAN_ID, -2.6, 2.6))
    kw.setdefault('tilt', DynamixelJoint(TILT_ID, -0.8, 0.8))
    return DynamixelDriver(port, 57600, clock=clock or Clock(), **kw)


def until(condition, timeout_s=10.0):
    """Poll condition() until it holds or the deadline passes; its last value."""
    deadline = time.monotonic() + timeout_s
    while not (ok := condition()) and time.monotonic() < deadline:
        time.sleep(0.005)
    return ok


# ---- the emulated bus speaks protocol 2.0 ------------------------------------------------

def test_crc_and_stuffing_are_the_protocols():
    # The ping of ID 1 in ROBOTIS' protocol 2.0 reference: FF FF FD 00 01 03 00 01 19 4E.
    ping = bytes([0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x03, 0x00, 0x01])
    assert crc16(ping) == 0x4E19
    assert build_packet(1, bytes([0x01])) == ping + bytes([0x19, 0x4E])
    sdk = dynamixel_sdk.PacketHandler(2.0)
    for data in (ping, bytes(range(256)), b'\xfd\xff' * 40):
        assert crc16(data) == sdk.updateCRC(0, list(data), len(data))
    body = bytes([0x03, 0x74, 0x00, 0xFF, 0xFF, 0xFD, 0x01])
    assert stuff(body) == bytes([0x03, 0x74, 0x00, 0xFF, 0xFF, 0xFD, 0xFD, 0x01])
    packet = build_packet(1, body)
    assert unstuff(packet, 7, len(packet) - 2) == body


def test_the_emulated_servo_refuses_what_a_real_one_refuses(bus):
    port = dynamixel_sdk.PortHandler(bus.port)
    assert port.setBaudRate(57600)
    ph = dynamixel_sdk.PacketHandler(2.0)
    try:
        model, result, error = ph.ping(port, PAN_ID)
        assert (model, result, error) == (1060, dynamixel_sdk.COMM_SUCCESS, 0)
        assert ph.ping(port, 9)[1] == dynamixel_sdk.COMM_RX_TIMEOUT     # nobody at ID 9
        assert ph.write1ByteTxRx(port, PAN_ID, 64, 1) == (dynamixel_sdk.COMM_SUCCESS, 0)
        # EEPROM (the position limits) with the torque on: access error, nothing written.
        assert ph.write4ByteTxRx(port, PAN_ID, 48, 3000)[1] == 7
        assert bus.limits(PAN_ID) == (0, 4095)
        # A goal beyond the servo's limit: data limit error, the goal stays.
        assert ph.write1ByteTxRx(port, PAN_ID, 64, 0)[1] == 0
        assert ph.write4ByteTxRx(port, PAN_ID, 48, 3000)[1] == 0
        assert ph.write4ByteTxRx(port, PAN_ID, GOAL_POSITION, 3500)[1] == 6
        assert bus.goal(PAN_ID) == 2048
        # Read-only fields stay read-only.
        assert ph.write2ByteTxRx(port, PAN_ID, 0, 1200)[1] == 7
        # A packet whose CRC is wrong: counted, answered with a CRC error status.
        bad = bytearray(build_packet(PAN_ID, bytes([0x01])))
        bad[-1] ^= 0xFF
        port.clearPort()
        port.writePort(bytes(bad))
        port.setPacketTimeout(14)
        status, result = ph.rxPacket(port, False)
        assert result == dynamixel_sdk.COMM_SUCCESS and status[8] == 3
        assert bus.crc_errors == 1
    finally:
        port.closePort()


# ---- conversions -----------------------------------------------------------------------

def test_joint_ticks_limits_zero_and_direction():
    pan = DynamixelJoint(1, -2.6, 2.6)
    assert pan.tick_limits == PAN_LIMITS
    assert pan.to_tick(0.0) == 2048
    assert pan.to_tick(0.5) == 2374 and pan.to_tick(-0.5) == 1722
    assert pan.to_tick(9.0) == 3742 and pan.to_tick(-9.0) == 354    # clamped
    assert pan.to_angle(2374) == pytest.approx(326 * RAD)
    # Mounted the other way round, with its zero at 1000 ticks.
    flipped = DynamixelJoint(5, -1.0, 1.0, zero_tick=1000, reverse=True)
    assert flipped.tick_limits == (349, 1651)          # 1000 -/+ 651.90, rounded inwards
    assert flipped.to_tick(0.5) == 674 and flipped.to_tick(-1.0) == 1651
    assert flipped.to_angle(674) == pytest.approx(0.5, abs=RAD)
    with pytest.raises(ValueError, match='outside the servo'):
        DynamixelJoint(1, -3.5, 3.5)                   # more than one turn
    with pytest.raises(ValueError, match='angle_min must be < angle_max'):
        DynamixelJoint(1, 0.5, -0.5)
    with pytest.raises(ValueError, match='0..252'):
        DynamixelJoint(254, -1.0, 1.0)
    assert velocity_to_units(3.0) == 125                # 28.65 rev/min / 0.229
    assert describe_hardware_error(0x24) == 'overheating, overload (0x24)'


def test_bad_configuration_is_refused_before_any_bus():
    with pytest.raises(ValueError, match='different IDs'):
        DynamixelDriver('/dev/null', pan=DynamixelJoint(1, -1, 1), tilt=DynamixelJoint(1, -1, 1))
    with pytest.raises(ValueError, match='no Dynamixel X-series baud rate'):
        DynamixelDriver('/dev/null', 12345)
    with pytest.raises(ValueError, match='needs a port'):
        DynamixelDriver('')
    with pytest.raises(ValueError, match='profile velocity'):
        DynamixelDriver('/dev/null', profile_velocity=0.0)


# ---- the driver on the emulated bus ------------------------------------------------------

def test_open_sets_position_mode_limits_profile_and_torque_and_holds(bus):
    for servo_id, present in ((PAN_ID, 2100), (TILT_ID, 3000)):
        bus.poke(servo_id, OPERATING_MODE, 1, 1)        # velocity mode, from an earlier use
        bus.poke(servo_id, GOAL_POSITION, 4, 500)       # a goal left over
        bus.poke(servo_id, 132, 4, present)
    driver = make_driver(bus.port)
    assert isinstance(driver, HeadDriver)
    driver.open()
    try:
        for servo_id, limits in ((PAN_ID, PAN_LIMITS), (TILT_ID, TILT_LIMITS)):
            assert bus.value(servo_id, OPERATING_MODE, 1) == 3
            assert bus.limits(servo_id) == limits
            assert bus.value(servo_id, PROFILE_VELOCITY, 4) == 125      # 3 rad/s
            assert bus.torque(servo_id) == 1
        # It holds where it stood (inside the limits), not at the old goal.
        assert bus.goal(PAN_ID) == 2100
        assert bus.goal(TILT_ID) == TILT_LIMITS[1]        # 3000 is beyond tilt's limit
        assert driver.models == {'pan': 'XL430-W250', 'tilt': 'XL430-W250'}
        assert not [r for s in bus.servos.values() for r in s.rejected]
        assert bus.crc_errors == 0 and bus.framing_errors == 0
    finally:
        driver.close()


def test_goals_in_radians_arrive_as_ticks_on_the_right_ids_clamped_to_the_limits(bus):
    driver = make_driver(bus.port)
    driver.open()
    try:
        driver.write(0.5, -0.3)     # 0.5 rad = 325.95 ticks, -0.3 rad = -195.57 ticks
        assert until(lambda: bus.goal(PAN_ID) == 2374 and bus.goal(TILT_ID) == 1852)
        driver.write(9.0, -9.0)
        assert until(lambda: (bus.goal(PAN_ID), bus.goal(TILT_ID)) == (3742, 1527))
        driver.write(-9.0, 9.0)
        assert until(lambda: (bus.goal(PAN_ID), bus.goal(TILT_ID)) == (354, 2569))
        assert not [r for s in bus.servos.values() for r in s.rejected]  # none out of range
        with pytest.raises(ValueError, match='finite'):
            driver.write(math.nan, 0.0)
    finally:
        driver.close()


def test_present_position_is_read_back_in_radians_as_the_servos_move(bus):
    driver = make_driver(bus.port, profile_velocity=1.0)   # 42 units: about 657 ticks/s
    driver.open()
    try:
        assert driver.read() == (0.0, 0.0)
        driver.write(0.5, -0.3)
        seen = []

        def arrived():
            seen.append(driver.read())
            return seen[-1] == pytest.approx((326 * RAD, -196 * RAD), abs=1e-12)

        assert until(arrived)
        pans = [p for p, _ in seen]
        tilts = [t for _, t in seen]
        assert pans == sorted(pans) and tilts == sorted(tilts, reverse=True)  # toward the goal
        driver.write(-0.25, 0.125)
        assert until(lambda: (bus.goal(PAN_ID), bus.goal(TILT_ID)) == (1885, 2129))
        bus.settle()
        assert driver.read() == pytest.approx((-163 * RAD, 81 * RAD), abs=1e-12)
    finally:
        driver.close()


def test_close_turns_the_torque_off_and_is_safe_twice(bus):
    driver = make_driver(bus.port)
    driver.open()
    assert bus.torque(PAN_ID) == 1 and bus.torque(TILT_ID) == 1
    driver.close()
    assert bus.torque(PAN_ID) == 0 and bus.torque(TILT_ID) == 0
    driver.close()
    assert not driver.is_open
    with pytest.raises(DriverError, match='not open'):
        driver.write(0.0, 0.0)
    with pytest.raises(DriverError, match='not open'):
        driver.read()


def test_close_after_a_bus_fault_turns_off_the_servo_that_still_answers(bus):
    """A fault drops the port while the servo that still answers holds its torque: close()
    opens the port once more for it, names the one that does not answer, and a second
    close() does not go back to the bus."""
    driver = make_driver(bus.port)
    driver.open()
    bus.silence(PAN_ID)
    with pytest.raises(DriverError, match=r'pan servo \(ID 3\) does not answer'):
        driver.read()
    assert not driver.is_open and bus.torque(TILT_ID) == 1      # held while in fault
    driver.close()
    assert bus.torque(TILT_ID) == 0 and not driver.is_open
    assert len(driver.release_failures) == 1
    assert driver.release_failures[0].startswith('pan servo (ID 3): ')
    assert 'torque off failed: pan servo (ID 3)' in driver.last_error
    assert driver.retry_in_s is None                  # no reconnection is wanted
    sent = len(bus.packets)
    driver.close()
    assert len(bus.packets) == sent
    bus.silence(PAN_ID, False)
    assert bus.torque(PAN_ID) == 1     # the silent one never heard it: only power lets it go


def test_close_turns_off_a_servo_that_faulted_with_a_hardware_error_and_the_other(bus):
    driver = make_driver(bus.port)
    driver.open()
    bus.set_hardware_error(PAN_ID, 0x20)               # overload: the servo's own shutdown
    with pytest.raises(DriverError, match='hardware error'):
        driver.read()
    assert bus.torque(TILT_ID) == 1
    driver.close()
    assert (bus.torque(PAN_ID), bus.torque(TILT_ID)) == (0, 0)
    assert driver.release_failures == []


def test_torque_off_reaches_the_servos_whatever_the_driver_knows(bus):
    """torque_off() (./maxim calibrate on its way out) opens the port even when the driver
    thinks nothing is on, turns off what answers and names what does not."""
    bus.poke(TILT_ID, 64, 1, 1)                       # torque on, left by another program
    failed = make_driver(bus.port).torque_off()
    assert bus.torque(TILT_ID) == 0 and failed == []
    gone = make_driver('/dev/maxim-no-such-dynamixel').torque_off()
    assert len(gone) == 1 and gone[0].startswith(
        'Dynamixel bus on /dev/maxim-no-such-dynamixel at 57600 baud: ')


def test_a_driver_that_never_turned_the_torque_on_does_not_reopen_at_close(bus):
    driver = make_driver(bus.port, tilt=DynamixelJoint(9, -0.8, 0.8))
    with pytest.raises(DriverError, match='no Dynamixel answers as tilt'):
        driver.open()
    sent = len(bus.packets)
    driver.close()
    assert len(bus.packets) == sent


CRASH = '''
import sys
from maxim_perception.head.dynamixel import DynamixelDriver, DynamixelJoint
driver = DynamixelDriver(sys.argv[1], 57600, pan=DynamixelJoint({pan}, -2.6, 2.6),
                         tilt=DynamixelJoint({tilt}, -0.8, 0.8))
driver.open()
print('open', flush=True)
sys.stdin.readline()           # the test silences a servo, or not
if sys.argv[2] == 'fault':
    try:
        driver.read()
    except Exception as exc:
        print('fault', exc, flush=True)
raise RuntimeError('a bug nobody caught')
'''


@pytest.mark.parametrize('fault', [False, True])
def test_a_process_that_dies_of_an_exception_leaves_the_torque_off(bus, fault):
    """No close(): the process ends on an uncaught exception, and the exit handler turns the
    torque off, after a bus fault too (the port reopened for the servo that answers)."""
    script = CRASH.format(pan=PAN_ID, tilt=TILT_ID)
    proc = subprocess.Popen([sys.executable, '-c', script, bus.port,
                             'fault' if fault else 'none'],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == 'open'
        assert (bus.torque(PAN_ID), bus.torque(TILT_ID)) == (1, 1)
        if fault:
            bus.silence(PAN_ID)
        proc.stdin.write('go\n')
        proc.stdin.flush()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 1 and 'RuntimeError: a bug nobody caught' in err
    assert ('fault' in out) == fault
    assert bus.torque(TILT_ID) == 0
    if not fault:
        assert bus.torque(PAN_ID) == 0


def test_a_wrong_id_is_a_clear_error_at_start_and_changes_nothing(bus):
    driver = make_driver(bus.port, tilt=DynamixelJoint(9, -0.8, 0.8))
    with pytest.raises(DriverError) as err:
        driver.open()
    message = str(err.value)
    assert 'no Dynamixel answers as tilt (ID 9)' in message
    assert f'servos that do answer: ID {PAN_ID} (XL430-W250), ID {TILT_ID} (XL430-W250)' in message
    assert 'at 57600 baud' in message
    assert not driver.is_open
    assert bus.torque(PAN_ID) == 0 and set(bus.instructions(PAN_ID)) == {0x01}   # pings only


def test_a_wrong_baud_rate_is_a_clear_error(bus):
    driver = DynamixelDriver(bus.port, 1000000, pan=DynamixelJoint(PAN_ID, -1, 1),
                             tilt=DynamixelJoint(TILT_ID, -0.5, 0.5), clock=Clock())
    with pytest.raises(DriverError, match=r'no Dynamixel answers as pan \(ID 3\) and tilt '
                       r'\(ID 7\) on .* at 1000000 baud; servos that do answer: none'):
        driver.open()
    assert bus.noise_bytes > 0 and bus.packets == []


def test_a_port_that_does_not_exist_is_a_clear_error():
    driver = make_driver('/dev/maxim-no-such-dynamixel')
    with pytest.raises(DriverError, match='cannot open Dynamixel bus on '
                                          '/dev/maxim-no-such-dynamixel'):
        driver.open()
    assert not driver.is_open
    driver.close()


def test_a_servo_that_is_no_x_series_is_refused():
    with DynamixelBus(ids=(PAN_ID, TILT_ID), model=350) as xl320:   # XL-320: another table
        driver = make_driver(xl320.port)
        with pytest.raises(DriverError, match=r'model number 350, not an X-series servo'):
            driver.open()
        assert xl320.torque(PAN_ID) == 0


def test_a_servo_that_stops_answering_is_reported_and_retried_with_bounded_backoff(bus):
    clock = Clock()
    driver = make_driver(bus.port, clock, reconnect_min_s=0.5, reconnect_max_s=2.0)
    driver.open()
    driver.write(0.2, 0.1)
    assert until(lambda: bus.goal(TILT_ID) == 2048 + 65)
    bus.silence(PAN_ID)
    with pytest.raises(DriverError, match=r'pan servo \(ID 3\) does not answer.*reconnecting '
                                          r'in 0\.5 s'):
        driver.read()
    assert not driver.is_open
    # Within the backoff: a clear error at once, and nothing goes on the bus.
    sent = len(bus.packets)
    for call in (driver.read, lambda: driver.write(1.0, 0.5)):
        with pytest.raises(DriverError, match=r'does not answer.*reconnecting in 0\.5 s'):
            call()
    assert len(bus.packets) == sent
    assert bus.goal(TILT_ID) == 2048 + 65 and bus.torque(TILT_ID) == 1   # tilt holds
    # Each failed attempt doubles the wait, up to reconnect_max_s.
    waits = []
    for _ in range(4):
        clock.t += driver.retry_in_s
        with pytest.raises(DriverError, match=r'no Dynamixel answers as pan \(ID 3\)') as err:
            driver.read()
        waits.append(float(err.value.args[0].rsplit('reconnecting in ', 1)[1].split()[0]))
        assert driver.retry_in_s == waits[-1]
    assert waits == [1.0, 2.0, 2.0, 2.0]
    assert driver.attempts == 5
    # The servo answers again: the next attempt reconnects and the head obeys.
    bus.silence(PAN_ID, False)
    clock.t += driver.retry_in_s
    driver.write(-0.2, 0.0)
    assert driver.is_open and driver.reconnects == 1
    assert until(lambda: (bus.goal(PAN_ID), bus.goal(TILT_ID)) == (2048 - 130, 2048))
    assert driver.retry_in_s is None
    driver.close()


def test_a_port_that_goes_away_is_reconnected_when_it_comes_back(tmp_path):
    clock = Clock()
    with DynamixelBus(ids=(PAN_ID, TILT_ID), link=str(tmp_path / 'usb-U2D2')) as dxl:
        driver = make_driver(dxl.port, clock)
        driver.open()
        driver.write(0.3, 0.0)
        assert until(lambda: dxl.goal(PAN_ID) == 2048 + 196)
        dxl.settle()
        dxl.unplug()
        with pytest.raises(DriverError, match='Dynamixel bus on .*usb-U2D2'):
            for _ in range(20):        # the kernel may take a write before it fails
                driver.write(0.3, 0.0)
                driver.read()
        assert not driver.is_open and not os.path.exists(dxl.port)
        clock.t += driver.retry_in_s
        with pytest.raises(DriverError, match='cannot open Dynamixel bus on .*usb-U2D2'):
            driver.read()
        dxl.replug()
        clock.t += driver.retry_in_s
        assert driver.read() == pytest.approx((196 * RAD, 0.0), abs=1e-12)
        assert driver.reconnects == 1 and dxl.torque(PAN_ID) == 1
        assert dxl.limits(TILT_ID) == TILT_LIMITS
        driver.close()
        assert dxl.torque(PAN_ID) == 0


def test_a_hardware_error_is_read_and_reported(bus):
    clock = Clock()
    driver = make_driver(bus.port, clock)
    driver.open()
    driver.write(0.1, 0.1)
    assert driver.read() is not None
    bus.set_hardware_error(TILT_ID, 0x20)
    with pytest.raises(DriverError, match=r'tilt servo \(ID 7\) reports a hardware error: '
                                          r'overload \(0x20\)'):
        driver.read()
    assert driver.hardware_errors == {'tilt': 0x20}
    assert not driver.is_open
    # Reconnecting finds it still there and says so; cleared (power-cycled), it goes on.
    clock.t += driver.retry_in_s
    with pytest.raises(DriverError, match=r'tilt servo \(ID 7\) reports a hardware error'):
        driver.read()
    bus.set_hardware_error(TILT_ID, 0)
    clock.t += driver.retry_in_s
    assert driver.read() is not None
    assert driver.hardware_errors == {} and bus.torque(TILT_ID) == 1
    driver.close()


def test_a_hardware_error_at_start_refuses_to_turn_the_torque_on(bus):
    bus.set_hardware_error(PAN_ID, 0x05)
    driver = make_driver(bus.port)
    with pytest.raises(DriverError, match=r'pan servo \(ID 3\) reports a hardware error: '
                                          r'input voltage error, overheating \(0x05\)'):
        driver.open()
    assert bus.torque(PAN_ID) == 0 and bus.torque(TILT_ID) == 0
