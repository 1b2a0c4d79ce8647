"""Operator logs: JSON lines and console lines carry the reconcile they come from."""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from rich.logging import RichHandler

from rayop.runtime.controller import Controller, Request, Result
from rayop.runtime.process.logsetup import configure_logging, parse_level
from rayop.testing.sources import InMemorySource

log = logging.getLogger("rayop.controllers.demo")


@pytest.fixture(autouse=True)
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


def json_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


async def run_one_reconcile(request: Request, *, fail: bool = False) -> None:
    """Runs a controller named ``demo`` until it has reconciled ``request`` once."""
    reconciled = asyncio.Event()

    async def reconcile(req: Request) -> Result:
        log.info("reconciling", extra={"generation": 3})
        reconciled.set()
        if fail:
            raise RuntimeError("pods are forbidden")
        return Result()

    controller = Controller("demo", reconcile, sources=[InMemorySource([request])])
    await controller.start()
    await reconciled.wait()
    await controller.stop()


async def test_reconcile_logs_json_with_controller_namespace_name_and_reconcile_id() -> None:
    stream = io.StringIO()
    configure_logging("info", "json", stream=stream)
    log.info("before any reconcile")

    await run_one_reconcile(Request("team-a", "raycluster-kuberay"))

    own = [line for line in json_lines(stream) if line["logger"] != "rayop.runtime.controller"]
    outside, inside = own  # the controller's start lines left out
    assert outside["msg"] == "before any reconcile"
    assert "reconcileID" not in outside and "controller" not in outside
    assert inside["msg"] == "reconciling"
    assert inside["level"] == "info"
    assert inside["logger"] == "rayop.controllers.demo"
    assert inside["controller"] == "demo"
    assert inside["namespace"] == "team-a"
    assert inside["name"] == "raycluster-kuberay"
    assert len(inside["reconcileID"]) == 36  # a UUID
    assert inside["generation"] == 3
    assert inside["ts"].endswith("Z")


async def test_each_reconcile_gets_its_own_reconcile_id() -> None:
    stream = io.StringIO()
    configure_logging("info", "json", stream=stream)
    await run_one_reconcile(Request("ns", "a"))
    await run_one_reconcile(Request("ns", "a"))
    ids = [line["reconcileID"] for line in json_lines(stream) if line["msg"] == "reconciling"]
    assert len(ids) == 2 and ids[0] != ids[1]


async def test_a_reconcile_error_is_logged_with_its_request_and_the_error() -> None:
    stream = io.StringIO()
    configure_logging("info", "json", stream=stream)
    await run_one_reconcile(Request("ns", "broken"), fail=True)
    errors = [line for line in json_lines(stream) if line["level"] == "error"]
    assert errors, stream.getvalue()
    error = errors[0]
    assert error["controller"] == "demo"
    assert (error["namespace"], error["name"]) == ("ns", "broken")
    assert error["error"] == "pods are forbidden"
    assert "RuntimeError" in error["stacktrace"]
    reconciling = next(line for line in json_lines(stream) if line["msg"] == "reconciling")
    assert error["reconcileID"] == reconciling["reconcileID"]


def test_log_level_filters_lower_levels() -> None:
    stream = io.StringIO()
    configure_logging("error", "json", stream=stream)
    log.info("hidden")
    log.warning("hidden too")
    log.error("shown")
    assert [line["msg"] for line in json_lines(stream)] == ["shown"]
    configure_logging("debug", "json", stream=stream)
    log.debug("now shown")
    last = json_lines(stream)[-1]
    assert (last["level"], last["msg"]) == ("debug", "now shown")


def test_reconfiguring_replaces_the_previous_handler() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("info", "json", stream=first)
    configure_logging("info", "json", stream=second)
    log.info("once")
    assert first.getvalue() == ""
    assert len(json_lines(second)) == 1


async def test_console_format_is_readable_and_carries_the_reconcile_fields() -> None:
    stream = io.StringIO()
    configure_logging("info", "console", stream=stream)
    await run_one_reconcile(Request("team-a", "c1"))
    text = stream.getvalue()
    assert "reconciling" in text
    assert "controller=demo" in text
    assert "namespace=team-a" in text and "name=c1" in text
    assert "reconcileID=" in text
    assert "{" not in text  # not JSON


def test_unknown_level_or_format_is_rejected() -> None:
    assert parse_level("WARN") == logging.WARNING
    with pytest.raises(ValueError, match="unknown log level"):
        configure_logging("verbose", "json")
    with pytest.raises(ValueError, match="unknown log format"):
        configure_logging("info", "xml")  # type: ignore[arg-type]


def test_json_lines_carry_the_caller_as_package_file_and_line() -> None:
    stream = io.StringIO()
    configure_logging("info", "json", stream=stream)
    frame = inspect.currentframe()
    assert frame is not None
    here = frame.f_lineno
    log.info("where am I")
    (line,) = json_lines(stream)
    assert line["caller"] == f"runtime/test_logging.py:{here + 1}"
    assert list(line)[:5] == ["ts", "level", "logger", "caller", "msg"]  # zap's order, ts first


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


GATES = {f"SomeRatherLongFeatureGateName{i}": i % 2 == 0 for i in range(10)}


def test_console_off_a_terminal_is_one_record_a_line_however_long() -> None:
    stream = io.StringIO()  # not a terminal: a pipe or a file
    configure_logging("info", "console", stream=stream)
    log.info("feature gates: %s", GATES)
    log.warning("second", extra={"detail": "x" * 200})
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2, lines
    first, second = (line.split("\t") for line in lines)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first[0])
    assert first[1:] == ["INFO", f"rayop.controllers.demo: feature gates: {GATES}"]
    assert second[1:] == ["WARN", f"rayop.controllers.demo: second  detail={'x' * 200}"]


def test_console_on_a_terminal_is_rich() -> None:
    stream = _Terminal()
    handler = configure_logging("info", "console", stream=stream)
    assert isinstance(handler, RichHandler)
    log.info("on a terminal")
    assert "on a terminal" in stream.getvalue()
