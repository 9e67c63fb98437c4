"""A record of every model call the llm node served, one JSON line each (`trace_path`).

What it is for: measuring what sharing the machine costs. `bench/cognition/live.py` runs the
robot with a trace, then replays the agent's calls of each deliberation cycle, in the same
order and with the same prompts, on the same model with nothing else running: the same
cycle alone. A line holds the call (prompt, sampling parameters or candidates), what it
produced (text and token count) and its wall times; the token callback is not data and is
left out.
"""

import json
import logging
import threading
import time

log = logging.getLogger(__name__)


def call_record(request, result, started: float, ended: float) -> dict:
    """A served request as a JSON-able dict (wall times in seconds since the epoch)."""
    params = {k: v for k, v in request.params.items() if k != 'on_token'}
    return {'t0': started, 't1': ended, 'client': request.client,
            'request_id': request.request_id, 'prompt': request.prompt, 'params': params,
            'candidates': list(request.candidates),
            'prompt_tokens': int(getattr(result, 'prompt_tokens', 0) or 0),
            'cached_tokens': int(getattr(result, 'cached_tokens', 0) or 0),
            # What a completion produced: a replay decodes the same text again, so the time
            # alone is for the same tokens, not for a new sample of another length.
            'completion_tokens': int(getattr(result, 'completion_tokens', 0) or 0),
            'text': '' if request.candidates else str(getattr(result, 'text', '') or '')}


class JsonlTrace:
    """Append records to a file, one JSON line each, from any thread. A file that cannot be
    written is reported once and the trace stops; the calls it records go on regardless."""

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        self._file = open(path, 'a', encoding='utf-8')    # noqa: SIM115 - closed by close()

    def __call__(self, record: dict) -> None:
        with self._lock:
            if self._file is None:
                return
            try:
                self._file.write(json.dumps(record) + '\n')
                self._file.flush()
            except (OSError, TypeError, ValueError) as exc:
                log.error('the llm trace %s stops: %s', self.path, exc)
                self._file.close()
                self._file = None

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def wall() -> float:
    return time.time()
