"""`maxim calibrate`: jog a real head through its range on keypresses, mark each joint's zero
and limits, and write them to a calibrated params file and a calibrated copy of the URDF.

    ./maxim calibrate                                   # robot.yaml's driver and port
    ./maxim calibrate --params-file my_head.yaml        # writes my_head_calibrated.yaml
    ./maxim calibrate --driver dry_run --keys keys.txt  # a rehearsal, keys from a script

Everything that decides (the state machine, the drivers' frames, the writers) is in
maxim_perception/head/calibration.py; this is the terminal around it: the driver built from
the params file's head_controller parameters, keys read from the terminal in raw mode (or
from a key script: `--keys FILE`, or stdin when it is no terminal), the control loop at
50 Hz, and the files written.

Safe by default: the head moves at `--speed` (0.3 rad/s; a Dynamixel's own profile velocity
too) in steps of `--step-deg` (2 deg), inside the URDF's limits; any key that is no command
stops it; a joint held back far from its command is stopped where it is. On every way out
(Enter, q, Esc, Ctrl-C, an error, SIGTERM) the driver is closed: a Dynamixel's torque goes
off, the serial port closes. The terminal is restored.
"""

import math
import os
import re
import select
import signal
import sys
import time

RATE_HZ = 50.0
SETTLE_S = 10.0          # a key script's next key waits this long at most for the head
ESC_WAIT_S = 0.05        # a lone ESC: the start of an arrow key, or Esc itself?


def add_parser(sub, check_dependencies) -> None:
    """Register `calibrate` on the `maxim` command's subparsers; `check_dependencies(names)`
    is the command's own check (cli.py), handed in so this module does not import cli."""
    p = sub.add_parser(
        'calibrate', help="jog the real head on keypresses, mark each joint's zero and "
        'limits, write a calibrated params file and URDF')
    p.add_argument('--params-file', default='',
                   help='the robot params YAML to start from (default: config/robot.yaml)')
    p.add_argument('--driver', choices=['serial', 'dynamixel', 'dry_run'],
                   help="the head driver (default: the params file's head_controller driver)")
    p.add_argument('--port', default='', help="the serial port (over the params file's "
                   'serial.port or dynamixel.port)')
    p.add_argument('--out', default='', help='the calibrated params file to write (default: '
                   '<params file>_calibrated.yaml beside it, or '
                   '~/.maxim/robot_calibrated.yaml without --params-file)')
    p.add_argument('--urdf', default='', help='the URDF whose limits bound the calibration '
                   '(default: urdf/maxim_head.urdf)')
    p.add_argument('--urdf-out', default='', help='the calibrated URDF to write (default: '
                   'beside --out, with its name and .urdf)')
    p.add_argument('--keys', default='', metavar='FILE',
                   help='read the keys from this script instead of the terminal (names '
                   'such as left, tab, enter, or single characters; KEY*N repeats)')
    p.add_argument('--step-deg', type=float, default=2.0, help='one jog, degrees (default 2)')
    p.add_argument('--speed', type=float, default=0.3,
                   help='rad/s the head moves at (default 0.3, at most 1)')
    p.add_argument('--servo-travel-deg', type=float, default=None,
                   help='serial: the angle the servos turn over 500..2500 us (e.g. 180 for an '
                   "MG996R), instead of the params file's pulse map")
    p.add_argument('--allow-beyond-urdf', action='store_true',
                   help="let a joint go, and a limit be marked, past the URDF's limits (the "
                   'calibrated URDF then gets the wider ones)')
    p.set_defaults(func=run, check_dependencies=check_dependencies)


# ---- keys ---------------------------------------------------------------------------------

class ScriptKeys:
    """Keys from a key script, one at a time, each once the head is at rest (or SETTLE_S
    after the last): 'eof' when it is spent."""

    interactive = False

    def __init__(self, keys: list[str], clock=time.monotonic):
        self._keys = list(keys)
        self._clock = clock
        self._last = -math.inf

    def read(self, timeout: float, idle: bool) -> list[str]:
        if timeout > 0:
            time.sleep(timeout)
        now = self._clock()
        if not (idle or now - self._last > SETTLE_S):
            return []
        self._last = now
        return [self._keys.pop(0)] if self._keys else ['eof']

    def close(self) -> None:
        return None


class TerminalKeys:
    """Keys from a terminal in raw mode (restored by close())."""

    interactive = True

    def __init__(self, fd: int):
        import termios
        import tty

        from maxim_perception.head.calibration import KeyDecoder

        self._fd = fd
        self._saved = termios.tcgetattr(fd)
        self._decoder = KeyDecoder()
        tty.setraw(fd)

    def read(self, timeout: float, idle: bool) -> list[str]:
        ready, _, _ = select.select([self._fd], [], [], max(0.0, timeout))
        if not ready:
            return self._decoder.flush() if self._decoder.pending else []
        data = os.read(self._fd, 64)
        if not data:
            return ['eof']
        keys = self._decoder.feed(data)
        if self._decoder.pending:
            more, _, _ = select.select([self._fd], [], [], ESC_WAIT_S)
            keys += self._decoder.feed(os.read(self._fd, 64)) if more else []
            if self._decoder.pending and not more:
                keys += self._decoder.flush()
        return keys

    def close(self) -> None:
        import termios
        if self._saved is not None:
            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
            self._saved = None


class Screen:
    """Messages on their own lines; on a terminal, a status line redrawn under them."""

    def __init__(self, stream, interactive: bool):
        self._stream = stream
        self._interactive = interactive
        self._status = ''

    def say(self, lines) -> None:
        for line in lines:
            if self._interactive:
                self._stream.write('\r\x1b[K' + line + '\r\n' + self._status)
            else:
                self._stream.write(line + '\n')
        self._stream.flush()

    def status(self, text: str) -> None:
        if self._interactive and text != self._status:
            self._status = text
            self._stream.write('\r\x1b[K' + text)
            self._stream.flush()

    def end(self) -> None:
        if self._interactive and self._status:
            self._stream.write('\r\n')
            self._stream.flush()
            self._status = ''


# ---- files --------------------------------------------------------------------------------

def _shipped(*parts) -> str:
    """A file of maxim_bringup: the source tree's, or the installed share's."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(here, *parts)
    if os.path.isfile(path):
        return path
    from ament_index_python.packages import get_package_share_directory
    return os.path.join(get_package_share_directory('maxim_bringup'), *parts)


def _calibrated(path: str) -> bool:
    """A file of an earlier calibration (X_calibrated.yaml, X_calibrated.urdf): the only
    kind a calibration may overwrite when it starts from it."""
    return os.path.splitext(path)[0].endswith('_calibrated')


def output_paths(params_file: str, out: str, urdf_out: str) -> tuple[str, str]:
    """(calibrated params file, calibrated URDF), by the defaults of the command line:
    <params file>_calibrated.yaml beside it (a calibrated file again: itself), or
    ~/.maxim/robot_calibrated.yaml; the URDF beside it, by the same name."""
    if not out:
        if params_file:
            stem = os.path.splitext(os.path.abspath(params_file))[0]
            out = (stem if stem.endswith('_calibrated') else stem + '_calibrated') + '.yaml'
        else:
            out = os.path.join(os.path.expanduser('~'), '.maxim', 'robot_calibrated.yaml')
    out = os.path.abspath(os.path.expanduser(out))
    urdf_out = os.path.abspath(os.path.expanduser(urdf_out or os.path.splitext(out)[0]
                                                  + '.urdf'))
    return out, urdf_out


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    tmp = f'{path}.{os.getpid()}.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write(text)
    os.replace(tmp, path)


def head_params(params_file: str) -> dict:
    """The head controller's parameters from a params file, over the node's defaults."""
    from maxim_perception.head.params import PARAMS

    from maxim_bringup.params import for_node, load_params
    values = {name: spec[0] for name, spec in PARAMS.items()}
    values.update(for_node(load_params(params_file), 'head_controller'))
    return values


# ---- the session --------------------------------------------------------------------------

def first_reading(driver, wait_s: float, sleep=time.sleep, clock=time.monotonic):
    """The driver's first reading (pan, tilt), waiting up to wait_s for one; None if none,
    at once when the driver has learnt that there is none (a board whose servos are limp
    answers its query so: `awaiting_position` is over)."""
    deadline = clock() + wait_s
    asks = hasattr(driver, 'awaiting_position')
    while True:
        reading = driver.read()
        if reading is not None or clock() >= deadline or (asks
                                                          and not driver.awaiting_position):
            return reading
        sleep(0.02)


def session(driver, make_calibrator, keys, screen, clock=time.monotonic):
    """Open the driver, run the calibrator on the keys until it saves or quits, close the
    driver whatever happens. The calibrator (or None when it never started)."""
    from maxim_perception.head.calibration import State

    try:
        driver.open()
        wait = 0.0
        if getattr(driver, 'name', '') == 'serial' and getattr(driver, 'readback', False):
            # A board that restarts on this open (the first after it is plugged in) answers
            # once its bootloader is done.
            wait = getattr(driver, 'boot_s', 2.5) + 0.5
        reading = first_reading(driver, wait)
        calibrator = make_calibrator(reading)
        screen.say([f'{driver.name} head open; starting at pan {calibrator.command[0]:+.3f}, '
                    f'tilt {calibrator.command[1]:+.3f} rad (the old zero)'])
        period = 1.0 / RATE_HZ
        last = next_tick = clock()
        while calibrator.state is State.RUNNING:
            for name in keys.read(max(0.0, next_tick - clock()), calibrator.settled()):
                screen.say(calibrator.key(name))
                if calibrator.state is not State.RUNNING:
                    break
            if calibrator.state is not State.RUNNING:
                break
            now = clock()
            if now < next_tick:
                continue
            dt, last = min(0.1, now - last), now
            next_tick = max(next_tick + period, now)
            pan, tilt = calibrator.tick(dt)
            driver.write(pan, tilt)
            reading = driver.read()
            if reading is not None:
                screen.say(calibrator.feed(*reading))
            screen.status(calibrator.status())
        return calibrator
    except BaseException:
        # A fault may have closed the port already, and a servo that still answers holds
        # its torque: a driver that can turn it off anyway does so.
        driver.close()
        release = getattr(driver, 'torque_off', None)
        if release is not None:
            screen.say([f'torque off failed: {why}' for why in release()])
        raise
    finally:
        screen.end()
        driver.close()


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt


def run(args) -> int:
    """The `maxim calibrate` command: 0 when saved, 1 when not (quit, or an error)."""
    problems = args.check_dependencies(['rclpy', 'maxim_interfaces.msg', 'yaml'])
    for line in problems:
        print(f'maxim: {line}', file=sys.stderr)
    if problems:
        return 2
    from maxim_perception.head import calibration as cal
    from maxim_perception.head.drivers import DriverError

    from maxim_bringup.params import ParamsError

    try:
        params_file = args.params_file or _shipped('config', 'robot.yaml')
        values = head_params(params_file)
        if args.driver:
            values['driver'] = args.driver
        driver_name = str(values['driver'])
        port_param = f'{driver_name}.port' if driver_name in ('serial', 'dynamixel') else ''
        if args.port and port_param:
            values[port_param] = args.port
        out, urdf_out = output_paths(args.params_file, args.out, args.urdf_out)
        # --urdf bounds the calibration; the limits a joint keeps when it is not marked are
        # those of the URDF the head controller reads now (its `urdf`: a calibrated copy
        # after a first calibration), calibration_driver reads them there.
        urdf_in = os.path.abspath(os.path.expanduser(args.urdf or _shipped('urdf',
                                                                           'maxim_head.urdf')))
        for written, source in ((out, params_file), (urdf_out, urdf_in)):
            if (os.path.exists(source) and os.path.exists(written)
                    and os.path.samefile(written, source) and not _calibrated(written)):
                raise cal.CalibrationError(f'{written} is the file calibrated from: it is '
                                           'never overwritten (--out, --urdf-out)')
        with open(urdf_in, encoding='utf-8') as f:
            urdf_text = f.read()
        urdf = cal.urdf_limits(urdf_text)
        step = math.radians(args.step_deg)
        driver, axes = cal.calibration_driver(values, args.speed, args.servo_travel_deg)
        cal.Calibrator(axes, urdf, (0.0, 0.0), driver_name, step, args.speed,
                       args.allow_beyond_urdf)   # the arguments, checked before any motion
        if args.keys:
            with open(args.keys, encoding='utf-8') as f:
                keys = ScriptKeys(cal.parse_key_script(f.read()))
        elif not sys.stdin.isatty():
            keys = ScriptKeys(cal.parse_key_script(sys.stdin.read()))
        else:
            keys = None
    except (cal.CalibrationError, ParamsError, OSError, ValueError, KeyError) as exc:
        print(f'maxim calibrate: {exc}', file=sys.stderr)
        return 1

    def make_calibrator(reading):
        start = reading if reading is not None else tuple(a.rest for a in axes)
        return cal.Calibrator(axes, urdf, start, driver_name, step, args.speed,
                              args.allow_beyond_urdf)

    print(f'maxim calibrate: {driver_name} head from {params_file}; writes {out} and '
          f'{urdf_out} on Enter')
    print(cal.HELP)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    calibrator = None
    try:
        if keys is None:
            keys = TerminalKeys(sys.stdin.fileno())
        screen = Screen(sys.stdout, keys.interactive)
        calibrator = session(driver, make_calibrator, keys, screen)
    except DriverError as exc:
        why = re.sub(r'; reconnecting in [0-9.]+ s$', '', str(exc))
        print(f'maxim calibrate: {why}; nothing saved', file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print('maxim calibrate: interrupted; nothing saved', file=sys.stderr)
        return 130
    finally:
        if keys is not None:
            keys.close()
        signal.signal(signal.SIGTERM, previous)
    if calibrator is None or calibrator.state is not cal.State.SAVED:
        return 1
    result = calibrator.result
    # The calibrated limits live in the calibrated URDF alone; the params file names it.
    values_out = dict(result.params, driver=driver_name, urdf=urdf_out)
    if args.port and port_param:
        values_out[port_param] = args.port
    when = time.strftime('%Y-%m-%d %H:%M')
    header = [f'{when}, {driver_name} head, from {params_file}'] + result.summary() + [
        f'the URDF with these limits: {urdf_out}']
    try:
        with open(params_file, encoding='utf-8') as f:
            params_text = cal.calibrated_params_text(f.read(), values_out, header)
        # The agent checks moves against the same URDF.
        params_text = cal.calibrated_params_text(params_text, {'urdf': urdf_out}, header,
                                                 node='agent')
        _write(out, params_text)
        _write(urdf_out, cal.calibrated_urdf_text(
            urdf_text, result.urdf_limits(),
            f'Calibrated by ./maxim calibrate on {when} ({driver_name} head): the limits of '
            f'{", ".join(cal.URDF_JOINTS)}, which {out} names (urdf)'))
    except (cal.CalibrationError, OSError) as exc:
        print(f'maxim calibrate: cannot write the calibration: {exc}', file=sys.stderr)
        return 1
    print(f'maxim calibrate: wrote {out} and {urdf_out}')
    print(f'  ros2 launch maxim_bringup robot.launch.py params_file:={out} urdf:={urdf_out}')
    print(f'  ./maxim robot --params-file {out}')
    return 0
