"""Audio in: mono float32 at 16 kHz, whatever the source.

Three sources share one small interface, `read(timeout_s) -> chunk | None` (None: nothing
within the timeout), `finished`, `close()` and `describe()`:
- `FileSource`: a WAV or FLAC file (tests, replays, `maxim sim --hear`), paced in real time
  or as fast as it is read, followed by a second of silence so the last utterance ends;
- `MicrophoneSource`: a PortAudio input device through `sounddevice`;
- `QueueSource`: chunks pushed by someone else (the node's audio topic).

Errors a user can cause (a missing or corrupt file, no microphone, a device that went away)
are `AudioError` with one line that says what to do.
"""

from dataclasses import dataclass
import os
import queue
import threading
import time

import numpy as np

SAMPLE_RATE = 16000


class AudioError(RuntimeError):
    """An audio source that cannot give audio, with a line for the user."""


def to_mono(data: np.ndarray) -> np.ndarray:
    """(n,) or (n, channels) -> (n,) float32: channels averaged."""
    data = np.asarray(data, dtype=np.float32)
    return data.mean(axis=1) if data.ndim == 2 else data


def resample(data: np.ndarray, rate: int, target: int = SAMPLE_RATE) -> np.ndarray:
    """Linear-interpolation resampling to `target` Hz (speech sits far below both Nyquist
    frequencies of the rates seen here: 22.05, 44.1 and 48 kHz to 16 kHz)."""
    data = np.asarray(data, dtype=np.float32)
    if rate == target or data.size == 0:
        return data
    if rate <= 0:
        raise AudioError(f'sample rate {rate} Hz is not a rate')
    n = int(round(data.size * target / rate))
    t = np.arange(n, dtype=np.float64) * (rate / target)
    return np.interp(t, np.arange(data.size), data).astype(np.float32)


def pcm16_to_float(data) -> np.ndarray:
    """Signed 16-bit samples -> float32 in [-1, 1)."""
    return np.asarray(data, dtype=np.int16).astype(np.float32) / 32768.0


def float_to_pcm16(data: np.ndarray) -> np.ndarray:
    return (np.clip(np.asarray(data, dtype=np.float32), -1.0, 1.0) * 32767.0).astype(np.int16)


def read_audio_file(path: str) -> np.ndarray:
    """A WAV or FLAC file as mono float32 at 16 kHz (AudioError: missing, unreadable)."""
    import soundfile
    if not os.path.isfile(str(path)):
        raise AudioError(f'audio file {path} does not exist')
    try:
        data, rate = soundfile.read(str(path), dtype='float32', always_2d=False)
    except (RuntimeError, soundfile.LibsndfileError, TypeError, ValueError) as exc:
        raise AudioError(f'audio file {path} is not a readable WAV or FLAC file: '
                         f'{str(exc).strip() or type(exc).__name__}') from exc
    if data.size == 0:
        raise AudioError(f'audio file {path} holds no samples')
    return resample(to_mono(data), int(rate))


def write_wav(path: str, data: np.ndarray, rate: int = SAMPLE_RATE) -> None:
    import soundfile
    soundfile.write(str(path), float_to_pcm16(data), rate, subtype='PCM_16')


def rms_dbfs(chunk: np.ndarray) -> float:
    """The level of a chunk in dB below full scale (-120 for silence)."""
    if chunk.size == 0:
        return -120.0
    rms = float(np.sqrt(np.mean(np.square(chunk, dtype=np.float64))))
    return max(-120.0, 20.0 * np.log10(rms)) if rms > 0 else -120.0


@dataclass
class Chunk:
    """Samples with the wall-clock time (time.monotonic) at which their last sample was
    captured: what "the end of speech" is measured from."""
    samples: np.ndarray
    captured_at: float


class FileSource:
    """A recording played in as if a microphone heard it."""

    def __init__(self, path: str, realtime: bool = True, chunk_s: float = 0.032,
                 tail_s: float = 1.0, lead_s: float = 0.0):
        audio = read_audio_file(path)
        lead = np.zeros(int(lead_s * SAMPLE_RATE), np.float32)
        tail = np.zeros(int(tail_s * SAMPLE_RATE), np.float32)
        self.path = str(path)
        self.audio = np.concatenate([lead, audio, tail])
        self.realtime = realtime
        self.chunk = max(1, int(chunk_s * SAMPLE_RATE))
        self._pos = 0
        self._start: float | None = None
        self.duration_s = self.audio.size / SAMPLE_RATE

    @property
    def finished(self) -> bool:
        return self._pos >= self.audio.size

    def read(self, timeout_s: float = 0.5) -> Chunk | None:
        if self.finished:
            return None
        now = time.monotonic()
        if self._start is None:
            self._start = now
        end = min(self.audio.size, self._pos + self.chunk)
        if self.realtime:
            due = self._start + end / SAMPLE_RATE
            if due - now > timeout_s:
                time.sleep(timeout_s)
                return None
            if due > now:
                time.sleep(due - now)
        samples = self.audio[self._pos:end]
        self._pos = end
        return Chunk(samples, time.monotonic())

    def close(self) -> None:
        self._pos = self.audio.size

    def describe(self) -> str:
        pace = 'in real time' if self.realtime else 'as fast as read'
        return f'file {self.path} ({self.duration_s:.1f} s, {pace})'


class QueueSource:
    """Chunks pushed from another thread (an audio topic). A full queue drops its oldest
    chunk and counts it, so a stalled reader never blocks the pusher."""

    def __init__(self, name: str, max_chunks: int = 512):
        self.name = name
        self._queue: queue.Queue = queue.Queue(maxsize=max_chunks)
        self.dropped = 0
        self.finished = False

    def push(self, samples: np.ndarray, rate: int) -> None:
        chunk = Chunk(resample(to_mono(samples), rate), time.monotonic())
        while True:
            try:
                self._queue.put_nowait(chunk)
                return
            except queue.Full:
                try:
                    self._queue.get_nowait()
                    self.dropped += 1
                except queue.Empty:
                    continue

    def read(self, timeout_s: float = 0.5) -> Chunk | None:
        try:
            return self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def close(self) -> None:
        self.finished = True

    def describe(self) -> str:
        return f'topic {self.name}'


def _portaudio():
    """The sounddevice module, or AudioError when PortAudio is not on the machine."""
    try:
        import sounddevice
    except OSError as exc:      # sounddevice raises OSError when libportaudio is absent
        raise AudioError('PortAudio is not installed (sudo apt-get install libportaudio2): '
                         'no microphone or speaker can be opened') from exc
    return sounddevice


def input_devices() -> list[str]:
    """Names of the input devices PortAudio sees ([] when none, or no PortAudio)."""
    try:
        sd = _portaudio()
        return [d['name'] for d in sd.query_devices() if d.get('max_input_channels', 0) > 0]
    except (AudioError, OSError, RuntimeError) as exc:
        del exc          # no PortAudio, or no ALSA card: no device
        return []


class MicrophoneSource:
    """A PortAudio input device (`device`: '' the default, an index or a name part).

    A device that goes away shows up as a read that times out while the stream says it is
    no longer active, or as PortAudio errors: `read` then raises AudioError, and the node
    opens it again with backoff."""

    def __init__(self, device: str = '', chunk_s: float = 0.032, max_chunks: int = 512):
        sd = _portaudio()
        self.device_arg = device
        dev = int(device) if str(device).strip().isdigit() else (device or None)
        self._queue: queue.Queue = queue.Queue(maxsize=max_chunks)
        self.dropped = 0
        self.finished = False
        self._status = ''
        self._lock = threading.Lock()
        try:
            info = sd.query_devices(dev, 'input')
            rate = int(info['default_samplerate'])
            self.name = str(info['name'])
            self.rate = rate
            self._stream = sd.InputStream(device=dev, channels=1, samplerate=rate,
                                          blocksize=max(1, int(chunk_s * rate)),
                                          dtype='float32', callback=self._on_audio)
            self._stream.start()
        except (sd.PortAudioError, ValueError) as exc:
            which = f'device {device!r}' if device else 'the default input device'
            raise AudioError(f'no microphone: {which} cannot be opened ({exc}); list them with '
                             "python -m sounddevice, set hearing's device parameter") from exc

    def _on_audio(self, indata, frames, time_info, status) -> None:
        if status:
            with self._lock:
                self._status = str(status)
        chunk = Chunk(resample(indata[:, 0].copy(), self.rate), time.monotonic())
        try:
            self._queue.put_nowait(chunk)
        except queue.Full:
            self.dropped += 1

    def read(self, timeout_s: float = 0.5) -> Chunk | None:
        try:
            return self._queue.get(timeout=timeout_s)
        except queue.Empty:
            if not self._stream.active:
                raise AudioError(f'microphone {self.name!r} stopped delivering audio '
                                 f'({self._status or "the stream ended"})') from None
            return None

    def close(self) -> None:
        self.finished = True
        try:
            self._stream.stop()
            self._stream.close()
        except Exception as exc:     # noqa: BLE001 - PortAudio errors on a vanished device
            self._status = f'close: {exc}'

    def describe(self) -> str:
        return f'microphone {self.name!r} at {self.rate} Hz'
