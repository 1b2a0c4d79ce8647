"""Helpers shared by the deployment tests: loading deploy/, finding objects, parsing args."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import typer
import yaml

from rayop.cli.commands import loaded_app
from rayop.cli.flags import normalize_argv

app = loaded_app()

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"


def load_yaml(path: Path) -> list[dict[str, Any]]:
    """Returns the non-empty documents of a YAML file."""
    return [doc for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader) if doc]


def find(docs: Iterable[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    """Returns the one object of ``kind`` (and ``name``) among ``docs``."""
    found = [
        d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def operator_container(deployment: dict[str, Any]) -> dict[str, Any]:
    """Returns the ``rayop`` container of the operator Deployment."""
    containers = deployment["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "rayop")


def parse_run_args(args: list[str]) -> dict[str, Any]:
    """Parses ``args`` with the real ``rayop run`` command (without running it).

    Returns:
        The parsed parameters by Python name.

    Raises:
        UsageError: An argument is unknown or has a bad value (typer's click).
    """
    group = typer.main.get_command(app)
    command = group.commands["run"]  # type: ignore[attr-defined]
    with command.make_context("run", normalize_argv(args)) as ctx:
        return dict(ctx.params)


def flag_values(args: list[str]) -> dict[str, str]:
    """Maps each ``--flag=value`` argument to its value."""
    pairs = (arg.removeprefix("--").split("=", 1) for arg in args)
    return {name: value for name, value in pairs}
