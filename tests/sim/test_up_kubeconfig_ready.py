"""``rayop up --kubeconfig-out F``: F appears only when it is usable (issue 35).

A script that waits for F and applies the RayCluster, RayJob and RayService samples at once
succeeds: F is written (atomically) only after every CRD is Established and the operator's
caches synced. Two rounds here; tests/realray/test_up_kubeconfig_rounds.py runs twenty.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .up_process import wait_and_apply_round

FAST_ROUNDS = 2


@pytest.mark.parametrize("round_", range(FAST_ROUNDS))
def test_a_script_that_waits_for_the_kubeconfig_applies_all_three_samples(
    tmp_path: Path, round_: int
) -> None:
    del round_
    wait_and_apply_round(tmp_path)


def test_a_kubeconfig_that_cannot_be_written_stops_up_in_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    proc = subprocess.run(
        [sys.executable, "-m", "rayop", "up", "--kubeconfig-out", str(blocker / "config.yaml"),
         "--metrics-addr", "0", "--health-probe-bind-address", "0"],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.splitlines()[-1]
    assert last.startswith(f"rayop: --kubeconfig-out: cannot write {blocker / 'config.yaml'}: ")
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""  # no banner
