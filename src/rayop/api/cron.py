"""Cron schedules as KubeRay v1.7 reads a RayCronJob's: robfig/cron v3's ``ParseStandard``.

KubeRay parses ``spec.schedule`` (prefixed ``TZ=<spec.timeZone> `` when a zone is set) with
robfig/cron's standard parser and asks the schedule for the first tick after a time. This module
accepts the same syntax, refuses the rest with the parser's messages, and computes the same
ticks:

- five fields (minute, hour, day of month, month, day of week), each a comma list of ``*`` or
  ``?``, ``N``, ``N-M``, with an optional ``/step`` (``N/step`` means ``N-max/step``); months
  and weekdays also by name (``jan``, ``sun``; any case); weekdays 0-6 (Sunday 0);
- the descriptors ``@yearly``/``@annually``, ``@monthly``, ``@weekly``, ``@daily``/``@midnight``,
  ``@hourly`` and ``@every <Go duration>`` (at least one second, whole seconds);
- the day of month and the day of week both restricted (neither starts with ``*``/``?``, or
  either is stepped) match when *either* matches, otherwise when both do;
- hours and minutes advance in absolute time in the schedule's zone, so around a daylight-saving
  change a tick inside the skipped hour does not happen (spring forward) and one inside the
  repeated hour happens twice (fall back), as robfig/cron does; a schedule with no tick within
  five years has none (:meth:`CronSchedule.next` returns None).

Written from robfig/cron's documented behaviour; no code of it is used. No Python cron library
parses this dialect (``@every``, ``?``, the star rule of stepped fields, the DST rule), so it is
written here.
"""

from __future__ import annotations

import calendar
import math
import os
import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from functools import cache
from typing import Final, Protocol

from rayop.api.validation.go_values import parse_duration

__all__ = ["CronError", "CronSchedule", "EverySchedule", "Schedule", "load_location", "parse"]

_STAR: Final = 1 << 63
_MONTHS: Final = {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
_DAYS: Final = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
_ATOI: Final = re.compile(r"[+-]?[0-9]+")
_YEARS_AHEAD: Final = 5


class CronError(ValueError):
    """A schedule robfig/cron's standard parser refuses; the message is the parser's."""


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: Mapping[str, int] | None = None


_MINUTE: Final = _Bounds(0, 59)
_HOUR: Final = _Bounds(0, 23)
_DOM: Final = _Bounds(1, 31)
_MONTH: Final = _Bounds(1, 12, _MONTHS)
_DOW: Final = _Bounds(0, 6, _DAYS)


class Schedule(Protocol):
    """A parsed schedule: the first tick strictly after a moment."""

    def next(self, after: datetime) -> datetime | None:
        """Returns the first tick after ``after`` (aware, UTC), or None when there is none."""
        ...


def _local_zone() -> tzinfo:
    """The operator's local zone (Go's ``time.Local``): ``$TZ``, else /etc/localtime, else UTC."""
    name = os.environ.get("TZ")
    if name is not None:
        return load_location(name.removeprefix(":")) if name else UTC
    try:
        with open("/etc/localtime", "rb") as f:
            return zoneinfo.ZoneInfo.from_file(f, key="Local")
    except (OSError, ValueError):
        return UTC


@cache
def load_location(name: str) -> tzinfo:
    """Returns the zone Go's ``time.LoadLocation`` gives for ``name`` ("" and "UTC" are UTC,
    "Local" the operator's zone).

    Raises:
        CronError: Go's message (``unknown time zone X``, ``time: invalid location name``).
    """
    if name in ("", "UTC"):
        return UTC
    if name == "Local":
        return _local_zone()
    if ".." in name or name[0] in "/\\":
        raise CronError("time: invalid location name")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError(f"unknown time zone {name}") from None


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _duration_error(text: str) -> str:
    """Go's ``time.ParseDuration`` error for a text :func:`parse_duration` refused."""
    rest = text[1:] if text[:1] in ("+", "-") else text
    while rest:
        digits = re.match(r"[0-9]*(\.[0-9]*)?", rest)
        number = digits.group(0) if digits else ""
        if number.strip(".") == "":
            break
        rest = rest[len(number) :]
        unit = re.match(r"[^0-9.]*", rest)
        name = unit.group(0) if unit else ""
        if not name:
            return f"time: missing unit in duration {_go_quote(text)}"
        if name not in ("ns", "us", "\u00b5s", "\u03bcs", "ms", "s", "m", "h"):
            return f"time: unknown unit {_go_quote(name)} in duration {_go_quote(text)}"
        rest = rest[len(name) :]
    return f"time: invalid duration {_go_quote(text)}"


def _atoi(text: str) -> int:
    if not _ATOI.fullmatch(text):
        raise CronError(
            f"failed to parse int from {text}: strconv.Atoi: parsing {_go_quote(text)}: "
            "invalid syntax"
        )
    value = int(text)
    if not -(1 << 63) <= value < 1 << 63:
        raise CronError(
            f"failed to parse int from {text}: strconv.Atoi: parsing {_go_quote(text)}: "
            "value out of range"
        )
    if value < 0:
        raise CronError(f"negative number ({value}) not allowed: {text}")
    return value


def _number(text: str, bounds: _Bounds) -> int:
    if bounds.names is not None and text.lower() in bounds.names:
        return bounds.names[text.lower()]
    return _atoi(text)


def _bits(low: int, high: int, step: int) -> int:
    return sum(1 << i for i in range(low, high + 1, step))


def _range(expr: str, bounds: _Bounds) -> int:
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    extra = 0
    if low_high[0] in ("*", "?"):
        start, end, extra = bounds.low, bounds.high, _STAR
    else:
        start = _number(low_high[0], bounds)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _number(low_high[1], bounds)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _atoi(range_and_step[1])
        if len(low_high) == 1:
            end = bounds.high
        if step > 1:
            extra = 0
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    return _bits(start, end, step) | extra


def _field(text: str, bounds: _Bounds) -> int:
    bits = 0
    for expr in (part for part in text.split(",") if part):
        bits |= _range(expr, bounds)
    return bits


def _all(bounds: _Bounds) -> int:
    return _bits(bounds.low, bounds.high, 1) | _STAR


@dataclass(frozen=True)
class EverySchedule:
    """``@every <duration>``: a tick every ``delay_ns`` nanoseconds (whole seconds, >= 1 s)."""

    delay_ns: int

    def next(self, after: datetime) -> datetime | None:
        """Returns ``after`` with its sub-second part dropped, plus the delay."""
        base = math.floor(after.timestamp())
        return datetime.fromtimestamp(base + self.delay_ns // 1_000_000_000, UTC)


@dataclass(frozen=True)
class CronSchedule:
    """A five-field schedule: bit sets of the minutes, hours, days, months and weekdays."""

    minute: int
    hour: int
    dom: int
    month: int
    dow: int
    location: tzinfo | None = None
    """The zone of the fields; None: the operator's local zone."""

    def next(self, after: datetime) -> datetime | None:
        """Returns the first tick after ``after`` (aware, UTC); None within five years."""
        return _Search(self, self.location or _local_zone()).run(math.floor(after.timestamp()))

    def _day_matches(self, moment: datetime) -> bool:
        dom = (1 << moment.day) & self.dom != 0
        dow = (1 << ((moment.weekday() + 1) % 7)) & self.dow != 0
        if self.dom & _STAR or self.dow & _STAR:
            return dom and dow
        return dom or dow


class _Search:
    """The tick search: calendar steps for months and days, absolute steps for the clock."""

    def __init__(self, schedule: CronSchedule, zone: tzinfo) -> None:
        self.s = schedule
        self.zone = zone
        self.added = False

    def local(self, unix: int) -> datetime:
        return datetime.fromtimestamp(unix, self.zone)

    def offset(self, unix: int) -> int:
        delta = self.local(unix).utcoffset()
        return int(delta.total_seconds()) if delta is not None else 0

    def wall(self, year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> int:
        """Go's ``time.Date`` in the zone: out-of-range months and days roll over; a wall time
        in a gap or an overlap takes the offset in force at (wall time - offset there)."""
        year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
        seconds = calendar.timegm((year, month, 1, 0, 0, 0))
        seconds += (day - 1) * 86400 + hour * 3600 + minute * 60
        return seconds - self.offset(seconds - self.offset(seconds))

    def start(self, unix: int, *, day: bool = False, hour: bool = False) -> int:
        """Moves to the start of the current month (or day, or hour) the first time a field
        has to advance; later advances keep the smaller fields as they are."""
        if self.added:
            return unix
        self.added = True
        t = self.local(unix)
        if hour:
            return self.wall(t.year, t.month, t.day, t.hour)
        return self.wall(t.year, t.month, t.day if day else 1)

    def run(self, after: int) -> datetime | None:
        unix = after + 1
        limit = self.local(unix).year + _YEARS_AHEAD
        while self.local(unix).year <= limit:
            found = self.step(unix)
            if isinstance(found, datetime):
                return found
            unix = found
        return None

    def step(self, unix: int) -> int | datetime:
        """One pass over the fields: the tick, or where to start over (a field wrapped)."""
        s = self.s
        while not (1 << self.local(unix).month) & s.month:
            unix = self.start(unix)
            t = self.local(unix)
            unix = self.wall(t.year, t.month + 1, t.day, t.hour, t.minute) + t.second
            if self.local(unix).month == 1:
                return unix
        while not s._day_matches(self.local(unix)):
            unix = self.start(unix, day=True)
            t = self.local(unix)
            unix = self.wall(t.year, t.month, t.day + 1, t.hour, t.minute) + t.second
            hour = self.local(unix).hour
            if hour:
                unix += (24 - hour) * 3600 if hour > 12 else -hour * 3600
            if self.local(unix).day == 1:
                return unix
        while not (1 << self.local(unix).hour) & s.hour:
            unix = self.start(unix, hour=True) + 3600
            if self.local(unix).hour == 0:
                return unix
        while not (1 << self.local(unix).minute) & s.minute:
            if not self.added:
                self.added = True
                unix -= unix % 60
            unix += 60
            if self.local(unix).minute == 0:
                return unix
        if unix % 60:
            self.added = True
            return unix + 60 - unix % 60  # the next whole minute: seconds are always 0
        return datetime.fromtimestamp(unix, UTC)


def _descriptor(spec: str, zone: tzinfo | None) -> Schedule:
    every = "@every "
    fixed = {
        "@yearly": ("0", "0", "1", "1"),
        "@annually": ("0", "0", "1", "1"),
        "@monthly": ("0", "0", "1", "*"),
        "@daily": ("0", "0", "*", "*"),
        "@midnight": ("0", "0", "*", "*"),
        "@hourly": ("0", "*", "*", "*"),
    }
    if spec in fixed:
        minute, hour, dom, month = fixed[spec]
        return CronSchedule(
            _field(minute, _MINUTE),
            _field(hour, _HOUR),
            _all(_DOM) if dom == "*" else 1 << 1,
            _all(_MONTH) if month == "*" else 1 << 1,
            _all(_DOW),
            zone,
        )
    if spec == "@weekly":
        return CronSchedule(1, 1, _all(_DOM), _all(_MONTH), 1, zone)
    if spec.startswith(every):
        text = spec[len(every) :]
        ns = parse_duration(text)
        if ns is None:
            raise CronError(f"failed to parse duration {spec}: {_duration_error(text)}")
        ns = max(ns, 1_000_000_000)
        return EverySchedule(ns - ns % 1_000_000_000)
    raise CronError(f"unrecognized descriptor: {spec}")


def parse(spec: str) -> Schedule:
    """Parses a schedule as robfig/cron's ``ParseStandard`` does (``TZ=`` prefix included).

    Raises:
        CronError: the parser's message, e.g. ``expected exactly 5 fields, found 1: [x]``.
    """
    if not spec:
        raise CronError("empty spec string")
    zone: tzinfo | None = None
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space, eq = spec.find(" "), spec.find("=")
        name = spec[eq + 1 : space] if space > eq else spec[eq + 1 :]
        try:
            zone = load_location(name)
        except CronError as err:
            raise CronError(f"provided bad location {name}: {err}") from None
        spec = spec[space:].strip() if space > eq else ""
    if spec.startswith("@"):
        return _descriptor(spec, zone)
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    minute, hour, dom, month, dow = fields
    return CronSchedule(
        _field(minute, _MINUTE),
        _field(hour, _HOUR),
        _field(dom, _DOM),
        _field(month, _MONTH),
        _field(dow, _DOW),
        zone,
    )
