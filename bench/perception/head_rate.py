"""Head command rate held at its target while busy processes saturate every core.

A HeadControllerNode (driver sim, 50 Hz) tracks a moving reflex target and publishes
head/joint_commands; a subscriber in the same process counts them. The rate is measured first
on an idle machine (the baseline of this run), then with N busy processes (N = cores, a
stand-in for the LLM filling both cores), and printed as a ratio to the target rate
(goal >= 0.98 under load). The controller also ticks at once on each new attention state (the
reflex does not wait for the next period), so the rate may exceed the target by up to the
attention rate (15 Hz here): the goal is a floor.

    python bench/perception/head_rate.py [--quick] [--rate 50] [--busy 2]

`measure_head_rate()` is importable for bench/perception/run.py.
"""

import argparse
import math
import multiprocessing as mp
import os
import sys
import threading
import time

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', str(100 + os.getpid() % 100))


def _burn(go, stop) -> None:
    """A busy process: waits for `go`, then pure Python arithmetic until `stop`."""
    go.wait(timeout=600)
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 31 + 7) % 1_000_003


def _percentile(values, q):
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def _run_window(rate_hz: float, seconds: float) -> dict:
    """One measurement: a fresh context, the node, a counting subscriber, `seconds` long."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from maxim_interfaces.msg import AttentionState
    from maxim_perception.nodes.head_controller_node import HeadControllerNode
    from maxim_common.qos import COMMANDS

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    head = HeadControllerNode(context=ctx, parameter_overrides=[
        Parameter('driver', value='sim'), Parameter('rate_hz', value=float(rate_hz))])
    probe = rclpy.create_node('head_rate_probe', context=ctx)
    arrivals = []
    probe.create_subscription(JointState, 'head/joint_commands',
                              lambda _msg: arrivals.append(time.monotonic()), COMMANDS)
    attention = probe.create_publisher(AttentionState, 'attention/state', 10)
    t0 = time.monotonic()

    def attend():   # attention at 15 Hz: a target sweeping left and right
        t = time.monotonic() - t0
        msg = AttentionState(mode=AttentionState.MODE_TRACK, has_focus=True, focus_track_id=1,
                             focus_pan=0.6 * math.sin(t), focus_tilt=0.2 * math.cos(t))
        msg.header.stamp = probe.get_clock().now().to_msg()
        attention.publish(msg)

    probe.create_timer(1 / 15, attend)
    executor.add_node(head)
    executor.add_node(probe)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        time.sleep(min(1.0, seconds / 4))    # warm up: discovery, first ticks
        start_sent, start_arrivals = head.commands_sent, len(arrivals)
        begin = time.monotonic()
        time.sleep(seconds)
        elapsed = time.monotonic() - begin
        sent = head.commands_sent - start_sent
        window = arrivals[start_arrivals:]
        ticks = [t for t in head.tick_times if t >= begin]
    finally:
        stop.set()
        spinner.join(timeout=5.0)
        head.destroy_node()
        probe.destroy_node()
        rclpy.try_shutdown(context=ctx)
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    rx_gaps = [b - a for a, b in zip(window, window[1:])]
    return {
        'sent_hz': sent / elapsed,
        'received_hz': len(window) / elapsed,
        'tick_gap_p95_ms': 1000 * _percentile(gaps, 95),
        'tick_gap_max_ms': 1000 * max(gaps) if gaps else math.nan,
        'rx_gap_p95_ms': 1000 * _percentile(rx_gaps, 95),
    }


def measure_head_rate(seconds: float = 10.0, rate_hz: float = 50.0,
                      busy: int | None = None) -> dict:
    """Idle baseline, then under `busy` burning processes (default: one per core)."""
    if busy is None:
        busy = os.cpu_count() or 2
    # The burners are forked before any ROS thread exists and wait for `go`.
    fork = mp.get_context('fork')
    go, stop = fork.Event(), fork.Event()
    burners = [fork.Process(target=_burn, args=(go, stop), daemon=True) for _ in range(busy)]
    for p in burners:
        p.start()
    try:
        idle = _run_window(rate_hz, seconds)
        go.set()
        loaded = _run_window(rate_hz, seconds)
    finally:
        stop.set()
        go.set()
        for p in burners:
            p.join(timeout=5.0)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5.0)
    return {'target_hz': rate_hz, 'busy': busy, 'idle': idle, 'loaded': loaded,
            'idle_ratio': idle['received_hz'] / rate_hz,
            'loaded_ratio': loaded['received_hz'] / rate_hz,
            'loaded_vs_idle': loaded['received_hz'] / idle['received_hz']}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true', help='5 s windows instead of 20 s')
    parser.add_argument('--rate', type=float, default=50.0, help='control rate, Hz')
    parser.add_argument('--busy', type=int, default=None, help='busy processes (default: cores)')
    args = parser.parse_args(argv)
    seconds = 5.0 if args.quick else 20.0
    r = measure_head_rate(seconds, args.rate, args.busy)
    print(f'head command rate, target {r["target_hz"]:.0f} Hz, {seconds:.0f} s windows')
    for label in ('idle', 'loaded'):
        m = r[label]
        name = label if label == 'idle' else f'{r["busy"]} busy processes'
        print(f'  {name:18s} sent {m["sent_hz"]:6.2f} Hz  received {m["received_hz"]:6.2f} Hz'
              f'  tick gap p95 {m["tick_gap_p95_ms"]:5.1f} ms, max {m["tick_gap_max_ms"]:5.1f} ms'
              f'  (receive gap p95 {m["rx_gap_p95_ms"]:5.1f} ms)')
    print(f'  ratio to target: idle {r["idle_ratio"]:.3f}, loaded {r["loaded_ratio"]:.3f} '
          f'(goal >= 0.98); loaded / idle {r["loaded_vs_idle"]:.3f}')
    return 0 if r['loaded_ratio'] >= 0.98 else 1


if __name__ == '__main__':
    sys.exit(main())
