"""Resources served through a conversion of another resource's stored objects.

``events.k8s.io/v1`` Events are stored as core ``v1`` Events: a request for the alias is
converted into the stored form on the way in and back on the way out. Both APIs serve the same
objects, as in Kubernetes: an event written through one is read through the other
(``kubectl describe`` reads core events; client-go recorders write events.k8s.io ones).

A custom resource's served versions other than its storage version are aliases too, with the
conversion strategy ``None`` of apiextensions-apiserver: an object written through such a
version is pruned, defaulted and validated against that version's schema, then stored with the
storage version's ``apiVersion``; read back through it, it gets that version's ``apiVersion``
and is pruned to that version's schema.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

from rayop.apimachinery.objects import Obj
from rayop.sim.admission.crd_schema import admit_custom, prune
from rayop.sim.machinery.resources import ResourceInfo, ResourceRegistry

__all__ = ["Alias", "core_to_events_v1", "events_v1_to_core", "find_alias"]

Convert = Callable[[Obj], Obj]

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


# (group, plural) of an aliased resource -> (into storage form, out of storage form)
_CONVERSIONS: dict[tuple[str, str], tuple[Convert, Convert]] = {
    ("events.k8s.io", "events"): (events_v1_to_core, core_to_events_v1),
}


@dataclass(frozen=True, slots=True)
class Alias:
    """How one served resource maps onto the stored one.

    Attributes:
        stored: The resource whose objects are stored.
        into: Converts a served object into the stored form.
        out: Converts a stored object into the served form.
    """

    stored: ResourceInfo
    into: Convert
    out: Convert


def find_alias(resources: ResourceRegistry, info: ResourceInfo) -> Alias | None:
    """Returns how ``info`` is served through a conversion, or None for a stored resource."""
    if not info.storage_key:
        return None
    conv = _CONVERSIONS.get((info.group, info.plural))
    canon = resources.by_key(info.storage_key)
    if canon is None or canon is info:
        return None
    if conv is None:
        return _version_alias(info, canon) if info.is_custom else None
    return Alias(canon, conv[0], conv[1])


def _version_alias(served: ResourceInfo, stored: ResourceInfo) -> Alias:
    """Returns the conversion (strategy None) between two versions of one custom resource."""

    def into(obj: Obj) -> Obj:
        admitted = copy.deepcopy(obj)
        admit_custom(served, admitted, None)
        return {**admitted, "apiVersion": stored.api_version}

    def out(obj: Obj) -> Obj:
        shown = copy.deepcopy({**obj, "apiVersion": served.api_version})
        if served.schema is not None:
            prune(shown, served.schema, root=True)
        return shown

    return Alias(stored, into, out)
