"""KubeRay's RayCronJob samples on the embedded control plane, with the RayCronJob gate on.

The samples are read from KubeRay v1.7.0's source archive (its ``config/samples``; the chart's
``samples`` directory has none). The every-minute sample's schedule is shortened to
``@every 2s`` so the test sees several ticks: a RayJob's name carries the tick's *minute*, so
ticks within one minute share one RayJob (the later creates meet AlreadyExists), exactly as
KubeRay names them, while ``lastScheduleTime`` moves on at every tick.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rayop.api.common import parse_time
from rayop.controllers.raycronjob.reconciler import RAY_CRON_JOBS
from rayop.kube.errors import ApiError
from rayop.kube.resources import CONFIGMAPS, RAY_JOBS
from rayop.runtime.reconcile import ReconcileFunc, Request, Result
from rayop.testing import Kind, PlaneUnderTest, eventually, open_control_plane, open_operator
from tests.kuberay_compat import source_sample

GATES = {"RayCronJob": True}
CRON_ONLY: tuple[Kind, ...] = ("RayCronJob",)


def _sample(name: str) -> list[dict[str, Any]]:
    return source_sample(name)


def _of_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind]
    return copy.deepcopy(doc)


@pytest.fixture
async def plane() -> AsyncIterator[PlaneUnderTest]:
    async with open_control_plane() as running:

        async def served() -> bool:
            try:
                await running.client.list(RAY_CRON_JOBS)
            except ApiError:
                return False
            return True

        await eventually(served, what="raycronjobs served")
        yield running


class Counting:
    """Wraps a reconcile function and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, reconcile: ReconcileFunc) -> ReconcileFunc:
        async def counted(request: Request) -> Result:
            self.calls += 1
            return await reconcile(request)

        return counted


def _children(plane: PlaneUnderTest, namespace: str, cron: str) -> list[dict[str, Any]]:
    return [
        job
        for job in plane.objects(RAY_JOBS, namespace)
        if (job["metadata"].get("labels") or {}).get("ray.io/cronjob-name") == cron
    ]


async def test_the_sample_creates_rayjobs_on_schedule_named_by_minute(
    plane: PlaneUnderTest,
) -> None:
    docs = _sample("ray-cronjob.sample.yaml")
    cron = _of_kind(docs, "RayCronJob")
    cron["spec"]["schedule"] = "@every 2s"
    ns = "cron-sample"
    await plane.create(CONFIGMAPS, _of_kind(docs, "ConfigMap"), ns)
    async with open_operator(
        plane, controllers=("RayCluster", "RayJob", "RayCronJob"), feature_gates=GATES
    ):
        created = await plane.create(RAY_CRON_JOBS, cron, ns)
        seen: set[str] = set()

        def three_ticks() -> bool:
            stored = plane.stored(RAY_CRON_JOBS, ns, "raycronjob-sample") or {}
            last = (stored.get("status") or {}).get("lastScheduleTime")
            if last:
                seen.add(last)
            return len(seen) >= 3

        await eventually(three_ticks, timeout=30, what="three ticks of @every 2s")
        born = parse_time(created["metadata"]["creationTimestamp"])
        ticks = sorted(parse_time(t) for t in seen)
        steps = [(b - a).total_seconds() for a, b in itertools.pairwise(ticks)]
        assert all(s % 2 == 0 and s > 0 for s in steps), steps
        assert (ticks[0] - born).total_seconds() % 2 == 0
        children = _children(plane, ns, "raycronjob-sample")
        minutes = {int(t.timestamp()) // 60 for t in ticks}
        names = {job["metadata"]["name"] for job in children}
        assert {f"raycronjob-sample-{m}" for m in minutes} <= names
        first = min(children, key=lambda job: job["metadata"]["name"])
        assert first["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCronJob",
                "name": "raycronjob-sample",
                "uid": created["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        stamp = parse_time(first["metadata"]["annotations"]["ray.io/cronjob-scheduled-timestamp"])
        assert f"raycronjob-sample-{int(stamp.timestamp()) // 60}" == first["metadata"]["name"]
        assert first["spec"]["entrypoint"] == cron["spec"]["jobTemplate"]["entrypoint"]
        name = first["metadata"]["name"]

        def started() -> bool:
            job = plane.stored(RAY_JOBS, ns, name) or {}
            return bool((job.get("status") or {}).get("jobDeploymentStatus"))

        await eventually(started, timeout=30, what="the RayJob controller took the child")


async def test_the_time_zone_sample_waits_for_its_tick_and_unknown_fields_are_pruned(
    plane: PlaneUnderTest,
) -> None:
    cron = _of_kind(_sample("ray-cronjob-timezone.sample.yaml"), "RayCronJob")
    # batch/v1 CronJob's fields: KubeRay v1.7's RayCronJob has none of them.
    cron["spec"]["concurrencyPolicy"] = "Forbid"
    cron["spec"]["successfulJobsHistoryLimit"] = 1
    cron["spec"]["startingDeadlineSeconds"] = 10
    ns = "cron-timezone"
    passes = Counting()
    async with open_operator(
        plane, controllers=CRON_ONLY, feature_gates=GATES, wrap_reconcile=passes
    ):
        await plane.create(RAY_CRON_JOBS, cron, ns)
        stored = plane.stored(RAY_CRON_JOBS, ns, "raycronjob-timezone-sample")
        assert stored is not None
        assert stored["spec"]["timeZone"] == "Asia/Taipei"
        assert stored["spec"]["schedule"] == "45 21 * * *"
        for pruned in (
            "concurrencyPolicy",
            "successfulJobsHistoryLimit",
            "startingDeadlineSeconds",
        ):
            assert pruned not in stored["spec"]
        await eventually(lambda: passes.calls >= 1, what="a pass")
        assert _children(plane, ns, "raycronjob-timezone-sample") == []
        assert "status" not in stored or not stored["status"].get("lastScheduleTime")


async def test_a_schedule_that_does_not_parse_is_a_warning_event_not_a_crash_loop(
    plane: PlaneUnderTest,
) -> None:
    cron = _of_kind(_sample("ray-cronjob.sample.yaml"), "RayCronJob")
    cron["spec"]["schedule"] = "*/0 * * * *"
    ns = "cron-invalid"
    passes = Counting()
    async with open_operator(
        plane, controllers=CRON_ONLY, feature_gates=GATES, wrap_reconcile=passes
    ):
        await plane.create(RAY_CRON_JOBS, cron, ns)
        await eventually(
            lambda: bool(plane.events(ns, "InvalidRayCronJobSpec")), what="InvalidRayCronJobSpec"
        )
        (event,) = plane.events(ns, "InvalidRayCronJobSpec")
        assert event["type"] == "Warning"
        assert event["action"] == "Validate"
        assert event["note"] == (
            f"{ns}/raycronjob-sample: invalid cron schedule: step of range should be a "
            "positive number: */0"
        )
        reporter = event.get("reportingController") or event.get("reportingComponent")
        assert reporter == "raycronjob-controller"
        assert _children(plane, ns, "raycronjob-sample") == []
        # An absence is the behaviour: a crash loop would have retried several times by now.
        await asyncio.sleep(1.0)
        assert passes.calls == 1
