"""KubeRay v1.7.0's NetworkPolicies of a RayCluster: builders and ``validateNetworkPolicy``."""

from __future__ import annotations

from typing import Any, cast

import pytest

from rayop.api.validation.gates import Gates
from rayop.api.validation.raycluster import validate_raycluster
from rayop.controllers.raycluster.network_policy import (
    NETWORK_POLICIES,
    build_head_network_policy,
    build_network_policies,
    build_worker_group_network_policy,
    normalize_ports,
)
from rayop.controllers.raycluster.network_policy_sync import NetworkPolicySync, needs_update
from rayop.kube.client import KubeClient
from rayop.kube.errors import Conflict
from rayop.runtime.events.recorder import EventRecorder
from rayop.runtime.reconcile import Request
from rayop.testing import FakeCache, FakeClient, RecordingEventSink

from ._fixtures import load_sample, minimal_cluster, parse

GATE_ON: Gates = {"RayClusterNetworkPolicy": True}
DNS = {
    "to": [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ],
    "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
}


def _same_cluster(name: str) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": {"ray.io/cluster": name}}}


def test_the_deny_all_sample_gives_kuberay_s_head_policy() -> None:
    rc = parse(load_sample("ray-cluster.network-policy-deny-all.yaml"))
    assert build_head_network_policy(rc) == {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": "raycluster-deny-all-head",
            "namespace": "default",
            "labels": {
                "ray.io/cluster": "raycluster-deny-all",
                "ray.io/group": "headgroup",
                "app.kubernetes.io/name": "kuberay",
                "app.kubernetes.io/created-by": "kuberay-operator",
            },
        },
        "spec": {
            "podSelector": {
                "matchLabels": {"ray.io/cluster": "raycluster-deny-all", "ray.io/node-type": "head"}
            },
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [_same_cluster("raycluster-deny-all")]}],
            "egress": [{"to": [_same_cluster("raycluster-deny-all")]}, DNS],
        },
    }


def test_each_worker_group_gets_its_policy_with_the_worker_rules() -> None:
    rc = parse(load_sample("ray-cluster.network-policy-deny-all.yaml"))
    head, worker = build_network_policies(rc)
    assert head["metadata"]["name"] == "raycluster-deny-all-head"
    assert worker["metadata"]["name"] == "raycluster-deny-all-workers-workergroup"
    assert worker["metadata"]["labels"]["ray.io/group"] == "workergroup"
    assert worker["spec"]["podSelector"] == {
        "matchLabels": {
            "ray.io/cluster": "raycluster-deny-all",
            "ray.io/node-type": "worker",
            "ray.io/group": "workergroup",
        }
    }
    assert worker["spec"]["egress"] == [{"to": [_same_cluster("raycluster-deny-all")]}, DNS]


@pytest.mark.parametrize(
    ("mode", "types"),
    [("DenyAllIngress", ["Ingress"]), ("DenyAllEgress", ["Egress"]), ("DenyAll", None)],
)
def test_the_mode_decides_which_directions_are_restricted(
    mode: str, types: list[str] | None
) -> None:
    cluster = minimal_cluster(networkPolicy={"mode": mode})
    spec = build_worker_group_network_policy(parse(cluster), "g")["spec"]
    assert spec["policyTypes"] == (types or ["Ingress", "Egress"])
    assert ("ingress" in spec) == ("Ingress" in spec["policyTypes"])
    assert ("egress" in spec) == ("Egress" in spec["policyTypes"])


def test_the_default_mode_is_deny_all() -> None:
    spec = build_head_network_policy(parse(minimal_cluster(networkPolicy={})))["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]


def test_a_group_entry_replaces_the_worker_rules() -> None:
    https = {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 443}]}
    cluster = minimal_cluster(
        networkPolicy={
            "worker": {"egressRules": [DNS]},
            "workerGroups": [{"groupName": "g", "egressRules": [https]}],
        }
    )
    spec = build_worker_group_network_policy(parse(cluster), "g")["spec"]
    assert spec["egress"] == [{"to": [_same_cluster("rc")]}, https]
    assert spec["ingress"] == [{"from": [_same_cluster("rc")]}]


def _k8s_job_cluster(**labels: str) -> dict[str, Any]:
    cluster = minimal_cluster(networkPolicy={})
    cluster["spec"]["headGroupSpec"]["rayStartParams"] = {"dashboard-port": "8999"}
    cluster["metadata"]["labels"] = labels
    cluster["metadata"]["ownerReferences"] = [
        {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "job", "uid": "j", "controller": True}
    ]
    return cluster


def test_a_k8s_job_mode_rayjob_s_submitter_may_reach_the_dashboard() -> None:
    cluster = _k8s_job_cluster(**{"ray.io/job-submission-mode": "K8sJobMode"})
    ingress = build_head_network_policy(parse(cluster))["spec"]["ingress"]
    submitter = {
        "podSelector": {
            "matchLabels": {
                "ray.io/originated-from-cr-name": "job",
                "ray.io/originated-from-crd": "RayJob",
            }
        }
    }
    assert ingress == [
        {"from": [_same_cluster("rc")]},
        {"from": [submitter], "ports": [{"protocol": "TCP", "port": 8999}]},
    ]


def test_other_submission_modes_get_no_submitter_rule() -> None:
    cluster = _k8s_job_cluster(**{"ray.io/job-submission-mode": "HTTPMode"})
    assert len(build_head_network_policy(parse(cluster))["spec"]["ingress"]) == 1


def test_ports_without_a_protocol_compare_equal_to_the_server_s_tcp_default() -> None:
    desired = build_worker_group_network_policy(
        parse(
            minimal_cluster(networkPolicy={"worker": {"ingressRules": [{"ports": [{"port": 80}]}]}})
        ),
        "g",
    )
    live = {"metadata": dict(desired["metadata"]), "spec": normalize_ports(desired["spec"])}
    assert live["spec"]["ingress"][1]["ports"] == [{"port": 80, "protocol": "TCP"}]
    assert not needs_update(live, desired)
    live["metadata"] = {**live["metadata"], "labels": {"x": "y"}}
    assert needs_update(live, desired)


def _problems(**network_policy: Any) -> list[str]:
    cluster = minimal_cluster(networkPolicy=network_policy)
    return [p.message for p in validate_raycluster(parse(cluster), gates=GATE_ON)]


def test_the_sample_is_valid_with_the_gate_on() -> None:
    rc = parse(load_sample("ray-cluster.network-policy-deny-all.yaml"))
    assert validate_raycluster(rc, gates=GATE_ON) == []


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (
            {"mode": "DenyAllEgress", "head": {"ingressRules": [{}]}},
            'networkPolicy.head.ingressRules cannot be set when mode is "DenyAllEgress" '
            "(ingress is not restricted)",
        ),
        (
            {"mode": "DenyAllIngress", "worker": {"egressRules": [{}]}},
            'networkPolicy.worker.egressRules cannot be set when mode is "DenyAllIngress" '
            "(egress is not restricted)",
        ),
        (
            {"mode": "DenyAllIngress", "workerGroups": [{"groupName": "g", "egressRules": [{}]}]},
            'networkPolicy.workerGroups["g"].egressRules cannot be set when mode is '
            '"DenyAllIngress" (egress is not restricted)',
        ),
        (
            {"workerGroups": [{"groupName": "nope"}]},
            'networkPolicy.workerGroups["nope"] does not match any group name in workerGroupSpecs',
        ),
    ],
)
def test_kuberay_s_network_policy_checks(policy: dict[str, Any], message: str) -> None:
    assert message in _problems(**policy)[0]


def test_group_names_must_be_dns_labels_with_a_network_policy() -> None:
    cluster = minimal_cluster(networkPolicy={})
    cluster["spec"]["workerGroupSpecs"][0]["groupName"] = "Big_Group"
    (problem,) = validate_raycluster(parse(cluster), gates=GATE_ON)
    assert problem.message == (
        'worker group name "Big_Group" must be a valid DNS1123 label when networkPolicy is '
        "enabled (it is embedded in the NetworkPolicy name): [a lowercase RFC 1123 label must "
        "consist of lower case alphanumeric characters or '-', and must start and end with an "
        "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')]"
    )


def _stale_policy(uid: str) -> dict[str, Any]:
    owner = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "rc", "uid": "u-1",
             "controller": True}  # fmt: skip
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": "rc-head",
            "namespace": "ns",
            "uid": uid,
            "labels": {"ray.io/cluster": "rc"},
            "ownerReferences": [owner],
        },
        "spec": {},
    }


def _policy_sync(
    cached_policy: dict[str, Any], stored_policy: dict[str, Any]
) -> tuple[NetworkPolicySync, FakeClient, RecordingEventSink]:
    client, recorder = FakeClient(), RecordingEventSink()
    clusters, policies = FakeCache(), FakeCache()
    clusters.put(minimal_cluster())  # no networkPolicy: every policy of the cluster is stale
    policies.put(cached_policy)
    client.put(NETWORK_POLICIES, stored_policy)
    sync = NetworkPolicySync(
        cast(KubeClient, client), clusters, policies, cast(EventRecorder, recorder)
    )
    return sync, client, recorder


async def test_a_stale_policy_is_deleted_by_the_caches_uid() -> None:
    sync, client, recorder = _policy_sync(_stale_policy("p-1"), _stale_policy("p-1"))
    await sync.reconcile(Request("ns", "rc"))
    assert client.stored(NETWORK_POLICIES, "ns", "rc-head") is None
    assert recorder.reasons() == ["DeletedNetworkPolicy"]


async def test_a_policy_recreated_since_the_caches_copy_is_not_deleted() -> None:
    sync, client, recorder = _policy_sync(_stale_policy("p-1"), _stale_policy("p-2"))
    with pytest.raises(Conflict):
        await sync.reconcile(Request("ns", "rc"))
    assert client.stored(NETWORK_POLICIES, "ns", "rc-head") is not None
    assert recorder.reasons() == []
