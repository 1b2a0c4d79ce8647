"""Names and objects a RayJob derives from its cluster: the RayCluster, its own head Service, the
dashboard address (KubeRay v1.7.0: ``getOrCreateRayClusterInstance``,
``constructRayClusterForRayJob`` and ``reconcileServices`` in
``ray-operator/controllers/ray/rayjob_controller.go``).

Everything here is pure: the parsed RayJob (and, for what is copied verbatim, wire dicts) in,
wire dicts out.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from typing import Any

from rayop.api import keys
from rayop.api.rayjob import RayJob
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.kit import labels, names
from rayop.controllers.kit.ownership import controller_reference
from rayop.controllers.raycluster.builders import build_head_service, service_ports

CLUSTER_SELECTOR_KEY = keys.RAY_CLUSTER
"""The ``clusterSelector`` key that names the existing cluster to use."""
JOB_SUBMISSION_MODE_LABEL = keys.RAY_JOB_SUBMISSION_MODE
ORIGIN_CRD = "RayJob"
DASHBOARD_PORT_NAME = "dashboard"
DEFAULT_DASHBOARD_PORT = 8265


def generate_job_id(rayjob_name: str, rng: random.Random) -> str:
    """Returns a new submission id, ``<rayjob>-<5 random chars>``."""
    return f"{rayjob_name}-{names.random_suffix(rng)}"


def generate_cluster_name(rayjob_name: str, rng: random.Random) -> str:
    """Returns a new RayCluster name, ``<rayjob>-<5 random chars>``."""
    return f"{rayjob_name}-{names.random_suffix(rng)}"


def build_raycluster(
    job: RayJob,
    cluster_name: str,
    *,
    cluster_spec: Obj,
    sidecar: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Returns the RayCluster a RayJob runs on (KubeRay's ``constructRayClusterForRayJob``).

    ``cluster_spec`` is the RayJob's ``rayClusterSpec`` as written (copied verbatim, so fields
    this version does not know survive). Labels are the RayJob's plus
    ``ray.io/originated-from-cr-name``, ``ray.io/originated-from-crd=RayJob`` and
    ``ray.io/job-submission-mode``; annotations are the RayJob's. In SidecarMode, ``sidecar`` is
    appended to the head pod's containers, the head ``restartPolicy`` becomes ``Never`` and
    ``ray.io/disable-provisioned-head-restart=true`` is set. The RayJob is the controlling owner.
    """
    cluster_labels = dict(job.metadata.get("labels") or {})
    cluster_labels[keys.RAY_ORIGINATED_FROM_CR_NAME] = job.name
    cluster_labels[keys.RAY_ORIGINATED_FROM_CRD] = ORIGIN_CRD
    cluster_labels[JOB_SUBMISSION_MODE_LABEL] = job.spec.submission_mode
    annotations = dict(job.metadata.get("annotations") or {})
    spec = copy.deepcopy(dict(cluster_spec))
    if sidecar is not None:
        template = spec.setdefault("headGroupSpec", {}).setdefault("template", {})
        pod_spec = template.setdefault("spec", {})
        pod_spec.setdefault("containers", []).append(copy.deepcopy(dict(sidecar)))
        pod_spec["restartPolicy"] = "Never"
        annotations[keys.DISABLE_PROVISIONED_HEAD_RESTART] = "true"
    metadata: dict[str, Any] = {
        "name": cluster_name,
        "namespace": job.namespace,
        "labels": cluster_labels,
        "ownerReferences": [controller_reference(job)],
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata, "spec": spec}


def dashboard_port(cluster: Obj) -> int:
    """Returns the head's port named ``dashboard`` (8265 when there is none)."""
    return service_ports(cluster).get(DASHBOARD_PORT_NAME, DEFAULT_DASHBOARD_PORT)


def dashboard_url(cluster: Obj, service: Obj | None, *, options: OperatorOptions) -> str:
    """Returns ``<head svc FQDN>:<dashboard port>`` (no scheme), KubeRay's ``status.dashboardURL``.

    The port is that of the head Service's port named ``dashboard`` when the Service is known,
    else the head container's.
    """
    port = dashboard_port(cluster)
    for entry in ((service or {}).get("spec") or {}).get("ports") or []:
        if entry.get("name") == DASHBOARD_PORT_NAME and entry.get("port"):
            port = int(entry["port"])
    return f"{names.head_service_fqdn(cluster, cluster_domain=options.cluster_domain)}:{port}"


def head_service_name(cluster: Obj) -> str:
    """Returns the name of the cluster's head Service (custom or ``<cluster>-head-svc``)."""
    return names.head_service_name(cluster)


def build_rayjob_head_service(
    job: RayJob, cluster: Obj, *, options: OperatorOptions
) -> dict[str, Any]:
    """Returns the RayJob's own ``<rayjob>-head-svc``, selecting the cluster's head pod.

    It is the cluster's head Service renamed, labelled as originating from the RayJob and owned by
    it (as KubeRay builds the RayService's head service).
    """
    rayjob_name = job.name
    service = build_head_service(cluster, options=options)
    service["metadata"]["name"] = names.check_name(names.owner_head_service_name(rayjob_name))
    service["metadata"]["namespace"] = job.namespace
    service["metadata"]["labels"] = {
        keys.RAY_ORIGINATED_FROM_CR_NAME: rayjob_name,
        keys.RAY_ORIGINATED_FROM_CRD: ORIGIN_CRD,
        keys.RAY_NODE_TYPE: labels.HEAD,
        keys.RAY_IDENTIFIER: names.identifier(rayjob_name, labels.HEAD),
    }
    service["metadata"]["ownerReferences"] = [controller_reference(job)]
    return service


def head_service_needs_update(current: Obj, desired: Obj) -> bool:
    """Tells whether the RayJob's head Service selects another cluster than it should."""
    current_selector = (current.get("spec") or {}).get("selector") or {}
    desired_selector = (desired.get("spec") or {}).get("selector") or {}
    return current_selector.get(keys.RAY_CLUSTER) != desired_selector.get(keys.RAY_CLUSTER)


def updated_head_service(current: Obj, desired: Obj) -> dict[str, Any]:
    """Returns ``current`` with the desired spec, keeping its ClusterIP(s) and resourceVersion."""
    updated = copy.deepcopy(dict(current))
    spec = copy.deepcopy(dict(desired.get("spec") or {}))
    for key in ("clusterIP", "clusterIPs"):
        if key in (current.get("spec") or {}):
            spec[key] = copy.deepcopy((current.get("spec") or {})[key])
    updated["spec"] = spec
    return updated
