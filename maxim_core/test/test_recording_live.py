"""The Foxglove live view: a real Foxglove SDK server on an ephemeral localhost port, read by
a WebSocket client speaking the Foxglove protocol (advertised channels, subscribe, binary
message data), with messages serialized as DDS carries them."""

import base64
import hashlib
import json
import os
import socket
import struct

import pytest

pytest.importorskip('foxglove', reason='foxglove-sdk is not installed (./maxim setup)')

from maxim_core.recording.live import FoxgloveLiveView, LiveViewError  # noqa: E402

WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
OP_MESSAGE_DATA = 0x01


class FoxgloveClient:
    """A minimal RFC 6455 client (stdlib sockets) for the Foxglove WebSocket protocol."""

    def __init__(self, port: int, subprotocol: str = 'foxglove.sdk.v1', timeout: float = 5.0):
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f'GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n'
                           'Upgrade: websocket\r\nConnection: Upgrade\r\n'
                           f'Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n'
                           f'Sec-WebSocket-Protocol: {subprotocol}\r\n\r\n').encode())
        self.buf = b''
        while b'\r\n\r\n' not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError('the server closed during the handshake')
            self.buf += chunk
        head, self.buf = self.buf.split(b'\r\n\r\n', 1)
        lines = head.decode().split('\r\n')
        assert lines[0].startswith('HTTP/1.1 101'), lines[0]
        headers = {k.strip().lower(): v.strip()
                   for k, _, v in (line.partition(':') for line in lines[1:])}
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        assert headers['sec-websocket-accept'] == accept
        self.subprotocol = headers.get('sec-websocket-protocol', '')

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError('the server closed the connection')
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self, timeout: float = 5.0) -> tuple[int, bytes]:
        """(opcode, payload) of the next data frame; pings are answered."""
        self.sock.settimeout(timeout)
        opcode, payload = None, b''
        while True:
            b0, b1 = self._exact(2)
            length = b1 & 0x7F
            if length == 126:
                length = struct.unpack('>H', self._exact(2))[0]
            elif length == 127:
                length = struct.unpack('>Q', self._exact(8))[0]
            data = self._exact(length)      # server frames are not masked
            op = b0 & 0x0F
            if op == 0x9:
                self._send(0xA, data)
                continue
            if op == 0x8:
                raise ConnectionError('the server closed the connection')
            if op != 0x0:
                opcode = op
            payload += data
            if b0 & 0x80:
                return opcode, payload

    def _send(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack('>H', n)
        else:
            head += bytes([0x80 | 127]) + struct.pack('>Q', n)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send_json(self, obj: dict) -> None:
        self._send(0x1, json.dumps(obj).encode())

    def json_until(self, op: str, tries: int = 20) -> dict:
        for _ in range(tries):
            kind, payload = self.recv()
            if kind == 0x1:
                msg = json.loads(payload)
                if msg.get('op') == op:
                    return msg
        raise AssertionError(f'no {op!r} message in {tries} frames')

    def close(self) -> None:
        try:
            self._send(0x8, struct.pack('>H', 1000))
        finally:
            self.sock.close()


def first_message(view, client, topic, data, subscription, tries=50) -> tuple[int, int, bytes]:
    """Log `data` until the subscribed client gets a message frame (subscribing is async)."""
    for i in range(tries):
        view.log(topic, data, 1_000_000_000 + i)
        try:
            kind, payload = client.recv(timeout=0.2)
        except socket.timeout:
            continue
        if kind == 0x2 and payload[0] == OP_MESSAGE_DATA:
            sub_id, stamp = struct.unpack_from('<IQ', payload, 1)
            assert sub_id == subscription
            return sub_id, stamp, payload[13:]
    raise AssertionError(f'no message on {topic} after {tries} sends')


def test_live_view_advertises_topics_and_streams_cdr():
    from rclpy.serialization import deserialize_message, serialize_message
    from maxim_interfaces.msg import Thought

    view = FoxgloveLiveView(port=0)
    try:
        assert view.port > 0 and view.url == f'ws://127.0.0.1:{view.port}'
        view.add_topic('thoughts', 'maxim_interfaces/msg/Thought')
        view.add_topic('camera/image_raw', 'sensor_msgs/msg/Image', max_rate_hz=2.0)
        client = FoxgloveClient(view.port)
        try:
            info = client.json_until('serverInfo')
            assert info['name'] == 'maxim'
            channels = {c['topic']: c for c in client.json_until('advertise')['channels']}
            assert set(channels) == {'thoughts', 'camera/image_raw'}
            thought = channels['thoughts']
            assert thought['encoding'] == 'cdr' and thought['schemaEncoding'] == 'ros2msg'
            assert thought['schemaName'] == 'maxim_interfaces/msg/Thought'
            assert 'MSG: builtin_interfaces/Time' in thought['schema']
            client.send_json({'op': 'subscribe',
                              'subscriptions': [{'id': 7, 'channelId': thought['id']}]})
            sent = Thought(deliberation_id='d1', cycle=2, text='a red ball rolls by',
                           salience=0.6)
            _, stamp, payload = first_message(view, client, 'thoughts',
                                              serialize_message(sent), 7)
            got = deserialize_message(payload, Thought)
            assert got.text == 'a red ball rolls by' and got.cycle == 2
            assert stamp >= 1_000_000_000
        finally:
            client.close()
        # Images are rate-limited like the recording's.
        assert [view.log('camera/image_raw', b'\0\1\0\0', t)
                for t in (0, 100_000_000, 600_000_000)] == [True, False, True]
        assert view.summary()['camera/image_raw'] == {
            'type': 'sensor_msgs/msg/Image', 'sent': 2, 'rate_limited': 1}
        with pytest.raises(KeyError, match='not served'):
            view.log('nowhere', b'', 0)
    finally:
        view.close()
    assert view.log('thoughts', b'', 0) is False       # closed: nothing more goes out


def test_live_view_bad_addresses_are_clear_errors():
    with pytest.raises(ValueError, match='0..65535'):
        FoxgloveLiveView(port=70000)
    with pytest.raises(ValueError, match='needs a host'):
        FoxgloveLiveView(host='')
    first = FoxgloveLiveView(port=0)
    try:
        with pytest.raises(LiveViewError, match=f'127.0.0.1:{first.port}'):
            FoxgloveLiveView(port=first.port)        # the port is taken
    finally:
        first.close()


@pytest.mark.ros
def test_recorder_node_serves_every_recorded_topic_live():
    """`foxglove.enabled` on the recorder: every recorded topic is advertised, and a message
    published over DDS reaches the Foxglove client (live view only, no file)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rclpy.serialization import deserialize_message

    from maxim_core.nodes.recorder_node import RecorderNode
    from maxim_core.recording.config import DEFAULT_TOPICS
    from maxim_interfaces.msg import PainSignal

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        node = RecorderNode(context=ctx, parameter_overrides=[
            Parameter('write_file', value=False), Parameter('foxglove.enabled', value=True),
            Parameter('foxglove.port', value=0)])
        assert node.recorder is None and node.live.url.startswith('ws://127.0.0.1:')
        source = rclpy.create_node('pain_source', context=ctx)
        pub = source.create_publisher(PainSignal, 'pain', 10)
        executor = SingleThreadedExecutor(context=ctx)
        executor.add_node(node)
        executor.add_node(source)
        client = FoxgloveClient(node.live.port)
        try:
            channels = {c['topic']: c for c in client.json_until('advertise')['channels']}
            assert set(channels) == {e.partition(':')[0] for e in DEFAULT_TOPICS}
            assert channels['pain']['schemaName'] == 'maxim_interfaces/msg/PainSignal'
            client.send_json({'op': 'subscribe',
                              'subscriptions': [{'id': 3, 'channelId': channels['pain']['id']}]})
            got = None
            for _ in range(100):
                pub.publish(PainSignal(intensity=0.8, description='burn'))
                executor.spin_once(timeout_sec=0.05)
                try:
                    kind, payload = client.recv(timeout=0.05)
                except socket.timeout:
                    continue
                if kind == 0x2 and payload[0] == OP_MESSAGE_DATA:
                    got = deserialize_message(payload[13:], PainSignal)
                    break
            assert got is not None and got.description == 'burn'
            assert got.intensity == pytest.approx(0.8)
        finally:
            client.close()
        node.destroy_node()
        source.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
