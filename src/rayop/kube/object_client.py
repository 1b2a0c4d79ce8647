"""The verbs on one object that a reconciler writes through: :class:`ObjectClient`.

:class:`~rayop.kube.client.KubeClient` satisfies it, and so does the fake client of
:mod:`rayop.testing`, so a controller whose dependencies name this protocol runs on either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, Unpack

from rayop.kube.options import DeleteOptions
from rayop.kube.resource import Resource

__all__ = ["ObjectClient"]


class ObjectClient(Protocol):
    """Read, create, replace (whole or status) and delete one object; blocks on the API."""

    async def get(
        self, res: Resource, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Returns the object (raises NotFound)."""
        ...

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Creates the object and returns it as stored (raises AlreadyExists)."""
        ...

    async def update(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Replaces the object (raises Conflict on a stale resourceVersion)."""
        ...

    async def update_status(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Replaces the object's status (raises Conflict on a stale resourceVersion)."""
        ...

    async def delete(self, res: Resource, name: str, *, namespace: str | None = None,
                     **options: Unpack[DeleteOptions]) -> dict[str, Any]:
        """Deletes the object (raises NotFound)."""
        ...
