"""The NetworkPolicies of a RayCluster exactly as KubeRay v1.7.0 builds them (``spec.networkPolicy``).

Behind the ``RayClusterNetworkPolicy`` gate KubeRay runs a separate ``networkpolicy`` controller
(:mod:`rayop.controllers.raycluster.network_policy_sync`) that keeps one NetworkPolicy for the
head (``<cluster>-head``) and one per worker group (``<cluster>-workers-<group>``). The builders
here are pure: they read the parsed :class:`~rayop.api.raycluster.RayCluster` and return the
desired objects as wire dicts, without owner references (the sync step adds them).

The rules, as KubeRay has them:

- ``mode`` (default ``DenyAll``) decides the ``policyTypes``: ``DenyAll`` restricts both ways,
  ``DenyAllIngress`` only ingress, ``DenyAllEgress`` only egress. A direction that is not
  restricted has no rules at all.
- Ingress of every policy allows all ports from pods labelled ``ray.io/cluster=<cluster>``; the
  head's also allows a K8sJobMode RayJob's submitter pod (selected by its originated-from
  labels) on the dashboard port (``rayStartParams["dashboard-port"]``, default 8265), when the
  cluster carries ``ray.io/job-submission-mode=K8sJobMode`` and a controller ownerReference to a
  ``ray.io`` RayJob.
- Egress of every policy allows all ports to pods of the cluster. DNS is *not* allowed: users
  add it (the KubeRay sample does) through their custom rules.
- The custom rules are appended after the base ones: ``head`` for the head, and for a worker
  group its ``workerGroups`` entry when there is one, else ``worker``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from rayop.api import keys
from rayop.api.raycluster import (
    NetworkPolicyMode,
    NetworkPolicyOptions,
    NetworkPolicyRules,
    RayCluster,
)
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels, names
from rayop.kube.resource import Resource

__all__ = [
    "NETWORK_POLICIES",
    "build_head_network_policy",
    "build_network_policies",
    "build_worker_group_network_policy",
    "head_network_policy_name",
    "normalize_ports",
    "worker_group_network_policy_name",
]

NETWORK_POLICIES: Final = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")
DEFAULT_DASHBOARD_PORT: Final = 8265
_INGRESS: Final = "Ingress"
_EGRESS: Final = "Egress"

NetworkPolicy = dict[str, Any]


def head_network_policy_name(cluster_name: str) -> str:
    """Returns the head policy's name, ``<cluster>-head``."""
    return f"{cluster_name}-head"


def worker_group_network_policy_name(cluster_name: str, group_name: str) -> str:
    """Returns a worker group's policy name, ``<cluster>-workers-<group>``."""
    return f"{cluster_name}-workers-{group_name}"


def _restricts_ingress(mode: NetworkPolicyMode) -> bool:
    return mode in (NetworkPolicyMode.DENY_ALL, NetworkPolicyMode.DENY_ALL_INGRESS)


def _restricts_egress(mode: NetworkPolicyMode) -> bool:
    return mode in (NetworkPolicyMode.DENY_ALL, NetworkPolicyMode.DENY_ALL_EGRESS)


def _same_cluster_peer(cluster_name: str) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": {keys.RAY_CLUSTER: cluster_name}}}


def _base_ingress_rules(cluster_name: str) -> list[dict[str, Any]]:
    return [{"from": [_same_cluster_peer(cluster_name)]}]


def _base_egress_rules(cluster_name: str) -> list[dict[str, Any]]:
    return [{"to": [_same_cluster_peer(cluster_name)]}]


def _dashboard_port(rc: RayCluster) -> int:
    value = (rc.spec.head_group_spec.ray_start_params or {}).get("dashboard-port")
    try:
        port = int(value) if value is not None else DEFAULT_DASHBOARD_PORT
    except ValueError:
        return DEFAULT_DASHBOARD_PORT
    return port if -(2**31) <= port < 2**31 else DEFAULT_DASHBOARD_PORT


def _rayjob_submitter_peer(rc: RayCluster) -> dict[str, Any] | None:
    """Returns the peer selecting a K8sJobMode RayJob's submitter pod, or None."""
    if (rc.metadata.get("labels") or {}).get(keys.RAY_JOB_SUBMISSION_MODE) != "K8sJobMode":
        return None
    for ref in rc.metadata.get("ownerReferences") or ():
        if (
            ref.get("kind") == "RayJob"
            and ref.get("controller") is True
            and str(ref.get("apiVersion", "")).startswith("ray.io/")
        ):
            selector = {
                keys.RAY_ORIGINATED_FROM_CR_NAME: ref.get("name", ""),
                keys.RAY_ORIGINATED_FROM_CRD: "RayJob",
            }
            return {"podSelector": {"matchLabels": selector}}
    return None


def _head_ingress_rules(rc: RayCluster) -> list[dict[str, Any]]:
    rules = _base_ingress_rules(rc.name)
    peer = _rayjob_submitter_peer(rc)
    if peer is not None:
        port = {"protocol": "TCP", "port": _dashboard_port(rc)}
        rules.append({"from": [peer], "ports": [port]})
    return rules


def _policy_labels(cluster_name: str, group_name: str) -> dict[str, str]:
    return {
        keys.RAY_CLUSTER: cluster_name,
        keys.RAY_GROUP: group_name,
        keys.APP_NAME: labels.APP_NAME_VALUE,
        keys.APP_CREATED_BY: labels.CREATED_BY_VALUE,
    }


def _custom(rules: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    return [copy.deepcopy(dict(rule)) for rule in rules or ()]


def _policy(
    rc: RayCluster,
    *,
    name: str,
    group_label: str,
    selector: dict[str, str],
    ingress: list[dict[str, Any]],
    custom: NetworkPolicyRules | None,
) -> NetworkPolicy:
    options = _options(rc)
    spec: dict[str, Any] = {"podSelector": {"matchLabels": selector}}
    policy_types: list[str] = []
    if _restricts_ingress(options.mode):
        policy_types.append(_INGRESS)
        spec["ingress"] = ingress + _custom(custom.ingress_rules if custom else None)
    if _restricts_egress(options.mode):
        policy_types.append(_EGRESS)
        egress = _base_egress_rules(rc.name)
        spec["egress"] = egress + _custom(custom.egress_rules if custom else None)
    spec["policyTypes"] = policy_types
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": name,
            "namespace": cs.cluster_namespace(rc),
            "labels": _policy_labels(rc.name, group_label),
        },
        "spec": spec,
    }


def _options(rc: RayCluster) -> NetworkPolicyOptions:
    options = rc.spec.network_policy
    if options is None:
        raise ValueError(f"RayCluster {rc.name} has no spec.networkPolicy")
    return options


def build_head_network_policy(rc: RayCluster) -> NetworkPolicy:
    """Returns the head's NetworkPolicy (KubeRay's ``buildHeadNetworkPolicy``).

    Raises:
        ValueError: the cluster has no ``spec.networkPolicy``.
    """
    return _policy(
        rc,
        name=head_network_policy_name(rc.name),
        group_label=names.HEAD_GROUP_LABEL_VALUE,
        selector={keys.RAY_CLUSTER: rc.name, keys.RAY_NODE_TYPE: labels.HEAD},
        ingress=_head_ingress_rules(rc),
        custom=_options(rc).head,
    )


def _group_rules(options: NetworkPolicyOptions, group_name: str) -> NetworkPolicyRules | None:
    for entry in options.worker_groups or ():
        if entry.group_name == group_name:
            return entry
    return options.worker


def build_worker_group_network_policy(rc: RayCluster, group_name: str) -> NetworkPolicy:
    """Returns one worker group's NetworkPolicy (KubeRay's ``buildWorkerGroupNetworkPolicy``).

    Raises:
        ValueError: the cluster has no ``spec.networkPolicy``.
    """
    return _policy(
        rc,
        name=worker_group_network_policy_name(rc.name, group_name),
        group_label=group_name,
        selector={
            keys.RAY_CLUSTER: rc.name,
            keys.RAY_NODE_TYPE: labels.WORKER,
            keys.RAY_GROUP: group_name,
        },
        ingress=_base_ingress_rules(rc.name),
        custom=_group_rules(_options(rc), group_name),
    )


def build_network_policies(rc: RayCluster) -> list[NetworkPolicy]:
    """Returns the head policy then one per worker group, in spec order.

    Raises:
        ValueError: the cluster has no ``spec.networkPolicy``.
    """
    policies = [build_head_network_policy(rc)]
    for group in rc.spec.worker_group_specs or ():
        policies.append(build_worker_group_network_policy(rc, group.group_name))
    return policies


def normalize_ports(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Returns ``spec`` with every rule port lacking a protocol given ``TCP``, as the API server
    defaults it (KubeRay's ``normalizeNetworkPolicyPorts``: no spurious update)."""
    out = copy.deepcopy(dict(spec))
    for direction in ("ingress", "egress"):
        for rule in out.get(direction) or ():
            for port in rule.get("ports") or ():
                if port.get("protocol") is None:
                    port["protocol"] = "TCP"
    return out
