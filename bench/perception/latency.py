"""Frame-to-command latency: from a camera frame's publication to the head command it causes.

Four processes, as the launch files run them: this one publishes 640x480 bgr8 frames at 30 fps
(sensor QoS) and listens; the attention node and the head controller (driver sim, 50 Hz) each
run in their own process; a bare rclpy echo node in a fourth process subscribes to the same
images with the same QoS and publishes a small message (the frame's stamp) right back. The
echo is the baseline of this run: the least any node pays to hear a frame and answer.

The scene is a textured wall and one red disc moving left and right (a 2 s cycle); attention
keeps it in focus and the head controller follows it. Which command a frame caused is known
exactly: attention stamps its state with the frame's stamp, and the head controller publishes
that stamp on head_controller/reflex_source with the first command that acts on the state.
Three latencies are printed (p50/p95/max), with ratios of the p95s to the echo's:

- echo: frame published -> echo reply received;
- attention: frame published -> attention/state for that frame received;
- command: frame published -> the head command it caused (its reflex_source) received.

Each line also says how many of the published frames got that far: images are best effort,
and a 640x480 bgr8 frame (0.9 MB) is larger than Fast DDS's built-in shared-memory segment
(0.5 MB), so with the built-in transport it travels in fragments and a busy machine loses
about half. The project's default set-up (maxim_bringup/dds.py: a Fast DDS profile with a
16 MB segment, config/fastdds.xml) is what this runs by default; `--dds-profile builtin` runs
the same measurement on Fast DDS's built-in transport, `--dds-profile FILE` with another
profile. When frames were lost, the ratio is also printed over the frames both the echo and
the command path got.

    python bench/perception/latency.py [--quick] [--seconds S] [--width 640 --height 480]

`measure_latency()` is importable for bench/perception/run.py.
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

DISC_RADIUS_FRAC = 0.06     # of the image width
SWING_FRAC = 0.25           # the disc swings this fraction of the width either side


def _percentile(values, q):
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def _stats_ms(seconds: list[float]) -> dict:
    return {'n': len(seconds), 'p50_ms': 1e3 * _percentile(seconds, 50),
            'p95_ms': 1e3 * _percentile(seconds, 95),
            'max_ms': 1e3 * max(seconds) if seconds else math.nan}


# ---- the other processes -------------------------------------------------------------------

def _run_node(kind: str, params: dict, ready, stop) -> None:
    """A child process: one node (attention, head controller or echo) until `stop`."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    rclpy.init()
    overrides = [Parameter(k, value=v) for k, v in params.items()]
    if kind == 'attention':
        from maxim_perception.nodes.attention_node import AttentionNode
        node = AttentionNode(parameter_overrides=overrides)
        executor = SingleThreadedExecutor()   # as attention_node's main()
    elif kind == 'head':
        from maxim_perception.nodes.head_controller_node import HeadControllerNode
        node = HeadControllerNode(parameter_overrides=overrides)
        executor = SingleThreadedExecutor()
    else:
        from sensor_msgs.msg import Image
        from std_msgs.msg import Header

        from maxim_common.qos import COMMANDS, SENSOR

        node = rclpy.create_node('image_echo')
        pub = node.create_publisher(Header, 'echo', COMMANDS)
        node.create_subscription(Image, 'camera/image_raw', lambda m: pub.publish(m.header),
                                 SENSOR)
        executor = SingleThreadedExecutor()
    executor.add_node(node)
    ready.set()
    try:
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.try_shutdown()


# ---- this process --------------------------------------------------------------------------

def _frames(width: int, height: int, n: int) -> list:
    """One cycle of n BGR frames: the wall, and the red disc swinging left and right."""
    import cv2
    import numpy as np

    yy, xx = np.mgrid[0:height, 0:width]
    cell = max(8, width // 16)
    wall = np.where(((xx // cell) + (yy // cell)) % 2 == 0, 200, 170).astype(np.uint8)
    wall = cv2.merge([wall, wall, (wall * 0.97).astype(np.uint8)])
    out = []
    for i in range(n):
        img = wall.copy()
        x = width / 2 + SWING_FRAC * width * math.sin(2 * math.pi * i / n)
        cv2.circle(img, (int(round(x)), height // 2), int(DISC_RADIUS_FRAC * width),
                   (30, 30, 210), -1, cv2.LINE_AA)
        out.append(img)
    return out


def measure_latency(seconds: float = 60.0, width: int = 640, height: int = 480,
                    fps: float = 30.0, attention_rate_hz: float = 30.0) -> dict:
    """Run the four processes for `seconds` and return the three latencies (see the docstring)."""
    ctx = mp.get_context('spawn')
    ready = [ctx.Event() for _ in range(3)]
    stop = ctx.Event()
    # Attention keeps its focus on the disc (it never habituates in this run) and runs at the
    # camera's rate; the head controller publishes head/joint_commands (driver sim).
    attention = {'max_rate_hz': float(attention_rate_hz), 'use_camera_info': False,
                 'focus.habituated_novelty': 0.0, 'focus.switch_margin': 1.0}
    procs = [ctx.Process(target=_run_node, args=(kind, params, r, stop), daemon=True)
             for kind, params, r in (('echo', {}, ready[0]), ('attention', attention, ready[1]),
                                     ('head', {'driver': 'sim'}, ready[2]))]
    for p in procs:
        p.start()
    try:
        for r in ready:
            if not r.wait(timeout=60.0):
                raise RuntimeError('a node process did not start within 60 s')
        return _drive(seconds, width, height, fps)
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=10.0)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5.0)


def _drive(seconds: float, width: int, height: int, fps: float) -> dict:
    """This process: publish the frames, hear the replies, pair them by the frames' stamps."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from builtin_interfaces.msg import Time as TimeMsg
    from sensor_msgs.msg import Image
    from std_msgs.msg import Header

    from maxim_interfaces.msg import AttentionState
    from maxim_perception.conversions import image_to_msg
    from maxim_common.qos import COMMANDS, LATCHED, SENSOR

    rclpy.init()
    node = rclpy.create_node('latency_bench')
    lock = threading.Lock()
    published: dict[tuple[int, int], float] = {}     # frame stamp -> publication time
    replies = {'echo': {}, 'attention': {}, 'command': {}}   # frame stamp -> latency, s
    measuring = threading.Event()

    def on_reply(kind):
        def record(stamp) -> None:
            now = time.monotonic()
            with lock:
                sent = published.get((stamp.sec, stamp.nanosec))
            if sent is not None and measuring.is_set():
                replies[kind][(stamp.sec, stamp.nanosec)] = now - sent
        return record

    echo, state, command = on_reply('echo'), on_reply('attention'), on_reply('command')
    node.create_subscription(Header, 'echo', lambda m: echo(m.stamp), COMMANDS)
    node.create_subscription(AttentionState, 'attention/state',
                             lambda m: state(m.header.stamp), LATCHED)
    node.create_subscription(Header, 'head_controller/reflex_source',
                             lambda m: command(m.stamp), COMMANDS)
    pub = node.create_publisher(Image, 'camera/image_raw', SENSOR)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    done = threading.Event()

    def spin():
        while not done.is_set():
            executor.spin_once(timeout_sec=0.05)

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    frames = _frames(width, height, int(round(2.0 * fps)))
    deadline = time.monotonic() + 30.0      # both image subscribers matched before we start
    while pub.get_subscription_count() < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    period, warmup_s = 1.0 / fps, 3.0
    t0 = time.monotonic()
    sent_frames = 0
    try:
        for i in range(int((warmup_s + seconds) * fps)):
            delay = t0 + i * period - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if i * period >= warmup_s:
                measuring.set()
                sent_frames += 1
            stamp_ns = time.time_ns()
            stamp = TimeMsg(sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)
            msg = image_to_msg(frames[i % len(frames)], 'bgr8', stamp, 'camera')
            with lock:
                published[(stamp.sec, stamp.nanosec)] = time.monotonic()
            pub.publish(msg)
        time.sleep(0.5)          # the last replies
    finally:
        done.set()
        spinner.join(timeout=5.0)
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.try_shutdown()
    out = {kind: _stats_ms(list(values.values())) for kind, values in replies.items()}
    # The same frames on both paths: with a lossy transport each path hears a different
    # subset of the frames, and the p95 of a small subset is a noisy, biased baseline.
    both = replies['echo'].keys() & replies['command'].keys()
    out['paired'] = {'echo': _stats_ms([replies['echo'][k] for k in both]),
                     'command': _stats_ms([replies['command'][k] for k in both])}
    out.update({'size': f'{width}x{height}', 'fps': fps, 'frames': sent_frames,
                'frame_period_ms': 1e3 * period})
    return out


def report(r: dict) -> str:
    echo, att, cmd = r['echo'], r['attention'], r['command']
    lines = [f'frame-to-command latency: {r["size"]} bgr8 at {r["fps"]:.0f} fps, '
             f'{r["frames"]} frames measured']
    for name, s in (('bare rclpy image echo', echo), ('frame -> attention/state', att),
                    ('frame -> head command', cmd)):
        lines.append(f'  {name:26s} p50 {s["p50_ms"]:6.1f} ms  p95 {s["p95_ms"]:6.1f} ms  '
                     f'max {s["max_ms"]:6.1f} ms  ({s["n"]} of {r["frames"]} frames)')
    every = echo['n'] == cmd['n'] == r['frames']
    lines.append(f'  every frame delivered      : {"yes" if every else "NO"} (echo {echo["n"]}, '
                 f'head command {cmd["n"]} of {r["frames"]}; transport: {r["transport"]})')
    lines.append(f'  ratio p95 command / echo   : {cmd["p95_ms"] / echo["p95_ms"]:.2f} '
                 '(goal <= 1.5)')
    lines.append(f'  ratio p95 attention / echo : {att["p95_ms"] / echo["p95_ms"]:.2f}')
    pe, pc = r['paired']['echo'], r['paired']['command']
    if pe['n'] < r['frames']:
        lines.append(f'  on the {pe["n"]} frames both the echo and the head command got: '
                     f'echo p95 {pe["p95_ms"]:.1f} ms, command p95 {pc["p95_ms"]:.1f} ms, '
                     f'ratio {pc["p95_ms"] / pe["p95_ms"]:.2f}')
    lines.append(f'  p95 command / frame period : {cmd["p95_ms"] / r["frame_period_ms"]:.2f} '
                 f'(goal < 1: under {r["frame_period_ms"]:.0f} ms)')
    if 'load' in r:
        before, after, cores = r['load']
        lines.append(f'  machine load (1 min)       : {before:.1f} before, {after:.1f} after, '
                     f'{cores} cores (a reader starved of CPU loses frames from its history '
                     'whatever the transport)')
    return '\n'.join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true', help='a 15 s run instead of 60 s')
    parser.add_argument('--seconds', type=float, default=0.0, help='measured seconds')
    parser.add_argument('--width', type=int, default=640)
    parser.add_argument('--height', type=int, default=480)
    parser.add_argument('--fps', type=float, default=30.0)
    parser.add_argument('--dds-profile', default='default',
                        help="the Fast DDS set-up of every process: default (the project's, "
                             "maxim_bringup/dds.py), builtin (Fast DDS's built-in transport) "
                             'or an XML profile file')
    args = parser.parse_args(argv)
    from maxim_bringup import dds
    transport = args.dds_profile
    if args.dds_profile == 'builtin':
        for name in dds.PROFILE_VARS:
            os.environ.pop(name, None)
        transport = "Fast DDS's built-in"
    elif args.dds_profile == 'default':
        dds.apply()
        chosen = os.environ.get(dds.PROFILE_VARS[0], '')
        transport = f'default set-up, profile {chosen}' if chosen else \
            "default set-up, Fast DDS's built-in (see the warning above)"
    else:
        if not os.path.isfile(args.dds_profile):
            parser.error(f'no such file: {args.dds_profile}')
        for name in dds.PROFILE_VARS:
            os.environ[name] = os.path.abspath(args.dds_profile)
    seconds = args.seconds or (15.0 if args.quick else 60.0)
    load_before = os.getloadavg()[0]
    r = measure_latency(seconds, args.width, args.height, args.fps)
    r['transport'] = transport
    r['load'] = (load_before, os.getloadavg()[0], os.cpu_count())
    print(report(r))
    return 0


if __name__ == '__main__':
    sys.exit(main())
