"""The fear node: serves fear/review_action with the FearAgent (fear/agent.py)."""

from dataclasses import dataclass, replace
import json
import threading

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, SetParametersResult

from maxim_common.diagnostics import Diagnostics
from maxim_common.futures import wait_for_future
from maxim_common.health import Health
from maxim_common.lifetime import run
from maxim_core.fear.agent import FearAgent, FearConfig, Verdict
from maxim_core.health import fear_health
from maxim_core.nodes.generate_client import GenerateBackend
from maxim_interfaces.srv import PredictOutcome, ReviewAction

MODES = ('passive', 'active', 'singularity', 'sim')
# Parameters settable at run time -> their FearNodeConfig field; every review reads them afresh.
RUNTIME = {'nac.block_value': 'nac_block_value', 'nac.block_confidence': 'nac_block_confidence',
           'nac.timeout_s': 'nac_timeout_s'}


@dataclass(frozen=True)
class FearNodeConfig:
    mode: str = 'passive'
    sandbox_root: str = ''
    write_roots: tuple = ()
    llm_review: bool = False
    llm_timeout_s: float = 10.0
    nac_block_value: float = 0.1
    nac_block_confidence: float = 0.85
    nac_timeout_s: float = 0.5


# -- conversions (fear's own; the package conversions.py belongs to the agent's wiring) -------
def verdict_to_response(verdict: Verdict, response: ReviewAction.Response):
    response.allowed = bool(verdict.allowed)
    response.layer = verdict.layer_code
    response.category = verdict.category
    response.reason = verdict.reason[:1000]
    response.risk = float(verdict.risk)
    response.error_code = ReviewAction.Response.ERROR_NONE
    if verdict.layer == 'fail_closed' and 'did not answer' in verdict.reason:
        response.error_code = ReviewAction.Response.ERROR_LLM_TIMEOUT
        response.error_msg = verdict.reason[:300]
    return response


def prediction_from_response(response) -> tuple[float, float] | None:
    """(value, confidence) from a PredictOutcome response; None when it knows nothing."""
    if response is None or not response.available or not response.known or \
            response.error_code != PredictOutcome.Response.ERROR_NONE:
        return None
    return float(response.value), float(response.confidence)


class FearNode(Node):
    """The safety gate every non-introspection tool call passes before it runs.

    The NAc layer asks memory for a prediction under the request's `context_key` (the key
    memory learned the tool's outcomes under); the `context` text goes to the LLM layer only.

    Parameters (read-only: they build the agents and the model client; settable at run
    time, `ros2 param set /fear nac.block_value 0.2`: the nac.* ones):
        mode (string): passive | active | singularity | sim; the default review mode (a
            request's own `mode` field overrides it when set).
        sandbox.root (string): the workspace; writes outside it are blocked ('' = only
            system paths count as outside).
        sandbox.write_roots (string): extra writable folders, comma-separated.
        llm_review.enabled (bool, false): ask the LLM about ambiguous calls.
        llm_review.timeout_s (double, 10.0): bound on that review; past it the call is blocked.
        nac.block_value (double, 0.1), nac.block_confidence (double, 0.85): the NAc rule.
        nac.timeout_s (double, 0.5): bound on memory/predict_outcome; past it the layer is
            skipped (and the reason says so).
    Publishers:
        diagnostics (diagnostic_msgs/DiagnosticArray, 1 Hz: reviews, blocked, helpers).
    Services:
        fear/review_action (maxim_interfaces/ReviewAction)
    Clients:
        memory/predict_outcome (maxim_interfaces/PredictOutcome)
        llm/generate (action maxim_interfaces/Generate), only with llm_review.enabled
    """

    def __init__(self, **kwargs):
        super().__init__('fear', **kwargs)
        unit = FloatingPointRange(from_value=0.0, to_value=1.0, step=0.0)
        positive = FloatingPointRange(from_value=0.01, to_value=600.0, step=0.0)
        p = self.declare_parameter
        cfg = FearNodeConfig(
            mode=p('mode', 'passive', ParameterDescriptor(
                description='Default review mode: ' + ', '.join(MODES), read_only=True)).value,
            sandbox_root=p('sandbox.root', '', ParameterDescriptor(
                description='Workspace folder; writes outside it are blocked',
                read_only=True)).value,
            write_roots=tuple(x.strip() for x in p('sandbox.write_roots', '',
                              ParameterDescriptor(description='Extra writable folders, '
                                                  'comma-separated', read_only=True)
                              ).value.split(',') if x.strip()),
            llm_review=p('llm_review.enabled', False, ParameterDescriptor(
                description='Ask the LLM about ambiguous calls', read_only=True)).value,
            llm_timeout_s=p('llm_review.timeout_s', 10.0, ParameterDescriptor(
                description='Bound on the LLM review (s); past it: blocked',
                floating_point_range=[positive], read_only=True)).value,
            nac_block_value=p('nac.block_value', 0.1, ParameterDescriptor(
                description='Block when the predicted value is below this',
                floating_point_range=[unit])).value,
            nac_block_confidence=p('nac.block_confidence', 0.85, ParameterDescriptor(
                description='... and the confidence above this',
                floating_point_range=[unit])).value,
            nac_timeout_s=p('nac.timeout_s', 0.5, ParameterDescriptor(
                description='Bound on memory/predict_outcome (s)',
                floating_point_range=[positive])).value,
        )
        if cfg.mode not in MODES:
            raise ValueError(f'fear: mode must be one of {MODES}, got {cfg.mode!r}')
        self.config = cfg
        self._clients_group = ReentrantCallbackGroup()
        self._predict = self.create_client(PredictOutcome, 'memory/predict_outcome',
                                           callback_group=self._clients_group)
        self._backend = (GenerateBackend(self, 'fear', self._clients_group,
                                         timeout_s=cfg.llm_timeout_s, server_wait_s=1.0)
                         if cfg.llm_review else None)
        self._agents: dict[str, FearAgent] = {}
        self._lock = threading.Lock()
        self.agent(cfg.mode)
        self.add_on_set_parameters_callback(self._check_params)
        self.add_post_set_parameters_callback(self._apply_params)
        self.create_service(ReviewAction, 'fear/review_action', self._on_review,
                            callback_group=MutuallyExclusiveCallbackGroup())
        self.reviews = self.blocked = 0
        self.diagnostics = Diagnostics(self, 'gate', self.health)

    def health(self) -> Health:
        b = self._backend
        return fear_health(self.config.mode, self.reviews, self.blocked,
                           self._predict.service_is_ready(), b is not None,
                           b is not None and b.ready())

    def agent(self, mode: str) -> FearAgent:
        """One FearAgent per review mode (the sandbox differs by mode)."""
        with self._lock:
            if mode not in self._agents:
                c = self.config
                self._agents[mode] = FearAgent(
                    FearConfig(mode=mode, sandbox_root=c.sandbox_root or None,
                               write_roots=c.write_roots, llm_review=c.llm_review,
                               llm_timeout_s=c.llm_timeout_s,
                               nac_block_value=c.nac_block_value,
                               nac_block_confidence=c.nac_block_confidence),
                    backend=self._backend, predict=self._predict_outcome)
            return self._agents[mode]

    def _check_params(self, params) -> SetParametersResult:
        """The NAc rule's values as the core checks them (the descriptors have checked the
        types, ranges and read-only)."""
        c = replace(self.config, **{RUNTIME[p.name]: p.value for p in params
                                    if p.name in RUNTIME})
        try:
            FearConfig(nac_block_value=c.nac_block_value,
                       nac_block_confidence=c.nac_block_confidence)
        except ValueError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _apply_params(self, params) -> None:
        """Swap the new values in, each config whole: a review under way reads the old one
        or the new one; agents built later take them from `self.config`."""
        changes = {RUNTIME[p.name]: p.value for p in params if p.name in RUNTIME}
        if not changes:
            return
        with self._lock:
            self.config = replace(self.config, **changes)
            rule = {k: v for k, v in changes.items() if k != 'nac_timeout_s'}
            for agent in self._agents.values():
                agent.config = replace(agent.config, **rule)
        self.get_logger().info('set ' + ', '.join(f'{p.name}={p.value}' for p in params))

    def _predict_outcome(self, tool: str, context: str) -> tuple[float, float] | None:
        if not self._predict.service_is_ready():
            return None
        future = self._predict.call_async(
            PredictOutcome.Request(tool_name=tool, context=context))
        if not wait_for_future(future, self.config.nac_timeout_s):
            future.cancel()
            return None
        return prediction_from_response(future.result())

    def _on_review(self, request: ReviewAction.Request, response: ReviewAction.Response):
        call = request.call
        mode = request.mode or self.config.mode
        if mode not in MODES:
            response.allowed = False
            response.layer = ReviewAction.Response.LAYER_FAIL_CLOSED
            response.reason = f'unknown mode {mode!r}: blocked to be safe'
            response.risk = 1.0
            response.error_code = ReviewAction.Response.ERROR_INVALID_REQUEST
            response.error_msg = response.reason
            return response
        try:
            args = json.loads(call.arguments_json or '{}')
        except (ValueError, RecursionError) as exc:   # also past the int or depth limit
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)[:80]
            response.allowed = False
            response.layer = ReviewAction.Response.LAYER_DETERMINISTIC
            response.reason = f'arguments are not valid JSON ({why}): blocked'
            response.risk = 1.0
            response.error_code = ReviewAction.Response.ERROR_INVALID_REQUEST
            response.error_msg = response.reason
            return response
        verdict = self.agent(mode).review(call.tool_name, args, request.context,
                                          introspection=call.introspection,
                                          context_key=request.context_key)
        self.reviews += 1
        if not verdict.allowed:
            self.blocked += 1
            self.get_logger().info(f'blocked {call.tool_name} ({verdict.layer}): '
                                   f'{verdict.reason[:160]}')
        return verdict_to_response(verdict, response)

    def quiesce(self) -> None:
        """Before the executor stops: a review waiting on the model is abandoned (the llm
        node may be stopping too; the review then fails closed)."""
        if self._backend is not None:
            self._backend.abort()

    def destroy_node(self):
        for agent in self._agents.values():
            agent.close()
        if self._backend is not None:
            self._backend.destroy()
        return super().destroy_node()


def main(args=None):
    run(FearNode, args, executor=lambda: MultiThreadedExecutor(num_threads=3))
