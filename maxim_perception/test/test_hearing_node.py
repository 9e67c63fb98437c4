"""The hearing node over real DDS: espeak-ng speech as AudioChunk messages and as a file, the
names in view biasing what is heard, a Percept the way a typed line is one, and each bad
input as one line and a diagnostic while the node keeps running."""

import shutil
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter

from helpers.room import mix, room_noise, say_wav, speech
from maxim_interfaces.msg import (AudioChunk, Detection, Percept, ToolCall, ToolResult,
                                  Utterance)
from maxim_perception.hearing.audio import float_to_pcm16, input_devices
from maxim_perception.nodes.hearing_node import HearingNode

pytestmark = [pytest.mark.ros,
              pytest.mark.skipif(shutil.which('espeak-ng') is None,
                                 reason='espeak-ng makes the test speech')]


def spin_until(executor, condition, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        executor.spin_once(timeout_sec=0.05)
    return condition()


@pytest.fixture
def ros():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    nodes = []

    def start(**params):
        overrides = [Parameter(k.replace('__', '.'), value=v) for k, v in params.items()]
        node = HearingNode(context=ctx, parameter_overrides=overrides)
        probe = rclpy.create_node('probe', context=ctx)
        nodes.extend([node, probe])
        got = {'utterance': [], 'percept': [], 'diag': []}
        probe.create_subscription(Utterance, 'hearing/utterance', got['utterance'].append, 10)
        probe.create_subscription(Percept, 'percepts', got['percept'].append, 10)
        probe.create_subscription(DiagnosticArray, 'diagnostics',
                                  lambda m: got['diag'].extend(
                                      s for s in m.status if s.name.startswith('hearing')), 10)
        executor.add_node(node)
        executor.add_node(probe)
        return node, probe, got

    try:
        yield executor, start
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def voice_percepts(got):
    return [p for p in got['percept'] if p.source_name == 'voice']


def test_speech_on_the_audio_topic_is_heard_with_the_names_in_view(ros, tmp_path):
    executor, start = ros
    node, probe, got = start(source='topic', addressing='auto')
    # What the robot sees: a vision percept whose detections are named.
    seen = probe.create_publisher(Percept, 'percepts', 10)
    vision = Percept(source=Percept.SOURCE_VISION, source_name='camera', narrative='I see',
                     objects=[Detection(label='red ball'), Detection(label='blue cube')])
    assert spin_until(executor, lambda: seen.get_subscription_count() >= 2)
    seen.publish(vision)
    assert spin_until(executor, lambda: 'red ball' in node.listener.vocabulary.names(
        time.monotonic()))
    mic = probe.create_publisher(AudioChunk, 'audio/in', 10)
    assert spin_until(executor, lambda: mic.get_subscription_count() >= 1)
    # 48 kHz stereo from a driver: the node takes it to 16 kHz mono.
    audio = mix(room_noise(5.0), speech('Please look at the red ball.', tmp_path), 1.0)
    stereo = np.repeat(np.interp(np.arange(audio.size * 3) / 3, np.arange(audio.size),
                                 audio)[:, None], 2, axis=1)
    block = 48000 * 32 // 1000
    for i in range(0, stereo.shape[0], block):
        mic.publish(AudioChunk(sample_rate=48000, channels=2,
                               data=float_to_pcm16(stereo[i:i + block]).reshape(-1).tolist()))
        executor.spin_once(timeout_sec=0.0)
        time.sleep(0.02)
    assert spin_until(executor, lambda: got['utterance'] and voice_percepts(got))
    u = got['utterance'][0]
    assert 'red ball' in u.text.lower() and 'red ball' in u.prompt
    assert u.accepted and u.addressed and u.reason == 'quiet room' and u.percept_id
    assert 0.0 < u.confidence <= 1.0 and u.transcribe_s > 0.0
    p = voice_percepts(got)[0]
    assert p.source == Percept.SOURCE_USER and p.percept_id == u.percept_id
    assert p.narrative == f'The user says: "{u.text}"' and p.salience == 1.0


def test_a_file_is_played_in_as_a_person_and_the_status_says_what_was_heard(ros, tmp_path):
    executor, start = ros
    path = say_wav('Do you remember my name?', tmp_path / 'ask.wav')
    node, _, got = start(source='file', file=path, file_realtime=True)
    assert spin_until(executor, lambda: voice_percepts(got))
    assert 'remember my name' in voice_percepts(got)[0].narrative.lower()
    assert spin_until(executor, lambda: got['diag'] and dict(
        (kv.key, kv.value) for kv in got['diag'][-1].values)['utterances'] == '1')


@pytest.mark.parametrize('params, line', [
    (dict(source='file', file='/nonexistent/hello.wav'), 'does not exist'),
    (dict(source='topic', model_dir='/nonexistent/model'), 'speech model folder'),
])
def test_bad_input_is_one_line_and_an_error_diagnostic(ros, params, line):
    executor, start = ros
    node, _, got = start(**params)
    assert node._state_machine.current_state[1] == 'active'
    assert spin_until(executor, lambda: got['diag'] and got['diag'][-1].level ==
                      DiagnosticStatus.ERROR)
    assert line in got['diag'][-1].message


def test_a_corrupt_file_is_an_error_diagnostic(ros, tmp_path):
    executor, start = ros
    bad = tmp_path / 'bad.flac'
    bad.write_bytes(b'fLaC' + bytes(range(256)) * 4)
    node, _, got = start(source='file', file=str(bad))
    assert spin_until(executor, lambda: got['diag'] and got['diag'][-1].level ==
                      DiagnosticStatus.ERROR)
    assert 'not a readable WAV or FLAC' in got['diag'][-1].message


@pytest.mark.skipif(bool(input_devices()), reason='this machine has a microphone')
def test_no_microphone_is_reported_and_retried(ros):
    executor, start = ros
    node, _, got = start(source='microphone')
    assert spin_until(executor, lambda: got['diag'] and got['diag'][-1].level ==
                      DiagnosticStatus.ERROR)
    msg = got['diag'][-1].message
    assert 'no microphone' in msg or 'PortAudio' in msg
    errors = node.listener.stats.errors
    assert spin_until(executor, lambda: node.listener.stats.errors > errors, 10.0)


@pytest.mark.skipif(bool(input_devices()), reason='this machine has a speaker')
def test_a_reply_to_speech_is_spoken_and_no_speaker_is_a_warning(ros, tmp_path):
    executor, start = ros
    path = say_wav('Hello there, can you hear me?', tmp_path / 'hello.wav')
    node, probe, got = start(source='file', file=path, **{'voice.enabled': True})
    assert spin_until(executor, lambda: voice_percepts(got))
    results = probe.create_publisher(ToolResult, 'tool_results', 10)
    assert spin_until(executor, lambda: results.get_subscription_count() >= 1)
    results.publish(ToolResult(success=True, call=ToolCall(
        tool_name='respond', arguments_json='{"text": "Hello, I hear you."}')))
    assert spin_until(executor, lambda: got['diag'] and got['diag'][-1].level ==
                      DiagnosticStatus.WARN and 'cannot speak' in got['diag'][-1].message)
    assert node.voice.recent() == ['Hello, I hear you.']
    assert node.listener.addressing.robot_spoke_at > 0
