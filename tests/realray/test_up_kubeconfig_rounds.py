"""Twenty starts of ``rayop up --kubeconfig-out F``: each time, a script that waits for F and at
once applies the RayCluster, RayJob and RayService samples succeeds (issue 35's acceptance).

The pods are simulated (no Ray needed); the rounds live in this tier because twenty starts take
one to three minutes on two cores. tests/sim/test_up_kubeconfig_ready.py runs two in the fast
tier.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..sim.up_process import wait_and_apply_round

ROUNDS = 20

pytestmark = [pytest.mark.realray, pytest.mark.timeout(900)]


def test_twenty_scripts_that_wait_for_the_kubeconfig_apply_all_three_samples(
    tmp_path: Path,
) -> None:
    seconds = [wait_and_apply_round(tmp_path / f"round-{n}") for n in range(ROUNDS)]
    print(f"\n{ROUNDS} rounds: {sum(seconds):.1f} s, the slowest {max(seconds):.1f} s")
