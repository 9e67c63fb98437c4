"""From audio to what was heard: segments from the VAD, text from the transcriber, and the
judgement of whether it was meant for the robot.

`Listener.listen` reads a source in its own thread and cuts utterances there; a second
thread transcribes them one by one from a queue, so a person's next words are cut and kept
while the previous ones are still being transcribed. Each utterance ends as one `Heard`,
accepted (it becomes a percept) or not, with the reason.
"""

from collections import deque
from dataclasses import dataclass, field
import queue
import re
import threading
import time
from typing import Callable

from maxim_perception.hearing.audio import AudioError, Chunk
from maxim_perception.hearing.vad import Segment, Segmenter

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_SENTENCE_END = re.compile(r'[.!?]\s+|^\s*')


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def proper_names(text: str) -> list[str]:
    """Capitalised words that do not begin a sentence ("My name is Ada." -> ["Ada"]): how a
    written line marks a name, whatever the words around it."""
    out = []
    starts = {m.end() for m in _SENTENCE_END.finditer(text)}
    for m in _WORD.finditer(text):
        w = m.group(0)
        if m.start() in starts or not w[0].isupper() or w == 'I' or w.startswith("I'"):
            continue
        out.append(w)
    return out


class Vocabulary:
    """The names the robot knows now, for biasing the transcriber: labels of what it sees,
    names people said (typed or heard) and its own, most recent first. A name not seen or
    said for `keep_s` is dropped, so the prompt follows the room."""

    def __init__(self, fixed: list[str] | None = None, keep_s: float = 600.0,
                 max_names: int = 24):
        self.fixed = [n for n in (fixed or []) if n.strip()]
        self.keep_s = keep_s
        self.max_names = max_names
        self._recent: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def add(self, names, now: float) -> None:
        with self._lock:
            for name in names:
                name = name.strip()
                if name:
                    self._recent[name.lower()] = (now, name)

    def saw(self, labels, now: float) -> None:
        self.add(labels, now)

    def said(self, text: str, now: float) -> None:
        self.add(proper_names(text), now)

    def names(self, now: float) -> list[str]:
        with self._lock:
            live = [(t, n) for t, n in self._recent.values() if now - t <= self.keep_s]
        live.sort(key=lambda tn: -tn[0])
        return self.fixed + [n for _, n in live][:self.max_names]


@dataclass
class AddressConfig:
    """Whether speech was meant for the robot.

    mode: always (every utterance is for the robot: one person at a desk), name (only when
    the robot is named, or answered within the reply window), auto (also a face in view, or
    a voice that breaks a quiet room)."""
    mode: str = 'auto'
    names: tuple = ('maxim',)
    reply_window_s: float = 8.0     # after the robot spoke, the next words answer it
    face_window_s: float = 3.0      # a face seen this recently is someone facing the robot
    quiet_before_s: float = 1.5     # silence before words that break a quiet room
    busy_window_s: float = 20.0     # ... and over this window,
    busy_share: float = 0.4         # others' speech under this share of it

    def __post_init__(self):
        if self.mode not in ('auto', 'always', 'name'):
            raise ValueError(f'addressing must be auto, always or name, got {self.mode!r}')


@dataclass
class Heard:
    """One utterance, as the robot took it."""
    text: str
    confidence: float
    no_speech: float
    accepted: bool
    addressed: bool
    reason: str
    duration_s: float
    transcribe_s: float
    latency_s: float           # end of speech -> text
    speech_ended_at: float     # time.monotonic of the end of speech
    barge_in: bool = False
    prompt: str = ''


def is_echo(text: str, spoken: list[str], overlap: float = 0.6) -> bool:
    """The robot's own words coming back: most words of `text` are in one thing it said."""
    heard = words(text)
    if not heard:
        return False
    for said in spoken:
        own = set(words(said))
        if own and sum(w in own for w in heard) / len(heard) >= overlap:
            return True
    return False


class Addressing:
    """Decides from what is measurable: the robot's name, turn-taking (it just spoke), a
    face in view, and how busy the room's talk is (a conversation between others, a radio:
    speech that follows speech with short gaps)."""

    def __init__(self, config: AddressConfig | None = None):
        self.config = config or AddressConfig()
        self._talk: deque = deque(maxlen=256)    # (start, end) of recent utterances
        self.robot_spoke_at = -1e9
        self.face_seen_at = -1e9

    def decide(self, text: str, start: float, end: float) -> tuple[bool, str]:
        cfg = self.config
        history = [(s, e) for s, e in self._talk if e <= start]
        self._talk.append((start, end))
        if cfg.mode == 'always':
            return True, 'always'
        said = set(words(text))
        if any(n.lower() in said for n in cfg.names):
            return True, 'name'
        if 0 <= start - self.robot_spoke_at <= cfg.reply_window_s:
            return True, 'turn'
        if cfg.mode == 'name':
            return False, 'not named'
        if start - self.face_seen_at <= cfg.face_window_s:
            return True, 'face'
        gap = start - max((e for _, e in history), default=-1e9)
        window = start - cfg.busy_window_s
        talk = sum(max(0.0, e - max(s, window)) for s, e in history if e > window)
        if gap < cfg.quiet_before_s:
            return False, 'conversation'
        if talk / cfg.busy_window_s >= cfg.busy_share:
            return False, 'busy room'
        return True, 'quiet room'


@dataclass
class ListenerConfig:
    min_confidence: float = 0.35    # below: dropped, not a percept
    max_no_speech: float = 0.8      # above (with a low confidence): not speech at all
    queue_max: int = 32             # utterances waiting for the transcriber
    initial_backoff_s: float = 0.5
    max_backoff_s: float = 5.0


@dataclass
class ListenerStats:
    utterances: int = 0
    accepted: int = 0
    dropped_queue: int = 0
    last_transcribe_s: float = 0.0
    last_latency_s: float = 0.0
    errors: int = 0
    transcribe_times: deque = field(default_factory=lambda: deque(maxlen=50))


class Listener:
    """Segmenter + transcriber + addressing, with the two threads that run them.

    `on_heard(Heard)` is called from the transcription thread; `on_error(line)` from the
    reading thread, once per distinct error in a row."""

    def __init__(self, segmenter: Segmenter, transcriber, addressing: Addressing,
                 vocabulary: Vocabulary, config: ListenerConfig | None = None,
                 on_heard: Callable[[Heard], None] | None = None,
                 on_error: Callable[[str], None] | None = None,
                 spoken: Callable[[], list[str]] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.segmenter = segmenter
        self.transcriber = transcriber
        self.addressing = addressing
        self.vocabulary = vocabulary
        self.config = config or ListenerConfig()
        self.on_heard = on_heard or (lambda heard: None)
        self.on_error = on_error or (lambda line: None)
        self.spoken = spoken or (lambda: [])
        self.clock = clock
        self.stats = ListenerStats()
        self.error = ''
        self.source_name = ''
        self.ended = False            # a source with an end (a file) was read to it
        self._segments: queue.Queue = queue.Queue(maxsize=self.config.queue_max)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._idle = threading.Event()
        self._idle.set()

    # -- the reading thread --------------------------------------------------------------------
    def feed(self, chunk: Chunk) -> None:
        """Audio in (the reading thread, or a test): utterances that ended go to the queue."""
        for seg in self.segmenter.feed(chunk.samples, chunk.captured_at):
            self._queue(seg)

    def _queue(self, seg: Segment) -> None:
        try:
            self._idle.clear()
            self._segments.put_nowait(seg)
        except queue.Full:
            self.stats.dropped_queue += 1
            self._report(f'{self.stats.dropped_queue} utterances dropped: the transcriber '
                         'is behind')

    def _report(self, line: str) -> None:
        self.stats.errors += 1
        if line != self.error:
            self.error = line
            self.on_error(line)

    def listen(self, open_source: Callable[[], object], retry: bool = True) -> None:
        """Read `open_source()` until stopped or, for a source that ends, until its end.
        A source that fails is opened again with backoff when `retry`, else listening ends
        with the error reported."""
        backoff = self.config.initial_backoff_s
        while not self._stop.is_set():
            try:
                source = open_source()
            except AudioError as exc:
                self._report(str(exc))
                if not retry:
                    return
                self._stop.wait(backoff)
                backoff = min(self.config.max_backoff_s, backoff * 2)
                continue
            self.source_name = source.describe()
            self.error = ''
            backoff = self.config.initial_backoff_s
            try:
                while not self._stop.is_set():
                    chunk = source.read(0.5)
                    if chunk is None:
                        if source.finished:
                            self.ended = True
                            return
                        continue
                    self.feed(chunk)
            except AudioError as exc:
                cut = self.segmenter.flush()     # what was said before the audio stopped
                if cut is not None:
                    self._queue(cut)
                self._report(str(exc))
                if not retry:
                    return
            finally:
                source.close()

    # -- the transcription thread ----------------------------------------------------------
    def _transcribe_loop(self) -> None:
        while not self._stop.is_set():
            try:
                seg = self._segments.get(timeout=0.25)
            except queue.Empty:
                if self._segments.empty():
                    self._idle.set()
                continue
            try:
                self.on_heard(self.hear(seg))
            except (RuntimeError, ValueError) as exc:
                self._report(f'transcription failed: {exc}')

    def hear(self, seg: Segment) -> Heard:
        """One utterance to a Heard (the transcription thread, or a test)."""
        now = self.clock()
        t = self.transcriber.transcribe(seg.samples, self.vocabulary.names(now))
        done = self.clock()
        self.stats.utterances += 1
        self.stats.last_transcribe_s = t.seconds
        self.stats.transcribe_times.append(t.seconds)
        latency = max(0.0, done - seg.speech_ended_at)
        self.stats.last_latency_s = latency
        start = seg.speech_ended_at - (seg.end_s - seg.start_s)
        cfg = self.config
        addressed, reason = False, ''
        if not t.text or t.confidence < cfg.min_confidence:
            reason = f'low confidence {t.confidence:.2f}'
        elif t.no_speech > cfg.max_no_speech and t.confidence < 0.6:
            reason = f'no speech {t.no_speech:.2f}'
        elif is_echo(t.text, self.spoken()):
            reason = 'echo of the robot'
        else:
            addressed, reason = self.addressing.decide(t.text, start, seg.speech_ended_at)
        accepted = addressed
        if accepted:
            self.stats.accepted += 1
            self.vocabulary.said(t.text, done)
        return Heard(t.text, t.confidence, t.no_speech, accepted, addressed, reason,
                     seg.duration_s, t.seconds, latency, seg.speech_ended_at, seg.barge_in,
                     t.prompt)

    # -- threads ---------------------------------------------------------------------------
    def start(self, open_source: Callable[[], object], retry: bool = True) -> None:
        self._stop.clear()
        self._threads = [
            threading.Thread(target=self._transcribe_loop, name='hearing-transcribe',
                             daemon=True),
            threading.Thread(target=self.listen, args=(open_source, retry),
                             name='hearing-read', daemon=True)]
        for t in self._threads:
            t.start()

    def reading(self) -> bool:
        return len(self._threads) == 2 and self._threads[1].is_alive()

    def drain(self, timeout_s: float) -> bool:
        """Wait until the reading thread ended and every utterance is transcribed."""
        deadline = time.monotonic() + timeout_s
        if len(self._threads) == 2:
            self._threads[1].join(max(0.0, deadline - time.monotonic()))
        while time.monotonic() < deadline:
            if self._segments.empty() and self._idle.wait(0.1):
                return not self.reading()
        return False

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        deadline = time.monotonic() + timeout_s
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self._threads = []
