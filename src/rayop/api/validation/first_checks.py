"""The checks a RayJob and a RayService start with, in KubeRay's order: the object parses, then
its metadata, then its spec (which stops quietly at a feature gate that is off)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from rayop.api.common import RayResource
from rayop.api.validation.parsing import parse_model
from rayop.api.validation.problem import Problem, Reason

__all__ = ["first_checks"]

_R = TypeVar("_R", bound=RayResource)


def first_checks(
    model: type[_R],
    obj: _R | Mapping[str, Any],
    metadata_problem: Callable[[Mapping[str, Any]], str | None],
    reasons: tuple[Reason, Reason],
    spec_problem: Callable[[_R, Mapping[str, str]], str | None],
) -> tuple[_R | None, list[Problem]]:
    """Returns the parsed object and [] when the kind's later checks are to run; None and the
    answer (perhaps []: a gated feature, which the gate check refuses) when these decided.

    Args:
        model: The kind's model.
        obj: The object (a model, or wire JSON parsed first).
        metadata_problem: The kind's metadata check (a message, or None when it passes).
        reasons: The event reasons of a metadata failure and of a parse or spec failure.
        spec_problem: The kind's spec check, given the object and its annotations: a message,
            "" when it stops at a gate that is off, None when it passes.
    """
    metadata_reason, spec_reason = reasons
    parsed, parse_errors = parse_model(model, obj)
    if parsed is None:
        return None, [Problem(spec_reason, e) for e in parse_errors]
    if message := metadata_problem(parsed.metadata):
        return None, [Problem(metadata_reason, message)]
    message = spec_problem(parsed, parsed.metadata.get("annotations") or {})
    if message == "":
        return None, []  # a gated feature: the gate check refuses it, with KubeRay's message
    if message:
        return None, [Problem(spec_reason, message)]
    return parsed, []
