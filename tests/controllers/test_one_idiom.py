"""The three large controllers' pass contexts have one shape (kit/pass_context.py): the name
``PassContext``, the constructor ``PassContext.open``, ``now`` the wall time of the pass, and
``event(event_type, reason, note, *, action=None)``. mypy checks the protocol below; the test
checks what a protocol cannot say (a classmethod named ``open``, ``now`` a datetime field)."""

from __future__ import annotations

import inspect
from datetime import datetime
from typing import Any, get_type_hints

import pytest

from rayop.controllers.kit import pass_context as kit
from rayop.controllers.raycluster import context as raycluster
from rayop.controllers.rayjob import context as rayjob
from rayop.controllers.rayservice import context as rayservice

CONTEXTS: list[type[Any]] = [raycluster.PassContext, rayjob.PassContext, rayservice.PassContext]


def _as_protocol(
    a: raycluster.PassContext, b: rayjob.PassContext, c: rayservice.PassContext
) -> list[kit.PassContext]:
    return [a, b, c]  # mypy: each context satisfies the kit's protocol


@pytest.mark.parametrize("context", CONTEXTS, ids=lambda c: c.__module__)
def test_each_context_opens_by_a_classmethod_and_holds_the_pass_time(context: type[Any]) -> None:
    assert isinstance(inspect.getattr_static(context, "open"), classmethod)
    assert list(inspect.signature(context.open).parameters)[:2] == ["request", "deps"]
    assert get_type_hints(context)["now"] is datetime


@pytest.mark.parametrize("context", CONTEXTS, ids=lambda c: c.__module__)
def test_each_context_records_events_with_the_one_signature(context: type[Any]) -> None:
    def shape(func: Any) -> list[tuple[str, Any, Any]]:
        params = inspect.signature(func).parameters.values()
        return [(p.name, p.kind, p.default) for p in params]

    assert shape(context.event) == shape(kit.PassContext.event)
