"""ROS 2 nodes of maxim_memory: thin translators around the pure core."""
