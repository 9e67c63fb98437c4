"""The hearing node: what a person says aloud becomes a user Percept, the way a typed line
does, and the robot's replies are spoken. The work is in maxim_perception.hearing; this node
translates parameters and messages."""

import json
import threading
import time
import uuid

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from maxim_interfaces.msg import AudioChunk, Percept, ToolResult, Utterance
from maxim_perception.conversions import (detection_labels, heard_to_msg, heard_to_percept)
from maxim_perception.health import hearing_health, not_ready
from maxim_perception.hearing.audio import (AudioError, FileSource, MicrophoneSource,
                                            pcm16_to_float, QueueSource)
from maxim_perception.hearing.listening import (AddressConfig, Addressing, Listener,
                                                ListenerConfig, Vocabulary)
from maxim_perception.hearing.transcriber import ModelNotFound, Transcriber
from maxim_perception.hearing.vad import Segmenter, VadConfig
from maxim_perception.hearing.voice import DEFAULT_COMMAND, Voice
from maxim_perception.nodes.diagnostics import Diagnostics
from maxim_perception.nodes.lifetime import run

# Audio blocks as a driver sends them (best effort, matching any publisher), with room for a
# few seconds of 32 ms blocks while the executor is busy: a lost block is a lost word.
AUDIO = QoSProfile(depth=200, history=HistoryPolicy.KEEP_LAST,
                   reliability=ReliabilityPolicy.BEST_EFFORT)

SOURCES = ('microphone', 'file', 'topic')
SPEAK = ('heard', 'always', 'never')


class HearingNode(LifecycleNode):
    """Ears and voice.

    Lifecycle: configure loads the speech model and the VAD (a missing model is an ERROR on
    diagnostics and the node stays up, not listening); activate opens the source and starts
    listening and the voice; deactivate stops both. `autostart` (constructor) brings it up
    at once, for graphs composed by hand; the launch files and the runner leave that to the
    lifecycle manager.

    Parameters:
        source (string, 'microphone'): microphone | file | topic.
        device (string, ''): the microphone ('' default, an index or a name part).
        file (string, ''): source file: a WAV or FLAC recording, played in as a person.
        file_realtime (bool, true): play the file at its own pace.
        audio_topic (string, 'audio/in'): source topic (maxim_interfaces/AudioChunk).
        model_dir (string, ''): a faster-whisper model folder ('' the packaged tiny.en).
        threads (int, 2), compute_type (string, 'int8'), language (string, 'en'),
        beam_size (int, 5).
        vad.threshold (0.5), vad.end_silence_s (0.5), vad.pre_roll_s (0.3),
        vad.max_utterance_s (15.0), vad.barge_in_db (6.0): see hearing/vad.py.
        min_confidence (double, 0.35): utterances below are dropped.
        addressing (string, 'auto'): auto | always | name (hearing/listening.py).
        robot_names (string[], ['maxim']), reply_window_s (double, 8.0).
        vocabulary (string[], []): names always given to the transcriber.
        voice.enabled (bool, false), voice.command (string, espeak-ng), voice.device
        (string, ''), voice.tail_s (double, 0.4), voice.speak (string, 'heard': replies
        within voice.heard_window_s of a heard utterance; always; never).
    Subscriptions: percepts (what is in view, what people said: the transcriber's names),
        tool_results (replies to speak), <audio_topic> (source topic; best effort, 200
        blocks deep).
    Publishers: hearing/utterance (maxim_interfaces/Utterance), percepts (SOURCE_USER,
        source_name 'voice'), diagnostics.
    """

    def __init__(self, autostart: bool = True, **kwargs):
        super().__init__('hearing', **kwargs)
        self.p = self._declare()
        self.listener: Listener | None = None
        self.voice: Voice | None = None
        self.queue_source: QueueSource | None = None
        self.model_error = ''
        self.heard_at = -1e9
        self._subs = []
        self._lock = threading.Lock()
        self.utterance_pub = self.create_publisher(Utterance, 'hearing/utterance', 10)
        self.percept_pub = self.create_publisher(Percept, 'percepts', 10)
        self.diagnostics = Diagnostics(self, 'hearing', self.health,
                                       self.p['diagnostics_period_s'])
        if autostart and self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
            self.trigger_activate()

    def _declare(self) -> dict:
        spec = [('source', 'microphone', f'Audio from: {" | ".join(SOURCES)}'),
                ('device', '', "Microphone: '' default, an index or a name part"),
                ('file', '', 'Source file: a WAV or FLAC recording'),
                ('file_realtime', True, 'Play the file at its own pace'),
                ('audio_topic', 'audio/in', 'Source topic (maxim_interfaces/AudioChunk)'),
                ('model_dir', '', "faster-whisper model folder ('' the packaged tiny.en)"),
                ('threads', 2, 'Transcriber threads'),
                ('compute_type', 'int8', 'CTranslate2 compute type'),
                ('beam_size', 5, 'Beam of the transcriber (1: greedy)'),
                ('language', 'en', 'Spoken language'),
                ('vad.threshold', 0.5, 'Speech probability of a speech frame'),
                ('vad.end_silence_s', 0.5, 'Silence that ends an utterance'),
                ('vad.pre_roll_s', 0.3, 'Audio kept from before speech starts'),
                ('vad.max_utterance_s', 15.0, 'Longest utterance'),
                ('vad.barge_in_db', 6.0, 'Louder than the echo by this: barge-in'),
                ('min_confidence', 0.35, 'Utterances below are dropped'),
                ('addressing', 'auto', 'auto | always | name'),
                ('robot_names', ['maxim'], 'Names the robot answers to'),
                ('reply_window_s', 8.0, 'After the robot spoke, words answer it'),
                ('vocabulary', [''], 'Names always given to the transcriber'),
                ('voice.enabled', False, 'Speak replies'),
                ('voice.command', DEFAULT_COMMAND, 'TTS: text on stdin, WAV on stdout'),
                ('voice.device', '', "Speaker: '' default, an index or a name part"),
                ('voice.tail_s', 0.4, 'The ears stay gated this long after speech'),
                ('voice.speak', 'heard', f'Which replies are spoken: {" | ".join(SPEAK)}'),
                ('voice.heard_window_s', 60.0, "'heard': a reply this soon after speech"),
                ('diagnostics_period_s', 1.0, 'Diagnostics period')]
        return {name: self.declare_parameter(
            name, default, ParameterDescriptor(description=text, read_only=True)).value
            for name, default, text in spec}

    # -- lifecycle ---------------------------------------------------------------------------
    def on_configure(self, state) -> TransitionCallbackReturn:
        p = self.p
        if p['source'] not in SOURCES or p['voice.speak'] not in SPEAK:
            self.get_logger().error(f'hearing: source must be one of {SOURCES} and voice.speak '
                                    f'one of {SPEAK}, got {p["source"]!r}, '
                                    f'{p["voice.speak"]!r}')
            return TransitionCallbackReturn.FAILURE
        try:
            addressing = Addressing(AddressConfig(
                mode=p['addressing'], names=tuple(n.lower() for n in p['robot_names']),
                reply_window_s=p['reply_window_s']))
            transcriber = Transcriber(p['model_dir'], p['threads'], p['compute_type'],
                                      p['language'], p['beam_size'])
        except ValueError as exc:
            self.get_logger().error(f'hearing: {exc}')
            return TransitionCallbackReturn.FAILURE
        except ModelNotFound as exc:
            self.model_error = str(exc)
            self.get_logger().error(f'hearing: not listening: {exc}')
            return TransitionCallbackReturn.SUCCESS
        if p['voice.enabled']:
            from maxim_perception.hearing.voice import PortAudioPlayer
            self.voice = Voice(p['voice.command'], PortAudioPlayer(p['voice.device']),
                               p['voice.tail_s'], on_error=self._voice_error)
        vad = VadConfig(threshold=p['vad.threshold'], end_silence_s=p['vad.end_silence_s'],
                        pre_roll_s=p['vad.pre_roll_s'], max_utterance_s=p['vad.max_utterance_s'],
                        barge_in_db=p['vad.barge_in_db'])
        voice = self.voice
        segmenter = Segmenter(vad, gated=voice.speaking if voice else None,
                              on_barge_in=voice.stop if voice else None)
        self.listener = Listener(
            segmenter, transcriber, addressing,
            # The robot's own names are always in the prompt: "Maxim", not "max in".
            Vocabulary([n.title() for n in p['robot_names'] if n]
                       + [v for v in p['vocabulary'] if v]),
            ListenerConfig(min_confidence=p['min_confidence']), on_heard=self._on_heard,
            on_error=lambda line: self.get_logger().error(f'hearing: {line}'),
            spoken=(lambda: voice.recent()) if voice else None)
        self.get_logger().info(f'hearing: model {transcriber.model_dir}, source {p["source"]}'
                               f'{", voice " + p["voice.command"] if voice else ""}')
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        self._subs = [self.create_subscription(Percept, 'percepts', self._on_percept, 10),
                      self.create_subscription(ToolResult, 'tool_results', self._on_result, 10)]
        if self.listener is not None:
            if self.p['source'] == 'topic':
                self.queue_source = QueueSource(self.resolve_topic_name(self.p['audio_topic']))
                self._subs.append(self.create_subscription(
                    AudioChunk, self.p['audio_topic'], self._on_audio, AUDIO))
            if self.voice is not None:
                self.voice.start()
            self.listener.start(self._open_source, retry=self.p['source'] != 'file')
        return super().on_activate(state)

    def _open_source(self):
        p = self.p
        if p['source'] == 'file':
            if not p['file']:
                raise AudioError('source file: set hearing.file to a WAV or FLAC recording')
            return FileSource(p['file'], realtime=p['file_realtime'])
        if p['source'] == 'topic':
            return self.queue_source
        return MicrophoneSource(p['device'])

    def _stop(self) -> None:
        for sub in self._subs:
            self.destroy_subscription(sub)
        self._subs = []
        if self.listener is not None:
            self.listener.stop()
        if self.voice is not None:
            self.voice.close()

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._stop()
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._stop()
        self.listener = self.voice = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        return self.on_cleanup(state)

    # -- messages ----------------------------------------------------------------------------
    def _on_heard(self, heard) -> None:
        stamp = self.get_clock().now().to_msg()
        percept_id = uuid.uuid4().hex[:12] if heard.accepted else ''
        self.utterance_pub.publish(heard_to_msg(heard, percept_id, stamp))
        if heard.accepted:
            self.heard_at = time.monotonic()
            self.percept_pub.publish(heard_to_percept(heard.text, percept_id, stamp))
        self.get_logger().info(f'heard ({heard.confidence:.2f}, {heard.reason}): '
                               f'{heard.text!r}')

    def _on_percept(self, msg: Percept) -> None:
        if self.listener is None or msg.source_name == 'voice':
            return
        now = time.monotonic()
        if msg.source == Percept.SOURCE_VISION:
            self.listener.vocabulary.saw(detection_labels(msg), now)
            if len(msg.people):
                self.listener.addressing.face_seen_at = now
        elif msg.source == Percept.SOURCE_USER:
            self.listener.vocabulary.said(msg.narrative, now)

    def _on_result(self, msg: ToolResult) -> None:
        if msg.call.tool_name != 'respond' or not msg.success or self.listener is None:
            return
        try:
            text = str(json.loads(msg.call.arguments_json or '{}').get('text', ''))
        except (ValueError, AttributeError):
            return
        now = time.monotonic()
        self.listener.addressing.robot_spoke_at = now
        self.listener.vocabulary.said(text, now)
        speak = self.p['voice.speak']
        if self.voice is not None and (speak == 'always' or (
                speak == 'heard' and now - self.heard_at <= self.p['voice.heard_window_s'])):
            self.voice.say(text)

    def _on_audio(self, msg: AudioChunk) -> None:
        if self.queue_source is None:
            return
        if not 8000 <= msg.sample_rate <= 192000 or not msg.channels:
            self.get_logger().warning(
                f'hearing: audio block dropped: {msg.sample_rate} Hz, {msg.channels} '
                'channels (8-192 kHz, at least one channel)', throttle_duration_sec=5.0)
            return
        samples = pcm16_to_float(msg.data)
        if msg.channels > 1:
            samples = samples[:samples.size // msg.channels * msg.channels].reshape(
                -1, msg.channels)
        self.queue_source.push(samples, int(msg.sample_rate))

    def _voice_error(self, line: str) -> None:
        self.get_logger().error(f'hearing: voice: {line}')

    def health(self):
        listener = self.listener
        if listener is None and not self.model_error:
            return not_ready('speech model')
        if listener is None:
            return hearing_health(self.p['source'], self.model_error, False, -120.0, 0, 0,
                                  0.0, 0.0)
        s = listener.stats
        return hearing_health(listener.source_name or self.p['source'], listener.error,
                              listener.reading(), listener.segmenter.level_db, s.utterances,
                              s.accepted, s.last_transcribe_s, s.last_latency_s,
                              self.voice.error if self.voice else '',
                              listener.transcriber.model_dir, listener.ended)


def main(args=None):
    run(lambda: HearingNode(autostart=False), args)
