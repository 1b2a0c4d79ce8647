"""The ``rayop`` sub-commands and the modules that register them: the CLI's lazy boundary.

Each sub-command's module registers it on :data:`~rayop.cli.app.app` when imported, and
imports what its command needs. ``rayop <command>`` imports only ``<command>``'s module
(:func:`load_commands`), so ``rayop run`` starts without the embedded control plane, the
benchmark driver or the other commands' modules; help, completion and an unknown name load
them all (:func:`loaded_app`), so that typer lists every command.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

import typer

from rayop.cli.app import app

__all__ = ["COMMANDS", "load_commands", "loaded_app"]

COMMANDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "advise": "rayop.cli.advise",
        "apiserver": "rayop.cli.apiserver",
        "bench": "rayop.cli.bench",
        "crds": "rayop.cli.crds",
        "dev": "rayop.cli.dev",
        "explain": "rayop.cli.explain",
        "preview": "rayop.cli.preview",
        "render": "rayop.cli.render",
        "run": "rayop.cli.run",
        "samples": "rayop.cli.samples",
        "up": "rayop.cli.up",
        "version": "rayop.cli.version",
    }
)
"""Sub-command name -> the module that registers it, in the order ``rayop --help`` lists them."""


def load_commands(argv: Sequence[str]) -> None:
    """Registers the sub-command ``argv`` names (its first argument), or every one when the
    first argument names none (``--help``, no argument, a misspelt name)."""
    module = COMMANDS.get(argv[0]) if argv else None
    if module is None:
        loaded_app()
    else:
        importlib.import_module(module)


def loaded_app() -> typer.Typer:
    """Returns the ``rayop`` application with every sub-command registered."""
    for module in COMMANDS.values():
        importlib.import_module(module)
    return app
