"""The embedded (RocksDB) GCS storage PVC on the embedded plane, with its gate on.

KubeRay v1.7.0's ``ray-cluster.embedded-gcs-ft.yaml`` (read from KubeRay's source archive,
tests/kuberay_compat.py, the only place it ships) converges with ``<cluster>-gcs-pvc`` created before
the head pod and garbage-collected with the cluster; ``deletionPolicy: Retain`` keeps it and a
same-named cluster adopts it; a missing ``claimName`` is a Warning and a status reason with no
pods until the claim exists, and a user's claim is never touched; a PVC another object controls
is refused.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.resources import CONFIGMAPS, PERSISTENT_VOLUME_CLAIMS, PODS, RAY_CLUSTERS
from rayop.testing import eventually
from tests.kuberay_compat import source_sample

from .raycluster_env import OperatorEnv, running_operator, simple_cluster

SAMPLE = "ray-cluster.embedded-gcs-ft.yaml"
GATE_ON = OperatorOptions(
    feature_gates=FeatureGates().with_overrides({"GCSFaultToleranceEmbeddedStorage": True})
)
Obj = dict[str, Any]


def embedded_gcs_ft_sample() -> Obj:
    """Returns KubeRay v1.7.0's embedded GCS FT sample RayCluster, read from the tarball."""
    (cluster,) = source_sample(SAMPLE)
    return dict(cluster)


@pytest.fixture
async def env() -> AsyncIterator[OperatorEnv]:
    """A control plane with the RayCluster operator, GCSFaultToleranceEmbeddedStorage on."""
    async with running_operator(options=GATE_ON) as running:
        yield running


def _rocksdb(name: str, **storage: Any) -> Obj:
    ft: Obj = {"backend": "rocksdb"}
    if storage:
        ft["storage"] = storage
    return simple_cluster(name, workers=1, gcsFaultToleranceOptions=ft)


def _pvc(env: OperatorEnv, ns: str, name: str) -> Obj | None:
    return env.stored(PERSISTENT_VOLUME_CLAIMS, ns, name)


def _pvc_creates(env: OperatorEnv, ns: str) -> list[str]:
    return [
        w.name
        for w in env.cp.audit.writes
        if w.verb == "create" and w.resource == "persistentvolumeclaims" and w.namespace == ns
        and w.code == 201
    ]  # fmt: skip


def _head_claims(env: OperatorEnv, ns: str, cluster: str) -> list[str]:
    heads = [
        p
        for p in env.pods(ns, cluster)
        if p["metadata"]["labels"].get("ray.io/node-type") == "head"
    ]
    return [
        v["persistentVolumeClaim"]["claimName"]
        for p in heads
        for v in p["spec"].get("volumes") or []
        if "persistentVolumeClaim" in v
    ]


async def _delete_cluster(env: OperatorEnv, ns: str, name: str) -> None:
    await env.client.delete(RAY_CLUSTERS, name, namespace=ns)
    await eventually(lambda: env.raycluster(ns, name) is None, what=f"{name} deleted")
    await eventually(lambda: not env.pods(ns, name, live_only=False), what=f"{name} pods gone")


async def test_the_sample_converges_and_its_pvc_goes_with_the_cluster(env: OperatorEnv) -> None:
    ns = await env.namespace("gcs-sample")
    sample = embedded_gcs_ft_sample()
    name = sample["metadata"]["name"]
    await env.apply(copy.deepcopy(sample), ns)
    await eventually(lambda: env.converged(ns, name), what="embedded GCS FT sample ready")

    pvc = _pvc(env, ns, f"{name}-gcs-pvc")
    assert pvc is not None
    assert pvc["metadata"]["labels"] == {"ray.io/cluster": name}
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert pvc["spec"]["resources"]["requests"]["storage"] == "1Gi"
    (ref,) = pvc["metadata"]["ownerReferences"]
    rc = env.raycluster(ns, name) or {}
    assert (ref["kind"], ref["uid"], ref["controller"]) == (
        "RayCluster",
        rc["metadata"]["uid"],
        True,
    )
    assert _head_claims(env, ns, name) == [f"{name}-gcs-pvc"]
    await eventually(
        lambda: (
            [e["note"] for e in env.events(ns, "CreatedPVC")]
            == [f"Created GCS storage PVC {ns}/{name}-gcs-pvc"]
        ),
        what="a CreatedPVC event",
    )
    assert _pvc_creates(env, ns) == [f"{name}-gcs-pvc"]

    await _delete_cluster(env, ns, name)
    await eventually(
        lambda: _pvc(env, ns, f"{name}-gcs-pvc") is None, what="owned PVC garbage-collected"
    )


async def test_retain_keeps_the_pvc_and_a_same_named_cluster_adopts_it(env: OperatorEnv) -> None:
    ns = await env.namespace("gcs-retain")
    await env.apply(_rocksdb("keep", deletionPolicy="Retain", size="2Gi"), ns)
    await eventually(lambda: env.converged(ns, "keep"), what="Retain cluster ready")
    pvc = _pvc(env, ns, "keep-gcs-pvc")
    assert pvc is not None and not pvc["metadata"].get("ownerReferences")
    assert pvc["spec"]["resources"]["requests"]["storage"] == "2Gi"
    uid = pvc["metadata"]["uid"]

    await _delete_cluster(env, ns, "keep")
    assert (_pvc(env, ns, "keep-gcs-pvc") or {}).get("metadata", {}).get("uid") == uid

    await env.apply(_rocksdb("keep", size="2Gi"), ns)  # DeleteWithCluster now: adopted
    await eventually(lambda: env.converged(ns, "keep"), what="same-named cluster ready")

    def adopted() -> bool:
        refs = (_pvc(env, ns, "keep-gcs-pvc") or {}).get("metadata", {}).get("ownerReferences")
        rc_uid = (env.raycluster(ns, "keep") or {}).get("metadata", {}).get("uid")
        return [r.get("uid") for r in refs or []] == [rc_uid]

    await eventually(adopted, what="the retained PVC adopted")
    assert (_pvc(env, ns, "keep-gcs-pvc") or {})["metadata"]["uid"] == uid
    assert _pvc_creates(env, ns) == ["keep-gcs-pvc"]  # created once, by the first cluster


async def test_a_missing_claim_holds_the_pods_until_it_exists(env: OperatorEnv) -> None:
    ns = await env.namespace("gcs-claim")
    await env.apply(_rocksdb("byo", claimName="my-claim"), ns)

    def reason() -> str:
        return str(((env.raycluster(ns, "byo") or {}).get("status") or {}).get("reason") or "")

    message = (
        f'GcsFaultToleranceOptions.Storage.ClaimName "my-claim" not found in namespace {ns}; '
        "the head Pod will not start until it exists"
    )
    await eventually(lambda: reason() == f"FailedToCreatePVC: {message}", what="status reason")
    await eventually(
        lambda: [e["type"] for e in env.events(ns, "FailedToCreatePVC")][:1] == ["Warning"],
        what="a Warning event",
    )
    assert env.pods(ns, "byo", live_only=False) == []

    claim = {
        "metadata": {"name": "my-claim"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    await env.client.create(PERSISTENT_VOLUME_CLAIMS, claim, namespace=ns)
    await eventually(lambda: env.converged(ns, "byo"), what="cluster ready once the claim exists")
    assert _head_claims(env, ns, "byo") == ["my-claim"]
    assert reason() == ""

    await _delete_cluster(env, ns, "byo")
    kept = _pvc(env, ns, "my-claim")
    assert kept is not None and not kept["metadata"].get("ownerReferences")
    touched = [
        (w.verb, w.name)
        for w in env.cp.audit.writes
        if w.resource == "persistentvolumeclaims" and w.namespace == ns
    ]
    assert touched == [("create", "my-claim")]  # the test's own: the operator never touched it


async def test_a_pvc_another_object_controls_is_refused(env: OperatorEnv) -> None:
    ns = await env.namespace("gcs-foreign")
    owner = await env.client.create(CONFIGMAPS, {"metadata": {"name": "owner"}}, namespace=ns)
    foreign = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    taken = {
        "metadata": {"name": "taken-gcs-pvc", "ownerReferences": [foreign]},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    await env.client.create(PERSISTENT_VOLUME_CLAIMS, taken, namespace=ns)
    await env.apply(_rocksdb("taken"), ns)

    def passes_on_it() -> int:  # operator writes about the cluster: its status, each pass
        return sum(
            1
            for w in env.cp.audit.writes
            if w.resource == "rayclusters" and w.subresource == "status" and w.namespace == ns
        )

    await eventually(lambda: passes_on_it() >= 1, what="a status written")
    assert env.pods(ns, "taken", live_only=False) == []
    assert not [w for w in env.cp.audit.writes if w.resource == "pods" and w.namespace == ns]
    pvc = _pvc(env, ns, "taken-gcs-pvc") or {}
    assert pvc["metadata"]["ownerReferences"] == [foreign]


async def test_a_deleted_pvc_is_replaced_before_a_new_head_uses_it(env: OperatorEnv) -> None:
    ns = await env.namespace("gcs-fresh")
    await env.apply(_rocksdb("fresh"), ns)
    await eventually(lambda: env.converged(ns, "fresh"), what="cluster ready")
    old_uid = (_pvc(env, ns, "fresh-gcs-pvc") or {})["metadata"]["uid"]
    (head,) = [
        p["metadata"]["name"]
        for p in env.pods(ns, "fresh")
        if p["metadata"]["labels"]["ray.io/node-type"] == "head"
    ]
    await env.client.delete(PERSISTENT_VOLUME_CLAIMS, "fresh-gcs-pvc", namespace=ns)
    await env.client.delete(PODS, head, namespace=ns)

    def fresh_store() -> bool:
        pvc = _pvc(env, ns, "fresh-gcs-pvc") or {}
        return (
            bool(pvc)
            and pvc["metadata"]["uid"] != old_uid
            and not pvc["metadata"].get("deletionTimestamp")
        )

    await eventually(fresh_store, what="a new PVC")
    await eventually(lambda: env.converged(ns, "fresh"), what="ready again with a new head")
    creates = [
        (w.resource, w.name)
        for w in env.cp.audit.writes
        if w.verb == "create" and w.namespace == ns and w.code == 201
        and w.resource in ("pods", "persistentvolumeclaims")
    ]  # fmt: skip
    second_pvc = [i for i, c in enumerate(creates) if c[0] == "persistentvolumeclaims"][1]
    heads_after_delete = [
        i for i, (res, name) in enumerate(creates) if res == "pods" and "head" in name
    ][1:]
    assert heads_after_delete and all(i > second_pvc for i in heads_after_delete), creates
