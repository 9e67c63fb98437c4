"""The ears and the voice composed from one flat parameter table (the hearing node's
parameters, or a test's dict): which parameters there are, what they build, and the small
rules the node applies to messages (which reply is spoken). No rclpy.
"""

from dataclasses import dataclass
import json
from typing import Callable

from maxim_perception.hearing.audio import AudioError, FileSource, MicrophoneSource
from maxim_perception.hearing.listening import (AddressConfig, Addressing, Listener,
                                                ListenerConfig, Vocabulary)
from maxim_perception.hearing.transcriber import Transcriber
from maxim_perception.hearing.vad import Segmenter, VadConfig
from maxim_perception.hearing.voice import DEFAULT_COMMAND, PortAudioPlayer, Voice

SOURCES = ('microphone', 'file', 'topic')
SPEAK = ('heard', 'always', 'never')

# (name, default, description): the hearing node declares each, read-only.
PARAMETERS = [
    ('source', 'microphone', f'Audio from: {" | ".join(SOURCES)}'),
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
    ('diagnostics_period_s', 1.0, 'Diagnostics period'),
]


def check(p: dict) -> str:
    """'' when the parameters can work, else one line saying which cannot."""
    if p['source'] not in SOURCES:
        return f'source must be one of {", ".join(SOURCES)}, got {p["source"]!r}'
    if p['voice.speak'] not in SPEAK:
        return f'voice.speak must be one of {", ".join(SPEAK)}, got {p["voice.speak"]!r}'
    try:
        AddressConfig(mode=p['addressing'])
    except ValueError as exc:
        return str(exc)
    return ''


@dataclass
class Ears:
    listener: Listener
    voice: Voice | None


def build(p: dict, on_heard: Callable, on_error: Callable[[str], None],
          on_voice_error: Callable[[str], None]) -> Ears:
    """The listener (and the voice, when enabled) from the parameters. The transcriber
    loads here: ModelNotFound when its folder is not a model."""
    transcriber = Transcriber(p['model_dir'], p['threads'], p['compute_type'], p['language'],
                              p['beam_size'])
    voice = None
    if p['voice.enabled']:
        voice = Voice(p['voice.command'], PortAudioPlayer(p['voice.device']), p['voice.tail_s'],
                      on_error=on_voice_error)
    vad = VadConfig(threshold=p['vad.threshold'], end_silence_s=p['vad.end_silence_s'],
                    pre_roll_s=p['vad.pre_roll_s'], max_utterance_s=p['vad.max_utterance_s'],
                    barge_in_db=p['vad.barge_in_db'])
    segmenter = Segmenter(vad, gated=voice.speaking if voice else None,
                          on_barge_in=voice.stop if voice else None)
    addressing = Addressing(AddressConfig(
        mode=p['addressing'], names=tuple(n.lower() for n in p['robot_names'] if n),
        reply_window_s=p['reply_window_s']))
    # The robot's own names are always in the prompt: "Maxim", not "max in".
    vocabulary = Vocabulary([n.title() for n in p['robot_names'] if n]
                            + [v for v in p['vocabulary'] if v])
    listener = Listener(segmenter, transcriber, addressing, vocabulary,
                        ListenerConfig(min_confidence=p['min_confidence']), on_heard=on_heard,
                        on_error=on_error, spoken=voice.recent if voice else None)
    return Ears(listener, voice)


def open_source(p: dict, queue_source=None):
    """The source the parameters name (AudioError: a line for the user)."""
    if p['source'] == 'file':
        if not p['file']:
            raise AudioError('source file: set hearing.file to a WAV or FLAC recording')
        return FileSource(p['file'], realtime=p['file_realtime'])
    if p['source'] == 'topic':
        return queue_source
    return MicrophoneSource(p['device'])


def reply_to_speak(tool_name: str, success: bool, arguments_json: str) -> str:
    """The text of a successful `respond` ('' for any other result)."""
    if tool_name != 'respond' or not success:
        return ''
    try:
        args = json.loads(arguments_json or '{}')
    except ValueError:
        return ''
    return str(args.get('text', '')).strip() if isinstance(args, dict) else ''


def speaks(p: dict, now: float, heard_at: float) -> bool:
    """Is a reply spoken now? 'heard': only within voice.heard_window_s of words heard (a
    person in the room), 'always', or 'never'."""
    mode = p['voice.speak']
    return mode == 'always' or (mode == 'heard'
                                and now - heard_at <= p['voice.heard_window_s'])
