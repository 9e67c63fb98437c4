"""The recorder node: a session to an MCAP file that rosbag2 and Foxglove open, and/or a live
Foxglove view of the same topics."""

import threading
import time

import rclpy
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health
from maxim_common.lifetime import run
from maxim_common.params import declare_table
from maxim_core.health import recorder_health
from maxim_core.recording.config import (in_received_order, message_class, output_path,
                                         PARAMS, read_config, run_metadata, taps)
from maxim_core.recording.live import FoxgloveLiveView, LiveViewError
from maxim_core.recording.writer import McapRecorder, RecordingError


class RecorderNode(Node):
    """Records the session's topics (CDR, as received) into one MCAP file, and/or serves them
    live to Foxglove over a local WebSocket (Foxglove SDK).

    Parameters: recording/config.py (PARAMS, all read-only; described there): path, topics,
        image_rate_hz, write_file, foxglove.enabled, foxglove.host, foxglove.port, run_info,
        drain_period_s.
    Subscriptions: every entry of `topics`, raw, drained in batches (below).

    Why batches: in `./maxim sim` the recorder shares the process (and its interpreter) with
    the mind. Handed to the executor one by one, each message costs a wake-up, a task and a
    callback in Python, ~2 ms of CPU time: ~85 messages a second at a session's rates took
    17 % of a core and made a deliberation cycle ~1.4x slower (bench/recording). So the
    subscriptions live on a tap node that no executor spins: DDS keeps what arrives in each
    reader's history (SENSOR_DEPTH, EVENT_DEPTH) and a thread of the recorder's own takes
    everything there every `drain_period_s` (no executor work at all), stamping each message
    with the time DDS received it (the node's clock, sim time included), not the time it was
    taken.
    Publishers: diagnostics (diagnostic_msgs/DiagnosticArray, 1 Hz: messages written).
    """

    def __init__(self, **kwargs):
        super().__init__('recorder', **kwargs)
        cfg = read_config(declare_table(self, PARAMS, read_only=True))
        self.config = cfg
        self.recorder = None
        self.live = None
        if cfg.write_file:
            self.recorder = McapRecorder(output_path(cfg.path))
            if cfg.run_info:
                self.recorder.add_metadata('maxim_run', run_metadata(cfg.run_info))
            self.get_logger().info(f'recording to {self.recorder.path}')
        if cfg.foxglove:
            try:
                self.live = FoxgloveLiveView(cfg.foxglove_host, cfg.foxglove_port)
            except LiveViewError:
                if self.recorder is not None:
                    self.recorder.close()
                raise
            self.get_logger().info(f'Foxglove live view on {self.live.url} (Foxglove: Open '
                                   'connection > Foxglove WebSocket)')
        # Never added to an executor: the drain timer below takes its messages.
        self.tap = rclpy.create_node('recorder_tap', context=self.context,
                                     start_parameter_services=False)
        self._taps = []
        self.overflows: dict[str, int] = {}
        self._drain_lock = threading.Lock()
        self._closed = False
        for tap in taps(cfg):
            cls = message_class(tap.type_name)
            for sink in (self.recorder, self.live):
                if sink is not None:
                    sink.add_topic(tap.topic, tap.type_name, tap.rate_hz)
            qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=tap.depth,
                             reliability=ReliabilityPolicy.BEST_EFFORT if tap.sensor
                             else ReliabilityPolicy.RELIABLE)
            sub = self.tap.create_subscription(cls, tap.topic, self._writer_for(tap.topic), qos,
                                               raw=True)
            self._taps.append((tap.topic, qos.depth, sub))
        self._stop_draining = threading.Event()
        self._drainer = threading.Thread(target=self._drain_loop, name='recorder_drain',
                                         daemon=True)
        self._drainer.start()
        self.diagnostics = Diagnostics(self, 'recording', self.health)

    def _drain_loop(self) -> None:
        while not self._stop_draining.wait(self.config.drain_period_s):
            try:
                self.drain()
            except (OSError, RecordingError) as exc:  # the next drain tries again
                self.get_logger().error(f'recording failed: {exc}', throttle_duration_sec=10.0)

    def health(self) -> Health:
        rec, live = self.recorder, self.live
        written = sum(t['written'] for t in rec.summary().values()) if rec else 0
        sent = sum(t['sent'] for t in live.summary().values()) if live else 0
        return recorder_health(rec.path if rec else '', written, live.url if live else '',
                               sent, bool(rec and rec.closed))

    def _writer_for(self, topic: str):
        def write(data: bytes, stamp: int) -> None:
            if self.recorder is not None:
                self.recorder.write(topic, data, stamp)
            if self.live is not None:
                self.live.log(topic, data, stamp)
        return write

    def drain(self) -> int:
        """Take every message waiting in the subscriptions and write them in the order DDS
        received them; returns how many were taken."""
        with self._drain_lock:
            if self._closed:
                return 0
            batch = []
            for topic, depth, sub in self._taps:
                taken = 0
                with sub.handle:  # what the executor does for a subscription, in a loop
                    while taken <= depth:
                        got = sub.handle.take_message(sub.msg_type, True)
                        if got is None:
                            break
                        data, info = got
                        batch.append((info.get('received_timestamp') or 0, topic, data,
                                      sub.callback))
                        taken += 1
                if taken >= depth:  # the history was full: older messages may be gone
                    self.overflows[topic] = self.overflows.get(topic, 0) + 1
                    self.get_logger().warning(
                        f'{topic}: {taken} messages waited in a history of {depth}; older '
                        f'ones may have been lost (drain more often: drain_period_s)',
                        throttle_duration_sec=10.0)
            if not batch:
                return 0
            # Stamped on the node's clock (sim time when use_sim_time), by each one's age.
            for _, data, write, stamp in in_received_order(
                    batch, time.time_ns(), self.get_clock().now().nanoseconds):
                write(data, stamp)
            return len(batch)

    def summary(self) -> dict:
        """What was written, skipped by the rate limit, and lost to a full history, by
        topic."""
        out = self.recorder.summary() if self.recorder is not None else {}
        for topic, count in self.overflows.items():
            out.setdefault(topic, {})['overflows'] = count
        return out

    def destroy_node(self):
        self._stop_draining.set()
        self._drainer.join(timeout=5.0)
        try:
            self.drain()  # what arrived since the last drain is written before closing
        finally:
            with self._drain_lock:  # a drain still running ends first
                self._closed = True
                self.tap.destroy_node()
        if self.recorder is not None:
            self.recorder.close()
            self.get_logger().info(f'recorded {self.summary()}')
        if self.live is not None:
            self.live.close()
            self.get_logger().info(f'served live {self.live.summary()}')
        return super().destroy_node()


def main(args=None):
    run(RecorderNode, args)
