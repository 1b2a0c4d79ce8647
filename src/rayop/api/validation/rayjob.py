"""The validation of a RayJob: KubeRay v1.7's ``validateRayJob`` (metadata, spec, status).

KubeRay stops at the first failure; the event reason says which part failed
(``InvalidRayJobMetadata``, ``InvalidRayJobSpec``, ``InvalidRayJobStatus``) and the message is
KubeRay's. rayop's own checks (:mod:`~rayop.api.validation.rayop_checks`) follow only when
KubeRay's pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import yaml

from rayop.api import keys
from rayop.api.rayjob import JobDeploymentStatus, JobSubmissionMode, RayJob, RayJobSpec
from rayop.api.validation.cluster_spec import cluster_spec_problem
from rayop.api.validation.deletion import deletion_problem
from rayop.api.validation.first_checks import first_checks
from rayop.api.validation.gates import Gates
from rayop.api.validation.k8s_names import object_name_problem
from rayop.api.validation.problem import Problem, Reason
from rayop.api.validation.rayop_checks import rayjob_checks

__all__ = ["MAX_RAYJOB_NAME_LENGTH", "validate_rayjob"]

MAX_RAYJOB_NAME_LENGTH: Final = 47
_INVALID: Final = "The RayJob spec is invalid: "


def metadata_problem(metadata: Mapping[str, Any]) -> str | None:
    """Returns KubeRay's ``ValidateRayJobMetadata`` message for the name, None when valid."""
    lead = "The RayJob metadata is invalid: RayJob name should"
    return object_name_problem(metadata, MAX_RAYJOB_NAME_LENGTH, lead)


def status_problem(job: RayJob) -> str | None:
    """Returns KubeRay's ``ValidateRayJobStatus`` message, None when the status is consistent."""
    deployment = job.status.job_deployment_status if job.status is not None else None
    if (
        deployment == JobDeploymentStatus.WAITING
        and job.spec.submission_mode != JobSubmissionMode.INTERACTIVE_MODE
    ):
        return (
            "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when "
            "SubmissionMode is not InteractiveMode"
        )
    return None


def spec_problem(
    spec: RayJobSpec, annotations: Mapping[str, str], gates: Gates | None = None
) -> str | None:
    """Returns KubeRay's ``ValidateRayJobSpec`` message for the first failing check; "" when
    the checks stop at a gate that is off; None when the spec passes."""
    shutdown = spec.shutdown_after_job_finishes is True
    if spec.suspend and not shutdown:
        return (
            f"{_INVALID}a RayJob with shutdownAfterJobFinishes set to false is not allowed to "
            "be suspended"
        )
    if spec.ttl_seconds_after_finished < 0:
        return f"{_INVALID}TTLSecondsAfterFinished must be a non-negative integer"
    deletion = deletion_problem(spec, gates)
    if deletion is not None:
        return deletion
    selector = bool(spec.cluster_selector)
    if spec.suspend and selector:
        return f"{_INVALID}the ClusterSelector mode doesn't support the suspend operation"
    if spec.ray_cluster_spec is None and not selector:
        return f"{_INVALID}one of RayClusterSpec or ClusterSelector must be set"
    mode = spec.submission_mode
    if selector:
        if not (spec.cluster_selector or {}).get(keys.RAY_CLUSTER):
            return "cluster name in ClusterSelector should not be empty"
        if mode == JobSubmissionMode.SIDECAR_MODE:
            return "ClusterSelector is not supported in SidecarMode"
        if spec.backoff_limit > 0:
            return f"{_INVALID}BackoffLimit is incompatible with ClusterSelector mode"
    if mode == JobSubmissionMode.INTERACTIVE_MODE and spec.backoff_limit > 0:
        return f"{_INVALID}BackoffLimit is incompatible with InteractiveMode"
    if mode == JobSubmissionMode.SIDECAR_MODE:
        if spec.submitter_pod_template is not None:
            return "Currently, SidecarMode doesn't support SubmitterPodTemplate"
        if spec.submitter_config is not None:
            return "Currently, SidecarMode doesn't support SubmitterConfig"
        cluster = spec.ray_cluster_spec
        template_spec = (cluster.head_group_spec.template.get("spec") or {}) if cluster else {}
        if template_spec.get("restartPolicy") not in (None, "", "Never"):
            return "restartPolicy for head Pod should be Never or unset when using SidecarMode"
    if spec.ray_cluster_spec is not None:
        auth = spec.ray_cluster_spec.auth_options
        if auth is not None and auth.enable_k8s_token_auth is True:
            return f"{_INVALID}K8s token auth mode is currently not supported for RayJob"
        cluster_problem = cluster_spec_problem(spec.ray_cluster_spec, annotations, gates)
        if cluster_problem is not None:
            return f"{_INVALID}{cluster_problem}" if cluster_problem else ""
    return _runtime_env_problem(spec.runtime_env_yaml or "") or _deadline_problem(spec)


def _runtime_env_problem(text: str) -> str | None:
    """``runtimeEnvYAML`` must be YAML of a mapping (or empty), as KubeRay unmarshals it."""
    try:
        value = yaml.safe_load(text) if text else None
    except yaml.YAMLError as err:
        return f"failed to unmarshal RuntimeEnvYAML: {text}: {' '.join(str(err).split())}"
    if value is None or isinstance(value, dict):
        return None
    kind = "array" if isinstance(value, list) else type(value).__name__
    return (
        f"failed to unmarshal RuntimeEnvYAML: {text}: json: cannot unmarshal {kind} into Go "
        "value of type utiltypes.RuntimeEnvType"
    )


def _deadline_problem(spec: RayJobSpec) -> str | None:
    if spec.active_deadline_seconds is not None and spec.active_deadline_seconds <= 0:
        return f"{_INVALID}activeDeadlineSeconds must be a positive integer"
    if spec.pre_running_deadline_seconds is not None and spec.pre_running_deadline_seconds <= 0:
        return f"{_INVALID}preRunningDeadlineSeconds must be a positive integer"
    if spec.backoff_limit < 0:
        return f"{_INVALID}backoffLimit must be a positive integer"
    return None


def validate_rayjob(rj: RayJob | Mapping[str, Any], *, gates: Gates | None = None) -> list[Problem]:
    """Returns why a RayJob (a model, or wire JSON parsed first) is refused; [] if usable.

    Args:
        rj: The RayJob.
        gates: KubeRay feature gates by name (KubeRay's defaults when None).
    """
    reasons = (Reason.INVALID_RAYJOB_METADATA, Reason.INVALID_RAYJOB_SPEC)
    job, problems = first_checks(RayJob, rj, metadata_problem, reasons,
                                   lambda o, notes: spec_problem(o.spec, notes, gates))
    if job is None:
        return problems
    if message := status_problem(job):
        return [Problem(Reason.INVALID_RAYJOB_STATUS, message)]
    return [Problem(Reason.INVALID_RAYJOB_SPEC, p) for p in rayjob_checks(job.spec)]
