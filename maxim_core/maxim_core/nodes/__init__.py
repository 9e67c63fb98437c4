"""ROS 2 nodes of maxim_core: thin translators around the pure core."""
