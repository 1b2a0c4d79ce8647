"""An option group is declared once and expands into the options of every command using it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from rayop.cli.commands import loaded_app
from rayop.cli.option_groups import OptionGroup, expand_option_groups, is_option_group

rayop_app = loaded_app()


@dataclass(frozen=True, kw_only=True)
class _Endpoint(OptionGroup):
    host: Annotated[str, typer.Option("--host", help="Host.")] = "localhost"
    port: Annotated[int, typer.Option("--port", help="Port.")] = 80


_TLS_ENDPOINT = _Endpoint(port=443)


def _app(seen: list[object]) -> typer.Typer:
    app = typer.Typer()

    @app.command("plain")
    @expand_option_groups
    def plain(
        endpoint: _Endpoint,
        name: Annotated[str, typer.Option("--name")] = "x",
    ) -> None:
        seen.append((endpoint, name))

    @app.command("tls")
    @expand_option_groups
    def tls(endpoint: _Endpoint = _TLS_ENDPOINT) -> None:
        seen.append(endpoint)

    return app


def test_a_group_becomes_options_and_the_command_gets_one_instance() -> None:
    seen: list[object] = []
    result = CliRunner().invoke(_app(seen), ["plain", "--port", "8080", "--name", "n"])
    assert result.exit_code == 0, result.output
    assert seen == [(_Endpoint(host="localhost", port=8080), "n")]


def test_a_default_instance_sets_that_commands_defaults() -> None:
    seen: list[object] = []
    result = CliRunner().invoke(_app(seen), ["tls", "--host", "h"])
    assert result.exit_code == 0, result.output
    assert seen == [_Endpoint(host="h", port=443)]


def test_colliding_option_names_are_refused() -> None:
    def twice(a: _Endpoint, b: _Endpoint) -> None:
        del a, b

    with pytest.raises(TypeError, match="collide"):
        expand_option_groups(twice)


def test_only_option_group_dataclasses_count_as_groups() -> None:
    assert is_option_group(_Endpoint)
    assert not is_option_group(OptionGroup)
    assert not is_option_group(str)


@pytest.mark.parametrize("command", ["run", "up", "apiserver", "bench"])
def test_every_command_shows_its_grouped_options_in_help(command: str) -> None:
    result = CliRunner().invoke(rayop_app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    wanted = {
        "run": ["--reconcile-concurrency", "--feature-gates", "--log-format", "--kubeconfig"],
        "up": ["--host", "--state", "--qps", "--use-priority-queue", "--log-level"],
        "apiserver": ["--host", "--port", "--kubeconfig-out", "--pod-ready-delay", "--latency"],
        "bench": ["--qps", "--burst", "--scenario"],
    }[command]
    for option in wanted:
        assert option in result.output
