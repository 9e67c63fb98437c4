"""Launch files, parameters, URDF and rviz config that compose the whole robot."""
