"""The robot's voice: a text-to-speech command makes a WAV, PortAudio plays it.

The command gets the text on stdin (never as an argument, so no text is read as an option)
and writes a WAV on stdout: espeak-ng by default (`espeak-ng --stdin --stdout`); piper or
any other engine that can do the same is given by parameter. Making the sound first and
playing it second means the voice knows exactly how long it speaks: the ears are gated for
that long plus a tail, and it remembers what it said, so its own words coming back through
the microphone are recognised (listening.is_echo). `stop()` cuts it off: a person talked
over it.
"""

from collections import deque
import io
import queue
import shlex
import subprocess
import threading
import time
from typing import Callable

import numpy as np

from maxim_perception.hearing.audio import AudioError, to_mono

DEFAULT_COMMAND = 'espeak-ng --stdin --stdout'


class VoiceError(RuntimeError):
    """Text that could not be turned into sound, with a line for the user."""


def synthesize(command: str, text: str, timeout_s: float = 20.0) -> tuple[np.ndarray, int]:
    """Run the TTS command with `text` on stdin; its WAV from stdout as (samples, rate)."""
    import soundfile
    argv = shlex.split(command)
    if not argv:
        raise VoiceError('voice.command is empty')
    try:
        proc = subprocess.run(argv, input=text.encode('utf-8'), capture_output=True,
                              timeout=timeout_s, check=False)
    except FileNotFoundError as exc:
        raise VoiceError(f'voice command {argv[0]!r} is not installed (sudo apt-get install '
                         'espeak-ng, or set voice.command)') from exc
    except subprocess.TimeoutExpired as exc:
        raise VoiceError(f'voice command took over {timeout_s:g} s') from exc
    if proc.returncode != 0 or not proc.stdout:
        err = proc.stderr.decode('utf-8', 'replace').strip().splitlines()
        raise VoiceError(f'voice command failed (exit {proc.returncode}): '
                         f'{err[-1] if err else "no WAV on stdout"}')
    try:
        data, rate = soundfile.read(io.BytesIO(proc.stdout), dtype='float32')
    except (RuntimeError, ValueError, soundfile.LibsndfileError) as exc:
        raise VoiceError(f'voice command wrote no readable WAV: {exc}') from exc
    return to_mono(data), int(rate)


class PortAudioPlayer:
    """Plays through a PortAudio output device ('' the default)."""

    def __init__(self, device: str = ''):
        self.device = int(device) if str(device).strip().isdigit() else (device or None)

    def play(self, samples: np.ndarray, rate: int) -> None:
        try:
            import sounddevice as sd
            sd.play(samples, rate, device=self.device, blocking=False)
        except OSError as exc:
            raise AudioError('PortAudio is not installed (sudo apt-get install '
                             'libportaudio2): the robot cannot speak aloud') from exc
        except (sd.PortAudioError, ValueError) as exc:
            raise AudioError(f'no speaker: the output device cannot be opened ({exc})') from exc

    def stop(self) -> None:
        try:
            import sounddevice as sd
            sd.stop()
        except (OSError, ImportError) as exc:
            del exc        # nothing was playing: PortAudio never loaded


class Voice:
    """Says texts one after another from its own thread.

    `player` plays (samples, rate) without blocking (PortAudioPlayer, or a test's line into a
    stand-in microphone); `on_error(line)` hears what went wrong, once per distinct error."""

    def __init__(self, command: str = DEFAULT_COMMAND, player=None, tail_s: float = 0.4,
                 on_error: Callable[[str], None] | None = None, remember: int = 8,
                 clock: Callable[[], float] = time.monotonic):
        self.command = command
        self.player = player if player is not None else PortAudioPlayer()
        self.tail_s = tail_s
        self.on_error = on_error or (lambda line: None)
        self.clock = clock
        self.error = ''
        self.said: deque = deque(maxlen=remember)      # (time, text) of recent speech
        self.spoken_count = 0
        self.stopped_count = 0
        self._until = -1e9            # when the current speech ends
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue(maxsize=16)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what the ears ask ----------------------------------------------------------------
    def speaking(self) -> bool:
        """True while the voice plays, and for the tail after (the room's echo)."""
        with self._lock:
            return self.clock() < self._until + self.tail_s

    def last_spoke_at(self) -> float:
        with self._lock:
            return self._until

    def recent(self, within_s: float = 30.0) -> list[str]:
        now = self.clock()
        with self._lock:
            return [text for t, text in self.said if now - t <= within_s]

    def stop(self) -> None:
        """Barge-in: stop speaking now (what was queued is dropped too)."""
        with self._lock:
            speaking = self.clock() < self._until
            self._until = min(self._until, self.clock())
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if speaking:
            self.stopped_count += 1
            self.player.stop()

    # -- speaking --------------------------------------------------------------------------
    def say(self, text: str) -> bool:
        """Queue `text`; False when the queue is full (the text is dropped and reported)."""
        text = ' '.join(text.split())
        if not text:
            return False
        try:
            self._queue.put_nowait(text)
            return True
        except queue.Full:
            self._report('the voice is behind: a reply was not spoken')
            return False

    def speak_now(self, text: str) -> float:
        """Synthesize and start playing `text`; the seconds it lasts (0 on an error)."""
        try:
            samples, rate = synthesize(self.command, text)
        except VoiceError as exc:
            self._report(str(exc))
            return 0.0
        seconds = samples.size / rate
        with self._lock:
            before = self._until
            start = max(self.clock(), self._until)
            self._until = start + seconds
            self.said.append((self.clock(), text))
        try:
            self.player.play(samples, rate)
        except AudioError as exc:
            with self._lock:
                self._until = before            # nothing plays: nothing more to gate
            self._report(str(exc))
            return 0.0
        self.error = ''
        self.spoken_count += 1
        return seconds

    def _report(self, line: str) -> None:
        if line != self.error:
            self.error = line
            self.on_error(line)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                text = self._queue.get(timeout=0.25)
            except queue.Empty:
                continue
            # One utterance at a time: wait for the one playing to end (bounded by its
            # length, which stop() shortens).
            while not self._stop.is_set() and self.clock() < self.last_spoke_at():
                self._stop.wait(min(0.05, max(0.0, self.last_spoke_at() - self.clock())))
            if not self._stop.is_set():
                self.speak_now(text)

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name='voice', daemon=True)
        self._thread.start()

    def close(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        self.stop()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
