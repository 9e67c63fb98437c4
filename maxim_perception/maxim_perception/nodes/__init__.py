"""ROS 2 nodes of maxim_perception: thin translators around the pure core."""
