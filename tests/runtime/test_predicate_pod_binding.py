"""A pod's binding to a node (the scheduler's only change) is told apart from every other pod
update; a controller that reads neither ``spec.nodeName`` nor ``PodScheduled`` may skip it."""

from __future__ import annotations

import copy
from typing import Any

from rayop.kube.resources import PODS
from rayop.runtime.informers.frozen import freeze_json
from rayop.runtime.informers.shared_informer import SharedInformer
from rayop.runtime.informers.sources import owns
from rayop.runtime.predicate import is_pod_binding, not_pod_binding
from rayop.runtime.reconcile import Request
from rayop.testing import eventually

from .informer_fakes import FakeApi


def created() -> dict[str, Any]:
    """A worker pod as the API server returns it on create (Pending, not scheduled)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "w-1",
            "namespace": "ns",
            "resourceVersion": "10",
            "labels": {"ray.io/node-type": "worker"},
            "managedFields": [{"manager": "rayop", "operation": "Update"}],
        },
        "spec": {"containers": [{"name": "ray-worker"}], "restartPolicy": "Never"},
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


def bound(pod: dict[str, Any], rv: str = "11") -> dict[str, Any]:
    """The same pod after kube-apiserver applied the scheduler's binding."""
    out = copy.deepcopy(pod)
    out["metadata"]["resourceVersion"] = rv
    out["metadata"]["managedFields"].append({"manager": "kube-scheduler", "operation": "Update"})
    out["spec"]["nodeName"] = "kwok-node-0"
    out["status"].setdefault("conditions", []).append(
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-02T02:00:00Z"}
    )
    return out


def test_the_binding_alone_is_a_binding_frozen_or_not() -> None:
    pod = created()
    assert is_pod_binding(pod, bound(pod))
    assert is_pod_binding(freeze_json(pod), freeze_json(bound(pod)))
    assert not not_pod_binding.update(pod, bound(pod))


def test_every_other_change_passes() -> None:
    pod = bound(created())
    started = copy.deepcopy(pod)
    started["metadata"]["resourceVersion"] = "12"
    started["status"]["phase"] = "Running"
    relabelled = bound(created())
    relabelled["metadata"]["labels"]["x"] = "y"
    deleting = bound(created())
    deleting["metadata"]["deletionTimestamp"] = "2026-12-02T02:00:01Z"
    ready_too = bound(created())
    ready_too["status"]["conditions"].append({"type": "Ready", "status": "False"})
    for new in (started, relabelled, deleting, ready_too):
        assert not is_pod_binding(created(), new)
        assert not_pod_binding.update(created(), new)
    assert not_pod_binding.update(pod, started)


def test_a_resync_an_identical_object_passes() -> None:
    pod = bound(created())
    assert not is_pod_binding(pod, pod)  # same resourceVersion: a resync, not a binding
    assert not_pod_binding.update(pod, copy.deepcopy(pod))


def test_creates_deletes_and_generic_events_pass() -> None:
    pod = created()
    assert not_pod_binding.create(pod)
    assert not_pod_binding.delete(pod)
    assert not_pod_binding.generic(pod)


async def test_an_owner_source_with_it_skips_the_binding_and_passes_the_start() -> None:
    api = FakeApi()
    ref = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": "c1",
        "uid": "u1",
        "controller": True,
    }
    pod = created()
    pod["metadata"]["namespace"] = "default"
    pod["metadata"]["ownerReferences"] = [ref]
    api.put(pod)
    informer = SharedInformer(api, PODS)
    source = owns(informer, "RayCluster", "ray.io", not_pod_binding)
    enqueued: list[Request] = []
    source.start(lambda request, priority=None: enqueued.append(request))
    try:
        await eventually(source.has_synced)
        enqueued.clear()
        scheduled = api.put(bound(api.objects["default/w-1"]))
        started = copy.deepcopy(scheduled)
        started["status"]["phase"] = "Running"
        started_rv = api.put(started)["metadata"]["resourceVersion"]
        await eventually(lambda: informer.reflector.last_sync_resource_version == started_rv)
        assert enqueued == [Request("default", "c1")]  # the start only
    finally:
        await informer.stop()
