"""Event filters for sources, with controller-runtime's semantics.

A predicate decides, per event, whether a source enqueues anything. The change predicates
(:data:`generation_changed`, :data:`labels_changed`, :data:`annotations_changed`) look at updates
only: creates, deletes and generic events always pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from rayop.apimachinery.objects import ObjView as Obj


class Predicate(Protocol):
    """Filters events; each method returns True to let the event through; never blocks."""

    def create(self, obj: Obj) -> bool: ...

    def update(self, old: Obj, new: Obj) -> bool: ...

    def delete(self, obj: Obj) -> bool: ...

    def generic(self, obj: Obj) -> bool: ...


def _always(*_objs: Obj) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class PredicateFuncs:
    """A predicate built from plain functions; a missing function lets every event through."""

    on_create: Callable[[Obj], bool] = _always
    on_update: Callable[[Obj, Obj], bool] = _always
    on_delete: Callable[[Obj], bool] = _always
    on_generic: Callable[[Obj], bool] = _always

    def create(self, obj: Obj) -> bool:
        return self.on_create(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return self.on_update(old, new)

    def delete(self, obj: Obj) -> bool:
        return self.on_delete(obj)

    def generic(self, obj: Obj) -> bool:
        return self.on_generic(obj)


def _meta(obj: Obj, field: str) -> Any:
    return (obj.get("metadata") or {}).get(field)


generation_changed = PredicateFuncs(
    on_update=lambda old, new: _meta(old, "generation") != _meta(new, "generation")
)
"""Passes updates that change ``metadata.generation`` (spec changes for most kinds)."""

labels_changed = PredicateFuncs(
    on_update=lambda old, new: (_meta(old, "labels") or {}) != (_meta(new, "labels") or {})
)
"""Passes updates that change ``metadata.labels``."""

annotations_changed = PredicateFuncs(
    on_update=lambda old, new: (
        (_meta(old, "annotations") or {}) != (_meta(new, "annotations") or {})
    )
)
"""Passes updates that change ``metadata.annotations``."""

resource_version_changed = PredicateFuncs(
    on_update=lambda old, new: _meta(old, "resourceVersion") != _meta(new, "resourceVersion")
)
"""Passes updates that are not resyncs."""


_BINDING_META = ("resourceVersion", "managedFields")
_BINDING_CONDITION = "PodScheduled"


def _without(part: Any, keys: tuple[str, ...]) -> Any:
    if not isinstance(part, dict):
        return part
    return {k: v for k, v in part.items() if k not in keys}


def _status_without_scheduled(status: Any) -> Any:
    if not isinstance(status, dict):
        return status
    rest = {k: v for k, v in status.items() if k != "conditions"}
    conditions = [
        c
        for c in status.get("conditions") or ()
        if not (isinstance(c, dict) and c.get("type") == _BINDING_CONDITION)
    ]
    return rest, conditions


def is_pod_binding(old: Obj, new: Obj) -> bool:
    """Tells whether a pod update is only the scheduler's binding: a new resourceVersion whose
    only other changes are ``spec.nodeName``, the ``PodScheduled`` condition and
    ``metadata.managedFields`` (a resync, with the same resourceVersion, is not one)."""
    if _meta(old, "resourceVersion") == _meta(new, "resourceVersion") or old.keys() != new.keys():
        return False
    for part in new:
        before, after = old.get(part), new.get(part)
        if part == "metadata":
            same = _without(before, _BINDING_META) == _without(after, _BINDING_META)
        elif part == "spec":
            same = _without(before, ("nodeName",)) == _without(after, ("nodeName",))
        elif part == "status":
            same = _status_without_scheduled(before) == _status_without_scheduled(after)
        else:
            same = before == after
        if not same:
            return False
    return True


not_pod_binding = PredicateFuncs(on_update=lambda old, new: not is_pod_binding(old, new))
"""Passes every event but a pod update that is only its binding to a node (:func:`is_pod_binding`),
for a controller that reads neither ``spec.nodeName`` nor the ``PodScheduled`` condition."""


@dataclass(frozen=True, slots=True)
class _Combined:
    """Passes an event when ``combine`` (``any`` or ``all``) of the predicates' answers holds."""

    combine: Callable[[Iterable[bool]], bool]
    predicates: tuple[Predicate, ...]

    def create(self, obj: Obj) -> bool:
        return self.combine(p.create(obj) for p in self.predicates)

    def update(self, old: Obj, new: Obj) -> bool:
        return self.combine(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Obj) -> bool:
        return self.combine(p.delete(obj) for p in self.predicates)

    def generic(self, obj: Obj) -> bool:
        return self.combine(p.generic(obj) for p in self.predicates)


def or_(*predicates: Predicate) -> Predicate:
    """Returns a predicate passing an event when any of ``predicates`` passes it."""
    return _Combined(any, tuple(predicates))


def and_(*predicates: Predicate) -> Predicate:
    """Returns a predicate passing an event when all of ``predicates`` pass it."""
    return _Combined(all, tuple(predicates))


_checks: tuple[Predicate, ...] = (PredicateFuncs(), _Combined(any, ()))
