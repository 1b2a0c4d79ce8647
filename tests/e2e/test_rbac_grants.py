"""Least privilege, measured: the chart's grants equal what the operator uses end to end.

The chart (its ClusterRole and leader-election Role, generated from rbac_rules.py) is installed
with kubectl; the operator (the RayCluster, RayJob and RayService controllers, leader election
on) runs under a token of the chart's ServiceAccount, so the embedded API server enforces RBAC.
The end-to-end scenarios then run: every KubeRay RayCluster sample converges (but the three
``GATED_SAMPLES``, which rayop refuses whatever the gates: they exercise nothing more), a cluster is
scaled down, has a named worker deleted, is suspended and deleted, a GCS fault-tolerant cluster
is deleted through its Redis cleanup Job, an embedded GCS FT cluster's PVC is created and then
owned when its deletion policy changes, a cluster's NetworkPolicies are created, repaired and
deleted, the head Ingress drifts and is repaired, a RayJob runs to completion and its cluster is shut
down, a RayService becomes ready, upgrades to a new cluster and is deleted.

Every request the ServiceAccount made is in the audit as (API group, resource[/subresource],
verb). The test fails on a 403 (a missing grant) and on a granted (group, resource, verb) that
no request used (an unused grant), except those listed in :data:`NOT_EXERCISED` with the reason
the embedded control plane or these scenarios cannot exercise them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from rayop.controllers.assembly.rbac_rules import cluster_role_rules, leader_election_rules
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.network_policy import NETWORK_POLICIES
from rayop.controllers.raycronjob.reconciler import RAY_CRON_JOBS
from rayop.kube.config import load_config
from rayop.kube.resources import (
    INGRESSES,
    PERSISTENT_VOLUME_CLAIMS,
    RAY_CLUSTERS,
    RAY_JOBS,
    RAY_SERVICES,
)
from rayop.testing import ALL_KINDS, eventually, open_control_plane, open_operator
from tests.kuberay_compat import samples_dir

from .chart_install import NAMESPACE, kubectl_install, render_release
from .raycluster_env import (
    GATED_SAMPLES,
    OperatorEnv,
    load_sample,
    sample_files,
    simple_cluster,
)
from .rayjob_env import FAST_DASHBOARD, small_rayjob
from .rayservice_env import small_rayservice
from .sample_nodes import sample_claims, sample_kubelet

pytestmark = pytest.mark.slow

Grant = tuple[str, str, str]  # (API group, resource[/subresource], verb)
GCS_GATE_ON = OperatorOptions(
    feature_gates=FeatureGates().with_overrides(
        {
            "GCSFaultToleranceEmbeddedStorage": True,
            "RayClusterNetworkPolicy": True,
            "RayCronJob": True,
        }
    )
)
"""The embedded GCS storage, NetworkPolicy and RayCronJob scenarios need their alpha gates."""

_ESCALATION = (
    "held only because the autoscaler Role the operator creates grants it, and RBAC refuses a "
    "Role granting more than its creator holds; the operator itself never calls it"
)
NOT_EXERCISED: Mapping[Grant, str] = {
    **{
        ("ray.io", f"{plural}/finalizers", "update"): (
            "needed by the OwnerReferencesPermissionEnforcement admission plugin to set "
            "blockOwnerDeletion on owner references; the embedded server has no admission plugins"
        )
        for plural in ("rayclusters", "rayjobs", "rayservices", "raycronjobs")
    },
    ("", "pods", "get"): _ESCALATION,
    ("", "pods/resize", "patch"): _ESCALATION,
    ("ray.io", "rayclusters", "get"): (
        _ESCALATION + "; also the RayJob/RayService fallback read after a create raced "
        "(AlreadyExists), which needs a cache lag these scenarios do not produce"
    ),
    ("", "serviceaccounts", "get"): (
        "read of a ServiceAccount the head template names, when the cache does not have it yet"
    ),
    ("", "secrets", "get"): "RayJob's read of an auth token Secret missing from the cache",
    ("", "services", "get"): "RayService's read of a service a create raced with",
    ("", "persistentvolumeclaims", "get"): (
        "RayCluster's read of a GCS storage PVC a create raced with (AlreadyExists), which "
        "needs a cache lag these scenarios do not produce"
    ),
    ("", "services", "delete"): "RayService suspend deletes its services (not in these scenarios)",
    **{
        ("route.openshift.io", "routes", verb): (
            "the head Route is made only on OpenShift (detected at startup), where the Ingress "
            "is not: tests/e2e/test_raycluster_route.py and tests/real/test_differential_route.py"
        )
        for verb in ("list", "watch", "create")
    },
    ("networking.k8s.io", "networkpolicies", "get"): (
        "the networkpolicy controller's read of a policy a create raced with (AlreadyExists), "
        "which needs a cache lag these scenarios do not produce"
    ),
    **{
        ("cert-manager.io", resource, verb): (
            "mTLS needs cert-manager's CRDs, which only the real tier's build fetches "
            "(scripts/cert-manager-crds): tests/e2e/test_mtls.py and "
            "tests/real/test_differential_mtls.py run it, with admin credentials"
        )
        for resource, verbs in (
            ("certificates", ("create", "get", "list", "update", "watch")),
            ("issuers", ("create", "get", "list", "watch")),
        )
        for verb in verbs
    },
    ("", "secrets", "update"): (
        "mTLS sets the owner of each issued certificate Secret (see the cert-manager grants)"
    ),
    **{
        ("gateway.networking.k8s.io", resource, verb): (
            "incremental upgrade needs the Gateway API CRDs, which only the real tier's build "
            "fetches (scripts/gateway-api-crds): tests/e2e/test_rayservice_incremental.py and "
            "tests/real/test_differential_incremental_upgrade.py run it, with admin credentials"
        )
        for resource in ("gateways", "httproutes")
        for verb in ("create", "delete", "get", "update")
    },
    ("ray.io", "rayjobs", "delete"): "RayJob deletionStrategy DeleteSelf (a feature-gated rule)",
    ("batch", "jobs", "delete"): (
        "RayJob deletion rules and suspend delete the submitter Job (not in these scenarios)"
    ),
}
"""Grants the scenarios cannot exercise, with the reason."""

RACE_READS: frozenset[Grant] = frozenset(
    {
        ("ray.io", "rayclusters", "get"),
        ("", "services", "get"),
        ("", "persistentvolumeclaims", "get"),
        ("networking.k8s.io", "networkpolicies", "get"),
    }
)
"""Of those, the reads after a create that raced the cache (AlreadyExists): a loaded machine
can make the race happen, so these may be used or not."""


def granted() -> set[Grant]:
    """Every (group, resource, verb) the chart's ClusterRole and Role grant."""
    return set(_expand([*cluster_role_rules(), *leader_election_rules()]))


def _expand(rules: Iterable[Mapping[str, Any]]) -> Iterable[Grant]:
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    yield (group, resource, verb)


def namespace_for(file_name: str) -> str:
    stem = re.sub(r"[^a-z0-9-]+", "-", file_name.removesuffix(".yaml").lower())
    return stem.strip("-")[:63].rstrip("-")


async def raycluster_scenarios(env: OperatorEnv) -> None:
    """Every ungated sample converges; scale down, workersToDelete, suspend, delete, Redis
    cleanup."""
    files = [f for f in sample_files() if f not in GATED_SAMPLES]
    for file_name in files:
        for claim in sample_claims(samples_dir() / file_name):  # as kubectl apply -f would
            await env.plane.create(PERSISTENT_VOLUME_CLAIMS, claim, namespace_for(file_name))
        for rc in load_sample(file_name):
            await env.apply(rc, namespace_for(file_name))
    for file_name in files:
        ns = namespace_for(file_name)
        for rc in load_sample(file_name):
            name = rc["metadata"]["name"]
            await eventually(functools.partial(env.converged, ns, name), timeout=90, what=name)

    ingress = simple_cluster("ingress", workers=0)
    ingress["spec"]["headGroupSpec"]["enableIngress"] = True
    await env.apply(ingress, "ingress")
    await eventually(lambda: env.converged("ingress", "ingress"), what="ingress cluster ready")
    assert env.objects(INGRESSES, "ingress")
    drift = {"metadata": {"labels": {"by-hand": "x"}}}
    await env.client.patch(INGRESSES, "ingress-head-ingress", drift, namespace="ingress")

    def touch(obj: dict[str, Any]) -> None:  # a label change makes the controller look again
        obj["metadata"].setdefault("labels", {})["touched"] = "1"

    await env.edit("ingress", "ingress", touch)

    def repaired() -> bool:
        ingress = env.stored(INGRESSES, "ingress", "ingress-head-ingress") or {}
        return "by-hand" not in (ingress.get("metadata", {}).get("labels") or {})

    await eventually(repaired, what="ingress drift repaired")

    await env.apply(simple_cluster("np", workers=0, networkPolicy={}), "np")
    await eventually(
        lambda: env.stored(NETWORK_POLICIES, "np", "np-head") is not None, what="head policy"
    )
    await env.client.patch(NETWORK_POLICIES, "np-head", drift, namespace="np")

    def policy_repaired() -> bool:
        policy = env.stored(NETWORK_POLICIES, "np", "np-head") or {}
        return "by-hand" not in (policy.get("metadata", {}).get("labels") or {})

    await eventually(policy_repaired, what="network policy drift repaired")

    def no_policy(obj: dict[str, Any]) -> None:
        del obj["spec"]["networkPolicy"]

    await env.edit("np", "np", no_policy)
    await eventually(lambda: not env.objects(NETWORK_POLICIES, "np"), what="policies deleted")

    rocksdb = {"backend": "rocksdb", "storage": {"deletionPolicy": "Retain"}}
    await env.apply(simple_cluster("gcs", workers=0, gcsFaultToleranceOptions=rocksdb), "gcs")
    await eventually(lambda: env.converged("gcs", "gcs"), what="embedded GCS FT cluster ready")

    def delete_with_cluster(obj: dict[str, Any]) -> None:
        obj["spec"]["gcsFaultToleranceOptions"]["storage"]["deletionPolicy"] = "DeleteWithCluster"

    await env.edit("gcs", "gcs", delete_with_cluster)

    def pvc_owned() -> bool:
        pvc = env.stored(PERSISTENT_VOLUME_CLAIMS, "gcs", "gcs-gcs-pvc") or {}
        return bool(pvc.get("metadata", {}).get("ownerReferences"))

    await eventually(pvc_owned, what="GCS storage PVC owned once the policy changes")

    await env.apply(simple_cluster("life", workers=3), "life")
    await eventually(lambda: env.converged("life", "life"), what="life ready")

    def scale(obj: dict[str, Any]) -> None:
        obj["spec"]["workerGroupSpecs"][0]["replicas"] = 2

    await env.edit("life", "life", scale)
    await eventually(lambda: len(env.pods("life", "life")) == 3, what="scaled down")
    victim = next(
        p["metadata"]["name"]
        for p in env.pods("life", "life")
        if p["metadata"]["labels"]["ray.io/node-type"] == "worker"
    )

    def delete_worker(obj: dict[str, Any]) -> None:
        group = obj["spec"]["workerGroupSpecs"][0]
        group["replicas"] = 1
        group["scaleStrategy"] = {"workersToDelete": [victim]}

    await env.edit("life", "life", delete_worker)
    await eventually(lambda: len(env.pods("life", "life")) == 2, what="named worker deleted")

    def suspend(obj: dict[str, Any]) -> None:
        obj["spec"]["suspend"] = True

    await env.edit("life", "life", suspend)
    await eventually(lambda: env.pods("life", "life") == [], what="suspended")
    await env.client.delete(RAY_CLUSTERS, "life", namespace="life")
    await eventually(lambda: env.raycluster("life", "life") is None, what="life deleted")

    redis_ns = namespace_for("ray-cluster.external-redis.yaml")
    for rc in load_sample("ray-cluster.external-redis.yaml"):
        await env.client.delete(RAY_CLUSTERS, rc["metadata"]["name"], namespace=redis_ns)

        def deleted(n: str = rc["metadata"]["name"]) -> bool:
            return env.raycluster(redis_ns, n) is None

        await eventually(deleted, what="FT cluster deleted after its Redis cleanup")


async def rayjob_scenario(env: OperatorEnv) -> None:
    """A K8sJobMode RayJob completes, its cluster is shut down, then the RayJob is deleted."""
    ns = await env.namespace("jobs")
    job = small_rayjob("job", shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=0)
    job["metadata"]["namespace"] = ns
    await env.client.create(RAY_JOBS, job, namespace=ns)

    def status() -> dict[str, Any]:
        return dict((env.stored(RAY_JOBS, ns, "job") or {}).get("status") or {})

    await eventually(lambda: status().get("jobDeploymentStatus") == "Complete", what="job done")
    await eventually(lambda: not env.objects(RAY_CLUSTERS, ns), what="job cluster deleted")
    await env.client.delete(RAY_JOBS, "job", namespace=ns)
    await eventually(lambda: env.stored(RAY_JOBS, ns, "job") is None, what="RayJob deleted")

    http = small_rayjob("http", submissionMode="HTTPMode")
    http["metadata"]["namespace"] = ns
    await env.client.create(RAY_JOBS, http, namespace=ns)

    def http_status() -> dict[str, Any]:
        return dict((env.stored(RAY_JOBS, ns, "http") or {}).get("status") or {})

    await eventually(
        lambda: http_status().get("jobDeploymentStatus") == "Complete", what="HTTPMode job done"
    )


async def raycronjob_scenario(env: OperatorEnv) -> None:
    """A RayCronJob creates a (suspended) RayJob on its first tick and records the tick."""
    ns = await env.namespace("cron")
    template = small_rayjob("template", shutdownAfterJobFinishes=True, suspend=True)["spec"]
    cron = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": "cron", "namespace": ns},
        "spec": {"schedule": "@every 1s", "jobTemplate": template},
    }
    await env.client.create(RAY_CRON_JOBS, cron, namespace=ns)

    def ticked() -> bool:
        stored = env.stored(RAY_CRON_JOBS, ns, "cron") or {}
        return bool((stored.get("status") or {}).get("lastScheduleTime"))

    await eventually(ticked, what="RayCronJob ticked")
    assert any(j["metadata"]["name"].startswith("cron-") for j in env.objects(RAY_JOBS, ns))


async def rayservice_scenario(env: OperatorEnv) -> None:
    """A RayService becomes ready, upgrades to a new cluster (old one deleted), is deleted."""
    ns = await env.namespace("serve")
    svc = small_rayservice("svc", delay=1)
    svc["metadata"]["namespace"] = ns
    await env.client.create(RAY_SERVICES, svc, namespace=ns)

    def status() -> dict[str, Any]:
        return dict((env.stored(RAY_SERVICES, ns, "svc") or {}).get("status") or {})

    def active() -> str:
        return str((status().get("activeServiceStatus") or {}).get("rayClusterName") or "")

    def ready() -> bool:
        conditions = {c["type"]: c["status"] for c in status().get("conditions") or []}
        return conditions.get("Ready") == "True" and status().get("numServeEndpoints", 0) > 0

    await eventually(ready, timeout=60, what="RayService ready")
    first = active()
    cluster_spec = svc["spec"]["rayClusterConfig"]
    cluster_spec["headGroupSpec"]["rayStartParams"] = {"num-cpus": "0"}
    await env.client.patch(
        RAY_SERVICES, "svc", {"spec": {"rayClusterConfig": cluster_spec}}, namespace=ns
    )
    await eventually(lambda: active() not in ("", first), timeout=60, what="upgraded")
    await eventually(lambda: env.raycluster(ns, first) is None, timeout=30, what="old deleted")
    await env.client.delete(RAY_SERVICES, "svc", namespace=ns)
    await eventually(lambda: env.stored(RAY_SERVICES, ns, "svc") is None, what="svc deleted")


async def test_chart_grants_are_exactly_what_the_operator_uses(tmp_path: Path) -> None:
    release = render_release(tmp_path)
    user = f"system:serviceaccount:{NAMESPACE}:{release.service_account}"
    failure: BaseException | None = None
    kubelet = sample_kubelet(samples_dir() / f for f in sample_files())  # their TPU and GPU nodes
    async with open_control_plane(
        tls=True, dashboard=FAST_DASHBOARD, crds=False, kubelet=kubelet
    ) as plane:
        cp = plane.cp
        await kubectl_install(cp, release, tmp_path)
        token = cp.issue_service_account_token(NAMESPACE, release.service_account)
        kubeconfig = tmp_path / "operator-kubeconfig.yaml"
        kubeconfig.write_text(cp.kubeconfig_text(token, namespace=NAMESPACE))
        operator_config = await load_config(kubeconfig=str(kubeconfig))
        try:
            async with open_operator(
                operator_config,
                controllers=(*ALL_KINDS, "RayCronJob"),
                leader_election_namespace=NAMESPACE,
                options=GCS_GATE_ON,
            ) as running:
                env = OperatorEnv(plane, running=running)
                await raycluster_scenarios(env)
                await rayjob_scenario(env)
                await rayservice_scenario(env)
                await raycronjob_scenario(env)
        except BaseException as exc:  # report missing grants first: they may be the cause
            failure = exc
    # Read after the server stopped: a watch is audited when it ends.
    records = [r for r in cp.audit.requests if r.user == user]

    def grant(r: Any) -> Grant:
        resource = f"{r.resource}/{r.subresource}" if r.subresource else r.resource
        return (r.group, resource, r.verb)

    missing = sorted({grant(r) for r in records if r.code == 403})
    assert missing == [], f"the operator was refused (add to rbac_rules.py): {missing}"
    if failure is not None:
        raise failure
    used = {grant(r) for r in records}
    unused = sorted(granted() - used - NOT_EXERCISED.keys())
    assert unused == [], f"granted but never used (remove from rbac_rules.py): {unused}"
    stale = sorted((NOT_EXERCISED.keys() - RACE_READS) & used)
    assert stale == [], f"listed as not exercised but used: {stale}"
    assert NOT_EXERCISED.keys() <= granted()
