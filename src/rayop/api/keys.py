"""The label, annotation and finalizer keys KubeRay v1.7 puts on, and reads from, objects.

Defined here once; the controllers, validation and the tests name them from this module. Values are
KubeRay's (``ray-operator/controllers/ray/utils/constant.go``, v1.7.0) except
:data:`RAYSERVICE_DELETION_TIMESTAMP`, which is rayop's (KubeRay keeps the deletion schedule of
retired clusters only in memory).
"""

from __future__ import annotations

from typing import Final

# Labels on the pods and services of a RayCluster.
RAY_CLUSTER: Final = "ray.io/cluster"
RAY_NODE_TYPE: Final = "ray.io/node-type"
RAY_GROUP: Final = "ray.io/group"
RAY_IS_RAY_NODE: Final = "ray.io/is-ray-node"
RAY_IDENTIFIER: Final = "ray.io/identifier"
RAY_SERVE: Final = "ray.io/serve"
"""On head pods: "true" when the Serve proxy answers /-/healthz; part of the serve selector."""
RAY_HEADLESS_WORKER_SVC: Final = "ray.io/headless-worker-svc"
RAY_WORKER_REPLICA_NAME: Final = "ray.io/worker-group-replica-name"
RAY_WORKER_REPLICA_INDEX: Final = "ray.io/worker-group-replica-index"
RAY_REPLICA_HOST_INDEX: Final = "ray.io/replica-host-index"
APP_NAME: Final = "app.kubernetes.io/name"
APP_CREATED_BY: Final = "app.kubernetes.io/created-by"

# Labels on a RayCluster that a RayJob or RayService created.
RAY_ORIGINATED_FROM_CR_NAME: Final = "ray.io/originated-from-cr-name"
RAY_ORIGINATED_FROM_CRD: Final = "ray.io/originated-from-crd"
RAY_JOB_SUBMISSION_MODE: Final = "ray.io/job-submission-mode"

# The label and annotation a RayCronJob puts on each RayJob it creates.
RAY_CRONJOB_NAME: Final = "ray.io/cronjob-name"
RAY_CRONJOB_SCHEDULED_TIMESTAMP: Final = "ray.io/cronjob-scheduled-timestamp"

# Annotations.
FT_ENABLED: Final = "ray.io/ft-enabled"
EXTERNAL_STORAGE_NAMESPACE: Final = "ray.io/external-storage-namespace"
OVERWRITE_CONTAINER_CMD: Final = "ray.io/overwrite-container-cmd"
UPGRADE_STRATEGY_RECREATE_HASH: Final = "ray.io/upgrade-strategy-recreate-hash"
KUBERAY_VERSION: Final = "ray.io/kuberay-version"
ENABLE_SERVE_SERVICE: Final = "ray.io/enable-serve-service"
DISABLE_PROVISIONED_HEAD_RESTART: Final = "ray.io/disable-provisioned-head-restart"
GCS_FT_DELETION_TIMEOUT: Final = "ray.io/gcs-ft-deletion-timeout"
RAYSERVICE_HASH: Final = "ray.io/hash-without-replicas-and-workers-to-delete"
RAYSERVICE_NUM_WORKER_GROUPS: Final = "ray.io/num-worker-groups"
RAYSERVICE_DELETION_TIMESTAMP: Final = "ray.io/rayservice-deletion-timestamp"
"""RFC 3339 time at which a retired cluster is deleted (rayop's: survives operator restarts)."""
INGRESS_CLASS: Final = "kubernetes.io/ingress.class"

# Finalizers.
GCS_FT_REDIS_CLEANUP_FINALIZER: Final = "ray.io/gcs-ft-redis-cleanup-finalizer"
RAYJOB_FINALIZER: Final = "ray.io/rayjob-finalizer"
RAYSERVICE_FINALIZER: Final = "ray.io/rayservice-finalizer"

# spec.managedBy.
MANAGED_BY_KUBERAY: Final = "ray.io/kuberay-operator"
