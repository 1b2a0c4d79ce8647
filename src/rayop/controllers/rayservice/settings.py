"""The RayService controller's fixed names: its identity, label and annotation keys, reasons.

Requeue intervals are in :mod:`rayop.controllers.kit.settings` with the other controllers'.

One declarative module (docs/naming.md) so the rest of the package reads as behaviour. Values are
KubeRay v1.7.0's (``ray-operator/controllers/ray/utils/constant.go`` and
``ray-operator/controllers/ray/rayservice_controller.go``) except
:data:`DELETION_TIMESTAMP_ANNOTATION`, which is rayop's: KubeRay keeps the deletion schedule of
retired clusters only in memory.
"""

from __future__ import annotations

from typing import Final

from rayop.api import keys

CONTROLLER_NAME: Final = "rayservice"
"""The controller's name (metrics, logs)."""
REPORTING_CONTROLLER: Final = "rayservice-controller"
"""The reporting controller of the RayService controller's Events."""
OWNER_KIND: Final = "RayService"

FINALIZER: Final = keys.RAYSERVICE_FINALIZER

# Labels and annotations on the RayClusters a RayService creates.
ORIGINATED_FROM_CR_NAME: Final = keys.RAY_ORIGINATED_FROM_CR_NAME
ORIGINATED_FROM_CRD: Final = keys.RAY_ORIGINATED_FROM_CRD
HASH_ANNOTATION: Final = keys.RAYSERVICE_HASH
NUM_WORKER_GROUPS_ANNOTATION: Final = keys.RAYSERVICE_NUM_WORKER_GROUPS
KUBERAY_VERSION_ANNOTATION: Final = keys.KUBERAY_VERSION
DELETION_TIMESTAMP_ANNOTATION: Final = keys.RAYSERVICE_DELETION_TIMESTAMP

SERVE_LABEL: Final = keys.RAY_SERVE

# Event reasons (KubeRay's strings).
CREATED_RAY_CLUSTER: Final = "CreatedRayCluster"
FAILED_TO_CREATE_RAY_CLUSTER: Final = "FailedToCreateRayCluster"
UPDATED_RAY_CLUSTER: Final = "UpdatedRayCluster"
FAILED_TO_UPDATE_RAY_CLUSTER: Final = "FailedToUpdateRayCluster"
DELETED_RAY_CLUSTER: Final = "DeletedRayCluster"
FAILED_TO_DELETE_RAY_CLUSTER: Final = "FailedToDeleteRayCluster"
CREATED_SERVICE: Final = "CreatedService"
UPDATED_SERVICE: Final = "UpdatedService"
DELETED_SERVICE: Final = "DeletedService"
UPDATED_SERVE_APPLICATIONS: Final = "UpdatedServeApplications"
FAILED_TO_UPDATE_SERVE_APPLICATIONS: Final = "FailedToUpdateServeApplications"
UPDATED_HEAD_POD_SERVE_LABEL: Final = "UpdatedHeadPodServeLabel"
INVALID_RAYSERVICE_SPEC: Final = "InvalidRayServiceSpec"
RAYSERVICE_INITIALIZING_TIMEOUT: Final = "RayServiceInitializingTimeout"
FAILED_TO_UPDATE_HEAD_POD_SERVE_LABEL: Final = "FailedToUpdateHeadPodServeLabel"
FAILED_TO_UPDATE_SERVICE: Final = "FailedToUpdateService"
FAILED_TO_CREATE_SERVICE: Final = "FailedToCreateService"
FAILED_TO_DELETE_SERVICE: Final = "FailedToDeleteService"
ACTION_RECONCILE: Final = "Reconcile"
ACTION_VALIDATE: Final = "Validate"
ACTION_CREATE: Final = "Create"
ACTION_UPDATE: Final = "Update"
ACTION_DELETE: Final = "Delete"

# Incremental upgrade (Gateway API) event reasons.
CREATED_GATEWAY: Final = "CreatedGateway"
UPDATED_GATEWAY: Final = "UpdatedGateway"
DELETED_GATEWAY: Final = "DeletedGateway"
FAILED_TO_CREATE_GATEWAY: Final = "FailedToCreateGateway"
FAILED_TO_UPDATE_GATEWAY: Final = "FailedToUpdateGateway"
FAILED_TO_DELETE_GATEWAY: Final = "FailedToDeleteGateway"
CREATED_HTTP_ROUTE: Final = "CreatedHTTPRoute"
UPDATED_HTTP_ROUTE: Final = "UpdatedHTTPRoute"
DELETED_HTTP_ROUTE: Final = "DeletedHTTPRoute"
FAILED_TO_CREATE_HTTP_ROUTE: Final = "FailedToCreateHTTPRoute"
FAILED_TO_UPDATE_HTTP_ROUTE: Final = "FailedToUpdateHTTPRoute"
FAILED_TO_DELETE_HTTP_ROUTE: Final = "FailedToDeleteHTTPRoute"
GATEWAY_REASONS: Final = {  # the (Normal, Warning) reasons of each action on the Gateway
    ACTION_CREATE: (CREATED_GATEWAY, FAILED_TO_CREATE_GATEWAY),
    ACTION_UPDATE: (UPDATED_GATEWAY, FAILED_TO_UPDATE_GATEWAY),
    ACTION_DELETE: (DELETED_GATEWAY, FAILED_TO_DELETE_GATEWAY),
}
HTTP_ROUTE_REASONS: Final = {  # the same for the HTTPRoute
    ACTION_CREATE: (CREATED_HTTP_ROUTE, FAILED_TO_CREATE_HTTP_ROUTE),
    ACTION_UPDATE: (UPDATED_HTTP_ROUTE, FAILED_TO_UPDATE_HTTP_ROUTE),
    ACTION_DELETE: (DELETED_HTTP_ROUTE, FAILED_TO_DELETE_HTTP_ROUTE),
}
UPDATED_SERVE_TARGET_CAPACITY: Final = "UpdatedServeTargetCapacity"
FAILED_TO_UPDATE_TARGET_CAPACITY: Final = "FailedToUpdateTargetCapacity"
ROLLBACK_IMPOSSIBLE: Final = "RollbackImpossible"
