"""Whether a RayService runs NewClusterWithIncrementalUpgrade, and the wire status it reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rayop.api.conditions import is_condition_true
from rayop.api.rayservice import (
    ClusterUpgradeOptions,
    RayServiceConditionType,
    RayServiceSpec,
    RayServiceUpgradeType,
)
from rayop.controllers.config.options import OperatorOptions

ACTIVE = "activeServiceStatus"
PENDING = "pendingServiceStatus"
TARGET_CAPACITY = "targetCapacity"
TRAFFIC_ROUTED_PERCENT = "trafficRoutedPercent"
LAST_TRAFFIC_MIGRATED_TIME = "lastTrafficMigratedTime"


def is_incremental(spec: RayServiceSpec, options: OperatorOptions) -> bool:
    """Tells whether the spec asks for NewClusterWithIncrementalUpgrade and the gate is on."""
    if not options.feature_gates.ray_service_incremental_upgrade:
        return False
    strategy = spec.upgrade_strategy
    return (
        strategy is not None
        and strategy.type == RayServiceUpgradeType.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE
    )


def upgrade_options(spec: RayServiceSpec) -> ClusterUpgradeOptions:
    """Returns ``clusterUpgradeOptions`` (validation has refused a spec without them).

    Raises:
        ValueError: the options are missing (KubeRay's message).
    """
    strategy = spec.upgrade_strategy
    if strategy is None or strategy.cluster_upgrade_options is None:
        raise ValueError("Missing RayService ClusterUpgradeOptions during upgrade.")
    return strategy.cluster_upgrade_options


def entry(status: Mapping[str, Any], which: str) -> dict[str, Any]:
    """Returns the active or pending entry of a wire status ({} when unset)."""
    value = status.get(which)
    return value if isinstance(value, dict) else {}


def int_field(status: Mapping[str, Any], which: str, key: str) -> int | None:
    """Returns an integer field of the active or pending entry, or None when unset."""
    value = entry(status, which).get(key)
    return None if value is None else int(value)


def condition_true(status: Mapping[str, Any], condition_type: str) -> bool:
    """Tells whether a condition of a wire status is True."""
    return is_condition_true(status.get("conditions") or [], condition_type)


def upgrading(status: Mapping[str, Any]) -> bool:
    """Tells whether ``UpgradeInProgress`` is True."""
    return condition_true(status, RayServiceConditionType.UPGRADE_IN_PROGRESS)


def rolling_back(status: Mapping[str, Any]) -> bool:
    """Tells whether ``RollbackInProgress`` is True."""
    return condition_true(status, RayServiceConditionType.ROLLBACK_IN_PROGRESS)
