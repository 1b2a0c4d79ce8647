"""Differential test: KubeRay v1.7.0 and rayop with ``RayClusterNetworkPolicy`` and
``RayClusterHistoryServer`` on, on the same real control plane.

In each operator's namespace: KubeRay's ``ray-cluster.network-policy-deny-all.yaml`` and
``ray-cluster.historyserver.yaml`` samples, a ``DenyAllIngress`` cluster with two worker groups
(one with a ``workerGroups`` entry, a custom dashboard port), and a cluster whose head policy
name is taken by a user's NetworkPolicy. Once the policies are made, one group is removed from
the two-group cluster and a policy is edited by hand. KubeRay runs first and is stopped, then
rayop. Compared: every NetworkPolicy, the pods of the history-server cluster (the collector
sidecar, the shared log volume, the Ray event variables) and the NetworkPolicy events.
"""

from __future__ import annotations

import asyncio
import copy
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.network_policy import NETWORK_POLICIES
from rayop.kube.client import KubeClient
from rayop.kube.resources import EVENTS, RAY_CLUSTERS
from rayop.testing import eventually

from .differential import _common_metadata, _replace_strings, diff, snapshot
from .real_support import (
    apply_raycluster,
    cluster_pods,
    create_namespace,
    kuberay_running,
    load_sample,
    rayop_operator,
    user_client,
)

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(300, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

GATES = {"RayClusterNetworkPolicy": True, "RayClusterHistoryServer": True}
KUBERAY_GATES = "--feature-gates=" + ",".join(f"{g}=true" for g in GATES)
RAYOP_OPTIONS = OperatorOptions(feature_gates=FeatureGates().with_overrides(GATES))
Obj = dict[str, Any]

DNS_RULE: Obj = {
    "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
    "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53}],
}


def two_groups() -> Obj:
    """Returns a DenyAllIngress cluster with two worker groups, one with its own rules."""
    image = "rayproject/ray:2.52.0"

    def group(name: str) -> Obj:
        return {
            "groupName": name,
            "replicas": 0,
            "minReplicas": 0,
            "maxReplicas": 2,
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-worker", "image": image}]}},
        }

    prometheus = {
        "from": [{"namespaceSelector": {"matchLabels": {"name": "prometheus"}}}],
        "ports": [{"port": 8080}],
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "groups", "labels": {"ray.io/job-submission-mode": "K8sJobMode"}},
        "spec": {
            "rayVersion": "2.52.0",
            "networkPolicy": {
                "mode": "DenyAllIngress",
                "head": {"ingressRules": [prometheus]},
                "worker": {"ingressRules": [prometheus]},
                "workerGroups": [{"groupName": "second", "ingressRules": []}],
            },
            "headGroupSpec": {
                "rayStartParams": {"dashboard-port": "8999"},
                "template": {"spec": {"containers": [{"name": "ray-head", "image": image}]}},
            },
            "workerGroupSpecs": [group("first"), group("second")],
        },
    }


def collision() -> Obj:
    """Returns a small cluster whose head policy name a user's policy takes."""
    (sample,) = load_sample("ray-cluster.network-policy-deny-all.yaml")
    sample["metadata"]["name"] = "theirs"
    sample["spec"]["networkPolicy"] = {
        "mode": "DenyAllEgress",
        "worker": {"egressRules": [DNS_RULE]},
    }
    return sample


USER_POLICY: Obj = {
    "metadata": {"name": "theirs-head", "labels": {"owner": "me"}},
    "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
}


def normalize_policy(policy: Obj) -> Obj:
    """Returns a NetworkPolicy without what differs by nature (uids, versions, namespace)."""
    out = _common_metadata(policy)
    return _replace_strings(out, policy["metadata"]["namespace"], "<namespace>")  # type: ignore[no-any-return]


@dataclass
class Outcome:
    """What one operator left in its namespace."""

    policies: dict[str, Obj]
    historyserver_pods: dict[str, Any]
    events: list[tuple[str, str, str]]


async def _policies(client: KubeClient, ns: str) -> dict[str, Obj]:
    items = (await client.list(NETWORK_POLICIES, namespace=ns))["items"]
    return {p["metadata"]["name"]: p for p in items}


async def _run(client: KubeClient, ns: str) -> Outcome:
    await client.create(NETWORK_POLICIES, copy.deepcopy(USER_POLICY), namespace=ns)
    for file_name in ("ray-cluster.network-policy-deny-all.yaml", "ray-cluster.historyserver.yaml"):
        for raycluster in load_sample(file_name):
            await apply_raycluster(client, raycluster, ns)
    await apply_raycluster(client, two_groups(), ns)
    await apply_raycluster(client, collision(), ns)
    want = {
        "raycluster-deny-all-head",
        "raycluster-deny-all-workers-workergroup",
        "groups-head",
        "groups-workers-first",
        "groups-workers-second",
        "theirs-head",
    }

    async def made() -> bool:
        return want <= set(await _policies(client, ns))

    await eventually(made, timeout=90, what="network policies made")

    async def historyserver_pods() -> bool:
        return len(await cluster_pods(client, ns, "raycluster-historyserver")) == 2

    await eventually(historyserver_pods, timeout=90, what="history-server cluster pods")

    rc = await client.get(RAY_CLUSTERS, "groups", namespace=ns)
    first = rc["spec"]["workerGroupSpecs"][:1]
    await client.patch(RAY_CLUSTERS, "groups", {"spec": {"workerGroupSpecs": first}}, namespace=ns)

    async def pruned() -> bool:
        return "groups-workers-second" not in await _policies(client, ns)

    await eventually(pruned, timeout=60, what="the removed group's policy deleted")
    drift = {"metadata": {"labels": {"by-hand": "x"}}, "spec": {"ingress": []}}
    await client.patch(NETWORK_POLICIES, "raycluster-deny-all-head", drift, namespace=ns)

    async def repaired() -> bool:
        policy = (await _policies(client, ns))["raycluster-deny-all-head"]
        return "by-hand" not in policy["metadata"]["labels"]

    await eventually(repaired, timeout=60, what="the edited policy repaired")
    await asyncio.sleep(2.0)  # late writes and events
    events = (await client.list(EVENTS, namespace=ns))["items"]
    pods = await cluster_pods(client, ns, "raycluster-historyserver")
    return Outcome(
        {name: normalize_policy(p) for name, p in (await _policies(client, ns)).items()},
        snapshot(pods, [])["pods"],
        sorted(
            {
                (e.get("type", ""), e.get("reason", ""), e.get("note", "").replace(ns, "<ns>"))
                for e in events
                if "NetworkPolicy" in str(e.get("reason", ""))
            }
        ),
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def outcomes(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Outcome, Outcome]]:
    """Runs KubeRay, then rayop; yields (kuberay, rayop)."""
    token = secrets.token_hex(2)
    kuberay_ns, rayop_ns = f"kuberay-np-{token}", f"rayop-np-{token}"
    log_path = tmp_path_factory.mktemp("kuberay-network-policy") / "ray-operator.log"
    async with user_client(real_kubeconfig) as client:
        for ns in (kuberay_ns, rayop_ns):
            await create_namespace(client, ns)
        watch = f"--watch-namespace={kuberay_ns}"
        async with kuberay_running(kuberay_binary, real_kubeconfig, log_path, watch, KUBERAY_GATES):
            kuberay = await _run(client, kuberay_ns)
        async with rayop_operator(
            real_kubeconfig, watch_namespaces=[rayop_ns], options=RAYOP_OPTIONS
        ):
            rayop = await _run(client, rayop_ns)
    yield kuberay, rayop


async def test_the_network_policies_are_kuberay_s(outcomes: tuple[Outcome, Outcome]) -> None:
    kuberay, rayop = outcomes
    assert "groups-workers-second" not in kuberay.policies
    assert kuberay.policies["theirs-head"]["metadata"]["labels"] == {"owner": "me"}
    assert set(rayop.policies) == set(kuberay.policies)
    lines = diff(kuberay.policies, rayop.policies)
    assert not lines, "\n".join(lines)


async def test_the_history_server_pods_are_kuberay_s(outcomes: tuple[Outcome, Outcome]) -> None:
    kuberay, rayop = outcomes
    head = kuberay.historyserver_pods["head"][0]
    assert [c["name"] for c in head["spec"]["containers"]][-1] == "ray-history-collector"
    lines = diff(kuberay.historyserver_pods, rayop.historyserver_pods)
    assert not lines, "\n".join(lines) + "\n" + json.dumps(rayop.historyserver_pods)[:2000]


async def test_the_same_network_policy_events(outcomes: tuple[Outcome, Outcome]) -> None:
    kuberay, rayop = outcomes
    reasons = {reason for _, reason, _ in kuberay.events}
    assert {"CreatedNetworkPolicy", "DeletedNetworkPolicy", "UpdatedNetworkPolicy"} <= reasons
    assert "NetworkPolicyNameCollision" in reasons, kuberay.events
    assert rayop.events == kuberay.events
