"""The llm node: the local language model (llama.cpp) behind everything that thinks."""

import threading
import time

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn

from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health
from maxim_common.lifetime import run
from maxim_common.params import declare_table
from maxim_core.conversions import (completion_to_result, error_to_result, goal_end,
                                    goal_to_request, tokenize_to_response)
from maxim_core.health import llm_health
from maxim_core.llm.backend import LLMError, ScriptedBackend, TIMEOUT
from maxim_core.llm.llama import LlamaCppBackend
from maxim_core.llm.model import ModelFileError
from maxim_core.llm.params import LLMParams, make_backend, PARAMS, read_params
from maxim_core.llm.queue import RequestQueue
from maxim_core.llm.trace import JsonlTrace
from maxim_interfaces.action import Generate
from maxim_interfaces.srv import Tokenize

# quiesce() waits this long at most (unless given less) for the execute callbacks in progress
# to return and the queue's worker to end, once the queue is closed (the callbacks poll their
# request every 50 ms, and a closed queue has ended them all).
QUIESCE_TIMEOUT_S = 2.0


class LLMNode(LifecycleNode):
    """Loads a GGUF on configure and serves generation and tokenization while active.

    Parameters: llm/params.py (PARAMS; described there, read at configure): backend,
        scripted.script_file, model_path, model_cache_dir, n_ctx, n_threads, n_threads_batch,
        n_batch, score_sequences, queue.*, generate.* (the defaults of a goal), trace_path.
    Publishers:
        diagnostics (diagnostic_msgs/DiagnosticArray, 1 Hz: lifecycle state, model loaded,
            queue depth).
    Services:
        llm/tokenize (maxim_interfaces/Tokenize)
    Actions:
        llm/generate (maxim_interfaces/Generate): streamed text as feedback, cancellable;
        one inference at a time, the rest wait in a bounded queue.
    On a failed configure, `last_error` holds a one-line reason.
    `progress(stage, fraction)` (optional) reports the first-use model assembly.
    `backend` (optional) is a ready backend object (e.g. a ScriptedBackend with a callable
    script) used instead of the `backend` parameter, for tests of whole node graphs.
    `autostart` (default false) configures and activates at construction; otherwise a
    lifecycle manager (launch files, the runner) or `ros2 lifecycle set` does.
    """

    def __init__(self, progress=None, backend=None, autostart=False, **kwargs):
        super().__init__('llm', **kwargs)
        declare_table(self, PARAMS)
        self.last_error = ''
        self._progress = progress
        self._given_backend = backend
        self._backend: LlamaCppBackend | ScriptedBackend | None = None
        self._queue: RequestQueue | None = None
        self._trace: JsonlTrace | None = None
        self._active = False
        self._params: LLMParams | None = None
        self._executing = 0                     # goals whose execute callback is running
        self._executed = threading.Condition()  # notified when one returns
        group = ReentrantCallbackGroup()
        self._action = ActionServer(
            self, Generate, 'llm/generate', execute_callback=self._execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            cancel_callback=lambda _handle: CancelResponse.ACCEPT, callback_group=group)
        self._tokenize = self.create_service(Tokenize, 'llm/tokenize', self._on_tokenize,
                                             callback_group=group)
        self.diagnostics = Diagnostics(self, 'model', self.health)
        if autostart and self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
            self.trigger_activate()

    def health(self) -> Health:
        queue, params = self._queue, self._params
        state = 'active' if self._active else (
            'inactive' if self._backend is not None else 'unconfigured')
        return llm_health(state, self._model, queue.pending if queue is not None else 0,
                          params.max_pending if params is not None else 0,
                          queue is not None and queue.running is not None, self.last_error)

    # -- lifecycle ---------------------------------------------------------------------------
    def _report(self, stage: str, fraction: float) -> None:
        if self._progress is not None:
            self._progress(stage, fraction)

    def on_configure(self, state) -> TransitionCallbackReturn:
        self.last_error = ''
        try:
            params = read_params({name: self.get_parameter(name).value for name in PARAMS})
            if self._given_backend is not None:
                backend, path = self._given_backend, 'the given backend'
            else:
                backend, path = make_backend(params, self._report)
        except (ModelFileError, LLMError, ValueError) as exc:
            self.last_error = str(exc)
            self.get_logger().error(self.last_error)
            return TransitionCallbackReturn.FAILURE
        self._params, self._backend = params, backend
        try:
            self._trace = JsonlTrace(params.trace_path) if params.trace_path else None
        except OSError as exc:
            self.get_logger().error(f'no llm trace: {exc}')
            self._trace = None
        self._queue = RequestQueue(backend, params.max_pending, params.wait_timeout_s,
                                   trace=self._trace)
        self.get_logger().info(f'loaded {path} (n_ctx {backend.n_ctx})')
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        self._active = True
        return super().on_activate(state)

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._active = False
        return super().on_deactivate(state)

    def _release(self) -> None:
        self._active = False
        if self._queue is not None:
            self._queue.close()
            self._queue = None
        if self._backend is not None:
            self._backend.close()
            self._backend = None
        if self._trace is not None:
            self._trace.close()
            self._trace = None

    def quiesce(self, timeout_s: float = QUIESCE_TIMEOUT_S) -> None:
        """Stop serving before the executor stops (the in-process runner and the node lifetime
        call it): waiting requests fail and a running one is cancelled, and it returns once
        every goal's execute callback has returned and the queue's worker has ended, all
        within one `timeout_s`, so each result is set while the executor can still send it. A
        result set on an executor already shut down fails inside rclpy (its done callbacks
        cannot be scheduled). Everything is told to stop first, then waited for: the waits
        share the deadline rather than follow each other's timeouts."""
        deadline = time.monotonic() + timeout_s
        self._active = False
        # Kept: destroy_node's release joins the worker before it frees the model, should a
        # generation outlast this wait.
        queue = self._queue
        if queue is not None:
            queue.close(timeout_s=0.0)          # fail, cancel, wake the worker: no wait yet
        with self._executed:
            self._executed.wait_for(lambda: self._executing == 0,
                                    max(0.0, deadline - time.monotonic()))
        if queue is not None:
            queue.close(timeout_s=max(0.0, deadline - time.monotonic()))

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def destroy_node(self):
        self._release()
        self._action.destroy()
        return super().destroy_node()

    # -- serving -----------------------------------------------------------------------------
    @property
    def _model(self) -> str:
        return self._backend.model_name if self._backend is not None else ''

    def _inactive_reason(self) -> str:
        """Why nothing is served: not active, and the configure error if there was one."""
        if self.last_error:
            return f'the llm node is not active: configure failed: {self.last_error}'
        return 'the llm node is not active'

    def _on_tokenize(self, request, response):
        backend = self._backend
        if not self._active or backend is None:
            response.error_code = response.ERROR_MODEL_NOT_LOADED
            response.error_msg = self._inactive_reason()
            return response
        try:
            tokens = backend.tokenize(request.text, add_bos=request.add_bos)
        except LLMError as exc:
            response.error_code = response.ERROR_INVALID_REQUEST
            response.error_msg = exc.message
            return response
        return tokenize_to_response(tokens, request.count_only, response, backend.n_ctx,
                                    backend.model_name)

    def _execute(self, goal_handle):
        with self._executed:
            self._executing += 1
        try:
            return self._serve(goal_handle)
        finally:
            with self._executed:
                self._executing -= 1
                self._executed.notify_all()

    def _serve(self, goal_handle):
        result = Generate.Result()
        queue, backend = self._queue, self._backend
        if not self._active or queue is None or backend is None:
            goal_handle.abort()
            return error_to_result(LLMError('unavailable', self._inactive_reason()),
                                   result, self._model)
        produced = [0]

        def on_token(piece: str):
            produced[0] += 1
            goal_handle.publish_feedback(Generate.Feedback(text_delta=piece,
                                                           completion_tokens=produced[0]))

        try:
            request = goal_to_request(goal_handle.request, self._params.defaults,
                                      backend.format_chat, on_token)
            handle = queue.submit(request)
        except LLMError as exc:
            goal_handle.abort()
            return error_to_result(exc, result, self._model)
        # Every wait is bounded: the request's own deadline, plus a margin for the last token.
        if not handle.wait_bounded(request.timeout_s + 10.0,
                                   lambda: goal_handle.is_cancel_requested):
            goal_handle.abort()
            return error_to_result(LLMError(TIMEOUT, 'the request did not end in time'),
                                   result, self._model, handle.queue_wait_s)
        try:
            completion = handle.result(0.0)
        except LLMError as exc:
            error_to_result(exc, result, self._model, handle.queue_wait_s)
        else:
            completion_to_result(completion, result, self._model, handle.queue_wait_s)
        # canceled (on the client's request), abort or succeed
        getattr(goal_handle, goal_end(result, goal_handle.is_cancel_requested))()
        return result


def main(args=None):
    # Unconfigured until a lifecycle manager (the launch files start one) or
    # `ros2 lifecycle set /llm configure` and `... activate` bring it up.
    run(LLMNode, args, executor=lambda: MultiThreadedExecutor(num_threads=4))


if __name__ == '__main__':
    main()
