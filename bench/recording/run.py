"""bench/recording: a deliberation cycle with and without the session recorder subscribed.

`./maxim sim --record` runs the recorder in the same process as the mind, on the same
executor, so its work (taking every joint state, percept, attention state and camera image
in batches, writing them to MCAP) shares the interpreter and the 2 cores with deliberation.
This bench reproduces that:
one process, one MultiThreadedExecutor spinning a traffic node that publishes at a sim
session's rates (joint states 50 Hz, attention 15 Hz, percepts 5 Hz, 640x480 images 15 Hz)
while the main thread runs one-cycle deliberations of the embedded model (Deliberator, lean
grammar, greedy). Each repetition runs a cycle without the recorder node, then with it (the
order alternates, ABBA; the same prompt within a repetition, the prompt cache emptied before
each cycle), in the same run; the ratio of the medians and the median of the paired ratios
are printed (goal <= 1.1), of wall time and of the process's CPU time (all threads: the
model's, the recorder's, the traffic's), which a machine shared with other work disturbs
less. First, without deliberation, the process's CPU share with the traffic alone and with
the recorder added (alternating 5 s windows): what recording costs the machine.

Usage: python bench/recording/run.py [--quick] [--reps N]
"""

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

import numpy as np

# Like the tests: DDS stays on this machine, in a domain of its own (other processes on the
# machine must neither feed the recorder nor receive the bench's traffic).
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', str(1 + os.getpid() % 200))

TOOLS = {
    'look_at': {'type': 'object', 'properties': {'pan': {'type': 'number'},
                                                 'tilt': {'type': 'number'}},
                'required': ['pan', 'tilt']},
    'say': {'type': 'object', 'properties': {'text': {'type': 'string', 'maxLength': 120}},
            'required': ['text']},
}


class Traffic:
    """Publishes a sim session's topics at their rates, from executor timers."""

    def __init__(self, context):
        import rclpy
        from sensor_msgs.msg import Image, JointState

        from maxim_common import qos
        from maxim_interfaces.msg import AttentionState, Detection, Percept
        self.node = rclpy.create_node('bench_traffic', context=context)
        n = self.node
        joints = n.create_publisher(JointState, 'joint_states', qos.SENSOR)
        attention = n.create_publisher(AttentionState, 'attention/state', qos.EVENTS)
        percepts = n.create_publisher(Percept, 'percepts', qos.EVENTS)
        images = n.create_publisher(Image, 'camera/image_raw', qos.SENSOR)
        self.thoughts = None
        frame = np.random.default_rng(0).integers(0, 255, (480, 640, 3), np.uint8)
        image = Image(height=480, width=640, encoding='rgb8', step=640 * 3,
                      data=frame.tobytes())
        ball = Detection(track_id=3, label='red ball', pan=0.3, tilt=-0.1, salience=0.7)
        self.sent = 0

        def tick(pub, msg):
            def send():
                pub.publish(msg)
                self.sent += 1
            return send
        for period, pub, msg in (
                (1 / 50, joints, JointState(name=['head_pan_joint', 'head_tilt_joint'],
                                            position=[0.1, -0.1])),
                (1 / 15, attention, AttentionState(mode=1, has_focus=True, focus_track_id=3,
                                                   targets=[ball])),
                (1 / 5, percepts, Percept(percept_id='p', narrative='A red ball.',
                                          objects=[ball], salience=0.4)),
                (1 / 15, images, image)):
            n.create_timer(period, tick(pub, msg))


def make_recorder(context, path, busy: list):
    """The recorder node, its MCAP writes timed into busy[0] (seconds)."""
    from rclpy.parameter import Parameter

    from maxim_core.nodes.recorder_node import RecorderNode
    node = RecorderNode(context=context, parameter_overrides=[Parameter('path', value=path)])
    write = node.recorder.write

    def timed(*args):
        t = time.perf_counter()
        try:
            return write(*args)
        finally:
            busy[0] += time.perf_counter() - t
    node.recorder.write = timed
    return node


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='fewer repetitions')
    parser.add_argument('--reps', type=int, default=0, help='cycles per condition')
    args = parser.parse_args()
    reps = args.reps or (4 if args.quick else 10)

    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    from maxim_core.deliberation.cycles import DeliberationConfig, Deliberator
    from maxim_core.llm.grammar import deliberation_grammar
    from maxim_core.llm.llama import LlamaCppBackend
    from maxim_core.llm.model import resolve_model
    from maxim_core.prompt.tools import ToolSpec

    t0 = time.perf_counter()
    backend = LlamaCppBackend(resolve_model(), n_ctx=2048, n_threads=2)
    tools = [ToolSpec(n, f'the {n} tool', schema) for n, schema in TOOLS.items()]
    deliberator = Deliberator(backend, config=DeliberationConfig(
        max_cycles=1, max_tokens=96, temperature=0.0, retries=0),
        grammar_for=deliberation_grammar)

    context = rclpy.Context()
    rclpy.init(context=context)
    executor = MultiThreadedExecutor(num_threads=4, context=context)
    traffic = Traffic(context)
    executor.add_node(traffic.node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    out_dir = tempfile.mkdtemp(prefix='maxim-bench-recording-')
    times = {'off': [], 'on': []}
    cpu = {'off': [], 'on': []}     # process CPU time: every thread, the recorder's included
    written = 0
    overflows = 0   # drains that found a reader's history full (messages may be lost)
    busy = [0.0]
    idle_cpu = {'off': [], 'on': []}  # the process's CPU share with traffic only
    try:
        # Without deliberation: what the recorder adds to the process's CPU time at a session's
        # rates, in alternating 5 s windows (CPU time is little disturbed by other processes).
        for i in range(3):
            for cond in (('off', 'on') if i % 2 == 0 else ('on', 'off')):
                recorder = None
                if cond == 'on':
                    recorder = make_recorder(context, os.path.join(out_dir, f'idle{i}.mcap'),
                                             [0.0])
                    executor.add_node(recorder)
                time.sleep(0.5)
                t, c = time.perf_counter(), time.process_time()
                time.sleep(5.0)
                idle_cpu[cond].append((time.process_time() - c) / (time.perf_counter() - t))
                if recorder is not None:
                    executor.remove_node(recorder)
                    time.sleep(0.3)
                    recorder.destroy_node()
        deliberator.deliberate('warm up: a ball.', tools)
        for i in range(reps):
            order = ('off', 'on') if i % 2 == 0 else ('on', 'off')
            for cond in order:
                recorder = None
                if cond == 'on':
                    recorder = make_recorder(context, os.path.join(out_dir, f'{i}.mcap'), busy)
                    executor.add_node(recorder)
                time.sleep(1.0)  # the subscriptions match and traffic flows before timing
                # the same cold state for both conditions: no prompt prefix left in the cache
                backend.complete(f'warm up {i} {cond}', max_tokens=1, temperature=0.0)
                t, c = time.perf_counter(), time.process_time()
                deliberator.deliberate(f'{i}: a dog barks behind you and a red ball rolls '
                                       'left.', tools)
                times[cond].append(time.perf_counter() - t)
                cpu[cond].append(time.process_time() - c)
                if recorder is not None:
                    executor.remove_node(recorder)
                    time.sleep(0.5)  # callbacks in flight finish before the node goes
                    recorder.destroy_node()
                    written += sum(s.written for s in recorder.recorder.topics.values())
                    overflows += sum(recorder.overflows.values())
    finally:
        executor.shutdown(timeout_sec=5.0)
        traffic.node.destroy_node()
        rclpy.try_shutdown(context=context)
        spinner.join(timeout=5.0)
        backend.close()
    off, on = statistics.median(times['off']), statistics.median(times['on'])
    pairs = statistics.median(a / b for a, b in zip(times['on'], times['off']))
    print(f'load average {os.getloadavg()[0]:.1f}; {reps} cycles per condition, interleaved '
          f'(ABBA); traffic sent {traffic.sent} messages, recorder wrote {written} '
          f'(images at the rate limit), full histories {overflows}')
    print(f'deliberation cycle with the recorder {on:.3f} s / without {off:.3f} s = '
          f'{on / off:.3f}  (goal <= 1.10)')
    print(f'median of the paired ratios (same repetition) {pairs:.3f}; the recorder spent '
          f'{busy[0]:.2f} s in its MCAP writes over {sum(times["on"]) + reps:.0f} s recorded '
          f'= {100 * busy[0] / (sum(times["on"]) + reps):.2f} % of one core')
    cpu_off, cpu_on = statistics.median(cpu['off']), statistics.median(cpu['on'])
    print(f'process CPU time per cycle with the recorder {cpu_on:.3f} s / without '
          f'{cpu_off:.3f} s = {cpu_on / cpu_off:.3f}  (less sensitive to other processes)')
    share_off, share_on = (100 * statistics.median(idle_cpu[k]) for k in ('off', 'on'))
    print(f'traffic only, process CPU: {share_off:.1f} % of a core without the recorder, '
          f'{share_on:.1f} % with it (+{share_on - share_off:.1f} %; median of 3 windows of '
          '5 s each)')
    print(f'  without: {", ".join(f"{x:.2f}" for x in times["off"])}')
    print(f'  with:    {", ".join(f"{x:.2f}" for x in times["on"])}')
    print(f'done in {time.perf_counter() - t0:.0f} s (recordings in {out_dir})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
