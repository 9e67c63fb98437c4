"""The hearing node: what a person says aloud becomes a user Percept, the way a typed line
does, and the robot's replies are spoken. The work is in maxim_perception.hearing (ears.py
composes it from the parameters); this node translates parameters and messages."""

import time
import uuid

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rcl_interfaces.msg import ParameterDescriptor

from maxim_common.diagnostics import Diagnostics
from maxim_common.health import not_ready
from maxim_common.lifetime import run
from maxim_common.qos import AUDIO
from maxim_interfaces.msg import AudioChunk, Percept, ToolResult, Utterance
from maxim_perception.conversions import detection_labels, heard_to_msg, heard_to_percept
from maxim_perception.health import hearing_health
from maxim_perception.hearing import ears
from maxim_perception.hearing.audio import pcm16_to_float, QueueSource
from maxim_perception.hearing.transcriber import ModelNotFound


class HearingNode(LifecycleNode):
    """Ears and voice.

    Lifecycle: configure loads the speech model and the VAD (a missing model is an ERROR on
    diagnostics and the node stays up, not listening); activate opens the source and starts
    listening and the voice; deactivate stops both. `autostart` (constructor) brings it up
    at once, for graphs composed by hand; the launch files and the runner leave that to the
    lifecycle manager.

    Parameters (hearing/ears.py PARAMETERS, all read-only):
        source (string, 'microphone'): microphone | file | topic.
        device (string, ''): the microphone ('' default, an index or a name part).
        file (string, ''), file_realtime (bool, true): source file, a WAV or FLAC recording.
        audio_topic (string, 'audio/in'): source topic (maxim_interfaces/AudioChunk).
        model_dir (string, ''): a faster-whisper model folder ('' the packaged tiny.en).
        threads (2), compute_type ('int8'), beam_size (5), language ('en').
        vad.threshold (0.5), vad.end_silence_s (0.5), vad.pre_roll_s (0.3),
        vad.max_utterance_s (15.0), vad.barge_in_db (6.0): see hearing/vad.py.
        min_confidence (double, 0.35): utterances below are dropped.
        addressing (string, 'auto'): auto | always | name (hearing/listening.py).
        robot_names (string[], ['maxim']), reply_window_s (double, 8.0).
        vocabulary (string[], []): names always given to the transcriber.
        voice.enabled (false), voice.command (espeak-ng), voice.device (''), voice.tail_s
        (0.4), voice.speak ('heard': replies within voice.heard_window_s, 60, of a heard
        utterance; always; never).
    Subscriptions: percepts (what is in view, what people said: the transcriber's names),
        tool_results (replies to speak), <audio_topic> (source topic; best effort, 200
        blocks deep).
    Publishers: hearing/utterance (maxim_interfaces/Utterance), percepts (SOURCE_USER,
        source_name 'voice'), diagnostics.
    """

    def __init__(self, autostart: bool = True, **kwargs):
        super().__init__('hearing', **kwargs)
        self.p = {name: self.declare_parameter(
            name, default, ParameterDescriptor(description=text, read_only=True)).value
            for name, default, text in ears.PARAMETERS}
        self.ears: ears.Ears | None = None
        self.queue_source: QueueSource | None = None
        self.model_error = ''
        self.heard_at = -1e9
        self._subs = []
        self.utterance_pub = self.create_publisher(Utterance, 'hearing/utterance', 10)
        self.percept_pub = self.create_publisher(Percept, 'percepts', 10)
        self.diagnostics = Diagnostics(self, 'hearing', self.health,
                                       self.p['diagnostics_period_s'])
        if autostart and self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
            self.trigger_activate()

    @property
    def listener(self):
        return self.ears.listener if self.ears else None

    @property
    def voice(self):
        return self.ears.voice if self.ears else None

    # -- lifecycle ---------------------------------------------------------------------------
    def on_configure(self, state) -> TransitionCallbackReturn:
        log = self.get_logger()
        problem = ears.check(self.p)
        if problem:
            log.error(f'hearing: {problem}')
            return TransitionCallbackReturn.FAILURE
        try:
            self.ears = ears.build(
                self.p, self._on_heard, lambda line: log.error(f'hearing: {line}'),
                lambda line: log.error(f'hearing: voice: {line}'))
        except ModelNotFound as exc:
            self.model_error = str(exc)
            log.error(f'hearing: not listening: {exc}')
            return TransitionCallbackReturn.SUCCESS
        voice = f', voice {self.p["voice.command"]}' if self.voice else ''
        log.info(f'hearing: model {self.listener.transcriber.model_dir}, source '
                 f'{self.p["source"]}{voice}')
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        self._subs = [self.create_subscription(Percept, 'percepts', self._on_percept, 10),
                      self.create_subscription(ToolResult, 'tool_results', self._on_result, 10)]
        if self.ears is not None:
            if self.p['source'] == 'topic':
                self.queue_source = QueueSource(self.resolve_topic_name(self.p['audio_topic']))
                self._subs.append(self.create_subscription(
                    AudioChunk, self.p['audio_topic'], self._on_audio, AUDIO))
            if self.voice is not None:
                self.voice.start()
            self.listener.start(lambda: ears.open_source(self.p, self.queue_source),
                                retry=self.p['source'] != 'file')
        return super().on_activate(state)

    def _stop(self) -> None:
        for sub in self._subs:
            self.destroy_subscription(sub)
        self._subs = []
        if self.ears is not None:
            self.listener.stop()
            if self.voice is not None:
                self.voice.close()

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._stop()
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._stop()
        self.ears = None
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
        if self.ears is None or msg.source_name == 'voice':
            return
        now = time.monotonic()
        if msg.source == Percept.SOURCE_VISION:
            self.listener.vocabulary.saw(detection_labels(msg), now)
            if len(msg.people):
                self.listener.addressing.face_seen_at = now
        elif msg.source == Percept.SOURCE_USER:
            self.listener.vocabulary.said(msg.narrative, now)

    def _on_result(self, msg: ToolResult) -> None:
        text = ears.reply_to_speak(msg.call.tool_name, msg.success, msg.call.arguments_json)
        if not text or self.ears is None:
            return
        now = time.monotonic()
        self.listener.addressing.robot_spoke_at = now
        self.listener.vocabulary.said(text, now)
        if self.voice is not None and ears.speaks(self.p, now, self.heard_at):
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

    def health(self):
        listener = self.listener
        if listener is None:
            if not self.model_error:
                return not_ready('speech model')
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
