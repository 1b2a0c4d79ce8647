"""The cron dialect of KubeRay's RayCronJob (robfig/cron's standard parser): ticks and errors."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rayop.api.cron import CronError, parse


def _ticks(spec: str, start: datetime, count: int) -> list[str]:
    schedule, out, moment = parse(spec), [], start
    for _ in range(count):
        found = schedule.next(moment)
        assert found is not None
        out.append(found.strftime("%Y-%m-%dT%H:%M:%SZ"))
        moment = found
    return out


START = datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)  # a Thursday


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("* * * * *", ["2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"]),
        ("*/20 * * * *", ["2026-01-01T00:20:00Z", "2026-01-01T00:40:00Z"]),
        ("5/20 * * * *", ["2026-01-01T00:05:00Z", "2026-01-01T00:25:00Z"]),
        ("0 9-10 * * *", ["2026-01-01T09:00:00Z", "2026-01-01T10:00:00Z"]),
        ("0 0 * JAN,feb SUN", ["2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"]),
        ("0 0 13 * FRI", ["2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z"]),  # either day
        ("0 0 13 * ?", ["2026-01-13T00:00:00Z", "2026-02-13T00:00:00Z"]),
        ("0 0 */1 * FRI", ["2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z"]),  # */1 is a star
        ("0 0 */2 * FRI", ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"]),  # stepped: either
        ("@hourly", ["2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"]),
        ("@daily", ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"]),
        ("@weekly", ["2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"]),
        ("@monthly", ["2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"]),
        ("@yearly", ["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"]),
        ("@every 90s", ["2026-01-01T00:02:00Z", "2026-01-01T00:03:30Z"]),
        ("@every 500ms", ["2026-01-01T00:00:31Z", "2026-01-01T00:00:32Z"]),  # at least 1 s
        ("TZ=Asia/Taipei 45 21 * * *", ["2026-01-01T13:45:00Z", "2026-01-02T13:45:00Z"]),
        ("CRON_TZ=Asia/Kolkata 0 0 * * *", ["2026-01-01T18:30:00Z", "2026-01-02T18:30:00Z"]),
    ],
)
def test_ticks(spec: str, expected: list[str]) -> None:
    assert _ticks(spec, START, len(expected)) == expected


def test_a_schedule_that_never_fires_has_no_tick() -> None:
    assert parse("0 0 30 2 *").next(START) is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty spec string"),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("0 * * * * *", "expected exactly 5 fields, found 6: [0 * * * * *]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("1/2/3 * * * *", "too many slashes: 1/2/3"),
        ("*/-1 * * * *", "negative number (-1) not allowed: -1"),
        ("a * * * *", 'failed to parse int from a: strconv.Atoi: parsing "a": invalid syntax'),
        (
            "* * * foo *",
            'failed to parse int from foo: strconv.Atoi: parsing "foo": invalid syntax',
        ),
        (
            "@every 1d",
            'failed to parse duration @every 1d: time: unknown unit "d" in duration "1d"',
        ),
        ("@every 5", 'failed to parse duration @every 5: time: missing unit in duration "5"'),
        ("@every x", 'failed to parse duration @every x: time: invalid duration "x"'),
        ("@reboot", "unrecognized descriptor: @reboot"),
        ("TZ=Mars/Base * * * * *", "provided bad location Mars/Base: unknown time zone Mars/Base"),
    ],
)
def test_errors_carry_the_parsers_messages(spec: str, message: str) -> None:
    with pytest.raises(CronError) as caught:
        parse(spec)
    assert str(caught.value) == message
