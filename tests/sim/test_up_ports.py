"""``rayop up`` and taken ports (issue 35): Ray's 8080 taken does not matter (the operator listens
on loopback, on ports Ray does not use); an address of its own that is taken stops the start with
one line naming the flag to change, exit status 2, and no kubeconfig written."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from rayop.cli.operator_flags import LOCAL_DEFAULTS

from .up_process import start_up, stop_up


@contextmanager
def listening(host: str, port: int) -> Iterator[int]:
    """Holds ``host:port`` (0: a free port) open while the block runs; yields the port."""
    with socket.socket() as sock:
        sock.bind((host, port))
        sock.listen()
        yield int(sock.getsockname()[1])


def _free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def _port(address: str) -> int:
    return int(address.rpartition(":")[2])


def test_up_starts_while_8080_is_taken_and_listens_on_loopback(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig.yaml"
    args = ["--kubeconfig-out", str(kubeconfig)]
    defaults = (LOCAL_DEFAULTS.metrics_addr, LOCAL_DEFAULTS.health_probe_bind_address)
    if not all(_free("127.0.0.1", _port(a)) for a in defaults):  # another rayop up runs here
        with listening("127.0.0.1", 0) as metrics, listening("127.0.0.1", 0) as health:
            pass
        defaults = (f"127.0.0.1:{metrics}", f"127.0.0.1:{health}")
        args += ["--metrics-addr", defaults[0], "--health-probe-bind-address", defaults[1]]
    with ExitStack() as stack:
        if _free("0.0.0.0", 8080):  # else someone holds it already
            stack.enter_context(listening("0.0.0.0", 8080))
        assert not _free("0.0.0.0", 8080)
        proc = start_up(tmp_path, *args)
        try:
            assert proc.stdout is not None
            banner = proc.stdout.readline()
            assert banner.startswith("rayop is up"), (tmp_path / "up.log").read_text()[-3000:]
            assert kubeconfig.exists()
            banner += "".join(proc.stdout.readline() for _ in range(6))
            assert f"operator metrics: http://{defaults[0]}/metrics" in banner, banner
            assert f"health: http://{defaults[1]}/readyz" in banner, banner
        finally:
            assert stop_up(proc) == 0



def test_ports_left_to_the_system_are_shown_as_bound_and_answer(tmp_path: Path) -> None:
    proc = start_up(tmp_path, "--metrics-addr", "127.0.0.1:0",
                    "--health-probe-bind-address", "127.0.0.1:0")
    try:
        assert proc.stdout is not None
        banner = "".join(proc.stdout.readline() for _ in range(7))
        assert banner.startswith("rayop is up"), (tmp_path / "up.log").read_text()[-3000:]
        urls = re.findall(r"(?:operator metrics|health): (http://127\.0\.0\.1:(\d+)/\S+)", banner)
        assert len(urls) == 2 and all(port != "0" for _, port in urls), banner
        for url, _ in urls:
            with urllib.request.urlopen(url, timeout=10) as answer:
                assert answer.status == 200
    finally:
        assert stop_up(proc) == 0


@pytest.mark.parametrize(
    ("flag", "line"),
    [
        ("--metrics-addr", "the metrics server cannot listen on 127.0.0.1:{port} "
         "(address already in use): change --metrics-addr (0 disables it)"),
        ("--health-probe-bind-address", "the health probe server cannot listen on "
         "127.0.0.1:{port} (address already in use): change --health-probe-bind-address "
         "(0 disables it)"),
        ("--port", "the embedded API server cannot listen on 127.0.0.1:{port} "
         "(address already in use): change --port (0 picks a free one) or --host"),
    ],
)  # fmt: skip
def test_a_taken_address_stops_the_start_in_one_line_and_writes_no_kubeconfig(
    tmp_path: Path, flag: str, line: str
) -> None:
    kubeconfig = tmp_path / "kube" / "config.yaml"
    others = {"--metrics-addr": "0", "--health-probe-bind-address": "0"}
    with listening("127.0.0.1", 0) as port:
        others[flag] = f"127.0.0.1:{port}" if flag != "--port" else str(port)
        proc = subprocess.run(
            [sys.executable, "-m", "rayop", "up", "--kubeconfig-out", str(kubeconfig),
             *(arg for item in others.items() for arg in item)],
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.splitlines()[-1] == "rayop: " + line.format(port=port)
    assert "Traceback" not in proc.stderr
    assert " ERROR " not in proc.stderr, proc.stderr[-3000:]
    assert not kubeconfig.exists()
    assert proc.stdout == ""  # no banner


def test_a_failed_start_leaves_the_users_file_at_kubeconfig_out_alone(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config.yaml"
    kubeconfig.write_text("the user's own file\n")
    with listening("127.0.0.1", 0) as port:
        proc = subprocess.run(
            [sys.executable, "-m", "rayop", "up", "--kubeconfig-out", str(kubeconfig),
             "--metrics-addr", f"127.0.0.1:{port}", "--health-probe-bind-address", "0"],
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert kubeconfig.read_text() == "the user's own file\n"
    assert [p.name for p in tmp_path.iterdir()] == ["config.yaml"]  # no temporary file left
