"""An asyncio Kubernetes API client generic over any group/version/resource, on plain dicts.

One :class:`KubeClient` owns one aiohttp session (a pooled connector sized for many concurrent
requests) behind a :class:`~rayop.kube.transport.Transport`, which throttles, retries 429s and
records the ``rest_client_*`` metrics. This module turns verbs into paths and bodies, and error
statuses into :class:`~rayop.kube.errors.ApiError` subclasses that keep the Status. Objects are
decoded with orjson into plain dicts; nothing is converted to generated models.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Literal, Self, Unpack

import orjson

from rayop import __version__
from rayop.kube.clock import MONOTONIC, Clock
from rayop.kube.codec import decode_object
from rayop.kube.config import KubeConfig
from rayop.kube.errors import Gone, error_from_response
from rayop.kube.metrics import RestClientMetrics
from rayop.kube.options import (
    DEFAULT_PAGE_SIZE,
    DeleteOptions,
    ListOptions,
    PropagationPolicy,
    Selection,
    WatchOptions,
    delete_body,
    query,
)
from rayop.kube.resource import Resource
from rayop.kube.resource_buckets import ResourceBuckets
from rayop.kube.throttle import TokenBucket
from rayop.kube.transport import MAX_RETRIES, Reply, Transport, retry_after
from rayop.kube.watch import WatchEvent, WatchStream

__all__ = [
    "DEFAULT_USER_AGENT",
    "MAX_RETRIES",
    "PATCH_CONTENT_TYPES",
    "KubeClient",
    "PatchType",
    "WatchEvent",
    "WatchStream",
    "WriteHook",
]

DEFAULT_USER_AGENT = f"rayop/{__version__}"

PatchType = Literal["merge", "json", "strategic"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
_JSON = "application/json"
_METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
"""What a metadata-only list accepts: objects' metadata, as ``PartialObjectMetadata`` items."""

WriteHook = Callable[[str, str, dict[str, Any] | None, str], None]
"""``(method, path, answer or None, error text or "")``: see :attr:`KubeClient.on_write`."""


class KubeClient:
    """Talks to one API server; use as ``async with KubeClient(config) as client:``.

    Args:
        config: Where the server is and how to authenticate.
        qps: Client-side token bucket refill rate; negative disables throttling; 0 means
            client-go's default of 5.
        burst: Token bucket capacity; 0 means client-go's default of 10.
        metrics: Collectors for ``rest_client_*``; None records nothing.
        user_agent: The ``User-Agent`` header.
        timeout: Seconds one attempt may take (connect to last byte); None for no limit.
            The rate-limiter wait is not included. Watches apply it to connecting only.
        max_connections: Size of the connection pool.
        clock: Time source for throttling, Retry-After sleeps and durations.
        bucket_per_resource: A token bucket per API resource, each at ``qps``/``burst``, as
            controller-runtime's client has (:mod:`rayop.kube.resource_buckets`), instead of one
            for every request.
    """

    def __init__(
        self,
        config: KubeConfig,
        *,
        qps: float = 100.0,
        burst: int = 200,
        metrics: RestClientMetrics | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
        timeout: float | None = 60.0,
        max_connections: int = 512,
        clock: Clock = MONOTONIC,
        bucket_per_resource: bool = False,
    ) -> None:
        self.config = config
        self.metrics = metrics
        self.create_labels: Callable[[], Mapping[str, str]] | None = None
        """Labels added to every object this client creates, asked for at each create (None:
        none); a sharded operator labels what it creates with the replica and root it works for."""
        self.on_write: WriteHook | None = None
        """Told of every write this client sent that got an answer (None: nobody): the method,
        the path, the object answered (None on an error) and the error's text ("" on success);
        the operator notes its passes' writes with it. It must not block."""
        self.on_request: Callable[[str, str], None] | None = None
        """Told of every request this client is about to send, watches excepted (None:
        nobody): the method and the path; the operator counts its passes' requests with it. It
        must not block."""
        self.throttle = TokenBucket(qps or 5.0, burst or 10, clock=clock)
        self.buckets = ResourceBuckets(self.throttle, clock=clock) if bucket_per_resource else None
        """The per-resource buckets (None: every request spends :attr:`throttle`)."""
        self._transport = Transport(
            config,
            bucket=self.throttle,
            buckets=self.buckets,
            clock=clock,
            metrics=metrics,
            headers={"User-Agent": user_agent, "Accept": _JSON},
            timeout=timeout,
            max_connections=max_connections,
        )

    def sibling(
        self, *, clock: Clock | None = None, qps: float | None = None, burst: int | None = None
    ) -> KubeClient:
        """Returns a second client on this one's configuration, with a token bucket of its own
        (this one's qps and burst unless given) and the same request metrics: what
        controller-runtime gives leader election and the event broadcaster, so that their
        requests never spend the reconcile budget. A subclass that changes what requests do
        returns one of its kind."""
        return KubeClient(
            self.config,
            qps=self.throttle.qps if qps is None else qps,
            burst=self.throttle.burst if burst is None else burst,
            metrics=self.metrics,
            clock=clock or MONOTONIC,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Closes the connection pool; blocks until its connections are closed."""
        await self._transport.close()

    async def _call_json(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = _JSON,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Sends a call (see :meth:`_send`) and decodes its reply; raises its error status."""
        reply = await self._send(
            method, path, params=params, body=body, content_type=content_type, headers=headers
        )
        hook = self.on_write if method != "GET" else None
        if reply.status >= 400:
            error = error_from_response(
                reply.status, reply.body, method=method, retry_after=retry_after(reply.headers)
            )
            if hook is not None:
                hook(method, path, None, f"{reply.status} {error}")
            raise error
        answer = decode_object(reply.body, what="response") if reply.body else {}
        if hook is not None:
            hook(method, path, answer, "")
        return answer

    async def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        content_type: str = _JSON,
        timeout: float | None = None,
    ) -> Reply:
        """Sends ``body`` as JSON (of ``content_type`` unless ``headers`` name one); blocks.

        ``timeout`` None is the client's per-attempt default.
        """
        if self.on_request is not None:
            self.on_request(method, path)
        data = None if body is None else orjson.dumps(body)
        all_headers = dict(headers or {})
        if data is not None:
            all_headers.setdefault("Content-Type", content_type)
        return await self._transport.send(
            method,
            path,
            params=params,
            body=data,
            headers=all_headers or None,
            timeout="default" if timeout is None else timeout,
        )

    # ---- verbs ------------------------------------------------------------------------

    async def get(
        self, res: Resource, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Reads one object; blocks on the API.

        Raises:
            NotFound: No such object; and any other :class:`ApiError`.
        """
        return await self._call_json(
            "GET", res.path(_ns(res, namespace, None, required=True), name)
        )

    async def list(self, res: Resource, **options: Unpack[ListOptions]) -> dict[str, Any]:
        """Lists objects, following ``continue`` tokens and merging every page; blocks on the API.

        Every page is served at the first page's resourceVersion. If a continue token has
        expired (410), the list is retried once without paging, as client-go's pager does.
        Items get ``apiVersion`` and ``kind`` filled in (the server omits them in lists).

        Args:
            res: The resource.
            **options: Namespace, selectors, page size and resourceVersion
                (:class:`~rayop.kube.options.ListOptions`).

        Returns:
            ``{"apiVersion", "kind", "metadata": {"resourceVersion"}, "items": [...]}``.
        """
        first: dict[str, Any] | None = None
        items: builtins.list[dict[str, Any]] = []
        try:
            async for page in self.list_pages(res, **options):
                first = first or page
                items.extend(page["items"])
        except Gone:
            if first is None:
                raise
            items = []
            unpaged: ListOptions = {**options, "limit": None}
            async for page in self.list_pages(res, **unpaged):
                first = page
                items.extend(page["items"])
        assert first is not None
        return {
            "apiVersion": first["apiVersion"],
            "kind": first["kind"],
            "metadata": {"resourceVersion": first["metadata"]["resourceVersion"]},
            "items": items,
        }

    async def list_pages(
        self, res: Resource, **options: Unpack[ListOptions]
    ) -> AsyncIterator[dict[str, Any]]:
        """Lists objects one page at a time, following ``continue`` tokens; blocks on the API.

        Unlike :meth:`list`, the pages are never merged, so a caller that consumes each page
        before asking for the next never holds the whole list decoded at once. Items get
        ``apiVersion`` and ``kind`` filled in (with ``metadata_only``, the server's
        ``meta.k8s.io`` ``PartialObjectMetadata``). Every page carries the list's
        resourceVersion.

        Args:
            res: The resource.
            **options: Namespace, selectors, page size and resourceVersion
                (:class:`~rayop.kube.options.ListOptions`).

        Yields:
            ``{"apiVersion", "kind", "metadata": {"resourceVersion", "continue"?}, "items"}``.

        Raises:
            Gone: The resourceVersion is too old, or a continue token expired after some pages
                were yielded (the caller must start again: the pages seen are a partial list).
        """
        path = res.path(_ns(res, options.get("namespace"), None, required=False))
        params = query(options, options.get("resource_version"))
        limit = options.get("limit", DEFAULT_PAGE_SIZE)
        if limit:
            params["limit"] = str(limit)
        headers = {"Accept": _METADATA_LIST} if options.get("metadata_only") else None
        while True:
            page = await self._call_json("GET", path, params=params, headers=headers)
            items = page.get("items") or []
            for item in items:
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            yield {
                "apiVersion": page.get("apiVersion", res.api_version),
                "kind": page.get("kind", f"{res.kind}List"),
                "metadata": _drop_none(
                    {"resourceVersion": meta.get("resourceVersion", ""), "continue": token}
                ),
                "items": items,
            }
            del page, items
            if not token:
                return
            # A continued page names no resourceVersion: the token carries it.
            params = {k: v for k, v in params.items() if k != "resourceVersion"}
            params["continue"] = token

    def watch(self, res: Resource, **options: Unpack[WatchOptions]) -> WatchStream:
        """Opens a watch; use ``async with client.watch(...) as events: async for ev in events``.

        Entering blocks until the server accepts the watch (raising ApiError if it does not).
        Iteration yields :class:`WatchEvent` until the server ends the stream; an ERROR event
        is raised as :class:`ApiError` (:class:`~rayop.kube.errors.Gone` for 410 Expired), a
        broken connection as :class:`~rayop.kube.errors.TransportError`.

        Args:
            res: The resource.
            **options: Namespace, selectors, resourceVersion, timeout and bookmarks
                (:class:`~rayop.kube.options.WatchOptions`).
        """
        params = {"watch": "true", **query(options, options.get("resource_version"))}
        timeout_seconds = options.get("timeout_seconds")
        if timeout_seconds is not None:
            params["timeoutSeconds"] = str(timeout_seconds)
        if options.get("allow_bookmarks", True):
            params["allowWatchBookmarks"] = "true"
        path = res.path(_ns(res, options.get("namespace"), None, required=False))
        return WatchStream(self._transport, path, params)

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Creates an object (``generateName`` honoured); blocks on the API.

        Raises:
            AlreadyExists: The name is taken; Invalid: validation failed; any other ApiError.
        """
        body = {"apiVersion": res.api_version, "kind": res.kind, **obj}
        extra = self.create_labels() if self.create_labels is not None else None
        if extra:
            meta = dict(body.get("metadata") or {})
            meta["labels"] = {**(meta.get("labels") or {}), **extra}
            body["metadata"] = meta
        return await self._call_json(
            "POST", res.path(_ns(res, namespace, obj, required=True)), body=body
        )

    async def update(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Replaces an object (PUT), named by its metadata; blocks on the API.

        Raises:
            Conflict: ``metadata.resourceVersion`` is stale; any other ApiError.
        """
        return await self._put(res, obj, None)

    async def update_status(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Replaces an object's status through the ``/status`` subresource; blocks on the API.

        Raises:
            Conflict: ``metadata.resourceVersion`` is stale; any other ApiError.
        """
        return await self._put(res, obj, "status")

    async def _put(
        self, res: Resource, obj: Mapping[str, Any], subresource: str | None
    ) -> dict[str, Any]:
        name = (obj.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("the object has no metadata.name")
        body = {"apiVersion": res.api_version, "kind": res.kind, **obj}
        path = res.path(_ns(res, None, obj, required=True), name, subresource)
        return await self._call_json("PUT", path, body=body)

    async def patch(self, res: Resource, name: str, body: Any, *, namespace: str | None = None,
                    patch_type: PatchType = "merge",
                    subresource: str | None = None) -> dict[str, Any]:
        """Patches an object: JSON merge patch, JSON patch (a list of ops) or strategic merge.

        Blocks on the API.

        Raises:
            UnsupportedMediaType: The server does not accept the patch type for the resource;
                any other ApiError.
        """
        if patch_type not in PATCH_CONTENT_TYPES:
            raise ValueError(f"unknown patch type {patch_type!r}")
        path = res.path(_ns(res, namespace, None, required=True), name, subresource)
        return await self._call_json(
            "PATCH", path, body=body, content_type=PATCH_CONTENT_TYPES[patch_type]
        )

    async def delete(self, res: Resource, name: str, *, namespace: str | None = None,
                     **options: Unpack[DeleteOptions]) -> dict[str, Any]:
        """Deletes an object; blocks on the API.

        Args:
            res: The resource.
            name: The object's name.
            namespace: Its namespace (required for a namespaced resource).
            **options: Propagation policy, grace period and preconditions
                (:class:`~rayop.kube.options.DeleteOptions`).

        Returns:
            The object (possibly still present with a deletionTimestamp) or a Success Status.

        Raises:
            NotFound: Already gone; Conflict: a precondition failed; any other ApiError.
        """
        path = res.path(_ns(res, namespace, None, required=True), name)
        return await self._call_json("DELETE", path, body=delete_body(options))

    async def delete_collection(
        self,
        res: Resource,
        *,
        propagation_policy: PropagationPolicy | None = None,
        **selected: Unpack[Selection],
    ) -> None:
        """Deletes every object matching the selectors; blocks on the API."""
        path = res.path(_ns(res, selected.get("namespace"), None, required=False))
        body = delete_body({"propagation_policy": propagation_policy})
        await self._call_json("DELETE", path, params=query(selected), body=body)

    async def request(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                      json: Any = None, headers: Mapping[str, str] | None = None,
                      timeout: float | None = None) -> tuple[int, bytes]:
        """Sends a raw request to ``path`` (for example a services proxy URL); blocks.

        Throttling and 429/Retry-After retries apply; error statuses are returned, not raised.

        Args:
            timeout: Seconds for each attempt; None uses the client's default.

        Returns:
            The final HTTP status and body.

        Raises:
            TransportError: No response arrived.
        """
        reply = await self._send(
            method, path, params=params, body=json, headers=headers, timeout=timeout
        )
        return reply.status, reply.body


def _ns(
    res: Resource, namespace: str | None, obj: Mapping[str, Any] | None, *, required: bool
) -> str | None:
    if not res.namespaced:
        return None
    if namespace is None and obj is not None:
        namespace = (obj.get("metadata") or {}).get("namespace")
    if namespace is None and required:
        raise ValueError(f"{res} is namespaced: a namespace is required")
    return namespace


def _drop_none(values: Mapping[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in values.items() if v is not None}
