"""What every Maxim package shares, as nav2_util is for navigation2: one copy of each helper.

maxim_core, maxim_memory and maxim_perception never import each other; each may import this
package, and this package imports none of them. Its modules:

- lifetime: how a node process starts and stops (`run(make_node)`);
- throttle: rate-limited log lines that count what they held back, and Python logging on a
  node's logger (no rclpy);
- qos: the named QoS profiles of Maxim's topics;
- health: a component's health as plain data (no rclpy, no messages);
- diagnostics: health as diagnostic_msgs and the `diagnostics` publisher of a node;
- conversions: header stamps, any message as plain values (and back), joints of a JointState
  by name;
- params: parameters declared from a table of defaults, descriptions and (low, high) ranges;
- errors: the ToolResult error codes, kept numeric (no message import);
- futures: waiting on an rclpy future from a worker thread (no rclpy).
"""
