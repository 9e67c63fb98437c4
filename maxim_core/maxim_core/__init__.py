"""Maxim's mind: the LLM, prompts, deliberation, tools, safety, idle and simulation."""
