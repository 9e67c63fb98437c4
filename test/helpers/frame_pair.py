"""Two ends of a camera link for the frame-transport test, each run as its own process.

    python frame_pair.py pub N FPS   waits for a subscriber, publishes N 640x480 bgr8 frames
                                     at FPS (sensor QoS), prints SENT N
    python frame_pair.py sub N       prints READY, counts frames until N arrived or 2 s pass
                                     without one (at most 120 s), prints RECEIVED k

Both use maxim_perception's conversions and maxim_common's QoS, as the camera and attention
nodes do; the Fast DDS profile is whatever the environment gives them (the test passes the
default set-up).
"""

import sys
import time

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import Image

from maxim_common.qos import SENSOR
from maxim_perception.conversions import image_to_msg, time_msg


def publish(n: int, fps: float) -> int:
    rclpy.init()
    node = rclpy.create_node('frame_pair_pub')
    pub = node.create_publisher(Image, 'camera/image_raw', SENSOR)
    rng = np.random.default_rng(1)
    frames = [rng.integers(0, 255, (480, 640, 3), dtype=np.uint8) for _ in range(4)]
    deadline = time.monotonic() + 60.0
    while pub.get_subscription_count() < 1:
        if time.monotonic() > deadline:
            print('NO SUBSCRIBER', flush=True)
            return 1
        time.sleep(0.05)
    time.sleep(0.5)    # the match is known on both sides
    t0 = time.monotonic()
    for i in range(n):
        delay = t0 + i / fps - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        pub.publish(image_to_msg(frames[i % 4], 'bgr8', time_msg(1.0 + i / fps), 'camera'))
    print(f'SENT {n}', flush=True)
    time.sleep(1.0)    # the last frames leave before the participant goes
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


def subscribe(n: int) -> int:
    rclpy.init()
    node = rclpy.create_node('frame_pair_sub')
    got = []
    node.create_subscription(Image, 'camera/image_raw',
                             lambda m: got.append(len(m.data)), SENSOR)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    print('READY', flush=True)
    end = time.monotonic() + 120.0
    last = None
    while len(got) < n and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.1)
        if got:
            if last is None or len(got) != last[0]:
                last = (len(got), time.monotonic())
            elif time.monotonic() - last[1] > 2.0:
                break      # the stream ended short of n
    whole = sum(1 for size in got if size == 640 * 480 * 3)
    print(f'RECEIVED {whole}', flush=True)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    role, count = sys.argv[1], int(sys.argv[2])
    sys.exit(publish(count, float(sys.argv[3])) if role == 'pub' else subscribe(count))
