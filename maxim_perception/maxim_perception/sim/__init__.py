"""The simulated head: a MuJoCo pan/tilt with a camera in a small scene (no ROS here)."""
