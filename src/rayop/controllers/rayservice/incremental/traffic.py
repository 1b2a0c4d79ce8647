"""The step schedule: the route weights of the next pass of an incremental upgrade.

KubeRay's ``calculateTrafficRoutedPercent``. Weights start from the status (active 100, pending
0 when unset). Traffic moves only toward the cluster gaining it (the pending one; the active one
during a rollback), only until that cluster's weight reaches its ``targetCapacity``, and only
once ``intervalSeconds`` have passed since that cluster's ``lastTrafficMigratedTime`` (at once
when it has none): then by ``stepSizePercent``, capped at 100 and at the target capacity, the
other cluster getting the rest. An upgrade moves traffic only while the pending cluster is
ready (all its Serve applications RUNNING); a rollback moves it regardless.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from rayop.api.common import parse_time
from rayop.api.rayservice import ClusterUpgradeOptions
from rayop.controllers.rayservice.incremental.mode import (
    ACTIVE,
    LAST_TRAFFIC_MIGRATED_TIME,
    PENDING,
    TARGET_CAPACITY,
    TRAFFIC_ROUTED_PERCENT,
    entry,
    int_field,
    rolling_back,
)


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def _interval_passed(stamp: Any, now: datetime, interval: timedelta) -> bool:
    if not stamp:
        return True
    try:
        return now - parse_time(str(stamp)) >= interval
    except ValueError:
        return True


def next_weights(
    status: Mapping[str, Any],
    options: ClusterUpgradeOptions,
    *,
    pending_ready: bool,
    now: datetime,
) -> tuple[int, int]:
    """Returns the (active, pending) weights the route should carry now.

    Args:
        status: The RayService's working status (wire form).
        options: ``clusterUpgradeOptions``.
        pending_ready: Whether the pending cluster's applications are all RUNNING this pass.
        now: The current wall time (UTC).
    """
    active_weight = _or(int_field(status, ACTIVE, TRAFFIC_ROUTED_PERCENT), 100)
    pending_weight = _or(int_field(status, PENDING, TRAFFIC_ROUTED_PERCENT), 0)
    pending_capacity = _or(int_field(status, PENDING, TARGET_CAPACITY), 0)
    active_capacity = _or(int_field(status, ACTIVE, TARGET_CAPACITY), 100)
    rollback = rolling_back(status)
    if (pending_weight == pending_capacity and not rollback) or (
        rollback and active_weight == active_capacity
    ):
        return active_weight, pending_weight
    gaining = ACTIVE if rollback else PENDING
    stamp = entry(status, gaining).get(LAST_TRAFFIC_MIGRATED_TIME)
    if not _interval_passed(stamp, now, timedelta(seconds=options.interval_seconds)):
        return active_weight, pending_weight
    step = options.step_size_percent
    if rollback:
        active_weight = min(100, active_weight + step, active_capacity)
        pending_weight = 100 - active_weight
    elif pending_ready:
        pending_weight = min(100, pending_weight + step, pending_capacity)
        active_weight = 100 - pending_weight
    return active_weight, pending_weight
