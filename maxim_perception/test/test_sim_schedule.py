"""The simulated head's parameters and its thread's schedule, without MuJoCo or ROS."""

import pytest

from maxim_perception.sim.params import PARAMS, read_params, SimSchedule


def params(**changes):
    values = {name: spec[0] for name, spec in PARAMS.items()}
    values.update(changes)
    return read_params(values)


def test_the_defaults():
    p = params()
    assert (p.width, p.height, p.fps, p.physics_rate_hz) == (320, 240, 15.0, 100.0)
    assert p.publish_clock and p.frame_id == 'camera_optical_frame'


def test_a_stall_does_not_make_the_physics_jump():
    s = SimSchedule(params(), start=10.0)
    assert s.dt(10.01) == pytest.approx(0.01)
    assert s.dt(15.0) == 0.1


def test_frames_and_joint_states_are_due_on_sim_time():
    s = SimSchedule(params(fps=10.0, joint_state_rate_hz=20.0), start=0.0)
    frames = [t / 100 for t in range(100) if s.frame_due(t / 100)]
    assert len(frames) == 10 and frames[:2] == [0.0, 0.1]
    joints = [t / 100 for t in range(100) if s.joints_due(t / 100)]
    assert len(joints) == 20
    # A jump ahead in sim time: the schedule goes on from there, no burst of missed frames.
    assert s.frame_due(5.0) and s.frame_due(5.05) and not s.frame_due(5.08)
    assert s.frame_due(5.12)


def test_ticks_keep_their_period_and_a_loop_behind_does_not_burst():
    s = SimSchedule(params(physics_rate_hz=100.0), start=0.0)
    assert s.wait(0.001) == pytest.approx(0.009)
    assert s.wait(0.5) == 0.0                           # far behind: start over from now
    assert s.wait(0.5) == pytest.approx(0.01)
