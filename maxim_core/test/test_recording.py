"""Session recording: real messages serialized as DDS carries them, written to MCAP, read
back with the mcap readers, and turned into a report."""

import json
import os
import threading
import time

import pytest

from maxim_core.recording.report import main as report_main, write_report
from maxim_core.recording.schema import DefinitionFinder, SchemaError
from maxim_core.recording.writer import (McapRecorder, read_messages, read_metadata,
                                         RecordingError)


def serialize(msg):
    from rclpy.serialization import serialize_message
    return serialize_message(msg)


def test_schema_text_includes_every_dependency_once():
    text = DefinitionFinder().definition('maxim_interfaces/msg/Percept')
    assert text.count('MSG: maxim_interfaces/Detection') == 1
    assert text.count('MSG: std_msgs/Header') == 1
    assert text.count('MSG: builtin_interfaces/Time') == 1
    with pytest.raises(SchemaError, match='no definition of nowhere/Thing'):
        DefinitionFinder().definition('nowhere/msg/Thing')


def test_recording_round_trip_rate_limit_and_report(tmp_path):
    from maxim_interfaces.msg import PainSignal, Thought, ToolResult
    from sensor_msgs.msg import Image

    path = tmp_path / 'session.mcap'
    rec = McapRecorder(str(path))
    rec.add_topic('thoughts', 'maxim_interfaces/msg/Thought')
    rec.add_topic('tool_results', 'maxim_interfaces/msg/ToolResult')
    rec.add_topic('pain', 'maxim_interfaces/msg/PainSignal')
    rec.add_topic('camera/image_raw', 'sensor_msgs/msg/Image', max_rate_hz=2.0)
    for i in range(6):
        thought = Thought(deliberation_id=f'd{i // 3}', cycle=i % 3 + 1, text=f'thought {i}',
                          salience=0.1 * i, enriched_by=['hippocampus'])
        rec.write('thoughts', serialize(thought), 1_000_000_000 * i)
    rec.write('tool_results', serialize(ToolResult(success=True)), 7_000_000_000)
    rec.write('tool_results', serialize(ToolResult(blocked=True)), 8_000_000_000)
    rec.write('pain', serialize(PainSignal(intensity=0.4)), 9_000_000_000)
    image = Image(height=2, width=2, encoding='rgb8', step=6, data=bytes(range(12)))
    written = [rec.write('camera/image_raw', serialize(image), t)
               for t in (0, 100_000_000, 600_000_000)]
    assert written == [True, False, True]
    rec.close()
    with pytest.raises(RecordingError, match='never overwritten'):
        McapRecorder(str(path))

    messages = read_messages(str(path))
    topics = [t for t, _, _ in messages]
    assert topics.count('thoughts') == 6 and topics.count('camera/image_raw') == 2
    thought = next(m for t, _, m in messages if t == 'thoughts')
    assert thought.text == 'thought 0' and list(thought.enriched_by) == ['hippocampus']
    img = next(m for t, _, m in messages if t == 'camera/image_raw')
    assert bytes(img.data) == bytes(range(12))

    figures = write_report(str(path), str(tmp_path / 'report'))
    assert figures['thoughts'] == 6 and figures['deliberations'] == 2
    assert figures['cycles_per_deliberation'] == {'3': 2}
    assert figures['tool_outcomes'] == {'success': 1, 'blocked': 1}
    assert figures['pain_events'] == 1
    for name in ('timeline.png', 'learning.png', 'memory.png', 'deliberation.png',
                 'tools.png'):
        assert os.path.getsize(tmp_path / 'report' / name) > 1000
    assert os.path.isfile(figures['html'])
    with open(tmp_path / 'report' / 'report.json') as f:
        assert json.load(f)['max_pain'] == pytest.approx(0.4)
    assert report_main([str(tmp_path / 'missing.mcap')]) == 2


@pytest.mark.ros
def test_recorder_node_records_what_crosses_dds(tmp_path):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from maxim_core.nodes.recorder_node import RecorderNode
    from maxim_interfaces.msg import Thought

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    path = tmp_path / 'rec.mcap'
    try:
        recorder = RecorderNode(context=ctx, parameter_overrides=[
            Parameter('path', value=str(path)),
            Parameter('topics', value=['thoughts:maxim_interfaces/msg/Thought']),
            Parameter('run_info', value=json.dumps({'graph': 'sim', 'duration_s': 60.0}))])
        source = rclpy.create_node('source', context=ctx)
        pub = source.create_publisher(Thought, 'thoughts', 10)
        executor = SingleThreadedExecutor(context=ctx)
        executor.add_node(recorder)
        executor.add_node(source)
        for i in range(100):
            if recorder.recorder.topics['thoughts'].written >= 3:
                break
            pub.publish(Thought(text=f'seen {i}', cycle=1))
            executor.spin_once(timeout_sec=0.05)
        recorder.destroy_node()
        source.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
    texts = [m.text for _, _, m in read_messages(str(path))]
    assert len(texts) >= 3 and all(t.startswith('seen ') for t in texts)
    assert read_metadata(str(path)) == {'maxim_run': {'graph': '"sim"', 'duration_s': '60.0'}}


def session_messages() -> dict:
    """One message for every topic a session recording holds by default."""
    from maxim_interfaces.msg import (AttentionState, Episode, HeadState, IdleEvent,
                                      IdleProvenance, MemoryUpdate, PainSignal, Percept,
                                      Thought, ToolCall, ToolResult)
    from sensor_msgs.msg import Image, JointState
    return {
        'thoughts': Thought(cycle=1, text='a red ball'),
        'percepts': Percept(percept_id='p1', narrative='A red ball rolls in.'),
        'attention/state': AttentionState(mode=AttentionState.MODE_TRACK, has_focus=True,
                                          focus_track_id=4),
        'tool_calls': ToolCall(call_id='c1', tool_name='move'),
        'tool_results': ToolResult(call_id='c1', success=True),
        'pain': PainSignal(intensity=0.7),
        'episodes': Episode(),
        'idle': IdleEvent(),
        'idle/provenance': IdleProvenance(model='gemma-3-270m'),
        'memory/updates': MemoryUpdate(episode_id='e1', episodes=1),
        'head/state': HeadState(),
        'joint_states': JointState(name=['pan', 'tilt'], position=[0.1, -0.2]),
        'camera/image_raw': Image(height=2, width=2, encoding='rgb8', step=6,
                                  data=bytes(range(12))),
    }


@pytest.mark.ros
def test_recorder_node_records_every_session_topic(tmp_path):
    """Thoughts, percepts, attention, tool calls, pain, joint states and images (and the rest
    of the default topics) cross DDS, land in the file and reopen with the mcap reader."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from maxim_common import qos
    from maxim_core.nodes.recorder_node import RecorderNode
    from maxim_core.recording.config import DEFAULT_TOPICS, SENSOR_TOPICS

    messages = session_messages()
    assert set(messages) == {e.partition(':')[0] for e in DEFAULT_TOPICS}
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    path = tmp_path / 'session.mcap'
    try:
        recorder = RecorderNode(context=ctx, parameter_overrides=[
            Parameter('path', value=str(path)), Parameter('image_rate_hz', value=0.0)])
        source = rclpy.create_node('session_source', context=ctx)
        pubs = {topic: source.create_publisher(
            type(msg), topic, qos.SENSOR if topic in SENSOR_TOPICS else qos.EVENTS)
            for topic, msg in messages.items()}
        executor = SingleThreadedExecutor(context=ctx)
        executor.add_node(recorder)
        executor.add_node(source)
        stats = recorder.recorder.topics
        for _ in range(100):
            if all(s.written for s in stats.values()):
                break
            for topic, pub in pubs.items():
                pub.publish(messages[topic])
            for _ in range(len(pubs)):
                executor.spin_once(timeout_sec=0.01)
        recorder.destroy_node()
        source.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
    recorded = {}
    for topic, _, msg in read_messages(str(path)):
        recorded.setdefault(topic, msg)
    assert set(recorded) == set(messages)
    for named in ('thoughts', 'percepts', 'attention/state', 'tool_calls', 'pain',
                  'joint_states', 'camera/image_raw'):
        assert named in recorded
    assert recorded['thoughts'].text == 'a red ball'
    assert recorded['percepts'].narrative == 'A red ball rolls in.'
    assert recorded['attention/state'].focus_track_id == 4
    assert recorded['tool_calls'].tool_name == 'move'
    assert recorded['pain'].intensity == pytest.approx(0.7)
    assert list(recorded['joint_states'].name) == ['pan', 'tilt']
    assert bytes(recorded['camera/image_raw'].data) == bytes(range(12))


def test_recorder_config_rejects_a_recorder_with_nothing_to_do():
    from maxim_core.recording.config import RecorderConfig
    with pytest.raises(ValueError, match='nothing to do'):
        RecorderConfig(write_file=False, foxglove=False)
    with pytest.raises(ValueError, match='topic:pkg/msg/Type'):
        RecorderConfig(topics=('thoughts',))
    with pytest.raises(ValueError, match='0..65535'):
        RecorderConfig(foxglove=True, foxglove_port=-1)
    with pytest.raises(ValueError, match='run_info must be a JSON object'):
        RecorderConfig(run_info='[1, 2]')
    with pytest.raises(ValueError, match='run_info must be a JSON object'):
        RecorderConfig(run_info='{not json')


@pytest.mark.ros
def test_recorder_loses_no_message_at_a_sessions_rates(tmp_path):
    """The mind's executor spins the recorder beside a source publishing at a sim session's
    rates (joint states 50 Hz, attention 15 Hz, percepts 5 Hz, thoughts in bursts): every
    reliable message published is in the file, in order, stamped by when DDS received it,
    and no history overflowed."""
    import threading

    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from maxim_common import qos
    from maxim_core.nodes.recorder_node import RecorderNode
    from maxim_interfaces.msg import AttentionState, Percept, Thought

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    path = tmp_path / 'load.mcap'
    sent = {'thoughts': 0, 'percepts': 0, 'attention/state': 0, 'joint_states': 0}
    try:
        recorder = RecorderNode(context=ctx, parameter_overrides=[
            Parameter('path', value=str(path))])
        source = rclpy.create_node('load_source', context=ctx)
        pubs = {'thoughts': source.create_publisher(Thought, 'thoughts', qos.EVENTS),
                'percepts': source.create_publisher(Percept, 'percepts', qos.EVENTS),
                'attention/state': source.create_publisher(AttentionState, 'attention/state',
                                                           qos.EVENTS),
                'joint_states': source.create_publisher(JointState, 'joint_states',
                                                        qos.SENSOR)}
        make = {'thoughts': lambda i: Thought(cycle=1, text=f'thought {i}'),
                'percepts': lambda i: Percept(percept_id=f'p{i}', narrative='a ball'),
                'attention/state': lambda i: AttentionState(focus_track_id=i),
                'joint_states': lambda i: JointState(name=['pan'], position=[i / 1000])}

        sending = threading.Event()
        sending.set()

        def tick(topic, burst=1):
            def send():
                for _ in range(burst if sending.is_set() else 0):
                    pubs[topic].publish(make[topic](sent[topic]))
                    sent[topic] += 1
            return send
        executor = MultiThreadedExecutor(num_threads=4, context=ctx)
        executor.add_node(recorder)
        executor.add_node(source)
        # The tap's readers match the publishers before anything is sent.
        assert until(lambda: all(p.get_subscription_count() for p in pubs.values()), 10.0)
        for period, topic, burst in ((1 / 50, 'joint_states', 1), (1 / 15, 'attention/state', 1),
                                     (1 / 5, 'percepts', 1), (0.5, 'thoughts', 20)):
            source.create_timer(period, tick(topic, burst))
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        assert until(lambda: sent['thoughts'] >= 120, 30.0)     # ~3 s of a session's traffic
        sending.clear()
        # The last messages arrive and a drain takes them.
        events = ('thoughts', 'percepts', 'attention/state')
        until(lambda: all(recorder.summary().get(t, {}).get('written', 0) >= sent[t]
                          for t in events), 10.0)
        executor.shutdown(timeout_sec=5.0)
        spinner.join(timeout=5.0)
        summary = recorder.summary()
        recorder.destroy_node()
        source.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
    recorded = {}
    for topic, stamp, msg in read_messages(str(path)):
        recorded.setdefault(topic, []).append((stamp, msg))
    assert sent['thoughts'] >= 100 and sent['attention/state'] >= 30
    for topic in ('thoughts', 'percepts', 'attention/state'):
        assert summary[topic]['written'] == sent[topic] == len(recorded[topic]), topic
        assert 'overflows' not in summary[topic]
    assert [m.text for _, m in recorded['thoughts']] == [
        f'thought {i}' for i in range(sent['thoughts'])]
    # Stamped when received, not when drained: 50 Hz joint states are ~20 ms apart, never
    # bunched on one drain time.
    stamps = [s for s, _ in recorded['joint_states']]
    assert len(set(stamps)) >= 0.9 * len(stamps) >= 0.9 * 0.8 * sent['joint_states']


def until(condition, timeout_s: float, step_s: float = 0.05) -> bool:
    """Poll `condition` until it holds or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        threading.Event().wait(step_s)
    return bool(condition())


@pytest.mark.ros
def test_a_full_history_is_counted_not_silent(tmp_path):
    """More messages between two drains than a reader keeps: the recorder says so (summary
    `overflows`, a warning) and writes the newest it still has."""
    import rclpy
    from rclpy.parameter import Parameter
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    from rclpy.duration import Duration

    from maxim_core.nodes.recorder_node import RecorderNode
    from maxim_core.recording.config import EVENT_DEPTH
    from maxim_interfaces.msg import Thought

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    path = tmp_path / 'burst.mcap'
    try:
        recorder = RecorderNode(context=ctx, parameter_overrides=[
            Parameter('path', value=str(path)),
            Parameter('topics', value=['thoughts:maxim_interfaces/msg/Thought'])])
        source = rclpy.create_node('burst_source', context=ctx)
        pub = source.create_publisher(Thought, 'thoughts', QoSProfile(
            depth=2 * EVENT_DEPTH, history=HistoryPolicy.KEEP_LAST,
            reliability=ReliabilityPolicy.RELIABLE))
        recorder._stop_draining.set()   # its drain thread stops: the test drains by hand
        recorder._drainer.join(timeout=5.0)
        assert until(lambda: pub.get_subscription_count() > 0, 5.0)
        pub.publish(Thought(text='early'))
        for i in range(EVENT_DEPTH + 200):
            pub.publish(Thought(text=f'burst {i}'))
        # Everything sent has reached the reader's history (which keeps only the newest).
        assert until(lambda: pub.wait_for_all_acked(Duration(seconds=0.1)), 10.0)
        taken = recorder.drain()
        summary = recorder.summary()
        recorder.destroy_node()
        source.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
    assert EVENT_DEPTH <= taken <= EVENT_DEPTH + 1
    assert summary['thoughts']['overflows'] == 1
    texts = [m.text for _, _, m in read_messages(str(path))]
    assert texts[-1] == f'burst {EVENT_DEPTH + 199}' and 'early' not in texts


def test_the_recorders_topics_their_readers_and_a_drains_order():
    """recording/config.py without a node: the default taps and the stamps of a batch on the
    node's clock, by each message's age."""
    from maxim_core.recording.config import (EVENT_DEPTH, in_received_order, output_path,
                                             PARAMS, read_config, run_metadata, SENSOR_DEPTH,
                                             taps)

    cfg = read_config({name: spec[0] for name, spec in PARAMS.items()})
    by_topic = {t.topic: t for t in taps(cfg)}
    assert by_topic['camera/image_raw'].rate_hz == 2.0 and by_topic['camera/image_raw'].sensor
    assert by_topic['joint_states'].depth == SENSOR_DEPTH
    assert by_topic['thoughts'].depth == EVENT_DEPTH and not by_topic['thoughts'].sensor
    assert by_topic['thoughts'].rate_hz == 0.0
    assert output_path('/tmp/x.mcap') == '/tmp/x.mcap'
    assert output_path('').endswith('.mcap') and '.maxim' in output_path('')
    assert run_metadata('{"graph": "sim", "n": 2}') == {'graph': '"sim"', 'n': '2'}
    batch = [(3_000, 'b', b'2', 'w'), (1_000, 'a', b'1', 'w'), (0, 'c', b'3', 'w')]
    assert in_received_order(batch, wall_ns=10_000, now_ns=50_000) == [
        ('c', b'3', 'w', 50_000), ('a', b'1', 'w', 41_000), ('b', b'2', 'w', 43_000)]
