"""The small controllers' opening: gone, deleting, managed by another, behind our own write,
parse, each ending the pass the way the rule says."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rayop.api.raycluster import RayCluster
from rayop.api.validation.raycluster import parse_raycluster
from rayop.controllers.kit.opening import Opened, Opening, Unparsed
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request, Result
from rayop.testing import FakeCache, FakeClock


def cluster(**meta: Any) -> dict[str, Any]:
    spec = meta.pop("spec", {"headGroupSpec": {"template": {"spec": {"containers": []}}}})
    metadata = {"name": "rc", "namespace": "ns", "resourceVersion": "5", **meta}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata, "spec": spec}


REQUEST = Request("ns", "rc")


def opening(obj: Mapping[str, Any] | None, **kwargs: Any) -> Opening[RayCluster]:
    cache = FakeCache(*([obj] if obj is not None else []))
    return Opening(cache=cache, parse=parse_raycluster, **kwargs)


def test_an_object_not_in_the_cache_ends_the_pass() -> None:
    assert opening(None).open(REQUEST) == Result()


def test_an_object_being_deleted_ends_the_pass_unless_the_kind_does_not_look() -> None:
    deleting = cluster(deletionTimestamp="2026-01-01T00:00:00Z")
    assert opening(deleting).open(REQUEST) == Result()
    assert isinstance(opening(deleting, skip_deleting=False).open(REQUEST), Opened)


def test_an_object_managed_by_another_controller_ends_the_pass() -> None:
    spec = {"managedBy": "kueue.x-k8s.io/multikueue", "headGroupSpec": {}}
    assert opening(cluster(spec=spec)).open(REQUEST) == Result()


def test_a_cache_behind_our_own_write_waits_for_it() -> None:
    own_writes = OwnWrites(clock=FakeClock())
    own_writes.record(cluster(resourceVersion="9"))
    opened = opening(cluster(), own_writes=own_writes, behind_requeue=3.0).open(REQUEST)
    assert opened == Result(requeue_after=3.0)


def test_a_parsed_object_goes_on_and_one_that_does_not_parse_says_why() -> None:
    opened = opening(cluster()).open(REQUEST)
    assert isinstance(opened, Opened) and opened.model.name == "rc"
    unparsed = opening(cluster(spec={"headGroupSpec": 7})).open(REQUEST)
    assert isinstance(unparsed, Unparsed)
    assert unparsed.problems and "headGroupSpec" in unparsed.problems[0].message
