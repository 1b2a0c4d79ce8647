"""The README's "A real Ray job, end to end" section works as written (issue 35).

``./scripts/up --real-ray --kubeconfig-out ~/.kube/rayop.yaml`` is started from the checkout as
the user would (HOME a temporary directory, Ray from this tier's virtualenv through
``RAYOP_RAY_ENV``); like a user's script, the test waits for the kubeconfig file, then runs the
section's other commands with bash in the checkout, in order: the sample RayJob is applied,
``kubectl wait`` sees it reach SUCCEEDED and ``kubectl logs`` shows the entrypoint's output.
Ctrl-C then stops everything cleanly. Only if ``rayop up``'s own metrics and health ports are
taken on this machine are free ones appended (tests/test_readme.py does the same).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from ..test_readme import REPO, bash, section_commands, with_free_operator_ports
from .realray_support import stop

pytestmark = [pytest.mark.realray, pytest.mark.timeout(600)]


def test_the_real_ray_section_runs_as_written_and_the_job_succeeds(
    tmp_path: Path, ray_env: str
) -> None:
    up, *steps = section_commands("A real Ray job, end to end")
    assert up == "./scripts/up --real-ray --kubeconfig-out ~/.kube/rayop.yaml"
    assert any("kubectl wait rayjob/rayjob-sample" in s and "SUCCEEDED" in s for s in steps)
    home = tmp_path / "home"
    home.mkdir()
    kubeconfig = home / ".kube" / "rayop.yaml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1", RAYOP_RAY_ENV=ray_env)
    log_path = tmp_path / "up.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            ["bash", "-c", f"exec {with_free_operator_ports(up)}"],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while not kubeconfig.exists():
            assert proc.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "no kubeconfig from ./scripts/up"
            time.sleep(0.05)
        exports = "\n".join(c for c in steps if c.startswith("export "))
        outputs = {}
        for command in steps:
            if not command.startswith("export "):
                outputs[command] = bash(command, cwd=REPO, env=env, prelude=exports, timeout=360)
        [wait] = [out for command, out in outputs.items() if command.startswith("kubectl wait")]
        assert "rayjob.ray.io/rayjob-sample condition met" in wait, wait
        [logs] = [out for command, out in outputs.items() if command.startswith("kubectl logs")]
        assert "primes below 200000: 17984" in logs, logs
    finally:
        code = stop(proc, timeout=90)  # Ctrl-C
    assert code == 0, log_path.read_text()[-3000:]
