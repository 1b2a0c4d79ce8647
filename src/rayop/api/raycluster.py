"""The ray.io/v1 RayCluster: spec and status models with KubeRay v1.7's wire names and defaults.

Embedded Kubernetes types (PodTemplateSpec, Service, ResourceRequirements, EnvVar, network policy
rules...) are plain dicts. See :mod:`rayop.api.common` for the conventions every model follows.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from rayop.api.common import (
    ApiModel,
    Condition,
    EmbeddedObject,
    Int32,
    Int64,
    ManagedBy,
    NullableTime,
    Quantity,
    RayResource,
    Time,
    list_map,
)
from rayop.api.schema import CrdField

__all__ = [
    "MAX_INT32",
    "AuthMode",
    "AuthOptions",
    "AutoscalerOptions",
    "AutoscalerVersion",
    "ClusterState",
    "CollectorOptions",
    "GcsFaultToleranceBackend",
    "GcsFaultToleranceOptions",
    "GcsStorageDeletionPolicy",
    "GcsStorageOptions",
    "HeadGroupSpec",
    "HeadInfo",
    "HistoryServerOptions",
    "IngressOptions",
    "IngressPathType",
    "NetworkPolicyMode",
    "NetworkPolicyOptions",
    "NetworkPolicyRules",
    "RayCluster",
    "RayClusterConditionReason",
    "RayClusterConditionType",
    "RayClusterSpec",
    "RayClusterStatus",
    "RayClusterUpgradeStrategy",
    "RedisCredential",
    "ScaleStrategy",
    "TlsOptions",
    "UpgradeStrategyType",
    "UpscalingMode",
    "WorkerGroupNetworkPolicy",
    "WorkerGroupSpec",
]

MAX_INT32 = 2**31 - 1


class UpgradeStrategyType(StrEnum):
    """``spec.upgradeStrategy.type``."""

    RECREATE = "Recreate"
    NONE = "None"


class AuthMode(StrEnum):
    """``spec.authOptions.mode``."""

    DISABLED = "disabled"
    TOKEN = "token"


class UpscalingMode(StrEnum):
    """``spec.autoscalerOptions.upscalingMode``."""

    DEFAULT = "Default"
    AGGRESSIVE = "Aggressive"
    CONSERVATIVE = "Conservative"


class AutoscalerVersion(StrEnum):
    """``spec.autoscalerOptions.version``."""

    V1 = "v1"
    V2 = "v2"


class GcsFaultToleranceBackend(StrEnum):
    """``spec.gcsFaultToleranceOptions.backend`` (unset means redis)."""

    REDIS = "redis"
    ROCKSDB = "rocksdb"


class GcsStorageDeletionPolicy(StrEnum):
    """``spec.gcsFaultToleranceOptions.storage.deletionPolicy``."""

    DELETE_WITH_CLUSTER = "DeleteWithCluster"
    RETAIN = "Retain"


class NetworkPolicyMode(StrEnum):
    """``spec.networkPolicy.mode``."""

    DENY_ALL = "DenyAll"
    DENY_ALL_INGRESS = "DenyAllIngress"
    DENY_ALL_EGRESS = "DenyAllEgress"


class IngressPathType(StrEnum):
    """``spec.headGroupSpec.ingressOptions.pathType`` (the controller defaults it to Prefix)."""

    EXACT = "Exact"
    PREFIX = "Prefix"
    IMPLEMENTATION_SPECIFIC = "ImplementationSpecific"


class ClusterState(StrEnum):
    """Known values of ``status.state`` (a free string in the CRD; deprecated but still set)."""

    READY = "ready"
    SUSPENDED = "suspended"
    FAILED = "failed"
    """Deprecated; no longer set."""


class RayClusterConditionType(StrEnum):
    """Condition types of ``status.conditions``."""

    PROVISIONED = "RayClusterProvisioned"
    HEAD_POD_READY = "HeadPodReady"
    REPLICA_FAILURE = "ReplicaFailure"
    SUSPENDING = "RayClusterSuspending"
    SUSPENDED = "RayClusterSuspended"


class RayClusterConditionReason(StrEnum):
    """Reasons KubeRay writes on RayCluster conditions."""

    ALL_POD_RUNNING_AND_READY_FIRST_TIME = "AllPodRunningAndReadyFirstTime"
    PODS_PROVISIONING = "RayClusterPodsProvisioning"
    HEAD_POD_RUNNING_AND_READY = "HeadPodRunningAndReady"
    HEAD_POD_NOT_FOUND = "HeadPodNotFound"
    UNKNOWN = "Unknown"
    FAILED_CREATE_HEAD_POD = "FailedCreateHeadPod"
    FAILED_DELETE_HEAD_POD = "FailedDeleteHeadPod"
    FAILED_CREATE_WORKER_POD = "FailedCreateWorkerPod"
    FAILED_DELETE_WORKER_POD = "FailedDeleteWorkerPod"
    FAILED_DELETE_ALL_PODS = "FailedDeleteAllPods"


class RayClusterUpgradeStrategy(ApiModel):
    """How pods follow spec changes (not allowed on clusters made by RayJob or RayService)."""

    type: UpgradeStrategyType | None = None


class AuthOptions(ApiModel):
    """Ray token authentication."""

    mode: AuthMode | None = None
    secret_name: str | None = None
    enable_k8s_token_auth: bool | None = None


class AutoscalerOptions(ApiModel):
    """Settings of the autoscaler sidecar injected into the head pod."""

    resources: EmbeddedObject | None = None
    image: str | None = None
    image_pull_policy: str | None = None
    security_context: EmbeddedObject | None = None
    idle_timeout_seconds: Int32 | None = None
    upscaling_mode: UpscalingMode | None = None
    version: AutoscalerVersion | None = None
    env: list[EmbeddedObject] | None = None
    env_from: list[EmbeddedObject] | None = None
    volume_mounts: list[EmbeddedObject] | None = None
    command: list[str] | None = None
    args: list[str] | None = None


class RedisCredential(ApiModel):
    """A Redis user name or password, literal or from a secret (an EnvVarSource)."""

    value: str | None = None
    value_from: EmbeddedObject | None = None


class GcsStorageOptions(ApiModel):
    """The PVC of the embedded (RocksDB) GCS fault tolerance backend."""

    claim_name: str | None = None
    size: Quantity | None = None
    """Size of the volume; the controller uses 1Gi when unset."""
    storage_class_name: str | None = None
    access_modes: list[str] | None = None
    """Access modes; the controller uses [ReadWriteOnce] when unset."""
    sub_path: str | None = None
    deletion_policy: GcsStorageDeletionPolicy | None = None


class GcsFaultToleranceOptions(ApiModel):
    """GCS fault tolerance: external Redis or embedded RocksDB."""

    backend: (
        Annotated[
            GcsFaultToleranceBackend,
            CrdField(
                {
                    "x-kubernetes-validations": [
                        {
                            "rule": "self == oldSelf",
                            "message": "gcsFaultToleranceOptions.backend is immutable",
                        }
                    ]
                }
            ),
        ]
        | None
    ) = None
    redis_username: RedisCredential | None = None
    redis_password: RedisCredential | None = None
    external_storage_namespace: str | None = None
    redis_address: str | None = None
    storage: GcsStorageOptions | None = None


class CollectorOptions(ApiModel):
    """The history server's collector sidecar."""

    image: str | None = None
    image_pull_policy: str | None = None
    resources: EmbeddedObject | None = None
    env: list[EmbeddedObject] | None = None


class HistoryServerOptions(ApiModel):
    """History server integration (behind a feature gate)."""

    collector_options: CollectorOptions | None = None


class NetworkPolicyRules(ApiModel):
    """Extra NetworkPolicy rules for one kind of node (networking/v1 rules kept as plain data)."""

    ingress_rules: list[EmbeddedObject] | None = None
    egress_rules: list[EmbeddedObject] | None = None


class WorkerGroupNetworkPolicy(NetworkPolicyRules):
    """Extra NetworkPolicy rules for one worker group."""

    group_name: str


class NetworkPolicyOptions(ApiModel):
    """Operator-managed NetworkPolicies (behind the RayClusterNetworkPolicy gate)."""

    mode: NetworkPolicyMode = Field(default=NetworkPolicyMode.DENY_ALL, validate_default=True)
    head: NetworkPolicyRules | None = None
    worker: NetworkPolicyRules | None = None
    worker_groups: Annotated[list[WorkerGroupNetworkPolicy], list_map("groupName")] | None = None


class TlsOptions(ApiModel):
    """mTLS between Ray nodes via cert-manager (behind a feature gate)."""

    enabled: bool | None = None


class IngressOptions(ApiModel):
    """The head Ingress made when ``enableIngress`` is set."""

    host: str | None = None
    path: str | None = None
    """URL path; the controller uses "/" when unset."""
    path_type: IngressPathType | None = None
    tls: list[EmbeddedObject] | None = None


class HeadGroupSpec(ApiModel):
    """The head pod of the cluster."""

    template: EmbeddedObject
    """PodTemplateSpec of the head pod; the Ray container is ``containers[0]``."""
    head_service: EmbeddedObject | None = None
    """A Service merged into the generated head service."""
    enable_ingress: bool | None = None
    ingress_options: IngressOptions | None = None
    resources: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    ray_start_params: dict[str, str] | None = None
    """Extra ``ray start`` parameters (``{"num-cpus": "1"}`` gives ``--num-cpus=1``)."""
    service_type: str | None = None


class ScaleStrategy(ApiModel):
    """Pods the autoscaler asked to remove from a worker group."""

    workers_to_delete: list[str] | None = None


class WorkerGroupSpec(ApiModel):
    """One group of identical worker pods."""

    group_name: str
    template: EmbeddedObject
    """PodTemplateSpec of the group's pods; the Ray container is ``containers[0]``."""
    replicas: Int32 = 0
    min_replicas: Annotated[Int32, CrdField(required=True)] = 0
    max_replicas: Annotated[Int32, CrdField(required=True)] = MAX_INT32
    num_of_hosts: Int32 = 1
    """Pods per replica (multi-host groups such as TPU slices)."""
    priority: Int32 = 0
    """Preference among groups for the autoscaler v2."""
    idle_timeout_seconds: Int32 | None = None
    suspend: bool | None = None
    resources: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    ray_start_params: dict[str, str] | None = None
    scale_strategy: ScaleStrategy | None = None


class RayClusterSpec(ApiModel):
    """The desired state of a RayCluster."""

    head_group_spec: HeadGroupSpec
    worker_group_specs: list[WorkerGroupSpec] | None = None
    ray_version: str | None = None
    enable_in_tree_autoscaling: bool | None = None
    autoscaler_options: AutoscalerOptions | None = None
    suspend: bool | None = None
    managed_by: ManagedBy | None = None
    head_service_annotations: dict[str, str] | None = None
    gcs_fault_tolerance_options: GcsFaultToleranceOptions | None = None
    upgrade_strategy: RayClusterUpgradeStrategy | None = None
    auth_options: AuthOptions | None = None
    history_server_options: HistoryServerOptions | None = None
    network_policy: NetworkPolicyOptions | None = None
    tls_options: TlsOptions | None = None


class HeadInfo(ApiModel):
    """Addresses of the head pod and head service."""

    pod_ip: str | None = None
    service_ip: str | None = None
    pod_name: str | None = None
    service_name: str | None = None


class RayClusterStatus(ApiModel):
    """The observed state of a RayCluster, written by the operator through /status."""

    state: str | None = None
    """Deprecated sticky state: one of :class:`ClusterState`."""
    desired_cpu: Quantity | None = None
    desired_memory: Quantity | None = None
    desired_gpu: Quantity | None = None
    desired_tpu: Quantity | None = None
    last_update_time: NullableTime | None = None
    state_transition_times: dict[str, Time] | None = None
    endpoints: dict[str, str] | None = None
    """Head service port name -> port."""
    head: HeadInfo | None = None
    reason: str | None = None
    conditions: Annotated[list[Condition], list_map("type")] | None = None
    ready_worker_replicas: Int32 | None = None
    available_worker_replicas: Int32 | None = None
    desired_worker_replicas: Int32 | None = None
    min_worker_replicas: Int32 | None = None
    max_worker_replicas: Int32 | None = None
    observed_generation: Int64 | None = None


class RayCluster(RayResource):
    """A ray.io/v1 RayCluster."""

    kind: str = "RayCluster"
    spec: RayClusterSpec
    status: RayClusterStatus | None = None
