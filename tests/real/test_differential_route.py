"""Differential test: KubeRay v1.7.0 and rayop on a control plane that serves OpenShift's Route
API, on the same real control plane.

OpenShift's own Route CRD (``github.com/openshift/api`` at the version KubeRay v1.7.0 builds
with, fetched by ``scripts/openshift-route-crd``) is applied first, so both operators take the
cluster for OpenShift as KubeRay decides it (the ``route.openshift.io`` group is served; rayop's
:func:`~rayop.controllers.raycluster.route.is_openshift_cluster` must say so too). In each
operator's namespace two RayClusters with ``enableIngress`` (one with a name long enough to be
cut) get a Route instead of an Ingress. KubeRay runs first and is stopped, then rayop. Compared:
the Routes, the absence of Ingresses, and the route events. The CRD is deleted afterwards, so
later tests see a plain Kubernetes again.
"""

from __future__ import annotations

import asyncio
import secrets
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.route import ROUTES, is_openshift_cluster
from rayop.kube.client import KubeClient
from rayop.kube.errors import NotFound
from rayop.kube.resources import CRDS, EVENTS, INGRESSES
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

ROOT = Path(__file__).resolve().parents[2]
LONG_NAME = "a-rather-long-cluster-name-for-its-route"
Obj = dict[str, Any]


def route_crd() -> Obj:
    """Returns OpenShift's Route CRD, fetched (or reused) by ``scripts/openshift-route-crd``."""
    script = ROOT / "scripts" / "openshift-route-crd"
    subprocess.run([str(script)], check=True, timeout=300)
    printed = subprocess.run(
        [str(script), "--print-dir"], check=True, capture_output=True, text=True
    ).stdout
    directory = Path(printed.strip().split("=", 1)[1])
    return dict(yaml.safe_load((directory / "routes.crd.yaml").read_text()))


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
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-head",
                                "image": image,
                                "ports": [{"name": "dashboard", "containerPort": 8266}],
                            }
                        ]
                    }
                },
            },
        },
    }


@dataclass
class Outcome:
    """What one operator left in its namespace."""

    routes: dict[str, Obj]
    ingresses: list[str]
    events: list[tuple[str, str, str]]


def _normalize(route: Obj, ns: str) -> Obj:
    out = _common_metadata(route)
    return _replace_strings(out, ns, "<namespace>")  # type: ignore[no-any-return]


async def _run(client: KubeClient, ns: str) -> Outcome:
    for name in ("dash", LONG_NAME):
        await apply_raycluster(client, ingress_cluster(name), ns)

    async def routes() -> dict[str, Obj]:
        items = (await client.list(ROUTES, namespace=ns))["items"]
        return {r["metadata"]["name"].replace(ns, "<namespace>"): r for r in items}

    async def made() -> bool:
        return len(await routes()) == 2

    await eventually(made, timeout=60, what="two routes")
    await asyncio.sleep(3.0)  # a second route or an ingress would show by now
    events = (await client.list(EVENTS, namespace=ns))["items"]
    ingresses = (await client.list(INGRESSES, namespace=ns))["items"]
    return Outcome(
        {name: _normalize(r, ns) for name, r in (await routes()).items()},
        [i["metadata"]["name"] for i in ingresses],
        sorted(
            {
                (e.get("type", ""), e.get("reason", ""), e.get("note", "").replace(ns, "<ns>"))
                for e in events
                if "oute" in str(e.get("reason", "")) or "ngress" in str(e.get("reason", ""))
            }
        ),
    )


async def _delete_crd(client: KubeClient, name: str) -> None:
    try:
        await client.delete(CRDS, name)
    except NotFound:
        return

    async def gone() -> bool:
        try:
            await client.get(CRDS, name)
        except NotFound:
            return True
        return False

    await eventually(gone, timeout=60, what="route CRD deleted")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def outcomes(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Outcome, Outcome, bool]]:
    """Applies the Route CRD, runs KubeRay, then rayop; yields (kuberay, rayop, detected)."""
    token = secrets.token_hex(2)
    # Of equal length: the Route name is cut to 51 - len(namespace) characters.
    kuberay_ns, rayop_ns = f"kuberay-rt-{token}", f"rayopop-rt-{token}"
    log_path = tmp_path_factory.mktemp("kuberay-route") / "ray-operator.log"
    crd = route_crd()
    async with user_client(real_kubeconfig) as client:
        await client.create(CRDS, crd)
        try:

            async def served() -> bool:
                return await is_openshift_cluster(client)

            await eventually(served, timeout=60, what="route.openshift.io served")
            for ns in (kuberay_ns, rayop_ns):
                await create_namespace(client, ns)
            watch = f"--watch-namespace={kuberay_ns}"
            async with kuberay_running(kuberay_binary, real_kubeconfig, log_path, watch):
                kuberay = await _run(client, kuberay_ns)
            detected = await is_openshift_cluster(client)
            options = OperatorOptions(is_openshift=detected)
            async with rayop_operator(
                real_kubeconfig, watch_namespaces=[rayop_ns], options=options
            ):
                rayop = await _run(client, rayop_ns)
        finally:
            await _delete_crd(client, crd["metadata"]["name"])
    yield kuberay, rayop, detected


async def test_openshift_is_detected(outcomes: tuple[Outcome, Outcome, bool]) -> None:
    assert outcomes[2] is True


async def test_the_routes_are_kuberay_s(outcomes: tuple[Outcome, Outcome, bool]) -> None:
    kuberay, rayop, _ = outcomes
    assert "dash-head-route" in kuberay.routes, sorted(kuberay.routes)
    assert kuberay.ingresses == [] and rayop.ingresses == []
    assert set(rayop.routes) == set(kuberay.routes)
    lines = diff(kuberay.routes, rayop.routes)
    assert not lines, "\n".join(lines)


async def test_the_same_route_events(outcomes: tuple[Outcome, Outcome, bool]) -> None:
    kuberay, rayop, _ = outcomes
    assert ("Normal", "CreatedRoute", "Created route <ns>/dash-head-route") in kuberay.events
    assert rayop.events == kuberay.events
