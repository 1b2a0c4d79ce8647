"""``--decision-events``: ``kubectl describe`` shows the account of a pass that ended waiting.

On the embedded plane (HTTPS: kubectl sends no token over plain HTTP) every watch event is held back a few seconds, so a RayCluster's passes run
before the cache shows the pods they created (and the status they wrote). With the flag on, the
real kubectl's ``describe`` of the cluster lists a Normal ``Waiting`` Event whose line says what
the pass waited for and when it looks again, folded into one Event however many passes waited;
with it off (the default) no such Event exists, only KubeRay's.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import yaml

from rayop.controllers.assembly.decision_events import REASON
from rayop.examples import sample_text
from rayop.kube.resources import EVENTS, PODS, RAY_CLUSTERS
from rayop.sim.apiserver.faults import Faults
from rayop.testing import PlaneUnderTest, eventually, open_control_plane, open_operator

pytestmark = pytest.mark.timeout(120)

KUBECTL = "/usr/bin/kubectl"
NS = "described"
WATCH_DELAY = 3.0
"""Seconds each watch event is held: longer than the RayCluster's 2 s requeue."""


async def _describe(plane: PlaneUnderTest, home: Path) -> str:
    """The real kubectl's ``describe`` of the cluster (a process: the plane runs in this loop)."""
    env = {**os.environ, "KUBECONFIG": str(plane.cp.kubeconfig_path), "HOME": str(home)}
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "describe", "raycluster", "raycluster-sample", "-n", NS,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


def _waiting_events(plane: PlaneUnderTest) -> list[dict[str, object]]:
    return [e for e in plane.objects(EVENTS, NS) if e.get("reason") == REASON]


async def _cluster_with_slow_watches(plane: PlaneUnderTest) -> None:
    await plane.namespace(NS)
    (cluster,) = [d for d in yaml.safe_load_all(sample_text("raycluster")) if d]
    plane.cp.faults.watch_delay = WATCH_DELAY
    await plane.create(RAY_CLUSTERS, cluster, NS)

    async def pods_created() -> bool:
        return len(plane.objects(PODS, NS)) >= 2

    await eventually(pods_created, timeout=30, what="the cluster's pods created")
    await asyncio.sleep(2 * WATCH_DELAY)  # the passes before the pods reach the cache


@pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")
async def test_describe_shows_the_wait_for_pods_not_yet_seen(tmp_path: Path) -> None:
    async with open_control_plane(faults=Faults(), tls=True) as plane:
        async with open_operator(plane, decision_events=True):
            await _cluster_with_slow_watches(plane)

            async def recorded() -> bool:
                return bool(_waiting_events(plane))

            await eventually(recorded, timeout=30, what="a Waiting event")
        plane.cp.faults.watch_delay = 0.0
        described = await _describe(plane, tmp_path)
        (event,) = _waiting_events(plane)  # repeats fold into one Event, whatever their line
    events = described.split("Events:", 1)[1]
    (line,) = [row for row in events.splitlines() if f" {REASON} " in row]
    assert line.split()[:2] == ["Normal", REASON], line
    assert "raycluster-controller" in line, line
    assert "waiting: " in line and "; next look: " in line, line
    assert "the create of pod raycluster-sample-" in line and "not yet in the cache" in line, line
    assert str(event["message"]).startswith("waiting: "), event  # stored as a core/v1 Event


@pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")
async def test_without_the_flag_no_waiting_event_exists(tmp_path: Path) -> None:
    async with open_control_plane(faults=Faults(), tls=True) as plane:
        async with open_operator(plane) as running:
            await _cluster_with_slow_watches(plane)
            waited = [
                a
                for a in running.manager.decisions.passes(NS, "raycluster-sample")
                if a.noted("wait")
            ]
            assert waited, "no pass waited: the check below would prove nothing"
        plane.cp.faults.watch_delay = 0.0
        described = await _describe(plane, tmp_path)
        assert not _waiting_events(plane)
    assert REASON not in described.split("Events:", 1)[1]
    assert "Created" in described  # KubeRay's Events are there
