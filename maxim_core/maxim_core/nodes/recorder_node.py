"""The recorder node: a session to an MCAP file that rosbag2 and Foxglove open, and/or a live
Foxglove view of the same topics."""

from dataclasses import dataclass
import datetime
import importlib
import json
import os
import threading
import time

import rclpy
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rcl_interfaces.msg import IntegerRange, ParameterDescriptor

from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health
from maxim_common.lifetime import run
from maxim_core.health import recorder_health
from maxim_core.recording.live import (check_address, DEFAULT_HOST, DEFAULT_PORT,
                                       FoxgloveLiveView, LiveViewError)
from maxim_core.recording.writer import McapRecorder, RecordingError

# What a session recording holds by default: topic -> type.
DEFAULT_TOPICS = [
    'thoughts:maxim_interfaces/msg/Thought',
    'percepts:maxim_interfaces/msg/Percept',
    'attention/state:maxim_interfaces/msg/AttentionState',
    'tool_calls:maxim_interfaces/msg/ToolCall',
    'tool_results:maxim_interfaces/msg/ToolResult',
    'pain:maxim_interfaces/msg/PainSignal',
    'episodes:maxim_interfaces/msg/Episode',
    'idle:maxim_interfaces/msg/IdleEvent',
    'idle/provenance:maxim_interfaces/msg/IdleProvenance',
    'memory/updates:maxim_interfaces/msg/MemoryUpdate',
    'head/state:maxim_interfaces/msg/HeadState',
    'joint_states:sensor_msgs/msg/JointState',
    'camera/image_raw:sensor_msgs/msg/Image',
]
SENSOR_TOPICS = ('joint_states', 'camera/image_raw', 'attention/debug_image')
# How many messages a topic's reader keeps between two drains: sensor topics (best effort,
# joint states at 50 Hz) and events (reliable). A drain that finds a history full may have
# lost the oldest messages: it is counted and logged (`overflows`), never silent.
SENSOR_DEPTH = 64
EVENT_DEPTH = 1000


def message_class(type_name: str):
    """'pkg/msg/Type' -> the Python message class."""
    package, kind, name = type_name.split('/')
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


@dataclass(frozen=True)
class RecorderConfig:
    path: str = ''
    topics: tuple = tuple(DEFAULT_TOPICS)
    image_rate_hz: float = 2.0
    write_file: bool = True
    foxglove: bool = False
    foxglove_host: str = DEFAULT_HOST
    foxglove_port: int = DEFAULT_PORT
    run_info: str = ''
    drain_period_s: float = 0.1

    def __post_init__(self):
        if not self.write_file and not self.foxglove:
            raise ValueError('the recorder has nothing to do: set write_file or '
                             'foxglove.enabled')
        if not 0.0 < self.drain_period_s <= 1.0:
            raise ValueError(f'drain_period_s must be in (0, 1], got {self.drain_period_s}')
        if self.image_rate_hz < 0:
            raise ValueError(f'image_rate_hz must be >= 0, got {self.image_rate_hz}')
        if self.foxglove:
            check_address(self.foxglove_host, self.foxglove_port)
        if self.run_info:
            try:
                info = json.loads(self.run_info)
            except json.JSONDecodeError as exc:
                raise ValueError(f'run_info must be a JSON object: {exc}') from exc
            if not isinstance(info, dict):
                raise ValueError('run_info must be a JSON object')
        for entry in self.topics:
            topic, sep, type_name = entry.partition(':')
            if not sep or not topic or type_name.count('/') != 2:
                raise ValueError(f"a topics entry must be 'topic:pkg/msg/Type', got {entry!r}")


class RecorderNode(Node):
    """Records the session's topics (CDR, as received) into one MCAP file, and/or serves them
    live to Foxglove over a local WebSocket (Foxglove SDK).

    Parameters:
        path (string): output file; '' = ~/.maxim/recordings/maxim-<time>.mcap.
        topics (string[]): 'topic:pkg/msg/Type' entries to record.
        image_rate_hz (double): images (sensor_msgs/Image topics) at most this often; 0 = all.
        write_file (bool, true): write the MCAP file (false: live view only).
        foxglove.enabled (bool, false): serve the topics to Foxglove live.
        foxglove.host (string, 127.0.0.1): address the live view binds.
        foxglove.port (int, 8765): its port; 0 = any free port.
        run_info (string, JSON object): how the run was started (graph, parameters of every
            node); written into the file as the MCAP metadata record 'maxim_run', one entry
            per key, each value as JSON, so a report shows the parameters and model.
        drain_period_s (double, 0.1): how often the subscriptions are drained.
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
        p = self.declare_parameter
        fixed = {'read_only': True}
        cfg = RecorderConfig(
            path=p('path', '', ParameterDescriptor(description='Output MCAP file',
                                                   **fixed)).value,
            topics=tuple(p('topics', DEFAULT_TOPICS, ParameterDescriptor(
                description="'topic:pkg/msg/Type' entries", **fixed)).value),
            image_rate_hz=p('image_rate_hz', 2.0, ParameterDescriptor(
                description='Images per second at most (0 = all)', **fixed)).value,
            write_file=p('write_file', True, ParameterDescriptor(
                description='Write the MCAP file (false: live view only)', **fixed)).value,
            foxglove=p('foxglove.enabled', False, ParameterDescriptor(
                description='Serve the topics live to Foxglove (WebSocket)', **fixed)).value,
            foxglove_host=p('foxglove.host', DEFAULT_HOST, ParameterDescriptor(
                description='Address the Foxglove live view binds', **fixed)).value,
            foxglove_port=p('foxglove.port', DEFAULT_PORT, ParameterDescriptor(
                description='Port of the Foxglove live view (0 = any free port)',
                integer_range=[IntegerRange(from_value=0, to_value=65535, step=1)],
                **fixed)).value,
            run_info=p('run_info', '', ParameterDescriptor(
                description='How the run was started (JSON object), kept as MCAP metadata',
                **fixed)).value,
            drain_period_s=p('drain_period_s', 0.1, ParameterDescriptor(
                description='Seconds between two drains of the subscriptions', **fixed)).value)
        self.config = cfg
        self.recorder = None
        self.live = None
        if cfg.write_file:
            path = cfg.path
            if not path:
                stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
                path = os.path.join('~', '.maxim', 'recordings', f'maxim-{stamp}.mcap')
            self.recorder = McapRecorder(path)
            if cfg.run_info:
                self.recorder.add_metadata('maxim_run', {
                    key: json.dumps(value) for key, value in json.loads(cfg.run_info).items()})
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
        for entry in cfg.topics:
            topic, _, type_name = entry.partition(':')
            cls = message_class(type_name)
            rate = cfg.image_rate_hz if type_name == 'sensor_msgs/msg/Image' else 0.0
            for sink in (self.recorder, self.live):
                if sink is not None:
                    sink.add_topic(topic, type_name, rate)
            sensor = topic in SENSOR_TOPICS
            qos = QoSProfile(history=HistoryPolicy.KEEP_LAST,
                             depth=SENSOR_DEPTH if sensor else EVENT_DEPTH,
                             reliability=ReliabilityPolicy.BEST_EFFORT if sensor
                             else ReliabilityPolicy.RELIABLE)
            sub = self.tap.create_subscription(cls, topic, self._writer_for(topic), qos,
                                               raw=True)
            self._taps.append((topic, qos.depth, sub))
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
            # DDS stamps reception with the system clock; the recording uses the node's clock
            # (sim time when use_sim_time), so each stamp is now minus the message's age.
            wall, now = time.time_ns(), self.get_clock().now().nanoseconds
            batch.sort(key=lambda item: item[0])
            for received, topic, data, write in batch:
                age = max(0, wall - received) if received else 0
                write(data, max(0, now - age))
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
