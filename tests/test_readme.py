"""The README quick start works as written: every command in it is run here.

``./scripts/up ...`` is started as the user would (from the checkout), the test waits for its
banner, then runs the "second terminal" commands with bash in the checkout (the RayCluster comes
from ``rayop samples``), re-running ``kubectl get rayclusters`` until the cluster shows ready,
and finally sends SIGINT (Ctrl-C) and checks a clean exit. HOME is a temporary directory, so ``~/.kube/rayop.yaml`` lands there.

``./scripts/test`` is not run: it is the command that runs this very test (pytest over the
whole suite, after ruff and mypy over the whole tree, minutes of work), so running it here would
recurse. Instead the test checks that it exists, is executable, is valid bash, and runs each
step the README promises (ruff, mypy --strict, import-linter, pytest) with tools that exist.

If 127.0.0.1:28080 or 127.0.0.1:28082 (``rayop up``'s metrics and health defaults) are taken on
this machine (another ``rayop up`` runs), free ports are appended to the ``./scripts/up`` command;
otherwise it runs verbatim. tests/realray/test_readme_real_ray.py runs the "A real Ray job" section.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from rayop.cli.operator_flags import LOCAL_DEFAULTS

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def section_commands(heading: str) -> list[str]:
    """Returns the indented command lines of the README section ``## heading...``, in order."""
    text = (REPO / "README.md").read_text()
    section = re.search(rf"^## {re.escape(heading)}.*?$(.*?)^## ", text, re.S | re.M)
    assert section is not None, f"README has no {heading} section"
    return [line[4:] for line in section.group(1).splitlines() if line.startswith("    ")]


def quick_start_commands() -> list[str]:
    """Returns the indented command lines of the README's "Quick start" section, in order."""
    return section_commands("Quick start")


def port_free(port: int, host: str = "0.0.0.0") -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def with_free_operator_ports(up: str) -> str:
    """Returns ``up`` (a ``./scripts/up`` command) with free metrics and health ports appended
    when ``rayop up``'s defaults are taken on this machine, else unchanged."""
    defaults = (LOCAL_DEFAULTS.metrics_addr, LOCAL_DEFAULTS.health_probe_bind_address)
    if all(port_free(int(a.rpartition(":")[2]), "127.0.0.1") for a in defaults):
        return up
    return (
        f"{up} --metrics-addr=127.0.0.1:{free_port()}"
        f" --health-probe-bind-address=127.0.0.1:{free_port()}"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bash(
    command: str, *, cwd: Path, env: dict[str, str], prelude: str = "", timeout: float = 60
) -> str:
    proc = subprocess.run(
        ["bash", "-c", f"set -e\n{prelude}\n{command}"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert proc.returncode == 0, f"{command}: {proc.stdout}{proc.stderr}"
    return proc.stdout


def test_quick_start_lists_the_two_commands_and_the_kubectl_steps() -> None:
    commands = quick_start_commands()
    assert commands[0].startswith("./scripts/up")
    assert commands[-1] == "./scripts/test"
    assert ".venv/bin/rayop samples raycluster | kubectl apply -f -" in commands
    assert "kubectl get rayclusters" in commands


def test_every_quick_start_command_runs(tmp_path: Path) -> None:
    commands = quick_start_commands()
    up, user_steps = commands[0], [c for c in commands[1:] if c != "./scripts/test"]
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    work = REPO  # the second terminal runs in the checkout (.venv/bin/rayop samples ...)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1")
    up = with_free_operator_ports(up)
    log = (tmp_path / "up.log").open("w+")
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {up}"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,  # signalled as a group: nothing it started (bootstrap) outlives it
    )
    try:
        deadline = time.monotonic() + 90
        while "rayop is up" not in Path(log.name).read_text():
            assert proc.poll() is None, Path(log.name).read_text()
            assert time.monotonic() < deadline, "no banner from ./scripts/up"
            time.sleep(0.1)
        exports = "\n".join(c for c in user_steps if c.startswith("export "))
        for command in user_steps:
            if command.startswith("export "):
                continue
            out = bash(command, cwd=work, env=env, prelude=exports)
            if command == "kubectl get rayclusters":
                deadline = time.monotonic() + 60
                while not re.search(r"raycluster-sample\s.*\bready\b", out):
                    assert time.monotonic() < deadline, f"never ready:\n{out}"
                    time.sleep(0.5)
                    out = bash(command, cwd=work, env=env, prelude=exports)
        pods = bash("kubectl get pods -o name", cwd=work, env=env, prelude=exports)
        assert pods.count("pod/") == 2, pods  # the head and one worker
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        log.close()
    assert code == 0, Path(log.name).read_text()[-3000:]


def test_scripts_test_exists_and_runs_the_promised_steps() -> None:
    script = REPO / "scripts" / "test"
    assert os.access(script, os.X_OK)
    assert subprocess.run(["bash", "-n", str(script)], timeout=10).returncode == 0
    body = script.read_text()
    assert body.index("scripts/bootstrap") < body.index("ruff check")  # installs .venv first
    for tool in ("ruff check", "mypy", "lint-imports", "pytest"):
        assert tool in body, tool
        assert (REPO / ".venv" / "bin" / tool.split()[0]).exists(), tool
