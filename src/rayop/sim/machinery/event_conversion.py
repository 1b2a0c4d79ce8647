"""Conversion between core/v1 Events (the stored form) and events.k8s.io/v1 Events.

Both APIs serve the same objects, as in Kubernetes: an event written through one is read
through the other (``kubectl describe`` reads core events; client-go recorders write
events.k8s.io ones).
"""

from __future__ import annotations

from typing import Any

__all__ = ["core_to_events_v1", "events_v1_to_core"]

Obj = dict[str, Any]

# events.k8s.io/v1 field -> core/v1 field (fields with the same name are copied as they are)
_RENAMES = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_BACK = {v: k for k, v in _RENAMES.items()}
_SKIP = {"apiVersion", "kind"}


def events_v1_to_core(obj: Obj) -> Obj:
    """Returns the core/v1 form of an events.k8s.io/v1 Event (shallow; values shared)."""
    out: Obj = {"apiVersion": "v1", "kind": "Event"}
    for k, v in obj.items():
        if k not in _SKIP:
            out[_RENAMES.get(k, k)] = v
    return out


def core_to_events_v1(obj: Obj) -> Obj:
    """Returns the events.k8s.io/v1 form of a core/v1 Event (shallow; values shared)."""
    out: Obj = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
    for k, v in obj.items():
        if k not in _SKIP:
            out[_BACK.get(k, k)] = v
    if "reportingController" not in out and isinstance(obj.get("source"), dict):
        out["reportingController"] = obj["source"].get("component", "")
    return out
