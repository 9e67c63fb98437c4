"""The llm node's parameters, the frozen set they are read into at configure, and the backend
they choose (plain Python, no rclpy: the tests and the benches build the same backend).

Parameters:
    backend (str, 'llama' | 'scripted'), scripted.script_file (str, ''),
    model_path (str, ''), model_cache_dir (str, ''), n_ctx (int, 4096),
    n_threads (int, 2), n_threads_batch (int, 0: as n_threads), n_batch (int, 512),
    score_sequences (int, 32), queue.max_pending (int, 4),
    queue.wait_timeout_s (double, 30.0), generate.max_tokens (int, 256),
    generate.temperature (0.8), generate.top_p (0.95), generate.top_k (40),
    generate.min_p (0.05), generate.repeat_penalty (1.1), generate.timeout_s (120.0),
    trace_path (str, '').
"""

from dataclasses import dataclass
from typing import Callable

from maxim_core.llm.backend import load_script, ScriptedBackend
from maxim_core.llm.llama import LlamaCppBackend
from maxim_core.llm.model import resolve_model

# name: (default, description, range: none here), declared in this order (maxim_common.params).
PARAMS = {
    'backend': ('llama', "'llama' (a GGUF through llama.cpp) or 'scripted' (fixed answers "
                         'from scripted.script_file, for tests and replays)', None),
    'scripted.script_file': ('', 'YAML/JSON list of answers used in turn (backend: scripted)',
                             None),
    'model_path': ('', "GGUF file; '' = the embedded gemma-3-270m Q4_K_M", None),
    'model_cache_dir': ('', "where the embedded model is assembled; '' = "
                            '$MAXIM_MODEL_CACHE or ~/.cache/maxim/models', None),
    'n_ctx': (4096, 'context length in tokens', None),
    'n_threads': (2, 'CPU threads for llama.cpp (decoding: one token at a time)', None),
    'n_threads_batch': (0, 'CPU threads for reading a prompt (0: as n_threads)', None),
    'n_batch': (512, 'prompt evaluation batch size', None),
    'score_sequences': (32, 'sequences of the KV cache, for scoring candidates side by side '
                            'in one batch (1: one after another)', None),
    'queue.max_pending': (4, 'requests that may wait; more are refused (ERROR_QUEUE_FULL)',
                          None),
    'queue.wait_timeout_s': (30.0, 'longest wait in the queue before ERROR_QUEUE_FULL', None),
    'generate.max_tokens': (256, 'default max_tokens', None),
    'generate.temperature': (0.8, 'default temperature', None),
    'generate.top_p': (0.95, 'default top_p', None),
    'generate.top_k': (40, 'default top_k', None),
    'generate.min_p': (0.05, 'default min_p', None),
    'generate.repeat_penalty': (1.1, 'default repeat penalty', None),
    'generate.timeout_s': (120.0, 'default bound on queue wait + inference', None),
    'trace_path': ('', "a JSON-lines record of every call served ('' = none; for benches)",
                   None),
}


@dataclass(frozen=True)
class LLMParams:
    backend: str
    script_file: str
    model_path: str
    model_cache_dir: str
    n_ctx: int
    n_threads: int
    n_batch: int
    max_pending: int
    wait_timeout_s: float
    defaults: dict
    trace_path: str = ''
    score_sequences: int = 32
    n_threads_batch: int = 0


def read_params(p: dict) -> LLMParams:
    """The parameters from their values by name; `defaults` are the generate.* ones."""
    defaults = {k.split('.', 1)[1]: v for k, v in p.items() if k.startswith('generate.')}
    return LLMParams(str(p['backend']), str(p['scripted.script_file']),
                     str(p['model_path']), str(p['model_cache_dir']), int(p['n_ctx']),
                     int(p['n_threads']), int(p['n_batch']), int(p['queue.max_pending']),
                     float(p['queue.wait_timeout_s']), defaults, str(p['trace_path']),
                     int(p['score_sequences']), int(p['n_threads_batch']))


def make_backend(params: LLMParams, report: Callable[[str, float], None] | None = None):
    """(backend, what it loaded) that `params.backend` names: a ScriptedBackend on
    scripted.script_file, or a GGUF through llama.cpp (`report(stage, fraction)`: the
    first-use model assembly). ModelFileError, LLMError or ValueError: why not, in one line."""
    if params.backend == 'scripted':
        if not params.script_file:
            raise ValueError("backend 'scripted' needs scripted.script_file")
        return (ScriptedBackend(load_script(params.script_file), n_ctx=params.n_ctx),
                params.script_file)
    if params.backend == 'llama':
        path = resolve_model(params.model_path, params.model_cache_dir or None, report)
        return LlamaCppBackend(path, n_ctx=params.n_ctx, n_threads=params.n_threads,
                               n_batch=params.n_batch, score_sequences=params.score_sequences,
                               n_threads_batch=params.n_threads_batch), path
    raise ValueError(f"backend must be 'llama' or 'scripted', not {params.backend!r}")
