"""Hearing: how well and how fast the robot hears what a person says to it.

    ./maxim bench speech [--quick] [--live N] [--no-live]

Utterances are made by espeak-ng from the sentences below (things a person says to a robot
head: requests, questions, introductions, corrections), at 2 speeds and in 2 voices, with
room noise added at about 20 dB below the speech. The room holds the names of SCENE: the
things in view and the people met, which the hearing node gives the transcriber.

1. Word error rate of the packaged model (tiny.en), with and without context biasing, on
   every utterance. The error rate is computed here, by word-level edit distance against
   the sentence that was spoken, not by the code under test.
2. Live, with the sim running (`maxim sim --hear FILE`: every node, the embedded model):
   N utterances played in as a person, 14 s apart. For each, the seconds from the end of
   speech to the text (the hearing node's own measure, on the same monotonic clock) and
   to the first answer: the first thought, act or reply after the text arrived. The
   baseline in the same run is the transcription time of the same utterances with the
   machine otherwise idle (part 1), so the figure says what the sim's load costs.
3. CPU share while listening to a quiet room: the VAD on a real-time room of noise, as a
   share of one core, against the room alone (the cost of making the audio) in the same run.

Results: bench/results/speech-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / 'test'))

from helpers.room import mix, Room, room_noise, say_wav  # noqa: E402
from maxim_perception.hearing.audio import (QueueSource, read_audio_file,  # noqa: E402
                                            SAMPLE_RATE, write_wav)

# The names the robot knows in the bench's room: things in view and people it has met.
SCENE = ['Maxim', 'Ada', 'Bruno', 'Chen', 'Dagny', 'red ball', 'blue cube', 'green frog',
         'yellow duck', 'teapot', 'orange cone', 'purple box']

SENTENCES = [
    'Please look at the red ball.', 'Can you turn towards the green frog?',
    'My name is Ada.', 'Do you remember my name?', 'What do you see on the table?',
    'Look at the blue cube, please.', 'Where is the yellow duck?', 'Maxim, look over here.',
    'Stop moving your head.', 'Follow the red ball with your eyes.',
    'What colour is the cube?', 'This is my friend Bruno.', 'Say hello to Chen.',
    'Is the teapot still there?', 'Turn left a little.', 'Now look to the right.',
    'Can you see the orange cone?', 'How many things are in front of you?',
    'Please do not move right now.', 'Remember that the purple box is mine.',
    'What did I ask you a minute ago?', 'Look up at the ceiling.',
    'Who is standing next to me?', 'Dagny will be here tomorrow.', 'Keep watching the frog.',
    'Tell me what you are thinking.', 'Why did you look away?', 'Good job, that was right.',
    'No, not that one, the other one.', 'Put your attention on the duck.',
    'Are you tired?', 'Maxim, are you listening?', 'What is the biggest thing you can see?',
    'Please tell Ada that I am leaving.', 'Did anyone come in while I was away?',
    'Look at me when I talk to you.', 'Which object is closest to you?',
    'Forget about the teapot.', 'Can you describe the green frog?',
    'Please stay still for a moment.', 'Thank you, that is all for now.',
    'Is Bruno still in the room?', 'Look down at the floor.', 'Where did the red ball go?',
    'Do you like the yellow duck?', 'Turn your head slowly to the left.',
    'What are you doing right now?', 'Please find the purple box.',
    'Chen is my sister.', 'Could you say that again?', 'Watch the orange cone for me.',
    'Goodbye Maxim, see you later.',
]
VOICES = ['en-us', 'en-gb']
SPEEDS = [150, 190]
NOISE_BELOW_DB = 20.0


def words(text: str) -> list[str]:
    text = text.lower().replace('colour', 'color').replace('-', ' ')
    return re.findall(r"[a-z0-9']+", text)


def edit_distance(a: list[str], b: list[str]) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def wer(pairs: list[tuple[str, str]]) -> float:
    """Word error rate over (spoken, heard) pairs: edits / words spoken."""
    errors = sum(edit_distance(words(s), words(h)) for s, h in pairs)
    total = sum(len(words(s)) for s, _ in pairs)
    return errors / total if total else 0.0


def utterances(folder: Path, sentences: list[str], variants) -> list[dict]:
    """Each sentence in each (voice, speed), with room noise 20 dB below its level."""
    out = []
    for k, text in enumerate(sentences):
        for voice, speed in variants:
            path = say_wav(text, folder / f's{k}-{voice}-{speed}.wav', voice, speed)
            audio = read_audio_file(path)
            level = 20 * np.log10(float(np.sqrt(np.mean(audio ** 2))) + 1e-9)
            noisy = mix(room_noise(audio.size / SAMPLE_RATE + 1.0,
                                   level - NOISE_BELOW_DB, seed=k), audio, 0.5)
            out.append({'text': text, 'voice': voice, 'speed': speed, 'audio': noisy})
    return out


def part_wer(items: list[dict]) -> dict:
    from maxim_perception.hearing.transcriber import Transcriber
    t = Transcriber()
    rows = []
    for it in items:
        plain = t.transcribe(it['audio'], [])
        biased = t.transcribe(it['audio'], SCENE)
        rows.append({'text': it['text'], 'voice': it['voice'], 'speed': it['speed'],
                     'plain': plain.text, 'biased': biased.text,
                     'plain_s': round(plain.seconds, 3), 'biased_s': round(biased.seconds, 3),
                     'confidence': round(biased.confidence, 3)})
    by = {}
    for key in ('voice', 'speed'):
        for value in sorted({r[key] for r in rows}):
            sub = [r for r in rows if r[key] == value]
            by[f'{key}={value}'] = {
                'plain': round(wer([(r['text'], r['plain']) for r in sub]), 4),
                'biased': round(wer([(r['text'], r['biased']) for r in sub]), 4)}
    return {'utterances': len(rows),
            'wer_plain': round(wer([(r['text'], r['plain']) for r in rows]), 4),
            'wer_biased': round(wer([(r['text'], r['biased']) for r in rows]), 4),
            'by_variant': by,
            'transcribe_p50_s': round(statistics.median(r['biased_s'] for r in rows), 3),
            'confidence_p10': round(float(np.percentile([r['confidence'] for r in rows], 10)),
                                    3),
            'rows': rows}


def part_noise_only(seconds: float = 3.0, clips: int = 8) -> dict:
    """What the transcriber makes of room noise alone (Whisper writes text for silence):
    how many of those clips the confidence floor keeps out."""
    from maxim_perception.hearing.listening import ListenerConfig
    from maxim_perception.hearing.transcriber import Transcriber
    t = Transcriber()
    floor = ListenerConfig().min_confidence
    rows = []
    for k in range(clips):
        r = t.transcribe(room_noise(seconds, -35.0 + 2 * k, seed=100 + k), SCENE)
        rows.append({'text': r.text, 'confidence': round(r.confidence, 3),
                     'kept_out': not r.text or r.confidence < floor})
    return {'clips': clips, 'kept_out': sum(r['kept_out'] for r in rows), 'rows': rows}


def part_cpu(seconds: float) -> dict:
    """Share of one core: a real-time room of noise alone, then the same room listened to."""
    from maxim_perception.hearing.listening import Addressing, Listener, Vocabulary
    from maxim_perception.hearing.vad import Segmenter

    def run(listen: bool) -> float:
        mic = QueueSource('room')
        room = Room(mic.push, noise_db=-50.0)
        listener = None
        if listen:
            listener = Listener(Segmenter(), transcriber=None, addressing=Addressing(),
                                vocabulary=Vocabulary())
            listener.start(lambda: mic, retry=False)
        cpu0, t0 = time.process_time(), time.monotonic()
        room.start()
        time.sleep(seconds)
        cpu = time.process_time() - cpu0
        wall = time.monotonic() - t0
        room.close()
        if listener is not None:
            assert listener.stats.utterances == 0 and not listener.segmenter.in_speech
            listener.stop()
        return cpu / wall
    alone = run(False)
    listening = run(True)
    return {'seconds': seconds, 'room_alone_core_share': round(alone, 4),
            'listening_core_share': round(listening, 4),
            'listening_cost_core_share': round(max(0.0, listening - alone), 4)}


def part_live(items: list[dict], gap: float, seed: int) -> dict:
    """`maxim sim --hear` on one recording of the utterances `gap` seconds apart."""
    rng = random.Random(seed)
    lead = 35.0          # the sim's start-up: the model loads, the first scene is seen
    audio = np.zeros(int(lead * SAMPLE_RATE), np.float32)
    spoken = []
    for it in items:
        at = audio.size / SAMPLE_RATE
        audio = np.concatenate([audio, it['audio'], np.zeros(int(gap * SAMPLE_RATE),
                                                             np.float32)])
        spoken.append({'text': it['text'], 'at_s': round(at, 2)})
    folder = Path(tempfile.mkdtemp(prefix='maxim-speech-'))
    wav = folder / 'live.wav'
    write_wav(str(wav), audio)
    environ = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
                   ROS_DOMAIN_ID=str(rng.randint(100, 200)), HOME=str(folder / 'home'))
    environ.setdefault('MUJOCO_GL', 'egl')
    os.makedirs(environ['HOME'], exist_ok=True)
    duration = audio.size / SAMPLE_RATE + 15
    cmd = [sys.executable, '-P', '-m', 'maxim_bringup.cli', 'sim', '--duration',
           str(int(duration)), '--no-console', '--hear', str(wav)]
    print(f'running: maxim sim --duration {int(duration)} --hear {wav.name} '
          f'({len(items)} utterances, {gap:g} s apart)', flush=True)
    proc = subprocess.Popen(cmd, env=environ, stdout=subprocess.DEVNULL)
    os.environ.update({k: environ[k] for k in ('ROS_DOMAIN_ID',
                                               'ROS_AUTOMATIC_DISCOVERY_RANGE')})
    import rclpy
    from maxim_interfaces.msg import Thought, ToolResult, Utterance
    rclpy.init()
    node = rclpy.create_node('bench_speech')
    heard: list[tuple[float, Utterance]] = []
    answers: list[tuple[float, str]] = []
    node.create_subscription(Utterance, 'hearing/utterance',
                             lambda m: heard.append((time.monotonic(), m)), 50)
    node.create_subscription(
        Thought, 'thoughts', lambda m: m.kind in (Thought.KIND_FORMING,
                                                  Thought.KIND_DELIBERATION)
        and answers.append((time.monotonic(), f'thought: {m.text[:80]}')), 100)
    node.create_subscription(ToolResult, 'tool_results', lambda m: answers.append(
        (time.monotonic(), f'{m.call.tool_name} {m.call.arguments_json[:80]}')), 100)
    try:
        end = time.monotonic() + duration + 60
        while proc.poll() is None and time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.1)
    finally:
        node.destroy_node()
        rclpy.shutdown()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
    rows = []
    for i, (got_at, u) in enumerate(heard):
        speech_end = got_at - u.latency_s
        nxt = heard[i + 1][0] if i + 1 < len(heard) else float('inf')
        first = next(((t, what) for t, what in answers if got_at <= t < nxt), None)
        rows.append({'text': u.text, 'accepted': u.accepted, 'reason': u.reason,
                     'confidence': round(u.confidence, 3),
                     'to_text_s': round(u.latency_s, 3),
                     'transcribe_s': round(u.transcribe_s, 3),
                     'to_answer_s': round(first[0] - speech_end, 3) if first else None,
                     'answer': first[1] if first else None})
    accepted = [r for r in rows if r['accepted']]
    to_text = [r['to_text_s'] for r in accepted]
    to_answer = [r['to_answer_s'] for r in accepted if r['to_answer_s'] is not None]
    return {'spoken': len(items), 'heard': len(rows), 'accepted': len(accepted),
            'sim_exit': proc.returncode,
            'to_text_p50_s': round(statistics.median(to_text), 3) if to_text else None,
            'to_answer_p50_s': round(statistics.median(to_answer), 3) if to_answer else None,
            'answered': len(to_answer),
            'transcribe_p50_s': round(statistics.median(r['transcribe_s'] for r in accepted),
                                      3) if accepted else None,
            'spoken_lines': spoken, 'rows': rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--quick', action='store_true',
                    help='6 sentences in one voice and speed, no live part, 3 s of CPU')
    ap.add_argument('--live', type=int, default=16, help='utterances in the live part')
    ap.add_argument('--no-live', action='store_true', help='skip the live part')
    ap.add_argument('--gap', type=float, default=14.0, help='seconds between live utterances')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--out', default='', help='results file (default bench/results/...)')
    a = ap.parse_args(argv)
    sentences = SENTENCES[:6] if a.quick else SENTENCES
    variants = [(VOICES[0], SPEEDS[0])] if a.quick else [(v, s) for v in VOICES
                                                         for s in SPEEDS]
    folder = Path(tempfile.mkdtemp(prefix='maxim-speech-'))
    items = utterances(folder, sentences, variants)
    print(f'{len(items)} utterances ({len(sentences)} sentences x {len(variants)} '
          'voice/speed) with room noise', flush=True)
    out: dict = {'benchmark': 'speech', 'quick': a.quick, 'scene': SCENE,
                 'noise_below_speech_db': NOISE_BELOW_DB}
    out['wer'] = w = part_wer(items)
    print(f"word error rate: {w['wer_biased']:.3f} with context biasing, {w['wer_plain']:.3f} "
          f"without (ratio {w['wer_biased'] / max(w['wer_plain'], 1e-9):.2f}); transcription "
          f"p50 {w['transcribe_p50_s']} s alone", flush=True)
    out['noise_only'] = n = part_noise_only(clips=3 if a.quick else 8)
    print(f"room noise alone: {n['kept_out']}/{n['clips']} clips kept out by the confidence "
          'floor', flush=True)
    out['cpu'] = c = part_cpu(3.0 if a.quick else 20.0)
    print(f"listening to a quiet room: {100 * c['listening_cost_core_share']:.1f}% of a core "
          f"(room {100 * c['room_alone_core_share']:.1f}%, both "
          f"{100 * c['listening_core_share']:.1f}%)", flush=True)
    if not a.quick and not a.no_live:
        rng = random.Random(a.seed)
        live = rng.sample(items, min(a.live, len(items)))
        out['live'] = lv = part_live(live, a.gap, a.seed)
        base = w['transcribe_p50_s']
        print(f"live (sim running): {lv['accepted']}/{lv['spoken']} heard as meant for the "
              f"robot; end of speech -> text p50 {lv['to_text_p50_s']} s, -> first answer "
              f"p50 {lv['to_answer_p50_s']} s ({lv['answered']} answered); transcription "
              f"p50 {lv['transcribe_p50_s']} s under the sim, {base} s alone (ratio "
              f"{(lv['transcribe_p50_s'] or 0) / max(base, 1e-9):.2f})", flush=True)
    try:
        commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, text=True,
                                capture_output=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = 'unknown'
    out.update({'commit': commit, 'time': time.strftime('%Y-%m-%dT%H:%M:%S')})
    if a.out:
        path = Path(a.out)
    else:
        path = ROOT / 'bench' / 'results' / f'speech-{time.strftime("%Y%m%d-%H%M%S")}.json'
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + '\n')
    print(f'results -> {path}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
