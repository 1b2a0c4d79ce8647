"""The ``fieldValidation`` query parameter: what a write does with fields the schema lacks.

kube-apiserver prunes a custom resource's unknown fields in every case; ``fieldValidation``
only says what the client hears of them: ``Strict`` refuses the write (400 BadRequest,
``strict decoding error: unknown field "spec.x"``, which kubectl's default ``--validate=strict``
asks for), ``Warn`` (the server's default) answers with one ``Warning`` header per field, and
``Ignore`` says nothing. The API server sets the request's directive with :func:`directive`
around the write; the CRD admission reports the pruned paths to :func:`report_unknown`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field

from rayop.sim.machinery import errors as se

__all__ = ["DIRECTIVES", "FieldValidation", "directive", "report_unknown"]

DIRECTIVES = ("Ignore", "Warn", "Strict")


@dataclass
class FieldValidation:
    """One request's directive and the warnings it collected."""

    mode: str = "Warn"
    warnings: list[str] = field(default_factory=list)


_current: contextvars.ContextVar[FieldValidation | None] = contextvars.ContextVar(
    "rayop_sim_field_validation", default=None
)


@contextlib.contextmanager
def directive(mode: str | None) -> Iterator[FieldValidation]:
    """Applies a request's ``fieldValidation`` (None: the default, Warn) inside the block.

    Raises:
        StatusError: 400 BadRequest for a value other than Ignore, Warn or Strict.
    """
    if mode is not None and mode not in DIRECTIVES:
        raise se.bad_request(
            f'fieldValidation "{mode}" is invalid: valid values are Ignore, Warn, and Strict'
        )
    state = FieldValidation(mode or "Warn")
    token = _current.set(state)
    try:
        yield state
    finally:
        _current.reset(token)


def report_unknown(kind: str, version: str, paths: list[str]) -> None:
    """Reports the fields pruned from one object as the request's directive asks.

    Args:
        kind: the object's kind, as the strict decoding error names it.
        version: the version of the request.
        paths: the pruned fields, e.g. ``spec.headGroupSpec.template.spec.contianers``.

    Raises:
        StatusError: 400 BadRequest under ``Strict`` when ``paths`` is not empty.
    """
    state = _current.get()
    if state is None or not paths or state.mode == "Ignore":
        return
    unknown = [f'unknown field "{path}"' for path in paths]
    if state.mode == "Strict":
        raise se.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {kind}: '
            f"strict decoding error: {', '.join(unknown)}"
        )
    state.warnings.extend(unknown)
