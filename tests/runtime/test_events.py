"""The event recorder writes events.k8s.io/v1 Events as client-go's tools/events does (a series
per isomorphic key: create, one patch, counts written by the 6-minute and 30-minute sweeps, on
client-go's period and phase),
retries what cannot reach the server, never raises, and counts every event it does not write."""

from __future__ import annotations

import asyncio
from typing import Any

from rayop.kube.errors import AlreadyExists, ApiError, Forbidden, NotFound, TransportError
from rayop.runtime.events.metrics import EventMetrics
from rayop.runtime.events.recorder import EventRecorder
from rayop.testing import settle
from rayop.testing.clock import FakeClock

CLUSTER: dict[str, Any] = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "metadata": {"name": "c1", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
}


def status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "code": code, "reason": reason, "message": reason}


class FakeEventApi:
    """Records every call; ``failures`` are raised, one per call, before answering."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.patch_types: list[str] = []
        self.block: asyncio.Event | None = None

    async def _answer(self) -> None:
        if self.block is not None:
            await self.block.wait()
        if self.failures:
            raise self.failures.pop(0)

    async def create(
        self, res: Any, obj: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        self.calls.append(("create", obj["metadata"]["name"], obj))
        await self._answer()
        return obj

    async def patch(
        self,
        res: Any,
        name: str,
        body: Any,
        *,
        namespace: str | None = None,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> dict[str, Any]:
        self.calls.append(("patch", name, body))
        self.patch_types.append(patch_type)
        await self._answer()
        return body  # type: ignore[no-any-return]

    def verbs(self) -> list[str]:
        return [c[0] for c in self.calls]


def recorder_for(api: FakeEventApi, clock: FakeClock, **options: Any) -> EventRecorder:
    return EventRecorder(
        api,
        reporting_controller="ray.io/raycluster-controller",
        reporting_instance="op-1",
        clock=clock,
        **options,
    )


def fail(api: FakeEventApi) -> None:
    raise AssertionError(api.calls)


async def test_the_first_event_is_created_the_second_starts_a_series_and_later_ones_count() -> None:
    api, clock = FakeEventApi(), FakeClock()
    recorder = recorder_for(api, clock)
    recorder.event(CLUSTER, "Warning", "FailedToCreatePod", "quota exceeded", action="CreatePod")
    clock.step(5)
    recorder.event(CLUSTER, "Warning", "FailedToCreatePod", "quota exceeded", action="CreatePod")
    recorder.event(CLUSTER, "Warning", "FailedToCreatePod", "other note", action="CreatePod")
    recorder.event(CLUSTER, "Normal", "CreatedService", "created head service")
    await recorder.flush()
    # Writes of one Event keep their order; different Events may interleave.
    first = [c for c in api.calls if c[2].get("reason") != "CreatedService"]
    (v1, name, event), (v2, n2, p2) = first
    ((v3, _, other),) = [c for c in api.calls if c[2].get("reason") == "CreatedService"]
    assert (v1, v2, v3) == ("create", "patch", "create")
    assert n2 == name and name.startswith("c1.") and int(name[3:], 16) > 0
    assert event["apiVersion"] == "events.k8s.io/v1" and event["type"] == "Warning"
    assert event["reportingController"] == "ray.io/raycluster-controller"
    assert event["reportingInstance"] == "op-1" and event["action"] == "CreatePod"
    assert event["regarding"] == {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": "c1",
        "namespace": "ns",
        "uid": "u1",
        "resourceVersion": "7",
    }
    assert p2 == {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:16:45.000000Z"}}
    assert api.patch_types == ["strategic"]
    assert other["reason"] == "CreatedService" and other["metadata"]["name"] != name
    assert recorder.unsent()["aggregated"] == 1  # the third occurrence only raised the count
    await recorder.close()


async def test_the_finish_sweep_writes_the_final_count_and_ends_the_series() -> None:
    api, clock = FakeEventApi(), FakeClock()
    recorder = recorder_for(api, clock)
    for _ in range(5):
        recorder.event(CLUSTER, "Warning", "FailedToCreatePod", "quota exceeded")
    recorder.event(
        {**CLUSTER, "metadata": {**CLUSTER["metadata"], "name": "single"}},
        "Normal",
        "Created",
        "once",
    )
    await recorder.flush()
    first = next(c[1] for c in api.calls if c[2].get("reason") == "FailedToCreatePod")
    assert sorted(api.verbs()) == ["create", "create", "patch"]
    clock.step(360)  # the first finish sweep (every 6 minutes): nothing is older than 6 minutes
    await settle()
    assert len(api.calls) == 3
    clock.step(60)  # a minute's sweep (single Events only) ends no series
    await settle()
    await recorder.flush()
    assert len(api.calls) == 3
    clock.step(240)
    await settle()
    assert len(api.calls) == 3
    clock.step(60)  # the second finish sweep, 12 minutes in: the series ends, as client-go's
    await settle()
    await recorder.flush()
    assert api.calls[3] == (
        "patch",
        first,
        {"series": {"count": 5, "lastObservedTime": "2026-01-01T00:16:40.000000Z"}},
    )
    recorder.event(CLUSTER, "Warning", "FailedToCreatePod", "quota exceeded")
    await recorder.flush()
    assert api.calls[-1][0] == "create" and api.calls[-1][1] != first
    assert recorder.unsent()["aggregated"] == 3
    await recorder.close()


async def test_the_refresh_sweep_patches_every_live_series_every_30_minutes() -> None:
    api, clock = FakeEventApi(), FakeClock()
    recorder = recorder_for(api, clock)
    for _ in range(3):
        recorder.event(CLUSTER, "Warning", "FailedToCreatePod", "quota exceeded")
    await settle()  # the sweeps start sleeping with the first event
    for _ in range(6):  # observed every 5 minutes: the series never finishes
        clock.step(300)
        await settle()
        recorder.event(CLUSTER, "Warning", "FailedToCreatePod", "quota exceeded")
    await settle()
    await recorder.flush()
    assert api.verbs() == ["create", "patch", "patch"]
    assert api.calls[-1][2]["series"]["count"] == 8  # at 30 minutes, before the 9th
    await recorder.close()


async def test_transport_errors_are_retried_every_10_seconds_up_to_12_tries() -> None:
    api = FakeEventApi(*[TransportError(status(0, "Unreachable")) for _ in range(12)])
    clock = FakeClock()
    recorder = recorder_for(api, clock)
    recorder.event(CLUSTER, "Normal", "Created", "n")
    await recorder.flush()
    for _ in range(11):
        clock.step(12.5)  # 10 s, jittered by up to +25 %
        await settle()
        await recorder.flush()
    assert api.verbs() == ["create"] * 12
    assert recorder.unsent()["retries_exhausted"] == 1
    await recorder.close()
    assert not clock.has_sleepers()


async def test_a_refused_create_is_not_retried_and_its_series_is_kept_as_client_go() -> None:
    # client-go's tools/events puts an Event in its cache before writing it and keeps it when
    # the server refuses it (a terminating namespace answers 403): the second occurrence is a
    # series PATCH (404: nothing stored), then a create with count 2; later ones only count.
    api, clock = FakeEventApi(Forbidden(status(403, "Forbidden"))), FakeClock()
    recorder = recorder_for(api, clock)
    recorder.event(CLUSTER, "Normal", "R", "n")
    await recorder.flush()
    recorder.event({"bogus": True}, "Normal", "R", "n")  # a reference without metadata
    await recorder.flush()
    assert api.verbs() == ["create", "create"]
    assert recorder.unsent()["rejected"] == 1
    api.failures = [NotFound(status(404, "NotFound")), Forbidden(status(403, "Forbidden"))]
    recorder.event(CLUSTER, "Normal", "R", "n")
    await recorder.flush()
    assert api.verbs()[2:] == ["patch", "create"]
    assert api.calls[3][2]["series"]["count"] == 2
    for _ in range(5):
        recorder.event(CLUSTER, "Normal", "R", "n")
    await recorder.flush()
    assert api.verbs()[4:] == [], "later repeats only raise the count in memory"
    assert recorder.unsent() == {**recorder.unsent(), "rejected": 2, "aggregated": 5}
    await recorder.close()


async def test_a_patch_of_a_deleted_event_creates_it_with_its_series() -> None:
    api, clock = FakeEventApi(), FakeClock()
    recorder = recorder_for(api, clock)
    recorder.event(CLUSTER, "Normal", "R", "n")
    await recorder.flush()
    api.failures = [NotFound(status(404, "NotFound"))]
    recorder.event(CLUSTER, "Normal", "R", "n")
    await recorder.flush()
    assert api.verbs() == ["create", "patch", "create"]
    recreated = api.calls[2][2]
    assert recreated["series"]["count"] == 2 and recreated["note"] == "n"
    assert recreated["metadata"]["name"] == api.calls[0][1]
    api.failures = [NotFound(status(404, "NotFound")), AlreadyExists(status(409, "AlreadyExists"))]
    clock.step(720)  # the final count: the patch finds none, the create finds one: retried
    await settle()
    await recorder.flush()
    clock.step(12.5)
    await settle()
    await recorder.flush()
    assert api.verbs()[3:] == ["patch", "create", "patch"]
    await recorder.close()


async def test_writes_beyond_the_memory_budget_are_dropped_and_counted() -> None:
    api, clock = FakeEventApi(), FakeClock()
    api.block = asyncio.Event()
    recorder = recorder_for(api, clock, max_pending_bytes=10_000)
    for i in range(100):
        recorder.event(
            {**CLUSTER, "metadata": {**CLUSTER["metadata"], "name": f"c{i}"}},
            "Normal",
            "Created",
            "x" * 100,
        )
    await settle()
    assert 0 < recorder.dropped < 100
    assert recorder.unsent()["queue_full"] == recorder.dropped
    api.block.set()
    await recorder.flush()
    assert len(api.calls) == 100 - recorder.dropped
    await recorder.close()


async def test_writes_still_queued_at_close_are_counted_as_shutdown() -> None:
    api, clock = FakeEventApi(), FakeClock(autojump=True)
    api.block = asyncio.Event()
    recorder = recorder_for(api, clock)
    for i in range(20):
        recorder.event(
            {**CLUSTER, "metadata": {**CLUSTER["metadata"], "name": f"c{i}"}},
            "Normal",
            "Created",
            "n",
        )
    await settle()
    in_flight = len(api.calls)  # one per writer that got a write: at most 8
    assert 0 < in_flight <= 8
    await recorder.close()  # the writes in flight are cancelled; the queued ones are counted
    assert recorder.unsent()["shutdown"] == 20 - in_flight


async def test_a_series_patch_never_overtakes_its_create() -> None:
    api, clock = FakeEventApi(), FakeClock()
    api.block = asyncio.Event()
    recorder = recorder_for(api, clock)
    recorder.event(CLUSTER, "Normal", "Created", "n")
    recorder.event(CLUSTER, "Normal", "Created", "n")
    await settle()
    assert api.verbs() == ["create"]  # the patch waits behind it, though 7 writers are idle
    api.block.set()
    await recorder.flush()
    assert api.verbs() == ["create", "patch"]
    await recorder.close()


async def test_counters_are_exported_per_controller_and_reason() -> None:
    metrics, clock = EventMetrics(), FakeClock()
    recorder = EventRecorder(FakeEventApi(), reporting_controller="c", clock=clock, metrics=metrics)
    recorder.event(CLUSTER, "Normal", "R", "n")
    recorder.event(CLUSTER, "Normal", "R", "n")
    recorder.event(CLUSTER, "Normal", "R", "n")
    await recorder.flush()
    sample = metrics.registry.get_sample_value
    assert sample("rayop_events_recorded_total", {"controller": "c", "type": "Normal"}) == 3
    assert sample("rayop_events_recorded_total", {"controller": "c", "type": "Warning"}) == 0
    assert sample("rayop_events_unsent_total", {"controller": "c", "reason": "aggregated"}) == 1
    assert sample("rayop_events_unsent_total", {"controller": "c", "reason": "queue_full"}) == 0
    await recorder.close()


async def test_event_names_are_unique_even_on_a_frozen_clock() -> None:
    api, clock = FakeEventApi(), FakeClock()
    recorder = recorder_for(api, clock)
    for reason in ("A", "B", "C"):
        recorder.event(CLUSTER, "Normal", reason, "n")
    recorder.event(
        {**CLUSTER, "metadata": {**CLUSTER["metadata"], "name": "Not_DNS"}}, "Normal", "A", "n"
    )
    await recorder.flush()
    names = {c[2]["regarding"]["name"] + "/" + c[2]["reason"]: c[1] for c in api.calls}
    assert len(set(names.values())) == 4
    assert all(names[f"c1/{r}"].startswith("c1.") for r in ("A", "B", "C"))
    assert len(names["Not_DNS/A"]) == 36  # not a DNS subdomain: a UUID, as client-go
    await recorder.close()


async def test_any_api_error_is_swallowed() -> None:
    api = FakeEventApi(ApiError(status(500, "InternalError")))
    recorder = recorder_for(api, FakeClock())
    recorder.event(CLUSTER, "Normal", "R", "n")
    await recorder.flush()
    assert recorder.unsent()["rejected"] == 1
    await recorder.close()
