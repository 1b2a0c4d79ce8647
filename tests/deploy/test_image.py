"""The Dockerfile: multi-stage, slim, non-root, entrypoint `rayop run` that works from an install.

No Docker engine runs here, so the Dockerfile is parsed and its entrypoint is run from the
plain install in this virtualenv, with the exact arguments the Deployment gives it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from .manifests import DEPLOY, REPO, find, load_yaml, operator_container

KUBERAY_FLAGS = [
    "--kubeconfig",
    "--metrics-addr",
    "--health-probe-bind-address",
    "--enable-leader-election",
    "--leader-election-namespace",
    "--reconcile-concurrency",
    "--watch-namespace",
    "--qps",
    "--burst",
    "--use-priority-queue",
    "--feature-gates",
    "--log-level",
    "--log-format",
]


def instructions() -> list[tuple[str, str]]:
    """Returns the Dockerfile's (INSTRUCTION, arguments), continuation lines joined."""
    joined = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    result = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def entrypoint_script() -> Path:
    return Path(sys.executable).parent / "rayop"


def run_entrypoint(*args: str) -> subprocess.CompletedProcess[str]:
    """Runs the image's ENTRYPOINT, resolved in this virtualenv, with ``args``."""
    (program, *fixed) = json.loads(dict(instructions())["ENTRYPOINT"])
    env = {**os.environ, "COLUMNS": "200", "KUBECONFIG": "/nonexistent/kubeconfig"}
    return subprocess.run(
        [str(Path(sys.executable).parent / program), *fixed, *args],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


def test_build_is_multi_stage_from_slim_python() -> None:
    stages = [args for keyword, args in instructions() if keyword == "FROM"]
    assert len(stages) >= 2
    assert all(stage.startswith("python:3.11-slim") for stage in stages)
    assert any("pip wheel" in args for keyword, args in instructions() if keyword == "RUN")
    final = instructions()[[k for k, _ in instructions()].index("FROM", 1) :]
    assert any("from=build" in args for keyword, args in final if keyword in {"RUN", "COPY"})


def test_runtime_stage_runs_as_a_non_root_user() -> None:
    steps = instructions()
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    users = [args for keyword, args in steps[last_from:] if keyword == "USER"]
    assert users, "the runtime stage sets no USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) == 65532  # numeric, so runAsNonRoot can verify it
    pod = find(load_yaml(DEPLOY / "manager" / "deployment.yaml"), "Deployment")
    assert pod["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == int(uid)


def test_entrypoint_is_the_rayop_console_script_running_the_operator() -> None:
    assert json.loads(dict(instructions())["ENTRYPOINT"]) == ["rayop", "run"]
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert "rayop" in scripts
    assert entrypoint_script().exists()


def test_dockerignore_keeps_the_build_context_to_the_package_sources() -> None:
    lines = (REPO / ".dockerignore").read_text().split()
    assert "**" in lines
    assert {"!pyproject.toml", "!README.md", "!src/"} <= set(lines)
    copied = [args.split()[0] for keyword, args in instructions() if keyword == "COPY"]
    assert copied and all(src in {"pyproject.toml", "src"} for src in copied)


def test_entrypoint_help_lists_every_kuberay_flag() -> None:
    proc = run_entrypoint("--help")
    assert proc.returncode == 0, proc.stderr
    for flag in KUBERAY_FLAGS:
        assert flag in proc.stdout, flag


def test_entrypoint_accepts_the_deployment_arguments() -> None:
    """The Deployment's args parse; with no reachable cluster the operator exits with status 2."""
    args = operator_container(
        find(load_yaml(DEPLOY / "manager" / "deployment.yaml"), "Deployment")
    )["args"]
    proc = run_entrypoint(*args, "--metrics-addr=0", "--health-probe-bind-address=0")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "kubeconfig" in proc.stderr and "No such option" not in proc.stderr
