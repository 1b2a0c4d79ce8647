"""The label sets KubeRay puts on the objects of a RayCluster (keys: :mod:`rayop.api.keys`).

Pods get their template labels and the group's ``labels`` field first; the operator's labels are
then applied on top, and ``ray.io/node-type``, ``ray.io/group`` and ``ray.io/cluster`` can never
be overridden by the user (KubeRay's ``labelPod``).
"""

from __future__ import annotations

from collections.abc import Mapping

from rayop.api import keys
from rayop.controllers.kit import names

APP_NAME_VALUE = "kuberay"
CREATED_BY_VALUE = "kuberay-operator"


HEAD = "head"
WORKER = "worker"
REDIS_CLEANUP = "redis-cleanup"
_PROTECTED = frozenset({keys.RAY_NODE_TYPE, keys.RAY_GROUP, keys.RAY_CLUSTER})


def pod_labels(
    cluster_name: str, node_type: str, group_name: str, user_labels: Mapping[str, str] | None
) -> dict[str, str]:
    """Returns a Ray pod's labels: KubeRay's set, overridden by user labels except the protected three."""
    result = {
        keys.RAY_IS_RAY_NODE: "yes",
        keys.RAY_CLUSTER: cluster_name,
        keys.RAY_NODE_TYPE: node_type,
        keys.RAY_GROUP: group_name,
        keys.RAY_IDENTIFIER: names.identifier(cluster_name, node_type),
        keys.APP_NAME: APP_NAME_VALUE,
        keys.APP_CREATED_BY: CREATED_BY_VALUE,
    }
    for key, value in (user_labels or {}).items():
        if key not in _PROTECTED:
            result[key] = value
    return result


def head_service_labels(cluster_name: str) -> dict[str, str]:
    """Returns the head service's default labels, which are also its selector."""
    return {
        keys.RAY_CLUSTER: cluster_name,
        keys.RAY_NODE_TYPE: HEAD,
        keys.RAY_IDENTIFIER: names.identifier(cluster_name, HEAD),
        keys.APP_NAME: APP_NAME_VALUE,
        keys.APP_CREATED_BY: CREATED_BY_VALUE,
    }


def head_service_list_selector(cluster_name: str) -> dict[str, str]:
    """Returns the labels KubeRay lists head services by (cluster, node-type=head, identifier)."""
    return {
        keys.RAY_CLUSTER: cluster_name,
        keys.RAY_NODE_TYPE: HEAD,
        keys.RAY_IDENTIFIER: names.identifier(cluster_name, HEAD),
    }


def head_pods_selector(cluster_name: str) -> dict[str, str]:
    """Returns the selector of a cluster's head pods."""
    return {keys.RAY_CLUSTER: cluster_name, keys.RAY_NODE_TYPE: HEAD}


def rbac_labels(cluster_name: str) -> dict[str, str]:
    """Returns the labels of the autoscaler ServiceAccount, Role and RoleBinding."""
    return {
        keys.RAY_CLUSTER: cluster_name,
        keys.APP_NAME: APP_NAME_VALUE,
        keys.APP_CREATED_BY: CREATED_BY_VALUE,
    }


def matches(obj_labels: Mapping[str, str] | None, selector: Mapping[str, str]) -> bool:
    """Tells whether labels satisfy an equality selector."""
    have = obj_labels or {}
    return all(have.get(k) == v for k, v in selector.items())
