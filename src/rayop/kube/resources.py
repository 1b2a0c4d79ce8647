"""Well-known resources: the Kubernetes kinds the operator touches and KubeRay's ray.io/v1 kinds."""

from __future__ import annotations

from rayop.kube.resource import Resource

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
CORE_EVENTS = Resource("", "v1", "events", "Event")
"""The legacy core/v1 events."""

EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
"""events.k8s.io/v1 events, which controller-runtime's recorder writes."""

ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
JOBS = Resource("batch", "v1", "jobs", "Job")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
INGRESSES = Resource("networking.k8s.io", "v1", "ingresses", "Ingress")
CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)

RAY_CLUSTERS = Resource("ray.io", "v1", "rayclusters", "RayCluster")
RAY_JOBS = Resource("ray.io", "v1", "rayjobs", "RayJob")
RAY_SERVICES = Resource("ray.io", "v1", "rayservices", "RayService")

__all__ = [
    "CONFIGMAPS",
    "CORE_EVENTS",
    "CRDS",
    "ENDPOINTS",
    "ENDPOINT_SLICES",
    "EVENTS",
    "INGRESSES",
    "JOBS",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PERSISTENT_VOLUME_CLAIMS",
    "PODS",
    "RAY_CLUSTERS",
    "RAY_JOBS",
    "RAY_SERVICES",
    "ROLES",
    "ROLE_BINDINGS",
    "SECRETS",
    "SERVICES",
    "SERVICE_ACCOUNTS",
]
