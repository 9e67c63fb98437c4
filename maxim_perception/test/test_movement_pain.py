"""Movement pain only from real harm (head/motion.py, HeadController): a joint on its way to a
far command at the speed its driver allows is not hurt; a stalled, blocked, retreating one,
or one held off by a limit, is. Pure: no ROS, no simulation (test_sim_tracking.py holds a
joint of the MuJoCo head)."""

import math

import pytest

from maxim_perception.head.control import (HeadConfig, HeadController, HeadGoalSpec, HeadMode,
                                           PainType)
from maxim_perception.head.drivers import (DryRunDriver, SerialServoDriver, ServoMapping,
                                           SimDriver)
from maxim_perception.head.dynamixel import DynamixelDriver
from maxim_perception.head.motion import (AT_LIMIT, judge, MotionModel, MOVING_AWAY, STALLED,
                                          TOO_SLOW, Trajectory)

DT = 0.02   # 50 Hz


class Servo:
    """A joint pair that turns towards the command at `speed` rad/s (per joint), stopping at
    `stop` (pan, a mechanical limit) if given; `frozen` holds both where they are,
    `tilt_frozen` the tilt joint only."""

    def __init__(self, speed, stop=None, frozen=False, tilt_frozen=False):
        self.speed, self.stop, self.frozen, self.tilt_frozen = speed, stop, frozen, tilt_frozen
        self.pan = self.tilt = 0.0

    def follow(self, cmd, dt):
        if self.frozen:
            return
        step = self.speed * dt
        self.pan += max(-step, min(step, cmd.pan - self.pan))
        if not self.tilt_frozen:
            self.tilt += max(-step, min(step, cmd.tilt - self.tilt))
        if self.stop is not None:
            self.pan = min(self.pan, self.stop)


def drive(ctrl, servo, seconds, t0=0.0, clock_rate=1.0):
    """Close the loop for `seconds`: step, the servo follows, its reading comes back stamped
    on its own clock (running at clock_rate times `now`'s). Returns (largest pan distance from
    the command, end time)."""
    t, far = t0, 0.0
    for _ in range(int(round(seconds / DT))):
        t = round(t + DT, 9)
        cmd = ctrl.step(DT, t)
        servo.follow(cmd, DT * clock_rate)
        ctrl.set_measured(servo.pan, servo.tilt, t, source_t=t * clock_rate)
        far = max(far, abs(cmd.pan - servo.pan))
    return far, t


def head(goal_pan, model=None, **config):
    ctrl = HeadController(HeadConfig(**config))
    if model is not None:
        ctrl.set_motion_model(model)
    ctrl.set_measured(0.0, 0.0, 0.0, source_t=0.0)
    ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='far', pan=goal_pan), 0.0)
    return ctrl


def movement_pain(ctrl):
    return [p for p in ctrl.pop_pain() if p.pain_type == PainType.MOVEMENT_ERROR]


# ---- what is not harm ------------------------------------------------------------------------

def test_a_joint_following_a_far_command_at_its_drivers_speed_for_seconds_is_not_hurt():
    # A Dynamixel with a 1 rad/s profile velocity under a controller that commands 3 rad/s:
    # the command runs ~1.5 rad (86 deg) ahead, and the servo is doing all it can.
    ctrl = head(2.5, MotionModel(max_velocity=1.0))
    far, _ = drive(ctrl, Servo(speed=1.0), 4.0)
    assert far > 1.4
    assert movement_pain(ctrl) == []
    assert ctrl.status(4.0).goal_reached


def test_the_sim_slower_than_real_time_is_judged_on_its_own_clock():
    # The ./maxim sim case: the simulated servo turns at the URDF's 3 rad/s in simulated
    # seconds, and the simulation runs at 0.4 of real time, so the pan joint falls ~14 deg
    # and more behind the command. Its joint_states stamps are the simulation's clock.
    ctrl = head(2.0)
    far, _ = drive(ctrl, Servo(speed=3.0), 3.0, clock_rate=0.4)
    assert far > math.radians(14)
    assert movement_pain(ctrl) == []


def test_a_starved_simulation_is_held_back_only_for_the_time_its_own_clock_says():
    # The simulation thread gets a fifth of real time: a joint held for 0.3 simulated
    # seconds takes 1.5 s of the wall clock, but it had no more time than 0.3 s to move.
    ctrl = head(2.0)
    servo = Servo(speed=3.0, frozen=True)
    _, t = drive(ctrl, servo, 1.5, clock_rate=0.2)
    servo.frozen = False
    drive(ctrl, servo, 5.0, t0=t, clock_rate=0.2)
    assert movement_pain(ctrl) == []
    assert abs(servo.pan - 2.0) < 1e-9


def test_a_joint_that_slows_down_near_its_goal_is_on_its_way():
    # 0.3 rad from its command at 0.4 rad/s: it arrives within movement_error_s (0.5 s)
    # at 0.6 rad/s, and 0.4 is more than half of that.
    trail = Trajectory(0.25)
    for i in range(16):
        trail.add(i * DT, 1.0 + 0.4 * i * DT)
    position = trail.position
    verdict = judge(position + 0.3, trail, (-2.6, 2.6), 3.0, 0.2, 0.5, 0.5, 0.02)
    assert verdict.distance == pytest.approx(0.3)
    assert verdict.speed == pytest.approx(0.4) and verdict.expected == pytest.approx(0.6)
    assert not verdict.hurt


def test_an_ideal_driver_that_reads_back_its_command_never_hurts():
    ctrl = head(2.5, MotionModel(max_velocity=math.inf))
    t = 0.0
    for _ in range(200):                      # the dry run: what was told is what is read
        t = round(t + DT, 9)
        cmd = ctrl.step(DT, t)
        ctrl.set_measured(cmd.pan, cmd.tilt, t)
    assert movement_pain(ctrl) == []


# ---- what is harm ----------------------------------------------------------------------------

def test_a_joint_held_against_its_command_hurts():
    ctrl = head(1.5, MotionModel(max_velocity=1.0))
    drive(ctrl, Servo(speed=1.0, frozen=True), 0.5)
    assert movement_pain(ctrl) == []          # far, but not yet for movement_error_s
    drive(ctrl, Servo(speed=1.0, frozen=True), 1.0, t0=0.5)
    pain = movement_pain(ctrl)
    assert len(pain) == 1 and pain[0].source == 'head_pan_joint' and pain[0].context == 'move'
    assert 'deg from its command' in pain[0].message and STALLED in pain[0].message


def test_a_joint_at_a_quarter_of_its_drivers_speed_for_longer_than_movement_error_s_hurts():
    ctrl = head(2.5, MotionModel(max_velocity=2.0), movement_error_s=0.5)
    servo = Servo(speed=0.5)
    drive(ctrl, servo, 0.5)
    assert movement_pain(ctrl) == []          # held back, but not yet for movement_error_s
    drive(ctrl, servo, 1.0, t0=0.5)
    pain = movement_pain(ctrl)
    assert len(pain) == 1 and TOO_SLOW in pain[0].message
    assert '+0.50 rad/s towards it' in pain[0].message
    # The same joint at three quarters of the speed is on its way.
    ctrl = head(2.5, MotionModel(max_velocity=2.0), movement_error_s=0.5)
    drive(ctrl, Servo(speed=1.5), 3.0)
    assert movement_pain(ctrl) == []


def test_a_joint_at_its_limit_with_the_command_beyond_it_hurts():
    # The servo's own limit (a Dynamixel's position limit, a board's pulse range) stops the
    # joint at 1.0 rad while the command goes on to 2.0: it arrives at the allowed speed,
    # then is held off by the limit.
    ctrl = head(2.0, MotionModel(max_velocity=3.0, pan_limits=(-1.0, 1.0)))
    drive(ctrl, Servo(speed=3.0, stop=1.0), 2.0)
    pain = movement_pain(ctrl)
    assert len(pain) == 1 and AT_LIMIT in pain[0].message
    assert pain[0].source == 'head_pan_joint'


def test_a_joint_moving_away_from_its_command_hurts():
    ctrl = head(1.0, MotionModel(max_velocity=3.0))
    t = 0.0
    pan = 0.0
    for _ in range(50):
        t = round(t + DT, 9)
        ctrl.step(DT, t)
        pan -= 0.5 * DT                       # wrong way: a reversed servo
        ctrl.set_measured(pan, 0.0, t)
    pain = movement_pain(ctrl)
    assert len(pain) == 1 and MOVING_AWAY in pain[0].message


def test_the_pain_names_the_joint_that_is_held():
    ctrl = HeadController(HeadConfig())
    ctrl.set_measured(0.0, 0.0, 0.0)
    ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='up', pan=1.0, tilt=0.7), 0.0)
    drive(ctrl, Servo(speed=3.0, tilt_frozen=True), 1.5)
    pain = movement_pain(ctrl)
    assert len(pain) == 1 and pain[0].source == 'head_tilt_joint'
    assert pain[0].message.startswith('head_tilt_joint is 40.1 deg from its command')


# ---- the pieces --------------------------------------------------------------------------------

def test_trajectory_velocity_needs_half_a_window_and_restarts_when_the_clock_goes_back():
    trail = Trajectory(0.2)
    assert trail.velocity() is None and trail.position is None
    trail.add(0.0, 0.0)
    trail.add(0.05, 0.1)
    assert trail.velocity() is None           # 0.05 s < half the window
    for i in range(2, 30):
        trail.add(i * 0.05, i * 0.1)
    assert trail.velocity() == pytest.approx(2.0)
    trail.add(0.01, 5.0)                      # a simulation restarted
    assert trail.position == 5.0 and trail.velocity() is None
    assert judge(0.0, Trajectory(0.2), (-1, 1), 1.0, 0.2, 0.5, 0.5, 0.02) is None
    with pytest.raises(ValueError, match='window_s'):
        Trajectory(0.0)


def test_motion_model_validates_and_comes_from_each_driver():
    with pytest.raises(ValueError, match='max_velocity'):
        MotionModel(max_velocity=0.0)
    with pytest.raises(ValueError, match='pan_limits'):
        MotionModel(pan_limits=(1.0, -1.0))
    with pytest.raises(ValueError, match='movement_speed_ratio'):
        HeadConfig(movement_speed_ratio=0.0)
    with pytest.raises(ValueError, match='movement_window_s'):
        HeadConfig(movement_window_s=0.0)
    assert MotionModel.of(SimDriver(lambda p, t: None)) == MotionModel()
    assert MotionModel.of(DryRunDriver()).max_velocity == math.inf
    assert MotionModel.of(object()) == MotionModel()    # a driver that says nothing
    serial = MotionModel.of(SerialServoDriver('/dev/null'))
    assert serial.max_velocity == math.inf             # the firmware echoes what it applies
    assert serial.pan_limits == pytest.approx((-2.6, 2.6))
    # A map reaching past the board's 500..2500 us: the board's range is the limit.
    wide = SerialServoDriver('/dev/null', pan=ServoMapping(-2.6, 2.6, 300, 2700))
    inside = 5.2 * 200 / 2400              # 200 us of the 2400 us map, in rad
    assert MotionModel.of(wide).pan_limits == pytest.approx((-2.6 + inside, 2.6 - inside))
    dxl = MotionModel.of(DynamixelDriver('/dev/null', profile_velocity=1.0))
    assert dxl.max_velocity == pytest.approx(1.0, abs=0.01)   # 42 units of 0.229 rev/min
    assert dxl.pan_limits == pytest.approx((-2.6, 2.6), abs=2 * math.pi / 4096)
