"""Predicates filter updates only; creates and deletes pass (controller-runtime semantics)."""

from __future__ import annotations

from typing import Any

from rayop.runtime.predicate import (
    and_,
    annotations_changed,
    generation_changed,
    labels_changed,
    or_,
)


def obj(generation: int = 1, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "x", "generation": generation, "resourceVersion": "1"}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta}


def test_change_predicates_look_at_their_field_only() -> None:
    base = obj()
    assert generation_changed.update(base, obj(generation=2))
    assert not generation_changed.update(base, obj(labels={"a": "b"}))
    assert labels_changed.update(base, obj(labels={"a": "b"}))
    assert not labels_changed.update(obj(labels={}), obj())  # empty and missing are equal
    assert annotations_changed.update(base, obj(annotations={"k": "v"}))
    assert not annotations_changed.update(base, obj(generation=5))


def test_creates_deletes_and_generic_events_always_pass() -> None:
    for predicate in (generation_changed, labels_changed, annotations_changed):
        assert predicate.create(obj())
        assert predicate.delete(obj())
        assert predicate.generic(obj())


def test_or_and_and_combine() -> None:
    kuberay = or_(generation_changed, labels_changed, annotations_changed)
    base = obj()
    assert kuberay.update(base, obj(annotations={"k": "v"}))
    assert kuberay.update(base, obj(generation=2))
    status_only = obj()
    status_only["status"] = {"state": "ready"}
    assert not kuberay.update(base, status_only)
    both = and_(generation_changed, labels_changed)
    assert not both.update(base, obj(generation=2))
    assert both.update(base, obj(generation=2, labels={"a": "b"}))
