"""The head driven through a driver that may fail: each control tick reads, steps the core,
writes under supervision and gathers what the node reports (plain Python, no rclpy).

A driver that cannot be opened, read or written is in fault: the error is kept for the head's
state and diagnostics, one warning line says when the next attempt comes, and the driver is
opened again after a backoff that doubles from 0.5 s up to `reconnect_max_s` (open() takes
up a fault itself; close() is for the way out, where it lets the servos go). The node never
dies of it; its head holds or goes on as below.

No snap on (re)connect: after every open the command restarts, at rest, from the first
position the driver measures (core.restart_from), or from where the command is when the
driver cannot say (a board whose servos are limp). While the driver is still learning that
position (`awaiting_position`, the serial board's query) the core neither steps nor writes.
From there every command is a step of the core's ramp, within max_velocity and
max_acceleration.

What the servos report of themselves (a driver's `harms` and `efforts`: dynamixel.py) goes
to the core at every tick, also at the tick whose read failed because of it (a servo that shut
itself down in overload): the pain comes with the fault. A driver without `feedback` (its
reading is what it was told) says in its health that movement pain is off.

Time is passed in (`now`, the node's clock, seconds); the supervisor never reads a clock.
"""

from dataclasses import dataclass
from typing import Callable

from maxim_common.health import Health
from maxim_perception.head.control import (CommandResult, HeadController, HeadStatus,
                                           JointCommand, PainEvent)
from maxim_perception.head.drivers import DriverError, HeadDriver
from maxim_perception.health import driver_health

# The core's joint names for a driver's 'pan' and 'tilt' (maxim_head.urdf's).
JOINT_NAMES = {'pan': 'head_pan_joint', 'tilt': 'head_tilt_joint'}
NO_FEEDBACK = 'no feedback: movement pain off'
# Drivers whose read() is the hardware's measured position (published on joint_states).
MEASURING = ('serial', 'dynamixel')
# Drivers whose head holds while the driver is down: the core does not step, so its command
# stays the controller's last one and goes on from there when the driver is back (a forward
# position controller would jump to wherever the core had got meanwhile), and the first
# command of all starts from the first measured position (the core syncs to it).
HOLDING = ('ros2_control',)
FIRST_BACKOFF_S = 0.5


@dataclass(frozen=True)
class Step:
    """What one control tick did, and what the node reports of it."""

    reading: tuple[float, float] | None   # what the driver measured (None: nothing)
    command: JointCommand | None          # what the core stepped to (None: held, HOLDING)
    sent: bool                            # the driver took the command
    joints: tuple | None = None           # joint_states' (positions, velocities or None)
    pains: tuple[PainEvent, ...] = ()     # since the last tick
    notices: tuple[str, ...] = ()
    status: HeadStatus | None = None      # the head's state, when one is due


class DriverSupervisor:
    """Keeps `driver` open and feeds the core through it; the head's state is due every
    `state_period_s`.

    `ok`, `error`, `retry_at` (when the next attempt comes) and `commands_sent` are the
    driver's state for the head's state message and diagnostics; `velocity` is the last
    stepped command's, for a driver that publishes it (sim).
    """

    def __init__(self, core: HeadController, driver: HeadDriver, reconnect_max_s: float,
                 info: Callable[[str], None] = lambda line: None,
                 warn: Callable[[str], None] = lambda line: None,
                 state_period_s: float = 0.1):
        self.core = core
        self.driver = driver
        self.reconnect_max_s = reconnect_max_s
        self.state_period_s = state_period_s
        self._next_state = 0.0
        self._info, self._warn = info, warn
        self.ok = False
        self.error = ''
        self.retry_at = 0.0
        self.backoff = FIRST_BACKOFF_S
        self.commands_sent = 0
        self.velocity = (0.0, 0.0)
        self._restart = False        # opened: the command restarts from the first position

    def open(self, now: float) -> None:
        """Open the driver; a fault is kept and retried by `tick`."""
        try:
            self.driver.open()
        except DriverError as exc:
            self.fault(str(exc), now)
            return
        if not self.ok:
            self._info(f'head driver {self.driver.name} ready')
        self.ok, self.error, self.backoff = True, '', FIRST_BACKOFF_S
        self._restart = True

    def fault(self, error: str, now: float) -> None:
        self.ok, self.error = False, error
        self.retry_at = now + self.backoff
        self._warn(f'head driver fault: {error}; retrying in {self.backoff:.1f} s')
        self.backoff = min(self.reconnect_max_s, self.backoff * 2)

    def close(self) -> None:
        self.driver.close()
        self.ok = False

    def measured(self, pan: float, tilt: float, now: float, velocity: tuple | None,
                 source_t: float | None) -> CommandResult:
        """A joint reading from joint_states (driver sim): to the core, and to the driver
        when the core takes it."""
        result = self.core.set_measured(pan, tilt, now, *(velocity or (None, None)),
                                        source_t=source_t)
        if result.accepted:
            self.driver.feed(pan, tilt)
        return result

    def health(self, now: float) -> Health:
        """The driver's health, with the head's mode."""
        mode = self.core.status(now).mode.name.lower()
        return driver_health(self.driver.name, self.ok, self.error, self.commands_sent, mode,
                             self.retry_at - now,
                             '' if self.core.feels_movement else NO_FEEDBACK)

    def tick(self, dt: float, now: float) -> Step:
        """Reconnect when due, read, step the core by `dt`, write; gather the pain, the
        notices and (when due) the state."""
        if not self.ok and now >= self.retry_at:
            self.open(now)
        reading = None
        if self.ok and self.driver.name != 'sim':
            try:
                reading = self.driver.read()
            except DriverError as exc:
                self.fault(str(exc), now)
            if reading is not None:
                self.core.set_measured(reading[0], reading[1], now)
        self._feel(reading is not None, now)
        settling = self.ok and getattr(self.driver, 'awaiting_position', False)
        if self.ok and self._restart and not settling:
            self._restart = False
            self.core.restart_from(reading)
        command = None
        if (self.ok and not settling) or (not self.ok and self.driver.name not in HOLDING):
            command = self.core.step(dt, now)
            self.velocity = (command.pan_velocity, command.tilt_velocity)
        sent = False
        if self.ok and command is not None:
            try:
                self.driver.write(command.pan, command.tilt)
            except DriverError as exc:
                self.fault(str(exc), now)
            else:
                self.commands_sent += 1
                sent = True
        status = None
        if now >= self._next_state:
            self._next_state = now + self.state_period_s
            status = self.core.status(now)
        return Step(reading, command, sent, self._joint_state(reading, command),
                    tuple(self.core.pop_pain()), tuple(self.core.pop_notices()), status)

    def _feel(self, measured: bool, now: float) -> None:
        """What the servos report of themselves, to the core (efforts: only when this tick
        read them)."""
        harms = getattr(self.driver, 'harms', None) or {}
        efforts = getattr(self.driver, 'efforts', None) if measured else None
        if not (harms or efforts):
            return
        self.core.feel({JOINT_NAMES.get(j, j): kinds for j, kinds in harms.items()},
                       None if efforts is None else
                       {JOINT_NAMES.get(j, j): e for j, e in efforts.items()}, now)

    def _joint_state(self, reading, command) -> tuple[tuple, tuple | None] | None:
        """The positions and velocities (None: unknown) a tick's joint_states carry: what the
        hardware reported, else what it was told (a dry run has reached it); None: held."""
        if command is None:
            return None
        if reading is not None and self.driver.name in MEASURING:
            return reading, None
        return (command.pan, command.tilt), self.velocity
