"""The RayJob a RayCronJob creates for one tick, named and marked as KubeRay v1.7 does."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from rayop.api import keys
from rayop.api.common import format_time
from rayop.api.raycronjob import RayCronJob
from rayop.controllers.kit.ownership import controller_reference

__all__ = ["child_name", "child_rayjob"]


def child_name(cron_name: str, tick: datetime) -> str:
    """Returns ``<name>-<minutes since the epoch of tick>``: a repeated create for the same
    tick collides (AlreadyExists) instead of making a second RayJob."""
    return f"{cron_name}-{int(tick.timestamp()) // 60}"


def child_rayjob(cron: RayCronJob, wire: Mapping[str, Any], tick: datetime) -> dict[str, Any]:
    """Returns the RayJob of ``tick``: the template's spec, the ``ray.io/cronjob-name`` label,
    the ``ray.io/cronjob-scheduled-timestamp`` annotation (UTC RFC 3339) and the RayCronJob as
    controlling owner (so garbage collection deletes it with the RayCronJob).

    Args:
        cron: The parsed RayCronJob (name, namespace, uid).
        wire: Its wire form; the template is copied from it as stored (defaults included).
        tick: The scheduled time.
    """
    template = (wire.get("spec") or {}).get("jobTemplate") or {}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": child_name(cron.name, tick),
            "namespace": cron.namespace,
            "labels": {keys.RAY_CRONJOB_NAME: cron.name},
            "annotations": {keys.RAY_CRONJOB_SCHEDULED_TIMESTAMP: format_time(tick)},
            "ownerReferences": [controller_reference(cron)],
        },
        "spec": copy.deepcopy(dict(template)),
    }
