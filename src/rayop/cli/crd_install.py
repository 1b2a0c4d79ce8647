"""``rayop up`` installs the ray.io CRDs and waits until every one is Established.

:func:`install_crds` creates each CRD (or replaces the one there) and returns only once the API
server reports every one ``Established``: from then on a client can create objects of each kind.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rayop.kube.client import KubeClient
    from rayop.kube.config import KubeConfig

__all__ = ["CrdsNotEstablished", "install_crds", "is_established"]

ESTABLISH_TIMEOUT = 30.0
"""Seconds :func:`install_crds` waits for the CRDs to be Established."""
_POLL = 0.05


class CrdsNotEstablished(RuntimeError):
    """Some CRDs were not Established within the timeout."""


def is_established(crd: Mapping[str, Any]) -> bool:
    """Tells whether a CRD's ``Established`` condition is ``True``."""
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


async def install_crds(config: KubeConfig, *, timeout: float = ESTABLISH_TIMEOUT) -> None:
    """Creates (or replaces) the ray.io CRDs; returns once every one is Established.

    Raises:
        CrdsNotEstablished: one is still not Established after ``timeout`` seconds.
    """
    from rayop.api.crds import build_crds
    from rayop.kube.client import KubeClient

    async with KubeClient(config, qps=-1) as client:
        names = []
        for crd in build_crds():
            await _create_or_replace(client, crd)
            names.append(str(crd["metadata"]["name"]))
        await _wait_established(client, names, timeout)


async def _create_or_replace(client: KubeClient, crd: dict[str, Any]) -> None:
    from rayop.kube.errors import AlreadyExists
    from rayop.kube.resources import CRDS

    try:
        await client.create(CRDS, crd)
    except AlreadyExists:
        current = await client.get(CRDS, crd["metadata"]["name"])
        version = current["metadata"]["resourceVersion"]
        await client.update(
            CRDS, {**crd, "metadata": {**crd["metadata"], "resourceVersion": version}}
        )


async def _wait_established(client: KubeClient, names: list[str], timeout: float) -> None:
    from rayop.kube.resources import CRDS

    deadline = time.monotonic() + timeout
    waiting = list(names)
    while True:
        waiting = [name for name in waiting if not is_established(await client.get(CRDS, name))]
        if not waiting:
            return
        if time.monotonic() >= deadline:
            raise CrdsNotEstablished(f"CRDs not Established after {timeout:g} s: {waiting}")
        await asyncio.sleep(_POLL)
