"""Pain: escalating signals from failures, timeouts, movement errors and thrashing."""

import json

import pytest

from maxim_memory.pain import PAIN_TYPES, PainConfig, PainDetector, PainEvent, PainHistory


class Clock:
    def __init__(self, t=0.0):
        self.t = t

    def __call__(self):
        return self.t


def detector(clock, wall=None):
    return PainDetector(clock=clock, wall_clock=wall or (lambda: 1_700_000_000.0 + clock.t))


def test_repeated_tool_failures_escalate_and_success_soothes():
    clock = Clock()
    d = detector(clock)
    events = []
    for _ in range(6):
        clock.t += 1.0
        events.append(d.tool_result('navigate', False, error='path blocked'))
    intensities = [e.intensity for e in events]
    assert intensities[0] == pytest.approx(0.3)
    assert all(a < b for a, b in zip(intensities[:5], intensities[1:5]))
    assert intensities[-1] == 1.0  # capped
    assert [e.repeat_count for e in events] == [1, 2, 3, 4, 5, 6]
    e = events[0]
    assert (e.pain_type, e.source, e.message) == ('tool_failure', 'navigate', 'path blocked')
    assert e.timestamp == pytest.approx(1_700_000_001.0)  # wall time, for the SCN
    assert d.tool_result('navigate', True) is None
    assert d.level('tool_failure', 'navigate') == 0.0
    again = d.tool_result('navigate', False)
    assert again.intensity == pytest.approx(0.3) and again.repeat_count == 1


def test_pain_decays_with_time():
    clock = Clock()
    d = detector(clock)
    d.tool_result('grasp', False)
    quick = d.tool_result('grasp', False)
    clock.t += 3600.0  # an hour of quiet: thirty half-lives
    slow = d.tool_result('grasp', False)
    assert slow.intensity < quick.intensity and slow.intensity == pytest.approx(0.3, abs=1e-6)
    assert d.level('grasp', 'nothing') == 0.0


def test_timeouts_are_their_own_kind():
    d = detector(Clock())
    e = d.tool_result('speak', False, timed_out=True)
    assert e.pain_type == 'timeout' and e.intensity == pytest.approx(0.4)
    assert 'timed out' in e.message
    assert d.tool_result('speak', False).intensity == pytest.approx(0.3)  # separate streak


def test_movement_error_threshold_and_scale():
    d = detector(Clock())
    assert d.movement_error(0.01) is None
    small = d.movement_error(0.1, joint='tilt')
    d2 = detector(Clock())
    big = d2.movement_error(-2.0)
    assert small.pain_type == 'movement_error' and small.source == 'tilt'
    assert small.intensity < big.intensity == pytest.approx(0.3)
    with pytest.raises(ValueError):
        d.movement_error(float('nan'))


def test_direction_thrashing():
    clock = Clock()
    d = PainDetector(clock=clock, wall_clock=clock, config=PainConfig(thrash_window_s=3.0,
                                                                      thrash_reversals=3))
    # a smooth sweep and a stop never hurt
    for v in (0.5, 0.6, 0.01, 0.4, 0.3):
        clock.t += 0.2
        assert d.direction(v) is None
    out = []
    for v in (-0.5, 0.5, -0.5):  # three reversals in 0.6 s
        clock.t += 0.2
        out.append(d.direction(v))
    assert out[:2] == [None, None]
    e = out[2]
    assert e.pain_type == 'direction_thrashing' and e.source == 'pan' and e.intensity >= 0.5
    # slow reversals, each more than the window apart, never add up
    for i in range(6):
        clock.t += 4.0
        assert d.direction(0.5 if i % 2 else -0.5) is None


def test_history_counts_and_check_action():
    clock = Clock(1_700_000_000.0)
    d = detector(Clock(), wall=clock)
    h = PainHistory(clock=clock, half_life_s=600.0, block_level=2.0)
    first = d.tool_result('look', False)
    h.record(first)
    assert h.check_action('navigate')['recommendation'] == 'proceed'
    look = h.check_action('look')
    assert look['recommendation'] == 'proceed' and look['pain_level'] == pytest.approx(0.3)
    for _ in range(4):
        clock.t += 5.0
        h.record(d.tool_result('navigate', False, error='wheel stuck'))
    h.record(d.movement_error(0.3))
    check = h.check_action('navigate')
    assert check['would_block'] and check['recommendation'] == 'avoid'
    assert check['recent_count'] == 4 and check['by_type'] == {'tool_failure': 4}
    assert 'wheel stuck' in check['reason']
    assert not h.check_action('look')['would_block']
    clock.t += 6 * 3600.0  # pain fades: the gate opens again
    assert h.check_action('navigate')['recommendation'] == 'proceed'
    counts = h.counts_by_type()
    assert list(counts) == list(PAIN_TYPES)
    assert counts['tool_failure'] == 5 and counts['movement_error'] == 1 and counts['timeout'] == 0
    recent = h.history(limit=2)
    assert [e.pain_type for e in recent] == ['movement_error', 'tool_failure']
    assert [e.source for e in h.history(limit=10, pain_type='tool_failure')][-1] == 'look'
    assert h.current_intensity() < 0.01


def test_history_is_bounded_and_round_trips():
    clock = Clock(100.0)
    h = PainHistory(max_events=3, clock=clock)
    for i in range(5):
        h.record(PainEvent('injected', 0.1 * i, source=f's{i}', timestamp=float(i)))
    assert len(h) == 3 and h.counts_by_type()['injected'] == 5
    back = PainHistory.from_dict(json.loads(json.dumps(h.to_dict())), clock=clock)
    assert back.history(10) == h.history(10) and back.counts_by_type() == h.counts_by_type()
    with pytest.raises(ValueError):
        PainHistory.from_dict({'version': 0})


def test_bad_input():
    with pytest.raises(ValueError):
        PainEvent('burn', 0.5)
    with pytest.raises(ValueError):
        PainEvent('timeout', 1.5)
    with pytest.raises(TypeError):
        PainHistory().record({'pain_type': 'timeout'})
    with pytest.raises(ValueError):
        PainHistory().history(pain_type='burn')
    with pytest.raises(ValueError):
        detector(Clock()).tool_result('', False)
