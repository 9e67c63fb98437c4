"""Communication tools: respond (console text), speak (espeak-ng), send_message, call_user,
request_interaction (a question to the person, answered in the thinking panel).

`respond` hands the text to an injected `on_respond(text)` (the agent node publishes it) or,
without one, returns it as its output. `speak` runs espeak-ng inside the kernel sandbox, the
text on stdin (never an option), when it is installed, and says "not available" otherwise.
`send_message` and `call_user` go through an injected gateway (`gateway(kind, payload) ->
dict`, e.g. an SMS/voice service); with none configured they fail with ERROR_UNAVAILABLE and
say "not configured" rather than pretend to have sent anything.
"""

import logging
import os
from pathlib import Path
import re
import shutil
import subprocess
import tempfile
from typing import Callable, Sequence
import wave

from maxim_common.errors import ERROR_TIMEOUT, ERROR_UNAVAILABLE
from maxim_core.tools.base import Tool, ToolError, ToolInputError, ToolOutcome
from maxim_core.tools.sandbox import Limits, probe, ProcessSandbox

log = logging.getLogger(__name__)

Gateway = Callable[[str, dict], dict]
# Players for the sandboxed synthesis (argv before the file), in order of preference.
PLAYERS = (('aplay', '-q'), ('paplay',), ('pw-play',))
SPEAK_LIMITS = Limits(cpu_s=30, address_space_mb=1024, processes=16, memory_mb=512,
                      file_size_mb=64, open_files=256)
_VOICE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_+-]{0,31}')
_PLAY_MARGIN_S = 10.0

_TEXT = {'type': 'string', 'minLength': 1, 'maxLength': 2000}


class RespondTool(Tool):
    name = 'respond'
    description = 'Say something to the person at the console.'
    input_schema = {'type': 'object', 'properties': {'text': _TEXT}, 'required': ['text']}
    category = 'communication'

    def __init__(self, on_respond: Callable[[str], None] | None = None):
        super().__init__()
        self.on_respond = on_respond

    def execute(self, text: str) -> ToolOutcome:
        if self.on_respond is not None:
            self.on_respond(text)
        return ToolOutcome.ok({'said': text}, text=text)


class SpeakTool(Tool):
    """espeak-ng, contained: the text goes in on stdin (``--stdin``), never as an argument, so
    it is never parsed as an option (``--phonout=<file>``, ``-f<file>``); the voice is a plain
    name. espeak-ng runs inside the kernel sandbox (`ProcessSandbox`) with a private, empty
    temporary folder as its only writable place and writes the speech there; the tool then
    copies it to `wav_path`, or plays it with `player` (aplay, paplay or pw-play) outside the
    sandbox, with a fixed argv and that file. `process`: 'python' (the default: the kernel
    sandbox when it works, else espeak-ng alone with a warning), 'bwrap' (refused without the
    kernel sandbox). With no player to play a sandboxed synthesis, espeak-ng plays the text
    itself, from stdin, outside the sandbox (when the kernel sandbox works, or with 'python'),
    and the result carries a warning.
    """

    name = 'speak'
    description = 'Say something aloud (text to speech).'
    input_schema = {'type': 'object', 'properties': {
        'text': _TEXT,
        'voice': {'type': 'string', 'maxLength': 32, 'default': 'en'}},
        'required': ['text']}
    category = 'communication'

    def __init__(self, executable: str | None = 'espeak-ng', wav_path: str | None = None,
                 timeout_s: float = 30.0, process: str = 'python',
                 player: Sequence[str] | None = None, limits: Limits | None = None,
                 bwrap: str | None = None):
        super().__init__()
        if process not in ('bwrap', 'python'):
            raise ValueError(f"speak: process must be 'bwrap' or 'python', not {process!r}")
        self.executable = shutil.which(executable) if executable else None
        self.wav_path = wav_path          # write a WAV file instead of playing (tests, logs)
        self.timeout_s = timeout_s
        self.process = process
        self.player = list(player) if player is not None else _find_player()
        self.limits = limits or SPEAK_LIMITS
        self.bwrap = bwrap                # bubblewrap's executable (default: found on PATH)

    def execute(self, text: str, voice: str = 'en') -> ToolOutcome:
        if self.executable is None:
            return ToolOutcome.fail('speech is not available: espeak-ng is not installed',
                                    ERROR_UNAVAILABLE, output={'available': False})
        if not _VOICE.fullmatch(voice):
            raise ToolInputError(f'speak: voice {voice!r} is not a voice name (letters, '
                                 'digits, - _ + ; not starting with -)')
        if not self.wav_path and not self.player:
            found = probe(self.bwrap)
            if self.process == 'bwrap' and not found.ok:
                return ToolOutcome.fail(f'refused: speech runs only with the kernel sandbox '
                                        f'and it is unavailable: {found.reason}',
                                        ERROR_UNAVAILABLE)
            return self._play_directly(text, voice)
        with tempfile.TemporaryDirectory(prefix='maxim-speak-') as tmp:
            wav = Path(tmp) / 'speech.wav'
            sandbox = ProcessSandbox(tmp, read_roots=[self.executable], protected=(),
                                     limits=self.limits, bwrap=self.bwrap,
                                     fallback='refuse' if self.process == 'bwrap'
                                     else 'python')
            argv = [self.executable, '-v', voice, '-w', str(wav), '--stdin']
            try:
                result = sandbox.run(argv, timeout_s=self.timeout_s, max_bytes=16_000,
                                     stdin=text.encode('utf-8'))
            finally:
                sandbox.close()           # a sandbox per utterance: its cgroups go with it
            if result.timed_out:
                raise ToolError(f'espeak-ng did not finish within {self.timeout_s} s',
                                ERROR_TIMEOUT)
            if result.exit_code != 0:
                return ToolOutcome.fail(f'espeak-ng failed (exit code {result.exit_code}): '
                                        f'{" ".join(result.stderr.split())[:200]}')
            if wav.is_symlink() or not wav.is_file():
                return ToolOutcome.fail('espeak-ng wrote no speech')
            output = {'spoken': text, 'voice': voice, 'sandboxed': result.sandboxed}
            if result.warning:
                output['warning'] = result.warning
            if self.wav_path:
                _copy_nofollow(wav, Path(self.wav_path))
            else:
                played = self._play(wav)
                if played is not None:
                    return ToolOutcome.fail(played, output=output)
        return ToolOutcome.ok(output, wav_path=self.wav_path)

    def _play(self, wav: Path) -> str | None:
        """Play the sandboxed synthesis; the reason it failed, or None."""
        try:
            with wave.open(str(wav), 'rb') as w:
                seconds = w.getnframes() / float(w.getframerate() or 1)
        except (wave.Error, EOFError, OSError) as exc:
            return f'espeak-ng wrote an unreadable WAV file: {exc}'
        timeout_s = seconds + _PLAY_MARGIN_S
        argv = self.player + [str(wav)]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return f'{os.path.basename(argv[0])} did not finish within {timeout_s:.0f} s'
        except OSError as exc:
            return f'cannot start {argv[0]}: {exc}'
        if proc.returncode != 0:
            return f'{os.path.basename(argv[0])} failed: {proc.stderr.strip()[:200]}'
        return None

    def _play_directly(self, text: str, voice: str) -> ToolOutcome:
        """No player for a sandboxed synthesis: espeak-ng plays itself, the text on stdin."""
        warning = ('played by espeak-ng outside the kernel sandbox (the text on stdin, never '
                   'an option): no aplay, paplay or pw-play to play a sandboxed synthesis')
        log.warning(warning)
        try:
            proc = subprocess.run([self.executable, '-v', voice, '--stdin'],
                                  input=text, capture_output=True, text=True,
                                  timeout=self.timeout_s, cwd=tempfile.gettempdir())
        except subprocess.TimeoutExpired as exc:
            raise ToolError(f'espeak-ng did not finish within {self.timeout_s} s',
                            ERROR_TIMEOUT) from exc
        if proc.returncode != 0:
            return ToolOutcome.fail(f'espeak-ng failed: {proc.stderr.strip()[:200]}')
        return ToolOutcome.ok({'spoken': text, 'voice': voice, 'sandboxed': False,
                               'warning': warning})


def _find_player() -> list[str]:
    for argv in PLAYERS:
        exe = shutil.which(argv[0])
        if exe:
            return [exe, *argv[1:]]
    return []


def _copy_nofollow(src: Path, dest: Path) -> None:
    """Copy `src` to `dest` without following a symlink at `dest`."""
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, 'wb') as out, open(src, 'rb') as inp:
        shutil.copyfileobj(inp, out)


class _GatewayTool(Tool):
    category = 'communication'
    kind = ''
    wall_clock_s = 60.0          # the gateway is someone else's code: it may hang

    def __init__(self, gateway: Gateway | None = None):
        super().__init__()
        self.gateway = gateway

    def _send(self, payload: dict) -> ToolOutcome:
        if self.gateway is None:
            return ToolOutcome.fail(f'{self.name}: not configured (no messaging gateway)',
                                    ERROR_UNAVAILABLE,
                                    output={'available': False, 'configured': False})
        answer = self.gateway(self.kind, payload)
        if not isinstance(answer, dict):
            raise ToolError(f'{self.name}: the gateway answered {type(answer).__name__}, '
                            'not a dict')
        if not answer.get('ok', False):
            return ToolOutcome.fail(f'{self.name}: the gateway refused: '
                                    f'{answer.get("error", "no reason given")}', output=answer)
        return ToolOutcome.ok(answer)


class SendMessageTool(_GatewayTool):
    name = 'send_message'
    description = 'Send a text message through the gateway.'
    input_schema = {'type': 'object', 'properties': {
        'to': {'type': 'string', 'minLength': 1, 'maxLength': 64}, 'text': _TEXT},
        'required': ['to', 'text']}
    kind = 'sms'

    def execute(self, to: str, text: str) -> ToolOutcome:
        return self._send({'to': to, 'text': text})


class CallUserTool(_GatewayTool):
    name = 'call_user'
    description = 'Place a voice call to the user through the gateway.'
    input_schema = {'type': 'object', 'properties': {'text': _TEXT}, 'required': ['text']}
    kind = 'voice'

    def execute(self, text: str) -> ToolOutcome:
        return self._send({'text': text})


# ask(prompt, options, timeout_s) -> the person's answer, or None when none came in time.
Ask = Callable[[str, list, float], 'str | None']


class RequestInteractionTool(Tool):
    name = 'request_interaction'
    description = ('Ask the person a question and wait for the answer (a last resort: '
                   'for a genuine preference).')
    input_schema = {'type': 'object', 'properties': {
        'question': {'type': 'string', 'minLength': 1, 'maxLength': 500},
        'timeout_s': {'type': 'number', 'minimum': 1, 'maximum': 300, 'default': 60}},
        'required': ['question']}
    category = 'communication'

    def __init__(self, ask: Ask | None = None):
        super().__init__()
        self.ask = ask

    def execute(self, question: str, timeout_s: float = 60.0) -> ToolOutcome:
        if self.ask is None:
            return ToolOutcome.fail('nobody to ask: no interaction channel (the thinking '
                                    'panel) is connected', ERROR_UNAVAILABLE,
                                    output={'available': False})
        answer = self.ask(question, [], float(timeout_s))
        if answer is None:
            return ToolOutcome.fail(f'no answer within {timeout_s:.0f} s', ERROR_TIMEOUT,
                                    output={'question': question, 'answered': False})
        return ToolOutcome.ok({'question': question, 'answer': answer, 'answered': True},
                              question=question, text=answer)


def communication_tools(on_respond: Callable[[str], None] | None = None,
                        gateway: Gateway | None = None,
                        speak_executable: str | None = 'espeak-ng',
                        ask: Ask | None = None, process: str = 'python') -> list[Tool]:
    """`process`: how `speak` runs espeak-ng ('bwrap': only in the kernel sandbox; 'python':
    there when it works, else alone with a warning)."""
    return [RespondTool(on_respond), SpeakTool(speak_executable, process=process),
            SendMessageTool(gateway), CallUserTool(gateway), RequestInteractionTool(ask)]
