"""The embedded GCS storage PVC step: create, adopt, drift, deletion policy, a missing claim."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.api.validation import parse_raycluster
from rayop.controllers.raycluster.gcs_storage import (
    AlreadyOwnedError,
    build_gcs_storage_pvc,
    claim_requests,
    pvc_drift,
    reconcile_gcs_storage_pvc,
)
from rayop.kube.resources import PERSISTENT_VOLUME_CLAIMS
from rayop.runtime.reconcile import Request
from rayop.runtime.steps import StatusEdits

from ._fakes import UID, Fakes, context, pod
from ._fixtures import minimal_cluster

OURS = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "rc", "uid": UID}


def _cluster(**storage: Any) -> dict[str, Any]:
    ft: dict[str, Any] = {"backend": "rocksdb"}
    if storage:
        ft["storage"] = storage
    return minimal_cluster(gcsFaultToleranceOptions=ft)


def _pvc(cluster: dict[str, Any]) -> dict[str, Any]:
    parsed, problems = parse_raycluster(cluster)
    assert parsed is not None, problems
    return build_gcs_storage_pvc(parsed)


def _live(pvc: dict[str, Any], **meta: Any) -> dict[str, Any]:
    pvc["metadata"].update(resourceVersion="5", uid="pvc-1", **meta)
    return pvc


def test_the_pvc_has_kuberay_s_name_labels_defaults_and_owner() -> None:
    pvc = _pvc(_cluster())
    assert pvc["metadata"]["name"] == "rc-gcs-pvc"
    assert pvc["metadata"]["labels"] == {"ray.io/cluster": "rc"}
    assert pvc["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
    }
    (ref,) = pvc["metadata"]["ownerReferences"]
    assert ref["uid"] == UID and ref["controller"] is True and ref["kind"] == "RayCluster"


def test_size_class_and_access_modes_are_taken_from_storage() -> None:
    cluster = _cluster(size="2048Mi", storageClassName="ssd", accessModes=["ReadWriteMany"])
    pvc = _pvc(cluster)
    assert pvc["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": "2Gi"}},
        "storageClassName": "ssd",
    }


def test_retain_leaves_the_pvc_without_an_owner() -> None:
    assert "ownerReferences" not in _pvc(_cluster(deletionPolicy="Retain"))["metadata"]


async def test_nothing_without_the_embedded_backend() -> None:
    fakes = Fakes()
    await reconcile_gcs_storage_pvc(context(minimal_cluster(), fakes))
    redis = minimal_cluster(gcsFaultToleranceOptions={"redisAddress": "redis:6379"})
    await reconcile_gcs_storage_pvc(context(redis, fakes))
    assert fakes.api.calls == []


async def test_an_absent_pvc_is_created_with_a_normal_event() -> None:
    fakes = Fakes()
    assert await reconcile_gcs_storage_pvc(context(_cluster(), fakes)) is None
    (create,) = fakes.api.calls_of("create", "PersistentVolumeClaim")
    assert create.body == _pvc(_cluster())
    assert [(e.type, e.reason, e.note) for e in fakes.events.recorded] == [
        ("Normal", "CreatedPVC", "Created GCS storage PVC ns/rc-gcs-pvc")
    ]


async def test_a_failed_create_is_a_warning_and_stops_the_pass() -> None:
    fakes = Fakes()
    fakes.api.fail_every("create", RuntimeError("quota exceeded"), kind="PersistentVolumeClaim")
    with pytest.raises(RuntimeError):
        await reconcile_gcs_storage_pvc(context(_cluster(), fakes))
    assert fakes.events.reasons() == ["FailedToCreatePVC"]
    assert fakes.events.recorded[0].note == (
        "Failed to create GCS storage PVC ns/rc-gcs-pvc, quota exceeded"
    )


async def test_an_owned_pvc_that_agrees_is_left_alone() -> None:
    fakes = Fakes()
    fakes.informers.informer(PERSISTENT_VOLUME_CLAIMS).put(_live(_pvc(_cluster())))
    await reconcile_gcs_storage_pvc(context(_cluster(), fakes))
    assert fakes.api.calls == []
    assert fakes.events.reasons() == []


async def test_an_unowned_pvc_of_that_name_is_adopted() -> None:
    fakes = Fakes()
    leftover = _live(_pvc(_cluster(deletionPolicy="Retain")))  # from an earlier Retain cluster
    fakes.informers.informer(PERSISTENT_VOLUME_CLAIMS).put(leftover)
    await reconcile_gcs_storage_pvc(context(_cluster(), fakes))
    (update,) = fakes.api.calls_of("update", "PersistentVolumeClaim")
    assert [r["uid"] for r in update.body["metadata"]["ownerReferences"]] == [UID]
    assert update.body["metadata"]["resourceVersion"] == "5"
    assert fakes.api.calls_of("create") == [] and fakes.events.reasons() == []


async def test_retain_removes_our_controller_reference_and_keeps_the_others() -> None:
    fakes = Fakes()
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "cm-1"}
    live = _live(_pvc(_cluster()))
    live["metadata"]["ownerReferences"].append(other)
    fakes.informers.informer(PERSISTENT_VOLUME_CLAIMS).put(live)
    await reconcile_gcs_storage_pvc(context(_cluster(deletionPolicy="Retain"), fakes))
    (update,) = fakes.api.calls_of("update", "PersistentVolumeClaim")
    assert update.body["metadata"]["ownerReferences"] == [other]


async def test_a_pvc_another_controller_owns_is_refused_and_untouched() -> None:
    fakes = Fakes()
    foreign = {"kind": "StatefulSet", "name": "db", "uid": "ss-1", "controller": True}
    live = _live(_pvc(_cluster()), ownerReferences=[foreign])
    fakes.informers.informer(PERSISTENT_VOLUME_CLAIMS).put(live)
    with pytest.raises(AlreadyOwnedError, match="already owned by another StatefulSet"):
        await reconcile_gcs_storage_pvc(context(_cluster(), fakes))
    assert fakes.api.calls == []


async def test_drift_is_reported_and_never_written() -> None:
    fakes = Fakes()
    live = _live(_pvc(_cluster()))
    fakes.informers.informer(PERSISTENT_VOLUME_CLAIMS).put(live)
    cluster = _cluster(size="5Gi", storageClassName="ssd", accessModes=["ReadWriteMany"])
    await reconcile_gcs_storage_pvc(context(cluster, fakes))
    assert fakes.api.calls == []
    (event,) = fakes.events.recorded
    assert (event.type, event.reason, event.action) == ("Warning", "FailedToCreatePVC", "Update")
    assert event.note == (
        "GCS storage PVC ns/rc-gcs-pvc already exists and cannot be reconfigured in place "
        "(requested size 5Gi != current 1Gi; storageClassName ssd != current <default>; "
        "accessModes [ReadWriteMany] != current [ReadWriteOnce]); "
        "delete the PVC to recreate it with the new settings"
    )


def test_a_resolved_default_class_and_an_equal_size_are_no_drift() -> None:
    desired = _pvc(_cluster())
    live = _pvc(_cluster(size="1024Mi"))
    live["spec"]["storageClassName"] = "standard"  # the DefaultStorageClass admission plugin
    assert pvc_drift(desired, live) == ""


async def test_a_missing_claim_is_a_warning_a_reason_and_no_pods() -> None:
    fakes = Fakes()
    stop = await reconcile_gcs_storage_pvc(context(_cluster(claimName="mine"), fakes))
    assert stop is not None and stop.status is StatusEdits.DISCARD
    assert fakes.api.calls_of("create") == [] and fakes.api.calls_of("delete") == []
    message = (
        'GcsFaultToleranceOptions.Storage.ClaimName "mine" not found in namespace ns; '
        "the head Pod will not start until it exists"
    )
    assert [(e.type, e.reason, e.note, e.action) for e in fakes.events.recorded] == [
        ("Warning", "FailedToCreatePVC", message, "Validate")
    ]
    (status,) = fakes.api.calls_of("update/status")
    assert status.body["status"]["reason"] == f"FailedToCreatePVC: {message}"


async def test_an_existing_claim_is_used_as_it_is() -> None:
    fakes = Fakes()
    claim = {"metadata": {"name": "mine", "namespace": "ns", "uid": "c-1"}, "spec": {}}
    fakes.informers.informer(PERSISTENT_VOLUME_CLAIMS).put(claim)
    assert await reconcile_gcs_storage_pvc(context(_cluster(claimName="mine"), fakes)) is None
    assert fakes.api.calls == [] and fakes.events.reasons() == []


def test_a_claim_enqueues_the_clusters_naming_it() -> None:
    waiting = _cluster(claimName="mine")
    elsewhere = _cluster(claimName="mine")
    elsewhere["metadata"] = {**elsewhere["metadata"], "name": "other", "namespace": "ns2"}
    claim = {"metadata": {"name": "mine", "namespace": "ns"}}
    assert claim_requests([waiting, elsewhere, _cluster()], claim) == [Request("ns", "rc")]


async def test_a_create_racing_an_unseen_pvc_reads_and_adopts_it() -> None:
    fakes = Fakes()
    unseen = {"metadata": {"name": "rc-gcs-pvc", "namespace": "ns"}}  # on the server, not cached
    fakes.api.put(PERSISTENT_VOLUME_CLAIMS, unseen)
    await reconcile_gcs_storage_pvc(context(_cluster(), fakes))
    assert [c.verb for c in fakes.api.calls] == ["create", "get", "update"]
    (update,) = fakes.api.calls_of("update", "PersistentVolumeClaim")
    assert [r["uid"] for r in update.body["metadata"]["ownerReferences"]] == [UID]
    assert "CreatedPVC" not in fakes.events.reasons()


@pytest.mark.parametrize("storage", [{}, {"claimName": "rc-gcs-pvc"}])
async def test_a_terminating_pvc_holds_a_new_head_back(storage: dict[str, Any]) -> None:
    fakes = Fakes()
    dying = _live(_pvc(_cluster()), deletionTimestamp="2026-01-01T00:00:00Z")
    fakes.informers.informer(PERSISTENT_VOLUME_CLAIMS).put(dying)
    stop = await reconcile_gcs_storage_pvc(context(_cluster(**storage), fakes))
    assert stop is not None and stop.status is StatusEdits.WRITE
    assert stop.result.requeue_after == 2.0
    assert fakes.api.calls == [] and fakes.events.reasons() == []


async def test_a_terminating_pvc_still_used_by_the_head_is_left_to_it() -> None:
    fakes = Fakes()
    dying = _live(_pvc(_cluster()), deletionTimestamp="2026-01-01T00:00:00Z")
    fakes.informers.informer(PERSISTENT_VOLUME_CLAIMS).put(dying)
    fakes.pods.put(pod("head", "head", "headgroup"))
    assert await reconcile_gcs_storage_pvc(context(_cluster(), fakes)) is None
    assert fakes.api.calls == []
