"""Handlers for get, list, create, update, patch, delete and deletecollection."""

from __future__ import annotations

import json
from typing import Any

import yaml
from aiohttp import web

from rayop.apimachinery.objects import Obj
from rayop.sim.admission import field_validation
from rayop.sim.apiserver import metadata_only, tables
from rayop.sim.apiserver.negotiation import PROTOBUF, decode_body, respond
from rayop.sim.apiserver.patch import APPLY_PATCH, apply_patch, json_merge_patch
from rayop.sim.apiserver.query import int_param
from rayop.sim.apiserver.request import ApiRequest, ServerContext, json_response
from rayop.sim.apiserver.request_body import check_shape, load_yaml, read_body
from rayop.sim.apiserver.typed_body import check_types
from rayop.sim.machinery import errors as se
from rayop.sim.storage.store import clone

__all__ = ["handle_crud"]


def _dry_run(request: web.Request) -> bool:
    return "All" in request.query.getall("dryRun", [])


def _check_types(request: web.Request, req: ApiRequest, body: Obj) -> None:
    """Refuses mistyped values (typed_body), unless the body is a protobuf message of this very
    kind: its decoding already put every value in a field of the right type."""
    ctype = request.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
    info = req.info
    if not (
        ctype == PROTOBUF
        and body.get("apiVersion") == info.api_version
        and body.get("kind") == info.kind
    ):
        check_types(info, body)


def _respond(request: web.Request, req: ApiRequest, obj: Obj, status: int = 200) -> web.Response:
    metadata = metadata_only.requested(request.headers.get("Accept", ""))
    if metadata is not None:
        form, api_version = metadata
        metadata_only.check_form(form, listing=False, custom=bool(req.info.crd_name))
        return json_response(metadata_only.partial(obj, api_version), status)
    if tables.wants_table(request.headers.get("Accept", "")):
        rv = obj.get("metadata", {}).get("resourceVersion", "")
        body = tables.table(
            req.info,
            [obj],
            resource_version=rv,
            include_object=request.query.get("includeObject", "Metadata"),
        )
        return json_response(body, status)
    return respond(request, req.info, obj, status)


async def handle_crud(ctx: ServerContext, request: web.Request, req: ApiRequest) -> web.Response:
    """Serves one non-watch, non-proxy resource request.

    Raises:
        StatusError: Any API error; the caller turns it into a Status response.
    """
    response = await _handle(ctx, request, req)
    if req.info.deprecation_warning:
        response.headers.add("Warning", f"299 - {json.dumps(req.info.deprecation_warning)}")
    return response


async def _handle(ctx: ServerContext, request: web.Request, req: ApiRequest) -> web.Response:
    verb = req.verb
    if req.subresource not in ("", "status"):
        raise se.StatusError(
            se.status_body(404, "NotFound", "the server could not find the requested resource")
        )
    if verb == "list":
        return _list(ctx, request, req)
    if verb == "get":
        obj = await ctx.store.get(req.info, req.namespace, req.name or "", copy=False)
        return _respond(request, req, obj)
    if verb in ("create", "update", "patch"):
        with field_validation.directive(request.query.get("fieldValidation")) as fields:
            write = {"create": _create, "update": _update, "patch": _patch}[verb]
            response = await write(ctx, request, req)
        for warning in fields.warnings:
            response.headers.add("Warning", f"299 - {json.dumps(warning)}")
        return response
    if verb == "delete":
        return await _delete(ctx, request, req)
    return await _delete_collection(ctx, request, req)


def _list(ctx: ServerContext, request: web.Request, req: ApiRequest) -> web.Response:
    q = request.query
    info = req.info
    limit = int_param(q, "limit") or 0
    token = q.get("continue")
    if token:
        items, rv, offset, snap = ctx.snapshots.resume(token)
    else:
        rv_param = q.get("resourceVersion", "")
        match = q.get("resourceVersionMatch", "")
        items, rv = ctx.store.list(
            info,
            req.namespace,
            label_selector=q.get("labelSelector"),
            field_selector=q.get("fieldSelector"),
            copy=False,
        )
        _check_list_rv(rv_param, match, rv)
        offset, snap = 0, 0
    metadata = metadata_only.requested(request.headers.get("Accept", ""))
    if metadata is not None:
        metadata_only.check_form(metadata[0], listing=True)
    page, cont, remaining = ctx.snapshots.page(items, rv, limit, offset, snap)
    if tables.wants_table(request.headers.get("Accept", "")):
        return json_response(
            tables.table(
                info,
                page,
                resource_version=str(rv),
                continue_token=cont,
                include_object=q.get("includeObject", "Metadata"),
            )
        )
    meta: Obj = {"resourceVersion": str(rv)}
    if cont:
        meta["continue"] = cont
        if not q.get("labelSelector") and not q.get("fieldSelector"):
            meta["remainingItemCount"] = remaining  # unknown (omitted) when a selector filters
    if metadata is not None:
        return json_response(metadata_only.metadata_list(page, meta, metadata[1]))
    return respond(
        request,
        info,
        {"kind": info.list_kind, "apiVersion": info.api_version, "metadata": meta, "items": page},
    )


def _check_list_rv(rv_param: str, match: str, current: int) -> None:
    if match and match not in ("Exact", "NotOlderThan"):
        raise se.bad_request(f"unsupported resourceVersionMatch {match!r}")
    if match and not rv_param:
        raise se.invalid(
            "ListOptions",
            "meta.k8s.io",
            "",
            [
                (
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            ],
        )
    if not rv_param or rv_param == "0":
        return
    try:
        want = int(rv_param)
    except ValueError as exc:
        raise se.bad_request(f"invalid resource version: {rv_param}") from exc
    if want > current:
        raise se.timeout(f"Too large resource version: {want}, current: {current}")
    if match == "Exact" and want != current:
        raise se.expired(f"too old resource version: {want} ({current})")


async def _create(ctx: ServerContext, request: web.Request, req: ApiRequest) -> web.Response:
    if req.name is not None:
        raise se.method_not_allowed()
    body = await decode_body(request, req.info)
    if not isinstance(body, dict):
        raise se.bad_request("the body of the request must be an object")
    kind = body.get("kind")
    if kind and kind != req.info.kind:
        raise se.bad_request(
            f"the API version in the data ({body.get('apiVersion')}) does not match the expected "
            f"API version ({req.info.api_version}) or kind {kind} is not {req.info.kind}"
        )
    _check_types(request, req, body)
    obj = await ctx.store.create(
        req.info, req.namespace, body, dry_run=_dry_run(request), copy=False
    )
    req.audit_name = obj["metadata"]["name"]
    return _respond(request, req, obj, 201)


async def _update(ctx: ServerContext, request: web.Request, req: ApiRequest) -> web.Response:
    body = await decode_body(request, req.info)
    if not isinstance(body, dict):
        raise se.bad_request("the body of the request must be an object")
    _check_injected_conflict(ctx, req)
    return await _replace(ctx, request, req, body, dry_run=_dry_run(request))


async def _patch(ctx: ServerContext, request: web.Request, req: ApiRequest) -> web.Response:
    info = req.info
    name = req.name or ""
    ctype = request.headers.get("Content-Type", "")
    raw = await read_body(request)
    current = ctx.store.peek(info, req.namespace, name)
    if ctype.startswith(APPLY_PATCH):
        return await _apply(ctx, request, req, current, raw)
    if current is None:
        raise se.not_found(info.plural, info.group, name)
    _check_injected_conflict(ctx, req)
    patched = apply_patch(ctype, clone(current), raw, custom=info.is_custom)
    check_shape(patched)
    if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
        raise se.bad_request("the patch produced an invalid object")
    cur_rv = current["metadata"]["resourceVersion"]
    want_rv = patched["metadata"].get("resourceVersion")
    if want_rv and want_rv != cur_rv:
        raise se.conflict(info.plural, info.group, name)
    patched["metadata"]["resourceVersion"] = cur_rv
    return await _replace(ctx, request, req, patched, dry_run=_dry_run(request))


async def _apply(
    ctx: ServerContext, request: web.Request, req: ApiRequest, current: Obj | None, raw: bytes
) -> web.Response:
    """Server-side apply, simplified: create when absent, else a merge of the intent."""
    try:
        intent = load_yaml(raw)
    except (yaml.YAMLError, RecursionError) as exc:
        raise se.bad_request(f"error decoding YAML: {exc}") from exc
    if not isinstance(intent, dict):
        raise se.bad_request("the apply body must be an object")
    check_shape(intent, shared=True)  # YAML aliases share parts
    if not isinstance(intent.setdefault("metadata", {}), dict):
        raise se.bad_request("the apply body's metadata must be an object")
    if current is None:
        intent["metadata"]["name"] = req.name
        check_types(req.info, intent)
        obj = await ctx.store.create(req.info, req.namespace, intent, copy=False)
        return _respond(request, req, obj, 201)
    merged = json_merge_patch(clone(current), intent)
    merged["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    return await _replace(ctx, request, req, merged, dry_run=False)


def _check_injected_conflict(ctx: ServerContext, req: ApiRequest) -> None:
    """Raises the 409 the fault injector holds for this object, if any."""
    ctx.faults.check_conflict(
        req.info.plural,
        req.info.group,
        req.name or "",
        namespace=req.namespace or "",
        subresource=req.subresource or None,
    )


async def _replace(
    ctx: ServerContext, request: web.Request, req: ApiRequest, body: Obj, *, dry_run: bool
) -> web.Response:
    """Writes ``body`` over the object (or its status subresource) and answers with the result."""
    _check_types(request, req, body)
    obj = await ctx.store.update(
        req.info,
        req.namespace,
        req.name or "",
        body,
        subresource=req.subresource or None,
        dry_run=dry_run,
        copy=False,
    )
    return _respond(request, req, obj)


def _delete_options(request: web.Request, body: Any) -> Obj:
    opts: Obj = dict(body) if isinstance(body, dict) else {}
    q = request.query
    if "propagationPolicy" in q:
        opts["propagationPolicy"] = q["propagationPolicy"]
    grace = int_param(q, "gracePeriodSeconds")
    if grace is not None:
        opts["gracePeriodSeconds"] = grace
    if opts.get("orphanDependents") is True and "propagationPolicy" not in opts:
        opts["propagationPolicy"] = "Orphan"
    if q.get("orphanDependents") == "true" and "propagationPolicy" not in opts:
        opts["propagationPolicy"] = "Orphan"
    return opts


async def _delete(ctx: ServerContext, request: web.Request, req: ApiRequest) -> web.Response:
    opts = _delete_options(request, await decode_body(request, req.info))
    name = req.name or ""
    obj = await ctx.store.delete(
        req.info,
        req.namespace,
        name,
        propagation_policy=opts.get("propagationPolicy"),
        grace_period_seconds=opts.get("gracePeriodSeconds"),
        preconditions=opts.get("preconditions"),
        dry_run=_dry_run(request) or "All" in (opts.get("dryRun") or ()),
        copy=False,
    )
    still_there = ctx.store.peek(req.info, req.namespace, name) is not None
    # kube-apiserver answers 202 only for a pending deletion with orphanDependents=false.
    accepted = still_there and opts.get("orphanDependents") is False
    return respond(request, req.info, obj, 202 if accepted else 200)


async def _delete_collection(
    ctx: ServerContext, request: web.Request, req: ApiRequest
) -> web.Response:
    opts = _delete_options(request, await decode_body(request, req.info))
    q = request.query
    items, _rv = ctx.store.list(
        req.info,
        req.namespace,
        label_selector=q.get("labelSelector"),
        field_selector=q.get("fieldSelector"),
        copy=False,
    )
    deleted: list[Obj] = []
    for item in items:
        meta = item["metadata"]
        try:
            deleted.append(
                await ctx.store.delete(
                    req.info,
                    meta.get("namespace"),
                    meta["name"],
                    propagation_policy=opts.get("propagationPolicy"),
                    grace_period_seconds=opts.get("gracePeriodSeconds"),
                    copy=False,
                )
            )
        except se.StatusError as err:
            if err.code != 404:
                raise
    return respond(
        request,
        req.info,
        {
            "kind": req.info.list_kind,
            "apiVersion": req.info.api_version,
            "metadata": {"resourceVersion": str(ctx.store.current_rv())},
            "items": deleted,
        },
    )
