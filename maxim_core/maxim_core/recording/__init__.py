"""Session recording to MCAP (what rosbag2 and Foxglove open) and reports made from it."""
