"""rayop's RayJob controller on a real kube-apiserver, with kwok pods and simulated Ray heads.

The operator reaches each head's dashboard through the real apiserver's services proxy; the
apiserver tunnels the connection to the pod IP through the test's pod network
(``pod_network.py``), which serves a simulated dashboard there and plays K8sJobMode submitter
pods (kwok does not run them). KubeRay samples that fit plain kwok nodes run to Complete; an
HTTPMode variant and a failing job are checked too.
"""

from __future__ import annotations

import asyncio
import copy
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio

from rayop.kube.errors import NotFound
from rayop.kube.resources import JOBS, RAY_CLUSTERS, RAY_JOBS

from .ray_support import World, load_docs, ray_world
from .real_support import apply_raycluster, load_sample

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(150, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

SAMPLE_FILES = [
    "ray-job.sample.yaml",
    "ray-job.custom-head-svc.yaml",
    "ray-job.resources.yaml",
    "ray-job.use-existing-raycluster.yaml",
]
FAILING_ENTRYPOINT = 'python -c "import sys; sys.exit(1)"'
Obj = dict[str, Any]


@dataclass
class Applied:
    world: World
    jobs: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Case -> (namespace, RayJob name)."""


def _variant(case: str) -> tuple[str, Obj]:
    """Returns (sample file, RayJob) for a case: a sample file name, or a variant of the
    basic sample (``http-mode``, ``failing``)."""
    if case in SAMPLE_FILES:
        return case, load_docs(case, "RayJob")[0]
    rayjob = copy.deepcopy(load_docs("ray-job.sample.yaml", "RayJob")[0])
    if case == "http-mode":
        rayjob["spec"]["submissionMode"] = "HTTPMode"
    else:
        rayjob["spec"].update(entrypoint=FAILING_ENTRYPOINT, backoffLimit=0)
    return "ray-job.sample.yaml", rayjob


CASES = [*SAMPLE_FILES, "http-mode", "failing"]


async def _apply(world: World, case: str) -> tuple[str, str]:
    file_name, rayjob = _variant(case)
    ns = await world.namespace(f"rayjob-{secrets.token_hex(3)}")
    await world.apply_config_maps(file_name, ns)
    selected = (rayjob["spec"].get("clusterSelector") or {}).get("ray.io/cluster")
    if selected:
        (existing,) = load_sample("ray-cluster.sample.yaml")
        existing["metadata"]["name"] = selected
        await apply_raycluster(world.client, existing, ns)
    rayjob["metadata"]["namespace"] = ns
    created = await world.client.create(RAY_JOBS, rayjob, namespace=ns)
    return ns, created["metadata"]["name"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def applied(real_kubeconfig: str) -> AsyncIterator[Applied]:
    """All cases applied at once to one operator; each test waits for its own."""
    async with ray_world(real_kubeconfig) as world:
        result = Applied(world)
        names = await asyncio.gather(*(_apply(world, c) for c in CASES))
        result.jobs = dict(zip(CASES, names, strict=True))
        yield result


async def _final_status(world: World, ns: str, name: str, *, timeout: float = 120.0) -> Obj:
    """Blocks until the RayJob is Complete or Failed; returns its status."""
    status: Obj = {}
    try:
        async with asyncio.timeout(timeout):
            while status.get("jobDeploymentStatus") not in ("Complete", "Failed"):
                await asyncio.sleep(0.2)
                rayjob = await world.client.get(RAY_JOBS, name, namespace=ns)
                status = rayjob.get("status") or {}
    except TimeoutError:
        pytest.fail(f"RayJob {ns}/{name} did not finish in {timeout} s: {status}")
    return status


@pytest.mark.parametrize("case", [*SAMPLE_FILES, "http-mode"])
async def test_rayjob_completes(applied: Applied, case: str) -> None:
    world = applied.world
    ns, name = applied.jobs[case]
    status = await _final_status(world, ns, name)
    assert status["jobDeploymentStatus"] == "Complete", status
    assert status["jobStatus"] == "SUCCEEDED"
    assert status["succeeded"] == 1 and status["failed"] == 0
    assert world.submissions(ns) == [status["jobId"]], "submitted exactly once"
    rayjob = await world.client.get(RAY_JOBS, name, namespace=ns)
    mode = rayjob["spec"].get("submissionMode") or "K8sJobMode"
    if mode == "K8sJobMode":
        job = await world.client.get(JOBS, name, namespace=ns)
        conditions = {c["type"]: c["status"] for c in job["status"].get("conditions") or []}
        assert conditions.get("Complete") == "True", job["status"]
    else:
        try:
            await world.client.get(JOBS, name, namespace=ns)
            pytest.fail("HTTPMode created a submitter Job")
        except NotFound:
            pass
    selected = (rayjob["spec"].get("clusterSelector") or {}).get("ray.io/cluster")
    assert status["rayClusterName"] == (selected or status["rayClusterName"])
    if selected or not rayjob["spec"].get("shutdownAfterJobFinishes"):
        cluster = await world.client.get(RAY_CLUSTERS, status["rayClusterName"], namespace=ns)
        assert not cluster["metadata"].get("deletionTimestamp")


async def test_failing_job_fails(applied: Applied) -> None:
    world = applied.world
    ns, name = applied.jobs["failing"]
    status = await _final_status(world, ns, name)
    assert status["jobDeploymentStatus"] == "Failed", status
    assert status["jobStatus"] == "FAILED"
    assert status["failed"] == 1
    assert world.submissions(ns) == [status["jobId"]]
