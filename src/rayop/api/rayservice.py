"""The ray.io/v1 RayService: spec and status models with KubeRay v1.7's wire names and defaults.

Class names follow KubeRay's Go types: the top-level status is :class:`RayServiceStatuses`, and
each of its active and pending cluster entries is a :class:`RayServiceStatus`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from rayop.api.common import (
    ApiModel,
    Condition,
    EmbeddedObject,
    Int32,
    Int64,
    ManagedBy,
    RayResource,
    Time,
    list_map,
)
from rayop.api.raycluster import RayClusterSpec, RayClusterStatus
from rayop.api.schema import CrdField

__all__ = [
    "DEFAULT_RAY_CLUSTER_DELETION_DELAY_SECONDS",
    "AppStatus",
    "ApplicationStatus",
    "ClusterUpgradeOptions",
    "RayService",
    "RayServiceConditionReason",
    "RayServiceConditionType",
    "RayServiceSpec",
    "RayServiceStatus",
    "RayServiceStatuses",
    "RayServiceUpgradeStrategy",
    "RayServiceUpgradeType",
    "ServeDeploymentStatus",
    "ServeDeploymentStatusValue",
    "ServiceStatus",
]

DEFAULT_RAY_CLUSTER_DELETION_DELAY_SECONDS = 60
"""Used when ``spec.rayClusterDeletionDelaySeconds`` is unset (applied in code, not the CRD)."""


class RayServiceUpgradeType(StrEnum):
    """Known values of ``spec.upgradeStrategy.type`` (a free string in the CRD)."""

    NEW_CLUSTER = "NewCluster"
    NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE = "NewClusterWithIncrementalUpgrade"
    NONE = "None"


class ServiceStatus(StrEnum):
    """Values of the deprecated ``status.serviceStatus`` (equals the Ready condition)."""

    RUNNING = "Running"
    NOT_RUNNING = ""


class RayServiceConditionType(StrEnum):
    """Condition types of ``status.conditions``."""

    READY = "Ready"
    UPGRADE_IN_PROGRESS = "UpgradeInProgress"
    ROLLBACK_IN_PROGRESS = "RollbackInProgress"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"


class RayServiceConditionReason(StrEnum):
    """Reasons KubeRay writes on RayService conditions."""

    INITIALIZING = "Initializing"
    INITIALIZING_TIMEOUT = "InitializingTimeout"
    ZERO_SERVE_ENDPOINTS = "ZeroServeEndpoints"
    NON_ZERO_SERVE_ENDPOINTS = "NonZeroServeEndpoints"
    BOTH_ACTIVE_PENDING_CLUSTERS_EXIST = "BothActivePendingClustersExist"
    NO_PENDING_CLUSTER = "NoPendingCluster"
    NO_ACTIVE_CLUSTER = "NoActiveCluster"
    VALIDATION_FAILED = "ValidationFailed"
    DESIRED_CLUSTER_SPEC_CHANGED = "DesiredClusterSpecChanged"
    SUSPEND_REQUESTED = "SuspendRequested"
    SUSPEND_IN_PROGRESS = "SuspendInProgress"
    SUSPEND_COMPLETE = "SuspendComplete"
    RESUMED = "RayServiceResumed"


class ApplicationStatus(StrEnum):
    """Serve application statuses Ray reports (KubeRay only compares with RUNNING)."""

    NOT_STARTED = "NOT_STARTED"
    DEPLOYING = "DEPLOYING"
    RUNNING = "RUNNING"
    DEPLOY_FAILED = "DEPLOY_FAILED"
    DELETING = "DELETING"
    UNHEALTHY = "UNHEALTHY"


class ServeDeploymentStatusValue(StrEnum):
    """Serve deployment statuses KubeRay names."""

    UPDATING = "UPDATING"
    HEALTHY = "HEALTHY"
    UNHEALTHY = "UNHEALTHY"


class ClusterUpgradeOptions(ApiModel):
    """Traffic shifting of NewClusterWithIncrementalUpgrade (Gateway API)."""

    gateway_class_name: str
    step_size_percent: Int32
    interval_seconds: Int32
    max_surge_percent: Int32 = 100


class RayServiceUpgradeStrategy(ApiModel):
    """How a spec change reaches the serving cluster."""

    type: str | None = None
    """One of :class:`RayServiceUpgradeType`; unset means NewCluster unless zero-downtime is off."""
    cluster_upgrade_options: ClusterUpgradeOptions | None = None


class RayServiceSpec(ApiModel):
    """The desired state of a RayService."""

    ray_cluster_config: RayClusterSpec
    serve_config_v2: str | None = None
    """Serve multi-application config, as YAML."""
    serve_service: EmbeddedObject | None = None
    upgrade_strategy: RayServiceUpgradeStrategy | None = None
    ray_cluster_deletion_delay_seconds: Annotated[Int32, CrdField({"minimum": 0})] | None = None
    """Delay before old clusters are deleted; 60 s when unset."""
    service_unhealthy_second_threshold: Int32 | None = None
    """Deprecated and unused."""
    deployment_unhealthy_second_threshold: Int32 | None = None
    """Deprecated and unused."""
    exclude_head_pod_from_serve_svc: bool | None = None
    suspend: bool | None = None
    managed_by: ManagedBy | None = None


class ServeDeploymentStatus(ApiModel):
    """Status of one Serve deployment."""

    status: str | None = None
    message: str | None = None


class AppStatus(ApiModel):
    """Status of one Serve application and its deployments."""

    status: str | None = None
    message: str | None = None
    serve_deployment_statuses: dict[str, ServeDeploymentStatus] | None = None


class RayServiceStatus(ApiModel):
    """The state of one cluster (active or pending) of a RayService."""

    application_statuses: dict[str, AppStatus] | None = None
    target_capacity: Int32 | None = None
    traffic_routed_percent: Int32 | None = None
    last_traffic_migrated_time: Time | None = None
    ray_cluster_name: str | None = None
    ray_cluster_status: RayClusterStatus | None = None


class RayServiceStatuses(ApiModel):
    """The observed state of a RayService (``status``)."""

    conditions: Annotated[list[Condition], list_map("type")] | None = None
    last_update_time: Time | None = None
    service_status: str | None = None
    """Deprecated: one of :class:`ServiceStatus`."""
    active_service_status: RayServiceStatus | None = None
    pending_service_status: RayServiceStatus | None = None
    num_serve_endpoints: Int32 | None = None
    observed_generation: Int64 | None = None


class RayService(RayResource):
    """A ray.io/v1 RayService."""

    kind: str = "RayService"
    spec: RayServiceSpec
    status: RayServiceStatuses | None = None
