"""Harm felt from the servos themselves: a Dynamixel's Hardware Error Status and its present
current become pain of their own kind, with the joint, through the supervised loop the head
controller node runs (head/supervision.py), on the emulated protocol-2.0 bus
(test/helpers/dynamixel_bus.py). A driver that cannot feel says so and raises no movement
pain.

The loop is ticked at 50 Hz on its own clock (`now`, as the node's), a tick's time slept
between ticks so that the emulated servos, which move in real time, keep up: "within 0.5 s" is
counted in ticks of that clock, which load cannot shorten.
"""

import math
import time

from helpers.dynamixel_bus import DynamixelBus
import pytest

from maxim_perception.head.control import (HeadConfig, HeadController, HeadGoalSpec, HeadMode,
                                           PainType)
from maxim_perception.head.drivers import DryRunDriver
from maxim_perception.head.dynamixel import DynamixelDriver, DynamixelJoint
from maxim_perception.head.motion import MotionModel
from maxim_perception.head.supervision import DriverSupervisor

DT = 0.02
HALF_SECOND = 25          # ticks of DT
XL330_M288 = 1200         # a model that senses current (Current Limit 1750 in the emulator)


def supervised(driver, **config):
    core = HeadController(HeadConfig(**config))
    core.set_motion_model(MotionModel.of(driver))
    return DriverSupervisor(core, driver, reconnect_max_s=10.0)


def run(sup, ticks, t0=0.0):
    """Tick the loop `ticks` times from t0; (every pain, the tick each came at, the end)."""
    pains, t = [], t0
    for k in range(ticks):
        t = round(t + DT, 9)
        step = sup.tick(DT, t)
        pains += [(k, p) for p in step.pains]
        # The emulated servos move in real time: a tick of the loop's clock is a tick of theirs.
        time.sleep(DT)
    return pains, t


@pytest.fixture
def head():
    """A Dynamixel pan/tilt on the emulated bus, opened by the supervisor, at rest."""
    buses, sups = [], []

    def make(model=1060, **config):
        bus = DynamixelBus(ids=(1, 2), model=model)
        buses.append(bus)
        driver = DynamixelDriver(bus.port, pan=DynamixelJoint(1, -2.6, 2.6),
                                 tilt=DynamixelJoint(2, -0.8, 0.8), profile_velocity=3.0)
        sup = supervised(driver, **config)
        sups.append(sup)
        sup.open(0.0)
        assert sup.ok, sup.error
        pains, t = run(sup, 10)
        assert pains == []
        return bus, sup, t

    yield make
    for sup in sups:
        sup.close()
    for bus in buses:
        bus.close()


@pytest.mark.parametrize('bits, kind', [(0x20, PainType.OVERLOAD),
                                        (0x04, PainType.OVERHEATING),
                                        (0x10, PainType.ELECTRICAL_SHOCK),
                                        (0x08, PainType.ENCODER_ERROR)])
def test_a_servos_hardware_error_is_pain_of_its_kind_with_the_joint(head, bits, kind):
    bus, sup, t = head()
    bus.set_hardware_error(2, bits)            # the tilt servo shuts itself down
    pains, t = run(sup, HALF_SECOND, t)
    assert pains, 'no pain within 0.5 s of the servo reporting a hardware error'
    k, pain = pains[0]
    assert pain.pain_type == kind and pain.type_name == kind.name.lower()
    assert pain.source == 'head_tilt_joint'
    assert 'tilt servo (ID 2)' in pain.message and 0 < pain.intensity <= 1
    assert k <= 2                               # the tick that read it, or the next
    assert not sup.ok and 'hardware error' in sup.error     # and a driver fault
    assert [p.source for _, p in pains] == ['head_tilt_joint']   # one pain per cooldown
    # While the servo still reports it, it still hurts, and more (one per cooldown).
    again, _ = run(sup, int(2.5 / DT), t)
    assert [p.pain_type for _, p in again] == [kind]
    assert again[0][1].repeat_count == 2 and again[0][1].intensity > pain.intensity


def test_an_input_voltage_error_is_a_driver_fault_not_pain(head):
    bus, sup, t = head()
    bus.set_hardware_error(1, 0x01)            # the supply sagged: no harm to the servo
    pains, _ = run(sup, HALF_SECOND, t)
    assert pains == [] and not sup.ok and 'input voltage error' in sup.error


@pytest.mark.parametrize('model, effort', [(1060, 950),             # XL430: 95.0 % load
                                           (XL330_M288, 1600)])     # 1600 of 1750 mA
def test_a_stalled_servo_that_strains_is_overcurrent_pain_within_half_a_second(
        head, model, effort):
    bus, sup, t = head(model=model)
    bus.block(1, effort)                       # a hand holds the pan
    sup.core.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='left', pan=1.0), t)
    pains, t = run(sup, HALF_SECOND, t)
    overcurrent = [(k, p) for k, p in pains if p.pain_type == PainType.OVERCURRENT]
    assert overcurrent, 'no overcurrent pain within 0.5 s of the stall'
    k, pain = overcurrent[0]
    assert pain.source == 'head_pan_joint' and pain.type_name == 'overcurrent'
    assert 'strains at' in pain.message
    assert k * DT >= sup.core.config.effort_s - DT    # not before it lasted effort_s
    assert sup.ok                              # the servo still answers: no fault
    assert bus.present(1) == 2048              # and it was held


def test_a_servo_that_moves_freely_or_strains_briefly_does_not_hurt(head):
    bus, sup, t = head()
    sup.core.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='left', pan=1.0, tilt=0.3), t)
    pains, t = run(sup, 50, t)
    assert pains == []
    assert sup.driver.efforts == {'pan': 0.0, 'tilt': 0.0}
    # A strain shorter than effort_s (a bump, a start) is no harm either.
    sup.core.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='right', pan=-1.0), t)
    bus.block(1, 950)
    pains, t = run(sup, 5, t)
    bus.block(1, None)
    more, t = run(sup, 20, t)
    assert pains + more == []


def test_the_core_judges_effort_over_time_and_harm_per_kind_and_joint():
    core = HeadController(HeadConfig(effort_limit=0.8, effort_s=0.2, pain_cooldown_s=2.0))
    pan = 'head_pan_joint'
    for k in range(9):                             # 0.16 s over the limit
        core.feel({}, {pan: 0.9}, k * DT)
    assert core.pop_pain() == []
    core.feel({}, {pan: 0.5}, 0.2)                 # a dip under the limit starts it over
    for k in range(10):                            # 0.22 .. 0.40: 0.18 s over
        core.feel({}, {pan: 0.85}, 0.22 + k * DT)
    assert core.pop_pain() == []
    core.feel({}, {pan: 0.85}, 0.44)
    [pain] = core.pop_pain()
    assert pain.pain_type == PainType.OVERCURRENT and pain.source == pan
    core.feel({}, None, 0.5)                       # not measured this tick: nothing changes
    assert core.pop_pain() == []
    # Each kind of each joint in its own cooldown: a second joint, a second kind, hurt now.
    core.feel({'head_tilt_joint': (('overload', 'tilt servo reports overload'),),
               pan: (('overheating', 'pan servo reports overheating'),
                     ('overload', 'pan servo reports overload'))}, None, 0.5)
    got = {(p.type_name, p.source) for p in core.pop_pain()}
    assert got == {('overload', 'head_tilt_joint'), ('overheating', pan), ('overload', pan)}


def test_a_driver_that_cannot_feel_says_so_and_raises_no_movement_pain():
    dry = supervised(DryRunDriver(), movement_error_s=0.1)
    dry.open(0.0)
    health = dry.health(0.0)
    assert 'no feedback: movement pain off' in health.message
    assert health.values['movement_pain'] == 'off'
    # A reading far from the command for seconds would hurt a driver that feels.
    for driver_feels in (False, True):
        core = HeadController(HeadConfig(movement_error_s=0.1))
        core.set_motion_model(MotionModel(max_velocity=math.inf, feedback=driver_feels))
        core.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='far', pan=1.0), 0.0)
        for k in range(100):
            core.step(DT, k * DT)
            core.set_measured(0.0, 0.0, k * DT)
        pains = [p for p in core.pop_pain() if p.pain_type == PainType.MOVEMENT_ERROR]
        assert bool(pains) == driver_feels
    feels = supervised(DynamixelDriver('/dev/null')).health(0.0)
    assert 'movement pain off' not in feels.message and feels.values['movement_pain'] == 'on'
