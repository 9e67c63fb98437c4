"""Session recording: real messages serialized as DDS carries them, written to MCAP, read
back with the mcap readers, and turned into a report."""

import json
import os

import pytest

from maxim_core.recording.report import main as report_main, write_report
from maxim_core.recording.schema import DefinitionFinder, SchemaError
from maxim_core.recording.writer import McapRecorder, read_messages, RecordingError


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
    for name in ('salience.png', 'cycles.png', 'tool_outcomes.png', 'pain.png'):
        assert os.path.getsize(tmp_path / 'report' / name) > 1000
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
            Parameter('topics', value=['thoughts:maxim_interfaces/msg/Thought'])])
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
