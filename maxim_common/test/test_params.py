"""Parameters declared from a table: the descriptors made of (low, high) ranges, and the values
declared on a node (its declare_parameter played by a stand-in: no rclpy.init)."""

from rcl_interfaces.msg import ParameterDescriptor

from maxim_common.params import declare_table, descriptor


def test_a_pair_of_ints_is_an_integer_range_and_anything_else_a_float_range():
    d = descriptor('IDs', (0, 252), read_only=True)
    assert d.read_only and d.description == 'IDs'
    assert (d.integer_range[0].from_value, d.integer_range[0].to_value,
            d.integer_range[0].step) == (0, 252, 1)
    assert not d.floating_point_range
    f = descriptor('a rate', (0.1, 100.0))
    assert (f.floating_point_range[0].from_value, f.floating_point_range[0].to_value) == (
        0.1, 100.0)
    assert not f.read_only and not f.integer_range
    assert descriptor('a name', dynamic_typing=True).dynamic_typing


class StandIn:
    def __init__(self, overrides):
        self.overrides, self.declared = overrides, []

    def declare_parameter(self, name, default, desc: ParameterDescriptor):
        self.declared.append((name, desc))

        class Value:
            value = self.overrides.get(name, default)
        return Value


def test_a_table_is_declared_in_order_with_its_extra_fields():
    table = {'rate_hz': (50.0, 'Control rate', (1.0, 1000.0)),
             'device': ('', 'A path or an index', None, {'dynamic_typing': True}),
             'ids': (1, 'An ID', (0, 252))}
    node = StandIn({'device': 2})
    values = declare_table(node, table, read_only=True)
    assert values == {'rate_hz': 50.0, 'device': 2, 'ids': 1}
    assert [n for n, _ in node.declared] == ['rate_hz', 'device', 'ids']
    descs = dict(node.declared)
    assert all(d.read_only for d in descs.values())
    assert descs['device'].dynamic_typing and not descs['rate_hz'].dynamic_typing
