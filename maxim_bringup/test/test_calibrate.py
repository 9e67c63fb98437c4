"""`./maxim calibrate` (maxim_bringup/calibrate.py) end to end: the dry run writing a params
file that the head controller reads as launch would hand it over, the refusals, the serial
board on a pty (test/helpers/serial_board.py) and Dynamixel servos on an emulated bus
(test/helpers/dynamixel_bus.py): the goals arrive, slowly, and the driver is closed at the end
(the serial port closed, the servos' torque off), also when the session is interrupted.
The calibration core itself is tested in maxim_perception/test/test_calibration.py.

Expected pulses and ticks are worked out by hand (robot.yaml's map: pan 384.6 us/rad with
1500 us at 0 rad; a Dynamixel turn is 4096 ticks, 651.9 ticks/rad, 2048 at 0 rad), in 5 degree
steps each rounded to a whole pulse or tick: 0, 1534, 1568, 1602 us; 2048, 2105, 2162,
2219 ticks.
"""

import os
import pty
import subprocess
import sys
import termios
import threading

from helpers.dynamixel_bus import DynamixelBus, PROFILE_VELOCITY
from helpers.serial_board import SerialBoard
import pytest
import yaml

from maxim_bringup import calibrate
from maxim_bringup.cli import build_parser
from maxim_bringup.params import load_params
from maxim_perception.head import calibration as cal
from maxim_perception.head.drivers import SerialServoDriver

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROBOT_YAML = os.path.join(PKG, 'config', 'robot.yaml')
HEAD_URDF = os.path.join(PKG, 'urdf', 'maxim_head.urdf')
# 5 degree steps: pan zero 15 deg left, limits 20 deg either side of it; tilt (zero kept)
# from 10 deg up to 10 deg down.
KEYS = 'a*3 z a*4 ] d*8 [ tab s*2 ] w*4 [ enter\n'
FAST = ['--speed', '1.0', '--step-deg', '5']


def robot_copy(tmp_path, name='robot.yaml', **head) -> str:
    """robot.yaml (comments and all) in tmp_path, with these head_controller values."""
    with open(ROBOT_YAML, encoding='utf-8') as f:
        text = f.read()
    if head:
        text = cal.calibrated_params_text(text, head)
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run_cli(tmp_path, *argv, keys=KEYS) -> int:
    script = tmp_path / 'keys.txt'
    script.write_text(keys)
    args = build_parser().parse_args(['calibrate', '--keys', str(script), *FAST, *argv])
    return args.func(args)


def head_of(path) -> dict:
    return load_params(str(path))['head_controller']


def limited(path) -> dict:
    """head_of(path), with the limits of the URDF it names (their one source) as
    pan.min .. tilt.max."""
    from maxim_common.urdf import read_head_limits
    head = head_of(path)
    limits = read_head_limits(head['urdf'])
    return dict(head, **{f'{j}.{end}': limits[j][i] for j in ('pan', 'tilt')
                         for i, end in enumerate(('min', 'max'))})


# ---- the dry run --------------------------------------------------------------------------

@pytest.mark.ros
def test_the_dry_run_writes_a_params_file_the_head_controller_reads(tmp_path):
    """`maxim calibrate` as a user runs it, keys on a stdin that is no terminal; then the
    written file handed to the head controller node as launch hands it (--params-file)."""
    import rclpy

    from maxim_perception.head.params import PARAMS as _PARAMS
    from maxim_perception.nodes.head_controller_node import HeadControllerNode

    params = robot_copy(tmp_path)
    done = subprocess.run(
        [sys.executable, '-m', 'maxim_bringup.cli', 'calibrate', '--params-file', params,
         '--driver', 'dry_run', *FAST], input=KEYS, capture_output=True, text=True,
        timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout
    out, urdf = tmp_path / 'robot_calibrated.yaml', tmp_path / 'robot_calibrated.urdf'
    assert f'wrote {out} and {urdf}' in done.stdout
    assert f'robot.launch.py params_file:={out} urdf:={urdf}' in done.stdout
    head = head_of(out)
    want = {'driver': 'dry_run', 'urdf': str(urdf)}     # the limits: in the URDF alone
    assert {k: head[k] for k in want} == want
    assert not {'pan.min', 'pan.max', 'tilt.min', 'tilt.max'} & set(head)
    assert set(head) <= set(_PARAMS), set(head) - set(_PARAMS)   # every one declared
    before, after = load_params(params), load_params(str(out))
    assert after['agent']['urdf'] == str(urdf)          # the agent checks moves against it
    assert {n: v for n, v in after.items() if n not in ('head_controller', 'agent')} == {
        n: v for n, v in before.items() if n not in ('head_controller', 'agent')}
    assert {k: v for k, v in head.items() if k not in want} == {
        k: v for k, v in before['head_controller'].items() if k not in want}
    limits = cal.urdf_limits(urdf.read_text())
    assert limits['head_pan_joint'] == pytest.approx((-0.3491, 0.3491), abs=1e-4)
    assert limits['head_tilt_joint'] == pytest.approx((-0.1745, 0.1745), abs=1e-4)
    assert cal.urdf_limits(open(HEAD_URDF).read())['head_pan_joint'] == (-2.6, 2.6)

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        node = HeadControllerNode(context=ctx, autostart=False,
                                  cli_args=['--ros-args', '--params-file', str(out)])
        h = node.params.head
        assert node.params.driver == 'dry_run' and node.driver.name == 'dry_run'
        assert (h.pan_min, h.pan_max) == limits['head_pan_joint']
        assert (h.tilt_min, h.tilt_max) == limits['head_tilt_joint']
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)


def test_quitting_writes_nothing_and_the_defaults_name_the_files(tmp_path, capsys):
    params = robot_copy(tmp_path)
    for keys in ('a a z q\n', 'a esc\n', 'a ctrl-c\n', 'a a\n'):         # the last: the end
        assert run_cli(tmp_path, '--params-file', params, '--driver', 'dry_run',
                       keys=keys) == 1
        assert 'quit: nothing saved' in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path)) == ['keys.txt', 'robot.yaml']
    assert calibrate.output_paths('/a/robot.yaml', '', '') == (
        '/a/robot_calibrated.yaml', '/a/robot_calibrated.urdf')
    assert calibrate.output_paths('/a/r_calibrated.yaml', '', '') == (
        '/a/r_calibrated.yaml', '/a/r_calibrated.urdf')            # recalibrated in place
    assert calibrate.output_paths('', '', '/b/h.urdf') == (
        os.path.expanduser('~/.maxim/robot_calibrated.yaml'), '/b/h.urdf')


def test_a_calibrated_file_is_calibrated_again_in_place_and_no_other_is_overwritten(
        tmp_path, capsys):
    params = robot_copy(tmp_path)
    assert run_cli(tmp_path, '--params-file', params, '--driver', 'dry_run', '--out',
                   params) == 1
    assert 'is the file calibrated from: it is never overwritten' in capsys.readouterr().err
    assert run_cli(tmp_path, '--params-file', params, '--driver', 'dry_run',
                   '--urdf-out', HEAD_URDF) == 1
    assert 'maxim_head.urdf is the file calibrated from' in capsys.readouterr().err
    assert run_cli(tmp_path, '--params-file', params, '--driver', 'dry_run') == 0
    calibrated = str(tmp_path / 'robot_calibrated.yaml')
    assert run_cli(tmp_path, '--params-file', calibrated, keys='tab s*4 ] enter') == 0
    head = limited(calibrated)
    assert head['tilt.max'] == pytest.approx(0.3491) and head['pan.max'] == pytest.approx(
        0.3491)
    text = open(calibrated).read()
    assert text.count('# maxim calibrate: ') == 4 and 'from ' + calibrated in text


def test_what_cannot_be_calibrated_is_a_clear_error_and_writes_nothing(tmp_path, capsys):
    rc = robot_copy(tmp_path, 'rc.yaml', driver='ros2_control')
    assert run_cli(tmp_path, '--params-file', rc) == 1
    assert 'driver ros2_control: calibrate speaks to the servos itself' in (
        capsys.readouterr().err)
    params = robot_copy(tmp_path)
    assert run_cli(tmp_path, '--params-file', params, '--driver', 'serial', '--port',
                   '/dev/maxim-no-such-port') == 1
    err = capsys.readouterr().err
    assert 'cannot open servo board on /dev/maxim-no-such-port' in err
    assert 'nothing saved' in err
    assert run_cli(tmp_path, '--params-file', params, '--driver', 'dry_run',
                   keys='a jump') == 1
    assert "unknown key 'jump'" in capsys.readouterr().err
    assert run_cli(tmp_path, '--params-file', params, '--driver', 'dry_run',
                   '--step-deg', '45') == 1
    assert 'step must be' in capsys.readouterr().err
    assert not [f for f in os.listdir(tmp_path) if 'calibrated' in f]


def test_a_limit_beyond_the_urdf_is_refused_unless_allowed(tmp_path, capsys):
    urdf = tmp_path / 'narrow.urdf'
    urdf.write_text(cal.calibrated_urdf_text(open(HEAD_URDF).read(),
                                             {'head_pan_joint': (-0.5, 0.5)}))
    params = robot_copy(tmp_path)
    step = ['--step-deg', '2']
    # Up to the URDF's 0.5 (no further), marked; to -0.2, the zero: the mark is now 0.7 from
    # it, beyond; cleared. Enter: the params file's pan.max, 2.6, is 2.8 from it: refused.
    assert run_cli(tmp_path, '--params-file', params, '--driver', 'dry_run', '--urdf',
                   str(urdf), *step, keys='a*20 ] d*20 z enter q') == 1
    out = capsys.readouterr().out
    assert "pan is at the URDF's upper limit (+0.500 rad (+28.6 deg) from the zero): it goes " \
           'no further (--allow-beyond-urdf to go past it)' in out
    assert "pan upper limit +0.698 rad (+40.0 deg) is beyond the URDF's +0.500 rad" in out
    assert 'cleared, mark it again' in out
    assert 'not saved: pan upper limit +2.798 rad' in out and 'quit: nothing saved' in out
    assert not (tmp_path / 'robot_calibrated.yaml').exists()
    # Allowed: the head goes past it, and the calibrated URDF gets the wider limits.
    assert run_cli(tmp_path, '--params-file', params, '--driver', 'dry_run', '--urdf',
                   str(urdf), '--allow-beyond-urdf', *step, keys='a*35 ] d*70 [ enter') == 0
    head = limited(tmp_path / 'robot_calibrated.yaml')
    assert (head['pan.min'], head['pan.max']) == pytest.approx((-1.2217, 1.2217))
    assert cal.urdf_limits((tmp_path / 'robot_calibrated.urdf').read_text())[
        'head_pan_joint'] == (head['pan.min'], head['pan.max'])


# ---- the serial board and the Dynamixel bus, on a pty ----------------------------------------

def test_the_serial_board_gets_slow_goals_and_its_port_is_closed_at_the_end(
        tmp_path, monkeypatch):
    drivers = []
    with SerialBoard() as board:
        opened = SerialServoDriver.open

        def open_and_keep(self):
            drivers.append(self)
            opened(self)
        monkeypatch.setattr(SerialServoDriver, 'open', open_and_keep)
        params = robot_copy(tmp_path)
        assert run_cli(tmp_path, '--params-file', params, '--driver', 'serial', '--port',
                       board.port) == 0
        # Just plugged in, the board restarts at the first open (its servos limp) and says
        # so when asked: the first line attaches them at the old zero.
        assert board.received[0] == b'?' and board.resets == 1
        lines = [line.decode() for line in board.received[1:]]
        pans = [int(line.split()[0][1:]) for line in lines]
        tilts = [int(line.split()[1][1:]) for line in lines]
    assert lines[0] == 'P1500 T1500'                        # from where the board holds it
    assert (min(pans), max(pans)) == (1466, 1738) and (min(tilts), max(tilts)) == (1282, 1718)
    # At 1 rad/s: 7.7 us of pan and 25 us of tilt per 20 ms tick; a late tick moves at most
    # the 0.1 s the loop allows (a loaded machine ticks late), never a jump.
    assert max(abs(a - b) for a, b in zip(pans, pans[1:])) <= 39
    assert max(abs(a - b) for a, b in zip(tilts, tilts[1:])) <= 125
    assert board.pulses == (1466, 1282)                     # the last marks: it holds there
    assert len(drivers) == 1 and not drivers[0].is_open      # closed at the end
    head = limited(tmp_path / 'robot_calibrated.yaml')
    assert (head['serial.pan_us_min'], head['serial.pan_us_max']) == (1466, 1738)
    assert (head['serial.tilt_us_min'], head['serial.tilt_us_max']) == (1282, 1718)
    assert head['serial.port'] == board.port and head['driver'] == 'serial'
    # The new map puts 0 rad at the zero's pulse, 1602 us, at 384.6 us/rad.
    k = 2000 / 5.2
    assert (head['pan.min'], head['pan.max']) == pytest.approx(
        ((1466 - 1602) / k, (1738 - 1602) / k), abs=1e-4)


def dynamixel_params(tmp_path):
    return robot_copy(tmp_path, **{'dynamixel.pan_id': 3, 'dynamixel.tilt_id': 7})


def test_the_dynamixel_servos_get_the_goals_and_their_torque_goes_off(tmp_path):
    with DynamixelBus(ids=(3, 7)) as bus:
        params = dynamixel_params(tmp_path)
        assert run_cli(tmp_path, '--params-file', params, '--driver', 'dynamixel', '--port',
                       bus.port) == 0
        assert (bus.goal(3), bus.goal(7)) == (1991, 1934)    # the last marks
        assert bus.value(3, PROFILE_VELOCITY, 4) == 42       # 1 rad/s: 9.55 rpm / 0.229
        assert (bus.torque(3), bus.torque(7)) == (0, 0)      # off at the end
        assert bus.crc_errors == 0 and bus.framing_errors == 0
    head = limited(tmp_path / 'robot_calibrated.yaml')
    assert (head['dynamixel.pan_zero'], head['dynamixel.tilt_zero']) == (2219, 2048)
    assert (head['dynamixel.pan_id'], head['dynamixel.tilt_id']) == (3, 7)
    assert (head['pan.min'], head['pan.max']) == pytest.approx(
        ((1991 - 2219) / 651.8986, (2447 - 2219) / 651.8986), abs=1e-4)
    assert (head['tilt.min'], head['tilt.max']) == pytest.approx(
        ((1934 - 2048) / 651.8986, (2162 - 2048) / 651.8986), abs=1e-4)


def test_an_interrupted_session_turns_the_torque_off_and_writes_nothing(
        tmp_path, monkeypatch, capsys):
    calls = []
    read = calibrate.ScriptKeys.read

    def interrupted(self, timeout, idle):
        calls.append(1)
        if len(calls) == 30:
            raise KeyboardInterrupt            # Ctrl-C (or SIGTERM) mid-jog
        return read(self, timeout, idle)
    monkeypatch.setattr(calibrate.ScriptKeys, 'read', interrupted)
    with DynamixelBus(ids=(3, 7)) as bus:
        assert run_cli(tmp_path, '--params-file', dynamixel_params(tmp_path), '--driver',
                       'dynamixel', '--port', bus.port, keys='a*20') == 130
        assert bus.goal(3) > 2048                            # it was moving
        assert (bus.torque(3), bus.torque(7)) == (0, 0)
    assert 'interrupted; nothing saved' in capsys.readouterr().err
    assert not (tmp_path / 'robot_calibrated.yaml').exists()


def test_a_servo_that_stops_answering_ends_the_session_with_the_torque_off(tmp_path, capsys):
    with DynamixelBus(ids=(3, 7)) as bus:
        threading.Timer(1.0, bus.silence, args=(7,)).start()
        assert run_cli(tmp_path, '--params-file', dynamixel_params(tmp_path), '--driver',
                       'dynamixel', '--port', bus.port, keys='a*40') == 1
        assert bus.torque(3) == 0                # the one that still answers: off too
    out, err = capsys.readouterr()
    assert err.strip().endswith('tilt servo (ID 7) does not answer (power, cable, or the '
                                'bus); nothing saved')
    assert 'torque off failed: tilt servo (ID 7)' in out       # silent: it cannot be told


# ---- the terminal -------------------------------------------------------------------------

def test_the_terminal_is_raw_while_keys_are_read_and_restored_after():
    master, slave = pty.openpty()
    try:
        before = termios.tcgetattr(slave)
        keys = calibrate.TerminalKeys(slave)
        raw = termios.tcgetattr(slave)
        assert not raw[3] & (termios.ICANON | termios.ECHO | termios.ISIG)
        os.write(master, b'\x1b[Da\x03')
        assert keys.read(1.0, True) == ['left', 'a', 'ctrl-c']
        os.write(master, b'\x1b')                            # Esc alone
        assert keys.read(1.0, True) == ['esc']
        assert keys.read(0.01, True) == []
        keys.close()
        assert termios.tcgetattr(slave) == before
    finally:
        os.close(master)
        os.close(slave)


def test_the_status_line_is_drawn_only_on_a_terminal():
    import io
    plain, term = io.StringIO(), io.StringIO()
    for stream, interactive in ((plain, False), (term, True)):
        screen = calibrate.Screen(stream, interactive)
        screen.status('pan +0.000')
        screen.say(['saved'])
        screen.end()
    assert plain.getvalue() == 'saved\n'
    assert term.getvalue() == '\r\x1b[Kpan +0.000\r\x1b[Ksaved\r\npan +0.000\r\n'


def test_the_written_file_keeps_the_yaml_of_the_source(tmp_path):
    params = robot_copy(tmp_path)
    assert run_cli(tmp_path, '--params-file', params, '--driver', 'dry_run') == 0
    with open(tmp_path / 'robot_calibrated.yaml', encoding='utf-8') as f:
        data = yaml.safe_load(f)
    assert list(data) == list(yaml.safe_load(open(params)))    # the same nodes, in order
