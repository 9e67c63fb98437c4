"""The language model behind every part of Maxim that thinks: one backend protocol, a
llama.cpp implementation on a real GGUF, and a scripted one for deterministic tests."""

from maxim_core.llm.backend import Backend, Completion, LLMError, ScriptedBackend

__all__ = ['Backend', 'Completion', 'LLMError', 'ScriptedBackend']
