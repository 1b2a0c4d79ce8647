"""Label and annotation keys KubeRay puts on the objects of a RayCluster, and the label sets.

Pods get their template labels and the group's ``labels`` field first; the operator's labels are
then applied on top, and ``ray.io/node-type``, ``ray.io/group`` and ``ray.io/cluster`` can never
be overridden by the user (KubeRay's ``labelPod``).
"""

from __future__ import annotations

from collections.abc import Mapping

from rayop.controllers.raycluster import names

RAY_CLUSTER = "ray.io/cluster"
RAY_NODE_TYPE = "ray.io/node-type"
RAY_GROUP = "ray.io/group"
RAY_IS_RAY_NODE = "ray.io/is-ray-node"
RAY_IDENTIFIER = "ray.io/identifier"
RAY_SERVE = "ray.io/serve"
RAY_HEADLESS_WORKER_SVC = "ray.io/headless-worker-svc"
RAY_ORIGINATED_FROM_CR_NAME = "ray.io/originated-from-cr-name"
RAY_ORIGINATED_FROM_CRD = "ray.io/originated-from-crd"
RAY_WORKER_REPLICA_NAME = "ray.io/worker-group-replica-name"
RAY_WORKER_REPLICA_INDEX = "ray.io/worker-group-replica-index"
RAY_REPLICA_HOST_INDEX = "ray.io/replica-host-index"
APP_NAME = "app.kubernetes.io/name"
APP_CREATED_BY = "app.kubernetes.io/created-by"
APP_NAME_VALUE = "kuberay"
CREATED_BY_VALUE = "kuberay-operator"

# Annotations
FT_ENABLED = "ray.io/ft-enabled"
EXTERNAL_STORAGE_NAMESPACE = "ray.io/external-storage-namespace"
OVERWRITE_CONTAINER_CMD = "ray.io/overwrite-container-cmd"
UPGRADE_STRATEGY_RECREATE_HASH = "ray.io/upgrade-strategy-recreate-hash"
KUBERAY_VERSION = "ray.io/kuberay-version"
ENABLE_SERVE_SERVICE = "ray.io/enable-serve-service"
DISABLE_PROVISIONED_HEAD_RESTART = "ray.io/disable-provisioned-head-restart"
GCS_FT_DELETION_TIMEOUT = "ray.io/gcs-ft-deletion-timeout"
GCS_FT_REDIS_CLEANUP_FINALIZER = "ray.io/gcs-ft-redis-cleanup-finalizer"
INGRESS_CLASS = "kubernetes.io/ingress.class"

HEAD = "head"
WORKER = "worker"
REDIS_CLEANUP = "redis-cleanup"
_PROTECTED = frozenset({RAY_NODE_TYPE, RAY_GROUP, RAY_CLUSTER})


def pod_labels(
    cluster_name: str, node_type: str, group_name: str, user_labels: Mapping[str, str] | None
) -> dict[str, str]:
    """Returns a Ray pod's labels: KubeRay's set, overridden by user labels except the protected three."""
    result = {
        RAY_IS_RAY_NODE: "yes",
        RAY_CLUSTER: cluster_name,
        RAY_NODE_TYPE: node_type,
        RAY_GROUP: group_name,
        RAY_IDENTIFIER: names.identifier(cluster_name, node_type),
        APP_NAME: APP_NAME_VALUE,
        APP_CREATED_BY: CREATED_BY_VALUE,
    }
    for key, value in (user_labels or {}).items():
        if key not in _PROTECTED:
            result[key] = value
    return result


def head_service_labels(cluster_name: str) -> dict[str, str]:
    """Returns the head service's default labels, which are also its selector."""
    return {
        RAY_CLUSTER: cluster_name,
        RAY_NODE_TYPE: HEAD,
        RAY_IDENTIFIER: names.identifier(cluster_name, HEAD),
        APP_NAME: APP_NAME_VALUE,
        APP_CREATED_BY: CREATED_BY_VALUE,
    }


def head_service_list_selector(cluster_name: str) -> dict[str, str]:
    """Returns the labels KubeRay lists head services by (cluster, node-type=head, identifier)."""
    return {
        RAY_CLUSTER: cluster_name,
        RAY_NODE_TYPE: HEAD,
        RAY_IDENTIFIER: names.identifier(cluster_name, HEAD),
    }


def head_pods_selector(cluster_name: str) -> dict[str, str]:
    """Returns the selector of a cluster's head pods."""
    return {RAY_CLUSTER: cluster_name, RAY_NODE_TYPE: HEAD}


def rbac_labels(cluster_name: str) -> dict[str, str]:
    """Returns the labels of the autoscaler ServiceAccount, Role and RoleBinding."""
    return {RAY_CLUSTER: cluster_name, APP_NAME: APP_NAME_VALUE, APP_CREATED_BY: CREATED_BY_VALUE}


def matches(obj_labels: Mapping[str, str] | None, selector: Mapping[str, str]) -> bool:
    """Tells whether labels satisfy an equality selector."""
    have = obj_labels or {}
    return all(have.get(k) == v for k, v in selector.items())
