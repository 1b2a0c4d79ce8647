"""``metav1.Condition`` helpers over wire JSON, with apimachinery's ``SetStatusCondition`` rules.

The one set of condition helpers in rayop: the controllers keep objects as wire dicts, so a
condition is a ``{"type", "status", "reason", "message", "lastTransitionTime",
"observedGeneration"}`` mapping (see :class:`rayop.api.common.Condition` for the typed form).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "find_condition",
    "is_condition_true",
    "object_conditions",
    "remove_condition",
    "set_condition",
]


def object_conditions(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Returns ``obj.status.conditions`` (an empty list when absent); the list is not copied."""
    conditions: list[dict[str, Any]] = (obj.get("status") or {}).get("conditions") or []
    return conditions


def find_condition(
    conditions: Sequence[Mapping[str, Any]], condition_type: str
) -> Mapping[str, Any] | None:
    """Returns the condition of the given type, or None."""
    return next((c for c in conditions if c.get("type") == condition_type), None)


def is_condition_true(conditions: Sequence[Mapping[str, Any]], condition_type: str) -> bool:
    """Tells whether the condition of the given type exists with status ``True``."""
    condition = find_condition(conditions, condition_type)
    return condition is not None and condition.get("status") == "True"


def set_condition(conditions: list[dict[str, Any]], new: Mapping[str, Any], *, now: str) -> bool:
    """Adds or updates a condition in place; returns whether anything changed.

    ``lastTransitionTime`` moves to ``now`` only when the status changes (or the condition is
    new); reason, message and observedGeneration are always overwritten (an unset or zero
    observedGeneration is left out).
    """
    existing = next((c for c in conditions if c.get("type") == new["type"]), None)
    if existing is None:
        added = {
            "type": new["type"],
            "status": new["status"],
            "lastTransitionTime": now,
            "reason": new.get("reason", ""),
            "message": new.get("message", ""),
        }
        if new.get("observedGeneration"):
            added["observedGeneration"] = new["observedGeneration"]
        conditions.append(added)
        return True
    changed = False
    if existing.get("status") != new["status"]:
        existing["status"] = new["status"]
        existing["lastTransitionTime"] = now
        changed = True
    for key in ("reason", "message"):
        if existing.get(key, "") != new.get(key, ""):
            existing[key] = new.get(key, "")
            changed = True
    if existing.get("observedGeneration", 0) != new.get("observedGeneration", 0):
        if new.get("observedGeneration"):
            existing["observedGeneration"] = new["observedGeneration"]
        else:
            existing.pop("observedGeneration", None)
        changed = True
    return changed


def remove_condition(conditions: list[dict[str, Any]], condition_type: str) -> bool:
    """Removes every condition of the given type in place; returns whether one was removed."""
    before = len(conditions)
    conditions[:] = [c for c in conditions if c.get("type") != condition_type]
    return len(conditions) != before
