"""The RayCluster and the RayJob's own head Service built for a RayJob, and its dashboard URL."""

from __future__ import annotations

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.rayjob.cluster import (
    build_raycluster,
    build_rayjob_head_service,
    dashboard_url,
    head_service_needs_update,
    updated_head_service,
)

from .rayjob_objects import parsed, rayjob_wire

OPTIONS = OperatorOptions()


def test_raycluster_for_a_rayjob() -> None:
    wire = rayjob_wire(submissionMode="HTTPMode")
    wire["metadata"]["annotations"] = {"note": "x"}
    cluster = build_raycluster(
        parsed(wire), "job-abcde", cluster_spec=wire["spec"]["rayClusterSpec"]
    )
    meta = cluster["metadata"]
    assert meta["name"] == "job-abcde" and meta["namespace"] == "ns"
    assert meta["labels"] == {
        "team": "a",
        "ray.io/originated-from-cr-name": "job",
        "ray.io/originated-from-crd": "RayJob",
        "ray.io/job-submission-mode": "HTTPMode",
    }
    assert meta["annotations"] == {"note": "x"}
    assert meta["ownerReferences"][0]["kind"] == "RayJob"
    assert cluster["spec"] == wire["spec"]["rayClusterSpec"]
    assert (
        dashboard_url(cluster, None, options=OPTIONS)
        == "job-abcde-head-svc.ns.svc.cluster.local:8266"
    )


def test_rayjob_head_service_follows_the_cluster() -> None:
    wire = rayjob_wire()
    first = build_raycluster(parsed(wire), "job-aaaaa", cluster_spec=wire["spec"]["rayClusterSpec"])
    svc = build_rayjob_head_service(parsed(wire), first, options=OPTIONS)
    assert svc["metadata"]["name"] == "job-head-svc"
    assert svc["spec"]["selector"]["ray.io/cluster"] == "job-aaaaa"
    assert svc["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    current = {**svc, "spec": {**svc["spec"], "clusterIP": "10.0.0.7"}}
    second = build_raycluster(
        parsed(wire), "job-bbbbb", cluster_spec=wire["spec"]["rayClusterSpec"]
    )
    desired = build_rayjob_head_service(parsed(wire), second, options=OPTIONS)
    assert not head_service_needs_update(current, svc)
    assert head_service_needs_update(current, desired)
    updated = updated_head_service(current, desired)
    assert updated["spec"]["clusterIP"] == "10.0.0.7"
    assert updated["spec"]["selector"]["ray.io/cluster"] == "job-bbbbb"
