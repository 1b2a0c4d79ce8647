"""`rayop up`'s logs: JSON lines carry `caller`; console logs off a terminal are one record a line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from .apiserver_process import stop_apiserver


def _up_logs(workdir: Path, *args: str) -> list[str]:
    """Starts ``rayop up ARGS`` with its stderr in a file, stops it once up; returns the lines."""
    err = workdir / "up.err"
    cmd = [
        sys.executable, "-m", "rayop", "up", "--kubeconfig-out", str(workdir / "kubeconfig"),
        "--metrics-addr", "0", "--health-probe-bind-address", "0", *args,
    ]  # fmt: skip
    with err.open("w") as stderr:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("rayop is up"), err.read_text()
    finally:
        stop_apiserver(proc)
    return err.read_text().splitlines()


def test_rayop_up_json_lines_carry_the_caller(tmp_path: Path) -> None:
    lines = [json.loads(line) for line in _up_logs(tmp_path, "--log-format", "json")]
    assert lines and all(re.fullmatch(r"\w+/\w+\.py:\d+", line["caller"]) for line in lines)
    gates = next(line for line in lines if line["msg"].startswith("feature gates"))
    assert re.fullmatch(r"cli/operator_flags\.py:\d+", gates["caller"])
    started = next(line for line in lines if line["msg"] == "Starting workers")
    assert started["caller"].startswith("runtime/")


def test_rayop_up_console_logs_to_a_file_are_one_record_a_line(tmp_path: Path) -> None:
    lines = _up_logs(tmp_path)  # console is up's default format
    timestamp = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\t[A-Z]+\t")
    assert lines and all(timestamp.match(line) for line in lines), lines
    (gates,) = [line for line in lines if "feature gates: {" in line]
    assert gates.endswith("}")  # the whole dict on the record's one line
