"""The error codes of a tool call: maxim_interfaces/msg/ToolResult.msg's ERROR_* values, kept
numeric so a pure core needs no message import."""

ERROR_NONE = 0
ERROR_UNKNOWN_TOOL = 1
ERROR_INVALID_ARGUMENTS = 2
ERROR_INACTIVE_TOOL = 3
ERROR_BLOCKED = 4
ERROR_EXECUTION = 5
ERROR_TIMEOUT = 6
ERROR_VERIFICATION_FAILED = 7
ERROR_UNAVAILABLE = 8
