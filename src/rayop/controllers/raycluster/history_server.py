"""The history-server collector sidecar exactly as KubeRay v1.7.0 adds it (``historyServerOptions``).

With the ``RayClusterHistoryServer`` gate on and ``historyServerOptions.collectorOptions`` set,
every head and worker pod gets a container ``ray-history-collector`` after the pod's own
containers (and before the Configuration's sidecars), built by
:func:`build_collector_container`:

- ``image`` as given, ``imagePullPolicy`` (default ``IfNotPresent``) and ``resources`` (default
  limits 200m CPU / 256Mi, requests 50m / 64Mi);
- env, in this order: ``POD_IP`` (the pod's IP), ``RAY_CLUSTER_NAME``, ``RAY_CLUSTER_NAMESPACE``,
  ``RAY_ROLE`` (``Head`` or ``Worker``), ``EVENTS_PORT=8084``, ``FQ_RAY_IP`` (the head service
  FQDN), ``OWNER_KIND`` and ``OWNER_NAME`` (from the cluster's ``ray.io/originated-from-*``
  labels, when set), on the head ``RAY_DASHBOARD_ADDRESS=http://localhost:8265`` unless the user
  sets it, then the user's env; with token auth the same auth env as the Ray container.

The pod then shares ``/tmp/ray`` (the ``ray-logs`` emptyDir) between the Ray container and the
collector, and the Ray container gets the Ray event-export variables
(:func:`add_ray_event_env`, each unless the user set it) pointing the dashboard aggregator agent
at the collector's ``http://localhost:8084/v1/events``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from rayop.api import keys
from rayop.api.raycluster import CollectorOptions, RayCluster
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.raycluster import env

__all__ = [
    "COLLECTOR_CONTAINER_NAME",
    "DEFAULT_EXPOSABLE_EVENT_TYPES",
    "add_collector",
    "add_ray_event_env",
    "build_collector_container",
    "collector_index",
    "collector_options",
]

COLLECTOR_CONTAINER_NAME: Final = "ray-history-collector"
EVENTS_PORT: Final = "8084"
DEFAULT_EXPOSABLE_EVENT_TYPES: Final = (
    "TASK_DEFINITION_EVENT,TASK_LIFECYCLE_EVENT,ACTOR_TASK_DEFINITION_EVENT,TASK_PROFILE_EVENT,"
    "DRIVER_JOB_DEFINITION_EVENT,DRIVER_JOB_LIFECYCLE_EVENT,ACTOR_DEFINITION_EVENT,"
    "ACTOR_LIFECYCLE_EVENT,NODE_DEFINITION_EVENT,NODE_LIFECYCLE_EVENT"
)
_DEFAULT_RESOURCES: Final = {
    "limits": {"cpu": "200m", "memory": "256Mi"},
    "requests": {"cpu": "50m", "memory": "64Mi"},
}
_RAY_EVENT_ENV: Final = (
    ("RAY_enable_ray_event", "true"),
    ("RAY_enable_core_worker_ray_event_to_aggregator", "true"),
    (
        "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR",
        f"http://localhost:{EVENTS_PORT}/v1/events",
    ),
    ("RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES", DEFAULT_EXPOSABLE_EVENT_TYPES),
    (
        "RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES",
        DEFAULT_EXPOSABLE_EVENT_TYPES,
    ),
)


def collector_options(rc: RayCluster, gates: FeatureGates) -> CollectorOptions | None:
    """Returns the collector options when the collector is to be added (gate on), else None."""
    options = rc.spec.history_server_options
    if not gates.ray_cluster_history_server or options is None:
        return None
    return options.collector_options


def build_collector_container(
    options: CollectorOptions, *, rc: RayCluster, node_type: str, fqdn: str
) -> dict[str, Any]:
    """Returns the collector container for a pod of ``node_type`` (``head`` or ``worker``).

    Args:
        options: ``historyServerOptions.collectorOptions``.
        rc: The RayCluster (its name, namespace and originated-from labels).
        node_type: ``head`` or ``worker``.
        fqdn: The head service FQDN (``FQ_RAY_IP``); empty leaves the variable out.
    """
    user_env = [copy.deepcopy(dict(e)) for e in options.env or () if isinstance(e, Mapping)]
    resources = options.resources if options.resources is not None else _DEFAULT_RESOURCES
    container: dict[str, Any] = {"name": COLLECTOR_CONTAINER_NAME}
    if options.image:
        container["image"] = options.image
    container["imagePullPolicy"] = options.image_pull_policy or "IfNotPresent"
    container["resources"] = copy.deepcopy(dict(resources))
    container["env"] = [
        env.field_ref_env("POD_IP", "status.podIP"),
        {"name": "RAY_CLUSTER_NAME", "value": rc.name},
        {"name": "RAY_CLUSTER_NAMESPACE", "value": cs.cluster_namespace(rc)},
        {"name": "RAY_ROLE", "value": "Head" if node_type == "head" else "Worker"},
        {"name": "EVENTS_PORT", "value": EVENTS_PORT},
    ]
    if fqdn:
        env.append_env(container, "FQ_RAY_IP", fqdn)
    cluster_labels = rc.metadata.get("labels") or {}
    if kind := cluster_labels.get(keys.RAY_ORIGINATED_FROM_CRD):
        env.append_env(container, "OWNER_KIND", kind)
    if owner := cluster_labels.get(keys.RAY_ORIGINATED_FROM_CR_NAME):
        env.append_env(container, "OWNER_NAME", owner)
    if node_type == "head" and not any(e.get("name") == "RAY_DASHBOARD_ADDRESS" for e in user_env):
        env.append_env(container, "RAY_DASHBOARD_ADDRESS", "http://localhost:8265")
    container["env"] += user_env
    return container


def add_collector(
    rc: RayCluster, pod_spec: dict[str, Any], *, node_type: str, fqdn: str, gates: FeatureGates
) -> None:
    """Appends the collector to ``pod_spec["containers"]`` when the gate and options ask for it."""
    options = collector_options(rc, gates)
    if options is None:
        return
    container = build_collector_container(options, rc=rc, node_type=node_type, fqdn=fqdn)
    if cs.is_auth_enabled(rc):
        env.add_auth_env(rc, container)
    pod_spec.setdefault("containers", []).append(container)


def collector_index(pod_spec: Mapping[str, Any], gates: FeatureGates) -> int | None:
    """Returns the index of the collector container (gate on only), or None."""
    if not gates.ray_cluster_history_server:
        return None
    for index, container in enumerate(pod_spec.get("containers") or ()):
        if container.get("name") == COLLECTOR_CONTAINER_NAME:
            return index
    return None


def add_ray_event_env(container: dict[str, Any]) -> None:
    """Adds the Ray event-export variables to the Ray container, each unless already set."""
    for name, value in _RAY_EVENT_ENV:
        env.append_env_if_absent(container, name, value)
