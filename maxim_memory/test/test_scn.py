"""SCN: time bins, circular time of day, temporal patterns and rhythm discovery."""

import json
import math

import pytest

from maxim_memory.scn import encode_time_of_day, SuprachiasmaticNucleus, time_bins

MONDAY = 1704067200.0  # 2024-01-01 00:00:00 UTC, a Monday
H = 3600.0
DAY = 86400.0


def test_circular_time_of_day():
    s, c = encode_time_of_day(MONDAY, utc_offset_s=0)
    assert (s, c) == pytest.approx((0.0, 1.0))
    s, c = encode_time_of_day(MONDAY + 6 * H, utc_offset_s=0)
    assert (s, c) == pytest.approx((1.0, 0.0), abs=1e-9)
    late = encode_time_of_day(MONDAY + 23 * H, utc_offset_s=0)
    early = encode_time_of_day(MONDAY + DAY + 1 * H, utc_offset_s=0)
    noon = encode_time_of_day(MONDAY + 12 * H, utc_offset_s=0)
    assert math.dist(late, early) < math.dist(late, noon)  # 23:00 is near 01:00
    assert encode_time_of_day(MONDAY, utc_offset_s=3 * H) == \
        pytest.approx(encode_time_of_day(MONDAY + 3 * H, utc_offset_s=0))


def test_time_bins():
    b = time_bins(MONDAY + 14 * DAY + 15 * H + 30, utc_offset_s=0)  # Mon 15 Jan 2024, 15:00
    assert b == {'hour_of_day': 15, 'day_of_week': 0, 'week_of_month': 3, 'month': 1}
    assert time_bins(MONDAY + 30 * DAY, utc_offset_s=0)['week_of_month'] == 5  # 31 January


def test_temporal_patterns_peaks_and_circular_mean():
    scn = SuprachiasmaticNucleus(utc_offset_s=0)
    for d in range(5):
        scn.record('grasp:success', MONDAY + d * DAY + 23 * H + 30 * 60)
        scn.record('grasp:success', MONDAY + d * DAY + DAY + 0.5 * H)
    scn.record('look:success', MONDAY + 12 * H)
    pats = scn.temporal_patterns()
    assert [p.event_type for p in pats] == ['grasp:success', 'look:success']
    g = pats[0]
    assert g.count == 10 and g.peak_hour in (0, 23) and g.peak_hour_count == 5
    assert min(g.mean_hour, 24 - g.mean_hour) < 0.1  # midnight, not the naive 11.75
    assert g.hour_concentration > 0.95 and sum(g.hours) == 10 and sum(g.days) == 10
    assert scn.temporal_patterns('look:success')[0].peak_hour == 12
    assert scn.temporal_patterns('nothing') == [] and len(scn.temporal_patterns(limit=1)) == 1


def _workdays(scn, days=21):
    """Activity every hour 08:00-17:00; navigate fails mostly at 14:00."""
    for d in range(days):
        for h in range(8, 18):
            t = MONDAY + d * DAY + h * H
            scn.record('episode', t)
            scn.record('navigate:failure' if h == 14 else 'navigate:success', t)
            if h == 14 and d % 3 == 0:
                scn.record('navigate:failure', t + 60)


def test_failures_cluster_against_the_activity_baseline():
    scn = SuprachiasmaticNucleus(utc_offset_s=0)
    _workdays(scn)
    rhythms = scn.discover_rhythms(min_count=3)
    fails = [r for r in rhythms if r.event_type == 'navigate:failure']
    assert [(r.period, r.bin) for r in fails] == [('hour_of_day', 14)]
    r = fails[0]
    assert r.count == 28 and r.success_rate == 0.0 and r.strength == pytest.approx(1.0)
    assert 'navigate failures cluster at 14:00' in r.description
    # the activity itself is concentrated in working hours against round-the-clock
    active = {r.bin for r in rhythms
              if r.event_type == 'episode' and r.period == 'hour_of_day'}
    assert active == set(range(8, 18))
    # successes at 14:00 never happen, so that bin is no success rhythm
    ok = [r for r in rhythms if r.event_type == 'navigate:success']
    assert all(r.bin != 14 for r in ok)
    # under one full month: no month or week-of-month rhythm for the baseline
    assert not [r for r in rhythms if r.event_type == 'episode' and r.period == 'month']


def test_uniform_activity_has_no_rhythm():
    scn = SuprachiasmaticNucleus(utc_offset_s=0)
    for i in range(24 * 14):
        scn.record('episode', MONDAY + i * H)
    assert [r for r in scn.discover_rhythms() if r.period in ('hour_of_day', 'day_of_week')] \
        == []


def test_round_trip_and_bounds():
    scn = SuprachiasmaticNucleus(utc_offset_s=0, max_event_types=3)
    _workdays(scn, days=7)
    scn.record('pain:timeout', MONDAY)
    scn.record('pain:tool_failure', MONDAY)  # evicts the rarest non-baseline type
    assert 'episode' in scn.event_types() and len(scn.event_types()) == 3
    back = SuprachiasmaticNucleus.from_dict(json.loads(json.dumps(scn.to_dict())))
    assert back.temporal_patterns() == scn.temporal_patterns()
    assert back.discover_rhythms() == scn.discover_rhythms()
    with pytest.raises(ValueError):
        SuprachiasmaticNucleus.from_dict({'version': 2})
    with pytest.raises(ValueError):
        scn.record('', MONDAY)
    with pytest.raises(ValueError):
        scn.record('x', float('nan'))
    with pytest.raises(ValueError):
        scn.counts('x', 'fortnight')
    with pytest.raises(ValueError):
        scn.discover_rhythms(min_count=0)
