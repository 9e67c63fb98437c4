"""Communication tools: respond (console text), speak (espeak-ng), send_message, call_user,
request_interaction (a question to the person, answered in the thinking panel).

`respond` hands the text to an injected `on_respond(text)` (the agent node publishes it) or,
without one, returns it as its output. `speak` runs espeak-ng when it is installed and says
"not available" otherwise. `send_message` and `call_user` go through an injected gateway
(`gateway(kind, payload) -> dict`, e.g. an SMS/voice service); with none configured they fail
with ERROR_UNAVAILABLE and say "not configured" rather than pretend to have sent anything.
"""

import shutil
import subprocess
from typing import Callable

from maxim_core.tools.base import (ERROR_TIMEOUT, ERROR_UNAVAILABLE, Tool, ToolError,
                                   ToolOutcome)

Gateway = Callable[[str, dict], dict]

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
    name = 'speak'
    description = 'Say something aloud (text to speech).'
    input_schema = {'type': 'object', 'properties': {
        'text': _TEXT,
        'voice': {'type': 'string', 'maxLength': 32, 'default': 'en'}},
        'required': ['text']}
    category = 'communication'

    def __init__(self, executable: str | None = 'espeak-ng', wav_path: str | None = None,
                 timeout_s: float = 30.0):
        super().__init__()
        self.executable = shutil.which(executable) if executable else None
        self.wav_path = wav_path          # write a WAV file instead of playing (tests, logs)
        self.timeout_s = timeout_s

    def execute(self, text: str, voice: str = 'en') -> ToolOutcome:
        if self.executable is None:
            return ToolOutcome.fail('speech is not available: espeak-ng is not installed',
                                    ERROR_UNAVAILABLE, output={'available': False})
        argv = [self.executable, '-v', voice]
        if self.wav_path:
            argv += ['-w', self.wav_path]
        argv.append(text)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout_s,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise ToolError(f'espeak-ng did not finish within {self.timeout_s} s',
                            ERROR_TIMEOUT) from exc
        if proc.returncode != 0:
            return ToolOutcome.fail(f'espeak-ng failed: {proc.stderr.strip()[:200]}')
        return ToolOutcome.ok({'spoken': text, 'voice': voice}, wav_path=self.wav_path)


class _GatewayTool(Tool):
    category = 'communication'
    kind = ''

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
                        ask: Ask | None = None) -> list[Tool]:
    return [RespondTool(on_respond), SpeakTool(speak_executable), SendMessageTool(gateway),
            CallUserTool(gateway), RequestInteractionTool(ask)]
