"""A stand-in for a Gateway API implementation, for tests of NewClusterWithIncrementalUpgrade.

KubeRay (and rayop) move traffic between the clusters of an incremental upgrade only once a
Gateway implementation (Istio, Envoy Gateway, ...) reports the RayService's Gateway
``Accepted`` and ``Programmed`` and its HTTPRoute's parent ``Accepted`` and ``ResolvedRefs``.
A kwok cluster runs none, so :class:`GatewayProgrammer` writes those conditions through the
``/status`` subresources, as an implementation would, and nothing else. (The embedded plane
programs the Gateways of its classes ``rayop`` and ``istio`` itself:
``rayop.sim.controller_manager.gateways``.) :func:`install_gateway_api_crds` applies the Gateway API CRDs (``config/crd/standard`` of
``sigs.k8s.io/gateway-api``, which the caller fetched) and waits until they are served.

Usage::

    await install_gateway_api_crds(client, crd_documents)
    async with GatewayProgrammer(client, "demo"):
        ...  # create the RayService, watch its HTTPRoute's weights move
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists, ApiError, NotFound
from rayop.kube.resource import Resource
from rayop.kube.resources import CRDS
from rayop.testing.waiting import eventually

GATEWAYS = Resource("gateway.networking.k8s.io", "v1", "gateways", "Gateway")
HTTP_ROUTES = Resource("gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute")
CONTROLLER_NAME = "rayop.testing/gateway-stand-in"


async def install_gateway_api_crds(
    client: KubeClient, crds: Iterable[Mapping[str, Any]], *, timeout: float = 30.0
) -> None:
    """Creates the CRDs (keeping those that exist) and blocks until Gateways and HTTPRoutes are
    served.

    Raises:
        AssertionError: they were not served within ``timeout`` seconds.
    """
    for crd in crds:
        with contextlib.suppress(AlreadyExists):
            await client.create(CRDS, crd)

    async def served() -> bool:
        try:
            for resource in (GATEWAYS, HTTP_ROUTES):
                await client.list(resource, namespace="default", limit=1)
        except NotFound:
            return False
        return True

    await eventually(served, timeout=timeout, what="the Gateway API served")


def _true(*types: str) -> list[Obj]:
    return [
        {
            "type": t,
            "status": "True",
            "reason": t,
            "message": "set by the test kit's Gateway stand-in",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 1,
        }
        for t in types
    ]


def _ready(conditions: list[Obj], *types: str) -> bool:
    found = {c.get("type"): c.get("status") for c in conditions}
    return all(found.get(t) == "True" for t in types)


class GatewayProgrammer:
    """Marks the Gateways and HTTPRoutes of one namespace ready, every ``period`` seconds.

    Args:
        client: A client allowed to update ``gateways/status`` and ``httproutes/status``.
        namespace: The namespace to watch over.
        period: Seconds between two looks.
    """

    def __init__(self, client: KubeClient, namespace: str, *, period: float = 0.2) -> None:
        self.client = client
        self.namespace = namespace
        self.period = period
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> GatewayProgrammer:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def program_once(self) -> None:
        """Sets the ready conditions on every Gateway and HTTPRoute that lacks them; a write
        that loses a race (409) is simply done again next time."""
        ns = self.namespace
        for gateway in (await self.client.list(GATEWAYS, namespace=ns)).get("items") or []:
            conditions = (gateway.get("status") or {}).get("conditions") or []
            if _ready(conditions, "Accepted", "Programmed"):
                continue
            gateway["status"] = {"conditions": _true("Accepted", "Programmed")}
            with contextlib.suppress(ApiError):
                await self.client.update_status(GATEWAYS, gateway)
        for route in (await self.client.list(HTTP_ROUTES, namespace=ns)).get("items") or []:
            if (route.get("status") or {}).get("parents"):
                continue
            parents = [
                {
                    "parentRef": {"name": ref.get("name"), "namespace": ref.get("namespace", ns)},
                    "controllerName": CONTROLLER_NAME,
                    "conditions": _true("Accepted", "ResolvedRefs"),
                }
                for ref in route["spec"].get("parentRefs") or []
            ]
            route["status"] = {"parents": parents}
            with contextlib.suppress(ApiError):
                await self.client.update_status(HTTP_ROUTES, route)

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(ApiError):
                await self.program_once()
            await asyncio.sleep(self.period)
