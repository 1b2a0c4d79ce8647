"""``rayop up --kubeconfig-out F``: F appears only when it is usable (issue 35).

A script that waits for F and applies the RayCluster, RayJob and RayService samples at once
succeeds: F is written (atomically) only after every CRD is Established and the operator's
caches synced. Two rounds here; tests/realray/test_up_kubeconfig_rounds.py runs twenty.
"""

from __future__ import annotations

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
