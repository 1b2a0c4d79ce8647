"""The watch handler: a chunked stream of ``{"type", "object"}`` JSON lines (W1), or of
length-prefixed protobuf WatchEvent frames for a client that accepts protobuf.

Honours resourceVersion (replay or synthetic ADDED), sendInitialEvents (the watch-list, in
watch_list.py), allowWatchBookmarks, timeoutSeconds,
Table output for ``kubectl get -w``, and the watch faults (delivery delay, drops). A too old
resourceVersion is reported as an ERROR event carrying a 410 Expired Status.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import web

from rayop.sim.apiserver import metadata_only, tables
from rayop.sim.apiserver.negotiation import PROTOBUF, negotiate
from rayop.sim.apiserver.protobuf import encode_watch_frame
from rayop.sim.apiserver.query import int_param
from rayop.sim.apiserver.request import ApiRequest, ServerContext
from rayop.sim.apiserver.watch_list import InitialEventsStream, validate_watch_options
from rayop.sim.machinery import errors as se
from rayop.sim.storage.watch_events import Event, WatchStream

__all__ = ["handle_watch"]

_DEFAULT_TIMEOUT = 1800.0
_MAX_BATCH = 256


def _encode(ev: Event) -> bytes:
    line = ev.line
    if line is None:
        line = ev.line = b'{"type":"%s","object":%s}\n' % (ev.type.encode(), orjson.dumps(ev.obj))
    return line


class _TableEncoder:
    """Encodes events as single-row Tables (column definitions on the first one only)."""

    def __init__(self, req: ApiRequest, include_object: str) -> None:
        self._req = req
        self._include = include_object
        self._first = True

    def __call__(self, ev: Event) -> bytes:
        if ev.type == "BOOKMARK":
            return _encode(ev)
        t = tables.table(
            self._req.info,
            [ev.obj],
            resource_version=str(ev.obj["metadata"].get("resourceVersion", "")),
            include_object=self._include,
            with_columns=self._first,
        )
        self._first = False
        return orjson.dumps({"type": ev.type, "object": t}) + b"\n"


class _MetadataEncoder:
    """Encodes events' objects as PartialObjectMetadata (bookmarks too: they carry only
    metadata)."""

    def __init__(self, api_version: str) -> None:
        self._api_version = api_version

    def __call__(self, ev: Event) -> bytes:
        obj = metadata_only.partial(ev.obj, self._api_version)
        return orjson.dumps({"type": ev.type, "object": obj}) + b"\n"


def _error_line(err: se.StatusError) -> bytes:
    return orjson.dumps({"type": "ERROR", "object": err.status}) + b"\n"


class _ProtobufEncoder:
    """Encodes events as length-prefixed protobuf WatchEvent frames."""

    def __init__(self, req: ApiRequest) -> None:
        self._api_version = req.info.api_version
        self._kind = req.info.kind

    def __call__(self, ev: Event) -> bytes:
        return encode_watch_frame(ev.type, ev.obj, self._api_version, self._kind)

    @staticmethod
    def error(err: se.StatusError) -> bytes:
        return encode_watch_frame("ERROR", {"apiVersion": "v1", "kind": "Status", **err.status})


async def handle_watch(
    ctx: ServerContext, request: web.Request, req: ApiRequest
) -> web.StreamResponse:
    """Streams watch events until timeoutSeconds, a fault drop or the client going away.

    Raises:
        StatusError: 4xx for bad parameters (before the stream starts), with
            kube-apiserver's rules for sendInitialEvents (watch_list.py).
    """
    q = request.query
    metadata = metadata_only.requested(request.headers.get("Accept", ""))
    if metadata is not None:
        metadata_only.check_form(metadata[0], listing=False)
    send_initial = validate_watch_options(q)
    resource_version = q.get("resourceVersion")
    current = ctx.store.current_rv()
    if send_initial is not None:
        _check_not_older_than(resource_version, current)
        resource_version = None if send_initial else str(current)
    timeout = float(int_param(q, "timeoutSeconds") or _DEFAULT_TIMEOUT)
    bookmarks = q.get("allowWatchBookmarks") in ("true", "1", "True")
    field_sel = q.get("fieldSelector")
    if req.name is not None:
        pinned = f"metadata.name={req.name}"
        field_sel = f"{field_sel},{pinned}" if field_sel else pinned
    stream: WatchStream | InitialEventsStream | None = None
    error: se.StatusError | None = None
    try:
        stream = ctx.store.open_watch(
            req.info,
            req.namespace,
            resource_version=resource_version,
            label_selector=q.get("labelSelector"),
            field_selector=field_sel,
        )
        if send_initial:
            stream = InitialEventsStream(stream, req.info, current, marker=bookmarks)
    except se.StatusError as err:
        if err.code != 410:
            raise
        error = err
    table = metadata is None and tables.wants_table(request.headers.get("Accept", ""))
    protobuf = metadata is None and not table and negotiate(request, req.info) == PROTOBUF
    ctype = f"{PROTOBUF};stream=watch" if protobuf else "application/json"
    resp = web.StreamResponse(status=200, headers={"Content-Type": ctype})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    if error is not None or stream is None:
        failure = error or se.internal_error("watch failed")
        await resp.write(_ProtobufEncoder.error(failure) if protobuf else _error_line(failure))
        await resp.write_eof()
        return resp
    encode: Any = _encode
    if metadata is not None:
        encode = _MetadataEncoder(metadata[1])
    elif table:
        encode = _TableEncoder(req, q.get("includeObject", "Metadata"))
    elif protobuf:
        encode = _ProtobufEncoder(req)
    try:
        await _pump(ctx, resp, stream, encode, timeout=timeout, bookmarks=bookmarks)
        await resp.write_eof()
    except ConnectionResetError:
        pass  # the client went away: an ordinary end of a watch, not an error to log
    finally:
        stream.close()
    return resp


def _check_not_older_than(resource_version: str | None, current: int) -> None:
    """The state a watch-list starts from must be at least ``resource_version``."""
    if resource_version in (None, "", "0"):
        return
    try:
        want = int(str(resource_version))
    except ValueError as exc:
        raise se.bad_request(f"invalid resource version: {resource_version}") from exc
    if want > current:
        raise se.timeout(f"Too large resource version: {want}, current: {current}")


async def _pump(
    ctx: ServerContext,
    resp: web.StreamResponse,
    stream: WatchStream | InitialEventsStream,
    encode: Any,
    *,
    timeout: float,
    bookmarks: bool,
) -> None:
    loop = asyncio.get_running_loop()
    faults = ctx.faults.faults
    start = loop.time()
    deadline = start + timeout
    drop_secs = faults.watch_drop_after_seconds
    if drop_secs is not None:
        deadline = min(deadline, start + drop_secs)
    sent = 0
    idle = ctx.bookmark_interval
    while True:
        now = loop.time()
        if now >= deadline:
            return
        wait = deadline - now
        if bookmarks:
            wait = min(wait, idle)
        ev = await stream.next(wait)
        if ev is None:
            if loop.time() >= deadline:
                return
            if bookmarks and stream.pending() == 0:
                await resp.write(encode(stream.bookmark()))
            continue
        batch = [ev]
        while stream.pending() and len(batch) < _MAX_BATCH and not faults.watch_delay:
            nxt = await stream.next(0)
            if nxt is None:
                break
            batch.append(nxt)
        delay = faults.watch_delay
        if delay and ev.time:
            hold = ev.time + delay - loop.time()
            if hold > 0:
                await asyncio.sleep(hold)
        limit = faults.watch_drop_after_events
        if limit is not None and sent + len(batch) >= limit:
            batch = batch[: max(0, limit - sent)]
            if batch:
                await resp.write(b"".join(encode(e) for e in batch))
            return
        sent += len(batch)
        await resp.write(b"".join(encode(e) for e in batch) if len(batch) > 1 else encode(ev))
