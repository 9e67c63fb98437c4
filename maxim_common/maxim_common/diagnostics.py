"""Publishes a node's health on `diagnostics` (diagnostic_msgs/DiagnosticArray) once a second.

A node makes one `Diagnostics(node, component, build)`; `build` returns a Health from the
numbers the node keeps (a pure builder in its package's health.py). The status is named
'<node name>: <component>', which `maxim check` reads to tell the nodes apart.
"""

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from maxim_common.health import ERROR, Health


def health_to_status(health: Health, name: str) -> DiagnosticStatus:
    """A node's Health as a DiagnosticStatus named '<node>: <component>'."""
    return DiagnosticStatus(
        level=bytes([health.level]), name=name, message=health.message[:1000],
        hardware_id=health.hardware_id,
        values=[KeyValue(key=str(k), value=str(v)) for k, v in health.values.items()])


class Diagnostics:
    """A `diagnostics` publisher and its timer; `publish()` also reports at once."""

    def __init__(self, node, component: str, build, period_s: float | None = 1.0,
                 callback_group=None):
        self._node, self._component, self._build = node, component, build
        self._pub = node.create_publisher(DiagnosticArray, 'diagnostics', 10)
        # period_s None: the node publishes from a timer of its own.
        self._timer = (node.create_timer(period_s, self.publish, callback_group=callback_group)
                       if period_s else None)

    def health(self) -> Health:
        try:
            return self._build()
        except (AttributeError, KeyError, TypeError, ValueError, RuntimeError) as exc:
            # A node part-way through start-up or shutdown; say so rather than go silent.
            return Health(ERROR, f'health unavailable: {type(exc).__name__}: {exc}')

    def status(self) -> DiagnosticStatus:
        return health_to_status(self.health(), f'{self._node.get_name()}: {self._component}')

    def publish(self) -> None:
        msg = DiagnosticArray(status=[self.status()])
        msg.header.stamp = self._node.get_clock().now().to_msg()
        self._pub.publish(msg)
