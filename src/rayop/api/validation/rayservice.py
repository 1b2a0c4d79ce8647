"""The validation of a RayService: KubeRay v1.7's ``validateRayService`` (metadata, then spec).

The metadata check includes the ``ray.io/initializing-timeout`` annotation (a Go duration or
a whole number of seconds, positive); :func:`initializing_timeout` reads it for the controller.
KubeRay stops at the first failure; the event reason is ``InvalidRayServiceMetadata`` or
``InvalidRayServiceSpec`` and the message KubeRay's. rayop's own checks
(:mod:`~rayop.api.validation.rayop_checks`) follow only when KubeRay's pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rayop.api.rayservice import RayService, RayServiceSpec, RayServiceUpgradeType
from rayop.api.validation.cluster_spec import cluster_spec_problem, is_autoscaling_enabled
from rayop.api.validation.first_checks import first_checks
from rayop.api.validation.gates import Gates, gate_on
from rayop.api.validation.go_values import go_atoi, parse_duration
from rayop.api.validation.k8s_names import object_name_problem
from rayop.api.validation.problem import Problem, Reason
from rayop.api.validation.rayop_checks import rayservice_checks

__all__ = [
    "INITIALIZING_TIMEOUT_ANNOTATION",
    "MAX_RAYSERVICE_NAME_LENGTH",
    "initializing_timeout",
    "validate_rayservice",
]

MAX_RAYSERVICE_NAME_LENGTH: Final = 47
INITIALIZING_TIMEOUT_ANNOTATION: Final = "ray.io/initializing-timeout"
_INVALID: Final = "The RayService spec is invalid: "
_NS_PER_SECOND: Final = 1_000_000_000


def initializing_timeout(annotations: Mapping[str, Any]) -> int | None:
    """Returns the ``ray.io/initializing-timeout`` in nanoseconds (Go duration first, then whole
    seconds, as KubeRay reads it), or None when it is absent, empty or does not parse."""
    text = annotations.get(INITIALIZING_TIMEOUT_ANNOTATION)
    if not isinstance(text, str) or not text:
        return None
    duration = parse_duration(text)
    if duration is not None:
        return duration
    seconds = go_atoi(text)
    return None if seconds is None else seconds * _NS_PER_SECOND


def _timeout_problem(annotations: Mapping[str, Any]) -> str | None:
    key = INITIALIZING_TIMEOUT_ANNOTATION
    text = annotations.get(key)
    if not isinstance(text, str) or not text:
        return None
    duration = parse_duration(text)
    if duration is not None:
        if duration <= 0:
            return f"annotation {key} must be a positive duration, got: {text}"
        return None
    seconds = go_atoi(text)
    if seconds is not None:
        if seconds <= 0:
            return f"annotation {key} must be a positive integer (seconds), got: {text}"
        return None
    return (
        f"annotation {key} has invalid format: {text}. Expected Go duration format (e.g., "
        "'5m', '1h') or positive integer seconds"
    )


def metadata_problem(metadata: Mapping[str, Any]) -> str | None:
    """Returns KubeRay's ``ValidateRayServiceMetadata`` message, None when valid."""
    lead = "The RayService metadata is invalid: RayService"
    if problem := object_name_problem(metadata, MAX_RAYSERVICE_NAME_LENGTH, f"{lead} name should"):
        return problem
    if not metadata.get("name"):
        return None  # a generateName: the name and annotations are checked once it is named
    if problem := _timeout_problem(metadata.get("annotations") or {}):
        return f"{lead} annotations is invalid: {problem}"
    return None


def spec_problem(
    spec: RayServiceSpec, annotations: Mapping[str, str], gates: Gates | None = None
) -> str | None:
    """Returns KubeRay's ``ValidateRayServiceSpec`` message for the first failing check; ""
    when the checks stop at a gate that is off; None when the spec passes."""
    cluster = spec.ray_cluster_config
    auth = cluster.auth_options
    if auth is not None and auth.enable_k8s_token_auth is True:
        return f"{_INVALID}K8s token auth mode is currently not supported for RayService"
    cluster_problem = cluster_spec_problem(cluster, annotations, gates)
    if cluster_problem is not None:
        return f"{_INVALID}{cluster_problem}" if cluster_problem else ""
    head_service = cluster.head_group_spec.head_service or {}
    if (head_service.get("metadata") or {}).get("name"):
        return (
            f"{_INVALID}spec.rayClusterConfig.headGroupSpec.headService.metadata.name should "
            "not be set"
        )
    strategy = spec.upgrade_strategy
    types = RayServiceUpgradeType
    if strategy is not None and strategy.type is not None and strategy.type not in list(types):
        return (
            f"{_INVALID}Spec.UpgradeStrategy.Type value {strategy.type} is invalid, valid "
            f"options are {types.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE}, {types.NEW_CLUSTER}, "
            f"or {types.NONE}"
        )
    delay = spec.ray_cluster_deletion_delay_seconds
    if delay is not None and delay < 0:
        return (
            f"{_INVALID}Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, "
            f"got {delay}"
        )
    incremental = (
        strategy is not None and strategy.type == types.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE
    )
    if incremental and gate_on(gates, "RayServiceIncrementalUpgrade"):
        problem = _upgrade_options_problem(spec)
        return f"{_INVALID}{problem}" if problem else None
    return None


def _upgrade_options_problem(spec: RayServiceSpec) -> str | None:
    """KubeRay's ``ValidateClusterUpgradeOptions`` for NewClusterWithIncrementalUpgrade."""
    if not is_autoscaling_enabled(spec.ray_cluster_config):
        return "Ray Autoscaler is required for NewClusterWithIncrementalUpgrade"
    options = spec.upgrade_strategy.cluster_upgrade_options if spec.upgrade_strategy else None
    if options is None:
        return "ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade"
    if not 0 <= options.max_surge_percent <= 100:
        return "maxSurgePercent must be between 0 and 100"
    if not 0 <= options.step_size_percent <= 100:
        return "stepSizePercent must be between 0 and 100"
    if options.step_size_percent > options.max_surge_percent:
        return "stepSizePercent must be less than or equal to maxSurgePercent"
    if options.interval_seconds <= 0:
        return "intervalSeconds must be greater than 0"
    if not options.gateway_class_name:
        return "gatewayClassName is required for NewClusterWithIncrementalUpgrade"
    return None


def validate_rayservice(
    rs: RayService | Mapping[str, Any], *, gates: Gates | None = None
) -> list[Problem]:
    """Returns why a RayService (a model, or wire JSON parsed first) is refused; [] if usable.

    Args:
        rs: The RayService.
        gates: KubeRay feature gates by name (KubeRay's defaults when None).
    """
    reasons = (Reason.INVALID_RAYSERVICE_METADATA, Reason.INVALID_RAYSERVICE_SPEC)
    service, problems = first_checks(RayService, rs, metadata_problem, reasons,
                                   lambda o, notes: spec_problem(o.spec, notes, gates))
    if service is None:
        return problems
    return [Problem(Reason.INVALID_RAYSERVICE_SPEC, p) for p in rayservice_checks(service.spec)]
