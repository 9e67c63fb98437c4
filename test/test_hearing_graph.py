"""Spoken to, on the real model: an espeak-ng utterance played through the hearing node's
file source becomes the user Percept a typed line would be, and the mind (memory, fear, the
embedded GGUF model through llama-cpp-python, the agent) answers it. Nothing between the
audio and the Mind is a stand-in: `./maxim headless --hear FILE` composed by the runner."""

import json
import shutil
import threading
import time

import pytest

from helpers.room import mix, room_noise, speech

pytestmark = [pytest.mark.ros, pytest.mark.real_model, pytest.mark.slow,
              pytest.mark.skipif(shutil.which('espeak-ng') is None,
                                 reason='espeak-ng makes the test speech')]

WAIT_S = 240.0          # the model's first answer on a loaded 2-core machine


def test_a_spoken_request_is_heard_and_answered(tmp_path):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rich.console import Console

    from maxim_bringup.runner import Runner, RunConfig
    from maxim_interfaces.msg import Percept, Thought, ToolResult, Utterance
    from maxim_perception.hearing.audio import write_wav

    said = 'Hello Maxim, please say hello to me.'
    wav = tmp_path / 'hello.wav'
    write_wav(str(wav), mix(room_noise(6.0), speech(said, tmp_path), 1.5))
    got = {'utterance': [], 'percept': [], 'thought': [], 'result': []}
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    probe = rclpy.create_node('hearing_probe', context=ctx)
    probe.create_subscription(Utterance, 'hearing/utterance', got['utterance'].append, 10)
    probe.create_subscription(Percept, 'percepts', got['percept'].append, 50)
    probe.create_subscription(Thought, 'thoughts', got['thought'].append, 100)
    probe.create_subscription(ToolResult, 'tool_results', got['result'].append, 100)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(probe)
    out = Console(record=True, width=120, color_system=None)
    runner = Runner(RunConfig(graph='headless', console=False, hear=str(wav), overrides={
        'memory': {'db_path': str(tmp_path / 'memory.db'), 'embedding.backend': 'hashing'},
        'agent': {'idle.drives_enabled': False},
        'fear': {'sandbox.root': str(tmp_path)}}), console=out)
    spin = None
    try:
        runner.start()
        spin = threading.Thread(target=runner.spin, daemon=True)
        spin.start()

        def voice():
            return [p for p in got['percept'] if p.source_name == 'voice']

        def answered():
            heard = voice()
            return heard and any(t.deliberation_id and t.kind == Thought.KIND_DELIBERATION
                                 for t in got['thought'])
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and not answered():
            executor.spin_once(timeout_sec=0.1)
        heard = voice()
        assert heard, f'nothing heard: {[u.text for u in got["utterance"]]}'
        u = got['utterance'][0]
        assert u.accepted and u.percept_id == heard[0].percept_id
        text = u.text.lower()
        assert 'say hello' in text and 'maxim' in text, u.text
        assert u.reason == 'name'        # it was named
        assert heard[0].narrative == f'The user says: "{u.text}"'
        # The first answer: a deliberation on what was heard, and the act it chose.
        first = next(t for t in got['thought'] if t.kind == Thought.KIND_DELIBERATION)
        assert first.text.strip()
        action = json.loads(first.action_json) if first.action_json else {}
        end = time.monotonic() + 60.0
        while action and time.monotonic() < end and not got['result']:
            executor.spin_once(timeout_sec=0.1)
        assert action.get('tool') == 'respond', (first.text, first.action_json)
        assert action['args']['text'].strip()
        result = got['result'][0]
        assert result.call.tool_name == 'respond' and result.success
    finally:
        runner.stop()
        if spin is not None:
            spin.join(10.0)
        probe.destroy_node()
        rclpy.try_shutdown(context=ctx)
