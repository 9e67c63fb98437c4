"""Stamps, messages as plain values, joints by name and health as a DiagnosticStatus (no ROS
graph, no rclpy.init)."""

import math

import pytest

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus
from sensor_msgs.msg import JointState

from maxim_common.conversions import (fill_msg, joint_values, msg_to_dict, stamp_age_s,
                                      stamp_to_seconds)
from maxim_common.diagnostics import health_to_status
from maxim_common.health import ERROR, Health, not_ready, WARN


@pytest.mark.parametrize('sec, nanosec', [(0, 0), (1, 500_000_000), (12, 250_000_000),
                                          (1_700_000_000, 123_456_789), (3, 999_999_999)])
def test_a_stamp_is_its_seconds(sec, nanosec):
    seconds = stamp_to_seconds(Time(sec=sec, nanosec=nanosec))
    assert isinstance(seconds, float)
    assert seconds == pytest.approx(sec + nanosec / 1e9, abs=1e-9)


def test_an_unset_stamp_is_zero():
    assert stamp_to_seconds(JointState().header.stamp) == 0.0


def test_a_message_becomes_plain_values():
    msg = JointState(name=['a', 'b'], position=[1.0, 2.0])
    msg.header.stamp = Time(sec=4, nanosec=500_000_000)
    d = msg_to_dict(msg)
    assert d['name'] == ['a', 'b'] and d['position'] == [1.0, 2.0] and d['velocity'] == []
    assert d['header']['stamp'] == {'sec': 4, 'nanosec': 500_000_000}


def test_joints_are_read_by_name_in_any_order():
    names, pos = ['wheel', 'tilt', 'pan'], [9.0, -0.2, 0.5]
    assert joint_values(names, pos, ('pan', 'tilt')) == (0.5, -0.2)
    assert joint_values(names, pos, ('pan', 'roll')) is None       # a joint missing
    assert joint_values(names, pos[:2], ('pan', 'tilt')) is None    # the array too short
    assert joint_values(names, [], ('pan', 'tilt')) is None         # no velocities
    nan = joint_values(['pan', 'tilt'], [float('nan'), 0.0], ('pan', 'tilt'))
    assert math.isnan(nan[0])                                        # the caller judges it


def test_health_becomes_a_diagnostic_status():
    st = health_to_status(Health(ERROR, 'x' * 2000, {'fps': 3.5}, 'cam0'), 'camera: camera')
    assert isinstance(st, DiagnosticStatus)
    assert st.level == bytes([ERROR]) and st.name == 'camera: camera'
    assert len(st.message) == 1000 and st.hardware_id == 'cam0'
    assert [(kv.key, kv.value) for kv in st.values] == [('fps', '3.5')]
    assert not_ready('the model').level == WARN


def test_a_stamps_age_is_now_minus_it_and_an_unset_stamp_has_none():
    assert stamp_age_s(Time(sec=10, nanosec=500_000_000), 12 * 10**9) == pytest.approx(1.5)
    assert stamp_age_s(Time(), 12 * 10**9) == 0.0
    assert stamp_age_s(Time(sec=2**31 - 1), 0) < 0        # far in the future: no raise


def test_a_dict_fills_a_message_and_unknown_fields_are_named():
    msg = fill_msg(JointState(), {'name': ['pan'], 'position': [0.5],
                                  'header': {'frame_id': 'base', 'stamp': {'sec': 3}}})
    assert list(msg.name) == ['pan'] and list(msg.position) == [0.5]
    assert msg.header.frame_id == 'base' and msg.header.stamp.sec == 3
    assert msg_to_dict(fill_msg(JointState(), msg_to_dict(msg))) == msg_to_dict(msg)
    with pytest.raises(ValueError, match="JointState has no field 'effort_x'"):
        fill_msg(JointState(), {'effort_x': [1.0]})
