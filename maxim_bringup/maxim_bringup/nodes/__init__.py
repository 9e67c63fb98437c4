"""ROS 2 nodes of maxim_bringup: thin translators around the pure core."""
