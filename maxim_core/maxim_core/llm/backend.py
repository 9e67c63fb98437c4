"""The contract between Maxim's thinking parts and a language model.

Deliberation, the fear gate's review, idle introspection and the orchestrator all speak to a
`Backend`. In the running robot that backend is a client of the `llm` node's Generate action;
in-process and in tests it is a `LlamaCppBackend` on the embedded GGUF or a `ScriptedBackend`.
Failures are typed (`LLMError.code`) so every caller can map them to a named outcome.
"""

from dataclasses import dataclass, field
import threading
import time
from typing import Callable, Protocol, Sequence

# Stop reasons, as in maxim_interfaces/action/Generate.action.
STOP_EOS = 'stop'          # end of sequence or a stop string
STOP_LENGTH = 'length'     # max_tokens reached
STOP_CANCELLED = 'cancelled'
STOP_TIMEOUT = 'timeout'   # only when a `deadline` was given and passed

# LLMError codes.
TIMEOUT = 'timeout'
MODEL_ERROR = 'model_error'
UNAVAILABLE = 'unavailable'
CANCELLED = 'cancelled'
BUSY = 'busy'
BAD_REQUEST = 'bad_request'
ERROR_CODES = (TIMEOUT, MODEL_ERROR, UNAVAILABLE, CANCELLED, BUSY, BAD_REQUEST)


class LLMError(RuntimeError):
    """A model call that did not produce an answer; `code` is one of ERROR_CODES."""

    def __init__(self, code: str, message: str):
        if code not in ERROR_CODES:
            raise ValueError(f'unknown LLMError code {code!r}')
        super().__init__(f'{code}: {message}')
        self.code = code
        self.message = message


class GrammarCompileError(LLMError):
    """The GBNF grammar or JSON schema of a request did not compile (a bad request)."""

    def __init__(self, message: str):
        super().__init__(BAD_REQUEST, message)


@dataclass
class Completion:
    """What one model call produced."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stop_reason: str = STOP_EOS
    ttft_s: float = 0.0        # time to first token
    total_s: float = 0.0
    # A scoring call (Backend.score) fills these instead of `text`: per continuation, the
    # sum of its tokens' log-probabilities after the prompt, and how many tokens it has.
    logprobs: list = field(default_factory=list)
    token_counts: list = field(default_factory=list)


# on_token receives each text piece as it is generated; returning False cancels the call. A
# backend that waits on another process (the llm node's client) also calls it with '' while
# no piece has come, so a caller can cancel during the prompt's reading.
TokenCallback = Callable[[str], 'bool | None']


class Backend(Protocol):
    """A language model: tokenize and complete."""

    n_ctx: int

    def tokenize(self, text: str) -> list[int]:
        """The model's own tokens for `text` (budgets are counted with these, never chars)."""

    def complete(self, prompt: str, *, max_tokens: int = 256, temperature: float = 0.8,
                 top_p: float = 0.95, top_k: int = 40, repeat_penalty: float = 1.1,
                 seed: int = -1, stop: Sequence[str] = (), json_schema: dict | None = None,
                 grammar: str | None = None,
                 on_token: TokenCallback | None = None,
                 avoid: Sequence[str] = ()) -> Completion:
        """Complete `prompt`; raise LLMError on failure. `avoid`: continuations not to
        write again (see `pieces_to_avoid`)."""

    def score(self, prompt: str, continuations: Sequence[str]) -> Completion:
        """How likely each continuation is after `prompt`: `Completion.logprobs[i]` is the sum
        of the log-probabilities of continuation i's tokens, `token_counts[i]` their number.
        Optional: a backend that cannot score raises LLMError(BAD_REQUEST)."""


def pieces_to_avoid(answer: str, avoid: Sequence[str], longest: int = 24) -> set[str]:
    """The texts a next token must not have: those that would keep `answer` (what was
    written so far) the beginning of one of `avoid`, leading whitespace aside. So a
    continuation avoided is left at its first token, and the answer goes its own way from
    there on: after "I think: Should I", with " put the red object in front of me?" avoided,
    " put" (and " p", " pu") cannot come first, " look" can; once the answer differs from an
    avoided text, that text bans nothing more.
    The small model given nearly the same diary wrote the same thought from the same opening
    cycle after cycle ("Should I put the red object in front of me?" six times in a 120 s
    sim), whatever the seed."""
    written = answer.lstrip()
    out: set[str] = set()
    for text in avoid:
        text = text.lstrip()
        if len(text) <= len(written) or not text.startswith(written):
            continue
        rest = text[len(written):]
        for k in range(1, min(longest, len(rest)) + 1):
            out.add(rest[:k])
            if not written and not answer:      # the first token may bring the space
                out.add(' ' + rest[:k])
    return out


class ScriptedBackend:
    """A backend that answers from a script: deterministic logic tests only.

    `script` is a list of answers used in turn (the last repeats once the list is spent) or a
    callable `prompt -> answer`. An answer that is an LLMError instance is raised instead.
    Tokens are whitespace-separated words, which is enough for budget logic under test.
    It also serves as the `llm` node's backend (`backend: scripted`), so whole node graphs can
    run on fixed answers; for that it offers the same `format_chat`, `model_name` and `close`
    as LlamaCppBackend.
    """

    model_name = 'scripted'

    def __init__(self, script, n_ctx: int = 4096,
                 clock: Callable[[], float] = time.monotonic,
                 scorer: Callable[[str, str], float] | None = None,
                 score_script: list | None = None):
        self.script = script
        # score_script: recorded scores ([logprobs, token counts] per call), used in turn (a
        # recorded run that decided by choosing replays exactly).
        self.score_script = list(score_script) if score_script else None
        self._score_index = 0
        # scorer(prompt, continuation) -> log-probability: lets deterministic tests drive the
        # chooser (Backend.score); without one this backend cannot score.
        self.scorer = scorer
        self.n_ctx = n_ctx
        self.clock = clock
        self.prompts: list[str] = []
        self.calls: list[dict] = []
        self._lock = threading.Lock()

    def tokenize(self, text: str, add_bos: bool = False) -> list[int]:
        return ([1] if add_bos else []) + [hash(w) & 0xFFFF for w in text.split()]

    def format_chat(self, messages: Sequence[dict]) -> str:
        """Chat messages as one prompt: `role: content` lines and an open assistant turn."""
        lines = [f"{m.get('role', 'user')}: {m.get('content', '')}" for m in messages]
        return '\n'.join(lines + ['assistant:'])

    def close(self) -> None:
        """Nothing to free (the same call as LlamaCppBackend's)."""

    def complete(self, prompt: str, *, max_tokens: int = 256, temperature: float = 0.8,
                 top_p: float = 0.95, top_k: int = 40, repeat_penalty: float = 1.1,
                 seed: int = -1, stop: Sequence[str] = (), json_schema: dict | None = None,
                 grammar: str | None = None, on_token: TokenCallback | None = None,
                 min_p: float = 0.05, deadline: float | None = None,
                 avoid: Sequence[str] = ()) -> Completion:
        # min_p, deadline and avoid are accepted for parity with LlamaCppBackend (avoid is
        # recorded); a script has no sampling and answers at once.
        t0 = self.clock()
        with self._lock:
            index = len(self.prompts)
            self.prompts.append(prompt)
            self.calls.append({'max_tokens': max_tokens, 'temperature': temperature,
                               'min_p': min_p,
                               'json_schema': json_schema, 'grammar': grammar,
                               'stop': list(stop), 'seed': seed, 'avoid': list(avoid)})
        if callable(self.script):
            answer = self.script(prompt)
        else:
            if not self.script:
                raise LLMError(MODEL_ERROR, 'the script is empty')
            answer = self.script[min(index, len(self.script) - 1)]
        if isinstance(answer, LLMError):
            raise answer
        words = answer.split(' ')
        if len(words) > max_tokens:
            words, reason = words[:max_tokens], STOP_LENGTH
        else:
            reason = STOP_EOS
        text = ''
        for i, word in enumerate(words):
            piece = word if i == 0 else ' ' + word
            if on_token is not None and on_token(piece) is False:
                return Completion(text, len(self.tokenize(prompt)), i, STOP_CANCELLED,
                                  0.0, self.clock() - t0)
            text += piece
        for s in stop:
            if s and s in text:
                text, reason = text[:text.index(s)], STOP_EOS
        return Completion(text, len(self.tokenize(prompt)), len(text.split()), reason, 0.0,
                          self.clock() - t0)

    def score(self, prompt: str, continuations: Sequence[str]) -> Completion:
        """Scores from `score_script` (in turn) or `scorer`; LLMError(BAD_REQUEST) without."""
        if self.score_script is not None:
            with self._lock:
                if self._score_index >= len(self.score_script):
                    raise LLMError(MODEL_ERROR, 'the recorded scores are spent')
                logprobs, counts = self.score_script[self._score_index]
                self._score_index += 1
            if len(logprobs) != len(continuations):
                raise LLMError(MODEL_ERROR, f'recorded {len(logprobs)} scores for '
                               f'{len(continuations)} continuations: the run diverged')
            return Completion('', len(self.tokenize(prompt)), 0, STOP_EOS, 0.0, 0.0,
                              [float(x) for x in logprobs], [int(x) for x in counts])
        if self.scorer is None:
            raise LLMError(BAD_REQUEST, 'this scripted backend has no scorer: it cannot score')
        t0 = self.clock()
        with self._lock:
            self.calls.append({'score': list(continuations)})
        logprobs = [float(self.scorer(prompt, c)) for c in continuations]
        return Completion('', len(self.tokenize(prompt)), 0, STOP_EOS, 0.0, self.clock() - t0,
                          logprobs, [max(1, len(c.split())) for c in continuations])


def load_script(path: str) -> list:
    """The answers of a script file (YAML or JSON: a list of strings, used in turn).

    Raises ValueError with the reason when the file is missing, unreadable or not a list of
    strings, so a misconfigured `llm` node fails its configure with one clear line.
    """
    import yaml
    try:
        with open(path, encoding='utf-8') as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise ValueError(f'cannot read the script file {path!r}: {exc.strerror}') from exc
    except yaml.YAMLError as exc:
        raise ValueError(f'the script file {path!r} is not YAML or JSON: {exc}') from exc
    if isinstance(data, dict):
        data = data.get('answers')
    if not isinstance(data, list) or not data or not all(isinstance(a, str) for a in data):
        raise ValueError(f'the script file {path!r} must hold a non-empty list of strings '
                         "(or a mapping with such a list under 'answers')")
    return data
