"""The kit's fake world: the fake client answers as an API server would where a pass notices,
the fake cache selects by labels as the informer does, the sink records events in order."""

from __future__ import annotations

import pytest

from rayop.kube.errors import AlreadyExists, Conflict, NotFound
from rayop.kube.resource import Resource
from rayop.kube.resources import PODS, RAY_CLUSTERS
from rayop.runtime.events.recorder import EventSink
from rayop.runtime.informers.cache_reader import CacheReader
from rayop.testing import FakeCache, FakeClient, RecordingEventSink, api_error


def pod(name: str, **labels: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "ns", "labels": labels}}


async def test_writes_bump_the_resource_version_and_creates_get_a_uid_and_a_name() -> None:
    client = FakeClient()
    made = await client.create(PODS, {"metadata": {"generateName": "w-"}}, namespace="ns")
    assert made["metadata"]["name"].startswith("w-") and made["metadata"]["uid"]
    again = await client.update(PODS, made)
    assert int(again["metadata"]["resourceVersion"]) > int(made["metadata"]["resourceVersion"])
    assert client.verbs() == ["create", "update"]
    assert client.calls_of("create", "Pod")[0].namespace == "ns"


async def test_missing_and_duplicate_objects_get_the_servers_errors() -> None:
    client = FakeClient()
    with pytest.raises(NotFound):
        await client.get(PODS, "nope", namespace="ns")
    await client.create(PODS, pod("a"), namespace="ns")
    with pytest.raises(AlreadyExists):
        await client.create(PODS, pod("a"), namespace="ns")
    with pytest.raises(NotFound):
        await client.delete(PODS, "nope", namespace="ns")


async def test_a_queued_failure_hits_the_next_call_of_that_verb_and_kind_only() -> None:
    client = FakeClient()
    client.fail_next("update/status", api_error(Conflict, 409, "Conflict", "stale"), kind="RayCluster")
    await client.update_status(PODS, pod("p"))  # another kind: not failed
    with pytest.raises(Conflict):
        await client.update_status(RAY_CLUSTERS, {"metadata": {"name": "rc", "namespace": "ns"}})
    await client.update_status(RAY_CLUSTERS, {"metadata": {"name": "rc", "namespace": "ns"}})


async def test_a_delete_marks_an_object_with_finalizers_and_removes_one_without() -> None:
    client = FakeClient()
    client.put(RAY_CLUSTERS, {"metadata": {"name": "rc", "namespace": "ns", "finalizers": ["f"]}})
    marked = await client.delete(RAY_CLUSTERS, "rc", namespace="ns")
    assert marked["metadata"]["deletionTimestamp"]
    assert client.stored(RAY_CLUSTERS, "ns", "rc") is not None
    await client.patch(RAY_CLUSTERS, "rc", {"metadata": {"finalizers": []}}, namespace="ns")
    await client.delete(RAY_CLUSTERS, "rc", namespace="ns", propagation_policy="Foreground")
    assert client.stored(RAY_CLUSTERS, "ns", "rc") is None
    assert client.calls_of("delete")[-1].propagation_policy == "Foreground"


def test_the_cache_selects_by_labels_as_the_informer_does() -> None:
    cache: CacheReader = FakeCache(pod("h", role="head"), pod("w", role="worker"), pod("x"))
    assert [o["metadata"]["name"] for o in cache.list("ns", label_selector={"role": "head"})] == ["h"]
    names = {o["metadata"]["name"] for o in cache.list(label_selector="role in (head,worker)")}
    assert names == {"h", "w"}
    assert cache.get("ns", "x") is not None and cache.get("other", "x") is None


def test_the_sink_keeps_every_event_in_order() -> None:
    recorded = RecordingEventSink()
    sink: EventSink = recorded
    sink.event(pod("p") | {"kind": "Pod"}, "Normal", "Created", "made it", action="Create")
    sink.event(pod("p") | {"kind": "Pod"}, "Warning", "Failed", "broke")
    assert recorded.reasons() == ["Created", "Failed"]
    assert recorded.recorded[0].action == "Create" and recorded.recorded[1].type == "Warning"
    assert recorded.notes("Failed") == ["broke"]


async def test_objects_of_one_plural_in_two_groups_are_apart() -> None:
    client = FakeClient()
    volcano = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
    plugins = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
    await client.create(volcano, pod("g"), namespace="ns")
    assert client.stored(plugins, "ns", "g") is None and client.stored_all(plugins) == []
    await client.create(plugins, pod("g"), namespace="ns")  # no AlreadyExists
    assert len(client.stored_all(volcano)) == 1


async def test_writes_are_the_calls_that_are_not_reads_failed_or_not() -> None:
    client = FakeClient()
    client.put(PODS, pod("a"))
    await client.get(PODS, "a", namespace="ns")
    await client.list(PODS)
    with pytest.raises(AlreadyExists):
        await client.create(PODS, pod("a"), namespace="ns")
    await client.delete(PODS, "a", namespace="ns")
    assert [c.verb for c in client.writes()] == ["create", "delete"]
    assert client.writes("RayCluster") == []


async def test_a_fed_cache_sees_every_write_at_once_until_the_feed_stops() -> None:
    client, cache = FakeClient(), FakeCache()
    client.feed(PODS, cache)
    await client.create(PODS, pod("a"), namespace="ns")
    await client.update_status(PODS, pod("a") | {"status": {"phase": "Running"}})
    held, stored = cache.get("ns", "a"), client.stored(PODS, "ns", "a")
    assert held is not None and held["status"] == {"phase": "Running"}
    assert stored is not None and held["metadata"] == stored["metadata"]
    await client.delete(PODS, "a", namespace="ns")
    assert cache.get("ns", "a") is None
    client.feed(PODS, None)
    await client.create(PODS, pod("b"), namespace="ns")
    assert cache.get("ns", "b") is None and len(cache) == 0


async def test_a_delete_whose_precondition_fails_conflicts_and_keeps_the_object() -> None:
    client = FakeClient()
    client.put(PODS, pod("a") | {"metadata": {"name": "a", "namespace": "ns", "uid": "u1"}})
    with pytest.raises(Conflict):
        await client.delete(PODS, "a", namespace="ns", preconditions={"uid": "u0"})
    assert client.stored(PODS, "ns", "a") is not None
    await client.delete(PODS, "a", namespace="ns", preconditions={"uid": "u1"})
    assert client.calls_of("delete")[-1].body["preconditions"] == {"uid": "u1"}
    assert client.stored(PODS, "ns", "a") is None


def test_the_cache_drops_one_object_or_all() -> None:
    cache = FakeCache(pod("a"), pod("b"), pod("c"))
    cache.remove("ns", "a")
    assert [o["metadata"]["name"] for o in cache.list()] == ["b", "c"]
    cache.clear()
    assert len(cache) == 0 and cache.list() == []


async def test_a_verb_made_to_fail_every_time_fails_until_told_otherwise() -> None:
    client = FakeClient()
    refused = api_error(Conflict, 409, "Conflict", "no")
    client.fail_every("create", refused, kind="Pod")
    for name in ("a", "b"):
        with pytest.raises(Conflict):
            await client.create(PODS, pod(name), namespace="ns")
    await client.create(RAY_CLUSTERS, pod("rc"), namespace="ns")  # another kind
    client.fail_every("create", None, kind="Pod")
    await client.create(PODS, pod("a"), namespace="ns")
    assert [c.kind for c in client.writes()] == ["Pod", "Pod", "RayCluster", "Pod"]
    assert [o["metadata"]["name"] for o in client.stored_all(PODS)] == ["a"]
