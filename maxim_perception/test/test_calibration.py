"""The calibration core (maxim_perception/head/calibration.py): the Calibrator's state machine,
the drivers' frames, the key decoder and script, and the params and URDF writers. No
terminal, no clock, no hardware: `./maxim calibrate` itself is tested in
maxim_bringup/test/test_calibrate.py.

Expected pulses and ticks are worked out by hand: the default serial map is pan -2.6..2.6 rad
onto 500..2500 us (384.615 us/rad, 1500 us at 0 rad), tilt -0.8..0.8 rad onto 500..2500 us
(1250 us/rad); a Dynamixel turn is 4096 ticks (651.899 ticks/rad), 2048 at 0 rad.
"""

import math
import os

import pytest
import yaml

from maxim_perception.head import calibration as cal
from maxim_perception.head.calibration import (Calibrator, CalibrationError, DryRunAxis,
                                               DynamixelAxis, KeyDecoder, SerialAxis, State)
from maxim_perception.head.drivers import DryRunDriver, SerialServoDriver
from maxim_perception.head.dynamixel import DynamixelDriver

URDF = {'head_pan_joint': (-2.6, 2.6), 'head_tilt_joint': (-0.8, 0.8)}
STEP = math.radians(2.0)
WS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROBOT_YAML = os.path.join(WS, 'maxim_bringup', 'config', 'robot.yaml')
HEAD_URDF = os.path.join(WS, 'maxim_bringup', 'urdf', 'maxim_head.urdf')


def dry(start=(0.0, 0.0), urdf=URDF, **kw):
    axes = (DryRunAxis((-2.6, 2.6)), DryRunAxis((-0.8, 0.8)))
    return Calibrator(axes, urdf, start, 'dry_run', **kw)


def settle(c, seconds=20.0, dt=0.02, measured=True):
    """Ticks until both joints are at their targets; each command read back as reached."""
    for _ in range(int(seconds / dt)):
        pan, tilt = c.tick(dt)
        if measured:
            c.feed(pan, tilt)
        if c.settled():
            return
    raise AssertionError('the calibrator never settled')


def press(c, *keys, measured=True):
    out = []
    for k in keys:
        out += c.key(k)
        settle(c, measured=measured)
    return out


# ---- jogging ----------------------------------------------------------------------------

def test_a_jog_ramps_at_the_speed_and_any_other_key_stops_the_head():
    c = dry(speed=0.5)
    c.key('a')                                   # pan left: positive
    assert c.tick(0.02) == pytest.approx((0.01, 0.0))      # 0.5 rad/s * 0.02 s
    assert c.tick(0.02) == pytest.approx((0.02, 0.0))
    assert c.key('x') == ['stopped']             # no command: the head stops where it is
    assert [c.tick(0.02) for _ in range(5)] == [pytest.approx((0.02, 0.0))] * 5
    assert c.settled()
    c.key('down')                                # tilt down: positive
    settle(c)
    assert c.command == pytest.approx((0.02, STEP))
    for key, want in (('d', (0.02 - STEP, STEP)), ('w', (0.02 - STEP, 0.0)),
                      ('right', (0.02 - 2 * STEP, 0.0)), ('up', (0.02 - 2 * STEP, -STEP)),
                      ('left', (0.02 - STEP, -STEP)), ('s', (0.02 - STEP, 0.0))):
        press(c, key)
        assert c.command == pytest.approx(want), key


def test_a_held_key_leads_the_command_by_two_steps_at_most():
    c = dry()
    for _ in range(30):                         # key repeat, faster than the head moves
        c.key('a')
    c.tick(0.02)
    c.key('space')                              # let go: stop
    settle(c)
    assert c.command[0] <= 2 * STEP + 0.3 * 0.02 + 1e-9


def test_jogs_stop_at_the_urdf_limit_unless_allowed():
    urdf = {'head_pan_joint': (-0.1, 0.1), 'head_tilt_joint': (-0.8, 0.8)}
    c = dry(urdf=urdf)
    out = press(c, *['a'] * 5)
    assert c.command[0] == pytest.approx(0.1)
    assert any("at the URDF's upper limit" in m and '--allow-beyond-urdf' in m for m in out)
    wide = dry(urdf=urdf, allow_beyond_urdf=True)
    press(wide, *['a'] * 5)
    assert wide.command[0] == pytest.approx(5 * STEP)


def test_the_step_changes_within_its_bounds():
    c = dry()
    assert c.key('+') == ['step 4.00 deg']
    for _ in range(5):
        c.key('+')
    assert c.step == pytest.approx(cal.MAX_STEP)
    for _ in range(10):
        c.key('-')
    assert c.step == pytest.approx(cal.MIN_STEP)
    with pytest.raises(CalibrationError, match='step'):
        dry(step=math.radians(30))
    with pytest.raises(CalibrationError, match='speed'):
        dry(speed=2.0)


def test_a_joint_held_back_far_from_its_command_is_stopped_where_it_is():
    c = dry()
    for _ in range(5):                        # 10 deg, the servo reading 0 all along
        c.key('a')
        for _ in range(10):
            c.tick(0.02)
        if c.joints[0].command < 0.15:
            assert c.feed(0.0, 0.0) == []     # up to 0.15 rad behind: on its way
    assert c.command[0] == pytest.approx(5 * STEP)
    out = c.feed(0.01, 0.0)                   # 0.16 behind: blocked
    assert out == ['pan is held back +9.4 deg from its command (blocked?): stopped where it '
                   'is']
    assert c.command == (0.01, 0.0) and c.settled()


# ---- marks ------------------------------------------------------------------------------

def test_zero_and_limits_are_marked_relative_to_the_new_zero():
    c = dry()
    press(c, 'a', 'a', 'a', 'a', 'a')         # 10 deg left
    assert c.key('z')[0].startswith('pan zero marked +0.175 rad')
    press(c, *['a'] * 20)
    assert 'pan upper limit marked +0.698 rad (+40.0 deg)' in c.key(']')[0]
    press(c, *['d'] * 30)
    assert 'pan lower limit marked -0.349 rad (-20.0 deg)' in c.key('[')[0]
    assert c.key('tab') == ['jogging tilt']
    press(c, 's', 's')
    c.key(']')
    press(c, 'w', 'w', 'w')
    c.key('[')
    out = c.key('enter')
    assert out[0] == 'saved' and c.state is State.SAVED
    r = c.result
    assert r.params == {}                  # the limits live in the URDF alone
    assert r.urdf_limits() == {'head_pan_joint': pytest.approx((-0.3491, 0.6981)),
                               'head_tilt_joint': pytest.approx((-0.0349, 0.0698))}
    pan, tilt = r.joints
    assert pan.zero == pytest.approx(math.radians(10)) and tilt.zero == 0.0
    assert pan.marked == ('zero', 'lower', 'upper') and tilt.marked == ('lower', 'upper')
    assert r.urdf_limits() == {'head_pan_joint': (pan.lower, pan.upper),
                               'head_tilt_joint': (tilt.lower, tilt.upper)}
    assert 'kept from the URDF: zero' in r.summary()[1]


def test_a_mark_stops_the_head_and_needs_the_joint_where_it_was_told():
    c = dry()
    c.key('a')
    c.tick(0.02)
    assert c.key('z') == ['pan zero marked +0.006 rad (+0.3 deg) from the old zero']
    assert c.settled()                        # stopped where the mark was made
    c = dry()
    press(c, 'a')
    c.feed(STEP - 0.05, 0.0)                 # the servo did not get there
    out = c.key(']')
    assert 'upper limit not marked: pan has not reached its command' in out[0]
    assert 'upper' not in c.joints[0].marked


def test_a_limit_beyond_the_urdf_is_refused_with_a_clear_message():
    c = dry(start=(2.8, 0.0))                 # a servo found past the URDF's 2.6
    out = c.key(']')
    assert out == ['upper limit refused: pan upper limit +2.800 rad (+160.4 deg) is beyond '
                   "the URDF's +2.600 rad (+149.0 deg) (head_pan_joint): stay inside it, or "
                   'run with --allow-beyond-urdf (the calibrated URDF then gets the wider '
                   'limit)']
    press(c, 'a')                             # never further out ...
    assert c.command[0] == pytest.approx(2.8)
    press(c, 'd')                             # ... but back towards the range
    assert c.command[0] == pytest.approx(2.8 - STEP)
    wide = dry(start=(2.8, 0.0), allow_beyond_urdf=True)
    assert 'marked +2.800 rad' in wide.key(']')[0]
    wide.key('enter')
    assert wide.result.urdf_limits()['head_pan_joint'][1] == pytest.approx(2.8)


def test_a_new_zero_clears_a_limit_it_puts_beyond_the_urdf_and_save_says_what_to_mark():
    urdf = {'head_pan_joint': (-0.5, 0.5), 'head_tilt_joint': (-0.8, 0.8)}
    c = dry(urdf=urdf)
    press(c, *['a'] * 20)                     # stops at the URDF's 0.5
    c.key(']')
    press(c, *['d'] * 20)                     # to -0.2 (two steps short of the lower limit)
    out = c.key('z')
    assert "pan upper limit +0.698 rad (+40.0 deg) is beyond the URDF's +0.500 rad" in out[1]
    assert out[1].endswith('from the new zero: cleared, mark it again')
    assert 'upper' not in c.joints[0].marked
    out = c.key('enter')                      # the URDF's upper limit, 2.6: 2.8 now
    assert c.state is State.RUNNING
    assert "not saved: pan upper limit +2.798 rad (+160.3 deg) is beyond the URDF's +0.500 " \
           'rad (+28.6 deg) (head_pan_joint) (the lower and upper limits of the URDF: ' \
           'mark them)' in out, out
    assert c.key('q') == ['quit: nothing saved'] and c.state is State.QUIT
    assert c.result is None


def test_limits_must_be_ordered_around_the_zero():
    c = dry()
    press(c, 'a')
    c.key('[')
    press(c, 'd', 'd')
    out = c.key(']')
    assert out[0].startswith('upper limit refused: pan -0.035 rad (-2.0 deg) is not above '
                             'its lower limit +0.035 rad')
    press(c, 'a', 'a', 'a')
    c.key(']')
    out = c.key('enter')                       # zero (0) lies below the lower limit (2 deg)
    assert out[0].startswith('not saved: pan: the zero lies outside its limits')


@pytest.mark.parametrize('key', ['q', 'Q', 'esc', 'ctrl-c', 'eof'])
def test_every_way_out_but_enter_saves_nothing(key):
    c = dry()
    press(c, 'a')
    c.key('z')
    assert c.key(key) == ['quit: nothing saved']
    assert c.state is State.QUIT and c.result is None
    assert c.key('enter') == [] and c.state is State.QUIT


# ---- the drivers' frames ----------------------------------------------------------------

def serial_values(**kw):
    values = {'driver': 'serial', 'urdf': '', 'serial.port': '/dev/ttyUSB0',
              'serial.baud': 115200,
              'serial.readback': True, 'serial.pan_us_min': 500, 'serial.pan_us_max': 2500,
              'serial.tilt_us_min': 500, 'serial.tilt_us_max': 2500}
    values.update(kw)
    return values


def test_the_serial_frame_is_the_boards_whole_pulse_range_and_marks_become_pulses():
    driver, (pan, tilt) = cal.calibration_driver(serial_values())
    assert isinstance(driver, SerialServoDriver) and driver.port == '/dev/ttyUSB0'
    assert pan.range == pytest.approx((-2.6, 2.6)) and tilt.range == pytest.approx((-0.8, 0.8))
    assert driver.encode(0.0, 0.0) == b'P1500 T1500\n'
    c = Calibrator((pan, tilt), URDF, (0.0, 0.0), 'serial', step=math.radians(5))
    press(c, 'a', 'a', 'a')
    c.key('z')                 # 3 steps of 5 deg, each to a whole pulse: 1534, 1568, 1602 us
    assert c.joints[0].zero == pytest.approx((1602 - 1500) / 384.615, abs=1e-5)
    press(c, *['a'] * 4)
    c.key(']')
    press(c, *['d'] * 8)
    c.key('[')
    c.key('enter')
    p = c.result.params
    assert (p['serial.pan_us_min'], p['serial.pan_us_max']) == (1466, 1738)
    assert (p['serial.tilt_us_min'], p['serial.tilt_us_max']) == (500, 2500)   # kept
    # The new map puts 0 rad at the zero's pulse and keeps 384.6 us/rad.
    lower, upper = c.result.urdf_limits()['head_pan_joint']
    k = (p['serial.pan_us_max'] - p['serial.pan_us_min']) / (upper - lower)
    assert k == pytest.approx(384.615, rel=1e-3)
    assert p['serial.pan_us_min'] - k * lower == pytest.approx(1602, abs=0.5)


def test_a_reversed_servo_and_the_servo_travel():
    driver, (pan, _) = cal.calibration_driver(serial_values(**{
        'serial.pan_us_min': 2500, 'serial.pan_us_max': 500}))
    assert driver.encode(0.5, 0.0).startswith(b'P1308 ')    # 1500 - 0.5 * 384.6
    assert pan.params('pan', 0.0, -1.0, 1.0) == {'serial.pan_us_min': 1885,
                                                 'serial.pan_us_max': 1115}
    _, (pan, tilt) = cal.calibration_driver(serial_values(), servo_travel_deg=180.0)
    assert pan.range == pytest.approx((-math.pi / 2, math.pi / 2))
    assert tilt.range == pytest.approx((-math.pi / 2, math.pi / 2))
    # The params file's limits, at their pulses (500, 2500), are the servo's ends now.
    assert pan.initial == pytest.approx((-math.pi / 2, math.pi / 2))
    assert pan.pulse(math.radians(45)) == 2000


def test_the_dynamixel_frame_is_one_turn_and_the_zero_becomes_ticks():
    values = {'driver': 'dynamixel', 'dynamixel.port': '/dev/ttyUSB0', 'dynamixel.baud': 57600,
              'dynamixel.pan_id': 3, 'dynamixel.tilt_id': 7, 'dynamixel.pan_zero': 2048,
              'dynamixel.tilt_zero': 1000, 'dynamixel.pan_reverse': False,
              'dynamixel.tilt_reverse': True}
    driver, (pan, tilt) = cal.calibration_driver(values, speed=0.3)
    assert isinstance(driver, DynamixelDriver)
    assert (driver.pan.servo_id, driver.tilt.servo_id) == (3, 7)
    assert driver.pan.tick_limits == (0, 4095) and driver.tilt.tick_limits == (0, 4095)
    assert driver.max_velocity == pytest.approx(0.3, rel=0.05)      # its own speed limit
    assert pan.tick(0.5) == 2048 + 326 and tilt.tick(0.5) == 1000 - 326
    assert pan.params('pan', pan.quantize(0.1), -1.0, 1.0) == {'dynamixel.pan_zero': 2113}
    assert tilt.range == pytest.approx((-3095 * 2 * math.pi / 4096, 1000 * 2 * math.pi / 4096))


def test_only_drivers_that_speak_to_the_servos_can_be_calibrated():
    driver, axes = cal.calibration_driver(serial_values(driver='dry_run'))
    assert isinstance(driver, DryRunDriver) and axes[0].initial == (-2.6, 2.6)
    with pytest.raises(CalibrationError, match='ros2_control: calibrate speaks to the servos '
                       "itself.*hardware interface's own tools"):
        cal.calibration_driver(serial_values(driver='ros2_control'))
    with pytest.raises(CalibrationError, match="driver 'sim' cannot be calibrated"):
        cal.calibration_driver(serial_values(driver='sim'))
    with pytest.raises(CalibrationError, match='speed must be'):
        cal.calibration_driver(serial_values(), speed=0.0)
    with pytest.raises(CalibrationError, match='serial hobby-servo board only'):
        cal.calibration_driver(serial_values(driver='dry_run'), servo_travel_deg=180.0)
    with pytest.raises(CalibrationError, match='cannot read the URDF /no/such.urdf'):
        cal.calibration_driver(serial_values(urdf='/no/such.urdf'))


def test_a_serial_mark_never_rounds_past_the_urdf():
    axes = (SerialAxis(384.615, 1500.0, (500, 2500)), SerialAxis(1250.0, 1500.0, (500, 2500)))
    urdf = {'head_pan_joint': (-0.5, 0.5013), 'head_tilt_joint': (-0.8, 0.8)}
    c = Calibrator(axes, urdf, (0.0, 0.0), 'serial', step=math.radians(10))
    press(c, 'a', 'a', 'a', 'a')
    assert c.command[0] <= 0.5013                 # 1692.8 us rounds to 1693: past it; 1692
    assert axes[0].pulse(c.command[0]) == 1692
    assert 'marked' in c.key(']')[0]


def test_axes_refuse_maps_that_are_no_servo():
    with pytest.raises(CalibrationError, match='no servo'):
        SerialAxis(0.0, 1500.0, (500, 2500))
    with pytest.raises(CalibrationError, match='outside 0..4095'):
        DynamixelAxis(5000, False, (-1.0, 1.0))


# ---- keys -------------------------------------------------------------------------------

def test_the_terminals_bytes_become_keys():
    d = KeyDecoder()
    assert d.feed(b'\x1b[A\x1b[B\x1b[C\x1b[Dw\t\r\n []zq\x03') == [
        'up', 'down', 'right', 'left', 'w', 'tab', 'enter', 'enter', 'space', '[', ']', 'z',
        'q', 'ctrl-c']
    assert d.feed(b'\x1bOD') == ['left']             # application cursor mode
    assert d.feed(b'\x1b') == [] and d.pending      # Esc, or an arrow's start?
    assert d.feed(b'[') == [] and d.pending
    assert d.feed(b'C') == ['right'] and not d.pending
    assert d.feed(b'\x1b') == [] and d.flush() == ['esc']
    assert d.feed(b'\x1bx') == ['esc', 'x']
    assert d.feed(b'\x1b[1;5C\x1b[5~\x01') == ['unknown', 'unknown', 'unknown']


def test_a_key_script():
    assert cal.parse_key_script('a*3 left  # a comment: q\n  [ ] Z\nENTER tab*2\n') == [
        'a', 'a', 'a', 'left', '[', ']', 'Z', 'enter', 'tab', 'tab']
    assert cal.parse_key_script('**2 *') == ['*', '*', '*']
    for bad, match in (('jump', "unknown key 'jump'"), ('a*0', 'N from 1 to 1000'),
                       ('a*x', 'N from 1 to 1000')):
        with pytest.raises(ValueError, match=match):
            cal.parse_key_script(bad)


# ---- the writers ------------------------------------------------------------------------

def flat(text):
    return {key: cal._flat_params({0: body})[0]
            for key, body in (yaml.safe_load(text) or {}).items()}


def test_the_params_file_keeps_its_comments_and_gets_the_values():
    with open(ROBOT_YAML, encoding='utf-8') as f:
        text = f.read()
    values = {'driver': 'dynamixel', 'urdf': '/home/me/head.urdf', 'dynamixel.pan_zero': 2100,
              'dynamixel.tilt_zero': 1990, 'serial.pan_us_min': 812}
    out = cal.calibrated_params_text(text, values, ['first', 'second'])
    lines = out.splitlines()
    assert lines[:2] == ['# maxim calibrate: first', '# maxim calibrate: second']
    before, after = flat(text), flat(out)
    want = dict(before['head_controller'], **values)
    assert after == dict(before, head_controller=want)
    # Comments stay, and so does every line that was not changed.
    assert '    driver: dynamixel          # serial | dynamixel | ros2_control | dry_run ' \
           '(sim needs the' in lines
    assert '    urdf: /home/me/head.urdf' in lines          # added where robot.yaml has none
    assert '      pan_zero: 2100           # servo ticks (4096 a turn) where the joint is at ' \
           '0 rad' in lines
    assert '      pan_us_min: 812' in lines          # added where robot.yaml has none
    assert sum(1 for line in text.splitlines() if line not in lines) == 3
    # A second calibration replaces the first's header rather than adding to it.
    again = cal.calibrated_params_text(out, {'urdf': '/home/me/again.urdf'}, ['third'])
    assert again.splitlines()[0] == '# maxim calibrate: third'
    assert not any(line.startswith('# maxim calibrate: first') for line in again.splitlines())


def test_a_layout_the_line_editor_does_not_follow_is_written_whole():
    text = ('# mine\n/**:\n  ros__parameters:\n    use_sim_time: false\n'
            'head_controller:\n  ros__parameters:\n    pan.min: -2.6\n    driver: serial\n')
    out = cal.calibrated_params_text(text, {'pan.min': -1.0, 'pan.max': 1.0})
    data = yaml.safe_load(out)
    assert data['head_controller']['ros__parameters'] == {
        'driver': 'serial', 'pan': {'min': -1.0, 'max': 1.0}}
    assert data['/**'] == {'ros__parameters': {'use_sim_time': False}}
    flow = 'head_controller: {ros__parameters: {pan: {min: -2.6}}}\n'
    assert flat(cal.calibrated_params_text(flow, {'pan.min': -1.0}))['head_controller'] == {
        'pan.min': -1.0}
    none = cal.calibrated_params_text('camera:\n  ros__parameters:\n    fps: 5.0\n',
                                      {'pan.min': -1.0})
    assert flat(none) == {'camera': {'fps': 5.0}, 'head_controller': {'pan.min': -1.0}}
    with pytest.raises(CalibrationError, match='not valid YAML'):
        cal.calibrated_params_text('a: [', {})


def test_the_urdf_copy_gets_the_limits_and_nothing_else_changes():
    with open(HEAD_URDF, encoding='utf-8') as f:
        text = f.read()
    out = cal.calibrated_urdf_text(text, {'head_pan_joint': (-1.23456, 1.5),
                                          'head_tilt_joint': (-0.5, 0.7)}, 'calibrated -- x')
    assert cal.urdf_limits(out) == {'head_pan_joint': (-1.2346, 1.5),
                                    'head_tilt_joint': (-0.5, 0.7)}
    assert out.splitlines()[1] == '<!-- calibrated - - x -->'
    changed = [line for line in out.splitlines() if line not in text.splitlines()]
    assert changed == ['<!-- calibrated - - x -->',
                       '    <limit lower="-1.2346" upper="1.5" effort="1.5" velocity="3.0"/>',
                       '    <limit lower="-0.5" upper="0.7" effort="1.5" velocity="3.0"/>']
    assert cal.urdf_limits(text) == URDF
    with pytest.raises(CalibrationError, match='no joint head_neck_joint'):
        cal.calibrated_urdf_text(text, {'head_neck_joint': (-1.0, 1.0)})
    with pytest.raises(CalibrationError, match='does not parse'):
        cal.urdf_limits('<robot>')
