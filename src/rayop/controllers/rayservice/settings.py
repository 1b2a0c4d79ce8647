"""The RayService controller's fixed names: label and annotation keys, requeue, reasons.

One declarative module (style guideline 10) so the rest of the package reads as behaviour.
Values are KubeRay v1.7's (kuberay-v1.md §6) except :data:`DELETION_TIMESTAMP_ANNOTATION`, which
is rayop's: KubeRay keeps the deletion schedule of retired clusters only in memory.
"""

from __future__ import annotations

from typing import Final

CONTROLLER_NAME: Final = "rayservice"
"""The controller's name (metrics, logs)."""
REPORTING_CONTROLLER: Final = "rayservice-controller"
"""The reporting controller of the RayService controller's Events."""
OWNER_KIND: Final = "RayService"
OWNER_GROUP: Final = "ray.io"
OWNER_API_VERSION: Final = "ray.io/v1"

REQUEUE_SECONDS: Final = 2.0
"""``ServiceDefaultRequeueDuration``: every pass requeues after this (seconds)."""
FINALIZER: Final = "ray.io/rayservice-finalizer"

# Labels and annotations on the RayClusters a RayService creates.
ORIGINATED_FROM_CR_NAME: Final = "ray.io/originated-from-cr-name"
ORIGINATED_FROM_CRD: Final = "ray.io/originated-from-crd"
HASH_ANNOTATION: Final = "ray.io/hash-without-replicas-and-workers-to-delete"
NUM_WORKER_GROUPS_ANNOTATION: Final = "ray.io/num-worker-groups"
KUBERAY_VERSION_ANNOTATION: Final = "ray.io/kuberay-version"
ENABLE_SERVE_SERVICE_ANNOTATION: Final = "ray.io/enable-serve-service"
DELETION_TIMESTAMP_ANNOTATION: Final = "ray.io/rayservice-deletion-timestamp"
"""RFC 3339 time at which a retired cluster is deleted (rayop: survives operator restarts)."""

SERVE_LABEL: Final = "ray.io/serve"
"""On head pods: "true" when the Serve proxy answers /-/healthz; part of the serve selector."""

# Event reasons (KubeRay's strings).
CREATED_RAY_CLUSTER: Final = "CreatedRayCluster"
FAILED_TO_CREATE_RAY_CLUSTER: Final = "FailedToCreateRayCluster"
UPDATED_RAY_CLUSTER: Final = "UpdatedRayCluster"
DELETED_RAY_CLUSTER: Final = "DeletedRayCluster"
FAILED_TO_DELETE_RAY_CLUSTER: Final = "FailedToDeleteRayCluster"
CREATED_SERVICE: Final = "CreatedService"
UPDATED_SERVICE: Final = "UpdatedService"
DELETED_SERVICE: Final = "DeletedService"
UPDATED_SERVE_APPLICATIONS: Final = "UpdatedServeApplications"
FAILED_TO_UPDATE_SERVE_APPLICATIONS: Final = "FailedToUpdateServeApplications"
UPDATED_HEAD_POD_SERVE_LABEL: Final = "UpdatedHeadPodServeLabel"
INVALID_RAYSERVICE_SPEC: Final = "InvalidRayServiceSpec"
