"""An API client that records every write the operator makes, and may withhold them.

:class:`RecordingClient` is a :class:`~rayop.kube.client.KubeClient` whose reads go to the API
server as usual and whose writes (create, update, status update, patch, delete, delete of a
collection, and any raw request other than GET, such as a job submitted to a Ray dashboard
through the services proxy) are each kept as a :class:`Write`, with the controller and the
object whose reconcile made it (:data:`rayop.runtime.reconcile.current_controller` and
``current_request``). With ``send=True`` (``rayop render`` on its own embedded plane) the writes
also go to the server; with ``send=False`` (``rayop preview`` against a live cluster) nothing is
written: each write is answered as the server would answer a successful one, from the request
alone (a patch with the object as it is, unpatched). An ``overlay`` of objects (``rayop preview
-f``: the live objects as a file would change them) stands in for the server's copies in every
GET and LIST (a watch still streams the server's changes).
"""

from __future__ import annotations

import builtins
import copy
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Unpack

from rayop.kube.client import KubeClient, PatchType
from rayop.kube.clock import MONOTONIC, Clock
from rayop.kube.options import DeleteOptions, ListOptions, PropagationPolicy, Selection
from rayop.kube.resource import Resource
from rayop.runtime.reconcile import Request, current_controller, current_request

__all__ = ["PREVIEW_UID", "Overlay", "RecordingClient", "Write", "overlay_key"]

Obj = dict[str, Any]

PREVIEW_UID = "00000000-0000-0000-0000-000000000000"
"""The uid a withheld create answers with."""

Overlay = Mapping[tuple[str, str, str], Obj]
"""Objects standing in for the server's, by :func:`overlay_key`."""


def overlay_key(kind: str, namespace: str, name: str) -> tuple[str, str, str]:
    """The key of an object in an :data:`Overlay`."""
    return (kind, namespace, name)


@dataclass(frozen=True, slots=True)
class Write:
    """One write the operator made (or would have made).

    Attributes:
        verb: ``create``, ``update``, ``patch``, ``delete``, ``deletecollection``, or the HTTP
            method of a raw request.
        resource: The resource written; None for a raw request.
        namespace: The object's namespace ("" for a cluster-scoped one or a raw request).
        name: The object's name ("" for a create by ``generateName`` or a raw request).
        subresource: ``status`` for a status update, or a patch's subresource; else None.
        body: The request body (a copy): the object, the patch, or the raw request's JSON.
        path: The raw request's path ("" for a verb).
        controller: The controller whose reconcile made it (None outside a reconcile).
        request: The object that reconcile was for (None outside a reconcile).
        patch_type: A patch's type.
        at: ``time.monotonic()`` when it was made.
    """

    verb: str
    resource: Resource | None
    namespace: str
    name: str
    subresource: str | None
    body: Any
    path: str = ""
    controller: str | None = None
    request: Request | None = None
    patch_type: PatchType | None = None
    at: float = 0.0

    @property
    def kind(self) -> str:
        """The kind written ("" for a raw request)."""
        return self.resource.kind if self.resource is not None else ""

    def __str__(self) -> str:
        if self.resource is None:
            return f"{self.verb} {self.path}"
        sub = f"/{self.subresource}" if self.subresource else ""
        where = f"{self.namespace}/" if self.namespace else ""
        name = self.name or f"{(self.body or {}).get('metadata', {}).get('generateName', '')}*"
        return f"{self.verb} {self.kind}{sub} {where}{name}"


class RecordingClient(KubeClient):
    """A client that keeps every write in :attr:`writes` (and sends it only when ``send``).

    Takes :class:`~rayop.kube.client.KubeClient`'s arguments, ``send`` and ``overlay``.
    """

    def __init__(
        self, *args: Any, send: bool, overlay: Overlay | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.send_writes = send
        self.overlay = dict(overlay or {})
        self.writes: list[Write] = []

    def sibling(
        self, *, clock: Clock | None = None, qps: float | None = None, burst: int | None = None
    ) -> KubeClient:
        """Returns a recording client like this one (the same ``send`` and overlay) that keeps
        its writes in this one's :attr:`writes`: a preview's leader election or events never
        write where this client would not."""
        other = RecordingClient(
            self.config, send=self.send_writes, overlay=self.overlay, qps=self.throttle.qps if qps is None else qps,
            burst=self.throttle.burst if burst is None else burst, metrics=self.metrics, clock=clock or MONOTONIC,
        )  # fmt: skip
        other.writes = self.writes
        return other

    async def get(
        self, res: Resource, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        stand_in = self.overlay.get(overlay_key(res.kind, namespace or "", name))
        if stand_in is not None:
            return copy.deepcopy(stand_in)
        return await super().get(res, name, namespace=namespace)

    async def list(self, res: Resource, **options: Unpack[ListOptions]) -> dict[str, Any]:
        listed = await super().list(res, **options)
        listed["items"] = self._overlaid(res, options.get("namespace"), listed["items"], last=True)
        return listed

    async def list_pages(
        self, res: Resource, **options: Unpack[ListOptions]
    ) -> AsyncIterator[dict[str, Any]]:
        pages = super().list_pages(res, **options)
        async for page in pages:
            last = not (page.get("metadata") or {}).get("continue")
            page["items"] = self._overlaid(res, options.get("namespace"), page["items"], last=last)
            yield page

    def _overlaid(
        self, res: Resource, namespace: str | None, items: builtins.list[Obj], *, last: bool
    ) -> builtins.list[Obj]:
        """The items with the overlay's stand-ins in place (and, on the last page, those the
        server does not have)."""
        if not self.overlay:
            return items
        out, seen = [], set()
        for item in items:
            meta = item.get("metadata") or {}
            key = overlay_key(res.kind, meta.get("namespace") or "", meta.get("name") or "")
            seen.add(key)
            out.append(copy.deepcopy(self.overlay[key]) if key in self.overlay else item)
        if last:
            out += [
                copy.deepcopy(obj)
                for key, obj in self.overlay.items()
                if key[0] == res.kind and key not in seen and namespace in (None, key[1])
            ]
        return out

    def _write(
        self,
        verb: str,
        res: Resource | None,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        path: str = "",
        patch_type: PatchType | None = None,
    ) -> None:
        if self.on_request is not None:  # a write kept, sent or not, is a request of the pass
            self.on_request(verb, path)
        self.writes.append(
            Write(
                verb=verb,
                resource=res,
                namespace=namespace or "",
                name=name,
                subresource=subresource,
                body=copy.deepcopy(body),
                path=path,
                controller=current_controller.get(),
                request=current_request.get(),
                patch_type=patch_type,
                at=time.monotonic(),
            )
        )

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        ns = namespace or meta.get("namespace")
        body = {"apiVersion": res.api_version, "kind": res.kind, **obj}
        self._write("create", res, ns, str(meta.get("name") or ""), body)
        if self.send_writes:
            return await super().create(res, obj, namespace=namespace)
        answer = copy.deepcopy(body)
        answered = answer.setdefault("metadata", {})
        answered.setdefault("name", f"{meta.get('generateName', '')}preview")
        answered.setdefault("uid", PREVIEW_UID)
        if ns:
            answered.setdefault("namespace", ns)
        return answer

    async def update(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        self._put_write(res, obj, None)
        if self.send_writes:
            return await super().update(res, obj)
        return copy.deepcopy(dict(obj))

    async def update_status(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        self._put_write(res, obj, "status")
        if self.send_writes:
            return await super().update_status(res, obj)
        return copy.deepcopy(dict(obj))

    def _put_write(self, res: Resource, obj: Mapping[str, Any], subresource: str | None) -> None:
        meta = obj.get("metadata") or {}
        body = {"apiVersion": res.api_version, "kind": res.kind, **obj}
        self._write(
            "update",
            res,
            meta.get("namespace"),
            str(meta.get("name") or ""),
            body,
            subresource=subresource,
        )

    async def patch(self, res: Resource, name: str, body: Any, *, namespace: str | None = None,
                    patch_type: PatchType = "merge",
                    subresource: str | None = None) -> dict[str, Any]:
        self._write(
            "patch", res, namespace, name, body, subresource=subresource, patch_type=patch_type
        )
        if self.send_writes:
            return await super().patch(
                res,
                name,
                body,
                namespace=namespace,
                patch_type=patch_type,
                subresource=subresource,
            )
        return await self.get(res, name, namespace=namespace)

    async def delete(self, res: Resource, name: str, *, namespace: str | None = None,
                     **options: Unpack[DeleteOptions]) -> dict[str, Any]:
        self._write("delete", res, namespace, name, dict(options))
        if self.send_writes:
            return await super().delete(res, name, namespace=namespace, **options)
        return {"kind": "Status", "apiVersion": "v1", "status": "Success"}

    async def delete_collection(
        self,
        res: Resource,
        *,
        propagation_policy: PropagationPolicy | None = None,
        **selected: Unpack[Selection],
    ) -> None:
        self._write("deletecollection", res, selected.get("namespace"), "", dict(selected))
        if self.send_writes:
            await super().delete_collection(res, propagation_policy=propagation_policy, **selected)

    async def request(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                      json: Any = None, headers: Mapping[str, str] | None = None,
                      timeout: float | None = None) -> tuple[int, bytes]:
        if method.upper() in ("GET", "HEAD"):
            return await super().request(
                method, path, params=params, json=json, headers=headers, timeout=timeout
            )
        self._write(method.upper(), None, None, "", json, path=path)
        if self.send_writes:
            return await super().request(
                method, path, params=params, json=json, headers=headers, timeout=timeout
            )
        return 200, b"{}"
