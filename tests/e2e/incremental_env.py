"""Support for the incremental-upgrade tests: the Gateway API CRDs, KubeRay's sample, and a
stand-in for a Gateway implementation.

* :func:`gateway_api_crds` returns the standard-channel CRDs ``scripts/gateway-api-crds``
  fetched (it runs the script when they are not cached; a fast-tier test skips when it fails);
* :func:`incremental_sample` reads ``config/samples/ray-service.incremental-upgrade.yaml`` from
  KubeRay v1.7.0's source archive (``../shared/compat``), never from a copy in the repository;
* :class:`GatewayProgrammer` plays the Gateway implementation (Istio in the sample) that a real
  cluster would run: it marks every Gateway ``Accepted`` and ``Programmed`` and every HTTPRoute's
  parent ``Accepted`` and ``ResolvedRefs`` through their ``/status`` subresources, which is all
  KubeRay (and rayop) wait for before moving traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import yaml

from rayop.kube.client import KubeClient
from rayop.kube.errors import ApiError
from rayop.kube.resource import Resource

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
KUBERAY_SOURCE = ROOT.parent / "shared/compat/kuberay-v1.7.0/ray-operator-src.tar.gz"
SAMPLE_MEMBER = "ray-operator/config/samples/ray-service.incremental-upgrade.yaml"
GATEWAYS = Resource("gateway.networking.k8s.io", "v1", "gateways", "Gateway")
HTTP_ROUTES = Resource("gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute")


class CrdsUnavailable(RuntimeError):
    """The Gateway API CRDs could not be fetched."""


def gateway_api_crds() -> list[Obj]:
    """Returns the Gateway API CRDs, fetching them with ``scripts/gateway-api-crds`` if needed.

    Raises:
        CrdsUnavailable: the script failed (its output is the message).
    """
    script = ROOT / "scripts/gateway-api-crds"
    done = subprocess.run([script], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise CrdsUnavailable(done.stderr.strip() or done.stdout.strip())
    printed = subprocess.run(
        [script, "--print-dir"], capture_output=True, text=True, check=True
    ).stdout
    directory = Path(printed.strip().split("=", 1)[1]) / "crds"
    crds: list[Obj] = []
    for path in sorted(directory.glob("*.yaml")):
        crds.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return crds


def incremental_sample() -> Obj:
    """Returns KubeRay v1.7.0's incremental-upgrade RayService sample."""
    with tarfile.open(KUBERAY_SOURCE) as archive:
        member = archive.extractfile(SAMPLE_MEMBER)
        assert member is not None, SAMPLE_MEMBER
        docs = [d for d in yaml.safe_load_all(member.read()) if d]
    (service,) = [d for d in docs if d.get("kind") == "RayService"]
    return dict(service)


def _true(*types: str) -> list[Obj]:
    return [
        {
            "type": t,
            "status": "True",
            "reason": t,
            "message": "programmed by the test's stand-in",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 1,
        }
        for t in types
    ]


class GatewayProgrammer:
    """Marks Gateways and HTTPRoutes of one namespace ready, every ``period`` seconds."""

    def __init__(self, client: KubeClient, namespace: str, *, period: float = 0.2) -> None:
        self.client = client
        self.namespace = namespace
        self.period = period
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> GatewayProgrammer:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def program_once(self) -> None:
        """Sets the ready conditions on every Gateway and HTTPRoute that lacks them."""
        ns = self.namespace
        for gateway in (await self.client.list(GATEWAYS, namespace=ns)).get("items") or []:
            if not (gateway.get("status") or {}).get("conditions") or not _all_true(
                gateway["status"]["conditions"]
            ):
                gateway["status"] = {"conditions": _true("Accepted", "Programmed")}
                with contextlib.suppress(ApiError):
                    await self.client.update_status(GATEWAYS, gateway)
        for route in (await self.client.list(HTTP_ROUTES, namespace=ns)).get("items") or []:
            if (route.get("status") or {}).get("parents"):
                continue
            parent = (route["spec"].get("parentRefs") or [{}])[0]
            route["status"] = {
                "parents": [
                    {
                        "parentRef": {"name": parent.get("name"), "namespace": ns},
                        "controllerName": "example.com/gateway-stand-in",
                        "conditions": _true("Accepted", "ResolvedRefs"),
                    }
                ]
            }
            with contextlib.suppress(ApiError):
                await self.client.update_status(HTTP_ROUTES, route)

    async def _run(self) -> None:
        while True:
            await self.program_once()
            await asyncio.sleep(self.period)


def _all_true(conditions: list[Obj]) -> bool:
    found = {c.get("type"): c.get("status") for c in conditions}
    return found.get("Accepted") == "True" and found.get("Programmed") == "True"
