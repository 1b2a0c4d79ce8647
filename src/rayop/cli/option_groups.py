"""Groups of command-line options declared once and shared by several ``rayop`` commands.

An option group is a frozen dataclass deriving from :class:`OptionGroup` whose fields are typer
options (an ``Annotated`` type and a default). A command decorated with :func:`expand_option_groups` declares one parameter per
group, annotated with the group's class; typer then sees the group's options in that parameter's
place (in ``--help`` too), and the command receives one instance built from their values::

    @app.command("run")
    @expand_option_groups
    def run(kubeconfig: KubeconfigOpt = None, log: LogFlags = CONSOLE_LOGS) -> None: ...

A default instance (``CONSOLE_LOGS`` above) gives that command its own option defaults.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["OptionGroup", "expand_option_groups", "is_option_group"]

_R = TypeVar("_R")


class OptionGroup:
    """Base of the option groups; a subclass is a frozen dataclass whose fields are options."""


def is_option_group(annotation: object) -> bool:
    """Tells whether ``annotation`` is an option group class (an OptionGroup dataclass)."""
    return (
        isinstance(annotation, type)
        and issubclass(annotation, OptionGroup)
        and dataclasses.is_dataclass(annotation)
    )


def expand_option_groups(command: Callable[..., _R]) -> Callable[..., _R]:
    """Returns ``command`` with each option-group parameter replaced by the group's options.

    The wrapper builds each group from its options' values and calls ``command`` with it;
    every other parameter passes through unchanged.

    Raises:
        TypeError: two groups (or a group and the command) declare the same option name.
    """
    hints = typing.get_type_hints(command, include_extras=True)
    groups: dict[str, tuple[type[Any], tuple[str, ...]]] = {}
    params: list[inspect.Parameter] = []
    for param in inspect.signature(command).parameters.values():
        annotation = hints.get(param.name, param.annotation)
        if not is_option_group(annotation):
            params.append(param.replace(annotation=annotation))
            continue
        fields = _group_parameters(annotation, param.default, param.kind)
        groups[param.name] = (annotation, tuple(field.name for field in fields))
        params.extend(fields)
    names = [param.name for param in params]
    if len(names) != len(set(names)):
        raise TypeError(f"{command.__qualname__}: option names collide in {names}")

    @functools.wraps(command)
    def wrapper(**values: Any) -> _R:
        for name, (group, fields) in groups.items():
            values[name] = group(**{field: values.pop(field) for field in fields})
        return command(**values)

    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {param.name: param.annotation for param in params}
    return wrapper


def _group_parameters(
    group: type[Any], default: object, kind: inspect._ParameterKind
) -> list[inspect.Parameter]:
    """Returns the keyword parameters of a group's options, with ``default``'s values if given."""
    hints = typing.get_type_hints(group, include_extras=True)
    base = default if isinstance(default, group) else None
    return [
        inspect.Parameter(
            field.name,
            kind,
            annotation=hints[field.name],
            default=getattr(base, field.name) if base is not None else _default(field),
        )
        for field in dataclasses.fields(group)
    ]


def _default(field: dataclasses.Field[Any]) -> Any:
    """A field's default (made by its factory for a repeatable option's list)."""
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default
