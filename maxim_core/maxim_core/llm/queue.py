"""A bounded request queue in front of one Backend: one inference at a time.

Several parts of the robot ask the model at once (deliberation, the fear review, idle
thought). A single worker thread runs one request at a time; the others wait in FIFO order,
at most `max_pending` of them (more is a `QueueFullError` at once, not a growing backlog), and
none longer than `wait_timeout_s` (then `LLMError(BUSY)`). A request's own `timeout_s` bounds
queue wait plus inference (then `LLMError(TIMEOUT)`, the partial answer on `.partial`). Queued
or running requests can be cancelled. Pure Python: tested with the ScriptedBackend.
"""

import collections
from dataclasses import dataclass, field
import threading
import time
from typing import Callable

from maxim_core.llm.backend import (BAD_REQUEST, BUSY, CANCELLED, Completion, LLMError,
                                    MODEL_ERROR, STOP_CANCELLED, TIMEOUT, TokenCallback,
                                    UNAVAILABLE)
from maxim_core.llm.trace import call_record, wall

QUEUED, RUNNING, DONE, FAILED = 'queued', 'running', 'done', 'failed'
_SLICE_S = 0.05   # real-time granularity of waits (expiry is judged on the injected clock)


class QueueFullError(LLMError):
    """Too many requests are waiting; try later."""

    def __init__(self, message: str):
        super().__init__(BUSY, message)


@dataclass
class GenerateRequest:
    """One model call: the prompt and the keyword arguments of `Backend.complete`."""

    prompt: str
    params: dict = field(default_factory=dict)
    on_token: TokenCallback | None = None
    request_id: str = ''
    client: str = ''
    timeout_s: float = 0.0        # queue wait + inference; 0 = no bound beyond the wait
    candidates: tuple = ()        # when given: score these continuations (Backend.score)


class RequestHandle:
    """A submitted request: wait for its result, or cancel it."""

    def __init__(self, request: GenerateRequest, submitted: float, wait_deadline: float,
                 deadline: float | None):
        self.request = request
        self.submitted = submitted
        self.wait_deadline = wait_deadline
        self.deadline = deadline
        self.state = QUEUED
        self.queue_wait_s = 0.0
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._result: Completion | None = None
        self._error: LLMError | None = None
        self._queue: 'RequestQueue | None' = None

    def cancel(self) -> None:
        """Cancel: a queued request fails with CANCELLED, a running one stops at its next
        token and returns what it has with stop_reason 'cancelled'."""
        self._cancel.set()
        if self._queue is not None:
            self._queue._drop_if_queued(self, LLMError(CANCELLED, 'cancelled while queued'))

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` real seconds for the end; True when done."""
        if self._queue is not None:
            self._queue.expire()
        return self._done.wait(max(0.0, timeout))

    def wait_bounded(self, timeout_s: float, cancel_requested: Callable[[], bool]) -> bool:
        """Wait for the end, at most `timeout_s` real seconds, cancelling the request as soon
        as `cancel_requested()` says so (asked every 50 ms); False when the time ran out (the
        request is then cancelled)."""
        give_up = time.monotonic() + timeout_s
        while not self.wait(_SLICE_S):
            if cancel_requested():
                self.cancel()
            if time.monotonic() > give_up:
                self.cancel()
                return False
        return True

    def result(self, timeout: float | None = None) -> Completion:
        """The Completion; raises the request's LLMError, or LLMError(TIMEOUT) if `timeout`
        (real seconds) passes first (the request keeps its place: call again or cancel)."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self._done.is_set():
            if self._queue is not None:
                self._queue.expire()
            remaining = _SLICE_S if end is None else min(_SLICE_S, end - time.monotonic())
            if remaining <= 0:
                raise LLMError(TIMEOUT, f'no result within {timeout:.1f} s')
            self._done.wait(remaining)
        if self._error is not None:
            raise self._error
        return self._result

    def _finish(self, result: Completion | None, error: LLMError | None) -> None:
        self._result, self._error = result, error
        self.state = DONE if error is None else FAILED
        self._done.set()


class RequestQueue:
    """One worker, FIFO, bounded: `submit(request) -> RequestHandle`."""

    def __init__(self, backend, max_pending: int = 4, wait_timeout_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic,
                 trace: Callable[[dict], None] | None = None):
        if max_pending < 1 or wait_timeout_s <= 0:
            raise ValueError('max_pending must be >= 1 and wait_timeout_s > 0')
        self.backend = backend
        self.max_pending = max_pending
        self.wait_timeout_s = wait_timeout_s
        self.clock = clock
        self.trace = trace             # gets each served call (llm/trace.py), when given
        self._pending: collections.deque[RequestHandle] = collections.deque()
        self._running: RequestHandle | None = None
        self._cond = threading.Condition()
        self._closed = False
        self._worker = threading.Thread(target=self._work, name='llm-queue', daemon=True)
        self._worker.start()

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._pending)

    @property
    def running(self) -> RequestHandle | None:
        return self._running

    def submit(self, request: GenerateRequest) -> RequestHandle:
        """Queue `request`; raises QueueFullError when max_pending requests already wait."""
        if not isinstance(request, GenerateRequest):
            raise LLMError(BAD_REQUEST, f'expected a GenerateRequest, got {type(request)}')
        now = self.clock()
        deadline = now + request.timeout_s if request.timeout_s > 0 else None
        wait_deadline = now + self.wait_timeout_s
        if deadline is not None:
            wait_deadline = min(wait_deadline, deadline)
        handle = RequestHandle(request, now, wait_deadline, deadline)
        handle._queue = self
        with self._cond:
            if self._closed:
                raise LLMError(UNAVAILABLE, 'the request queue is closed')
            if len(self._pending) >= self.max_pending:
                raise QueueFullError(f'{len(self._pending)} requests already wait '
                                     f'(max {self.max_pending})')
            self._pending.append(handle)
            self._cond.notify_all()
        return handle

    def expire(self) -> None:
        """Fail the queued requests whose wait (or whole) deadline has passed."""
        now = self.clock()
        expired = []
        with self._cond:
            for handle in list(self._pending):
                if now >= handle.wait_deadline:
                    self._pending.remove(handle)
                    expired.append(handle)
        for handle in expired:
            handle.queue_wait_s = now - handle.submitted
            if handle.deadline is not None and now >= handle.deadline:
                error = LLMError(TIMEOUT, f'timed out after {handle.queue_wait_s:.1f} s in '
                                 f'the queue')
            else:
                error = LLMError(BUSY, f'waited {handle.queue_wait_s:.1f} s in the queue; '
                                 f'the model is busy')
            handle._finish(None, error)

    def _drop_if_queued(self, handle: RequestHandle, error: LLMError) -> None:
        with self._cond:
            if handle not in self._pending:
                return
            self._pending.remove(handle)
        handle.queue_wait_s = self.clock() - handle.submitted
        handle._finish(None, error)

    def close(self, timeout_s: float = 5.0) -> None:
        """Fail what waits, cancel what runs, stop the worker (bounded wait)."""
        with self._cond:
            self._closed = True
            dropped = list(self._pending)
            self._pending.clear()
            running = self._running
            self._cond.notify_all()
        for handle in dropped:
            handle._finish(None, LLMError(UNAVAILABLE, 'the request queue closed'))
        if running is not None:
            running._cancel.set()
        self._worker.join(timeout_s)

    # -- worker ------------------------------------------------------------------------------
    def _next(self) -> RequestHandle | None:
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait(_SLICE_S * 4)
            if self._closed:
                return None
        self.expire()
        with self._cond:
            if not self._pending:
                return None
            handle = self._pending.popleft()
            self._running = handle
            handle.state = RUNNING
        return handle

    def _work(self) -> None:
        while not self._closed:
            handle = self._next()
            if handle is None:
                continue
            try:
                self._run(handle)
            finally:
                self._running = None

    def _run(self, handle: RequestHandle) -> None:
        request = handle.request
        start = self.clock()
        handle.queue_wait_s = start - handle.submitted
        timed_out = threading.Event()

        def on_token(piece: str):
            if handle._cancel.is_set():
                return False
            if handle.deadline is not None and self.clock() >= handle.deadline:
                timed_out.set()
                return False
            if request.on_token is not None:
                return request.on_token(piece)
            return None

        started = wall()
        try:
            if request.candidates:
                result = self.backend.score(request.prompt, list(request.candidates))
            else:
                result = self.backend.complete(request.prompt, on_token=on_token,
                                               **request.params)
        except LLMError as exc:
            handle._finish(None, exc)
            return
        except (TypeError, ValueError) as exc:   # a bad keyword or value in params
            handle._finish(None, LLMError(BAD_REQUEST, f'{type(exc).__name__}: {exc}'))
            return
        except (RuntimeError, OSError, MemoryError) as exc:
            handle._finish(None, LLMError(MODEL_ERROR, f'{type(exc).__name__}: {exc}'))
            return
        if timed_out.is_set() and result.stop_reason == STOP_CANCELLED:
            error = LLMError(TIMEOUT, f'no complete answer within {request.timeout_s:.1f} s')
            error.partial = result
            handle._finish(None, error)
            return
        if self.trace is not None:
            self.trace(call_record(request, result, started, wall()))
        handle._finish(result, None)
