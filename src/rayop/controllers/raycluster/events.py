"""Event reasons and actions the RayCluster controller reports, with KubeRay v1.7's strings.

Events are written through ``events.k8s.io/v1``, as KubeRay v1.7.0's recorder writes them
(``mgr.GetEventRecorder`` in ``ray-operator/controllers/ray/raycluster_controller.go``; the reasons
are in ``ray-operator/controllers/ray/utils/constant.go``), so each one carries a reason (what
happened, CamelCase) and an action (what the controller did). Tools that watch KubeRay's events
match on these reasons, so they are kept verbatim.
"""

from __future__ import annotations

from typing import Final

REPORTING_CONTROLLER: Final = "raycluster-controller"
"""The reporting controller name of the RayCluster controller's events."""

# Actions.
ACTION_CREATE: Final = "Create"
ACTION_DELETE: Final = "Delete"
ACTION_UPDATE: Final = "Update"
ACTION_VALIDATE: Final = "Validate"

# Validation.
INVALID_RAYCLUSTER_SPEC: Final = "InvalidRayClusterSpec"
INVALID_RAYCLUSTER_METADATA: Final = "InvalidRayClusterMetadata"
INVALID_RAYCLUSTER_STATUS: Final = "InvalidRayClusterStatus"

# Head pod.
CREATED_HEAD_POD: Final = "CreatedHeadPod"
FAILED_TO_CREATE_HEAD_POD: Final = "FailedToCreateHeadPod"
DELETED_HEAD_POD: Final = "DeletedHeadPod"
FAILED_TO_DELETE_HEAD_POD: Final = "FailedToDeleteHeadPod"

# Worker pods.
CREATED_WORKER_POD: Final = "CreatedWorkerPod"
FAILED_TO_CREATE_WORKER_POD: Final = "FailedToCreateWorkerPod"
DELETED_WORKER_POD: Final = "DeletedWorkerPod"
FAILED_TO_DELETE_WORKER_POD: Final = "FailedToDeleteWorkerPod"
FAILED_TO_DELETE_WORKER_POD_COLLECTION: Final = "FailedToDeleteWorkerPodCollection"

# Any pod (suspend, GCS FT cleanup).
DELETED_POD: Final = "DeletedPod"
FAILED_TO_DELETE_POD: Final = "FailedToDeletePod"
FAILED_TO_DELETE_POD_COLLECTION: Final = "FailedToDeletePodCollection"

# Services and ingress.
CREATED_SERVICE: Final = "CreatedService"
FAILED_TO_CREATE_SERVICE: Final = "FailedToCreateService"
CREATED_INGRESS: Final = "CreatedIngress"
FAILED_TO_CREATE_INGRESS: Final = "FailedToCreateIngress"
UPDATED_INGRESS: Final = "UpdatedIngress"
FAILED_TO_UPDATE_INGRESS: Final = "FailedToUpdateIngress"

# Autoscaler RBAC.
CREATED_SERVICE_ACCOUNT: Final = "CreatedServiceAccount"
FAILED_TO_CREATE_SERVICE_ACCOUNT: Final = "FailedToCreateServiceAccount"
AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND: Final = "AutoscalerServiceAccountNotFound"
CREATED_ROLE: Final = "CreatedRole"
FAILED_TO_CREATE_ROLE: Final = "FailedToCreateRole"
CREATED_ROLE_BINDING: Final = "CreatedRoleBinding"
FAILED_TO_CREATE_ROLE_BINDING: Final = "FailedToCreateRoleBinding"

# Auth secret.
CREATED_SECRET: Final = "CreatedSecret"
FAILED_TO_CREATE_SECRET: Final = "FailedToCreateSecret"

# GCS fault tolerance Redis cleanup.
CREATED_REDIS_CLEANUP_JOB: Final = "CreatedRedisCleanupJob"
FAILED_TO_CREATE_REDIS_CLEANUP_JOB: Final = "FailedToCreateRedisCleanupJob"
FORCE_DELETED_STUCK_CLUSTER: Final = "ForceDeletedStuckCluster"
