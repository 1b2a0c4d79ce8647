"""``metav1.Condition`` list helpers with apimachinery's ``SetStatusCondition`` semantics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def find_condition(conditions: list[dict[str, Any]], condition_type: str) -> dict[str, Any] | None:
    """Returns the condition of the given type, or None."""
    return next((c for c in conditions if c.get("type") == condition_type), None)


def set_condition(conditions: list[dict[str, Any]], new: Mapping[str, Any], *, now: str) -> bool:
    """Adds or updates a condition in place; returns whether anything changed.

    ``lastTransitionTime`` moves to ``now`` only when the status changes (or the condition is
    new); reason, message and observedGeneration are always overwritten.
    """
    existing = find_condition(conditions, str(new["type"]))
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
