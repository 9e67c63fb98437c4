"""Driver supervision (backoff, reconnect, the error state, holding) and the head controller's
parameters and composition, without ROS: a scripted driver, times passed in."""

import pytest

from maxim_perception.head.control import HeadConfig, HeadController, HeadGoalSpec, HeadMode
from maxim_perception.head.drivers import DriverError, DryRunDriver, SerialServoDriver
from maxim_perception.head.dynamixel import DynamixelDriver
from maxim_perception.head.params import compose, DRIVERS, make_driver, PARAMS, read_params
from maxim_perception.head.ros2_control import Ros2ControlDriver
from maxim_perception.head.supervision import DriverSupervisor


class ScriptedDriver:
    """A driver whose open, read and write fail while told to."""

    def __init__(self, name='serial', reading=(0.0, 0.0)):
        self.name = name
        self.reading = reading
        self.fail_open = self.fail_read = self.fail_write = False
        self.opened = self.closed = 0
        self.writes = []

    def open(self):
        self.opened += 1
        if self.fail_open:
            raise DriverError('no board on /dev/nothing')

    def read(self):
        if self.fail_read:
            raise DriverError('read timed out')
        return self.reading

    def write(self, pan, tilt):
        if self.fail_write:
            raise DriverError('write failed')
        self.writes.append((pan, tilt))

    def close(self):
        self.closed += 1

    def feed(self, pan, tilt):
        self.reading = (pan, tilt)


def supervised(driver, reconnect_max_s=2.0):
    lines = []
    s = DriverSupervisor(HeadController(HeadConfig()), driver, reconnect_max_s,
                         info=lambda line: lines.append(('info', line)),
                         warn=lambda line: lines.append(('warn', line)), state_period_s=0.1)
    return s, lines


def test_an_open_driver_is_read_stepped_and_written():
    d = ScriptedDriver(reading=(0.1, -0.1))
    s, lines = supervised(d)
    s.open(0.0)
    assert s.ok and lines == [('info', 'head driver serial ready')]
    step = s.tick(0.02, 0.0)
    assert step.sent and step.reading == (0.1, -0.1) and s.commands_sent == 1
    assert d.writes == [(step.command.pan, step.command.tilt)]
    assert step.joints == ((0.1, -0.1), None)      # measuring driver: what it measured
    assert step.status is not None                  # the first state is due at once
    assert s.tick(0.02, 0.02).status is None        # the next one a state period later
    assert s.tick(0.02, 0.1).status is not None


def test_faults_back_off_doubling_to_the_limit_and_reconnect():
    d = ScriptedDriver()
    d.fail_open = True
    s, lines = supervised(d, reconnect_max_s=2.0)
    s.open(0.0)
    assert not s.ok and s.error == 'no board on /dev/nothing'
    assert s.retry_at == 0.5
    assert lines[-1] == ('warn', 'head driver fault: no board on /dev/nothing; retrying in '
                                 '0.5 s')
    step = s.tick(0.02, 0.2)                         # before the retry: no attempt
    assert d.opened == 1 and not step.sent
    # Retried: opened again (no close: a driver takes up its own fault, and close() would
    # let a Dynamixel's servos go limp between attempts), failed again.
    s.tick(0.02, 0.5)
    assert d.opened == 2 and d.closed == 0 and s.retry_at == pytest.approx(1.5)
    s.tick(0.02, 1.5)
    s.tick(0.02, s.retry_at)
    assert s.backoff == 2.0                          # 0.5, 1, 2, then held at the limit
    assert health_line(s, s.retry_at - 1.0).startswith('driver serial down: no board')
    d.fail_open = False
    step = s.tick(0.02, s.retry_at)
    assert s.ok and s.error == '' and s.backoff == 0.5 and step.sent
    assert lines[-1] == ('info', 'head driver serial ready')
    assert health_line(s, 10.0).startswith('driver serial ready')


def health_line(s, now):
    return s.health(now).message


def test_a_write_fault_is_kept_and_the_next_tick_sends_nothing():
    d = ScriptedDriver()
    s, _ = supervised(d)
    s.open(0.0)
    d.fail_write = True
    step = s.tick(0.02, 0.0)
    assert not step.sent and not s.ok and s.error == 'write failed'
    assert s.commands_sent == 0
    assert step.command is not None                 # a serial head steps on (not HOLDING)
    assert not s.tick(0.02, 0.1).sent               # down until the retry at 0.5 s


def test_a_read_fault_is_a_fault():
    d = ScriptedDriver()
    s, _ = supervised(d)
    s.open(0.0)
    d.fail_read = True
    step = s.tick(0.02, 0.0)
    assert step.reading is None and not step.sent and s.error == 'read timed out'


def test_a_ros2_control_head_holds_while_its_driver_is_down():
    d = ScriptedDriver(name='ros2_control')
    d.fail_open = True
    s, _ = supervised(d)
    s.open(0.0)
    step = s.tick(0.02, 0.1)
    assert step.command is None and step.joints is None and not step.sent


def test_a_sim_driver_is_not_read_and_publishes_what_it_was_told():
    d = ScriptedDriver(name='sim', reading=(9.0, 9.0))
    s, _ = supervised(d)
    s.open(0.0)
    assert s.core.set_goal(HeadGoalSpec(HeadMode.MOVE, 'g', pan=0.5), 0.0).accepted
    step = s.tick(0.02, 0.0)
    assert step.reading is None
    assert step.joints == ((step.command.pan, step.command.tilt), s.velocity)
    assert s.velocity == (step.command.pan_velocity, step.command.tilt_velocity)


def test_a_reading_from_joint_states_feeds_the_core_and_the_driver():
    d = ScriptedDriver(name='sim')
    s, _ = supervised(d)
    assert s.measured(0.3, 0.1, 0.0, (0.0, 0.0), None).accepted
    assert d.reading == (0.3, 0.1)
    assert not s.measured(float('nan'), 0.1, 0.0, None, None).accepted
    assert d.reading == (0.3, 0.1)


def test_after_a_reconnect_the_command_restarts_at_rest_from_the_measured_position():
    """While the driver was down the command went on towards its goal; the joints held.
    Once it is back, the command restarts from where they are, not from where it got."""
    d = ScriptedDriver(reading=(0.0, 0.0))
    s, _ = supervised(d)
    s.open(0.0)
    assert s.core.set_goal(HeadGoalSpec(HeadMode.MOVE, 'g', pan=2.0), 0.0).accepted
    t = 0.0
    for _ in range(10):
        s.tick(0.02, t)
        t += 0.02
    d.fail_read = True
    s.tick(0.02, t)                                  # down: the core steps on, nothing sent
    held = d.writes[-1]
    d.fail_read = False
    d.reading = held
    while t + 0.02 < s.retry_at:
        t += 0.02
        assert not s.tick(0.02, t).sent
    assert s.core.command[0] > held[0] + 0.2         # it had gone on meanwhile ...
    step = s.tick(0.02, s.retry_at)                  # reconnected, read, restarted, sent
    assert s.ok and step.sent
    first = d.writes[-1][0] - held[0]
    assert 0 < first <= 15.0 * 0.02 * 0.02 + 1e-9     # ... the first step is from rest


class QueryingDriver(ScriptedDriver):
    """A driver that, once open, asks where its joints are before it commands them."""

    def __init__(self):
        super().__init__()
        self.awaiting_position = False

    def open(self):
        super().open()
        self.awaiting_position = True

    def read(self):
        return None if self.awaiting_position else super().read()

    def write(self, pan, tilt):
        assert not self.awaiting_position, 'a command before the answer'
        super().write(pan, tilt)


def test_no_step_and_no_command_while_the_driver_learns_where_the_joints_are():
    d = QueryingDriver()
    d.reading = (0.7, -0.2)
    s, _ = supervised(d)
    s.open(0.0)
    for i in range(3):
        step = s.tick(0.02, 0.02 * i)
        assert step.command is None and not step.sent and step.joints is None
    d.awaiting_position = False
    step = s.tick(0.02, 0.1)
    assert step.sent and d.writes == [pytest.approx((0.7, -0.2))]


def test_close_closes_and_marks_the_driver_down():
    d = ScriptedDriver()
    s, _ = supervised(d)
    s.open(0.0)
    s.close()
    assert not s.ok and d.closed == 1


# ---- parameters --------------------------------------------------------------------------

def defaults(**changes):
    values = {name: spec[0] for name, spec in PARAMS.items()}
    values.update(changes)
    return values


def test_every_parameter_has_a_description_and_a_range_of_its_type():
    for name, (default, description, rng) in PARAMS.items():
        assert description, name
        if rng is not None:
            lo, hi = rng
            assert isinstance(lo, type(default)) and isinstance(hi, type(default)), name
            assert lo <= default <= hi, name


def test_the_defaults_make_the_sim_head_of_the_urdf():
    p = read_params(defaults())
    assert p.driver == 'sim' and p.rate_hz == 50.0 and p.ros2_control is None
    assert (p.head.pan_min, p.head.pan_max, p.head.tilt_min, p.head.tilt_max) == (
        -2.6, 2.6, -0.8, 0.8)


def test_an_unknown_driver_is_named():
    with pytest.raises(ValueError, match='driver must be one of sim, serial'):
        read_params(defaults(driver='telepathy'))


@pytest.mark.parametrize('driver, kind', [('dry_run', DryRunDriver),
                                          ('serial', SerialServoDriver),
                                          ('dynamixel', DynamixelDriver),
                                          ('ros2_control', Ros2ControlDriver)])
def test_each_driver_is_made_from_its_parameters(driver, kind):
    p = read_params(defaults(driver=driver))
    d = make_driver(p, lambda pan, tilt: None, lambda c: None, lambda: 0, lambda: 0.0,
                    lambda line: None)
    assert isinstance(d, kind) and d.name == driver and driver in DRIVERS


def test_compose_wires_the_core_to_its_driver():
    sent = []
    s = compose(read_params(defaults()), lambda pan, tilt: sent.append((pan, tilt)),
                lambda c: None, lambda: 0, lambda: 0.0, lambda line: None, lambda line: None)
    assert s.driver.name == 'sim' and s.state_period_s == pytest.approx(0.1)
    s.open(0.0)
    assert s.tick(0.02, 0.0).sent and len(sent) == 1
