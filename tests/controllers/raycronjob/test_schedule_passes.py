"""The RayCronJob controller in virtual time: DST changes, missed ticks after a restart, suspend,
the child RayJobs' names and marks, and bad schedules (a Warning event, never a crash loop)."""

from __future__ import annotations

import pytest

from rayop.api.common import parse_time
from rayop.controllers.raycronjob.reconciler import RAY_CRON_JOBS
from rayop.kube.resources import RAY_JOBS

from .cron_world import NAME, NAMESPACE, UID, CronWorld, raycronjob, utc


def _minutes(moment: str) -> int:
    return int(parse_time(moment).timestamp()) // 60


async def test_spring_forward_skips_the_tick_inside_the_missing_hour() -> None:
    created = utc(2026, 3, 6, 12)
    world = CronWorld(created, raycronjob("30 2 * * *", created, time_zone="America/New_York"))
    await world.run_until(utc(2026, 3, 11, 12))
    # 02:30 EST on Mar 7 is 07:30Z; Mar 8 has no 02:30 (02:00 EST jumps to 03:00 EDT);
    # from Mar 9 02:30 EDT is 06:30Z.
    assert world.ticks() == [
        "2026-03-07T07:30:00Z",
        "2026-03-09T06:30:00Z",
        "2026-03-10T06:30:00Z",
        "2026-03-11T06:30:00Z",
    ]


async def test_fall_back_runs_the_tick_inside_the_repeated_hour_twice() -> None:
    created = utc(2026, 10, 30, 12)
    world = CronWorld(created, raycronjob("30 1 * * *", created, time_zone="America/New_York"))
    await world.run_until(utc(2026, 11, 2, 12))
    # 01:30 happens at 05:30Z (EDT) and again at 06:30Z (EST) on Nov 1, as robfig/cron runs it.
    assert world.ticks() == [
        "2026-10-31T05:30:00Z",
        "2026-11-01T05:30:00Z",
        "2026-11-01T06:30:00Z",
        "2026-11-02T06:30:00Z",
    ]


async def test_hourly_schedule_across_both_changes_keeps_absolute_hours() -> None:
    created = utc(2026, 11, 1, 4, 30)  # 00:30 EDT
    world = CronWorld(created, raycronjob("0 * * * *", created, time_zone="America/New_York"))
    await world.run_until(utc(2026, 11, 1, 8, 30))
    assert world.ticks() == [f"2026-11-01T0{h}:00:00Z" for h in (5, 6, 7, 8)]


async def test_the_time_zone_defaults_to_the_operators_local_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TZ", "Asia/Taipei")
    created = utc(2026, 1, 1)
    world = CronWorld(created, raycronjob("45 21 * * *", created))
    await world.run_until(utc(2026, 1, 2, 14))
    assert world.ticks() == ["2026-01-01T13:45:00Z", "2026-01-02T13:45:00Z"]


async def test_ticks_missed_while_the_operator_was_down_all_run_oldest_first() -> None:
    created = utc(2026, 5, 1)
    world = CronWorld(created, raycronjob("*/5 * * * *", created))
    await world.run_until(utc(2026, 5, 1, 0, 12))
    assert world.ticks() == ["2026-05-01T00:05:00Z", "2026-05-01T00:10:00Z"]
    world.jump_to(utc(2026, 5, 1, 0, 41))  # down for half an hour
    world.restart()
    passes = world.passes
    result = await world.run_until(utc(2026, 5, 1, 0, 41))
    assert world.ticks()[2:] == [f"2026-05-01T00:{m}:00Z" for m in (15, 20, 25, 30, 35, 40)]
    assert world.passes - passes == 7  # one RayJob per pass, then the wait for 00:45
    assert result.requeue_after == 4 * 60
    assert world.last_schedule_time == "2026-05-01T00:40:00Z"


async def test_child_rayjobs_are_named_by_their_minute_and_marked_as_kuberays() -> None:
    created = utc(2026, 5, 1)
    world = CronWorld(created, raycronjob("@every 90s", created))
    await world.run_until(utc(2026, 5, 1, 0, 3))
    first, second = world.rayjobs()
    assert [first["metadata"]["name"], second["metadata"]["name"]] == [
        f"{NAME}-{_minutes('2026-05-01T00:01:30Z')}",
        f"{NAME}-{_minutes('2026-05-01T00:03:00Z')}",
    ]
    assert first["metadata"]["namespace"] == NAMESPACE
    assert first["metadata"]["labels"] == {"ray.io/cronjob-name": NAME}
    assert first["metadata"]["annotations"] == {
        "ray.io/cronjob-scheduled-timestamp": "2026-05-01T00:01:30Z"
    }
    assert first["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCronJob",
            "name": NAME,
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert first["spec"] == world.cached()["spec"]["jobTemplate"]


async def test_a_tick_whose_rayjob_exists_is_not_created_twice_and_still_advances() -> None:
    created = utc(2026, 5, 1)
    world = CronWorld(created, raycronjob("* * * * *", created))
    name = f"{NAME}-{_minutes('2026-05-01T00:01:00Z')}"
    mine = {"metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"entrypoint": "mine"}}
    world.client.put(RAY_JOBS, mine)
    await world.run_until(utc(2026, 5, 1, 0, 1, 30))
    assert world.creates() == [name]
    assert [job["spec"] for job in world.rayjobs()] == [{"entrypoint": "mine"}]
    assert world.last_schedule_time == "2026-05-01T00:01:00Z"


async def test_a_pass_on_a_cache_behind_its_own_status_write_creates_nothing() -> None:
    created = utc(2026, 5, 1)
    world = CronWorld(created, raycronjob("* * * * *", created))
    world.client.feed(RAY_CRON_JOBS, None)  # the watch lags
    world.jump_to(utc(2026, 5, 1, 0, 1, 5))
    await world.reconcile()
    result = await world.reconcile()  # the cache still shows no lastScheduleTime
    assert world.creates() == [f"{NAME}-{_minutes('2026-05-01T00:01:00Z')}"]
    assert result.requeue_after == 3.0


async def test_suspend_creates_nothing_and_resuming_runs_the_ticks_missed_meanwhile() -> None:
    created = utc(2026, 5, 1)
    world = CronWorld(created, raycronjob("*/10 * * * *", created, suspend=True))
    result = await world.run_until(utc(2026, 5, 1, 0, 35))
    assert result.requeue_after is None
    assert world.rayjobs() == []
    assert world.events() == [
        ("Normal", "SuspendedRayCronJob", "RayCronJob suspended, no new RayJobs will be created",
         "Suspend")
    ]  # fmt: skip
    world.jump_to(utc(2026, 5, 1, 0, 35))
    world.cached()["spec"]["suspend"] = False
    await world.run_until(utc(2026, 5, 1, 0, 35))
    assert world.ticks() == [f"2026-05-01T00:{m}:00Z" for m in (10, 20, 30)]


async def test_a_schedule_that_does_not_parse_is_a_warning_event_and_no_requeue() -> None:
    created = utc(2026, 5, 1)
    world = CronWorld(created, raycronjob("61 * * * *", created))
    for _ in range(3):
        result = await world.run_until(utc(2026, 5, 2))
        assert result.requeue_after is None
    assert world.creates() == []
    assert world.status_writes() == 0
    note = f"{NAMESPACE}/{NAME}: invalid cron schedule: end of range (61) above maximum (59): 61"
    assert world.events() == [("Warning", "InvalidRayCronJobSpec", note, "Validate")] * 3


async def test_a_bad_time_zone_and_a_tz_prefix_are_refused_with_kuberays_messages() -> None:
    created = utc(2026, 5, 1)
    world = CronWorld(created, raycronjob("* * * * *", created, time_zone="Mars/Olympus"))
    await world.reconcile()
    world.cache.put(raycronjob("TZ=UTC * * * * *", created))
    await world.reconcile()
    notes = [note for _, _, note, _ in world.events()]
    assert notes == [
        f"{NAMESPACE}/{NAME}: invalid time zone: unknown time zone Mars/Olympus",
        f"{NAMESPACE}/{NAME}: cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
    ]


async def test_a_deleted_raycronjob_ends_the_pass() -> None:
    world = CronWorld(utc(2026, 5, 1))
    result = await world.reconcile()
    assert result.requeue_after is None
    assert world.creates() == []


async def test_a_template_using_a_feature_whose_gate_is_off_is_refused() -> None:
    created = utc(2026, 5, 1)
    obj = raycronjob("* * * * *", created)
    obj["spec"]["jobTemplate"]["rayClusterSpec"]["networkPolicy"] = {"mode": "DenyAll"}
    world = CronWorld(created, obj)
    world.jump_to(utc(2026, 5, 1, 0, 5))
    result = await world.reconcile()
    assert result.requeue_after is None
    assert world.creates() == []
    ((kind, reason, note, action),) = world.events()
    assert (kind, reason, action) == ("Warning", "InvalidRayCronJobSpec", "Validate")
    assert note.startswith(f"{NAMESPACE}/{NAME}: invalid RayJob template: ")
    assert "RayClusterNetworkPolicy" in note
