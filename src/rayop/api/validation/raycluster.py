"""The validation of a RayCluster: KubeRay v1.7's checks in the order its controller makes them.

KubeRay checks the metadata (``InvalidRayClusterMetadata``), the spec and the upgrade strategy
(``InvalidRayClusterSpec``), then the status (``InvalidRayClusterStatus``), and stops at the
first failure; each :class:`~rayop.api.validation.problem.Problem` carries the event message
KubeRay's controller writes for it. rayop's own checks
(:mod:`~rayop.api.validation.rayop_checks`) follow only when KubeRay's pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rayop.api import keys
from rayop.api.conditions import is_condition_true
from rayop.api.raycluster import (
    AutoscalerVersion,
    RayCluster,
    RayClusterConditionType,
    RayClusterStatus,
    UpgradeStrategyType,
)
from rayop.api.validation.cluster_spec import cluster_spec_problem
from rayop.api.validation.gates import Gates
from rayop.api.validation.k8s_names import object_name_problem
from rayop.api.validation.parsing import parse_model
from rayop.api.validation.problem import Problem, Reason
from rayop.api.validation.rayop_checks import cluster_spec_checks

__all__ = [
    "MAX_RAYCLUSTER_NAME_LENGTH",
    "autoscaler_v1_warning",
    "parse_raycluster",
    "raycluster_spec_problem",
    "validate_raycluster",
    "validate_raycluster_status",
]

MAX_RAYCLUSTER_NAME_LENGTH: Final = 53

_METADATA: Final = "The RayCluster metadata is invalid {namespace}/{name}: {message}"
_SPEC: Final = "The RayCluster spec is invalid {namespace}/{name}: {message}"
_UPGRADE: Final = "The RayCluster UpgradeStrategy is invalid {namespace}/{name}: {message}"
_STATUS: Final = "The RayCluster status is invalid {namespace}/{name}, {message}"


def parse_raycluster(obj: Mapping[str, Any]) -> tuple[RayCluster | None, list[Problem]]:
    """Parses RayCluster wire JSON: the model and no problems, or None and the parse errors."""
    cluster, errors = parse_model(RayCluster, obj)
    return cluster, [_spec(e) for e in errors]


def raycluster_spec_problem(message: str) -> Problem:
    """Returns a RayCluster spec problem worded as KubeRay's controller words its event
    (``The RayCluster spec is invalid <ns>/<name>: <message>``)."""
    return Problem(Reason.INVALID_RAYCLUSTER_SPEC, message, _SPEC)


_spec = raycluster_spec_problem


def metadata_problem(metadata: Mapping[str, Any]) -> str | None:
    """Returns KubeRay's ``ValidateRayClusterMetadata`` message for the name, None when valid."""
    return object_name_problem(metadata, MAX_RAYCLUSTER_NAME_LENGTH, "RayCluster name should")


def upgrade_strategy_problem(cluster: RayCluster) -> str | None:
    """Returns KubeRay's ``ValidateRayClusterUpgradeOptions`` message, None when valid."""
    strategy = cluster.spec.upgrade_strategy
    if strategy is None or strategy.type is None:
        return None
    if strategy.type not in (UpgradeStrategyType.RECREATE, UpgradeStrategyType.NONE):
        return (
            f"The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value {strategy.type} is "
            f"invalid, valid options are {UpgradeStrategyType.RECREATE} or "
            f"{UpgradeStrategyType.NONE}"
        )
    creator = (cluster.metadata.get("labels") or {}).get(keys.RAY_ORIGINATED_FROM_CRD)
    if creator in ("RayJob", "RayService"):
        return f"upgradeStrategy cannot be set when RayCluster is created by {creator}"
    return None


def validate_raycluster(
    rc: RayCluster | Mapping[str, Any], *, gates: Gates | None = None
) -> list[Problem]:
    """Returns why a RayCluster (a model, or wire JSON parsed first) is refused; [] if usable.

    Args:
        rc: The RayCluster.
        gates: KubeRay feature gates by name (KubeRay's defaults when None); a gated field
            whose gate is off is left to the controllers' gate checks.
    """
    cluster, parse_errors = parse_model(RayCluster, rc)
    if cluster is None:
        return [_spec(e) for e in parse_errors]
    if message := metadata_problem(cluster.metadata):
        return [Problem(Reason.INVALID_RAYCLUSTER_METADATA, message, _METADATA)]
    annotations = cluster.metadata.get("annotations") or {}
    message = cluster_spec_problem(cluster.spec, annotations, gates)
    if message == "":
        return []  # a gated feature: the gate check refuses it, with KubeRay's message
    if message:
        return [_spec(message)]
    if message := upgrade_strategy_problem(cluster):
        return [Problem(Reason.INVALID_RAYCLUSTER_SPEC, message, _UPGRADE)]
    return [_spec(p) for p in cluster_spec_checks(cluster.spec, "spec")]


def autoscaler_v1_warning(cluster: RayCluster) -> str | None:
    """Returns KubeRay's warning (not a refusal) for worker groups whose restartPolicy is
    neither unset nor Never while the autoscaler v1 is asked for explicitly, or None."""
    spec = cluster.spec
    options = spec.autoscaler_options
    if (
        not spec.enable_in_tree_autoscaling
        or options is None
        or options.version != AutoscalerVersion.V1
    ):
        return None
    groups = [
        group.group_name
        for group in spec.worker_group_specs or ()
        if (group.template.get("spec") or {}).get("restartPolicy") not in (None, "", "Never")
    ]
    if not groups:
        return None
    return (
        f"restartPolicy for worker groups [{', '.join(groups)}] should be Never or unset when "
        "using autoscaler V1"
    )


def validate_raycluster_status(status: RayClusterStatus) -> list[Problem]:
    """Returns KubeRay's ``ValidateRayClusterStatus`` problem (contradictory conditions)."""
    conditions = [c.model_dump(by_alias=True) for c in status.conditions or ()]
    if is_condition_true(conditions, RayClusterConditionType.SUSPENDING) and (
        is_condition_true(conditions, RayClusterConditionType.SUSPENDED)
    ):
        message = (
            "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended "
            "conditions should not be both true"
        )
        return [Problem(Reason.INVALID_RAYCLUSTER_STATUS, message, _STATUS)]
    return []
