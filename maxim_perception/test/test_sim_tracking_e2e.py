"""Acceptance, end to end over ROS: the head follows a moving target it finds by itself.

Three nodes exchange real messages over DDS on sim time, as `./maxim sim` runs them:
sim_head (MuJoCo physics and its EGL-rendered camera, 320x240 at 15 fps) -> camera images ->
attention (colour/motion detection, tracking, focus) -> attention/state -> head_controller
(reflex at 50 Hz) -> head/joint_commands -> sim_head. The head is steered only by what
attention detects in the rendered pixels; the simulation's ground truth (the angle between the
camera axis and the ball) is read only to measure the error.

The orange ball circles in front of the head once every 10 s (up to ~10 deg/s of pan). Faces
are not detected here and the focus is held (no habituation, no switching), so the reflex
follows one target: the moving ball. After 3 s of settling, the error is measured over one
full turn.

In this one process (MuJoCo rendering, physics and three nodes under one GIL) the simulation
runs slower than real time: 0.5-0.65 of it on two cores (0.26-0.37 before the physics steps
of a tick ran in one MuJoCo call instead of a Python loop, which re-took the GIL per step).
The head controller therefore fits the ball's rate on the frames' own (sim) stamps, not on
its own clock (set_reflex_target's source_t).

Measured on a quiet 2-core machine (9 runs):
  as configured: mean 0.9-1.1 deg, p95 1.6-2.4 deg, max 2.2-3.6 deg, once 6.3 deg
  the simulation at 0.26-0.37 of real time (before the one-call physics step): mean 0.8-0.9
    deg, p95 1.6-1.8 deg, max 2.2-3.1 deg (a slower ball in wall time)
  before the rate fit used the frames' stamps: mean 1.5-1.7 deg, p95 3.0-3.1 deg, max 3.5-4.4
    deg (the head ~200 ms behind the ball: at a 0.3 real-time factor the rate came out a
    third of the truth, from 1-3 points)
  earlier runs (real-time factor not recorded): mean 0.45-0.6 deg, p95 0.6-0.95 deg
  a still ball: within 0.4 deg (the centroid of a shaded ball), no pain
Asserted: N = 4.0 deg at p95 and 8.0 deg at worst (margin for a busier machine and for a
moment's stall of the one process; a head that does not follow is off by up to 16 deg).
"""

import math
import threading
import time

import numpy as np
import pytest
import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter

from maxim_common.qos import LATCHED
from maxim_interfaces.msg import AttentionState
from maxim_perception.nodes.attention_node import AttentionNode
from maxim_perception.nodes.head_controller_node import HeadControllerNode
from maxim_perception.nodes.sim_head_node import SimHeadNode

pytestmark = [pytest.mark.ros, pytest.mark.slow]

SETTLE_S = 3.0
PERIOD_S = 10.0
P95_BOUND_DEG = 4.0
MAX_BOUND_DEG = 8.0


def test_attention_drives_the_head_onto_the_moving_ball():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    sim_time = Parameter('use_sim_time', value=True)
    nodes = []
    executor = MultiThreadedExecutor(num_threads=4, context=ctx)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)

    spinner = threading.Thread(target=spin, daemon=True)
    try:
        sim = SimHeadNode(context=ctx, parameter_overrides=[
            sim_time, Parameter('width', value=320), Parameter('height', value=240),
            Parameter('fps', value=15.0), Parameter('target_period_s', value=PERIOD_S)])
        attention = AttentionNode(context=ctx, parameter_overrides=[
            sim_time, Parameter('detect.faces', value=False),
            Parameter('focus.habituated_novelty', value=0.0),
            Parameter('focus.switch_margin', value=1.0),
            Parameter('publish.debug_image', value=False),
            Parameter('publish.markers', value=False)])
        head = HeadControllerNode(context=ctx, parameter_overrides=[sim_time])
        probe = rclpy.create_node('tracking_probe', context=ctx)
        nodes += [sim, attention, head, probe]
        focus_labels, focus_ids = [], []

        def on_state(msg: AttentionState) -> None:
            if msg.has_focus:
                focus = [d for d in msg.targets if d.track_id == msg.focus_track_id]
                focus_ids.append(msg.focus_track_id)
                focus_labels.append(focus[0].label if focus else '')

        probe.create_subscription(AttentionState, 'attention/state', on_state, LATCHED)
        for node in nodes:
            executor.add_node(node)
        spinner.start()

        errors, pans = [], []
        measured_from = 0
        wall0, sim0 = time.monotonic(), sim.sim.time
        deadline = time.monotonic() + 60.0     # a bound on the wait, not an assertion
        while time.monotonic() < deadline:
            time.sleep(0.02)
            with sim.sim_lock:
                t = sim.sim.time
                error = sim.sim.angle_to('moving_ball')
                pan = float(sim.sim.joint_state()[0][0])
            if t <= SETTLE_S:
                measured_from = len(focus_ids)
                continue
            errors.append(error)
            pans.append(pan)
            if t > SETTLE_S + PERIOD_S:
                break
        frames, processed = sim.frames, attention.frames_processed
        rtf = (t - sim0) / max(1e-9, time.monotonic() - wall0)
        rejections, pain = list(head.rejections), head.core.pop_pain()
    finally:
        stop.set()
        if spinner.is_alive():
            spinner.join(timeout=5.0)
        executor.shutdown(timeout_sec=5.0)     # waits for callbacks still running
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)

    assert sim.render_error == ''
    assert t > SETTLE_S + PERIOD_S, f'the simulation did not run a full turn (t = {t:.1f} s)'
    assert len(errors) > 40     # samples wait on the simulator's lock: fewer when it is busy
    errors = np.array(errors)
    p95, worst = float(np.percentile(errors, 95)), float(errors.max())
    print(f'end to end, 320x240 at 15 fps: error mean {errors.mean():.2f} deg, p95 {p95:.2f} '
          f'deg, max {worst:.2f} deg over {len(errors)} samples; {processed} of {frames} '
          f'frames processed; simulation at {rtf:.2f} of real time')
    # Attention found the ball in the pixels and held one track id on it all the while.
    window = focus_ids[measured_from:]
    assert window and set(window) == {focus_ids[-1]}, 'the focus changed track id'
    assert set(focus_labels[measured_from:]) == {'orange object'}
    # The head really turned with the ball (an idle head is off by up to 16 deg, see
    # test_sim_tracking.py), and it stayed on it.
    assert math.degrees(max(pans) - min(pans)) > 20.0
    assert p95 < P95_BOUND_DEG
    assert worst < MAX_BOUND_DEG
    assert rejections == [] and pain == []
