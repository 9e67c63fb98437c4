"""The interactive thinking panel: the robot's thought stream in a terminal UI."""
