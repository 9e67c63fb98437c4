"""Maxim's body: camera, attention, head control and the simulated head."""
