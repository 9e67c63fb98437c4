"""A live view of a session in Foxglove: the recorded topics served over the Foxglove
WebSocket protocol by the Foxglove SDK (`foxglove-sdk`).

Each topic becomes a channel with the same `ros2msg` schema the MCAP file carries, and
messages go out as received (ROS 2 CDR), so Foxglove decodes the live stream exactly as it
decodes a recording. Images obey the same per-topic rate limit as the file. The server binds
127.0.0.1 unless told otherwise: a live view is for this machine (or an SSH tunnel), not the
network. Each view has its own SDK context, so two views (or tests) never share channels.
"""

from dataclasses import dataclass
import threading

from maxim_core.recording.rate import RateGate
from maxim_core.recording.schema import DefinitionFinder

DEFAULT_HOST = '127.0.0.1'
DEFAULT_PORT = 8765


class LiveViewError(RuntimeError):
    """The live view could not start (SDK missing, bad address, port taken)."""


@dataclass
class LiveTopic:
    type_name: str
    channel: object
    gate: RateGate
    sent: int = 0


def check_address(host: str, port: int) -> None:
    """ValueError unless host is a non-empty name and port is 0 (any free port)..65535."""
    if not isinstance(host, str) or not host.strip():
        raise ValueError(f'the live view needs a host to bind, got {host!r}')
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f'the live view port must be 0..65535 (0 = any free port), '
                         f'got {port!r}')


class FoxgloveLiveView:
    """A Foxglove WebSocket server publishing CDR messages of several topics."""

    def __init__(self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 name: str = 'maxim', finder: DefinitionFinder | None = None):
        check_address(host, port)
        try:
            import foxglove
        except ImportError as exc:
            raise LiveViewError(f'the Foxglove SDK is not installed ({exc}): run ./maxim setup '
                                '(it installs foxglove-sdk)') from exc
        self._foxglove = foxglove
        self.host = host
        self.finder = finder or DefinitionFinder()
        self._context = foxglove.Context()
        try:
            self._server = foxglove.start_server(name=name, host=host, port=port,
                                                 context=self._context)
        except (RuntimeError, ValueError, OSError) as exc:
            raise LiveViewError(f'cannot serve the Foxglove live view on {host}:{port}: '
                                f'{exc}') from exc
        self.topics: dict[str, LiveTopic] = {}
        self._lock = threading.Lock()
        self.closed = False

    @property
    def port(self) -> int:
        """The port the server listens on (the one chosen when 0 was asked)."""
        return self._server.port

    @property
    def url(self) -> str:
        return f'ws://{self.host}:{self.port}'

    def add_topic(self, topic: str, type_name: str, max_rate_hz: float = 0.0) -> None:
        """Advertise a topic; `type_name` like 'sensor_msgs/msg/Image'; 0 Hz = every message."""
        if max_rate_hz < 0:
            raise ValueError(f'max_rate_hz must be >= 0, got {max_rate_hz}')
        schema = self._foxglove.Schema(name=type_name, encoding='ros2msg',
                                       data=self.finder.definition(type_name).encode('utf-8'))
        with self._lock:
            if topic in self.topics:
                raise ValueError(f'topic {topic} is already served')
            channel = self._foxglove.Channel(topic, schema=schema, message_encoding='cdr',
                                             context=self._context)
            self.topics[topic] = LiveTopic(type_name, channel, RateGate.for_rate(max_rate_hz))

    def log(self, topic: str, data: bytes, stamp_ns: int) -> bool:
        """Send one message to the connected clients; False when rate-limited or closed."""
        with self._lock:
            if self.closed:
                return False
            stats = self.topics.get(topic)
            if stats is None:
                raise KeyError(f'topic {topic} is not served by the live view')
            if not stats.gate.admit(stamp_ns):
                return False
            stats.channel.log(bytes(data), log_time=stamp_ns)
            stats.sent += 1
            return True

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            for stats in self.topics.values():
                stats.channel.close()
            self._server.stop()

    def summary(self) -> dict:
        return {topic: {'type': s.type_name, 'sent': s.sent, 'rate_limited': s.gate.dropped}
                for topic, s in self.topics.items()}
