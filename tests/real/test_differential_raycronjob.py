"""Differential test: RayCronJobs under KubeRay v1.7.0's binary and under rayop, side by side.

KubeRay runs with ``--feature-gates=RayCronJob=true`` watching one namespace, rayop's RayCronJob
controller watches another; the same RayCronJobs go into both at the same moment: KubeRay's two
samples (from its source archive: every minute, and 21:45 in Asia/Taipei), one every minute in
America/New_York (its RayJob template suspended, so no cluster is made), one suspended, one
whose schedule does not parse. After two ticks both namespaces must hold RayJobs with the same names,
labels, annotations and owner references (the owner's uid aside), the same
``status.lastScheduleTime``, and the same events (the namespace in notes aside).
"""

from __future__ import annotations

import asyncio
import copy
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resource import Resource
from rayop.kube.resources import EVENTS, RAY_JOBS
from rayop.testing import Kind, open_operator
from tests.kuberay_compat import source_sample

from .real_support import create_namespace, kuberay_running, user_client

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(360, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

Obj = dict[str, Any]
RAY_CRON_JOBS = Resource("ray.io", "v1", "raycronjobs", "RayCronJob")
CRON_ONLY: tuple[Kind, ...] = ("RayCronJob",)
CONTAINERS = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}
TEMPLATE: Obj = {
    "entrypoint": "python -c 'print(1)'",
    "shutdownAfterJobFinishes": True,
    "suspend": True,
    "rayClusterSpec": {
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {}, "template": CONTAINERS},
    },
}


def _cron(name: str, schedule: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": copy.deepcopy(TEMPLATE), **spec},
    }


def _sample(name: str) -> Obj:
    (cron,) = [d for d in source_sample(name) if d["kind"] == "RayCronJob"]
    return dict(cron)


def _crons() -> tuple[Obj, ...]:
    """KubeRay's two RayCronJob samples and three of the test's own."""
    return (
        _sample("ray-cronjob.sample.yaml"),
        _sample("ray-cronjob-timezone.sample.yaml"),
        _cron("minutely", "* * * * *", timeZone="America/New_York"),
        _cron("paused", "* * * * *", suspend=True),
        _cron("broken", "*/0 * * * *"),
    )


async def _apply(client: KubeClient, namespace: str, crons: tuple[Obj, ...]) -> None:
    for cron in crons:
        await client.create(RAY_CRON_JOBS, copy.deepcopy(cron), namespace=namespace)


async def _outcome(client: KubeClient, namespace: str) -> Obj:
    """What the namespace holds: the RayJobs, the RayCronJobs' status and the events."""
    crons = {
        c["metadata"]["name"]: c
        for c in (await client.list(RAY_CRON_JOBS, namespace=namespace))["items"]
    }
    jobs = []
    for job in (await client.list(RAY_JOBS, namespace=namespace))["items"]:
        meta = job["metadata"]
        owners = [
            {**ref, "uid": "same" if ref["uid"] == crons[ref["name"]]["metadata"]["uid"] else ""}
            for ref in meta.get("ownerReferences") or []
        ]
        jobs.append((meta["name"], meta.get("labels"), meta.get("annotations"), owners))
    events = {
        (
            e.get("type"),
            e.get("reason"),
            e.get("action"),
            str(e.get("note", "")).replace(namespace, "<ns>"),
            (e.get("regarding") or {}).get("name"),
        )
        for e in (await client.list(EVENTS, namespace=namespace))["items"]
        if (e.get("regarding") or {}).get("kind") == "RayCronJob"
    }
    return {
        "rayjobs": sorted(jobs, key=lambda j: str(j[0])),
        "lastScheduleTime": {
            name: (c.get("status") or {}).get("lastScheduleTime") for name, c in crons.items()
        },
        "events": sorted(events, key=str),
    }


async def _wait_for_ticks(client: KubeClient, namespaces: tuple[str, ...], count: int) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 200
    while loop.time() < deadline:
        sizes = [len((await client.list(RAY_JOBS, namespace=ns))["items"]) for ns in namespaces]
        if min(sizes) >= count:
            await asyncio.sleep(3)  # let both write the status of the last tick
            return
        await asyncio.sleep(1)
    raise AssertionError(f"fewer than {count} RayJobs in {namespaces} after 200 s")


async def _away_from_a_minute_boundary() -> None:
    """Waits until a minute is at most 40 s old, so both sets are created in the same minute."""
    second = datetime.now(UTC).second
    if second > 40:
        await asyncio.sleep(61 - second)


async def test_the_same_rayjobs_status_and_events_as_kuberay(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path: Path
) -> None:
    crons = _crons()
    token = secrets.token_hex(2)
    kuberay_ns, rayop_ns = f"ck-{token}", f"cr-{token}"
    async with user_client(real_kubeconfig) as client:
        for ns in (kuberay_ns, rayop_ns):
            await create_namespace(client, ns)
        config = await load_config(kubeconfig=real_kubeconfig)
        async with (
            kuberay_running(
                kuberay_binary,
                real_kubeconfig,
                tmp_path / "ray-operator.log",
                f"--watch-namespace={kuberay_ns}",
                "--feature-gates=RayCronJob=true",
            ),
            open_operator(
                config,
                watch_namespaces=[rayop_ns],
                controllers=CRON_ONLY,
                feature_gates={"RayCronJob": True},
                ready_timeout=60,
            ),
        ):
            await _away_from_a_minute_boundary()
            await asyncio.gather(_apply(client, kuberay_ns, crons), _apply(client, rayop_ns, crons))
            await _wait_for_ticks(client, (kuberay_ns, rayop_ns), 4)  # two ticks of two
            kuberay = await _outcome(client, kuberay_ns)
            rayop = await _outcome(client, rayop_ns)
    assert len(kuberay["rayjobs"]) >= 4, kuberay
    assert len(rayop["rayjobs"]) >= 4, rayop
    names = [str(name) for name, *_ in kuberay["rayjobs"]]
    assert any(n.startswith("minutely-") for n in names), kuberay
    assert any(n.startswith("raycronjob-sample-") for n in names), kuberay
    assert not any(n.startswith("raycronjob-timezone-sample-") for n in names), kuberay
    assert kuberay["lastScheduleTime"]["paused"] is None
    assert kuberay["lastScheduleTime"]["broken"] is None
    assert any(e[1] == "InvalidRayCronJobSpec" for e in kuberay["events"]), kuberay
    assert any(e[1] == "SuspendedRayCronJob" for e in kuberay["events"]), kuberay
    # The two may be one tick apart at the moment of reading: compare the ticks both have made.
    theirs = {str(job[0]): job for job in kuberay["rayjobs"]}
    ours = {str(job[0]): job for job in rayop["rayjobs"]}
    both = theirs.keys() & ours.keys()
    assert len(both) >= 4, (sorted(theirs), sorted(ours))
    assert theirs.keys() <= ours.keys() or ours.keys() <= theirs.keys(), (theirs, ours)
    assert [ours[n] for n in sorted(both)] == [theirs[n] for n in sorted(both)]
    if theirs.keys() == ours.keys():
        assert rayop["lastScheduleTime"] == kuberay["lastScheduleTime"]
    assert rayop["events"] == kuberay["events"]
