"""Maxim's memory: episodic, semantic, mathematical, causal, temporal and pain memory."""
