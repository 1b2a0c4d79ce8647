"""The event recorder writes events.k8s.io/v1 Events, aggregates repeats, and never raises."""

from __future__ import annotations

from typing import Any

from rayop.runtime.events import EventRecorder
from rayop.testing.clock import FakeClock

CLUSTER = {"apiVersion": "ray.io/v1", "kind": "RayCluster",
           "metadata": {"name": "c1", "namespace": "ns", "uid": "u1", "resourceVersion": "7"}}


class FakeEventApi:
    def __init__(self, *, failing: bool = False) -> None:
        self.failing = failing
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    async def create(self, res: Any, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("create", obj["metadata"]["name"], obj))
        if self.failing:
            raise ConnectionError("api down")
        return obj

    async def patch(self, res: Any, name: str, body: Any, *, namespace: str | None = None,
                    patch_type: str = "merge", subresource: str | None = None) -> dict[str, Any]:
        self.calls.append(("patch", name, body))
        return body  # type: ignore[no-any-return]


async def test_first_event_is_created_and_repeats_become_a_series() -> None:
    api, clock = FakeEventApi(), FakeClock()
    recorder = EventRecorder(api, reporting_controller="ray.io/raycluster-controller", reporting_instance="op-1", clock=clock)
    recorder.event(CLUSTER, "Warning", "FailedToCreatePod", "quota exceeded", action="CreatePod")
    clock.step(5)
    recorder.event(CLUSTER, "Warning", "FailedToCreatePod", "quota exceeded", action="CreatePod")
    recorder.event(CLUSTER, "Warning", "FailedToCreatePod", "quota exceeded", action="CreatePod")
    recorder.event(CLUSTER, "Normal", "CreatedService", "created head service")
    await recorder.flush()
    (v1, name, event), (v2, n2, p2), (v3, _, p3), (v4, _, other) = api.calls
    assert (v1, v2, v3, v4) == ("create", "patch", "patch", "create")
    assert n2 == name and name.startswith("c1.")
    assert event["apiVersion"] == "events.k8s.io/v1" and event["type"] == "Warning"
    assert event["reportingController"] == "ray.io/raycluster-controller"
    assert event["reportingInstance"] == "op-1" and event["action"] == "CreatePod"
    assert event["regarding"] == {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "c1",
                                  "namespace": "ns", "uid": "u1", "resourceVersion": "7"}
    assert p2["series"]["count"] == 2 and p3["series"]["count"] == 3
    assert other["reason"] == "CreatedService"
    clock.step(400)  # outside the 6-minute window: a new Event
    recorder.event(CLUSTER, "Warning", "FailedToCreatePod", "quota exceeded", action="CreatePod")
    await recorder.flush()
    assert api.calls[-1][0] == "create" and api.calls[-1][1] != name
    await recorder.close()


async def test_write_failures_are_swallowed() -> None:
    api = FakeEventApi(failing=True)
    recorder = EventRecorder(api, reporting_controller="x", clock=FakeClock())
    recorder.event(CLUSTER, "Normal", "R", "n")
    recorder.event({"bogus": True}, "Normal", "R", "n")
    await recorder.flush()
    recorder.event(CLUSTER, "Normal", "R", "n")  # the failed Event was forgotten: created anew
    await recorder.flush()
    assert [c[0] for c in api.calls] == ["create", "create", "create"]
    await recorder.close()
