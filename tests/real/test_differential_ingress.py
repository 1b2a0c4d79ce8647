"""Differential test: KubeRay v1.7.0 and rayop repairing the head Ingress, on the same real
control plane.

In each operator's namespace a RayCluster with ``enableIngress`` gets its
``<cluster>-head-ingress``; the test then edits it by hand (a label added, an annotation changed,
the path changed, an ``ingressClassName`` set that the cluster does not ask for) and touches the
RayCluster's labels so the operator looks again (KubeRay does not watch Ingresses). A second
cluster finds a user's Ingress of its name already there. KubeRay runs first and is stopped,
then rayop. Compared: the repaired Ingress, the untouched user Ingress, and the ingress events
(but an update that lost a race with the test's own edit, which either operator may hit).
"""

from __future__ import annotations

import asyncio
import copy
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rayop.kube.client import KubeClient
from rayop.kube.errors import NotFound
from rayop.kube.resources import EVENTS, INGRESSES, RAY_CLUSTERS
from rayop.testing import eventually

from .differential import _common_metadata, _replace_strings, diff
from .real_support import (
    apply_raycluster,
    create_namespace,
    kuberay_running,
    rayop_operator,
    user_client,
)

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(240, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

KUBERAY_VERSION = "v1.7.0"
Obj = dict[str, Any]


def ingress_cluster(name: str) -> Obj:
    """Returns a small RayCluster with ``enableIngress`` and an annotation KubeRay copies."""
    image = "rayproject/ray:2.52.0"
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "annotations": {"example.com/team": "ml"}},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {
                "enableIngress": True,
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-head", "image": image}]}},
            },
        },
    }


USER_INGRESS: Obj = {
    "metadata": {"name": "theirs-head-ingress", "labels": {"owner": "me"}},
    "spec": {
        "rules": [
            {
                "http": {
                    "paths": [
                        {
                            "path": "/mine",
                            "pathType": "Exact",
                            "backend": {"service": {"name": "mine", "port": {"number": 80}}},
                        }
                    ]
                }
            }
        ]
    },
}


def normalize_ingress(ingress: Obj) -> Obj:
    """Returns an Ingress without what differs by nature (uids, versions, namespace)."""
    out = _common_metadata(ingress)
    return _replace_strings(out, ingress["metadata"]["namespace"], "<namespace>")  # type: ignore[no-any-return]


@dataclass
class Outcome:
    """What one operator left in its namespace."""

    repaired: Obj
    user: Obj
    events: list[tuple[str, str, str]]


async def _ingress(client: KubeClient, ns: str, name: str) -> Obj | None:
    try:
        return await client.get(INGRESSES, name, namespace=ns)
    except NotFound:
        return None


async def _run(client: KubeClient, ns: str) -> Outcome:
    await client.create(INGRESSES, copy.deepcopy(USER_INGRESS), namespace=ns)
    await apply_raycluster(client, ingress_cluster("drift"), ns)
    await apply_raycluster(client, ingress_cluster("theirs"), ns)

    async def created() -> bool:
        return await _ingress(client, ns, "drift-head-ingress") is not None

    await eventually(created, timeout=60, what="head ingress created")
    live = await _ingress(client, ns, "drift-head-ingress") or {}
    live["metadata"]["labels"]["by-hand"] = "x"
    live["metadata"]["annotations"] = {"example.com/team": "changed", "by-hand": "y"}
    live["spec"]["ingressClassName"] = "other"
    live["spec"]["rules"][0]["http"]["paths"][0]["path"] = "/drift"
    await client.update(INGRESSES, live)
    touch = {"metadata": {"labels": {"touched": "1"}}}
    await client.patch(RAY_CLUSTERS, "drift", touch, namespace=ns)

    async def repaired() -> bool:
        ingress = await _ingress(client, ns, "drift-head-ingress") or {}
        return "by-hand" not in (ingress.get("metadata", {}).get("labels") or {})

    await eventually(repaired, timeout=60, what="ingress drift repaired")
    await asyncio.sleep(2.0)  # late writes and events
    events = (await client.list(EVENTS, namespace=ns))["items"]
    return Outcome(
        normalize_ingress(await _ingress(client, ns, "drift-head-ingress") or {}),
        normalize_ingress(await _ingress(client, ns, "theirs-head-ingress") or {}),
        sorted(
            {
                (e.get("type", ""), e.get("reason", ""), e.get("note", "").replace(ns, "<ns>"))
                for e in events
                if "Ingress" in str(e.get("reason", ""))
                and "the object has been modified" not in str(e.get("note", ""))  # a race
            }
        ),
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def outcomes(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Outcome, Outcome]]:
    """Runs KubeRay, then rayop; yields (kuberay, rayop)."""
    token = secrets.token_hex(2)
    kuberay_ns, rayop_ns = f"kuberay-ing-{token}", f"rayop-ing-{token}"
    log_path = tmp_path_factory.mktemp("kuberay-ingress") / "ray-operator.log"
    async with user_client(real_kubeconfig) as client:
        for ns in (kuberay_ns, rayop_ns):
            await create_namespace(client, ns)
        watch = f"--watch-namespace={kuberay_ns}"
        async with kuberay_running(kuberay_binary, real_kubeconfig, log_path, watch):
            kuberay = await _run(client, kuberay_ns)
        async with rayop_operator(real_kubeconfig, watch_namespaces=[rayop_ns]):
            rayop = await _run(client, rayop_ns)
    yield kuberay, rayop


async def test_the_repaired_ingress_is_kuberay_s(outcomes: tuple[Outcome, Outcome]) -> None:
    kuberay, rayop = outcomes
    assert kuberay.repaired["spec"]["ingressClassName"] == "other"  # kept: none asked for
    assert kuberay.repaired["metadata"]["annotations"] == {"example.com/team": "ml"}
    lines = diff(kuberay.repaired, rayop.repaired)
    assert not lines, "\n".join(lines)


async def test_a_user_ingress_is_left_as_it_is(outcomes: tuple[Outcome, Outcome]) -> None:
    kuberay, rayop = outcomes
    assert kuberay.user["metadata"]["labels"] == {"owner": "me"}
    lines = diff(kuberay.user, rayop.user)
    assert not lines, "\n".join(lines)


async def test_the_same_ingress_events(outcomes: tuple[Outcome, Outcome]) -> None:
    kuberay, rayop = outcomes
    assert ("Normal", "UpdatedIngress", "Updated ingress <ns>/drift-head-ingress") in (
        kuberay.events
    )
    foreign = (
        "Warning",
        "FailedToCreateIngress",
        "Ingress <ns>/theirs-head-ingress already exists and is not owned by this RayCluster; "
        "not modifying it",
    )
    assert foreign in kuberay.events, kuberay.events
    assert rayop.events == kuberay.events
