"""Writing serialized ROS 2 messages to an MCAP file, as rosbag2 does.

Messages arrive already CDR-serialized (the node subscribes raw), so recording costs a copy,
not a decode. Each topic may have a rate limit (camera images at a few per second are enough
to see what the robot saw). Chunks are small so a killed process loses at most the last
chunk; `close()` writes the summary that makes the file quick to open.
"""

from dataclasses import dataclass
import os
import threading
from typing import Callable

from mcap.writer import CompressionType, Writer

from maxim_core.recording.rate import RateGate
from maxim_core.recording.schema import DefinitionFinder


class RecordingError(RuntimeError):
    """The recording could not be opened or written."""


@dataclass
class TopicStats:
    type_name: str
    channel_id: int
    gate: RateGate
    written: int = 0


class McapRecorder:
    """Writes CDR messages of several topics into one MCAP file."""

    def __init__(self, path: str, finder: DefinitionFinder | None = None,
                 chunk_size: int = 256 * 1024, profile: str = 'ros2'):
        self.path = os.path.abspath(os.path.expanduser(path))
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        if os.path.exists(self.path):
            raise RecordingError(f'{self.path} exists; recordings are never overwritten')
        self.finder = finder or DefinitionFinder()
        try:
            self._file = open(self.path, 'wb')
        except OSError as exc:
            raise RecordingError(f'cannot create {self.path}: {exc.strerror}') from exc
        self._writer = Writer(self._file, chunk_size=chunk_size,
                              compression=CompressionType.ZSTD)
        self._writer.start(profile=profile, library='maxim')
        self._schemas: dict[str, int] = {}
        self.topics: dict[str, TopicStats] = {}
        self._lock = threading.Lock()
        self.closed = False

    def add_topic(self, topic: str, type_name: str, max_rate_hz: float = 0.0) -> None:
        """Register a topic; `type_name` like 'sensor_msgs/msg/Image'; 0 Hz = every message."""
        with self._lock:
            if type_name not in self._schemas:
                text = self.finder.definition(type_name)
                self._schemas[type_name] = self._writer.register_schema(
                    name=type_name, encoding='ros2msg', data=text.encode('utf-8'))
            channel = self._writer.register_channel(
                topic=topic, message_encoding='cdr', schema_id=self._schemas[type_name])
            self.topics[topic] = TopicStats(type_name, channel, RateGate.for_rate(max_rate_hz))

    def add_metadata(self, name: str, entries: dict[str, str]) -> None:
        """An MCAP metadata record (string keys and values): how the run was configured."""
        with self._lock:
            if self.closed:
                raise RecordingError(f'{self.path} is closed')
            self._writer.add_metadata(name, {str(k): str(v) for k, v in entries.items()})

    def write(self, topic: str, data: bytes, stamp_ns: int) -> bool:
        """Write one message; False when the rate limit skipped it or the file is closed."""
        with self._lock:
            if self.closed:
                return False
            stats = self.topics.get(topic)
            if stats is None:
                raise RecordingError(f'topic {topic} was not added to the recording')
            if not stats.gate.admit(stamp_ns):
                return False
            self._writer.add_message(channel_id=stats.channel_id, log_time=stamp_ns,
                                     data=bytes(data), publish_time=stamp_ns,
                                     sequence=stats.written)
            stats.written += 1
            return True

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self._writer.finish()
            self._file.close()

    def summary(self) -> dict:
        return {topic: {'type': s.type_name, 'written': s.written, 'rate_limited': s.gate.dropped}
                for topic, s in self.topics.items()}


def read_messages(path: str, topics: list[str] | None = None,
                  decode: bool = True) -> 'list[tuple[str, int, object]]':
    """(topic, log_time_ns, message) of a recording, in log-time order.

    With decode=True messages are decoded with mcap_ros2 (attribute access like ROS
    messages, no rclpy needed); otherwise the raw CDR bytes are returned.
    """
    from mcap.reader import make_reader
    decoders: list[Callable] = []
    if decode:
        from mcap_ros2.decoder import DecoderFactory
        decoders = [DecoderFactory()]
    out = []
    with open(path, 'rb') as f:
        reader = make_reader(f, decoder_factories=decoders)
        if decode:
            for schema, channel, message, decoded in reader.iter_decoded_messages(
                    topics=topics, log_time_order=True):
                out.append((channel.topic, message.log_time, decoded))
        else:
            for schema, channel, message in reader.iter_messages(topics=topics,
                                                                 log_time_order=True):
                out.append((channel.topic, message.log_time, message.data))
    return out


def read_metadata(path: str) -> dict[str, dict[str, str]]:
    """The MCAP metadata records of a recording: {name: {key: value}} (later names win)."""
    from mcap.reader import make_reader
    with open(path, 'rb') as f:
        return {m.name: dict(m.metadata) for m in make_reader(f).iter_metadata()}
