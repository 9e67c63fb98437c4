"""Perception benchmark: attention frames per second at 640x480 on one core, frame-to-command
latency, and the head command rate under load.

The baseline, measured in the same run on the same frames, is the bare minimum any vision
node pays per frame: a colour conversion and a resize (cv2.cvtColor + cv2.resize). The
attention pipeline (faces by Haar cascade, colour blobs, motion, tracking, novelty, focus,
percept text) is reported as frames per second, p50/p95 per-frame time, its cost as a multiple
of the baseline, and the share of a 30 fps frame period it uses. A per-stage breakdown says
where the time goes.

    python bench/perception/run.py [--quick] [--frames N] [--parts fps,latency,rate]

Frames are rendered beforehand by the synthetic camera (rendering is not timed). The process
is pinned to one CPU and OpenCV/BLAS to one thread for this part.

The ROS parts run first (pinning would be inherited by their processes), each from its own
script, which also runs alone: bench/perception/latency.py (frame published -> the head command
it causes, against a bare rclpy image echo; run twice, with the project's default set-up (its
Fast DDS profile, maxim_bringup/dds.py) and with Fast DDS's built-in transport) and
bench/perception/head_rate.py (head command rate while busy processes fill every core).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

os.environ.setdefault('OMP_NUM_THREADS', '1')
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

import cv2  # noqa: E402  (after the thread settings above)
import numpy as np  # noqa: E402

from maxim_perception.attention import AttentionConfig, AttentionCore  # noqa: E402
from maxim_perception.attention.detectors import (ColorDetector, FaceDetector,  # noqa: E402
                                                  MotionDetector)
from maxim_perception.camera import SyntheticCamera  # noqa: E402
from maxim_perception.camera_model import CameraModel  # noqa: E402

WIDTH, HEIGHT, FPS = 640, 480, 30.0


def _pin_one_core() -> str:
    cv2.setNumThreads(1)
    try:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[-1]})
        return f'cpu {cpus[-1]}'
    except (AttributeError, OSError) as exc:  # not Linux, or not allowed
        return f'not pinned ({exc})'


def _percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def _time_per_frame(frames, fn, repeat=1):
    """Per-frame seconds of fn(i, frame) over all frames (after 5 warm-up calls)."""
    for i, f in enumerate(frames[:5]):
        fn(i, f)
    times = []
    for _ in range(repeat):
        for i, f in enumerate(frames):
            t0 = time.perf_counter()
            fn(i, f)
            times.append(time.perf_counter() - t0)
    return times


def _stats(times):
    mean = sum(times) / len(times)
    return {'fps': 1.0 / mean, 'mean_ms': mean * 1e3,
            'p50_ms': _percentile(times, 50) * 1e3, 'p95_ms': _percentile(times, 95) * 1e3}


def measure_attention_fps(n_frames: int = 300) -> dict:
    """Baseline and attention pipeline timings on n_frames synthetic 640x480 frames."""
    cam = SyntheticCamera(WIDTH, HEIGHT, FPS)
    frames = [cam.render(i / FPS) for i in range(n_frames)]
    model = CameraModel(WIDTH, HEIGHT, math.radians(60.0))

    def baseline(i, frame):
        grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        return cv2.resize(grey, (WIDTH // 2, HEIGHT // 2), interpolation=cv2.INTER_AREA)

    # The baseline is tiny and noisy: time it over several passes.
    base = _time_per_frame(frames, baseline, repeat=5)
    core = AttentionCore(model, AttentionConfig())
    pipe = _time_per_frame(frames, lambda i, f: core.process(f, i / FPS, 0.0, 0.0))
    targets = len(core.last_result.targets)
    stages = {}
    for name, det in (('faces_haar', FaceDetector()), ('colors_hsv', ColorDetector()),
                      ('motion_diff', MotionDetector())):
        stages[name] = _stats(_time_per_frame(frames, lambda i, f, d=det: d.detect(f)))
    annot_core = AttentionCore(model)
    results = [annot_core.process(f, i / FPS) for i, f in enumerate(frames[:20])]
    stages['annotate'] = _stats(_time_per_frame(
        frames[:20], lambda i, f: annot_core.annotate(f, results[i]), repeat=5))
    b, p = _stats(base), _stats(pipe)
    return {
        'frames': n_frames, 'size': f'{WIDTH}x{HEIGHT}', 'targets_at_end': targets,
        'baseline_cvtcolor_resize': b, 'attention_pipeline': p, 'stages': stages,
        'pipeline_cost_x_baseline': p['mean_ms'] / b['mean_ms'],
        'pipeline_fps_over_30': p['fps'] / FPS,
        'p95_share_of_30fps_period': p['p95_ms'] / (1e3 / FPS),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true', help='short run (< 60 s)')
    parser.add_argument('--frames', type=int, default=0, help='frames to time')
    parser.add_argument('--json', action='store_true', help='print the raw numbers as JSON')
    parser.add_argument('--parts', default='fps,latency,rate',
                        help='comma-separated parts to run: fps, latency, rate')
    args = parser.parse_args(argv)
    n = args.frames or (120 if args.quick else 600)
    if n < 10:
        parser.error('--frames must be >= 10')
    parts = [x.strip() for x in args.parts.split(',') if x.strip()]
    unknown = sorted(set(parts) - {'fps', 'latency', 'rate'})
    if unknown or not parts:
        parser.error(f'--parts takes fps, latency and rate; got {args.parts!r}')
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if 'rate' in parts:      # first: it forks its busy processes before any ROS thread exists
        import head_rate
        head_rate.main(['--quick'] if args.quick else [])
        print()
    if 'latency' in parts:
        import latency
        latency.main(['--quick'] if args.quick else [])
        print()
        # Again on Fast DDS's built-in transport, in a process of its own (Fast DDS reads
        # its XML profile once per process), to show what the project's profile changes.
        print("the same on Fast DDS's built-in transport (no profile), for comparison:")
        sys.stdout.flush()
        cmd = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                            'latency.py'),
               '--dds-profile', 'builtin'] + (['--quick'] if args.quick else [])
        rc = subprocess.run(cmd, timeout=600, check=False).returncode
        if rc != 0:
            print(f'  (the run on the built-in transport failed: exit {rc})')
        print()
    if 'fps' in parts:
        _fps_part(n, args.json)
    return 0


def _fps_part(n: int, as_json: bool) -> None:
    pinned = _pin_one_core()
    t0 = time.perf_counter()
    r = measure_attention_fps(n)
    b, p = r['baseline_cvtcolor_resize'], r['attention_pipeline']
    print(f'perception bench: {r["frames"]} frames {r["size"]}, one core ({pinned}), '
          f'opencv {cv2.__version__}, numpy {np.__version__}')
    print(f'  baseline cvtColor+resize : {b["fps"]:9.0f} fps  mean {b["mean_ms"]:6.2f} ms  '
          f'p95 {b["p95_ms"]:6.2f} ms')
    print(f'  attention pipeline       : {p["fps"]:9.1f} fps  mean {p["mean_ms"]:6.2f} ms  '
          f'p95 {p["p95_ms"]:6.2f} ms  ({r["targets_at_end"]} targets)')
    for name, s in r['stages'].items():
        print(f'    stage {name:<18}: {s["fps"]:9.1f} fps  mean {s["mean_ms"]:6.2f} ms')
    print(f'  ratio pipeline/baseline time : {r["pipeline_cost_x_baseline"]:.1f}x')
    print(f'  pipeline fps / 30 fps camera : {r["pipeline_fps_over_30"]:.2f} '
          f'(p95 uses {100 * r["p95_share_of_30fps_period"]:.0f}% of a 33 ms frame period)')
    print(f'  wall time {time.perf_counter() - t0:.1f} s')
    if as_json:
        print(json.dumps(r, indent=2))


if __name__ == '__main__':
    sys.exit(main())
