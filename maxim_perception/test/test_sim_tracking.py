"""Acceptance: the head controller keeps the simulated moving target near the image centre.

The controller core drives the MuJoCo head in a closed loop. Its reflex target is the moving
ball's true centring angle from the simulation (attention's own detections drive the head in
test_sim_tracking_e2e.py), refreshed at a camera rate and stamped with the frame time, as
attention would. After the head has settled, the steady-state error is measured two ways over
one full turn of the ball: the angle between the camera axis and the ball (ground truth), and
the ball's pixel offset from the image centre in rendered frames, converted to degrees with
camera_info.

Measured on the build machine (period 10 s, 50 Hz control):
  targets at 50 Hz:  mean 0.36 deg, max 0.50 deg
  targets at 10 Hz:  mean 0.75 deg, max 1.18 deg (pixels: within ~1.2 deg)
Bounds asserted below: N = 1.0 deg and N = 2.0 deg respectively.
"""

import math

import cv2
import numpy as np
import pytest

from maxim_perception.head.control import (HeadConfig, HeadController, HeadGoalSpec, HeadMode,
                                           PainType)
from maxim_perception.head.motion import MotionModel
from maxim_perception.sim.simhead import SimHead

CONTROL_DT = 0.02
SETTLE_S = 3.0
PERIOD_S = 10.0


def ball_offset_deg(img, info):
    """Angle between the image centre's ray and the orange ball's centroid ray."""
    mask = cv2.inRange(img, np.array((170, 90, 0), np.uint8), np.array((255, 200, 60), np.uint8))
    ys, xs = np.nonzero(mask)
    assert len(xs) > 5, 'the ball left the image'
    fx, cx, fy, cy = info['k'][0], info['k'][2], info['k'][4], info['k'][5]
    ray = np.array([(xs.mean() - cx) / fx, (ys.mean() - cy) / fy, 1.0])
    return math.degrees(math.acos(1.0 / np.linalg.norm(ray)))


def track(target_dt):
    sim = SimHead(width=160, height=120, moving_target=True, target_period_s=PERIOD_S)
    ctrl = HeadController(HeadConfig())
    info = sim.camera_info()
    axis_err, pixel_err, rejected = [], [], []
    latest, next_frame = None, 0.0
    try:
        for _ in range(int(round((SETTLE_S + PERIOD_S) / CONTROL_DT))):
            now = sim.time
            pos, vel = sim.joint_state()
            ctrl.set_measured(pos[0], pos[1], now, vel[0], vel[1])
            if now >= next_frame - 1e-9:          # a new camera frame: a new estimate
                latest = (sim.centring_angles('moving_ball'), now)
                next_frame += target_dt
            (pan, tilt), stamp = latest
            result = ctrl.set_reflex_target(pan, tilt, now=now, stamp=stamp)
            if not result.accepted:
                rejected.append(result.reason)
            cmd = ctrl.step(CONTROL_DT, now + CONTROL_DT)
            sim.set_joint_targets(cmd.pan, cmd.tilt)
            sim.step(CONTROL_DT)
            if sim.time > SETTLE_S:
                axis_err.append(sim.angle_to('moving_ball'))
                if len(axis_err) % 5 == 0:        # 10 frames a second are plenty
                    pixel_err.append(ball_offset_deg(sim.render(), info))
        return np.array(axis_err), np.array(pixel_err), rejected, ctrl.pop_pain()
    finally:
        sim.close()


@pytest.mark.parametrize('target_dt, bound_deg', [(0.02, 1.0), (0.1, 2.0)])
def test_head_keeps_the_moving_target_centred(target_dt, bound_deg):
    axis_err, pixel_err, rejected, pain = track(target_dt)
    print(f'targets every {target_dt} s: axis error mean {axis_err.mean():.2f} deg, '
          f'max {axis_err.max():.2f} deg; pixels max {pixel_err.max():.2f} deg')
    assert rejected == []
    assert pain == []                        # smooth tracking neither thrashes nor lags
    assert axis_err.max() < bound_deg
    assert pixel_err.max() < bound_deg + 0.5   # centroid of a partly lit ball: +-0.5 deg
    # The ball really moved: an unmoving head would be far off.
    assert len(axis_err) == int(round(PERIOD_S / CONTROL_DT))


def test_an_idle_head_loses_the_moving_target():
    """Control for the test above: without the controller the error is large."""
    sim = SimHead(width=32, height=24, moving_target=True, target_period_s=PERIOD_S)
    try:
        errors = []
        for _ in range(int(PERIOD_S / 0.1)):
            sim.step(0.1)
            errors.append(sim.angle_to('moving_ball'))
        assert max(errors) > 10.0
    finally:
        sim.close()


@pytest.mark.ros
def test_over_ros_the_head_keeps_the_moving_target_centred():
    """sim_head and head_controller exchanging real messages; a probe plays attention at
    10 Hz with the ball's true centring angle (stamped at publication, as attention would).

    Measured (period 6 s, ball at ~17 deg/s, 50 Hz control, 10 Hz attention): mean 1.4 deg,
    max 2.1-2.5 deg idle; max 2.9 deg with two busy processes on the two cores. Asserted:
    N = 4 deg.
    """
    import time

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from maxim_interfaces.msg import AttentionState
    from maxim_perception.nodes.head_controller_node import HeadControllerNode
    from maxim_perception.nodes.sim_head_node import SimHeadNode

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    nodes = []
    try:
        executor = SingleThreadedExecutor(context=ctx)
        sim_node = SimHeadNode(context=ctx, parameter_overrides=[
            Parameter('width', value=32), Parameter('height', value=24),
            Parameter('fps', value=5.0), Parameter('target_period_s', value=6.0)])
        head = HeadControllerNode(context=ctx)
        probe = rclpy.create_node('attention_probe', context=ctx)
        nodes += [sim_node, head, probe]
        for node in nodes:
            executor.add_node(node)
        pub = probe.create_publisher(AttentionState, 'attention/state', 10)

        def attend():
            with sim_node.sim_lock:
                pan, tilt = sim_node.sim.centring_angles('moving_ball')
            msg = AttentionState(mode=AttentionState.MODE_TRACK, has_focus=True,
                                 focus_track_id=1, focus_pan=pan, focus_tilt=tilt)
            msg.header.stamp = probe.get_clock().now().to_msg()
            pub.publish(msg)

        probe.create_timer(0.1, attend)
        errors = []
        deadline = time.monotonic() + 40.0     # a bound on the wait, not an assertion
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.02)
            with sim_node.sim_lock:
                sim_time = sim_node.sim.time
                error = sim_node.sim.angle_to('moving_ball')
            if sim_time > 2.0:
                errors.append(error)
            if sim_time > 8.0:
                break
        assert len(errors) > 100, 'the simulation did not advance'
        print(f'over ROS: mean {np.mean(errors):.2f} deg, max {np.max(errors):.2f} deg, '
              f'{len(errors)} samples')
        assert np.max(errors) < 4.0
        assert list(head.rejections) == []     # nothing stale or rejected
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def _move_and_watch(sim, model=None, seconds=2.0):
    """A far MOVE goal (pan 2.0, tilt 0.5) in a closed loop with the MuJoCo head; returns
    (largest pan distance from the command, movement pains)."""
    ctrl = HeadController(HeadConfig())
    if model is not None:
        ctrl.set_motion_model(model)
    ctrl.set_goal(HeadGoalSpec(HeadMode.MOVE, goal_id='far', pan=2.0, tilt=0.5), 0.0)
    far = 0.0
    for _ in range(int(round(seconds / CONTROL_DT))):
        now = sim.time
        pos, vel = sim.joint_state()
        ctrl.set_measured(pos[0], pos[1], now, vel[0], vel[1])
        cmd = ctrl.step(CONTROL_DT, now + CONTROL_DT)
        sim.set_joint_targets(cmd.pan, cmd.tilt)
        sim.step(CONTROL_DT)
        far = max(far, abs(cmd.pan - pos[0]))
    return far, [p for p in ctrl.pop_pain() if p.pain_type == PainType.MOVEMENT_ERROR]


@pytest.mark.parametrize('case', ['free', 'held', 'slow servo', 'slow servo judged as fast',
                                  'at its limit'])
def test_a_joint_held_against_its_command_in_the_simulation_hurts(case):
    """Movement pain only from real harm, in the MuJoCo head: a free head does not hurt; a
    pan joint held by a hand (its damping raised a thousandfold: it barely moves) does; a
    servo four times slower than the URDF's (its torque cut to 0.26 N m: 0.74 rad/s) falls
    far behind and does not hurt when the motion model says it is that slow, but does when
    judged against the URDF's 3 rad/s; a joint stopped by a limit narrower than the
    controller's (the servo's own) hurts."""
    sim = SimHead(width=32, height=24, moving_target=False)
    pan_dof = sim.model.joint('head_pan_joint').dofadr[0]
    model = None
    try:
        if case == 'held':
            sim.model.dof_damping[pan_dof] *= 1000
        elif case.startswith('slow servo'):
            sim.model.actuator_forcerange[sim.model.actuator('head_pan').id] = (-0.26, 0.26)
            if case == 'slow servo':
                model = MotionModel(max_velocity=0.7)
        elif case == 'at its limit':
            sim.model.jnt_range[sim.model.joint('head_pan_joint').id] = (-1.0, 1.0)
            model = MotionModel(pan_limits=(-1.0, 1.0))
        far, pain = _move_and_watch(sim, model, seconds=3.5)
        arrived = abs(sim.joint_state()[0][0] - 2.0) < 0.05
    finally:
        sim.close()
    print(f'{case}: pan at most {math.degrees(far):.1f} deg from its command; '
          f'{[p.message for p in pain]}')
    if case == 'free':
        assert pain == [] and far < 0.2 and arrived
    elif case == 'held':
        assert len(pain) >= 1 and pain[0].source == 'head_pan_joint'
        assert 'stalled' in pain[0].message
    elif case == 'slow servo':
        assert pain == [] and far > 1.0 and arrived    # ~80 deg behind, on its way
    elif case == 'slow servo judged as fast':
        assert len(pain) >= 1 and 'too slow' in pain[0].message
    else:
        assert len(pain) >= 1 and 'held at its limit' in pain[0].message
