"""The ray.io/v1 RayJob: spec and status models with KubeRay v1.7's wire names and defaults."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from rayop.api.common import ApiModel, EmbeddedObject, Int32, Int64, ManagedBy, RayResource, Time
from rayop.api.raycluster import RayClusterSpec, RayClusterStatus
from rayop.api.schema import CrdField

__all__ = [
    "DeletionCondition",
    "DeletionPolicy",
    "DeletionPolicyType",
    "DeletionRule",
    "DeletionStrategy",
    "FailedDeploymentStatus",
    "JobDeploymentStatus",
    "JobFailedReason",
    "JobStatus",
    "JobSubmissionMode",
    "RayJob",
    "RayJobSpec",
    "RayJobStatus",
    "RayJobStatusInfo",
    "SubmitterConfig",
    "TerminalJobStatus",
]


class JobSubmissionMode(StrEnum):
    """Known values of ``spec.submissionMode`` (a free string in the CRD)."""

    K8S_JOB_MODE = "K8sJobMode"
    HTTP_MODE = "HTTPMode"
    INTERACTIVE_MODE = "InteractiveMode"
    SIDECAR_MODE = "SidecarMode"


class JobStatus(StrEnum):
    """The Ray job's own status, as the dashboard reports it (``status.jobStatus``)."""

    NEW = ""
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class JobDeploymentStatus(StrEnum):
    """The operator's state machine state (``status.jobDeploymentStatus``)."""

    NEW = ""
    INITIALIZING = "Initializing"
    RUNNING = "Running"
    COMPLETE = "Complete"
    FAILED = "Failed"
    VALIDATION_FAILED = "ValidationFailed"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"
    RETRYING = "Retrying"
    WAITING = "Waiting"


class JobFailedReason(StrEnum):
    """Values of ``status.reason``."""

    SUBMISSION_FAILED = "SubmissionFailed"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    PRE_RUNNING_DEADLINE_EXCEEDED = "PreRunningDeadlineExceeded"
    APP_FAILED = "AppFailed"
    TRANSITION_GRACE_PERIOD_EXCEEDED = "JobDeploymentStatusTransitionGracePeriodExceeded"
    JOB_STATUS_CHECK_TIMEOUT_EXCEEDED = "JobStatusCheckTimeoutExceeded"
    VALIDATION_FAILED = "ValidationFailed"


class DeletionPolicyType(StrEnum):
    """What to delete once a job has finished."""

    DELETE_CLUSTER = "DeleteCluster"
    DELETE_WORKERS = "DeleteWorkers"
    DELETE_SELF = "DeleteSelf"
    DELETE_NONE = "DeleteNone"


class TerminalJobStatus(StrEnum):
    """Job statuses a deletion rule can match."""

    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class FailedDeploymentStatus(StrEnum):
    """Deployment statuses a deletion rule can match."""

    FAILED = "Failed"


class SubmitterConfig(ApiModel):
    """Settings of the submitter (K8s Job or sidecar)."""

    backoff_limit: Int32 | None = None
    """Retries of the submitter Job (sidecar restarts); the controller uses 2 when unset."""


class DeletionPolicy(ApiModel):
    """A legacy ``onSuccess``/``onFailure`` policy."""

    policy: DeletionPolicyType | None = None


class DeletionCondition(ApiModel):
    """When a deletion rule fires: a job status or a deployment status, plus a delay."""

    job_status: TerminalJobStatus | None = None
    job_deployment_status: FailedDeploymentStatus | None = None
    ttl_seconds: Annotated[Int32, CrdField({"minimum": 0})] = 0


_DELETION_CONDITION_RULES = CrdField(
    {
        "x-kubernetes-validations": [
            {
                "rule": "!(has(self.jobStatus) && has(self.jobDeploymentStatus))",
                "message": "JobStatus and JobDeploymentStatus cannot be used together within the "
                "same deletion condition.",
            },
            {
                "rule": "has(self.jobStatus) || has(self.jobDeploymentStatus)",
                "message": "the deletion condition requires either the JobStatus or the "
                "JobDeploymentStatus field.",
            },
        ]
    }
)


class DeletionRule(ApiModel):
    """One deletion rule: a policy applied when its condition holds."""

    policy: DeletionPolicyType
    condition: Annotated[DeletionCondition, _DELETION_CONDITION_RULES]


_DELETION_STRATEGY_RULES = CrdField(
    {
        "x-kubernetes-validations": [
            {
                "rule": "!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))",
                "message": "legacy policies (onSuccess/onFailure) and deletionRules cannot be used "
                "together within the same deletionStrategy",
            },
            {
                "rule": "((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))",
                "message": "deletionStrategy requires either BOTH onSuccess and onFailure, OR the "
                "deletionRules field (cannot be empty)",
            },
        ]
    }
)


class DeletionStrategy(ApiModel):
    """What the controller deletes after the job finishes (RayJobDeletionPolicy gate)."""

    on_success: DeletionPolicy | None = None
    on_failure: DeletionPolicy | None = None
    deletion_rules: (
        Annotated[
            list[DeletionRule],
            CrdField({"minItems": 1, "x-kubernetes-list-type": "atomic"}),
        ]
        | None
    ) = None


class RayJobSpec(ApiModel):
    """The desired state of a RayJob."""

    entrypoint: str | None = None
    runtime_env_yaml: str | None = None
    job_id: str | None = None
    """Submission ID; generated when unset (the user sets it in InteractiveMode)."""
    metadata: dict[str, str] | None = None
    ray_cluster_spec: RayClusterSpec | None = None
    cluster_selector: dict[str, str] | None = None
    """Run on an existing cluster: the ``ray.io/cluster`` key names it."""
    submission_mode: str = JobSubmissionMode.K8S_JOB_MODE.value
    """One of :class:`JobSubmissionMode`."""
    submitter_pod_template: EmbeddedObject | None = None
    submitter_config: SubmitterConfig | None = None
    entrypoint_resources: str | None = None
    """JSON object of custom resources for the entrypoint."""
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    backoff_limit: Int32 = 0
    active_deadline_seconds: Int32 | None = None
    pre_running_deadline_seconds: Annotated[Int32, CrdField({"minimum": 1})] | None = None
    shutdown_after_job_finishes: bool | None = None
    ttl_seconds_after_finished: Int32 = 0
    deletion_strategy: Annotated[DeletionStrategy, _DELETION_STRATEGY_RULES] | None = None
    suspend: bool | None = None
    managed_by: ManagedBy | None = None


class RayJobStatusInfo(ApiModel):
    """Start and end of the Ray job, from the dashboard."""

    start_time: Time | None = None
    end_time: Time | None = None


class RayJobStatus(ApiModel):
    """The observed state of a RayJob."""

    job_id: str | None = None
    ray_cluster_name: str | None = None
    dashboard_url: str | None = None
    """``host:port`` of the dashboard, no scheme."""
    job_status: str | None = None
    """One of :class:`JobStatus`."""
    job_deployment_status: str | None = None
    """One of :class:`JobDeploymentStatus`."""
    reason: str | None = None
    """One of :class:`JobFailedReason`."""
    message: str | None = None
    start_time: Time | None = None
    end_time: Time | None = None
    succeeded: Int32 = 0
    failed: Int32 = 0
    ray_cluster_status: RayClusterStatus | None = None
    ray_job_info: RayJobStatusInfo | None = None
    job_status_check_failure_start_time: Time | None = None
    observed_generation: Int64 | None = None


class RayJob(RayResource):
    """A ray.io/v1 RayJob."""

    kind: str = "RayJob"
    spec: RayJobSpec = Field(default_factory=RayJobSpec)
    status: RayJobStatus | None = None
