"""A RayCronJob controller on the kit's fakes and a FakeClock: a fake API client whose
RayCronJob writes reach the cache at once (a watch without lag; ``client.feed(RAY_CRON_JOBS,
None)`` makes it lag), and a driver that plays the controller's queue.

:meth:`CronWorld.run_until` behaves as the controller in a manager: after a pass that wrote the
status, the next pass runs at once (the watch event of that write); otherwise the clock moves to
the requested requeue, and with no requeue the object waits for a change.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from rayop.api.common import format_time
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycronjob.reconciler import (
    RAY_CRON_JOBS,
    RayCronJobDeps,
    RayCronJobReconciler,
)
from rayop.kube.resources import RAY_JOBS
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request, Result
from rayop.testing import FakeCache, FakeClient, FakeClock, RecordingEventSink

NAMESPACE = "default"
NAME = "nightly"
UID = "0f9c-cron-uid"

TEMPLATE: dict[str, Any] = {
    "entrypoint": "python -c 'print(1)'",
    "shutdownAfterJobFinishes": True,
    "rayClusterSpec": {
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray:2.52.0"}]}},
        }
    },
}


def raycronjob(
    schedule: str, created: datetime, *, time_zone: str | None = None, **spec: Any
) -> dict[str, Any]:
    """Returns a stored RayCronJob (uid, resourceVersion, creationTimestamp set)."""
    body: dict[str, Any] = {"schedule": schedule, "jobTemplate": copy.deepcopy(TEMPLATE), **spec}
    if time_zone is not None:
        body["timeZone"] = time_zone
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "uid": UID,
            "resourceVersion": "1",
            "creationTimestamp": format_time(created),
        },
        "spec": body,
    }


class CronWorld:
    """The controller, its fakes and a FakeClock whose wall time starts at ``start``."""

    def __init__(self, start: datetime, obj: dict[str, Any] | None = None) -> None:
        self.clock = FakeClock(0.0, wall_start=start)
        self.cache = FakeCache(*([obj] if obj is not None else []))
        self.client = FakeClient()
        self.client.feed(RAY_CRON_JOBS, self.cache)
        self.recorder = RecordingEventSink()
        self.passes = 0
        self.restart()

    def restart(self) -> None:
        """A new operator process: a fresh reconciler and own-writes tracker, same API server."""
        deps = RayCronJobDeps(
            client=self.client,
            raycronjobs=self.cache,
            own_writes=OwnWrites(clock=self.clock),
            recorder=self.recorder,
            options=OperatorOptions(),
            clock=self.clock,
        )
        self.reconciler = RayCronJobReconciler(deps)

    async def reconcile(self) -> Result:
        """Runs one pass."""
        self.passes += 1
        return await self.reconciler.reconcile(Request(NAMESPACE, NAME))

    async def run_until(self, end: datetime, *, max_passes: int = 10_000) -> Result:
        """Plays the controller's queue until the wall time reaches ``end``; returns the last
        pass's result (the clock stays at ``end`` when the last requeue is beyond it)."""
        result = Result()
        for _ in range(max_passes):
            writes = self.status_writes()
            result = await self.reconcile()
            if self.status_writes() != writes:
                continue  # the watch event of our status write: the next pass runs at once
            if result.requeue_after is None:
                return result
            wake = self.clock.wall() + timedelta(seconds=result.requeue_after)
            if wake > end:
                self.jump_to(end)
                return result
            self.clock.step(result.requeue_after)
        raise AssertionError(f"no rest after {max_passes} passes")

    def jump_to(self, moment: datetime) -> None:
        """Moves the wall time to ``moment`` without running the controller (it is down)."""
        self.clock.step((moment - self.clock.wall()).total_seconds())

    def status_writes(self) -> int:
        """The RayCronJob status writes so far."""
        return len(self.client.calls_of("update/status", "RayCronJob"))

    def creates(self) -> list[str]:
        """The names of the RayJobs the controller tried to create, in order."""
        return [call.name for call in self.client.calls_of("create", "RayJob")]

    def rayjobs(self) -> list[dict[str, Any]]:
        """The RayJobs stored, in creation order."""
        return self.client.stored_all(RAY_JOBS)

    def events(self) -> list[tuple[str, str, str, str | None]]:
        """The Events recorded, as (type, reason, note, action)."""
        return [(e.type, e.reason, e.note, e.action) for e in self.recorder.recorded]

    def cached(self) -> dict[str, Any]:
        """The RayCronJob as the cache holds it (the object itself: a test may edit it)."""
        obj = self.cache.get(NAMESPACE, NAME)
        assert obj is not None
        return obj

    def ticks(self) -> list[str]:
        """The scheduled times of the RayJobs created, in creation order (UTC RFC 3339)."""
        return [
            job["metadata"]["annotations"]["ray.io/cronjob-scheduled-timestamp"]
            for job in self.rayjobs()
        ]

    @property
    def last_schedule_time(self) -> str | None:
        """``status.lastScheduleTime`` as stored."""
        return (self.cached().get("status") or {}).get("lastScheduleTime")


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    """Returns the UTC moment of those fields."""
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
