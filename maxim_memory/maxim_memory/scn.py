"""Suprachiasmatic nucleus: when things happen, binned by hour, weekday, week of month, month.

Every recorded event type keeps counts per hour of day (0-23), day of week (0 = Monday .. 6),
week of month (1-5, days 1-7 are week 1) and month (1-12), plus a circular mean of its time of
day (23:00 and 01:00 are two hours apart, not 22). Rhythms are bins that stand out against a
baseline: for the baseline event type itself (default 'episode', all activity) the baseline is
uniform; for every other type it is the baseline's own distribution, so "failures cluster at
14:00" means more failures at 14:00 than the activity at 14:00 explains.

Event types named '<what>:<outcome>' (the hub records 'navigate:failure', 'grasp:success')
give success rates per bin for '<what>'.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass, field
import math
import time
from typing import Any

PERIODS = {'hour_of_day': 24, 'day_of_week': 7, 'week_of_month': 5, 'month': 12}
_OFFSET = {'hour_of_day': 0, 'day_of_week': 0, 'week_of_month': 1, 'month': 1}
SUCCESS_SUFFIXES = ('success',)
FAILURE_SUFFIXES = ('failure', 'blocked', 'timeout')
DAY_NAMES = [calendar.day_name[i] for i in range(7)]
MONTH_NAMES = [calendar.month_name[i] for i in range(1, 13)]
# Against a uniform null a period only counts once a full cycle of it has been observed.
CYCLE_S = {'hour_of_day': 86400.0, 'day_of_week': 7 * 86400.0, 'week_of_month': 31 * 86400.0,
           'month': 365 * 86400.0}
MIN_Z = 2.0  # a bin is a rhythm when it stands this many binomial std devs above expectation


def _struct(ts: float, utc_offset_s: float | None) -> time.struct_time:
    if utc_offset_s is None:
        return time.localtime(ts)
    return time.gmtime(ts + utc_offset_s)


def encode_time_of_day(ts: float, utc_offset_s: float | None = None) -> tuple[float, float]:
    """(sin, cos) of the time of day on the unit circle: midnight is (0, 1), 06:00 (1, 0).
    Local time unless `utc_offset_s` is given."""
    t = _struct(float(ts), utc_offset_s)
    seconds = t.tm_hour * 3600 + t.tm_min * 60 + t.tm_sec + (float(ts) % 1.0)
    angle = 2.0 * math.pi * seconds / 86400.0
    return math.sin(angle), math.cos(angle)


def time_bins(ts: float, utc_offset_s: float | None = None) -> dict[str, int]:
    """The bin of `ts` in every period."""
    t = _struct(float(ts), utc_offset_s)
    return {'hour_of_day': t.tm_hour, 'day_of_week': t.tm_wday,
            'week_of_month': min(5, (t.tm_mday - 1) // 7 + 1), 'month': t.tm_mon}


@dataclass
class _Track:
    bins: dict[str, list[int]] = field(
        default_factory=lambda: {p: [0] * n for p, n in PERIODS.items()})
    count: int = 0
    sin_sum: float = 0.0
    cos_sum: float = 0.0
    first_seen: float = math.inf
    last_seen: float = -math.inf


@dataclass
class TemporalPattern:
    """When one event type happens."""

    event_type: str
    count: int
    peak_hour: int
    peak_hour_count: int
    peak_day: int              # 0 = Monday
    peak_day_count: int
    mean_hour: float           # circular mean time of day, 0..24
    hour_concentration: float  # 0 = spread round the clock .. 1 = always the same time
    first_seen: float
    last_seen: float
    hours: list[int]
    days: list[int]


@dataclass
class Rhythm:
    """A bin where an event type is more frequent than expected (Rhythm.msg)."""

    period: str                # 'hour_of_day', 'day_of_week', 'week_of_month', 'month'
    bin: int
    count: int
    strength: float            # 0..1: share of the excess over expectation the bin holds
    success_rate: float        # success share of '<what>:<outcome>' events in the bin; -1 unknown
    description: str
    event_type: str = ''
    expected: float = 0.0
    z_score: float = 0.0


def _bin_name(period: str, b: int) -> str:
    if period == 'hour_of_day':
        return f'{b:02d}:00'
    if period == 'day_of_week':
        return f'{DAY_NAMES[b]}s'
    if period == 'week_of_month':
        return f'week {b} of the month'
    return MONTH_NAMES[b - 1]


class SuprachiasmaticNucleus:
    """Time-binned counts per event type, temporal patterns and rhythm discovery."""

    def __init__(self, utc_offset_s: float | None = None, baseline_event: str = 'episode',
                 max_event_types: int = 2000):
        if max_event_types < 1:
            raise ValueError('max_event_types must be >= 1')
        self.utc_offset_s = utc_offset_s
        self.baseline_event = baseline_event
        self.max_event_types = int(max_event_types)
        self._tracks: dict[str, _Track] = {}

    def __len__(self) -> int:
        return sum(t.count for t in self._tracks.values())

    def event_types(self) -> list[str]:
        return sorted(self._tracks)

    def record(self, event_type: str, timestamp: float) -> None:
        """Count one `event_type` at wall time `timestamp` (seconds since the epoch)."""
        if not isinstance(event_type, str) or not event_type:
            raise ValueError('event_type must be a non-empty string')
        ts = float(timestamp)
        if not math.isfinite(ts) or ts < 0:
            raise ValueError(f'timestamp must be a finite time since the epoch, got {timestamp}')
        track = self._tracks.get(event_type)
        if track is None:
            if len(self._tracks) >= self.max_event_types:
                rarest = min((k for k in self._tracks if k != self.baseline_event),
                             key=lambda k: (self._tracks[k].count, self._tracks[k].last_seen))
                del self._tracks[rarest]
            track = self._tracks[event_type] = _Track()
        for period, b in time_bins(ts, self.utc_offset_s).items():
            track.bins[period][b - _OFFSET[period]] += 1
        s, c = encode_time_of_day(ts, self.utc_offset_s)
        track.sin_sum += s
        track.cos_sum += c
        track.count += 1
        track.first_seen = min(track.first_seen, ts)
        track.last_seen = max(track.last_seen, ts)

    def counts(self, event_type: str, period: str) -> list[int]:
        """Counts per bin (index 0 = the period's first bin)."""
        if period not in PERIODS:
            raise ValueError(f'unknown period {period!r}; one of {sorted(PERIODS)}')
        track = self._tracks.get(event_type)
        return list(track.bins[period]) if track else [0] * PERIODS[period]

    # --- queries -------------------------------------------------------------------------------

    def temporal_patterns(self, event_type: str | None = None,
                          limit: int = 10) -> list[TemporalPattern]:
        """When each event type (or just `event_type`) happens, most frequent first."""
        if limit < 0:
            raise ValueError('limit must be >= 0')
        names = [event_type] if event_type is not None else list(self._tracks)
        out = []
        for name in names:
            track = self._tracks.get(name)
            if track is None or track.count == 0:
                continue
            hours, days = track.bins['hour_of_day'], track.bins['day_of_week']
            ph = max(range(24), key=lambda h: (hours[h], -h))
            pd = max(range(7), key=lambda d: (days[d], -d))
            angle = math.atan2(track.sin_sum, track.cos_sum) % (2 * math.pi)
            r = math.hypot(track.sin_sum, track.cos_sum) / track.count
            out.append(TemporalPattern(
                event_type=name, count=track.count, peak_hour=ph, peak_hour_count=hours[ph],
                peak_day=pd, peak_day_count=days[pd], mean_hour=angle * 24 / (2 * math.pi),
                hour_concentration=min(1.0, r), first_seen=track.first_seen,
                last_seen=track.last_seen, hours=list(hours), days=list(days)))
        out.sort(key=lambda p: (-p.count, p.event_type))
        return out[:limit]

    def discover_rhythms(self, min_count: int = 3, event_type: str | None = None,
                         min_z: float = MIN_Z) -> list[Rhythm]:
        """Bins where an event type is significantly more frequent than its baseline predicts
        (a binomial z-score >= `min_z` and at least `min_count` events), strongest first."""
        if min_count < 1:
            raise ValueError('min_count must be >= 1')
        base = self._tracks.get(self.baseline_event)
        names = [event_type] if event_type is not None else sorted(self._tracks)
        out = []
        for name in names:
            track = self._tracks.get(name)
            if track is None or track.count < min_count:
                continue
            for period, nbins in PERIODS.items():
                counts = track.bins[period]
                n = track.count
                if name != self.baseline_event and base is not None and base.count:
                    ref = base.bins[period]
                    probs = [ref[b] / base.count for b in range(nbins)]
                elif track.last_seen - track.first_seen >= CYCLE_S[period]:
                    probs = [1.0 / nbins] * nbins
                else:  # less than one full cycle seen: a uniform null would find fake peaks
                    continue
                excess = [max(0.0, counts[b] - n * probs[b]) for b in range(nbins)]
                total_excess = sum(excess) or 1.0
                for b in range(nbins):
                    c, p = counts[b], probs[b]
                    if c < min_count or excess[b] <= 0:
                        continue
                    expected = n * p
                    z = (c - expected) / math.sqrt(n * p * (1 - p)) if 0 < p < 1 else math.inf
                    if z < min_z:
                        continue
                    label = b + _OFFSET[period]
                    out.append(Rhythm(
                        period=period, bin=label, count=c,
                        strength=excess[b] / total_excess,
                        success_rate=self._success_rate(name, period, b),
                        description=self._describe(name, period, label, c, expected),
                        event_type=name, expected=expected, z_score=min(z, 1e6)))
        out.sort(key=lambda r: (-r.z_score, -r.count, r.event_type, r.period, r.bin))
        return out

    def _success_rate(self, name: str, period: str, b: int) -> float:
        what, _, suffix = name.rpartition(':')
        if not what or suffix not in SUCCESS_SUFFIXES + FAILURE_SUFFIXES:
            what = ''  # not an outcome type: pool every outcome type in the bin
        ok = bad = 0
        for other, track in self._tracks.items():
            o_what, _, o_suffix = other.rpartition(':')
            if what and o_what != what:
                continue
            if o_suffix in SUCCESS_SUFFIXES:
                ok += track.bins[period][b]
            elif o_suffix in FAILURE_SUFFIXES:
                bad += track.bins[period][b]
        return ok / (ok + bad) if ok + bad else -1.0

    def _describe(self, name: str, period: str, label: int, c: int, expected: float) -> str:
        what, _, suffix = name.rpartition(':')
        if what and suffix in FAILURE_SUFFIXES:
            subject = f'{what} {suffix}s'
        elif what and suffix in SUCCESS_SUFFIXES:
            subject = f'{what} successes'
        else:
            subject = f'{name} events'
        where = {'hour_of_day': 'at', 'day_of_week': 'on', 'week_of_month': 'in',
                 'month': 'in'}[period]
        return f'{subject} cluster {where} {_bin_name(period, label)} ({c} vs {expected:.1f} ' \
               f'expected)'

    # --- persistence ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {'version': 1, 'utc_offset_s': self.utc_offset_s,
                'baseline_event': self.baseline_event, 'max_event_types': self.max_event_types,
                'tracks': {name: {'bins': {p: list(v) for p, v in t.bins.items()},
                                  'count': t.count, 'sin_sum': t.sin_sum, 'cos_sum': t.cos_sum,
                                  'first_seen': t.first_seen if t.count else None,
                                  'last_seen': t.last_seen if t.count else None}
                           for name, t in self._tracks.items()}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SuprachiasmaticNucleus:
        """Rebuild from `to_dict()`; malformed state raises KeyError, TypeError or ValueError."""
        if not isinstance(d, dict):
            raise TypeError(f'SCN state must be a dict, not {type(d).__name__}')
        if d.get('version') != 1:
            raise ValueError(f'unknown SCN state version {d.get("version")!r}')
        off = d['utc_offset_s']
        scn = cls(utc_offset_s=None if off is None else float(off),
                  baseline_event=str(d['baseline_event']),
                  max_event_types=int(d['max_event_types']))
        for name, t in d['tracks'].items():
            bins = {p: [int(x) for x in t['bins'][p]] for p in PERIODS}
            for p, n in PERIODS.items():
                if len(bins[p]) != n:
                    raise ValueError(f'SCN state: {name} has {len(bins[p])} {p} bins, not {n}')
            count = int(t['count'])
            scn._tracks[str(name)] = _Track(
                bins=bins, count=count, sin_sum=float(t['sin_sum']), cos_sum=float(t['cos_sum']),
                first_seen=float(t['first_seen']) if count else math.inf,
                last_seen=float(t['last_seen']) if count else -math.inf)
        return scn
