"""The optional extras a command needs, checked before the command imports them.

``pip install rayop`` carries the operator alone (``rayop run``, ``rayop crds``, ``rayop
samples``). The embedded control plane (``rayop up``, ``rayop apiserver``; protobuf encoding) and
the benchmark (``rayop bench``; process statistics and charts) each need an extra of
``pyproject.toml``'s. A command that needs a missing extra says which, in one line, and exits 2.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass

import typer


@dataclass(frozen=True)
class Extra:
    """One optional-dependencies group of ``pyproject.toml``.

    Attributes:
        name: The group's name, as in ``pip install 'rayop[name]'``.
        what: What the group adds, for the message.
        modules: The modules it installs (what is looked for).
    """

    name: str
    what: str
    modules: tuple[str, ...]


EXTRAS: dict[str, Extra] = {
    "sim": Extra("sim", "the embedded control plane", ("google.protobuf", "cel")),
    "bench": Extra("bench", "the benchmark", ("matplotlib", "psutil")),
}


DISTRIBUTIONS = {"cel": "common-expression-language"}
"""Modules whose distribution on the package index has another name than the module."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package is missing (or refuses to import)
        return False


def missing_extras(*names: str) -> list[Extra]:
    """The extras among ``names`` with at least one module that cannot be found."""
    return [EXTRAS[name] for name in names if not all(_installed(m) for m in EXTRAS[name].modules)]


def missing_extras_message(command: str, missing: list[Extra]) -> str:
    """One line naming what ``command`` needs and the pip command that installs it."""
    group = ",".join(extra.name for extra in missing)
    if len(missing) == 1:
        needs = f"{missing[0].what}'s extra"
    else:
        needs = "the extras of " + " and ".join(extra.what for extra in missing)
    return f"{command} needs {needs}: pip install 'rayop[{group}]'"


def require_extras(command: str, *names: str) -> None:
    """Exit 2 with one line on stderr unless every extra in ``names`` is installed."""
    missing = missing_extras(*names)
    if missing:
        print(missing_extras_message(command, missing), file=sys.stderr)
        raise typer.Exit(2)
