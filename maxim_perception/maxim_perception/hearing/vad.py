"""Where speech starts and ends: the Silero VAD model that ships inside faster-whisper, run
frame by frame (32 ms, about 0.15 ms of one core each), and a segmenter that cuts the stream
into utterances.

An utterance starts when `start_frames` frames in a row are speech, and it keeps the
`pre_roll_s` of audio before that, so its first word is not cut. It ends after
`end_silence_s` of frames that are not speech, or at `max_utterance_s`. While the robot
speaks (and for a tail after), the segmenter is gated: the robot's own voice in its
microphone starts nothing. A person who talks over it does (barge-in): speech that is
louder than the robot's own echo by `barge_in_db` for `barge_in_s` opens the gate.
"""

from collections import deque
from dataclasses import dataclass, field
import importlib.util
import os

import numpy as np

from maxim_perception.hearing.audio import rms_dbfs, SAMPLE_RATE

FRAME = 512                      # samples per frame at 16 kHz (what the Silero model takes)
FRAME_S = FRAME / SAMPLE_RATE
CONTEXT = 64                     # samples of the previous frame the model sees


def silero_model_path() -> str:
    """The Silero VAD model inside the installed faster-whisper (found, not imported)."""
    spec = importlib.util.find_spec('faster_whisper')
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError('faster-whisper is not installed (run ./maxim setup): it '
                                'carries the voice activity model')
    for folder in spec.submodule_search_locations:
        path = os.path.join(folder, 'assets', 'silero_vad_v6.onnx')
        if os.path.isfile(path):
            return path
    raise FileNotFoundError('faster-whisper has no assets/silero_vad_v6.onnx')


class SileroVAD:
    """Speech probability of each 512-sample frame, with the model's state carried from
    frame to frame (a stream, not a batch)."""

    def __init__(self, path: str | None = None):
        import onnxruntime
        opts = onnxruntime.SessionOptions()
        opts.inter_op_num_threads = 1
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 4
        self._session = onnxruntime.InferenceSession(
            path or silero_model_path(), providers=['CPUExecutionProvider'], sess_options=opts)
        self.reset()

    def reset(self) -> None:
        self._h = np.zeros((1, 1, 128), np.float32)
        self._c = np.zeros((1, 1, 128), np.float32)
        self._context = np.zeros(CONTEXT, np.float32)

    def __call__(self, frame: np.ndarray) -> float:
        x = np.concatenate([self._context, frame.astype(np.float32)])[None, :]
        out, self._h, self._c = self._session.run(None, {'input': x, 'h': self._h,
                                                         'c': self._c})
        self._context = frame[-CONTEXT:].astype(np.float32)
        return float(out.reshape(-1)[0])


@dataclass
class VadConfig:
    threshold: float = 0.5         # speech probability of a speech frame
    start_frames: int = 3          # speech frames in a row that start an utterance (~100 ms)
    end_silence_s: float = 0.5     # non-speech that ends it
    pre_roll_s: float = 0.3        # audio kept from before the start
    min_utterance_s: float = 0.3   # shorter bursts (a cough, a click) are not utterances
    max_utterance_s: float = 15.0  # a longer one is cut here and goes on as the next
    barge_in_db: float = 6.0       # louder than the robot's echo by this much ...
    barge_in_s: float = 0.25       # ... for this long: a person talking over the robot


@dataclass
class Segment:
    """One utterance: its samples and when (stream seconds, and the wall clock at which the
    last speech frame was captured)."""
    samples: np.ndarray
    start_s: float
    end_s: float
    speech_ended_at: float
    barge_in: bool = False
    peak_db: float = -120.0

    @property
    def duration_s(self) -> float:
        return self.samples.size / SAMPLE_RATE


@dataclass
class _Open:
    frames: list = field(default_factory=list)
    start_s: float = 0.0
    last_speech_s: float = 0.0
    last_speech_at: float = 0.0
    silence: int = 0
    barge_in: bool = False
    peak_db: float = -120.0


class Segmenter:
    """Frames in, utterances out. `gated()` is asked for each frame: True while the robot
    speaks (plus its tail); `on_barge_in()` is called the moment a person talks over it."""

    def __init__(self, config: VadConfig | None = None, vad=None, gated=None,
                 on_barge_in=None):
        self.config = config or VadConfig()
        self.vad = vad if vad is not None else SileroVAD()
        self.gated = gated or (lambda: False)
        self.on_barge_in = on_barge_in or (lambda: None)
        self._buffer = np.zeros(0, np.float32)
        self._pre = deque(maxlen=max(1, int(self.config.pre_roll_s / FRAME_S)))
        self._run = 0                 # speech frames in a row
        self._loud_run = 0            # speech frames louder than the echo, while gated
        self._echo_db: deque = deque(maxlen=64)   # levels heard while gated
        self._open: _Open | None = None
        self.t = 0.0                  # stream seconds at the end of the last frame
        self.level_db = -120.0        # level of the last frame
        self.speech_prob = 0.0
        self.barge_ins = 0

    @property
    def in_speech(self) -> bool:
        return self._open is not None

    def feed(self, samples: np.ndarray, captured_at: float) -> list[Segment]:
        """Samples in; the utterances that ended within them out."""
        out = []
        self._buffer = np.concatenate([self._buffer, samples.astype(np.float32)])
        n = self._buffer.size // FRAME
        for i in range(n):
            frame = self._buffer[i * FRAME:(i + 1) * FRAME]
            # The wall clock of this frame: frames before the chunk's last are earlier.
            at = captured_at - (self._buffer.size - (i + 1) * FRAME) / SAMPLE_RATE
            seg = self._frame(frame, at)
            if seg is not None:
                out.append(seg)
        self._buffer = self._buffer[n * FRAME:]
        return out

    def _frame(self, frame: np.ndarray, at: float) -> Segment | None:
        cfg = self.config
        self.t += FRAME_S
        self.level_db = level = rms_dbfs(frame)
        self.speech_prob = prob = self.vad(frame)
        speech = prob >= cfg.threshold
        gated = self.gated()
        if gated and self._open is None:
            return self._gated_frame(frame, level, speech, at)
        self._loud_run = 0
        if not gated:
            self._echo_db.clear()     # the next thing the robot says is learnt afresh
        if self._open is None:
            self._pre.append(frame)
            self._run = self._run + 1 if speech else 0
            if self._run >= cfg.start_frames:
                self._start(at, barge_in=False)
            return None
        return self._continue(frame, level, speech, at)

    def _gated_frame(self, frame, level, speech, at) -> Segment | None:
        """The robot is speaking: its echo is learnt; only a louder voice starts."""
        cfg = self.config
        self._pre.append(frame)
        self._run = 0
        echo = float(np.median(self._echo_db)) if self._echo_db else -120.0
        loud = speech and len(self._echo_db) >= 4 and level >= echo + cfg.barge_in_db
        if not loud:
            self._echo_db.append(level)
        self._loud_run = self._loud_run + 1 if loud else 0
        if self._loud_run * FRAME_S >= cfg.barge_in_s:
            self.barge_ins += 1
            self._loud_run = 0
            self._echo_db.clear()
            self._start(at, barge_in=True)
            self.on_barge_in()
        return None

    def _start(self, at: float, barge_in: bool) -> None:
        frames = list(self._pre)
        self._open = _Open(frames=frames, start_s=self.t - len(frames) * FRAME_S,
                           last_speech_s=self.t, last_speech_at=at, barge_in=barge_in)
        self._pre.clear()
        self._run = 0

    def flush(self) -> Segment | None:
        """The audio stopped (a device went away): the utterance in progress ends here, with
        what was heard of it; the next audio starts afresh."""
        self._buffer = np.zeros(0, np.float32)
        self._pre.clear()
        self._run = 0
        seg, self._open = self._open, None
        if seg is None or seg.last_speech_s - seg.start_s < self.config.min_utterance_s:
            return None
        return Segment(np.concatenate(seg.frames), seg.start_s, seg.last_speech_s,
                       seg.last_speech_at, seg.barge_in, seg.peak_db)

    def _continue(self, frame, level, speech, at) -> Segment | None:
        cfg = self.config
        seg = self._open
        seg.frames.append(frame)
        seg.peak_db = max(seg.peak_db, level)
        if speech:
            seg.silence = 0
            seg.last_speech_s = self.t
            seg.last_speech_at = at
        else:
            seg.silence += 1
        too_long = len(seg.frames) * FRAME_S >= cfg.max_utterance_s
        if seg.silence * FRAME_S < cfg.end_silence_s and not too_long:
            return None
        self._open = None
        keep = len(seg.frames) - (seg.silence if not too_long else 0)
        # A short tail of the silence stays: Whisper reads a word's end better with it.
        keep = min(len(seg.frames), keep + int(0.15 / FRAME_S))
        samples = np.concatenate(seg.frames[:keep])
        spoken = seg.last_speech_s - seg.start_s
        if spoken < cfg.min_utterance_s:
            return None
        return Segment(samples, seg.start_s, seg.last_speech_s, seg.last_speech_at,
                       seg.barge_in, seg.peak_db)
