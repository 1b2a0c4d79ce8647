"""The autoscaler's ServiceAccount, Role and RoleBinding (created when enableInTreeAutoscaling)."""

from __future__ import annotations

from typing import Any

from rayop.api.raycluster import RayCluster
from rayop.controllers.assembly.rbac_rules import AUTOSCALER_ROLE_RULES
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels, names
from rayop.controllers.raycluster.pods import owner_reference


def _metadata(rc: RayCluster, object_name: str) -> dict[str, Any]:
    return {
        "name": object_name,
        "namespace": cs.cluster_namespace(rc),
        "labels": labels.rbac_labels(rc.name),
        "ownerReferences": [owner_reference(rc)],
    }


def user_provided_service_account(rc: RayCluster) -> bool:
    """Tells whether the head template names the autoscaler ServiceAccount itself.

    KubeRay then does not create it: a missing one is an ``AutoscalerServiceAccountNotFound`` error.
    """
    sa = cs.template_spec(rc.spec.head_group_spec.template).get("serviceAccountName")
    return bool(sa) and sa == cs.head_service_account_name(rc)


def build_autoscaler_service_account(rc: RayCluster) -> dict[str, Any]:
    """Returns the autoscaler ServiceAccount (name: head ``serviceAccountName`` or the cluster)."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _metadata(rc, names.autoscaler_service_account_name(rc)),
    }


def build_autoscaler_role(rc: RayCluster) -> dict[str, Any]:
    """Returns the autoscaler Role (pods get/list/watch/patch, pods/resize, rayclusters get/patch)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _metadata(rc, names.autoscaler_role_name(rc)),
        "rules": [dict(rule) for rule in AUTOSCALER_ROLE_RULES],
    }


def build_autoscaler_role_binding(rc: RayCluster) -> dict[str, Any]:
    """Returns the RoleBinding of the autoscaler Role to its ServiceAccount."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(rc, names.autoscaler_role_name(rc)),
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": names.autoscaler_service_account_name(rc),
                "namespace": cs.cluster_namespace(rc),
            }
        ],
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": names.autoscaler_role_name(rc),
        },
    }
