"""Named QoS profiles of Maxim's topics (STYLE.md: explicit, in one place)."""

from rclpy.qos import (DurabilityPolicy, HistoryPolicy, qos_profile_sensor_data, QoSProfile,
                       ReliabilityPolicy)

# Camera images and other high-rate sensor streams: best effort, keep the newest.
SENSOR = qos_profile_sensor_data

# Events that must not be lost (thoughts, tool results, episodes, pain).
EVENTS = QoSProfile(depth=100, history=HistoryPolicy.KEEP_LAST,
                    reliability=ReliabilityPolicy.RELIABLE,
                    durability=DurabilityPolicy.VOLATILE)

# Latched state: a late subscriber gets the last value (attention state, head state).
LATCHED = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                     reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)

# Commands at control rate: reliable, only the newest matters.
COMMANDS = QoSProfile(depth=5, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)

# Sensor data where only the newest sample matters (attention's camera frames): a deeper
# queue hands a slow reader frames that are already stale (measured: with the whole 640x480
# stream delivered, frame-to-attention p95 went to 140 ms with the default depth of 5).
SENSOR_LATEST = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                           reliability=ReliabilityPolicy.BEST_EFFORT,
                           durability=DurabilityPolicy.VOLATILE)

# Audio blocks as a microphone driver sends them (best effort, matching any publisher), with
# room for a few seconds of 32 ms blocks while a subscriber's executor is busy: a lost block
# is a lost word (the hearing node's audio topic).
AUDIO = QoSProfile(depth=200, history=HistoryPolicy.KEEP_LAST,
                   reliability=ReliabilityPolicy.BEST_EFFORT,
                   durability=DurabilityPolicy.VOLATILE)

# joint_states from the simulated head: reliable, so robot_state_publisher and rviz (reliable
# subscribers) hear it.
JOINT_STATES = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                          reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.VOLATILE)

# Sim time on `clock`: reliable, only the newest matters.
CLOCK = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                   reliability=ReliabilityPolicy.RELIABLE,
                   durability=DurabilityPolicy.VOLATILE)
