"""The head controller core: limits, bad commands, smooth motion, goals and pain."""

import math

import pytest

from maxim_perception.head.control import (angle_between_deg, HeadConfig, HeadController,
                                           HeadGoalSpec, HeadMode, PainType, TargetView)

DT = 0.02  # 50 Hz


def run(ctrl, seconds, t0=0.0, measured=None, each=None):
    """Step the controller for `seconds`; feed back the command as measured (ideal servo)
    unless `measured` gives a fixed reading. Returns (commands, end time)."""
    out = []
    n = int(round(seconds / DT))
    t = t0
    for _ in range(n):
        t = round(t + DT, 9)
        if each:
            each(t)
        cmd = ctrl.step(DT, t)
        out.append(cmd)
        ctrl.set_measured(*(measured if measured else (cmd.pan, cmd.tilt)), t)
    return out, t


def test_config_validates():
    with pytest.raises(ValueError, match='min < max'):
        HeadConfig(pan_min=1.0, pan_max=-1.0)
    with pytest.raises(ValueError, match='max_velocity'):
        HeadConfig(max_velocity=0.0)
    with pytest.raises(ValueError, match='finite'):
        HeadConfig(tilt_max=math.inf)
    c = HeadConfig()
    assert (c.pan_min, c.pan_max, c.tilt_min, c.tilt_max) == (-2.6, 2.6, -0.8, 0.8)


def test_move_goal_is_rate_and_acceleration_limited_and_reaches_the_goal():
    cfg = HeadConfig(max_velocity=2.0, max_acceleration=8.0)
    ctrl = HeadController(cfg)
    result = ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='g1', pan=1.5, tilt=0.5), 0.0)
    assert result.accepted and not result.clamped and result.reason == ''
    cmds, t = run(ctrl, 2.5)
    prev_pan, prev_vel = 0.0, 0.0
    for cmd in cmds:
        assert abs(cmd.pan_velocity) <= cfg.max_velocity + 1e-9
        assert abs(cmd.pan_velocity - prev_vel) <= cfg.max_acceleration * DT + 1e-9
        assert abs(cmd.pan - prev_pan) <= cfg.max_velocity * DT + 1e-9
        prev_pan, prev_vel = cmd.pan, cmd.pan_velocity
    assert max(abs(c.pan_velocity) for c in cmds) == pytest.approx(cfg.max_velocity)
    # No overshoot: the profile brakes onto the goal.
    assert max(c.pan for c in cmds) <= 1.5 + 1e-9
    assert cmds[-1].pan == pytest.approx(1.5, abs=1e-6)
    assert cmds[-1].tilt == pytest.approx(0.5, abs=1e-6)
    status = ctrl.status(t)
    assert status.goal_reached and status.mode == HeadMode.MOVE
    assert status.active_goal_id == 'g1' and not status.reflex_active


def test_out_of_range_goal_is_clamped_with_a_reason_and_a_joint_limit_pain():
    ctrl = HeadController()
    result = ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='far', pan=4.0, tilt=-2.0), 0.0)
    assert result.accepted and result.clamped
    assert 'pan 4.000 outside [-2.6, 2.6]' in result.reason
    assert 'tilt -2.000 outside [-0.8, 0.8]' in result.reason
    pain = ctrl.pop_pain()
    assert [p.pain_type for p in pain] == [PainType.JOINT_LIMIT]
    cmds, _ = run(ctrl, 3.0)
    assert all(-2.6 <= c.pan <= 2.6 and -0.8 <= c.tilt <= 0.8 for c in cmds)
    assert cmds[-1].pan == pytest.approx(2.6) and cmds[-1].tilt == pytest.approx(-0.8)


@pytest.mark.parametrize('pan, tilt', [(math.nan, 0.0), (0.0, math.inf), (-math.inf, 1.0)])
def test_non_finite_commands_are_rejected_and_do_not_move_the_head(pan, tilt):
    ctrl = HeadController()
    result = ctrl.set_reflex_target(pan, tilt, now=0.0)
    assert not result.accepted and 'not finite' in result.reason
    result = ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='bad', pan=pan, tilt=tilt), 0.0)
    assert not result.accepted and 'not finite' in result.reason
    assert not ctrl.set_measured(pan, tilt, 0.0).accepted
    cmds, _ = run(ctrl, 0.5)
    assert all(c.pan == 0.0 and c.tilt == 0.0 for c in cmds)
    assert ctrl.goal is None


def test_stale_and_future_commands_are_rejected():
    ctrl = HeadController(HeadConfig(command_timeout_s=0.5))
    result = ctrl.set_reflex_target(0.5, 0.0, now=10.0, stamp=9.0)
    assert not result.accepted and 'stale, 1.000 s old > 0.5 s' in result.reason
    result = ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='old', pan=1.0, stamp=8.0), 10.0)
    assert not result.accepted and 'stale' in result.reason
    result = ctrl.set_reflex_target(0.5, 0.0, now=10.0, stamp=12.0)
    assert not result.accepted and 'future' in result.reason
    assert ctrl.set_reflex_target(0.5, 0.0, now=10.0, stamp=9.8).accepted


def test_bad_goals_are_rejected_with_reasons():
    ctrl = HeadController()
    result = ctrl.set_goal(HeadGoalSpec(99, goal_id='x'), 0.0)
    assert not result.accepted and 'unknown mode 99' in result.reason
    result = ctrl.set_goal(HeadGoalSpec(HeadMode.TRACK_TARGET, goal_id='t'), 0.0)
    assert not result.accepted and 'track_id or a target_label' in result.reason
    result = ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='d', duration_s=-1.0), 0.0)
    assert not result.accepted and 'negative duration_s' in result.reason
    result = ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='s', pan=0.1, speed=3.0), 0.0)
    assert result.accepted and result.clamped and 'speed 3.0 clamped to 1.0' in result.reason


def test_stale_reflex_lets_go_and_the_head_holds():
    ctrl = HeadController(HeadConfig(command_timeout_s=0.3))
    ctrl.set_reflex_target(1.0, 0.0, now=0.0)
    cmds, t = run(ctrl, 0.3)
    moving_pan = cmds[-1].pan
    assert moving_pan > 0.05
    assert ctrl.status(t).reflex_active
    cmds, t = run(ctrl, 1.5, t0=t)
    # It braked to a stop short of 1.0 instead of chasing a target nobody refreshes.
    assert cmds[-1].pan_velocity == pytest.approx(0.0, abs=1e-9)
    assert moving_pan < cmds[-1].pan < 1.0
    status = ctrl.status(t)
    assert not status.reflex_active and not status.has_target


def test_goal_overrides_reflex_until_it_expires_then_reflex_resumes():
    ctrl = HeadController()
    reflex = (0.8, 0.2)

    def attention(t):
        ctrl.set_reflex_target(*reflex, now=t)

    _, t = run(ctrl, 2.0, each=attention)
    assert ctrl.status(t).goal_reached and ctrl.status(t).reflex_active
    ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='look-left', pan=-1.0, tilt=0.0,
                               duration_s=2.0), t)
    cmds, t = run(ctrl, 1.9, t0=t, each=attention)
    status = ctrl.status(t)
    assert status.mode == HeadMode.MOVE and status.active_goal_id == 'look-left'
    assert not status.reflex_active and status.goal_reached
    assert cmds[-1].pan == pytest.approx(-1.0)
    cmds, t = run(ctrl, 2.0, t0=t, each=attention)
    assert any('expired after 2 s' in n for n in ctrl.pop_notices())
    status = ctrl.status(t)
    assert status.mode == HeadMode.RELEASE and status.reflex_active
    assert cmds[-1].pan == pytest.approx(0.8)


def test_release_and_stop():
    ctrl = HeadController()
    ctrl.set_reflex_target(0.0, 0.0, now=0.0)
    ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='m', pan=2.0), 0.0)
    cmds, t = run(ctrl, 0.5)
    assert cmds[-1].pan_velocity > 1.0
    result = ctrl.set_goal(HeadGoalSpec(HeadMode.STOP, goal_id='halt'), t)
    assert result.accepted
    stop_cmds, t = run(ctrl, 1.0, t0=t)
    # Braked at the acceleration limit, then held still.
    assert stop_cmds[-1].pan_velocity == 0.0
    assert stop_cmds[-1].pan < 2.0
    assert all(abs(b.pan_velocity) <= abs(a.pan_velocity) + 1e-9
               for a, b in zip(stop_cmds, stop_cmds[1:]))
    result = ctrl.set_goal(HeadGoalSpec(HeadMode.RELEASE, goal_id='r'), t)
    assert result.accepted and "released goal 'halt'" in result.reason
    assert ctrl.goal is None


def test_move_relative_starts_from_the_measured_position():
    ctrl = HeadController()
    ctrl.set_measured(0.5, 0.1, 0.0)
    ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE_RELATIVE, goal_id='nudge', pan=0.25, tilt=-0.2),
                  0.0)
    cmds, t = run(ctrl, 1.5)
    assert cmds[0].pan == pytest.approx(0.5, abs=0.01)   # starts where the head is
    assert cmds[-1].pan == pytest.approx(0.75) and cmds[-1].tilt == pytest.approx(-0.1)


def test_tracking_goals_follow_attention_targets():
    ctrl = HeadController()
    targets = [TargetView(1, 0.5, 0.1, 'face', salience=0.9, novelty=0.1),
               TargetView(2, -0.6, -0.2, 'red object', salience=0.5, novelty=0.9),
               TargetView(3, 1.2, 0.3, 'green object', salience=0.3, novelty=0.2)]

    def attention(t):
        ctrl.update_targets(targets, t)

    ctrl.set_goal(HeadGoalSpec(HeadMode.TRACK_TARGET, goal_id='t', target_label='Face'), 0.0)
    cmds, t = run(ctrl, 1.5, each=attention)
    assert (cmds[-1].pan, cmds[-1].tilt) == pytest.approx((0.5, 0.1))
    ctrl.set_goal(HeadGoalSpec(HeadMode.TRACK_TARGET, goal_id='t3', track_id=3), t)
    cmds, t = run(ctrl, 1.5, t0=t, each=attention)
    assert (cmds[-1].pan, cmds[-1].tilt) == pytest.approx((1.2, 0.3))
    ctrl.set_goal(HeadGoalSpec(HeadMode.NOVELTY_TRACK, goal_id='n'), t)
    cmds, t = run(ctrl, 1.5, t0=t, each=attention)
    assert (cmds[-1].pan, cmds[-1].tilt) == pytest.approx((-0.6, -0.2))
    # Focus on interests: most salient first, then the others in turn, dwell_s each.
    ctrl.set_goal(HeadGoalSpec(HeadMode.FOCUS_INTERESTS, goal_id='f'), t)
    visited = []
    for _ in range(4):
        cmds, t = run(ctrl, ctrl.config.focus_dwell_s, t0=t, each=attention)
        visited.append(min(targets, key=lambda v: abs(v.pan - cmds[-1].pan)).track_id)
    assert visited == [1, 2, 3, 1]


def test_tracking_goal_holds_when_attention_goes_quiet():
    ctrl = HeadController(HeadConfig(command_timeout_s=0.2))
    ctrl.update_targets([TargetView(7, 1.0, 0.0)], 0.0)
    ctrl.set_goal(HeadGoalSpec(HeadMode.TRACK_TARGET, goal_id='t', track_id=7), 0.0)
    cmds, t = run(ctrl, 2.0)
    assert 0.0 < cmds[-1].pan < 1.0 and cmds[-1].pan_velocity == 0.0
    assert ctrl.status(t).mode == HeadMode.TRACK_TARGET and not ctrl.status(t).has_target


def test_direction_thrashing_hurts():
    cfg = HeadConfig(thrash_reversals=4, thrash_window_s=2.0, pain_cooldown_s=1.0)
    ctrl = HeadController(cfg)
    sides = iter([0.4, -0.4] * 20)
    side = {'pan': next(sides)}

    def flip(t):
        if int(round(t / DT)) % 10 == 0:     # a new opposite target every 0.2 s
            side['pan'] = next(sides)
        ctrl.set_reflex_target(side['pan'], 0.0, now=t)

    run(ctrl, 2.0, each=flip)
    pain = ctrl.pop_pain()
    assert pain and all(p.pain_type == PainType.DIRECTION_THRASHING for p in pain)
    assert pain[0].source == 'head_pan_joint' and pain[0].context == 'reflex'
    assert 'reversed direction' in pain[0].message and 0 < pain[0].intensity <= 1
    assert pain[0].type_name == 'direction_thrashing'
    # Cooldown: at most one per pain_cooldown_s; repeats escalate.
    run(ctrl, 4.0, t0=2.0, each=flip)
    more = ctrl.pop_pain()
    assert 1 <= len(more) <= 4
    assert more[-1].repeat_count > pain[0].repeat_count
    assert more[-1].intensity > pain[0].intensity


def test_steady_tracking_does_not_thrash():
    ctrl = HeadController()

    def sweep(t):
        ctrl.set_reflex_target(0.5 * math.sin(2 * math.pi * t / 8.0), 0.0, now=t)

    run(ctrl, 8.0, each=sweep)
    assert ctrl.pop_pain() == []


def test_detection_jitter_around_a_still_target_is_not_thrashing():
    ctrl = HeadController()
    jitter = iter([0.004, -0.004, 0.006, -0.003, 0.005, -0.006] * 40)

    def noisy(t):
        if int(round(t / DT)) % 5 == 0:      # a 10 Hz detector, +-0.35 deg of noise
            ctrl.set_reflex_target(0.3 + next(jitter), 0.0, now=t)

    ctrl.set_reflex_target(0.3, 0.0, now=0.0)
    cmds, _ = run(ctrl, 8.0, each=noisy)
    moving = [c.pan_velocity for c in cmds if abs(c.pan_velocity) >= 0.05]
    reversals = sum(1 for a, b in zip(moving, moving[1:]) if a * b < 0)
    assert reversals > 20                   # the command does wiggle with the noise ...
    assert ctrl.pop_pain() == []            # ... but that is not thrashing


def test_movement_error_hurts_when_the_head_does_not_follow():
    cfg = HeadConfig(movement_error_rad=0.2, movement_error_s=0.5)
    ctrl = HeadController(cfg)
    ctrl.set_measured(0.0, 0.0, 0.0)
    ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='blocked', pan=1.5), 0.0)
    run(ctrl, 0.5, measured=(0.0, 0.0))    # the head is stuck at 0
    assert ctrl.pop_pain() == []            # error exists but not yet for 0.5 s
    _, t = run(ctrl, 1.0, t0=0.5, measured=(0.0, 0.0))
    pain = ctrl.pop_pain()
    assert [p.pain_type for p in pain] == [PainType.MOVEMENT_ERROR]
    assert pain[0].source == 'head_pan_joint' and pain[0].context == 'move'
    assert 'deg from its command' in pain[0].message
    # A head that follows does not hurt.
    ctrl2 = HeadController(cfg)
    ctrl2.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='free', pan=1.5), 0.0)
    run(ctrl2, 2.0)
    assert ctrl2.pop_pain() == []


def test_no_movement_error_without_fresh_measurements():
    ctrl = HeadController(HeadConfig(measurement_timeout_s=0.2))
    ctrl.set_measured(0.0, 0.0, 0.0)
    ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='g', pan=2.0), 0.0)
    for i in range(1, 100):
        ctrl.step(DT, i * DT)
    assert ctrl.pop_pain() == []
    assert not ctrl.status(2.0).measurement_fresh


def test_status_reports_tracking_error_and_step_rejects_bad_dt():
    ctrl = HeadController()
    ctrl.set_measured(0.0, 0.0, 0.0)
    ctrl.set_reflex_target(0.1, 0.0, now=0.0)
    ctrl.step(DT, DT)
    status = ctrl.status(DT)
    assert status.has_target and status.tracking_error_deg == pytest.approx(
        math.degrees(0.1), rel=1e-6)
    assert angle_between_deg(0.0, 0.0, 0.0, 0.3) == pytest.approx(math.degrees(0.3))
    with pytest.raises(ValueError, match='dt > 0'):
        ctrl.step(0.0, 1.0)
    with pytest.raises(ValueError):
        ctrl.step(math.nan, 1.0)


def test_first_measurement_syncs_the_command_so_the_head_does_not_jump():
    ctrl = HeadController()
    ctrl.set_measured(1.2, -0.3, 0.0)
    cmd = ctrl.step(DT, DT)
    assert cmd.pan == pytest.approx(1.2) and cmd.tilt == pytest.approx(-0.3)


# ---- latency compensation of the reflex ----------------------------------------------------

def feed_moving_focus(ctrl, rate, age_s, n=8, period=1 / 15, track_id=4):
    """n reflex targets of a focus moving at `rate` rad/s in pan, each seen `age_s` ago."""
    t = 0.0
    for i in range(n):
        t = i * period + age_s
        result = ctrl.set_reflex_target(rate * i * period, 0.0, now=t, stamp=i * period,
                                        track_id=track_id)
        assert result.accepted
    return t


def test_reflex_leads_a_moving_focus_by_its_age():
    ctrl = HeadController(HeadConfig(reflex_lead_s=0.0))
    now = feed_moving_focus(ctrl, rate=0.2, age_s=0.1)
    ctrl.step(DT, now)
    last = 0.2 * 7 / 15
    # Aimed where the focus is now (0.1 s after its frame), not where the frame saw it.
    assert ctrl.status(now).has_target
    assert ctrl.wanted[0] == pytest.approx(last + 0.2 * 0.1, abs=1e-6)
    with_servo_lead = HeadController(HeadConfig(reflex_lead_s=0.05))
    now = feed_moving_focus(with_servo_lead, rate=0.2, age_s=0.1)
    with_servo_lead.step(DT, now)
    assert with_servo_lead.wanted[0] == pytest.approx(last + 0.2 * 0.15, abs=1e-6)


def test_rates_are_fitted_on_the_frames_own_clock_when_given():
    """A simulation at a third of real time: frames 1/15 s apart on its clock arrive 0.2 s
    apart on this one. Fitted on the frames' stamps (source_t), the rate is the target's
    true 0.3 rad per frame-clock second; on this clock it comes out three times too small at
    best (0.1), and here not at all: the 0.4 s window holds too few points."""
    on_own_clock = HeadController(HeadConfig(reflex_lead_s=0.0))
    on_this_clock = HeadController(HeadConfig(reflex_lead_s=0.0))
    for i in range(8):
        sim_t, now = i / 15, 0.2 * i
        for ctrl, source_t in ((on_own_clock, sim_t), (on_this_clock, None)):
            assert ctrl.set_reflex_target(0.3 * sim_t, 0.0, now=now, stamp=now, track_id=2,
                                          source_t=source_t).accepted
    assert on_own_clock._reflex.pan_rate == pytest.approx(0.3)
    assert on_this_clock._reflex.pan_rate <= 0.1 + 1e-9
    # The following goals fit their targets' rates the same way.
    follow = HeadController(HeadConfig(reflex_lead_s=0.0))
    for i in range(8):
        follow.update_targets([TargetView(5, 0.3 * i / 15, 0.0, 'ball')], 0.2 * i, 0.2 * i,
                              source_t=i / 15)
    assert follow._target_rates[5][0] == pytest.approx(0.3)


def test_reflex_prediction_is_capped_and_can_be_turned_off():
    capped = HeadController(HeadConfig(reflex_predict_max_s=0.05, reflex_lead_s=0.0,
                                       command_timeout_s=1.0))
    now = feed_moving_focus(capped, rate=0.2, age_s=0.4)
    capped.step(DT, now)
    assert capped.wanted[0] == pytest.approx(0.2 * 7 / 15 + 0.2 * 0.05, abs=1e-6)
    off = HeadController(HeadConfig(reflex_predict_max_s=0.0))
    now = feed_moving_focus(off, rate=0.2, age_s=0.1)
    off.step(DT, now)
    assert off.wanted[0] == pytest.approx(0.2 * 7 / 15)


def test_no_prediction_without_one_tracked_focus():
    """Track id 0 (untracked) never predicts; a new track id starts the fit over."""
    untracked = HeadController()
    now = feed_moving_focus(untracked, rate=0.2, age_s=0.1, track_id=0)
    untracked.step(DT, now)
    assert untracked.wanted[0] == pytest.approx(0.2 * 7 / 15)
    ctrl = HeadController()
    now = feed_moving_focus(ctrl, rate=0.2, age_s=0.1)
    ctrl.set_reflex_target(-0.5, 0.0, now=now + 0.05, stamp=now, track_id=9)  # another target
    ctrl.step(DT, now + 0.05)
    assert ctrl.wanted[0] == pytest.approx(-0.5)
    # A still focus with a little jitter is not led anywhere far.
    still = HeadController()
    for i in range(10):
        still.set_reflex_target(0.3 + (0.002 if i % 2 else -0.002), 0.0, now=i / 15 + 0.1,
                                stamp=i / 15, track_id=2)
    still.step(DT, 9 / 15 + 0.1)
    assert abs(still.wanted[0] - 0.3) < 0.005


def test_reflex_prediction_config_validates():
    with pytest.raises(ValueError, match='reflex_predict_max_s'):
        HeadConfig(reflex_predict_max_s=-0.1)
    with pytest.raises(ValueError, match='reflex_rate_window_s'):
        HeadConfig(reflex_rate_window_s=0.0)
    with pytest.raises(ValueError, match='reflex_lead_s'):
        HeadConfig(reflex_lead_s=math.nan)


def test_tracking_goals_lead_a_moving_target_too():
    ctrl = HeadController(HeadConfig(reflex_lead_s=0.0))
    assert ctrl.set_goal(HeadGoalSpec(HeadMode.TRACK_TARGET, 'follow', track_id=5), 0.0).accepted
    t = 0.0
    for i in range(8):
        stamp = i / 15
        t = stamp + 0.1                      # each frame seen 0.1 s after it was taken
        ctrl.update_targets([TargetView(5, 0.3 * stamp, 0.0, 'ball'),
                             TargetView(6, -0.4, 0.1, 'box')], t, stamp)
    ctrl.step(DT, t)
    assert ctrl.wanted[0] == pytest.approx(0.3 * 7 / 15 + 0.3 * 0.1, abs=1e-6)
    # The still box is aimed at as it is; without a stamp the targets count as seen now.
    assert ctrl.set_goal(HeadGoalSpec(HeadMode.TRACK_TARGET, 'box', track_id=6), t).accepted
    ctrl.step(DT, t)
    assert ctrl.wanted == pytest.approx((-0.4, 0.1))
    ctrl.update_targets([TargetView(6, -0.4, 0.1, 'box')], t + 0.05)
    ctrl.step(DT, t + 0.05)
    assert ctrl.wanted == pytest.approx((-0.4, 0.1))


def test_a_track_by_a_name_follows_the_thing_it_names():
    """"blue" names "blue object" (maxim_common.labels, the track_target tool's rule): the head
    turns to it, where an exact match left it still."""
    ctrl = HeadController()
    targets = [TargetView(1, 0.5, 0.1, 'face', salience=0.9),
               TargetView(2, -0.6, -0.2, 'blue object', salience=0.5)]
    ctrl.set_goal(HeadGoalSpec(HeadMode.TRACK_TARGET, goal_id='b', target_label='blue'), 0.0)
    cmds, t = run(ctrl, 1.5, each=lambda t: ctrl.update_targets(targets, t))
    assert (cmds[-1].pan, cmds[-1].tilt) == pytest.approx((-0.6, -0.2))
    assert ctrl.status(t).has_target


def test_a_tracked_target_out_of_view_is_looked_for_where_it_was_last_seen():
    """Attention still reports, without the target: the head goes to where it was last seen
    (not on with the head's own motion), and follows it again when it is back."""
    ctrl = HeadController()
    seen = [TargetView(3, 0.8, 0.1, 'red object', salience=0.6),
            TargetView(4, -0.5, 0.0, 'face', salience=0.9)]
    ctrl.set_goal(HeadGoalSpec(HeadMode.TRACK_TARGET, goal_id='r', target_label='red object'),
                  0.0)
    cmds, t = run(ctrl, 0.15, each=lambda t: ctrl.update_targets(seen, t))
    assert 0.0 < cmds[-1].pan < 0.8 and cmds[-1].pan_velocity > 0     # on its way, mid-turn
    gone = seen[1:]
    cmds, t = run(ctrl, 1.5, t0=t, each=lambda t: ctrl.update_targets(gone, t))
    assert (cmds[-1].pan, cmds[-1].tilt) == pytest.approx((0.8, 0.1))
    back = [TargetView(3, 0.2, 0.3, 'red object', salience=0.6)] + gone
    cmds, t = run(ctrl, 1.5, t0=t, each=lambda t: ctrl.update_targets(back, t))
    assert (cmds[-1].pan, cmds[-1].tilt) == pytest.approx((0.2, 0.3))
