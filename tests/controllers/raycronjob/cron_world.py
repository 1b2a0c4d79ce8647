"""A RayCronJob controller on fakes and a FakeClock: an API server that is a dict, a watch that
delivers the controller's status write at once, and a driver that plays the controller's queue.

:meth:`CronWorld.run_until` behaves as the controller in a manager: after a pass that wrote the
status, the next pass runs at once (the watch event of that write); otherwise the clock moves to
the requested requeue, and with no requeue the object waits for a change.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from rayop.api.common import format_time
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycronjob.reconciler import RayCronJobDeps, RayCronJobReconciler
from rayop.kube.errors import AlreadyExists
from rayop.kube.resource import Resource
from rayop.runtime.events.recorder import EventType
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request, Result
from rayop.testing import FakeClock

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


class Cache:
    """The informer cache: one RayCronJob."""

    def __init__(self) -> None:
        self.obj: dict[str, Any] | None = None

    def get(self, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        return self.obj

    def list(
        self, namespace: str | None = None, *, label_selector: Any = None
    ) -> list[Mapping[str, Any]]:
        return [self.obj] if self.obj is not None else []


@dataclass
class Client:
    """The API server: RayJobs by name, the RayCronJob's status writes."""

    cache: Cache
    rayjobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    creates: list[str] = field(default_factory=list)
    status_writes: int = 0
    deliver_writes: bool = True
    """Whether a status write reaches the cache at once (False: the watch lags)."""

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        name = obj["metadata"]["name"]
        self.creates.append(name)
        if name in self.rayjobs:
            raise AlreadyExists({"code": 409, "reason": "AlreadyExists"})
        self.rayjobs[name] = copy.deepcopy(dict(obj))
        return self.rayjobs[name]

    async def update_status(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        written = copy.deepcopy(dict(obj))
        rv = int(written["metadata"]["resourceVersion"]) + 1
        written["metadata"]["resourceVersion"] = str(rv)
        self.status_writes += 1
        if self.deliver_writes:
            self.cache.obj = copy.deepcopy(written)
        return written


@dataclass
class Recorder:
    """Records (type, reason, note, action)."""

    events: list[tuple[str, str, str, str | None]] = field(default_factory=list)

    def event(
        self,
        regarding: Mapping[str, Any],
        event_type: EventType,
        reason: str,
        note: str,
        *,
        action: str | None = None,
    ) -> None:
        self.events.append((event_type, reason, note, action))


class CronWorld:
    """The controller, its fakes and a FakeClock whose wall time starts at ``start``."""

    def __init__(self, start: datetime, obj: dict[str, Any] | None = None) -> None:
        self.clock = FakeClock(0.0, wall_start=start)
        self.cache = Cache()
        self.cache.obj = obj
        self.client = Client(self.cache)
        self.recorder = Recorder()
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
            writes = self.client.status_writes
            result = await self.reconcile()
            if self.client.status_writes != writes:
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

    def ticks(self) -> list[str]:
        """The scheduled times of the RayJobs created, in creation order (UTC RFC 3339)."""
        return [
            job["metadata"]["annotations"]["ray.io/cronjob-scheduled-timestamp"]
            for job in self.client.rayjobs.values()
        ]

    @property
    def last_schedule_time(self) -> str | None:
        """``status.lastScheduleTime`` as stored."""
        assert self.cache.obj is not None
        return (self.cache.obj.get("status") or {}).get("lastScheduleTime")


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    """Returns the UTC moment of those fields."""
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
