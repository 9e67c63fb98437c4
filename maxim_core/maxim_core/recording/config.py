"""What the recorder node records and how (plain Python, no rclpy): its parameters, the
topics a session holds by default and how deep their readers are, and the batch of messages a
drain takes, in the order DDS received them, on the node's clock.

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
"""

from dataclasses import dataclass
import datetime
import importlib
import json
import os

from maxim_core.recording.live import check_address, DEFAULT_HOST, DEFAULT_PORT

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


# name: (default, description, (low, high) range or None), all read-only (maxim_common.params).
PARAMS = {
    'path': ('', 'Output MCAP file', None),
    'topics': (DEFAULT_TOPICS, "'topic:pkg/msg/Type' entries", None),
    'image_rate_hz': (2.0, 'Images per second at most (0 = all)', None),
    'write_file': (True, 'Write the MCAP file (false: live view only)', None),
    'foxglove.enabled': (False, 'Serve the topics live to Foxglove (WebSocket)', None),
    'foxglove.host': (DEFAULT_HOST, 'Address the Foxglove live view binds', None),
    'foxglove.port': (DEFAULT_PORT, 'Port of the Foxglove live view (0 = any free port)',
                      (0, 65535)),
    'run_info': ('', 'How the run was started (JSON object), kept as MCAP metadata', None),
    'drain_period_s': (0.1, 'Seconds between two drains of the subscriptions', None),
}


def read_config(v: dict) -> RecorderConfig:
    """The config from the declared values by name (ValueError: a bad one, named)."""
    return RecorderConfig(
        path=v['path'], topics=tuple(v['topics']), image_rate_hz=v['image_rate_hz'],
        write_file=v['write_file'], foxglove=v['foxglove.enabled'],
        foxglove_host=v['foxglove.host'], foxglove_port=v['foxglove.port'],
        run_info=v['run_info'], drain_period_s=v['drain_period_s'])


def output_path(path: str) -> str:
    """The file to write: `path`, or ~/.maxim/recordings/maxim-<time>.mcap for ''."""
    if path:
        return path
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    return os.path.join('~', '.maxim', 'recordings', f'maxim-{stamp}.mcap')


def run_metadata(run_info: str) -> dict[str, str]:
    """run_info (a JSON object) as the MCAP metadata record 'maxim_run': one entry per key,
    each value as JSON."""
    return {key: json.dumps(value) for key, value in json.loads(run_info).items()}


@dataclass(frozen=True)
class Tap:
    """One recorded topic: its message type, image rate limit and reader history."""

    topic: str
    type_name: str
    rate_hz: float        # at most this many a second (images); 0: all
    depth: int            # messages the reader keeps between two drains
    sensor: bool          # best effort (sensor data), else reliable


def taps(cfg: RecorderConfig) -> list[Tap]:
    """The topics of `cfg.topics`, each with its rate limit and reader history."""
    out = []
    for entry in cfg.topics:
        topic, _, type_name = entry.partition(':')
        rate = cfg.image_rate_hz if type_name == 'sensor_msgs/msg/Image' else 0.0
        sensor = topic in SENSOR_TOPICS
        out.append(Tap(topic, type_name, rate, SENSOR_DEPTH if sensor else EVENT_DEPTH,
                       sensor))
    return out


def in_received_order(batch: list, wall_ns: int, now_ns: int) -> list:
    """A drain's batch of (received_ns, topic, data, write) in the order DDS received them,
    each as (topic, data, write, stamp): DDS stamps reception with the system clock
    (`wall_ns`: now on it), the recording uses the node's clock (`now_ns`: sim time when
    use_sim_time), so each stamp is now minus the message's age (0 received: no age)."""
    out = []
    for received, topic, data, write in sorted(batch, key=lambda item: item[0]):
        age = max(0, wall_ns - received) if received else 0
        out.append((topic, data, write, max(0, now_ns - age)))
    return out
