"""Movement pain only from real harm: pains while the simulated head follows its commands on a
busy machine, and while its pan joint is held.

sim_head (MuJoCo, 320x240 at 10 fps, as `./maxim sim`) and head_controller run in this
process over DDS; a probe plays attention at 10 Hz with the true centring angle of a target
that changes every 2 s (the moving ball, the boxes, the face), so the head makes long fast
moves. N busy processes (default: one per core, plus one) starve the simulation thread, which
then falls behind the wall clock: the command runs ahead of the joints though nothing hurts
them. Then the pan joint is held (its damping raised a thousandfold) for the second phase.

The baseline, measured in the same run on the same messages, is the former rule: a joint
more than movement_error_rad (0.2) from its command for movement_error_s (0.5 s) hurts, one
pain per 2 s cooldown, evaluated on every head/joint_commands message against the newest
joint_states. Printed: movement pains per minute while following (goal: 0, where the former
rule counts some) and while held (goal: > 0, as the former rule), with the real-time factor
and the largest command-to-joint gap.

    python bench/perception/movement_pain.py [--quick] [--seconds 300] [--busy 3]

Measured on the 2-core build machine (load average 5-7, 4 busy processes): following for
300 s, 0 movement pains per minute (the former rule: 1.0 a minute, gaps up to 48 deg);
held for 20 s, 27 a minute (the former rule: the same).
"""

import argparse
import json
import multiprocessing as mp
import os
import threading
import time

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', str(100 + os.getpid() % 100))

TARGETS = ('moving_ball', 'red_box', 'blue_box', 'face', 'green_cylinder')
ERROR_RAD, ERROR_S, COOLDOWN_S = 0.2, 0.5, 2.0     # the former rule (HeadConfig defaults)


def _burn(go, stop) -> None:
    """A busy process: waits for `go`, then pure Python arithmetic until `stop`."""
    go.wait(timeout=600)
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 31 + 7) % 1_000_003


class FormerRule:
    """The distance-only rule, on the messages: head/joint_commands against joint_states."""

    def __init__(self):
        self.measured = None
        self.since = None
        self.last = -1e9
        self.pains = []        # wall times
        self.largest = 0.0

    def on_joints(self, msg) -> None:
        self.measured = tuple(msg.position[:2])

    def on_command(self, msg) -> None:
        if self.measured is None:
            return
        now = time.monotonic()
        err = max(abs(c - m) for c, m in zip(msg.position[:2], self.measured))
        self.largest = max(self.largest, err)
        if err <= ERROR_RAD:
            self.since = None
            return
        self.since = now if self.since is None else self.since
        if now - self.since >= ERROR_S and now - self.last >= COOLDOWN_S:
            self.pains.append(now)
            self.last = now


def measure(follow_s: float, held_s: float) -> dict:
    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from maxim_interfaces.msg import AttentionState, PainSignal
    from maxim_perception.nodes.head_controller_node import HeadControllerNode
    from maxim_perception.nodes.sim_head_node import SimHeadNode
    from maxim_common.qos import COMMANDS, EVENTS, SENSOR

    rclpy.init()
    sim = SimHeadNode(parameter_overrides=[
        Parameter('width', value=320), Parameter('height', value=240),
        Parameter('fps', value=10.0), Parameter('target_period_s', value=6.0)])
    head = HeadControllerNode()
    probe = rclpy.create_node('movement_pain_probe')
    former = FormerRule()
    pains = []
    probe.create_subscription(PainSignal, 'pain',
                              lambda m: pains.append((time.monotonic(), m)), EVENTS)
    probe.create_subscription(JointState, 'joint_states', former.on_joints, SENSOR)
    probe.create_subscription(JointState, 'head/joint_commands', former.on_command, COMMANDS)
    attention = probe.create_publisher(AttentionState, 'attention/state', 10)

    def attend():
        name = TARGETS[int(time.monotonic() / 2.0) % len(TARGETS)]
        with sim.sim_lock:
            pan, tilt = sim.sim.centring_angles(name)
        msg = AttentionState(mode=AttentionState.MODE_TRACK, has_focus=True,
                             focus_track_id=1 + TARGETS.index(name), focus_pan=pan,
                             focus_tilt=tilt)
        msg.header.stamp = probe.get_clock().now().to_msg()
        attention.publish(msg)

    probe.create_timer(0.1, attend)
    executor = MultiThreadedExecutor(num_threads=2)
    for node in (sim, head, probe):
        executor.add_node(node)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    phases = {}
    try:
        time.sleep(3.0)                       # discovery, the first frames
        for phase, seconds in (('following', follow_s), ('held', held_s)):
            if phase == 'held':
                with sim.sim_lock:
                    dof = sim.sim.model.joint('head_pan_joint').dofadr[0]
                    sim.sim.model.dof_damping[dof] *= 1000
            former.largest = 0.0
            begin, sim_begin = time.monotonic(), sim.sim.time
            time.sleep(seconds)
            end, sim_end = time.monotonic(), sim.sim.time
            moved = [m for t, m in pains if begin <= t < end
                     and m.type_name == 'movement_error']
            minutes = (end - begin) / 60
            phases[phase] = {
                'seconds': end - begin,
                'real_time_factor': (sim_end - sim_begin) / (end - begin),
                'largest_gap_deg': former.largest * 57.29578,
                'pains_per_min': len(moved) / minutes,
                'former_rule_pains_per_min': sum(begin <= t < end for t in former.pains)
                / minutes,
                'examples': [m.description for m in moved[:3]],
            }
    finally:
        stop.set()
        spinner.join(timeout=5.0)
        for node in (sim, head, probe):
            node.destroy_node()
        rclpy.try_shutdown()
    return phases


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true', help='60 s following, 10 s held')
    parser.add_argument('--seconds', type=float, default=300.0, help='following phase, s')
    parser.add_argument('--held', type=float, default=20.0, help='held phase, s')
    parser.add_argument('--busy', type=int, default=(os.cpu_count() or 2) + 1,
                        help='busy processes (default: cores + 1)')
    parser.add_argument('--json', action='store_true')
    args = parser.parse_args(argv)
    follow_s, held_s = (60.0, 10.0) if args.quick else (args.seconds, args.held)
    fork = mp.get_context('fork')
    go, stop = fork.Event(), fork.Event()
    burners = [fork.Process(target=_burn, args=(go, stop), daemon=True)
               for _ in range(args.busy)]
    for p in burners:
        p.start()
    go.set()
    try:
        phases = measure(follow_s, held_s)
    finally:
        stop.set()
        for p in burners:
            p.join(timeout=5.0)
            if p.is_alive():
                p.terminate()
    if args.json:
        print(json.dumps(phases, indent=2))
        return 0
    print(f'movement pain, {args.busy} busy processes (the former rule is the baseline):')
    for phase, r in phases.items():
        print(f'  {phase:9s} {r["seconds"]:5.0f} s, real-time factor '
              f'{r["real_time_factor"]:.2f}, largest gap {r["largest_gap_deg"]:5.1f} deg: '
              f'{r["pains_per_min"]:.2f} pains/min (former rule '
              f'{r["former_rule_pains_per_min"]:.2f})')
        for example in r['examples']:
            print(f'            {example}')
    following, held = phases['following'], phases['held']
    print(f'goal: 0 while following -> {"ok" if following["pains_per_min"] == 0 else "MISSED"}; '
          f'> 0 while held -> {"ok" if held["pains_per_min"] > 0 else "MISSED"}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
