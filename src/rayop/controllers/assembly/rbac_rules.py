"""The RBAC rules the operator needs: the one source of truth for deploy/rbac and the Helm chart.

Each controller declares exactly the verbs it uses on each resource; :func:`cluster_role_rules`
merges them into the operator's ClusterRole, :func:`leader_election_rules` gives the namespaced
Role for the leader-election Lease. ``deploy/generate.py`` writes both into ``deploy/rbac/`` and
``helm/rayop/templates/``, and tests compare the checked-in copies with these functions, so a
controller that starts using a new verb only needs a line here (then re-run the generator).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "AUTOSCALER_DELEGATED_RULES",
    "CONTROLLER_RULES",
    "LEADER_ELECTION_RULES",
    "RAYCLUSTER_RULES",
    "RAYCRONJOB_RULES",
    "RAYJOB_RULES",
    "RAYSERVICE_RULES",
    "SHARDING_LEASE_RULES",
    "SHARDING_RULES",
    "VERB_ORDER",
    "PolicyRule",
    "cluster_role_rules",
    "leader_election_rules",
    "sharding_lease_rules",
    "sharding_rules",
]

VERB_ORDER: Final[tuple[str, ...]] = (
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
)
"""The order verbs are written in (Kubernetes' conventional order), so output is stable."""


# The Role KubeRay gives the autoscaler sidecar of a cluster with in-tree autoscaling.
AUTOSCALER_ROLE_RULES: list[dict[str, list[str]]] = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
    {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
    {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "patch"]},
]


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """Grants ``verbs`` on ``resources`` (``plural`` or ``plural/subresource``) of one API group.

    Attributes:
        api_group: ``""`` for the core group, else the group name (``ray.io``, ``batch``...).
        resources: Resource names, subresources written ``plural/sub``.
        verbs: Kubernetes API verbs (see :data:`VERB_ORDER`).
    """

    api_group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]

    def __post_init__(self) -> None:
        unknown = set(self.verbs) - set(VERB_ORDER)
        if unknown:
            raise ValueError(f"unknown verbs {sorted(unknown)} in rule for {self.resources}")


_READ: Final = ("get", "list", "watch")

RAYCLUSTER_RULES: Final[tuple[PolicyRule, ...]] = (
    # Reads come from informer caches (list+watch); get is for the autoscaler Role below.
    PolicyRule("ray.io", ("rayclusters",), ("list", "watch", "update")),
    PolicyRule("ray.io", ("rayclusters/status",), ("update",)),
    PolicyRule("ray.io", ("rayclusters/finalizers",), ("update",)),
    # patch: the Recreate upgrade strategy annotates the head pod.
    PolicyRule("", ("pods",), ("list", "watch", "create", "patch", "delete")),
    PolicyRule("", ("services",), ("list", "watch", "create")),
    PolicyRule("events.k8s.io", ("events",), ("create", "patch")),
    # The autoscaler sidecar's ServiceAccount, Role and RoleBinding; get: a ServiceAccount the
    # head template names is looked up when the cache does not have it yet.
    PolicyRule("", ("serviceaccounts",), (*_READ, "create")),
    PolicyRule("rbac.authorization.k8s.io", ("roles", "rolebindings"), ("list", "watch", "create")),
    # update: the head Ingress drift repair (labels, annotations, spec).
    PolicyRule("networking.k8s.io", ("ingresses",), ("list", "watch", "create", "update")),
    # The head Route on OpenShift (instead of the Ingress): created once, never updated.
    PolicyRule("route.openshift.io", ("routes",), ("list", "watch", "create")),
    # The networkpolicy controller (RayClusterNetworkPolicy); get: the policy a create raced.
    PolicyRule("networking.k8s.io", ("networkpolicies",), (*_READ, "create", "update", "delete")),
    # The Ray auth token Secret.
    PolicyRule("", ("secrets",), ("list", "watch", "create")),
    # The GCS fault-tolerance Redis cleanup Job.
    PolicyRule("batch", ("jobs",), ("list", "watch", "create")),
    # The embedded GCS storage PVC: update its ownerReference (deletionPolicy, adoption); get:
    # the live PVC a create raced with. Never patched or deleted (garbage collection does that).
    PolicyRule("", ("persistentvolumeclaims",), (*_READ, "create", "update")),
    # mTLS (RayClusterMTLS): the raycluster-mtls controller's Issuers (created once) and
    # Certificates (their SANs updated); get: the objects the caches do not have yet, and the
    # readiness check before pods are created. The issued Secrets: read, and updated with an
    # ownerReference to their Certificate.
    PolicyRule("cert-manager.io", ("issuers",), (*_READ, "create")),
    PolicyRule("cert-manager.io", ("certificates",), (*_READ, "create", "update")),
    PolicyRule("", ("secrets",), ("get", "update")),
)
"""What the RayCluster controller calls."""

AUTOSCALER_DELEGATED_RULES: Final[tuple[PolicyRule, ...]] = tuple(
    PolicyRule(group, tuple(rule["resources"]), tuple(rule["verbs"]))
    for rule in AUTOSCALER_ROLE_RULES
    for group in rule["apiGroups"]
)
"""What the autoscaler Role grants, which the operator must hold itself to create that Role.

The API server refuses to create a Role granting permissions its creator lacks (RBAC
privilege-escalation prevention), so these come from the Role's own rules.
"""

RAYJOB_RULES: Final[tuple[PolicyRule, ...]] = (
    # delete: deletionStrategy DeleteSelf.
    PolicyRule("ray.io", ("rayjobs",), ("list", "watch", "update", "delete")),
    PolicyRule("ray.io", ("rayjobs/status",), ("update",)),
    PolicyRule("ray.io", ("rayjobs/finalizers",), ("update",)),
    # get: the cluster a create raced with (AlreadyExists).
    PolicyRule("ray.io", ("rayclusters",), (*_READ, "create", "update", "delete")),
    # The K8sJobMode submitter Job (deleted by the deletion rules).
    PolicyRule("batch", ("jobs",), ("list", "watch", "create", "delete")),
    PolicyRule("", ("pods",), ("list", "watch")),
    # The head service the job's dashboard is reached through.
    PolicyRule("", ("services",), ("list", "watch", "create", "update")),
    # get: the cluster's auth token Secret when the cache does not have it yet.
    PolicyRule("", ("secrets",), _READ),
    # The Ray dashboard through the API server's services proxy (--use-kubernetes-proxy):
    # job status (get), HTTPMode submission and stop (create).
    PolicyRule("", ("services/proxy",), ("get", "create")),
    PolicyRule("events.k8s.io", ("events",), ("create", "patch")),
)
"""What the RayJob controller calls."""

RAYSERVICE_RULES: Final[tuple[PolicyRule, ...]] = (
    # No get: a pass that finds the cache behind its own last write waits for it (OwnWrites).
    # update: the finalizer, with KubeRay's typed update of the whole object.
    PolicyRule("ray.io", ("rayservices",), ("list", "watch", "update")),
    PolicyRule("ray.io", ("rayservices/status",), ("update",)),
    PolicyRule("ray.io", ("rayservices/finalizers",), ("update",)),
    PolicyRule("ray.io", ("rayclusters",), (*_READ, "create", "update", "patch", "delete")),
    # patch: the ray.io/serve label of head pods.
    PolicyRule("", ("pods",), ("list", "watch", "patch")),
    # The head and serve services, switched between clusters; delete: suspend; get: the
    # service a create raced with.
    PolicyRule("", ("services",), (*_READ, "create", "update", "delete")),
    # Serve applications: get, and put (update) of serveConfigV2.
    PolicyRule("", ("services/proxy",), ("get", "update")),
    # numServeEndpoints.
    PolicyRule("discovery.k8s.io", ("endpointslices",), ("list", "watch")),
    # get: the cluster's auth token Secret when the cache does not have it yet.
    PolicyRule("", ("secrets",), _READ),
    PolicyRule("events.k8s.io", ("events",), ("create", "patch")),
    # NewClusterWithIncrementalUpgrade: read with GETs (no informer), deleted on suspend.
    PolicyRule(
        "gateway.networking.k8s.io",
        ("gateways", "httproutes"),
        ("get", "create", "update", "delete"),
    ),
)
"""What the RayService controller calls."""

RAYCRONJOB_RULES: Final[tuple[PolicyRule, ...]] = (
    PolicyRule("ray.io", ("raycronjobs",), ("list", "watch")),
    PolicyRule("ray.io", ("raycronjobs/status",), ("update",)),
    # blockOwnerDeletion on the owner reference of each RayJob it creates.
    PolicyRule("ray.io", ("raycronjobs/finalizers",), ("update",)),
    PolicyRule("ray.io", ("rayjobs",), ("create",)),
    PolicyRule("events.k8s.io", ("events",), ("create", "patch")),
)
"""What the RayCronJob controller calls (registered only with the ``RayCronJob`` gate on)."""

CONTROLLER_RULES: Final[Mapping[str, tuple[PolicyRule, ...]]] = {
    "raycluster": RAYCLUSTER_RULES + AUTOSCALER_DELEGATED_RULES,
    "rayjob": RAYJOB_RULES,
    "rayservice": RAYSERVICE_RULES,
    "raycronjob": RAYCRONJOB_RULES,
}
"""Every controller's rules, by controller name; the ClusterRole is their union."""

LEADER_ELECTION_RULES: Final[tuple[PolicyRule, ...]] = (
    PolicyRule("coordination.k8s.io", ("leases",), ("get", "create", "update")),
)
"""What leader election calls, in the Lease's namespace only."""


SHARDING_RULES: Final[tuple[PolicyRule, ...]] = (
    # The sharder: label selectors over the roots, JSON patches of their shard labels (the
    # owner's drain acknowledgement too).
    PolicyRule("ray.io", ("rayclusters", "rayjobs", "rayservices", "raycronjobs"), ("list", "patch")),
    # The sharder relabels a root's objects (found by the rayop.io/shard-root label) before the
    # root: every resource of rayop.controllers.assembly.sharding.CHILD_RESOURCES.
    PolicyRule(
        "",
        ("pods", "services", "secrets", "configmaps", "serviceaccounts", "persistentvolumeclaims"),
        ("list", "patch"),
    ),
    PolicyRule("batch", ("jobs",), ("list", "patch")),
    PolicyRule("rbac.authorization.k8s.io", ("roles", "rolebindings"), ("list", "patch")),
    PolicyRule("networking.k8s.io", ("ingresses", "networkpolicies"), ("list", "patch")),
    PolicyRule("route.openshift.io", ("routes",), ("list", "patch")),
    PolicyRule("gateway.networking.k8s.io", ("gateways", "httproutes"), ("list", "patch")),
    PolicyRule("cert-manager.io", ("certificates",), ("list", "patch")),
    PolicyRule("scheduling.volcano.sh", ("podgroups",), ("list", "patch")),
    PolicyRule("scheduling.x-k8s.io", ("podgroups",), ("list", "patch")),
    PolicyRule("scheduling.k8s.io", ("podgroups",), ("list", "patch")),
)
"""What ``--sharding`` adds where the operator's rules are granted (the chart grants them when
sharding is on; deploy/sharding/ is the kustomize component)."""

SHARDING_LEASE_RULES: Final[tuple[PolicyRule, ...]] = (
    # Every replica reads the membership Leases (by label) besides holding its own; the sharder
    # deletes those of replicas gone for a while.
    PolicyRule("coordination.k8s.io", ("leases",), ("list", "delete")),
)
"""What ``--sharding`` adds to the leader-election Role."""


def _merge(rules: Iterable[PolicyRule]) -> list[dict[str, Any]]:
    verbs: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        for resource in rule.resources:
            verbs.setdefault((rule.api_group, resource), set()).update(rule.verbs)
    return [
        {
            "apiGroups": [group],
            "resources": [resource],
            "verbs": [v for v in VERB_ORDER if v in verbs[(group, resource)]],
        }
        for group, resource in sorted(verbs)
    ]


def cluster_role_rules(
    controllers: Mapping[str, tuple[PolicyRule, ...]] = CONTROLLER_RULES,
) -> list[dict[str, Any]]:
    """Returns the ClusterRole ``rules``: one rule per (API group, resource), sorted.

    A resource that several controllers use gets the union of their verbs.
    """
    return _merge(rule for rules in controllers.values() for rule in rules)


def leader_election_rules() -> list[dict[str, Any]]:
    """Returns the leader-election Role ``rules`` (Lease get/create/update)."""
    return _merge(LEADER_ELECTION_RULES)


def sharding_rules() -> list[dict[str, Any]]:
    """Returns the rules ``--sharding`` adds to the operator's ClusterRole (or Roles)."""
    return _merge(SHARDING_RULES)


def sharding_lease_rules() -> list[dict[str, Any]]:
    """Returns the rules ``--sharding`` adds in the Leases' namespace."""
    return _merge(SHARDING_LEASE_RULES)
