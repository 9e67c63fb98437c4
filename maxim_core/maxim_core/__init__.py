"""Maxim's mind: the LLM, prompts, deliberation, tools, safety, idle introspection and simulation."""
