"""A room for the ears: espeak-ng speech as a person would say it, room noise, and a line
from the robot's voice back into a stand-in microphone (a QueueSource), in real time.

Real audio all the way: the speech is espeak-ng's WAV, the noise is added to the samples,
and the microphone is the same QueueSource the hearing node fills from an audio topic.
"""

import subprocess
import threading
import time

import numpy as np

from maxim_perception.hearing.audio import read_audio_file, resample, SAMPLE_RATE


def say_wav(text: str, path, voice: str = 'en-us', speed: int = 160) -> str:
    """espeak-ng says `text` into a WAV file at `path`."""
    subprocess.run(['espeak-ng', '-v', voice, '-s', str(speed), '-w', str(path), '--stdin'],
                   input=text.encode(), check=True, timeout=30, capture_output=True)
    return str(path)


def speech(text: str, tmp_path, voice: str = 'en-us', speed: int = 160) -> np.ndarray:
    """`text` as 16 kHz samples."""
    path = tmp_path / f'say-{abs(hash((text, voice, speed)))}.wav'
    return read_audio_file(say_wav(text, path, voice, speed))


def room_noise(seconds: float, level_db: float = -45.0, seed: int = 0) -> np.ndarray:
    """Brown-ish room noise (a fan, traffic): white noise through a one-pole low-pass, at
    `level_db` RMS."""
    rng = np.random.default_rng(seed)
    white = rng.standard_normal(int(seconds * SAMPLE_RATE)).astype(np.float32)
    out = np.empty_like(white)
    acc = 0.0
    for i in range(0, white.size, 4096):         # block-wise one-pole filter, vectorised
        block = white[i:i + 4096]
        filtered = np.empty_like(block)
        a = 0.97
        for j, x in enumerate(block):
            acc = a * acc + (1 - a) * x
            filtered[j] = acc
        out[i:i + 4096] = filtered
    rms = float(np.sqrt(np.mean(out ** 2))) or 1.0
    return out * (10 ** (level_db / 20) / rms)


def mix(base: np.ndarray, other: np.ndarray, at_s: float, gain: float = 1.0) -> np.ndarray:
    """`other` added into `base` from `at_s` on (base is extended as needed)."""
    start = int(at_s * SAMPLE_RATE)
    out = base.copy()
    if out.size < start + other.size:
        out = np.concatenate([out, np.zeros(start + other.size - out.size, np.float32)])
    out[start:start + other.size] += other * gain
    return out


class Room:
    """What a microphone in the room hears, in real time: the sum of every sound playing
    (noise, a person, the robot's own voice), pushed every `chunk_s` into `push` (a stand-in
    microphone: QueueSource.push)."""

    def __init__(self, push, noise_db: float | None = -45.0, chunk_s: float = 0.032,
                 seed: int = 0):
        self.push = push
        self.chunk = int(chunk_s * SAMPLE_RATE)
        self._noise = room_noise(30.0, noise_db, seed) if noise_db is not None else None
        self._sounds: list[list] = []          # [samples, position]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t = 0

    def play(self, samples: np.ndarray, gain: float = 1.0) -> list:
        sound = [np.asarray(samples, np.float32) * gain, 0]
        with self._lock:
            self._sounds.append(sound)
        return sound

    def cancel(self, sound: list) -> None:
        with self._lock:
            if sound in self._sounds:
                self._sounds.remove(sound)

    def playing(self) -> bool:
        with self._lock:
            return bool(self._sounds)

    def _run(self) -> None:
        start = time.monotonic()
        n = self.chunk
        while not self._stop.is_set():
            delay = start + (self._t + n) / SAMPLE_RATE - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            out = np.zeros(n, np.float32)
            if self._noise is not None:
                i = self._t % (self._noise.size - n)
                out += self._noise[i:i + n]
            with self._lock:
                for sound in list(self._sounds):
                    samples, pos = sound
                    part = samples[pos:pos + n]
                    out[:part.size] += part
                    sound[1] = pos + n
                    if sound[1] >= samples.size:
                        self._sounds.remove(sound)
            self._t += n
            self.push(out, SAMPLE_RATE)

    def start(self) -> 'Room':
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2.0)


class RoomSpeaker:
    """The robot's speaker in the room: a Voice player whose sound the room's microphone
    hears at `gain`."""

    def __init__(self, room: Room, gain: float = 0.5):
        self.room = room
        self.gain = gain
        self._sound = None
        self.played = 0

    def play(self, samples: np.ndarray, rate: int) -> None:
        self.played += 1
        self._sound = self.room.play(resample(samples, rate), self.gain)

    def stop(self) -> None:
        if self._sound is not None:
            self.room.cancel(self._sound)
