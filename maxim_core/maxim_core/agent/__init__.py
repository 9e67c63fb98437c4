"""The agent: the loop that closes perceive -> decide -> act -> evaluate."""
