"""The simulated service-account controller: every active namespace gets a ``default`` ServiceAccount."""

from __future__ import annotations

from rayop.apimachinery.objects import Obj
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.controller_base import StoreController, error_code, meta

DEFAULT_SERVICE_ACCOUNT = "default"


class ServiceAccountController(StoreController):
    """Creates the ``default`` ServiceAccount in each namespace (and again if it is deleted)."""

    name = "serviceaccounts"
    watched = frozenset({("", "namespaces"), ("", "serviceaccounts")})

    async def resync(self) -> None:
        namespaces = self.resource("", "v1", "namespaces")
        if namespaces is None:
            return
        items, _ = self.store.list(namespaces)
        for ns in items:
            await self.ensure(str(meta(ns).get("name")))

    async def handle(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        md = meta(obj)
        if info.plural == "namespaces" and event_type == "ADDED":
            await self.ensure(str(md.get("name")))
        elif (
            info.plural == "serviceaccounts"
            and event_type == "DELETED"
            and md.get("name") == DEFAULT_SERVICE_ACCOUNT
        ):
            await self.ensure(str(md.get("namespace")))

    async def ensure(self, namespace: str) -> None:
        """Creates ``default`` in ``namespace`` unless it exists or the namespace is terminating."""
        accounts = self.resource("", "v1", "serviceaccounts")
        namespaces = self.resource("", "v1", "namespaces")
        if accounts is None or namespaces is None:
            return
        ns = self.store.peek(namespaces, "", namespace)
        if ns is None or meta(ns).get("deletionTimestamp"):
            return
        if self.store.peek(accounts, namespace, DEFAULT_SERVICE_ACCOUNT) is not None:
            return
        body: Obj = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace},
        }
        try:
            await self.store.create(accounts, namespace, body)
        except Exception as exc:
            if error_code(exc) not in (403, 404, 409):
                raise
